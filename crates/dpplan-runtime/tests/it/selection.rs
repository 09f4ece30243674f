//! Histograms over keys from the data (partition selection) in the
//! runtime:
//!
//! * a key only one user has is never revealed — not in the results, not
//!   in the ledger's bytes — while keys far above τ always are (the
//!   negative control: the same runs do reveal keys, so the check can see
//!   one);
//! * released keys are sorted and every released value is above τ;
//! * the exact sampler's pass frequency for a key of count C against the
//!   bound the checker charges (10⁵ draws, Hoeffding at α = 10⁻⁹): never
//!   above it, and close to it (the bound is exact at the worst count);
//! * the Spark-like engines that cannot count keys refuse before a charge.

use std::io::Write;
use std::path::Path;

use dpplan_accounting::selection::key_pass_probability;
use dpplan_engine::rng::SecureRng;
use dpplan_engine::CsvEngine;
use dpplan_noise::Noise;
use dpplan_runtime::{run, RunOptions};
use dpplan_vocab::NoiseKind;

const PLAN: &str = r#"plan "keys" {
  privacy {
    unit user by uid
    adjacency add_remove
    budget epsilon 4 delta 1e-6
  }
  dataset d {
    source "d.csv"
    column uid : id
    column country : category
    contribution { rows_per_unit 4 groups_per_unit 2 rows_per_group 2 }
  }
  query h {
    histogram(d by country keys from data)
    noise laplace scale 2
    schedule once
  }
}
"#;

/// 300 users in `BIG` (2 visits each), 40 in `MID`, one in `LONELY-KEY`.
fn write_data(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("d.csv")).unwrap();
    writeln!(f, "uid,country").unwrap();
    for u in 0..300 {
        writeln!(f, "u{u},BIG\nu{u},BIG").unwrap();
    }
    for u in 300..340 {
        writeln!(f, "u{u},MID").unwrap();
    }
    writeln!(f, "lonely,LONELY-KEY\nlonely,LONELY-KEY").unwrap();
}

#[test]
fn a_key_one_user_has_is_never_revealed() {
    let plan = dpplan_compile::compile(PLAN).expect("compiles");
    let sel = plan.body.releases[0]
        .aggregation
        .selection
        .clone()
        .expect("a selection");
    // τ ≈ C + b·ln(1/(2p)): far above the lonely key's 2, below BIG's 600
    assert!(
        sel.threshold > 20.0 && sel.threshold < 60.0,
        "{}",
        sel.threshold
    );
    let dir = tempfile::tempdir().unwrap();
    write_data(dir.path());
    let mut mids = 0;
    for i in 0..60 {
        let ledger = dir.path().join(format!("l{i}.sqlite"));
        let opts = RunOptions {
            base_dir: Some(dir.path().to_path_buf()),
            ledger: ledger.clone(),
            ..Default::default()
        };
        let out = run(&plan, &opts, &CsvEngine).expect("runs");
        let cells = &out.results[0].cells;
        let keys: Vec<&str> = cells.iter().filter_map(|c| c.group.as_deref()).collect();
        // the control: a key far above τ is always there, with its count
        assert!(keys.contains(&"BIG"), "{keys:?}");
        mids += usize::from(keys.contains(&"MID"));
        assert!(!keys.contains(&"LONELY-KEY"));
        // sorted, and every value above τ
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        assert!(cells.iter().all(|c| c.value > sel.threshold));
        // nowhere in the ledger's bytes (nor in its anchor file)
        for path in [ledger.clone(), ledger.with_extension("sqlite.head")] {
            if let Ok(bytes) = std::fs::read(&path) {
                assert!(!contains(&bytes, b"LONELY-KEY"), "{}", path.display());
                assert!(contains(&bytes, b"BIG") || path != ledger);
            }
        }
    }
    // MID (count 40, τ ≈ 30–40) passes sometimes: the threshold is noisy
    assert!(mids > 0, "MID never passed");
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Hoeffding: |p̂ − p| ≤ √(ln(2/α)/(2n)) with probability ≥ 1 − α.
fn hoeffding(n: u64) -> f64 {
    ((2.0f64 / 1e-9).ln() / (2.0 * n as f64)).sqrt()
}

#[test]
fn the_exact_samplers_pass_a_key_of_count_c_as_charged() {
    let mut rng = SecureRng::from_seed_for_tests(16);
    let n = 100_000u64;
    let tol = hoeffding(n);
    // (kind, scale, τ, C): pass probabilities of a few percent
    let cases = [
        (NoiseKind::Laplace, 2.0, 7.5, 2i128),
        (NoiseKind::Gaussian, 3.0, 7.0, 2),
        (NoiseKind::DiscreteLaplace, 2.0, 7.5, 2),
        (NoiseKind::DiscreteGaussian, 3.0, 7.0, 2),
    ];
    for (kind, scale, tau, c) in cases {
        // the compiled plan's grid for a count: 0 for the discrete kinds
        let k = if kind.is_discrete() {
            0
        } else {
            dpplan_compile::grid_exponent(scale, None)
        };
        let noise = Noise::new(Some(kind), Some(scale), k).unwrap();
        let x = c << (-k);
        let passed = (0..n)
            .filter(|_| noise.release(x, k, &mut rng) > tau)
            .count() as f64
            / n as f64;
        let bound = key_pass_probability(kind, scale, tau, c as f64);
        assert!(passed <= bound + tol, "{kind:?}: {passed} > {bound}");
        if kind != NoiseKind::DiscreteGaussian {
            // exact at the worst count (the discrete Gaussian's is a bound)
            assert!(passed >= bound - tol, "{kind:?}: {passed} ≪ {bound}");
        }
    }
}

#[test]
fn a_plan_with_keys_from_data_refuses_an_upgrade() {
    let plan = dpplan_compile::compile(PLAN).expect("compiles");
    let dir = tempfile::tempdir().unwrap();
    write_data(dir.path());
    let ledger = dir.path().join("l.sqlite");
    let opts = RunOptions {
        base_dir: Some(dir.path().to_path_buf()),
        ledger: ledger.clone(),
        ..Default::default()
    };
    run(&plan, &opts, &CsvEngine).expect("runs");
    let other = PLAN.replace("scale 2", "scale 3");
    let plan2 = dpplan_compile::compile(&other).expect("compiles");
    let opts2 = RunOptions {
        upgrade: true,
        ..opts
    };
    let err = run(&plan2, &opts2, &CsvEngine).expect_err("refused");
    assert!(err.to_string().contains("keys from the data"), "{err}");
}
