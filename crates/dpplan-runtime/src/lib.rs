//! # dpplan-runtime — runs a compiled plan on real data
//!
//! [`run`] loads nothing itself: it takes an [`ExecutablePlan`] that
//! `dpplan_compile::load` verified, decides which releases are due, computes
//! their exact bounded aggregates with an [`dpplan_engine::Engine`], and for each
//! release follows the ledger protocol: intent (charged, durable) → exact
//! noise (`dpplan_noise`) → value (durable) → publish. Re-publications and
//! slots already released are served from the [`ledger::Ledger`], never
//! drawn again.
#![forbid(unsafe_code)]

pub mod requests;
pub use requests::{
    planned_aggregates, planned_keys, planned_windows, Planned, PlannedKeys, PlannedWindow,
};
mod published;
mod results;
pub use results::{results_csv, Cell, RUN_FORMAT, RUN_FORMAT_VERSION};
mod budgets;
pub mod cumulative;
pub mod ledger;
pub mod quantile;
pub mod schedule;
mod selection;
pub mod top;
pub mod tree;
pub mod window;

use std::collections::BTreeMap;
use std::path::PathBuf;

use dpplan_plan::{ExecutablePlan, Release};
use dpplan_vocab::{AggKind, Comparison, ScheduleKind};

pub use schedule::{status, ReleaseStatus, Skipped, Status};
use serde::{Deserialize, Serialize};

use dpplan_engine::rng::SecureRng;
use dpplan_engine::Engine;
use dpplan_noise::Noise;
use ledger::{Genesis, Ledger, LedgerError, SlotState};
pub(crate) use published::fresh_result;

/// Hooks for fault-injection tests, compiled only with the `test-hooks`
/// feature (never in a release build of `dpplan`).
pub mod test_hooks {
    /// Milliseconds to sleep between a release's intent and its value, so
    /// that a test can kill the process in between.
    pub const PAUSE_ENV: &str = "DPPLAN_TEST_PAUSE_AFTER_INTENT_MS";

    #[cfg(feature = "test-hooks")]
    pub(crate) fn pause_after_intent() {
        if let Some(ms) = std::env::var(PAUSE_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
    }

    #[cfg(not(feature = "test-hooks"))]
    pub(crate) fn pause_after_intent() {}
}

/// What `dpplan run` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Dataset name → CSV path (overrides the plan's `source`).
    pub data: BTreeMap<String, PathBuf>,
    /// Where the plan's relative `source` paths are resolved.
    pub base_dir: Option<PathBuf>,
    /// Run this slot of every selected release.
    pub slot: Option<u64>,
    /// Unix seconds (default: now) for `every` schedules.
    pub at: Option<i64>,
    /// Only these releases (default: every release of the plan).
    pub queries: Vec<String>,
    pub ledger: PathBuf,
    /// Move the ledger to this plan (history + new plan must fit).
    pub upgrade: bool,
    /// Start of `every … for …` schedules when the ledger is created
    /// (default: the creation time).
    pub start: Option<i64>,
    /// A latest hash the operator kept from an earlier run: the ledger must
    /// contain it (detects a cut-off tail even without the anchor file).
    pub expect_hash: Option<String>,
    /// Allow an upgrade to a plan with a larger budget.
    pub raise_budget: bool,
    /// Accept an `at` later than this machine's clock (a test clock):
    /// without it such a time is refused, so that nothing releases the
    /// future by accident.
    pub test_clock: bool,
    /// The sign-offs the policy in force requires before anything is
    /// released, every one of them (checked on the verified ledger, before
    /// any entry is written).
    pub signoff: Vec<ledger::SignoffRule>,
    /// The shared budgets of the policy in force that keep a budget
    /// ledger: each fresh release on one of their sources is charged to
    /// it before its noise is drawn ([`ledger::budget`]).
    pub budgets: Vec<ledger::budget::SharedBudget>,
}

/// Where a published value comes from; serialised as its name (`fresh`,
/// `ledger`, `republished`), in the JSON output, the CSV and the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Drawn by this run.
    Fresh,
    /// Served from the ledger (released by an earlier run).
    Ledger,
    /// A `publish` of a released value: post-processing, free.
    Republished,
}

impl Origin {
    /// The name, as serialised.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Fresh => "fresh",
            Origin::Ledger => "ledger",
            Origin::Republished => "republished",
        }
    }
}

/// One release as published (and as stored in the ledger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseResult {
    pub query: String,
    pub slot: u64,
    pub origin: Origin,
    pub republished_from: Option<String>,
    pub aggregation: String,
    pub mechanism: String,
    /// Charged by this run (0 unless fresh).
    pub epsilon: f64,
    pub delta: f64,
    pub cells: Vec<Cell>,
    /// True when the interval is a delta-method approximation (means).
    pub approximate_interval: bool,
    pub ledger_seq: Option<i64>,
    /// Corrections appended to the ledger for this value (served values
    /// only): the value is still the one released, but a reviewer flagged
    /// it.
    #[serde(default)]
    pub corrections: Vec<CorrectionNote>,
    /// A window (or a tree's slot) that closed before the one due on time
    /// and was released late, by this run: a backfill.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backfilled: bool,
}

/// A correction on a released value, as recorded in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectionNote {
    /// The correction's ledger entry, and the entry it corrects.
    pub seq: i64,
    pub corrects: i64,
    pub reason: String,
    pub time: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    pub query: String,
    pub slot: Option<u64>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutput {
    /// [`RUN_FORMAT`].
    pub format: &'static str,
    /// [`RUN_FORMAT_VERSION`].
    pub format_version: u32,
    pub plan: String,
    pub plan_sha256: String,
    pub results: Vec<ReleaseResult>,
    pub refused: Vec<Refusal>,
    pub ledger: String,
    pub ledger_entries: i64,
    /// Keep it outside the ledger: a cut-off tail is detected against it.
    pub ledger_latest_hash: String,
    pub upgraded: bool,
    /// What the upgrade recorded (old and new budget, the history and the
    /// new plan composed), when this run upgraded the ledger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upgrade: Option<ledger::UpgradeValue>,
    /// When nothing was due because every selected release's schedule is
    /// over: when the last one ended (UTC, RFC 3339): the end of its last
    /// period for an `every` schedule, its last release for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_ended: Option<String>,
    /// Periods of `every` schedules of fresh releases that passed without
    /// a run: recorded in the ledger as skipped, never released.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Engine(#[from] dpplan_engine::EngineError),
    #[error("{0}")]
    Data(String),
    #[error(transparent)]
    Rng(dpplan_engine::rng::RngError),
    #[error(transparent)]
    Noise(dpplan_noise::NoiseError),
    /// A first run failed before anything was charged: no ledger was
    /// created, so the schedule's start is not fixed yet.
    #[error("{0}; no ledger was created")]
    NoLedgerCreated(Box<RunError>),
}

impl RunError {
    /// True for input/output failures (a data file that cannot be opened or
    /// read, a file next to the ledger that cannot be written): exit code 2
    /// in the CLI, like every other IO error.
    pub fn is_io(&self) -> bool {
        match self {
            RunError::NoLedgerCreated(e) => e.is_io(),
            e => matches!(
                e,
                RunError::Engine(dpplan_engine::EngineError::Io(_))
                    | RunError::Ledger(LedgerError::Io(_))
            ),
        }
    }
}

/// The earliest and latest times a run accepts (0001-01-01T00:00:00Z and
/// 9999-12-31T23:59:59Z, in Unix seconds): every difference of two of them
/// fits an `i64`, so no schedule computation can overflow.
pub const MIN_TIME: i64 = -62_135_596_800;
pub const MAX_TIME: i64 = 253_402_300_799;

/// Refuses a time outside [`MIN_TIME`, `MAX_TIME`].
pub fn check_time(what: &str, t: i64) -> Result<i64, RunError> {
    if (MIN_TIME..=MAX_TIME).contains(&t) {
        Ok(t)
    } else {
        Err(RunError::Ledger(LedgerError::Time(format!(
            "{what} {t} is outside the years 1–9999 (Unix seconds {MIN_TIME} to {MAX_TIME})"
        ))))
    }
}

/// The time of a run: `--at`, or the machine's clock. A time later than
/// the clock is refused unless the caller asked for a test clock.
pub(crate) fn run_time(opts: &RunOptions) -> Result<i64, RunError> {
    let now = ledger::now_unix();
    let at = check_time("--at", opts.at.unwrap_or(now))?;
    if at > now && !opts.test_clock {
        return Err(RunError::Ledger(LedgerError::Time(format!(
            "--at {} is later than this machine's clock ({}): a run never releases the future (every window that closes before that time would be released now); pass --test-clock to run on a test clock",
            ledger::unix_rfc3339(at),
            ledger::unix_rfc3339(now)
        ))));
    }
    Ok(at)
}

/// Nothing is charged or served from a ledger that fails
/// [`Ledger::integrity_for_run`] (triggers, chain, anchor, the operator's
/// expected hash; from the anchor's checkpoint when it holds, else the
/// whole ledger); one that passes is re-anchored, with its new checkpoint.
fn verified(ledger: Ledger, expect_hash: Option<&str>) -> Result<Ledger, RunError> {
    ledger.integrity_for_run(expect_hash)?;
    ledger.anchor()?;
    Ok(ledger)
}

/// Refuses a ledger that belongs to another plan.
fn same_plan(ledger: &Ledger, plan: &ExecutablePlan) -> Result<(), RunError> {
    let current = ledger.plan_hash()?;
    if current != plan.body_sha256 {
        return Err(RunError::Ledger(LedgerError::PlanMismatch {
            ledger: current,
            plan: plan.body_sha256.clone(),
        }));
    }
    Ok(())
}

/// Step 1: the existing ledger, verified and (with `--upgrade`) moved to
/// this plan; `None` when there is none yet.
fn open_existing(
    plan: &ExecutablePlan,
    opts: &RunOptions,
) -> Result<(Option<Ledger>, Option<ledger::UpgradeValue>), RunError> {
    if !opts.ledger.exists() {
        if opts.expect_hash.is_some() {
            return Err(RunError::Ledger(LedgerError::Damaged {
                seq: None,
                why: format!(
                    "`{}` does not exist, but an expected hash was given",
                    opts.ledger.display()
                ),
            }));
        }
        ledger::refuse_orphan_anchor(&opts.ledger)?;
        if let Some(rule) = opts.signoff.first() {
            return Err(RunError::Ledger(LedgerError::Signoff(format!(
                "the policy `{}` requires {} sign-off(s) by its reviewers of a frozen report of this plan before anything is released, and the ledger `{}` does not exist yet: freeze the plan's report into it (`dpplan report PLAN.dpplan --freeze --ledger {} --start …`), have it signed (`dpplan ledger sign`), then run",
                rule.policy,
                rule.required,
                opts.ledger.display(),
                opts.ledger.display()
            ))));
        }
        return Ok((None, None));
    }
    let mut l = verified(
        Ledger::open(&opts.ledger, None)?,
        opts.expect_hash.as_deref(),
    )?;
    // Before anything is written (an upgrade entry included): the sign-offs
    // the policy requires, of this very plan.
    for rule in &opts.signoff {
        l.signed_by(rule, &plan.body_sha256)?;
    }
    let mut upgrade = None;
    if l.plan_hash()? == plan.body_sha256 {
        // a ledger of an earlier dpplan: its state bound to the chain now
        l.bind_state(plan)?;
    } else {
        if !opts.upgrade {
            same_plan(&l, plan)?;
        }
        upgrade = l.upgrade(plan, opts.raise_budget)?;
    }
    Ok((Some(l), upgrade))
}

/// Step 4 of a first run: creates the ledger (or opens the one another run
/// created a moment earlier, verified like any existing ledger). `None`
/// when that other run fixed a different schedule start "now" by its clock:
/// what is due then follows the ledger's start, so the caller plans again.
fn create(
    plan: &ExecutablePlan,
    opts: &RunOptions,
    ledger_start: i64,
) -> Result<Option<Ledger>, RunError> {
    let l = verified(
        Ledger::open(
            &opts.ledger,
            Some(Genesis {
                plan_hash: &plan.body_sha256,
                budget: ledger::Budget {
                    epsilon: plan.body.privacy.budget_epsilon,
                    delta: plan.body.privacy.budget_delta,
                },
                schedule_start: ledger_start,
                contract: plan.body.contract(),
            }),
        )?,
        None,
    )?;
    same_plan(&l, plan)?;
    if l.open_info()?.schedule_start == ledger_start {
        return Ok(Some(l));
    }
    if opts.start.is_some() {
        return Err(RunError::Data(
            "another run created the ledger at the same moment with another --start; the ledger keeps the first".into(),
        ));
    }
    Ok(None)
}

/// Runs the releases that are due. Refusals (a slot already charged but
/// unpublished, a slot outside the schedule…) are reported, not fatal.
///
/// The order is what makes it safe: an existing ledger is verified before
/// anything else; the data are read and aggregated before a new ledger is
/// created (a run that cannot read its data leaves no ledger behind, so it
/// does not fix the schedule's start); each fresh release is charged
/// (durable, anchored) before its noise is drawn.
pub fn run(
    plan: &ExecutablePlan,
    opts: &RunOptions,
    engine: &dyn Engine,
) -> Result<RunOutput, RunError> {
    let at = run_time(opts)?;
    if let Some(s) = opts.start {
        check_time("--start", s)?;
    }
    let (ledger, upgrade) = open_existing(plan, opts)?;
    // the shared budget ledgers verified before anything is read or written
    let mut charges = budgets::Charges::new(plan, opts, at)?;
    let ledger_start = match &ledger {
        Some(l) => l.open_info()?.schedule_start,
        None => opts.start.unwrap_or(at),
    };
    let due = schedule::due(plan, opts, at, ledger_start, ledger.as_ref())?;
    let ended = if opts.slot.is_none()
        && due.nothing_fresh()
        && due.served.is_empty()
        && due.refused.is_empty()
    {
        schedule::schedule_end(plan, opts, at, ledger_start, ledger.as_ref())?
    } else {
        None
    };

    // Step 3: exact bounded aggregates of every fresh release (one pass per
    // dataset; a windowed release's or a tree's due slots in one pass of
    // its data), before a new ledger exists.
    let mut rng = SecureRng::from_os().map_err(RunError::Rng)?;
    let read = Reading {
        plan,
        opts,
        engine,
        ledger_start,
    };
    let Aggregates {
        exact,
        windows,
        keyed,
        first,
    } = match read.all(&due, ledger.as_ref(), &mut rng) {
        Ok(x) => x,
        Err(e) if ledger.is_none() => return Err(RunError::NoLedgerCreated(Box::new(e))),
        Err(e) => return Err(e),
    };
    let nothing = due.nothing_fresh() && !due.fixes_start;
    let mut results = due.served;
    let mut refused = due.refused;
    let mut ledger = match ledger {
        Some(l) => l,
        // nothing to charge, and no schedule whose start a ledger fixes
        None if nothing => {
            let mut o = output(plan, opts, results, refused, None, upgrade);
            o.schedule_ended = ended;
            return Ok(o);
        }
        None => match create(plan, opts, ledger_start)? {
            Some(l) => l,
            // Nothing was charged by this run; the next pass finds the
            // ledger and plans against its start.
            None => return run(plan, opts, engine),
        },
    };
    // periods missed since the last run: recorded, never released
    ledger.record_skips(plan, &due.skipped)?;

    // Step 5: each fresh release, charged (to the shared budgets its
    // source has, then to the plan's ledger) before its noise is drawn.
    for &(r, slot) in &due.fresh {
        match release(
            (&mut ledger, &mut charges),
            plan,
            (r, None),
            slot,
            opts,
            (&exact, &keyed),
            &mut rng,
        )? {
            Released::Value(v) => results.push(v),
            Released::Refused(x) => refused.push(x),
        }
    }
    for (r, slots, last) in windows {
        run_windows(
            (&mut ledger, &mut charges),
            plan,
            opts,
            (r, slots, last),
            &keyed,
            &mut rng,
            (&mut results, &mut refused),
        )?;
    }
    let ran = cumulative::run_due(
        (&mut ledger, &mut charges),
        plan,
        opts,
        &due.trees,
        cumulative::Reader {
            engine,
            ledger_start,
        },
        first,
        &mut rng,
    )?;
    results.extend(ran.results);
    refused.extend(ran.refused);
    let republished = republications(&plan.body, opts, &ledger, &results)?;
    results.extend(republished);
    let mut o = output(plan, opts, results, refused, Some(&ledger), upgrade);
    o.schedule_ended = ended;
    o.skipped = due.skipped;
    Ok(o)
}

/// What step 3 of a run reads with.
struct Reading<'a> {
    plan: &'a ExecutablePlan,
    opts: &'a RunOptions,
    engine: &'a dyn Engine,
    ledger_start: i64,
}

/// The exact aggregates of the plain releases due, keyed by (release,
/// part).
type Exact = BTreeMap<(String, usize), Vec<i128>>;

/// Each windowed release due with its windows aggregated in slot order,
/// and its slot due on time.
type Windows<'a> = Vec<(&'a Release, Vec<window::SlotAggregate>, u64)>;

/// Everything step 3 read: what the releases of step 5 draw from.
struct Aggregates<'d> {
    /// The plain releases'.
    exact: Exact,
    /// Each due window's.
    windows: Windows<'d>,
    /// The counts per key seen of the histograms over keys from the data.
    keyed: selection::Keyed,
    /// A first run's: each tree's first slot, read before the ledger exists.
    first: BTreeMap<String, cumulative::Counted>,
}

impl Reading<'_> {
    /// Every aggregate a run's fresh releases need: the plain releases',
    /// each due window's, the keys from the data, and (a first run) each
    /// tree's first slot.
    fn all<'d>(
        &self,
        due: &schedule::Due<'d>,
        ledger: Option<&Ledger>,
        rng: &mut SecureRng,
    ) -> Result<Aggregates<'d>, RunError> {
        let (plan, opts, engine) = (self.plan, self.opts, self.engine);
        // keys from the data: counted per key, apart from the public domains
        let (keyed, plain): (Vec<_>, Vec<_>) = due
            .fresh
            .iter()
            .partition(|(r, _)| r.aggregation.selection.is_some());
        let exact = requests::aggregates(plan, opts, engine, plain.iter().map(|(r, _)| *r), rng)?;
        let mut windows = Vec::new();
        for &(r, ref slots, last) in &due.windows {
            let w = window::prepare(
                plan,
                opts,
                engine,
                (r, slots),
                self.ledger_start,
                ledger,
                rng,
            )?;
            windows.push((r, w, last));
        }
        let keyed = selection::aggregate(plan, opts, engine, keyed.iter().map(|(r, _)| *r), rng)?;
        // a first run reads each tree's first slot before the ledger exists
        let first = match ledger {
            None => {
                cumulative::count_first(plan, opts, engine, &due.trees, self.ledger_start, rng)?
            }
            Some(_) => BTreeMap::new(),
        };
        Ok(Aggregates {
            exact,
            windows,
            keyed,
            first,
        })
    }
}

/// A windowed release's due windows, in slot order, each charged before
/// its noise is drawn. A window refused (another run recorded one of its
/// units meanwhile) stops the later ones: their rows were selected
/// assuming it was released.
fn run_windows(
    (ledger, charges): (&mut Ledger, &mut budgets::Charges<'_>),
    plan: &ExecutablePlan,
    opts: &RunOptions,
    (r, slots, last): (&Release, Vec<window::SlotAggregate>, u64),
    keyed: &selection::Keyed,
    rng: &mut SecureRng,
    (results, refused): (&mut Vec<ReleaseResult>, &mut Vec<Refusal>),
) -> Result<(), RunError> {
    let n = slots.len();
    for (i, w) in slots.into_iter().enumerate() {
        let exact: Exact = w
            .values
            .into_iter()
            .enumerate()
            .map(|(pi, v)| ((r.name.clone(), pi), v))
            .collect();
        match release(
            (&mut *ledger, &mut *charges),
            plan,
            (r, Some(&w.units)),
            w.slot,
            opts,
            (&exact, keyed),
            rng,
        )? {
            Released::Value(mut v) => {
                v.backfilled = w.slot < last;
                results.push(v);
            }
            Released::Refused(x) => {
                refused.push(x);
                if i + 1 < n {
                    refused.push(Refusal {
                        query: r.name.clone(),
                        slot: None,
                        reason: format!(
                            "{} later window(s) not run: their rows were selected assuming slot {} was released; run again",
                            n - i - 1,
                            w.slot
                        ),
                    });
                }
                break;
            }
        }
    }
    Ok(())
}

/// What became of one fresh release.
enum Released {
    /// Drawn now, or served: another runtime released the slot first.
    Value(ReleaseResult),
    Refused(Refusal),
}

/// One fresh release: the intent (charged, durable, anchored), then the
/// exact noise, then the value. A clock-less schedule takes the next free
/// slot when another runtime took this one meanwhile (the ledger's
/// exclusive transaction decides).
fn release(
    (ledger, charges): (&mut Ledger, &mut budgets::Charges<'_>),
    plan: &ExecutablePlan,
    (r, units): (&Release, Option<&std::collections::BTreeSet<String>>),
    mut slot: u64,
    opts: &RunOptions,
    (exact, keyed): (&BTreeMap<(String, usize), Vec<i128>>, &selection::Keyed),
    rng: &mut SecureRng,
) -> Result<Released, RunError> {
    // the shared budgets first: a refusal leaves the plan's ledger as it
    // was, and nothing is drawn
    if let Some(why) = charges.charge(ledger, plan, opts, r, slot)? {
        return Ok(Released::Refused(Refusal {
            query: r.name.clone(),
            slot: Some(slot),
            reason: why,
        }));
    }
    let intent = loop {
        let begun = match units {
            Some(u) => ledger.begin_release_windowed(plan, r, slot, u),
            None => ledger.begin_release(plan, r, slot),
        };
        match begun {
            Err(LedgerError::AlreadyReleased { .. } | LedgerError::Unpublished { .. })
                if opts.slot.is_none() && r.schedule.kind != ScheduleKind::Every =>
            {
                match schedule::next_free(r, Some(ledger))? {
                    Some(s) => slot = s,
                    None => {
                        break Err(LedgerError::ScheduleExhausted {
                            query: r.name.clone(),
                            slots: r.schedule.slots,
                        })
                    }
                }
            }
            other => break other,
        }
    };
    let intent = match intent {
        Ok(e) => e,
        Err(
            e @ (LedgerError::AlreadyReleased { .. }
            | LedgerError::Unpublished { .. }
            | LedgerError::ScheduleExhausted { .. }
            | LedgerError::SlotOutOfRange { .. }),
        ) => {
            // Another runtime took the slot between our look and our
            // exclusive transaction: serve its value if it has one.
            return Ok(match ledger.slot_state(&r.name, slot)? {
                SlotState::Released(v) => {
                    Released::Value(served(ledger, &v, Origin::Ledger, None)?)
                }
                _ => Released::Refused(Refusal {
                    query: r.name.clone(),
                    slot: Some(slot),
                    reason: e.to_string(),
                }),
            });
        }
        Err(e) => return Err(e.into()),
    };
    test_hooks::pause_after_intent();
    let mut result = match &r.aggregation.selection {
        Some(sel) => fresh_result(r, slot, selection::draw(r, sel, keyed, rng)?, false),
        None => draw(r, slot, exact, rng)?,
    };
    // a later window of a vector release already charged charges nothing
    result.epsilon = intent.epsilon;
    result.delta = intent.delta;
    // Invariant: plain data with string keys; cannot fail.
    let value =
        ledger.commit_value(&intent, serde_json::to_string(&result).expect("serialises"))?;
    result.ledger_seq = Some(value.seq);
    Ok(Released::Value(result))
}

/// `publish` re-publications of what this run released or served: each
/// serves the very value of its source's slot in this run (never another
/// slot's), from the ledger, for free. A `when` condition reads its
/// operand's value from this run when it has one, else its latest value.
fn republications(
    body: &dpplan_plan::PlanBody,
    opts: &RunOptions,
    ledger: &Ledger,
    results: &[ReleaseResult],
) -> Result<Vec<ReleaseResult>, RunError> {
    let this_run = |query: &str| -> Result<Option<ledger::Entry>, RunError> {
        match results
            .iter()
            .find(|r| r.query == query && r.republished_from.is_none())
            .and_then(|r| r.ledger_seq)
        {
            Some(seq) => Ok(ledger.entry(seq)?),
            None => Ok(None),
        }
    };
    let mut out = Vec::new();
    for p in &body.publishes {
        if !opts.queries.is_empty()
            && !opts.queries.contains(&p.name)
            && !opts.queries.contains(&p.source)
        {
            continue;
        }
        let root = root_source(body, &p.source);
        let Some(e) = this_run(&root)? else {
            continue;
        };
        if let Some(c) = &p.condition {
            let operand = root_source(body, &c.operand);
            let v = match this_run(&operand)? {
                Some(e) => Some(e),
                None => ledger.latest_value(&operand)?,
            }
            .and_then(|e| scalar(&e));
            if !v.is_some_and(|v| compare(v, c.cmp, c.value)) {
                continue;
            }
        }
        out.push(served(
            ledger,
            &e,
            Origin::Republished,
            Some(p.name.clone()),
        )?);
    }
    Ok(out)
}

fn output(
    plan: &ExecutablePlan,
    opts: &RunOptions,
    results: Vec<ReleaseResult>,
    refused: Vec<Refusal>,
    ledger: Option<&Ledger>,
    upgrade: Option<ledger::UpgradeValue>,
) -> RunOutput {
    let tail = ledger.and_then(|l| l.tail().ok());
    RunOutput {
        format: RUN_FORMAT,
        format_version: RUN_FORMAT_VERSION,
        plan: plan.body.name.clone(),
        plan_sha256: plan.body_sha256.clone(),
        results,
        refused,
        ledger: opts.ledger.display().to_string(),
        ledger_entries: tail.as_ref().map_or(0, |t| t.seq),
        ledger_latest_hash: tail.map(|t| t.hash).unwrap_or_default(),
        upgraded: upgrade.is_some(),
        upgrade,
        schedule_ended: None,
        skipped: Vec::new(),
    }
}

fn root_source(body: &dpplan_plan::PlanBody, name: &str) -> String {
    let mut n = name.to_string();
    for _ in 0..=body.publishes.len() {
        match body.publishes.iter().find(|p| p.name == n) {
            Some(p) => n = p.source.clone(),
            None => break,
        }
    }
    n
}

fn scalar(e: &ledger::Entry) -> Option<f64> {
    let r: ReleaseResult = serde_json::from_str(e.value.as_deref()?).ok()?;
    match r.cells.as_slice() {
        [c] if c.group.is_none() => Some(c.value),
        _ => None,
    }
}

fn compare(v: f64, cmp: Comparison, t: f64) -> bool {
    match cmp {
        Comparison::Gt => v > t,
        Comparison::Ge => v >= t,
        Comparison::Lt => v < t,
        Comparison::Le => v <= t,
        Comparison::Eq => v == t,
        Comparison::Ne => v != t,
    }
}

fn served(
    ledger: &Ledger,
    e: &ledger::Entry,
    origin: Origin,
    publish: Option<String>,
) -> Result<ReleaseResult, RunError> {
    let mut r: ReleaseResult =
        serde_json::from_str(e.value.as_deref().unwrap_or("")).map_err(|_| {
            RunError::Ledger(LedgerError::Corrupt(format!(
                "entry {} holds no readable value",
                e.seq
            )))
        })?;
    quantile::relabel_legacy(&mut r);
    r.origin = origin;
    r.epsilon = 0.0;
    r.delta = 0.0;
    r.ledger_seq = Some(e.seq);
    r.corrections = ledger
        .corrections_of(e)?
        .into_iter()
        .map(|c| CorrectionNote {
            seq: c.seq,
            corrects: c.refers_to.unwrap_or(e.seq),
            reason: c.correction_reason().unwrap_or_default(),
            time: c.time,
        })
        .collect();
    if let Some(name) = publish {
        r.republished_from = Some(r.query.clone());
        r.query = name;
    }
    Ok(r)
}

/// Draws the noise of every part and builds the published cells: the
/// release path itself, which `dpplan audit` (dpplan-audit) runs N times
/// on neighbouring data sets.
pub fn draw(
    r: &Release,
    slot: u64,
    exact: &BTreeMap<(String, usize), Vec<i128>>,
    rng: &mut SecureRng,
) -> Result<ReleaseResult, RunError> {
    if r.aggregation.selection.is_some() {
        // drawn by `selection::draw`, from the counts per key
        return Err(RunError::Data(format!(
            "`{}` releases keys from the data: it is drawn by a run, not here (not audited)",
            r.name
        )));
    }
    if let Some(grid) = &r.aggregation.quantile {
        let cells = quantile::draw(r, grid, exact, rng)?;
        return Ok(fresh_result(r, slot, cells, false));
    }
    if let Some(top) = &r.aggregation.top {
        let cells = top::draw(r, top, exact, rng)?;
        return Ok(fresh_result(r, slot, cells, false));
    }
    let mut noisy: Vec<Vec<f64>> = Vec::new();
    for (pi, p) in r.parts.iter().enumerate() {
        let noise = Noise::new(p.mechanism, p.scale, p.grid_exponent).map_err(RunError::Noise)?;
        // a histogram's total reads the cells' counts (part 0's aggregate)
        let total = p.statistic == dpplan_vocab::Statistic::CellsTotal;
        let x = exact
            .get(&(r.name.clone(), if total { 0 } else { pi }))
            .ok_or_else(|| RunError::Data(format!("no aggregate for `{}`", r.name)))?;
        let summed;
        let x = if total {
            summed = [cells_total(x, r.parts[0].grid_exponent, p.grid_exponent)];
            &summed[..]
        } else {
            &x[..]
        };
        noisy.push(
            x.iter()
                .map(|&v| noise.release(v, p.grid_exponent, rng))
                .collect(),
        );
    }
    let groups: Vec<Option<String>> = match &r.aggregation.groups {
        Some(g) => g.iter().cloned().map(Some).collect(),
        None => vec![None],
    };
    let mut cells = Vec::new();
    let mean = r.aggregation.kind == AggKind::Mean;
    for (gi, group) in groups.into_iter().enumerate() {
        if mean {
            // Post-processing of the two noisy parts: S / max(C, 1),
            // clamped to the public bounds; the interval is a delta-method
            // approximation computed from the noisy values only.
            let (s, c) = (noisy[0][gi], noisy[1][gi]);
            let (ss, sc) = (r.parts[0].noise_std, r.parts[1].noise_std);
            let c1 = c.max(1.0);
            let [lo, hi] = r
                .aggregation
                .bounds
                .unwrap_or([f64::NEG_INFINITY, f64::INFINITY]);
            let m = (s / c1).clamp(lo, hi);
            let sd = dpplan_mechanisms::mean_std(ss, sc, m, c1);
            cells.push(Cell::noisy(group, m, sd, dpplan_mechanisms::Z95 * sd));
        } else {
            let p = &r.parts[0];
            let v = noisy[0][gi];
            cells.push(Cell::noisy(group, v, p.noise_std, p.ci95_half_width));
        }
    }
    if r.aggregation.total {
        // the total: the last cell, without a group
        let (p, v) = (&r.parts[1], noisy[1][0]);
        cells.push(Cell::noisy(None, v, p.noise_std, p.ci95_half_width));
    }
    // a consistent release's intervals are ±1.96 std of a weighted sum of
    // the noises: exact only when every noise is (continuous) Gaussian and
    // the cells are not also kept non-negative (the figures are then the
    // unconstrained estimate's: `consistent`)
    let consistent = r.postprocess.contains(&dpplan_vocab::PostStep::Consistent);
    let nonnegative = r.postprocess.contains(&dpplan_vocab::PostStep::Nonnegative);
    let gaussian = r
        .parts
        .iter()
        .all(|p| p.mechanism == Some(dpplan_vocab::NoiseKind::Gaussian));
    let approximate = mean || (consistent && (!gaussian || nonnegative));
    Ok(fresh_result(r, slot, cells, approximate))
}

/// The total of exact counts per cell given in units of 2^`from`, in
/// units of 2^`to` (counts are whole numbers on a grid of exponent ≤ 0, so
/// both shifts are exact).
fn cells_total(cells: &[i128], from: i32, to: i32) -> i128 {
    let count = cells.iter().sum::<i128>() >> (-from).max(0);
    count << (-to).max(0)
}
