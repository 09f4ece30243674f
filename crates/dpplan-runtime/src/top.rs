//! Top-k: the keys of the k cells with the largest counts, in order, by
//! the exponential mechanism ("peeling": selection i picks among the
//! cells not chosen before), sampled exactly with integer arithmetic.
//!
//! The engine counts the cells exactly (rows, or units per cell), the
//! same aggregate for every part. Selection i picks cell j with
//! probability ∝ exp(c_j/b) for a monotone top-k (add/remove), else
//! ∝ exp(c_j/(2b)), b the part's scale; both are ε = Δ/b
//! (dpplan-check, `top.rs`). The sampler is the quantiles' exact
//! exponential mechanism ([`ExponentialMechanism`]: rejection with exact
//! Bernoulli(exp(−γ)) coins), with the counts as integer scores and the
//! scale halved for the monotone form (exp(c/b) = exp(c/(2·b/2)); halving
//! a float is exact).
//!
//! A top-k publishes no count: cell i's `group` is the key chosen at rank
//! i and its `value` is the rank (1 to k). Its accuracy is the part's
//! count error at 95 % (the chosen cell's count is within it of the best
//! remaining cell's), recorded in the release's mechanism words.

use std::collections::BTreeMap;

use dpplan_plan::{Release, TopK};

use crate::{Cell, RunError};
use dpplan_engine::rng::SecureRng;
use dpplan_noise::exponential::ExponentialMechanism;
use dpplan_noise::NoiseError;
use dpplan_vocab::NoiseKind;

/// The k selections of one fresh release of a top-k: one cell per rank.
pub(crate) fn draw(
    r: &Release,
    top: &TopK,
    exact: &BTreeMap<(String, usize), Vec<i128>>,
    rng: &mut SecureRng,
) -> Result<Vec<Cell>, RunError> {
    let labels = r
        .aggregation
        .groups
        .as_ref()
        .ok_or_else(|| RunError::Data(format!("`{}` ranks no cells", r.name)))?;
    let counts = exact
        .get(&(r.name.clone(), 0))
        .ok_or_else(|| RunError::Data(format!("no aggregate for `{}`", r.name)))?;
    if counts.len() != labels.len()
        || r.parts.len() as u64 != top.k
        || top.k as usize > counts.len()
    {
        return Err(RunError::Data(format!(
            "`{}`: the engine counted {} cells for {} labels and {} selections",
            r.name,
            counts.len(),
            labels.len(),
            r.parts.len()
        )));
    }
    let mut left: Vec<usize> = (0..counts.len()).collect();
    let mut cells = Vec::with_capacity(r.parts.len());
    for (rank, p) in r.parts.iter().enumerate() {
        let scores: Vec<i128> = left.iter().map(|&j| counts[j]).collect();
        let pick = match (p.mechanism, p.scale) {
            (Some(kind), Some(scale)) => {
                let scale = if top.monotone { scale / 2.0 } else { scale };
                let em =
                    ExponentialMechanism::over_counts(&scores, scale).map_err(RunError::Noise)?;
                em.draw(kind, rng)
            }
            // sensitivity 0 (the counts are public under the adjacency):
            // the largest count, the first cell on a tie
            (None, _) => (0..scores.len())
                .rev()
                .max_by_key(|&i| scores[i])
                .unwrap_or_default(),
            (Some(_), None) => {
                return Err(RunError::Noise(NoiseError(format!(
                    "`{}` has no scale",
                    r.name
                ))))
            }
        };
        let j = left.remove(pick);
        cells.push(Cell::ranked(labels[j].clone(), (rank + 1) as f64));
    }
    Ok(cells)
}

/// The words a release's `mechanism` gives one selection of a top-k: its
/// mechanism, scale and count error at 95 %.
pub(crate) fn mechanism_words(
    kind: NoiseKind,
    scale: f64,
    monotone: bool,
    count_error95: f64,
) -> String {
    let (weight, gap) = if monotone {
        ("count/b", "/b")
    } else {
        ("count/(2b)", "/(2b)")
    };
    let how = if kind == NoiseKind::PermuteAndFlip {
        format!("permute_and_flip keeps exp(−(best − count){gap})")
    } else {
        format!("exponential ∝ exp({weight})")
    };
    format!("top-k {how} b={scale} (count error ≤ {count_error95} at 95 %)")
}
