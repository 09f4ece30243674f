//! Every conversion between `dpplan-ide`'s plain data and lsp-types:
//!
//! - byte offsets ↔ positions ([`Lines`]), in the negotiated encoding (UTF-8
//!   or UTF-16), with CRLF line endings handled: a position never lands
//!   between `\r` and `\n`, nor inside a character;
//! - diagnostics, hovers, completion items, inlay hints, locations, document
//!   symbols, code actions, workspace edits and semantic tokens.
//!
//! Nothing here reads the server's state: each function maps its input (and
//! a document's [`Lines`]) to the protocol's type.

use std::collections::HashMap;
use std::str::FromStr;

use line_index::{LineCol, LineIndex, TextSize, WideEncoding, WideLineCol};
use lsp_types as lsp;
use lsp_types::{Position, Range};
use serde_json::Value;

use dpplan_ide::{Document, Severity, Span};

/// The file a `file:` URI names (percent-decoded), as `dpplan check` would
/// be given it; `None` for another scheme (an unsaved buffer), a remote
/// host, or a path that is not UTF-8.
pub(crate) fn file_path(uri: &lsp::Uri) -> Option<std::path::PathBuf> {
    if !uri.scheme().is_some_and(|s| s.eq_lowercase("file")) {
        return None;
    }
    let local = uri
        .authority()
        .is_none_or(|a| a.as_str().is_empty() || a.as_str().eq_ignore_ascii_case("localhost"));
    if !local {
        return None;
    }
    let path = uri.path().as_estr().decode().into_string().ok()?;
    // `file:///C:/plans/a.dpplan` on Windows
    let path = match path.strip_prefix('/') {
        Some(rest) if cfg!(windows) && rest.get(1..2) == Some(":") => rest.to_string(),
        _ => path.into_owned(),
    };
    Some(std::path::PathBuf::from(path))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

/// A text with its line index.
pub struct Lines<'a> {
    pub text: &'a str,
    pub index: &'a LineIndex,
    pub encoding: Encoding,
}

impl Lines<'_> {
    fn line_start(&self, line: u32) -> Option<usize> {
        self.index.offset(LineCol { line, col: 0 }).map(usize::from)
    }

    /// The end of a line's content (before `\r\n` or `\n`).
    fn line_content_end(&self, line: u32) -> usize {
        match self.line_start(line + 1) {
            Some(next) => {
                let nl = next - 1;
                if nl > 0 && self.text.as_bytes()[nl - 1] == b'\r' {
                    nl - 1
                } else {
                    nl
                }
            }
            None => self.text.len(),
        }
    }

    /// The byte offset of a position, clamped to the text, to its line's
    /// content and to a character boundary.
    pub fn offset(&self, pos: Position) -> usize {
        let Some(start) = self.line_start(pos.line) else {
            return self.text.len();
        };
        let end = self.line_content_end(pos.line).max(start);
        let col = match self.encoding {
            Encoding::Utf8 => pos.character,
            Encoding::Utf16 => self
                .index
                .to_utf8(
                    WideEncoding::Utf16,
                    WideLineCol {
                        line: pos.line,
                        col: pos.character,
                    },
                )
                .map_or(u32::MAX, |lc| lc.col),
        };
        let mut off = start.saturating_add(col as usize).min(end);
        while off > start && !self.text.is_char_boundary(off) {
            off -= 1;
        }
        off
    }

    pub fn position(&self, offset: usize) -> Position {
        let mut off = offset.min(self.text.len());
        while off > 0 && !self.text.is_char_boundary(off) {
            off -= 1;
        }
        let bytes = self.text.as_bytes();
        if off > 0 && off < bytes.len() && bytes[off] == b'\n' && bytes[off - 1] == b'\r' {
            off -= 1;
        }
        let lc = self.index.line_col(TextSize::from(off as u32));
        let character = match self.encoding {
            Encoding::Utf8 => lc.col,
            Encoding::Utf16 => self
                .index
                .to_wide(WideEncoding::Utf16, lc)
                .map_or(lc.col, |w| w.col),
        };
        Position {
            line: lc.line,
            character,
        }
    }

    pub fn range(&self, span: Span) -> Range {
        Range {
            start: self.position(span.start),
            end: self.position(span.end.max(span.start)),
        }
    }

    pub fn span(&self, range: Range) -> Span {
        let a = self.offset(range.start);
        let b = self.offset(range.end);
        Span::new(a.min(b), a.max(b))
    }

    /// Length of `text[start..end]` in the encoding's units.
    pub fn width(&self, start: usize, end: usize) -> u32 {
        let s = &self.text[start..end];
        match self.encoding {
            Encoding::Utf8 => s.len() as u32,
            Encoding::Utf16 => s.encode_utf16().count() as u32,
        }
    }
}

// ------------------------------------------------------------ semantic tokens

pub const TOKEN_TYPES: &[lsp::SemanticTokenType] = &[
    lsp::SemanticTokenType::KEYWORD,
    lsp::SemanticTokenType::STRING,
    lsp::SemanticTokenType::NUMBER,
    lsp::SemanticTokenType::COMMENT,
    lsp::SemanticTokenType::OPERATOR,
    lsp::SemanticTokenType::NAMESPACE,
    lsp::SemanticTokenType::PROPERTY,
    lsp::SemanticTokenType::FUNCTION,
    lsp::SemanticTokenType::VARIABLE,
];

fn token_type(kind: dpplan_ide::SemanticKind) -> u32 {
    use dpplan_ide::SemanticKind::*;
    match kind {
        Keyword => 0,
        String => 1,
        Number => 2,
        Comment => 3,
        Operator => 4,
        Dataset => 5,
        Column => 6,
        Query => 7,
        Publish => 8,
    }
}

// ------------------------------------------------------------ features

pub(crate) fn to_hover(h: dpplan_ide::Hover, lines: &Lines<'_>) -> lsp::Hover {
    lsp::Hover {
        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
            kind: lsp::MarkupKind::Markdown,
            value: h.markdown,
        }),
        range: Some(lines.range(h.span)),
    }
}

pub(crate) fn to_completion_item(
    c: dpplan_ide::CompletionItem,
    lines: &Lines<'_>,
) -> lsp::CompletionItem {
    use dpplan_ide::CompletionKind as K;
    let kind = match c.kind {
        K::Keyword => lsp::CompletionItemKind::KEYWORD,
        K::Dataset => lsp::CompletionItemKind::MODULE,
        K::Column => lsp::CompletionItemKind::FIELD,
        K::Query => lsp::CompletionItemKind::FUNCTION,
        K::Publish => lsp::CompletionItemKind::VARIABLE,
        K::Value => lsp::CompletionItemKind::VALUE,
    };
    let new_text = c.insert_text.clone().unwrap_or_else(|| c.label.clone());
    lsp::CompletionItem {
        label: c.label,
        kind: Some(kind),
        detail: c.detail,
        documentation: c.documentation.map(|d| {
            lsp::Documentation::MarkupContent(lsp::MarkupContent {
                kind: lsp::MarkupKind::Markdown,
                value: d,
            })
        }),
        text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
            range: lines.range(c.replace),
            new_text,
        })),
        ..Default::default()
    }
}

pub(crate) fn to_inlay_hint(h: dpplan_ide::InlayHint, lines: &Lines<'_>) -> lsp::InlayHint {
    lsp::InlayHint {
        position: lines.position(h.offset),
        label: lsp::InlayHintLabel::String(h.label),
        kind: None,
        text_edits: None,
        tooltip: h.tooltip.map(lsp::InlayHintTooltip::String),
        padding_left: Some(true),
        padding_right: None,
        data: None,
    }
}

pub(crate) fn to_location(uri: &lsp::Uri, lines: &Lines<'_>, span: Span) -> lsp::Location {
    lsp::Location {
        uri: uri.clone(),
        range: lines.range(span),
    }
}

// ------------------------------------------------------------ diagnostics, symbols, code actions

pub(crate) fn to_code_action(
    a: &dpplan_ide::CodeAction,
    lines: &Lines<'_>,
    uri: &lsp::Uri,
    docs_base: &str,
    data: Option<Value>,
) -> lsp::CodeAction {
    lsp::CodeAction {
        title: a.title.clone(),
        kind: Some(lsp::CodeActionKind::QUICKFIX),
        diagnostics: a
            .diagnostic
            .as_ref()
            .map(|d| vec![to_lsp_diagnostic(d, lines, uri, docs_base)]),
        edit: data.is_none().then(|| workspace_edit(uri, lines, &a.edits)),
        command: None,
        is_preferred: Some(a.preferred),
        disabled: None,
        data,
    }
}

// lsp-types keys `WorkspaceEdit::changes` by `Uri`, which clippy thinks mutable.
#[allow(clippy::mutable_key_type)]
pub(crate) fn workspace_edit(
    uri: &lsp::Uri,
    lines: &Lines<'_>,
    edits: &[dpplan_ide::TextEdit],
) -> lsp::WorkspaceEdit {
    let edits: Vec<lsp::TextEdit> = edits
        .iter()
        .map(|e| lsp::TextEdit {
            range: lines.range(e.span),
            new_text: e.new_text.clone(),
        })
        .collect();
    let mut changes = HashMap::new();
    changes.insert(uri.clone(), edits);
    lsp::WorkspaceEdit {
        changes: Some(changes),
        ..Default::default()
    }
}

#[allow(deprecated)]
pub(crate) fn to_symbol(o: &dpplan_ide::OutlineItem, lines: &Lines<'_>) -> lsp::DocumentSymbol {
    use dpplan_ide::OutlineKind as K;
    let kind = match o.kind {
        K::Plan => lsp::SymbolKind::FILE,
        K::Privacy => lsp::SymbolKind::NAMESPACE,
        K::Dataset => lsp::SymbolKind::STRUCT,
        K::Column => lsp::SymbolKind::FIELD,
        K::Query => lsp::SymbolKind::FUNCTION,
        K::Publish => lsp::SymbolKind::VARIABLE,
    };
    let range = lines.range(o.span);
    let mut selection = lines.range(o.selection);
    if selection.start < range.start || selection.end > range.end {
        selection = range;
    }
    lsp::DocumentSymbol {
        name: o.name.clone(),
        detail: o.detail.clone(),
        kind,
        tags: None,
        deprecated: None,
        range,
        selection_range: selection,
        children: (!o.children.is_empty())
            .then(|| o.children.iter().map(|c| to_symbol(c, lines)).collect()),
    }
}

pub(crate) fn semantic_tokens(doc: &Document, lines: &Lines<'_>) -> lsp::SemanticTokens {
    let text = doc.text();
    let mut data = Vec::new();
    let (mut prev_line, mut prev_start) = (0u32, 0u32);
    for t in doc.semantic_tokens() {
        // A token may span lines (a block comment): one token per line.
        let mut start = t.span.start;
        while start < t.span.end {
            let line_end = text[start..t.span.end]
                .find(['\n', '\r'])
                .map_or(t.span.end, |i| start + i);
            if line_end > start {
                let pos = lines.position(start);
                let length = lines.width(start, line_end);
                let delta_line = pos.line - prev_line;
                let delta_start = if delta_line == 0 {
                    pos.character - prev_start
                } else {
                    pos.character
                };
                data.push(lsp::SemanticToken {
                    delta_line,
                    delta_start,
                    length,
                    token_type: token_type(t.kind),
                    token_modifiers_bitset: u32::from(t.declaration),
                });
                prev_line = pos.line;
                prev_start = pos.character;
            }
            start = line_end;
            while start < t.span.end && matches!(text.as_bytes()[start], b'\n' | b'\r') {
                start += 1;
            }
        }
    }
    lsp::SemanticTokens {
        result_id: None,
        data,
    }
}

/// The link behind a diagnostic's code: the documentation base (where the
/// repository's files are published) plus `docs/diagnostics.md#dpNNN`;
/// none without a base (no host is guessed; the hover shows the text).
fn doc_url(base: &str, code: dpplan_ide::Code) -> Option<lsp::Uri> {
    if base.is_empty() {
        return None;
    }
    lsp::Uri::from_str(&format!("{base}{}", code.doc_path())).ok()
}

pub(crate) fn to_lsp_diagnostic(
    d: &dpplan_ide::Diagnostic,
    lines: &Lines<'_>,
    uri: &lsp::Uri,
    docs_base: &str,
) -> lsp::Diagnostic {
    let severity = match d.severity {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Hint => lsp::DiagnosticSeverity::HINT,
    };
    let mut message = d.message.clone();
    if let Some(h) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(h);
    }
    for n in &d.notes {
        message.push_str("\nnote: ");
        message.push_str(n);
    }
    let related: Vec<lsp::DiagnosticRelatedInformation> = d
        .secondary
        .iter()
        .map(|l| lsp::DiagnosticRelatedInformation {
            location: lsp::Location {
                uri: uri.clone(),
                range: lines.range(l.span),
            },
            message: if l.message.is_empty() {
                "related".into()
            } else {
                l.message.clone()
            },
        })
        .collect();
    lsp::Diagnostic {
        range: lines.range(d.primary.span),
        severity: Some(severity),
        code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
        code_description: doc_url(docs_base, d.code).map(|href| lsp::CodeDescription { href }),
        source: Some("dpplan".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_crlf_and_clamping() {
        let text = "a😀b\r\n漢字x\r\nlast";
        let index = LineIndex::new(text);
        let l = Lines {
            text,
            index: &index,
            encoding: Encoding::Utf16,
        };
        let b = text.find('b').unwrap();
        assert_eq!(
            l.position(b),
            Position {
                line: 0,
                character: 3
            }
        );
        assert_eq!(
            l.offset(Position {
                line: 0,
                character: 3
            }),
            b
        );
        // inside the surrogate pair: clamped to the character's start
        assert_eq!(
            l.offset(Position {
                line: 0,
                character: 2
            }),
            1
        );
        // past the end of the line: before the \r
        assert_eq!(
            l.offset(Position {
                line: 0,
                character: 99
            }),
            b + 1
        );
        // the \n of a CRLF maps to the end of the line's content
        assert_eq!(
            l.position(b + 2),
            Position {
                line: 0,
                character: 4
            }
        );
        let x = text.find('x').unwrap();
        assert_eq!(
            l.position(x),
            Position {
                line: 1,
                character: 2
            }
        );
        assert_eq!(
            l.offset(Position {
                line: 1,
                character: 2
            }),
            x
        );
        assert_eq!(
            l.offset(Position {
                line: 9,
                character: 0
            }),
            text.len()
        );
        let l8 = Lines {
            text,
            index: &index,
            encoding: Encoding::Utf8,
        };
        assert_eq!(
            l8.position(x),
            Position {
                line: 1,
                character: 6
            }
        );
        assert_eq!(
            l8.offset(Position {
                line: 1,
                character: 6
            }),
            x
        );
        assert_eq!(
            l8.offset(Position {
                line: 1,
                character: 4
            }),
            x - 3
        );
    }
}
