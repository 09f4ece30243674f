//! Budgets shared across plans (DP107). A policy gives one data source one
//! (ε, δ) budget; every release of every checked plan that reads it is a
//! fresh access to the same people, so all of them are composed together,
//! with the tightest sound accountant at the shared budget's δ, and the
//! total is compared with the budget. Each plan's share is its own ε on
//! that source alone (shares do not add up: composition is sublinear).

use std::path::{Path, PathBuf};

use dpplan_accounting as acct;
use dpplan_check::{Analysis, CheckedPlan};
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
    let mut tally = Tally::new(b);
    for (i, (path, a)) in plans.iter().enumerate() {
        tally.add(i, path, a);
    }
    let Some((result, anchors)) = tally.finish() else {
        return (None, Vec::new());
    };
    let diags = if result.within {
        Vec::new()
    } else {
        diagnostics(policy, &result, plans, &anchors)
    };
    (Some(result), diags)
}

/// One shared budget's plans, counted in order.
struct Tally<'b> {
    budget: &'b SharedBudget,
    shares: Vec<Share>,
    /// Every share's releases, composed together at the end.
    releases: Vec<acct::Release>,
    /// The thresholds' δ of the plans' keys from the data, summed.
    thresholds: f64,
    /// The first reason there is no sound total.
    problem: Option<String>,
    /// The unit and adjacency of the first plan counted.
    contract: Option<(String, String)>,
    /// Where each reading plan's diagnostic points: its first dataset that
    /// reads the source.
    anchors: Vec<(usize, Span)>,
}

impl<'b> Tally<'b> {
    fn new(budget: &'b SharedBudget) -> Self {
        Tally {
            budget,
            shares: Vec::new(),
            releases: Vec::new(),
            thresholds: 0.0,
            problem: None,
            contract: None,
            anchors: Vec::new(),
        }
    }

    /// Plan `i`'s share, if it reads the source.
    fn add(&mut self, i: usize, path: &Path, a: &Analysis) {
        let reading: Vec<&Dataset> = a
            .ast
            .datasets
            .iter()
            .filter(|d| {
                d.sources
                    .iter()
                    .any(|s| resolved(path, &s.value) == self.budget.path)
            })
            .collect();
        let Some(first) = reading.first() else {
            return;
        };
        self.anchors.push((i, first.name.span));
        let names: Vec<String> = reading.iter().map(|d| d.name.value.clone()).collect();
        // the policy's own errors (DP1xx) do not stop the counting; the
        // checker's do: then no sound total exists
        let checker_errors = a
            .diagnostics
            .iter()
            .any(|d| d.is_error() && !is_policy(d.code));
        let Some(r) = a.report.as_ref().filter(|_| !checker_errors) else {
            self.problem.get_or_insert(format!(
                "`{}` has errors: its releases cannot be counted",
                path.display()
            ));
            self.shares.push(Share {
                plan: i,
                datasets: names,
                epsilon: None,
                releases: 0,
            });
            return;
        };
        self.agree((r.unit.kind.to_string(), r.adjacency.to_string()));
        let (mine, own_thr) = on_source(r, &names);
        let releases = mine.iter().map(|r| r.count).sum();
        self.thresholds += own_thr;
        let epsilon = if mine.is_empty() {
            Some(0.0)
        } else if own_thr >= self.budget.delta {
            None
        } else {
            acct::best(&mine, self.budget.delta - own_thr)
                .ok()
                .map(|x| x.epsilon)
        };
        self.releases.extend(mine);
        self.shares.push(Share {
            plan: i,
            datasets: names,
            epsilon,
            releases,
        });
    }

    /// Every plan protects the first one's unit under its adjacency, or
    /// their guarantees do not compose.
    fn agree(&mut self, this: (String, String)) {
        match &self.contract {
            None => self.contract = Some(this),
            Some(c) if *c != this => {
                self.problem.get_or_insert(format!(
                    "the plans protect different units or use different adjacency ({} / {} and {} / {}): their guarantees do not compose into one",
                    c.0, c.1, this.0, this.1
                ));
            }
            Some(_) => {}
        }
    }

    /// Every share's releases composed at the shared δ less the
    /// thresholds' (docs/accounting.md), or the reason there is no total.
    fn total(&mut self) -> Option<(f64, acct::Accountant)> {
        let b = self.budget;
        if self.problem.is_some() {
            None
        } else if self.releases.is_empty() {
            Some((0.0, acct::Accountant::Basic))
        } else if self.thresholds >= b.delta {
            self.problem = Some(format!(
                "the thresholds of keys from the data cost δ = {} together, not below the shared δ = {}",
                num(self.thresholds),
                num(b.delta)
            ));
            None
        } else {
            match acct::best(&self.releases, b.delta - self.thresholds) {
                Ok(x) => Some((x.epsilon, x.accountant)),
                Err(e) => {
                    self.problem = Some(format!(
                        "the composed releases cannot be bounded at δ = {}: {e}",
                        num(b.delta)
                    ));
                    None
                }
            }
        }
    }

    /// The result and where its diagnostics point, or `None` when no plan
    /// reads the source.
    fn finish(mut self) -> Option<(SharedResult, Vec<(usize, Span)>)> {
        if self.shares.is_empty() {
            return None;
        }
        let total = self.total();
        let within = total.is_some_and(|(e, _)| e <= self.budget.epsilon);
        let result = SharedResult {
            budget: self.budget.clone(),
            shares: self.shares,
            total,
            problem: self.problem,
            within,
        };
        Some((result, self.anchors))
    }
}

/// A checked plan's releases from its datasets `names`, and the δ of their
/// thresholds of keys from the data, which comes out of the shared δ before
/// the mechanisms are composed (docs/accounting.md).
fn on_source(r: &CheckedPlan, names: &[String]) -> (Vec<acct::Release>, f64) {
    let queries = || r.queries.iter().filter(move |q| names.contains(&q.dataset));
    let releases = queries()
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
    let thresholds = queries()
        .filter_map(|q| q.selection.as_ref().map(|s| s.delta))
        .sum();
    (releases, thresholds)
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
