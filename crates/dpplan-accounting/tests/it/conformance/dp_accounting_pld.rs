//! dp_accounting 0.6.0, `dp_accounting/pld/pld_privacy_accountant_test.py`.

use super::*;

const FILE: &str = "dp_accounting 0.6.0 dp_accounting/pld/pld_privacy_accountant_test.py";

/// `test_gaussian_basic`: `GaussianDpEvent(noise_multiplier = √3)` composed
/// once and then twice (3 releases of σ/Δ₂ = √3, so μ = 1): δ(ε = 1) =
/// 0.126936 (dp_accounting holds its PLD to it within 10⁻³, both ways).
/// dpplan: the exact Gaussian accountant and the PLD (which folds the
/// Gaussians into one exact μ-GDP pair) give ε within 10⁻⁵ of 1 at δ =
/// 0.126936 (the published δ is the exact 0.12693674 truncated to 6 digits:
/// 7·10⁻⁷ in δ is 4·10⁻⁶ in ε, δ'(1) = −e·Φ(−1.5) = −0.18), never below the
/// exact ε of that δ.
#[test]
fn gaussian_basic() {
    let source = Source {
        file: FILE,
        test: "test_gaussian_basic",
    };
    let sigma = 3f64.sqrt();
    let plan = [gauss(sigma, 1.0, 1), gauss(sigma, 1.0, 2)];
    let published_delta = 0.126936;
    // the published δ is the exact μ = 1 profile at ε = 1 (mpmath, 50
    // digits: 0.1269367375066439458), truncated to 6 digits
    let exact_delta = 0.1269367375066439458;
    assert!(exact_delta - published_delta < 1e-6 && exact_delta >= published_delta);
    assert!((gdp_delta(1.0, 1.0) / exact_delta - 1.0).abs() < 1e-14);
    assert!((gdp_delta_statrs(1.0, 1.0) / exact_delta - 1.0).abs() < 1e-10);
    // the exact ε at the published δ (mpmath: 1.0000040611497566)
    let truth = 1.0000040611497566;
    for a in [Accountant::Gdp, Accountant::Pld] {
        let e = eps(&plan, published_delta, a);
        report(&source, &format!("{a} ε at δ = {published_delta}"), e, 1.0);
        assert!((e - 1.0).abs() < 1e-5, "{a}: {e}");
        assert!(
            e >= truth * (1.0 - 1e-14),
            "{a}: {e} below the exact {truth}"
        );
        // the PLD's Gaussian part is exact: within 10⁻⁹ of the truth
        assert!(e <= truth + 1e-9, "{a}: {e} vs the exact {truth}");
    }
    // the best accountant is never looser than the exact one
    assert!(best_eps(&plan, published_delta) <= eps(&plan, published_delta, Accountant::Gdp));
    // negative control: drop the first composition (2 releases, μ = √(2/3))
    let dropped = eps(&plan[1..], published_delta, Accountant::Gdp);
    assert!(dropped < 0.8, "two releases: {dropped}");
}

/// `test_laplace_basic`: `LaplaceDpEvent(noise_multiplier = 1)` ×3 and
/// `LaplaceDpEvent(2)` ×2 (Δ₁ = 1): ε = 4 with δ = 10⁻¹⁴ ("not 0 due to
/// truncation in self composition"). dpplan states the pure bound exactly:
/// ε = 4 at δ = 0 (basic composition and the PLD agree), and at δ = 10⁻¹⁴
/// no accountant exceeds 4 (the truth there is below 4: a positive δ buys
/// a little ε).
#[test]
fn laplace_basic() {
    let source = Source {
        file: FILE,
        test: "test_laplace_basic",
    };
    let plan = [laplace(1.0, 1.0, 3), laplace(2.0, 1.0, 2)];
    let pure = best_eps(&plan, 0.0);
    report(&source, "ε at δ = 0", pure, 4.0);
    assert!((pure - 4.0).abs() < 1e-12, "{pure}");
    assert_eq!(eps(&plan, 0.0, Accountant::Basic), 4.0);
    let at = best_eps(&plan, 1e-14);
    report(&source, "ε at δ = 1e-14", at, 4.0);
    assert!(at <= 4.0 + 1e-12 && at > 3.9, "{at}");
    // negative controls: one Laplace(1) fewer is 3; a scale of 2 → 1 is 5
    assert!((best_eps(&[laplace(1.0, 1.0, 2), laplace(2.0, 1.0, 2)], 0.0) - 3.0).abs() < 1e-12);
    assert!((best_eps(&[laplace(1.0, 1.0, 3), laplace(1.0, 1.0, 2)], 0.0) - 5.0).abs() < 1e-12);
}

/// `test_discrete_laplace_basic`: `DiscreteLaplaceDpEvent(noise_parameter =
/// 1, sensitivity = 1)` ×3 and `(0.5, 1)` ×2: ε = 4 at δ = 0 (within
/// 10⁻⁶). The event's parameter a is dpplan's 1/b (P(k) ∝ e^{−a|k|}).
#[test]
fn discrete_laplace_basic() {
    let source = Source {
        file: FILE,
        test: "test_discrete_laplace_basic",
    };
    let plan = [
        discrete_laplace_param(1.0, 1.0, 3),
        discrete_laplace_param(0.5, 1.0, 2),
    ];
    let pure = best_eps(&plan, 0.0);
    report(&source, "ε at δ = 0", pure, 4.0);
    assert!((pure - 4.0).abs() < 1e-12, "{pure}");
    // negative control: sensitivity 2 doubles every loss
    let doubled = [
        discrete_laplace_param(1.0, 2.0, 3),
        discrete_laplace_param(0.5, 2.0, 2),
    ];
    assert!((best_eps(&doubled, 0.0) - 8.0).abs() < 1e-12);
}
