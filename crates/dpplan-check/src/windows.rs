//! The sensitivity of a windowed query over its whole schedule.
//!
//! A query with `window` releases, at each of its `N` slots, the statistic
//! of the rows whose time falls in that slot, and only those: the windows
//! are disjoint. Its `N` releases together are one vector release — the
//! per-window answers side by side, `N` coordinates (or `N × d` cells for a
//! statistic over `d` groups) — with independent noise on each coordinate.
//! What one unit can move in that vector is bounded over the horizon:
//!
//! * it appears in at most `W` windows (`windows_per_unit`, at most `N`),
//! * with at most `r` rows in each (`rows_per_window`, at most
//!   `rows_per_unit`), so at most `W·r` rows in all,
//! * and in each window in at most `m` of the `d` groups with at most `g`
//!   rows per group (`groups_per_unit`, `rows_per_group`).
//!
//! So the unit's vector has at most `W·min(m, d)` non-zero cells, each at
//! most `min(g, r)`, summing to at most `W·r`: exactly the shape a
//! histogram's `groups_per_unit` and `rows_per_group` describe, over a
//! domain of `N·d` cells, and [`crate::sensitivity::grouped`] derives its
//! L1, L2 and L∞ (a superset of the vectors a unit can produce, so the
//! bound is sound). A row- or event-level unit is one row: it lies in one
//! window (`W = r = 1`).
//!
//! A window is also a filter: a row whose time lies in no slot is read by
//! no release. Under row-level `replace` a replaced row can therefore leave
//! (or enter) the horizon, as it can leave a `where` filter; the
//! derivation goes through [`crate::sensitivity_rows::grouped`], which
//! allows for it (it matters for one slot of a count: 0 → 1).

use dpplan_syntax::ast::Adjacency;
use dpplan_vocab::Statistic;

use crate::sensitivity::{Derived, UnitBound};
use crate::sensitivity_rows;

/// Why a windowed query drops rows when it has no other reason to: the
/// window itself.
pub const WINDOW: &str = "the window (a row whose time lies in no slot of the schedule is dropped)";

/// The horizon bounds of a windowed query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Horizon {
    /// N: the schedule's slots, one window each.
    pub slots: u64,
    /// W: the windows one unit may appear in (already capped at N).
    pub windows: u64,
    /// r: the rows of one unit in one window.
    pub rows: u64,
}

/// The sensitivity of the whole schedule of a windowed query, seen as one
/// vector release over its `N` disjoint windows. `group` is the size of
/// the group domain of a grouped statistic; `values` the clamp bounds of a
/// sum; `why` the reason rows are dropped ([`WINDOW`], or the query's
/// filter, [`sensitivity_rows::FILTER`]).
pub fn windowed(
    statistic: Statistic,
    unit: UnitBound,
    adjacency: Adjacency,
    h: Horizon,
    group: Option<u64>,
    values: Option<(f64, f64)>,
    why: &str,
) -> Derived {
    let grouped = matches!(statistic, Statistic::GroupedCount | Statistic::GroupedSum);
    let d = if grouped {
        group.unwrap_or(1).max(1)
    } else {
        1
    };
    let w = h.windows.min(h.slots).max(1);
    let r = h.rows.max(1);
    let (m, g) = if grouped && unit.user {
        let m = unit.groups.unwrap_or(d).min(d).max(1);
        (m, unit.rows_per_group.unwrap_or(r).min(r).max(1))
    } else {
        (1, r)
    };
    let horizon_unit = UnitBound {
        user: unit.user,
        rows: w * r,
        groups: Some(w * m),
        rows_per_group: Some(g),
    };
    let values = match statistic {
        Statistic::Sum | Statistic::GroupedSum => values,
        // a distinct count moves by at most what the row count does: sound, maybe loose
        // a windowed quantile is refused by the checker
        Statistic::Count
        | Statistic::GroupedCount
        | Statistic::DistinctCount
        | Statistic::Quantile => None,
    };
    let cells = h.slots.saturating_mul(d);
    let mut out = sensitivity_rows::grouped(horizon_unit, adjacency, cells, values, why);
    let mut steps = vec![explain(unit.user, h, w, r, d, m, g, cells)];
    steps.append(&mut out.steps);
    out.steps = steps;
    out
}

/// The first step of the derivation: the vector and the unit's share of it.
#[allow(clippy::too_many_arguments)]
fn explain(user: bool, h: Horizon, w: u64, r: u64, d: u64, m: u64, g: u64, cells: u64) -> String {
    let vector = if d > 1 {
        format!(
            "the {} releases are one vector release over {} disjoint windows × {} groups = {} cells",
            h.slots, h.slots, d, cells
        )
    } else {
        format!(
            "the {} releases are one vector release over {} disjoint windows (one coordinate per window)",
            h.slots, h.slots
        )
    };
    let share = if !user {
        "a row has one time, so it lies in exactly one window".to_string()
    } else if d > 1 {
        format!(
            "a unit appears in at most windows_per_unit = {w} windows with at most rows_per_window = {r} rows each, in at most {m} groups per window with at most {g} rows per group: at most {} cells of at most {g} rows, {} rows in all",
            w * m,
            w * r
        )
    } else {
        format!(
            "a unit appears in at most windows_per_unit = {w} windows with at most rows_per_window = {r} rows each: at most {w} coordinates of at most {r} rows, {} rows in all",
            w * r
        )
    };
    format!("{vector}; {share}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensitivity::tests::{user, ROW};

    /// The L2 of the worst vector, enumerated independently: `w` windows
    /// each holding `r` rows (count), so ‖v‖₂ = r·√w, ‖v‖₁ = w·r.
    #[test]
    fn a_windowed_count_is_a_vector_of_w_coordinates_of_r_rows() {
        let h = Horizon {
            slots: 168,
            windows: 30,
            rows: 4,
        };
        let d = windowed(
            Statistic::Count,
            user(100, None, None),
            Adjacency::AddRemove,
            h,
            None,
            None,
            WINDOW,
        );
        assert_eq!(d.l1, 120.0);
        assert!((d.l2 - 4.0 * 30f64.sqrt()).abs() < 1e-12, "{}", d.l2);
        assert_eq!((d.coords, d.linf), (30, 4.0));
        // more windows per unit: a larger L2 (negative control)
        let more = windowed(
            Statistic::Count,
            user(100, None, None),
            Adjacency::AddRemove,
            Horizon { windows: 31, ..h },
            None,
            None,
            WINDOW,
        );
        assert!(more.l2 > d.l2);
        // W is capped by the slots
        let capped = windowed(
            Statistic::Count,
            user(100, None, None),
            Adjacency::AddRemove,
            Horizon { windows: 1000, ..h },
            None,
            None,
            WINDOW,
        );
        assert!((capped.l2 - 4.0 * 168f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn a_row_lies_in_one_window() {
        let row = ROW;
        let h = Horizon {
            slots: 24,
            windows: 1,
            rows: 1,
        };
        let d = windowed(
            Statistic::Count,
            row,
            Adjacency::AddRemove,
            h,
            None,
            None,
            WINDOW,
        );
        assert_eq!((d.l1, d.l2), (1.0, 1.0));
        // under replace, a row can move from one window to another
        let r = windowed(
            Statistic::Count,
            row,
            Adjacency::Replace,
            h,
            None,
            None,
            WINDOW,
        );
        assert_eq!(r.l1, 2.0);
        assert!((r.l2 - 2f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn grouped_windows_count_cells() {
        // 3 windows of 2 groups of at most 2 rows (r = 5 per window):
        // 6 cells of 2 rows: L2 = 2·√6, L1 = 12
        let h = Horizon {
            slots: 10,
            windows: 3,
            rows: 5,
        };
        let d = windowed(
            Statistic::GroupedCount,
            user(50, Some(2), Some(2)),
            Adjacency::AddRemove,
            h,
            Some(4),
            None,
            WINDOW,
        );
        assert_eq!(d.l1, 12.0);
        assert!((d.l2 - 2.0 * 6f64.sqrt()).abs() < 1e-12);
        // a windowed sum: values scale the count vector
        let s = windowed(
            Statistic::Sum,
            user(50, None, None),
            Adjacency::AddRemove,
            h,
            None,
            Some((0.0, 10.0)),
            WINDOW,
        );
        assert_eq!(s.l1, 150.0);
        assert!((s.l2 - 50.0 * 3f64.sqrt()).abs() < 1e-9);
    }

    /// One slot, a row-level count under replace: without the window the
    /// one-cell count would not move (a replaced row stays counted), but a
    /// row can be replaced by one whose time lies outside the slot, so the
    /// count moves by 1 (the enumeration: {in, out} × {in, out}).
    #[test]
    fn a_row_can_leave_the_horizon_under_replace() {
        let row = ROW;
        let h = Horizon {
            slots: 1,
            windows: 1,
            rows: 1,
        };
        let mut worst: f64 = 0.0;
        for (before, after) in [(1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (0.0, 0.0)] {
            worst = worst.max(f64::abs(before - after));
        }
        let d = windowed(
            Statistic::Count,
            row,
            Adjacency::Replace,
            h,
            None,
            None,
            WINDOW,
        );
        assert_eq!((d.l1, d.l2), (worst, worst));
        assert!(d.steps.iter().any(|s| s.contains(WINDOW)), "{:?}", d.steps);
        // negative control: the derivation that ignores drops says 0
        let blind = crate::sensitivity::grouped(row, Adjacency::Replace, 1, None);
        assert_eq!(blind.l1, 0.0);
        // a sum over one slot: max(hi − lo, max(|lo|, |hi|)) at least
        let s = windowed(
            Statistic::Sum,
            row,
            Adjacency::Replace,
            h,
            None,
            Some((5.0, 10.0)),
            WINDOW,
        );
        assert!(s.l1 >= 10.0, "{}", s.l1);
    }
}
