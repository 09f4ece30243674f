//! The accountants, one file each, and what they share: the dispatch
//! ([`evaluate`]), one release's tightest ε ([`single_eps`]) and zCDP ρ
//! ([`eff_rho`]), and the bucketing of many distinct approximate-DP releases
//! ([`approx_items`]).
//!
//! | file | accountant | result it implements |
//! |---|---|---|
//! | `basic.rs` | [`Accountant::Basic`] | basic composition (Dwork et al. 2006; Dwork & Roth 2014, Thm 3.16) |
//! | `advanced.rs` | [`Accountant::Advanced`] | Dwork–Rothblum–Vadhan 2010; Kairouz–Oh–Viswanath 2015, Thm 3.3 and 3.5 |
//! | `classical.rs` | [`Accountant::Classical`] | Mironov 2017 Prop 3 on linear curves, closed form (Bun & Steinke 2016, Prop 1.3) |
//! | `kov.rs` | inside [`Accountant::Advanced`] | the KOV optimal composition (Thm 3.3) of identical pure releases, exact, one walk over ~√k loss atoms |
//! | `zcdp.rs` | [`Accountant::Zcdp`] | Bun & Steinke 2016 (composition, Prop 1.6, 3.3); Steinke 2024 Thm 5 |
//! | `rdp.rs` | [`Accountant::Rdp`] | Mironov 2017 (composition, Gaussian and Laplace curves); Steinke 2024 Thm 4 |
//! | `gdp.rs` | [`Accountant::Gdp`] | Dong–Roth–Su 2019 Cor 3.3 with Balle–Wang 2018 Thm 8 |
//! | `pld.rs` | [`Accountant::Pld`] | Koskela et al. 2020; Doroshenko et al. 2022; Zhu, Dong & Wang 2022 Thm 10 |
//! | `pld_conv.rs` | (PLD's convolutions) | per-entry FFT round-off bound (Higham 2002, Thm 24.2) with exponential tilting (Keich 2005) |
//! | `pld_leaves.rs` | (PLD's leaves) | a plan split into its Gaussian part and its grid leaves |
//! | `pld_laplace.rs`, `pld_dgauss.rs` | (PLD's leaves) | exact Laplace and discrete Gaussian pairs; shift shapes over several coordinates (Blackwell's theorem on monotone likelihood ratios) |
//! | `pld_binomial.rs` | (PLD's leaves) | many identical pure releases as the exact binomial of randomized response (KOV 2015 Thm 3.3) |
//!
//! The RDP → (ε, δ) conversions they use live in [`crate::conversions`].

mod advanced;
mod basic;
mod classical;
pub(crate) mod gdp;
mod kov;
pub(crate) mod pld;
mod pld_conv;
mod rdp;
mod zcdp;

pub use rdp::{rdp_epsilon_with, RdpConversion};
pub use zcdp::zcdp_epsilon_from_rho;

use crate::conversions::balle2020_linear_lower_bound;
use crate::dgauss::DiscreteGaussian;
use crate::gaussian::gdp_epsilon;
use crate::grid::GeometricGrid;
use crate::special::{mul_up, sum_up, U};
use crate::{Accountant, AccountingError, Bound, Eff, Plan};
use std::collections::BTreeMap;

pub(crate) fn evaluate(plan: &Plan, delta: f64, a: Accountant) -> Result<Bound, AccountingError> {
    let (eps, detail) = match a {
        Accountant::Basic => basic::basic(plan, delta)?,
        Accountant::Advanced => advanced::advanced(plan, delta)?,
        Accountant::Classical => classical::classical(plan, delta)?,
        Accountant::Zcdp => zcdp::zcdp(plan, delta)?,
        Accountant::Rdp => rdp::rdp(plan, delta, RdpConversion::Best)?,
        Accountant::Gdp => gdp::gdp(plan, delta)?,
        Accountant::Pld => pld::pld_epsilon(plan, delta)?,
    };
    if eps.is_nan() {
        return Err(AccountingError::InvalidParameter(
            "numerical failure (NaN ε)".into(),
        ));
    }
    if eps.is_infinite() {
        return Err(AccountingError::InfiniteEpsilon(format!(
            "{a}: ε is unbounded at δ = {delta}"
        )));
    }
    Ok(Bound {
        accountant: a,
        epsilon: eps.max(0.0),
        delta,
        detail,
    })
}

/// Whether accountant `a` provably prints no ε below `leader` for `plan`
/// at δ, so that a search for the smallest ε ([`crate::best_among`]) need
/// not run it: its result, were it computed, would not replace the leader.
///
/// Said only where a lower bound on the accountant's whole result is
/// proven: the zCDP accountant converts the linear curve αρ (ρ summed
/// upwards over the plan, exactly as [`zcdp::zcdp`] does), and the RDP
/// accountant, on a plan of Gaussian kinds alone, converts the same curve
/// (its ρ summed the same way), by Mironov's closed form or Balle et al.'s
/// conversion, both rounded up and both at least
/// [`balle2020_linear_lower_bound`] at every order. Every other case:
/// `false`, and the accountant runs.
///
/// `lower` keeps that lower bound once computed: the zCDP and RDP
/// accountants' is the same number (one search over orders, with logs, per
/// plan instead of two: 10⁵ one-release queries each ask it).
pub(crate) fn cannot_beat(
    plan: &Plan,
    delta: f64,
    a: Accountant,
    leader: f64,
    lower: &std::cell::OnceCell<Option<f64>>,
) -> bool {
    // one Laplace release: its exact ε is known; every accountant's bound
    // is sound, so at least its lower end, and a bound that is not below
    // leader·(1 − TIE) does not replace the leader
    if let Some(eps0) = pld::lone_laplace(plan) {
        if delta > 0.0 && delta < 1.0 {
            let (lower, _) = pld::lone_laplace_epsilon(eps0, delta);
            if lower > 0.0 && lower >= leader * (1.0 - crate::TIE) {
                return true;
            }
        }
    }
    let gauss_kinds = || {
        plan.items
            .iter()
            .all(|i| matches!(i.eff, Eff::Gauss { .. } | Eff::DGauss { .. }))
    };
    let linear = match a {
        Accountant::Zcdp => true,
        Accountant::Rdp => gauss_kinds(),
        _ => false,
    };
    if !linear || plan.items.is_empty() || !(delta > 0.0 && delta < 1.0) {
        return false;
    }
    lower
        .get_or_init(|| balle2020_linear_lower_bound(plan_rho(plan), delta))
        .is_some_and(|lb| lb >= leader)
}

/// Whether accountant `a` is fast on `plan` at δ ([`crate::FAST`]): all
/// but the privacy-loss distribution always; that one where it is a closed
/// form (one Laplace release at δ > 0, [`pld::lone_laplace`]; at δ = 0 it
/// would print ε₀ as RDP does, which keeps its name there).
pub(crate) fn is_fast(plan: &Plan, delta: f64, a: Accountant) -> bool {
    a != Accountant::Pld || (delta > 0.0 && pld::lone_laplace(plan).is_some())
}

/// The plan's zCDP ρ: each release's ρ rounded up ([`eff_rho`]), their sum
/// upwards — the zCDP accountant's, and the RDP accountant's Gaussian part
/// on a plan of Gaussian kinds (summed in the same order).
pub(crate) fn plan_rho(plan: &Plan) -> f64 {
    sum_up(plan.items.iter().map(|i| (i.count as f64, eff_rho(&i.eff))))
}

pub(crate) fn infinite(what: &str) -> AccountingError {
    AccountingError::InfiniteEpsilon(format!(
        "{what} needs δ > 0 for approximate-DP (Gaussian) releases"
    ))
}

/// tightest single-release ε of an effective mechanism at δ
pub(crate) fn single_eps(eff: &Eff, delta: f64) -> Result<f64, AccountingError> {
    match *eff {
        Eff::Laplace { eps, .. }
        | Eff::DLaplace { eps, .. }
        | Eff::Exp { eps }
        | Eff::Pure { eps }
        | Eff::SPure { eps, .. } => Ok(eps),
        Eff::SGauss { mu, q } => {
            if delta <= 0.0 {
                return Err(infinite("a Gaussian release"));
            }
            Ok(crate::sampled::gauss_epsilon(mu, q, delta))
        }
        Eff::Gauss { mu } => {
            if delta <= 0.0 {
                return Err(infinite("a Gaussian release"));
            }
            Ok(gdp_epsilon(mu, delta))
        }
        Eff::DGauss {
            sigma, shift, rho, ..
        } => {
            if delta <= 0.0 {
                return Err(infinite("a discrete Gaussian release"));
            }
            let bound = zcdp_epsilon_from_rho(rho, delta);
            if let Some(s) = shift {
                if let Some(dg) = DiscreteGaussian::new(sigma, s) {
                    return Ok(dg.epsilon(delta).min(bound));
                }
            }
            Ok(bound)
        }
    }
}

/// zCDP ρ of one release, rounded up: μ²/2 by the exact error of the
/// product; ε·tanh(ε/2) with `libm::tanh` (allowed [`TANH_ULPS`]) and the
/// product (u), one float up.
pub(crate) fn eff_rho(eff: &Eff) -> f64 {
    match *eff {
        // a sampled Gaussian keeps the base's ρ (`sampled.rs`)
        Eff::Gauss { mu } | Eff::SGauss { mu, .. } => 0.5 * mul_up(mu, mu),
        Eff::DGauss { rho, .. } => rho,
        // any ε′-DP mechanism
        Eff::SPure { eps, .. } => pure_rho(eps),
        // Steinke 2024 Thm 5: ε-DP ⇒ ε·tanh(ε/2)-zCDP (tight; ≤ ε²/2)
        Eff::Laplace { eps, .. } | Eff::DLaplace { eps, .. } | Eff::Pure { eps } => pure_rho(eps),
        // ε-bounded range ⇒ ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2);
        // ε²/8 is ε² rounded up, divided exactly by 8 (one float up for
        // the subnormal range)
        Eff::Exp { eps } => pure_rho(eps).min((0.125 * mul_up(eps, eps)).next_up()),
    }
}

/// ε·tanh(ε/2) rounded up (Steinke 2024 Thm 5).
fn pure_rho(eps: f64) -> f64 {
    let v = eps * libm::tanh(eps / 2.0);
    (v * (1.0 + (2.0 * TANH_ULPS + 2.0) * U)).next_up()
}

/// Allowance, in ulps, for `libm::tanh` (musl documents < 2.5 ulps).
const TANH_ULPS: f64 = 8.0;

// ---------------------------------------------------------------------------
// Geometric bucketing (sound: parameters only rounded UP)
// ---------------------------------------------------------------------------

/// Approximate-DP items, optionally bucketed (μ / ρ / σ rounded to be more private-costly).
pub(crate) fn approx_items(plan: &Plan, ratio: f64, max_distinct: usize) -> Vec<(Eff, u64)> {
    let approx: Vec<(Eff, u64)> = plan
        .items
        .iter()
        .filter(|i| i.eff.pure_eps().is_none())
        .map(|i| (i.eff, i.count))
        .collect();
    if approx.len() <= max_distinct {
        return approx;
    }
    let grouped = Plan {
        items: approx
            .iter()
            .map(|&(eff, count)| crate::Item {
                eff,
                count,
                ratio: None,
            })
            .collect(),
    }
    .grouped();
    if grouped.items.len() <= max_distinct {
        return grouped
            .items
            .into_iter()
            .map(|i| (i.eff, i.count))
            .collect();
    }
    let grid = GeometricGrid::new(ratio);
    let mut map: BTreeMap<crate::EffKey, (Eff, u64)> = BTreeMap::new();
    for (e, c) in approx {
        let e2 = match e {
            Eff::Gauss { mu } => Eff::Gauss {
                mu: grid.round_up(mu).1,
            },
            // larger ρ with the same bound function; exact DG curve no longer used
            Eff::DGauss { sigma, rho, .. } => Eff::DGauss {
                sigma,
                shift: None,
                rho: grid.round_up(rho).1,
                shape: None,
            },
            other => other,
        };
        let e2 = match e2 {
            Eff::DGauss { rho, .. } => Eff::DGauss {
                sigma: 0.0,
                shift: None,
                rho,
                shape: None,
            },
            o => o,
        };
        map.entry(e2.key())
            .and_modify(|v| v.1 = v.1.saturating_add(c))
            .or_insert((e2, c));
    }
    map.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{normalise, Mechanism, NoiseKind, Release, Sensitivity};

    fn gaussian(sigma: f64, l2: f64, count: u64) -> Release {
        Release {
            sample: None,
            mechanism: Mechanism {
                kind: NoiseKind::Gaussian,
                scale: sigma,
                sensitivity: Sensitivity::scalar(l2),
            },
            count,
        }
    }

    #[test]
    fn a_lone_gaussian_skips_zcdp_and_rdp_behind_the_exact_gdp() {
        let plan = normalise(&[gaussian(31.0, 5.0, 1)]).unwrap();
        let gdp = evaluate(&plan, 1e-6, Accountant::Gdp).unwrap().epsilon;
        for a in [Accountant::Zcdp, Accountant::Rdp] {
            let own = evaluate(&plan, 1e-6, a).unwrap().epsilon;
            assert!(own > gdp, "{a}: {own} vs {gdp}");
            let fresh = std::cell::OnceCell::new;
            assert!(
                cannot_beat(&plan, 1e-6, a, gdp, &fresh()),
                "{a} not skipped"
            );
            // negative control: a leader above the accountant's own ε
            assert!(
                !cannot_beat(&plan, 1e-6, a, own * (1.0 + 1e-9), &fresh()),
                "{a}"
            );
        }
    }
}
