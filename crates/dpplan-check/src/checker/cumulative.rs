//! `cumulative count(d)` (DP041): running totals at every slot of an
//! `every` schedule, released by the binary tree mechanism
//! ([`dpplan_mechanisms::tree`]). The whole tree is one vector release, composed once;
//! the derivation compares its ε with the same schedule as fresh releases
//! over the whole history and gives the error of each running total.

use dpplan_accounting as acct;
use dpplan_diagnostics::{Code, Diagnostic, Span};
use dpplan_syntax::ast::{self, Adjacency, AggKind};
use dpplan_vocab::NoiseKind;

use super::datasets::DatasetInfo;
use super::query::{Part, QueryPlan, Reported};
use super::window::{rows_per_window, time_columns, Parts};
use super::{fast_best, mechanism, Checker};
use crate::report::CumulativeSpec;
use dpplan_mechanisms::factorization;
use dpplan_mechanisms::sensitivity::{fmt_num, Derived, UnitBound};
use dpplan_mechanisms::tree::{self, TreeBounds};
use dpplan_vocab::CumulativeMechanism;

/// The most slots a cumulative count may have: the runtime keeps every
/// released node (about 2T) in the ledger.
pub const MAX_SLOTS: u64 = 1 << 20;

/// The most slots a factorized cumulative count may have: slot t's
/// coordinate and total cost O(t) (the encoder and decoder read every
/// earlier slot) and the state keeps every slot's exact count, so a run
/// that backfills T slots costs O(T²); an hourly year (8,760 slots) in one
/// run took 108 s for two such counts (docs/benchmarks.md).
pub const MAX_FACTORIZED_SLOTS: u64 = 1 << 16;

/// A cumulative count, resolved.
#[derive(Debug, Clone)]
pub(in crate::checker) struct Cumulative {
    pub(in crate::checker) column: String,
    pub(in crate::checker) seconds: f64,
    pub(in crate::checker) bounds: TreeBounds,
    /// `mechanism …`: the tree (the default) or the factorization.
    pub(in crate::checker) mechanism: CumulativeMechanism,
    /// The plan's adjacency (the factorization's error against the tree's
    /// at the same privacy depends on it).
    pub(in crate::checker) adjacency: Adjacency,
}

impl Cumulative {
    pub(in crate::checker) fn spec(&self) -> CumulativeSpec {
        CumulativeSpec {
            column: self.column.clone(),
            seconds: self.seconds,
            slots: self.bounds.slots,
            windows_per_unit: self.bounds.windows,
            rows_per_window: self.bounds.rows_per_slot,
            levels: self.levels(),
            nodes: if self.mechanism.is_tree() {
                tree::nodes(self.bounds.slots)
            } else {
                self.bounds.slots
            },
            mechanism: self.mechanism,
        }
    }

    /// The tree's levels; 1 under the factorization (one coordinate per
    /// slot, stored as a level-0 node closing at its slot).
    fn levels(&self) -> u32 {
        if self.mechanism.is_tree() {
            tree::levels(self.bounds.slots)
        } else {
            1
        }
    }
}

/// One DP041 error at `span`, with a help.
fn refuse(c: &mut Checker, span: Span, message: String, help: &str) -> Reported {
    c.error(Diagnostic::new(Code::Cumulative, message, span).help(help.to_string()));
    Reported
}

/// The query's tree, if its aggregation is `cumulative` (whose [`shape`]
/// was checked): an `every` schedule of at most
/// [`MAX_SLOTS`] slots, no `window` (the slots are the tree's leaves) and
/// no `accuracy`, Laplace or Gaussian noise, and one `time` column.
pub(in crate::checker) fn resolve(
    c: &mut Checker,
    q: &ast::Query,
    agg: &ast::Aggregate,
    info: &DatasetInfo,
    unit: UnitBound,
    releases: u64,
    adjacency: Adjacency,
) -> Result<Option<Cumulative>, Reported> {
    let Some(span) = agg.cumulative else {
        return Ok(None);
    };
    let seconds = period(c, q, span)?;
    // the schedule's own error, if any, was reported
    if releases == 0 {
        return Err(Reported);
    }
    if releases > MAX_SLOTS {
        return Err(refuse(
            c,
            span,
            format!("a cumulative count has at most {MAX_SLOTS} slots (the ledger keeps every node of its tree), this schedule has {releases}"),
            "schedule fewer, longer slots (`every 1 day` rather than `every 1 minute`)",
        ));
    }
    let mechanism = q
        .mechanisms()
        .first()
        .map_or(CumulativeMechanism::Tree, |m| m.value);
    if mechanism == CumulativeMechanism::Factorization && releases > MAX_FACTORIZED_SLOTS {
        return Err(refuse(
            c,
            span,
            format!("a factorized cumulative count has at most {MAX_FACTORIZED_SLOTS} slots (each slot's coordinate and total read every earlier slot, and the exact counts of all of them are kept beside the ledger), this schedule has {releases}"),
            "schedule fewer, longer slots, or use the tree (remove `mechanism factorization`), which takes up to 1,048,576",
        ));
    }
    let column = time_column(c, info, span)?;
    let bounds = if unit.user {
        TreeBounds {
            slots: releases,
            windows: info.windows.per_unit.unwrap_or(releases).min(releases),
            rows_per_slot: rows_per_window(info, unit),
            rows: unit.rows,
        }
    } else {
        TreeBounds {
            slots: releases,
            windows: 1,
            rows_per_slot: 1,
            rows: 1,
        }
    };
    Ok(Some(Cumulative {
        column,
        seconds,
        bounds,
        mechanism,
        adjacency,
    }))
}

/// What takes `cumulative`: a count of rows, not grouped, not distinct,
/// without a `window` or an `accuracy` requirement, with Laplace or
/// Gaussian noise. Checked first, so that a query that is not one reports
/// DP041 alone.
pub(in crate::checker) fn shape(
    c: &mut Checker,
    q: &ast::Query,
    agg: &ast::Aggregate,
) -> Result<(), Reported> {
    if agg.kind.value != AggKind::Count || !agg.keys.is_empty() || agg.distinct.is_some() {
        return Err(refuse(
            c,
            agg.kind.span,
            "`cumulative` takes a plain count of rows (`cumulative count(d)`, with or without `where`): the tree mechanism adds counts of disjoint slots".into(),
            "write `cumulative count(d)`, or remove `cumulative`",
        ));
    }
    if let Some(w) = q.windows().first() {
        return Err(refuse(
            c,
            w.span,
            "a cumulative count needs no `window`: its tree's leaves are the schedule's slots already".into(),
            "remove the window",
        ));
    }
    if let Some(a) = q.accuracies().first() {
        return Err(refuse(
            c,
            a.span,
            "an `accuracy` requirement on a cumulative count is not supported: its error depends on the slot (the derivation shows it)".into(),
            "remove the requirement and read each slot's error in the derivation",
        ));
    }
    let factorization = super::declared_once(
        c,
        q.mechanisms(),
        |m| m.span,
        || format!("the mechanism of `{}`", q.name.value),
    )
    .is_some_and(|m| m.value == CumulativeMechanism::Factorization);
    if let Some(n) = q.noises.first() {
        if factorization && n.kind.value != NoiseKind::Gaussian {
            return Err(refuse(
                c,
                n.kind.span,
                format!(
                    "the factorization takes `gaussian` noise, not `{}`: it is built for the L2 norm (the L1 norm of its encoder's column grows like √T, so Laplace noise on it does worse than the tree)",
                    n.kind.value.name()
                ),
                "write `noise gaussian sigma …`, or remove `mechanism factorization` (the tree takes Laplace noise)",
            ));
        }
        if !matches!(n.kind.value, NoiseKind::Laplace | NoiseKind::Gaussian) {
            return Err(refuse(
                c,
                n.kind.span,
                format!(
                    "a cumulative count's tree takes `laplace` or `gaussian` noise, not `{}`",
                    n.kind.value.name()
                ),
                "write `noise gaussian sigma …` (or `laplace scale …`)",
            ));
        }
    }
    Ok(())
}

/// The schedule's period in seconds: a cumulative count needs `every`.
fn period(c: &mut Checker, q: &ast::Query, span: Span) -> Result<f64, Reported> {
    let Some(s) = q.schedules.first() else {
        // DP015 was reported
        return Err(Reported);
    };
    match &s.value {
        ast::Schedule::EveryFor { every, .. } | ast::Schedule::EveryRange { every, .. } => {
            Ok(every.amount.value * every.unit.seconds())
        }
        ast::Schedule::Once | ast::Schedule::Times { .. } => {
            c.error(
                Diagnostic::new(
                    Code::Cumulative,
                    "a cumulative count needs a schedule `every <period> …`: it releases a running total at every slot",
                    span,
                )
                .secondary(s.span, "this schedule has no period")
                .help("schedule the query `every 1 day for 365 days`, or remove `cumulative`"),
            );
            Err(Reported)
        }
    }
}

/// The dataset's one `time` column: the slot of each row.
fn time_column(c: &mut Checker, info: &DatasetInfo, span: Span) -> Result<String, Reported> {
    let times = time_columns(info);
    if let [one] = times.as_slice() {
        return Ok((*one).to_string());
    }
    let ds = &info.ds.name.value;
    let message = if times.is_empty() {
        format!(
            "`{ds}` has no time column: a cumulative count puts each row in the slot of its time"
        )
    } else {
        format!(
            "`{ds}` has {} time columns ({}): a cumulative count reads exactly one",
            times.len(),
            times.join(", ")
        )
    };
    c.error(
        Diagnostic::new(Code::Cumulative, message, span)
            .secondary(info.ds.name.span, "dataset declared here")
            .help(format!(
                "declare the rows' time once in `{ds}`: `column signed_up_at : time`"
            )),
    );
    Err(Reported)
}

/// A `mechanism` statement on a query that is not a cumulative count
/// (DP041): it chooses how running totals are released.
pub(in crate::checker) fn stray_mechanism(c: &mut Checker, q: &ast::Query, agg: &ast::Aggregate) {
    if agg.cumulative.is_some() {
        return;
    }
    if let Some(m) = q.mechanisms().first() {
        refuse(
            c,
            m.span,
            format!(
                "`mechanism {}` chooses how a cumulative count's running totals are released; `{}` is not a cumulative count",
                m.value.name(),
                q.name.value
            ),
            "write `cumulative count(d)`, or remove the `mechanism` statement",
        );
    }
}

/// With a tree, the count's sensitivity over all its nodes, and the
/// per-release count it replaces (for the side-by-side figure).
pub(in crate::checker) fn tree_parts(
    t: &Cumulative,
    per_release: Parts,
    unit: UnitBound,
    adjacency: Adjacency,
) -> (Parts, Option<Vec<Derived>>) {
    let mut fresh = Vec::with_capacity(per_release.len());
    let parts = per_release
        .into_iter()
        .map(|(s, role, d)| {
            fresh.push(d);
            let d = match t.mechanism {
                CumulativeMechanism::Tree => tree::derived(unit, adjacency, t.bounds),
                CumulativeMechanism::Factorization => {
                    factorization::derived(unit, adjacency, t.bounds)
                }
            };
            (s, role, d)
        })
        .collect();
    (parts, Some(fresh))
}

/// The ε of the tree against the same schedule as fresh releases over the
/// whole history (the same noise, fast accountants, the plan's δ), then
/// the error of each running total and a 95 % statement.
pub(in crate::checker) fn comparison(q: &QueryPlan, p: &Part, delta: f64) -> Vec<String> {
    let (Some(t), Some(fresh), Some(scale)) = (&q.cumulative, &p.without_window, p.resolved) else {
        return vec![];
    };
    let n = t.bounds.slots;
    let eps = |d: &Derived, count: u64| -> Option<f64> {
        let r = acct::Release {
            sample: None,
            mechanism: mechanism(p.kind, scale, d, 1.0, p.statistic.is_count()),
            count,
        };
        fast_best(&[r], delta).ok().map(|b| b.epsilon)
    };
    let gaussian = p.kind.is_gaussian();
    let norm = |d: &Derived| {
        if gaussian {
            format!("L2 = {}", fmt_num(d.l2))
        } else {
            format!("L1 = {}", fmt_num(d.l1))
        }
    };
    let mut out = Vec::new();
    let factorized = t.mechanism == CumulativeMechanism::Factorization;
    if let (Some(before), Some(after)) = (eps(fresh, n), eps(&p.derived, 1)) {
        let by = if factorized {
            format!("by the factorization: one release of {n} coordinates")
        } else {
            format!("by the tree: one release of {} nodes", tree::nodes(n))
        };
        out.push(format!(
            "as fresh releases: {n} running totals over the whole history, {} each, compose to ε = {} at δ = {}; {by}, {}: ε = {} (fast accountants)",
            norm(fresh),
            fmt_num(before),
            fmt_num(delta),
            norm(&p.derived),
            fmt_num(after)
        ));
    }
    if factorized {
        out.extend(factorization::error_steps(scale, t.adjacency, t.bounds));
        return out;
    }
    out.extend(tree::error_steps(
        tree::node_variance(scale, gaussian),
        n,
        gaussian,
    ));
    out
}
