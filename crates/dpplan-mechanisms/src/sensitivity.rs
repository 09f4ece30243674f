//! Sensitivity from the privacy unit, the adjacency and the contribution
//! bounds. Every function returns the bound and the derivation in words, so
//! that a reviewer sees why the number is what it is.
//!
//! Notation: `c` = rows a unit may contribute (1 for a row- or event-level
//! unit), `m` = groups a unit may touch, `g` = rows a unit may put in one
//! group, `d` = size of the group domain, values clamped to `[lo, hi]`.

use serde::Serialize;

use dpplan_vocab::Adjacency;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Derived {
    pub l1: f64,
    pub l2: f64,
    /// How many output coordinates one unit's change can touch.
    pub coords: u64,
    /// The most one coordinate can move (ℓ∞); with `coords` it bounds the
    /// shape of the shift vector (used by the PLD accountant for a
    /// discrete Gaussian over several coordinates).
    #[serde(skip)]
    pub linf: f64,
    /// The derivation, one step per line.
    pub steps: Vec<String>,
}

/// What one unit may contribute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitBound {
    /// True for a user-level unit (bounds come from `contribution`), false
    /// for a row- or event-level unit (one row).
    pub user: bool,
    pub rows: u64,
    pub groups: Option<u64>,
    pub rows_per_group: Option<u64>,
}

impl UnitBound {
    fn who(&self) -> &'static str {
        if self.user {
            "a unit"
        } else {
            "a row"
        }
    }
}

pub use dpplan_diagnostics::num as fmt_num;

pub fn count(u: UnitBound, adj: Adjacency) -> Derived {
    let c = u.rows as f64;
    match (adj, u.user) {
        (Adjacency::AddRemove, false) => Derived {
            l1: 1.0,
            l2: 1.0,
            coords: 1,
            linf: 1.0,
            steps: vec!["adding or removing one row moves the count by 1: L1 = L2 = 1".into()],
        },
        (Adjacency::AddRemove, true) => Derived {
            l1: c,
            l2: c,
            coords: 1,
            linf: c,
            steps: vec![format!(
                "adding or removing a unit moves the count by its rows, at most rows_per_unit = {}: L1 = L2 = {}",
                u.rows, u.rows
            )],
        },
        (Adjacency::Replace, false) => Derived {
            l1: 0.0,
            l2: 0.0,
            coords: 1,
            linf: 0.0,
            steps: vec![
                "replacing one row by another keeps the number of rows: L1 = L2 = 0 (the count is public under row-level replace adjacency)".into(),
            ],
        },
        (Adjacency::Replace, true) => Derived {
            l1: c,
            l2: c,
            coords: 1,
            linf: c,
            steps: vec![format!(
                "replacing a unit's rows (up to {}) by another unit's (0 to {}) moves the count by at most {}: L1 = L2 = {}",
                u.rows, u.rows, u.rows, u.rows
            )],
        },
    }
}

pub fn sum(u: UnitBound, adj: Adjacency, lo: f64, hi: f64) -> Derived {
    let c = u.rows as f64;
    let m = lo.abs().max(hi.abs());
    let (v, step) = match (adj, u.user) {
        (Adjacency::AddRemove, false) => (
            m,
            format!(
                "one row added or removed moves the sum by at most max(|{}|, |{}|) = {}",
                fmt_num(lo),
                fmt_num(hi),
                fmt_num(m)
            ),
        ),
        (Adjacency::AddRemove, true) => (
            c * m,
            format!(
                "a unit adds or removes up to {} rows, each clamped to [{}, {}] (at most {} in absolute value): {} × {} = {}",
                u.rows,
                fmt_num(lo),
                fmt_num(hi),
                fmt_num(m),
                u.rows,
                fmt_num(m),
                fmt_num(c * m)
            ),
        ),
        (Adjacency::Replace, false) => (
            hi - lo,
            format!(
                "replacing one row changes its value within [{}, {}]: the sum moves by at most hi − lo = {}",
                fmt_num(lo),
                fmt_num(hi),
                fmt_num(hi - lo)
            ),
        ),
        (Adjacency::Replace, true) => {
            let top = hi.max(0.0);
            let bottom = lo.min(0.0);
            let range = c * (top - bottom);
            (
                range,
                format!(
                    "a unit's total lies in [{}, {}] (0 to {} rows in [{}, {}]); replacing it moves the sum by at most {}",
                    fmt_num(c * bottom),
                    fmt_num(c * top),
                    u.rows,
                    fmt_num(lo),
                    fmt_num(hi),
                    fmt_num(range)
                ),
            )
        }
    };
    Derived {
        l1: v,
        l2: v,
        coords: 1,
        linf: v,
        steps: vec![format!("{step}: L1 = L2 = {}", fmt_num(v))],
    }
}

/// Grouped count (a histogram) over a public domain of `d` groups, or a
/// grouped sum when `values` gives the clamp bounds.
pub fn grouped(u: UnitBound, adj: Adjacency, d: u64, values: Option<(f64, f64)>) -> Derived {
    let c = u.rows;
    let m = u.groups.unwrap_or(1).min(d).min(c).max(1);
    let g = u.rows_per_group.unwrap_or(c).min(c).max(1);
    // Add/remove: the count vector of one unit has at most m non-zero
    // entries, each at most g, summing to at most c.
    let l1_ar = c.min(m * g) as f64;
    let full = m.min(c / g);
    let rem = if full < m { (c - full * g).min(g) } else { 0 };
    let l2_ar = ((full * g * g + rem * rem) as f64).sqrt();
    let mut steps = Vec::new();
    if u.user {
        steps.push(format!(
            "{} touches at most min(groups_per_unit, domain, rows) = {} groups with at most {} rows each and {} rows in all",
            u.who(),
            m,
            g,
            c
        ));
    } else {
        steps.push("a row falls into exactly one group".into());
    }
    steps.push(format!(
        "add/remove: the count vector moves by L1 = {} and L2 = {} (rows packed {} per group)",
        fmt_num(l1_ar),
        fmt_num(l2_ar),
        g
    ));
    let (mut l1, mut l2, mut coords) = (l1_ar, l2_ar, m);
    // one coordinate moves by at most g rows (add/remove, and the difference
    // of two unit's counts in [0, g] under replace)
    let mut linf = g as f64;
    if adj == Adjacency::Replace {
        if !u.user {
            if d < 2 {
                l1 = 0.0;
                l2 = 0.0;
                linf = 0.0;
                steps
                    .push("replace: with one group a replaced row stays in it: L1 = L2 = 0".into());
            } else {
                l1 = 2.0;
                l2 = 2f64.sqrt();
                linf = 1.0;
                coords = 2;
                steps
                    .push("replace: a row moves from one group to another: L1 = 2, L2 = √2".into());
            }
        } else {
            l1 = 2.0 * l1_ar;
            l2 = 2f64.sqrt() * l2_ar;
            coords = (2 * m).min(d);
            steps.push(format!(
                "replace: one unit's non-negative vector is swapped for another's: L1 ≤ 2 × {} = {}, L2 ≤ √2 × {} = {}",
                fmt_num(l1_ar),
                fmt_num(l1),
                fmt_num(l2_ar),
                fmt_num(l2)
            ));
        }
    }
    if let Some((lo, hi)) = values {
        let mv = lo.abs().max(hi.abs());
        let same_sign = lo >= 0.0 || hi <= 0.0;
        match (adj, u.user) {
            (Adjacency::AddRemove, _) => {
                l1 = l1_ar * mv;
                l2 = l2_ar * mv;
                linf = g as f64 * mv;
                steps.push(format!(
                    "each row adds at most {} in absolute value: L1 = {} × {} = {}, L2 = {} × {} = {}",
                    fmt_num(mv),
                    fmt_num(l1_ar),
                    fmt_num(mv),
                    fmt_num(l1),
                    fmt_num(l2_ar),
                    fmt_num(mv),
                    fmt_num(l2)
                ));
            }
            (Adjacency::Replace, false) => {
                l1 = (2.0 * mv).max(hi - lo);
                l2 = (2f64.sqrt() * mv).max(hi - lo);
                linf = mv.max(hi - lo);
                steps.push(format!(
                    "a replaced row leaves one group and enters another (or changes value within one): L1 = max(2 × {}, {} − {}) = {}, L2 = max(√2 × {}, {}) = {}",
                    fmt_num(mv),
                    fmt_num(hi),
                    fmt_num(lo),
                    fmt_num(l1),
                    fmt_num(mv),
                    fmt_num(hi - lo),
                    fmt_num(l2)
                ));
            }
            (Adjacency::Replace, true) => {
                l1 = 2.0 * l1_ar * mv;
                let factor = if same_sign { 2f64.sqrt() } else { 2.0 };
                l2 = factor * l2_ar * mv;
                // a group's total lies in [g·lo, g·hi] (and 0 when untouched)
                linf = g as f64 * if same_sign { mv } else { hi - lo };
                steps.push(format!(
                    "values up to {} in absolute value{}: L1 = 2 × {} × {} = {}, L2 = {} × {} × {} = {}",
                    fmt_num(mv),
                    if same_sign { " and of one sign" } else { " of either sign" },
                    fmt_num(l1_ar),
                    fmt_num(mv),
                    fmt_num(l1),
                    if same_sign { "√2" } else { "2" },
                    fmt_num(l2_ar),
                    fmt_num(mv),
                    fmt_num(l2)
                ));
            }
        }
    }
    Derived {
        l1,
        l2,
        coords: coords.max(1),
        linf,
        steps,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A user-level unit's bound (tests of this crate).
    pub(crate) fn user(rows: u64, groups: Option<u64>, per_group: Option<u64>) -> UnitBound {
        UnitBound {
            user: true,
            rows,
            groups,
            rows_per_group: per_group,
        }
    }
    /// A row-level unit's bound (tests of this crate).
    pub(crate) const ROW: UnitBound = UnitBound {
        user: false,
        rows: 1,
        groups: None,
        rows_per_group: None,
    };

    #[test]
    fn counts() {
        assert_eq!(count(ROW, Adjacency::AddRemove).l1, 1.0);
        assert_eq!(count(ROW, Adjacency::Replace).l1, 0.0);
        assert_eq!(count(user(5, None, None), Adjacency::AddRemove).l2, 5.0);
        // A count under replace of a bounded user is not zero.
        assert_eq!(count(user(5, None, None), Adjacency::Replace).l1, 5.0);
    }

    #[test]
    fn sums_use_the_adjacency() {
        // replace moves a row's value by hi − lo, not max(|lo|, |hi|)
        assert_eq!(sum(ROW, Adjacency::Replace, 100.0, 200.0).l1, 100.0);
        assert_eq!(sum(ROW, Adjacency::AddRemove, 100.0, 200.0).l1, 200.0);
        assert_eq!(sum(ROW, Adjacency::Replace, -5.0, 5.0).l1, 10.0);
        assert_eq!(sum(ROW, Adjacency::AddRemove, -5.0, 5.0).l1, 5.0);
        assert_eq!(
            sum(user(5, None, None), Adjacency::AddRemove, 0.0, 3600.0).l1,
            18000.0
        );
        assert_eq!(
            sum(user(5, None, None), Adjacency::Replace, 100.0, 200.0).l1,
            1000.0
        );
        assert_eq!(
            sum(user(2, None, None), Adjacency::Replace, -1.0, 3.0).l1,
            8.0
        );
    }

    #[test]
    fn histograms_follow_the_group_bound() {
        // c rows per group, m groups: L1 = c·m, L2 = c·√m, capped by rows per unit.
        let d = grouped(user(100, Some(4), Some(3)), Adjacency::AddRemove, 10, None);
        assert_eq!(d.l1, 12.0);
        assert!((d.l2 - 6.0).abs() < 1e-12); // 3 × √4
        assert_eq!(d.coords, 4);
        // capped by rows per unit: 5 rows, 3 groups, no per-group bound → one group can hold all 5
        let d = grouped(user(5, Some(3), None), Adjacency::AddRemove, 3, None);
        assert_eq!(d.l1, 5.0);
        assert_eq!(d.l2, 5.0);
        // 5 rows, at most 2 per group, 3 groups: 2,2,1
        let d = grouped(user(5, Some(3), Some(2)), Adjacency::AddRemove, 3, None);
        assert_eq!(d.l1, 5.0);
        assert!((d.l2 - 3.0).abs() < 1e-12);
        // the domain caps the groups
        let d = grouped(user(10, Some(8), Some(1)), Adjacency::AddRemove, 3, None);
        assert_eq!(d.l1, 3.0);
        let r = grouped(ROW, Adjacency::Replace, 3, None);
        assert_eq!((r.l1, r.coords), (2.0, 2));
        assert!((r.l2 - 2f64.sqrt()).abs() < 1e-15);
        let s = grouped(ROW, Adjacency::AddRemove, 3, Some((0.0, 60.0)));
        assert_eq!(s.l1, 60.0);
    }
}
