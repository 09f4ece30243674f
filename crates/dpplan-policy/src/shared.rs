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

use crate::config::{canonical, normalise, Policy, SharedBudget};

/// One plan's part of a shared budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// Index into the plans given to [`compose`] (or [`shared_budgets`]).
    pub plan: usize,
    /// The plan's path, as given.
    pub path: String,
    /// The datasets of the plan that read the source.
    pub datasets: Vec<String>,
    /// The plan's ε on the source alone, at the budget's δ; `None` when it
    /// cannot be accounted.
    pub epsilon: Option<f64>,
    pub releases: u64,
    /// Why the plan is left out of the composition (its releases are then
    /// not in the total), with what fixes that cause.
    pub excluded: Option<Exclusion>,
    /// One of the plans checked (else only named by the budget's `plans`).
    pub checked: bool,
    /// The plan's queries on the source with a window (or a cumulative
    /// count's slots): under a per-block budget each is one vector release
    /// counted once in every block its windows lie in, in parallel across
    /// blocks.
    pub windowed: Vec<String>,
    /// Its queries on the source without a window: each release reads
    /// every row so far, so it counts in every block up to its release
    /// (sequentially with everything there).
    pub unwindowed: Vec<String>,
}

/// Why one plan reading a shared source cannot be composed with the others.
#[derive(Debug, Clone, PartialEq)]
pub struct Exclusion {
    pub reason: String,
    pub help: String,
}

/// A shared budget, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedResult {
    pub budget: SharedBudget,
    pub shares: Vec<Share>,
    /// The composed ε of every share not excluded, and the accountant that
    /// gave it.
    pub total: Option<(f64, acct::Accountant)>,
    /// Why there is no total for the plans that can be composed.
    pub problem: Option<String>,
    pub within: bool,
}

/// A plan offered to a shared budget.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    pub path: &'a Path,
    pub analysis: &'a Analysis,
    /// Reported on (one of the plans checked), or only counted (a plan the
    /// budget's `plans` names).
    pub checked: bool,
}

/// The source a plan's dataset reads, resolved like the runtime does:
/// relative to the plan's directory, then canonical ([`canonical`]).
fn resolved(plan: &Path, source: &str) -> PathBuf {
    let dir = normalise(plan)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    canonical(&dir.join(source))
}

/// Checks every shared budget of the policy on `plans` (path, analysis),
/// all of them checked: the results, and the diagnostics to add to each
/// plan (by index).
pub fn shared_budgets(
    policy: &Policy,
    plans: &[(&Path, &Analysis)],
) -> (Vec<SharedResult>, Vec<(usize, Diagnostic)>) {
    let readers: Vec<Reader> = plans
        .iter()
        .map(|&(path, analysis)| Reader {
            path,
            analysis,
            checked: true,
        })
        .collect();
    let mut results = Vec::new();
    let mut diags = Vec::new();
    for b in &policy.budgets {
        let (result, d) = compose(b, &readers);
        results.extend(result);
        diags.extend(d);
    }
    (results, diags)
}

/// One shared budget on `plans`: every plan that reads its source is
/// composed with the others, except one that cannot be (checker errors, or
/// another unit or adjacency than most of them), which is left out and
/// reported once, on itself, with its reason. The result (`None` when no
/// plan reads the source) and the diagnostics by plan index (only for
/// checked plans).
pub fn compose(
    b: &SharedBudget,
    plans: &[Reader],
) -> (Option<SharedResult>, Vec<(usize, Diagnostic)>) {
    let mut tally = Tally::new(b);
    for (i, r) in plans.iter().enumerate() {
        tally.add(i, r);
    }
    let Some((result, anchors)) = tally.finish() else {
        return (None, Vec::new());
    };
    let diags = diagnostics(&result, &anchors);
    (Some(result), diags)
}

/// What one reading plan brings: its releases on the source, or why it
/// has none that can be counted.
struct Entry {
    share: Share,
    /// The unit and adjacency, for a plan that checks.
    contract: Option<(String, String)>,
    releases: Vec<acct::Release>,
    thresholds: f64,
    anchor: Span,
}

/// One shared budget's plans, counted in order.
struct Tally<'b> {
    budget: &'b SharedBudget,
    entries: Vec<Entry>,
    /// The first reason there is no sound total.
    problem: Option<String>,
}

impl<'b> Tally<'b> {
    fn new(budget: &'b SharedBudget) -> Self {
        Tally {
            budget,
            entries: Vec::new(),
            problem: None,
        }
    }

    /// Plan `i`'s share, if it reads the source.
    fn add(&mut self, i: usize, reader: &Reader) {
        let (path, a) = (reader.path, reader.analysis);
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
        let names: Vec<String> = reading.iter().map(|d| d.name.value.clone()).collect();
        let mut share = Share {
            plan: i,
            path: path.display().to_string(),
            datasets: names.clone(),
            epsilon: None,
            releases: 0,
            excluded: None,
            checked: reader.checked,
            windowed: Vec::new(),
            unwindowed: Vec::new(),
        };
        // the policy's own errors (DP1xx), a refused suppression and a
        // warning the policy raised to an error do not stop the counting;
        // the checker's errors do: then no sound total exists for this plan
        let checker_errors = a
            .diagnostics
            .iter()
            .any(|d| d.is_error() && d.code.is_checker_error());
        let Some(r) = a.report.as_ref().filter(|_| !checker_errors) else {
            share.excluded = Some(Exclusion {
                reason: format!(
                    "`{}` has errors: its releases cannot be counted, so it is left out of the budget shared on `{}`",
                    path.display(),
                    self.budget.source
                ),
                help: format!(
                    "fix its errors (`dpplan check {}`); until then the shared total does not include its releases",
                    path.display()
                ),
            });
            self.entries.push(Entry {
                share,
                contract: None,
                releases: Vec::new(),
                thresholds: 0.0,
                anchor: first.name.span,
            });
            return;
        };
        let (mine, own_thr) = on_source(r, &names);
        share.releases = mine.iter().map(|r| r.count).sum();
        share.epsilon = if mine.is_empty() {
            Some(0.0)
        } else if own_thr >= self.budget.delta {
            None
        } else {
            acct::best(&mine, self.budget.delta - own_thr)
                .ok()
                .map(|x| x.epsilon)
        };
        let (windowed, unwindowed): (Vec<_>, Vec<_>) = r
            .queries
            .iter()
            .filter(|q| names.contains(&q.dataset))
            .partition(|q| {
                q.spec
                    .as_ref()
                    .is_some_and(|s| s.window.is_some() || s.cumulative.is_some())
            });
        let named =
            |qs: Vec<&dpplan_check::QueryReport>| qs.iter().map(|q| q.name.clone()).collect();
        share.windowed = named(windowed);
        share.unwindowed = named(unwindowed);
        self.entries.push(Entry {
            share,
            contract: Some((r.unit.kind.to_string(), r.adjacency.to_string())),
            releases: mine,
            thresholds: own_thr,
            anchor: first.name.span,
        });
    }

    /// The unit and adjacency most of the plans that check protect (the
    /// first such plan's on a tie): the others are left out, each with its
    /// own reason.
    fn agree(&mut self) {
        let mut counts: Vec<((String, String), usize)> = Vec::new();
        for c in self.entries.iter().filter_map(|e| e.contract.clone()) {
            match counts.iter_mut().find(|(k, _)| *k == c) {
                Some((_, n)) => *n += 1,
                None => counts.push((c, 1)),
            }
        }
        let Some(best) = counts.iter().map(|(_, n)| *n).max() else {
            return;
        };
        let Some((major, _)) = counts.into_iter().find(|(_, n)| *n == best) else {
            return;
        };
        let source = &self.budget.source;
        for e in &mut self.entries {
            let Some(c) = &e.contract else { continue };
            if *c != major {
                e.share.excluded = Some(Exclusion {
                    reason: format!(
                        "`{}` protects the unit `{}` under `{}` adjacency, the other plans reading `{source}` protect `{}` under `{}`: guarantees about different units or neighbours do not compose into one, so it is left out of the shared budget",
                        e.share.path, c.0, c.1, major.0, major.1
                    ),
                    help: format!(
                        "protect what the other plans on `{source}` protect (`unit {} …`, `adjacency {}`), so that its releases count against the shared budget",
                        major.0, major.1
                    ),
                });
            }
        }
    }

    /// Every composable share's releases composed at the shared δ less the
    /// thresholds' (docs/accounting.md), or the reason there is no total.
    fn total(&mut self) -> Option<(f64, acct::Accountant)> {
        let b = self.budget;
        let kept = || self.entries.iter().filter(|e| e.share.excluded.is_none());
        let releases: Vec<acct::Release> = kept().flat_map(|e| e.releases.clone()).collect();
        let thresholds: f64 = kept().map(|e| e.thresholds).sum();
        if releases.is_empty() {
            Some((0.0, acct::Accountant::Basic))
        } else if thresholds >= b.delta {
            self.problem = Some(format!(
                "the thresholds of keys from the data cost δ = {} together, not below the shared δ = {}",
                num(thresholds),
                num(b.delta)
            ));
            None
        } else {
            match acct::best(&releases, b.delta - thresholds) {
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
    fn finish(mut self) -> Option<(SharedResult, Vec<Span>)> {
        if self.entries.is_empty() {
            return None;
        }
        self.agree();
        let total = self.total();
        let within = total.is_some_and(|(e, _)| e <= self.budget.epsilon);
        let anchors = self.entries.iter().map(|e| e.anchor).collect();
        let result = SharedResult {
            budget: self.budget.clone(),
            shares: self.entries.into_iter().map(|e| e.share).collect(),
            total,
            problem: self.problem,
            within,
        };
        Some((result, anchors))
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
                    sample: q.sampled(),
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

/// DP107: on every composed checked plan when the budget is exceeded or
/// cannot be bounded; on each excluded checked plan, once, with its own
/// reason; an excluded plan that is only named by the budget's `plans` is
/// a warning on the first checked plan reading the source.
fn diagnostics(r: &SharedResult, anchors: &[Span]) -> Vec<(usize, Diagnostic)> {
    let shares: Vec<String> = r
        .shares
        .iter()
        .map(|s| {
            format!(
                "{} ε = {}{}",
                s.path,
                s.epsilon.map_or("—".to_string(), num),
                if s.excluded.is_some() {
                    " (left out)"
                } else {
                    ""
                }
            )
        })
        .collect();
    let composed = r.shares.iter().filter(|s| s.excluded.is_none()).count();
    let file = r.budget.policy.display();
    let what = match (&r.total, &r.problem) {
        (Some((e, a)), _) => format!(
            "the {composed} plans reading `{}` compose to ε = {} at δ = {} ({a}), above its shared budget ε = {}",
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
    let mut out = Vec::new();
    for (s, &span) in r.shares.iter().zip(anchors) {
        if !s.checked {
            continue;
        }
        match &s.excluded {
            Some(x) => out.push((
                s.plan,
                Diagnostic::new(
                    Code::SharedBudget,
                    format!("{} ({file}: [[budgets]])", x.reason),
                    span,
                )
                .label("not composed with the other plans on this source")
                .help(x.help.clone()),
            )),
            None if !r.within => out.push((
                s.plan,
                Diagnostic::new(
                    Code::SharedBudget,
                    format!("{what} ({file}: [[budgets]]); each plan's share alone: {}", shares.join(", ")),
                    span,
                )
                .label("reads the shared source")
                .help("spend less in one of the plans named, or raise the shared budget in the policy (a reviewed decision)"),
            )),
            None => {}
        }
    }
    let first_checked = r.shares.iter().zip(anchors).find(|(s, _)| s.checked);
    if let Some((reader, &span)) = first_checked {
        for s in r.shares.iter().filter(|s| !s.checked) {
            if let Some(x) = &s.excluded {
                let mut d = Diagnostic::new(
                    Code::SharedBudget,
                    format!("{} ({file}: [[budgets]] plans)", x.reason),
                    span,
                )
                .label("the shared total leaves a plan out")
                .help(x.help.clone());
                d.severity = dpplan_diagnostics::Severity::Warning;
                out.push((reader.plan, d));
            }
        }
    }
    out
}
