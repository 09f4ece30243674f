//! The report's text as typed inline spans: plain text, code, strong and
//! emphasised words, produced where the text is built ([`super::doc`]) and
//! rendered by each renderer in its own markup, so that no renderer reads
//! another's output back (HTML used to split the Markdown text on backticks
//! and `**`).
//!
//! The review's own strings (its JSON fields: the contract's sentences, the
//! checker's derivations and notes) mark code as `` `…` ``, the one
//! convention of the JSON's text (docs/report.md); [`Text::marked`] reads
//! that convention once, where such a string enters the document.

/// One span of a block's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inline {
    Text(String),
    Code(String),
    Strong(String),
    Emph(String),
}

/// A block's text: its spans in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Text(pub(crate) Vec<Inline>);

impl Text {
    /// Plain text.
    pub(crate) fn plain(s: impl Into<String>) -> Text {
        Text::default().t(s)
    }
    /// One code span.
    pub(crate) fn code(s: impl Into<String>) -> Text {
        Text::default().c(s)
    }
    /// A string of the review's data, its `` `code` `` spans read as code; a
    /// backtick without its pair stays text.
    pub(crate) fn marked(s: &str) -> Text {
        Text::default().m(s)
    }

    fn push(mut self, i: Inline) -> Text {
        self.0.push(i);
        self
    }
    /// Appends plain text.
    pub(crate) fn t(self, s: impl Into<String>) -> Text {
        self.push(Inline::Text(s.into()))
    }
    /// Appends a code span.
    pub(crate) fn c(self, s: impl Into<String>) -> Text {
        self.push(Inline::Code(s.into()))
    }
    /// Appends strong text.
    pub(crate) fn b(self, s: impl Into<String>) -> Text {
        self.push(Inline::Strong(s.into()))
    }
    /// Appends emphasised text.
    pub(crate) fn e(self, s: impl Into<String>) -> Text {
        self.push(Inline::Emph(s.into()))
    }
    /// Appends a string of the review's data ([`Text::marked`]).
    pub(crate) fn m(mut self, s: &str) -> Text {
        let mut rest = s;
        while let Some(open) = rest.find('`') {
            let Some(len) = rest[open + 1..].find('`') else {
                break;
            };
            if open > 0 {
                self = self.t(&rest[..open]);
            }
            self = self.c(&rest[open + 1..open + 1 + len]);
            rest = &rest[open + 1 + len + 1..];
        }
        if !rest.is_empty() {
            self = self.t(rest);
        }
        self
    }

    /// As Markdown: `code`, **strong**, *emphasis*; text as it is (a code
    /// span that holds a backtick is fenced by two).
    pub(crate) fn markdown(&self) -> String {
        let mut out = String::new();
        for i in &self.0 {
            match i {
                Inline::Text(s) => out.push_str(s),
                Inline::Code(s) if s.contains('`') => out.push_str(&format!("`` {s} ``")),
                Inline::Code(s) => out.push_str(&format!("`{s}`")),
                Inline::Strong(s) => out.push_str(&format!("**{s}**")),
                Inline::Emph(s) => out.push_str(&format!("*{s}*")),
            }
        }
        out
    }

    /// As HTML: every span escaped, code, strong and emphasis as elements.
    pub(crate) fn html(&self) -> String {
        use super::figures::escape;
        let mut out = String::new();
        for i in &self.0 {
            match i {
                Inline::Text(s) => out.push_str(&escape(s)),
                Inline::Code(s) => out.push_str(&format!("<code>{}</code>", escape(s))),
                Inline::Strong(s) => out.push_str(&format!("<strong>{}</strong>", escape(s))),
                Inline::Emph(s) => out.push_str(&format!("<em>{}</em>", escape(s))),
            }
        }
        out
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::plain(s)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::plain(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_text_is_read_losslessly() {
        for s in [
            "",
            "plain",
            "`a`",
            "x `a` y `b` z",
            "one ` unpaired",
            "`a` and ` unpaired",
            "``",
        ] {
            assert_eq!(Text::marked(s).markdown(), s, "{s}");
        }
        assert_eq!(
            Text::marked("x `a` y").0,
            vec![
                Inline::Text("x ".into()),
                Inline::Code("a".into()),
                Inline::Text(" y".into())
            ]
        );
    }

    #[test]
    fn html_escapes_every_span_and_reads_nothing_back() {
        let t = Text::plain("a < b ")
            .c("x & `y`")
            .t(" **not bold** ")
            .b("<b>")
            .e("e");
        assert_eq!(
            t.html(),
            "a &lt; b <code>x &amp; `y`</code> **not bold** <strong>&lt;b&gt;</strong><em>e</em>"
        );
        assert_eq!(t.markdown(), "a < b `` x & `y` `` **not bold** **<b>***e*");
    }
}
