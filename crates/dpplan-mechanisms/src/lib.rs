//! The mechanism math that the checker and the runtime share, below both
//! and knowing no syntax: what a unit's contribution bounds make of each
//! statistic's L1/L2 sensitivity under an adjacency (`sensitivity`,
//! `sensitivity_rows`), a windowed release's sensitivity over its horizon
//! (`windows`), the binary tree of continual counting (`tree`: its nodes,
//! its sensitivity, Honaker's estimator), and a noise's utility figures and
//! their inverse (`noise`). Each derivation returns its steps in words.

pub mod consistency;
pub mod factorization;
pub mod noise;
pub mod sensitivity;
pub mod sensitivity_rows;
pub mod tree;
pub mod windows;

/// z such that P(|N(0,1)| ≤ z) = 0.95: the one 95 % normal quantile of
/// every interval dpplan prints.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The delta-method standard deviation of a mean released as the noisy sum
/// over the noisy count, S / C at a count `n`, with the mean at `m`:
/// Var ≈ (σ_S² + m²·σ_C²) / n².
pub fn mean_std(sigma_sum: f64, sigma_count: f64, m: f64, n: f64) -> f64 {
    (sigma_sum * sigma_sum + m * m * sigma_count * sigma_count).sqrt() / n
}
