//! Exact accounting of continuous Gaussians: the composition is μ-GDP with
//! μ = √(Σ k Δ₂²/σ²) (Dong–Roth–Su 2019, Cor 3.3), whose privacy profile is
//! Balle–Wang 2018 Thm 8 ([`crate::gaussian`]).

use super::infinite;
use crate::gaussian::{gdp_delta_upper, gdp_epsilon};
use crate::special::U;

/// An upper bound on √(Σ kᵢμᵢ²) from its float sum `mu2` over `n` terms
/// (each μᵢ = Δ₂/σ rounded to nearest): the relative error of the sum is
/// ≤ (n + 4)u (1.01 for the higher-order terms), the square root halves it
/// and adds u.
pub(crate) fn mu_upper(mu2: f64, n: usize) -> f64 {
    if mu2 <= 0.0 {
        return 0.0;
    }
    let rel = 1.01 * (n as f64 + 4.0) * U;
    ((mu2 * (1.0 + rel)).sqrt() * (1.0 + 2.0 * U)).next_up()
}
use crate::{AccountingError, Eff, Plan};

pub(super) fn gdp(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    let mut mu2 = 0.0;
    for it in &plan.items {
        match it.eff {
            Eff::Gauss { mu } => mu2 += it.count as f64 * mu * mu,
            _ => {
                return Err(AccountingError::NotApplicable(
                    "exact Gaussian accounting needs every release to be a continuous Gaussian"
                        .into(),
                ))
            }
        }
    }
    // μ rounded up: each μᵢ = Δ₂/σ is rounded up already, μᵢ² and k·μᵢ²
    // carry ≤ u each, the sum of n positive terms ≤ (n−1)u more; the square
    // root ≤ u.
    let mu = match plan.items.as_slice() {
        // one release: μ itself (rounded up already), no sum
        [only] if only.count == 1 => match only.eff {
            Eff::Gauss { mu } => mu,
            _ => mu_upper(mu2, 1),
        },
        items => mu_upper(mu2, items.len()),
    };
    if mu == 0.0 {
        return Ok((0.0, "μ = 0".into()));
    }
    if delta <= 0.0 {
        return Err(infinite("GDP"));
    }
    let e = gdp_epsilon(mu, delta);
    debug_assert!(gdp_delta_upper(mu, e) <= delta);
    Ok((
        e,
        format!("μ-GDP with μ = {mu:.9}, Balle–Wang exact conversion"),
    ))
}
