//! Quantiles: the exponential mechanism over a public candidate grid,
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

use std::collections::BTreeMap;

use dashu_int::{IBig, UBig};
use dpplan_plan::{QuantileGrid, Release};
use dpplan_vocab::rows::GroupKey;
use dpplan_vocab::InvalidRule;

use crate::sampler::{bernoulli_exp, dyadic, NoiseError};
use crate::{Cell, RunError};
use dpplan_engine::rng::SecureRng;

/// The bins the engine counts for a candidate grid: the candidates are
/// the inner edges, the outer edges lie just outside them and values
/// beyond go to the first or last bin, so a value's bin is the number of
/// candidates ≤ it.
pub fn grid_key(column: &str, candidates: &[f64]) -> GroupKey {
    let (first, last) = (candidates[0], candidates[candidates.len() - 1]);
    let mut edges = Vec::with_capacity(candidates.len() + 2);
    edges.push(first.next_down());
    edges.extend_from_slice(candidates);
    edges.push(last.next_up());
    GroupKey::Bins {
        column: column.to_string(),
        edges,
        outside: InvalidRule::Clamp,
    }
}

/// The candidates' scores at `level`, each times Q, and Q: Q·u_j =
/// −|Q·#{x < c_j} − n·m_q| for `bins` (m + 1 counts, see [`grid_key`]).
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

/// The cells of one fresh release of a quantile query: per level, the
/// candidate the exponential mechanism chose. A quantile carries no
/// additive noise: `noise_std` is 0 and the interval is the candidate
/// grid's range (its accuracy is a rank error, in the plan and report).
pub(crate) fn draw(
    r: &Release,
    grid: &QuantileGrid,
    exact: &BTreeMap<(String, usize), Vec<i128>>,
    rng: &mut SecureRng,
) -> Result<Vec<Cell>, RunError> {
    let (Some(&lo), Some(&hi)) = (grid.candidates.first(), grid.candidates.last()) else {
        return Err(RunError::Data(format!("`{}` has no candidates", r.name)));
    };
    let mut cells = Vec::with_capacity(r.parts.len());
    for (pi, (p, &level)) in r.parts.iter().zip(&grid.levels).enumerate() {
        let bins = exact
            .get(&(r.name.clone(), pi))
            .ok_or_else(|| RunError::Data(format!("no aggregate for `{}`", r.name)))?;
        if bins.len() != grid.candidates.len() + 1 {
            return Err(RunError::Data(format!(
                "`{}`: the engine counted {} bins for {} candidates",
                r.name,
                bins.len(),
                grid.candidates.len()
            )));
        }
        let scale = p
            .scale
            .ok_or_else(|| RunError::Noise(NoiseError(format!("`{}` has no scale", r.name))))?;
        let (scores, unit) = scaled_scores(bins, level).map_err(RunError::Noise)?;
        let em = ExponentialMechanism::new(&scores, &unit, scale).map_err(RunError::Noise)?;
        let value = grid.candidates[em.sample(rng)];
        cells.push(Cell {
            // `quantiles`: the level's label (the plan's `groups`)
            group: r
                .aggregation
                .groups
                .as_ref()
                .and_then(|g| g.get(pi).cloned()),
            value,
            noise_std: 0.0,
            ci95_low: lo,
            ci95_high: hi,
        });
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_values_bin_is_the_number_of_candidates_at_or_below_it() {
        let key = grid_key("x", &[1.0, 2.0, 5.0]);
        for (x, bin) in [
            (-9.0, 0),
            (0.99, 0),
            (1.0, 1),
            (1.5, 1),
            (2.0, 2),
            (4.9, 2),
            (5.0, 3),
            (99.0, 3),
        ] {
            assert_eq!(key.bin(x), Some(bin), "x = {x}");
        }
    }

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
