//! The checked plan as plain data: what every output (terminal summary,
//! JSON, SARIF, the language server) shows. Serialisable, stable.

use dpplan_diagnostics::Span;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReport {
    pub name: Option<String>,
    pub unit: UnitReport,
    pub adjacency: String,
    pub budget: BudgetReport,
    /// The accountant the plan asked for (`best` picks the tightest).
    pub accountant_requested: String,
    /// The composed guarantee of the whole schedule; `None` when the plan has
    /// errors (then no claim is made) or no release.
    pub total: Option<TotalReport>,
    /// Why `total` is absent.
    pub total_missing: Option<String>,
    /// Every accountant's value for the whole plan (empty when incomplete).
    pub accountants: Vec<AccountantReport>,
    pub within_budget: Option<bool>,
    pub population: Option<f64>,
    pub releases: u64,
    pub queries: Vec<QueryReport>,
    pub publishes: Vec<PublishReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnitReport {
    /// `event`, `row` or `user`.
    pub kind: String,
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
    /// The accountant that produced the number (snake_case id).
    pub accountant: String,
    /// Its human name.
    pub accountant_name: String,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccountantReport {
    pub accountant: String,
    pub accountant_name: String,
    pub epsilon: Option<f64>,
    pub delta: Option<f64>,
    pub detail: Option<String>,
    /// Why the accountant does not apply or failed.
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MechanismReport {
    /// `laplace`, `gaussian`, `discrete_laplace` or `discrete_gaussian`.
    pub kind: String,
    /// Laplace kinds: the scale b.
    pub scale: Option<f64>,
    /// Gaussian kinds: σ.
    pub sigma: Option<f64>,
    /// How the noise was set: `declared`, `from epsilon`, `auto`.
    pub calibration: String,
}

/// One noisy statistic inside a query (a mean has two: a sum and a count).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartReport {
    /// Human name of the part: `count`, `sum`, `histogram`, `grouped sum`, `grouped count`.
    pub role: String,
    /// Stable id: `count`, `sum`, `grouped_count` or `grouped_sum`.
    pub statistic: String,
    pub mechanism: MechanismReport,
    pub l1: f64,
    pub l2: f64,
    pub coords: u64,
    pub derivation: Vec<String>,
    /// Standard deviation of the noise of one release (per coordinate).
    pub noise_std: f64,
    /// Half-width of the central 95 % interval of the noise of one release.
    pub ci95_half_width: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostReport {
    pub epsilon: f64,
    pub delta: f64,
    /// zCDP ρ when every part has one.
    pub rho: Option<f64>,
    pub accountant: String,
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
    /// The mechanism of the first part (the whole query but for a mean).
    pub mechanism: MechanismReport,
    pub l1: f64,
    pub l2: f64,
    pub parts: Vec<PartReport>,
    /// The cost of one release of this query, alone, at the budget's δ.
    pub per_release: Option<CostReport>,
    /// The cost of this query's whole schedule, alone, at the budget's δ.
    pub total: Option<CostReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublishReport {
    pub name: String,
    pub source: String,
    /// Re-publication is post-processing: it costs nothing.
    pub epsilon: f64,
}
