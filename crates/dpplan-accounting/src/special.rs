//! Numerical helpers: the normal CDF in log space and 1-D minimisation (root
//! finding is in [`crate::roots`]).

use statrs::function::erf::erfc;

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Standard normal CDF Φ(x), accurate in both tails (via erfc).
pub fn norm_cdf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Standard normal survival function 1 − Φ(x) = Φ(−x).
pub fn norm_sf(x: f64) -> f64 {
    norm_cdf(-x)
}

/// ln Φ(x), accurate for very negative x (asymptotic series below −20) and for
/// large positive x (log1p of the upper tail).
pub fn log_norm_cdf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return 0.0;
    }
    if x == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    if x > 0.0 {
        return (-norm_sf(x)).ln_1p();
    }
    if x > -20.0 {
        return norm_cdf(x).ln();
    }
    // Mills-ratio asymptotic series: Φ(x) = φ(x)/|x| · Σ_k (−1)^k (2k−1)!! / x^{2k}.
    // For |x| ≥ 20 the terms shrink by ≥ 400/(2k+1) per step; we stop when they stop
    // shrinking or become negligible.
    let x2 = x * x;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..40 {
        let next = -term * (2 * k - 1) as f64 / x2;
        if next.abs() >= term.abs() {
            break;
        }
        term = next;
        sum += term;
        if term.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    -0.5 * x2 - (-x).ln() - LN_SQRT_2PI + sum.ln()
}

/// Minimise `f` over [a, b] by scanning `n` log-spaced points of (x − shift) and then
/// golden-section refinement between the neighbours of the best grid point. Does not
/// assume convexity globally; only local refinement assumes unimodality near the best
/// grid point. Returns (argmin, min).
pub fn minimize_log_grid(
    shift: f64,
    a: f64,
    b: f64,
    n: usize,
    f: impl Fn(f64) -> f64,
) -> (f64, f64) {
    // points x_i = shift + exp(la + i*(lb-la)/(n-1))
    let la = (a - shift).ln();
    let lb = (b - shift).ln();
    let pt = |i: usize| shift + (la + (lb - la) * i as f64 / (n - 1) as f64).exp();
    let mut best_i = 0;
    let mut best_v = f64::INFINITY;
    for i in 0..n {
        let v = f(pt(i));
        if v < best_v {
            best_v = v;
            best_i = i;
        }
    }
    let mut best_x = pt(best_i);
    let lo = pt(best_i.saturating_sub(1));
    let hi = pt((best_i + 1).min(n - 1));
    if hi > lo {
        let (x, v) = golden(lo, hi, &f);
        if v < best_v {
            best_v = v;
            best_x = x;
        }
    }
    (best_x, best_v)
}

/// Golden-section search on [lo, hi]; returns the best point evaluated.
pub fn golden(mut lo: f64, mut hi: f64, f: &impl Fn(f64) -> f64) -> (f64, f64) {
    let g = 0.618_033_988_749_894_9;
    let mut x1 = hi - g * (hi - lo);
    let mut x2 = lo + g * (hi - lo);
    let mut f1 = f(x1);
    let mut f2 = f(x2);
    for _ in 0..200 {
        if (hi - lo) <= 1e-15 * (hi.abs() + lo.abs()) {
            break;
        }
        if f1 <= f2 {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = f(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = f(x2);
        }
    }
    if f1 <= f2 {
        (x1, f1)
    } else {
        (x2, f2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_cdf_against_scipy() {
        // scipy.stats.norm.logcdf reference values
        for (x, want) in [(-20.0, -203.9171553710973), (-40.0, -804.6084420137539)] {
            let v = log_norm_cdf(x);
            assert!((v - want).abs() < 1e-12 * want.abs(), "{x}: {v} vs {want}");
        }
        // both branches agree just around the switch
        let a = norm_cdf(-19.999_999_999).ln();
        let b = log_norm_cdf(-20.000_000_001);
        assert!((a - b).abs() < 1e-7, "{a} {b}");
    }
}
