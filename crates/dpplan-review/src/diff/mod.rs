//! `dpplan diff`: two checked plans compared query by query, and the
//! guarantee before and after under the same accountant at the same δ.
//!
//! Everything here is read from the two [`CheckedPlan`]s (never a second
//! derivation): the checker's per-query reports, parts, derivations and
//! every accountant's figure for the whole plan. The only accounting done
//! here is composing releases the checker already resolved (`accounted`)
//! in two situations the checker never sees: both plans at one common δ
//! when their δ differ, and the old plan with one query's change applied
//! (the leave-one-in contribution). docs/diff.md defines every field;
//! docs/diff.schema.json is the JSON's schema.

mod accuracy;
mod attack;
mod contract;
mod guarantee;
mod queries;
mod render;

pub use accuracy::{accuracy_changes, AccuracyChange, DEFAULT_ACCURACY_RATIO};
pub use guarantee::plan_releases;
pub use render::{human, json, markdown};

use contract::{contract_changes, dataset_diffs, field_changes, is_contract_bound, publish_diffs};
use guarantee::{guarantee, leave_one_in, releases_of};
use queries::query_diff;

use dpplan_accounting as acct;
use dpplan_check::{
    Accountant, AccountantChoice, BudgetReport, CheckedPlan, DatasetSpec, PartReport, QueryReport,
    TotalReport,
};
use serde::Serialize;
use serde_json::{json, Value};

/// The whole comparison of an old and a new version of a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanDiff {
    pub old: Side,
    pub new: Side,
    /// Nothing differs: contract, datasets, queries, publications, numbers.
    pub identical: bool,
    /// Changes of the privacy contract (unit, adjacency, δ, budget ε,
    /// accountant, population, and every bound of a dataset: contribution
    /// bounds, clamps, domains, horizons), each flagged.
    pub contract: Vec<ContractChange>,
    /// Datasets added, removed or changed (contribution bounds, columns).
    pub datasets: Vec<ItemDiff>,
    /// Queries added, removed or changed, in the new plan's order, then
    /// the removed ones in the old plan's order.
    pub queries: Vec<QueryDiff>,
    /// Names of the queries present in both and identical.
    pub unchanged_queries: Vec<String>,
    /// Re-publications added, removed or pointed at another query (cost 0).
    pub publishes: Vec<ItemDiff>,
    /// Each statistic (of a query in both plans) whose noise changed: its
    /// noise std and 95 % half-width before → after, with the ratios.
    pub accuracy: Vec<AccuracyChange>,
    pub guarantee: Guarantee,
    pub verdict: Verdict,
}

/// One side of the comparison, as the checker reported it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// Where it was read from: a path, or `REF:path` for a git version.
    pub label: String,
    pub plan: Option<String>,
    pub budget: BudgetReport,
    pub accountant_requested: AccountantChoice,
    pub releases: u64,
    /// `false` when the plan exceeds its budget (DP011).
    pub within_budget: Option<bool>,
    /// The plan's own claim, exactly `report.total` of `dpplan check
    /// --format json` (its requested accountant, or the best).
    pub claim: Option<TotalReport>,
    /// The claim read as attack risk, exactly `attack_risk` of `dpplan
    /// check --format json` (absent when there is no claim).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attack_risk: Option<acct::AttackRisk>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Added,
    Removed,
    Changed,
}

/// One field that differs; `null` on the side where it does not exist.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub field: String,
    pub old: Value,
    pub new: Value,
}

/// A change of the privacy contract.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContractChange {
    /// `unit`, `unit_id`, `adjacency`, `delta`, `budget_epsilon`,
    /// `accountant`, `population`, or `dataset <name>: <item>` (a
    /// contribution bound, a column's kind, clamp bounds or domain, a
    /// windowed query's horizon).
    pub field: String,
    pub old: Value,
    pub new: Value,
    /// The two ε then bound different things (unit, adjacency, δ): a
    /// smaller ε after the change is not by itself a stronger guarantee.
    pub breaks_comparison: bool,
    /// What the change means, in words.
    pub why: String,
}

/// A dataset or a publication that was added, removed or changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemDiff {
    pub name: String,
    pub status: Status,
    pub changes: Vec<Change>,
}

/// One query that was added, removed or changed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryDiff {
    pub name: String,
    pub status: Status,
    /// Query-level fields: dataset, aggregation, column, by, bounds,
    /// groups, schedule, release_after, releases.
    pub changes: Vec<Change>,
    /// Its statistics (a mean has two), matched by role.
    pub parts: Vec<PartDiff>,
    /// The checker's cost of the query's whole schedule alone (`total.epsilon`
    /// of the query in `dpplan check --format json`), before and after.
    pub epsilon_alone: Pair,
    /// The plan's ε with only this query's change applied to the old plan,
    /// under the comparison accountant at the comparison δ; `None` when the
    /// releases the accountants compose did not change.
    pub leave_one_in: Option<LeaveOneIn>,
}

/// A value before and after.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pair {
    pub old: Option<f64>,
    pub new: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartDiff {
    /// `count`, `sum`, `histogram`, `grouped sum`, `grouped count`.
    pub role: String,
    pub status: Status,
    /// noise, scale, sigma, calibration, l1, l2, coords, noise_std,
    /// ci95_half_width.
    pub changes: Vec<Change>,
    /// Lines of the sensitivity derivation only the old plan has.
    pub derivation_removed: Vec<String>,
    /// Lines of the sensitivity derivation only the new plan has.
    pub derivation_added: Vec<String>,
}

/// The old plan's ε with one query's change applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeaveOneIn {
    pub epsilon: Option<f64>,
    /// `epsilon` minus the old plan's ε (same accountant, same δ).
    pub change: Option<f64>,
    /// Why the comparison accountant gave no bound.
    pub error: Option<String>,
}

/// The plan's (ε, δ) before and after under one accountant at one δ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Guarantee {
    /// The δ both plans are compared at.
    pub delta: f64,
    pub delta_rule: String,
    /// The comparison accountant; `None` when no accountant bounds both.
    pub accountant: Option<Accountant>,
    pub accountant_name: Option<String>,
    pub accountant_rule: String,
    pub old_epsilon: Option<f64>,
    pub new_epsilon: Option<f64>,
    /// `new_epsilon - old_epsilon`.
    pub change: Option<f64>,
    /// Every accountant at that δ, both sides.
    pub accountants: Vec<AccountantPair>,
    /// Whether `accountants` is the checker's own table (same δ) or was
    /// recomputed at the common δ from the checker's accounted releases.
    pub recomputed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccountantPair {
    pub accountant: Accountant,
    pub accountant_name: String,
    pub old: Option<f64>,
    pub new: Option<f64>,
    pub old_error: Option<String>,
    pub new_error: Option<String>,
}

/// What CI acts on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The new plan spends more: a larger ε under the comparison
    /// accountant at the comparison δ, or a larger δ, or no accountant
    /// bounds both (fail closed).
    pub increase: bool,
    /// Any contract change: the guarantee, δ, the budget, the accountant,
    /// the population, or any bound of a dataset (contribution bounds,
    /// clamps, domains, horizons).
    pub contract_changed: bool,
    /// No contract change breaks the comparison of the two ε.
    pub comparable: bool,
    /// A statistic's noise std or 95 % half-width grew by more than
    /// `accuracy_limit` (or a public statistic became noisy).
    pub accuracy_worse: bool,
    /// The ratio above which a statistic's accuracy counts as worse
    /// ([`DEFAULT_ACCURACY_RATIO`] unless `--fail-on accuracy=RATIO`).
    pub accuracy_limit: f64,
    pub summary: String,
}

/// The checked plan of an analysis if it can be compared: no error, or
/// only the budget's (DP011: the plan makes a claim, it just exceeds the
/// budget, and a diff is how a reviewer sees why). `None` otherwise: a plan
/// with any other error, or whose `auto` noise fits no budget, makes no
/// claim.
pub fn comparable(a: &dpplan_check::Analysis) -> Option<&CheckedPlan> {
    let report = a.report.as_ref()?;
    if !a.has_errors() {
        return Some(report);
    }
    // DP011 without a total (`noise … auto` found no noise that fits) is
    // no claim either.
    let only_budget = a
        .diagnostics
        .iter()
        .all(|d| !d.is_error() || d.code == dpplan_diagnostics::Code::OverBudget);
    (only_budget && report.total.is_some() && report.within_budget == Some(false)).then_some(report)
}

/// Compares two checked plans. `old_label` and `new_label` name the sides;
/// accuracy is judged at [`DEFAULT_ACCURACY_RATIO`].
pub fn diff(old_label: &str, old: &CheckedPlan, new_label: &str, new: &CheckedPlan) -> PlanDiff {
    diff_with_limit(old_label, old, new_label, new, DEFAULT_ACCURACY_RATIO)
}

/// [`diff`], a statistic's accuracy counting as worse when its noise std
/// or 95 % half-width grows by more than `accuracy_limit` (a ratio).
pub fn diff_with_limit(
    old_label: &str,
    old: &CheckedPlan,
    new_label: &str,
    new: &CheckedPlan,
    accuracy_limit: f64,
) -> PlanDiff {
    let contract = contract_changes(old, new);
    let datasets = dataset_diffs(old, new);
    let mut queries = Vec::new();
    let mut unchanged = Vec::new();
    for nq in &new.queries {
        let oq = old.queries.iter().find(|q| q.name == nq.name);
        match oq {
            Some(oq) => match query_diff(Some(oq), Some(nq)) {
                Some(d) => queries.push(d),
                None => unchanged.push(nq.name.clone()),
            },
            None => queries.extend(query_diff(None, Some(nq))),
        }
    }
    for oq in &old.queries {
        if !new.queries.iter().any(|q| q.name == oq.name) {
            queries.extend(query_diff(Some(oq), None));
        }
    }
    let publishes = publish_diffs(old, new);
    let (guarantee, comparison) = guarantee(old, new);
    if let Some((accountant, delta, old_eps)) = comparison {
        for q in &mut queries {
            q.leave_one_in = leave_one_in(old, new, &q.name, accountant, delta, old_eps);
        }
    }
    // every dataset bound is in `contract` (`dataset_contract_changes`)
    let contract_changed = !contract.is_empty();
    let accuracy = accuracy_changes(old, new, accuracy_limit);
    let worst = accuracy::worst(&accuracy);
    let comparable = !contract.iter().any(|c| c.breaks_comparison);
    let increase = match (guarantee.old_epsilon, guarantee.new_epsilon) {
        (Some(o), Some(n)) => larger(n, o) || new.budget.delta > old.budget.delta,
        _ => true,
    };
    let identical = contract.is_empty()
        && datasets.is_empty()
        && queries.is_empty()
        && publishes.is_empty()
        && guarantee.change == Some(0.0);
    let summary = summary(&guarantee, comparable, identical, old, new)
        + &worst
            .map(|w| accuracy_summary(w, accuracy_limit))
            .unwrap_or_default();
    PlanDiff {
        old: side(old_label, old),
        new: side(new_label, new),
        identical,
        contract,
        datasets,
        queries,
        unchanged_queries: unchanged,
        publishes,
        guarantee,
        verdict: Verdict {
            increase,
            contract_changed,
            comparable,
            accuracy_worse: worst.is_some(),
            accuracy_limit,
            summary,
        },
        accuracy,
    }
}

/// Relative tolerance under which two ε count as the same: `noise … auto`
/// fills the budget up to its solver's precision, so an unchanged plan can
/// move by ~1e-10; every accountant's own numerical error is far larger.
pub const SAME_EPSILON: f64 = 1e-9;

/// `a` is larger than `b` beyond [`SAME_EPSILON`].
pub fn larger(a: f64, b: f64) -> bool {
    a > b * (1.0 + SAME_EPSILON)
}

fn side(label: &str, p: &CheckedPlan) -> Side {
    Side {
        label: label.to_string(),
        plan: p.name.clone(),
        budget: p.budget.clone(),
        accountant_requested: p.accountant_requested,
        releases: p.releases,
        within_budget: p.within_budget,
        claim: p.total.clone(),
        attack_risk: p.attack_risk.clone(),
    }
}

/// The worst accuracy regression, appended to the summary.
fn accuracy_summary(w: &AccuracyChange, limit: f64) -> String {
    let num = dpplan_diagnostics::num;
    let (o, n) = (
        w.noise_std.old.unwrap_or(f64::NAN),
        w.noise_std.new.unwrap_or(f64::NAN),
    );
    let by = w
        .ratio()
        .map_or_else(|| "from no noise".to_string(), |r| format!("×{}", num(r)));
    format!(
        "; but accuracy is WORSE: {} ({}) noise std {} → {} ({by}, over the limit ×{})",
        w.query,
        w.role,
        num(o),
        num(n),
        num(limit)
    )
}

fn summary(
    g: &Guarantee,
    comparable: bool,
    identical: bool,
    old: &CheckedPlan,
    new: &CheckedPlan,
) -> String {
    if identical {
        return "no change: the two plans make the same claim".into();
    }
    let caveat = if comparable {
        ""
    } else {
        " — but the contract changed, so the two ε bound different things"
    };
    let (Some(o), Some(n), Some(name)) = (g.old_epsilon, g.new_epsilon, &g.accountant_name) else {
        return "no accountant bounds both plans: they cannot be compared (counted as an increase)"
            .into();
    };
    let num = dpplan_diagnostics::num;
    let delta_more = new.budget.delta > old.budget.delta;
    let what = if larger(n, o) {
        "spends MORE"
    } else if delta_more {
        "spends MORE δ"
    } else if larger(o, n) {
        "spends less"
    } else {
        "spends the same"
    };
    format!(
        "the new plan {what}: ε {} → {} at δ = {} ({name}){}{caveat}",
        num(o),
        num(n),
        num(g.delta),
        if delta_more {
            format!(
                "; its δ grows from {} to {}",
                num(old.budget.delta),
                num(new.budget.delta)
            )
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests;
