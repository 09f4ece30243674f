//! Utility figures of one release's noise: standard deviation and the
//! half-width of the central 95 % interval; and the inverse, the largest
//! noise scale whose figure meets an `accuracy` requirement.

use dpplan_accounting::roots::{self, find_bracket, Bisection, Bracket, End, Midpoint};
use dpplan_vocab::{AccuracyMeasure, NoiseKind};

use crate::Z95;

/// (standard deviation, 95 % half-width) of the noise with `scale` (b for the
/// Laplace kinds, σ for the Gaussian kinds).
pub fn spread(kind: NoiseKind, scale: f64) -> (f64, f64) {
    match kind {
        // Var = 2b²; P(|X| > t) = e^{-t/b} = 0.05 → t = b ln 20.
        NoiseKind::Laplace => (scale * 2f64.sqrt(), scale * 20f64.ln()),
        NoiseKind::Gaussian => (scale, Z95 * scale),
        NoiseKind::DiscreteLaplace => {
            // P(X = k) ∝ q^{|k|}, q = e^{-1/t}: Var = 2q/(1−q)²;
            // P(|X| > k) = 2 q^{k+1} / (1 + q).
            let q = (-1.0 / scale).exp();
            let var = 2.0 * q / ((1.0 - q) * (1.0 - q));
            // smallest integer k with 2 q^{k+1}/(1+q) ≤ 0.05
            let k = ((0.05 * (1.0 + q) / 2.0).ln() / q.ln() - 1.0)
                .ceil()
                .max(0.0);
            (var.sqrt(), k)
        }
        NoiseKind::DiscreteGaussian => discrete_gaussian_spread(scale),
        // no additive noise: a quantile's accuracy is a rank error, which
        // depends on its number of candidates (`rank_error`)
        NoiseKind::Exponential | NoiseKind::PermuteAndFlip => (f64::NAN, f64::NAN),
    }
}

/// The noise's standard deviation or 95 % half-width at `scale`.
pub fn measure(kind: NoiseKind, scale: f64, m: AccuracyMeasure) -> f64 {
    let (std, ci) = spread(kind, scale);
    match m {
        AccuracyMeasure::Std => std,
        AccuracyMeasure::Ci95 => ci,
    }
}

/// Whether the noise at `scale` meets `measure ≤ target` (a NaN figure
/// does not).
fn meets(kind: NoiseKind, scale: f64, m: AccuracyMeasure, target: f64) -> bool {
    measure(kind, scale, m) <= target
}

/// The largest noise scale (b or σ) whose `m` is at most `target`: the
/// cheapest noise that meets an `accuracy` requirement. `None` when the
/// target is not a positive finite number or no positive scale meets it.
///
/// The continuous kinds invert their closed forms (b = t/ln 20, b = s/√2,
/// σ = t/z₀.₉₇₅, σ = s) and step to the last float that still meets the
/// target; the discrete kinds' figures are no closed form of the scale (the
/// 95 % half-width is an integer, a step function of the scale), so they are
/// inverted by bisection down to adjacent floats: the result meets the
/// target and the next float above it does not.
pub fn largest_scale(kind: NoiseKind, m: AccuracyMeasure, target: f64) -> Option<f64> {
    if !(target.is_finite() && target > 0.0) {
        return None;
    }
    let ok = |s: f64| meets(kind, s, m, target);
    let guess = match (kind.is_gaussian(), m) {
        (false, AccuracyMeasure::Ci95) => target / 20f64.ln(),
        (false, AccuracyMeasure::Std) => target / 2f64.sqrt(),
        (true, AccuracyMeasure::Ci95) => target / Z95,
        (true, AccuracyMeasure::Std) => target,
    };
    if !kind.is_discrete() {
        // The closed form, then to the last float that meets the target
        // (division may round either way by an ulp).
        let mut s = guess;
        for _ in 0..16 {
            if ok(s) {
                break;
            }
            s = s.next_down();
        }
        if !ok(s) {
            return None;
        }
        for _ in 0..16 {
            let up = s.next_up();
            if !ok(up) {
                break;
            }
            s = up;
        }
        return Some(s);
    }
    // A scale that meets the target (down from the guess by halves), then
    // one that does not (up by doubling), then bisect to adjacent floats,
    // keeping the end that meets it.
    let Bracket::Found { first_held: lo, .. } =
        find_bracket(guess, 1100, |x| Some(x / 2.0).filter(|y| *y > 0.0), ok)
    else {
        return None;
    };
    let Bracket::Found { first_held: hi, .. } = find_bracket(
        lo,
        1100,
        |x| Some(x * 2.0).filter(|y| y.is_finite()),
        |x| !ok(x),
    ) else {
        return None;
    };
    let rule = Bisection {
        rel: 0.0,
        abs: 0.0,
        max_steps: 2000,
        midpoint: Midpoint::Geometric,
        end: End::Lower,
    };
    let s = roots::bisect(lo, hi, &rule, |x| !ok(x));
    ok(s).then_some(s)
}

/// Exact by summation for σ ≤ 1000; beyond that the discrete Gaussian is
/// within 1e-100 of the continuous one in variance and the interval is
/// rounded up to an integer.
fn discrete_gaussian_spread(sigma: f64) -> (f64, f64) {
    if sigma.is_nan() || sigma <= 0.0 || sigma > 1000.0 {
        return (sigma, (Z95 * sigma).ceil());
    }
    let Some(norm) = dpplan_accounting::discrete_gaussian_normaliser(sigma) else {
        return (sigma, (Z95 * sigma).ceil());
    };
    let limit = (sigma * 40.0).ceil() as i64 + 1;
    let w = |k: i64| (-((k * k) as f64) / (2.0 * sigma * sigma)).exp();
    let mut second = 0.0;
    for k in 1..=limit {
        second += 2.0 * w(k) * (k * k) as f64;
    }
    let var = second / norm;
    // central interval: smallest k with P(|X| ≤ k) ≥ 0.95
    let mut mass = w(0) / norm;
    let mut k = 0;
    while mass < 0.95 && k < limit {
        k += 1;
        mass += 2.0 * w(k) / norm;
    }
    (var.sqrt(), k as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laplace_and_gaussian() {
        let (sd, ci) = spread(NoiseKind::Laplace, 50.0);
        assert!((sd - 70.710_678_118_654_76).abs() < 1e-9);
        // P(|X| > ci) = exp(-ci/b) must be 0.05
        assert!(((-ci / 50.0f64).exp() - 0.05).abs() < 1e-12);
        let (sd, ci) = spread(NoiseKind::Gaussian, 8.0);
        assert_eq!(sd, 8.0);
        assert!((ci - 15.679711876320432).abs() < 1e-9);
    }

    #[test]
    fn discrete_close_to_continuous_for_large_scales() {
        let (sd, ci) = spread(NoiseKind::DiscreteGaussian, 30.0);
        assert!((sd - 30.0).abs() < 1e-6, "{sd}");
        assert!((ci - 59.0).abs() <= 1.0, "{ci}");
        let (sd, _) = spread(NoiseKind::DiscreteLaplace, 50.0);
        assert!((sd - 50.0 * 2f64.sqrt()).abs() < 0.1, "{sd}");
        // scale 1: q = e^-1, P(|X| > k) = 2 q^{k+1}/(1+q) ≤ 0.05 first at k = 3
        let (_, ci) = spread(NoiseKind::DiscreteLaplace, 1.0);
        assert_eq!(ci, 3.0);
    }
}
