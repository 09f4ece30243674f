//! The distinguishers: each turns one release's published cells into a
//! score, larger when the run looks like D than like D′.
//!
//! * `likelihood_ratio`: the log-likelihood ratio log p_D(y)/p_D′(y) of the
//!   *declared* mechanism (Laplace: Σ(|y−b|−|y−a|)/scale; Gaussian:
//!   Σ((y−b)²−(y−a)²)/2σ²), the Neyman–Pearson test for the mechanism the
//!   plan claims; for a mean (post-processing of two noisy parts) the
//!   projection of the cells on the difference of the exact means; for a
//!   top-k, log P_D(y)/P_D′(y) of the selections in order, each among the
//!   cells not chosen before (the exponential mechanism's exact law; for
//!   a top-k by permute-and-flip the same score: any score gives a valid
//!   test, this one is close to its law but not the most powerful).
//! * `low_bits`: Mironov's (2012) test against the textbook floating-point
//!   Laplace `x − b·sgn(u)·ln(1 − 2|u|)` on a 53-bit float uniform: the set
//!   of doubles that sampler can output depends on x, so "reachable from
//!   x_D but not from x_D′" is evidence for D. An exact sampler rounds
//!   x + noise once, so its outputs carry no such trace and this test has
//!   no power against it.

use dpplan_plan::Release;
use dpplan_vocab::{AggKind, NoiseKind};

/// The cells' values a release would publish with no noise at all, on D
/// and on D′ (the centres the distinguishers compare against).
#[derive(Debug, Clone, PartialEq)]
pub struct Centres {
    pub d: Vec<f64>,
    pub dp: Vec<f64>,
}

/// Which test, by name in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Distinguisher {
    LikelihoodRatio,
    LowBits,
}

impl Distinguisher {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Distinguisher::LikelihoodRatio => "likelihood ratio",
            Distinguisher::LowBits => "low bits (Mironov)",
        }
    }

    /// The distinguishers that apply to `r`: the likelihood ratio always;
    /// the low-bits test for a Laplace-noised release that is not a mean.
    pub fn for_release(r: &Release) -> Vec<Distinguisher> {
        let mut v = vec![Distinguisher::LikelihoodRatio];
        if laplace_scale(r).is_some() {
            v.push(Distinguisher::LowBits);
        }
        v
    }

    pub fn score(self, r: &Release, c: &Centres, y: &[f64]) -> f64 {
        match self {
            Distinguisher::LikelihoodRatio => likelihood_ratio(r, c, y),
            Distinguisher::LowBits => match laplace_scale(r) {
                Some(b) => low_bits(c, y, b),
                None => 0.0,
            },
        }
    }
}

/// The Laplace scale of a one-part release (not a mean) with Laplace noise.
pub fn laplace_scale(r: &Release) -> Option<f64> {
    match (r.aggregation.kind, r.parts.as_slice()) {
        (AggKind::Mean, _) => None,
        (_, [p])
            if matches!(
                p.mechanism,
                Some(NoiseKind::Laplace | NoiseKind::DiscreteLaplace)
            ) =>
        {
            p.scale
        }
        _ => None,
    }
}

/// A top-k's release seen per candidate: one cell per cell of the plan's
/// `groups`, in that order, valued by the rank it was chosen at (0: not
/// chosen). Its labels are then the same on every run, and the
/// distinguishers read the choices from the values. Any other release is
/// returned as it is.
pub fn per_candidate(
    r: &Release,
    mut x: dpplan_runtime::ReleaseResult,
) -> dpplan_runtime::ReleaseResult {
    let (Some(_), Some(labels)) = (&r.aggregation.top, &r.aggregation.groups) else {
        return x;
    };
    let chosen = std::mem::take(&mut x.cells);
    x.cells = labels
        .iter()
        .map(|l| {
            let rank = chosen
                .iter()
                .find(|c| c.group.as_deref() == Some(l.as_str()))
                .map_or(0.0, |c| c.value);
            dpplan_runtime::Cell::ranked(l.clone(), rank)
        })
        .collect();
    x
}

/// log P(the selections `y` per candidate) of a top-k over the counts
/// `counts`: Σ over ranks of w(chosen) − log Σ over the cells not chosen
/// before of w, with w = count/b′ (b′ = b when monotone, else 2b).
fn top_log_probability(y: &[f64], counts: &[f64], b: f64) -> f64 {
    let mut order: Vec<(f64, usize)> = y
        .iter()
        .enumerate()
        .filter(|(_, &r)| r > 0.0)
        .map(|(j, &r)| (r, j))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut left: Vec<bool> = vec![true; counts.len()];
    let mut lp = 0.0;
    for (_, j) in order {
        let w = |i: usize| counts[i] / b;
        let top = (0..counts.len())
            .filter(|&i| left[i])
            .map(w)
            .fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = (0..counts.len())
            .filter(|&i| left[i])
            .map(|i| (w(i) - top).exp())
            .sum();
        lp += w(j) - top - z.ln();
        left[j] = false;
    }
    lp
}

fn likelihood_ratio(r: &Release, c: &Centres, y: &[f64]) -> f64 {
    let p = &r.parts[0];
    if let (Some(t), Some(s)) = (&r.aggregation.top, p.scale) {
        let b = if t.monotone { s } else { 2.0 * s };
        return top_log_probability(y, &c.d, b) - top_log_probability(y, &c.dp, b);
    }
    let cells = y.iter().zip(c.d.iter().zip(&c.dp));
    if r.aggregation.kind == AggKind::Mean || p.scale.is_none() {
        return cells.map(|(y, (a, b))| (y - 0.5 * (a + b)) * (a - b)).sum();
    }
    let s = p.scale.unwrap_or(1.0);
    match p.mechanism {
        Some(k) if k.is_gaussian() => cells
            .map(|(y, (a, b))| ((y - b) * (y - b) - (y - a) * (y - a)) / (2.0 * s * s))
            .sum(),
        Some(NoiseKind::Laplace | NoiseKind::DiscreteLaplace) => cells
            .map(|(y, (a, b))| ((y - b).abs() - (y - a).abs()) / s)
            .sum(),
        _ => 0.0,
    }
}

/// Σ over the cells whose centres differ of reach(y, a) − reach(y, b).
fn low_bits(c: &Centres, y: &[f64], b: f64) -> f64 {
    let mut s = 0.0;
    for (y, (a, bb)) in y.iter().zip(c.d.iter().zip(&c.dp)) {
        if a != bb {
            s += f64::from(u8::from(naive_reachable(*y, *a, b)))
                - f64::from(u8::from(naive_reachable(*y, *bb, b)));
        }
    }
    s
}

/// The textbook floating-point Laplace noise for a 53-bit uniform index
/// `m` on one side (`negative`): −b·sgn(v)·ln(1 − 2|v|) with |v| = m·2⁻⁵³,
/// as the `audit-faults` feature's naive sampler computes it (1 − 2|v| is exact).
pub(crate) fn naive_noise(m: u64, negative: bool, b: f64) -> f64 {
    let w = 1.0 - (m as f64) * f64::powi(2.0, -52);
    let sign = if negative { -1.0 } else { 1.0 };
    -b * sign * w.ln()
}

/// Whether the textbook sampler around `x` with scale `b` can output
/// exactly `y`: x + noise(m) is monotone in m on each side, so a binary
/// search finds the only candidates.
pub fn naive_reachable(y: f64, x: f64, b: f64) -> bool {
    if !y.is_finite() {
        return false;
    }
    let half = 1u64 << 52;
    // positive side: m in [0, 2⁵² − 1], x + g(m) nondecreasing
    let up = |m: u64| x + naive_noise(m, false, b);
    let (mut lo, mut hi) = (0u64, half - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if up(mid) < y {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if up(lo) == y {
        return true;
    }
    // negative side: m in [1, 2⁵²], x − g(m) nonincreasing
    let down = |m: u64| x + naive_noise(m, true, b);
    let (mut lo, mut hi) = (1u64, half);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if down(mid) > y {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    down(lo) == y
}
