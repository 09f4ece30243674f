//! `histogram(d by k) with total`: the histogram's total — the number of
//! rows it keeps in its cells — released as a second noisy part, so that
//! `postprocess consistent` can make the cells add up to it
//! (`dpplan_mechanisms::consistency`). What it supports (DP014), the
//! total's sensitivity in words, and the `consistent` step's conditions.

use dpplan_diagnostics::{Code, Diagnostic};
use dpplan_syntax::ast::{self, Adjacency, AggKind};
use dpplan_vocab::{PostStep, Statistic};

use super::query::Reported;
use super::Checker;
use dpplan_mechanisms::sensitivity::{fmt_num, Derived, UnitBound};

/// DP014: `with total` goes with a grouped count of rows over public keys,
/// released once per slot over every row it reads.
pub(super) fn supported(c: &mut Checker, q: &ast::Query, agg: &ast::Aggregate) -> bool {
    if !agg.with_total {
        return true;
    }
    let span = agg.span;
    let counts_rows = matches!(agg.kind.value, AggKind::Histogram | AggKind::Count)
        && !agg.keys.is_empty()
        && agg.distinct.is_none();
    let problem = if !counts_rows {
        Some((
            "`with total` goes with a count of rows per cell: `histogram(d by k) with total`",
            "a sum's, a mean's, a distinct count's or a selection's total is not supported in this version; release the total as its own query",
        ))
    } else if agg.keys_from_data.is_some() {
        Some((
            "a total of keys from the data is not supported in this version",
            "release `count(d)` as its own query: the keys that pass the threshold are not all the rows",
        ))
    } else if agg.cumulative.is_some() || !q.windows().is_empty() {
        Some((
            "a total of a windowed or cumulative histogram is not supported in this version",
            "release the window's total as its own query",
        ))
    } else {
        None
    };
    match problem {
        None => true,
        Some((msg, help)) => {
            c.error(Diagnostic::new(Code::Unsupported, msg, span).help(help));
            false
        }
    }
}

/// `consistent` needs `with total` (DP017). Its other steps keep the sums
/// it makes hold: with `nonnegative` the estimate itself keeps every cell
/// ≥ 0 (`dpplan_mechanisms::consistency::consistent_nonnegative`), with
/// `round` a controlled rounding makes the cells whole
/// (`consistency::controlled_round`).
pub(super) fn check_steps(c: &mut Checker, q: &ast::Query, steps: &[PostStep]) -> bool {
    let Some(stmt) = q.postprocess().first() else {
        return true;
    };
    if !steps.contains(&PostStep::Consistent) {
        return true;
    }
    let total = q.aggregates.first().is_some_and(|a| a.with_total);
    if !total {
        c.error(
            Diagnostic::new(
                Code::TypeMismatch,
                "`consistent` makes a histogram's cells add up to its released total: the query releases no total",
                stmt.span,
            )
            .help("write `histogram(… by …) with total` (the total is a second noisy part), or remove `consistent`"),
        );
        return false;
    }
    true
}

/// The total's sensitivity: the rows one unit has kept in the cells.
pub(super) fn sensitivity(u: UnitBound, adj: Adjacency, cells: u64) -> Derived {
    let (delta, steps) = if u.user {
        let c = u.rows;
        let m = u.groups.unwrap_or(1).min(cells).min(c).max(1);
        let g = u.rows_per_group.unwrap_or(c).min(c).max(1);
        let d = c.min(m * g);
        let mut steps = vec![format!(
            "the total is the number of rows the histogram keeps: a unit keeps at most min(rows_per_unit, groups × rows_per_group) = min({c}, {m} × {g}) = {d} rows in its cells"
        )];
        steps.push(match adj {
            Adjacency::AddRemove => format!("add/remove: the total moves by at most {d}"),
            Adjacency::Replace => format!(
                "replace: the two units' totals both lie in [0, {d}], so the total moves by at most {d}"
            ),
        });
        (d as f64, steps)
    } else {
        (
            1.0,
            vec![
                "the total is the number of rows the histogram keeps".to_string(),
                match adj {
                    Adjacency::AddRemove => "add/remove: one row moves it by 1".to_string(),
                    Adjacency::Replace => {
                        "replace: a replaced row may leave the histogram (a filter, a category outside the domain) or enter it: it moves by at most 1".to_string()
                    }
                },
            ],
        )
    };
    Derived {
        l1: delta,
        l2: delta,
        coords: 1,
        linf: delta,
        steps: steps
            .into_iter()
            .chain([format!("Δ = {}", fmt_num(delta))])
            .collect(),
    }
}

/// The parts of a histogram with its total: the histogram's, then the
/// total's.
pub(super) fn with_total_part(
    mut parts: Vec<(Statistic, &'static str, Derived)>,
    unit: UnitBound,
    adj: Adjacency,
    cells: u64,
) -> Result<Vec<(Statistic, &'static str, Derived)>, Reported> {
    if parts.len() != 1 || parts[0].0 != Statistic::GroupedCount {
        return Err(Reported);
    }
    parts.push((
        Statistic::CellsTotal,
        "total",
        sensitivity(unit, adj, cells),
    ));
    Ok(parts)
}
