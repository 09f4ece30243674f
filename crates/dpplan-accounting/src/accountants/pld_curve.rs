//! The PLD accountant's composed curve: δ(ε) of the plan's dominating
//! pair at any ε, read by the accountant's ε search and by the trade-off
//! curve (`crate::tradeoff`).

use super::{h_of, GridPld};
use crate::gaussian::gdp_delta_upper;
use crate::special::{ELEM_ULPS, U};

/// A plan's composed dominating pair: the grid part `g` and the Gaussian
/// part μ (rounded up), whose δ(ε) [`Curve::delta_upper`] bounds the
/// plan's privacy profile from above at every ε.
pub(crate) struct Curve {
    pub(super) g: GridPld,
    pub(super) mu: f64,
    pub(super) losses: Vec<f64>,
    /// `below[i]` ≥ Σ_{j<i} p_j (upper bounds: each partial sum rounded
    /// up), for the bulk bound of [`Curve::delta_upper`].
    below: Vec<f64>,
}

/// The share of the running δ below which [`Curve::delta_upper`] bounds
/// the remaining (lower-loss) terms in bulk instead of one by one: the
/// bulk bound is an upper bound, so this only costs tightness, at most
/// this relative share of δ (ε moves by far less than its printed digits).
const BULK_SHARE: f64 = 1e-12;

impl Curve {
    /// The composed pair: grid part `g` (losses (lo + i)·h) and Gaussian
    /// part μ.
    pub(super) fn new(g: GridPld, mu: f64) -> Curve {
        let h = h_of(g.e);
        let losses: Vec<f64> = (0..g.p.len())
            .map(|i| (g.lo + i as i64) as f64 * h)
            .collect();
        let mut below = Vec::with_capacity(g.p.len());
        let mut s = 0.0f64;
        for &p in &g.p {
            below.push(s);
            // rounded up: the float sum of positive terms, one step up each
            s = (s + p).next_up();
        }
        Curve {
            g,
            mu,
            losses,
            below,
        }
    }

    /// An upper bound on δ(ε) = p_∞ + Σ_k p_k·δ_μ(ε − l_k) of the composed
    /// pair (the grid masses are entrywise upper bounds, their round-off
    /// included: `pld_conv.rs` for the convolutions, [`round_up`] for the
    /// other steps). Error terms: t = ε − l_k is rounded to nearest (l_k =
    /// k·h is exact), and δ_μ decreases in t, so the float below is used;
    /// δ_μ is the proven upper bound [`gdp_delta_upper`] (without
    /// Gaussians, −expm1(t) from libm, ≤ [`ELEM_ULPS`]); the n products and
    /// the sum of n + 1 positive terms add ≤ (n + 2)u relative, covered by
    /// the factor 1 + 1.01(n + 2)u and one step up.
    ///
    /// The terms are taken from the largest loss down, where t grows and
    /// δ_μ(t) shrinks (δ_μ decreases in t; without Gaussians a term with
    /// t ≥ 0 is 0). Once a term's δ_μ(t_k) times the mass below it,
    /// `below[k]` (an upper bound), is at most [`BULK_SHARE`] of the sum so
    /// far, every lower term is bounded by δ_μ(t_k) itself and their sum by
    /// that product, which is added instead: still an upper bound, one
    /// product more (within the n + 2 terms counted). The bound holds for
    /// the true terms: for j < k the exact t_j = ε − l_j is at least the
    /// float t_k (rounded down), so δ_μ(t_j) ≤ δ_μ(t_k) ≤ the proven upper
    /// bound computed at t_k.
    pub(crate) fn delta_upper(&self, eps: f64) -> f64 {
        let (g, mu) = (&self.g, self.mu);
        let grow = 1.0 + 1.01 * (g.p.len() as f64 + 2.0) * U;
        let grow_exp = 1.0 + 2.0 * ELEM_ULPS * U;
        let mut d = g.inf;
        for (i, &p) in g.p.iter().enumerate().rev() {
            let t = (eps - self.losses[i]).next_down();
            if mu > 0.0 {
                if p == 0.0 {
                    continue;
                }
                let dm = gdp_delta_upper(mu, t);
                d += p * dm;
                let rest = dm * self.below[i];
                if rest <= BULK_SHARE * d {
                    d += rest;
                    break;
                }
            } else if t < 0.0 {
                d += p * (-libm::expm1(t) * grow_exp);
            } else {
                break; // t ≥ 0 here and below: every term is 0
            }
        }
        (d * grow).next_up()
    }

    /// [`Curve::delta_upper`] term by term, every one evaluated: the
    /// reference its bulk bound is tested against.
    #[cfg(test)]
    pub(crate) fn delta_upper_every_term(&self, eps: f64) -> f64 {
        let (g, mu) = (&self.g, self.mu);
        let grow = 1.0 + 1.01 * (g.p.len() as f64 + 2.0) * U;
        let grow_exp = 1.0 + 2.0 * ELEM_ULPS * U;
        let mut d = g.inf;
        for (i, &p) in g.p.iter().enumerate().rev() {
            let t = (eps - self.losses[i]).next_down();
            if mu > 0.0 {
                d += p * gdp_delta_upper(mu, t);
            } else if t < 0.0 {
                d += p * (-libm::expm1(t) * grow_exp);
            }
        }
        (d * grow).next_up()
    }

    /// The largest finite loss of the grid part (0 when it is empty).
    pub(crate) fn loss_max(&self) -> f64 {
        self.losses.last().copied().unwrap_or(0.0).max(0.0)
    }

    /// The Gaussian part's μ (rounded up; 0 without Gaussians).
    pub(crate) fn mu(&self) -> f64 {
        self.mu
    }

    /// The grid's width h.
    pub(crate) fn h(&self) -> f64 {
        h_of(self.g.e)
    }
}

#[cfg(test)]
mod tests {
    use crate::accountants::pld::compose_plan;
    use crate::{normalise, Mechanism, NoiseKind, Release, Sensitivity};

    fn release(kind: NoiseKind, scale: f64, l1: f64, count: u64) -> Release {
        Release {
            sample: None,
            mechanism: Mechanism {
                kind,
                scale,
                sensitivity: Sensitivity::scalar(l1),
            },
            count,
        }
    }

    /// The bulk bound against every term evaluated: within its share of
    /// δ, on plans with a grid part and a Gaussian part of every balance,
    /// and without Gaussians (where it only skips terms that are 0), over
    /// ε from the bulk of the loss to its far tail.
    #[test]
    fn the_bulk_bound_is_within_its_share_of_every_term() {
        let plans = [
            vec![
                release(NoiseKind::Laplace, 10.0, 1.0, 30),
                release(NoiseKind::Gaussian, 3.0, 1.0, 5),
            ],
            vec![
                release(NoiseKind::Laplace, 2.0, 1.0, 3),
                release(NoiseKind::Gaussian, 40.0, 1.0, 1),
            ],
            vec![
                release(NoiseKind::Laplace, 50.0, 1.0, 400),
                release(NoiseKind::Gaussian, 0.5, 1.0, 1),
            ],
            vec![release(NoiseKind::Laplace, 5.0, 1.0, 20)],
        ];
        let mut pruned_any = false;
        for (k, releases) in plans.iter().enumerate() {
            let plan = normalise(releases).unwrap();
            let curve = compose_plan(
                &plan,
                1e-6,
                crate::accountants::pld::Direction::Remove,
                crate::accountants::pld::Resolution::Claim,
            )
            .unwrap()
            .curve;
            let top = curve.loss_max().max(1.0) * 2.0;
            for i in 0..=60 {
                let eps = top * f64::from(i) / 60.0;
                let (bulk, every) = (curve.delta_upper(eps), curve.delta_upper_every_term(eps));
                assert!(
                    (bulk - every).abs() <= 2.0 * super::BULK_SHARE * every + 1e-300,
                    "plan {k}, ε = {eps}: {bulk} vs {every}"
                );
                pruned_any |= bulk != every;
            }
        }
        // the bound was taken somewhere (else this test shows nothing)
        assert!(pruned_any);
    }
}
