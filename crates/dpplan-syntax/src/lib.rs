//! The `.dpplan` syntax: grammar (grammar/dpplan.pest), typed AST and an
//! error-tolerant parser.
//!
//! [`parse`] never fails and never panics: it returns the AST of everything
//! that parsed and one diagnostic per broken top-level item. It first splits
//! the plan into top-level items with a small scanner that understands
//! strings, comments and braces, then parses each item with its own grammar
//! rule, so a plan with three broken queries reports three errors and the
//! rest is still checked.
#![forbid(unsafe_code)]

pub mod ast;
mod lower;
mod messages;
mod split;

use dpplan_diagnostics::{Code, Diagnostic, Span};
use pest::Parser as _;

pub use split::{ItemKind, RawItem};

/// The pest parser generated from the grammar file, the single source of
/// truth for the syntax.
#[derive(pest_derive::Parser)]
#[grammar = "../../grammar/dpplan.pest"]
pub struct DpplanParser;

/// Inputs larger than this are refused before parsing (DP016).
pub const MAX_INPUT_BYTES: usize = 16 * 1024 * 1024;
/// Brace nesting deeper than this is refused (DP016). The grammar itself
/// nests at most three levels.
pub const MAX_NESTING: usize = 32;

/// The result of parsing one text.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub plan: ast::Plan,
    /// Syntax diagnostics (code DP000 or DP016), in source order.
    pub diagnostics: Vec<Diagnostic>,
    /// The top-level items as the scanner split them.
    pub items: Vec<RawItem>,
}

/// Parses a plan. Never panics; every problem is a diagnostic.
pub fn parse(text: &str) -> Parsed {
    let mut diagnostics = Vec::new();
    if text.len() > MAX_INPUT_BYTES {
        diagnostics.push(
            Diagnostic::new(
                Code::Limit,
                format!(
                    "the plan is {} bytes; dpplan reads at most {} bytes",
                    text.len(),
                    MAX_INPUT_BYTES
                ),
                Span::new(0, 0),
            )
            .help("split the plan into several files"),
        );
        return Parsed {
            plan: ast::Plan::default(),
            diagnostics,
            items: Vec::new(),
        };
    }
    let split = split::split(text);
    diagnostics.extend(split.diagnostics);
    let mut plan = ast::Plan::default();
    for item in &split.items {
        let slice = &text[item.span.start..item.span.end];
        let rule = match item.kind {
            ItemKind::Header => Rule::item_header,
            ItemKind::Privacy => Rule::item_privacy,
            ItemKind::Dataset => Rule::item_dataset,
            ItemKind::Query => Rule::item_query,
            ItemKind::Publish => Rule::item_publish,
            ItemKind::Unknown => {
                diagnostics.push(messages::unknown_item(text, item.span));
                plan.broken.push(item.span);
                continue;
            }
        };
        match parse_item(rule, slice) {
            Ok(pairs) => lower::lower_item(&mut plan, item.kind, pairs, item.span.start),
            Err(err) => {
                diagnostics.push(messages::from_pest(text, item.span.start, item.kind, &err));
                plan.broken.push(item.span);
                plan.privacy_broken |= item.kind == ItemKind::Privacy;
            }
        }
    }
    Parsed {
        plan,
        diagnostics,
        items: split.items,
    }
}

/// Serialises the rare re-parses that ask pest for error detail (a global
/// switch in pest).
static DETAIL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Parses one item. A failing item is parsed again with pest's error detail
/// on, which records the literal tokens it expected ("expected `,` or `)`");
/// the detail slows parsing by about a third, so intact items go without it.
fn parse_item(
    rule: Rule,
    slice: &str,
) -> Result<pest::iterators::Pairs<'_, Rule>, Box<pest::error::Error<Rule>>> {
    match DpplanParser::parse(rule, slice) {
        Ok(pairs) => Ok(pairs),
        Err(_) => {
            let _guard = DETAIL
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            pest::set_error_detail(true);
            let result = DpplanParser::parse(rule, slice);
            pest::set_error_detail(false);
            result.map_err(Box::new)
        }
    }
}

/// Parses the whole text with the grammar's `file` rule, with no recovery.
/// Used by tests to confirm that a text is one well-formed plan exactly as
/// the grammar describes it.
pub fn parse_strict(text: &str) -> Result<(), String> {
    DpplanParser::parse(Rule::file, text)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
