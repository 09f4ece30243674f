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
mod render;

pub use accuracy::{accuracy_changes, AccuracyChange, DEFAULT_ACCURACY_RATIO};
pub use render::{human, json, markdown};

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

// ---------------------------------------------------------------------------
// Contract and datasets
// ---------------------------------------------------------------------------

fn contract_changes(old: &CheckedPlan, new: &CheckedPlan) -> Vec<ContractChange> {
    let mut out = Vec::new();
    let mut push = |field: &str, o: Value, n: Value, breaks: bool, why: &str| {
        if o != n {
            out.push(ContractChange {
                field: field.into(),
                old: o,
                new: n,
                breaks_comparison: breaks,
                why: why.into(),
            });
        }
    };
    // who is protected and how neighbours differ: the one definition the
    // ledger's upgrade check uses too
    let (oc, nc) = (contract_of(old), contract_of(new));
    for c in oc.guarantee.changes(&nc.guarantee) {
        push(&c.field, json!(c.old), json!(c.new), true, &c.why);
    }
    push(
        "delta",
        json!(old.budget.delta),
        json!(new.budget.delta),
        true,
        "ε is only comparable at the same δ: both plans are compared below at the smaller δ",
    );
    push(
        "budget_epsilon",
        json!(old.budget.epsilon),
        json!(new.budget.epsilon),
        false,
        "the limit the plan must fit changed",
    );
    push(
        "accountant",
        json!(old.accountant_requested),
        json!(new.accountant_requested),
        false,
        "the accountant each plan's own claim uses changed: the comparison below uses one accountant for both",
    );
    push(
        "population",
        json!(old.population),
        json!(new.population),
        false,
        "the declared population (used to judge δ against 1/n) changed",
    );
    // every bound of a dataset (contribution bounds, clamps, domains,
    // horizons): the one `Contract::changes` the ledger's upgrade records
    for c in oc.changes(&nc) {
        if !c.guarantee {
            // a dataset's field as the datasets section shows it (numbers
            // as numbers); a horizon as the contract words it
            let shown = |p: &CheckedPlan, text: &Option<String>| {
                let (name, item) = c
                    .field
                    .strip_prefix("dataset ")
                    .and_then(|f| f.split_once(": "))
                    .unwrap_or_default();
                let field = p
                    .dataset(name)
                    .map(dataset_fields)
                    .and_then(|f| f.into_iter().find(|(k, _)| k == item).map(|(_, v)| v));
                field.unwrap_or_else(|| json!(text))
            };
            push(
                &c.field,
                shown(old, &c.old),
                shown(new, &c.new),
                false,
                &c.why,
            );
        }
    }
    out
}

/// The contract of a checked plan as dpplan-vocab states it: per dataset
/// its contribution bounds, each column's kind, clamp bounds or domain, and
/// the horizon of each windowed query or cumulative count (its time column,
/// windows per unit and rows per window as the checker resolved them).
fn contract_of(p: &CheckedPlan) -> dpplan_vocab::contract::Contract {
    use dpplan_vocab::contract::{ColumnContract, Contract, DatasetContract, Horizon};
    let horizon = |q: &QueryReport| {
        let s = q.spec.as_ref()?;
        let (column, windows_per_unit, rows_per_window) = match (&s.window, &s.cumulative) {
            (Some(w), _) => (&w.column, w.windows_per_unit, w.rows_per_window),
            (None, Some(c)) => (&c.column, c.windows_per_unit, c.rows_per_window),
            (None, None) => return None,
        };
        Some((
            q.name.clone(),
            Horizon {
                time_column: column.clone(),
                windows_per_unit,
                rows_per_window,
            },
        ))
    };
    let dataset = |d: &DatasetSpec| DatasetContract {
        rows_per_unit: d.rows_per_unit,
        groups_per_unit: d.groups_per_unit,
        rows_per_group: d.rows_per_group,
        horizons: p
            .queries
            .iter()
            .filter(|q| q.dataset == d.name)
            .filter_map(horizon)
            .collect(),
        columns: d
            .columns
            .iter()
            .map(|c| {
                let contract = ColumnContract {
                    kind: c.kind.name().into(),
                    bounds: c.bounds,
                    domain: c.domain.clone(),
                };
                (c.name.clone(), contract)
            })
            .collect(),
    };
    Contract {
        guarantee: dpplan_vocab::contract::Guarantee {
            unit: p.unit.kind,
            unit_id: p.unit.id.clone(),
            adjacency: p.adjacency,
        },
        datasets: p
            .datasets
            .iter()
            .map(|d| (d.name.clone(), dataset(d)))
            .collect(),
    }
}

/// A dataset field that is part of the contract: how much one unit may
/// contribute (contribution bounds, windows), or a column's kind, clamp
/// bounds or domain.
fn is_contract_bound(field: &str) -> bool {
    matches!(
        field,
        "rows_per_unit"
            | "groups_per_unit"
            | "rows_per_group"
            | "windows_per_unit"
            | "rows_per_window"
    ) || (field.starts_with("column ")
        && (field.ends_with(": bounds")
            || field.ends_with(": domain")
            || field.ends_with(": kind")))
}

fn dataset_fields(d: &DatasetSpec) -> Vec<(String, Value)> {
    let mut f = vec![
        ("source".to_string(), json!(d.source)),
        ("rows_per_unit".to_string(), json!(d.rows_per_unit)),
        ("groups_per_unit".to_string(), json!(d.groups_per_unit)),
        ("rows_per_group".to_string(), json!(d.rows_per_group)),
        ("windows_per_unit".to_string(), json!(d.windows_per_unit)),
        ("rows_per_window".to_string(), json!(d.rows_per_window)),
        ("invalid_rows".to_string(), json!(d.invalid_rows.name())),
    ];
    for c in &d.columns {
        f.push((format!("column {}: kind", c.name), json!(c.kind.name())));
        f.push((format!("column {}: bounds", c.name), json!(c.bounds)));
        f.push((format!("column {}: domain", c.name), json!(c.domain)));
    }
    f
}

fn dataset_diffs(old: &CheckedPlan, new: &CheckedPlan) -> Vec<ItemDiff> {
    let mut out = Vec::new();
    for nd in &new.datasets {
        let od = old.dataset(&nd.name);
        let changes = field_changes(od.map(dataset_fields), Some(dataset_fields(nd)));
        if od.is_none() || !changes.is_empty() {
            out.push(ItemDiff {
                name: nd.name.clone(),
                status: if od.is_some() {
                    Status::Changed
                } else {
                    Status::Added
                },
                changes,
            });
        }
    }
    for od in &old.datasets {
        if new.dataset(&od.name).is_none() {
            out.push(ItemDiff {
                name: od.name.clone(),
                status: Status::Removed,
                changes: field_changes(Some(dataset_fields(od)), None),
            });
        }
    }
    out
}

fn publish_diffs(old: &CheckedPlan, new: &CheckedPlan) -> Vec<ItemDiff> {
    let mut out = Vec::new();
    for np in &new.publishes {
        match old.publishes.iter().find(|p| p.name == np.name) {
            Some(op) if op.source == np.source => {}
            Some(op) => out.push(ItemDiff {
                name: np.name.clone(),
                status: Status::Changed,
                changes: vec![Change {
                    field: "source".into(),
                    old: json!(op.source),
                    new: json!(np.source),
                }],
            }),
            None => out.push(ItemDiff {
                name: np.name.clone(),
                status: Status::Added,
                changes: vec![Change {
                    field: "source".into(),
                    old: Value::Null,
                    new: json!(np.source),
                }],
            }),
        }
    }
    for op in &old.publishes {
        if !new.publishes.iter().any(|p| p.name == op.name) {
            out.push(ItemDiff {
                name: op.name.clone(),
                status: Status::Removed,
                changes: vec![Change {
                    field: "source".into(),
                    old: json!(op.source),
                    new: Value::Null,
                }],
            });
        }
    }
    out
}

/// The fields that differ between two field lists (in the new list's
/// order, then the old list's fields the new one lacks); a missing side is
/// `null`.
fn field_changes(
    old: Option<Vec<(String, Value)>>,
    new: Option<Vec<(String, Value)>>,
) -> Vec<Change> {
    let old = old.unwrap_or_default();
    let new = new.unwrap_or_default();
    let get = |l: &[(String, Value)], k: &str| {
        l.iter()
            .find(|(f, _)| f == k)
            .map_or(Value::Null, |(_, v)| v.clone())
    };
    let mut out = Vec::new();
    for (k, v) in &new {
        let o = get(&old, k);
        if &o != v {
            out.push(Change {
                field: k.clone(),
                old: o,
                new: v.clone(),
            });
        }
    }
    for (k, v) in &old {
        if !new.iter().any(|(f, _)| f == k) && !v.is_null() {
            out.push(Change {
                field: k.clone(),
                old: v.clone(),
                new: Value::Null,
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Queries
// ---------------------------------------------------------------------------

fn query_fields(q: &QueryReport) -> Vec<(String, Value)> {
    let mut f = vec![
        ("dataset".to_string(), json!(q.dataset)),
        ("aggregation".to_string(), json!(q.aggregation)),
    ];
    if let Some(s) = &q.spec {
        f.push(("column".into(), json!(s.column)));
        f.push(("by".into(), json!(s.by)));
        f.push(("bounds".into(), json!(s.bounds)));
        f.push(("groups".into(), json!(s.groups)));
    }
    f.push(("schedule".into(), json!(q.schedule)));
    // `release after`: when each slot is released, not what it costs
    // (null, the same on both sides, when neither plan states one)
    if let Some(s) = &q.spec {
        let delay = s.schedule.release_after_seconds;
        f.push((
            "release_after".into(),
            json!(delay.map(dpplan_check::schedule::describe_seconds)),
        ));
    }
    f.push(("releases".into(), json!(q.releases)));
    f
}

fn part_fields(p: &PartReport) -> Vec<(String, Value)> {
    vec![
        ("noise".into(), json!(p.mechanism.kind_name())),
        ("scale".into(), json!(p.mechanism.scale)),
        ("sigma".into(), json!(p.mechanism.sigma)),
        ("calibration".into(), json!(p.mechanism.calibration)),
        ("l1".into(), json!(p.l1)),
        ("l2".into(), json!(p.l2)),
        ("coords".into(), json!(p.coords)),
        ("noise_std".into(), json!(p.noise_std)),
        ("ci95_half_width".into(), json!(p.ci95_half_width)),
    ]
}

fn part_diff(o: Option<&PartReport>, n: Option<&PartReport>) -> Option<PartDiff> {
    let (role, status) = match (o, n) {
        (Some(_), Some(n)) => (n.role.clone(), Status::Changed),
        (None, Some(n)) => (n.role.clone(), Status::Added),
        (Some(o), None) => (o.role.clone(), Status::Removed),
        (None, None) => return None,
    };
    let changes = field_changes(o.map(part_fields), n.map(part_fields));
    let od: &[String] = o.map_or(&[], |p| &p.derivation);
    let nd: &[String] = n.map_or(&[], |p| &p.derivation);
    let derivation_removed: Vec<String> = od.iter().filter(|l| !nd.contains(l)).cloned().collect();
    let derivation_added: Vec<String> = nd.iter().filter(|l| !od.contains(l)).cloned().collect();
    if status == Status::Changed
        && changes.is_empty()
        && derivation_removed.is_empty()
        && derivation_added.is_empty()
    {
        return None;
    }
    Some(PartDiff {
        role,
        status,
        changes,
        derivation_removed,
        derivation_added,
    })
}

/// The difference of two versions of a query; `None` when they are the same.
fn query_diff(o: Option<&QueryReport>, n: Option<&QueryReport>) -> Option<QueryDiff> {
    let (name, status) = match (o, n) {
        (Some(_), Some(n)) => (n.name.clone(), Status::Changed),
        (None, Some(n)) => (n.name.clone(), Status::Added),
        (Some(o), None) => (o.name.clone(), Status::Removed),
        (None, None) => return None,
    };
    let changes = field_changes(o.map(query_fields), n.map(query_fields));
    let empty: &[PartReport] = &[];
    let op = o.map_or(empty, |q| &q.parts);
    let np = n.map_or(empty, |q| &q.parts);
    let mut parts = Vec::new();
    for p in np {
        parts.extend(part_diff(op.iter().find(|x| x.role == p.role), Some(p)));
    }
    for p in op {
        if !np.iter().any(|x| x.role == p.role) {
            parts.extend(part_diff(Some(p), None));
        }
    }
    let epsilon_alone = Pair {
        old: o.and_then(|q| q.total.as_ref()).map(|t| t.epsilon),
        new: n.and_then(|q| q.total.as_ref()).map(|t| t.epsilon),
    };
    if status == Status::Changed
        && changes.is_empty()
        && parts.is_empty()
        && epsilon_alone.old == epsilon_alone.new
        && releases_of(o) == releases_of(n)
    {
        return None;
    }
    Some(QueryDiff {
        name,
        status,
        changes,
        parts,
        epsilon_alone,
        leave_one_in: None,
    })
}

// ---------------------------------------------------------------------------
// The guarantee
// ---------------------------------------------------------------------------

/// Exactly the releases the checker composed for a query: each noisy
/// part's accounted mechanism, released `releases` times.
fn releases_of(q: Option<&QueryReport>) -> Vec<acct::Release> {
    q.map(|q| {
        q.parts
            .iter()
            .filter_map(|p| p.accounted)
            .map(|m| acct::Release {
                mechanism: m,
                count: q.accounted_releases,
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Every release of the plan, in the checker's order.
pub fn plan_releases(p: &CheckedPlan) -> Vec<acct::Release> {
    p.queries
        .iter()
        .flat_map(|q| releases_of(Some(q)))
        .collect()
}

type Figures = Vec<(Accountant, Result<f64, String>)>;

/// Every accountant's ε for a list of releases at δ (0 for no release).
fn recompute(releases: &[acct::Release], delta: f64) -> Figures {
    if releases.is_empty() {
        return Accountant::ALL.iter().map(|&a| (a, Ok(0.0))).collect();
    }
    acct::all(releases, delta)
        .into_iter()
        .map(|(a, r)| (a, r.map(|b| b.epsilon).map_err(|e| e.to_string())))
        .collect()
}

/// The checker's own table for the plan (at its δ).
fn checker_figures(p: &CheckedPlan) -> Figures {
    let releases = plan_releases(p);
    if releases.is_empty() || p.accountants.is_empty() {
        return recompute(&releases, p.accounting_delta());
    }
    p.accountants
        .iter()
        .map(|a| {
            (
                a.accountant,
                a.epsilon
                    .ok_or_else(|| a.error.clone().unwrap_or_else(|| "no bound".into())),
            )
        })
        .collect()
}

/// The comparison, and (accountant, δ, old ε) for the leave-one-in runs.
fn guarantee(old: &CheckedPlan, new: &CheckedPlan) -> (Guarantee, Option<(Accountant, f64, f64)>) {
    let same_delta = old.accounting_delta() == new.accounting_delta();
    let delta = old.accounting_delta().min(new.accounting_delta());
    let (of, nf, delta_rule) = if same_delta {
        (
            checker_figures(old),
            checker_figures(new),
            "both plans' δ".to_string(),
        )
    } else {
        (
            recompute(&plan_releases(old), delta),
            recompute(&plan_releases(new), delta),
            "the smaller of the two plans' δ, as they differ; both recomputed there".to_string(),
        )
    };
    let get = |f: &Figures, a: Accountant| f.iter().find(|(x, _)| *x == a).map(|(_, r)| r.clone());
    let accountants: Vec<AccountantPair> = Accountant::ALL
        .iter()
        .map(|&a| {
            let o = get(&of, a).unwrap_or_else(|| Err("not evaluated".into()));
            let n = get(&nf, a).unwrap_or_else(|| Err("not evaluated".into()));
            AccountantPair {
                accountant: a,
                accountant_name: a.to_string(),
                old: o.as_ref().ok().copied(),
                new: n.as_ref().ok().copied(),
                old_error: o.err(),
                new_error: n.err(),
            }
        })
        .collect();
    let both: Vec<&AccountantPair> = accountants
        .iter()
        .filter(|p| p.old.is_some() && p.new.is_some())
        .collect();
    let requested = match (
        old.accountant_requested.accountant(),
        new.accountant_requested.accountant(),
    ) {
        (Some(a), Some(b)) if a == b => both.iter().find(|p| p.accountant == a).copied(),
        _ => None,
    };
    let (chosen, accountant_rule) = match requested {
        Some(p) => (
            Some(p),
            format!("both plans ask for the {} accountant", p.accountant_name),
        ),
        None => {
            // the smallest worst case over the two plans; the first in
            // the accountants' order among equals
            let mut best: Option<&AccountantPair> = None;
            for p in &both {
                let m = p
                    .old
                    .unwrap_or(f64::INFINITY)
                    .max(p.new.unwrap_or(f64::INFINITY));
                let bm = best.map_or(f64::INFINITY, |b| {
                    b.old
                        .unwrap_or(f64::INFINITY)
                        .max(b.new.unwrap_or(f64::INFINITY))
                });
                if best.is_none() || m < bm {
                    best = Some(p);
                }
            }
            (
                best,
                "the tightest accountant that bounds both plans: the smallest larger-of-the-two ε"
                    .to_string(),
            )
        }
    };
    let chosen: Option<AccountantPair> = chosen.cloned();
    let chosen = chosen.as_ref();
    let old_epsilon = chosen.and_then(|p| p.old);
    let new_epsilon = chosen.and_then(|p| p.new);
    let g = Guarantee {
        delta,
        delta_rule,
        accountant: chosen.map(|p| p.accountant),
        accountant_name: chosen.map(|p| p.accountant_name.clone()),
        accountant_rule: if chosen.is_some() {
            accountant_rule
        } else {
            "no accountant bounds both plans".into()
        },
        old_epsilon,
        new_epsilon,
        change: old_epsilon.zip(new_epsilon).map(|(o, n)| n - o),
        recomputed: !same_delta,
        accountants: accountants.clone(),
    };
    let cmp = chosen
        .zip(old_epsilon)
        .map(|(p, o)| (p.accountant, delta, o));
    (g, cmp)
}

/// The old plan with only `name`'s change applied, under `accountant` at
/// `delta`; `None` when that query's composed releases did not change.
fn leave_one_in(
    old: &CheckedPlan,
    new: &CheckedPlan,
    name: &str,
    accountant: Accountant,
    delta: f64,
    old_eps: f64,
) -> Option<LeaveOneIn> {
    let oq = old.queries.iter().find(|q| q.name == name);
    let nq = new.queries.iter().find(|q| q.name == name);
    let after = releases_of(nq);
    if releases_of(oq) == after {
        return None;
    }
    let mut releases: Vec<acct::Release> = Vec::new();
    let mut placed = false;
    for q in &old.queries {
        if q.name == name {
            releases.extend(after.iter().copied());
            placed = true;
        } else {
            releases.extend(releases_of(Some(q)));
        }
    }
    if !placed {
        releases.extend(after.iter().copied());
    }
    let r = if releases.is_empty() {
        Ok(0.0)
    } else {
        acct::epsilon(&releases, delta, accountant)
            .map(|b| b.epsilon)
            .map_err(|e| e.to_string())
    };
    Some(match r {
        Ok(e) => LeaveOneIn {
            epsilon: Some(e),
            change: Some(e - old_eps),
            error: None,
        },
        Err(e) => LeaveOneIn {
            epsilon: None,
            change: None,
            error: Some(e),
        },
    })
}

#[cfg(test)]
mod tests;
