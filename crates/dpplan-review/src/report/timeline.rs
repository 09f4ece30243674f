//! The schedule's calendar: when each query releases, and how many
//! releases each has made by a given time.

use dpplan_check::{CheckedPlan, ScheduleKind};

/// A query's releases on the calendar: `n` releases at `start`,
/// `start + period`, … (all at `start` when `period` is 0).
#[derive(Debug, Clone, Copy)]
pub(super) struct Slots {
    /// Seconds from the first run.
    pub start: f64,
    pub period: f64,
    pub n: u64,
    /// A windowed query: its `n` releases are one vector release over
    /// disjoint windows, charged in full at the first window.
    pub windowed: bool,
}

impl Slots {
    /// Releases made by time `t` (inclusive).
    pub fn count_at(&self, t: f64) -> u64 {
        if t < self.start {
            return 0;
        }
        if self.period <= 0.0 {
            return self.n;
        }
        // a release time t = start + k·period counts (relative slack for rounding)
        let k = ((t - self.start) / self.period * (1.0 + 1e-12)).floor();
        if k + 1.0 >= self.n as f64 {
            self.n
        } else {
            k as u64 + 1
        }
    }
    /// Accounted releases by time `t`: [`Self::count_at`], except that a
    /// windowed query's whole schedule is one release, made at its first
    /// window.
    pub fn charged_at(&self, t: f64) -> u64 {
        let n = self.count_at(t);
        if self.windowed {
            n.min(1)
        } else {
            n
        }
    }
    pub fn last(&self) -> f64 {
        self.start + self.period * (self.n.saturating_sub(1)) as f64
    }
}

/// The first run (Unix seconds), and where it comes from.
pub(super) fn first_run(plan: &CheckedPlan, start: Option<i64>) -> (Option<i64>, String) {
    let fixed = plan
        .queries
        .iter()
        .filter_map(|q| q.spec.as_ref()?.schedule.start)
        .min();
    match (start, fixed) {
        (Some(s), _) => (
            Some(s),
            "the first run is the date given with --start; `every … for …`, `N times` and `once` schedules start at it, `every … from … until …` schedules keep their own dates".into(),
        ),
        (None, Some(f)) => (
            Some(f),
            "the first run is assumed to be the earliest `from` date of the plan (pass --start DATE to place it); schedules without dates start at it".into(),
        ),
        (None, None) => (
            None,
            "the plan has no fixed dates: releases are counted in days after the first run (the ledger's start; pass --start DATE for calendar dates). `N times` releases are placed at the first run".into(),
        ),
    }
}

/// Each query's slots (in the checked plan's query order).
pub(super) fn slots(plan: &CheckedPlan, first_run: Option<i64>) -> Vec<Slots> {
    plan.queries
        .iter()
        .map(|q| {
            let windowed = q.accounted_releases != q.releases;
            let Some(spec) = q.spec.as_ref() else {
                return Slots {
                    start: 0.0,
                    period: 0.0,
                    n: q.releases,
                    windowed,
                };
            };
            let s = &spec.schedule;
            match s.kind {
                // not tied to the calendar: counted at the first run (the
                // earliest they can be made, so dates are never late)
                ScheduleKind::Once | ScheduleKind::Times => Slots {
                    start: 0.0,
                    period: 0.0,
                    n: q.releases,
                    windowed,
                },
                ScheduleKind::Every => {
                    let period = s.every_seconds.unwrap_or(0.0);
                    // a window (a tree's slot) is released once it has
                    // closed, plus its `release after` delay; a fresh
                    // release during its period, at its start
                    let closes = if spec.window.is_some() || spec.cumulative.is_some() {
                        period + s.release_after_seconds.unwrap_or(0.0)
                    } else {
                        0.0
                    };
                    Slots {
                        start: closes
                            + match (s.start, first_run) {
                                (Some(a), Some(f)) => (a - f) as f64,
                                _ => 0.0,
                            },
                        period,
                        n: q.releases,
                        windowed,
                    }
                }
            }
        })
        .collect()
}

/// A time on the calendar in words.
pub(super) fn label(first_run: Option<i64>, offset: f64) -> String {
    match first_run {
        Some(f) => {
            let secs = f.saturating_add(offset.floor() as i64);
            match jiff::Timestamp::from_second(secs) {
                Ok(ts) => {
                    let dt = jiff::tz::Offset::UTC.to_datetime(ts);
                    let date = format!("{:04}-{:02}-{:02}", dt.year(), dt.month(), dt.day());
                    if dt.hour() == 0 && dt.minute() == 0 && dt.second() == 0 {
                        date
                    } else {
                        format!("{date} {:02}:{:02}", dt.hour(), dt.minute())
                    }
                }
                Err(_) => format!("{} s after the first run", offset.floor()),
            }
        }
        None => {
            let day = (offset / 86_400.0).floor() as i64 + 1;
            let rest = offset - (day - 1) as f64 * 86_400.0;
            if rest.abs() < 0.5 {
                format!("day {day}")
            } else {
                let m = (rest / 60.0).floor() as i64;
                format!("day {day} {:02}:{:02}", m / 60, m % 60)
            }
        }
    }
}
