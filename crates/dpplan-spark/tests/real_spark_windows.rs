//! Windows and cumulative counts on a real Spark (scripts/test.sh starts
//! the cluster; without it the test is skipped, except under CI=true):
//! the Spark engine's own selection of a window's rows
//! (`Engine::aggregate_windows`) against the runtime's
//! (`dpplan_runtime::window::runtime_windows` over the embedded engine),
//! exactly — the time grammar on hostile text, the units kept per window
//! with a ledger's state, typed timestamps from Parquet — and then whole
//! runs of the windowed and cumulative examples on both engines, whose
//! ledgers must record the same units in the same windows and whose trees
//! must hold the same exact counts; and every shipped example and corpus
//! plan that compiles, on data generated from its declared columns, asks
//! both engines the same and gets the same.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod common;

use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, StatKind, Statistic, WindowRequest, WindowSlot, WindowUnits};
use dpplan_plan::Dataset;
use dpplan_runtime::window::{parse_time, runtime_windows};
use dpplan_spark::WindowJob;
use dpplan_vocab::ColumnKind;
use statrs::distribution::{ChiSquared, ContinuousCDF};

const PLAN: &str = r#"plan "w" {
  privacy { unit UNIT adjacency add_remove budget epsilon 20 delta 1e-6 }
  dataset d {
    column uid : id
    column g : category { "a", "b", "c" }
    column v : float in [0, 10]
    column t : time
    contribution { BOUNDS }
  }
  query h {
    count(d)
    noise laplace scale 10000
    schedule every 30 days for 400 days
    window 30 days
  }
}"#;

fn dataset(unit: &str, bounds: &str) -> Dataset {
    let text = PLAN.replace("UNIT", unit).replace("BOUNDS", bounds);
    dpplan_compile::compile(&text)
        .unwrap_or_else(|e| panic!("{e}"))
        .body
        .datasets["d"]
        .clone()
}

fn stat(kind: StatKind, grid: i32) -> Statistic {
    Statistic { kind, grid }
}

/// Times as data holds them: every form of the grammar, its edges, and
/// text that is almost a time (each must be read alike by both engines).
fn time_corpus(rng: &mut SecureRng) -> Vec<String> {
    let mut out: Vec<String> = [
        "2026-03-02T14:05:00Z",
        "2026-03-02t14:05z",
        "2026-03-02 14:05:00+00",
        "2026-03-02T15:35:00+0130",
        "2026-03-02T13:05:00,5-01:00",
        "2026-03-02T14:05:00.123456789Z",
        "2016-12-31T23:59:60Z",
        "1969-12-31T23:59:59.5Z",
        " \u{a0}2026-03-02T14:05:00Z\u{2003}",
        "1772460300",
        " 1772460300 ",
        "-0",
        "-1",
        "0001772460300",
        "-9223372036854775808",
        "9223372036854775807",
        "9223372036854775808",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59-23:59",
        "2024-02-29T00:00:00Z",
        "2000-02-29T12:00:00+05:45",
        "1900-02-29T00:00:00Z",
        "2025-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "",
        "yesterday",
        "2026-03-02",
        "2026-13-02T00:00:00Z",
        "1.5",
        "+5",
        "-",
        "1e9",
        "0x10",
        "2026-03-02T14:05:00",
        "2026-03-02T14:05:00.Z",
        "2026-03-02T14:05:00.1234567890Z",
        "2026-03-02T24:00:00Z",
        "2026-03-02T14:60:00Z",
        "2026-03-02T14:05:61Z",
        "2026-03-02T14:05:00+24:00",
        "2026-03-02T14:05:00+01:60",
        "2026-03-02T14:05:00+1",
        "2026-03-02T14:05:00+01:0",
        "2026-03-02T14:05:00Z[UTC]",
        "20260302T140500Z",
        "2026-03-02T14Z",
        "2026-03-02_14:05Z",
        "２０２６-03-02T14:05Z",
        "2026-03-02T14:05:00Z\n",
        "2026-03-02T14:05:00\u{2028}Z",
        "2026-03-02T14:05:00ZZ",
        "2026-03-02T14:05:00+01:00:00",
        "\u{feff}2026-03-02T14:05:00Z",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // random instants in every form, and their near misses
    for i in 0..3000 {
        let y = 1 + rng.below_u64(9999) as i64;
        let mo = 1 + rng.below_u64(12);
        let d = 1 + rng.below_u64(31);
        let (h, mi, s) = (rng.below_u64(25), rng.below_u64(61), rng.below_u64(62));
        let sep = ["T", "t", " ", "_"][rng.below_u64(4) as usize];
        let frac = match rng.below_u64(4) {
            0 => String::new(),
            1 => format!(".{}", rng.below_u64(1000)),
            2 => format!(",{:09}", rng.below_u64(1_000_000_000)),
            _ => ".".to_string(),
        };
        let off = match rng.below_u64(6) {
            0 => "Z".to_string(),
            1 => "z".to_string(),
            2 => format!("+{:02}:{:02}", rng.below_u64(25), rng.below_u64(61)),
            3 => format!("-{:02}{:02}", rng.below_u64(25), rng.below_u64(61)),
            4 => format!("+{:02}", rng.below_u64(25)),
            _ => String::new(),
        };
        let secs = if rng.below_u64(4) == 0 {
            String::new()
        } else {
            format!(":{s:02}{frac}")
        };
        let mut t = format!("{y:04}-{mo:02}-{d:02}{sep}{h:02}:{mi:02}{secs}{off}");
        if i % 7 == 0 {
            // one byte changed
            let at = rng.below_u64(t.len() as u64) as usize;
            let c = b"0123456789-:+TZ .,x"[rng.below_u64(19) as usize] as char;
            if t.is_char_boundary(at) && t.is_char_boundary(at + 1) {
                t.replace_range(at..at + 1, &c.to_string());
            }
        }
        out.push(t);
        // Unix seconds around the present and far away
        let unix = rng.next_u64() as i64 >> rng.below_u64(64);
        out.push(unix.to_string());
    }
    out
}

/// A CSV of the corpus: one row per time, units cycling.
fn times_csv(dir: &Path, times: &[String]) -> PathBuf {
    let p = dir.join("times.csv");
    let mut w = csv::Writer::from_path(&p).unwrap();
    w.write_record(["uid", "g", "v", "t"]).unwrap();
    for (i, t) in times.iter().enumerate() {
        let uid = if i % 41 == 0 {
            String::new()
        } else {
            format!("u{}", i % 53)
        };
        let g = ["a", "b", "c"][i % 3];
        w.write_record([uid.as_str(), g, &format!("{}", i % 11), t.as_str()])
            .unwrap();
    }
    w.flush().unwrap();
    p
}

/// One windowed job and its reference, by the runtime's own selection.
struct Job {
    name: String,
    dataset: Dataset,
    source: PathBuf,
    column: String,
    start: i64,
    period: i64,
    slots: Vec<u64>,
    units: Option<(Vec<u8>, HashMap<String, u64>, u64)>,
    stats: Vec<Statistic>,
}

impl Job {
    fn request(&self) -> WindowRequest<'_> {
        WindowRequest {
            release: &self.name,
            column: &self.column,
            start: self.start,
            period: self.period,
            slots: &self.slots,
            units: self.units.as_ref().map(|(key, kept, bound)| WindowUnits {
                key,
                kept,
                bound: *bound,
            }),
        }
    }

    fn reference(&self) -> Vec<WindowSlot> {
        let mut rng = SecureRng::from_seed_for_tests(3);
        runtime_windows(
            &CsvEngine,
            &self.dataset,
            &self.source,
            &self.request(),
            &self.stats,
            &mut rng,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }
}

/// The jobs as the Spark engine takes them.
fn window_jobs(jobs: &[Job]) -> Vec<WindowJob<'_>> {
    jobs.iter()
        .map(|j| WindowJob {
            dataset: &j.dataset,
            source: &j.source,
            window: j.request(),
            stats: &j.stats,
        })
        .collect()
}

fn key_hash(key: &[u8], id: &str) -> String {
    let mut b = key.to_vec();
    b.extend_from_slice(id.as_bytes());
    dpplan_plan::sha256_hex(&b)
}

#[test]
fn windows_on_a_real_spark() {
    let Some(engine) = common::spark() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SecureRng::from_seed_for_tests(11);
    let times = time_corpus(&mut rng);
    let csv = times_csv(dir.path(), &times);
    let valid: Vec<i64> = times
        .iter()
        .filter_map(|t| parse_time(t.as_bytes()))
        .collect();
    assert!(valid.len() > 2000 && valid.len() < times.len() - 1000);
    let count = vec![stat(StatKind::Count, 0)];
    let mut jobs = Vec::new();

    // 1. the time grammar, to the second: a window per distinct time near
    // the present (every valid text of the corpus there has its slot)
    let start = 0;
    let mut slots: Vec<u64> = valid
        .iter()
        .filter(|&&t| (0..1 << 40).contains(&t))
        .map(|&t| t as u64)
        .collect();
    slots.sort_unstable();
    slots.dedup();
    assert!(slots.len() > 500, "{}", slots.len());
    let row = dataset("row", "");
    jobs.push(Job {
        name: "grammar, to the second".into(),
        dataset: row.clone(),
        source: csv.clone(),
        column: "t".into(),
        start,
        period: 1,
        slots,
        units: None,
        stats: count.clone(),
    });
    // 2. the time grammar, whole: four windows over ±2^62 seconds
    jobs.push(Job {
        name: "grammar, whole".into(),
        dataset: row.clone(),
        source: csv.clone(),
        column: "t".into(),
        start: -(1 << 62),
        period: 1 << 61,
        slots: vec![0, 1, 2, 3],
        units: None,
        stats: count.clone(),
    });
    // 3. user-level: units kept in at most 3 windows, counting a ledger's
    // state (one unit at its bound, one at 2, one at 1)
    let user = dataset(
        "user by uid",
        "rows_per_unit 1000 windows_per_unit 3 rows_per_window 1000",
    );
    let key: Vec<u8> = (0..32u8).map(|b| b.wrapping_mul(37) ^ 0x5a).collect();
    let kept: HashMap<String, u64> = [("u1", 3), ("u2", 2), ("u3", 1), ("nobody", 7)]
        .into_iter()
        .map(|(u, n)| (key_hash(&key, u), n))
        .collect();
    let all_stats = vec![
        stat(StatKind::Count, 0),
        stat(StatKind::Sum { column: "v".into() }, -2),
        stat(StatKind::GroupedCount { by: "g".into() }, 0),
        stat(
            StatKind::Distinct {
                column: "uid".into(),
            },
            0,
        ),
    ];
    // windows of 2^27 s (4.25 years) from 1970: 40 of them, most units
    // in many
    jobs.push(Job {
        name: "user-level, a ledger's state".into(),
        dataset: user.clone(),
        source: csv.clone(),
        column: "t".into(),
        start: 0,
        period: 1 << 27,
        slots: (0..40).collect(),
        units: Some((key.clone(), kept.clone(), 3)),
        stats: all_stats.clone(),
    });
    // 4. the ride-sharing trips, hourly, user-level, from CSV and from
    // Parquet with a typed timestamp (the driver's Unix seconds)
    let trips_csv = common_examples().join("ride-sharing/data/trips.csv");
    let trips_parquet = dir.path().join("trips.parquet");
    common::to_parquet(
        &trips_csv,
        &trips_parquet,
        "rider_id STRING, city STRING, district STRING, hour_of_day STRING, fare DOUBLE, length_km DOUBLE, started_at TIMESTAMP",
    );
    let ride = ride_dataset();
    let hourly = vec![
        stat(
            StatKind::GroupedCount {
                by: "district".into(),
            },
            0,
        ),
        stat(
            StatKind::Distinct {
                column: "rider_id".into(),
            },
            0,
        ),
    ];
    let march = parse_time(b"2026-03-02T00:00:00Z").unwrap();
    for (what, source) in [("CSV", &trips_csv), ("Parquet", &trips_parquet)] {
        jobs.push(Job {
            name: format!("ride-sharing hourly, {what}"),
            dataset: ride.clone(),
            source: source.clone(),
            column: "started_at".into(),
            start: march,
            period: 3600,
            slots: (0..24 * 10).collect(),
            units: Some((key.clone(), HashMap::new(), 20)),
            stats: hourly.clone(),
        });
    }

    // 5. the selection within a window (rows_per_window binds): SEEDS runs
    // of 1,500 units × 2 windows, checked by χ² below, not exactly
    let exact_jobs = jobs.len();
    let (sel_ds, sel_csv) = selection(dir.path());
    for seed in 0..SEEDS {
        jobs.push(Job {
            name: format!("selection, seed {seed}"),
            dataset: sel_ds.clone(),
            source: sel_csv.clone(),
            column: "t".into(),
            start: 0,
            period: 100,
            slots: vec![0, 1],
            units: Some((key.clone(), HashMap::new(), 5)),
            stats: vec![stat(
                StatKind::GroupedSum {
                    by: "who".into(),
                    column: "v".into(),
                },
                0,
            )],
        });
    }

    let window_jobs = window_jobs(&jobs);
    let mut srng = SecureRng::from_os().unwrap();
    let got = engine
        .windows_many(&window_jobs, &mut srng)
        .unwrap_or_else(|e| panic!("{e}"));
    check_selection(&jobs[exact_jobs..], &got[exact_jobs..]);
    for (j, got) in jobs.iter().zip(&got).take(exact_jobs) {
        let want = j.reference();
        assert_eq!(got.len(), want.len(), "{}", j.name);
        let mut rows = 0;
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.slot, w.slot, "{}", j.name);
            assert_eq!(g.values, w.values, "{}: slot {}", j.name, g.slot);
            assert_eq!(g.units, w.units, "{}: units of slot {}", j.name, g.slot);
            rows += w.values[0].iter().sum::<i128>();
        }
        assert!(rows > 0, "{}: no row in any window", j.name);
    }
    // the grammar jobs saw every valid time in their range
    let to_second: i128 = got[0].iter().map(|s| s.values[0][0]).sum();
    let near = valid.iter().filter(|&&t| (0..1 << 40).contains(&t)).count();
    assert_eq!(to_second, near as i128);
    let whole: i128 = got[1].iter().map(|s| s.values[0][0]).sum();
    let in_range = valid
        .iter()
        .filter(|&&t| (-(1i64 << 62)..1 << 62).contains(&t))
        .count();
    assert_eq!(whole, in_range as i128);
    // the ledger's state held: u1 (at its bound) in no window, u2 in one,
    // u3 in two, an unrecorded unit in three
    let user_units = &got[2];
    let windows_of = |u: &str| {
        let h = key_hash(&key, u);
        user_units.iter().filter(|s| s.units.contains(&h)).count()
    };
    assert_eq!(
        [
            windows_of("u1"),
            windows_of("u2"),
            windows_of("u3"),
            windows_of("u4")
        ],
        [0, 1, 2, 3]
    );
}

/// Whole runs on both engines, as cron runs them: the ride-sharing hourly
/// windows two days and a few minutes after their start (48 windows due
/// at once), and the signups tree a fortnight in (14 daily slots, its
/// first counted before the ledger exists). The ledgers (sharing one unit
/// key) must record the same units in the same windows, and the trees'
/// exact state the same open counts.
#[test]
fn windowed_and_cumulative_examples_run_alike_on_both_engines() {
    let Some(spark) = common::spark() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let key: Vec<u8> = (0..32u8).map(|b| b.wrapping_mul(91) ^ 0x3c).collect();
    let cases = [
        (
            "ride-sharing",
            "hourly_district_trips",
            "2026-03-02T00:00:00Z",
            "2026-03-04T00:04:00Z",
            48,
        ),
        (
            "signups",
            "running_signups",
            "2026-01-01T00:00:00Z",
            "2026-01-15T00:04:00Z",
            14,
        ),
    ];
    for (example, query, start, at, due) in cases {
        let ex = common_examples().join(example);
        let text = std::fs::read_to_string(ex.join(format!("{example}.dpplan"))).unwrap();
        let plan = dpplan_compile::compile(&text).unwrap();
        let mut recorded = Vec::new();
        let engines: [(&str, &dyn dpplan_engine::Engine); 2] =
            [("embedded", &CsvEngine), ("spark", &spark)];
        for (name, engine) in engines {
            let ledger = dir.path().join(format!("{example}-{name}.sqlite"));
            std::fs::write(dpplan_runtime::ledger::units_key_path(&ledger), &key).unwrap();
            let opts = dpplan_runtime::RunOptions {
                base_dir: Some(ex.clone()),
                ledger: ledger.clone(),
                queries: vec![query.to_string()],
                start: parse_time(start.as_bytes()),
                at: parse_time(at.as_bytes()),
                ..Default::default()
            };
            let out = dpplan_runtime::run(&plan, &opts, engine)
                .unwrap_or_else(|e| panic!("{example} on {name}: {e}"));
            assert!(
                out.refused.is_empty(),
                "{example} on {name}: {:?}",
                out.refused
            );
            assert_eq!(out.results.len(), due, "{example} on {name}");
            let l = dpplan_runtime::ledger::Ledger::open(&ledger, None).unwrap();
            let units = l.windows_of_units(query).unwrap();
            assert!(
                units.len() > 30,
                "{example} on {name}: {} units",
                units.len()
            );
            let state = std::fs::read_to_string(dpplan_runtime::cumulative::state_path(&ledger))
                .ok()
                .map(|t| {
                    let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                    v["queries"][query]["open"].clone()
                });
            recorded.push((units, state));
        }
        assert_eq!(
            recorded[0].0, recorded[1].0,
            "{example}: the units' windows"
        );
        assert_eq!(
            recorded[0].1, recorded[1].1,
            "{example}: the tree's exact state"
        );
        if example == "signups" {
            assert!(recorded[0].1.as_ref().is_some_and(|o| !o.is_null()));
        }
    }
}

/// The units of the selection check: each unit has the values `ROWS`
/// (with a duplicate) in each of two windows, and the category `who`
/// names the unit, so a grouped sum by `who` is each unit's bounded sum
/// in the window.
const UNITS: usize = 1500;
const ROWS: [u32; 6] = [0, 0, 1, 2, 3, 5];
const SEEDS: usize = 4;

fn selection(dir: &Path) -> (Dataset, PathBuf) {
    let who: Vec<String> = (0..UNITS).map(|u| format!("\"w{u}\"")).collect();
    let text = format!(
        r#"plan "sel" {{
  privacy {{ unit user by uid adjacency add_remove budget epsilon 20 delta 1e-6 }}
  dataset d {{
    column uid : id
    column who : category {{ {} }}
    column v : int in [0, 5]
    column t : time
    contribution {{ rows_per_unit 12 groups_per_unit 1 windows_per_unit 5 rows_per_window 2 }}
  }}
  query s {{
    sum(d.v)
    noise laplace scale 1000
    schedule every 100 seconds for 200 seconds
    window 100 seconds
  }}
}}"#,
        who.join(", ")
    );
    let plan = dpplan_compile::compile(&text).unwrap_or_else(|e| panic!("{e}"));
    let mut ds = plan.body.datasets["d"].clone();
    // as the runtime bounds a window: rows_per_window rows per unit
    ds.bounding.rows_per_unit = Some(2);
    let mut s = String::from("uid,who,v,t\n");
    for u in 0..UNITS {
        for slot in 0..2 {
            for (i, v) in ROWS.iter().enumerate() {
                let _ = writeln!(s, "x{u},w{u},{v},{}", slot * 100 + i as u64);
            }
        }
    }
    let p = dir.join("sel.csv");
    std::fs::write(&p, s).unwrap();
    (ds, p)
}

/// Each unit's kept sum in each window (2 of its 6 rows, uniformly): its
/// distribution over all units, windows and seeds against the runtime's
/// (two-sample χ²) and against the exact one (all pairs of distinct
/// positions), with the wrong distribution (duplicates merged) rejected.
fn check_selection(jobs: &[Job], got: &[Vec<WindowSlot>]) {
    let hist = |runs: &[Vec<WindowSlot>]| {
        let mut h = vec![0u64; 11];
        for slots in runs {
            assert_eq!(slots.len(), 2);
            for s in slots {
                assert_eq!(s.units.len(), UNITS, "every unit kept in window {}", s.slot);
                for &x in &s.values[0] {
                    assert!((0..=8).contains(&x), "a unit's sum {x} outside [0, 8]");
                    h[x as usize] += 1;
                }
            }
        }
        h
    };
    let embedded: Vec<Vec<WindowSlot>> = jobs
        .iter()
        .map(|j| {
            let mut rng = SecureRng::from_os().unwrap();
            runtime_windows(
                &CsvEngine,
                &j.dataset,
                &j.source,
                &j.request(),
                &j.stats,
                &mut rng,
            )
            .unwrap()
        })
        .collect();
    let (hs, he) = (hist(got), hist(&embedded));
    let critical = |df: f64| ChiSquared::new(df).unwrap().inverse_cdf(1.0 - 1e-6);
    let (mut chi, mut cells) = (0.0, 0.0);
    let (na, nb) = (hs.iter().sum::<u64>() as f64, he.iter().sum::<u64>() as f64);
    for (&x, &y) in hs.iter().zip(&he) {
        let t = (x + y) as f64;
        if t > 0.0 {
            let (ea, eb) = (t * na / (na + nb), t * nb / (na + nb));
            chi += (x as f64 - ea).powi(2) / ea + (y as f64 - eb).powi(2) / eb;
            cells += 1.0;
        }
    }
    assert!(
        chi < critical(cells - 1.0),
        "two-sample χ² {chi}: {hs:?} vs {he:?}"
    );
    let pmf = |values: &[u32]| {
        let mut p = vec![0f64; 11];
        let pairs = (values.len() * (values.len() - 1) / 2) as f64;
        for i in 0..values.len() {
            for j in i + 1..values.len() {
                p[(values[i] + values[j]) as usize] += 1.0 / pairs;
            }
        }
        p
    };
    let n = na;
    let fit = |p: &[f64]| -> (f64, f64) {
        let (mut chi, mut df) = (0.0, -1.0);
        for (o, p) in hs.iter().zip(p) {
            if *p > 0.0 {
                chi += (*o as f64 - n * p).powi(2) / (n * p);
                df += 1.0;
            }
        }
        (chi, df)
    };
    let (chi, df) = fit(&pmf(&ROWS));
    assert!(chi < critical(df), "goodness of fit χ² {chi}: {hs:?}");
    // negative control: duplicates merged (each distinct value alike)
    let (wrong, _) = fit(&pmf(&[0, 1, 2, 3, 5]));
    assert!(
        wrong > critical(df),
        "the wrong pmf was not rejected: {wrong}"
    );
}

fn common_examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// The ride-sharing trips, bounded so that the selection within a window
/// cannot differ between engines (no row limit binds): only the windows'
/// selection is compared.
fn ride_dataset() -> Dataset {
    let text = std::fs::read_to_string(common_examples().join("ride-sharing/ride-sharing.dpplan"))
        .unwrap();
    let mut ds = dpplan_compile::compile(&text).unwrap().body.datasets["trips"].clone();
    ds.bounding.rows_per_unit = Some(1000);
    ds.bounding.groups_per_unit = None;
    ds.bounding.rows_per_group = None;
    ds
}

/// A CSV of `rows` rows of a dataset's declared columns, seeded: ids of a
/// few dozen units (some empty), categories from the domain (some outside
/// it, some empty), numbers around their bounds (some not numbers, NaN,
/// infinite, empty), times over two days from `t0` in every form of the
/// grammar (some not times).
fn generated(ds: &Dataset, rows: usize, t0: i64, rng: &mut SecureRng) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(ds.columns.iter().map(|c| c.name.as_str()))
        .unwrap();
    for _ in 0..rows {
        let mut rec: Vec<String> = Vec::new();
        for c in &ds.columns {
            let odd = rng.below_u64(25) == 0;
            let v = match c.ty {
                ColumnKind::Id if odd => String::new(),
                ColumnKind::Id => format!("u{}", rng.below_u64(60)),
                ColumnKind::Category if odd => ["", "zz", " a "][rng.below_u64(3) as usize].into(),
                ColumnKind::Category => match &c.domain {
                    Some(d) if !d.is_empty() => d[rng.below_u64(d.len() as u64) as usize].clone(),
                    _ => format!("k{}", rng.below_u64(8)),
                },
                ColumnKind::Int | ColumnKind::Float if odd => {
                    ["", "x", "NaN", "inf", "-inf", "1e400"][rng.below_u64(6) as usize].into()
                }
                ColumnKind::Int => {
                    let [lo, hi] = c.bounds.unwrap_or([0.0, 10.0]);
                    let span = (hi - lo).clamp(0.0, 1e6) as u64 + 5;
                    format!("{}", lo.floor() as i64 - 2 + rng.below_u64(span) as i64)
                }
                ColumnKind::Float => {
                    let [lo, hi] = c.bounds.unwrap_or([0.0, 10.0]);
                    let u = rng.below_u64(1_000_001) as f64 / 1e6;
                    format!("{:.3}", lo - 0.1 * (hi - lo) + 1.2 * (hi - lo) * u)
                }
                ColumnKind::Time if odd => {
                    ["", "soon", "2026-02-30T00:00:00Z"][rng.below_u64(3) as usize].into()
                }
                ColumnKind::Time => {
                    let t = t0 + rng.below_u64(48 * 3600) as i64;
                    if rng.coin() {
                        t.to_string()
                    } else {
                        let ts = jiff::Timestamp::from_second(t).unwrap();
                        format!(" {} ", ts.strftime("%Y-%m-%dT%H:%M:%S+00:00"))
                    }
                }
            };
            rec.push(v);
        }
        w.write_record(&rec).unwrap();
    }
    w.into_inner().unwrap()
}

/// The dataset with its per-unit caps lifted, so that the bounding keeps
/// every row and the engines must agree exactly (the unit selection of
/// windows still applies).
fn lifted(ds: &Dataset) -> Dataset {
    let mut d = ds.clone();
    if d.bounding.per_unit {
        d.bounding.rows_per_unit = Some(1_000_000);
        d.bounding.groups_per_unit = None;
        d.bounding.rows_per_group = None;
    }
    d
}

/// The statistics of `stats` that a row-level unit can be asked for: all
/// but users per cell, which count units.
fn row_level(stats: &[Statistic]) -> Vec<Statistic> {
    stats
        .iter()
        .filter(|s| !matches!(s.kind.unfiltered(), StatKind::UnitsPerCell { .. }))
        .cloned()
        .collect()
}

/// Every shipped example and every corpus plan that compiles, on data
/// generated from its own declared columns: every statement the Spark
/// engine is asked for a run (the aggregates of each dataset and filter,
/// every windowed release and cumulative count) against the embedded
/// engine's, exactly, at the row level and at the user level with the
/// caps lifted. Two spark-submits in all.
#[test]
fn every_plan_runs_alike_on_both_engines() {
    let Some(spark) = common::spark() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files: Vec<PathBuf> = Vec::new();
    for e in std::fs::read_dir(root.join("examples")).unwrap() {
        let d = e.unwrap().path();
        if d.is_dir() {
            let name = d.file_name().unwrap().to_string_lossy().into_owned();
            files.push(d.join(format!("{name}.dpplan")));
        }
    }
    for e in std::fs::read_dir(root.join("tests/corpus")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "dpplan") {
            files.push(p);
        }
    }
    files.sort();
    let t0 = parse_time(b"2026-03-02T00:00:00Z").unwrap();
    let key: Vec<u8> = (0..32u8).map(|b| b ^ 0xa5).collect();
    let mut rng = SecureRng::from_seed_for_tests(29);
    let (mut aggregates, mut windows) = (Vec::new(), Vec::new());
    let mut compiled = 0;
    for (i, file) in files.iter().enumerate() {
        let Ok(plan) = dpplan_compile::compile(&std::fs::read_to_string(file).unwrap()) else {
            continue;
        };
        compiled += 1;
        let label = file.strip_prefix(&root).unwrap().display().to_string();
        let mut data = std::collections::BTreeMap::new();
        for (name, ds) in &plan.body.datasets {
            let p = dir.path().join(format!("{i}-{name}.csv"));
            std::fs::write(&p, generated(ds, 300, t0, &mut rng)).unwrap();
            data.insert(name.clone(), p);
        }
        let opts = dpplan_runtime::RunOptions {
            data,
            ..Default::default()
        };
        let planned = dpplan_runtime::planned_aggregates(&plan, &opts)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        for (ds, source, stats) in planned {
            let mut row = ds.clone();
            row.bounding.per_unit = false;
            // a sample is drawn for user-level units only
            row.sample = None;
            let row_stats = row_level(&stats);
            if !row_stats.is_empty() {
                aggregates.push((
                    format!("{label}/{} (row)", ds.name),
                    row,
                    source.clone(),
                    row_stats,
                ));
            }
            if ds.bounding.per_unit {
                aggregates.push((
                    format!("{label}/{} (user)", ds.name),
                    lifted(ds),
                    source,
                    stats,
                ));
            }
        }
        let planned = dpplan_runtime::planned_windows(&plan, &opts)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        for w in planned {
            let slots: Vec<u64> = (0..(48 * 3600 / w.period).clamp(1, 60) as u64).collect();
            let mut row = w.dataset.clone();
            row.bounding.per_unit = false;
            let mut variants = vec![("row", row, None)];
            if row_level(&w.stats).len() < w.stats.len() {
                variants.clear(); // users per cell: user-level only
            }
            if let Some(bound) = w.bound {
                variants.push((
                    "user",
                    lifted(&w.dataset),
                    Some((key.clone(), HashMap::new(), bound)),
                ));
            }
            for (what, dataset, units) in variants {
                windows.push(Job {
                    name: format!("{label}/{} ({what})", w.release),
                    dataset,
                    source: w.source.clone(),
                    column: w.column.to_string(),
                    start: t0,
                    period: w.period,
                    slots: slots.clone(),
                    units,
                    stats: w.stats.clone(),
                });
            }
        }
    }
    assert!(compiled >= 40, "only {compiled} plans compile");
    assert!(
        aggregates.len() >= 50,
        "{} aggregate jobs",
        aggregates.len()
    );
    assert!(windows.len() >= 4, "{} window jobs", windows.len());

    // seeded, so that a sampled job's key can be drawn again (each job
    // draws its seed, then a sampled job its key): a sampled dataset's
    // reference is the embedded engine on the units that key selects
    let mut srng = SecureRng::from_seed_for_tests(2028);
    let requests: Vec<dpplan_spark::Request<'_>> = aggregates
        .iter()
        .map(|(_, dataset, source, stats)| dpplan_spark::Request {
            dataset,
            source,
            stats,
        })
        .collect();
    let got = spark
        .aggregate_many(&requests, &mut srng)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut replay = SecureRng::from_seed_for_tests(2028);
    let mut sampled = 0;
    for (i, ((name, ds, source, stats), got)) in aggregates.iter().zip(&got).enumerate() {
        replay.next_u64();
        let (ds, source) = match ds.sample {
            Some(q) => {
                let key = dpplan_spark::sample_key(&mut replay);
                let below = (q * 2f64.powi(60)).floor() as u64;
                let id = ds.bounding.id_column.as_deref().unwrap();
                let out = dir.path().join(format!("sampled-{i}.csv"));
                common::sampled_csv(source, id, &key, below, &out);
                let mut plain = ds.clone();
                plain.sample = None;
                sampled += 1;
                (plain, out)
            }
            None => (ds.clone(), source.clone()),
        };
        let want = dpplan_engine::Engine::aggregate(&CsvEngine, &ds, &source, stats, &mut srng)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, &want, "{name}");
    }
    // examples/daily-panel's dataset runs sampled on both engines
    assert!(sampled >= 1, "no sampled dataset among the plans");
    let got = spark
        .windows_many(&window_jobs(&windows), &mut srng)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut kept = 0;
    for (j, got) in windows.iter().zip(&got) {
        assert_eq!(got, &j.reference(), "{}", j.name);
        kept += got.iter().map(|s| s.units.len()).sum::<usize>();
    }
    assert!(kept > 0, "no unit kept in any window");
}
