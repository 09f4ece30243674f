//! Attack risk: the hypothesis-testing reading of a plan's guarantee
//! (Wasserman & Zhou 2010; Kairouz, Oh & Viswanath 2015; Dong, Roth & Su
//! 2019). A membership test between the two neighbouring datasets with
//! false-positive rate α has a true-positive rate of at most 1 − f(α),
//! where f is the trade-off function of the plan's composition.
//!
//! * A mechanism that is (ε, δ(ε))-DP for every ε ≥ 0 has
//!   f(α) ≥ sup_ε max(0, 1 − δ(ε) − e^ε·α, e^{−ε}·(1 − δ(ε) − α))
//!   (Dong, Roth & Su 2019, Prop 2.5 and 2.12: the supremum *is* f when δ
//!   is the exact profile of a symmetric pair). An upper bound on δ(ε)
//!   gives a lower bound on every line, and a supremum over any finite
//!   set of ε of lower bounds on f is still a lower bound on f: the TPR
//!   1 − f(α) printed is an upper bound whatever the set of ε searched.
//!   The search only decides how tight it is.
//! * Which curve: a plan of continuous Gaussians only is μ-GDP exactly
//!   (Dong, Roth & Su 2019, Cor 3.3): TPR = Φ(Φ⁻¹(α) + μ), evaluated with
//!   Φ's proven enclosure ([`tpr_gdp`]). Any other plan: the PLD
//!   accountant's composed dominating pair (`Curve::delta_upper`); its
//!   profile is above the plan's at every ε, so its trade-off curve is
//!   below the plan's. A pure-ε plan adds the δ = 0 line,
//!   TPR ≤ min(1, e^ε·α, 1 − e^{−ε}(1 − α)) with ε = Σεᵢ. When the PLD does
//!   not apply (more than 10¹² releases, a discrete Gaussian it has no
//!   pair for), the fast accountants' (ε, δ) at a ladder of δ: each pair
//!   is one line below f.
//! * The thresholds of keys from the data add their δ to every ε
//!   (`extra_delta`), as they add it to the plan's claim.

use crate::accountants::pld::{compose_plan, directions, Curve, Resolution};
use crate::special::{golden, ln_phi_approx, ELEM_ULPS, U};
use crate::{normalise, AccountingError, Eff, Plan, Release};
use serde::Serialize;

/// The false-positive rates every front end states the TPR at.
pub const FPRS: [f64; 2] = [0.01, 0.001];

/// The best true-positive rate of any membership test at one
/// false-positive rate (an upper bound: never below the truth).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TprPoint {
    pub fpr: f64,
    pub tpr: f64,
}

/// Which (ε, δ(ε)) curve the trade-off function was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CurveSource {
    /// μ-GDP, exact (continuous Gaussians only)
    Gdp,
    /// the PLD accountant's composed dominating pair
    Pld,
    /// the fast accountants' (ε, δ) at a ladder of δ
    Fast,
    /// nothing is released
    None,
}

/// The plan's attack risk: the TPR at each false-positive rate asked, and
/// μ when the plan is μ-GDP exactly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttackRisk {
    pub points: Vec<TprPoint>,
    /// μ of a plan of continuous Gaussians only (rounded up); `None` otherwise
    pub gdp_mu: Option<f64>,
    pub curve: CurveSource,
}

impl AttackRisk {
    /// The TPR at `fpr`, when it was asked.
    pub fn tpr_at(&self, fpr: f64) -> Option<f64> {
        self.points.iter().find(|p| p.fpr == fpr).map(|p| p.tpr)
    }
}

/// The largest TPR of any membership test at each false-positive rate of
/// `fprs` (each in [0, 1]), for the composition of `releases`; `delta` is
/// the plan's δ (the PLD's truncation budget only: soundness does not
/// depend on it) and `extra_delta` a δ added to every ε (the thresholds
/// of keys from the data).
pub fn attack_risk(
    releases: &[Release],
    delta: f64,
    extra_delta: f64,
    fprs: &[f64],
) -> Result<AttackRisk, AccountingError> {
    for &a in fprs {
        if !(0.0..=1.0).contains(&a) {
            return Err(AccountingError::InvalidParameter(format!(
                "a false-positive rate must lie in [0, 1], got {a}"
            )));
        }
    }
    if !(0.0..1.0).contains(&extra_delta) {
        return Err(AccountingError::InvalidParameter(format!(
            "δ must lie in [0, 1), got {extra_delta}"
        )));
    }
    crate::check_delta(delta)?;
    let plan = normalise(releases)?;
    if plan.items.is_empty() {
        let points = fprs
            .iter()
            .map(|&fpr| TprPoint {
                fpr,
                tpr: line_tpr(0.0, extra_delta, fpr),
            })
            .collect();
        return Ok(AttackRisk {
            points,
            gdp_mu: None,
            curve: CurveSource::None,
        });
    }
    if let Some(mu) = gaussian_mu(&plan) {
        let points = fprs
            .iter()
            .map(|&fpr| TprPoint {
                fpr,
                tpr: plus_delta(tpr_gdp(mu, fpr), extra_delta),
            })
            .collect();
        return Ok(AttackRisk {
            points,
            gdp_mu: Some(mu),
            curve: CurveSource::Gdp,
        });
    }
    // the PLD's truncation needs a target; at δ = 0 (a pure plan) a small one
    let target = if delta > 0.0 { delta } else { 1e-9 };
    let pure = plan.all_pure().then(|| plan.pure_sum());
    // a plan with sampled releases has one curve per order of neighbours:
    // the attack's power is the larger
    let curves = directions(&plan).and_then(|dirs| {
        dirs.iter()
            .map(|&d| compose_plan(&plan, target, d, Resolution::Standard).map(|c| c.curve))
            .collect::<Result<Vec<Curve>, _>>()
    });
    let (curve, tpr): (CurveSource, Box<dyn Fn(f64) -> f64 + Sync>) = match curves {
        Ok(curves) => (
            CurveSource::Pld,
            Box::new(move |a| {
                curves
                    .iter()
                    .map(|c| tpr_from_curve(c, a))
                    .fold(0.0, f64::max)
            }),
        ),
        Err(AccountingError::NotApplicable(_)) | Err(AccountingError::InfiniteEpsilon(_)) => {
            let lines = fast_lines(releases);
            (
                CurveSource::Fast,
                Box::new(move |a| {
                    lines
                        .iter()
                        .map(|&(e, d)| line_tpr(e, d, a))
                        .fold(1.0, f64::min)
                }),
            )
        }
        Err(e) => return Err(e),
    };
    let point = |fpr: f64| {
        let mut t = tpr(fpr);
        if let Some(eps) = pure {
            t = t.min(line_tpr(eps, 0.0, fpr));
        }
        TprPoint {
            fpr,
            tpr: plus_delta(t, extra_delta),
        }
    };
    // on a PLD curve each point is a search of many evaluations: the
    // points after the first on threads of their own (each point is
    // computed alone, so the same values either way)
    let points = match (curve, fprs.split_first()) {
        (CurveSource::Pld, Some((&first, rest))) if !rest.is_empty() => std::thread::scope(|s| {
            let point = &point;
            let others: Vec<_> = rest.iter().map(|&f| s.spawn(move || point(f))).collect();
            let mut points = vec![point(first)];
            for h in others {
                points.push(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            }
            points
        }),
        _ => fprs.iter().map(|&f| point(f)).collect(),
    };
    Ok(AttackRisk {
        points,
        gdp_mu: None,
        curve,
    })
}

/// μ of a plan of continuous Gaussians only, rounded up as the GDP
/// accountant rounds it (`accountants/gdp.rs`).
fn gaussian_mu(plan: &Plan) -> Option<f64> {
    let mut mu2 = 0.0;
    for it in &plan.items {
        match it.eff {
            Eff::Gauss { mu } => mu2 += it.count as f64 * mu * mu,
            _ => return None,
        }
    }
    Some(match plan.items.as_slice() {
        [only] if only.count == 1 => match only.eff {
            Eff::Gauss { mu } => mu,
            _ => crate::accountants::gdp::mu_upper(mu2, 1),
        },
        items => crate::accountants::gdp::mu_upper(mu2, items.len()),
    })
}

/// A TPR bound plus a δ that holds at every ε: each line's δ grows by it,
/// so the TPR by at most it (rounded up, at most 1).
fn plus_delta(tpr: f64, extra: f64) -> f64 {
    if extra > 0.0 {
        (tpr + extra).next_up().min(1.0)
    } else {
        tpr
    }
}

/// An upper bound on Φ(Φ⁻¹(α) + μ), the TPR at FPR α of μ-GDP.
/// Φ⁻¹(α) is bounded from above by bisection on Φ's proven lower bound
/// (the z returned has Φ(z) ≥ α certainly), then Φ(z + μ) from above by
/// its proven upper bound; z + μ and the exponential are rounded up.
pub fn tpr_gdp(mu: f64, alpha: f64) -> f64 {
    if alpha <= 0.0 {
        return 0.0;
    }
    if alpha >= 1.0 || !mu.is_finite() {
        return 1.0;
    }
    let ln_a = libm::log(alpha);
    let ln_a_hi = ln_a + 2.0 * ELEM_ULPS * U * ln_a.abs();
    // Φ(z) ≥ α for sure when ln Φ(z)'s lower bound ≥ ln α's upper bound
    let holds = |z: f64| ln_phi_approx(z).lo() >= ln_a_hi;
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    if !holds(hi) {
        return 1.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if holds(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let x = (hi + mu).next_up();
    let up = libm::exp(ln_phi_approx(x).hi()) * (1.0 + 2.0 * ELEM_ULPS * U);
    up.next_up().min(1.0)
}

/// The TPR bound of one (ε, δ) pair at FPR α: 1 minus the larger of the
/// two lines of f, min(1, δ + e^ε·α, 1 − e^{−ε}(1 − δ − α)), each rounded
/// up: exp carries ≤ `ELEM_ULPS`, each product and sum u.
pub fn line_tpr(eps: f64, delta: f64, alpha: f64) -> f64 {
    let grow = 1.0 + (ELEM_ULPS + 3.0) * U;
    let first = ((libm::exp(eps) * alpha * grow).next_up() + delta) * (1.0 + U);
    // a lower bound on 1 − δ − α (two subtractions: ≤ 2u absolute, and u more)
    let rest = (1.0 - delta) - alpha - 3.0 * U;
    let second = if rest > 0.0 {
        let low = libm::exp(-eps) * rest * (1.0 - (ELEM_ULPS + 3.0) * U);
        ((1.0 - low) * (1.0 + U)).next_up()
    } else {
        1.0
    };
    first.next_up().min(second).min(1.0)
}

/// The TPR bound at FPR α from a δ(ε) upper bound: the smallest
/// [`line_tpr`] over ε ≥ 0. Each line is convex in e^ε for the chordal
/// (hence convex) curve, so each is unimodal in ε: a log-spaced scan
/// brackets the minimum and a golden-section search refines it. Any ε
/// tried gives a sound bound; the minimum of those tried is returned.
fn tpr_from_curve(curve: &Curve, alpha: f64) -> f64 {
    if alpha >= 1.0 {
        return 1.0;
    }
    // beyond ε_hi, δ(ε) is below α·10⁻¹⁵ (or the mass at ∞): larger ε
    // only grow e^ε·α
    let mu = curve.mu();
    let tail = if mu > 0.0 {
        crate::gaussian::gdp_epsilon(mu, (alpha * 1e-15).max(1e-300))
    } else {
        0.0
    };
    let eps_hi = (curve.loss_max() + tail + curve.h()).clamp(1e-6, 700.0);
    let f = |e: f64| line_tpr(e, curve.delta_upper(e), alpha);
    // the scan: 0 and 48 points from ε_hi·10⁻⁶ to ε_hi, log-spaced
    let n = 48;
    let grid: Vec<f64> = std::iter::once(0.0)
        .chain((0..=n).map(|k| eps_hi * 10f64.powf(-6.0 * (n - k) as f64 / n as f64)))
        .collect();
    let values: Vec<f64> = grid.iter().map(|&e| f(e)).collect();
    let (k, best) =
        values
            .iter()
            .copied()
            .enumerate()
            .fold(
                (0, f64::INFINITY),
                |(kb, vb), (k, v)| if v < vb { (k, v) } else { (kb, vb) },
            );
    let lo = grid[k.saturating_sub(1)];
    let hi = grid[(k + 1).min(grid.len() - 1)];
    let (_, refined) = golden(lo, hi, &f);
    best.min(refined).min(1.0)
}

/// The (ε, δ) pairs of the fast accountants at a ladder of δ, for plans
/// the PLD does not compose: each is a proven guarantee, so each is one
/// line below the trade-off function.
fn fast_lines(releases: &[Release]) -> Vec<(f64, f64)> {
    (1..=15)
        .filter_map(|k| {
            let delta = 10f64.powi(-k);
            crate::fast_best(releases, delta)
                .ok()
                .map(|b| (b.epsilon, delta))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pure_line_is_the_randomized_response_curve() {
        // ε = ln 3 (RR with p = 3/4): at α = 1/4 − the best test has TPR 3/4
        let e = 3f64.ln();
        let t = line_tpr(e, 0.0, 0.25);
        assert!(t >= 0.75 && t - 0.75 < 1e-14, "{t}");
        // below the kink the e^ε·α line binds
        let t = line_tpr(e, 0.0, 0.01);
        assert!(t >= 0.03 && t - 0.03 < 1e-14, "{t}");
    }

    #[test]
    fn gdp_tpr_is_the_closed_form_and_never_below() {
        // Φ(Φ⁻¹(0.01) + 1) with Φ⁻¹(0.01) = −2.326347874040841 (scipy):
        // Φ(−1.326347874040841) = 0.092365...
        let t = tpr_gdp(1.0, 0.01);
        let reference = 0.5 * libm::erfc(1.326_347_874_040_841 / std::f64::consts::SQRT_2);
        assert!(
            t >= reference && t - reference < 1e-12,
            "{t} vs {reference}"
        );
        assert!(tpr_gdp(0.0, 0.3) >= 0.3);
        assert!(tpr_gdp(0.0, 0.3) - 0.3 < 1e-12);
        assert_eq!(tpr_gdp(2.0, 0.0), 0.0);
        assert_eq!(tpr_gdp(2.0, 1.0), 1.0);
    }

    #[test]
    fn the_curve_search_finds_the_closed_form_on_a_gaussian_curve() {
        // the generic path (the sup over ε of the (ε, δ(ε)) lines, δ from
        // Balle–Wang) against Φ(Φ⁻¹(α) + μ): the duality and the search
        let releases = [crate::Release {
            sample: None,
            mechanism: crate::Mechanism {
                kind: crate::NoiseKind::Gaussian,
                scale: 2.0,
                sensitivity: crate::Sensitivity::scalar(1.0),
            },
            count: 9,
        }];
        let plan = normalise(&releases).unwrap();
        let curve = compose_plan(
            &plan,
            1e-6,
            crate::accountants::pld::Direction::Remove,
            Resolution::Standard,
        )
        .unwrap()
        .curve;
        for alpha in [0.1, 0.01, 0.001, 1e-5] {
            let closed = tpr_gdp(1.5, alpha);
            let searched = tpr_from_curve(&curve, alpha);
            assert!(searched >= closed - 1e-12, "{alpha}: {searched} < {closed}");
            assert!(searched - closed < 1e-9, "{alpha}: {searched} vs {closed}");
        }
    }
}
