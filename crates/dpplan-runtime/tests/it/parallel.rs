//! The engine on every core gives the single-threaded engine's results:
//! identical exact aggregates for row-level units (and for user-level units
//! whose bounds never bind, and for user-level counts, which do not depend
//! on the selection), and the same distribution of the random selection
//! when the bounds bind, at every thread count and block size.

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, Engine, StatKind, Statistic};
use dpplan_plan::{Dataset, ExecutablePlan};
use dpplan_vocab::Statistic as Stat;
use statrs::distribution::{ChiSquared, ContinuousCDF};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn engine(threads: usize, block: usize) -> CsvEngine {
    CsvEngine
        .threads(NonZeroUsize::new(threads).unwrap())
        .block_size(block)
}

const EXAMPLES: [&str; 7] = [
    "accuracy-targets",
    "app-events",
    "census",
    "repeated-release",
    "retail-mixed",
    "trip-fares",
    "web-analytics",
];

fn compiled(name: &str) -> ExecutablePlan {
    let src =
        std::fs::read_to_string(root().join(format!("examples/{name}/{name}.dpplan"))).unwrap();
    dpplan_compile::compile(&src).unwrap()
}

/// Every statistic the plan's releases compute on `dataset`, as the
/// runtime asks the engine for them.
fn statistics(plan: &ExecutablePlan, dataset: &str) -> Vec<Statistic> {
    let mut out = Vec::new();
    for r in plan.body.releases.iter().filter(|r| r.dataset == dataset) {
        for p in &r.parts {
            let col = || r.aggregation.column.clone().unwrap();
            let by = || r.aggregation.by.clone().unwrap();
            let kind = match p.statistic {
                Stat::Count => StatKind::Count,
                Stat::Sum => StatKind::Sum { column: col() },
                Stat::GroupedCount | Stat::CellsTotal => StatKind::GroupedCount { by: by() },
                Stat::GroupedSum => StatKind::GroupedSum {
                    by: by(),
                    column: col(),
                },
                Stat::DistinctCount => StatKind::Distinct { column: col() },
                Stat::GroupedDistinctCount => StatKind::UnitsPerCell {
                    keys: r.aggregation.keys.clone(),
                },
                Stat::TopK if r.aggregation.distinct => StatKind::UnitsPerCell {
                    keys: r.aggregation.keys.clone(),
                },
                Stat::TopK => StatKind::GroupedCount { by: by() },
                Stat::Quantile => StatKind::Cells {
                    keys: vec![dpplan_runtime::quantile::grid_key(
                        &col(),
                        &r.aggregation.quantile.as_ref().unwrap().candidates,
                    )],
                    column: None,
                },
            };
            out.push(Statistic {
                kind,
                grid: p.grid_exponent,
            });
        }
    }
    out
}

fn run(e: CsvEngine, ds: &Dataset, data: &[u8], stats: &[Statistic], seed: u64) -> Vec<Vec<i128>> {
    let mut rng = SecureRng::from_seed_for_tests(seed);
    e.aggregate_reader(ds, data, stats, &mut rng)
        .unwrap_or_else(|err| panic!("{}: {err}", ds.name))
}

const THREADS: [usize; 3] = [2, 3, 8];

/// Row-level results on the shipped examples (every dataset read as
/// row-level: the rows go straight into the accumulators) and the
/// examples' own units where they are row- or event-level.
#[test]
fn row_level_results_are_identical_on_the_examples() {
    let mut compared = 0;
    for name in EXAMPLES {
        let plan = compiled(name);
        for (dname, ds) in &plan.body.datasets {
            let stats = statistics(&plan, dname);
            let path = root()
                .join(format!("examples/{name}"))
                .join(ds.source.as_deref().unwrap());
            let data = std::fs::read(&path).unwrap();
            let mut row = ds.clone();
            row.bounding.per_unit = false;
            let want = run(engine(1, 1 << 20), &row, &data, &stats, 1);
            assert!(want.iter().flatten().any(|&x| x != 0), "{name}");
            for threads in THREADS {
                for block in [5, 64, 1000, 1 << 20] {
                    let got = run(engine(threads, block), &row, &data, &stats, 2);
                    assert_eq!(got, want, "{name}: {threads} threads, block {block}");
                    compared += 1;
                }
            }
            // the file through `Engine::aggregate` (path, default engine)
            let mut rng = SecureRng::from_os().unwrap();
            let got = CsvEngine.aggregate(&row, &path, &stats, &mut rng).unwrap();
            assert_eq!(got, want, "{name}: the default engine");
        }
    }
    assert_eq!(compared, 7 * 12);
}

const PLAN: &str = r#"plan "t" {
  privacy { unit user by uid adjacency add_remove budget epsilon 20 delta 1e-6 }
  dataset d {
    column uid : id
    column g : category { "a", "b", "c", "d" }
    column v : float in [-5, 100]
    column w : int in [0, 10]
    contribution { BOUNDS }
  }
  query s { sum(d.v) noise laplace scale 100 schedule once }
}"#;

fn dataset(bounds: &str) -> Dataset {
    let plan = dpplan_compile::compile(&PLAN.replace("BOUNDS", bounds)).unwrap();
    plan.body.datasets["d"].clone()
}

fn stats() -> Vec<Statistic> {
    vec![
        Statistic {
            kind: StatKind::Count,
            grid: 0,
        },
        Statistic {
            kind: StatKind::Sum { column: "v".into() },
            grid: -2,
        },
        Statistic {
            kind: StatKind::GroupedCount { by: "g".into() },
            grid: 0,
        },
        Statistic {
            kind: StatKind::GroupedSum {
                by: "g".into(),
                column: "v".into(),
            },
            grid: -3,
        },
        Statistic {
            kind: StatKind::Sum { column: "w".into() },
            grid: 0,
        },
    ]
}

/// A generated CSV with everything a cut can meet: quoted ids and
/// categories (with commas, doubled quotes and newlines inside), CRLF and
/// LF line ends, empty lines, invalid and out-of-domain values, short and
/// long records, unicode ids; `rows_of(u)` rows for unit `u`, rows of the
/// units interleaved. `last_newline`: whether the file ends with one.
fn generated(units: u64, rows_of: impl Fn(u64) -> u64, last_newline: bool) -> Vec<u8> {
    let mut csv = String::from("\u{feff}uid,g,v,w\r\n");
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut left: Vec<u64> = (0..units).map(&rows_of).collect();
    let mut live: Vec<u64> = (0..units).filter(|&u| left[u as usize] > 0).collect();
    while !live.is_empty() {
        let i = (rnd() % live.len() as u64) as usize;
        let u = live[i];
        left[u as usize] -= 1;
        if left[u as usize] == 0 {
            live.swap_remove(i);
        }
        let r = rnd();
        let id = match u % 5 {
            0 => format!("\"u,{u}\"\"\n\""),
            1 => format!("ü{u}"),
            _ => format!("u{u}"),
        };
        let g = ["a", "b", "c", "d", "\"c\"", "zz", "\"a\nb\""][(r % 7) as usize];
        let v = match (r >> 8) % 23 {
            0 => "oops".to_string(),
            1 => String::new(),
            2 => "1e3".into(),
            3 => "-inf".into(),
            k => format!("{}.{}", k as i64 * 7 - 30, (r >> 16) % 100),
        };
        let w = match (r >> 24) % 31 {
            0 => "2.5".to_string(),
            k => (k % 11).to_string(),
        };
        let end = ["\n", "\r\n", "\n\n", "\r\n"][((r >> 32) % 4) as usize];
        match (r >> 40) % 41 {
            0 => csv.push_str(&format!("{id},{g}{end}")),
            1 => csv.push_str(&format!("{id},{g},{v},{w},extra{end}")),
            _ => csv.push_str(&format!("{id},{g},{v},{w}{end}")),
        }
    }
    if !last_newline {
        while csv.ends_with(['\n', '\r']) {
            csv.pop();
        }
    }
    csv.into_bytes()
}

#[test]
fn generated_data_gives_identical_row_level_results() {
    let mut row = dataset("rows_per_unit 3");
    row.bounding.per_unit = false;
    for last_newline in [true, false] {
        let data = generated(700, |u| u % 4 + 1, last_newline);
        let want = run(engine(1, 1 << 20), &row, &data, &stats(), 1);
        assert!(want.iter().all(|v| v.iter().any(|&x| x != 0)));
        for threads in THREADS {
            for block in [1, 2, 3, 7, 61, 4096, 1 << 20] {
                let got = run(engine(threads, block), &row, &data, &stats(), 2);
                assert_eq!(got, want, "{threads} threads, block {block}");
            }
        }
    }
}

#[test]
fn tiny_files_give_identical_results() {
    let user = dataset("rows_per_unit 3 groups_per_unit 4");
    let mut row = user.clone();
    row.bounding.per_unit = false;
    let cases: [&[u8]; 10] = [
        b"uid,g,v,w\n\xef\xbb\xbfu1,a,1,1\n\xef\xbb\xbfu2,b,2,2\n",
        b"uid,g,v,w\n\xef\xbb\xbf\"u1\",a,1,1\n\xef\xbb\xbfu1,b,2,2\n\xef\xbb\xbf",
        b"uid,g,v,w",
        b"uid,g,v,w\n",
        b"uid,g,v,w\r\n",
        b"\xef\xbb\xbfuid,g,v,w\r\nu1,a,1,1",
        b"uid,g,v,w\nu1,a,1,1",
        b"uid,g,v,w\n\n\nu1,a,1,1\n\n",
        b"\"uid\",\"g\",v,w\n\"u\n1\",\"a\",\"2\",1\r\n",
        b"uid,g,v,w\r\nu1,a,1,1\r\nu1,b,2,2\r\n",
    ];
    for ds in [&row, &user] {
        for data in cases {
            let want = run(engine(1, 1 << 20), ds, data, &stats(), 1);
            for threads in THREADS {
                for block in [1, 2, 5, 1 << 20] {
                    let got = run(engine(threads, block), ds, data, &stats(), 2);
                    assert_eq!(got, want, "{:?}", String::from_utf8_lossy(data));
                }
            }
        }
    }
}

/// The errors of a file that is not usable are the single-threaded
/// engine's, word for word.
#[test]
fn errors_are_the_same_on_every_thread_count() {
    let ds = dataset("rows_per_unit 3");
    let cases: [&[u8]; 3] = [b"", b"uid,g,v\nu1,a,1\n", b"\"uid\",g,\"v\nw\"\n"];
    for data in cases {
        let mut rng = SecureRng::from_seed_for_tests(1);
        let want = engine(1, 1 << 20)
            .aggregate_reader(&ds, data, &stats(), &mut rng)
            .unwrap_err()
            .to_string();
        assert!(want.contains("missing from the CSV header"), "{want}");
        for threads in THREADS {
            for block in [1, 3, 1 << 20] {
                let got = engine(threads, block)
                    .aggregate_reader(&ds, data, &stats(), &mut rng)
                    .unwrap_err();
                assert_eq!(got.to_string(), want);
            }
        }
    }
    // a read that fails after some chunks
    struct Broken(usize);
    impl std::io::Read for Broken {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::Error::other("the disk went away"));
            }
            self.0 -= 1;
            let line: &[u8] = if self.0 == 99 {
                b"uid,g,v,w\n"
            } else {
                b"u1,a,1,1\n"
            };
            let n = line.len().min(buf.len());
            buf[..n].copy_from_slice(&line[..n]);
            Ok(n)
        }
    }
    for threads in [1, 2, 3] {
        for block in [4, 1 << 20] {
            for ds in [ds.clone(), {
                let mut r = ds.clone();
                r.bounding.per_unit = false;
                r
            }] {
                let mut rng = SecureRng::from_seed_for_tests(1);
                let e = engine(threads, block)
                    .aggregate_reader(&ds, Broken(100), &stats(), &mut rng)
                    .unwrap_err();
                assert_eq!(
                    e.to_string(),
                    "cannot read the CSV of dataset `d`: the disk went away",
                    "{threads} threads, {}",
                    ds.bounding.per_unit
                );
            }
        }
    }
}

/// User-level units whose bounds never bind (at most `rows_per_unit` rows
/// per unit, at most `groups_per_unit` of them): nothing is random, the
/// results are identical. With heavier units the count stays identical
/// (each unit keeps exactly min(rows, rows_per_unit) rows) and every
/// bounded aggregate stays within the bounds.
#[test]
fn user_level_results_are_identical_when_nothing_is_random() {
    let ds = dataset("rows_per_unit 3 groups_per_unit 3");
    let data = generated(900, |u| u % 3 + 1, true);
    let want = run(engine(1, 1 << 20), &ds, &data, &stats(), 1);
    assert!(want.iter().all(|v| v.iter().any(|&x| x != 0)));
    for threads in THREADS {
        for block in [1, 7, 300, 1 << 20] {
            let got = run(engine(threads, block), &ds, &data, &stats(), 9);
            assert_eq!(got, want, "{threads} threads, block {block}");
        }
    }
    // heavy units: rows_per_unit binds
    let heavy = dataset("rows_per_unit 2 groups_per_unit 1 rows_per_group 1");
    let rows_of = |u: u64| if u.is_multiple_of(10) { 40 } else { u % 4 + 1 };
    let data = generated(500, rows_of, false);
    let one = run(engine(1, 1 << 20), &heavy, &data, &stats(), 1);
    for threads in [1, 2, 3, 8] {
        for seed in 0..5 {
            let got = run(engine(threads, 97), &heavy, &data, &stats(), seed);
            assert_eq!(got[0], one[0], "the count does not depend on the draws");
            // every unit keeps at most 2 rows, of values in [-20, 400]
            // quarters, and at most 1 row for the grouped statistics
            let units = 500;
            assert!(got[0][0] <= 2 * units);
            assert!(got[1][0].abs() <= 2 * units * 400);
            assert!(got[2].iter().sum::<i128>() <= units);
            assert!(got[3].iter().map(|x| x.abs()).sum::<i128>() <= units * 800);
            assert!(got[4][0] <= 2 * units * 10);
        }
    }
}

/// Two units with four rows each, in groups `a` and `b`, and rows of
/// other units around them (so that they cross chunks and threads):
/// `rows_per_unit 2`. The grouped sum of `w` gives each unit's kept sum:
/// two of {0, 1, 2, 3}, uniformly: sums 1, 2, 3, 3, 4, 5 out of six pairs.
fn pair_data() -> Vec<u8> {
    let mut csv = String::from("uid,g,v,w\n");
    for i in 0..4 {
        for k in 0..5 {
            csv.push_str(&format!("other{},c,1,1\n", 4 * k + i));
        }
        csv.push_str(&format!("A,a,1,{i}\n"));
        csv.push_str(&format!("\"other,{i}\",d,1,1\n"));
        csv.push_str(&format!("B,b,1,{}\n", 3 - i));
    }
    csv.into_bytes()
}

/// The exact probability of each kept sum (index = sum − 1).
const PAIR_PMF: [f64; 5] = [1.0 / 6.0, 1.0 / 6.0, 2.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0];

/// Observed joint counts of (A's kept sum, B's kept sum) over `runs` seeds.
fn joint_counts(e: CsvEngine, runs: u64, seed0: u64) -> [[f64; 5]; 5] {
    let ds = dataset("rows_per_unit 2");
    let data = pair_data();
    let stats = [Statistic {
        kind: StatKind::GroupedSum {
            by: "g".into(),
            column: "w".into(),
        },
        grid: 0,
    }];
    let mut counts = [[0f64; 5]; 5];
    for seed in seed0..seed0 + runs {
        let out = run(e, &ds, &data, &stats, seed);
        let (a, b) = (out[0][0], out[0][1]);
        assert!((1..=5).contains(&a) && (1..=5).contains(&b), "{out:?}");
        assert_eq!(out[0][2..], [20, 4], "the light units are exact");
        counts[(a - 1) as usize][(b - 1) as usize] += 1.0;
    }
    counts
}

/// Chi-square of observed counts against expected ones, with the critical
/// value at false-alarm rate 1e-6 for `df` degrees of freedom.
fn chi_square(observed: &[f64], expected: &[f64], df: f64) -> (f64, f64) {
    let chi = observed
        .iter()
        .zip(expected)
        .map(|(o, e)| (o - e).powi(2) / e)
        .sum();
    (chi, ChiSquared::new(df).unwrap().inverse_cdf(1.0 - 1e-6))
}

/// Goodness of fit of the joint counts to independent uniform selections
/// (the product of the exact marginals): 24 degrees of freedom.
fn fits_independent_uniform(counts: &[[f64; 5]; 5]) -> (f64, f64) {
    let n: f64 = counts.iter().flatten().sum();
    let expected: Vec<f64> = (0..25)
        .map(|k| n * PAIR_PMF[k / 5] * PAIR_PMF[k % 5])
        .collect();
    let observed: Vec<f64> = counts.iter().flatten().copied().collect();
    chi_square(&observed, &expected, 24.0)
}

/// Per-unit selection is uniform and independent of the other unit's, on
/// one thread and on several (against the exact joint distribution), and
/// the two samples agree (two-sample chi-square, homogeneity of 25 cells).
#[test]
fn user_level_selection_has_the_same_distribution_on_every_thread_count() {
    let runs = 3000;
    let one = joint_counts(engine(1, 1 << 20), runs, 0);
    let (chi, crit) = fits_independent_uniform(&one);
    assert!(chi < crit, "1 thread: chi-square {chi} ≥ {crit}");
    for (threads, block) in [(2, 13), (3, 40), (8, 1)] {
        let many = joint_counts(engine(threads, block), runs, 10_000 * threads as u64);
        let (chi, crit) = fits_independent_uniform(&many);
        assert!(chi < crit, "{threads} threads: chi-square {chi} ≥ {crit}");
        // two-sample homogeneity: expected per cell from the pooled counts
        let mut obs = Vec::new();
        let mut exp = Vec::new();
        for (a, b) in one.iter().flatten().zip(many.iter().flatten()) {
            let pooled = (a + b) / 2.0;
            if pooled > 0.0 {
                obs.extend([*a, *b]);
                exp.extend([pooled, pooled]);
            }
        }
        let (chi, crit) = chi_square(&obs, &exp, (obs.len() / 2 - 1) as f64);
        assert!(
            chi < crit,
            "1 vs {threads} threads: chi-square {chi} ≥ {crit}"
        );
    }
}

/// Negative controls: the tests above reject a selection that is not
/// uniform (always the first two rows) or not independent (B keeping the
/// mirror of A's rows).
#[test]
fn the_distribution_tests_reject_a_wrong_selection() {
    let runs = 3000.0;
    let mut first = [[0f64; 5]; 5];
    // A keeps rows 0 and 1 (sum 1), B keeps 3 and 2 (sum 5), always
    first[0][4] = runs;
    let (chi, crit) = fits_independent_uniform(&first);
    assert!(chi > crit);
    // uniform marginals but B's choice mirrors A's: sum_B = 6 − sum_A
    let mut mirrored = [[0f64; 5]; 5];
    for (k, p) in PAIR_PMF.iter().enumerate() {
        mirrored[k][4 - k] = runs * p;
    }
    let (chi, crit) = fits_independent_uniform(&mirrored);
    assert!(chi > crit);
}
