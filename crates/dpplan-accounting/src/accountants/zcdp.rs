//! zCDP (Bun & Steinke 2016): ρ adds up; converted to (ε, δ) by the better of
//! Bun–Steinke Prop 1.3 and Canonne–Kamath–Steinke 2020 Cor 13.

use crate::conversions::{balle2020_thm21_at, linear_rdp_closed_form, Order};
use crate::special::{minimize_log_grid, mul_up};
use crate::{AccountingError, Plan};

/// ε of ρ-zCDP at δ: min of Bun–Steinke Prop 1.3, ρ + 2√(ρ ln 1/δ)
/// ([`linear_rdp_closed_form`]), and CKS 2020 Cor 13 ([`balle2020_thm21`](crate::conversions::balle2020_thm21) on the
/// curve αρ, optimised over α).
pub fn zcdp_epsilon_from_rho(rho: f64, delta: f64) -> f64 {
    if rho <= 0.0 {
        return 0.0;
    }
    if delta <= 0.0 {
        return f64::INFINITY;
    }
    let (bs, a_star) = linear_rdp_closed_form(rho, delta);
    // α·ρ rounded up: the conversion is increasing in the curve's value
    let ld = libm::log(delta);
    let f = |a: f64| balle2020_thm21_at(mul_up(a, rho), &Order::new(a), ld);
    let (_, v) = minimize_log_grid(
        1.0,
        1.0 + 1e-9 * a_star.min(1e6),
        1.0 + 1e3 * (a_star - 1.0) + 1.0,
        161,
        f,
    );
    bs.min(v).max(0.0)
}

pub(super) fn zcdp(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    // each ρ rounded up, their sum too
    let rho = super::plan_rho(plan);
    if rho == 0.0 {
        return Ok((0.0, "ρ = 0".into()));
    }
    if delta <= 0.0 {
        return Err(AccountingError::InfiniteEpsilon(
            "zCDP gives no finite ε at δ = 0".into(),
        ));
    }
    let e = zcdp_epsilon_from_rho(rho, delta);
    Ok((
        e,
        format!("ρ = {rho:.6e} (Bun–Steinke / Canonne–Kamath–Steinke conversion)"),
    ))
}
