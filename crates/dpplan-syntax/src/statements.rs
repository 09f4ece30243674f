//! The statements of a well-formed plan as the grammar's whole-file rule
//! reads them: where each starts and ends and whether it opens a block. This
//! is all the formatter needs from the grammar (the layout itself it computes
//! over the [lexer](crate::lexer)'s tokens).

use dpplan_diagnostics::Span;
use pest::Parser as _;

use crate::{DpplanParser, Rule};

/// What a [`Statement`] is to the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    /// `plan "name" {`: its `{` opens the plan's block, which the
    /// [`StatementKind::PlanEnd`] closes.
    PlanHeader,
    /// A statement with a braced body (`privacy`, `dataset`, `query`,
    /// `contribution`): its first `{` opens the body and its last byte is
    /// the `}` that closes it.
    Block,
    /// A statement without a body: `unit …`, `column …`, `count(…)`,
    /// `noise …`, `publish …`, …
    Simple,
    /// The `}` that closes the plan.
    PlanEnd,
}

/// One statement (or the plan's closing brace) and its bytes in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statement {
    pub kind: StatementKind,
    /// From the statement's first token to its last; a statement that ends
    /// in an optional part it does not have (`publish a = b` without `when`)
    /// also holds the whitespace and comments after it, as pest's spans do.
    pub span: Span,
}

/// The statements of a text that is one well-formed plan, parsed with the
/// grammar's whole-file rule `file` (no recovery), each before the
/// statements it holds, in source order. The error is the grammar's message
/// when the text is not one well-formed plan.
pub fn statements(text: &str) -> Result<Vec<Statement>, String> {
    let pairs = DpplanParser::parse(Rule::file, text).map_err(|e| e.to_string())?;
    // a simple statement inside another (the aggregation of `cumulative
    // count(…)`) is part of it, not a statement of its own
    let mut simple_end = 0;
    Ok(pairs
        .flatten()
        .filter_map(|pair| {
            let kind = kind_of(pair.as_rule())?;
            let span = pair.as_span();
            if kind == StatementKind::Simple {
                if span.start() < simple_end {
                    return None;
                }
                simple_end = span.end();
            }
            Some(Statement {
                kind,
                span: Span::new(span.start(), span.end()),
            })
        })
        .collect())
}

fn kind_of(rule: Rule) -> Option<StatementKind> {
    Some(match rule {
        Rule::plan_header => StatementKind::PlanHeader,
        Rule::privacy | Rule::dataset | Rule::query | Rule::contribution => StatementKind::Block,
        Rule::publish
        | Rule::unit_stmt
        | Rule::adjacency_stmt
        | Rule::budget_stmt
        | Rule::accountant_stmt
        | Rule::population_stmt
        | Rule::source_stmt
        | Rule::column_stmt
        | Rule::contribution_stmt
        | Rule::invalid_stmt
        | Rule::sample_stmt
        | Rule::aggregate
        | Rule::cumulative_aggregate
        | Rule::noise_stmt
        | Rule::sensitivity_stmt
        | Rule::schedule_stmt
        | Rule::accuracy_stmt
        | Rule::window_stmt
        | Rule::release_stmt
        | Rule::candidates_stmt
        | Rule::postprocess_stmt
        | Rule::mechanism_stmt => StatementKind::Simple,
        Rule::plan_end => StatementKind::PlanEnd,
        _ => return None,
    })
}
