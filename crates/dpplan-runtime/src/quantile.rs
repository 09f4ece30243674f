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
//! Steinke 2020, Algorithm 1, [`dpplan_noise::bernoulli_exp`]). The accepted j has
//! probability exactly exp(u_j/(2b))/Σ exp(u_i/(2b)): no floating point,
//! no softmax. The expected number of proposals is m/Σ exp(−(u* − u_i)/(2b))
//! ≤ m.

use std::collections::BTreeMap;

use dpplan_plan::{QuantileGrid, Release};
use dpplan_vocab::rows::GroupKey;
use dpplan_vocab::InvalidRule;

use crate::{Cell, RunError};
use dpplan_engine::rng::SecureRng;
use dpplan_noise::exponential::{scaled_scores, ExponentialMechanism};
use dpplan_noise::NoiseError;

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
}
