//! From one analysis to a [`Review`].

use dpplan_accounting as acct;
use dpplan_check::{Accountant, AccountantChoice, AggKind, Analysis, CheckedPlan, Statistic};

use super::timeline::{self, Slots};
use super::*;

/// What the caller chooses.
#[derive(Debug, Clone, Default)]
pub struct ReviewOptions {
    /// The first run (Unix seconds): where `every … for …`, `N times` and
    /// `once` schedules start on the calendar.
    pub start: Option<i64>,
    /// The true counts at which a mean's accuracy is stated; empty:
    /// [`DEFAULT_MEAN_COUNTS`].
    pub mean_counts: Vec<f64>,
}

/// Why there is no report.
#[derive(Debug, Clone, PartialEq)]
pub enum ReviewError {
    /// The plan has errors: run `dpplan check`.
    PlanHasErrors,
    /// No privacy block.
    NoPrivacyBlock,
    /// No claim (the checker says why).
    NoClaim(String),
}

impl std::fmt::Display for ReviewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReviewError::PlanHasErrors => f.write_str(
                "the plan has errors: no guarantee is claimed, so there is nothing to review",
            ),
            ReviewError::NoPrivacyBlock => f.write_str("the plan declares no privacy block"),
            ReviewError::NoClaim(why) => write!(f, "the plan makes no claim: {why}"),
        }
    }
}

impl std::error::Error for ReviewError {}

/// The composed ε of `releases` at `delta` under the plan's accountant
/// rule: the requested accountant, or for `best` the minimum over every
/// accountant — exactly as the checker composes the total. No release: 0.
pub fn compose(
    releases: &[acct::Release],
    delta: f64,
    choice: AccountantChoice,
) -> Result<f64, acct::AccountingError> {
    if releases.iter().all(|r| r.count == 0) {
        return Ok(0.0);
    }
    let releases: Vec<acct::Release> = releases.iter().copied().filter(|r| r.count > 0).collect();
    match choice.accountant() {
        Some(a) => acct::epsilon(&releases, delta, a).map(|b| b.epsilon),
        None => acct::best_of(acct::all(&releases, delta).into_iter().map(|(_, r)| r))
            .map(|b| b.epsilon),
    }
}

/// The plan's releases with each query's release count given by `count`,
/// and its parts' sensitivities multiplied by `mult`: exactly the
/// mechanisms the checker accounted.
fn releases(
    plan: &CheckedPlan,
    count: &dyn Fn(usize) -> u64,
    mult: &dyn Fn(usize) -> f64,
) -> Vec<acct::Release> {
    plan.queries
        .iter()
        .enumerate()
        .flat_map(|(i, q)| {
            q.parts.iter().filter_map(move |p| {
                let mut m = p.accounted?;
                m.sensitivity.l1 *= mult(i);
                m.sensitivity.l2 *= mult(i);
                // ℓ∞ (recorded for a discrete Gaussian, or Laplace noise
                // on a count, over several coordinates) scales with the
                // bound too
                m.sensitivity.linf *= mult(i);
                Some(acct::Release {
                    // a group's members are each sampled on their own: a
                    // group claim forgoes the amplification (sound)
                    sample: if mult(i) == 1.0 { q.sampled() } else { None },
                    mechanism: m,
                    count: count(i),
                })
            })
        })
        .collect()
}

/// The false-positive rates the trade-off curve is drawn at (with the
/// JSON's 1 % and 0.1 %).
const TRADEOFF_FPRS: [f64; 22] = [
    0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5,
    0.6, 0.7, 0.8, 0.9, 0.95, 1.0,
];

/// The trade-off curve of the plan's whole schedule, from the same
/// releases, δ and thresholds' δ as the checker's `attack_risk` (so its
/// points at 1 % and 0.1 % are the JSON's).
fn tradeoff(plan: &CheckedPlan) -> Option<TradeOff> {
    plan.attack_risk.as_ref()?;
    let rs: Vec<acct::Release> = releases(plan, &|i| plan.queries[i].accounted_releases, &|_| 1.0)
        .into_iter()
        .filter(|r| r.count > 0)
        .collect();
    let thresholds: f64 = plan
        .queries
        .iter()
        .filter_map(|q| q.selection.as_ref())
        .map(|s| s.delta)
        .sum();
    let risk = acct::attack_risk(&rs, plan.accounting_delta(), thresholds, &TRADEOFF_FPRS).ok()?;
    Some(TradeOff {
        curve: serde_json::to_value(risk.curve).ok()?.as_str()?.to_string(),
        gdp_mu: risk.gdp_mu,
        // at the JSON's rates, the JSON's value where it is the larger (the
        // curve search runs over another set of rates): both are upper
        // bounds, the report never shows less than `check`
        points: risk
            .points
            .iter()
            .map(|p| TradeOffPoint {
                fpr: p.fpr,
                tpr: plan
                    .attack_risk
                    .as_ref()
                    .and_then(|a| a.tpr_at(p.fpr))
                    .map_or(p.tpr, |c| c.max(p.tpr)),
            })
            .collect(),
    })
}

/// The report of an analysed plan.
pub fn build(analysis: &Analysis, options: &ReviewOptions) -> Result<Review, ReviewError> {
    if analysis.has_errors() {
        return Err(ReviewError::PlanHasErrors);
    }
    let plan = analysis
        .report
        .as_ref()
        .ok_or(ReviewError::NoPrivacyBlock)?;
    let total = plan
        .total
        .as_ref()
        .ok_or_else(|| ReviewError::NoClaim(plan.total_missing.clone().unwrap_or_default()))?;
    let choice = plan.accountant_requested;

    let (first_run, calendar_note) = timeline::first_run(plan, options.start);
    let slots = timeline::slots(plan, first_run);
    let label = |t: f64| timeline::label(first_run, t);

    let rhos = plan.rho_by_query();
    let rho_total: f64 = rhos.iter().sum();
    let mean_counts = if options.mean_counts.is_empty() {
        DEFAULT_MEAN_COUNTS.to_vec()
    } else {
        options.mean_counts.clone()
    };
    let queries: Vec<QueryReview> = plan
        .queries
        .iter()
        .zip(&slots)
        .zip(&rhos)
        .map(|((q, s), &rho)| {
            let schedule = Schedule {
                text: q.schedule.clone(),
                releases: q.releases,
                first: label(s.start),
                last: label(s.last()),
                first_offset_seconds: s.start,
                last_offset_seconds: s.last(),
            };
            let share = if rho_total > 0.0 {
                rho / rho_total
            } else {
                0.0
            };
            query_review(q, schedule, (rho, share), &mean_counts)
        })
        .collect();

    let contract = contract_of(analysis, plan, total, choice);
    let cumulative = cumulative(plan, &slots, first_run, choice, total.epsilon);
    let controls = controls(plan, total.epsilon, choice);
    let controls_ok = controls.iter().all(|c| c.without_moves && c.doubled_moves);

    Ok(Review {
        schema_version: SCHEMA_VERSION,
        plan: plan.name.clone(),
        contract,
        calendar: Calendar {
            first_run: first_run.map(|_| label(0.0)),
            first_run_unix: first_run,
            note: calendar_note,
        },
        queries,
        share_definition: SHARE_DEFINITION.into(),
        cumulative,
        averaging: crate::averaging::averaging(plan),
        controls_definition: CONTROLS_DEFINITION.into(),
        controls,
        controls_ok,
        audit: None,
        tradeoff: tradeoff(plan),
    })
}

/// A query's review, given its calendar and its ρ and share of the plan's
/// (they depend on the whole plan).
fn query_review(
    q: &dpplan_check::QueryReport,
    schedule: Schedule,
    (rho, share): (f64, f64),
    mean_counts: &[f64],
) -> QueryReview {
    let groups = q
        .spec
        .as_ref()
        .and_then(|s| s.groups.clone())
        .unwrap_or_default();
    let parts: Vec<PartReview> = q
        .parts
        .iter()
        .map(|p| PartReview {
            role: p.role.clone(),
            statistic: p.statistic.to_string(),
            noise: p.mechanism.kind_name().to_string(),
            scale: p.mechanism.scale,
            sigma: p.mechanism.sigma,
            calibration: p.mechanism.calibration.to_string(),
            l1: p.l1,
            l2: p.l2,
            coords: p.coords,
            derivation: p.derivation.iter().map(|s| s.to_string()).collect(),
            noise_std: p.noise_std,
            ci95_half_width: p.ci95_half_width,
            cells: if p.statistic.is_grouped() {
                groups.clone()
            } else {
                Vec::new()
            },
        })
        .collect();
    QueryReview {
        name: q.name.clone(),
        dataset: q.dataset.clone(),
        aggregation: q.aggregation.clone(),
        schedule,
        mean: mean_accuracy(q, mean_counts),
        selection: q.selection.as_deref().cloned(),
        postprocess: q.postprocess().to_vec(),
        one_release: one_release_text(q),
        parts,
        epsilon_per_release: q.per_release.as_ref().map(|c| c.epsilon),
        epsilon_alone: q.total.as_ref().map(|c| c.epsilon),
        alone_accountant: q.total.as_ref().map(|c| c.accountant.to_string()),
        rho,
        share,
    }
}

/// The contract: who is protected, the bounds, the budget and the claim,
/// every accountant's figure and why the claim is the one it is.
fn contract_of(
    analysis: &Analysis,
    plan: &CheckedPlan,
    total: &dpplan_check::TotalReport,
    choice: AccountantChoice,
) -> Contract {
    let (protected, not_protected) = contract::protection(plan);
    let accountant_why = match choice.accountant() {
        Some(a) => format!(
            "the plan asks for `{a}`; the other accountants are shown for comparison only"
        ),
        None => format!(
            "the plan asks for `best`: every accountant that applies is a proven upper bound, so their minimum is one too; here the tightest is {}",
            total.accountant.title()
        ),
    };
    Contract {
        unit: plan.unit.kind.to_string(),
        unit_id: plan.unit.id.clone(),
        unit_description: plan.unit.description.clone(),
        adjacency: plan.adjacency.to_string(),
        protected,
        not_protected,
        datasets: contract::dataset_bounds(plan),
        budget: Pair {
            epsilon: plan.budget.epsilon,
            delta: plan.budget.delta,
        },
        total: Pair {
            epsilon: total.epsilon,
            delta: total.delta,
        },
        within_budget: plan.within_budget.unwrap_or(false),
        accountant: total.accountant.as_str().to_string(),
        accountant_name: total.accountant.title().to_string(),
        accountant_detail: total.detail.clone(),
        accountant_requested: choice.to_string(),
        accountant_why,
        accountants: plan
            .accountants
            .iter()
            .map(|a| AccountantRow {
                accountant: a.accountant.as_str().to_string(),
                name: a.accountant_name.clone(),
                epsilon: a.epsilon,
                delta: a.delta,
                detail: a.detail.clone(),
                error: a.error.clone(),
            })
            .collect(),
        delta_meaning: contract::delta_meaning(plan, total.epsilon, total.delta),
        releases: plan.releases,
        checker_notes: analysis
            .diagnostics
            .iter()
            .map(|d| format!("{}: {}", d.code, d.message))
            .collect(),
    }
}

/// Why a query's whole schedule is one accounted release, in words: a
/// window (its time column and the bounds), or a cumulative count's tree;
/// then when each of its slots is released (when its window closes, or a
/// `release after` delay later).
fn one_release_text(q: &dpplan_check::QueryReport) -> Option<String> {
    let spec = q.spec.as_ref()?;
    let when = |what: &str, it: &str| match spec.schedule.release_after_seconds {
        Some(s) if s > 0.0 => format!(
            "{what} {} after {it} closes",
            dpplan_check::schedule::describe_seconds(s)
        ),
        _ => format!("{what} when {it} closes"),
    };
    if let Some(w) = &spec.window {
        return Some(format!(
            "windowed on `{}` (each release reads the rows of its own period): the {} releases read disjoint windows and are accounted as one release over all of them, a unit in at most {} windows with at most {} rows in each; {}",
            w.column, w.slots, w.windows_per_unit, w.rows_per_window,
            when("each window is released", "it")
        ));
    }
    let t = spec.cumulative.as_ref()?;
    if !t.mechanism.is_tree() {
        return Some(format!(
            "a running total by the square-root factorization on `{}`: the {} totals are decoded from one vector of {} noisy encoded counts (one drawn at each slot, from the exact counts of the slots so far), accounted as one release; {}",
            t.column, t.slots, t.nodes,
            when("each slot's running total is released", "the slot")
        ));
    }
    Some(format!(
        "a running total by the tree mechanism on `{}`: the {} totals are estimated from one tree of {} noisy nodes ({} levels), each node drawn once, and the tree is accounted as one release; {}",
        t.column, t.slots, t.nodes, t.levels,
        when("each slot's running total is released", "the slot")
    ))
}

pub use dpplan_check::SHARE_DEFINITION;

/// What the negative controls are (docs/report.md).
pub const CONTROLS_DEFINITION: &str = "For every query, the plan's total recomputed under the plan's own accountant rule with that query's releases removed, and with its contribution bound doubled (each of its parts' L1 and L2 sensitivity times 2, as doubling rows_per_unit does to a count or a sum), every noise kept as checked. Both must move the claim: a control that does not means the total does not depend on that query as it should.";

/// A mean's approximate std: the delta method for S/C at a true count n,
/// with the mean at its worst case max(|lo|, |hi|):
/// Var ≈ (σ_S² + m²·σ_C²) / n².
fn mean_accuracy(q: &dpplan_check::QueryReport, counts: &[f64]) -> Option<MeanAccuracy> {
    let spec = q.spec.as_ref()?;
    if spec.kind != AggKind::Mean {
        return None;
    }
    let sum = q.parts.iter().find(|p| !p.statistic.is_count())?;
    let count = q.parts.iter().find(|p| p.statistic.is_count())?;
    let [lo, hi] = spec.bounds?;
    let m = lo.abs().max(hi.abs());
    let grouped = count.statistic == Statistic::GroupedCount;
    Some(MeanAccuracy {
        assumption: format!(
            "delta-method approximation of (sum + noise)/(count + noise) at a true count n{}, with the mean at its worst case max(|{}|, |{}|) = {}: std ≈ √(σ_sum² + {}²·σ_count²)/n, 95 % ≈ ±1.96·std (normal approximation; it fails when the count's noise is not small next to n)",
            if grouped { " per cell" } else { "" },
            dpplan_diagnostics::num(lo),
            dpplan_diagnostics::num(hi),
            dpplan_diagnostics::num(m),
            dpplan_diagnostics::num(m),
        ),
        points: counts
            .iter()
            .filter(|n| n.is_finite() && **n > 0.0)
            .map(|&n| {
                let std = dpplan_mechanisms::mean_std(sum.noise_std, count.noise_std, m, n);
                MeanPoint {
                    count: n,
                    std,
                    ci95_half_width: dpplan_mechanisms::Z95 * std,
                }
            })
            .collect(),
    })
}

/// Points along the calendar at which the curves are evaluated when the
/// plan has more than [`MAX_STEPS`] release times.
const CURVE_POINTS: usize = 50;

/// Up to this many release times, the curves are evaluated at each.
const MAX_STEPS: usize = 200;

/// The accountants drawn over the calendar: all but the privacy-loss
/// distribution, which is run once for the total (docs/report.md).
const CURVE_ACCOUNTANTS: [Accountant; 5] = [
    Accountant::Basic,
    Accountant::Advanced,
    Accountant::Zcdp,
    Accountant::Rdp,
    Accountant::Gdp,
];

/// The distinct release times of the plan, sorted; for a plan with more
/// than [`MAX_EVENTS`] releases, evenly spaced times from the first release
/// to the last (ε at a time counts every release made by then).
fn event_times(slots: &[Slots]) -> Vec<f64> {
    let all: u64 = slots
        .iter()
        .map(|s| if s.period > 0.0 { s.n } else { 1 })
        .fold(0, u64::saturating_add);
    let mut t: Vec<f64> = if all <= MAX_EVENTS {
        slots
            .iter()
            .flat_map(|s| {
                let n = if s.period > 0.0 { s.n } else { 1 };
                (0..n).map(move |k| s.start + s.period * k as f64)
            })
            .collect()
    } else {
        let a = slots.iter().map(|s| s.start).fold(f64::INFINITY, f64::min);
        let b = slots
            .iter()
            .map(Slots::last)
            .fold(f64::NEG_INFINITY, f64::max);
        (0..=MAX_EVENTS)
            .map(|i| a + (b - a) * i as f64 / MAX_EVENTS as f64)
            .collect()
    };
    t.sort_by(f64::total_cmp);
    t.dedup();
    t
}

/// Release times dated one by one, at most.
const MAX_EVENTS: u64 = 1_000_000;

/// The fast accountants' best ε: never below `best`'s (a subset of its
/// accountants), so a probe it puts below a target is below it under
/// `best` too; no release is 0.
fn fast_best(releases: &[acct::Release], delta: f64) -> f64 {
    let rs: Vec<acct::Release> = releases.iter().copied().filter(|r| r.count > 0).collect();
    if rs.is_empty() {
        return 0.0;
    }
    acct::fast_best(&rs, delta).map_or(f64::INFINITY, |b| b.epsilon)
}

fn cumulative(
    plan: &CheckedPlan,
    slots: &[Slots],
    first_run: Option<i64>,
    choice: AccountantChoice,
    total: f64,
) -> Cumulative {
    let delta = plan.accounting_delta();
    let origin = slots.iter().map(|s| s.start).fold(0.0, f64::min);
    let horizon = slots.iter().map(Slots::last).fold(0.0, f64::max);
    let events = event_times(slots);
    // every release time when there are few (ε is constant between them:
    // the curve is a staircase with its steps where they are), else
    // evenly spaced dates (the curve is sampled)
    let steps = events.len() <= MAX_STEPS;
    let times: Vec<f64> = if steps {
        events.clone()
    } else if horizon > origin {
        (0..CURVE_POINTS)
            .map(|i| origin + (horizon - origin) * i as f64 / (CURVE_POINTS - 1) as f64)
            .collect()
    } else {
        vec![origin]
    };
    let at = |t: f64| releases(plan, &|i| slots[i].charged_at(t), &|_| 1.0);
    let by_time: Vec<Vec<acct::Release>> = times.iter().map(|&t| at(t)).collect();
    // a staircase is its corners: keep a release time only where what has
    // been charged changes (and the last, where the curve ends)
    let (times, by_time): (Vec<f64>, Vec<Vec<acct::Release>>) = times
        .iter()
        .zip(&by_time)
        .enumerate()
        .filter(|&(i, (_, rs))| !steps || i == 0 || i + 1 == times.len() || *rs != by_time[i - 1])
        .map(|(_, (&t, rs))| (t, rs.clone()))
        .unzip();
    let curves = CURVE_ACCOUNTANTS
        .iter()
        .filter_map(|&a| {
            let points: Option<Vec<CurvePoint>> = times
                .iter()
                .zip(&by_time)
                .map(|(&t, rs)| {
                    let e = if rs.iter().all(|r| r.count == 0) {
                        0.0
                    } else {
                        let rs: Vec<acct::Release> =
                            rs.iter().copied().filter(|r| r.count > 0).collect();
                        acct::epsilon(&rs, delta, a).ok()?.epsilon
                    };
                    Some(CurvePoint { t, epsilon: e })
                })
                .collect();
            Some(Curve {
                accountant: a.as_str().to_string(),
                name: a.title().to_string(),
                points: points?,
            })
        })
        .collect();
    // the date each fraction of the budget is reached, under the total's rule
    let budget = plan.budget.epsilon;
    let cache = std::cell::RefCell::new(std::collections::HashMap::<usize, f64>::new());
    // ε after the releases made by event i; the fast accountants bound it
    // from above, so below a target they settle the comparison alone
    let reaches = |i: usize, target: f64| -> bool {
        if let Some(&e) = cache.borrow().get(&i) {
            return e >= target;
        }
        let rs = at(events[i]);
        let fast = fast_best(&rs, delta);
        if choice == AccountantChoice::Best && fast < target {
            return false;
        }
        let e = compose(&rs, delta, choice).unwrap_or(f64::INFINITY);
        cache.borrow_mut().insert(i, e);
        e >= target
    };
    let fractions = [0.25, 0.5, 0.75, 1.0]
        .into_iter()
        .map(|f| {
            let target = f * budget;
            let none = FractionReached {
                fraction: f,
                at: None,
                offset_seconds: None,
                epsilon: None,
            };
            // after the last release ε is the total
            if total < target || events.is_empty() {
                return none;
            }
            // the first event at which ε reaches the target (monotone)
            let (mut lo, mut hi) = (0usize, events.len() - 1);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if reaches(mid, target) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            let t = events[lo];
            let e = if lo == events.len() - 1 {
                total
            } else {
                compose(&at(t), delta, choice).unwrap_or(f64::INFINITY)
            };
            FractionReached {
                fraction: f,
                at: Some(timeline::label(first_run, t)),
                offset_seconds: Some(t),
                epsilon: Some(e),
            }
        })
        .collect();
    Cumulative {
        budget_epsilon: budget,
        horizon_seconds: horizon,
        curves,
        steps,
        fractions,
        note: format!(
            "ε of every release made by each date, at δ = {}, at {}; every accountant but the privacy-loss distribution is drawn (it is run once, for the total). The dates at which the budget's fractions are reached use the plan's own accountant rule ({}).",
            dpplan_diagnostics::num(delta),
            match (steps, times.len()) {
                (true, 1) => "its one release time".to_string(),
                (true, n) => format!("{n} release times (those where ε changes, and the last; ε is constant between them)"),
                (false, n) => format!("{n} evenly spaced dates from the first release to the last"),
            },
            choice
        ),
    }
}

fn controls(plan: &CheckedPlan, total: f64, choice: AccountantChoice) -> Vec<Control> {
    let delta = plan.accounting_delta();
    plan.queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let n = |j: usize| plan.queries[j].accounted_releases;
            let without = compose(
                &releases(plan, &|j| if j == i { 0 } else { n(j) }, &|_| 1.0),
                delta,
                choice,
            )
            .unwrap_or(f64::NAN);
            let doubled = compose(
                &releases(plan, &n, &|j| if j == i { 2.0 } else { 1.0 }),
                delta,
                choice,
            )
            .unwrap_or(f64::INFINITY);
            Control {
                query: q.name.clone(),
                without,
                doubled,
                without_moves: without < total,
                doubled_moves: doubled > total,
            }
        })
        .collect()
}
