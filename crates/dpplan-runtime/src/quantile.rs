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
use dpplan_vocab::{InvalidRule, NoiseKind};

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
/// additive noise: its accuracy is the part's rank error at 95 %
/// (`rank_error95`, data-independent), and it has no value-unit
/// `noise_std` or interval (turning ranks into values needs the data).
pub(crate) fn draw(
    r: &Release,
    grid: &QuantileGrid,
    exact: &BTreeMap<(String, usize), Vec<i128>>,
    rng: &mut SecureRng,
) -> Result<Vec<Cell>, RunError> {
    if grid.candidates.is_empty() {
        return Err(RunError::Data(format!("`{}` has no candidates", r.name)));
    }
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
        let kind = p.mechanism.unwrap_or(NoiseKind::Exponential);
        let value = grid.candidates[em.draw(kind, rng)];
        // `quantiles`: the level's label (the plan's `groups`)
        let group = r
            .aggregation
            .groups
            .as_ref()
            .and_then(|g| g.get(pi).cloned());
        cells.push(Cell::quantile(group, value, p.ci95_half_width));
    }
    Ok(cells)
}

/// The words a release's `mechanism` gives one level of a quantile: its
/// scale and its rank error at 95 % (read back by [`recorded_rank_error`]).
pub(crate) fn mechanism_words(kind: NoiseKind, scale: f64, rank_error95: f64) -> String {
    format!("{kind} b={scale} (rank error ≤ {rank_error95} at 95 %)")
}

/// The rank error at 95 % that [`mechanism_words`] recorded in one part of
/// a release's `mechanism` (a float's shortest representation: read back
/// exactly).
fn recorded_rank_error(words: &str) -> Option<f64> {
    let rest = words.strip_prefix("exponential b=")?;
    let (_, rest) = rest.split_once(" (rank error ≤ ")?;
    rest.strip_suffix(" at 95 %)")?.parse().ok()
}

/// A quantile's cells as a dpplan before run format 2 stored them in the
/// ledger (`noise_std` 0 and the candidate grid's range as an "interval",
/// no `rank_error95`), served as format 2 states them: no value-unit
/// figures, and the rank error at 95 % that the release's own `mechanism`
/// recorded (that release's, not the current plan's: a ledger may have
/// been upgraded since). The stored bytes are not touched (the chain's
/// hashes are over them); other releases are left as they are.
pub(crate) fn relabel_legacy(r: &mut crate::ReleaseResult) {
    let parts: Vec<&str> = r.mechanism.split(" + ").collect();
    let quantile =
        parts.len() == r.cells.len() && parts.iter().all(|p| p.starts_with("exponential b="));
    if !quantile {
        return;
    }
    for (c, words) in r.cells.iter_mut().zip(parts) {
        if c.rank_error95.is_none() {
            c.noise_std = None;
            c.ci95_low = None;
            c.ci95_high = None;
            c.rank_error95 = recorded_rank_error(words);
        }
    }
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

    /// A quantile's cell as dpplan wrote it before run format 2.
    fn legacy(mechanism: &str, cells: usize) -> crate::ReleaseResult {
        let cell = r#"{"group":null,"value":12.5,"noise_std":0.0,"ci95_low":0.0,"ci95_high":80.0}"#;
        let cells = vec![cell; cells].join(",");
        serde_json::from_str(&format!(
            r#"{{"query":"q","slot":0,"origin":"fresh","republished_from":null,"aggregation":"quantile(t.x, 0.5)","mechanism":"{mechanism}","epsilon":0.5,"delta":0.0,"cells":[{cells}],"approximate_interval":false,"ledger_seq":2}}"#
        ))
        .unwrap()
    }

    #[test]
    fn the_recorded_rank_error_reads_back_exactly() {
        for x in [64.6, 0.1 + 0.2, 1e-300, 105.93512345678901, 3.0] {
            assert_eq!(
                recorded_rank_error(&mechanism_words(NoiseKind::Exponential, 4.0, x)),
                Some(x)
            );
        }
        assert_eq!(recorded_rank_error("laplace b=2"), None);
        assert_eq!(recorded_rank_error("exponential b=2"), None);
    }

    #[test]
    fn a_legacy_quantile_is_served_with_its_recorded_rank_error_and_no_interval() {
        let words = [
            mechanism_words(NoiseKind::Exponential, 4.0, 88.25),
            mechanism_words(NoiseKind::Exponential, 4.0, 58.5),
        ];
        let mut r = legacy(&words.join(" + "), 2);
        assert_eq!(r.cells[0].ci95_high, Some(80.0));
        relabel_legacy(&mut r);
        let got: Vec<_> = r.cells.iter().map(|c| c.rank_error95).collect();
        assert_eq!(got, [Some(88.25), Some(58.5)]);
        for c in &r.cells {
            assert_eq!((c.noise_std, c.ci95_low, c.ci95_high), (None, None, None));
            assert_eq!(c.value, 12.5);
        }
    }

    #[test]
    fn a_noisy_release_is_not_relabelled() {
        // negative controls: a Laplace count, and a quantile's words with
        // one cell too many (not a quantile release's shape)
        for (mechanism, cells) in [
            ("laplace b=2", 1),
            ("exponential b=2 (rank error ≤ 9 at 95 %)", 2),
        ] {
            let mut r = legacy(mechanism, cells);
            let before = r.clone();
            relabel_legacy(&mut r);
            assert_eq!(r, before, "{mechanism}");
        }
    }
}
