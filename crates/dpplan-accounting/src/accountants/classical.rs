//! The classical RDP closed form, the one a reviewer finds in textbooks and
//! in the reference text's own table (its equation 3):
//!
//! a = Σ kᵢ·ρᵢ,   ε = a + 2√(a·ln(1/δ)),
//!
//! with ρ = Δ₂²/(2σ²) for a (discrete) Gaussian release and ρ = ε₀²/2 for a
//! pure ε₀-DP release (Bun & Steinke 2016, Prop 3.3). Every release then has
//! the Rényi curve R(α) ≤ α·ρ, the curves add up (Mironov 2017, Prop 1), and
//! Mironov's conversion R(α) + ln(1/δ)/(α−1) (Prop 3) is minimised over
//! continuous α > 1 at α = 1 + √(ln(1/δ)/a), which gives the formula
//! (Bun & Steinke 2016, Prop 1.3, for ρ-zCDP). Valid, and loose: the zCDP,
//! RDP, exact Gaussian and PLD accountants are never above it, so
//! [`crate::best`] does not consider it; it is there to be named (by a plan's
//! `accountant classical` or seen in `dpplan account`) and compared with a
//! published table.
//!
//! # Printing the published digits without printing below the truth
//! Every other accountant rounds its last step up by a counted margin. Done
//! here, that margin would move the result off the published digits
//! (1.345380442439233 for one Gaussian release, σ = 4, Δ = 1, δ = 1e-6) by
//! an ulp or two, and the table would no longer match. Instead the formula
//! is evaluated exactly as the reference does, in binary64 to nearest
//! (a + 2·√(a·ln(1/δ))), and that value is printed only when it is
//! certified: when it is not below the zCDP accountant's rounded-up bound,
//! which is itself a proven upper bound on the plan's true ε. The closed
//! form's slack over the tighter bounds (about 10 % at δ = 1e-6 for one
//! Gaussian release) is many orders of magnitude above its rounding error
//! (≈ 10⁻¹⁵ relative), so the check passes on every case tested; when it
//! does not, the rounded-up enclosure
//! ([`linear_rdp_closed_form`]) is printed instead, and the detail says so.

use super::eff_rho;
use super::zcdp::zcdp_epsilon_from_rho;
use crate::conversions::linear_rdp_closed_form;
use crate::special::{mul_up, sum_up};
use crate::{AccountingError, Eff, Plan};

/// ρ of one release for the classical form: to nearest (the reference's
/// arithmetic) and rounded up (the enclosure's).
fn classical_rho(eff: &Eff) -> (f64, f64) {
    match *eff {
        // a sampled Gaussian keeps the base's ρ (`sampled.rs`)
        Eff::Gauss { mu } | Eff::SGauss { mu, .. } => (0.5 * mu * mu, 0.5 * mul_up(mu, mu)),
        Eff::DGauss { rho, .. } => (rho, rho),
        Eff::Laplace { eps, .. }
        | Eff::DLaplace { eps, .. }
        | Eff::Exp { eps }
        | Eff::Pure { eps }
        | Eff::SPure { eps, .. } => (0.5 * eps * eps, 0.5 * mul_up(eps, eps)),
    }
}

pub(super) fn classical(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    let rhos: Vec<(f64, (f64, f64))> = plan
        .items
        .iter()
        .map(|i| (i.count as f64, classical_rho(&i.eff)))
        .collect();
    let a_up = sum_up(rhos.iter().map(|&(c, (_, up))| (c, up)));
    if a_up == 0.0 {
        return Ok((0.0, "a = 0".into()));
    }
    if delta <= 0.0 {
        return Err(AccountingError::InfiniteEpsilon(
            "the classical RDP closed form gives no finite ε at δ = 0".into(),
        ));
    }
    let a: f64 = rhos.iter().map(|&(c, (near, _))| c * near).sum();
    let nearest = a + 2.0 * (a * (1.0 / delta).ln()).sqrt();
    // a proven upper bound on the plan's ε that never exceeds the closed form
    let witness = zcdp_epsilon_from_rho(
        sum_up(plan.items.iter().map(|i| (i.count as f64, eff_rho(&i.eff)))),
        delta,
    );
    let form = "ε = a + 2√(a·ln(1/δ)) (Mironov 2017 Prop 3 on Σ α·ρ, optimised over continuous α)";
    if nearest.is_finite() && nearest >= witness {
        Ok((
            nearest,
            format!(
                "a = {a:e}, {form}; evaluated to nearest, as published, and certified: \
                 not below the zCDP accountant's rounded-up bound {witness:e}"
            ),
        ))
    } else {
        let (hi, _) = linear_rdp_closed_form(a_up, delta);
        Ok((
            hi,
            format!(
                "a = {a_up:e}, {form}; rounded up (the value to nearest, {nearest:e}, \
                 could not be certified against the zCDP bound {witness:e})"
            ),
        ))
    }
}
