//! A histogram and its total made consistent by weighted least squares on
//! the released values alone (`histogram(…) with total` and `postprocess
//! consistent`): post-processing, so free.
//!
//! The release is m noisy cells h_i = x_i + e_i (each noise of variance
//! v_h) and a noisy total t = Σx_i + e (variance v_t), all noises
//! independent and centred. The estimator minimises
//! Σ(ĥ_i − h_i)²/v_h + (T̂ − t)²/v_t subject to T̂ = Σĥ_i (Hay et al. 2010's
//! least squares on a tree of depth one; the census TopDown's per-level
//! step). With the residual r = t − Σh_i and a = v_h/(m·v_h + v_t):
//!
//! ĥ_i = h_i + a·r,   T̂ = Σĥ_i = t − (v_t/(m·v_h + v_t))·r.
//!
//! It is unbiased, and its variances are in closed form ([`after`]): each
//! cell v_h·(1 − a), the total v_t·m·v_h/(m·v_h + v_t) (the two estimates
//! of the total combined by inverse variance). The total published is the
//! sum of the published cells, in cell order, so the sum holds exactly in
//! floating point as a reader adds them in that order.
//!
//! # Non-negative (`postprocess consistent, nonnegative`)
//! The same objective subject to ĥ_i ≥ 0 ([`consistent_nonnegative`]):
//! a convex quadratic programme whose KKT conditions give, with the
//! scalar s = (T̂ − t)/v_t, ĥ_i = max(0, h_i − v_h·s), where s is the one
//! root of the strictly increasing f(s) = v_t·s − Σmax(0, h_i − v_h·s) + t.
//! With the k largest cells positive, s = (S_k − t)/(v_t + k·v_h), S_k
//! their sum; the k that is consistent with its own s is found by one
//! pass over the cells sorted (an exact solution, not an iteration to a
//! tolerance). At k = m it is the unconstrained estimate above.
//!
//! Its error is never larger in the objective's weighted norm
//! ‖x‖² = Σx_i²/v_h + (Σx_i)²/v_t, for every outcome: the unconstrained
//! estimate is the projection of the released values onto the subspace
//! of consistent vectors, this one the projection onto its convex subset
//! of non-negative ones (the same projection of the unconstrained
//! estimate, by Pythagoras in that subspace), and a projection onto a
//! convex set moves a point no farther from any point of the set — the
//! true cells are one. Its cells' errors one by one have no closed form
//! (a clipped cell's estimate is 0): the figures published are the
//! unconstrained estimate's, marked approximate.
//!
//! # Whole numbers (`postprocess consistent, round`)
//! Rounding each consistent cell alone would break the sum. A controlled
//! rounding ([`controlled_round`]) keeps it: every cell goes to the floor
//! or the ceiling of its value, the total to the nearest integer of the
//! cells' sum, and the units the floors leave are given to the cells with
//! the largest fractional parts (the largest-remainder method; ties in
//! cell order). Each cell moves by less than 1, a non-negative cell stays
//! non-negative, and among integer cells adding up to that total it
//! moves them the least in Σ|n_i − c_i| (any other choice takes a unit
//! from a larger remainder to a smaller one).

/// The consistent cells and total from the released `cells` (each of
/// noise variance `var_cell`) and `total` (variance `var_total`): reads
/// nothing else. Both variances positive and finite; else the values are
/// returned as released.
pub fn consistent(cells: &[f64], var_cell: f64, total: f64, var_total: f64) -> (Vec<f64>, f64) {
    if cells.is_empty() || !weighable(var_cell) || !weighable(var_total) {
        return (cells.to_vec(), total);
    }
    let m = cells.len() as f64;
    let a = var_cell / (m * var_cell + var_total);
    let r = total - cells.iter().sum::<f64>();
    let out: Vec<f64> = cells.iter().map(|h| h + a * r).collect();
    let sum = out.iter().sum();
    (out, sum)
}

/// [`consistent`] with every cell non-negative: the weighted least
/// squares estimate subject to ĥ_i ≥ 0 (see the module's notes), its
/// cells and their sum. The released values as they are when a variance
/// is not positive and finite (as [`consistent`]), and when a value is not
/// finite.
pub fn consistent_nonnegative(
    cells: &[f64],
    var_cell: f64,
    total: f64,
    var_total: f64,
) -> (Vec<f64>, f64) {
    if cells.is_empty()
        || !weighable(var_cell)
        || !weighable(var_total)
        || !total.is_finite()
        || cells.iter().any(|h| !h.is_finite())
    {
        return (cells.to_vec(), total);
    }
    let s = multiplier(cells, var_cell, total, var_total);
    let out: Vec<f64> = cells.iter().map(|h| (h - var_cell * s).max(0.0)).collect();
    let sum = out.iter().sum();
    (out, sum)
}

/// The root s of f(s) = v_t·s − Σmax(0, h_i − v_h·s) + t: with the k
/// largest cells positive, s_k = (S_k − t)/(v_t + k·v_h), the k whose s_k
/// leaves exactly those k cells above v_h·s_k. f is strictly increasing,
/// so exactly one k (from 0 to m) is consistent; taking k cells in
/// decreasing order, the first k with h_(k+1) ≤ v_h·s_k is it (ties among
/// equal cells give the same s).
fn multiplier(cells: &[f64], vh: f64, t: f64, vt: f64) -> f64 {
    let mut sorted = cells.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let s_k = |sum: f64, k: usize| (sum - t) / (vt + k as f64 * vh);
    let mut sum = 0.0;
    for (k, &next) in sorted.iter().enumerate() {
        if next <= vh * s_k(sum, k) {
            return s_k(sum, k);
        }
        sum += next;
    }
    s_k(sum, sorted.len())
}

/// Whole-number cells adding up to the nearest integer of the sum of
/// `cells` (each finite), each the floor or the ceiling of its value, the
/// units left by the floors given to the largest fractional parts (ties
/// in cell order): see the module's notes. Also the total. Not finite
/// values: returned as they are, with their sum.
pub fn controlled_round(cells: &[f64]) -> (Vec<f64>, f64) {
    if cells.iter().any(|c| !c.is_finite()) {
        return (cells.to_vec(), cells.iter().sum());
    }
    let total = cells.iter().sum::<f64>().round_ties_even();
    let mut out: Vec<f64> = cells.iter().map(|c| c.floor()).collect();
    let floors: f64 = out.iter().sum();
    // 0 ≤ Σ frac < m, so the units left lie in [0, m]
    let left = (total - floors).clamp(0.0, cells.len() as f64) as usize;
    let mut order: Vec<usize> = (0..cells.len()).collect();
    order.sort_by(|&a, &b| {
        (cells[b] - out[b])
            .total_cmp(&(cells[a] - out[a]))
            .then(a.cmp(&b))
    });
    for &i in order.iter().take(left) {
        out[i] += 1.0;
    }
    let sum = out.iter().sum();
    (out, sum)
}

/// A variance the estimates can weigh by: positive and finite (else the
/// values are published as released).
fn weighable(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// The standard deviations after [`consistent`]: (each cell's, the
/// total's), from the released ones' (`std_cell`, `std_total`) and the
/// number of cells m.
pub fn after(std_cell: f64, std_total: f64, m: usize) -> (f64, f64) {
    let (vh, vt, m) = (std_cell * std_cell, std_total * std_total, m as f64);
    let denom = m * vh + vt;
    // the same guard as [`consistent`]: without two positive variances the
    // values are published as released, and so are their figures
    if !(weighable(vh) && weighable(vt) && m > 0.0) {
        return (std_cell, std_total);
    }
    let a = vh / denom;
    ((vh * (1.0 - a)).sqrt(), (vt * m * vh / denom).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    #[test]
    fn the_cells_add_up_to_the_total_and_move_by_a_common_share() {
        let (c, t) = consistent(&[10.3, -2.0, 7.25, 0.1], 4.0, 20.0, 1.0);
        assert_eq!(c.iter().sum::<f64>(), t);
        // r = 20 − 15.65 = 4.35, a = 4/(16 + 1): each cell moves by a·r
        let a = 4.0 / 17.0;
        for (x, h) in c.iter().zip([10.3, -2.0, 7.25, 0.1]) {
            assert!((x - (h + a * 4.35)).abs() < 1e-12, "{x}");
        }
        // the total moves by −(v_t/(m·v_h + v_t))·r
        assert!((t - (20.0 - 4.35 / 17.0)).abs() < 1e-12, "{t}");
        // an exact total and exact cells stay as they are
        let (c, t) = consistent(&[1.0, 2.0], 1.0, 3.0, 1.0);
        assert_eq!((c, t), (vec![1.0, 2.0], 3.0));
        // no variance: nothing to weigh, the values as released, and so
        // their figures
        let (c, t) = consistent(&[1.0, 2.0], 0.0, 7.0, 1.0);
        assert_eq!((c, t), (vec![1.0, 2.0], 7.0));
        assert_eq!(after(0.0, 1.0, 2), (0.0, 1.0));
        assert_eq!(after(2.0, 0.0, 2), (2.0, 0.0));
    }

    /// The closed-form variances against simulation: 2·10⁵ draws of a
    /// 5-cell histogram (σ 3) and its total (σ 2) around fixed true
    /// values; the empirical variances within 2 % of [`after`]'s, the
    /// estimates unbiased, and below the released variances (negative
    /// control: the released values' own variances are not the figures).
    #[test]
    fn the_variance_reduction_is_the_closed_form() {
        let x = [40.0, 3.0, 0.0, 17.0, 9.0];
        let (sh, st) = (3.0, 2.0);
        let (want_c, want_t) = after(sh, st, x.len());
        let mut rng = rand::rngs::StdRng::seed_from_u64(29);
        let (nh, nt) = (Normal::new(0.0, sh).unwrap(), Normal::new(0.0, st).unwrap());
        let n = 200_000;
        let (mut s1, mut s2, mut t1, mut t2) = (0.0, 0.0, 0.0, 0.0);
        for _ in 0..n {
            let cells: Vec<f64> = x.iter().map(|v| v + nh.sample(&mut rng)).collect();
            let total = x.iter().sum::<f64>() + nt.sample(&mut rng);
            let (c, t) = consistent(&cells, sh * sh, total, st * st);
            let e = c[0] - x[0];
            s1 += e;
            s2 += e * e;
            let e = t - 69.0;
            t1 += e;
            t2 += e * e;
        }
        let var = |s: f64, s2: f64| s2 / n as f64 - (s / n as f64).powi(2);
        let (vc, vt) = (var(s1, s2), var(t1, t2));
        assert!(
            (vc / (want_c * want_c) - 1.0).abs() < 0.02,
            "{vc} vs {}",
            want_c * want_c
        );
        assert!(
            (vt / (want_t * want_t) - 1.0).abs() < 0.02,
            "{vt} vs {}",
            want_t * want_t
        );
        assert!((s1 / n as f64).abs() < 0.05 && (t1 / n as f64).abs() < 0.05);
        // the closed forms: a = 9/(45 + 4); cells 9·(1 − a), total 4·45/49
        let a = 9.0 / 49.0;
        assert!((want_c * want_c - 9.0 * (1.0 - a)).abs() < 1e-12);
        assert!((want_t * want_t - 4.0 * 45.0 / 49.0).abs() < 1e-12);
        assert!(vc < 0.9 * sh * sh && vt < 0.95 * st * st);
    }

    /// The weighted norm of the module's notes.
    fn norm2(x: &[f64], vh: f64, vt: f64) -> f64 {
        x.iter().map(|v| v * v / vh).sum::<f64>() + x.iter().sum::<f64>().powi(2) / vt
    }

    /// The objective at cells `c`: Σ(c_i − h_i)²/v_h + (Σc_i − t)²/v_t.
    fn objective(c: &[f64], h: &[f64], vh: f64, t: f64, vt: f64) -> f64 {
        c.iter()
            .zip(h)
            .map(|(a, b)| (a - b).powi(2) / vh)
            .sum::<f64>()
            + (c.iter().sum::<f64>() - t).powi(2) / vt
    }

    #[test]
    fn the_nonnegative_estimate_is_the_programme_s_minimum() {
        // against an independent solution: projected gradient descent on
        // the same objective (a different algorithm, to 10⁻⁹), on cells
        // with and without negatives, totals above and below their sum
        let mut rng = rand::rngs::StdRng::seed_from_u64(31);
        let n = Normal::new(0.0, 6.0).unwrap();
        for case in 0..300 {
            let m = 1 + case % 9;
            let h: Vec<f64> = (0..m)
                .map(|i| (i as f64) * 1.5 - 3.0 + n.sample(&mut rng))
                .collect();
            let t = h.iter().sum::<f64>() + n.sample(&mut rng) * 2.0;
            let (vh, vt) = (1.0 + (case % 4) as f64, 0.5 + (case % 3) as f64);
            let (c, sum) = consistent_nonnegative(&h, vh, t, vt);
            assert!(c.iter().all(|&x| x >= 0.0), "{c:?}");
            assert_eq!(c.iter().sum::<f64>(), sum);
            // projected gradient descent from 0
            let mut x = vec![0.0; m];
            let step = 1.0 / (1.0 / vh + m as f64 / vt);
            for _ in 0..20_000 {
                let r = (x.iter().sum::<f64>() - t) / vt;
                for i in 0..m {
                    x[i] = (x[i] - step * ((x[i] - h[i]) / vh + r)).max(0.0);
                }
            }
            let (fa, fb) = (objective(&c, &h, vh, t, vt), objective(&x, &h, vh, t, vt));
            assert!(fa <= fb + 1e-9 * (1.0 + fb), "case {case}: {fa} > {fb}");
            for (a, b) in c.iter().zip(&x) {
                assert!(
                    (a - b).abs() < 1e-6 * (1.0 + b.abs()),
                    "case {case}: {c:?} vs {x:?}"
                );
            }
        }
    }

    #[test]
    fn without_negatives_it_is_the_unconstrained_estimate() {
        // every unconstrained cell ≥ 0: the same cells (k = m), to rounding
        let h = [10.3, 2.0, 7.25, 0.9];
        let (a, ta) = consistent(&h, 4.0, 20.0, 1.0);
        let (b, tb) = consistent_nonnegative(&h, 4.0, 20.0, 1.0);
        assert!(a.iter().all(|&x| x > 0.0));
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-12, "{a:?} vs {b:?}");
        }
        assert!((ta - tb).abs() < 1e-12);
        // a negative cell: the unconstrained estimate keeps it negative,
        // this one sets it to 0 and the others absorb the rest
        let h = [30.0, -9.0, 4.0];
        let (a, _) = consistent(&h, 1.0, 25.0, 1.0);
        let (b, tb) = consistent_nonnegative(&h, 1.0, 25.0, 1.0);
        assert!(a[1] < 0.0);
        assert_eq!(b[1], 0.0);
        assert_eq!(b.iter().sum::<f64>(), tb);
        // all cells far below 0 and a negative total: everything 0
        let (b, tb) = consistent_nonnegative(&[-5.0, -7.0], 1.0, -3.0, 1.0);
        assert_eq!((b, tb), (vec![0.0, 0.0], 0.0));
        // not finite or no variance: as released
        let (b, tb) = consistent_nonnegative(&[1.0, f64::NAN], 1.0, 3.0, 1.0);
        assert!(b[1].is_nan() && tb == 3.0);
        assert_eq!(
            consistent_nonnegative(&[1.0, -2.0], 0.0, 3.0, 1.0),
            (vec![1.0, -2.0], 3.0)
        );
    }

    /// For every outcome, the non-negative estimate is no farther from the
    /// true (non-negative) cells than the unconstrained one, in the
    /// objective's weighted norm; per cell it may be (negative control: a
    /// cell's own error is larger in some draws, so the per-cell figures
    /// are not claimed).
    #[test]
    fn its_weighted_error_never_exceeds_the_unconstrained_one() {
        let x = [0.0, 1.0, 0.0, 12.0, 3.0, 0.0];
        let (sh, st) = (4.0, 3.0);
        let (vh, vt) = (sh * sh, st * st);
        let truth: f64 = x.iter().sum();
        let mut rng = rand::rngs::StdRng::seed_from_u64(37);
        let (nh, nt) = (Normal::new(0.0, sh).unwrap(), Normal::new(0.0, st).unwrap());
        let (mut clipped, mut one_cell_worse) = (0, 0);
        for _ in 0..20_000 {
            let h: Vec<f64> = x.iter().map(|v| v + nh.sample(&mut rng)).collect();
            let t = truth + nt.sample(&mut rng);
            let (a, _) = consistent(&h, vh, t, vt);
            let (b, _) = consistent_nonnegative(&h, vh, t, vt);
            let ea: Vec<f64> = a.iter().zip(&x).map(|(p, q)| p - q).collect();
            let eb: Vec<f64> = b.iter().zip(&x).map(|(p, q)| p - q).collect();
            let (na, nb) = (norm2(&ea, vh, vt), norm2(&eb, vh, vt));
            assert!(nb <= na * (1.0 + 1e-12) + 1e-12, "{nb} > {na}");
            clipped += usize::from(b.contains(&0.0));
            one_cell_worse +=
                usize::from(eb.iter().zip(&ea).any(|(p, q)| p.abs() > q.abs() + 1e-9));
        }
        assert!(clipped > 10_000, "{clipped}");
        assert!(one_cell_worse > 100, "{one_cell_worse}");
    }

    #[test]
    fn the_controlled_rounding_keeps_the_sum_and_moves_each_cell_least() {
        // against a brute force over every integer vector within 1 of the
        // cells with the same sum: none moves them less in Σ|n − c|
        let mut rng = rand::rngs::StdRng::seed_from_u64(41);
        let n = Normal::new(0.0, 3.0).unwrap();
        for case in 0..400 {
            let m = 1 + case % 6;
            let c: Vec<f64> = (0..m)
                .map(|_| {
                    let v: f64 = n.sample(&mut rng);
                    if case % 3 == 0 {
                        v.abs()
                    } else {
                        v
                    }
                })
                .collect();
            let (r, sum) = controlled_round(&c);
            assert_eq!(r.iter().sum::<f64>(), sum);
            assert_eq!(sum, c.iter().sum::<f64>().round_ties_even(), "{c:?}");
            for (a, b) in r.iter().zip(&c) {
                assert_eq!(a.fract(), 0.0);
                assert!((a - b).abs() < 1.0, "{r:?} vs {c:?}");
                if *b >= 0.0 {
                    assert!(*a >= 0.0);
                }
            }
            let cost = |v: &[f64]| v.iter().zip(&c).map(|(a, b)| (a - b).abs()).sum::<f64>();
            let mut best = f64::INFINITY;
            for bits in 0..(1u32 << m) {
                let v: Vec<f64> = (0..m)
                    .map(|i| c[i].floor() + f64::from((bits >> i) & 1))
                    .collect();
                if v.iter().sum::<f64>() == sum {
                    best = best.min(cost(&v));
                }
            }
            assert!(
                cost(&r) <= best + 1e-9,
                "case {case}: {} > {best}",
                cost(&r)
            );
        }
        // negative control: rounding each cell alone breaks the sum here
        let c: [f64; 4] = [0.5, 0.5, 0.5, 1.5];
        let alone: f64 = c.iter().map(|v| v.round_ties_even()).sum();
        let (r, sum) = controlled_round(&c);
        assert_eq!(sum, 3.0);
        assert_ne!(alone, sum);
        assert_eq!(r.iter().sum::<f64>(), 3.0);
        // not finite: as given
        let (r, _) = controlled_round(&[1.2, f64::NAN]);
        assert!(r[1].is_nan() && r[0] == 1.2);
    }
}
