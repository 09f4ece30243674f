//! The exponential mechanism over a public candidate grid (quantiles),
//! sampled exactly, with integer arithmetic only.
//!
//! The engine counts the bounded rows per bin of the grid (bin i holds the
//! values with exactly i candidates ≤ x), so #{x < c_j} is the sum of bins
//! 0..=j and n the sum of all. The score of candidate j at level q is
//! u_j = −|#{x < c_j} − q·n|; with q = m_q·2^e_q exactly (a float is a
//! dyadic rational), Q·u_j is an integer for Q = 2^−e_q.
//!
//! The mechanism picks j with probability ∝ exp(u_j/(2b)) (ε = Δ/b). It is
//! sampled by rejection: draw j uniformly among the m candidates and accept
//! it with probability exp(−(u* − u_j)/(2b)) ≤ 1 (u* the best score), a
//! Bernoulli(exp(−γ)) with γ a ratio of big integers (Canonne–Kamath–
//! Steinke 2020, Algorithm 1, [`bernoulli_exp`]). The accepted j has
//! probability exactly exp(u_j/(2b))/Σ exp(u_i/(2b)): no floating point,
//! no softmax. The expected number of proposals is m/Σ exp(−(u* − u_i)/(2b))
//! ≤ m.

use dashu_int::{IBig, UBig};
use dpplan_engine::rng::SecureRng;

use crate::{bernoulli_exp, dyadic, NoiseError};
use dpplan_vocab::NoiseKind;

/// The candidates' scores at `level`, each times Q, and Q: Q·u_j =
/// −|Q·#{x < c_j} − n·m_q| for `bins` (m + 1 counts, see the runtime's `quantile::grid_key`).
pub fn scaled_scores(bins: &[i128], level: f64) -> Result<(Vec<IBig>, UBig), NoiseError> {
    if !(level > 0.0 && level < 1.0) {
        return Err(NoiseError(format!(
            "a quantile's level must lie in (0, 1), got {level}"
        )));
    }
    if bins.len() < 2 || bins.iter().any(|&b| b < 0) {
        return Err(NoiseError(
            "a quantile needs non-negative bin counts".into(),
        ));
    }
    let (m_q, e_q) = dyadic(level);
    // level < 1 and m_q odd: e_q < 0
    let q_den = UBig::ONE << (-e_q) as usize;
    let n: IBig = bins.iter().map(|&b| IBig::from(b)).sum();
    let target = n * IBig::from(m_q);
    let qd = IBig::from(q_den.clone());
    let mut below = IBig::ZERO;
    let mut scores = Vec::with_capacity(bins.len() - 1);
    for &b in &bins[..bins.len() - 1] {
        below += IBig::from(b);
        let d = &below * &qd - &target;
        scores.push(-IBig::from(dashu_int::ops::UnsignedAbs::unsigned_abs(d)));
    }
    Ok((scores, q_den))
}

/// The exponential mechanism over m candidates, ready to sample: the gap
/// of each candidate to the best, as exp(−num_j/den).
#[derive(Debug, Clone, PartialEq)]
pub struct ExponentialMechanism {
    num: Vec<UBig>,
    den: UBig,
}

impl ExponentialMechanism {
    /// Candidate j with probability ∝ exp(u_j/(2b)), for scores
    /// u_j = `scaled[j]`/`unit` and `scale` = b (positive, finite).
    pub fn new(scaled: &[IBig], unit: &UBig, scale: f64) -> Result<Self, NoiseError> {
        if scaled.is_empty() {
            return Err(NoiseError(
                "the exponential mechanism needs a candidate".into(),
            ));
        }
        if !(scale.is_finite() && scale > 0.0) || *unit == UBig::ZERO {
            return Err(NoiseError(
                "the exponential mechanism's scale must be positive and finite".into(),
            ));
        }
        // γ_j = (u* − u_j)/(2b) = gap_j / (unit · m_b · 2^(e_b+1))
        let (m_b, e_b) = dyadic(scale);
        let e = e_b + 1;
        let (num_shift, den_shift) = if e >= 0 {
            (0, e as usize)
        } else {
            ((-e) as usize, 0)
        };
        let den = (unit * &m_b) << den_shift;
        let best = scaled.iter().max().cloned().unwrap_or_default();
        let num = scaled
            .iter()
            .map(|s| {
                let gap = UBig::try_from(&best - s).unwrap_or_default();
                gap << num_shift
            })
            .collect();
        Ok(ExponentialMechanism { num, den })
    }

    /// Candidate j with probability ∝ exp(`counts[j]`/(2b)), for integer
    /// scores (a top-k's counts per cell) and `scale` = b.
    pub fn over_counts(counts: &[i128], scale: f64) -> Result<Self, NoiseError> {
        let scores: Vec<IBig> = counts.iter().map(|&c| IBig::from(c)).collect();
        Self::new(&scores, &UBig::ONE, scale)
    }

    /// The number of candidates.
    pub fn len(&self) -> usize {
        self.num.len()
    }

    pub fn is_empty(&self) -> bool {
        self.num.is_empty()
    }

    /// exp(−γ_j) as the exact ratio γ_j = num/den (for tests and
    /// references).
    pub fn gap(&self, j: usize) -> (&UBig, &UBig) {
        (&self.num[j], &self.den)
    }

    /// One draw by permute-and-flip (McKenna & Sheldon 2020) over the
    /// same gaps: the candidates in a uniformly random order (a
    /// Fisher–Yates shuffle, drawn one position at a time), each kept with
    /// probability exp(−γ_j) by an exact coin, the first kept chosen. The
    /// best candidate (γ = 0) is always kept, so at most m coins are
    /// tossed. ε-DP for the same ε as [`Self::sample`]'s, but not
    /// ε-bounded-range.
    pub fn sample_permute_and_flip(&self, rng: &mut SecureRng) -> usize {
        let mut order: Vec<usize> = (0..self.num.len()).collect();
        for i in 0..order.len() {
            // the i-th of the permutation: uniform among those not yet placed
            let j = i + rng.below_u64((order.len() - i) as u64) as usize;
            order.swap(i, j);
            let r = order[i];
            if bernoulli_exp(rng, &self.num[r], &self.den) {
                return r;
            }
        }
        // not reached: the best candidate's coin is exp(0) = 1
        self.num
            .iter()
            .position(|g| *g == UBig::ZERO)
            .unwrap_or_default()
    }

    /// One draw by the selection `kind` names: permute-and-flip's
    /// ([`Self::sample_permute_and_flip`]) or the exponential mechanism's
    /// ([`Self::sample`]), over the same gaps.
    pub fn draw(&self, kind: NoiseKind, rng: &mut SecureRng) -> usize {
        if kind == NoiseKind::PermuteAndFlip {
            self.sample_permute_and_flip(rng)
        } else {
            self.sample(rng)
        }
    }

    /// One draw: the chosen candidate's index.
    pub fn sample(&self, rng: &mut SecureRng) -> usize {
        let m = self.num.len() as u64;
        loop {
            let j = rng.below_u64(m) as usize;
            if bernoulli_exp(rng, &self.num[j], &self.den) {
                return j;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_minus_the_distance_of_the_rank_to_q_n() {
        // 10 values: 2 below c0, 3 in [c0, c1), 5 at or above c1
        let (s, unit) = scaled_scores(&[2, 3, 5], 0.5).unwrap();
        assert_eq!(unit, UBig::from(2u8));
        // #{x < c0} = 2, #{x < c1} = 5; q·n = 5: −|2 − 5|, −|5 − 5|
        assert_eq!(s, vec![IBig::from(-6), IBig::from(0)]);
        // negative control: another level moves the scores
        let (s, unit) = scaled_scores(&[2, 3, 5], 0.25).unwrap();
        assert_eq!(unit, UBig::from(4u8));
        assert_eq!(s, vec![IBig::from(-2), IBig::from(-10)]);
        assert!(scaled_scores(&[1, 1], 1.0).is_err());
    }

    #[test]
    fn gaps_are_exact_ratios_over_two_b() {
        // scores −3, 0 (unit 1), b = 0.75: γ = 3/(2·0.75) = 2
        let em =
            ExponentialMechanism::new(&[IBig::from(-3), IBig::ZERO], &UBig::ONE, 0.75).unwrap();
        let (num, den) = em.gap(0);
        assert_eq!(num.clone(), den * UBig::from(2u8));
        assert_eq!(em.gap(1).0.clone(), UBig::ZERO);
    }
}
