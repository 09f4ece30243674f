//! The PRV accountant (Gopi, Lee & Wutschitz 2021; `microsoft/prv_accountant`),
//! `tests/test_accountant.py`: its exact Gaussian cases, where the truth is
//! the analytic μ-GDP profile δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).
//!
//! The exact δ(4) of each case is given to 20 digits as mpmath (50 digits)
//! computes it: statrs' normal CDF, the other independent reference of
//! these tests, is off by 10⁻¹¹ relative in these tails (δ(4) at μ = 1:
//! 4.7122412012·10⁻⁵ against 4.7122412008·10⁻⁵), which would hide an ε
//! below the truth by 2·10⁻¹¹; against mpmath's δ, dpplan's ε is never
//! below 4 by more than the rounding of δ to a double (10⁻¹³ relative).

use super::*;

const FILE: &str = "microsoft/prv_accountant tests/test_accountant.py";

/// dpplan's ε at the exact δ(4) of μ-GDP, under the exact Gaussian and the
/// PLD accountants: 4 to 10⁻⁹ relative and never below it (the PRV test
/// only brackets δ within its ε error of 10⁻² and δ error of 10⁻⁹…10⁻¹¹).
fn at_four(source: &Source, case: &str, plan: &[Release], (mu, delta): (f64, f64)) -> f64 {
    // statrs agrees with mpmath's δ to 10⁻¹⁰ relative (a check of the constant)
    assert!(
        (gdp_delta_statrs(mu, 4.0) / delta - 1.0).abs() < 1e-10,
        "{case}"
    );
    let mut out = 0.0;
    for a in [Accountant::Gdp, Accountant::Pld] {
        let e = eps(plan, delta, a);
        report(
            source,
            &format!("{case}: {a} ε at the exact δ(4) = {delta:e}"),
            e,
            4.0,
        );
        assert!(e >= 4.0 * (1.0 - 1e-13), "{case} {a}: {e} below 4");
        assert!(e <= 4.0 * (1.0 + 1e-9), "{case} {a}: {e}");
        out = e;
    }
    out
}

/// `TestPRVAccountant::test_gaussian_mechanism_analytic_homogeneous`: noise
/// multiplier 100, 10,000 / 10,001 / 10,002 compositions (μ = √n/100), at
/// ε = 4; and `TestDPSGDAccountant::test_analytic_solution` (10,000, the
/// same δ within 10⁻³ relative).
#[test]
fn gaussian_mechanism_analytic_homogeneous() {
    let source = Source {
        file: FILE,
        test: "TestPRVAccountant::test_gaussian_mechanism_analytic_homogeneous",
    };
    for (n, delta) in [
        (10_000u64, 4.7122412007931198674e-5),
        (10_001, 4.7166062235599132448e-5),
        (10_002, 4.7209744660413711066e-5),
    ] {
        let mu = (n as f64).sqrt() / 100.0;
        at_four(
            &source,
            &format!("{n} compositions"),
            &[gauss(100.0, 1.0, n)],
            (mu, delta),
        );
    }
    // negative control: 9,000 compositions at the δ of 10,000 claim less
    let delta = gdp_delta_statrs(1.0, 4.0);
    assert!(eps(&[gauss(100.0, 1.0, 9_000)], delta, Accountant::Gdp) < 3.9);
}

/// `TestPRVAccountant::test_gaussian_mechanism_analytic_heterogeneous`: 50
/// compositions of noise multiplier 10 and 50 of 5 (μ = √(50/10² + 50/5²)),
/// at ε = 4.
#[test]
fn gaussian_mechanism_analytic_heterogeneous() {
    let source = Source {
        file: FILE,
        test: "TestPRVAccountant::test_gaussian_mechanism_analytic_heterogeneous",
    };
    let mu = (50.0 / 100.0 + 50.0 / 25.0_f64).sqrt();
    let plan = [gauss(10.0, 1.0, 50), gauss(5.0, 1.0, 50)];
    at_four(
        &source,
        "50 × σ 10 + 50 × σ 5",
        &plan,
        (mu, 0.016455672864108926702),
    );
    // negative control: the second group dropped
    let delta = gdp_delta_statrs(mu, 4.0);
    assert!(eps(&plan[..1], delta, Accountant::Gdp) < 2.0);
}
