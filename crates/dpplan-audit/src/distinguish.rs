//! The distinguishers: each turns one release's published cells into a
//! score, larger when the run looks like D than like D′.
//!
//! * `likelihood_ratio`: the log-likelihood ratio log p_D(y)/p_D′(y) of the
//!   *declared* mechanism (Laplace: Σ(|y−b|−|y−a|)/scale; Gaussian:
//!   Σ((y−b)²−(y−a)²)/2σ²), the Neyman–Pearson test for the mechanism the
//!   plan claims; for a mean (post-processing of two noisy parts) the
//!   projection of the cells on the difference of the exact means; for a
//!   top-k, log P_D(y)/P_D′(y) of the selections in order, each among the
//!   cells not chosen before (the exponential mechanism's exact law, or
//!   permute-and-flip's).
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
    let mut left: Vec<bool> = vec![true; counts.len()];
    let mut lp = 0.0;
    for j in chosen_in_order(y) {
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

/// The cells chosen, in the order of their ranks.
fn chosen_in_order(y: &[f64]) -> Vec<usize> {
    let mut order: Vec<(f64, usize)> = y
        .iter()
        .enumerate()
        .filter(|(_, &r)| r > 0.0)
        .map(|(j, &r)| (r, j))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    order.into_iter().map(|(_, j)| j).collect()
}

/// log P(the selections `y` per candidate) of a top-k by permute-and-flip
/// over `counts`: Σ over ranks of log P(j), where among the cells left
/// P(j) = p_j·∫₀¹ Π_(i ≠ j) (1 − p_i·t) dt with keep probabilities
/// p_i = exp((c_i − c*)/b′) (a uniform order is uniform arrival times on
/// [0, 1]: given j's time t, each other cell comes first with probability
/// t and then stops the search with probability p_i). The integrand is a
/// polynomial of degree < m, integrated exactly by Gauss–Legendre with
/// ⌈m/2⌉ nodes.
fn pf_log_probability(y: &[f64], counts: &[f64], b: f64) -> f64 {
    let mut left: Vec<bool> = vec![true; counts.len()];
    let mut lp = 0.0;
    for j in chosen_in_order(y) {
        let live: Vec<usize> = (0..counts.len()).filter(|&i| left[i]).collect();
        let best = live
            .iter()
            .map(|&i| counts[i])
            .fold(f64::NEG_INFINITY, f64::max);
        let keep = |i: usize| ((counts[i] - best) / b).exp();
        let integral: f64 = gauss_legendre(live.len().div_ceil(2))
            .into_iter()
            .map(|(t, w)| {
                w * live
                    .iter()
                    .filter(|&&i| i != j)
                    .map(|&i| 1.0 - keep(i) * t)
                    .product::<f64>()
            })
            .sum();
        lp += (keep(j) * integral).ln();
        left[j] = false;
    }
    lp
}

/// The n Gauss–Legendre nodes and weights on [0, 1] (exact for
/// polynomials of degree < 2n): each node by Newton's steps on the Legendre
/// polynomial P_n from the usual first guess.
fn gauss_legendre(n: usize) -> Vec<(f64, f64)> {
    (1..=n)
        .map(|i| {
            let mut x = (std::f64::consts::PI * (i as f64 - 0.25) / (n as f64 + 0.5)).cos();
            let mut dp = 1.0;
            for _ in 0..100 {
                // P_n(x) by the three-term recurrence, and P_n′(x)
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                    (p0, p1) = (p1, p2);
                }
                let (pn, pm) = if n == 1 { (x, 1.0) } else { (p1, p0) };
                dp = n as f64 * (x * pn - pm) / (x * x - 1.0);
                let step = pn / dp;
                x -= step;
                if step.abs() < 1e-15 {
                    break;
                }
            }
            let w = 2.0 / ((1.0 - x * x) * dp * dp);
            (0.5 * (1.0 - x), 0.5 * w)
        })
        .collect()
}

fn likelihood_ratio(r: &Release, c: &Centres, y: &[f64]) -> f64 {
    let p = &r.parts[0];
    if let (Some(t), Some(s)) = (&r.aggregation.top, p.scale) {
        let b = if t.monotone { s } else { 2.0 * s };
        let law = if p.mechanism == Some(NoiseKind::PermuteAndFlip) {
            pf_log_probability
        } else {
            top_log_probability
        };
        return law(y, &c.d, b) - law(y, &c.dp, b);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_legendre_is_exact_below_degree_2n() {
        for n in [1usize, 2, 3, 6, 20, 50] {
            let nodes = gauss_legendre(n);
            for k in 0..2 * n {
                let got: f64 = nodes.iter().map(|&(t, w)| w * t.powi(k as i32)).sum();
                let want = 1.0 / (k as f64 + 1.0);
                assert!((got - want).abs() < 1e-12, "n {n} k {k}: {got} vs {want}");
            }
            // negative control: degree 2n is not exact (visibly so for a
            // few nodes; the error falls as (n!)⁴/(2n)!² after)
            if n <= 6 {
                let got: f64 = nodes.iter().map(|&(t, w)| w * t.powi(2 * n as i32)).sum();
                assert!((got - 1.0 / (2 * n + 1) as f64).abs() > 1e-9, "n {n}");
            }
        }
    }

    /// Permute-and-flip's law by enumeration: over every order of the cells
    /// left, the first kept.
    fn pf_enumerated(y: &[f64], counts: &[f64], b: f64) -> f64 {
        fn orders(m: usize) -> Vec<Vec<usize>> {
            if m == 0 {
                return vec![Vec::new()];
            }
            let mut out = Vec::new();
            for o in orders(m - 1) {
                for at in 0..=o.len() {
                    let mut t = o.clone();
                    t.insert(at, m - 1);
                    out.push(t);
                }
            }
            out
        }
        let mut left: Vec<usize> = (0..counts.len()).collect();
        let mut lp = 0.0;
        for j in chosen_in_order(y) {
            let best = left
                .iter()
                .map(|&i| counts[i])
                .fold(f64::NEG_INFINITY, f64::max);
            let keep = |i: usize| ((counts[i] - best) / b).exp();
            let all = orders(left.len());
            let mut p = 0.0;
            for o in &all {
                let mut reach = 1.0;
                for &k in o {
                    let cell = left[k];
                    if cell == j {
                        p += reach * keep(cell) / all.len() as f64;
                        break;
                    }
                    reach *= 1.0 - keep(cell);
                }
            }
            lp += p.ln();
            left.retain(|&i| i != j);
        }
        lp
    }

    /// The closed form (an integral, by Gauss–Legendre) against the
    /// enumeration over every order; negative control: the exponential
    /// mechanism's law differs.
    #[test]
    fn permute_and_flips_law_is_the_enumerated_one() {
        let counts = [20.0, 21.0, 20.0, 17.0, 25.0];
        for y in [
            vec![1.0, 0.0, 0.0, 0.0, 0.0],
            vec![0.0, 2.0, 0.0, 0.0, 1.0],
            vec![3.0, 0.0, 1.0, 2.0, 0.0],
            vec![0.0, 0.0, 0.0, 1.0, 0.0],
        ] {
            for b in [0.5, 2.0, 7.0] {
                let closed = pf_log_probability(&y, &counts, b);
                let enumerated = pf_enumerated(&y, &counts, b);
                assert!(
                    (closed - enumerated).abs() < 1e-10,
                    "{y:?} b {b}: {closed} vs {enumerated}"
                );
                let em = top_log_probability(&y, &counts, b);
                assert!((em - closed).abs() > 1e-3, "{y:?} b {b}");
            }
        }
    }
}
