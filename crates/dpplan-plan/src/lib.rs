//! # dpplan-plan — the executable-plan format and its compiler
//!
//! `dpplan compile` turns a plan text that checks clean into an
//! [`ExecutablePlan`]: a versioned, self-describing JSON document
//! (docs/executable-plan.md) that the runtime executes and nothing else.
//!
//! * The file carries the plan **source text** and its SHA-256, and a
//!   SHA-256 over the canonical JSON of the plan body ([`body_hash`]).
//! * [`load`] refuses a file whose body hash does not match, whose format or
//!   compiler version differs, or whose body is not exactly what compiling
//!   the embedded source gives today: a plan edited by hand (even with a
//!   recomputed hash) is refused, so what runs is what was checked.
//! * Compiling the same source twice gives byte-identical output: no
//!   timestamps, no paths, vectors in source order, maps sorted.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use dpplan_accounting as acct;
use dpplan_check::{analyze, Analysis, PlanReport, QueryReport};
use dpplan_syntax::ast;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The value of [`ExecutablePlan::format`].
pub const FORMAT: &str = "dpplan-executable-plan";
/// Bumped on any incompatible change of the body.
pub const FORMAT_VERSION: u32 = 1;
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
    /// `user`, `row` or `event`.
    pub unit: String,
    /// The id column of a user-level unit.
    pub unit_id: Option<String>,
    /// `add_remove` or `replace`.
    pub adjacency: String,
    pub budget_epsilon: f64,
    pub budget_delta: f64,
    /// As requested (`best`, `rdp`, …).
    pub accountant: String,
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
    pub accountant: String,
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
    pub invalid_rows: String,
    pub bounding: Bounding,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub name: String,
    /// `id`, `category`, `int` or `float`.
    #[serde(rename = "type")]
    pub ty: String,
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Aggregation {
    /// `count`, `sum`, `mean` or `histogram`.
    pub kind: String,
    /// The summed column.
    pub column: Option<String>,
    /// The category column of a grouped query.
    pub by: Option<String>,
    /// Clamp bounds of `column`.
    pub bounds: Option<[f64; 2]>,
    /// The output keys of a grouped query: exactly the public domain.
    pub groups: Option<Vec<String>>,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// `once`, `times` or `every`.
    pub kind: String,
    /// Slots are 0..slots-1.
    pub slots: u64,
    /// Period of an `every` schedule.
    pub every_seconds: Option<f64>,
    /// Start (Unix seconds) of an `every … from … until …` schedule; an
    /// `every … for …` schedule starts at the ledger's schedule start.
    pub start: Option<i64>,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// `count`, `sum`, `grouped_count` or `grouped_sum`.
    pub statistic: String,
    /// `laplace`, `gaussian`, `discrete_laplace`, `discrete_gaussian`, or
    /// `none` when the statistic's sensitivity is 0 (it is public).
    pub mechanism: String,
    /// b for the Laplace kinds, σ for the Gaussian kinds.
    pub scale: Option<f64>,
    pub l1: f64,
    pub l2: f64,
    pub coords: u64,
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
    pub accountant: String,
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
    pub cmp: String,
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
        let kind = acct::NoiseKind::from_name(&self.mechanism)?;
        Some(acct::Mechanism {
            kind,
            scale: self.scale?,
            sensitivity: acct::Sensitivity {
                l1: self.l1,
                l2: self.l2,
                coords: self.coords,
            },
        })
    }
}

impl PlanBody {
    pub fn release(&self, name: &str) -> Option<&Release> {
        self.releases.iter().find(|r| r.name == name)
    }
}

/// Why a plan was not compiled.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The plan has errors (render `analysis.diagnostics`).
    #[error("the plan has {} error(s): it is not compiled", .0.diagnostics.iter().filter(|d| d.is_error()).count())]
    Diagnostics(Box<Analysis>),
    /// It checks, but claims no total (it releases nothing).
    #[error("the plan claims no total guarantee ({0}): it is not compiled")]
    NoTotal(String),
    /// A construct the runtime does not execute.
    #[error("the runtime cannot execute this plan: {0}")]
    Unsupported(String),
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

/// Compiles a plan text (the file's name is not recorded).
pub fn compile(text: &str) -> Result<ExecutablePlan, CompileError> {
    let analysis = analyze(text);
    if analysis.has_errors() {
        return Err(CompileError::Diagnostics(Box::new(analysis)));
    }
    let Some(report) = analysis.report.as_ref() else {
        return Err(CompileError::NoTotal("the privacy block is missing".into()));
    };
    let Some(total) = report.total.as_ref() else {
        return Err(CompileError::NoTotal(
            report
                .total_missing
                .clone()
                .unwrap_or_else(|| "no total".into()),
        ));
    };
    if report.within_budget != Some(true) {
        return Err(CompileError::NoTotal(
            "the plan does not fit its budget".into(),
        ));
    }
    let body = build_body(text, &analysis.ast, report, total)?;
    Ok(ExecutablePlan {
        format: FORMAT.into(),
        format_version: FORMAT_VERSION,
        body_sha256: body_hash(&body),
        body,
    })
}

fn build_body(
    text: &str,
    plan: &ast::Plan,
    report: &PlanReport,
    total: &dpplan_check::TotalReport,
) -> Result<PlanBody, CompileError> {
    if plan.privacy.is_empty() {
        return Err(CompileError::NoTotal("no privacy block".into()));
    }
    let user = report.unit.kind == "user";
    let mut datasets = BTreeMap::new();
    for ds in &plan.datasets {
        let d = dataset(ds, user, report.unit.id.as_deref());
        datasets.insert(d.name.clone(), d);
    }
    let mut releases = Vec::new();
    for q in &plan.queries {
        let qr = report
            .queries
            .iter()
            .find(|r| r.name == q.name.value)
            .ok_or_else(|| {
                CompileError::Unsupported(format!("query `{}` has no checked report", q.name.value))
            })?;
        releases.push(release(q, qr, &datasets)?);
    }
    let publishes = plan
        .publishes
        .iter()
        .map(|p| Publish {
            name: p.name.value.clone(),
            source: p.source.value.clone(),
            condition: p.condition.as_ref().and_then(|c| match &c.operand {
                ast::Operand::Released { name } => Some(Condition {
                    operand: name.value.clone(),
                    cmp: c.cmp.value.clone(),
                    value: c.value.value,
                }),
                ast::Operand::Data { .. } => None,
            }),
        })
        .collect();
    Ok(PlanBody {
        compiler: COMPILER.into(),
        name: report.name.clone().unwrap_or_default(),
        source: Source {
            sha256: sha256_hex(text.as_bytes()),
            text: text.to_string(),
        },
        privacy: Privacy {
            unit: report.unit.kind.clone(),
            unit_id: report.unit.id.clone(),
            adjacency: report.adjacency.clone(),
            budget_epsilon: report.budget.epsilon,
            budget_delta: report.budget.delta,
            accountant: report.accountant_requested.clone(),
            total: Total {
                epsilon: total.epsilon,
                delta: total.delta,
                accountant: total.accountant.clone(),
                detail: total.detail.clone(),
            },
            releases: report.releases,
        },
        datasets,
        releases,
        publishes,
    })
}

fn dataset(ds: &ast::Dataset, user: bool, unit_id: Option<&str>) -> Dataset {
    let columns: Vec<Column> = ds
        .columns
        .iter()
        .map(|c| {
            let (ty, domain, bounds) = match &c.ty.value {
                ast::ColumnType::Id => ("id", None, None),
                ast::ColumnType::Category { domain } => (
                    "category",
                    match domain {
                        Some(ast::Domain::List { values }) => {
                            Some(values.iter().map(|v| v.value.clone()).collect())
                        }
                        _ => None,
                    },
                    None,
                ),
                ast::ColumnType::Int { bounds } => ("int", None, public_bounds(bounds.as_ref())),
                ast::ColumnType::Float { bounds } => {
                    ("float", None, public_bounds(bounds.as_ref()))
                }
            };
            Column {
                name: c.name.value.clone(),
                ty: ty.into(),
                domain,
                bounds,
            }
        })
        .collect();
    let contribution = ds.contributions.first();
    let first = |v: Option<&Vec<ast::Number>>| v.and_then(|v| v.first()).map(|n| n.value as u64);
    let rows = first(contribution.map(|c| &c.rows_per_unit));
    let groups = first(contribution.map(|c| &c.groups_per_unit));
    let per_group = first(contribution.map(|c| &c.rows_per_group));
    let invalid = match ds.invalid_rows.first().map(|r| r.value) {
        Some(ast::InvalidRule::Clamp) => "clamp",
        _ => "drop",
    };
    let mut steps = Vec::new();
    steps.push(match invalid {
        "clamp" => "a row with an empty or unparsable number or NaN takes the column's public lower bound (0 when unbounded); a row with an empty unit id is dropped".to_string(),
        _ => "a row with an empty unit id, or an empty or unparsable number, NaN, or a fractional int is dropped".to_string(),
    });
    if user {
        let id = unit_id.unwrap_or("id");
        steps.push(format!(
            "per `{id}`, at most rows_per_unit = {} rows are kept, chosen uniformly at random (reservoir sampling, secure seed)",
            rows.map_or("?".into(), |r| r.to_string())
        ));
        if let Some(g) = groups {
            steps.push(format!("grouped queries: per `{id}`, at most groups_per_unit = {g} groups are kept, chosen uniformly at random among the unit's kept groups"));
        }
        if let Some(g) = per_group {
            steps.push(format!("grouped queries: per `{id}` and group, at most rows_per_group = {g} rows, chosen uniformly at random"));
        }
    } else {
        steps.push("row/event-level unit: every row is a unit, no per-unit bounding".to_string());
    }
    steps.push("numbers are rounded to the release's grid 2^k and clamped to the public bounds rounded inward onto that grid".to_string());
    steps.push("grouped queries: rows whose category is outside the public domain are dropped; output keys are exactly the public domain".to_string());
    Dataset {
        name: ds.name.value.clone(),
        source: ds.sources.first().map(|s| s.value.clone()),
        columns,
        invalid_rows: invalid.into(),
        bounding: Bounding {
            per_unit: user,
            id_column: if user {
                unit_id.map(str::to_string)
            } else {
                None
            },
            rows_per_unit: if user { rows } else { None },
            groups_per_unit: if user { groups } else { None },
            rows_per_group: if user { per_group } else { None },
            steps,
        },
    }
}

fn public_bounds(b: Option<&ast::Bounds>) -> Option<[f64; 2]> {
    let b = b?;
    match (&b.lo, &b.hi) {
        (ast::Bound::Public { value: lo }, ast::Bound::Public { value: hi }) => {
            Some([lo.value, hi.value])
        }
        _ => None,
    }
}

fn release(
    q: &ast::Query,
    qr: &QueryReport,
    datasets: &BTreeMap<String, Dataset>,
) -> Result<Release, CompileError> {
    let agg = q.aggregates.first().ok_or_else(|| {
        CompileError::Unsupported(format!("query `{}` has no aggregation", q.name.value))
    })?;
    let ds = datasets.get(&agg.target.dataset.value).ok_or_else(|| {
        CompileError::Unsupported(format!(
            "query `{}` reads an undeclared dataset",
            q.name.value
        ))
    })?;
    let column = agg.target.column.as_ref().map(|c| c.value.clone());
    let by = agg.by.as_ref().map(|b| b.value.clone());
    let find = |name: &str| ds.columns.iter().find(|c| c.name == name);
    let bounds = column.as_deref().and_then(find).and_then(|c| c.bounds);
    let groups = by.as_deref().and_then(find).and_then(|c| c.domain.clone());
    let kind = agg.kind.value;
    let statistics: Vec<&str> = match (kind, by.is_some()) {
        (ast::AggKind::Count, false) => vec!["count"],
        (ast::AggKind::Sum, false) => vec!["sum"],
        (ast::AggKind::Mean, false) => vec!["sum", "count"],
        (ast::AggKind::Count | ast::AggKind::Histogram, true) => vec!["grouped_count"],
        (ast::AggKind::Sum, true) => vec!["grouped_sum"],
        (ast::AggKind::Mean, true) => vec!["grouped_sum", "grouped_count"],
        _ => {
            return Err(CompileError::Unsupported(format!(
                "`{}` is not executable",
                qr.aggregation
            )))
        }
    };
    let mut parts = Vec::new();
    for stat in &statistics {
        let Some(p) = qr.parts.iter().find(|p| p.statistic == *stat) else {
            return Err(CompileError::Unsupported(format!(
                "query `{}`: the checker reported no `{stat}` statistic",
                q.name.value
            )));
        };
        let part = match p.mechanism.kind.as_str() {
            "none" => None,
            _ => Some(p),
        };
        let part = match part {
            Some(p) => {
                let scale = p.mechanism.scale.or(p.mechanism.sigma);
                let Some(scale) = scale.filter(|s| s.is_finite() && *s > 0.0) else {
                    return Err(CompileError::Unsupported(format!("query `{}` has no resolved noise scale", q.name.value)));
                };
                let discrete = p.mechanism.kind.starts_with("discrete");
                let is_count = stat.ends_with("count");
                Part {
                    statistic: stat.to_string(),
                    mechanism: p.mechanism.kind.clone(),
                    scale: Some(scale),
                    l1: p.l1,
                    l2: p.l2,
                    coords: p.coords,
                    grid_exponent: if discrete { 0 } else { grid_exponent(scale, if is_count { None } else { bounds }) },
                    noise_std: p.noise_std,
                    ci95_half_width: p.ci95_half_width,
                    derivation: p.derivation.clone(),
                }
            }
            // A zero-sensitivity statistic (e.g. a row count under row-level
            // replace adjacency) is public: no noise, no cost.
            None => Part {
                statistic: stat.to_string(),
                mechanism: "none".into(),
                scale: None,
                l1: 0.0,
                l2: 0.0,
                coords: 1,
                grid_exponent: if stat.ends_with("count") {
                    0
                } else {
                    grid_exponent(1.0, bounds)
                },
                noise_std: 0.0,
                ci95_half_width: 0.0,
                derivation: vec!["sensitivity 0: the statistic is public under this adjacency and is released exactly".into()],
            },
        };
        parts.push(part);
    }
    let schedule = schedule(q, qr)?;
    let cost = |c: &Option<dpplan_check::CostReport>| -> Cost {
        match c {
            Some(c) => Cost {
                epsilon: c.epsilon,
                delta: c.delta,
                rho: c.rho,
                accountant: c.accountant.clone(),
            },
            None => Cost {
                epsilon: 0.0,
                delta: 0.0,
                rho: Some(0.0),
                accountant: "none".into(),
            },
        }
    };
    Ok(Release {
        name: q.name.value.clone(),
        dataset: ds.name.clone(),
        aggregation: Aggregation {
            kind: kind.as_str().into(),
            column,
            by,
            bounds,
            groups,
            text: qr.aggregation.clone(),
        },
        schedule,
        parts,
        cost_per_release: cost(&qr.per_release),
        cost_total: cost(&qr.total),
    })
}

/// The grid 2^k on which a continuous release's statistic is computed
/// exactly: fine enough that the noise's scale spans at least 2^40 steps, and coarse enough that one clamped value fits
/// in 62 bits (sums over 2^64 rows then fit in an i128). Counts stay on
/// the integers (k ≤ 0).
pub fn grid_exponent(scale: f64, bounds: Option<[f64; 2]>) -> i32 {
    let by_noise = scale.log2().floor() as i32 - 40;
    match bounds {
        None => by_noise.min(0),
        Some([lo, hi]) => {
            let m = lo.abs().max(hi.abs()).max(1.0);
            let by_range = m.log2().ceil() as i32 - 62;
            by_noise.max(by_range)
        }
    }
}

fn schedule(q: &ast::Query, qr: &QueryReport) -> Result<Schedule, CompileError> {
    let s = q.schedules.first().ok_or_else(|| {
        CompileError::Unsupported(format!("query `{}` has no schedule", q.name.value))
    })?;
    let (kind, every, start) = match &s.value {
        ast::Schedule::Once => ("once", None, None),
        ast::Schedule::Times { .. } => ("times", None, None),
        ast::Schedule::EveryFor { every, .. } => (
            "every",
            Some(every.amount.value * every.unit.seconds()),
            None,
        ),
        ast::Schedule::EveryRange { every, from, .. } => (
            "every",
            Some(every.amount.value * every.unit.seconds()),
            dpplan_check::schedule::parse_date(&from.value),
        ),
    };
    Ok(Schedule {
        kind: kind.into(),
        slots: qr.releases,
        every_seconds: every,
        start,
        text: qr.schedule.clone(),
    })
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

/// Parses and verifies a plan file: format and version, body hash, source
/// hash, and that recompiling the embedded source gives exactly this body.
pub fn load(text: &str) -> Result<ExecutablePlan, LoadError> {
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
    if plan.format_version != FORMAT_VERSION {
        return Err(LoadError::WrongFormat(format!(
            "format version {} (this runtime reads version {FORMAT_VERSION})",
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
    let again =
        compile(&plan.body.source.text).map_err(|e| LoadError::Recompiled(e.to_string()))?;
    if again.body != plan.body {
        return Err(LoadError::Recompiled("the compiled body differs".into()));
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

#[cfg(test)]
mod tests;
