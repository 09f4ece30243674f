//! The clock of a run: which slot of each release is due at a time, what
//! was missed, and what comes next.
//!
//! Three kinds of schedule, each with its own rule:
//!
//! * **Clock-less** (`once`, `N times`): the next slot never charged.
//! * **Periods** (`every …` of a fresh release): slot s is the period
//!   [start + s·p, start + (s+1)·p) and is released *during* it, reading the
//!   data as they are then. A period that passed without a run cannot be
//!   released later (its data are not the data of that time): the next run
//!   records it as **skipped**, in its output and in the ledger.
//! * **Windows** (a `window` query, a `cumulative` count): slot s reads the
//!   rows whose time lies in its window [start + s·p, start + (s+1)·p), and
//!   is due once the window has **closed**, at start + (s+1)·p plus the
//!   plan's `release after` delay — never while rows of it may still
//!   arrive. Every closed window not released yet is released, in slot
//!   order, by the next run (a **backfill**).
//!
//! A time later than the machine's clock is refused unless the caller
//! asks for a test clock ([`crate::RunOptions::test_clock`]): a mistyped
//! year must not close every window of a schedule.

use std::collections::{BTreeMap, BTreeSet};

use dpplan_plan::{ExecutablePlan, Release};
use dpplan_vocab::ScheduleKind;
use serde::Serialize;

use crate::ledger::{self, Ledger, LedgerError, SlotState};
use crate::{check_time, served, Refusal, ReleaseResult, RunError, RunOptions};

/// How one release's slots follow the clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Timing {
    /// `once`, `N times`: the next slot never charged.
    Clockless,
    /// An `every` schedule of fresh releases: slot s during its period.
    Period { start: i64, every: f64 },
    /// A windowed query or a cumulative count: slot s once its window
    /// closed, plus `delay` seconds.
    Window { start: i64, period: i64, delay: i64 },
}

impl Timing {
    /// The timing of `r` when the ledger's schedule starts at
    /// `ledger_start`.
    pub fn of(r: &Release, ledger_start: i64) -> Result<Timing, RunError> {
        if r.schedule.kind != ScheduleKind::Every {
            return Ok(Timing::Clockless);
        }
        let start = match r.schedule.start {
            Some(s) => check_time("the schedule's start", s)?,
            None => ledger_start,
        };
        let window = r
            .window
            .as_ref()
            .map(|w| w.seconds)
            .or(r.cumulative.as_ref().map(|c| c.seconds));
        let Some(seconds) = window else {
            return Ok(Timing::Period {
                start,
                every: r.schedule.every_seconds.unwrap_or(0.0),
            });
        };
        let whole = |x: f64| x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < 2f64.powi(53);
        let delay = r.schedule.release_after_seconds.unwrap_or(0.0);
        if !(whole(seconds) && seconds >= 1.0 && whole(delay)) {
            return Err(RunError::Data(format!(
                "`{}`: a window of {seconds} s released {delay} s after it closes is not a whole number of seconds",
                r.name
            )));
        }
        Ok(Timing::Window {
            start,
            period: seconds as i64,
            delay: delay as i64,
        })
    }

    /// A period schedule's slot at `at`: ⌊(at − start) / every⌋, exact in
    /// integers when the period is a whole number of seconds (`None`
    /// before the start; unbounded above: the caller compares with the
    /// schedule's slots).
    fn period_slot(at: i64, start: i64, every: f64) -> Option<u64> {
        if every.is_nan() || every <= 0.0 || at < start {
            return None;
        }
        // Both times lie in [MIN_TIME, MAX_TIME] (checked), so this cannot
        // overflow; checked anyway so that a bug here is a refusal, not a wrap.
        let elapsed = u64::try_from(at.checked_sub(start)?).ok()?;
        if every.fract() == 0.0 && every < 2f64.powi(63) {
            Some(elapsed / every as u64)
        } else {
            Some((elapsed as f64 / every).floor() as u64)
        }
    }

    /// How many of the first `slots` windows are due at `at` (closed, and
    /// the delay passed): slots `0..closed`.
    pub fn closed(&self, at: i64, slots: u64) -> u64 {
        let Timing::Window {
            start,
            period,
            delay,
        } = *self
        else {
            return 0;
        };
        // times within the years 1–9999, period and delay below 2^53: no
        // overflow in i128
        let elapsed = i128::from(at) - i128::from(start) - i128::from(delay);
        if elapsed < i128::from(period) {
            return 0;
        }
        let n = elapsed / i128::from(period);
        u64::try_from(n).map_or(slots, |n| n.min(slots))
    }

    /// When slot `s` is due (Unix seconds): the start of its period, or
    /// the close of its window plus the delay; `None` for a clock-less
    /// schedule or past the years 1–9999.
    pub fn due_at(&self, s: u64) -> Option<i64> {
        let t = match *self {
            Timing::Clockless => return None,
            Timing::Period { start, every } => start as f64 + s as f64 * every,
            Timing::Window {
                start,
                period,
                delay,
            } => start as f64 + (s as f64 + 1.0) * period as f64 + delay as f64,
        };
        (t.is_finite() && t <= crate::MAX_TIME as f64).then_some(t as i64)
    }

    /// The window of slot `s` as [from, to) (windows only).
    pub fn window(&self, s: u64) -> Option<(i64, i64)> {
        match *self {
            Timing::Window { start, period, .. } => crate::window::bounds(start, period as f64, s),
            _ => None,
        }
    }
}

pub use crate::ledger::Skipped;

/// Why a missed period is skipped.
pub const SKIP_REASON: &str = "its period passed without a run: a fresh release reads the data as they are when it runs, so it cannot be made for a past period";

/// What a run does with each selected release.
#[derive(Default)]
pub(crate) struct Due<'a> {
    pub(crate) served: Vec<ReleaseResult>,
    pub(crate) refused: Vec<Refusal>,
    /// Plain releases (no window, no tree): one slot each.
    pub(crate) fresh: Vec<(&'a Release, u64)>,
    /// Windowed releases: their closed windows not released yet, in slot
    /// order, and the slot due on time (the last closed one).
    pub(crate) windows: Vec<(&'a Release, Vec<u64>, u64)>,
    /// Cumulative counts: the last slot to run (every slot before it not
    /// run yet runs first).
    pub(crate) trees: Vec<(&'a Release, u64)>,
    /// Periods missed since the last run.
    pub(crate) skipped: Vec<Skipped>,
    /// True when a selected release's schedule starts when the ledger is
    /// created: a first run creates it even when nothing is due yet, so
    /// that the start is fixed.
    pub(crate) fixes_start: bool,
}

impl Due<'_> {
    /// Nothing to release fresh.
    pub(crate) fn nothing_fresh(&self) -> bool {
        self.fresh.is_empty() && self.windows.is_empty() && self.trees.is_empty()
    }
}

/// A refusal of one slot.
fn refusal(r: &Release, slot: u64, reason: String) -> Refusal {
    Refusal {
        query: r.name.clone(),
        slot: Some(slot),
        reason,
    }
}

/// The selected releases (all, without `--query`).
pub(crate) fn selected<'a>(
    plan: &'a ExecutablePlan,
    opts: &'a RunOptions,
) -> impl Iterator<Item = &'a Release> {
    plan.body
        .releases
        .iter()
        .filter(|r| opts.queries.is_empty() || opts.queries.contains(&r.name))
}

/// The clock-less schedule's next slot never charged (slot 0 without a
/// ledger).
pub(crate) fn next_free(r: &Release, ledger: Option<&Ledger>) -> Result<Option<u64>, RunError> {
    let Some(ledger) = ledger else {
        return Ok((r.schedule.slots > 0).then_some(0));
    };
    Ok(first_free(
        r.schedule.slots,
        &ledger.charged_slots(&r.name)?,
    ))
}

/// The lowest of `slots` slots not charged in `states`.
fn first_free(slots: u64, states: &BTreeMap<u64, (i64, Option<i64>)>) -> Option<u64> {
    (0..slots).find(|s| !states.contains_key(s))
}

/// Step 2 of a run: what is due at `at` for every selected release, and
/// how it stands in the ledger (without a ledger, every slot is free).
pub(crate) fn due<'a>(
    plan: &'a ExecutablePlan,
    opts: &'a RunOptions,
    at: i64,
    ledger_start: i64,
    ledger: Option<&Ledger>,
) -> Result<Due<'a>, RunError> {
    let body = &plan.body;
    for q in &opts.queries {
        if body.release(q).is_none() && !body.publishes.iter().any(|p| &p.name == q) {
            return Err(RunError::Ledger(LedgerError::NotInPlan(q.clone())));
        }
    }
    let mut d = Due::default();
    let mut beyond = Vec::new();
    for r in selected(plan, opts) {
        let timing = Timing::of(r, ledger_start)?;
        let slots = r.schedule.slots;
        // a window's first slot is due a period after the start: a first
        // run fixes that start even when nothing is due yet
        if matches!(timing, Timing::Window { .. })
            && r.schedule.start.is_none()
            && opts.slot.is_none()
        {
            d.fixes_start = true;
        }
        if let Some(s) = opts.slot.filter(|&s| s >= slots) {
            beyond.push(refusal(
                r,
                s,
                LedgerError::SlotOutOfRange {
                    query: r.name.clone(),
                    slot: s,
                    slots,
                }
                .to_string(),
            ));
            continue;
        }
        let states = match ledger {
            Some(l) => l.charged_slots(&r.name)?,
            None => BTreeMap::new(),
        };
        match timing {
            Timing::Clockless => {
                let slot = match opts.slot {
                    Some(s) => s,
                    None => match first_free(slots, &states) {
                        Some(s) => s,
                        None => continue,
                    },
                };
                one_slot(&mut d, ledger, r, slot, &states)?;
            }
            Timing::Period { start, every } => {
                let current = Timing::period_slot(at, start, every);
                // `--slot N` is the operator's explicit choice: slot N now,
                // with the data as they are now
                let slot = match opts.slot {
                    Some(s) => Some(s),
                    None => current.filter(|&c| c < slots),
                };
                if opts.slot.is_none() {
                    let passed = current.map_or(0, |c| c.min(slots));
                    missed(&mut d, ledger, r, passed, &states)?;
                }
                if let Some(slot) = slot {
                    one_slot(&mut d, ledger, r, slot, &states)?;
                }
            }
            Timing::Window { .. } => {
                let closed = timing.closed(at, slots);
                let (targets, last) = match opts.slot {
                    Some(s) if s >= closed => {
                        d.refused.push(refusal(r, s, not_closed(r, &timing, s, at)));
                        continue;
                    }
                    Some(s) => (s..=s, s),
                    None if closed == 0 => continue,
                    None => (0..=closed - 1, closed - 1),
                };
                if r.cumulative.is_some() {
                    match states.get(&last) {
                        Some((_, Some(value))) => d.served.push(served_seq(ledger, *value)?),
                        _ => d.trees.push((r, last)),
                    }
                    continue;
                }
                let mut to_run = Vec::new();
                for s in targets {
                    match states.get(&s) {
                        None => to_run.push(s),
                        // said when it is the slot due (or asked for); an
                        // earlier one stays in `--dry-run`'s `unpublished`
                        Some((seq, None)) if s == last => d.refused.push(unpublished(r, s, *seq)),
                        Some(_) => {}
                    }
                }
                if to_run.is_empty() {
                    if let Some((_, Some(value))) = states.get(&last) {
                        d.served.push(served_seq(ledger, *value)?);
                    }
                } else {
                    d.windows.push((r, to_run, last));
                }
            }
        }
    }
    // `--slot N` beyond a schedule: refused when that release was named, or
    // when no selected release has slot N (the run would do nothing);
    // otherwise the releases that have slot N run and the others have no
    // such slot.
    let nothing_else = d.served.is_empty() && d.nothing_fresh() && d.refused.is_empty();
    for b in beyond {
        if nothing_else || opts.queries.contains(&b.query) {
            d.refused.push(b);
        }
    }
    Ok(d)
}

/// The value entry `seq` as served from the ledger.
fn served_seq(ledger: Option<&Ledger>, seq: i64) -> Result<ReleaseResult, RunError> {
    let l = ledger.ok_or(LedgerError::NoSuchEntry(seq))?;
    let e = l.entry(seq)?.ok_or(LedgerError::NoSuchEntry(seq))?;
    served(l, &e, crate::Origin::Ledger, None)
}

fn unpublished(r: &Release, slot: u64, seq: i64) -> Refusal {
    refusal(
        r,
        slot,
        LedgerError::Unpublished {
            query: r.name.clone(),
            slot,
            seq,
        }
        .to_string(),
    )
}

/// A plain release's slot: fresh, served, or refused (charged but never
/// published).
fn one_slot<'a>(
    d: &mut Due<'a>,
    ledger: Option<&Ledger>,
    r: &'a Release,
    slot: u64,
    states: &BTreeMap<u64, (i64, Option<i64>)>,
) -> Result<(), RunError> {
    match states.get(&slot) {
        None => match ledger {
            Some(l) if l.skipped_slot(&r.name, slot)? => d.refused.push(refusal(
                r,
                slot,
                LedgerError::Skipped {
                    query: r.name.clone(),
                    slot,
                }
                .to_string(),
            )),
            _ => d.fresh.push((r, slot)),
        },
        Some((_, Some(value))) => d.served.push(served_seq(ledger, *value)?),
        Some((seq, None)) => d.refused.push(unpublished(r, slot, *seq)),
    }
    Ok(())
}

/// The periods before `passed` that were neither released nor recorded
/// as skipped: skipped now, in ranges.
fn missed(
    d: &mut Due<'_>,
    ledger: Option<&Ledger>,
    r: &Release,
    passed: u64,
    states: &BTreeMap<u64, (i64, Option<i64>)>,
) -> Result<(), RunError> {
    let mut recorded: Vec<(u64, u64)> = match ledger {
        Some(l) => l.skipped_ranges(&r.name)?,
        None => Vec::new(),
    };
    recorded.sort_unstable();
    // one pass over the periods, the recorded ranges jumped over (a
    // minute schedule records one range a run: never a scan per period)
    let mut next_range = recorded.into_iter().peekable();
    let mut open: Option<u64> = None;
    let mut close = |open: &mut Option<u64>, through: u64| {
        if let Some(from) = open.take() {
            d.skipped.push(Skipped {
                query: r.name.clone(),
                from,
                through,
                reason: SKIP_REASON.into(),
            });
        }
    };
    let mut s = 0;
    while s < passed {
        while next_range.peek().is_some_and(|&(_, b)| b < s) {
            next_range.next();
        }
        if let Some(&(a, b)) = next_range.peek().filter(|&&(a, _)| a <= s) {
            debug_assert!(a <= s && s <= b);
            if s > 0 {
                close(&mut open, s - 1);
            }
            s = b.saturating_add(1);
            continue;
        }
        if states.contains_key(&s) {
            if s > 0 {
                close(&mut open, s - 1);
            }
        } else {
            open.get_or_insert(s);
        }
        s += 1;
    }
    close(&mut open, passed.saturating_sub(1));
    Ok(())
}

/// Slots as ranges of consecutive slots: [first, last] each.
pub fn ranges(slots: impl IntoIterator<Item = u64>) -> Vec<[u64; 2]> {
    let mut out: Vec<[u64; 2]> = Vec::new();
    for s in slots {
        match out.last_mut() {
            Some(last) if last[1].checked_add(1) == Some(s) => last[1] = s,
            _ => out.push([s, s]),
        }
    }
    out
}

fn at_text(at: i64) -> String {
    ledger::unix_rfc3339(at)
}

/// Why a window asked for with `--slot` is not released.
fn not_closed(r: &Release, t: &Timing, s: u64, at: i64) -> String {
    let window = t.window(s).map_or_else(String::new, |(a, b)| {
        format!(" [{}, {})", at_text(a), at_text(b))
    });
    let due = t
        .due_at(s)
        .map_or_else(|| "after the year 9999".into(), at_text);
    format!(
        "`{}` slot {s}: its window{window} has not closed at {} (it is due at {due}); a window is released once, when it has closed, so that every row of it is counted",
        r.name,
        at_text(at)
    )
}

/// One release's schedule as it stands at a time: what `dpplan run
/// --dry-run` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReleaseStatus {
    pub query: String,
    pub schedule: String,
    /// `clockless`, `period` or `window`.
    pub timing: &'static str,
    pub slots: u64,
    /// Slots released (value in the ledger).
    pub released: u64,
    /// Slots charged but never published (a run interrupted), as ranges
    /// [first, last].
    pub unpublished: Vec<[u64; 2]>,
    /// Slots recorded as skipped (periods missed).
    pub skipped: u64,
    /// What a run now would release, as ranges [first, last] in order (a
    /// window's backfill and the slot on time; a period's current slot; a
    /// clock-less schedule's next slot).
    pub due_now: Vec<[u64; 2]>,
    /// Periods a run now would record as skipped, as ranges.
    pub would_skip: Vec<[u64; 2]>,
    /// The next slot after those, and when it is due (UTC), if any.
    pub next_slot: Option<u64>,
    pub next_due: Option<String>,
}

/// What a plan's schedule looks like at a time: nothing is read, charged
/// or written (no ledger is created).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    pub plan: String,
    pub at: String,
    /// The ledger's schedule start (or the one a run now would fix).
    pub schedule_start: String,
    pub ledger_exists: bool,
    pub releases: Vec<ReleaseStatus>,
}

/// `dpplan run --dry-run`: the status of every selected release at the
/// run's time.
pub fn status(plan: &ExecutablePlan, opts: &RunOptions) -> Result<Status, RunError> {
    let at = crate::run_time(opts)?;
    let ledger = if opts.ledger.exists() {
        let l = Ledger::open(&opts.ledger, None)?;
        l.integrity_for_run(opts.expect_hash.as_deref())?;
        Some(l)
    } else {
        None
    };
    let ledger_start = match &ledger {
        Some(l) => l.open_info()?.schedule_start,
        None => opts.start.unwrap_or(at),
    };
    let due = due(plan, opts, at, ledger_start, ledger.as_ref())?;
    let mut releases = Vec::new();
    for r in selected(plan, opts) {
        let timing = Timing::of(r, ledger_start)?;
        let states = match &ledger {
            Some(l) => l.charged_slots(&r.name)?,
            None => BTreeMap::new(),
        };
        let skipped = match &ledger {
            Some(l) => l
                .skipped_ranges(&r.name)?
                .iter()
                .map(|&(a, b)| b - a + 1)
                .sum(),
            None => 0,
        };
        let mut due_now: Vec<u64> = due
            .fresh
            .iter()
            .filter(|(x, _)| x.name == r.name)
            .map(|&(_, s)| s)
            .collect();
        for (x, slots, _) in &due.windows {
            if x.name == r.name {
                due_now.extend(slots);
            }
        }
        for &(x, last) in &due.trees {
            if x.name == r.name {
                let first = ledger
                    .as_ref()
                    .map_or(Ok(0), |l| l.intents_of(&r.name))?
                    .min(last);
                due_now.extend(first..=last);
            }
        }
        let would_skip: Vec<[u64; 2]> = due
            .skipped
            .iter()
            .filter(|s| s.query == r.name)
            .map(|s| [s.from, s.through])
            .collect();
        // the next slot not charged nor due now, and not due yet: a clock-less
        // schedule's next one; a period's after the current one; the window
        // that closes next
        let taken: BTreeSet<u64> = states.keys().copied().chain(due_now.clone()).collect();
        let from = match timing {
            Timing::Clockless => 0,
            Timing::Period { start, every } => {
                Timing::period_slot(at, start, every).map_or(0, |c| c.saturating_add(1))
            }
            Timing::Window { .. } => timing.closed(at, r.schedule.slots),
        };
        let next_slot = (from..r.schedule.slots).find(|s| !taken.contains(s));
        let next_due = next_slot
            .and_then(|s| timing.due_at(s))
            .map(ledger::unix_rfc3339);
        releases.push(ReleaseStatus {
            query: r.name.clone(),
            schedule: r.schedule.text.clone(),
            timing: match timing {
                Timing::Clockless => "clockless",
                Timing::Period { .. } => "period",
                Timing::Window { .. } => "window",
            },
            slots: r.schedule.slots,
            released: states.values().filter(|(_, v)| v.is_some()).count() as u64,
            unpublished: ranges(
                states
                    .iter()
                    .filter(|(_, (_, v))| v.is_none())
                    .map(|(&s, _)| s),
            ),
            skipped,
            due_now: ranges(due_now),
            would_skip,
            next_slot,
            next_due,
        });
    }
    Ok(Status {
        plan: plan.body.name.clone(),
        at: ledger::unix_rfc3339(at),
        schedule_start: ledger::unix_rfc3339(ledger_start),
        ledger_exists: ledger.is_some(),
        releases,
    })
}

/// When every selected release's schedule is over at `at`, the time the
/// last of them ended: an `every` schedule at the end of its last period
/// (start + slots × period; a window's last one closed and its delay
/// passed), a clock-less one at its last charged release; `None` while
/// any release has a slot left.
pub(crate) fn schedule_end(
    plan: &ExecutablePlan,
    opts: &RunOptions,
    at: i64,
    ledger_start: i64,
    ledger: Option<&Ledger>,
) -> Result<Option<String>, RunError> {
    let mut end: Option<i64> = None;
    for r in selected(plan, opts) {
        let timing = Timing::of(r, ledger_start)?;
        let ended = match timing {
            Timing::Period { start, every } => {
                let length = r.schedule.slots as f64 * every;
                if !(length.is_finite() && every > 0.0) {
                    return Ok(None);
                }
                let e = (start as f64 + length).min(crate::MAX_TIME as f64) as i64;
                if at < e {
                    return Ok(None);
                }
                e
            }
            Timing::Window { .. } => {
                let last = r.schedule.slots.saturating_sub(1);
                match timing.due_at(last) {
                    Some(e) if at >= e => e,
                    _ => return Ok(None),
                }
            }
            Timing::Clockless => {
                let Some(l) = ledger else { return Ok(None) };
                for s in 0..r.schedule.slots {
                    if l.slot_state(&r.name, s)? == SlotState::Free {
                        return Ok(None);
                    }
                }
                let Some(t) = l.last_intent_time(&r.name)? else {
                    return Ok(None);
                };
                t
            }
        };
        end = Some(end.map_or(ended, |x| x.max(ended)));
    }
    Ok(end.map(ledger::unix_rfc3339))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    fn window(delay: i64) -> Timing {
        Timing::Window {
            start: 0,
            period: DAY,
            delay,
        }
    }

    #[test]
    fn a_window_is_due_once_closed_and_its_delay_passed() {
        let w = window(0);
        assert_eq!(w.closed(-5, 5), 0);
        assert_eq!(w.closed(0, 5), 0);
        // open all day, closed at midnight
        assert_eq!(w.closed(DAY - 1, 5), 0);
        assert_eq!(w.closed(DAY, 5), 1);
        assert_eq!(w.closed(DAY + 300, 5), 1);
        assert_eq!(w.closed(3 * DAY + 300, 5), 3);
        // never more than the schedule's slots, however far in the future
        assert_eq!(w.closed(crate::MAX_TIME, 5), 5);
        let late = window(2 * 3600);
        assert_eq!(late.closed(DAY + 300, 5), 0);
        assert_eq!(late.closed(DAY + 2 * 3600, 5), 1);
        assert_eq!(late.due_at(0), Some(DAY + 2 * 3600));
        assert_eq!(w.due_at(2), Some(3 * DAY));
        assert_eq!(w.window(2), Some((2 * DAY, 3 * DAY)));
    }

    #[test]
    fn slots_group_into_ranges() {
        assert_eq!(ranges([]), Vec::<[u64; 2]>::new());
        assert_eq!(ranges([3]), [[3, 3]]);
        assert_eq!(ranges([0, 1, 2, 5, 7, 8]), [[0, 2], [5, 5], [7, 8]]);
        assert_eq!(ranges([u64::MAX - 1, u64::MAX]), [[u64::MAX - 1, u64::MAX]]);
    }

    #[test]
    fn a_period_is_due_while_it_lasts() {
        assert_eq!(Timing::period_slot(-1, 0, 60.0), None);
        assert_eq!(Timing::period_slot(0, 0, 60.0), Some(0));
        assert_eq!(Timing::period_slot(59, 0, 60.0), Some(0));
        assert_eq!(Timing::period_slot(60, 0, 60.0), Some(1));
        assert_eq!(Timing::period_slot(90, 0, 0.5), Some(180));
        let p = Timing::Period {
            start: 100,
            every: 60.0,
        };
        assert_eq!(p.due_at(2), Some(220));
    }
}
