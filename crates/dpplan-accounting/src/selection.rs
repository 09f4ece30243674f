//! Partition selection by thresholding: the δ a histogram over keys taken
//! from the data costs (Wilson et al. 2020, "Differentially private SQL
//! with bounded user contribution", §3; Google's differential-privacy
//! library, `LaplacePartitionSelection` / `GaussianPartitionSelection`).
//!
//! A histogram is computed over the keys seen in the data; each key's count
//! gets the noise the accountants compose as for any histogram, and a key is
//! released only when its noisy count is strictly above the threshold τ. A
//! unit touches at most `k` keys with at most `C` rows in each, so a key that
//! only the unit's data brings has a count of at most `C`.
//!
//! The functions here are upper bounds, never estimates:
//! * [`key_pass_probability`]: P[C + Z > τ] for one key, Z the noise;
//! * [`release_probability`]: P₁ = 1 − (1 − p)^k, that one of the unit's
//!   (at most k) keys that the neighbour lacks is released in one release;
//! * [`threshold_delta`]: the δ added to the plan's total for a total
//!   probability P = Σ P₁ over every release of every such query.
//!   The argument (docs/accounting.md, "Partition selection"): conditioned
//!   on no neighbour-only key passing, the output is a post-processing of
//!   the plain noisy histogram over the keys both neighbours share, so
//!   for every S, Pr[M(D) ∈ S] ≤ Pr[M_c(D) ∈ S] + P and
//!   Pr[M(D') ∈ S] − e^ε Pr[M(D) ∈ S] ≤ δ_c + P/(1 − P): under add/remove
//!   δ_thr = P/(1 − P) ≥ P (Google's published δ); under replace both
//!   neighbours have such keys, δ_thr = P + P/(1 − P).
//!
//! Floating point: a probability is never below `f64::MIN_POSITIVE` (an
//! underflow is bounded by it, not reported as 0); `exp`, `expm1`,
//! `ln_1p` are within a few ulps and
//! `norm_sf` within (2·16 + 4z² + 5) ulps (docs/accounting.md); every
//! probability is multiplied by (1 + 10⁻⁹), far above those allowances for
//! the arguments allowed here (shift/scale ≤ 10⁴).

use crate::special::norm_sf;
use crate::NoiseKind;

/// The share of a plan's budget δ kept for the thresholds when it has a
/// histogram over keys from the data: the accountants compose its
/// mechanisms at the rest, and the thresholds' δ (at most this share) is
/// added to their δ. One constant for the checker and the ledger.
pub const RESERVED_SHARE: f64 = 0.5;

/// Relative margin added to every computed probability.
const MARGIN: f64 = 1e-9;

/// The largest shift/scale the bounds are evaluated at (a smaller shift
/// only raises the tail, so capping is sound); the tails there are far
/// below `f64::MIN_POSITIVE`, which bounds them.
const MAX_Z: f64 = 1e4;

/// `p` rounded up by [`MARGIN`], and never below the smallest normal
/// float: a probability that underflows (e^{−z} for z > 708, erfc beyond
/// 26) is bounded by it, never reported as 0.
fn up(p: f64) -> f64 {
    (p * (1.0 + MARGIN)).clamp(f64::MIN_POSITIVE, 1.0)
}

/// An upper bound on P[c + Z > τ] for every count c ≤ `max_count` (the
/// probability that a key the neighbour lacks passes), Z the noise of
/// `kind` at `scale` (b for the Laplace kinds, σ for the Gaussian kinds).
/// For the discrete kinds the count and the noise are integers, so the key
/// passes iff Z ≥ m = ⌊τ − C⌋ + 1:
/// * Laplace: ½·e^{−t/b}, t = τ − C ≥ 0 (1 − ½e^{t/b} below);
/// * Gaussian: Φ(−t/σ);
/// * discrete Laplace (P(z) ∝ e^{−|z|/b}): e^{−m/b}/(1 + e^{−1/b}) for
///   m ≥ 1 (the geometric tail);
/// * discrete Gaussian: the lattice tail itself, [`dgauss_tail`] (at most
///   Φ(−(m − 1)/σ), the bound it replaces).
///
/// Returns 1 for any other kind or an invalid argument (no bound known).
pub fn key_pass_probability(kind: NoiseKind, scale: f64, threshold: f64, max_count: f64) -> f64 {
    if !(scale.is_finite() && scale > 0.0 && threshold.is_finite() && max_count.is_finite()) {
        return 1.0;
    }
    let t = threshold - max_count;
    let p = match kind {
        NoiseKind::Laplace => {
            let z = (t / scale).min(MAX_Z);
            if z >= 0.0 {
                0.5 * (-z).exp()
            } else {
                1.0 - 0.5 * z.exp()
            }
        }
        NoiseKind::Gaussian => norm_sf((t / scale).min(MAX_Z)),
        NoiseKind::DiscreteLaplace => {
            let m = t.floor() + 1.0;
            if m < 1.0 {
                return 1.0;
            }
            let z = (m / scale).min(MAX_Z);
            (-z).exp() / (1.0 + (-1.0 / scale).exp())
        }
        NoiseKind::DiscreteGaussian => {
            let m = t.floor() + 1.0;
            if m < 1.0 {
                return 1.0;
            }
            dgauss_tail(scale, m)
        }
        NoiseKind::Exponential | NoiseKind::PermuteAndFlip => return 1.0,
    };
    up(p)
}

/// The most lattice terms summed one by one (past it the bound it
/// replaces is returned).
const MAX_TERMS: f64 = 200_000.0;

/// An upper bound on P[Z ≥ m] for Z discrete Gaussian of parameter σ
/// (P(z) ∝ f(z) = e^{−z²/2σ²}), m ≥ 1: the numerator Σ_{z ≥ m} f(z) over a
/// lower bound of the normaliser N = Σ_z f(z). Tight to the float
/// (docs/accounting.md, "Partition selection"):
/// * the terms z = m, m + 1, … are summed one by one until z ≥ σ + ½ and a
///   term is below 10⁻¹⁸ of the sum so far;
/// * the rest, from that z = a on, lies where f is convex (x ≥ σ), so each
///   term is at most the integral of f over [z − ½, z + ½] (the midpoint
///   rule underestimates a convex function's integral):
///   Σ_{z ≥ a} f(z) ≤ √(2π)σ·Φ(−(a − ½)/σ), a negligible remainder;
/// * N ≥ √(2π)σ (Poisson summation: N = √(2π)σ·(1 + 2Σ_k e^{−2π²σ²k²}))
///   and N ≥ the sum of its terms |z| ≤ 40σ + 1, the larger for small σ.
///
/// Never above Φ(−(m − 1)/σ), the bound it replaces (each term at most
/// ∫_{z−1}^{z} f, as f decreases for z ≥ 1, over N ≥ √(2π)σ): the smaller
/// of the two is returned, and that bound alone when more than
/// `MAX_TERMS` (2·10⁵) terms would be summed.
pub fn dgauss_tail(sigma: f64, m: f64) -> f64 {
    let old = norm_sf(((m - 1.0) / sigma).min(MAX_Z));
    if !(m.is_finite() && m >= 1.0 && sigma.is_finite() && sigma > 0.0) {
        return old;
    }
    let f = |z: f64| (-(z * z) / (2.0 * sigma * sigma)).exp();
    let root = (2.0 * std::f64::consts::PI).sqrt() * sigma;
    let mut num = 0.0;
    let mut z = m;
    loop {
        let term = f(z);
        if z >= sigma + 0.5 && term <= num * 1e-18 {
            break;
        }
        if z - m >= MAX_TERMS {
            return old;
        }
        num += term;
        z += 1.0;
    }
    num += root * norm_sf(((z - 0.5) / sigma).min(MAX_Z));
    let mut norm = root;
    if sigma < 50.0 {
        let last = (40.0 * sigma).ceil() + 1.0;
        let mut direct = 1.0;
        let mut k = 1.0;
        while k <= last {
            direct += 2.0 * f(k);
            k += 1.0;
        }
        norm = norm.max(direct);
    }
    (num / norm).min(old)
}

/// An upper bound on P₁ = 1 − (1 − p)^k: that at least one of `k`
/// independent keys, each passing with probability at most `p`, passes.
pub fn union_probability(p: f64, k: u64) -> f64 {
    if !(0.0..1.0).contains(&p) {
        return 1.0;
    }
    // 1 − (1 − p)^k = −expm1(k·ln(1 − p)), accurate for tiny p
    up(-((k as f64) * (-p).ln_1p()).exp_m1())
}

/// [`union_probability`] of [`key_pass_probability`]: the probability that
/// one release reveals a key only the unit brings.
pub fn release_probability(
    kind: NoiseKind,
    scale: f64,
    threshold: f64,
    keys: u64,
    max_count: f64,
) -> f64 {
    union_probability(
        key_pass_probability(kind, scale, threshold, max_count),
        keys,
    )
}

/// The δ added to the plan's total for a total pass probability `p` (the
/// sum over releases of [`release_probability`]): P/(1 − P) under
/// add/remove, P + P/(1 − P) under replace (both neighbours may bring
/// keys). `None` when P ≥ ½ (no useful bound).
pub fn threshold_delta(p: f64, replace: bool) -> Option<f64> {
    if !(0.0..0.5).contains(&p) {
        return None;
    }
    let one_side = up(p / (1.0 - p));
    Some(if replace { up(p + one_side) } else { one_side })
}

/// The smallest threshold (rounded up to a multiple of 0.01) at which one
/// release's [`release_probability`] is at most `target`; `None` when the
/// target is not in (0, ½) or no threshold below C + 10⁴·scale meets it.
pub fn threshold_for(
    kind: NoiseKind,
    scale: f64,
    keys: u64,
    max_count: f64,
    target: f64,
) -> Option<f64> {
    if !(target > 0.0 && target < 0.5 && scale.is_finite() && scale > 0.0) {
        return None;
    }
    let meets = |tau: f64| release_probability(kind, scale, tau, keys, max_count) <= target;
    let hi = max_count + MAX_Z * scale;
    if !meets(hi) {
        return None;
    }
    let tau = crate::roots::bisect(
        max_count,
        hi,
        &crate::roots::Bisection::arithmetic(1e-12, 1e-6, crate::roots::End::Upper),
        meets,
    );
    // a readable threshold: rounding up only lowers the probability
    let rounded = (tau * 100.0).ceil() / 100.0;
    meets(rounded).then_some(rounded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laplace_matches_its_closed_form() {
        // P[C + Lap(b) > τ] = ½ e^{−(τ − C)/b}
        let p = key_pass_probability(NoiseKind::Laplace, 2.0, 21.0, 1.0);
        let exact = 0.5 * (-10.0f64).exp();
        assert!(p >= exact && p <= exact * (1.0 + 2e-9), "{p} vs {exact}");
    }

    #[test]
    fn lowering_the_threshold_raises_the_probability() {
        for kind in [
            NoiseKind::Laplace,
            NoiseKind::Gaussian,
            NoiseKind::DiscreteLaplace,
            NoiseKind::DiscreteGaussian,
        ] {
            let hi = release_probability(kind, 3.0, 40.0, 2, 1.0);
            let lo = release_probability(kind, 3.0, 30.0, 2, 1.0);
            assert!(lo > hi, "{kind:?}: {lo} ≤ {hi}");
        }
    }

    #[test]
    fn threshold_for_meets_its_target_and_is_tight() {
        let target = 1e-9;
        let tau = threshold_for(NoiseKind::Laplace, 4.0, 3, 2.0, target).unwrap();
        assert!(release_probability(NoiseKind::Laplace, 4.0, tau, 3, 2.0) <= target);
        // 0.02 lower already fails: the threshold is not needlessly high
        assert!(release_probability(NoiseKind::Laplace, 4.0, tau - 0.02, 3, 2.0) > target);
    }

    #[test]
    fn an_underflowing_probability_is_bounded_not_zero() {
        // ½·e^{−5000}: far below the smallest float, never reported as 0
        let p = key_pass_probability(NoiseKind::Laplace, 1.0, 5001.0, 1.0);
        assert_eq!(p, f64::MIN_POSITIVE);
        assert!(threshold_delta(union_probability(p, 3), false).unwrap() > 0.0);
        let g = key_pass_probability(NoiseKind::Gaussian, 1.0, 100.0, 1.0);
        assert!(g >= f64::MIN_POSITIVE);
    }

    /// Σ_{z ≥ m} e^{−z²/2σ²} / Σ_z e^{−z²/2σ²}, summed in the test's own
    /// way (far into the tail, largest terms last), for comparison.
    fn dgauss_tail_reference(sigma: f64, m: i64) -> f64 {
        let f = |z: i64| (-((z * z) as f64) / (2.0 * sigma * sigma)).exp();
        let far = (60.0 * sigma) as i64 + 60;
        let norm: f64 = (-far..=far).rev().map(f).sum();
        let tail: f64 = (m..=m.max(0) + far).rev().map(f).sum();
        tail / norm
    }

    #[test]
    fn the_discrete_gaussian_tail_is_the_lattice_sum_never_below() {
        let mut improved = 0;
        for sigma in [0.3, 0.5, 1.0, 2.0, 3.7, 12.0, 80.0, 300.0] {
            for m in [1i64, 2, 3, 5, 10, 25, 60, 200, 1000, 3000] {
                let exact = dgauss_tail_reference(sigma, m);
                if exact < 1e-300 {
                    continue;
                }
                let p = dgauss_tail(sigma, m as f64);
                let old = norm_sf((m as f64 - 1.0) / sigma);
                assert!(p >= exact * (1.0 - 1e-12), "σ {sigma} m {m}: {p} < {exact}");
                assert!(p <= old, "σ {sigma} m {m}: above the old bound");
                // tight: the lattice sum itself, to the float
                assert!(p <= exact * (1.0 + 1e-9), "σ {sigma} m {m}: {p} vs {exact}");
                if old > exact * 1.5 {
                    improved += 1;
                }
            }
        }
        // negative control: the bound it replaces overstated most of these
        assert!(improved > 20, "{improved}");
        // and through the key's pass probability (rounded up by MARGIN)
        let p = key_pass_probability(NoiseKind::DiscreteGaussian, 2.0, 6.0, 1.0);
        let exact = dgauss_tail_reference(2.0, 6);
        assert!(p >= exact && p <= exact * (1.0 + 1e-6), "{p} vs {exact}");
    }

    #[test]
    fn no_bound_for_a_useless_threshold() {
        assert_eq!(threshold_delta(0.6, false), None);
        assert_eq!(
            key_pass_probability(NoiseKind::Exponential, 1.0, 10.0, 1.0),
            1.0
        );
        assert_eq!(
            key_pass_probability(NoiseKind::DiscreteLaplace, 1.0, 0.5, 1.0),
            1.0
        );
    }
}
