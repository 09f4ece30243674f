//! A small lexer over `.dpplan` text: strings, comments, words and
//! punctuation. The grammar's `COMMENT` rule is silent, so the formatter and
//! the editor's semantic tokens work from this token stream instead.
//!
//! It never fails: any byte sequence lexes into tokens that cover every
//! non-whitespace byte exactly once, in order.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenKind {
    /// An identifier, keyword, number, date or `dataset.column` path: any run
    /// of characters that are neither whitespace, punctuation nor quotes.
    Word,
    /// A string literal, quotes included (possibly unterminated).
    Str,
    /// `// …` up to the end of its line (the newline excluded).
    LineComment,
    /// `/* … */` (possibly unterminated).
    BlockComment,
    /// One of `{ } ( ) [ ] , :`.
    Punct(u8),
    /// A run of `= < > !`: `=`, `==`, `>=`, …
    Op,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub start: usize,
    pub end: usize,
    /// How many `\n` separate this token from the previous one (or from the
    /// start of the text).
    pub newlines_before: usize,
}

impl Token {
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }
    pub fn is_comment(&self) -> bool {
        matches!(self.kind, TokenKind::LineComment | TokenKind::BlockComment)
    }
}

fn is_punct(b: u8) -> bool {
    matches!(b, b'{' | b'}' | b'(' | b')' | b'[' | b']' | b',' | b':')
}

fn is_op(b: u8) -> bool {
    matches!(b, b'=' | b'<' | b'>' | b'!')
}

/// Splits a text into tokens.
pub fn tokenize(text: &str) -> Vec<Token> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    let mut newlines = 0;
    while pos < bytes.len() {
        let b = bytes[pos];
        let start = pos;
        let kind = match b {
            b'\n' => {
                newlines += 1;
                pos += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' => {
                pos += 1;
                continue;
            }
            b'/' if bytes.get(pos + 1) == Some(&b'/') => {
                while pos < bytes.len() && bytes[pos] != b'\n' && bytes[pos] != b'\r' {
                    pos += 1;
                }
                TokenKind::LineComment
            }
            b'/' if bytes.get(pos + 1) == Some(&b'*') => {
                pos += 2;
                while pos < bytes.len()
                    && !(bytes[pos] == b'*' && bytes.get(pos + 1) == Some(&b'/'))
                {
                    pos += 1;
                }
                pos = (pos + 2).min(bytes.len());
                TokenKind::BlockComment
            }
            b'"' => {
                pos += 1;
                while pos < bytes.len() {
                    match bytes[pos] {
                        b'\\' => pos += 2,
                        b'"' => {
                            pos += 1;
                            break;
                        }
                        b'\n' | b'\r' => break,
                        _ => pos += 1,
                    }
                }
                pos = pos.min(bytes.len());
                TokenKind::Str
            }
            b if is_punct(b) => {
                pos += 1;
                TokenKind::Punct(b)
            }
            b if is_op(b) => {
                while pos < bytes.len() && is_op(bytes[pos]) {
                    pos += 1;
                }
                TokenKind::Op
            }
            _ => {
                while pos < bytes.len() {
                    let c = bytes[pos];
                    if matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'"')
                        || is_punct(c)
                        || is_op(c)
                        || (c == b'/' && matches!(bytes.get(pos + 1), Some(b'/' | b'*')))
                    {
                        break;
                    }
                    pos += 1;
                }
                TokenKind::Word
            }
        };
        // Never split a character (a stray escape before a multi-byte char).
        while pos < bytes.len() && !text.is_char_boundary(pos) {
            pos += 1;
        }
        out.push(Token {
            kind,
            start,
            end: pos,
            newlines_before: newlines,
        });
        newlines = 0;
    }
    out
}

/// Every keyword of the grammar: the `kw_*` rules and the words of the
/// atomic rules made of fixed alternatives (units, adjacencies, accountants,
/// aggregations, noise kinds, norms, time units, contribution keys, …).
pub const KEYWORDS: &[&str] = &[
    // kw_* rules
    "plan",
    "privacy",
    "unit",
    "by",
    "user",
    "adjacency",
    "budget",
    "epsilon",
    "delta",
    "accountant",
    "population",
    "dataset",
    "source",
    "column",
    "id",
    "category",
    "int",
    "float",
    "in",
    "from",
    "until",
    "contribution",
    "invalid_rows",
    "query",
    "noise",
    "scale",
    "sigma",
    "auto",
    "weight",
    "sensitivity",
    "schedule",
    "once",
    "times",
    "every",
    "for",
    "publish",
    "when",
    // fixed-alternative atomic rules
    "event",
    "row",
    "add_remove",
    "replace",
    "best",
    "basic",
    "advanced",
    "zcdp",
    "rdp",
    "gdp",
    "pld",
    "rows_per_unit",
    "groups_per_unit",
    "rows_per_group",
    "drop",
    "clamp",
    "count",
    "sum",
    "mean",
    "histogram",
    "quantile",
    "discrete_laplace",
    "discrete_gaussian",
    "laplace",
    "gaussian",
    "l1",
    "l2",
    "seconds",
    "second",
    "minutes",
    "minute",
    "hours",
    "hour",
    "days",
    "day",
    "weeks",
    "week",
];

pub fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_every_non_space_byte() {
        let text = "plan \"a // b\" { /* c */ x.y>=3 // d\r\n  in [0,1] }\n\"open";
        let toks = tokenize(text);
        let kinds: Vec<_> = toks.iter().map(|t| (t.kind, t.text(text))).collect();
        assert_eq!(
            kinds,
            vec![
                (TokenKind::Word, "plan"),
                (TokenKind::Str, "\"a // b\""),
                (TokenKind::Punct(b'{'), "{"),
                (TokenKind::BlockComment, "/* c */"),
                (TokenKind::Word, "x.y"),
                (TokenKind::Op, ">="),
                (TokenKind::Word, "3"),
                (TokenKind::LineComment, "// d"),
                (TokenKind::Word, "in"),
                (TokenKind::Punct(b'['), "["),
                (TokenKind::Word, "0"),
                (TokenKind::Punct(b','), ","),
                (TokenKind::Word, "1"),
                (TokenKind::Punct(b']'), "]"),
                (TokenKind::Punct(b'}'), "}"),
                (TokenKind::Str, "\"open"),
            ]
        );
        assert_eq!(toks[8].newlines_before, 1);
    }

    #[test]
    fn never_splits_a_character() {
        for text in ["\"\\é\"", "é€😀", "/*é", "\"😀", "x\\"] {
            for t in tokenize(text) {
                assert!(text.is_char_boundary(t.start) && text.is_char_boundary(t.end));
            }
        }
    }
}
