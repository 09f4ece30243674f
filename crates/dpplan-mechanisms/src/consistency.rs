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

/// The consistent cells and total from the released `cells` (each of
/// noise variance `var_cell`) and `total` (variance `var_total`): reads
/// nothing else. Both variances positive and finite; else the values are
/// returned as released.
pub fn consistent(cells: &[f64], var_cell: f64, total: f64, var_total: f64) -> (Vec<f64>, f64) {
    let ok = |v: f64| v.is_finite() && v > 0.0;
    if cells.is_empty() || !ok(var_cell) || !ok(var_total) {
        return (cells.to_vec(), total);
    }
    let m = cells.len() as f64;
    let a = var_cell / (m * var_cell + var_total);
    let r = total - cells.iter().sum::<f64>();
    let out: Vec<f64> = cells.iter().map(|h| h + a * r).collect();
    let sum = out.iter().sum();
    (out, sum)
}

/// The standard deviations after [`consistent`]: (each cell's, the
/// total's), from the released ones' (`std_cell`, `std_total`) and the
/// number of cells m.
pub fn after(std_cell: f64, std_total: f64, m: usize) -> (f64, f64) {
    let (vh, vt, m) = (std_cell * std_cell, std_total * std_total, m as f64);
    let denom = m * vh + vt;
    // the same guard as [`consistent`]: without two positive variances the
    // values are published as released, and so are their figures
    let ok = |v: f64| v.is_finite() && v > 0.0;
    if !(ok(vh) && ok(vt) && m > 0.0) {
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
}
