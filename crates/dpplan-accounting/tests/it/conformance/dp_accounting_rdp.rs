//! dp_accounting 0.6.0, `dp_accounting/rdp/rdp_privacy_accountant_test.py`.

use super::*;
use dpplan_accounting::conversions::balle2020_thm21;

const FILE: &str = "dp_accounting 0.6.0 dp_accounting/rdp/rdp_privacy_accountant_test.py";

/// `test_compute_epsilon_delta_pure_dp`: a constant RDP curve of 1.1 over
/// the orders 2…32 at δ = 10⁻⁵ gives ε = 1.32783806176 at the order 32
/// ("computed by hand"). dp_accounting's conversion is Balle et al. 2020
/// Thm 21, dpplan's [`balle2020_thm21`]: the same value to 10⁻¹⁰, and the
/// same optimal order (the conversion decreases over 2…32).
#[test]
fn compute_epsilon_delta_pure_dp() {
    let source = Source {
        file: FILE,
        test: "test_compute_epsilon_delta_pure_dp",
    };
    let at = |alpha: f64| balle2020_thm21(1.1, alpha, 1e-5);
    let e = at(32.0);
    report(&source, "ε at order 32", e, 1.32783806176);
    assert!((e - 1.32783806176).abs() < 1e-10, "{e}");
    for a in 2..32 {
        assert!(at(a as f64) > at(a as f64 + 1.0), "not decreasing at {a}");
    }
    // negative control: a curve of 1.2 is looser by exactly 0.1
    assert!((balle2020_thm21(1.2, 32.0, 1e-5) - e - 0.1).abs() < 1e-12);
}

/// `test_compute_epsilon_delta_gaussian`: the noise multiplier 4.530877117
/// "is chosen to obtain exactly (1, 10⁻⁶)-DP" under RDP (orders 1…100 in
/// steps of 10⁻³, assertAlmostEqual to 7 places). dpplan's RDP accountant
/// (orders optimised continuously, the better of two conversions) gives
/// ε within 10⁻⁶ of 1; the exact Gaussian accountant is tighter (RDP's
/// conversion is loose for one Gaussian), and never below the truth.
#[test]
fn compute_epsilon_delta_gaussian() {
    let source = Source {
        file: FILE,
        test: "test_compute_epsilon_delta_gaussian",
    };
    let plan = [gauss(4.530877117, 1.0, 1)];
    let rdp = eps(&plan, 1e-6, Accountant::Rdp);
    report(&source, "RDP ε at δ = 1e-6", rdp, 1.0);
    assert!((rdp - 1.0).abs() < 1e-6, "{rdp}");
    let exact = eps(&plan, 1e-6, Accountant::Gdp);
    let truth = gdp_epsilon_statrs(1.0 / 4.530877117, 1e-6);
    eprintln!(
        "{source}: exact Gaussian ε {exact:.9} (RDP's conversion is {:.1} % looser)",
        100.0 * (rdp / exact - 1.0)
    );
    assert!(
        exact < rdp && exact >= truth * (1.0 - 1e-9),
        "{exact} vs {truth}"
    );
    // negative control: 1 % less noise, more ε
    assert!(eps(&[gauss(4.530877117 * 0.99, 1.0, 1)], 1e-6, Accountant::Rdp) > rdp + 5e-3);
}

/// `test_compute_rdp_gaussian` and `test_compute_rdp_multi_gaussian`: a
/// Gaussian of noise multiplier σ has RDP α/(2σ²) at every order α, and
/// RDP adds up. dpplan's ρ (zCDP, RDP = αρ) of σ = 2.71828 and of the pair
/// (2.71828, 6.28319) at α = 3.14159.
#[test]
fn compute_rdp_gaussian() {
    let source = Source {
        file: FILE,
        test: "test_compute_rdp_gaussian / test_compute_rdp_multi_gaussian",
    };
    let alpha = 3.14159;
    let (s1, s2) = (2.71828_f64, 6.28319_f64);
    let r1 = rho(&gauss(s1, 1.0, 1).mechanism).unwrap() * alpha;
    report(
        &source,
        "RDP(α) of σ = 2.71828",
        r1,
        alpha / (2.0 * s1 * s1),
    );
    assert!((r1 / (alpha / (2.0 * s1 * s1)) - 1.0).abs() < 1e-15);
    // composed: the zCDP accountant's ε is the conversion of ρ₁ + ρ₂
    let rho_sum = 1.0 / (2.0 * s1 * s1) + 1.0 / (2.0 * s2 * s2);
    let plan = [gauss(s1, 1.0, 1), gauss(s2, 1.0, 1)];
    let z = eps(&plan, 1e-5, Accountant::Zcdp);
    assert!(
        (z - zcdp_epsilon_from_rho(rho_sum, 1e-5)).abs() <= 1e-12 * z,
        "{z}"
    );
    // negative control: the second Gaussian dropped
    assert!(eps(&plan[..1], 1e-5, Accountant::Zcdp) < z);
}
