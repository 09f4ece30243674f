//! The checked plan: the one typed result of the checker that every later
//! phase reads.
//!
//! The terminal summary, the JSON output, SARIF, the language server, the
//! compiler of the executable plan, the runtime and the ledger all start
//! from a [`CheckedPlan`]. Its `Serialize` implementation *is* the JSON
//! output's `report` object (docs/json-output.schema.json): enums serialise
//! to the names a plan writes, and the fields the compiler needs beyond the
//! JSON (the resolved datasets, each query's aggregation and schedule, the
//! exact mechanism of each part, a publication's condition) are typed and
//! skipped by serde, so the JSON does not move when they are added.
//!
//! Nothing downstream re-derives what the checker decided: the statistics a
//! query releases, the noise of each, the sensitivities, the schedule's
//! release count, the public bounds and domains are all here.

use dpplan_accounting as acct;
use dpplan_diagnostics::Span;
use dpplan_vocab::{
    Accountant, AccountantChoice, AccuracyMeasure, Adjacency, AggKind, ColumnKind, Comparison,
    InvalidRule, NoiseKind, ScheduleKind, Statistic, UnitKind,
};
use serde::Serialize;
use std::sync::Arc;

/// The checked plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckedPlan {
    pub name: Option<String>,
    pub unit: UnitReport,
    pub adjacency: Adjacency,
    pub budget: BudgetReport,
    /// The accountant the plan asked for (`best` picks the tightest).
    pub accountant_requested: AccountantChoice,
    /// The composed guarantee of the whole schedule; `None` when the plan has
    /// errors (then no claim is made) or no release.
    pub total: Option<TotalReport>,
    /// Why `total` is absent.
    pub total_missing: Option<String>,
    /// Every accountant's value for the whole plan (empty when incomplete).
    pub accountants: Vec<AccountantReport>,
    pub within_budget: Option<bool>,
    /// The claim read as attack risk: the best TPR of any membership test
    /// at the false-positive rates [`acct::FPRS`], from the same
    /// composition (docs/accounting.md, "Attack risk"); `None` when no
    /// claim is made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attack_risk: Option<acct::AttackRisk>,
    pub population: Option<f64>,
    pub releases: u64,
    pub queries: Vec<QueryReport>,
    pub publishes: Vec<PublishReport>,
    /// The datasets as resolved, in declared order (not in the JSON).
    #[serde(skip)]
    pub datasets: Vec<DatasetSpec>,
}

/// What a query's "share" of a plan is, wherever it is shown (the report,
/// the editor's hover): [`CheckedPlan::rho_by_query`] over its sum.
pub const SHARE_DEFINITION: &str = "A query's share is its part of the plan's zero-concentrated-DP ρ: the ρ of each of its releases (Gaussian kinds Δ₂²/2σ², the discrete Gaussian its exact ρ, pure ε-DP releases ε·tanh(ε/2), the exponential mechanism, which is ε-bounded-range, min(ε·tanh(ε/2), ε²/8)) times its accounted releases (one for a windowed query's whole schedule), over the sum for the whole plan. ρ adds up exactly under composition, so the shares add up to 100 %; a share is an attribution of the composed privacy loss, not an ε of its own (ε does not add up).";

impl CheckedPlan {
    /// Each query's zCDP ρ over its whole schedule: the ρ of its parts
    /// times its accounted releases (the numerators of the shares,
    /// [`SHARE_DEFINITION`]).
    pub fn rho_by_query(&self) -> Vec<f64> {
        self.queries
            .iter()
            .map(|q| {
                q.parts
                    .iter()
                    .filter_map(|p| p.accounted.as_ref().and_then(acct::rho_tight))
                    .sum::<f64>()
                    * q.accounted_releases as f64
            })
            .collect()
    }

    /// Each query's share of the plan's privacy loss, a fraction
    /// ([`SHARE_DEFINITION`]); all 0 when the plan has no ρ.
    pub fn shares(&self) -> Vec<f64> {
        let rhos = self.rho_by_query();
        let total: f64 = rhos.iter().sum();
        rhos.iter()
            .map(|&r| if total > 0.0 { r / total } else { 0.0 })
            .collect()
    }

    /// The δ at which the accountants composed the plan's mechanisms: the
    /// budget's, less the share kept for the thresholds when the plan has
    /// keys from the data (docs/accounting.md, "Partition selection").
    /// Whatever recomposes the plan's releases must do it at this δ.
    pub fn accounting_delta(&self) -> f64 {
        let keyed = self.queries.iter().any(|q| q.selection.is_some());
        if keyed {
            self.budget.delta * (1.0 - acct::selection::RESERVED_SHARE)
        } else {
            self.budget.delta
        }
    }

    /// The dataset of that name.
    pub fn dataset(&self, name: &str) -> Option<&DatasetSpec> {
        self.datasets.iter().find(|d| d.name == name)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnitReport {
    pub kind: UnitKind,
    /// The id column of a user-level unit.
    pub id: Option<String>,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetReport {
    pub epsilon: f64,
    pub delta: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TotalReport {
    pub epsilon: f64,
    pub delta: f64,
    /// The accountant that produced the number.
    pub accountant: Accountant,
    /// Its human name ([`Accountant::title`]).
    pub accountant_name: String,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccountantReport {
    pub accountant: Accountant,
    /// Its human name ([`Accountant::title`]).
    pub accountant_name: String,
    pub epsilon: Option<f64>,
    pub delta: Option<f64>,
    pub detail: Option<String>,
    /// Why the accountant does not apply or failed.
    pub error: Option<String>,
}

/// How a part's noise was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Calibration {
    /// `scale b` / `sigma s` as written.
    #[serde(rename = "declared")]
    Declared,
    /// From a per-release `epsilon e [delta d]`.
    #[serde(rename = "from epsilon")]
    FromEpsilon,
    /// Calibrated with the other `auto` parts so that the plan fits.
    #[serde(rename = "auto")]
    Auto,
    /// `auto` with an `accuracy` requirement: the largest noise that meets
    /// it.
    #[serde(rename = "accuracy")]
    Accuracy,
    /// A public statistic: no noise.
    #[serde(rename = "none")]
    None,
}

impl Calibration {
    pub fn as_str(self) -> &'static str {
        match self {
            Calibration::Declared => "declared",
            Calibration::FromEpsilon => "from epsilon",
            Calibration::Auto => "auto",
            Calibration::Accuracy => "accuracy",
            Calibration::None => "none",
        }
    }
}

impl std::fmt::Display for Calibration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MechanismReport {
    /// The noise; `None` (written `none`) for a public statistic.
    #[serde(with = "dpplan_vocab::or_none")]
    pub kind: Option<NoiseKind>,
    /// Laplace kinds: the scale b.
    pub scale: Option<f64>,
    /// Gaussian kinds: σ.
    pub sigma: Option<f64>,
    pub calibration: Calibration,
}

impl MechanismReport {
    /// The noise kind's name, or `none`.
    pub fn kind_name(&self) -> &'static str {
        self.kind
            .map_or(dpplan_vocab::or_none::NONE, NoiseKind::name)
    }
}

/// One noisy statistic inside a query (a mean has two: a sum and a count).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartReport {
    /// Human name of the part: `count`, `sum`, `histogram`, `grouped sum`, `grouped count`.
    pub role: String,
    pub statistic: Statistic,
    pub mechanism: MechanismReport,
    pub l1: f64,
    pub l2: f64,
    pub coords: u64,
    /// How the sensitivity follows from the declared bounds, a sentence a
    /// step. One copy of each sentence is shared by every part that
    /// derives its bound the same way (10⁵ alike queries: one sentence).
    pub derivation: Vec<Arc<str>>,
    /// Standard deviation of the noise of one release (per coordinate).
    pub noise_std: f64,
    /// Half-width of the central 95 % interval of the noise of one release.
    pub ci95_half_width: f64,
    /// Exactly what the accountants composed for one release of this part:
    /// `None` for a public statistic (no noise, no cost) and for a part
    /// whose noise did not resolve (the plan then has an error).
    #[serde(skip)]
    pub accounted: Option<acct::Mechanism>,
}

impl PartReport {
    /// The noise scale (b or σ) that was checked and accounted.
    pub fn scale(&self) -> Option<f64> {
        self.mechanism.scale.or(self.mechanism.sigma)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostReport {
    pub epsilon: f64,
    pub delta: f64,
    /// zCDP ρ when every part has one.
    pub rho: Option<f64>,
    pub accountant: Accountant,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryReport {
    pub name: String,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    pub name_span: Span,
    pub dataset: String,
    pub aggregation: String,
    pub schedule: String,
    pub releases: u64,
    /// How many times the accountants composed each part: 1 for a
    /// windowed query (its releases are one vector release over disjoint
    /// windows), else `releases` (not in the JSON).
    #[serde(skip)]
    pub accounted_releases: u64,
    /// Its dataset's `sample units` rate: each release runs on a fresh
    /// Poisson sample of the units, and its parts are composed as sampled
    /// mechanisms (absent when the dataset is not sampled).
    /// (Boxed: few queries have it, [`QueryReport::sampled`] reads it.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<Box<f64>>,
    /// The mechanism of the first part (the whole query but for a mean).
    pub mechanism: MechanismReport,
    pub l1: f64,
    pub l2: f64,
    /// In the order the statistics are released ([`Statistic::of`]).
    pub parts: Vec<PartReport>,
    /// The cost of one release of this query, alone, at the budget's δ.
    pub per_release: Option<CostReport>,
    /// The cost of this query's whole schedule, alone, at the budget's δ.
    pub total: Option<CostReport>,
    /// What the query computes and when, resolved (not in the JSON);
    /// `None` when its aggregation, target or schedule has an error.
    #[serde(skip)]
    pub spec: Option<Box<QuerySpec>>,
    /// The query's `accuracy` requirement and what its noise achieves;
    /// absent from the JSON when the query has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<Box<AccuracyReport>>,
    /// Keys from the data: the threshold and the δ it costs; absent from
    /// the JSON for every other query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selection: Option<Box<SelectionSpec>>,
    /// `postprocess …`: the steps applied to each released value (free);
    /// absent from the JSON when the query has none (boxed: few queries
    /// have them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postprocess: Option<Box<Vec<dpplan_vocab::PostStep>>>,
}

/// Why a query's whole schedule is one accounted release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneRelease {
    /// A windowed query: its releases read disjoint windows.
    Windows,
    /// A `cumulative` count: its running totals are read from one tree.
    Tree,
    /// A `cumulative` count by the factorization: its running totals are
    /// read from one vector of encoded counts.
    Factorization,
}

impl QueryReport {
    /// Its dataset's sampling rate, when it is sampled.
    pub fn sampled(&self) -> Option<f64> {
        self.sample.as_deref().copied()
    }

    /// The `postprocess` steps, in order (empty without them).
    pub fn postprocess(&self) -> &[dpplan_vocab::PostStep] {
        self.postprocess.as_deref().map_or(&[], |v| &v[..])
    }

    /// `Some` when the query's schedule is accounted as one release (its
    /// `per_release` cost is then that whole release's).
    pub fn one_release(&self) -> Option<OneRelease> {
        let spec = self.spec.as_ref()?;
        if spec.window.is_some() {
            return Some(OneRelease::Windows);
        }
        spec.cumulative.as_ref().map(|c| {
            if c.mechanism.is_tree() {
                OneRelease::Tree
            } else {
                OneRelease::Factorization
            }
        })
    }
}

/// A query's `accuracy <measure> <= <at_most>` and what its noise achieves.
/// The requirement applies to each value the query releases: every noisy
/// part (a mean's sum and count each), every cell of a histogram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccuracyReport {
    pub measure: AccuracyMeasure,
    /// Each released value's `measure` must be at most this.
    pub at_most: f64,
    /// The largest `measure` over the query's noisy parts; `None` when its
    /// noise did not resolve (the plan then has an error).
    pub achieved: Option<f64>,
    /// `achieved ≤ at_most`; `None` with `achieved`.
    pub met: Option<bool>,
}

/// A query's aggregation and schedule, resolved against its dataset. (The
/// parts few queries have are boxed: a plan of 10⁵ queries holds 10⁵ specs.)
#[derive(Debug, Clone, PartialEq)]
pub struct QuerySpec {
    pub kind: AggKind,
    pub dataset: String,
    /// The summed column.
    pub column: Option<String>,
    /// The keys of a grouped query as written (`district, hour_of_day`).
    pub by: Option<String>,
    /// The public clamp bounds of `column`.
    pub bounds: Option<[f64; 2]>,
    /// The output keys of a grouped query: the labels of its cells, the
    /// product of its keys' public categories (first key slowest).
    pub groups: Option<Vec<String>>,
    pub schedule: ScheduleSpec,
    /// The query's time window, when it has one.
    pub window: Option<Box<WindowSpec>>,
    /// The `where` filter, normalised.
    pub filter: Option<dpplan_vocab::rows::Filter>,
    /// The group keys (empty: not grouped).
    pub keys: Vec<dpplan_vocab::rows::GroupKey>,
    /// `count(distinct column)`.
    pub distinct: bool,
    /// A quantile's levels and candidate grid.
    pub quantile: Option<Box<crate::checker::QuantileSpec>>,
    /// A top-k's k and whether its selections are monotone.
    pub top: Option<Box<crate::checker::TopSpec>>,
    /// `histogram(…) with total`: a second part releases the cells' total.
    pub total: bool,
    /// A `cumulative` count's tree.
    pub cumulative: Option<Box<CumulativeSpec>>,
    /// Keys from the data: the key column and the threshold (partition
    /// selection); `None` for every other query.
    pub selection: Option<Box<SelectionSpec>>,
    /// `postprocess …`: the steps applied to each released value, in
    /// order (post-processing: free); `None` without steps (boxed: few
    /// queries have them: the checker's per-query size bounds).
    pub postprocess: Option<Box<Vec<dpplan_vocab::PostStep>>>,
}

/// A `cumulative count(d)`, resolved: at slot t (1-based) the runtime
/// releases the number of rows whose `column` lies in the first t slots
/// [start, start + t·seconds), by the binary tree mechanism over the
/// `slots` leaves ([`dpplan_mechanisms::tree`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CumulativeSpec {
    /// The dataset's `time` column.
    pub column: String,
    /// A slot's length (= the schedule's period), in seconds.
    pub seconds: f64,
    /// T: the schedule's slots (the tree's leaves).
    pub slots: u64,
    /// W: the slots one unit may have rows in (T when not declared).
    pub windows_per_unit: u64,
    /// r: the rows of one unit kept in one slot.
    pub rows_per_window: u64,
    /// K = ⌊log₂ T⌋ + 1: the levels with a node closing within the schedule.
    pub levels: u32,
    /// Σ_l ⌊T / 2ˡ⌋: the nodes released over the schedule (T under the
    /// factorization: one coordinate per slot).
    pub nodes: u64,
    /// `mechanism factorization`: the square-root factorization instead
    /// of the tree (absent for the tree, the default).
    pub mechanism: dpplan_vocab::CumulativeMechanism,
}

/// A histogram over keys taken from the data (`keys from data`): a key is
/// released only when its noisy count is strictly above `threshold`.
/// The δ it costs is part of the plan's total (docs/accounting.md,
/// "Partition selection").
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct SelectionSpec {
    /// The category column whose values seen in the data are the keys.
    pub column: String,
    /// τ: a key is released iff its noisy count is > τ.
    pub threshold: f64,
    /// τ derived from the plan's δ (`threshold auto`, the default), or
    /// declared.
    pub auto: bool,
    /// k: the most keys one unit's rows fall into.
    pub keys_per_unit: u64,
    /// C: the most rows one unit has in one key.
    pub rows_per_key: u64,
    /// Upper bound on the probability that one release reveals a key only
    /// one unit brings (1 − (1 − p)^k, p = P[C + noise > τ]).
    pub release_probability: f64,
    /// This query's δ over all its releases, alone.
    pub delta: f64,
}

/// A query's `window`, resolved: the runtime reads only the rows whose
/// `column` falls in the slot's [start, start + seconds), keeps a unit in
/// at most `windows_per_unit` windows over the schedule and at most
/// `rows_per_window` rows of it in one window.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowSpec {
    /// The dataset's `time` column.
    pub column: String,
    /// The window's length (= the schedule's period), in seconds.
    pub seconds: f64,
    /// W: the windows one unit may be kept in over the whole schedule.
    pub windows_per_unit: u64,
    /// r: the rows of one unit kept in one window.
    pub rows_per_window: u64,
    /// N: the schedule's slots (= windows).
    pub slots: u64,
}

/// A schedule, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleSpec {
    pub kind: ScheduleKind,
    /// The period of an `every` schedule, in seconds.
    pub every_seconds: Option<f64>,
    /// The start (Unix seconds) of an `every … from … until …` schedule.
    pub start: Option<i64>,
    /// `release after <duration>` of a windowed query or a cumulative
    /// count, in whole seconds: slot s is due at start + (s+1)·period +
    /// this. `None` when not stated (due when its window closes).
    pub release_after_seconds: Option<f64>,
}

/// A dataset, resolved (not in the JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetSpec {
    pub name: String,
    /// The `source` as declared, if any.
    pub source: Option<String>,
    /// In declared order.
    pub columns: Vec<ColumnSpec>,
    pub invalid_rows: InvalidRule,
    /// The contribution bounds as declared (the first value of each).
    pub rows_per_unit: Option<u64>,
    pub groups_per_unit: Option<u64>,
    pub rows_per_group: Option<u64>,
    /// `windows_per_unit` and `rows_per_window` as declared.
    pub windows_per_unit: Option<u64>,
    pub rows_per_window: Option<u64>,
    /// `sample units q`, valid and below 1: the sampling rate.
    pub sample: Option<f64>,
}

impl DatasetSpec {
    pub fn column(&self, name: &str) -> Option<&ColumnSpec> {
        self.columns.iter().find(|c| c.name == name)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSpec {
    pub name: String,
    pub kind: ColumnKind,
    /// The public domain of a category, in declared order.
    pub domain: Option<Vec<String>>,
    /// The public clamp bounds `[lo, hi]` of a number.
    pub bounds: Option<[f64; 2]>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublishReport {
    pub name: String,
    pub source: String,
    /// Re-publication is post-processing: it costs nothing.
    pub epsilon: f64,
    /// The `when` condition over a released scalar (not in the JSON).
    #[serde(skip)]
    pub condition: Option<ConditionSpec>,
}

/// `when <released> <cmp> <value>`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionSpec {
    pub operand: String,
    pub cmp: Comparison,
    pub value: f64,
}
