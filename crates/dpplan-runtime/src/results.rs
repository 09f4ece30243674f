//! What a run publishes: each released number as a [`Cell`] with its
//! accuracy, the run output's format, and the results as CSV (`dpplan run
//! --csv`): one line per cell, the columns of the run output's cells
//! (format 2: `rank_error95` last, so that no earlier column moves; format
//! 3: `raw_value` after it; an absent figure is an empty field).

use serde::{Deserialize, Serialize};

use crate::RunOutput;

/// The run output's format (`format` in its JSON).
pub const RUN_FORMAT: &str = "dpplan-run";
/// The run output's version (`format_version` in its JSON): 2 since a
/// quantile's accuracy is its rank error (`rank_error95`) and its cells
/// carry no value-unit `noise_std` or interval (`null`); an output without
/// these two fields is version 1. 3 since a post-processed release's cells
/// carry `raw_value` (the value before `postprocess`), and the CSV has a
/// `raw_value` column, last.
pub const RUN_FORMAT_VERSION: u32 = 3;

/// One released number (a group's, or the only one), with its accuracy
/// computed from the mechanism alone, never from the data: the noise's
/// standard deviation and central 95 % interval in the value's units, or
/// for a quantile its rank error at 95 % (in ranks: a value-unit interval
/// would depend on the data).
///
/// Stored as it is serialised in the ledger's value entries: a cell of a
/// noisy statistic serialises as before format 2 (`rank_error95` absent);
/// a quantile's written by an earlier dpplan (`noise_std` 0, the grid's
/// range as its interval) still reads, and is served relabelled
/// (`quantile::relabel_legacy`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub group: Option<String>,
    pub value: f64,
    /// Standard deviation of the noise in this value; `None` (null) for a
    /// quantile, which carries no additive noise.
    #[serde(default)]
    pub noise_std: Option<f64>,
    /// Central 95 % interval of the noise around the value; `None` (null)
    /// for a quantile.
    #[serde(default)]
    pub ci95_low: Option<f64>,
    #[serde(default)]
    pub ci95_high: Option<f64>,
    /// A quantile's accuracy, in ranks: with probability ≥ 0.95 the chosen
    /// candidate's rank is within this many ranks (bounded rows) of the
    /// target rank q·n. Data-independent (the plan's rank error at 95 %);
    /// absent for every other statistic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_error95: Option<f64>,
    /// The value as the mechanism released it, before the release's
    /// `postprocess` steps (`value` is after them); absent without steps.
    /// The ledger keeps both: post-processing never erases the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_value: Option<f64>,
}

impl Cell {
    /// A value released with additive noise of standard deviation `std`
    /// whose central 95 % interval has half-width `half`.
    pub fn noisy(group: Option<String>, value: f64, std: f64, half: f64) -> Cell {
        Cell {
            group,
            value,
            noise_std: Some(std),
            ci95_low: Some(value - half),
            ci95_high: Some(value + half),
            rank_error95: None,
            raw_value: None,
        }
    }

    /// A quantile's chosen candidate, with its rank error at 95 %.
    pub fn quantile(group: Option<String>, value: f64, rank_error95: f64) -> Cell {
        Cell {
            group,
            value,
            noise_std: None,
            ci95_low: None,
            ci95_high: None,
            rank_error95: Some(rank_error95),
            raw_value: None,
        }
    }

    /// One key of a top-k: the chosen cell's label and its rank (1 to k).
    /// No count is published, so no noise figure either.
    pub fn ranked(group: String, rank: f64) -> Cell {
        Cell {
            group: Some(group),
            value: rank,
            noise_std: None,
            ci95_low: None,
            ci95_high: None,
            rank_error95: None,
            raw_value: None,
        }
    }

    /// The cell after `steps` (post-processing: a function of the released
    /// cell alone). The value before them is kept as `raw_value`. The 95 %
    /// interval is about the true value, which the steps do not move: it
    /// is kept, but clipped at 0 under `nonnegative` (the author states
    /// that the true value is not negative). Without steps, unchanged.
    pub fn postprocessed(mut self, steps: &[dpplan_vocab::PostStep]) -> Cell {
        if steps.is_empty() {
            return self;
        }
        // (kept when a step over the whole release set it: `consistent`)
        self.raw_value.get_or_insert(self.value);
        self.value = dpplan_vocab::PostStep::apply_all(steps, self.value);
        if steps.contains(&dpplan_vocab::PostStep::Nonnegative) {
            let clip = |x: Option<f64>| x.map(|x| dpplan_vocab::PostStep::Nonnegative.apply(x));
            self.ci95_low = clip(self.ci95_low);
            self.ci95_high = clip(self.ci95_high);
        }
        self
    }
}

/// The CSV header, in column order.
const HEADER: [&str; 15] = [
    "query",
    "slot",
    "origin",
    "republished_from",
    "group",
    "value",
    "noise_std",
    "ci95_low",
    "ci95_high",
    "epsilon",
    "delta",
    "ledger_seq",
    "corrected_by",
    "rank_error95",
    "raw_value",
];

/// A figure, or an empty field when there is none.
fn figure(x: Option<f64>) -> String {
    x.map(|x| x.to_string()).unwrap_or_default()
}

/// The results as CSV: one line per cell. A quantile's cell has empty
/// `noise_std`, `ci95_low` and `ci95_high` and its accuracy in
/// `rank_error95` (ranks); every other cell has an empty `rank_error95`.
pub fn results_csv(out: &RunOutput) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(HEADER);
    for r in &out.results {
        for c in &r.cells {
            let _ = w.write_record([
                r.query.clone(),
                r.slot.to_string(),
                r.origin.name().to_string(),
                r.republished_from.clone().unwrap_or_default(),
                c.group.clone().unwrap_or_default(),
                c.value.to_string(),
                figure(c.noise_std),
                figure(c.ci95_low),
                figure(c.ci95_high),
                r.epsilon.to_string(),
                r.delta.to_string(),
                r.ledger_seq.map(|s| s.to_string()).unwrap_or_default(),
                r.corrections
                    .iter()
                    .map(|c| c.seq.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                figure(c.rank_error95),
                figure(c.raw_value),
            ]);
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}
