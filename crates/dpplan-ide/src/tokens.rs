//! Semantic tokens: keywords, literals and comments from the lexer, names
//! from the symbol table (a dataset called `count` is a dataset, not the
//! keyword).

use dpplan_fmt::lexer::{is_keyword, TokenKind};

use crate::{Document, SemanticKind, SemanticToken, Span, SymbolKind};

fn is_number(w: &str) -> bool {
    let w = w.strip_prefix(['+', '-']).unwrap_or(w);
    w.starts_with(|c: char| c.is_ascii_digit())
        || ["nan", "inf", "infinity"]
            .iter()
            .any(|k| w.eq_ignore_ascii_case(k))
}

pub(crate) fn semantic_tokens(doc: &Document) -> Vec<SemanticToken> {
    let mut names: Vec<SemanticToken> = Vec::new();
    for s in doc.symbols() {
        let kind = match s.kind {
            SymbolKind::Dataset => SemanticKind::Dataset,
            SymbolKind::Column => SemanticKind::Column,
            SymbolKind::Query => SemanticKind::Query,
            SymbolKind::Publish => SemanticKind::Publish,
        };
        for (spans, declaration) in [(&s.defs, true), (&s.refs, false)] {
            for &span in spans.iter() {
                names.push(SemanticToken {
                    span,
                    kind,
                    declaration,
                });
            }
        }
    }
    names.sort_by_key(|t| (t.span.start, !t.declaration));
    names.dedup_by_key(|t| t.span.start);
    let text = doc.text();
    let mut out = Vec::with_capacity(doc.tokens().len());
    for t in doc.tokens() {
        let kind = match t.kind {
            TokenKind::LineComment | TokenKind::BlockComment => SemanticKind::Comment,
            TokenKind::Str => SemanticKind::String,
            TokenKind::Op => SemanticKind::Operator,
            TokenKind::Punct(_) => continue,
            TokenKind::Word => {
                let i = names.partition_point(|n| n.span.start < t.start);
                let inside: Vec<&SemanticToken> = names[i..]
                    .iter()
                    .take_while(|n| n.span.end <= t.end)
                    .collect();
                if !inside.is_empty() {
                    out.extend(inside.into_iter().copied());
                    continue;
                }
                let w = t.text(text);
                if is_number(w) {
                    SemanticKind::Number
                } else if is_keyword(w) {
                    SemanticKind::Keyword
                } else {
                    continue;
                }
            }
        };
        out.push(SemanticToken {
            span: Span::new(t.start, t.end),
            kind,
            declaration: false,
        });
    }
    out
}
