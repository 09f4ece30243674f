//! What a query's sensitivity depends on beyond its kind ([`Shape`]: its
//! cells, value bounds, dropped rows and distinct column) and the
//! sensitivities derived from it, one per noisy part.

use dpplan_syntax::ast::{Adjacency, AggKind, ColumnType, InvalidRule};
use dpplan_vocab::Statistic;

use super::datasets::DatasetInfo;
use dpplan_mechanisms::sensitivity::{self, Derived, UnitBound};
use dpplan_mechanisms::sensitivity_rows;

/// What the sensitivity of an aggregation depends on beyond its kind.
pub(super) struct Shape {
    /// The number of cells of a grouped aggregation.
    pub(super) group: Option<u64>,
    pub(super) values: Option<(f64, f64)>,
    /// Why rows of a row-level unit can be dropped from the aggregate, if
    /// they can ([`drops_rows`]).
    pub(super) drops: Option<&'static str>,
    /// `count(distinct …)`: whether the column is the user-level unit's id.
    pub(super) distinct: Option<bool>,
}

/// Why rows can be dropped from an aggregation, which matters under
/// row-level `replace` adjacency (a replaced row can then enter or leave
/// the aggregate, [`sensitivity_rows`]): a `where` filter; `invalid_rows
/// drop` on a dataset with a number column (a row whose number does not
/// parse is dropped, a data-dependent filter of its own); a one-group
/// histogram's domain (a row outside it is dropped). A user-level unit's
/// rows already range over "0 to c rows": nothing to say.
pub(super) fn drops_rows(
    info: &DatasetInfo,
    filtered: bool,
    group: Option<u64>,
    adjacency: Adjacency,
) -> Option<&'static str> {
    if filtered {
        return Some(sensitivity_rows::FILTER);
    }
    if adjacency != Adjacency::Replace || info.bound.is_some_and(|b| b.user) {
        return None;
    }
    let drop_invalid = info
        .ds
        .invalid_rows
        .first()
        .is_none_or(|r| r.value == InvalidRule::Drop);
    let numbers = info
        .columns
        .values()
        .any(|c| matches!(c.ty, ColumnType::Int { .. } | ColumnType::Float { .. }));
    if drop_invalid && numbers {
        return Some(sensitivity_rows::INVALID_ROWS);
    }
    group
        .is_some_and(|d| d < 2)
        .then_some(sensitivity_rows::OUTSIDE_DOMAIN)
}

/// Every noisy part of a query with its sensitivity: a quantile's levels,
/// a top-k's ranks (each scored by the histogram's counts or units per
/// cell), or the aggregation's statistics ([`derive_sensitivities`]), then
/// a histogram's total when it has one.
pub(super) fn derive_parts(
    kind: AggKind,
    shape: &Shape,
    (unit, adjacency): (UnitBound, Adjacency),
    (quantile, top, with_total): (
        Option<&super::quantile::QuantileSpec>,
        Option<super::top::TopSpec>,
        bool,
    ),
) -> Result<Vec<(Statistic, &'static str, Derived)>, super::query::Reported> {
    let derived = match (quantile, top) {
        (Some(spec), _) => super::quantile::derived(spec, unit, adjacency),
        (None, Some(spec)) => {
            // the scores: the histogram's counts (or units per cell)
            let base = derive_sensitivities(AggKind::Histogram, shape, unit, adjacency);
            let counted = if shape.distinct.is_some() {
                "units with a row in it"
            } else {
                "bounded rows"
            };
            let (_, _, base) = base.into_iter().next().ok_or(super::query::Reported)?;
            super::top::derived(spec, &base, counted, adjacency)
        }
        (None, None) => derive_sensitivities(kind, shape, unit, adjacency),
    };
    match (with_total, shape.group) {
        (true, Some(cells)) => super::with_total::with_total_part(derived, unit, adjacency, cells),
        _ => Ok(derived),
    }
}

/// The sensitivity of each noisy part, derived from the unit's bound, the
/// adjacency, the cells, the values' bounds and the filter: one per
/// statistic the aggregation releases ([`Statistic::of`]), in that order.
pub(super) fn derive_sensitivities(
    kind: AggKind,
    shape: &Shape,
    unit: UnitBound,
    adjacency: Adjacency,
) -> Vec<(Statistic, &'static str, Derived)> {
    match (shape.distinct, shape.group) {
        // users per cell (the checker allows only the unit's id grouped)
        (Some(_), Some(cells)) => {
            let d = sensitivity_rows::units_per_cell(unit, adjacency, cells, shape.drops);
            return vec![(Statistic::GroupedDistinctCount, "units per cell", d)];
        }
        (Some(keyed), None) => {
            let d = sensitivity_rows::distinct(unit, adjacency, keyed);
            return vec![(Statistic::DistinctCount, "distinct count", d)];
        }
        (None, _) => {}
    }
    let statistics = Statistic::of(kind, shape.group.is_some()).unwrap_or(&[]);
    let values = shape.values;
    let (lo, hi) = values.unwrap_or((0.0, 0.0));
    let domain = shape.group.unwrap_or(0);
    statistics
        .iter()
        .map(|&s| match (s, shape.drops) {
            (Statistic::Count, Some(why)) => {
                (s, "count", sensitivity_rows::count(unit, adjacency, why))
            }
            (Statistic::Count, None) => (s, "count", sensitivity::count(unit, adjacency)),
            (Statistic::Sum, Some(why)) => (
                s,
                "sum",
                sensitivity_rows::sum(unit, adjacency, lo, hi, why),
            ),
            (Statistic::Sum, None) => (s, "sum", sensitivity::sum(unit, adjacency, lo, hi)),
            // (a top-k's selections are derived from the histogram's counts
            // in `plan_parts`, `top::derived`)
            (Statistic::GroupedCount | Statistic::GroupedSum | Statistic::TopK, _) => {
                let v = (s == Statistic::GroupedSum).then_some(values).flatten();
                let role = match (s, kind) {
                    (Statistic::GroupedSum, _) => "grouped sum",
                    (Statistic::TopK, _) => "top",
                    (_, AggKind::Mean) => "grouped count",
                    _ => "histogram",
                };
                let d = match shape.drops {
                    Some(why) => sensitivity_rows::grouped(unit, adjacency, domain, v, why),
                    None => sensitivity::grouped(unit, adjacency, domain, v),
                };
                (s, role, d)
            }
            (Statistic::DistinctCount, _) => {
                let d = sensitivity_rows::distinct(unit, adjacency, false);
                (s, "distinct count", d)
            }
            (Statistic::CellsTotal, _) => (
                s,
                "total",
                super::with_total::sensitivity(unit, adjacency, domain),
            ),
            (Statistic::GroupedDistinctCount, _) => {
                let d = sensitivity_rows::units_per_cell(unit, adjacency, domain, shape.drops);
                (s, "units per cell", d)
            }
            // (quantiles are derived per level in `plan_parts`; the level-free
            // bound Δ = rows holds for every level)
            (Statistic::Quantile, _) => (
                s,
                "quantile",
                super::quantile::sensitivity(unit, Adjacency::Replace, 0.5),
            ),
        })
        .collect()
}
