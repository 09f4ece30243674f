//! Releases on a Poisson sample of the units (rate q, each unit kept
//! independently, a fresh sample per release), add/remove neighbours.
//!
//! What each accountant does with one (docs/accounting.md, "Sampling"):
//!
//! * **any ε-DP base** (Laplace kinds, the exponential mechanism) becomes
//!   ε′ = ln(1 + q(e^ε − 1))-DP (Balle, Barthe & Gaboardi 2018, Thm 8):
//!   basic, advanced, KOV, zCDP (ε′·tanh(ε′/2)) and RDP (the
//!   randomized-response curve at ε′) use ε′ as for any ε′-DP mechanism;
//!   the PLD composes the exact sampled pair (`accountants/pld_sampled.rs`);
//! * **a continuous Gaussian** (μ = Δ₂/σ): basic and advanced charge
//!   (ln(1 + q(e^{ε₀} − 1)), δ) where ε₀ is the base's exact ε at δ/q
//!   (the same theorem); RDP the sampled Gaussian's curve of Mironov, Talwar
//!   & Zhang 2019 at integer orders ([`rdp_sgm`]); the PLD its exact pair;
//!   zCDP, GDP and the classical closed form keep the base's ρ or μ — sound
//!   (Rényi divergences and hockey sticks are jointly convex or
//!   quasi-convex, so the mixture never loses more than the base) but
//!   without amplification: no finite zCDP bound of a sampled Gaussian
//!   improves on it in general;
//! * **a discrete Gaussian**: accounted as if unsampled (sound by the same
//!   convexity), named so by the caller.

use crate::gaussian::gdp_epsilon;
use crate::special::{ELEM_ULPS, U};
use crate::{AccountingError, Eff};

/// The effective mechanism of `eff` run on a Poisson sample at rate `q`.
pub(crate) fn effective(eff: Eff, q: f64) -> Result<Eff, AccountingError> {
    if !(q > 0.0 && q <= 1.0) {
        return Err(AccountingError::InvalidParameter(format!(
            "a sampling rate must lie in (0, 1], got {q}"
        )));
    }
    if q == 1.0 {
        return Ok(eff);
    }
    Ok(match eff {
        Eff::Gauss { mu } => Eff::SGauss { mu, q },
        Eff::Laplace { eps, scalar, .. } => Eff::SPure {
            eps: amplify(eps, q),
            base: eps,
            q,
            laplace: scalar,
        },
        Eff::DLaplace { eps, .. } | Eff::Exp { eps } | Eff::Pure { eps } => Eff::SPure {
            eps: amplify(eps, q),
            base: eps,
            q,
            laplace: false,
        },
        other => other,
    })
}

/// ln(1 + q(e^ε − 1)) rounded up, never above ε. Computed as
/// log1p(q·expm1(ε)): expm1 and log1p within [`ELEM_ULPS`] ulps each, the
/// product u; log1p's condition number y/((1 + y)·ln(1 + y)) ≤ 1 for
/// y ≥ 0, so the result is within (4·ELEM_ULPS + 2)u relative, raised by
/// 1.01 times that and one float. An overflowing e^ε (ε > 709) keeps ε.
pub(crate) fn amplify(eps: f64, q: f64) -> f64 {
    let y = q * libm::expm1(eps);
    if !y.is_finite() {
        return eps;
    }
    let v = libm::log1p(y);
    (v * (1.0 + 1.01 * (4.0 * ELEM_ULPS + 3.0) * U))
        .next_up()
        .min(eps)
}

/// The tightest single-release ε at δ of a Gaussian (μ) on a sample at
/// rate q: the base's exact ε₀ at δ/q, amplified. At δ ≥ q the release is
/// (0, δ)-DP: the outputs with and without the unit differ only when it is
/// drawn.
pub(crate) fn gauss_epsilon(mu: f64, q: f64, delta: f64) -> f64 {
    // δ/q rounded down: the base then spends at most δ/q, q·that ≤ δ
    let base_delta = (delta / q).next_down();
    if base_delta >= 1.0 {
        return 0.0;
    }
    amplify(gdp_epsilon(mu, base_delta), q)
}

/// The Rényi divergence of order α of the sampled Gaussian mechanism,
/// never above the base's αμ²/2. Mironov, Talwar & Zhang 2019 (§3.3):
/// for an integer order n, A_n = Σ_k C(n, k)(1 − q)^{n−k} q^k e^{k(k−1)μ²/2}
/// and the divergence is ln A_n/(n − 1), the larger of the two orders of
/// neighbours. Between integers, f(α) = (α − 1)·D_α = ln E[(dP/dQ)^α] is
/// convex in α (Hölder), so it lies below its chord: for n ≤ α ≤ n + 1,
/// D_α ≤ ((n + 1 − α)·f(n) + (α − n)·f(n + 1))/(α − 1); below order 2,
/// D_α ≤ D_2 (the divergence grows with the order). Above order
/// [`SGM_MAX_ORDER`], the base's.
pub(crate) fn rdp_sgm(alpha: f64, mu: f64, q: f64) -> f64 {
    let base = alpha * 0.5 * mu * mu;
    let base_up = (base * (1.0 + 4.0 * U)).next_up();
    if alpha.ceil() > SGM_MAX_ORDER || q >= 1.0 {
        return base_up;
    }
    let r = if alpha <= 2.0 {
        log_a_up(2, mu, q)
    } else {
        let n = alpha.floor();
        let t = alpha - n;
        if t == 0.0 {
            log_a_up(n as u64, mu, q) / (alpha - 1.0)
        } else {
            let (f0, f1) = (log_a_up(n as u64, mu, q), log_a_up(n as u64 + 1, mu, q));
            // the chord's two products, sum and quotient: 5u, doubled
            let chord = (1.0 - t) * f0 + t * f1;
            chord * (1.0 + 10.0 * U) / (alpha - 1.0)
        }
    };
    (r * (1.0 + 2.0 * U)).next_up().max(0.0).min(base_up)
}

/// An upper bound of ln A_n (n ≥ 2), raised by a bound on its rounding.
fn log_a_up(n: u64, mu: f64, q: f64) -> f64 {
    let (lq, l1q) = (libm::log(q), libm::log1p(-q));
    let half = 0.5 * mu * mu;
    // terms t_k = ln C(n, k) + (n − k)·ln(1 − q) + k·ln q + k(k − 1)μ²/2;
    // ln C(n, k) accumulated as Σ_{j<k} ln((n − j)/(j + 1))
    let mut lc = 0.0f64;
    let mut terms = Vec::with_capacity(n as usize + 1);
    let mut mag = 0.0f64;
    for k in 0..=n {
        if k > 0 {
            lc += libm::log((n - k + 1) as f64 / k as f64);
        }
        let kf = k as f64;
        let t = lc + (n - k) as f64 * l1q + kf * lq + kf * (kf - 1.0) * half;
        mag = mag.max(lc.abs() + ((n - k) as f64 * l1q).abs() + (kf * lq).abs() + kf * kf * half);
        terms.push(t);
    }
    let m = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = terms.iter().map(|t| libm::exp(t - m)).sum();
    // rounding: each term carries ≤ (k + 4)(2·ELEM_ULPS + 4)u·mag (its k
    // logarithms and the products and sums, relative to the largest
    // magnitude); exp(t − m) adds ELEM_ULPS ulps of each summand and the
    // sum (n + 2)u relative, ln s the same; all doubled
    let nf = n as f64;
    let err = 2.0
        * ((nf + 4.0) * (2.0 * ELEM_ULPS + 4.0) * U * (mag + 1.0)
            + (2.0 * ELEM_ULPS + nf + 4.0) * U * (1.0 + libm::log(s).abs()));
    m + libm::log(s) + err
}

/// Above this order the sampled Gaussian's curve is not summed (n + 1
/// terms per order): the base's αμ²/2 is used.
pub(crate) const SGM_MAX_ORDER: f64 = 4096.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplification_matches_its_closed_form_and_never_exceeds_the_base() {
        for &(e, q) in &[
            (1.0, 0.01),
            (2.0, 0.2),
            (0.001, 0.5),
            (800.0, 0.1),
            (5.0, 1e-9),
        ] {
            let a = amplify(e, q);
            // std's (the platform's) log1p and expm1: an independent evaluation
            let exact = (q * e.exp_m1()).ln_1p();
            if exact.is_finite() {
                assert!(
                    a >= exact && a <= exact * (1.0 + 1e-12),
                    "{e} {q}: {a} {exact}"
                );
            }
            assert!(a <= e);
        }
    }

    #[test]
    fn the_sgm_curve_is_the_binomial_sum_at_small_orders() {
        // α = 2: A = (1 − q)² + 2q(1 − q) + q²e^{μ²} = 1 + q²(e^{μ²} − 1)
        let (mu, q) = (2.0, 0.2);
        let exact = (1.0 + q * q * (f64::exp(mu * mu) - 1.0)).ln();
        let ours = rdp_sgm(2.0, mu, q);
        assert!(
            ours >= exact && ours <= exact * (1.0 + 1e-12),
            "{ours} {exact}"
        );
        // a fractional order takes the next integer
        assert_eq!(rdp_sgm(1.5, mu, q), ours);
        // never above the base
        assert!(rdp_sgm(40.0, 0.1, 0.9) <= 40.0 * 0.005 * (1.0 + 1e-12));
        // negative control: more sampling, more loss
        assert!(rdp_sgm(8.0, mu, 0.3) > rdp_sgm(8.0, mu, 0.2));
    }
}
