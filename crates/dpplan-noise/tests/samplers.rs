//! Goodness of fit of the exact samplers against their exact pmf.
//!
//! Chi-square tests with bins merged until every expected count is ≥ 5 and
//! a critical value at false-alarm rate 1e-6 (statrs), so a correct sampler
//! fails about once in a million runs and a wrong one (off by a scale
//! factor, a sign, a bias) fails every time. Each check runs at 20 000
//! draws per scale and again at 10⁶ draws (about 25 s in all under the
//! test profile's opt-level 1).

use dashu_int::IBig;
use dpplan_engine::rng::SecureRng;
use dpplan_noise::Noise;
use dpplan_vocab::NoiseKind;
use statrs::distribution::{ChiSquared, ContinuousCDF};

const FALSE_ALARM: f64 = 1e-6;

fn as_i64(x: &IBig) -> i64 {
    i64::try_from(x).expect("a draw fits in i64")
}

/// Chi-square statistic and critical value of `draws` against `pmf` on the
/// integers, bins merged from the tails inwards until expected ≥ 5.
fn chi_square(draws: &[i64], pmf: &dyn Fn(i64) -> f64) -> (f64, f64, usize) {
    let n = draws.len() as f64;
    // support where the expected count is ≥ 5, plus the two tails
    let mut hi = 0i64;
    while n * pmf(hi + 1) >= 5.0 {
        hi += 1;
    }
    let mut lo = 0i64;
    while n * pmf(lo - 1) >= 5.0 {
        lo -= 1;
    }
    let inner: f64 = (lo..=hi).map(pmf).sum();
    let left: f64 = {
        // tails by symmetry of our distributions: split 1 − inner evenly
        // weighted by the exact sums far out
        let mut s = 0.0;
        let mut x = lo - 1;
        while pmf(x) > 1e-300 && x > lo - 100_000 {
            s += pmf(x);
            x -= 1;
        }
        s
    };
    let right = (1.0 - inner - left).max(0.0);
    let mut bins: Vec<(f64, f64)> = Vec::new(); // (expected, observed)
    bins.push((n * left, draws.iter().filter(|&&d| d < lo).count() as f64));
    for x in lo..=hi {
        bins.push((n * pmf(x), draws.iter().filter(|&&d| d == x).count() as f64));
    }
    bins.push((n * right, draws.iter().filter(|&&d| d > hi).count() as f64));
    // merge small edge bins inwards
    while bins.len() > 2 && bins[0].0 < 5.0 {
        let b = bins.remove(0);
        bins[0].0 += b.0;
        bins[0].1 += b.1;
    }
    while bins.len() > 2 && bins[bins.len() - 1].0 < 5.0 {
        let b = bins.pop().unwrap();
        let l = bins.len() - 1;
        bins[l].0 += b.0;
        bins[l].1 += b.1;
    }
    let stat: f64 = bins.iter().map(|(e, o)| (o - e) * (o - e) / e).sum();
    let df = (bins.len() - 1) as f64;
    let crit = ChiSquared::new(df).unwrap().inverse_cdf(1.0 - FALSE_ALARM);
    (stat, crit, bins.len())
}

fn dlap_pmf(b: f64) -> impl Fn(i64) -> f64 {
    let q = (-1.0 / b).exp();
    move |x: i64| (1.0 - q) / (1.0 + q) * q.powi(x.unsigned_abs() as i32)
}

fn dgauss_pmf(sigma: f64) -> impl Fn(i64) -> f64 {
    let w = move |x: i64| (-((x * x) as f64) / (2.0 * sigma * sigma)).exp();
    let lim = (sigma * 40.0).ceil() as i64 + 10;
    let norm: f64 = (-lim..=lim).map(w).sum();
    move |x: i64| w(x) / norm
}

fn check_laplace(scale: f64, n: usize, seed: u64) {
    let noise = Noise::new(Some(NoiseKind::DiscreteLaplace), Some(scale), 0).unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let draws: Vec<i64> = (0..n)
        .map(|_| as_i64(&noise.sample_discrete(&mut rng).unwrap()))
        .collect();
    let (stat, crit, bins) = chi_square(&draws, &dlap_pmf(scale));
    assert!(
        stat < crit,
        "discrete Laplace b = {scale}: χ² = {stat:.1} ≥ {crit:.1} ({bins} bins)"
    );
}

fn check_gaussian(sigma: f64, n: usize, seed: u64) {
    let noise = Noise::new(Some(NoiseKind::DiscreteGaussian), Some(sigma), 0).unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let draws: Vec<i64> = (0..n)
        .map(|_| as_i64(&noise.sample_discrete(&mut rng).unwrap()))
        .collect();
    let (stat, crit, bins) = chi_square(&draws, &dgauss_pmf(sigma));
    assert!(
        stat < crit,
        "discrete Gaussian σ = {sigma}: χ² = {stat:.1} ≥ {crit:.1} ({bins} bins)"
    );
}

const LAPLACE_SCALES: [f64; 5] = [0.75, 1.0, 3.5, 20.0, 250.0];
const GAUSS_SIGMAS: [f64; 5] = [0.8, 2.0, 12.0, 50.0, 60.0];

#[test]
fn discrete_laplace_fits_its_pmf() {
    for (i, b) in LAPLACE_SCALES.iter().enumerate() {
        check_laplace(*b, 20_000, 10 + i as u64);
    }
}

#[test]
fn discrete_gaussian_fits_its_pmf() {
    for (i, s) in GAUSS_SIGMAS.iter().enumerate() {
        check_gaussian(*s, 20_000, 20 + i as u64);
    }
}

#[test]
fn discrete_samplers_fit_their_pmf_million() {
    for (i, b) in LAPLACE_SCALES.iter().enumerate() {
        check_laplace(*b, 1_000_000, 100 + i as u64);
    }
    for (i, s) in GAUSS_SIGMAS.iter().enumerate() {
        check_gaussian(*s, 1_000_000, 200 + i as u64);
    }
}

/// The test must be able to fail: a sampler at the wrong scale is caught.
#[test]
fn the_test_detects_a_wrong_scale() {
    let noise = Noise::new(Some(NoiseKind::DiscreteLaplace), Some(3.0), 0).unwrap();
    let mut rng = SecureRng::from_seed_for_tests(7);
    let draws: Vec<i64> = (0..20_000)
        .map(|_| as_i64(&noise.sample_discrete(&mut rng).unwrap()))
        .collect();
    let (stat, crit, _) = chi_square(&draws, &dlap_pmf(3.5));
    assert!(stat > crit, "a 3.0 sampler passed as 3.5: χ² = {stat}");
    let noise = Noise::new(Some(NoiseKind::DiscreteGaussian), Some(11.0), 0).unwrap();
    let draws: Vec<i64> = (0..20_000)
        .map(|_| as_i64(&noise.sample_discrete(&mut rng).unwrap()))
        .collect();
    let (stat, crit, _) = chi_square(&draws, &dgauss_pmf(12.0));
    assert!(stat > crit, "an 11 sampler passed as 12: χ² = {stat}");
}

/// CDF of the continuous distribution of `kind` with scale b or σ.
fn cdf(kind: &str, scale: f64, x: f64) -> f64 {
    if kind == "laplace" {
        if x < 0.0 {
            0.5 * (x / scale).exp()
        } else {
            1.0 - 0.5 * (-x / scale).exp()
        }
    } else {
        use statrs::distribution::Normal;
        Normal::new(0.0, scale).unwrap().cdf(x)
    }
}

/// Chi-square test of continuous releases around `x`·2^k against the
/// continuous distribution: 40 equiprobable bins plus two tail bins of
/// probability 1e-3 each (the tails are where a wrong sampler would differ
/// from a truncated one).
fn check_continuous(kind: &str, scale: f64, x: i128, k: i32, n: usize, seed: u64) {
    let noise = Noise::new(
        Some(NoiseKind::from_name(kind).expect("a noise kind")),
        Some(scale),
        k,
    )
    .unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let centre = x as f64 * 2f64.powi(k);
    // bin edges by bisection on the CDF
    let quantile = |p: f64| -> f64 {
        let (mut lo, mut hi) = (-60.0 * scale, 60.0 * scale);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if cdf(kind, scale, mid) < p {
                lo = mid
            } else {
                hi = mid
            }
        }
        0.5 * (lo + hi)
    };
    let mut probs = vec![1e-3];
    probs.extend(std::iter::repeat_n((1.0 - 2e-3) / 40.0, 40));
    probs.push(1e-3);
    let mut acc = 0.0;
    let edges: Vec<f64> = probs[..probs.len() - 1]
        .iter()
        .map(|p| {
            acc += p;
            quantile(acc)
        })
        .collect();
    let mut counts = vec![0f64; probs.len()];
    for _ in 0..n {
        let y = noise.release(x, k, &mut rng) - centre;
        let b = edges.iter().position(|&e| y < e).unwrap_or(probs.len() - 1);
        counts[b] += 1.0;
    }
    let stat: f64 = counts
        .iter()
        .zip(&probs)
        .map(|(o, p)| {
            let e = p * n as f64;
            (o - e) * (o - e) / e
        })
        .sum();
    let crit = ChiSquared::new((probs.len() - 1) as f64)
        .unwrap()
        .inverse_cdf(1.0 - FALSE_ALARM);
    assert!(
        stat < crit,
        "{kind} {scale} around {centre}: χ² = {stat:.1} ≥ {crit:.1}"
    );
}

#[test]
fn continuous_noise_fits_the_continuous_distribution() {
    check_continuous("laplace", 250.0, 0, 0, 20_000, 31);
    check_continuous("laplace", 0.01, 3 << 40, -47, 20_000, 32);
    check_continuous("gaussian", 60.0, -17, 0, 20_000, 33);
    check_continuous("gaussian", 1500.0, 1 << 45, -30, 10_000, 34);
    check_continuous("gaussian", 1.0, 0, 0, 20_000, 35);
}

#[test]
fn continuous_noise_fits_the_continuous_distribution_million() {
    check_continuous("laplace", 250.0, 0, 0, 1_000_000, 41);
    check_continuous("gaussian", 60.0, 0, 0, 1_000_000, 42);
    check_continuous("gaussian", 1.0, 5, 0, 1_000_000, 43);
}

/// The test must be able to fail: the right sampler checked against the
/// wrong scale, and the other distribution of the same variance.
#[test]
fn the_continuous_test_detects_a_wrong_distribution() {
    // whether the mass below the level-q quantile of the claimed law is
    // off by more than 6 standard errors
    let run = |kind: &str, scale: f64, as_kind: &str, as_scale: f64, q: f64| {
        let noise = Noise::new(
            Some(NoiseKind::from_name(kind).expect("a noise kind")),
            Some(scale),
            0,
        )
        .unwrap();
        let mut rng = SecureRng::from_seed_for_tests(9);
        let m = 20_000;
        let below = (0..m)
            .filter(|_| cdf(as_kind, as_scale, noise.release(0, 0, &mut rng)) < q)
            .count();
        let p = below as f64 / m as f64;
        (p - q).abs() > 6.0 * (q * (1.0 - q) / m as f64).sqrt()
    };
    assert!(!run("gaussian", 10.0, "gaussian", 10.0, 0.05));
    assert!(run("gaussian", 10.0, "gaussian", 11.0, 0.05));
    // Laplace of variance 2b² = 100 is not a Gaussian of σ = 10: the tails
    // tell them apart
    assert!(!run(
        "laplace",
        50f64.sqrt(),
        "laplace",
        50f64.sqrt(),
        0.005
    ));
    assert!(run("laplace", 50f64.sqrt(), "gaussian", 10.0, 0.005));
}

/// Rounding to the nearest float, at the resolution of floats: around 1.0
/// with σ (or b) = 2^-52, the outputs are 1 + j·2^-52 above and 1 − i·2^-53
/// below (floats are twice as dense below 1). The probability of each is
/// the mass of its rounding cell, in units of the scale: [j − ½, j + ½] for
/// j ≥ 1, [−¼, ½] for 1.0 and [−i/2 − ¼, −i/2 + ¼] below. A sampler that
/// rounded on a coarser grid, or truncated instead of rounding, fails.
fn check_ulp_rounding(kind: &str, n: usize, seed: u64) {
    assert!(ulp_rounding_fits(kind, 2f64.powi(-52), n, seed));
}

/// Whether releases around 1.0 of a sampler of scale `actual` fit the
/// rounding cells of scale 2^-52.
fn ulp_rounding_fits(kind: &str, actual: f64, n: usize, seed: u64) -> bool {
    let noise = Noise::new(
        Some(NoiseKind::from_name(kind).expect("a noise kind")),
        Some(actual),
        0,
    )
    .unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    // cell index: j ≥ 0 above, −i below
    let mut observed: std::collections::BTreeMap<i64, f64> = Default::default();
    for _ in 0..n {
        let y = noise.release(1, 0, &mut rng);
        let c = if y >= 1.0 {
            ((y - 1.0) / 2f64.powi(-52)) as i64
        } else {
            -(((1.0 - y) / 2f64.powi(-53)) as i64)
        };
        // every output is a float on the expected lattice
        let back = if c >= 0 {
            1.0 + c as f64 * 2f64.powi(-52)
        } else {
            1.0 + c as f64 * 2f64.powi(-53)
        };
        assert_eq!(y, back, "{kind}: {y:e} is not on the lattice");
        *observed.entry(c).or_default() += 1.0;
    }
    let cell = |c: i64| -> (f64, f64) {
        if c > 0 {
            (c as f64 - 0.5, c as f64 + 0.5)
        } else if c == 0 {
            (-0.25, 0.5)
        } else {
            (c as f64 / 2.0 - 0.25, c as f64 / 2.0 + 0.25)
        }
    };
    let p = |c: i64| {
        let (a, b) = cell(c);
        cdf(kind, 1.0, b) - cdf(kind, 1.0, a)
    };
    // bins −40 ..= 20 cover all but ~1e-9 of the mass; the rest is one bin
    let mut bins: Vec<(f64, f64)> = (-40..=20)
        .map(|c| (p(c) * n as f64, observed.get(&c).copied().unwrap_or(0.0)))
        .collect();
    let rest_o: f64 = observed
        .iter()
        .filter(|(c, _)| !(-40..=20).contains(*c))
        .map(|(_, o)| o)
        .sum();
    if rest_o > 0.0 {
        return false;
    }
    bins.retain(|(e, _)| *e >= 5.0);
    let stat: f64 = bins.iter().map(|(e, o)| (o - e) * (o - e) / e).sum();
    let kept: f64 = bins.iter().map(|(e, _)| e).sum::<f64>() / n as f64;
    assert!(kept > 0.999, "{kind}: bins cover {kept}");
    let crit = ChiSquared::new(bins.len() as f64)
        .unwrap()
        .inverse_cdf(1.0 - FALSE_ALARM);
    stat < crit
}

#[test]
fn continuous_noise_rounds_to_the_nearest_float() {
    check_ulp_rounding("gaussian", 20_000, 71);
    check_ulp_rounding("laplace", 20_000, 72);
    // negative control: a scale off by 10 % does not fit the cells
    assert!(!ulp_rounding_fits(
        "gaussian",
        1.1 * 2f64.powi(-52),
        20_000,
        73
    ));
}

#[test]
fn continuous_noise_rounds_to_the_nearest_float_million() {
    check_ulp_rounding("gaussian", 1_000_000, 74);
    check_ulp_rounding("laplace", 1_000_000, 75);
}

/// Averaging r fresh releases divides the noise's variance by r.
fn variance_of_mean(kind: &str, scale: f64, k: i32, r: usize, m: usize, seed: u64) {
    let noise = Noise::new(
        Some(NoiseKind::from_name(kind).expect("a noise kind")),
        Some(scale),
        k,
    )
    .unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let means: Vec<f64> = (0..m)
        .map(|_| (0..r).map(|_| noise.release(0, k, &mut rng)).sum::<f64>() / r as f64)
        .collect();
    let mu = means.iter().sum::<f64>() / m as f64;
    let s2 = means.iter().map(|x| (x - mu) * (x - mu)).sum::<f64>() / (m - 1) as f64;
    let var = if kind.contains("laplace") {
        2.0 * scale * scale
    } else {
        scale * scale
    };
    let target = var / r as f64;
    // excess kurtosis of one draw: 3 (Laplace), 0 (Gaussian); of the mean: /r
    let kurt = if kind.contains("laplace") {
        3.0 / r as f64
    } else {
        0.0
    };
    let se = target * (2.0 / (m - 1) as f64 + kurt / m as f64).sqrt();
    assert!(
        (s2 - target).abs() < 6.0 * se,
        "{kind} {scale}: var of the mean of {r} = {s2:.3}, expected σ²/r = {target:.3} ± {:.3}",
        6.0 * se
    );
    assert!(
        mu.abs() < 6.0 * target.sqrt() / (m as f64).sqrt(),
        "{kind}: biased mean {mu}"
    );
}

#[test]
fn variance_of_the_mean_of_r_releases_is_sigma2_over_r() {
    variance_of_mean("gaussian", 8.0, -37, 10, 2_000, 51);
    variance_of_mean("discrete_gaussian", 8.0, 0, 10, 2_000, 52);
    variance_of_mean("laplace", 250.0, -33, 4, 2_000, 53);
}

#[test]
fn variance_of_the_mean_million() {
    variance_of_mean("gaussian", 8.0, -37, 10, 100_000, 61);
    variance_of_mean("discrete_laplace", 20.0, 0, 10, 100_000, 62);
}
