//! `sample units q`: each unit, with all its rows, is kept independently
//! with probability q, afresh on every engine pass, on one thread and on
//! several alike.

use std::num::NonZeroUsize;

use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, StatKind, Statistic};

/// 2,000 users with 3 rows each, sampled at `rate`.
fn dataset(rate: &str) -> (dpplan_plan::Dataset, Vec<u8>) {
    let src = format!(
        "plan \"s\" {{\n  privacy {{\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 100 delta 1e-6\n  }}\n  dataset d {{\n    source \"d.csv\"\n    sample units {rate}\n    column uid : id\n    contribution {{ rows_per_unit 3 }}\n  }}\n  query n {{\n    count(d)\n    noise gaussian sigma 10\n    schedule once\n  }}\n}}\n"
    );
    let plan = dpplan_compile::compile(&src).unwrap_or_else(|e| panic!("{e}"));
    let mut csv = b"uid\n".to_vec();
    for u in 0..2000 {
        for _ in 0..3 {
            csv.extend_from_slice(format!("u{u}\n").as_bytes());
        }
    }
    (plan.body.datasets["d"].clone(), csv)
}

fn counts(rate: &str, threads: usize, passes: u64) -> Vec<f64> {
    let (ds, csv) = dataset(rate);
    let stats = [Statistic {
        kind: StatKind::Count,
        grid: 0,
    }];
    let engine = CsvEngine::default().threads(NonZeroUsize::new(threads).unwrap());
    (0..passes)
        .map(|seed| {
            let mut rng = SecureRng::from_seed_for_tests(1000 + seed);
            let v = engine
                .aggregate_reader(&ds, &csv[..], &stats, &mut rng)
                .unwrap()[0][0];
            // a unit's rows are kept or left out together
            assert_eq!(v % 3, 0, "{v}");
            (v / 3) as f64
        })
        .collect()
}

/// The units kept per pass follow Binomial(2000, q): their mean and
/// variance over 300 passes (independent samples) are the binomial's.
#[test]
fn each_pass_keeps_each_unit_with_probability_q() {
    for threads in [1, 2] {
        let c = counts("10%", threads, 300);
        let n = c.len() as f64;
        let mean = c.iter().sum::<f64>() / n;
        let var = c.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        // Binomial(2000, 0.1): mean 200, variance 180; the mean of 300
        // passes has sd 0.77, the sample variance sd ≈ 14.7
        assert!(
            (mean - 200.0).abs() < 4.0,
            "{threads} thread(s): mean {mean}"
        );
        assert!(
            (110.0..260.0).contains(&var),
            "{threads} thread(s): var {var}"
        );
    }
    // negative control: twice the rate is far off
    let c = counts("20%", 1, 50);
    let mean = c.iter().sum::<f64>() / c.len() as f64;
    assert!((mean - 200.0).abs() > 100.0, "{mean}");
}

/// A rate of 100 % is no sampling: every unit, every pass.
#[test]
fn a_full_rate_keeps_every_unit() {
    for v in counts("100%", 1, 3) {
        assert_eq!(v, 2000.0);
    }
}

/// A rate the compiler would never write (a hand-edited plan file) is
/// refused by every engine pass, on one thread and on several, rather than
/// read as "no sampling"; so is a sample without a user-level unit id.
/// The compiler's own 5 % passes (negative control).
#[test]
fn a_rate_outside_the_unit_interval_or_a_row_unit_is_refused() {
    let (ds, csv) = dataset("5%");
    let stats = [Statistic {
        kind: StatKind::Count,
        grid: 0,
    }];
    for threads in [1, 2] {
        let engine = CsvEngine::default().threads(NonZeroUsize::new(threads).unwrap());
        let run = |d: &dpplan_plan::Dataset| {
            let mut rng = SecureRng::from_seed_for_tests(7);
            engine.aggregate_reader(d, &csv[..], &stats, &mut rng)
        };
        assert!(run(&ds).is_ok());
        assert_eq!(dpplan_engine::sample_rate(&ds).unwrap(), Some(0.05));
        for bad in [0.0, -0.5, 1.5, f64::NAN] {
            let mut d = ds.clone();
            d.sample = Some(bad);
            let err = run(&d).unwrap_err().to_string();
            assert!(err.contains("is not in (0, 1]"), "{bad}: {err}");
        }
        let mut rows = ds.clone();
        rows.bounding.per_unit = false;
        let err = run(&rows).unwrap_err().to_string();
        assert!(
            err.contains("samples the units of a user-level unit only"),
            "{err}"
        );
    }
}
