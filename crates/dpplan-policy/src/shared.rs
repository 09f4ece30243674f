//! Budgets shared across plans (DP107). A policy gives one data source one
//! (ε, δ) budget; every release of every checked plan that reads it is a
//! fresh access to the same people, so all of them are composed together,
//! with the tightest sound accountant at the shared budget's δ, and the
//! total is compared with the budget. Each plan's share is its own ε on
//! that source alone (shares do not add up: composition is sublinear).

use std::path::{Path, PathBuf};

use dpplan_accounting as acct;
use dpplan_check::Analysis;
use dpplan_diagnostics::{num, Code, Diagnostic, Span};
use dpplan_syntax::ast::Dataset;

use crate::config::{is_policy, normalise, Policy, SharedBudget};

/// One plan's part of a shared budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// Index into the plans given to [`shared_budgets`].
    pub plan: usize,
    /// The datasets of the plan that read the source.
    pub datasets: Vec<String>,
    /// The plan's ε on the source alone, at the budget's δ; `None` when it
    /// cannot be accounted (the reason is in [`SharedResult::problem`]).
    pub epsilon: Option<f64>,
    pub releases: u64,
}

/// A shared budget, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedResult {
    pub budget: SharedBudget,
    pub shares: Vec<Share>,
    /// The composed ε of every share and the accountant that gave it.
    pub total: Option<(f64, acct::Accountant)>,
    /// Why there is no total, or why the plans cannot be composed.
    pub problem: Option<String>,
    pub within: bool,
}

/// The source a plan's dataset reads, resolved like the runtime does:
/// relative to the plan's directory.
fn resolved(plan: &Path, source: &str) -> PathBuf {
    let dir = normalise(plan)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    normalise(&dir.join(source))
}

/// Checks every shared budget of the policy on `plans` (path, analysis):
/// the results, and the diagnostics to add to each plan (by index).
pub fn shared_budgets(
    policy: &Policy,
    plans: &[(&Path, &Analysis)],
) -> (Vec<SharedResult>, Vec<(usize, Diagnostic)>) {
    let mut results = Vec::new();
    let mut diags = Vec::new();
    for b in &policy.budgets {
        let (result, d) = one(policy, b, plans);
        if let Some(r) = result {
            results.push(r);
        }
        diags.extend(d);
    }
    (results, diags)
}

fn one(
    policy: &Policy,
    b: &SharedBudget,
    plans: &[(&Path, &Analysis)],
) -> (Option<SharedResult>, Vec<(usize, Diagnostic)>) {
    let mut shares = Vec::new();
    let mut all: Vec<acct::Release> = Vec::new();
    // the thresholds' δ of the plans' keys from the data, summed
    let mut thresholds = 0.0f64;
    let mut problem: Option<String> = None;
    let mut contract: Option<(String, String)> = None;
    let mut anchors: Vec<(usize, Span)> = Vec::new();
    for (i, (path, a)) in plans.iter().enumerate() {
        let reading: Vec<&Dataset> = a
            .ast
            .datasets
            .iter()
            .filter(|d| d.sources.iter().any(|s| resolved(path, &s.value) == b.path))
            .collect();
        if reading.is_empty() {
            continue;
        }
        anchors.push((i, reading[0].name.span));
        let names: Vec<String> = reading.iter().map(|d| d.name.value.clone()).collect();
        // the policy's own errors (DP1xx) do not stop the counting; the
        // checker's do: then no sound total exists
        let checker_errors = a
            .diagnostics
            .iter()
            .any(|d| d.is_error() && !is_policy(d.code));
        let report = a.report.as_ref().filter(|_| !checker_errors);
        let Some(r) = report else {
            problem.get_or_insert(format!(
                "`{}` has errors: its releases cannot be counted",
                path.display()
            ));
            shares.push(Share {
                plan: i,
                datasets: names,
                epsilon: None,
                releases: 0,
            });
            continue;
        };
        let this = (r.unit.kind.to_string(), r.adjacency.to_string());
        match &contract {
            None => contract = Some(this),
            Some(c) if *c != this => {
                problem.get_or_insert(format!(
                    "the plans protect different units or use different adjacency ({} / {} and {} / {}): their guarantees do not compose into one",
                    c.0, c.1, this.0, this.1
                ));
            }
            Some(_) => {}
        }
        let mine: Vec<acct::Release> = r
            .queries
            .iter()
            .filter(|q| names.contains(&q.dataset))
            .flat_map(|q| {
                q.parts.iter().filter_map(move |p| {
                    p.accounted.map(|m| acct::Release {
                        mechanism: m,
                        count: q.accounted_releases,
                    })
                })
            })
            .filter(|rel| rel.count > 0)
            .collect();
        let releases = mine.iter().map(|r| r.count).sum();
        // keys from the data: their thresholds' δ comes out of the shared
        // δ before the mechanisms are composed (docs/accounting.md)
        let own_thr: f64 = r
            .queries
            .iter()
            .filter(|q| names.contains(&q.dataset))
            .filter_map(|q| q.selection.as_ref().map(|s| s.delta))
            .sum();
        thresholds += own_thr;
        let epsilon = if mine.is_empty() {
            Some(0.0)
        } else if own_thr >= b.delta {
            None
        } else {
            acct::best(&mine, b.delta - own_thr).ok().map(|x| x.epsilon)
        };
        all.extend(mine);
        shares.push(Share {
            plan: i,
            datasets: names,
            epsilon,
            releases,
        });
    }
    if shares.is_empty() {
        return (None, Vec::new());
    }
    let total = if problem.is_some() {
        None
    } else if all.is_empty() {
        Some((0.0, acct::Accountant::Basic))
    } else if thresholds >= b.delta {
        problem = Some(format!(
            "the thresholds of keys from the data cost δ = {} together, not below the shared δ = {}",
            num(thresholds),
            num(b.delta)
        ));
        None
    } else {
        match acct::best(&all, b.delta - thresholds) {
            Ok(x) => Some((x.epsilon, x.accountant)),
            Err(e) => {
                problem = Some(format!(
                    "the composed releases cannot be bounded at δ = {}: {e}",
                    num(b.delta)
                ));
                None
            }
        }
    };
    let within = total.is_some_and(|(e, _)| e <= b.epsilon);
    let result = SharedResult {
        budget: b.clone(),
        shares,
        total,
        problem,
        within,
    };
    let diags = if within {
        Vec::new()
    } else {
        diagnostics(policy, &result, plans, &anchors)
    };
    (Some(result), diags)
}

fn diagnostics(
    policy: &Policy,
    r: &SharedResult,
    plans: &[(&Path, &Analysis)],
    anchors: &[(usize, Span)],
) -> Vec<(usize, Diagnostic)> {
    let shares: Vec<String> = r
        .shares
        .iter()
        .map(|s| {
            format!(
                "{} ε = {}",
                plans[s.plan].0.display(),
                s.epsilon.map_or("—".to_string(), num)
            )
        })
        .collect();
    let what = match (&r.total, &r.problem) {
        (Some((e, a)), _) => format!(
            "the {} plans reading `{}` compose to ε = {} at δ = {} ({a}), above its shared budget ε = {}",
            r.shares.len(),
            r.budget.source,
            num(*e),
            num(r.budget.delta),
            num(r.budget.epsilon)
        ),
        (None, Some(p)) => format!(
            "the plans reading `{}` cannot be checked against its shared budget ε = {}: {p}",
            r.budget.source,
            num(r.budget.epsilon)
        ),
        (None, None) => format!("the plans reading `{}` have no total", r.budget.source),
    };
    let file = policy.file.display();
    anchors
        .iter()
        .map(|&(i, span)| {
            (
                i,
                Diagnostic::new(
                    Code::SharedBudget,
                    format!("{what} ({file}: [[budgets]]); each plan's share alone: {}", shares.join(", ")),
                    span,
                )
                .label("reads the shared source")
                .help("spend less in one of the plans named, or raise the shared budget in the policy (a reviewed decision)"),
            )
        })
        .collect()
}
