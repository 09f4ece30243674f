//! Goodness of fit of the exact samplers against their exact pmf.
//!
//! Chi-square tests with bins merged until every expected count is ≥ 5 and
//! a critical value at false-alarm rate 1e-6 (statrs), so a correct sampler
//! fails about once in a million runs and a wrong one (off by a scale
//! factor, a sign, a bias) fails every time. The always-on versions use
//! 20 000 draws per scale; the 10⁶-draw versions are `#[ignore]`d (run them
//! with `cargo test --release -- --ignored`).

use dashu_int::IBig;
use dpplan_runtime::rng::SecureRng;
use dpplan_runtime::sampler::{to_output, Noise};
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
    let noise = Noise::new("discrete_laplace", Some(scale), 0).unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let draws: Vec<i64> = (0..n).map(|_| as_i64(&noise.sample(&mut rng))).collect();
    let (stat, crit, bins) = chi_square(&draws, &dlap_pmf(scale));
    assert!(
        stat < crit,
        "discrete Laplace b = {scale}: χ² = {stat:.1} ≥ {crit:.1} ({bins} bins)"
    );
}

fn check_gaussian(sigma: f64, n: usize, seed: u64) {
    let noise = Noise::new("discrete_gaussian", Some(sigma), 0).unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let draws: Vec<i64> = (0..n).map(|_| as_i64(&noise.sample(&mut rng))).collect();
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
#[ignore = "10⁶ draws per scale: run under --release"]
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
    let noise = Noise::new("discrete_laplace", Some(3.0), 0).unwrap();
    let mut rng = SecureRng::from_seed_for_tests(7);
    let draws: Vec<i64> = (0..20_000)
        .map(|_| as_i64(&noise.sample(&mut rng)))
        .collect();
    let (stat, crit, _) = chi_square(&draws, &dlap_pmf(3.5));
    assert!(stat > crit, "a 3.0 sampler passed as 3.5: χ² = {stat}");
    let noise = Noise::new("discrete_gaussian", Some(11.0), 0).unwrap();
    let draws: Vec<i64> = (0..20_000)
        .map(|_| as_i64(&noise.sample(&mut rng)))
        .collect();
    let (stat, crit, _) = chi_square(&draws, &dgauss_pmf(12.0));
    assert!(stat > crit, "an 11 sampler passed as 12: χ² = {stat}");
}

/// Continuous Laplace on the grid 2^k: 20 equiprobable bins of the
/// continuous Laplace distribution.
fn check_grid(kind: &str, scale: f64, k: i32, n: usize, seed: u64) {
    let noise = Noise::new(kind, Some(scale), k).unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let bins = 20usize;
    // quantile function of the continuous distribution
    let quantile = |p: f64| -> f64 {
        if kind == "laplace" {
            if p < 0.5 {
                scale * (2.0 * p).ln()
            } else {
                -scale * (2.0 * (1.0 - p)).ln()
            }
        } else {
            use statrs::distribution::Normal;
            Normal::new(0.0, scale).unwrap().inverse_cdf(p)
        }
    };
    let edges: Vec<f64> = (1..bins)
        .map(|i| quantile(i as f64 / bins as f64))
        .collect();
    let mut counts = vec![0f64; bins];
    for _ in 0..n {
        let x = to_output(&noise.sample(&mut rng), k);
        let b = edges.iter().position(|&e| x < e).unwrap_or(bins - 1);
        counts[b] += 1.0;
    }
    let e = n as f64 / bins as f64;
    let stat: f64 = counts.iter().map(|o| (o - e) * (o - e) / e).sum();
    let crit = ChiSquared::new((bins - 1) as f64)
        .unwrap()
        .inverse_cdf(1.0 - FALSE_ALARM);
    assert!(
        stat < crit,
        "{kind} {scale} on 2^{k}: χ² = {stat:.1} ≥ {crit:.1}"
    );
}

#[test]
fn grid_noise_fits_the_continuous_distribution() {
    check_grid("laplace", 250.0, -33, 20_000, 31);
    check_grid("laplace", 0.01, -47, 20_000, 32);
    check_grid("gaussian", 60.0, -35, 20_000, 33);
    check_grid("gaussian", 1500.0, -30, 10_000, 34);
}

#[test]
#[ignore = "10⁶ draws: run under --release"]
fn grid_noise_fits_the_continuous_distribution_million() {
    check_grid("laplace", 250.0, -33, 1_000_000, 41);
    check_grid("gaussian", 60.0, -35, 1_000_000, 42);
}

/// Averaging r fresh releases divides the noise's variance by r.
fn variance_of_mean(kind: &str, scale: f64, k: i32, r: usize, m: usize, seed: u64) {
    let noise = Noise::new(kind, Some(scale), k).unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let means: Vec<f64> = (0..m)
        .map(|_| {
            (0..r)
                .map(|_| to_output(&noise.sample(&mut rng), k))
                .sum::<f64>()
                / r as f64
        })
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
#[ignore = "10⁶ draws: run under --release"]
fn variance_of_the_mean_million() {
    variance_of_mean("gaussian", 8.0, -37, 10, 100_000, 61);
    variance_of_mean("discrete_laplace", 20.0, 0, 10, 100_000, 62);
}
