//! A query's `window` (DP024): the time column it reads, its length
//! against the schedule's period, the horizon bounds of its dataset
//! (`windows_per_unit`, `rows_per_window`), the sensitivity of the whole
//! schedule as one vector release over disjoint windows
//! ([`dpplan_mechanisms::windows`]), and the ε with and without the window side by side.

use dpplan_accounting as acct;
use dpplan_diagnostics::{Code, Diagnostic};
use dpplan_syntax::ast::{self, Adjacency, AggKind, ColumnType};
use dpplan_vocab::Statistic;

use super::datasets::{whole, DatasetInfo};
use super::query::{Part, QueryPlan, Reported};
use super::shape::{derive_sensitivities, Shape};
use super::{declared_once, duplicate, fast_best, mechanism, valid_positive, Checker};
use crate::report::WindowSpec;
use dpplan_mechanisms::sensitivity::{fmt_num, Derived, UnitBound};
use dpplan_mechanisms::windows::{self, windowed, Horizon, PerWindow};

/// `windows_per_unit` and `rows_per_window` of a dataset, as declared and
/// valid.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::checker) struct WindowBounds {
    pub(in crate::checker) per_unit: Option<u64>,
    pub(in crate::checker) rows: Option<u64>,
}

/// The horizon bounds of a contribution block, each declared once and a
/// positive whole number (DP007, DP013).
pub(in crate::checker) fn window_bounds(c: &mut Checker, cb: &ast::Contribution) -> WindowBounds {
    duplicate(c, &cb.windows_per_unit, |n| n.span, "windows_per_unit");
    duplicate(c, &cb.rows_per_window, |n| n.span, "rows_per_window");
    WindowBounds {
        per_unit: cb
            .windows_per_unit
            .first()
            .and_then(|n| whole(c, n, "windows_per_unit")),
        rows: cb
            .rows_per_window
            .first()
            .and_then(|n| whole(c, n, "rows_per_window")),
    }
}

/// A query's window, resolved.
#[derive(Debug, Clone)]
pub(in crate::checker) struct Window {
    pub(in crate::checker) column: String,
    pub(in crate::checker) seconds: f64,
    pub(in crate::checker) horizon: Horizon,
}

impl Window {
    pub(in crate::checker) fn spec(&self) -> WindowSpec {
        WindowSpec {
            column: self.column.clone(),
            seconds: self.seconds,
            windows_per_unit: self.horizon.windows,
            rows_per_window: self.horizon.rows,
            slots: self.horizon.slots,
        }
    }
}

/// The query's window, if it has one: its length equals the schedule's
/// period, its dataset has one `time` column, and under a user-level unit
/// the dataset bounds the windows per unit (DP007, DP013, DP024); a
/// quantile takes none (DP014). `releases`: the schedule's releases, and
/// whether the query is a quantile.
pub(in crate::checker) fn resolve(
    c: &mut Checker,
    q: &ast::Query,
    info: &DatasetInfo,
    unit: UnitBound,
    (releases, quantile): (u64, bool),
) -> Result<Option<Window>, Reported> {
    let what = || format!("the window of `{}`", q.name.value);
    let Some(w) = declared_once(c, q.windows(), |w| w.span, what) else {
        return Ok(None);
    };
    if quantile {
        c.error(
            Diagnostic::new(
                Code::Unsupported,
                "a windowed quantile is not supported in this version: a window's releases are accounted as one vector release of counts or sums",
                w.span,
            )
            .help("remove the window: each release then reads the whole data and is composed as a fresh release"),
        );
        return Err(Reported);
    }
    let seconds = length(c, w)?;
    matches_schedule(c, q, w, seconds)?;
    let column = time_column(c, info, w)?;
    // the schedule's own error, if any, was reported
    if releases == 0 {
        return Err(Reported);
    }
    let (windows, rows) = if unit.user {
        (
            windows_per_unit(c, info, w, releases)?,
            rows_per_window(info, unit),
        )
    } else {
        (1, 1)
    };
    Ok(Some(Window {
        column,
        seconds,
        horizon: Horizon {
            slots: releases,
            windows: windows.min(releases),
            rows,
        },
    }))
}

/// The query's `release after <duration>` in whole seconds, if it states
/// one: once (DP013), on a query with a `window` or a `cumulative` count
/// (DP024: any other release reads the data as it is when it runs, so a
/// delay means nothing for it), zero or more, finite and a whole number of
/// seconds (DP007). A delay moves when a slot is released, never what it
/// reads or costs: the accounting does not see it.
pub(in crate::checker) fn release_after(
    c: &mut Checker,
    q: &ast::Query,
) -> Result<Option<f64>, Reported> {
    let what = || format!("the release delay of `{}`", q.name.value);
    let Some(r) = declared_once(c, q.release_after(), |r| r.span, what) else {
        return Ok(None);
    };
    let cumulative = q.aggregates.first().is_some_and(|a| a.cumulative.is_some());
    if q.windows().is_empty() && !cumulative {
        c.error(
            Diagnostic::new(
                Code::Window,
                format!(
                    "`release after` delays the release of a window, but `{}` has neither a `window` nor a `cumulative` count: each of its releases reads the data as it is when it runs, so a delay means nothing for it",
                    q.name.value
                ),
                r.span,
            )
            .label("no window to wait for")
            .help("remove `release after`, or window the query on its schedule's period (`window 1 hour` with `schedule every 1 hour …`) so that each release reads its own slot's rows"),
        );
        return Err(Reported);
    }
    let d = &r.delay;
    let amount = d.amount.value;
    let (message, span, label) = if !amount.is_finite() {
        (
            format!("a release delay must be finite, found {amount}"),
            d.amount.span,
            "not finite",
        )
    } else if amount < 0.0 {
        (
            format!("a release delay cannot be negative, found {amount}: a slot is never released before its window closes"),
            d.amount.span,
            "negative",
        )
    } else if let Some(seconds) = crate::schedule::whole_seconds(d) {
        return Ok(Some(seconds));
    } else {
        let unit = d.unit.name();
        let plural = if amount == 1.0 { "" } else { "s" };
        (
            format!(
                "a release delay must be a whole number of seconds, found {amount} {unit}{plural} ({} s)",
                fmt_num(amount * d.unit.seconds())
            ),
            d.span,
            "not a whole number of seconds",
        )
    };
    c.error(
        Diagnostic::new(Code::InvalidParameter, message, span)
            .label(label)
            .help("write zero or more whole seconds, in any unit: `release after 2 hours`, `release after 90 seconds`"),
    );
    Err(Reported)
}

/// The window's length in seconds: positive and finite (DP007).
fn length(c: &mut Checker, w: &ast::Window) -> Result<f64, Reported> {
    let seconds = w.length.amount.value * w.length.unit.seconds();
    if !valid_positive(seconds) {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!(
                    "a window's length must be positive and finite, found {}",
                    w.length.amount.value
                ),
                w.length.amount.span,
            )
            .help("write the schedule's period, e.g. `window 1 hour`"),
        );
        return Err(Reported);
    }
    Ok(seconds)
}

/// The window must be the schedule's period: tumbling windows, one per
/// slot, so that the windows are disjoint and cover the schedule (DP024).
fn matches_schedule(
    c: &mut Checker,
    q: &ast::Query,
    w: &ast::Window,
    seconds: f64,
) -> Result<(), Reported> {
    let Some(s) = q.schedules.first() else {
        // DP015 was reported
        return Err(Reported);
    };
    let every = match &s.value {
        ast::Schedule::EveryFor { every, .. } | ast::Schedule::EveryRange { every, .. } => every,
        ast::Schedule::Once | ast::Schedule::Times { .. } => {
            c.error(
                Diagnostic::new(
                    Code::Window,
                    "a window needs a schedule `every <period> …`: each release reads the rows of its own slot",
                    w.span,
                )
                .secondary(s.span, "this schedule has no period")
                .help(format!(
                    "schedule the query `every {} {} for …` or remove the window",
                    fmt_num(w.length.amount.value),
                    w.length.unit.name()
                )),
            );
            return Err(Reported);
        }
    };
    let period = every.amount.value * every.unit.seconds();
    if period != seconds {
        c.error(
            Diagnostic::new(
                Code::Window,
                format!(
                    "the window ({} s) must equal the schedule's period ({} s): windows are tumbling, one per slot, so that they are disjoint and each row is released at most once",
                    fmt_num(seconds),
                    fmt_num(period)
                ),
                w.length.span,
            )
            .label("not the schedule's period")
            .secondary(every.span, "the schedule's period")
            .help(format!(
                "write `window {} {}`",
                fmt_num(every.amount.value),
                every.unit.name()
            )),
        );
        return Err(Reported);
    }
    Ok(())
}

/// The dataset's `time` columns, by name (a window and a cumulative count
/// read exactly one).
pub(in crate::checker) fn time_columns<'a>(info: &DatasetInfo<'a>) -> Vec<&'a str> {
    let mut times: Vec<&str> = info
        .columns
        .iter()
        .filter(|(_, ci)| matches!(ci.ty, ColumnType::Time))
        .map(|(name, _)| *name)
        .collect();
    times.sort_unstable();
    times
}

/// The dataset's one `time` column (DP024).
fn time_column(c: &mut Checker, info: &DatasetInfo, w: &ast::Window) -> Result<String, Reported> {
    let times = time_columns(info);
    let ds = &info.ds.name.value;
    match times.as_slice() {
        [one] => Ok((*one).to_string()),
        [] => {
            c.error(
                Diagnostic::new(
                    Code::Window,
                    format!("`{ds}` has no time column: a window selects rows by their time"),
                    w.span,
                )
                .secondary(info.ds.name.span, "dataset declared here")
                .help(format!(
                    "declare the rows' time in `{ds}`: `column started_at : time`"
                )),
            );
            Err(Reported)
        }
        many => {
            c.error(
                Diagnostic::new(
                    Code::Window,
                    format!(
                        "`{ds}` has {} time columns ({}): a window reads exactly one",
                        many.len(),
                        many.join(", ")
                    ),
                    w.span,
                )
                .secondary(info.ds.name.span, "dataset declared here")
                .help("declare only the column the windows are cut by as `time`"),
            );
            Err(Reported)
        }
    }
}

/// W under a user-level unit: declared, or DP024 (an invalid value was
/// reported as DP007).
fn windows_per_unit(
    c: &mut Checker,
    info: &DatasetInfo,
    w: &ast::Window,
    slots: u64,
) -> Result<u64, Reported> {
    if let Some(n) = info.windows.per_unit {
        return Ok(n);
    }
    let declared = info
        .ds
        .contributions
        .first()
        .is_some_and(|cb| !cb.windows_per_unit.is_empty());
    if !declared {
        let ds = &info.ds.name.value;
        c.error(
            Diagnostic::new(
                Code::Window,
                format!(
                    "a windowed query under a user-level unit needs a windows_per_unit bound on `{ds}`: without it one user may appear in all {slots} windows"
                ),
                w.span,
            )
            .label("windows per user not bounded")
            .secondary(info.ds.name.span, "dataset declared here")
            .help(format!(
                "add `windows_per_unit W` to the contribution block of `{ds}` (the runtime keeps a user in its first W windows; W = {slots} costs what the schedule costs without the window)"
            )),
        );
    }
    Err(Reported)
}

/// r: `rows_per_window`, at most `rows_per_unit` (the runtime keeps at most
/// both in a window); `rows_per_unit` when not declared.
pub(in crate::checker) fn rows_per_window(info: &DatasetInfo, unit: UnitBound) -> u64 {
    info.windows.rows.unwrap_or(unit.rows).min(unit.rows)
}

/// A query's parts: statistic, role, sensitivity.
pub(in crate::checker) type Parts = Vec<(Statistic, &'static str, Derived)>;

/// With a window, each part's sensitivity over the whole schedule and the
/// per-release sensitivities it replaces (for the side-by-side figure);
/// without one, the parts as they are. What a unit moves in one window is
/// the per-release derivation ([`derive_sensitivities`], the same facts as
/// without the window) of its rows in that window: `rows_per_unit` read
/// as `rows_per_window`, under add/remove and, with `replace`, under
/// replace; [`windowed`] composes it over the horizon.
pub(in crate::checker) fn horizon(
    w: Option<&Window>,
    per_release: Parts,
    (kind, unit, adjacency): (AggKind, UnitBound, Adjacency),
    shape: &Shape,
) -> (Parts, Option<Vec<Derived>>) {
    let Some(w) = w else {
        return (per_release, None);
    };
    let in_window = UnitBound {
        rows: w.horizon.rows,
        ..unit
    };
    let add_remove = derive_sensitivities(kind, shape, in_window, Adjacency::AddRemove);
    let replace = (adjacency == Adjacency::Replace)
        .then(|| derive_sensitivities(kind, shape, in_window, Adjacency::Replace));
    let what = windows::Shape {
        user: unit.user,
        groups: shape.group.unwrap_or(1),
        // (users per cell say it in their own derivation)
        own_id: shape.distinct == Some(true) && shape.group.is_none(),
    };
    let mut unwindowed = Vec::with_capacity(per_release.len());
    let horizon = per_release
        .into_iter()
        .enumerate()
        .map(|(i, (s, role, d))| {
            unwindowed.push(d);
            // Invariant: `per_release` is `derive_sensitivities` of the same
            // kind and shape (a quantile, the other derivation, takes no
            // window), so the lists have the same statistics in the same
            // order and `i` is in bounds.
            let one = PerWindow {
                add_remove: add_remove[i].2.clone(),
                replace: replace.as_ref().map(|r| r[i].2.clone()),
            };
            (s, role, windowed(&one, w.horizon, what))
        })
        .collect();
    (horizon, Some(unwindowed))
}

/// The part's ε with and without the window, side by side (fast
/// accountants, the plan's δ): the same noise, composed as `N` releases
/// over the whole data, and as one release over `N` disjoint windows.
pub(in crate::checker) fn comparison(q: &QueryPlan, p: &Part, delta: f64) -> Option<String> {
    let w = q.window.as_ref()?;
    let without = p.without_window.as_ref()?;
    let scale = p.resolved?;
    let n = w.horizon.slots;
    let eps = |d: &Derived, count: u64| -> Option<f64> {
        let r = acct::Release {
            sample: None,
            mechanism: mechanism(p.kind, scale, d, 1.0, p.statistic.is_count()),
            count,
        };
        fast_best(&[r], delta).ok().map(|b| b.epsilon)
    };
    let norm = |d: &Derived| {
        if p.kind.is_gaussian() {
            format!("L2 = {}", fmt_num(d.l2))
        } else {
            format!("L1 = {}", fmt_num(d.l1))
        }
    };
    let before = eps(without, n)?;
    let after = eps(&p.derived, 1)?;
    Some(format!(
        "without the window: {n} releases over the whole data, {} each, compose to ε = {} at δ = {}; with it: one release over {n} disjoint windows, {}: ε = {} (fast accountants)",
        norm(without),
        fmt_num(before),
        fmt_num(delta),
        norm(&p.derived),
        fmt_num(after)
    ))
}
