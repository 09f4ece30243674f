//! Partition selection's δ against the published formulas (Google's
//! differential-privacy library, Wilson et al. 2020) and against a
//! Monte-Carlo of the release probability of a key only one neighbour has.

use dpplan_accounting::selection::{
    key_pass_probability, release_probability, threshold_delta, threshold_for,
};
use dpplan_accounting::NoiseKind;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Normal};

/// Google's `LaplacePartitionSelection::CalculateDelta(ε, τ, k)` (users
/// counted once per key, so C = 1): diversity b = k/ε, per-key
/// δ = ½·exp((1 − τ)/b), unadjusted over k keys: 1 − (1 − δ)^k.
fn google_laplace_delta(epsilon: f64, tau: f64, k: u64) -> f64 {
    let b = k as f64 / epsilon;
    let per_key = if tau < 1.0 {
        1.0 - ((tau - 1.0) / b).exp() / 2.0
    } else {
        ((1.0 - tau) / b).exp() / 2.0
    };
    unadjusted(per_key, k)
}

/// Google's `CalculateUnadjustedDelta(δ, k) = 1 − (1 − δ)^k`, evaluated as
/// −expm1(k·ln(1 − δ)): the same number without the cancellation of
/// 1 − (1 − δ) in floating point (relative error ~10⁻¹⁶/δ, 4 % at
/// δ = 10⁻¹⁴, which would make the comparison meaningless).
fn unadjusted(per_key: f64, k: u64) -> f64 {
    -((k as f64) * (-per_key).ln_1p()).exp_m1()
}

/// Google's `LaplacePartitionSelection::CalculateThreshold(ε, δ, k)`:
/// adjusted δ = 1 − (1 − δ)^{1/k}, τ = 1 − b·ln(2·adjusted δ).
fn google_laplace_threshold(epsilon: f64, delta: f64, k: u64) -> f64 {
    let b = k as f64 / epsilon;
    let adjusted = 1.0 - (1.0 - delta).powf(1.0 / k as f64);
    1.0 - b * (2.0 * adjusted).ln()
}

/// Google's `GaussianPartitionSelection::CalculateThresholdDelta` for a
/// given σ: 1 − Φ((τ − 1)/σ) per key, unadjusted over k keys.
fn google_gaussian_delta(sigma: f64, tau: f64, k: u64) -> f64 {
    unadjusted(upper_tail((tau - 1.0) / sigma), k)
}

/// 1 − Φ(x), evaluated independently of the crate (its own continued
/// fraction for erfc).
fn upper_tail(x: f64) -> f64 {
    // Φ(−x) = ½ erfc(x/√2); erfc by a continued fraction for x > 0
    0.5 * erfc_cf(x / std::f64::consts::SQRT_2)
}

/// erfc(z) for z ≥ 0.5 by Lentz's continued fraction (Abramowitz & Stegun
/// 7.1.14), to ~1e-15 relative.
fn erfc_cf(z: f64) -> f64 {
    assert!(z >= 0.5);
    // erfc(z) = exp(−z²)/√π · 1/(z + 1/2/(z + 1/(z + 3/2/(z + …))))
    let mut f = z;
    let tiny = 1e-300;
    let (mut c, mut d) = (z, 0.0);
    for n in 1..500 {
        let a = n as f64 / 2.0;
        d = z + a * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = z + a / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-z * z).exp() / std::f64::consts::PI.sqrt() / f
}

#[test]
fn laplace_delta_is_at_least_googles_and_close_to_it() {
    for (epsilon, tau, k) in [
        (1.0, 20.0, 1),
        (0.5, 50.0, 3),
        (2.0, 12.5, 8),
        (0.1, 400.0, 2),
    ] {
        let b = k as f64 / epsilon;
        let ours = release_probability(NoiseKind::Laplace, b, tau, k, 1.0);
        let google = google_laplace_delta(epsilon, tau, k);
        assert!(
            ours >= google,
            "ε={epsilon} τ={tau} k={k}: {ours} < {google}"
        );
        assert!(ours <= google * (1.0 + 1e-8), "{ours} vs {google}");
        // the δ the plan is charged is never below the published one, and
        // is it divided by 1 − δ (the other direction of add/remove)
        let charged = threshold_delta(ours, false).unwrap();
        assert!(charged >= google);
        assert!(charged <= google / (1.0 - google) * (1.0 + 1e-6));
    }
}

#[test]
fn laplace_threshold_is_googles_rounded_up() {
    for (epsilon, delta, k) in [(1.0, 1e-6, 1), (0.5, 1e-9, 4), (3.0, 1e-5, 10)] {
        let b = k as f64 / epsilon;
        let ours = threshold_for(NoiseKind::Laplace, b, k, 1.0, delta).unwrap();
        let google = google_laplace_threshold(epsilon, delta, k);
        // ours is the published τ rounded up to 0.01 (plus float noise)
        assert!(ours >= google - 1e-6, "{ours} < {google}");
        assert!(ours <= google + 0.01 + 1e-6, "{ours} ≫ {google}");
    }
}

#[test]
fn gaussian_delta_is_at_least_googles() {
    for (sigma, tau, k) in [(2.0, 12.0, 1), (5.0, 40.0, 4), (10.0, 60.0, 2)] {
        let ours = release_probability(NoiseKind::Gaussian, sigma, tau, k, 1.0);
        let google = google_gaussian_delta(sigma, tau, k);
        assert!(ours >= google, "σ={sigma} τ={tau}: {ours} < {google}");
        assert!(ours <= google * (1.0 + 1e-7), "{ours} vs {google}");
    }
}

#[test]
fn negative_controls_move_the_delta() {
    let base = release_probability(NoiseKind::Laplace, 2.0, 30.0, 2, 3.0);
    // a lower threshold: δ rises
    assert!(release_probability(NoiseKind::Laplace, 2.0, 25.0, 2, 3.0) > base);
    // more keys per unit: δ rises
    assert!(release_probability(NoiseKind::Laplace, 2.0, 30.0, 4, 3.0) > base);
    // more rows per key: δ rises
    assert!(release_probability(NoiseKind::Laplace, 2.0, 30.0, 2, 5.0) > base);
    // replace counts both neighbours' keys
    assert!(threshold_delta(base, true).unwrap() > threshold_delta(base, false).unwrap());
}

/// Hoeffding: with n runs, |p̂ − p| ≤ √(ln(2/α)/(2n)) with probability
/// ≥ 1 − α; α = 10⁻⁹ makes a false failure practically impossible.
fn hoeffding(n: u64) -> f64 {
    ((2.0f64 / 1e-9).ln() / (2.0 * n as f64)).sqrt()
}

/// The empirical frequency with which at least one of `k` keys of count
/// `count` passes `tau` under `noise`.
fn simulate(
    k: u64,
    count: i64,
    tau: f64,
    runs: u64,
    rng: &mut rand::rngs::StdRng,
    noise: &dyn Fn(&mut rand::rngs::StdRng) -> f64,
) -> f64 {
    let mut hits = 0u64;
    for _ in 0..runs {
        if (0..k).any(|_| count as f64 + noise(rng) > tau) {
            hits += 1;
        }
    }
    hits as f64 / runs as f64
}

/// A noise sampler of the Monte-Carlo.
type Sampler = Box<dyn Fn(&mut rand::rngs::StdRng) -> f64>;

/// Laplace(b) by inverse CDF on a uniform in (−½, ½).
fn laplace(rng: &mut rand::rngs::StdRng, b: f64) -> f64 {
    let u: f64 = rng.random::<f64>() - 0.5;
    -b * u.signum() * (1.0 - 2.0 * u.abs()).ln()
}

/// Discrete Laplace(b): the difference of two geometric variables with
/// success probability 1 − e^{−1/b}.
fn discrete_laplace(rng: &mut rand::rngs::StdRng, b: f64) -> f64 {
    let q = (-1.0 / b).exp();
    let geo = |rng: &mut rand::rngs::StdRng| -> f64 {
        let u: f64 = rng.random();
        (u.ln() / q.ln()).floor()
    };
    geo(rng) - geo(rng)
}

#[test]
fn monte_carlo_release_probability_of_a_neighbour_only_key() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(16);
    let runs = 1_000_000;
    let tol = hoeffding(runs);
    let normal = Normal::new(0.0, 1.5).unwrap();
    let cases: Vec<(NoiseKind, f64, f64, Sampler)> = vec![
        (NoiseKind::Laplace, 1.0, 4.0, Box::new(|r| laplace(r, 1.0))),
        (
            NoiseKind::Gaussian,
            1.5,
            4.5,
            Box::new(move |r| normal.sample(r)),
        ),
        (
            NoiseKind::DiscreteLaplace,
            1.0,
            4.0,
            Box::new(|r| discrete_laplace(r, 1.0)),
        ),
    ];
    let (k, count) = (3u64, 2i64);
    for (kind, scale, tau, noise) in cases {
        let bound = release_probability(kind, scale, tau, k, count as f64);
        let seen = simulate(k, count, tau, runs, &mut rng, &*noise);
        // sound: the frequency never exceeds the bound (beyond sampling)
        assert!(seen <= bound + tol, "{kind:?}: seen {seen} > bound {bound}");
        // tight: the bound is the exact probability at the worst count
        assert!(seen >= bound - tol, "{kind:?}: seen {seen} ≪ bound {bound}");
        // a count below the maximum passes less often
        let lower = simulate(k, count - 1, tau, runs, &mut rng, &*noise);
        assert!(lower <= bound + tol);
        assert!(lower < seen);
    }
}

#[test]
fn discrete_gaussian_bound_dominates_its_exact_tail() {
    // The discrete Gaussian bound Φ(−(m−1)/σ) is an upper bound, not
    // exact: check it against the exact tail summed directly.
    let sigma: f64 = 1.5;
    let weight = |z: i64| (-(z as f64).powi(2) / (2.0 * sigma * sigma)).exp();
    let norm: f64 = (-60..=60).map(weight).sum();
    for (tau, count) in [(4.0f64, 2.0f64), (6.5, 1.0), (10.0, 3.0)] {
        let m = (tau - count).floor() as i64 + 1;
        let exact: f64 = (m..=60).map(weight).sum::<f64>() / norm;
        let bound = key_pass_probability(NoiseKind::DiscreteGaussian, sigma, tau, count);
        assert!(bound >= exact, "τ={tau}: {bound} < {exact}");
    }
}
