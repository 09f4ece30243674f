//! Plain-data diagnostics: every phase of dpplan (parser, checker, accounting)
//! reports problems as [`Diagnostic`] values; renderers at the edge (terminal,
//! JSON, SARIF, GitHub annotations, LSP) turn them into output. Nothing here
//! prints, reads files or knows a protocol.
#![forbid(unsafe_code)]

mod code;
mod docs;
mod lines;
mod number;
mod suggest;

pub use code::Code;
pub use docs::{rule_doc, DIAGNOSTICS_MD};
pub use lines::{LineCol, LineIndex};
pub use number::{num, percent, percent_up, short_decimal};
pub use suggest::did_you_mean;

use serde::Serialize;

/// A half-open byte range `[start, end)` into one source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, PartialOrd, Ord)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub const fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
    pub fn len(self) -> usize {
        self.end.saturating_sub(self.start)
    }
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
    pub fn offset(self, by: usize) -> Span {
        Span::new(self.start + by, self.end + by)
    }
    pub fn contains(self, offset: usize) -> bool {
        self.start <= offset && offset <= self.end
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// A remark that changes nothing about the plan's validity.
    Hint,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Hint => "hint",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A labelled span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// One problem found in a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// One sentence that states the problem and, where there is one, the derivation.
    pub message: String,
    pub primary: Label,
    pub secondary: Vec<Label>,
    /// How to fix it.
    pub help: Option<String>,
    /// Further explanation (derivations, background).
    pub notes: Vec<String>,
    /// The word the primary span most likely meant ("did you mean
    /// `laplace`?"): the editor offers it as a quick fix. Also in `help`,
    /// so no output format changes.
    #[serde(skip)]
    pub suggestion: Option<String>,
}

impl Diagnostic {
    pub fn new(code: Code, message: impl Into<String>, span: Span) -> Self {
        Diagnostic {
            code,
            severity: code.default_severity(),
            message: message.into(),
            primary: Label {
                span,
                message: String::new(),
            },
            secondary: Vec::new(),
            help: None,
            notes: Vec::new(),
            suggestion: None,
        }
    }
    pub fn label(mut self, message: impl Into<String>) -> Self {
        self.primary.message = message.into();
        self
    }
    pub fn secondary(mut self, span: Span, message: impl Into<String>) -> Self {
        self.secondary.push(Label {
            span,
            message: message.into(),
        });
        self
    }
    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }
    /// Records that the primary span most likely meant `word`: "did you
    /// mean `word`?" starts the help (before any help already given).
    pub fn suggest(mut self, word: impl Into<String>) -> Self {
        let word = word.into();
        let ask = format!("did you mean `{word}`?");
        self.help = Some(match self.help.take() {
            Some(help) => {
                let mut rest = help.chars();
                let first = rest.next().map(|c| c.to_uppercase().collect::<String>());
                format!("{ask} {}{}", first.unwrap_or_default(), rest.as_str())
            }
            None => ask,
        });
        self.suggestion = Some(word);
        self
    }
    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Sort diagnostics the way every renderer shows them: syntax errors first
/// (they explain why later items are missing), then by position, then by code.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        let syntax = |d: &Diagnostic| d.code != Code::Syntax;
        (syntax(a), a.primary.span.start, a.code).cmp(&(syntax(b), b.primary.span.start, b.code))
    });
}
