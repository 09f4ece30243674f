//! Rényi DP → (ε, δ): each conversion theorem once. The RDP accountant
//! minimises them over the order α; the zCDP accountant applies them to the
//! linear curve R(α) = αρ; the exact Gaussian and discrete Gaussian searches
//! start from the closed form as an upper bracket.
//!
//! Every function returns an ε such that a mechanism with RDP `rdp` at order
//! `alpha` (α > 1), or the curve named, is (ε, δ)-DP; none is evaluated
//! outside its theorem's hypotheses by this crate (α > 1, 0 < δ < 1).
//!
//! The ε returned is rounded UP, by construction: each formula is a short
//! sum of terms tᵢ; ln comes from `libm` (≤ `ELEM_ULPS`), the other
//! operations round to nearest (≤ u each), so the computed sum lies within
//! c·u·Σ|tᵢ| of the exact one, with c counted per function below; that
//! amount is added and the result taken one float up. `rdp` itself is taken
//! as exact: callers pass an upper bound on the curve.

use crate::special::{ELEM_ULPS, U};

/// v + c·u·mag, one float up: the rounding allowance of a short formula.
fn up(v: f64, c: f64, mag: f64) -> f64 {
    (v + c * U * mag).next_up()
}

/// Mironov 2017 ("Rényi differential privacy"), Proposition 3: an (α, R)-RDP
/// mechanism is (R + ln(1/δ)/(α−1), δ)-DP. Rounding: ln δ (ELEM_ULPS ulps),
/// α − 1 and the quotient (u each), the sum (u): c = 2·ELEM_ULPS + 4 on
/// |R| + |ln(1/δ)/(α−1)|.
pub fn mironov_prop3(rdp: f64, alpha: f64, delta: f64) -> f64 {
    mironov_prop3_at(rdp, &Order::new(alpha), libm::log(delta))
}

/// [`mironov_prop3`] at an order whose terms are computed, with
/// `ln_delta` = ln δ: the same floating-point operations, so the same bits.
pub fn mironov_prop3_at(rdp: f64, order: &Order, ln_delta: f64) -> f64 {
    let t = -ln_delta / order.am1;
    up(rdp + t, 2.0 * ELEM_ULPS + 4.0, rdp.abs() + t.abs())
}

/// An RDP order α > 1 with the terms of the conversions that depend on α
/// alone: α − 1, ln((α−1)/α) and ln α. A minimisation over orders that
/// meets the same α for many curves (the RDP accountant's fixed grid, one
/// per query of a plan) computes them once; the conversions at an `Order`
/// perform the same floating-point operations as those at α, so their
/// results are bit for bit the same.
#[derive(Clone, Copy, Debug)]
pub struct Order {
    /// α
    pub alpha: f64,
    /// α − 1, rounded to nearest
    pub am1: f64,
    /// ln((α−1)/α), `libm`
    pub ln_ratio: f64,
    /// ln α, `libm`
    pub ln_alpha: f64,
}

impl Order {
    /// The order α (> 1) and its terms.
    pub fn new(alpha: f64) -> Order {
        let am1 = alpha - 1.0;
        Order {
            alpha,
            am1,
            ln_ratio: libm::log(am1 / alpha),
            ln_alpha: libm::log(alpha),
        }
    }
}

/// Balle, Barthe, Gaboardi, Hsu & Sato 2020 ("Hypothesis testing
/// interpretations and Rényi differential privacy"), Theorem 21: an
/// (α, R)-RDP mechanism is (ε, δ)-DP with
/// ε = R + ln((α−1)/α) − (ln δ + ln α)/(α−1).
/// On the zCDP curve R(α) = αρ this is Canonne, Kamath & Steinke 2020
/// ("The discrete Gaussian for differential privacy"), Corollary 13.
///
/// Rounding: ln((α−1)/α) carries ≤ 3u from its argument plus ln's own;
/// (ln δ + ln α)/(α−1) ≤ 2·ELEM_ULPS ulps on each log and 3u more; two
/// additions: c = 2·ELEM_ULPS + 6 on |R| + |t₁| + |ln δ|/(α−1) + |ln α|/(α−1).
pub fn balle2020_thm21(rdp: f64, alpha: f64, delta: f64) -> f64 {
    balle2020_thm21_at(rdp, &Order::new(alpha), libm::log(delta))
}

/// [`balle2020_thm21`] at an order whose terms are computed, with
/// `ln_delta` = ln δ: the same floating-point operations, so the same bits.
pub fn balle2020_thm21_at(rdp: f64, order: &Order, ln_delta: f64) -> f64 {
    let (am1, t1, ld, la) = (order.am1, order.ln_ratio, ln_delta, order.ln_alpha);
    let t2 = (ld + la) / am1;
    let mag = rdp.abs() + t1.abs() + (ld.abs() + la.abs()) / am1;
    up(rdp + t1 - t2, 2.0 * ELEM_ULPS + 6.0, mag)
}

/// [`mironov_prop3`] minimised in closed form over α for the linear curve
/// R(α) = α·a: ε = a + 2√(a ln(1/δ)) at α = 1 + √(ln(1/δ)/a); returns
/// (ε, α). With a = ρ this is Bun & Steinke 2016 ("Concentrated differential
/// privacy"), Proposition 1.3; for k Gaussian releases a = kΔ₂²/(2σ²).
///
/// Rounding: ln δ (ELEM_ULPS), a·L (u), √ (u/2 on a 2u-accurate argument
/// adds ≤ 2u), ×2 exact, the sum (u): c = 2·ELEM_ULPS + 4 on a + 2√(aL).
pub fn linear_rdp_closed_form(a: f64, delta: f64) -> (f64, f64) {
    let l = -libm::log(delta);
    let s = 2.0 * (a * l).sqrt();
    (
        up(a + s, 2.0 * ELEM_ULPS + 4.0, a.abs() + s),
        1.0 + (l / a).sqrt(),
    )
}

/// [`linear_rdp_closed_form`]'s ε written in μ = Δ₂/σ (a = μ²/2):
/// μ²/2 + μ√(2 ln(1/δ)). The same bound, in the algebraic form the exact
/// Gaussian and discrete Gaussian searches start their upper bracket from
/// (their results depend on the bracket's bits, so the form is kept).
pub fn linear_rdp_closed_form_mu(mu: f64, delta: f64) -> f64 {
    0.5 * mu * mu + mu * (2.0 * (1.0 / delta).ln()).max(0.0).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ε of the Gaussian curve α·a under Mironov's conversion, by brute force
    /// over a dense grid of orders (independent of the closed form)
    fn grid_min(a: f64, delta: f64) -> f64 {
        let n = 400_000;
        (0..n)
            .map(|i| {
                let am1 =
                    (1e-4f64.ln() + (1e5f64.ln() - 1e-4f64.ln()) * i as f64 / (n - 1) as f64).exp();
                (1.0 + am1) * a + (1.0 / delta).ln() / am1
            })
            .fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn closed_form_is_the_minimum_of_mironov_over_orders() {
        for &(a, delta) in &[(0.03125, 1e-6), (0.5, 1e-9), (7.8125, 1e-5), (1e-4, 1e-12)] {
            let (e, alpha) = linear_rdp_closed_form(a, delta);
            let g = grid_min(a, delta);
            assert!(e <= g * (1.0 + 1e-12), "{a} {delta}: {e} vs grid {g}");
            assert!(e >= g * (1.0 - 1e-6), "{a} {delta}: {e} vs grid {g}");
            // it is Mironov's conversion at the reported order
            let at = mironov_prop3(alpha * a, alpha, delta);
            assert!((at - e).abs() <= 1e-12 * e, "{at} vs {e}");
            // the μ form agrees (a = μ²/2)
            let mu = (2.0 * a).sqrt();
            let m = linear_rdp_closed_form_mu(mu, delta);
            assert!((m - e).abs() <= 1e-13 * e, "{m} vs {e}");
        }
        // negative control: a larger curve gives a larger ε
        assert!(linear_rdp_closed_form(0.6, 1e-6).0 > linear_rdp_closed_form(0.5, 1e-6).0);
    }

    #[test]
    fn conversions_against_direct_evaluation() {
        // Mironov Prop 3 at α = 2, R = 1, δ = e^{-10}: 1 + 10
        assert!((mironov_prop3(1.0, 2.0, (-10f64).exp()) - 11.0).abs() < 1e-12);
        // Balle et al. Thm 21 at α = 2, R = 1, δ = e^{-10}: 1 + ln ½ − (−10 + ln 2) = 11 − 2 ln 2
        let want = 11.0 - 2.0 * 2f64.ln();
        assert!((balle2020_thm21(1.0, 2.0, (-10f64).exp()) - want).abs() < 1e-12);
        // Balle's conversion is never worse than Mironov's (it subtracts
        // ln α/(α−1) − ln((α−1)/α) ≥ 0 for α > 1) ...
        for &alpha in &[1.001, 1.5, 2.0, 10.0, 1e3, 1e6] {
            for &delta in &[1e-3, 1e-9] {
                assert!(balle2020_thm21(0.7, alpha, delta) <= mironov_prop3(0.7, alpha, delta));
            }
        }
        // ... and strictly better somewhere (negative control: not the same formula)
        assert!(balle2020_thm21(0.7, 2.0, 1e-6) < mironov_prop3(0.7, 2.0, 1e-6) - 0.1);
    }
}
