//! The canonical layout of `.dpplan` files.
//!
//! * 2-space indentation, one statement per line, `{` on its header's line,
//!   `}` on its own line, at most one blank line between statements;
//! * single spaces between tokens (none inside `( )` and `[ ]`, none before
//!   `,`), a category domain `{ "a", "b" }` kept on one line;
//! * comments kept where they were: a trailing comment stays at the end of
//!   its line, a comment on its own line stays on its own line;
//! * the file's line endings (LF or CRLF) kept, and one final newline.
//!
//! The grammar's `COMMENT` rule is silent, so the layout is computed over the
//! token stream of dpplan-syntax's [`lexer`] ([`lexer::tokenize`]); the
//! grammar only tells where each statement starts and which braces open
//! blocks ([`dpplan_syntax::statements`]). The formatter refuses a file with
//! syntax errors (it is left unchanged), and it checks its own output: the
//! result must parse to the same AST, spans aside, or the text is left
//! unchanged and [`FormatError::MeaningChanged`] is returned. Formatting is
//! idempotent.
#![forbid(unsafe_code)]

use std::collections::HashSet;

use dpplan_syntax::ast;
use dpplan_syntax::lexer::{self, Lexeme, LexemeKind};
use dpplan_syntax::StatementKind;

pub use dpplan_syntax::parse;

#[derive(Debug, Clone)]
pub enum FormatError {
    /// The text does not parse: it is left as it is. Carries the syntax
    /// diagnostics (or one message from the grammar's whole-file rule).
    Syntax(Vec<String>),
    /// The layout would change what the plan means (a formatter bug): the
    /// text is left as it is.
    MeaningChanged,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormatError::Syntax(msgs) => {
                write!(f, "the plan has syntax errors and was left unchanged")?;
                for m in msgs {
                    write!(f, "\n  {m}")?;
                }
                Ok(())
            }
            FormatError::MeaningChanged => write!(
                f,
                "formatting would change the plan's meaning; the file was left unchanged (please report this)"
            ),
        }
    }
}

impl std::error::Error for FormatError {}

const INDENT: &str = "  ";

struct Layout {
    stmt_starts: HashSet<usize>,
    block_opens: HashSet<usize>,
    block_closes: HashSet<usize>,
}

fn layout_of(text: &str, tokens: &[Lexeme]) -> Result<Layout, String> {
    let mut layout = Layout {
        stmt_starts: HashSet::new(),
        block_opens: HashSet::new(),
        block_closes: HashSet::new(),
    };
    for statement in dpplan_syntax::statements(text)? {
        let span = statement.span;
        match statement.kind {
            StatementKind::PlanHeader | StatementKind::Block => {
                layout.stmt_starts.insert(span.start);
                // The first `{` of the statement opens the block: the
                // tokens are in source order, so the search starts at the
                // statement's first token (a binary search, not a scan from
                // the file's start, which made formatting quadratic).
                let first = tokens.partition_point(|t| t.start < span.start);
                let open = tokens[first..]
                    .iter()
                    .find(|t| t.kind == LexemeKind::Punct(b'{'))
                    .map(|t| t.start);
                if let Some(open) = open {
                    layout.block_opens.insert(open);
                }
                if statement.kind == StatementKind::Block {
                    layout.block_closes.insert(span.end.saturating_sub(1));
                }
            }
            StatementKind::Simple => {
                layout.stmt_starts.insert(span.start);
            }
            StatementKind::PlanEnd => {
                layout.block_closes.insert(span.start);
            }
        }
    }
    Ok(layout)
}

/// The AST as a JSON value with every span removed: what "the same meaning"
/// is compared on.
pub fn meaning(plan: &ast::Plan) -> serde_json::Value {
    stripped(serde_json::to_value(plan))
}

/// Whether two ASTs have the same [`meaning`], compared item by item so that
/// only one item's JSON value is held at a time (the whole plan's value of a
/// large file took tens of kilobytes per line).
pub fn same_meaning(a: &ast::Plan, b: &ast::Plan) -> bool {
    macro_rules! same {
        ($x:expr, $y:expr) => {
            $x.len() == $y.len()
                && $x.iter().zip($y.iter()).all(|(x, y)| {
                    stripped(serde_json::to_value(x)) == stripped(serde_json::to_value(y))
                })
        };
    }
    // every field named: a new one does not compile until it is compared
    let ast::Plan {
        name,
        header_span,
        privacy,
        datasets,
        queries,
        publishes,
        broken,
        privacy_broken,
        broken_names,
    } = a;
    stripped(serde_json::to_value(name)) == stripped(serde_json::to_value(&b.name))
        && header_span.is_some() == b.header_span.is_some()
        && same!(privacy, b.privacy)
        && same!(datasets, b.datasets)
        && same!(queries, b.queries)
        && same!(publishes, b.publishes)
        && broken.len() == b.broken.len()
        && *privacy_broken == b.privacy_broken
        && same!(broken_names, b.broken_names)
}

/// A serialised value with every span (an object of exactly `start` and
/// `end`) replaced by `null`.
fn stripped(v: serde_json::Result<serde_json::Value>) -> serde_json::Value {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                let is_span =
                    map.len() == 2 && map.contains_key("start") && map.contains_key("end");
                if is_span {
                    *v = serde_json::Value::Null;
                    return;
                }
                for (_, x) in map.iter_mut() {
                    strip(x);
                }
            }
            serde_json::Value::Array(xs) => xs.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = v.unwrap_or(serde_json::Value::Null);
    strip(&mut v);
    v
}

/// Formats a plan. Returns the text in its canonical layout, or why it was
/// left unchanged.
pub fn format(text: &str) -> Result<String, FormatError> {
    let before = dpplan_syntax::parse(text);
    if !before.diagnostics.is_empty() {
        return Err(FormatError::Syntax(
            before
                .diagnostics
                .iter()
                .map(|d| format!("{}: {}", d.code, d.message))
                .collect(),
        ));
    }
    // only the AST is compared: the scanner's items go before the output
    // is parsed, and the tokens and layout once it is rendered (peak
    // memory: the text, the output and two ASTs)
    let before = before.plan;
    let out = {
        let tokens = lexer::tokenize(text);
        let layout = layout_of(text, &tokens).map_err(|e| FormatError::Syntax(vec![e]))?;
        render(text, &tokens, &layout)
    };
    let after = dpplan_syntax::parse(&out);
    if !after.diagnostics.is_empty() || !same_meaning(&after.plan, &before) {
        return Err(FormatError::MeaningChanged);
    }
    Ok(out)
}

fn space_between(text: &str, prev: &Lexeme, t: &Lexeme, inline_open: bool) -> bool {
    use LexemeKind::*;
    if prev.is_comment() || t.is_comment() {
        return true;
    }
    match t.kind {
        // `1%`: a percentage sticks to its number
        Punct(b',' | b')' | b']' | b'%') => return false,
        Punct(b'}') if inline_open && prev.kind == Punct(b'{') => return false,
        // a call (`count(`, `bins(`), but not a filter's parenthesised
        // group after `where`, `and`, `or`, `not`
        Punct(b'(') if prev.is_word() => {
            let word = text.get(prev.start..prev.end).unwrap_or("");
            return matches!(word, "where" | "and" | "or" | "not");
        }
        _ => {}
    }
    !matches!(prev.kind, Punct(b'(' | b'['))
}

fn render(text: &str, tokens: &[Lexeme], layout: &Layout) -> String {
    let crlf = text
        .find('\n')
        .is_some_and(|i| i > 0 && text.as_bytes()[i - 1] == b'\r');
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut depth: usize = 0;
    let mut prev: Option<&Lexeme> = None;
    // Whether the innermost `{` on the current line is a domain list's.
    let mut inline_open = false;
    // The index of the first token after the current run of comments that
    // is not a comment (`tokens.len()` when there is none).
    let mut next_code: Option<usize> = None;
    for (i, t) in tokens.iter().enumerate() {
        let is_open = t.kind == LexemeKind::Punct(b'{') && layout.block_opens.contains(&t.start);
        let is_close = t.kind == LexemeKind::Punct(b'}') && layout.block_closes.contains(&t.start);
        let is_stmt = layout.stmt_starts.contains(&t.start) && !t.is_comment();
        let prev_open = prev.is_some_and(|p| {
            p.kind == LexemeKind::Punct(b'{') && layout.block_opens.contains(&p.start)
        });
        let after_line_comment = prev.is_some_and(|p| p.kind == LexemeKind::LineComment);

        // Does the token start a new line, and is a blank line kept before it?
        let new_line = match prev {
            None => false,
            Some(_) if after_line_comment => true,
            Some(_) if t.is_comment() => t.newlines_before > 0,
            Some(_) => is_stmt || is_close || prev_open,
        };
        let blank = new_line && t.newlines_before >= 2 && !prev_open && !is_close;

        if is_close {
            depth = depth.saturating_sub(1);
        }
        if new_line {
            while out.ends_with(' ') {
                out.pop();
            }
            out.push('\n');
            if blank {
                out.push('\n');
            }
            // Indentation: statements and block ends at the block's depth;
            // own-line comments at the depth of what follows them; anything
            // else continues a statement one level deeper.
            let level = if is_stmt || is_close {
                depth
            } else if t.is_comment() {
                // the next token that is not a comment, found once per run
                // of comments (a scan per comment was quadratic in the run)
                if next_code.is_none_or(|n| n <= i) {
                    next_code = tokens[i + 1..]
                        .iter()
                        .position(|n| !n.is_comment())
                        .map_or(Some(tokens.len()), |k| Some(i + 1 + k));
                }
                let next = next_code.and_then(|n| tokens.get(n));
                match next {
                    None => depth,
                    Some(n) => {
                        let n_stmt = layout.stmt_starts.contains(&n.start);
                        let n_close = n.kind == LexemeKind::Punct(b'}')
                            && layout.block_closes.contains(&n.start);
                        if n_stmt || n_close || prev_open {
                            depth
                        } else {
                            depth + 1
                        }
                    }
                }
            } else {
                depth + 1
            };
            for _ in 0..level {
                out.push_str(INDENT);
            }
        } else if let Some(p) = prev {
            if space_between(text, p, t, inline_open) {
                out.push(' ');
            }
        }
        match t.kind {
            LexemeKind::LineComment => out.push_str(t.text(text).trim_end()),
            LexemeKind::BlockComment => out.push_str(&t.text(text).replace("\r\n", "\n")),
            _ => out.push_str(t.text(text)),
        }
        if is_open {
            depth += 1;
        } else if t.kind == LexemeKind::Punct(b'{') {
            inline_open = true;
        } else if t.kind == LexemeKind::Punct(b'}') && !is_close {
            inline_open = false;
        }
        prev = Some(t);
    }
    while out.ends_with(' ') {
        out.pop();
    }
    out.push('\n');
    if crlf {
        out = out.replace('\n', "\r\n");
    }
    out
}

#[cfg(test)]
mod tests;
