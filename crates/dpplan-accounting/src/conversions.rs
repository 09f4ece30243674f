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
    /// ln((α−1)/α) = −ln(1 + 1/(α−1)), by `libm::log1p`: its error is
    /// relative to the term (≤ `ELEM_ULPS` + 2u), which the conversions'
    /// rounding counts. `log((α−1)/α)` was not: the quotient's rounding
    /// (u, absolute, near 1) became ln's absolute error, 10⁻⁸ of the term
    /// at α = 10⁸, and at ρ = δ = 10⁻¹⁵ the zCDP conversion came out
    /// 1.4·10⁻¹⁰ relative below its own minimum over the orders.
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
            ln_ratio: -libm::log1p(1.0 / am1),
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

/// A lower bound, over every order α > 1 at once, on [`balle2020_thm21`]
/// of the linear curve R(α) = αρ, hence on [`mironov_prop3`] of it and on
/// [`linear_rdp_closed_form`] (Mironov's conversion is the larger at every
/// order: ln((α−1)/α) − ln α/(α−1) < 0): a proof, computed in a few
/// operations, that an accountant converting αρ (zCDP; RDP of Gaussian
/// kinds alone) cannot print less. `None` when the bound below is not
/// positive enough to say anything.
///
/// With t = α − 1 and L = ln(1/δ) the conversion is
/// B(α) = ρ + ρt − ln(1 + 1/t) + (L − ln(1 + t))/t. For any order q > 1,
/// ln(1 + 1/t) ≤ 1/t, and ln(1 + t) ≤ ln q + (1 + t − q)/q (ln is concave:
/// its tangent at q lies above it), so
/// B(α) ≥ ρ − 1/q + ρt + K/t with K = L − ln q − 1/q, and when K > 0,
/// ρt + K/t ≥ 2√(ρK) (AM–GM), whence for every α > 1:
/// B(α) ≥ ρ − 1/q + 2√(ρK).
/// Any q gives a valid bound; it is tightest at the tangent point where
/// the bound's own minimiser t = √(K/ρ) falls, so q = 1 + t is taken at
/// the root of ρt² = K(q), found by bisection on a log scale (the
/// left side increases with t, the right decreases; at tiny ρ the root
/// lies where ln q is close to L and a fixed-point iteration from
/// √(L/ρ) would leave K ≤ 0). The loss is then only
/// 1/t − ln(1 + 1/t) ≤ 1/(2t²) at the optimum (about 5·10⁻⁴ for a
/// Gaussian of μ = 0.16 at δ = 10⁻⁶, against a bound of 0.71).
///
/// Rounding, downwards: ln from `libm` (≤ `ELEM_ULPS` = 4 ulps) and the
/// other operations (≤ u each) leave K within 8u of L + |ln q| + 1/q and
/// the sum within 8u of its terms' magnitudes; 64u of each is taken off.
pub fn balle2020_linear_lower_bound(rho: f64, delta: f64) -> Option<f64> {
    if !(rho > 0.0 && rho.is_finite() && delta > 0.0 && delta < 1.0) {
        return None;
    }
    let l = -libm::log(delta);
    let k_of = |q: f64| {
        let (ln_q, inv_q) = (libm::log(q), 1.0 / q);
        let k = l - ln_q - inv_q;
        (k - 64.0 * U * (l + ln_q.abs() + inv_q), inv_q)
    };
    // ρt² − K(1 + t) changes sign once on (0, √(L/ρ)]: negative at tiny
    // t (K → L > 0), positive at √(L/ρ) (K < L there); keep the left end,
    // where K > 0 (any q is sound, only the bound's tightness depends on it)
    let (mut lo, mut hi) = ((1e-300f64).max(1e-12 * (l / rho).sqrt()), (l / rho).sqrt());
    for _ in 0..24 {
        let mid = (lo * hi).sqrt();
        let (k, _) = k_of(1.0 + mid);
        if rho * mid * mid < k {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let t = lo;
    let (k, inv_q) = k_of(1.0 + t);
    if !(k > 0.0 && t.is_finite()) {
        return None;
    }
    let s = 2.0 * (rho * k).sqrt();
    let lb = (rho - inv_q + s) - 64.0 * U * (rho + inv_q + s);
    lb.is_finite().then_some(lb)
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

    /// The lower bound is below the zCDP conversion it bounds over a wide
    /// grid of ρ and δ (the sound direction: it may only skip an
    /// accountant that would not win), and close to it (else it would
    /// skip nothing): within 1 % for 10⁻¹² ≤ ρ ≤ 10 and δ ≤ 10⁻⁵ (at
    /// large ρ the best order is near 1, where ln(1 + 1/t) ≤ 1/t is loose; at
    /// larger δ the best order sits where ln α is close to ln(1/δ) and the
    /// bound loosens: 6 % at ρ = 1.8·10⁻⁴, δ = 10⁻²).
    #[test]
    fn linear_lower_bound_is_below_the_zcdp_conversion_and_close_to_it() {
        let mut checked = 0;
        for ri in -60..=16 {
            let rho = 10f64.powf(ri as f64 / 4.0);
            for di in [1, 2, 3, 5, 6, 9, 12, 15, 30, 100, 300] {
                let delta = 10f64.powi(-di);
                let z = crate::accountants::zcdp_epsilon_from_rho(rho, delta);
                let Some(lb) = balle2020_linear_lower_bound(rho, delta) else {
                    assert!(
                        rho < 1e-12 || z < 1e-9,
                        "ρ = {rho}, δ = {delta}: no bound, zCDP {z}"
                    );
                    continue;
                };
                assert!(lb <= z, "ρ = {rho}, δ = {delta}: bound {lb} above zCDP {z}");
                // and below Balle's conversion at orders spread widely
                for k in 0..400 {
                    let alpha = 1.0 + 10f64.powf(-8.0 + 24.0 * k as f64 / 399.0);
                    let b = balle2020_thm21(alpha * rho, alpha, delta);
                    assert!(lb <= b, "ρ = {rho}, δ = {delta}, α = {alpha}: {lb} > {b}");
                }
                if (1e-12..=10.0).contains(&rho) && delta <= 1e-5 && z > 0.0 {
                    assert!(
                        lb >= 0.99 * z,
                        "ρ = {rho}, δ = {delta}: bound {lb} far below {z}"
                    );
                }
                checked += 1;
            }
        }
        assert!(checked > 700, "{checked}");
        // the case that found the conversions' rounding of ln((α−1)/α)
        // wanting: the minimum over the orders of Balle et al.'s
        // conversion of α·10⁻¹⁵ at δ = 10⁻¹⁵ is 2.44150652466762·10⁻⁷
        // (mpmath, 50 digits, at α = 1 + e^18.6521277); zCDP printed
        // 2.4415065243237·10⁻⁷ before it was fixed
        let z = crate::accountants::zcdp_epsilon_from_rho(1e-15, 1e-15);
        assert!(z >= 2.441_506_524_667_62e-7, "{z}");
        assert!(z <= 2.441_506_524_667_62e-7 * (1.0 + 1e-6), "{z}");
        // negative control: at a larger ρ the bound rises above the smaller
        // ρ's conversion (it follows ρ, not a constant)
        let z = crate::accountants::zcdp_epsilon_from_rho(0.01, 1e-6);
        assert!(balle2020_linear_lower_bound(0.012, 1e-6).unwrap() > z);
    }
}
