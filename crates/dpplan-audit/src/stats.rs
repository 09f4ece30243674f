//! From the outcomes of a distinguishing test to a lower bound on ε: exact
//! (Clopper–Pearson) upper confidence bounds on the test's two error rates
//! and the (ε, δ)-DP inequalities they must satisfy.
//!
//! For neighbours D, D′ and any set S of outputs, (ε, δ)-DP gives
//! P_D(S) ≤ e^ε·P_D′(S) + δ and P_D′(S) ≤ e^ε·P_D(S) + δ. With S the test's
//! "it was D" answers, FPR α = P_D′(S) and FNR β = P_D(not S):
//! 1 − β ≤ e^ε·α + δ and 1 − α ≤ e^ε·β + δ, so
//! ε ≥ max(ln((1 − δ − β)/α), ln((1 − δ − α)/β)). Replacing α and β by
//! upper confidence bounds keeps the inequality true with the bounds'
//! joint confidence (Jagielski et al. 2020, Nasr et al. 2021).

use statrs::function::beta::beta_reg;

/// P(Binomial(n, p) ≤ k).
fn binomial_cdf(k: u64, n: u64, p: f64) -> f64 {
    if k >= n {
        return 1.0;
    }
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return 0.0;
    }
    // P(X ≤ k) = I_{1−p}(n − k, k + 1)
    beta_reg((n - k) as f64, (k + 1) as f64, 1.0 - p)
}

/// The exact one-sided Clopper–Pearson upper bound on a binomial
/// proportion after `k` successes in `n` trials: the p with
/// P(Binomial(n, p) ≤ k) = `gamma`, so that P(p_true > bound) ≤ `gamma`.
/// Computed by bisection on the binomial CDF (statrs' regularised
/// incomplete beta function) to a relative width of 10⁻⁹ and returned at
/// the top of the final bracket: never below the exact bound by more than
/// the CDF's own rounding.
pub fn clopper_pearson_upper(k: u64, n: u64, gamma: f64) -> f64 {
    if n == 0 || k >= n {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    // relative precision 1e-9 of the bound is plenty: the result is
    // the bracket's top, so stopping early only loosens it
    while hi - lo > 1e-9 * hi {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        // the CDF decreases in p: above the bound it is below gamma
        if binomial_cdf(k, n, mid) > gamma {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The lower bound on ε from a test's error counts: `false_pos` of
/// `n_neg` runs on D′ answered "D", `false_neg` of `n_pos` runs on D
/// answered "D′"; each rate bounded above at one-sided level `gamma`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Bound {
    /// Upper confidence bound on the false-positive rate α.
    pub alpha_upper: f64,
    /// Upper confidence bound on the false-negative rate β.
    pub beta_upper: f64,
    /// max(ln((1 − δ − β̂)/α̂), ln((1 − δ − α̂)/β̂), 0).
    pub epsilon: f64,
}

pub fn epsilon_lower_bound(
    false_pos: u64,
    n_neg: u64,
    false_neg: u64,
    n_pos: u64,
    delta: f64,
    gamma: f64,
) -> Bound {
    let a = clopper_pearson_upper(false_pos, n_neg, gamma);
    let b = clopper_pearson_upper(false_neg, n_pos, gamma);
    Bound {
        alpha_upper: a,
        beta_upper: b,
        epsilon: epsilon_from_rates(a, b, delta),
    }
}

/// max(ln((1 − δ − β)/α), ln((1 − δ − α)/β), 0) for rates α, β.
pub fn epsilon_from_rates(alpha: f64, beta: f64, delta: f64) -> f64 {
    let one = |num: f64, den: f64| {
        if num <= 0.0 || den <= 0.0 {
            0.0
        } else {
            (num / den).ln()
        }
    };
    one(1.0 - delta - beta, alpha)
        .max(one(1.0 - delta - alpha, beta))
        .max(0.0)
}

/// A threshold test on a score: "it was D" when `score >= t` (or, with
/// `below`, when `score <= t`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Threshold {
    pub t: f64,
    pub below: bool,
}

impl Threshold {
    pub fn says_d(&self, score: f64) -> bool {
        if self.below {
            score <= self.t
        } else {
            score >= self.t
        }
    }
}

/// How many of `sorted` are ≥ t (or ≤ t with `below`).
fn count_says_d(sorted: &[f64], th: Threshold) -> u64 {
    let n = if th.below {
        sorted.partition_point(|&x| x <= th.t)
    } else {
        sorted.len() - sorted.partition_point(|&x| x < th.t)
    };
    n as u64
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    s.sort_by(f64::total_cmp);
    s
}

/// At most `max` candidate thresholds: the distinct pooled scores, or
/// their quantiles when there are more.
fn candidates(a: &[f64], b: &[f64], max: usize) -> Vec<f64> {
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    all.dedup();
    if all.len() <= max {
        return all;
    }
    (0..max)
        .map(|i| all[i * (all.len() - 1) / (max - 1)])
        .collect()
}

/// The threshold (and direction) with the largest lower bound on ε on the
/// selection runs (`d`: scores of runs on D, `dp`: on D′), the bound
/// computed exactly as on the evaluation runs, so that a threshold far in
/// a tail with few runs beyond it is not preferred by chance.
pub fn select_threshold(d: &[f64], dp: &[f64], delta: f64, gamma: f64) -> Threshold {
    let (d, dp) = (sorted(d), sorted(dp));
    let mut best = (
        f64::NEG_INFINITY,
        Threshold {
            t: 0.0,
            below: false,
        },
    );
    for t in candidates(&d, &dp, 256) {
        for below in [false, true] {
            let th = Threshold { t, below };
            let tp = count_says_d(&d, th);
            let fp = count_says_d(&dp, th);
            let fneg = d.len() as u64 - tp;
            let b = epsilon_lower_bound(fp, dp.len() as u64, fneg, d.len() as u64, delta, gamma);
            // ties: the larger raw separation
            let raw = tp as f64 / d.len().max(1) as f64 - fp as f64 / dp.len().max(1) as f64;
            let key = b.epsilon + 1e-9 * raw.abs();
            if key > best.0 {
                best = (key, th);
            }
        }
    }
    best.1
}

/// The errors of `th` on evaluation runs: (false positives among `dp`,
/// false negatives among `d`).
pub fn errors(th: Threshold, d: &[f64], dp: &[f64]) -> (u64, u64) {
    let fp = dp.iter().filter(|&&s| th.says_d(s)).count() as u64;
    let fneg = d.iter().filter(|&&s| !th.says_d(s)).count() as u64;
    (fp, fneg)
}
