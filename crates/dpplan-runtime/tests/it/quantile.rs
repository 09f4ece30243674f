//! The exponential mechanism of quantiles against independent references:
//!
//! * its pure ε by direct ratio computation: every small data set and each
//!   of its neighbours (add/remove or replace one unit of up to
//!   rows_per_unit rows; data sets of up to 6 rows), the exact output probabilities computed here from
//!   the raw values (not the runtime's bins), the largest log-ratio ≤ the ε
//!   the compiled plan claims; negative control: the sensitivity halved
//!   (b halved) and some ratio exceeds e^ε;
//! * the runtime's gaps give the same probabilities as this reference;
//! * goodness of fit of the exact sampler (χ² at 10⁶ draws), with a wrong
//!   scale as negative control;
//! * permute-and-flip's exact sampler on the same gaps against its output
//!   probabilities computed over every order of the candidates (χ² at 10⁶
//!   draws), with the exponential mechanism's probabilities as negative
//!   control;
//! * an empirical privacy test: on two neighbouring data sets, the observed
//!   frequency of each output at 10⁶ draws stays within e^ε of the other's
//!   (5-σ confidence bounds); the same test fails with b halved.

use std::collections::BTreeMap;

use dashu_int::UBig;
use dpplan_engine::rng::SecureRng;
use dpplan_noise::exponential::{scaled_scores, ExponentialMechanism};
use dpplan_runtime::quantile::grid_key;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The compiled plan's (Δ, b) for one quantile query.
fn compiled(user: bool, adjacency: &str, level: f64, candidates: &[f64], eps: f64) -> (f64, f64) {
    let unit = if user { "user by id" } else { "row" };
    let contribution = if user {
        "column id : id\n contribution { rows_per_unit 2 }"
    } else {
        ""
    };
    let grid: Vec<String> = candidates.iter().map(|c| c.to_string()).collect();
    let text = format!(
        "plan \"q\" {{\n privacy {{ unit {unit} adjacency {adjacency} budget epsilon 10 }}\n dataset d {{ {contribution}\n column x : float in [0, 3] }}\n query m {{ quantile(d.x, {level}) candidates [{}] noise exponential epsilon {eps} schedule once }}\n}}\n",
        grid.join(", ")
    );
    let plan = dpplan_compile::compile(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let part = &plan.body.releases[0].parts[0];
    (part.l1, part.scale.expect("a scale"))
}

/// ln P(candidate j | data) for every j: from the raw values.
fn log_probs(data: &[f64], level: f64, candidates: &[f64], b: f64) -> Vec<f64> {
    let n = data.len() as f64;
    let logits: Vec<f64> = candidates
        .iter()
        .map(|&c| {
            let below = data.iter().filter(|&&x| x < c).count() as f64;
            -(below - level * n).abs() / (2.0 * b)
        })
        .collect();
    let top = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let z = logits.iter().map(|l| (l - top).exp()).sum::<f64>().ln() + top;
    logits.iter().map(|l| l - z).collect()
}

/// Every multiset of `size` values from `domain`.
fn multisets(domain: &[f64], size: usize) -> Vec<Vec<f64>> {
    if size == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for (i, &v) in domain.iter().enumerate() {
        for mut rest in multisets(&domain[i..], size - 1) {
            rest.push(v);
            out.push(rest);
        }
    }
    out
}

/// The largest |ln P(j|D) − ln P(j|D')| over every data set of at most
/// `max_rows` rows and its neighbours by one unit of up to `unit_rows`
/// rows (`replace`: the unit's rows swapped for up to `unit_rows` others).
fn max_log_ratio(replace: bool, unit_rows: usize, level: f64, candidates: &[f64], b: f64) -> f64 {
    worst_pair(replace, unit_rows, level, candidates, b).0
}

/// [`max_log_ratio`] and the neighbours that reach it.
fn worst_pair(
    replace: bool,
    unit_rows: usize,
    level: f64,
    candidates: &[f64],
    b: f64,
) -> (f64, Vec<f64>, Vec<f64>) {
    let domain = [0.0, 1.0, 1.5, 2.0, 3.0];
    let units: Vec<Vec<f64>> = (0..=unit_rows)
        .flat_map(|k| multisets(&domain, k))
        .collect();
    let mut worst = (0.0f64, vec![], vec![]);
    for size in 0..=6 {
        for base in multisets(&domain, size) {
            let pairs: Vec<(Vec<f64>, Vec<f64>)> = if replace {
                units
                    .iter()
                    .flat_map(|u| units.iter().map(move |v| (u.clone(), v.clone())))
                    .collect()
            } else {
                units.iter().map(|u| (u.clone(), vec![])).collect()
            };
            for (u, v) in pairs {
                let d: Vec<f64> = base.iter().chain(&u).copied().collect();
                let e: Vec<f64> = base.iter().chain(&v).copied().collect();
                if d.is_empty() || e.is_empty() {
                    continue;
                }
                let (p, q) = (
                    log_probs(&d, level, candidates, b),
                    log_probs(&e, level, candidates, b),
                );
                for (a, c) in p.iter().zip(&q) {
                    if (a - c).abs() > worst.0 {
                        worst = ((a - c).abs(), d.clone(), e.clone());
                    }
                }
            }
        }
    }
    worst
}

const GRIDS: [&[f64]; 2] = [&[1.0, 2.0], &[0.5, 1.0, 1.5, 2.5]];

#[test]
fn the_claimed_epsilon_bounds_every_ratio_on_small_candidate_sets() {
    let eps = 0.7;
    for user in [false, true] {
        for adjacency in ["add_remove", "replace"] {
            for level in [0.5, 0.25, 0.9] {
                for grid in GRIDS {
                    let (delta, b) = compiled(user, adjacency, level, grid, eps);
                    let claimed = delta / b;
                    assert!((claimed - eps).abs() < 1e-9, "ε = Δ/b = {claimed}");
                    let rows = if user { 2 } else { 1 };
                    let replace = adjacency == "replace";
                    let worst = max_log_ratio(replace, rows, level, grid, b);
                    let case = format!("user {user}, {adjacency}, q {level}, grid {grid:?}");
                    assert!(
                        worst <= claimed * (1.0 + 1e-12),
                        "{case}: ln ratio {worst} > ε {claimed}"
                    );
                    // negative control: the sensitivity halved, b halved
                    let loose = max_log_ratio(replace, rows, level, grid, b / 2.0);
                    assert!(
                        loose > claimed,
                        "{case}: halved Δ still gives {loose} ≤ ε {claimed}"
                    );
                }
            }
        }
    }
}

fn big(x: &UBig) -> f64 {
    x.to_string().parse().expect("an integer")
}

/// The rows of `data` per bin of the candidate grid, as the engine counts
/// them.
fn bins_of(data: &[f64], candidates: &[f64]) -> Vec<i128> {
    let key = grid_key("x", candidates);
    let mut bins = vec![0i128; candidates.len() + 1];
    for &x in data {
        bins[key.bin(x).expect("clamped")] += 1;
    }
    bins
}

/// The runtime's bins and gaps give the reference's probabilities.
fn runtime_probs(data: &[f64], level: f64, candidates: &[f64], b: f64) -> Vec<f64> {
    let bins = bins_of(data, candidates);
    let (scores, unit) = scaled_scores(&bins, level).unwrap();
    let em = ExponentialMechanism::new(&scores, &unit, b).unwrap();
    let w: Vec<f64> = (0..em.len())
        .map(|j| {
            let (num, den) = em.gap(j);
            (-(big(num) / big(den))).exp()
        })
        .collect();
    let z: f64 = w.iter().sum();
    w.iter().map(|x| x / z).collect()
}

#[test]
fn the_runtime_scores_match_the_reference() {
    let data = [0.0, 0.0, 1.0, 1.5, 2.0, 2.0, 2.0, 3.0, 9.0, -4.0];
    for level in [0.1, 0.5, 0.75] {
        for grid in GRIDS {
            for b in [0.3, 1.0, 4.0] {
                let got = runtime_probs(&data, level, grid, b);
                let want: Vec<f64> = log_probs(&data, level, grid, b)
                    .iter()
                    .map(|l| l.exp())
                    .collect();
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() < 1e-12,
                        "q {level} b {b}: {got:?} vs {want:?}"
                    );
                }
            }
        }
        // negative control: another level gives other probabilities
        let a = runtime_probs(&data, level, GRIDS[1], 1.0);
        let b = runtime_probs(&data, 1.0 - level / 2.0, GRIDS[1], 1.0);
        assert!(a.iter().zip(&b).any(|(x, y)| (x - y).abs() > 1e-3));
    }
}

/// Draws of the runtime's sampler on `bins` at `level` with scale `b`.
fn draws(bins: &[i128], level: f64, b: f64, n: usize, seed: u64) -> Vec<u64> {
    let (scores, unit) = scaled_scores(bins, level).unwrap();
    let em = ExponentialMechanism::new(&scores, &unit, b).unwrap();
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let mut counts = vec![0u64; em.len()];
    for _ in 0..n {
        counts[em.sample(&mut rng)] += 1;
    }
    counts
}

/// χ² of `counts` against `probs` and its critical value at 10⁻⁶.
fn chi_square(counts: &[u64], probs: &[f64]) -> (f64, f64) {
    let n: u64 = counts.iter().sum();
    let stat = counts
        .iter()
        .zip(probs)
        .map(|(&o, &p)| {
            let e = p * n as f64;
            (o as f64 - e).powi(2) / e
        })
        .sum();
    let crit = ChiSquared::new((counts.len() - 1) as f64)
        .unwrap()
        .inverse_cdf(1.0 - 1e-6);
    (stat, crit)
}

#[test]
fn the_exact_sampler_fits_the_exponential_mechanism_million() {
    // 40 values on a 6-candidate grid; expected probabilities from the
    // reference (every one large enough for χ²)
    let grid = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let data: Vec<f64> = (0..40).map(|i| (i % 7) as f64 * 0.8).collect();
    let bins = bins_of(&data, &grid);
    for (level, b, seed) in [(0.5, 2.0, 1u64), (0.3, 5.0, 2), (0.9, 3.7, 3)] {
        let probs: Vec<f64> = log_probs(&data, level, &grid, b)
            .iter()
            .map(|l| l.exp())
            .collect();
        let counts = draws(&bins, level, b, 1_000_000, seed);
        let (stat, crit) = chi_square(&counts, &probs);
        assert!(
            stat < crit,
            "q {level} b {b}: χ² {stat} ≥ {crit} ({counts:?} vs {probs:?})"
        );
        // negative control: the draws of another scale do not fit
        let wrong = draws(&bins, level, b * 1.1, 1_000_000, seed + 10);
        let (stat, crit) = chi_square(&wrong, &probs);
        assert!(
            stat > crit,
            "q {level}: the scale ×1.1 still fits (χ² {stat})"
        );
    }
}

/// Permute-and-flip's output probabilities for keep probabilities `keep`:
/// over every order of the candidates, the first one kept.
fn pf_probs(keep: &[f64]) -> Vec<f64> {
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
    let all = orders(keep.len());
    let mut p = vec![0.0; keep.len()];
    for o in &all {
        let mut reach = 1.0;
        for &j in o {
            p[j] += reach * keep[j] / all.len() as f64;
            reach *= 1.0 - keep[j];
        }
    }
    p
}

#[test]
fn the_exact_sampler_fits_permute_and_flip_million() {
    let grid = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let data: Vec<f64> = (0..40).map(|i| (i % 7) as f64 * 0.8).collect();
    let bins = bins_of(&data, &grid);
    for (level, b, seed) in [(0.5, 2.0, 21u64), (0.3, 5.0, 22), (0.9, 3.7, 23)] {
        let (scores, unit) = scaled_scores(&bins, level).unwrap();
        let em = ExponentialMechanism::new(&scores, &unit, b).unwrap();
        let keep: Vec<f64> = (0..em.len())
            .map(|j| {
                let (num, den) = em.gap(j);
                (-(big(num) / big(den))).exp()
            })
            .collect();
        let probs = pf_probs(&keep);
        assert!((probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        let mut rng = SecureRng::from_seed_for_tests(seed);
        let mut counts = vec![0u64; em.len()];
        for _ in 0..1_000_000 {
            counts[em.sample_permute_and_flip(&mut rng)] += 1;
        }
        let (stat, crit) = chi_square(&counts, &probs);
        assert!(
            stat < crit,
            "q {level} b {b}: χ² {stat} ≥ {crit} ({counts:?} vs {probs:?})"
        );
        // never less likely than the exponential mechanism to choose the
        // best candidate (McKenna & Sheldon 2020, Thm 2)
        let em_probs = runtime_probs(&data, level, &grid, b);
        let best = (0..keep.len()).find(|&j| keep[j] == 1.0).unwrap();
        assert!(
            probs[best] >= em_probs[best] - 1e-12,
            "{probs:?} vs {em_probs:?}"
        );
        // negative control: the draws do not fit the exponential mechanism
        let (stat, crit) = chi_square(&counts, &em_probs);
        assert!(
            stat > crit,
            "q {level}: permute-and-flip fits the exponential mechanism (χ² {stat})"
        );
    }
}

/// Whether, on `d` and its neighbour `e` (as bins), each output's
/// frequency at `n` draws is within e^ε of the other's, up to 5-σ
/// confidence bounds: lower(p_j(d)) ≤ e^ε·upper(p_j(e)) both ways.
fn empirically_private(d: &[i128], e: &[i128], level: f64, b: f64, eps: f64, n: usize) -> bool {
    let (p, q) = (draws(d, level, b, n, 71), draws(e, level, b, n, 72));
    let bound = |c: u64, sign: f64| {
        let f = c as f64 / n as f64;
        (f + sign * 5.0 * (f * (1.0 - f) / n as f64).sqrt()).max(0.0)
    };
    p.iter().zip(&q).all(|(&x, &y)| {
        bound(x, -1.0) <= eps.exp() * bound(y, 1.0) && bound(y, -1.0) <= eps.exp() * bound(x, 1.0)
    })
}

#[test]
fn neighbouring_data_sets_stay_within_e_to_the_epsilon_million() {
    // row-level add/remove at the median: Δ = ½; the worst neighbours of
    // the exact search above
    let grid = [1.0, 2.0];
    let (delta, b) = compiled(false, "add_remove", 0.5, &grid, 1.0);
    let eps = delta / b;
    let (_, d_rows, e_rows) = worst_pair(false, 1, 0.5, &grid, b);
    let bins = |data: &[f64]| {
        let key = grid_key("x", &grid);
        let mut out = BTreeMap::new();
        for &x in data {
            *out.entry(key.bin(x).unwrap()).or_insert(0i128) += 1;
        }
        (0..=grid.len())
            .map(|i| out.get(&i).copied().unwrap_or(0))
            .collect::<Vec<_>>()
    };
    let (d, e) = (bins(&d_rows), bins(&e_rows));
    // the exact ratio here is close to e^ε
    let (p, q) = (
        log_probs(&d_rows, 0.5, &grid, b),
        log_probs(&e_rows, 0.5, &grid, b),
    );
    let exact = p
        .iter()
        .zip(&q)
        .map(|(a, c)| (a - c).abs())
        .fold(0.0, f64::max);
    assert!(
        exact > 0.5 * eps && exact <= eps,
        "exact ln ratio {exact}, ε {eps}"
    );
    assert!(empirically_private(&d, &e, 0.5, b, eps, 1_000_000));
    // negative control: b halved (the sensitivity halved) is detected
    assert!(!empirically_private(&d, &e, 0.5, b / 2.0, eps, 1_000_000));
}

/// The exact level-`q` quantile of `values` (the smallest x with at least
/// ⌈q·n⌉ values ≤ x).
fn exact_quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let k = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[k - 1]
}

/// On the shipped example (examples/trip-fares): the runtime's bounded
/// bins, 20,000 selections per level, the observed rank error against the
/// stated 95 % bound, and the value error against the exact quantile of
/// the file's valid fares (run with `--nocapture` to see the figures that
/// docs/language.md quotes).
#[test]
fn the_shipped_example_stays_within_its_rank_error_bound() {
    use dpplan_engine::{CsvEngine, Engine, StatKind, Statistic};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/trip-fares");
    let text = std::fs::read_to_string(format!("{dir}/trip-fares.dpplan")).unwrap();
    let plan = dpplan_compile::compile(&text).unwrap();
    let csv = format!("{dir}/data/trips.csv");
    let mut fares: Vec<f64> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(1)?.parse::<f64>().ok())
        .filter(|x| x.is_finite())
        .map(|x| x.clamp(0.0, 80.0))
        .collect();
    let mut rng = SecureRng::from_seed_for_tests(16);
    for r in &plan.body.releases {
        let grid = r.aggregation.quantile.as_ref().unwrap();
        let stat = Statistic {
            kind: StatKind::Cells {
                keys: vec![grid_key("fare", &grid.candidates)],
                column: None,
            },
            grid: 0,
        };
        let ds = &plan.body.datasets["trips"];
        let bins = CsvEngine
            .aggregate(ds, csv.as_ref(), &[stat], &mut rng)
            .unwrap()
            .remove(0);
        for (p, &level) in r.parts.iter().zip(&grid.levels) {
            let (scores, unit) = scaled_scores(&bins, level).unwrap();
            let em = ExponentialMechanism::new(&scores, &unit, p.scale.unwrap()).unwrap();
            let best = scores.iter().max().unwrap().clone();
            let truth = exact_quantile(&mut fares, level);
            let (mut ranks, mut values) = (Vec::new(), Vec::new());
            for _ in 0..20_000 {
                let j = em.sample(&mut rng);
                let gap = big(&UBig::try_from(&best - &scores[j]).unwrap()) / big(&unit);
                ranks.push(gap);
                values.push((grid.candidates[j] - truth).abs());
            }
            let p95 = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() * 95 / 100]
            };
            let (rank95, value95) = (p95(&mut ranks), p95(&mut values));
            println!(
                "{} q={level}: rank error at 95 % observed {rank95:.1} (bound {:.1}); value error |c − {truth}| median {:.2}, 95 % {value95:.2}",
                r.name,
                p.ci95_half_width,
                values[values.len() / 2]
            );
            assert!(
                rank95 <= p.ci95_half_width,
                "{rank95} > {}",
                p.ci95_half_width
            );
        }
    }
}
