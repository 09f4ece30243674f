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
            let (r1, r2sq) = replace_counts(c, m, g, d);
            l1 = r1 as f64;
            l2 = (r2sq as f64).sqrt();
            coords = (2 * m).min(d);
            steps.push(format!(
                "replace: one unit's non-negative count vector x is swapped for another's y; where both touch a group, dropping the smaller of the two keeps y within the bounds and only widens |x − y|, so the worst pair has disjoint supports of a and b ≤ {m} groups with a + b ≤ {d}: L1 = {} and L2 = {} (≤ 2 × {} and √2 × {}, equal when the domain has room for both)",
                fmt_num(l1),
                fmt_num(l2),
                fmt_num(l1_ar),
                fmt_num(l2_ar)
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
            (Adjacency::Replace, false) if d < 2 => {
                // one group: the replaced row's value changes, or (a row
                // that falls out of the query) it leaves
                l1 = mv.max(hi - lo);
                l2 = l1;
                linf = l1;
                steps.push(format!(
                    "with one group a replaced row changes its value within [{}, {}] (or leaves): L1 = L2 = max({}, {} − {}) = {}",
                    fmt_num(lo),
                    fmt_num(hi),
                    fmt_num(mv),
                    fmt_num(hi),
                    fmt_num(lo),
                    fmt_num(l1)
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
                // one sign: a group's total lies in [0, g·mv] (or its
                // mirror), and the disjoint-support argument of the counts
                // holds for the totals; either sign: both norms doubled
                let (r1, r2sq) = replace_counts(c, m, g, d);
                l1 = if same_sign {
                    r1 as f64 * mv
                } else {
                    2.0 * l1_ar * mv
                };
                let factor = if same_sign { 2f64.sqrt() } else { 2.0 };
                l2 = if same_sign {
                    (r2sq as f64).sqrt() * mv
                } else {
                    factor * l2_ar * mv
                };
                // a group's total lies in [g·lo, g·hi] (and 0 when untouched)
                linf = g as f64 * if same_sign { mv } else { hi - lo };
                steps.push(if same_sign {
                    format!(
                        "values up to {} in absolute value and of one sign: the count vector's replace norms times {}: L1 = {}, L2 = {}",
                        fmt_num(mv),
                        fmt_num(mv),
                        fmt_num(l1),
                        fmt_num(l2)
                    )
                } else {
                    format!(
                        "values up to {} in absolute value of either sign: L1 = 2 × {} × {} = {}, L2 = 2 × {} × {} = {}",
                        fmt_num(mv),
                        fmt_num(l1_ar),
                        fmt_num(mv),
                        fmt_num(l1),
                        fmt_num(l2_ar),
                        fmt_num(mv),
                        fmt_num(l2)
                    )
                });
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

/// (L1, L2²) of x − y for two count vectors of one unit each (≤ `c` rows,
/// ≤ `m` groups, ≤ `g` rows per group) over `d` groups, exact: the worst
/// pair has disjoint supports (where both touch a group, lowering the
/// smaller entry to 0 keeps the vector within the bounds and raises
/// |xᵢ − yᵢ| to the larger entry), so it is the best split of a + b ≤ d
/// groups, each side packed g per group from the first.
pub(crate) fn replace_counts(c: u64, m: u64, g: u64, d: u64) -> (u128, u128) {
    let (c, m, g, d) = (c as u128, m as u128, g.max(1) as u128, d as u128);
    let side = |a: u128| -> (u128, u128) {
        let full = a.min(c / g);
        let rem = if full < a { (c - full * g).min(g) } else { 0 };
        ((full * g + rem).min(c), full * g * g + rem * rem)
    };
    let m = m.min(d);
    if d >= 2 * m {
        let (l1, l2sq) = side(m);
        return (2 * l1, 2 * l2sq);
    }
    (0..=m)
        .map(|a| {
            let (x1, x2) = side(a);
            let (y1, y2) = side((d - a).min(m));
            (x1 + y1, x2 + y2)
        })
        .fold((0, 0), |(b1, b2), (v1, v2)| (b1.max(v1), b2.max(v2)))
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

    /// Every count vector of one unit over `d` groups: ≤ c rows, ≤ m
    /// groups, ≤ g per group.
    fn count_vectors(c: u64, m: u64, g: u64, d: u64) -> Vec<Vec<u64>> {
        let mut out = vec![vec![]];
        for _ in 0..d {
            out = out
                .into_iter()
                .flat_map(|v: Vec<u64>| {
                    (0..=g).map(move |x| {
                        let mut w = v.clone();
                        w.push(x);
                        w
                    })
                })
                .filter(|v| {
                    v.iter().sum::<u64>() <= c && v.iter().filter(|&&x| x > 0).count() as u64 <= m
                })
                .collect();
        }
        out
    }

    /// User-level replace on a histogram: the derived L1 and L2 are the
    /// maxima over every pair of count vectors (brute force), for every
    /// small bound; the doubled add/remove values the derivation used to
    /// take are strictly above in some cases (L1 6 where 5 holds).
    #[test]
    fn replace_histogram_norms_are_the_brute_force_maxima() {
        let mut looser = 0;
        for c in 1..=4 {
            for m in 1..=3 {
                for g in 1..=3 {
                    for d in 1..=4 {
                        let vs = count_vectors(c, m, g, d);
                        let (mut b1, mut b2) = (0u64, 0u64);
                        for x in &vs {
                            for y in &vs {
                                let d1 = x.iter().zip(y).map(|(a, b)| a.abs_diff(*b)).sum::<u64>();
                                let d2 = x
                                    .iter()
                                    .zip(y)
                                    .map(|(a, b)| a.abs_diff(*b).pow(2))
                                    .sum::<u64>();
                                b1 = b1.max(d1);
                                b2 = b2.max(d2);
                            }
                        }
                        let r = grouped(user(c, Some(m), Some(g)), Adjacency::Replace, d, None);
                        assert_eq!(r.l1, b1 as f64, "L1: c {c} m {m} g {g} d {d}");
                        assert_eq!(r.l2, (b2 as f64).sqrt(), "L2: c {c} m {m} g {g} d {d}");
                        let ar = grouped(user(c, Some(m), Some(g)), Adjacency::AddRemove, d, None);
                        if 2.0 * ar.l1 > r.l1 {
                            looser += 1;
                        }
                    }
                }
            }
        }
        assert!(looser > 10, "{looser}");
        // the case: 3 rows, ≤ 2 per group, 3 groups: 5, not 6
        let r = grouped(user(3, Some(3), Some(2)), Adjacency::Replace, 3, None);
        assert_eq!(r.l1, 5.0);
    }

    /// A user-level grouped sum of one-signed values under replace: the
    /// brute force over every placement of rows with values on a grid of
    /// the clamp, against the derived norms (equal), and the doubled ones
    /// strictly above on a small domain.
    #[test]
    fn replace_grouped_sum_norms_are_the_brute_force_maxima() {
        let (lo, hi) = (1.0, 3.0);
        for (c, m, g, d) in [(3, 2, 2, 2), (3, 3, 2, 3), (2, 2, 1, 3), (4, 2, 3, 2)] {
            // a unit's group totals: each group gets n ≤ g rows with
            // values in {1, 2, 3}, so a total in {0} ∪ [n, 3n]
            let vs = count_vectors(c, m, g, d);
            let totals = |v: &Vec<u64>| -> Vec<Vec<f64>> {
                let mut out = vec![vec![]];
                for &n in v {
                    let choices: Vec<f64> = if n == 0 {
                        vec![0.0]
                    } else {
                        (n..=3 * n).map(|t| t as f64).collect()
                    };
                    out = out
                        .into_iter()
                        .flat_map(|w: Vec<f64>| {
                            choices.iter().map(move |&t| {
                                let mut w = w.clone();
                                w.push(t);
                                w
                            })
                        })
                        .collect();
                }
                out
            };
            let all: Vec<Vec<f64>> = vs.iter().flat_map(totals).collect();
            let (mut b1, mut b2) = (0.0f64, 0.0f64);
            for x in &all {
                for y in &all {
                    let d1: f64 = x.iter().zip(y).map(|(a, b)| (a - b).abs()).sum();
                    let d2: f64 = x.iter().zip(y).map(|(a, b)| (a - b).powi(2)).sum();
                    b1 = b1.max(d1);
                    b2 = b2.max(d2);
                }
            }
            let r = grouped(
                user(c, Some(m), Some(g)),
                Adjacency::Replace,
                d,
                Some((lo, hi)),
            );
            assert_eq!(r.l1, b1, "L1: c {c} m {m} g {g} d {d}");
            assert!(
                (r.l2 - b2.sqrt()).abs() < 1e-12,
                "L2: c {c} m {m} g {g} d {d}: {} vs {}",
                r.l2,
                b2.sqrt()
            );
        }
    }

    /// Row-level replace on a one-group sum: L1 = L2 = max(M, hi − lo), not
    /// √2·M; with two groups a row may move: √2·M.
    #[test]
    fn a_one_cell_sum_under_row_replace() {
        let one = grouped(ROW, Adjacency::Replace, 1, Some((2.0, 5.0)));
        assert_eq!((one.l1, one.l2), (5.0, 5.0));
        let one = grouped(ROW, Adjacency::Replace, 1, Some((0.0, 4.0)));
        assert_eq!((one.l1, one.l2), (4.0, 4.0));
        let two = grouped(ROW, Adjacency::Replace, 2, Some((0.0, 4.0)));
        assert_eq!((two.l1, two.l2), (8.0, 2f64.sqrt() * 4.0));
    }
}
