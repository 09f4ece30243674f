//! # dpplan-audit — `dpplan audit`: measures what the executed release path leaks
//!
//! For each audited release, D and D′ are built the way the plan's
//! adjacency defines neighbours ([`neighbour`]); the real engine computes
//! their exact bounded aggregates once; then the real release path (the
//! same samplers and post-processing as `dpplan run`, with no ledger) is
//! run N times on each, each output is scored by every distinguisher
//! ([`distinguish`]), a threshold is chosen on the first half of the runs
//! and its error rates on the second half become a lower bound on ε with
//! exact confidence ([`stats`]). Everything else a user observes (errors,
//! the number and labels of the cells, the mechanism) must be identical on
//! D and D′.
//!
//! An audit gives a *lower* bound: a passing audit is no proof of privacy
//! and does not replace the accountant (docs/audit.md).

pub mod distinguish;
#[cfg(feature = "audit-faults")]
pub mod faults;
pub mod neighbour;
mod runs;
pub mod stats;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

use dpplan_plan::{Dataset, ExecutablePlan, Release};
use dpplan_vocab::AggKind;
use serde::Serialize;

use distinguish::{Centres, Distinguisher};
use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, EngineError, IoError};
use dpplan_noise::round_dyadic;
use dpplan_runtime::window;
use dpplan_runtime::{RunError, RunOptions};

/// The version of the audit's JSON (`dpplan audit --format json`, read
/// back by `dpplan report --audit`).
pub const FORMAT_VERSION: u32 = 1;

/// The most runs per side: the scores are kept in memory (8 bytes per run,
/// side and distinguisher: 3.2 GB at this many).
pub const MAX_RUNS: u64 = 100_000_000;

/// What `dpplan audit` was asked to do.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// Dataset name → CSV path (overrides the plan's `source`).
    pub data: BTreeMap<String, PathBuf>,
    /// Where the plan's relative `source` paths are resolved.
    pub base_dir: Option<PathBuf>,
    /// Only these releases (default: every release of the plan).
    pub queries: Vec<String>,
    /// Runs on D and as many on D′.
    pub runs: u64,
    /// Joint confidence of each release's measured bound.
    pub confidence: f64,
    /// A fixed seed (reproducible tests); `None`: the operating system's.
    pub seed: Option<u64>,
    /// Threads drawing the runs (default: one per core).
    pub threads: Option<usize>,
    /// A deliberately broken mechanism (tests only).
    #[cfg(feature = "audit-faults")]
    pub fault: Option<faults::Fault>,
}

impl Default for AuditOptions {
    fn default() -> Self {
        AuditOptions {
            data: BTreeMap::new(),
            base_dir: None,
            queries: Vec::new(),
            runs: 100_000,
            confidence: 0.95,
            seed: None,
            threads: None,
            #[cfg(feature = "audit-faults")]
            fault: None,
        }
    }
}

/// What an audit of a release (or of a plan) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No measured bound above its claim, D and D′ behave alike, and the
    /// tests could tell D from D′ (their exact cells differ).
    Passed,
    /// A measured bound above its claim, or a data-dependent branch.
    Failed,
    /// Nothing failed, but nothing could: D and D′ give the same exact
    /// cells (identical neighbours, a canary the filter drops), so every
    /// test scores them alike and the audit shows nothing about the
    /// release.
    Inconclusive,
}

impl Verdict {
    /// The verdict of several audits: failed if one failed, else
    /// inconclusive if one was, else passed.
    pub fn of(all: impl IntoIterator<Item = Verdict>) -> Verdict {
        all.into_iter().fold(Verdict::Passed, |a, b| match (a, b) {
            (Verdict::Failed, _) | (_, Verdict::Failed) => Verdict::Failed,
            (Verdict::Inconclusive, _) | (_, Verdict::Inconclusive) => Verdict::Inconclusive,
            _ => Verdict::Passed,
        })
    }
}

/// One distinguisher's outcome on one release.
#[derive(Debug, Clone, Serialize)]
pub struct TestResult {
    pub distinguisher: Distinguisher,
    /// Chosen on the first half of the runs.
    pub threshold: stats::Threshold,
    /// Runs on D′ answered "D" and runs on D answered "D′", among
    /// `evaluated` runs on each (the second half).
    pub false_positives: u64,
    pub false_negatives: u64,
    pub evaluated: u64,
    pub alpha_upper: f64,
    pub beta_upper: f64,
    /// The lower bound on ε this test gives.
    pub epsilon_lower_bound: f64,
}

/// The audit of one release.
#[derive(Debug, Clone, Serialize)]
pub struct QueryAudit {
    pub query: String,
    /// The accountant's ε of one release, at `delta`.
    pub claimed_epsilon: f64,
    pub delta: f64,
    /// The largest lower bound of the tests (0 when none could run).
    pub measured_epsilon: f64,
    pub tests: Vec<TestResult>,
    /// How D and D′ were built.
    pub neighbours: String,
    /// The largest change of one cell's exact value between D and D′.
    pub max_cell_change: f64,
    /// Whatever else a user observes that differed between D and D′
    /// (errors, cells, mechanism): each a data-dependent branch.
    pub behaviour_differences: Vec<String>,
    /// Notes on the audit's power (a canary the filter drops, …).
    pub notes: Vec<String>,
    pub releases_per_minute: f64,
    pub verdict: Verdict,
    /// `verdict` is passed.
    pub passed: bool,
}

/// What was executed once and what on every run.
#[derive(Debug, Clone, Serialize)]
pub struct Executed {
    pub once: Vec<String>,
    pub every_run: Vec<String>,
    pub never: Vec<String>,
}

/// The audit of a plan (`dpplan audit`).
#[derive(Debug, Clone, Serialize)]
pub struct AuditReport {
    pub format: String,
    pub format_version: u32,
    pub plan: String,
    pub plan_sha256: String,
    pub runs: u64,
    pub confidence: f64,
    pub executed: Executed,
    pub queries: Vec<QueryAudit>,
    /// [`Verdict::of`] the releases' verdicts.
    pub verdict: Verdict,
    /// `verdict` is passed.
    pub passed: bool,
}

fn executed(sampled: bool) -> Executed {
    let mut every_run = vec![
        "the noise of every part, drawn by the runtime's samplers from a fresh stream of a ChaCha20 generator".into(),
        "the release's post-processing as `dpplan run` publishes it (rounding, a mean's quotient and clamp, the cells)".into(),
    ];
    if sampled {
        every_run.insert(
            0,
            "a sampled release's coin for the canary (the engine's own rule, `sample_coin`: in D's sample with probability ⌊q·2⁶⁴⌋/2⁶⁴), D's exact aggregates with the canary or D′'s without it".into(),
        );
    }
    Executed {
        once: vec![
            "reading each dataset's CSV and building D and D′".into(),
            "the engine's bounding and exact aggregation of D and of D′ (one pass each, the same engine as `dpplan run`; a sampled dataset's every unit but the canary kept, the same in D and D′)".into(),
        ],
        every_run,
        never: vec!["the ledger (never opened)".into()],
    }
}

/// Audits every selected release of `plan` (all of them without
/// `queries`).
pub fn audit(plan: &ExecutablePlan, opts: &AuditOptions) -> Result<AuditReport, RunError> {
    if !(opts.confidence > 0.0 && opts.confidence < 1.0) {
        return Err(RunError::Data(format!(
            "the confidence must lie strictly between 0 and 1, not {}",
            opts.confidence
        )));
    }
    if !(2..=MAX_RUNS).contains(&opts.runs) {
        return Err(RunError::Data(format!(
            "an audit takes from 2 to {MAX_RUNS} runs on each data set, not {}",
            opts.runs
        )));
    }
    for q in &opts.queries {
        if plan.body.release(q).is_none() {
            return Err(RunError::Data(format!(
                "the plan has no release `{q}` (a `publish` re-publishes a release and is audited with it)"
            )));
        }
    }
    // the releases audited: every one, or those of --query
    let selected: Vec<&Release> = plan
        .body
        .releases
        .iter()
        .filter(|r| opts.queries.is_empty() || opts.queries.contains(&r.name))
        .collect();
    dpplan_runtime::cumulative::refuse(selected.iter().copied(), "`dpplan audit`")?;
    let mut rng = match opts.seed {
        Some(s) => SecureRng::from_seed_for_tests(s),
        None => SecureRng::from_os().map_err(RunError::Rng)?,
    };
    let mut queries = Vec::new();
    for r in &selected {
        queries.push(audit_release(plan, r, opts, &mut rng)?);
    }
    Ok(AuditReport {
        format: "dpplan-audit".into(),
        format_version: FORMAT_VERSION,
        plan: plan.body.name.clone(),
        plan_sha256: plan.body_sha256.clone(),
        runs: opts.runs,
        confidence: opts.confidence,
        executed: executed(selected.iter().any(|r| r.sample.is_some())),
        verdict: Verdict::of(queries.iter().map(|q| q.verdict)),
        passed: queries.iter().all(|q| q.passed),
        queries,
    })
}

#[cfg(feature = "audit-faults")]
fn fault(opts: &AuditOptions) -> Option<faults::Fault> {
    opts.fault
}

/// The dataset the engine reads and the release whose noise is drawn: the
/// plan's own, or a faulty one in tests.
fn mechanism(ds: &Dataset, r: &Release, _opts: &AuditOptions) -> (Dataset, Release) {
    #[cfg(feature = "audit-faults")]
    return (
        faults::dataset(ds, fault(_opts)),
        faults::release(r, fault(_opts)),
    );
    #[cfg(not(feature = "audit-faults"))]
    (ds.clone(), r.clone())
}

fn read_data(ds: &Dataset, opts: &AuditOptions) -> Result<Vec<u8>, RunError> {
    let run = RunOptions {
        data: opts.data.clone(),
        base_dir: opts.base_dir.clone(),
        ..RunOptions::default()
    };
    let path = dpplan_runtime::requests::source_path(ds, &run)?;
    // a CSV file's bytes, or a Parquet / Arrow source's CSV text
    let mut data = Vec::new();
    let mut source = dpplan_engine::open_source(ds, &path).map_err(RunError::Engine)?;
    std::io::Read::read_to_end(&mut source, &mut data)
        .map(|_| data)
        .map_err(|e| {
            RunError::Engine(EngineError::Io(
                IoError::new(format!(
                    "cannot read the data of dataset `{}` at {}: {e}",
                    ds.name,
                    path.display()
                ))
                .with_source(e),
            ))
        })
}

/// Exact aggregates by (release, part), as `draw` reads them.
type Exact = BTreeMap<(String, usize), Vec<i128>>;

/// The exact aggregates of D and D′, or the behaviour difference when the
/// engine answers differently on them.
fn exact_pair(
    ds: &Dataset,
    r: &Release,
    nb: &neighbour::Neighbours,
    opts: &AuditOptions,
    rng: &mut SecureRng,
) -> Result<Result<(Exact, Exact), String>, RunError> {
    let stats = dpplan_runtime::requests::release_statistics(r)?;
    let engine = CsvEngine;
    let windowed = in_window(ds, r, nb, rng)?;
    let (ds, on_d, on_dp) = match &windowed {
        Some((w, d, dp)) => (w, d.as_slice(), dp.as_slice()),
        None => (ds, nb.d.as_slice(), nb.dp.as_slice()),
    };
    let d = engine.aggregate_reader(ds, on_d, &stats, rng);
    let dp = engine.aggregate_reader(ds, on_dp, &stats, rng);
    #[cfg(feature = "audit-faults")]
    let (d, dp) = (
        faults::refusal(ds, &nb.d, fault(opts)).map_or(d, Err),
        faults::refusal(ds, &nb.dp, fault(opts)).map_or(dp, Err),
    );
    let (d, dp) = match (d, dp) {
        (Ok(d), Ok(dp)) => (d, dp),
        (Err(a), Err(b)) if a.to_string() == b.to_string() => return Err(a.into()),
        (a, b) => {
            let say = |x: &Result<Vec<Vec<i128>>, EngineError>| match x {
                Ok(_) => "released".to_string(),
                Err(e) => format!("error: {e}"),
            };
            return Ok(Err(format!(
                "the engine answered differently: on D {}, on D′ {}",
                say(&a),
                say(&b)
            )));
        }
    };
    #[cfg(feature = "audit-faults")]
    let d = faults::exact_d(d, &dp, fault(opts));
    #[cfg(not(feature = "audit-faults"))]
    let _ = opts;
    let key = |v: Vec<Vec<i128>>| -> Exact {
        v.into_iter()
            .enumerate()
            .map(|(i, x)| ((r.name.clone(), i), x))
            .collect()
    };
    Ok(Ok((key(d), key(dp))))
}

/// The dataset bounded per window, and D's and D′'s rows in the window.
type Windowed = (Dataset, Vec<u8>, Vec<u8>);

/// A windowed release reads one window: the dataset bounded per window and
/// the rows of D and D′ in the canary's window ([`window::CANARY_TIME`] and
/// the window's length), selected by the run's own code ([`window::select`],
/// with a unit key of this audit's own). No ledger, so no unit is yet at
/// its `windows_per_unit` bound. One window is a projection of the vector
/// release the claim is about, so its measured bound is a lower bound for
/// the claim too. `None` for a release without a window.
fn in_window(
    ds: &Dataset,
    r: &Release,
    nb: &neighbour::Neighbours,
    rng: &mut SecureRng,
) -> Result<Option<Windowed>, RunError> {
    let Some(w) = &r.window else {
        return Ok(None);
    };
    let range = window::parse_time(neighbour::CANARY_TIME.as_bytes())
        .and_then(|t| window::bounds(t, w.seconds, 0))
        .ok_or_else(|| {
            RunError::Data(format!(
                "`{}`: the window is not a whole number of seconds",
                r.name
            ))
        })?;
    let key = ds
        .bounding
        .per_unit
        .then(|| window::UnitKey::ephemeral(rng));
    let none = BTreeSet::new();
    let pick = |bytes: &[u8]| -> Result<Vec<u8>, RunError> {
        Ok(window::select(ds, r, bytes, range, &none, key.as_ref())?.csv)
    };
    Ok(Some((
        window::window_dataset(ds, r),
        pick(&nb.d)?,
        pick(&nb.dp)?,
    )))
}

/// The cells a release publishes without noise.
fn centres(r: &Release, exact: &Exact) -> Vec<f64> {
    let part = |i: usize| exact.get(&(r.name.clone(), i)).cloned().unwrap_or_default();
    let k = |i: usize| r.parts.get(i).map_or(0, |p| p.grid_exponent as i64);
    let value = |x: i128, k: i64| round_dyadic(&dashu_int::IBig::from(x), k);
    if r.aggregation.kind == AggKind::Mean {
        let [lo, hi] = r
            .aggregation
            .bounds
            .unwrap_or([f64::NEG_INFINITY, f64::INFINITY]);
        return part(0)
            .iter()
            .zip(part(1))
            .map(|(&s, c)| (value(s, k(0)) / value(c, k(1)).max(1.0)).clamp(lo, hi))
            .collect();
    }
    let mut out: Vec<f64> = part(0).iter().map(|&x| value(x, k(0))).collect();
    if r.aggregation.total {
        // a histogram's total: the last cell, the sum of the exact cells
        out.push(value(part(0).iter().sum(), k(0)));
    }
    out
}

fn audit_release(
    plan: &ExecutablePlan,
    r: &Release,
    opts: &AuditOptions,
    rng: &mut SecureRng,
) -> Result<QueryAudit, RunError> {
    let ds = plan
        .body
        .datasets
        .get(&r.dataset)
        .ok_or_else(|| RunError::Data(format!("the plan has no dataset `{}`", r.dataset)))?;
    let data = read_data(ds, opts)?;
    let nb = neighbour::neighbours(ds, r, plan.body.privacy.adjacency, &data)?;
    let (mut engine_ds, noisy) = mechanism(ds, r, opts);
    // a sampled release: the exact aggregates of D and D′ on every unit,
    // the canary's coin drawn on each run on D (runs::draw)
    let sample = dpplan_engine::sample_threshold(&engine_ds).map_err(RunError::Engine)?;
    engine_ds.sample = None;
    let mut q = new_query(r, &nb);
    if let Some(t) = sample {
        q.neighbours += &format!(
            "; a sampled release (sample units {} %): on each run on D the canary is in the sample by the engine's coin (probability {t}/2⁶⁴), else the run reads D′'s aggregates; the other units are kept, the same in D and D′ (the amplification holds for any sample of them)",
            dpplan_plan::sample_percent(ds.sample.unwrap_or(1.0))
        );
    }
    if let Some(w) = &r.window {
        q.neighbours += &format!(
            "; a windowed release: one window of {} s (the canary's), its rows selected and bounded per window (rows_per_window = {}) by the run's own code, no ledger state",
            w.seconds, w.rows_per_window
        );
    }
    let (exact_d, exact_dp) = match exact_pair(&engine_ds, r, &nb, opts, rng)? {
        Ok(x) => x,
        Err(diff) => {
            q.behaviour_differences.push(diff);
            q.verdict = Verdict::Failed;
            q.passed = false;
            return Ok(q);
        }
    };
    let c = Centres {
        d: centres(r, &exact_d),
        dp: centres(r, &exact_dp),
    };
    q.max_cell_change =
        c.d.iter()
            .zip(&c.dp)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
    if q.max_cell_change == 0.0 {
        q.notes.push(
            "D and D′ give the same exact statistic: no test can tell them apart, so the audit is inconclusive on this release".into(),
        );
    }
    let started = Instant::now();
    let drawn = runs::draw(r, &noisy, &c, (&exact_d, &exact_dp), sample, opts, rng)?;
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    q.releases_per_minute = (2 * opts.runs) as f64 / secs * 60.0;
    measure(&mut q, r, drawn, opts.confidence);
    Ok(q)
}

/// The audit of `r` before anything ran.
fn new_query(r: &Release, nb: &neighbour::Neighbours) -> QueryAudit {
    let mut notes = Vec::new();
    if !nb.passes_filter {
        notes.push("the canary does not pass the query's filter: it moves no statistic (under replace, only the removal of the replaced unit's rows tells D from D′)".into());
    }
    QueryAudit {
        query: r.name.clone(),
        claimed_epsilon: r.cost_per_release.epsilon,
        delta: r.cost_per_release.delta,
        measured_epsilon: 0.0,
        tests: Vec::new(),
        neighbours: nb.description.clone(),
        max_cell_change: 0.0,
        behaviour_differences: Vec::new(),
        notes,
        releases_per_minute: 0.0,
        verdict: Verdict::Passed,
        passed: true,
    }
}

/// Every distinguisher's bound from the runs, at joint `confidence`
/// (Bonferroni over two rates per distinguisher), and the verdict.
fn measure(q: &mut QueryAudit, r: &Release, drawn: runs::Runs, confidence: f64) {
    q.behaviour_differences.extend(drawn.differences);
    let dists = Distinguisher::for_release(r);
    let gamma = (1.0 - confidence) / (2 * dists.len()) as f64;
    for (i, d) in dists.into_iter().enumerate() {
        q.tests
            .push(evaluate(d, &drawn.d[i], &drawn.dp[i], q.delta, gamma));
    }
    q.measured_epsilon = q
        .tests
        .iter()
        .map(|t| t.epsilon_lower_bound)
        .fold(0.0, f64::max);
    q.verdict = if q.measured_epsilon > q.claimed_epsilon || !q.behaviour_differences.is_empty() {
        Verdict::Failed
    } else if q.max_cell_change == 0.0 {
        // every distinguisher scores a run from the cells and the exact
        // cells of D and D′: with those equal, its scores on D and on D′
        // have one distribution, whatever the mechanism does
        Verdict::Inconclusive
    } else {
        Verdict::Passed
    };
    q.passed = q.verdict == Verdict::Passed;
}

/// One distinguisher: threshold on the first half, errors on the second.
fn evaluate(d: Distinguisher, on_d: &[f64], on_dp: &[f64], delta: f64, gamma: f64) -> TestResult {
    let (sel_d, ev_d) = on_d.split_at(on_d.len() / 2);
    let (sel_dp, ev_dp) = on_dp.split_at(on_dp.len() / 2);
    let th = stats::select_threshold(sel_d, sel_dp, delta, gamma);
    let (fp, fneg) = stats::errors(th, ev_d, ev_dp);
    let n = ev_d.len().min(ev_dp.len()) as u64;
    let b = stats::epsilon_lower_bound(
        fp,
        ev_dp.len() as u64,
        fneg,
        ev_d.len() as u64,
        delta,
        gamma,
    );
    TestResult {
        distinguisher: d,
        threshold: th,
        false_positives: fp,
        false_negatives: fneg,
        evaluated: n,
        alpha_upper: b.alpha_upper,
        beta_upper: b.beta_upper,
        epsilon_lower_bound: b.epsilon,
    }
}
