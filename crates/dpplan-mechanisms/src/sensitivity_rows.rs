//! Sensitivity of the Language v2 aggregations: a `where` filter on any
//! statistic, and `count(distinct …)`. Group keys (categories, bins, their
//! product) need nothing new: a cell is a group, and
//! [`crate::sensitivity::grouped`] derives over `d` = the number of cells.
//!
//! A filter is a public predicate on one row, evaluated before bounding:
//! a unit's rows that pass it are a subset of its rows, so every bound that
//! counts a unit's rows (rows_per_unit, groups_per_unit, rows_per_group)
//! still holds, and under add/remove adjacency nothing changes. Under
//! replace adjacency a replaced row can move **into or out of** the
//! filter, which the unfiltered derivations do not allow for where they
//! rely on the row staying counted: the row-level count (0 → 1), the
//! row-level sum (hi − lo → max(hi − lo, M)) and the one-group row-level
//! histogram (0 → 1). A user's replaced rows already range over "0 to c
//! rows", which includes the rows the filter drops.

use dpplan_vocab::Adjacency;

use crate::sensitivity::{self, fmt_num, Derived, UnitBound};

/// Why rows can be dropped: a `where` filter.
pub const FILTER: &str = "the filter";
/// Why rows can be dropped without a filter: `invalid_rows drop` on a
/// dataset with a number column (a row whose number does not parse is
/// dropped), or a category outside its public domain. The same argument
/// holds: a dropped row is a row that left the aggregate.
pub const INVALID_ROWS: &str = "`invalid_rows drop` (a row with an invalid number is dropped)";
/// A one-group histogram drops the rows outside its one group.
pub const OUTSIDE_DOMAIN: &str = "the public domain (a row outside it is dropped)";

/// The step that says what dropping rows (`why`) changes, added to every
/// such derivation.
fn filter_step(changed: bool, why: &str) -> String {
    if !changed && why != FILTER {
        // nothing to say: rows dropped as invalid or outside the domain
        // change no bound but the replace ones, where it is said
        return String::new();
    }
    if changed {
        format!("with {why}: under replace adjacency a replaced row may be kept while the row it replaces is dropped (or the other way round), so the row can enter or leave the aggregate")
    } else {
        format!("with {why}: a unit's kept rows are a subset of its rows, so the bound above holds unchanged")
    }
}

fn push(steps: &mut Vec<String>, step: String) {
    if !step.is_empty() {
        steps.push(step);
    }
}

fn set(d: &mut Derived, v: f64, step: String) {
    d.l1 = v;
    d.l2 = v;
    d.linf = v;
    d.coords = 1;
    d.steps.push(step);
}

/// A count of the rows that are not dropped (`why`: [`FILTER`],
/// [`INVALID_ROWS`]).
pub fn count(u: UnitBound, adj: Adjacency, why: &str) -> Derived {
    let mut d = sensitivity::count(u, adj);
    if adj == Adjacency::Replace && !u.user {
        d.steps.clear();
        set(
            &mut d,
            1.0,
            "replacing one row by another moves the count by at most 1: L1 = L2 = 1".into(),
        );
        d.steps.push(filter_step(true, why));
    } else {
        push(&mut d.steps, filter_step(false, why));
    }
    d
}

/// A sum of the rows that are not dropped.
pub fn sum(u: UnitBound, adj: Adjacency, lo: f64, hi: f64, why: &str) -> Derived {
    let mut d = sensitivity::sum(u, adj, lo, hi);
    if adj == Adjacency::Replace && !u.user {
        let m = lo.abs().max(hi.abs());
        let v = (hi - lo).max(m);
        d.steps.clear();
        d.steps.push(filter_step(true, why));
        set(
            &mut d,
            v,
            format!(
                "a replaced row either stays in the filter (the sum moves by at most hi − lo = {}) or enters or leaves it (by at most max(|lo|, |hi|) = {}): L1 = L2 = {}",
                fmt_num(hi - lo),
                fmt_num(m),
                fmt_num(v)
            ),
        );
    } else {
        push(&mut d.steps, filter_step(false, why));
    }
    d
}

/// A grouped count or sum over `d` cells of the rows that are not dropped.
pub fn grouped(
    u: UnitBound,
    adj: Adjacency,
    d: u64,
    values: Option<(f64, f64)>,
    why: &str,
) -> Derived {
    let mut out = sensitivity::grouped(u, adj, d, values);
    if adj == Adjacency::Replace && !u.user && d < 2 && values.is_none() {
        // the one-group histogram is the count
        set(
            &mut out,
            1.0,
            "replace: a row may enter or leave the one group, moving its count by 1: L1 = L2 = 1"
                .into(),
        );
        out.steps.push(filter_step(true, why));
    } else if adj == Adjacency::Replace && !u.user && why == FILTER {
        out.steps.push(format!("with {why}: a replaced row may be dropped instead of moving to another group, which moves one group by 1 (or one sum by at most max(|lo|, |hi|)): within the bound above"));
    } else {
        push(&mut out.steps, filter_step(false, why));
    }
    out
}

/// `count(distinct d.col)`. `keyed`: the column is the user-level unit's
/// id, so all of a unit's rows carry one value. Under a user-level unit
/// and another id column, a unit's kept rows (at most `rows_per_unit`)
/// each carry one id.
pub fn distinct(u: UnitBound, adj: Adjacency, keyed: bool) -> Derived {
    let c = u.rows.max(1);
    let step = match (u.user, keyed, adj) {
        (true, true, Adjacency::AddRemove) => "the column is the unit's id: adding or removing a unit adds or removes its one id, whatever its rows (rows_per_unit does not enter): L1 = L2 = 1".to_string(),
        (true, true, Adjacency::Replace) => "the column is the unit's id: replacing a unit removes its id (if any of its rows was counted) and adds the other unit's (if any of its rows is): the count moves by −1, 0 or +1: L1 = L2 = 1".to_string(),
        (true, false, Adjacency::AddRemove) => format!("the column is not the unit's id: each of the unit's kept rows (at most rows_per_unit = {c}, enforced) carries one id, so adding or removing the unit adds or removes at most {c} distinct ids: L1 = L2 = {c}"),
        (true, false, Adjacency::Replace) => format!("the column is not the unit's id: replacing a unit removes at most {c} distinct ids (one per kept row, rows_per_unit = {c}) and adds at most {c}; the two move the count in opposite directions, so by at most {c}: L1 = L2 = {c}"),
        (_, _, Adjacency::AddRemove) => "each row carries one id: adding or removing one row adds or removes at most one distinct id: L1 = L2 = 1".to_string(),
        (_, _, Adjacency::Replace) => "replacing one row removes at most one distinct id (its old id, if no other row has it) and adds at most one (its new id): the count moves by −1, 0 or +1: L1 = L2 = 1 (unlike the row count, which is 0 under row-level replace)".to_string(),
    };
    let d = if u.user && !keyed { c as f64 } else { 1.0 };
    Derived {
        l1: d,
        l2: d,
        coords: 1,
        linf: d,
        steps: vec![step],
    }
}

/// `count(distinct d.unit_id by k)` over `d` cells (users per cell): the
/// number of units with a kept row in each cell, under a user-level unit
/// (the checker refuses it under any other). A unit adds 1 to each cell
/// where it has a kept row, whatever the number of its rows there, so its
/// vector is the grouped count's with at most one row per group: it
/// touches at most min(groups_per_unit, d, rows_per_unit) cells, each by 1.
/// `why`: why rows can be dropped (a filter), if they can.
pub fn units_per_cell(u: UnitBound, adj: Adjacency, d: u64, why: Option<&str>) -> Derived {
    let one = UnitBound {
        rows_per_group: Some(1),
        ..u
    };
    let mut out = match why {
        Some(why) => grouped(one, adj, d, None, why),
        None => sensitivity::grouped(one, adj, d, None),
    };
    out.steps.insert(
        0,
        "the column is the unit's id: a unit counts once in each cell where it has a kept row, however many rows it has there (rows_per_group does not enter): its vector is a grouped count's with one row per group".into(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: UnitBound = UnitBound {
        user: false,
        rows: 1,
        groups: Some(1),
        rows_per_group: Some(1),
    };
    fn user(c: u64) -> UnitBound {
        UnitBound {
            user: true,
            rows: c,
            groups: Some(2),
            rows_per_group: Some(c),
        }
    }

    /// The independent formulas: the largest change of the statistic over
    /// every pair of neighbouring row sets, enumerated on a tiny universe
    /// (rows with a value in {lo, 0, hi} that pass the filter or not).
    fn brute_replace_row(lo: f64, hi: f64, sum: bool) -> f64 {
        let vals = [lo, 0.0_f64.clamp(lo, hi), hi];
        let mut worst = 0.0f64;
        for &(a, pa) in vals
            .iter()
            .flat_map(|v| [(*v, true), (*v, false)])
            .collect::<Vec<_>>()
            .iter()
        {
            for &(b, pb) in vals
                .iter()
                .flat_map(|v| [(*v, true), (*v, false)])
                .collect::<Vec<_>>()
                .iter()
            {
                let f = |x: f64, p: bool| {
                    if p {
                        if sum {
                            x
                        } else {
                            1.0
                        }
                    } else {
                        0.0
                    }
                };
                worst = worst.max((f(a, pa) - f(b, pb)).abs());
            }
        }
        worst
    }

    #[test]
    fn a_filtered_row_count_under_replace_is_one_and_unfiltered_zero() {
        assert_eq!(
            count(ROW, Adjacency::Replace, FILTER).l1,
            brute_replace_row(0.0, 1.0, false)
        );
        assert_eq!(count(ROW, Adjacency::Replace, FILTER).l1, 1.0);
        // negative control: without the filter the derivation is 0
        assert_eq!(sensitivity::count(ROW, Adjacency::Replace).l1, 0.0);
        // add/remove and user-level are unchanged by a filter
        assert_eq!(count(ROW, Adjacency::AddRemove, FILTER).l1, 1.0);
        assert_eq!(count(user(7), Adjacency::Replace, FILTER).l1, 7.0);
        assert_eq!(count(user(7), Adjacency::AddRemove, FILTER).l2, 7.0);
    }

    #[test]
    fn a_filtered_row_sum_under_replace_is_the_brute_force_bound() {
        for (lo, hi) in [(100.0, 200.0), (-5.0, 5.0), (-3.0, 1.0), (0.0, 60.0)] {
            let d = sum(ROW, Adjacency::Replace, lo, hi, FILTER);
            assert_eq!(d.l1, brute_replace_row(lo, hi, true), "[{lo}, {hi}]");
        }
        // [100, 200]: unfiltered hi − lo = 100, filtered 200 (a row leaves)
        assert_eq!(
            sensitivity::sum(ROW, Adjacency::Replace, 100.0, 200.0).l1,
            100.0
        );
        assert_eq!(sum(ROW, Adjacency::Replace, 100.0, 200.0, FILTER).l1, 200.0);
    }

    #[test]
    fn a_filtered_sum_rises_with_rows_per_unit() {
        let a = sum(user(3), Adjacency::AddRemove, 0.0, 50.0, FILTER).l1;
        let b = sum(user(4), Adjacency::AddRemove, 0.0, 50.0, FILTER).l1;
        assert_eq!((a, b), (150.0, 200.0));
        assert_eq!(
            sum(user(4), Adjacency::Replace, 0.0, 50.0, FILTER).l1,
            200.0
        );
    }

    #[test]
    fn a_filtered_one_group_histogram_under_replace_is_one() {
        assert_eq!(
            sensitivity::grouped(ROW, Adjacency::Replace, 1, None).l1,
            0.0
        );
        assert_eq!(grouped(ROW, Adjacency::Replace, 1, None, FILTER).l1, 1.0);
        let d = grouped(ROW, Adjacency::Replace, 6, None, FILTER);
        assert_eq!(d.l1, 2.0);
        assert!((d.l2 - 2f64.sqrt()).abs() < 1e-15);
        // the product of keys is a domain of d cells like any other: a user's
        // L2 over 24 cells with 2 groups of 3 rows is 3√2, whatever d ≥ 2
        let u = UnitBound {
            user: true,
            rows: 6,
            groups: Some(2),
            rows_per_group: Some(3),
        };
        let d = grouped(u, Adjacency::AddRemove, 24, None, FILTER);
        assert_eq!(d.l1, 6.0);
        assert!((d.l2 - 18f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn distinct_is_one_whatever_the_rows_per_unit() {
        for c in [1, 5, 1000] {
            for adj in [Adjacency::AddRemove, Adjacency::Replace] {
                let d = distinct(user(c), adj, true);
                assert_eq!((d.l1, d.l2), (1.0, 1.0));
            }
        }
        // negative control: the row count of the same unit is c
        assert_eq!(
            sensitivity::count(user(1000), Adjacency::AddRemove).l1,
            1000.0
        );
        assert_eq!(distinct(ROW, Adjacency::Replace, false).l1, 1.0);
        assert_eq!(sensitivity::count(ROW, Adjacency::Replace).l1, 0.0);
    }

    /// A unit's users-per-cell vector: 1 in each cell where it keeps a
    /// row. Every unit the bounds allow: its rows (≤ c) spread over at most
    /// m of the d cells, at most g per cell; the vector only sees which
    /// cells it touches.
    fn unit_vectors(c: u64, m: u64, g: u64, d: u64) -> Vec<Vec<u64>> {
        let mut out = vec![vec![0; d as usize]];
        // every assignment of a row count in [0, g] to each cell
        let mut counts = vec![0u64; d as usize];
        loop {
            let touched = counts.iter().filter(|&&x| x > 0).count() as u64;
            if counts.iter().sum::<u64>() <= c && touched <= m {
                out.push(counts.iter().map(|&x| u64::from(x > 0)).collect());
            }
            let mut i = 0;
            loop {
                if i == counts.len() {
                    return out;
                }
                counts[i] += 1;
                if counts[i] <= g {
                    break;
                }
                counts[i] = 0;
                i += 1;
            }
        }
    }

    /// The independent computation: the largest L1 and L2 of the change of
    /// the users-per-cell vector, over every unit (add/remove) or pair of
    /// units (replace) the bounds allow, on small universes.
    #[test]
    fn units_per_cell_matches_brute_force() {
        for c in 1..=4u64 {
            for m in 1..=3u64 {
                for g in 1..=2u64 {
                    for d in 1..=4u64 {
                        let units = unit_vectors(c, m, g, d);
                        let norms = |x: &[u64], y: &[u64]| {
                            let l1: u64 = x.iter().zip(y).map(|(a, b)| a.abs_diff(*b)).sum();
                            (l1 as f64, (l1 as f64).sqrt()) // entries move by 0 or 1
                        };
                        let zero = vec![0; d as usize];
                        let worst = |pairs: &mut dyn Iterator<Item = (f64, f64)>| {
                            pairs.fold((0.0f64, 0.0f64), |a, b| (a.0.max(b.0), a.1.max(b.1)))
                        };
                        let ar = worst(&mut units.iter().map(|x| norms(x, &zero)));
                        let rep = worst(
                            &mut units
                                .iter()
                                .flat_map(|x| units.iter().map(move |y| (x, y)))
                                .map(|(x, y)| norms(x, y)),
                        );
                        let u = UnitBound {
                            user: true,
                            rows: c,
                            groups: Some(m),
                            rows_per_group: Some(g),
                        };
                        let got_ar = units_per_cell(u, Adjacency::AddRemove, d, None);
                        let got_rep = units_per_cell(u, Adjacency::Replace, d, None);
                        let at = format!("c={c} m={m} g={g} d={d}");
                        assert_eq!((got_ar.l1, got_ar.l2), ar, "add/remove {at}");
                        assert!(
                            (got_rep.l1, got_rep.l2) == rep,
                            "replace {at}: {:?} vs {rep:?}",
                            (got_rep.l1, got_rep.l2)
                        );
                        assert_eq!(got_ar.linf, 1.0, "{at}");
                        // with a filter (dropped rows) the bound is the same
                        let f = units_per_cell(u, Adjacency::Replace, d, Some(FILTER));
                        assert_eq!((f.l1, f.l2), rep, "filter {at}");
                    }
                }
            }
        }
        // negative control: the row histogram of the same unit counts its
        // rows per cell (rows_per_group = 2), so it is larger
        let u = UnitBound {
            user: true,
            rows: 4,
            groups: Some(2),
            rows_per_group: Some(2),
        };
        let rows = sensitivity::grouped(u, Adjacency::AddRemove, 4, None);
        let users = units_per_cell(u, Adjacency::AddRemove, 4, None);
        assert_eq!((rows.l1, users.l1), (4.0, 2.0));
    }
}
