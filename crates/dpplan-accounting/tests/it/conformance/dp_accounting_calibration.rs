//! dp_accounting 0.6.0, `dp_accounting/pld/accountant_test.py`: the
//! smallest noise for a target (ε, δ) over n queries, and Kairouz–Oh–
//! Viswanath's optimal composition (`advanced_composition`).

use super::*;

const FILE: &str = "dp_accounting 0.6.0 dp_accounting/pld/accountant_test.py";

/// The smallest scale `calibrate` finds for `build` at (ε, δ), checked to
/// be the smallest: a hair less noise misses the target.
fn smallest(build: &dyn Fn(f64) -> Vec<Release>, epsilon: f64, delta: f64) -> f64 {
    let t = calibrate(build, epsilon, delta, None).expect("calibrate");
    assert!(
        best_eps(&build(t), delta) <= epsilon,
        "the scale {t} misses the target"
    );
    assert!(
        best_eps(&build(t * (1.0 - 1e-6)), delta) > epsilon,
        "the scale {t} is not the smallest"
    );
    t
}

/// `test_get_smallest_laplace_noise`: four cases, each to ±0.1 (the test's
/// own tolerance). dpplan's best accountant is at least as tight as
/// dp_accounting's pessimistic PLD, so its scale may be a little smaller;
/// it is within the tolerance in every case.
#[test]
fn smallest_laplace_noise() {
    // (case, sensitivity, ε, δ, queries, published scale)
    let cases = [
        ("basic_composition", 21.0, 3.0, 0.0, 10, 70.0),
        ("positive_delta", 1.0, 1.0, 1e-4, 20, 13.6),
        (
            "positive_delta_varying_sensitivity",
            0.5,
            1.0,
            1e-4,
            20,
            6.8,
        ),
        ("large_num_composition", 1.0, 1.0, 1e-4, 500, 71.0),
    ];
    for (case, sens, epsilon, delta, n, published) in cases {
        let source = Source {
            file: FILE,
            test: "test_get_smallest_laplace_noise",
        };
        let b = smallest(&|b| vec![laplace(b, sens, n)], epsilon, delta);
        report(&source, case, b, published);
        assert!((b - published).abs() <= 0.1, "{case}: {b} vs {published}");
        // negative control: twice the queries need more noise
        let b2 = smallest(&|b| vec![laplace(b, sens, 2 * n)], epsilon, delta);
        assert!(b2 > b * 1.3, "{case}: {b2} vs {b}");
    }
}

/// `test_get_smallest_discrete_laplace_noise`: the largest parameter a
/// (dpplan's 1/b), to ±10⁻³.
#[test]
fn smallest_discrete_laplace_noise() {
    let cases = [
        ("basic_composition", 2.0, 3.0, 0.0, 5, 0.3),
        ("positive_delta", 1.0, 1.0, 1e-4, 20, 0.073),
        (
            "positive_delta_varying_sensitivity",
            5.0,
            1.0,
            1e-4,
            20,
            0.014,
        ),
    ];
    for (case, sens, epsilon, delta, n, published) in cases {
        let source = Source {
            file: FILE,
            test: "test_get_smallest_discrete_laplace_noise",
        };
        let b = smallest(
            &|b| vec![release(NoiseKind::DiscreteLaplace, b, sens, n)],
            epsilon,
            delta,
        );
        report(&source, case, 1.0 / b, published);
        assert!(
            (1.0 / b - published).abs() <= 1e-3,
            "{case}: {} vs {published}",
            1.0 / b
        );
    }
}

/// `test_get_smallest_gaussian_noise`: σ = 1/3 for one query (Δ₂ = 1) and
/// σ = 10 for 25 queries of Δ₂ = 6 (the same μ = 3) at (1, 0.78760074), to 7
/// places (assertAlmostEqual's default).
#[test]
fn smallest_gaussian_noise() {
    let source = Source {
        file: FILE,
        test: "test_get_smallest_gaussian_noise",
    };
    let delta = 0.78760074;
    let one = analytic_gaussian_sigma(1.0, 1.0, delta).unwrap();
    report(&source, "base", one, 1.0 / 3.0);
    assert!((one - 1.0 / 3.0).abs() < 1e-7, "{one}");
    let many = smallest(&|s| vec![gauss(s, 6.0, 25)], 1.0, delta);
    report(&source, "varying_sensitivity_and_num_queries", many, 10.0);
    assert!((many - 10.0).abs() < 1e-6, "{many}");
    // negative control: δ ten times smaller needs more noise
    assert!(analytic_gaussian_sigma(1.0, 1.0, delta / 10.0).unwrap() > one * 1.5);
}

/// δ(ε) of the k-fold composition of ε₀-randomized response (KOV 2015,
/// Thm 3.3): Σ_l C(k,l) p^{k−l} q^l (1 − e^{ε − ε₀(k−2l)})₊, q = 1/(1+e^{ε₀}),
/// summed directly (k = 30: no cancellation to fear at these δ).
fn kov_delta(k: u64, eps0: f64, eps: f64) -> f64 {
    let q = 1.0 / (1.0 + eps0.exp());
    let p = 1.0 - q;
    let mut binom = 1.0_f64;
    let mut sum = 0.0;
    for l in 0..=k {
        if l > 0 {
            binom *= (k - l + 1) as f64 / l as f64;
        }
        let loss = eps0 * (k as f64 - 2.0 * l as f64);
        let w = binom * p.powi((k - l) as i32) * q.powi(l as i32);
        sum += w * (1.0 - (eps - loss).exp()).max(0.0);
    }
    sum
}

/// `test_advanced_composition`: 30 (1, δ₀)-DP mechanisms. With δ₀ = 0 and
/// a total δ of 0, ε = 30. With δ₀ = 10⁻³: ε = 22 at total δ 0.06 and 20 at
/// 0.1. dp_accounting returns the smallest *atom* k·ε₀ − 2iε₀ of the
/// optimal profile that meets δ; dpplan has no (ε₀, δ₀) mechanism (each
/// release is a noise it knows), so the case is checked through KOV's
/// Theorem 3.3 itself: total δ = 1 − (1 − δ₀)^k (1 − δ'), the pure part
/// being 30 releases of ε₀ = 1 (Laplace of b = Δ₁), which dpplan's advanced
/// accountant composes optimally between the atoms. Its ε lies between
/// the atom below and the published atom, and is the exact inverse of the
/// profile summed here.
#[test]
fn advanced_composition() {
    let source = Source {
        file: FILE,
        test: "test_advanced_composition",
    };
    let plan = [laplace(1.0, 1.0, 30)];
    let basic = eps(&plan, 0.0, Accountant::Advanced);
    report(&source, "basic_composition (δ₀ = 0, δ = 0)", basic, 30.0);
    assert!((basic - 30.0).abs() < 1e-12, "{basic}");
    for (case, total_delta, published) in [
        ("advantage_over_basic1", 0.06, 22.0),
        ("advantage_over_basic2", 0.1, 20.0),
    ] {
        let pure_delta = 1.0 - (1.0 - total_delta) / (1.0f64 - 1e-3).powi(30);
        let e = eps(&plan, pure_delta, Accountant::Advanced);
        report(&source, case, e, published);
        // the published atom meets δ; the one below does not
        assert!(kov_delta(30, 1.0, published) <= pure_delta);
        assert!(kov_delta(30, 1.0, published - 2.0) > pure_delta);
        assert!(e <= published + 1e-12 && e > published - 2.0, "{case}: {e}");
        // sound: the profile at dpplan's ε meets δ' (to summation round-off)
        assert!(
            kov_delta(30, 1.0, e) <= pure_delta * (1.0 + 1e-12),
            "{case}: {e}"
        );
        // tight: a hair less ε does not
        assert!(kov_delta(30, 1.0, e - 1e-6) > pure_delta, "{case}: {e}");
        // negative control: one release more moves ε up
        assert!(eps(&[laplace(1.0, 1.0, 31)], pure_delta, Accountant::Advanced) > e + 0.1);
    }
}
