//! Splits a plan into its top-level items without the grammar, so that each
//! item can be parsed (and fail) on its own.
//!
//! The scanner knows strings, line and block comments and braces. An item
//! starts at the first token after the previous one ended; it ends at the
//! brace that closes it, at the end of its line if it opens no brace (a
//! `publish`), or — when its braces never balance — just before the next line
//! that starts with an item keyword. A stray `}` at item level closes the plan.

use dpplan_diagnostics::{Code, Diagnostic, Span};
use serde::Serialize;

use crate::MAX_NESTING;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Header,
    Privacy,
    Dataset,
    Query,
    Publish,
    Unknown,
}

impl ItemKind {
    fn from_word(word: &str) -> Option<ItemKind> {
        Some(match word {
            "plan" => ItemKind::Header,
            "privacy" => ItemKind::Privacy,
            "dataset" => ItemKind::Dataset,
            "query" => ItemKind::Query,
            "publish" => ItemKind::Publish,
            _ => return None,
        })
    }
    pub fn describe(self) -> &'static str {
        match self {
            ItemKind::Header => "the plan header",
            ItemKind::Privacy => "the privacy block",
            ItemKind::Dataset => "this dataset",
            ItemKind::Query => "this query",
            ItemKind::Publish => "this publish statement",
            ItemKind::Unknown => "this item",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RawItem {
    pub kind: ItemKind,
    pub span: Span,
}

pub(crate) struct Split {
    pub items: Vec<RawItem>,
    pub diagnostics: Vec<Diagnostic>,
}

struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }
    fn at(&self, s: &str) -> bool {
        self.bytes[self.pos..].starts_with(s.as_bytes())
    }
    /// Skips whitespace and comments. Returns true when a newline was crossed.
    fn skip_trivia(&mut self) -> bool {
        let mut newline = false;
        loop {
            match self.peek() {
                Some(b'\n') => {
                    newline = true;
                    self.pos += 1;
                }
                Some(b' ' | b'\t' | b'\r') => self.pos += 1,
                // A line comment ends at a line break as the grammar's
                // NEWLINE knows it: `\n`, `\r\n`, or a lone `\r`.
                Some(b'/') if self.at("//") => {
                    while !matches!(self.peek(), None | Some(b'\n' | b'\r')) {
                        self.pos += 1;
                    }
                }
                Some(b'/') if self.at("/*") => {
                    self.pos += 2;
                    while self.peek().is_some() && !self.at("*/") {
                        if self.peek() == Some(b'\n') {
                            newline = true;
                        }
                        self.pos += 1;
                    }
                    self.pos = (self.pos + 2).min(self.bytes.len());
                }
                _ => return newline,
            }
        }
    }
    /// The identifier-like word at the cursor, if any.
    fn word(&self) -> &'a str {
        let start = self.pos;
        let mut end = start;
        while end < self.bytes.len()
            && (self.bytes[end].is_ascii_alphanumeric() || self.bytes[end] == b'_')
        {
            end += 1;
        }
        // ASCII only, so always a valid boundary.
        std::str::from_utf8(&self.bytes[start..end]).unwrap_or("")
    }
    /// Advances over one token (a string, a word, or one byte/character).
    fn skip_token(&mut self) {
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                while let Some(c) = self.peek() {
                    match c {
                        b'\\' => self.pos += 2,
                        b'"' => {
                            self.pos += 1;
                            break;
                        }
                        b'\n' => break,
                        _ => self.pos += 1,
                    }
                }
                self.pos = self.pos.min(self.bytes.len());
            }
            Some(c) if c.is_ascii_alphanumeric() || c == b'_' => {
                self.pos += self.word().len().max(1);
            }
            Some(_) => {
                self.pos += 1;
                while self.pos < self.bytes.len() && (self.bytes[self.pos] & 0xC0) == 0x80 {
                    self.pos += 1;
                }
            }
            None => {}
        }
    }
}

pub(crate) fn split(text: &str) -> Split {
    let mut s = Scanner {
        bytes: text.as_bytes(),
        pos: 0,
    };
    let mut items = Vec::new();
    let mut diagnostics = Vec::new();
    let mut has_header = false;
    let mut plan_closed = false;
    let mut too_deep_reported = false;

    s.skip_trivia();
    if s.peek().is_none() {
        diagnostics.push(
            Diagnostic::new(Code::Missing, "the file declares no plan", Span::new(0, 0))
                .label("expected `plan \"name\" {`")
                .help("start the file with `plan \"my-plan\" {` and close it with `}`"),
        );
        return Split { items, diagnostics };
    }

    loop {
        s.skip_trivia();
        let start = s.pos;
        let Some(c) = s.peek() else { break };
        if c == b'}' {
            s.pos += 1;
            if plan_closed || !has_header {
                diagnostics.push(
                    Diagnostic::new(Code::Syntax, "unmatched `}`", Span::new(start, s.pos))
                        .label("nothing is open here")
                        .help("remove this brace"),
                );
            }
            plan_closed = true;
            continue;
        }
        if plan_closed {
            // Anything after the plan's closing brace.
            let end = text.len();
            let trimmed = text[start..end].trim_end();
            diagnostics.push(
                Diagnostic::new(
                    Code::Syntax,
                    "unexpected text after the end of the plan",
                    Span::new(start, start + trimmed.len()),
                )
                .label("the plan was closed by the `}` before this")
                .help("a file declares one plan: move this inside the plan's braces, or remove it"),
            );
            break;
        }
        let kind = ItemKind::from_word(s.word()).unwrap_or(ItemKind::Unknown);
        if kind == ItemKind::Header {
            // The header ends at its `{`.
            while let Some(c) = s.peek() {
                s.skip_token();
                if c == b'{' || c == b'\n' {
                    break;
                }
                s.skip_trivia_inline();
            }
            if has_header {
                diagnostics.push(
                    Diagnostic::new(
                        Code::Duplicate,
                        "a file declares one plan, but this is a second `plan` header",
                        Span::new(start, s.pos),
                    )
                    .help("split the plans into separate files"),
                );
            } else {
                has_header = true;
                items.push(RawItem {
                    kind,
                    span: Span::new(start, s.pos),
                });
            }
            continue;
        }
        if !has_header && items.is_empty() {
            diagnostics.push(
                Diagnostic::new(
                    Code::Missing,
                    "the plan has no header",
                    Span::new(start, start + s.word().len().max(1)),
                )
                .label("expected `plan \"name\" {` before this")
                .help("start the file with `plan \"my-plan\" {` and close it with `}`"),
            );
            // Record a virtual header so that the missing-header error is said once.
            has_header = true;
        }
        // Scan the item.
        let mut depth: usize = 0;
        let mut end;
        s.skip_token();
        loop {
            end = s.pos;
            let newline = s.skip_trivia();
            let Some(c) = s.peek() else { break };
            if newline {
                if ItemKind::from_word(s.word()).is_some() {
                    // A new item begins on this line: the current one ends
                    // before it (broken, if its braces are still open).
                    break;
                }
                if kind == ItemKind::Publish && depth == 0 {
                    // A brace-less item ends at its line's end.
                    break;
                }
            }
            match c {
                b'{' => {
                    depth += 1;
                    if depth > MAX_NESTING && !too_deep_reported {
                        too_deep_reported = true;
                        diagnostics.push(
                            Diagnostic::new(
                                Code::Limit,
                                format!("braces nest deeper than {MAX_NESTING} levels"),
                                Span::new(s.pos, s.pos + 1),
                            )
                            .help(
                                "the grammar nests at most three levels: check for unclosed braces",
                            ),
                        );
                    }
                    s.pos += 1;
                }
                b'}' => {
                    if depth == 0 {
                        // The plan's closing brace: the item ends before it.
                        break;
                    }
                    depth -= 1;
                    s.pos += 1;
                    if depth == 0 {
                        end = s.pos;
                        break;
                    }
                }
                _ => s.skip_token(),
            }
        }
        items.push(RawItem {
            kind,
            span: Span::new(start, end),
        });
        s.pos = s.pos.max(end);
    }
    if has_header && !plan_closed && items.iter().any(|i| i.kind == ItemKind::Header) {
        let end = text.trim_end().len();
        diagnostics.push(
            Diagnostic::new(Code::Syntax, "the plan is not closed", Span::new(end, end))
                .label("expected `}` here")
                .help("close the plan with `}` at the end of the file"),
        );
    }
    Split { items, diagnostics }
}

impl Scanner<'_> {
    /// Skips spaces and comments but stops before a newline.
    fn skip_trivia_inline(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'/' if self.at("/*") => {
                    self.pos += 2;
                    while self.peek().is_some() && !self.at("*/") {
                        self.pos += 1;
                    }
                    self.pos = (self.pos + 2).min(self.bytes.len());
                }
                _ => return,
            }
        }
    }
}
