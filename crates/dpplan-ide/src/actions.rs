//! Quick fixes for checker errors, by diagnostic code.
//!
//! * DP001 — add a contribution bound `rows_per_unit 10` (or 1);
//!
//! each offered only when, applied, the plan checks without what it fixes
//! and without a new error ([`code_actions`]);
//! * DP002 — declare public bounds ` in [0, 100]` (or a public domain);
//! * DP011 — calibrate a costly query's noise: `auto`, or the solved value;
//! * DP009 — replace a fresh re-release with a re-publication;
//! * any diagnostic with a suggestion ("did you mean `laplace`?": a
//!   misspelt keyword, mechanism or name) — replace the word by it.

use dpplan_diagnostics::{Code, Diagnostic, Severity, Span};
use dpplan_syntax::ast::{ColumnType, NoiseParam, Query};
use dpplan_syntax::lexer::LexemeKind;

use crate::{num, CodeAction, Document, Resolve, TextEdit};

fn meets(a: Span, b: Span) -> bool {
    a.start <= b.end && b.start <= a.end
}

/// The fixes offered in `range`: only those that, applied, make the plan
/// check without the diagnostic they claim to fix and without a new error
/// ([`fixes`]); an action resolved later ([`Resolve::SolveNoise`]) is
/// offered only when its `auto` variant fixes, and resolves to that variant
/// when no solved value does ([`solve_noise`]).
pub(crate) fn code_actions(doc: &Document, range: Span) -> Vec<CodeAction> {
    let candidates = candidates(doc, range);
    let mut verified: Vec<bool> = Vec::with_capacity(candidates.len());
    for (i, a) in candidates.iter().enumerate() {
        let ok = match (&a.resolve, &a.diagnostic) {
            (None, Some(d)) => fixes(doc, d, &a.edits),
            // offered with the `auto` action of the same query before it
            (Some(_), Some(_)) => i > 0 && verified[i - 1],
            (_, None) => false,
        };
        verified.push(ok);
    }
    candidates
        .into_iter()
        .zip(verified)
        .filter_map(|(a, ok)| ok.then_some(a))
        .collect()
}

/// The text with `edits` (non-overlapping) applied.
pub(crate) fn apply(text: &str, edits: &[TextEdit]) -> String {
    let mut edits: Vec<&TextEdit> = edits.iter().collect();
    edits.sort_by_key(|e| std::cmp::Reverse(e.span.start));
    let mut out = text.to_string();
    for e in edits {
        out.replace_range(e.span.start..e.span.end, &e.new_text);
    }
    out
}

/// How much of what `code` reports is in `diagnostics`: one per
/// diagnostic, but a DP009 hint counts each re-release it marks.
fn weight(diagnostics: &[Diagnostic], code: Code) -> usize {
    diagnostics
        .iter()
        .filter(|d| d.code == code)
        .map(|d| {
            if code == Code::FreshRerelease {
                rereleases(d).count()
            } else {
                1
            }
        })
        .sum()
}

/// Whether `edits` fix `d`: the document's text with them, analysed as the
/// document is (its policy, its accounting cache), reports less of `d`'s
/// code and no error of a code more often than before.
pub(crate) fn fixes(doc: &Document, d: &Diagnostic, edits: &[TextEdit]) -> bool {
    if edits.is_empty() {
        return false;
    }
    let before = doc.diagnostics();
    let after = doc
        .context
        .analyze(&apply(doc.text(), edits), &crate::light_options())
        .diagnostics;
    let errors = |ds: &[Diagnostic], code: Code| {
        ds.iter()
            .filter(|x| x.code == code && x.severity == Severity::Error)
            .count()
    };
    weight(&after, d.code) < weight(before, d.code)
        && after
            .iter()
            .filter(|x| x.severity == Severity::Error)
            .all(|x| errors(&after, x.code) <= errors(before, x.code))
}

pub(crate) fn candidates(doc: &Document, range: Span) -> Vec<CodeAction> {
    let mut out = Vec::new();
    for d in doc.diagnostics() {
        if d.code == Code::FreshRerelease {
            // One DP009 hint marks every re-release of a statistic: the
            // fix applies at each of them.
            for at in rereleases(d).filter(|s| meets(*s, range)) {
                republish(doc, d, at.start, &mut out);
            }
            continue;
        }
        if !meets(d.primary.span, range) {
            continue;
        }
        if let Some(word) = &d.suggestion {
            did_you_mean(d, word, &mut out);
        }
        match d.code {
            Code::UnboundedContribution => contribution(doc, d, &mut out),
            Code::MissingBounds => bounds(doc, d, &mut out),
            Code::OverBudget => calibrate(doc, d, &mut out),
            _ => {}
        }
    }
    out
}

fn action(title: String, d: &Diagnostic, edits: Vec<TextEdit>, preferred: bool) -> CodeAction {
    CodeAction {
        title,
        diagnostic: Some(d.clone()),
        edits,
        preferred,
        resolve: None,
    }
}

/// "did you mean `laplace`?": the misspelt word (the diagnostic's primary
/// span) replaced by the suggestion.
fn did_you_mean(d: &Diagnostic, word: &str, out: &mut Vec<CodeAction>) {
    out.push(action(
        format!("Change to `{word}`"),
        d,
        vec![TextEdit {
            span: d.primary.span,
            new_text: word.to_string(),
        }],
        true,
    ));
}

/// DP001: `rows_per_unit 10`, or `rows_per_unit 1` (the least a bound
/// costs) for a plan whose budget 10 rows would exceed; each offered only
/// when it fixes ([`code_actions`]).
fn contribution(doc: &Document, d: &Diagnostic, out: &mut Vec<CodeAction>) {
    for rows in [10, 1] {
        contribution_rows(doc, d, rows, out);
    }
}

fn contribution_rows(doc: &Document, d: &Diagnostic, rows: u32, out: &mut Vec<CodeAction>) {
    let plan = doc.ast();
    let at = d.primary.span.start;
    let Some(ds) = plan.datasets.iter().find(|ds| ds.span.contains(at)) else {
        return;
    };
    let text = doc.text();
    let edit = if let Some(c) = ds.contributions.first() {
        // Inside the existing block, right after its `{`.
        let Some(open) = doc
            .tokens()
            .iter()
            .find(|t| t.start >= c.span.start && t.kind == LexemeKind::Punct(b'{'))
        else {
            return;
        };
        let (_, indent) = doc.line_indent(c.span.start);
        TextEdit {
            span: Span::new(open.end, open.end),
            new_text: format!("\n{indent}  rows_per_unit {rows}"),
        }
    } else {
        let close = ds.span.end.saturating_sub(1);
        let (line_start, indent) = doc.line_indent(close);
        if text[line_start..close].trim().is_empty() {
            TextEdit {
                span: Span::new(line_start, line_start),
                new_text: format!(
                    "{indent}  contribution {{\n{indent}    rows_per_unit {rows}\n{indent}  }}\n"
                ),
            }
        } else {
            TextEdit {
                span: Span::new(close, close),
                new_text: format!("contribution {{ rows_per_unit {rows} }} "),
            }
        }
    };
    out.push(action(
        format!(
            "Bound each unit to {rows} row{} of `{}` (`contribution {{ rows_per_unit {rows} }}`)",
            if rows == 1 { "" } else { "s" },
            ds.name.value
        ),
        d,
        vec![edit],
        rows == 10,
    ));
}

fn bounds(doc: &Document, d: &Diagnostic, out: &mut Vec<CodeAction>) {
    let plan = doc.ast();
    let Some(decl) = d.secondary.first().map(|l| l.span) else {
        return;
    };
    for ds in &plan.datasets {
        for c in ds.columns.iter().filter(|c| c.name.span == decl) {
            let (kw, insert, title) = match &c.ty.value {
                ColumnType::Int { bounds: None } => {
                    ("int", " in [0, 100]", "Declare public bounds `in [0, 100]`")
                }
                ColumnType::Float { bounds: None } => (
                    "float",
                    " in [0, 100]",
                    "Declare public bounds `in [0, 100]`",
                ),
                ColumnType::Category { domain: None } => (
                    "category",
                    " { \"a\", \"b\" }",
                    "Declare a public domain `{ \"a\", \"b\" }`",
                ),
                _ => continue,
            };
            let at = c.ty.span.start + kw.len();
            out.push(action(
                format!(
                    "{title} on `{}.{}` (then adjust them)",
                    ds.name.value, c.name.value
                ),
                d,
                vec![TextEdit {
                    span: Span::new(at, at),
                    new_text: insert.to_string(),
                }],
                true,
            ));
        }
    }
}

/// The span of a query's noise parameter (`scale 250`, `epsilon 0.5 delta
/// 1e-9`), after the noise kind.
fn noise_param_span(doc: &Document, q: &Query) -> Option<(Span, bool)> {
    let n = q.noises.first()?;
    if matches!(n.param, NoiseParam::Auto { .. }) {
        return None;
    }
    let end = doc.trim(n.span).end;
    Some((Span::new(n.kind.span.end, end), n.kind.value.is_gaussian()))
}

fn replaced(text: &str, span: Span, with: &str) -> String {
    let mut s = String::with_capacity(text.len() + with.len());
    s.push_str(&text[..span.start]);
    s.push_str(with);
    s.push_str(&text[span.end..]);
    s
}

fn calibrate(doc: &Document, d: &Diagnostic, out: &mut Vec<CodeAction>) {
    let plan = doc.ast();
    for label in &d.secondary {
        let Some(q) = plan.queries.iter().find(|q| q.name.span == label.span) else {
            continue;
        };
        let Some((span, _)) = noise_param_span(doc, q) else {
            continue;
        };
        let name = &q.name.value;
        // With `auto`, the checker solves the noise that fits the budget.
        out.push(action(
            format!("Calibrate `{name}`'s noise to fit the budget (`auto`)"),
            d,
            vec![TextEdit {
                span,
                new_text: " auto".into(),
            }],
            false,
        ));
        // The solved value: computed on resolve (it runs the calibration).
        let mut a = action(
            format!("Set `{name}`'s noise to the value that fits the budget"),
            d,
            Vec::new(),
            true,
        );
        a.resolve = Some(Resolve::SolveNoise {
            query: name.clone(),
        });
        out.push(a);
    }
}

/// The edit that sets a query's noise to the solved value that makes the
/// plan fit its budget: the checker calibrates it as `auto`, the value is
/// printed rounded up (more noise) and checked to fit.
///
/// When no rounded value fits (or the plan does not check with `auto`), the
/// edit is `auto` itself, offered only when it fixes ([`code_actions`]).
pub(crate) fn solve_noise(doc: &Document, query: &str) -> Option<(String, TextEdit)> {
    let plan = doc.ast();
    let q = plan.queries.iter().find(|q| q.name.value == query)?;
    let (span, _) = noise_param_span(doc, q)?;
    solved_value(doc, query).or_else(|| {
        Some((
            format!("Calibrate `{query}`'s noise to fit the budget (`auto`)"),
            TextEdit {
                span,
                new_text: " auto".into(),
            },
        ))
    })
}

/// The solved value's edit, when one fixes the plan's DP011 ([`fixes`]).
fn solved_value(doc: &Document, query: &str) -> Option<(String, TextEdit)> {
    let plan = doc.ast();
    let text = doc.text();
    let q = plan.queries.iter().find(|q| q.name.value == query)?;
    let (span, gaussian) = noise_param_span(doc, q)?;
    let over = doc
        .diagnostics()
        .iter()
        .find(|d| d.code == Code::OverBudget)?;
    let auto_text = replaced(text, span, " auto");
    let solved = doc.context.analyze(&auto_text, &crate::fast_options());
    if solved.has_errors() {
        return None;
    }
    let mut value = solved
        .report
        .as_ref()
        .and_then(|r| r.queries.iter().find(|x| x.name == query))
        .and_then(|r| r.parts.first())
        .and_then(|p| {
            if gaussian {
                p.mechanism.sigma
            } else {
                p.mechanism.scale
            }
        })?;
    let keyword = if gaussian { "sigma" } else { "scale" };
    for _ in 0..3 {
        let candidate = format!(" {keyword} {}", num(value));
        let edit = TextEdit {
            span,
            new_text: candidate.clone(),
        };
        if fixes(doc, over, std::slice::from_ref(&edit)) {
            return Some((
                format!(
                    "Set `{query}`'s noise to `{}` so that the plan fits its budget",
                    candidate.trim()
                ),
                edit,
            ));
        }
        value *= 1.0001;
    }
    None
}

/// The re-releases a DP009 hint marks: its primary location, then its
/// related ones after the first (the first release of the statistic).
fn rereleases(d: &Diagnostic) -> impl Iterator<Item = Span> + '_ {
    std::iter::once(d.primary.span).chain(d.secondary.iter().skip(1).map(|l| l.span))
}

/// DP009's fix for the re-release at byte `at`.
fn republish(doc: &Document, d: &Diagnostic, at: usize, out: &mut Vec<CodeAction>) {
    let plan = doc.ast();
    let text = doc.text();
    let Some(q) = plan.queries.iter().find(|q| q.span.contains(at)) else {
        return;
    };
    let name = &q.name.value;
    if let Some(first) = d
        .secondary
        .first()
        .and_then(|l| plan.queries.iter().find(|x| x.name.span == l.span))
    {
        // The same statistic as another query: re-publish that one.
        out.push(action(
            format!(
                "Replace `{name}` by a re-publication of `{}` (free)",
                first.name.value
            ),
            d,
            vec![TextEdit {
                span: q.span,
                new_text: format!("publish {name} = {}", first.name.value),
            }],
            true,
        ));
        return;
    }
    // `schedule N times`: release once and re-publish.
    let Some(s) = q.schedules.first() else { return };
    let sched = doc.trim(s.span);
    let (_, indent) = doc.line_indent(q.span.start);
    let mut copy = format!("{name}_copy");
    let taken = |n: &str| {
        plan.queries.iter().any(|x| x.name.value == n)
            || plan.publishes.iter().any(|p| p.name.value == n)
    };
    let mut i = 2;
    while taken(&copy) {
        copy = format!("{name}_copy{i}");
        i += 1;
    }
    let _ = text;
    out.push(action(
        format!("Release `{name}` once and re-publish it as `{copy}` (free)"),
        d,
        vec![
            TextEdit {
                span: sched,
                new_text: "schedule once".into(),
            },
            TextEdit {
                span: Span::new(q.span.end, q.span.end),
                new_text: format!("\n{indent}publish {copy} = {name}"),
            },
        ],
        true,
    ));
}
