//! What a hover says when a number is unknown: which errors leave a
//! query's sensitivity, noise or cost underived, by code and message, so
//! that a plan with errors is never described as if it were valid (no
//! "sensitivity 0, costs nothing" for a query whose dataset is misspelt).

use std::fmt::Write as _;

use dpplan_diagnostics::{Diagnostic, LineIndex, Span};
use dpplan_syntax::ast;
use dpplan_syntax::ItemKind;

use crate::Document;

/// At most this many errors are named in one hover.
const NAMED: usize = 3;

/// The span of the item declaring the dataset `name`: parsed, or broken
/// (a syntax error inside it).
fn dataset_span(plan: &ast::Plan, name: &str) -> Option<Span> {
    if let Some(ds) = plan.datasets.iter().find(|d| d.name.value == name) {
        return Some(ds.span);
    }
    let broken = plan
        .broken_names
        .iter()
        .find(|b| b.kind == ItemKind::Dataset && b.name.value == name)?;
    plan.broken
        .iter()
        .copied()
        .find(|s| s.contains(broken.name.span.start))
}

/// The errors that explain why the query at `query` (its span) reading
/// `dataset` has no derived numbers: those inside the query, inside the
/// dataset it reads, or in the privacy block; when none is there, the
/// plan's first error (a claim needs the whole plan to be valid).
pub(crate) fn query_errors<'d>(
    doc: &'d Document,
    query: Span,
    dataset: Option<&str>,
) -> Vec<&'d Diagnostic> {
    let plan = doc.ast();
    let mut places = vec![query];
    places.extend(dataset.and_then(|d| dataset_span(plan, d)));
    places.extend(plan.privacy.iter().map(|p| p.span));
    let errors = doc.diagnostics().iter().filter(|d| d.is_error());
    let near: Vec<&Diagnostic> = errors
        .clone()
        .filter(|d| places.iter().any(|p| p.contains(d.primary.span.start)))
        .collect();
    if near.is_empty() {
        errors.take(1).collect()
    } else {
        near
    }
}

/// The errors as a Markdown list: code, name, message and line.
pub(crate) fn list(doc: &Document, errors: &[&Diagnostic]) -> String {
    let text = doc.text();
    let lines = LineIndex::new(text);
    let mut md = String::new();
    for d in errors.iter().take(NAMED) {
        let line = lines.line_col(text, d.primary.span.start).line;
        let _ = writeln!(
            md,
            "- **{}** ({}), line {line}: {}",
            d.code.as_str(),
            d.code.name(),
            d.message
        );
    }
    if errors.len() > NAMED {
        let _ = writeln!(md, "- and {} more", errors.len() - NAMED);
    }
    md
}

/// "**Sensitivity:** unknown …" with the errors that leave it unknown.
pub(crate) fn unknown_sensitivity(doc: &Document, q: &ast::Query) -> String {
    let dataset = q
        .aggregates
        .first()
        .map(|a| a.target.dataset.value.as_str());
    let errors = query_errors(doc, q.span, dataset);
    let mut md = String::from(
        "**Sensitivity:** unknown. **Noise and cost:** unknown. They cannot be derived until this is fixed:\n\n",
    );
    md.push_str(&list(doc, &errors));
    md
}

/// The hover of a name declared by an item that did not parse: it exists,
/// but nothing in it is known until its syntax error is fixed.
pub(crate) fn broken_item(doc: &Document, kind: ItemKind, name: &str) -> Option<String> {
    let plan = doc.ast();
    let b = plan
        .broken_names
        .iter()
        .find(|b| b.kind == kind && b.name.value == name)?;
    let span = plan
        .broken
        .iter()
        .copied()
        .find(|s| s.contains(b.name.span.start))
        .unwrap_or(b.name.span);
    let errors: Vec<&Diagnostic> = doc
        .diagnostics()
        .iter()
        .filter(|d| d.is_error() && span.contains(d.primary.span.start))
        .collect();
    let what = match kind {
        ItemKind::Dataset => "dataset",
        ItemKind::Query => "query",
        _ => "publish",
    };
    Some(format!(
        "**{what} `{name}`** could not be read: its columns, bounds, sensitivity and cost are unknown until this is fixed:\n\n{}",
        list(doc, &errors)
    ))
}
