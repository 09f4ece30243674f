//! The sensitivity of a windowed query over its whole schedule.
//!
//! A query with `window` releases, at each of its `N` slots, the statistic
//! of the rows whose time falls in that slot, and only those: the windows
//! are disjoint. Its `N` releases together are one vector release — the
//! per-window answers side by side, `N` coordinates (or `N × d` cells for a
//! statistic over `d` groups) — with independent noise on each coordinate.
//!
//! **One window.** A run bounds a window as one release bounds the data
//! (at most `r = rows_per_window` rows of a unit, and the grouped bounds
//! within the window), so what a unit moves in one window is the
//! per-release derivation of the statistic with `rows_per_unit` read as
//! `r` — the same facts, e.g. a distinct count of the unit's own id moves
//! by at most 1 in a window whatever the unit's rows there. The caller
//! derives it ([`PerWindow`]: adding or removing the unit's rows of the
//! window and, under `replace`, replacing them by another unit's).
//!
//! **The horizon.** A unit appears in at most `W` windows
//! (`windows_per_unit`, at most `N`); a row- or event-level unit is one
//! row, in one window (`W = 1`). Under add/remove its vector is at most
//! `W` windows' worth of the one-window shift: L1 = W·L1₁, L2 = √W·L2₁,
//! L∞ = L∞₁ (tight: a unit may put its worst window's rows in each of W
//! windows). Under replace the unit's windows A and its replacement's B
//! are each at most `W` of the `N`: in the `k = |A ∩ B|` windows of both
//! the window moves by the one-window replace bound, in each of the
//! others (at most `min(2(W − k), N − k)` of them) by the add/remove one —
//! a row-level unit's row may so move to another window or, as a window
//! is a filter, leave the horizon. The bound is the largest over `k` (a
//! concave piecewise-linear function of `k`: its largest value is at
//! `k = 0`, `k = 2W − N` or `k = W`), each norm on its own; every
//! one-window bound is first capped by its coordinates (at most `d`) times
//! its L∞.

use crate::sensitivity::{fmt_num, Derived};

/// Why a row of a row-level unit can leave a windowed aggregate under
/// `replace` when nothing else drops it: the window itself.
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

/// What one unit moves in one window: the statistic's per-release
/// derivation over the unit's rows in one window (at most
/// `rows_per_window`).
#[derive(Debug, Clone)]
pub struct PerWindow {
    /// Adding or removing the unit's rows of the window.
    pub add_remove: Derived,
    /// Under `replace`: replacing them by another unit's rows of the same
    /// window (`None` under add/remove).
    pub replace: Option<Derived>,
}

/// What a windowed statistic is, for the derivation's words.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// A user-level unit (else a row- or event-level one).
    pub user: bool,
    /// d: the groups of a grouped statistic (1 otherwise).
    pub groups: u64,
    /// A distinct count of the user-level unit's own id.
    pub own_id: bool,
}

/// The sensitivity of the whole schedule of a windowed query, seen as one
/// vector release over its `N` disjoint windows, from what one unit moves
/// in one window.
pub fn windowed(one: &PerWindow, h: Horizon, shape: Shape) -> Derived {
    let d = shape.groups.max(1);
    let n = h.slots.max(1);
    let w = h.windows.min(n).max(1);
    let ar = capped(&one.add_remove, d);
    let mut steps = vec![
        explain(h, w, d, shape),
        window_step(&one.add_remove, h, shape),
    ];
    let mut out = Derived {
        l1: w as f64 * ar.l1,
        l2: (w as f64).sqrt() * ar.l2,
        coords: w.saturating_mul(ar.coords),
        linf: ar.linf,
        steps: Vec::new(),
    };
    let horizon = if shape.user {
        format!(
            "add/remove: a unit appears in at most windows_per_unit = {w} windows, each moved as in one window: L1 = {w} × {} = {}, L2 = √{w} × {} = {}",
            fmt_num(ar.l1),
            fmt_num(out.l1),
            fmt_num(ar.l2),
            fmt_num(out.l2)
        )
    } else {
        format!(
            "add/remove: a row lies in exactly one window: L1 = {}, L2 = {}",
            fmt_num(out.l1),
            fmt_num(out.l2)
        )
    };
    steps.push(horizon);
    if let Some(rep) = &one.replace {
        let rep = capped(rep, d);
        steps.push(format!(
            "replace, in a window where both {} and its replacement lie: {}",
            if shape.user { "the unit" } else { "the row" },
            rep.steps.join("; ")
        ));
        let (k, l1, l2sq, coords) = worst_split(&ar, &rep, w, n);
        out.l1 = l1;
        out.l2 = l2sq.sqrt();
        out.coords = coords.min(n.saturating_mul(d));
        out.linf = ar.linf.max(rep.linf);
        steps.push(replace_step(&ar, &rep, (w, n, k), &out, shape.user));
    }
    out.steps = steps;
    out
}

/// A one-window bound with each norm capped by its coordinates (at most
/// `d`) times its L∞: at most `coords` cells move, each by at most L∞.
fn capped(one: &Derived, d: u64) -> Derived {
    let coords = one.coords.clamp(1, d);
    let c = coords as f64;
    Derived {
        l1: one.l1.min(c * one.linf),
        l2: one.l2.min(c.sqrt() * one.linf),
        coords,
        linf: one.linf,
        steps: one.steps.clone(),
    }
}

/// The largest of L1, L2² and the coordinates over the split of the
/// unit's windows and its replacement's: `k` windows of both (the replace
/// bound), at most `min(2(W − k), N − k)` of one only (the add/remove
/// bound). Each is a concave piecewise-linear function of `k` on [0, W]:
/// its largest value is at 0, at the kink 2W − N, or at W. Returns the k
/// of the largest L2² with the three figures.
fn worst_split(ar: &Derived, rep: &Derived, w: u64, n: u64) -> (u64, f64, f64, u64) {
    let kink = w.saturating_mul(2).saturating_sub(n).min(w);
    let at = |k: u64| {
        let alone = w.saturating_sub(k).saturating_mul(2).min(n - k);
        (
            k,
            k as f64 * rep.l1 + alone as f64 * ar.l1,
            k as f64 * rep.l2 * rep.l2 + alone as f64 * ar.l2 * ar.l2,
            k.saturating_mul(rep.coords)
                .saturating_add(alone.saturating_mul(ar.coords)),
        )
    };
    let splits = [at(0), at(kink), at(w)];
    let (k, _, l2sq, _) = splits
        .iter()
        .copied()
        .fold(splits[0], |a, b| if b.2 > a.2 { b } else { a });
    let l1 = splits.iter().map(|s| s.1).fold(0.0, f64::max);
    let coords = splits.iter().map(|s| s.3).max().unwrap_or(0);
    (k, l1, l2sq, coords)
}

/// The first step of the derivation: the vector.
fn explain(h: Horizon, w: u64, d: u64, shape: Shape) -> String {
    let vector = if d > 1 {
        format!(
            "the {} releases are one vector release over {} disjoint windows × {} groups = {} cells",
            h.slots,
            h.slots,
            d,
            h.slots.saturating_mul(d)
        )
    } else {
        format!(
            "the {} releases are one vector release over {} disjoint windows (one coordinate per window)",
            h.slots, h.slots
        )
    };
    if shape.user {
        format!(
            "{vector}; a unit appears in at most windows_per_unit = {w} of them, with at most rows_per_window = {} rows in each",
            h.rows
        )
    } else {
        format!("{vector}; a row has one time, so it lies in exactly one window")
    }
}

/// One window's shift under add/remove, in words.
fn window_step(one: &Derived, h: Horizon, shape: Shape) -> String {
    let mut s = if shape.user {
        format!(
            "one window is bounded as one release is, with rows_per_unit read as rows_per_window = {}: {}",
            h.rows,
            one.steps.join("; ")
        )
    } else {
        format!("one window: {}", one.steps.join("; "))
    };
    if shape.own_id {
        s += &format!(
            "; so in each window the unit moves the distinct count of its own id by at most 1, whatever its rows there (rows_per_window = {} does not enter)",
            h.rows
        );
    }
    s
}

/// The replace step over the horizon, in words.
fn replace_step(
    ar: &Derived,
    rep: &Derived,
    (w, n, k): (u64, u64, u64),
    out: &Derived,
    user: bool,
) -> String {
    let who = if user {
        format!("the unit's windows and its replacement's are at most windows_per_unit = {w} each of the {n}")
    } else {
        format!("a replaced row and its replacement lie in one window each of the {n}, or in none ({WINDOW}, as outside a filter)")
    };
    format!(
        "replace over the horizon: {who}; the k windows of both move by at most L1 = {}, L2 = {} each, the others (at most min(2·({w} − k), {n} − k)) by at most L1 = {}, L2 = {} each (only one of the two lies there); the worst k ({k} for L2): L1 = {}, L2 = {}",
        fmt_num(rep.l1),
        fmt_num(rep.l2),
        fmt_num(ar.l1),
        fmt_num(ar.l2),
        fmt_num(out.l1),
        fmt_num(out.l2)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensitivity::tests::{user, ROW};
    use crate::sensitivity::{self, UnitBound};
    use crate::sensitivity_rows;
    use dpplan_vocab::Adjacency;

    const USER: Shape = Shape {
        user: true,
        groups: 1,
        own_id: false,
    };

    fn h(slots: u64, windows: u64, rows: u64) -> Horizon {
        Horizon {
            slots,
            windows,
            rows,
        }
    }

    /// The one-window derivations of `f` under add/remove and `adj`.
    fn per(adj: Adjacency, f: impl Fn(Adjacency) -> Derived) -> PerWindow {
        PerWindow {
            add_remove: f(Adjacency::AddRemove),
            replace: (adj == Adjacency::Replace).then(|| f(Adjacency::Replace)),
        }
    }

    /// The largest L1, L2, non-zero cells and L∞ of what one unit moves,
    /// enumerated: a unit's contribution is a window-by-window choice
    /// among `options` (each window's cells), non-zero in at most `w` of
    /// the `n` windows; add/remove moves the vector by the unit's, replace
    /// by the replacement's minus the unit's, over every pair.
    fn brute(n: u32, w: usize, options: &[Vec<f64>], adj: Adjacency) -> (f64, f64, u64, f64) {
        let zero = vec![0.0; options[0].len()];
        let mut placements: Vec<Vec<&Vec<f64>>> = Vec::new();
        for code in 0..options.len().pow(n) {
            let (mut c, mut p) = (code, Vec::new());
            for _ in 0..n {
                p.push(&options[c % options.len()]);
                c /= options.len();
            }
            if p.iter().filter(|x| x.iter().any(|v| *v != 0.0)).count() <= w {
                placements.push(p);
            }
        }
        let mut worst = (0.0f64, 0.0f64, 0u64, 0.0f64);
        let mut see = |a: &[&Vec<f64>], b: &[&Vec<f64>]| {
            let diff: Vec<f64> = a
                .iter()
                .zip(b)
                .flat_map(|(x, y)| x.iter().zip(y.iter()).map(|(p, q)| q - p))
                .collect();
            let l1: f64 = diff.iter().map(|v| v.abs()).sum();
            let l2 = diff.iter().map(|v| v * v).sum::<f64>().sqrt();
            let nz = diff.iter().filter(|v| **v != 0.0).count() as u64;
            let linf = diff.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            worst = (
                worst.0.max(l1),
                worst.1.max(l2),
                worst.2.max(nz),
                worst.3.max(linf),
            );
        };
        let empty: Vec<&Vec<f64>> = (0..n).map(|_| &zero).collect();
        for a in &placements {
            match adj {
                Adjacency::AddRemove => see(a, &empty),
                Adjacency::Replace => placements.iter().for_each(|b| see(a, b)),
            }
        }
        worst
    }

    /// Sound (no figure below the enumeration), and equal where `tight`.
    fn agrees(d: &Derived, b: (f64, f64, u64, f64), tight: bool, what: &str) {
        let eps = 1e-9;
        assert!(
            d.l1 >= b.0 - eps && d.l2 >= b.1 - eps,
            "{what}: {d:?} below {b:?}"
        );
        assert!(
            d.coords >= b.2 && d.linf >= b.3 - eps,
            "{what}: {d:?} below {b:?}"
        );
        if tight {
            assert!(
                (d.l1 - b.0).abs() < eps && (d.l2 - b.1).abs() < eps,
                "{what}: {d:?} vs {b:?}"
            );
        }
    }

    /// A distinct count of the unit's own id: a unit is in a window's count
    /// or not, whatever its rows there (options 0 or 1 per window). Equal to
    /// the enumeration under both adjacencies: L1 = L2² = W under
    /// add/remove, min(2W, N) under replace (the unit's windows and its
    /// replacement's, disjoint when they fit). Negative controls: the
    /// rows_per_window derivation (the count's) is above it, and a replace
    /// bound that forgot the replacement's windows is below it.
    #[test]
    fn a_distinct_count_of_the_unit_id_moves_one_per_window() {
        let options = [vec![0.0], vec![1.0]];
        for n in 1..=5u32 {
            for w in 1..=u64::from(n) {
                for adj in [Adjacency::AddRemove, Adjacency::Replace] {
                    let r = 10;
                    let one = per(adj, |a| {
                        sensitivity_rows::distinct(user(r, None, None), a, true)
                    });
                    let own = Shape {
                        own_id: true,
                        ..USER
                    };
                    let d = windowed(&one, h(u64::from(n), w, r), own);
                    let b = brute(n, w as usize, &options, adj);
                    agrees(&d, b, true, &format!("N = {n}, W = {w}, {adj:?}"));
                    let want = match adj {
                        Adjacency::AddRemove => w,
                        Adjacency::Replace => (2 * w).min(u64::from(n)),
                    } as f64;
                    assert_eq!(d.l1, want);
                    assert!((d.l2 - want.sqrt()).abs() < 1e-12);
                    assert_eq!(d.linf, 1.0);
                    // negative control: charged r rows a window
                    let rows = windowed(
                        &per(adj, |a| sensitivity::count(user(r, None, None), a)),
                        h(u64::from(n), w, r),
                        USER,
                    );
                    assert!(rows.l2 >= 10.0 * b.1 - 1e-9, "{rows:?}");
                    // negative control: the enumeration catches a bound
                    // that counts only the unit's own W windows
                    if adj == Adjacency::Replace && 2 * w <= u64::from(n) {
                        assert!((w as f64).sqrt() < b.1 - 1e-9);
                    }
                }
            }
        }
        // the DAU of the review: 365 daily windows, r = 10
        let one = per(Adjacency::AddRemove, |a| {
            sensitivity_rows::distinct(user(100, None, None), a, true)
        });
        let own = Shape {
            own_id: true,
            ..USER
        };
        let d = windowed(&one, h(365, 365, 10), own);
        assert!((d.l2 - 365f64.sqrt()).abs() < 1e-12, "{}", d.l2);
        assert!(
            d.steps
                .iter()
                .any(|s| s.contains("rows_per_window = 10 does not enter")),
            "{:#?}",
            d.steps
        );
    }

    /// A count (r rows a window), a sum (up to r values in [lo, hi]) and a
    /// histogram (m groups of g rows, r in all, per window) against the
    /// enumeration, equal under both adjacencies: under add/remove a unit
    /// puts its worst window in each of W windows; under replace the worst
    /// split of the unit's windows and its replacement's, with fewer than
    /// 2W slots too (N < 2W: the two sets must overlap), and with r not a
    /// multiple of g (r = 3, g = 2: a window packs 2 + 1; r = 4, g = 3:
    /// 3 + 1), where doubling the add/remove bound would be above (issue
    /// 34 item 3).
    #[test]
    fn windowed_counts_sums_and_histograms_against_the_enumeration() {
        for n in 1..=4u32 {
            for w in 1..=u64::from(n) {
                for r in 1..=2u64 {
                    for adj in [Adjacency::AddRemove, Adjacency::Replace] {
                        let what = format!("N = {n}, W = {w}, r = {r}, {adj:?}");
                        let hz = h(u64::from(n), w, r);
                        let counts: Vec<Vec<f64>> = (0..=r).map(|x| vec![x as f64]).collect();
                        let c = windowed(
                            &per(adj, |a| sensitivity::count(user(r, None, None), a)),
                            hz,
                            USER,
                        );
                        agrees(
                            &c,
                            brute(n, w as usize, &counts, adj),
                            true,
                            &format!("count {what}"),
                        );
                        for (lo, hi) in [(0.0, 10.0), (-1.0, 3.0), (2.0, 5.0)] {
                            let mut totals = vec![vec![0.0]];
                            for k in 1..=r {
                                for j in 0..=k {
                                    totals.push(vec![j as f64 * lo + (k - j) as f64 * hi]);
                                }
                            }
                            let s = windowed(
                                &per(adj, |a| sensitivity::sum(user(r, None, None), a, lo, hi)),
                                hz,
                                USER,
                            );
                            let b = brute(n, w as usize, &totals, adj);
                            agrees(&s, b, true, &format!("sum [{lo}, {hi}] {what}"));
                        }
                    }
                }
            }
        }
        // histograms over d = 2 groups, N ≤ 3
        for n in 1..=3u32 {
            for w in 1..=u64::from(n) {
                for (r, m, g) in [
                    (2, 1, 2),
                    (2, 2, 1),
                    (3, 2, 2),
                    (2, 2, 2),
                    (3, 1, 2),
                    (3, 2, 1),
                    (4, 2, 3),
                ] {
                    for adj in [Adjacency::AddRemove, Adjacency::Replace] {
                        let unit = user(r, Some(m), Some(g));
                        let mut cells = Vec::new();
                        for x in 0..=g {
                            for y in 0..=g {
                                if x + y <= r && u64::from(x > 0) + u64::from(y > 0) <= m {
                                    cells.push(vec![x as f64, y as f64]);
                                }
                            }
                        }
                        let shape = Shape { groups: 2, ..USER };
                        let d = windowed(
                            &per(adj, |a| sensitivity::grouped(unit, a, 2, None)),
                            h(u64::from(n), w, r),
                            shape,
                        );
                        let b = brute(n, w as usize, &cells, adj);
                        let what = format!(
                            "histogram N = {n}, W = {w}, r = {r}, m = {m}, g = {g}, {adj:?}"
                        );
                        agrees(&d, b, true, &what);
                    }
                }
            }
        }
        // negative control: with one slot (N = 1 < 2W) the unit and its
        // replacement share the window, and doubling add/remove (the earlier
        // replace bound) is above the enumeration: equality above is not a
        // tie with it
        let unit = user(3, Some(2), Some(2));
        let shape = Shape { groups: 2, ..USER };
        let ar = windowed(
            &per(Adjacency::AddRemove, |a| {
                sensitivity::grouped(unit, a, 2, None)
            }),
            h(1, 1, 3),
            shape,
        );
        let rep = windowed(
            &per(Adjacency::Replace, |a| {
                sensitivity::grouped(unit, a, 2, None)
            }),
            h(1, 1, 3),
            shape,
        );
        assert!(rep.l1 < 2.0 * ar.l1 - 1e-9, "{rep:?} vs 2 × {ar:?}");
        assert!(
            rep.l2 < 2f64.sqrt() * ar.l2 - 1e-9,
            "{rep:?} vs √2 × {ar:?}"
        );
    }

    /// Per window, not over the horizon: with r = 5 rows a window in groups
    /// of at most 2, a window holds 2 + 2 + 1 (L2² = 9), so W = 2 windows
    /// give L2² = 18 — the horizon's 10 rows packed 2 a cell would say 20,
    /// five cells of 2 (which puts 6 rows in one window).
    #[test]
    fn a_histogram_is_packed_per_window() {
        let unit = user(5, Some(3), Some(2));
        let one = per(Adjacency::AddRemove, |a| {
            sensitivity::grouped(unit, a, 3, None)
        });
        let d = windowed(&one, h(10, 2, 5), Shape { groups: 3, ..USER });
        assert!((d.l2 - 18f64.sqrt()).abs() < 1e-12, "{}", d.l2);
        let horizon = sensitivity::grouped(
            UnitBound {
                rows: 10,
                groups: Some(6),
                ..unit
            },
            Adjacency::AddRemove,
            30,
            None,
        );
        assert!((horizon.l2 - 20f64.sqrt()).abs() < 1e-12, "{}", horizon.l2);
    }

    /// W = N under replace: a count moves in at most N windows, not 2W
    /// (L2 = r·√N, was r·√(2N)); a one-group histogram's window moves by
    /// at most its rows (was twice).
    #[test]
    fn replace_is_capped_by_the_slots_and_the_cells() {
        let one = per(Adjacency::Replace, |a| {
            sensitivity::count(user(4, None, None), a)
        });
        let d = windowed(&one, h(24, 24, 4), USER);
        assert!((d.l2 - 4.0 * 24f64.sqrt()).abs() < 1e-12, "{}", d.l2);
        assert_eq!(d.l1, 96.0);
        let unit = user(4, Some(2), Some(4));
        let one = per(Adjacency::Replace, |a| {
            sensitivity::grouped(unit, a, 1, None)
        });
        // one group: both units' rows fall in it, |x − y| ≤ 4 (exact; the
        // doubled add/remove value was 8)
        assert_eq!(one.replace.as_ref().map(|r| r.l1), Some(4.0));
        let d = windowed(&one, h(1, 1, 4), USER);
        assert_eq!((d.l1, d.l2), (4.0, 4.0));
    }

    #[test]
    fn a_row_lies_in_one_window() {
        let one = per(Adjacency::AddRemove, |a| sensitivity::count(ROW, a));
        let row = Shape {
            user: false,
            ..USER
        };
        let d = windowed(&one, h(24, 1, 1), row);
        assert_eq!((d.l1, d.l2), (1.0, 1.0));
        // under replace, a row can move from one window to another
        let one = per(Adjacency::Replace, |a| sensitivity::count(ROW, a));
        let r = windowed(&one, h(24, 1, 1), row);
        assert_eq!(r.l1, 2.0);
        assert!((r.l2 - 2f64.sqrt()).abs() < 1e-15);
        // the enumeration: a row in one of 24 windows or in none
        let b = brute(3, 1, &[vec![0.0], vec![1.0]], Adjacency::Replace);
        assert_eq!((b.0, b.1), (2.0, 2f64.sqrt()));
    }

    /// One slot, a row-level count under replace: in the window a replaced
    /// row stays counted (the one-window replace bound is 0), but a row can
    /// be replaced by one whose time lies outside the slot, so the count
    /// moves by 1 (the enumeration: {in, out} × {in, out}).
    #[test]
    fn a_row_can_leave_the_horizon_under_replace() {
        let row = Shape {
            user: false,
            ..USER
        };
        let one = per(Adjacency::Replace, |a| sensitivity::count(ROW, a));
        assert_eq!(one.replace.as_ref().map(|r| r.l1), Some(0.0));
        let d = windowed(&one, h(1, 1, 1), row);
        let b = brute(1, 1, &[vec![0.0], vec![1.0]], Adjacency::Replace);
        assert_eq!((d.l1, d.l2), (b.0, b.1));
        assert_eq!(d.l1, 1.0);
        assert!(d.steps.iter().any(|s| s.contains(WINDOW)), "{:?}", d.steps);
        // a sum over one slot: max(hi − lo, max(|lo|, |hi|)) at least
        let one = per(Adjacency::Replace, |a| sensitivity::sum(ROW, a, 5.0, 10.0));
        let s = windowed(&one, h(1, 1, 1), row);
        assert!(s.l1 >= 10.0, "{}", s.l1);
    }
}
