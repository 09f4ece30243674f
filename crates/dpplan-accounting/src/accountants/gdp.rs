//! Exact accounting of continuous Gaussians: the composition is μ-GDP with
//! μ = √(Σ k Δ₂²/σ²) (Dong–Roth–Su 2019, Cor 3.3), whose privacy profile is
//! Balle–Wang 2018 Thm 8 ([`crate::gaussian`]).

use super::infinite;
use crate::gaussian::{gdp_delta, gdp_epsilon};
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
    let mu = mu2.sqrt();
    if mu == 0.0 {
        return Ok((0.0, "μ = 0".into()));
    }
    if delta <= 0.0 {
        return Err(infinite("GDP"));
    }
    let e = gdp_epsilon(mu, delta);
    debug_assert!(gdp_delta(mu, e) <= delta);
    Ok((
        e,
        format!("μ-GDP with μ = {mu:.9}, Balle–Wang exact conversion"),
    ))
}
