//! Numerical helpers: the normal CDF in log space — as a nearest value
//! ([`norm_cdf`], [`log_norm_cdf`]) and as an enclosure with a proven error
//! bound ([`ln_phi_approx`], [`ln_mills_approx`]) — and 1-D minimisation (root
//! finding is in [`crate::roots`]).
//!
//! # Error model (the enclosures)
//! u = 2⁻⁵³ is the unit round-off: each IEEE operation (+ − × ÷ √) returns
//! the exact result times (1 + θ), |θ| ≤ u. The special functions come from
//! the `libm` crate (the Rust project's port of musl / FreeBSD msun, the
//! same code base as the pre-2025 glibc): `exp`, `log`, `log1p`, `expm1` are
//! documented there as "always less than 1 ulp"; `erfc`'s rational
//! approximations are documented to 2⁻⁵⁷·⁹ and its measured worst error is
//! 4 ulps on [−5, 5] and correctly rounded outside (glibc's measurement of
//! the same code on 3·10¹⁰ arguments, glibc commit acaad9ab). We allow
//! [`ELEM_ULPS`] = 4 ulps for the elementary functions and [`ERFC_ULPS`] =
//! 16 ulps for erfc — 4× the documented or measured figures — and an
//! ulp is at most 2u relative. The property test
//! (`tests/it/never_below.rs`) checks erfc against 50-digit values over the
//! arguments it uses and fails above 8 ulps, so the assumption is tested,
//! not only cited.

/// Unit round-off of binary64, u = 2⁻⁵³.
pub(crate) const U: f64 = f64::EPSILON / 2.0;
/// Allowance, in ulps, for one call of `libm`'s exp, log, log1p or expm1
/// (documented < 1 ulp).
pub(crate) const ELEM_ULPS: f64 = 4.0;
/// Allowance, in ulps, for one call of `libm::erfc` (measured ≤ 4 ulps).
pub(crate) const ERFC_ULPS: f64 = 16.0;
/// Below this argument ln Φ goes through the Mills-ratio series.
pub(crate) const MILLS_FROM: f64 = 10.0;

/// A value with a proven bound on its absolute error: the exact quantity
/// lies in [v − err, v + err].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Approx {
    pub v: f64,
    pub err: f64,
}

impl Approx {
    /// A float ≥ v + err (the addition's rounding covered by one step up).
    pub(crate) fn hi(self) -> f64 {
        (self.v + self.err).next_up()
    }
    /// A float ≤ v − err.
    pub(crate) fn lo(self) -> f64 {
        (self.v - self.err).next_down()
    }
}

/// a/b rounded up (a ≥ 0, b > 0): the quotient to nearest, one step up
/// unless the remainder a − q·b, exact by a fused multiply-add, shows that q
/// is not below a/b. Exact quotients (1/1, 3/2, 1/10 rounded up already)
/// stay as they are.
pub(crate) fn div_up(a: f64, b: f64) -> f64 {
    let q = a / b;
    if !q.is_finite() || q == 0.0 && a == 0.0 {
        return q;
    }
    if q < 1e-290 {
        // the remainder may have underflowed: no claim of exactness
        return q.next_up();
    }
    let r = (-q).mul_add(b, a);
    if r > 0.0 {
        q.next_up()
    } else {
        q
    }
}

/// a·b rounded up (a, b ≥ 0), by the exact error of the product (fma).
pub(crate) fn mul_up(a: f64, b: f64) -> f64 {
    let p = a * b;
    if !p.is_finite() || p < 1e-290 {
        return if p.is_finite() { p.next_up() } else { p };
    }
    if a.mul_add(b, -p) > 0.0 {
        p.next_up()
    } else {
        p
    }
}

/// a·b rounded down (a, b ≥ 0).
pub(crate) fn mul_down(a: f64, b: f64) -> f64 {
    let p = a * b;
    if !p.is_finite() || p < 1e-290 {
        return if p.is_finite() {
            p.next_down().max(0.0)
        } else {
            p
        };
    }
    if a.mul_add(b, -p) < 0.0 {
        p.next_down()
    } else {
        p
    }
}

/// Σ cᵢ·xᵢ (cᵢ, xᵢ ≥ 0, cᵢ integers below 2⁵³) rounded up: every product
/// and addition is split into its rounded value and its exact error
/// (fma, TwoSum); the errors are summed with a bound on that sum's own
/// rounding (n·u·Σ|eᵢ|), and the total moves up by one step whenever a
/// correction is left. An exact sum (1 + 1 + 1) stays exact.
pub(crate) fn sum_up(terms: impl IntoIterator<Item = (f64, f64)>) -> f64 {
    let mut sum = SumUp::default();
    for (c, x) in terms {
        sum.add(c, x);
    }
    sum.value()
}

/// [`sum_up`] one term at a time: a prefix's state can be kept and
/// extended by different tails, each sum the same float as [`sum_up`] of
/// the whole list.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SumUp {
    s: f64,
    e: f64,
    e_abs: f64,
    n: f64,
    /// the first non-finite product, which is the sum
    non_finite: Option<f64>,
}

impl SumUp {
    pub(crate) fn add(&mut self, c: f64, x: f64) {
        if self.non_finite.is_some() {
            return;
        }
        let p = c * x;
        if !p.is_finite() {
            self.non_finite = Some(p);
            return;
        }
        let pe = c.mul_add(x, -p);
        if p != 0.0 && p < 1e-290 {
            // the product's error may have underflowed: cover it
            self.e_abs += 1e-290;
        }
        let s = self.s;
        let t = s + p;
        let bb = t - s;
        let te = (s - (t - bb)) + (p - bb);
        self.s = t;
        self.e += pe + te;
        self.e_abs += pe.abs() + te.abs();
        self.n += 2.0;
    }

    pub(crate) fn value(&self) -> f64 {
        if let Some(p) = self.non_finite {
            return p;
        }
        let corr = self.e + 1.01 * (self.n + 2.0) * U * self.e_abs;
        if corr == 0.0 {
            self.s
        } else {
            (self.s + corr).next_up()
        }
    }
}

/// ln of the Mills ratio m(y) = Φ(−y)/φ(y), for y ≥ [`MILLS_FROM`], with its
/// error bound. m(y) = S(y)/y with the asymptotic series
/// S(y) = Σₖ₌₀ⁿ (−1)ᵏ (2k−1)!!/y²ᵏ, whose remainder for real y > 0 is bounded
/// in magnitude by the first neglected term (DLMF §7.12(ii), the erfc
/// expansion 7.12.1 at z = y/√2). Error terms: the remainder; each term tₖ
/// computed by tₖ₋₁·(2k−1)/y² carries ≤ (3k+1)u relative, and the summation
/// of n+1 terms adds ≤ n·u·Σ|tₖ| (Σ|tₖ| ≤ 1.011 for y ≥ 10); then ln S and
/// ln y (≤ [`ELEM_ULPS`] each) and the subtraction (u).
pub(crate) fn ln_mills_approx(y: f64) -> Approx {
    debug_assert!(y >= MILLS_FROM);
    let y2 = y * y;
    let mut term = 1.0f64;
    let mut sum = 1.0f64;
    let mut k = 1u32;
    let rem = loop {
        let next = -term * f64::from(2 * k - 1) / y2;
        // with y ≥ 10 the terms shrink until k ≈ y²/2 ≥ 50, far beyond
        // the point where they fall under 1e-17 (k ≤ 21)
        if next.abs() < 1e-17 || k >= 60 {
            break next.abs() * (1.0 + 1e-12);
        }
        sum += next;
        term = next;
        k += 1;
    };
    let n = f64::from(k);
    let err_s = rem + (4.0 * n + 2.0) * U * 1.011;
    let ln_s = libm::log(sum);
    let ln_y = libm::log(y);
    let v = ln_s - ln_y;
    let err = err_s / (sum - err_s) + 2.0 * ELEM_ULPS * U * (ln_s.abs() + ln_y.abs()) + U * v.abs();
    Approx { v, err }
}

/// ln Φ(x) with a proven error bound (x finite).
///
/// * x ≥ −[`MILLS_FROM`]: through `libm::erfc`: s = ½·erfc(|x|/√2) is
///   Φ(−|x|). Its relative error is ≤ η = (2·[`ERFC_ULPS`] + 4z² + 5)·u,
///   z = |x|/√2: erfc's own error, plus the rounding of z (≤ 2u relative)
///   times erfc's condition number |z·erfc′(z)/erfc(z)| ≤ 2z² + 2 (from the
///   Mills-ratio bound erfc(z) ≥ 2e^{−z²}/(√π(z + √(z²+2)))). For x < 0,
///   ln Φ = ln s, error ≤ 1.01η + ln's; for x ≥ 0, ln Φ = log1p(−s), error
///   ≤ 1.01η·s/(1−s) + log1p's.
/// * x < −[`MILLS_FROM`]: ln Φ(x) = −x²/2 − ln√(2π) + ln m(−x)
///   ([`ln_mills_approx`]); x² adds ≤ u·x²/2 and each of the two additions
///   u·(sum of magnitudes).
pub(crate) fn ln_phi_approx(x: f64) -> Approx {
    if x == f64::INFINITY {
        return Approx { v: 0.0, err: 0.0 };
    }
    if x >= -MILLS_FROM {
        let z = x.abs() * std::f64::consts::FRAC_1_SQRT_2;
        let s = 0.5 * libm::erfc(z);
        let eta = (2.0 * ERFC_ULPS + 4.0 * z * z + 5.0) * U;
        if x < 0.0 {
            let v = libm::log(s);
            Approx {
                v,
                err: 1.01 * eta + 2.0 * ELEM_ULPS * U * v.abs(),
            }
        } else {
            let v = libm::log1p(-s);
            Approx {
                v,
                err: 1.01 * eta * s / (1.0 - s) + 2.0 * ELEM_ULPS * U * v.abs(),
            }
        }
    } else {
        let m = ln_mills_approx(-x);
        let h = 0.5 * (x * x);
        let v = -h - LN_SQRT_2PI + m.v;
        Approx {
            v,
            err: m.err + U * h + 3.0 * U * (h + LN_SQRT_2PI + m.v.abs()),
        }
    }
}

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Standard normal CDF Φ(x), accurate in both tails (via `libm::erfc`, the
/// erfc of the enclosures: one erfc in the crate).
pub fn norm_cdf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
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
    let points = log_grid(shift, a, b, n);
    minimize_on_grid(&points, |i| f(points[i]), &f)
}

/// The `n` points [`minimize_log_grid`] scans: x_i = shift + exp(la +
/// i·(lb − la)/(n − 1)), la = ln(a − shift), lb = ln(b − shift). A caller
/// that minimises many functions over the same grid computes it once.
pub fn log_grid(shift: f64, a: f64, b: f64, n: usize) -> Vec<f64> {
    let la = (a - shift).ln();
    let lb = (b - shift).ln();
    (0..n)
        .map(|i| shift + (la + (lb - la) * i as f64 / (n - 1) as f64).exp())
        .collect()
}

/// [`minimize_log_grid`] over the grid `points` (from [`log_grid`]), where
/// `at(i)` is `f(points[i])` bit for bit (a caller may compute it from
/// terms it keeps per point): the scan's best point, refined by
/// golden-section search on `f` between its neighbours. Returns (argmin, min).
pub fn minimize_on_grid(
    points: &[f64],
    at: impl Fn(usize) -> f64,
    f: impl Fn(f64) -> f64,
) -> (f64, f64) {
    let n = points.len();
    let mut best_i = 0;
    let mut best_v = f64::INFINITY;
    for i in 0..n {
        let v = at(i);
        if v < best_v {
            best_v = v;
            best_i = i;
        }
    }
    let mut best_x = points[best_i];
    let lo = points[best_i.saturating_sub(1)];
    let hi = points[(best_i + 1).min(n - 1)];
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
