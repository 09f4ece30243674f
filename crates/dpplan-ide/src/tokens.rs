//! Semantic tokens: keywords, literals and comments from the lexer
//! (dpplan-syntax's), names from the symbol table (a dataset called `count`
//! is a dataset, not the keyword).

use dpplan_syntax::lexer::{is_keyword, LexemeKind};

use crate::{Document, SemanticKind, SemanticToken, Span, SymbolKind};

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
            LexemeKind::LineComment | LexemeKind::BlockComment => SemanticKind::Comment,
            LexemeKind::Str => SemanticKind::String,
            LexemeKind::Op => SemanticKind::Operator,
            LexemeKind::Punct(_) => continue,
            LexemeKind::Word { number } => {
                let i = names.partition_point(|n| n.span.start < t.start);
                let inside: Vec<&SemanticToken> = names[i..]
                    .iter()
                    .take_while(|n| n.span.end <= t.end)
                    .collect();
                if !inside.is_empty() {
                    out.extend(inside.into_iter().copied());
                    continue;
                }
                if number {
                    SemanticKind::Number
                } else if is_keyword(t.text(text)) {
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
