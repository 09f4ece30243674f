//! Top-k through the runtime's release path (`dpplan_runtime::draw`, the
//! path `dpplan run` and `dpplan audit` take), against the exact law of
//! peeling computed here from the counts: the ordered pair of keys of a
//! top-2 over 4 cells fits it (χ² at 2·10⁵ draws) with weights exp(c/b)
//! under add/remove and exp(c/(2b)) under replace; each rule's draws are
//! rejected by the other's law (negative controls); and the example's
//! published cells are the chosen keys with their ranks, no count.

use std::collections::BTreeMap;

use dpplan_engine::rng::SecureRng;
use dpplan_plan::Release;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// A compiled top-2 over the 4 cells of `page`, at scale `b`.
fn release(adjacency: &str, b: f64) -> Release {
    let text = format!(
        r#"plan "t" {{
  privacy {{ unit row adjacency {adjacency} budget epsilon 10 }}
  dataset d {{ column page : category {{ "a", "b", "c", "d" }} }}
  query t {{
    top(d by page, 2)
    noise exponential scale {b}
    schedule once
  }}
}}"#
    );
    let plan = dpplan_compile::compile(&text).unwrap_or_else(|e| panic!("{e}"));
    plan.body.releases[0].clone()
}

/// P(first = i, second = j) of peeling `counts` with weights exp(c/t).
fn law(counts: &[i128], t: f64) -> Vec<f64> {
    let w: Vec<f64> = counts.iter().map(|&c| (c as f64 / t).exp()).collect();
    let z: f64 = w.iter().sum();
    let mut p = Vec::new();
    for i in 0..4 {
        for j in 0..4 {
            if i != j {
                p.push(w[i] / z * w[j] / (z - w[i]));
            }
        }
    }
    p
}

/// Frequencies of the ordered pairs, in `law`'s order.
fn frequencies(r: &Release, counts: &[i128], n: usize, seed: u64) -> Vec<u64> {
    let exact: BTreeMap<(String, usize), Vec<i128>> = (0..r.parts.len())
        .map(|pi| ((r.name.clone(), pi), counts.to_vec()))
        .collect();
    let labels = ["a", "b", "c", "d"];
    let index = |c: &dpplan_runtime::Cell| {
        labels
            .iter()
            .position(|l| c.group.as_deref() == Some(l))
            .unwrap()
    };
    let mut rng = SecureRng::from_seed_for_tests(seed);
    let mut freq = vec![0u64; 12];
    for _ in 0..n {
        let out = dpplan_runtime::draw(r, 0, &exact, &mut rng).unwrap();
        assert_eq!(out.cells.len(), 2);
        assert_eq!((out.cells[0].value, out.cells[1].value), (1.0, 2.0));
        assert!(out
            .cells
            .iter()
            .all(|c| c.noise_std.is_none() && c.ci95_low.is_none()));
        let (i, j) = (index(&out.cells[0]), index(&out.cells[1]));
        assert_ne!(i, j, "a key is chosen once");
        freq[i * 3 + if j > i { j - 1 } else { j }] += 1;
    }
    freq
}

/// χ² of `freq` against `probs` and its critical value at 10⁻⁶.
fn chi_square(freq: &[u64], probs: &[f64]) -> (f64, f64) {
    let n: u64 = freq.iter().sum();
    let stat = freq
        .iter()
        .zip(probs)
        .map(|(&o, &p)| (o as f64 - p * n as f64).powi(2) / (p * n as f64))
        .sum();
    let crit = ChiSquared::new((freq.len() - 1) as f64)
        .unwrap()
        .inverse_cdf(1.0 - 1e-6);
    (stat, crit)
}

#[test]
fn peeling_draws_fit_the_exact_law_of_each_adjacency() {
    let counts = [6i128, 5, 3, 0];
    let b = 2.0;
    for (adjacency, t, other) in [("add_remove", b, 2.0 * b), ("replace", 2.0 * b, b)] {
        let r = release(adjacency, b);
        assert_eq!(
            r.aggregation.top.unwrap().monotone,
            adjacency == "add_remove"
        );
        assert_eq!(r.parts[0].scale, Some(b));
        let freq = frequencies(&r, &counts, 200_000, 7);
        let (stat, crit) = chi_square(&freq, &law(&counts, t));
        assert!(stat < crit, "{adjacency}: χ² {stat} ≥ {crit}");
        // negative control: the other rule's law is rejected
        let (wrong, crit) = chi_square(&freq, &law(&counts, other));
        assert!(wrong > crit, "{adjacency}: χ² {wrong} ≤ {crit}");
    }
}

#[test]
fn the_example_publishes_keys_and_ranks_and_no_count() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/news-sections");
    let text = std::fs::read_to_string(root.join("news-sections.dpplan")).unwrap();
    let json = dpplan_plan::to_json(&dpplan_compile::compile(&text).unwrap());
    let plan = dpplan_compile::load(&json).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let opts = dpplan_runtime::RunOptions {
        base_dir: Some(root.clone()),
        ledger: dir.path().join("l.sqlite"),
        queries: vec!["top_sections_by_readers".into()],
        ..Default::default()
    };
    let out = dpplan_runtime::run(&plan, &opts, &dpplan_engine::CsvEngine).unwrap();
    let r = &out.results[0];
    let keys: Vec<&str> = r
        .cells
        .iter()
        .map(|c| c.group.as_deref().unwrap())
        .collect();
    let ranks: Vec<f64> = r.cells.iter().map(|c| c.value).collect();
    assert_eq!(ranks, [1.0, 2.0, 3.0]);
    // readers per section in the data: politics 1,663, sport 920, business
    // 669, culture 523 (bounded to 3 sections a reader: fewer); at b = 5
    // with exp(c/b) a swap across gaps of ~150 readers has probability
    // below e^−30: the ranking is the data's
    assert_eq!(keys, ["politics", "sport", "business"]);
    assert!(
        r.mechanism.contains("top-k exponential ∝ exp(count/b) b=5"),
        "{}",
        r.mechanism
    );
}

/// examples/news-sections' `most_read_section`: one selection by
/// permute-and-flip on the bounded reads, the key and its rank, no count,
/// and the release's mechanism in permute-and-flip's words; and through
/// the release path, on counts with a clear leader, the leader at every
/// draw, on equal counts every key in turn (a uniform order).
#[test]
fn permute_and_flip_publishes_the_leading_key() {
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/news-sections");
    let text = std::fs::read_to_string(root.join("news-sections.dpplan")).unwrap();
    let plan = dpplan_compile::compile(&text).unwrap();
    let json = dpplan_plan::to_json(&plan);
    let plan = dpplan_compile::load(&json).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let opts = dpplan_runtime::RunOptions {
        base_dir: Some(root.clone()),
        ledger: dir.path().join("l.sqlite"),
        queries: vec!["most_read_section".into()],
        ..Default::default()
    };
    let out = dpplan_runtime::run(&plan, &opts, &dpplan_engine::CsvEngine).unwrap();
    let r = &out.results[0];
    assert_eq!(r.cells.len(), 1);
    // politics leads sport by hundreds of bounded reads; b = 20 keeps
    // another section with probability below e^−10 per visit
    assert_eq!(r.cells[0].group.as_deref(), Some("politics"));
    assert_eq!(r.cells[0].value, 1.0);
    assert!(r.cells[0].noise_std.is_none());
    assert!(
        r.mechanism
            .contains("top-k permute_and_flip keeps exp(−(best − count)/b) b=20"),
        "{}",
        r.mechanism
    );
    let release = plan
        .body
        .releases
        .iter()
        .find(|r| r.name == "most_read_section")
        .unwrap();
    let mut rng = SecureRng::from_seed_for_tests(77);
    let lead = exact_on_grids(release, &[900, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10]);
    for _ in 0..50 {
        let out = dpplan_runtime::draw(release, 0, &lead, &mut rng).unwrap();
        assert_eq!(out.cells[0].group.as_deref(), Some("politics"));
    }
    // equal counts: every section is kept at its visit, so the first of a
    // uniform order wins: each of the 12 about 1/12 of 6,000 draws
    let even = exact_on_grids(release, &[5; 12]);
    let mut seen = BTreeMap::new();
    for _ in 0..6000 {
        let out = dpplan_runtime::draw(release, 0, &even, &mut rng).unwrap();
        *seen
            .entry(out.cells[0].group.clone().unwrap())
            .or_insert(0u32) += 1;
    }
    assert_eq!(seen.len(), 12, "{seen:?}");
    // 500 expected each; 6 sd ≈ 130
    assert!(seen.values().all(|&n| (370..=630).contains(&n)), "{seen:?}");
}

/// The exact aggregates of every part of `r` for these counts per cell,
/// each in units of 2^grid of its part (as the engine returns a statistic
/// computed on its part's grid).
fn exact_on_grids(r: &Release, counts: &[i128]) -> BTreeMap<(String, usize), Vec<i128>> {
    let asked = dpplan_runtime::requests::release_statistics(r)
        .unwrap()
        .len();
    r.parts
        .iter()
        .take(asked)
        .enumerate()
        .map(|(pi, p)| {
            let shift = (-p.grid_exponent).max(0);
            (
                (r.name.clone(), pi),
                counts.iter().map(|&c| c << shift).collect(),
            )
        })
        .collect()
}

/// A histogram with its total through the release path: the published
/// cells and total are the estimator applied to the released (raw)
/// values and the parts' noise variances — recomputed here from
/// `raw_value` — with the closed-form figures after it; the total's raw
/// value is the released total (not the sum of the raw cells); Laplace
/// intervals are marked approximate, Gaussian ones not. Negative control:
/// without `consistent` the values are published as released.
#[test]
fn a_consistent_histogram_publishes_the_estimator_of_its_released_values() {
    use dpplan_mechanisms::consistency;
    let compile = |noise: &str, steps: &str| {
        let text = format!(
            r#"plan "t" {{
  privacy {{ unit row adjacency add_remove budget epsilon 10 delta 1e-6 }}
  dataset d {{ column page : category {{ "a", "b", "c", "d" }} }}
  query t {{
    histogram(d by page) with total
    noise {noise}
    {steps}
    schedule once
  }}
}}"#
        );
        dpplan_compile::compile(&text).unwrap_or_else(|e| panic!("{e}"))
    };
    let counts = vec![10i128, 20, 30, 40];
    for (noise, gaussian) in [("laplace scale 3", false), ("gaussian sigma 3", true)] {
        let plan = compile(noise, "postprocess consistent");
        let r = &plan.body.releases[0];
        assert!(r.aggregation.total);
        let exact = exact_on_grids(r, &counts);
        let mut rng = SecureRng::from_seed_for_tests(50);
        let out = dpplan_runtime::draw(r, 0, &exact, &mut rng).unwrap();
        assert_eq!(out.cells.len(), 5);
        assert_eq!(out.approximate_interval, !gaussian, "{noise}");
        let (cells, total) = out.cells.split_at(4);
        let total = &total[0];
        assert!(total.group.is_none());
        let raw: Vec<f64> = cells.iter().map(|c| c.raw_value.unwrap()).collect();
        let raw_total = total.raw_value.unwrap();
        assert_ne!(raw.iter().sum::<f64>(), raw_total, "independent noises");
        let (sh, st) = (r.parts[0].noise_std, r.parts[1].noise_std);
        let (want, want_total) = consistency::consistent(&raw, sh * sh, raw_total, st * st);
        let got: Vec<f64> = cells.iter().map(|c| c.value).collect();
        assert_eq!(got, want, "{noise}");
        assert_eq!(total.value, want_total);
        let (ah, at) = consistency::after(sh, st, 4);
        assert!(cells.iter().all(|c| c.noise_std == Some(ah)), "{cells:?}");
        assert_eq!(total.noise_std, Some(at));
        assert!(ah < sh && at < st);
        // the released values are near the truth: the total near 100
        assert!((raw_total - 100.0).abs() < 60.0, "{raw_total}");
    }
    // negative control: the same release without `consistent`
    let plan = compile("laplace scale 3", "");
    let r = &plan.body.releases[0];
    let exact = exact_on_grids(r, &counts);
    let mut rng = SecureRng::from_seed_for_tests(50);
    let out = dpplan_runtime::draw(r, 0, &exact, &mut rng).unwrap();
    assert!(out.cells.iter().all(|c| c.raw_value.is_none()));
    assert!(!out.approximate_interval);
    let sum: f64 = out.cells[..4].iter().map(|c| c.value).sum();
    assert_ne!(sum, out.cells[4].value);
}
