//! OpenDP (`opendp/opendp`): the conversion of ρ-zCDP to (ε, δ)
//! (Canonne–Kamath–Steinke 2020's optimal conversion; dpplan's
//! [`zcdp_epsilon_from_rho`], the better of it over a grid of orders and
//! Bun–Steinke's closed form).

use super::*;

/// `rust/src/combinators/measure_cast/zCDP_to_approxDP/test.rs`,
/// `test_zCDP_to_approxDP_nontrivial` (and the Python `test_gaussian_curve`):
/// a Gaussian of scale 4 on Δ = 1, ρ = 1/32: ε(δ = 10⁻³) =
/// 0.6880024554878085, δ(ε = 0) = 0.1508457845622862. dpplan's ε is the
/// same to 10⁻¹² relative, never below it by more than OpenDP's own
/// stated ulp; at δ(0) its ε is 0 to 10⁻⁶ (the conversion is flat there).
#[test]
fn zcdp_to_approx_dp_nontrivial() {
    let source = Source {
        file: "opendp rust/src/combinators/measure_cast/zCDP_to_approxDP/test.rs",
        test: "test_zCDP_to_approxDP_nontrivial",
    };
    let rho = 1.0 / 32.0;
    let e = zcdp_epsilon_from_rho(rho, 1e-3);
    report(&source, "ε(δ = 1e-3)", e, 0.6880024554878085);
    assert!((e / 0.6880024554878085 - 1.0).abs() < 1e-12, "{e}");
    assert!(
        e >= 0.6880024554878085 * (1.0 - 2.0 * f64::EPSILON),
        "{e} below OpenDP's"
    );
    // the same through a plan: one Gaussian of σ = 4 under the zCDP accountant
    let plan = [gauss(4.0, 1.0, 1)];
    let z = eps(&plan, 1e-3, Accountant::Zcdp);
    assert!((z / 0.6880024554878085 - 1.0).abs() < 1e-12, "{z}");
    let at_zero = zcdp_epsilon_from_rho(rho, 0.1508457845622862);
    report(&source, "ε(δ = δ(0) = 0.1508457845622862)", at_zero, 0.0);
    assert!(at_zero.abs() < 1e-6, "{at_zero}");
    // a δ a little below δ(0) needs a positive ε
    assert!(zcdp_epsilon_from_rho(rho, 0.15) > 1e-4);
    // negative control: ρ doubled (σ = 4/√2)
    assert!(zcdp_epsilon_from_rho(2.0 * rho, 1e-3) > e * 1.3);
}

/// `rust/src/combinators/measure_cast/zCDP_to_approxDP/cdp_delta/test.rs`
/// (`test_zcdp_delta_rounding_regression`, `test_edge_cases`; the function
/// is `cdp_delta` in older releases): δ(ρ = 0.05, ε = 0.25) =
/// 8.17727531036956·10⁻², δ(ρ = 0.5, ε = 0) = 0.5588356393474351. dpplan
/// inverts the other way (ε of δ): at those δ its ε is the published ε to
/// 10⁻⁹ (absolute) and never below it by more than that.
#[test]
fn cdp_delta() {
    let source = Source {
        file: "opendp rust/src/combinators/measure_cast/zCDP_to_approxDP/cdp_delta/test.rs",
        test: "test_zcdp_delta_rounding_regression / test_edge_cases",
    };
    let e = zcdp_epsilon_from_rho(0.05, 8.17727531036956e-2);
    report(&source, "ε(ρ = 0.05, δ = 0.0817727531036956)", e, 0.25);
    assert!((e - 0.25).abs() < 1e-9, "{e}");
    let e0 = zcdp_epsilon_from_rho(0.5, 0.5588356393474351);
    report(&source, "ε(ρ = 0.5, δ = 0.5588356393474351)", e0, 0.0);
    assert!(e0.abs() < 1e-6, "{e0}");
    // negative control: δ halved needs more ε
    assert!(zcdp_epsilon_from_rho(0.05, 8.17727531036956e-2 / 2.0) > 0.25 + 0.05);
}
