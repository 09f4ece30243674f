//! `dpplan report`: what a reviewer signs off, as plain data ([`Review`]),
//! built from one [`dpplan_check::analyze`] of the plan (never a second
//! derivation of a sensitivity or a noise), and rendered by [`markdown`],
//! [`html`] or as JSON (serde; docs/report.schema.json).
//!
//! Every number comes from the checked plan, or from the accounting crate
//! fed exactly the mechanisms the checker accounted (`PartReport::accounted`):
//! the cumulative ε over the calendar, the negative controls and the shares.

mod audit;
mod build;
mod contract;
mod doc;
pub mod figures;
mod html;
mod markdown;
mod text;
mod timeline;

use serde::{Deserialize, Serialize};

pub use audit::{AuditError, AuditRow, AuditSummary, AuditVerdict};
pub use build::{build, compose, ReviewError, ReviewOptions};
pub use html::html;
pub use markdown::markdown;

pub use crate::averaging::{Averaging, AveragingPoint};

/// The version of the report's JSON (docs/report.schema.json).
/// 2: the optional `audit` (`dpplan report --audit`).
/// 3: `one_release`, why a query's schedule is one accounted release (a
/// window, a tree); `selection` (keys from the data).
/// 4: `cumulative.steps`, the curves are evaluated at every release time;
/// `tradeoff`, the attack risk at every false-positive rate.
pub const SCHEMA_VERSION: u32 = 4;

/// The counts at which a mean's accuracy is stated when none is given.
pub const DEFAULT_MEAN_COUNTS: [f64; 4] = [100.0, 1_000.0, 10_000.0, 100_000.0];

/// The reviewer's report of one plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    pub schema_version: u32,
    pub plan: Option<String>,
    pub contract: Contract,
    /// How calendar dates were placed.
    pub calendar: Calendar,
    pub queries: Vec<QueryReview>,
    /// What a query's `share` is.
    pub share_definition: String,
    /// ε accrued over the schedule's calendar.
    pub cumulative: Cumulative,
    /// The std of an average of r fresh releases against its ε, for each
    /// query released more than once.
    pub averaging: Vec<Averaging>,
    /// What the controls are.
    pub controls_definition: String,
    pub controls: Vec<Control>,
    /// Every control moved the claim.
    pub controls_ok: bool,
    /// The latest `dpplan audit` of the plan, when one was given
    /// (`--audit`): measured lower bounds beside the claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit: Option<AuditSummary>,
    /// The attack risk over every false-positive rate: the trade-off curve
    /// of the plan's whole schedule (schema version 4); `None` when it
    /// cannot be computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tradeoff: Option<TradeOff>,
}

/// The largest true-positive rate of any membership test against the
/// plan's whole schedule, at each false-positive rate: upper bounds, from
/// the same composition as the claim (dpplan_accounting::attack_risk).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TradeOff {
    /// Where the curve is read from: `gdp`, `pld` or `fast`.
    pub curve: String,
    /// μ when the plan is μ-GDP exactly.
    pub gdp_mu: Option<f64>,
    pub points: Vec<TradeOffPoint>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TradeOffPoint {
    pub fpr: f64,
    pub tpr: f64,
}

/// The contract: who is protected, against what, at what cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contract {
    pub unit: String,
    /// The id column of a user-level unit.
    pub unit_id: Option<String>,
    pub unit_description: String,
    pub adjacency: String,
    /// What the guarantee protects, in sentences.
    pub protected: Vec<String>,
    /// What it does not protect, in sentences.
    pub not_protected: Vec<String>,
    pub datasets: Vec<DatasetBounds>,
    pub budget: Pair,
    /// The plan's total: the claim.
    pub total: Pair,
    pub within_budget: bool,
    /// The accountant that produced the total.
    pub accountant: String,
    pub accountant_name: String,
    pub accountant_detail: String,
    /// The accountant the plan asks for (`best` or one of them).
    pub accountant_requested: String,
    /// Why the total's accountant is the one.
    pub accountant_why: String,
    pub accountants: Vec<AccountantRow>,
    /// The formal statement of (ε, δ)-DP and a practical reading.
    pub delta_meaning: Vec<String>,
    /// Fresh releases in the whole schedule.
    pub releases: u64,
    /// The checker's warnings and hints, as it words them.
    pub checker_notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    pub epsilon: f64,
    pub delta: f64,
}

/// A dataset's contribution bounds and public clamp bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetBounds {
    pub name: String,
    pub rows_per_unit: Option<u64>,
    pub groups_per_unit: Option<u64>,
    pub rows_per_group: Option<u64>,
    pub clamps: Vec<ColumnBounds>,
    /// The bounds in words.
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnBounds {
    pub column: String,
    pub lo: f64,
    pub hi: f64,
}

/// One accountant's (ε, δ) for the whole plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountantRow {
    pub accountant: String,
    pub name: String,
    pub epsilon: Option<f64>,
    pub delta: Option<f64>,
    pub detail: Option<String>,
    /// Why it does not apply.
    pub error: Option<String>,
}

/// Where the calendar starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calendar {
    /// The first run, `YYYY-MM-DD[ HH:MM]` (UTC); `None` when unknown
    /// (dates are then "day N after the first run").
    pub first_run: Option<String>,
    /// The same, in Unix seconds.
    pub first_run_unix: Option<i64>,
    /// Where `first_run` comes from, in words.
    pub note: String,
}

/// One query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryReview {
    pub name: String,
    pub dataset: String,
    pub aggregation: String,
    pub schedule: Schedule,
    pub parts: Vec<PartReview>,
    /// Why the query's whole schedule is one accounted release (a window,
    /// a cumulative count's tree), and when each of its slots is released
    /// (when its window closes, or a `release after` delay later), in
    /// words; `epsilon_per_release` is then that one release's ε.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_release: Option<String>,
    /// ε of one accounted release alone, at the budget's δ (the checker's
    /// figure).
    pub epsilon_per_release: Option<f64>,
    /// ε of the query's whole schedule alone, at the budget's δ.
    pub epsilon_alone: Option<f64>,
    /// The accountant of `epsilon_alone` (the fast accountants' best).
    pub alone_accountant: Option<String>,
    /// The query's zCDP ρ over its whole schedule (Σ parts ρ × releases).
    pub rho: f64,
    /// `rho` over the plan's ρ: the shares add up to 1.
    pub share: f64,
    /// A mean's own accuracy (delta method).
    pub mean: Option<MeanAccuracy>,
    /// Keys from the data: the threshold τ and the δ it costs (absent for
    /// every other query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<dpplan_check::SelectionSpec>,
    /// `postprocess …`: the steps applied to each released value, in
    /// order (free; absent when there are none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub postprocess: Vec<dpplan_vocab::PostStep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub text: String,
    pub releases: u64,
    /// The first release: a date, or "day N after the first run".
    pub first: String,
    pub last: String,
    /// Seconds from the first run (negative: before it).
    pub first_offset_seconds: f64,
    pub last_offset_seconds: f64,
}

/// One noisy statistic of a query (a mean has two).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartReview {
    pub role: String,
    pub statistic: String,
    /// `laplace`, `gaussian`, …, or `none` for a public statistic.
    pub noise: String,
    pub scale: Option<f64>,
    pub sigma: Option<f64>,
    pub calibration: String,
    pub l1: f64,
    pub l2: f64,
    pub coords: u64,
    pub derivation: Vec<String>,
    /// The std of one released value's noise (each cell of a histogram).
    pub noise_std: f64,
    /// The half-width of the central 95 % interval of that noise.
    pub ci95_half_width: f64,
    /// The cells of a grouped statistic (each released with that noise).
    pub cells: Vec<String>,
}

/// A mean's approximate accuracy at stated counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeanAccuracy {
    /// The approximation and its assumptions, in words.
    pub assumption: String,
    pub points: Vec<MeanPoint>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeanPoint {
    /// The true (bounded) count of rows the mean is over (per cell).
    pub count: f64,
    pub std: f64,
    pub ci95_half_width: f64,
}

/// ε over the calendar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cumulative {
    pub budget_epsilon: f64,
    /// The last release, seconds from the first run.
    pub horizon_seconds: f64,
    pub curves: Vec<Curve>,
    /// The curves' points are every release time (ε is constant between
    /// them: drawn as steps); `false`: evenly spaced dates (a plan with
    /// many release times; drawn as line segments). Schema version 4.
    #[serde(default)]
    pub steps: bool,
    /// When the plan's own schedule reaches each fraction of the budget,
    /// under the accountant rule of the total.
    pub fractions: Vec<FractionReached>,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Curve {
    pub accountant: String,
    pub name: String,
    pub points: Vec<CurvePoint>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    /// Seconds from the first run.
    pub t: f64,
    /// ε of every release made by then.
    pub epsilon: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FractionReached {
    /// 0.25, 0.5, 0.75, 1.
    pub fraction: f64,
    /// When the release that reaches it is made; `None`: never reached.
    pub at: Option<String>,
    pub offset_seconds: Option<f64>,
    /// ε right after that release.
    pub epsilon: Option<f64>,
}

/// One query's negative controls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Control {
    pub query: String,
    /// The plan's total with this query's releases removed.
    pub without: f64,
    /// The plan's total with this query's contribution bound doubled.
    pub doubled: f64,
    /// `without` < the total.
    pub without_moves: bool,
    /// `doubled` > the total.
    pub doubled_moves: bool,
}

/// Fixed-point text for a share: `42.1 %`.
pub fn percent(x: f64) -> String {
    format!("{:.1} %", 100.0 * x)
}
