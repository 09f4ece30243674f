//! # dpplan-plan — the executable-plan format
//!
//! The types of an [`ExecutablePlan`]: a versioned, self-describing JSON
//! document (docs/executable-plan.md) that `dpplan compile`
//! (dpplan-compile) writes and the runtime executes and nothing else; its
//! hashes and its parsing. The compiler lives apart, so the runtime and
//! the engines depend on the format alone.
//!
//! * The file carries the plan **source text** and its SHA-256, and a
//!   SHA-256 over the canonical JSON of the plan body ([`body_hash`]).
//! * `dpplan_compile::load` refuses a file whose body hash does not match, whose format or
//!   compiler version differs, or whose body is not exactly what compiling
//!   the embedded source gives today: a plan edited by hand (even with a
//!   recomputed hash) is refused, so what runs is what was checked.
//! * Compiling the same source twice gives byte-identical output: no
//!   timestamps, no paths, vectors in source order, maps sorted.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use dpplan_accounting as acct;
use dpplan_vocab::{
    Accountant, AccountantChoice, Adjacency, AggKind, ColumnKind, Comparison, CumulativeMechanism,
    InvalidRule, NoiseKind, ScheduleKind, Statistic, UnitKind,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The value of [`ExecutablePlan::format`].
pub const FORMAT: &str = "dpplan-executable-plan";
/// Bumped on any incompatible change of the body.
/// Version 2: `aggregation` gained `filter`, `keys` and `distinct`
/// (Language v2) and a part may be a `distinct_count`. Version 3: a
/// release may carry a `window` (time windows), which a version-2 runtime
/// must not run as if it read every row; `aggregation` gained `quantile`
/// (levels and candidates), and a part may be a `quantile` released by the
/// `exponential` mechanism. Version 4: `aggregation` may carry a
/// `selection` (a histogram over keys from the data, released above a
/// threshold), which a version-3 runtime must not run as a histogram over
/// a public domain. Version 5: a release may carry `cumulative` (a
/// running count by the binary tree mechanism, charged once for all its
/// slots), which a version-4 runtime must not run as fresh counts.
/// Version 6: the file records the policy it was compiled under
/// (`policy`, outside the body: the body and its hash, the plan's identity
/// in a ledger, do not change with the policy), which `dpplan run` and
/// `report --freeze` compare with the policy in force; a version-5 file is
/// still read, as compiled under no policy. Version 7: a part may be a
/// `grouped_distinct_count` (users per cell), and a release may carry
/// `postprocess` (steps on its released values), which a version-6
/// runtime must not meet; a version-6 file is still read, its body
/// unchanged. Version 8: a part may be a `top_k` (one selection of a
/// top-k by the exponential mechanism) and `aggregation` may carry `top`,
/// which a version-7 runtime must not run as a histogram; a part may be a
/// `cells_total` (`aggregation.total`, a histogram's total) and a release's
/// `postprocess` may be `consistent`; versions 5 to 7 are still read.
/// Version 9: a dataset may carry `sample` (every release that reads it
/// runs on a fresh Poisson sample of its units), which a version-8
/// runtime must not run on every unit; versions 5 to 8 are still read.
/// Version 10: a release's `cumulative` may carry `mechanism:
/// "factorization"` (the square-root factorization instead of the tree),
/// which a version-9 runtime must not run as a tree; versions 5 to 9 are
/// still read. Version 11: a part's `mechanism` may be `permute_and_flip`
/// (a top-k's rank or a quantile's level chosen by permute-and-flip),
/// which a version-10 runtime must not meet; versions 5 to 10 are still
/// read.
pub const FORMAT_VERSION: u32 = 11;
/// The versions [`parse`] reads: a version-5 file has no `policy`.
pub const READS: [u32; 7] = [5, 6, 7, 8, 9, 10, 11];
/// The compiler that produced a plan: this crate's version.
pub const COMPILER: &str = concat!("dpplan ", env!("CARGO_PKG_VERSION"));

/// The file: a header, the body, and the body's hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutablePlan {
    pub format: String,
    pub format_version: u32,
    /// SHA-256 (hex) of the canonical JSON of `body` ([`canonical_json`]).
    pub body_sha256: String,
    pub body: PlanBody,
    /// The organisation policy the plan was compiled under and passed
    /// (`None`: no policy was in force, or a version-5 file).
    #[serde(default)]
    pub policy: Option<PolicyRecord>,
}

/// The policy a plan was compiled under: what `dpplan compile` checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRecord {
    /// The policy's hash (dpplan-policy's `Policy.hash`: the SHA-256 of the
    /// file's text, or of its chain's).
    pub sha256: String,
    /// The chain's files, root first, relative to the plan source's
    /// directory.
    pub files: Vec<String>,
    /// The policy codes whose rules were checked (DP100–DP107), each
    /// without an error.
    pub rules: Vec<String>,
    /// The plan source's path relative to the root policy's directory:
    /// where the policy's per-path overrides were matched.
    pub plan: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanBody {
    pub compiler: String,
    pub name: String,
    pub source: Source,
    pub privacy: Privacy,
    /// By dataset name.
    pub datasets: BTreeMap<String, Dataset>,
    /// In source order.
    pub releases: Vec<Release>,
    /// Re-publications (served from the ledger, free), in source order.
    pub publishes: Vec<Publish>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// SHA-256 (hex) of the UTF-8 source text.
    pub sha256: String,
    /// The plan as written: the runtime recompiles it and compares.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Privacy {
    pub unit: UnitKind,
    /// The id column of a user-level unit.
    pub unit_id: Option<String>,
    pub adjacency: Adjacency,
    pub budget_epsilon: f64,
    pub budget_delta: f64,
    /// As requested (`best`, `rdp`, …).
    pub accountant: AccountantChoice,
    /// The checker's composed guarantee of the whole schedule.
    pub total: Total,
    /// Total number of fresh releases over every schedule.
    pub releases: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Total {
    pub epsilon: f64,
    pub delta: f64,
    pub accountant: Accountant,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dataset {
    pub name: String,
    /// The `source` as declared (relative to the plan file), if any.
    pub source: Option<String>,
    /// In declared order.
    pub columns: Vec<Column>,
    /// `drop` (default) or `clamp`.
    pub invalid_rows: InvalidRule,
    pub bounding: Bounding,
    /// `sample units q`: every release that reads the dataset runs on a
    /// fresh Poisson sample of its units, each kept with probability q
    /// (format version 9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: ColumnKind,
    /// Public domain of a category, in declared order.
    pub domain: Option<Vec<String>>,
    /// Public clamp bounds `[lo, hi]` of a number.
    pub bounds: Option<[f64; 2]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounding {
    /// True under a user-level unit: rows are bounded per unit id.
    pub per_unit: bool,
    pub id_column: Option<String>,
    pub rows_per_unit: Option<u64>,
    pub groups_per_unit: Option<u64>,
    pub rows_per_group: Option<u64>,
    /// The steps the runtime applies, in order, in words.
    pub steps: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    pub name: String,
    pub dataset: String,
    pub aggregation: Aggregation,
    pub schedule: Schedule,
    /// One noisy statistic per part (a mean has a sum and a count).
    pub parts: Vec<Part>,
    /// Cost of one release of this query alone, at the budget's δ.
    pub cost_per_release: Cost,
    /// Cost of the whole schedule of this query alone.
    pub cost_total: Cost,
    /// The query's time window: each slot reads only its own rows, and
    /// the whole schedule is one release (absent for a query without one,
    /// so plans without windows are unchanged; a runtime that does not
    /// know the field refuses the plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
    /// A cumulative count's tree: slot t releases the running total of the
    /// first t slots from the tree's nodes, and the whole schedule is ONE
    /// release of every node (absent for every other query, so their
    /// bodies are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cumulative: Option<Cumulative>,
    /// `postprocess …`: the steps applied, in order, to each released
    /// value (`nonnegative`, `round`); the ledger keeps the value before
    /// them (`raw_value`). Absent when there are none, so other bodies are
    /// unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub postprocess: Vec<dpplan_vocab::PostStep>,
    /// Its dataset's `sample`: each release runs on a fresh Poisson sample
    /// of the units at this rate, and the ledger composes its parts as
    /// sampled mechanisms (format version 9; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<f64>,
}

/// A release's `cumulative`: the binary tree over `slots` leaves. Slot `t`
/// (1-based) covers the rows whose `column` lies in
/// [start + (t−1)·seconds, start + t·seconds); at slot t the nodes of every
/// level `l` with 2ˡ dividing t close (node (l, t/2ˡ − 1) covers slots
/// (t − 2ˡ, t]), each with its own noise; a unit is kept in at most
/// `windows_per_unit` slots with at most `rows_per_window` rows in each,
/// and in at most `rows_per_unit` rows in all (the bounds the tree's
/// sensitivity assumes, docs/accounting.md "The binary tree mechanism").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cumulative {
    /// The dataset's `time` column.
    pub column: String,
    /// A slot's length (the schedule's period), in seconds.
    pub seconds: f64,
    /// T: the slots (the tree's leaves).
    pub slots: u64,
    /// K = ⌊log₂ T⌋ + 1: the levels with a node closing within the schedule.
    pub levels: u32,
    /// Σ_l ⌊T/2ˡ⌋: the nodes released over the schedule.
    pub nodes: u64,
    /// W: the slots one unit may be kept in.
    pub windows_per_unit: u64,
    /// r: the rows of one unit kept in one slot.
    pub rows_per_window: u64,
    /// W′: the slots the runtime keeps one unit in ([`Cumulative::kept_slots_for`]).
    pub kept_slots: u64,
    /// `factorization`: the square-root factorization
    /// (`dpplan_mechanisms::factorization`): one coordinate per slot,
    /// stored as the level-0 node closing at it (`levels` is 1). Absent
    /// for the tree (format version 10).
    #[serde(default, skip_serializing_if = "CumulativeMechanism::is_tree")]
    pub mechanism: CumulativeMechanism,
}

impl Cumulative {
    /// W′, the slots a unit is kept in, so that the per-slot bounds alone
    /// keep every bound the tree's claim assumes.
    ///
    /// The claim assumes a unit has at most r rows in a slot, rows in at
    /// most W slots, and at most R = `rows_per_unit` rows in all (M =
    /// min(R, W·r), `dpplan_mechanisms::tree`). Per-slot bounds alone give
    /// W·r, above R when R < W·r, so the slots a unit is kept in are
    /// capped at W′ = min(W, ⌊R/r⌋) (≥ 1, as r ≤ R): its rows are then at
    /// most W′·r ≤ min(W·r, R) = M in all, at most r in a slot and in at
    /// most W slots — every assumption of the claim, with no per-unit row
    /// count kept across runs. (When r does not divide R this keeps fewer
    /// rows than the claim allows: sound, not tight.) Without a per-unit
    /// bound (a row- or event-level unit is one row) W′ = W.
    pub fn kept_slots_for(&self, rows_per_unit: Option<u64>) -> u64 {
        let r = self.rows_per_window.max(1);
        match rows_per_unit {
            Some(rows) => self.windows_per_unit.min(rows / r).max(1),
            None => self.windows_per_unit.max(1),
        }
    }

    /// The window of one slot, as the windowed runtime bounds it: at most
    /// r rows of a unit in a slot, a unit kept in at most W′ slots.
    pub fn slot_window(&self) -> Window {
        Window {
            column: self.column.clone(),
            seconds: self.seconds,
            windows_per_unit: self.kept_slots,
            rows_per_window: self.rows_per_window.max(1),
        }
    }
}

/// A release's `window`: slot `s` reads the rows whose `column` lies in
/// [start + s·seconds, start + (s+1)·seconds); a unit is kept in at most
/// `windows_per_unit` windows over the schedule (state kept in the ledger)
/// and with at most `rows_per_window` rows in each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Window {
    pub column: String,
    pub seconds: f64,
    pub windows_per_unit: u64,
    pub rows_per_window: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Aggregation {
    /// `count`, `sum`, `mean` or `histogram`.
    pub kind: AggKind,
    /// The summed column.
    pub column: Option<String>,
    /// The keys of a grouped query as written (`district, hour_of_day`).
    pub by: Option<String>,
    /// Clamp bounds of `column`.
    pub bounds: Option<[f64; 2]>,
    /// The output keys of a grouped query: the labels of its cells, the
    /// product of the keys' categories, the first key varying slowest.
    pub groups: Option<Vec<String>>,
    pub text: String,
    /// The public row filter (`where`): only rows it holds for are
    /// aggregated, decided before any bounding.
    pub filter: Option<dpplan_vocab::rows::Filter>,
    /// The group keys resolved (empty: not grouped).
    pub keys: Vec<dpplan_vocab::rows::GroupKey>,
    /// `count(distinct column)`: the number of distinct values of `column`.
    pub distinct: bool,
    /// `quantile`/`quantiles`: the levels (one part each, in order) and
    /// the public candidate grid the exponential mechanism chooses from.
    pub quantile: Option<QuantileGrid>,
    /// `top(d by k, n)`: the n keys with the largest counts, one
    /// `top_k` part per rank (absent for every other query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top: Option<TopK>,
    /// `histogram(…) with total`: a second part (`cells_total`) releases
    /// the sum of the histogram's exact cells (absent: no total).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub total: bool,
    /// Keys from the data: the key column and the threshold (absent for
    /// every other query).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<Selection>,
}

/// A histogram over the values of `column` seen in the data: each key's
/// bounded count gets the part's noise and is released only when the
/// noisy count is strictly above `threshold`; released keys are sorted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selection {
    pub column: String,
    pub threshold: f64,
    /// k: the most keys one unit's rows are kept in (groups_per_unit).
    pub keys_per_unit: u64,
    /// C: the most rows of one unit kept in one key (rows_per_group).
    pub rows_per_key: u64,
    /// Upper bound on the probability that one release reveals a key
    /// only one unit has (part of `cost_per_release.delta`).
    pub release_probability: f64,
}

/// A top-k: `k` selections by the exponential mechanism over the cells
/// of `groups`, each among the cells not chosen before, scored by the
/// cells' exact counts (rows, or units per cell with `distinct`). Part i
/// picks cell j with probability ∝ exp(count_j/b) when `monotone`
/// (add/remove: every count moves the same way), else ∝ exp(count_j/(2b));
/// either way ε = Δ/b for the part's sensitivity Δ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopK {
    pub k: u64,
    pub monotone: bool,
}

/// A quantile query's levels and public candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuantileGrid {
    /// One per part, each strictly between 0 and 1.
    pub levels: Vec<f64>,
    /// Finite, strictly increasing, within the column's bounds.
    pub candidates: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    pub kind: ScheduleKind,
    /// Slots are 0..slots-1.
    pub slots: u64,
    /// Period of an `every` schedule.
    pub every_seconds: Option<f64>,
    /// Start (Unix seconds) of an `every … from … until …` schedule; an
    /// `every … for …` schedule starts at the ledger's schedule start.
    pub start: Option<i64>,
    pub text: String,
    /// `release after <duration>` of a windowed query or a cumulative
    /// count: a slot is due this many seconds after its window closes
    /// (late data within it is counted). Absent: due when it closes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_after_seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    pub statistic: Statistic,
    /// The noise; `None` (written `none`) when the statistic's sensitivity
    /// is 0 (it is public).
    #[serde(with = "dpplan_vocab::or_none")]
    pub mechanism: Option<NoiseKind>,
    /// b for the Laplace kinds, σ for the Gaussian kinds.
    pub scale: Option<f64>,
    pub l1: f64,
    pub l2: f64,
    pub coords: u64,
    /// ℓ∞ sensitivity (the most one coordinate moves), recorded for a
    /// discrete Gaussian over several coordinates (absent: not given).
    #[serde(default, skip_serializing_if = "dpplan_vocab::is_zero")]
    pub linf: f64,
    /// The statistic is computed exactly in units of 2^grid_exponent (0
    /// for the discrete kinds and for `none`); continuous noise is added
    /// to that exact value and the sum rounded to the nearest f64.
    pub grid_exponent: i32,
    pub noise_std: f64,
    pub ci95_half_width: f64,
    pub derivation: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    pub epsilon: f64,
    pub delta: f64,
    pub rho: Option<f64>,
    /// `None` (written `none`) for a release that costs nothing.
    #[serde(with = "dpplan_vocab::or_none")]
    pub accountant: Option<Accountant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Publish {
    pub name: String,
    pub source: String,
    /// `(operand, comparison, threshold)` over a released scalar.
    pub condition: Option<Condition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    pub operand: String,
    pub cmp: Comparison,
    pub value: f64,
}

impl Release {
    /// The accounting description of one release of this query (every part).
    pub fn mechanisms(&self) -> Vec<acct::Mechanism> {
        self.parts
            .iter()
            .filter_map(Part::mechanism_for_accounting)
            .collect()
    }
}

impl Part {
    pub fn mechanism_for_accounting(&self) -> Option<acct::Mechanism> {
        accounted(
            self.mechanism,
            self.scale,
            acct::Sensitivity {
                l1: self.l1,
                l2: self.l2,
                coords: self.coords,
                linf: self.linf,
            },
        )
    }
}

/// What the accountants compose for one release of a statistic with this
/// noise: `None` for a public statistic (no noise, no cost). The one
/// reading of a compiled part's noise, for the plan and for the ledger's
/// mechanism records.
pub fn accounted(
    kind: Option<NoiseKind>,
    scale: Option<f64>,
    sensitivity: acct::Sensitivity,
) -> Option<acct::Mechanism> {
    Some(acct::Mechanism {
        kind: kind?,
        scale: scale?,
        sensitivity,
    })
}

impl PlanBody {
    pub fn release(&self, name: &str) -> Option<&Release> {
        self.releases.iter().find(|r| r.name == name)
    }

    /// The plan's guarantee: its unit, the unit's id column, its adjacency.
    pub fn guarantee(&self) -> dpplan_vocab::contract::Guarantee {
        dpplan_vocab::contract::Guarantee {
            unit: self.privacy.unit,
            unit_id: self.privacy.unit_id.clone(),
            adjacency: self.privacy.adjacency,
        }
    }

    /// The plan's contract: its guarantee, and per dataset its
    /// contribution bounds, the horizon of each windowed query or tree, and
    /// each column's kind, bounds and domain (what the ledger records and
    /// an upgrade is compared against).
    pub fn contract(&self) -> dpplan_vocab::contract::Contract {
        use dpplan_vocab::contract::{ColumnContract, Contract, DatasetContract, Horizon};
        let datasets =
            self.datasets
                .iter()
                .map(|(name, d)| {
                    let horizons =
                        self.releases
                            .iter()
                            .filter(|r| &r.dataset == name)
                            .filter_map(|r| {
                                let w = r.window.clone().or_else(|| {
                                    r.cumulative.as_ref().map(Cumulative::slot_window)
                                })?;
                                Some((
                                    r.name.clone(),
                                    Horizon {
                                        time_column: w.column,
                                        windows_per_unit: w.windows_per_unit,
                                        rows_per_window: w.rows_per_window,
                                    },
                                ))
                            })
                            .collect();
                    let columns = d
                        .columns
                        .iter()
                        .map(|c| {
                            (
                                c.name.clone(),
                                ColumnContract {
                                    kind: c.ty.name().into(),
                                    bounds: c.bounds,
                                    domain: c.domain.clone(),
                                },
                            )
                        })
                        .collect();
                    (
                        name.clone(),
                        DatasetContract {
                            rows_per_unit: d.bounding.rows_per_unit,
                            groups_per_unit: d.bounding.groups_per_unit,
                            rows_per_group: d.bounding.rows_per_group,
                            horizons,
                            columns,
                        },
                    )
                })
                .collect();
        Contract {
            guarantee: self.guarantee(),
            datasets,
        }
    }
}

/// A sample rate q (`sample units`) as the percentage the run's words,
/// `--explain` and the audit print: 7, not 7.000000000000001 (q·100
/// rounded to 9 decimals).
pub fn sample_percent(q: f64) -> f64 {
    (q * 1e11).round() / 1e9
}

/// SHA-256 in lower-case hex: source and body hashes, and the ledger's
/// hash chain.
pub fn sha256_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(64);
    for b in Sha256::digest(bytes) {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// The canonical JSON of a body: compact serde_json of the typed body
/// (fields in declaration order, maps sorted, floats in shortest
/// round-trip form).
pub fn canonical_json(body: &PlanBody) -> String {
    // Invariant: the body is plain structs with string keys; serde_json only
    // fails on non-string map keys or a failing writer, neither possible here.
    serde_json::to_string(body).expect("a plan body always serialises")
}

pub fn body_hash(body: &PlanBody) -> String {
    sha256_hex(canonical_json(body).as_bytes())
}

/// The file text: pretty JSON and a final newline.
pub fn to_json(plan: &ExecutablePlan) -> String {
    // Invariant: as in `canonical_json`.
    let mut s = serde_json::to_string_pretty(plan).expect("a plan always serialises");
    s.push('\n');
    s
}

/// Why a plan file was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LoadError {
    #[error("not an executable plan (invalid JSON: {0})")]
    NotJson(String),
    #[error("not an executable plan of this version: {0}")]
    WrongFormat(String),
    #[error("the plan was modified after compilation: its body hashes to {actual}, not to the recorded {stated}; recompile it with `dpplan compile`")]
    HashMismatch { stated: String, actual: String },
    #[error("the plan's embedded source does not match its recorded SHA-256; recompile it with `dpplan compile`")]
    SourceHashMismatch,
    #[error("the plan is not what `dpplan compile` produces from its source: {0}; recompile it")]
    Recompiled(String),
}

/// Parses a plan file and verifies what the file alone can show: format
/// and version, body hash, source hash, and the compiler's version.
/// `dpplan_compile::load` adds that recompiling the embedded source gives
/// exactly this body; the runtime is handed only plans loaded by it.
pub fn parse(text: &str) -> Result<ExecutablePlan, LoadError> {
    let plan: ExecutablePlan = serde_json::from_str(text).map_err(|e| {
        // serde_json's messages quote field names, never values of ours.
        LoadError::NotJson(format!(
            "line {} column {}: {}",
            e.line(),
            e.column(),
            classify(&e)
        ))
    })?;
    if plan.format != FORMAT {
        return Err(LoadError::WrongFormat(format!(
            "format is `{}`, expected `{FORMAT}`",
            plan.format
        )));
    }
    if !READS.contains(&plan.format_version) {
        return Err(LoadError::WrongFormat(format!(
            "format version {} (this runtime reads versions {} to {FORMAT_VERSION})",
            plan.format_version, READS[0]
        )));
    }
    for r in &plan.body.releases {
        let ds = plan.body.datasets.get(&r.dataset).and_then(|d| d.sample);
        if r.sample != ds {
            return Err(LoadError::WrongFormat(format!(
                "release `{}` is sampled at {:?} but its dataset `{}` at {:?}",
                r.name, r.sample, r.dataset, ds
            )));
        }
    }
    if plan.format_version < 11
        && plan.body.releases.iter().any(|r| {
            r.parts
                .iter()
                .any(|p| p.mechanism == Some(NoiseKind::PermuteAndFlip))
        })
    {
        return Err(LoadError::WrongFormat(format!(
            "format version {} has no permute-and-flip (it came with version 11)",
            plan.format_version
        )));
    }
    if plan.format_version < 10
        && plan.body.releases.iter().any(|r| {
            r.cumulative
                .as_ref()
                .is_some_and(|c| !c.mechanism.is_tree())
        })
    {
        return Err(LoadError::WrongFormat(format!(
            "format version {} has no factorized cumulative counts (they came with version 10)",
            plan.format_version
        )));
    }
    if plan.format_version < 9 && plan.body.datasets.values().any(|d| d.sample.is_some()) {
        return Err(LoadError::WrongFormat(format!(
            "format version {} has no sampled datasets (they came with version 9)",
            plan.format_version
        )));
    }
    if plan.format_version < 6 && plan.policy.is_some() {
        return Err(LoadError::WrongFormat(format!(
            "format version {} has no `policy` (it came with version 6)",
            plan.format_version
        )));
    }
    let actual = body_hash(&plan.body);
    if actual != plan.body_sha256 {
        return Err(LoadError::HashMismatch {
            stated: plan.body_sha256.clone(),
            actual,
        });
    }
    if sha256_hex(plan.body.source.text.as_bytes()) != plan.body.source.sha256 {
        return Err(LoadError::SourceHashMismatch);
    }
    if plan.body.compiler != COMPILER {
        return Err(LoadError::Recompiled(format!(
            "it was compiled by `{}`, this is `{COMPILER}`",
            plan.body.compiler
        )));
    }
    Ok(plan)
}

fn classify(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match e.classify() {
        Category::Io => "I/O error".into(),
        Category::Syntax => "syntax error".into(),
        Category::Eof => "unexpected end".into(),
        // Data errors name the field or the expected type.
        Category::Data => e
            .to_string()
            .split(" at line")
            .next()
            .unwrap_or("invalid data")
            .to_string(),
    }
}
