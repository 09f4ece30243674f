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
}

impl Curve {
    /// An upper bound on δ(ε) = p_∞ + Σ_k p_k·δ_μ(ε − l_k) of the composed
    /// pair (the grid masses are entrywise upper bounds, their round-off
    /// included: `pld_conv.rs` for the convolutions, [`round_up`] for the
    /// other steps). Error terms: t = ε − l_k is rounded to nearest (l_k =
    /// k·h is exact), and δ_μ decreases in t, so the float below is used;
    /// δ_μ is the proven upper bound [`gdp_delta_upper`] (without
    /// Gaussians, −expm1(t) from libm, ≤ [`ELEM_ULPS`]); the n products and
    /// the sum of n + 1 positive terms add ≤ (n + 2)u relative, covered by
    /// the factor 1 + 1.01(n + 2)u and one step up.
    pub(crate) fn delta_upper(&self, eps: f64) -> f64 {
        let (g, mu) = (&self.g, self.mu);
        let grow = 1.0 + 1.01 * (g.p.len() as f64 + 2.0) * U;
        let grow_exp = 1.0 + 2.0 * ELEM_ULPS * U;
        let mut d = g.inf;
        for (i, &p) in g.p.iter().enumerate() {
            if p == 0.0 {
                continue;
            }
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
