//! The Spark engine against a real Spark (scripts/test.sh starts a
//! standalone master and a worker and sets DPPLAN_SPARK_HOME and
//! DPPLAN_SPARK_MASTER; without them the test is skipped, except under
//! CI=true, where it fails).
//!
//! Every job runs in one `spark-submit` (one JVM start): the shipped
//! examples, a generated 2·10⁵-row file, adversarial data, a plan with one row
//! per unit, and the user-level selection over several seeds. The embedded
//! `CsvEngine` is the reference.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, Engine, StatKind, Statistic};
use dpplan_plan::Dataset;
use dpplan_spark::Request;
use dpplan_vocab::rows::{Filter, GroupKey};
use dpplan_vocab::{Comparison, InvalidRule};
use statrs::distribution::{ChiSquared, ContinuousCDF};

mod common;
use common::{sampled_csv, spark, to_parquet};

fn compile(text: &str) -> dpplan_plan::ExecutablePlan {
    dpplan_compile::compile(text).unwrap_or_else(|e| panic!("{e}"))
}

fn stat(kind: StatKind, grid: i32) -> Statistic {
    Statistic { kind, grid }
}

/// One job: the dataset, its CSV, the statistics, and what to check.
struct Case {
    name: String,
    dataset: Dataset,
    source: PathBuf,
    stats: Vec<Statistic>,
    check: Check,
}

enum Check {
    /// Exactly the embedded engine's aggregates.
    Equal,
    /// User-level bounding of a shipped example: the bounded aggregates
    /// stay within the declared bounds (against the row-level aggregates of
    /// the same data, computed exactly by the embedded engine).
    Bounded { row_level: Vec<Vec<i128>> },
    /// The selection over seeds, checked after all jobs ran.
    Selection(usize),
    /// A sampled dataset: the embedded engine's aggregates of the units
    /// whose HMAC-SHA256 under the job's key is below the threshold
    /// (computed here, apart from the SQL), unsampled, compared exactly
    /// (`bounded: false`: bounds that never bind) or as `Bounded`.
    Sampled { bounded: bool },
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Every shipped example with data: row-level (exact) and, for user-level
/// units, the bounded aggregates.
fn example_cases(cases: &mut Vec<Case>) {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(examples())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut n = 0;
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(dir.join(format!("{name}.dpplan"))).unwrap();
        let plan = compile(&text);
        let opts = dpplan_runtime::RunOptions {
            base_dir: Some(dir.clone()),
            ..Default::default()
        };
        for (ds, source, stats) in dpplan_runtime::planned_aggregates(&plan, &opts).unwrap() {
            if !source.exists() {
                continue;
            }
            n += 1;
            if ds.sample.is_some() {
                // examples/daily-panel: its sample, bounded as drawn
                cases.push(Case {
                    name: format!("{name}/{} (sampled)", ds.name),
                    dataset: ds.clone(),
                    source: source.clone(),
                    stats: stats.clone(),
                    check: Check::Sampled { bounded: true },
                });
            }
            let mut row = ds.clone();
            row.bounding.per_unit = false;
            row.sample = None;
            // units per cell need units: at row level, the rows per cell
            // (an upper bound of the units per cell, checked as one)
            let row_stats: Vec<Statistic> = stats.iter().map(rows_per_cell).collect();
            if ds.bounding.per_unit && ds.sample.is_none() {
                let mut rng = SecureRng::from_seed_for_tests(1);
                let row_level = CsvEngine
                    .aggregate(&row, &source, &row_stats, &mut rng)
                    .unwrap();
                cases.push(Case {
                    name: format!("{name}/{} (user-level)", ds.name),
                    dataset: ds.clone(),
                    source: source.clone(),
                    stats: stats.clone(),
                    check: Check::Bounded { row_level },
                });
            }
            cases.push(Case {
                name: format!("{name}/{} (row-level)", ds.name),
                dataset: row,
                source,
                stats: row_stats,
                check: Check::Equal,
            });
        }
    }
    assert!(n >= 6, "only {n} example datasets with data");
}

/// A statistic a row-level dataset can compute: units per cell become
/// the rows per cell (filtered alike).
fn rows_per_cell(s: &Statistic) -> Statistic {
    fn map(k: &StatKind) -> StatKind {
        match k {
            StatKind::UnitsPerCell { keys } => StatKind::Cells {
                keys: keys.clone(),
                column: None,
            },
            StatKind::Where { filter, of } => StatKind::Where {
                filter: filter.clone(),
                of: Box::new(map(of)),
            },
            other => other.clone(),
        }
    }
    Statistic {
        kind: map(&s.kind),
        grid: s.grid,
    }
}

const STATS_PLAN: &str = r#"plan "t" {
  privacy { unit UNIT adjacency add_remove budget epsilon 20 delta 1e-6 }
  dataset d {
    column uid : id
    column g : category { "a", "b", "c", "d" }
    column v : float in [-5, 100]
    column w : int in [0, 10]
    INVALID
    contribution { BOUNDS }
  }
  query s { sum(d.v) noise laplace scale 100 schedule once }
}"#;

fn dataset(unit: &str, bounds: &str, invalid: &str) -> Dataset {
    let text = STATS_PLAN
        .replace("UNIT", unit)
        .replace("BOUNDS", bounds)
        .replace("INVALID", invalid);
    compile(&text).body.datasets["d"].clone()
}

fn all_stats() -> Vec<Statistic> {
    vec![
        // row-level: the distinct non-empty ids; user-level: the units
        stat(
            StatKind::Distinct {
                column: "uid".into(),
            },
            0,
        ),
        stat(
            StatKind::Distinct {
                column: "uid".into(),
            },
            -1,
        ),
        stat(StatKind::Count, 0),
        stat(StatKind::Count, -3),
        stat(StatKind::Sum { column: "v".into() }, -2),
        stat(StatKind::Sum { column: "v".into() }, 0),
        stat(StatKind::Sum { column: "w".into() }, 0),
        stat(StatKind::GroupedCount { by: "g".into() }, 0),
        stat(
            StatKind::GroupedSum {
                by: "g".into(),
                column: "v".into(),
            },
            -2,
        ),
    ]
}

/// The filters of the filtered cases: a conjunction of a comparison and an
/// `in` set, a disjunction with a negated set and an `int` comparison, and
/// a negated conjunction with `!=`.
fn filters() -> Vec<Filter> {
    let cmp = |column: &str, cmp: Comparison, value: f64| Filter::Compare {
        column: column.into(),
        cmp,
        value,
    };
    let is_in = |values: &[&str]| Filter::In {
        column: "g".into(),
        values: values.iter().map(|v| v.to_string()).collect(),
    };
    vec![
        Filter::And {
            items: vec![cmp("v", Comparison::Gt, 2.5), is_in(&["a", "c"])],
        },
        Filter::Or {
            items: vec![
                Filter::Not {
                    inner: Box::new(is_in(&["b"])),
                },
                cmp("w", Comparison::Le, 4.0),
            ],
        },
        Filter::Not {
            inner: Box::new(Filter::And {
                items: vec![
                    cmp("v", Comparison::Ge, -1.0),
                    cmp("v", Comparison::Ne, 7.5),
                ],
            }),
        },
    ]
}

/// Statistics over several keys and bins: the cells of `g` × bins of `v`
/// (clamped outside), of bins of `w` (dropped outside) × `g`, a count and a
/// sum per cell, the ungrouped count beside them.
fn cell_stats() -> Vec<Statistic> {
    let g = GroupKey::Category {
        column: "g".into(),
        domain: ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect(),
    };
    let v_bins = GroupKey::Bins {
        column: "v".into(),
        edges: vec![0.0, 2.5, 10.0, 50.5, 100.0],
        outside: InvalidRule::Clamp,
    };
    let w_bins = GroupKey::Bins {
        column: "w".into(),
        edges: vec![1.0, 3.0, 4.0, 9.0],
        outside: InvalidRule::Drop,
    };
    vec![
        stat(StatKind::Count, 0),
        stat(
            StatKind::Cells {
                keys: vec![g.clone(), v_bins.clone()],
                column: None,
            },
            0,
        ),
        stat(
            StatKind::Cells {
                keys: vec![g.clone(), v_bins],
                column: Some("v".into()),
            },
            -2,
        ),
        stat(
            StatKind::Cells {
                keys: vec![w_bins, g],
                column: Some("w".into()),
            },
            0,
        ),
    ]
}

/// `stats`, each on the rows `filter` holds for.
fn with_filter(stats: Vec<Statistic>, filter: &Filter) -> Vec<Statistic> {
    stats
        .into_iter()
        .map(|s| Statistic {
            kind: StatKind::Where {
                filter: filter.clone(),
                of: Box::new(s.kind),
            },
            grid: s.grid,
        })
        .collect()
}

/// [`all_stats`], each on the rows `filter` holds for.
fn filtered_stats(filter: &Filter) -> Vec<Statistic> {
    with_filter(all_stats(), filter)
}

/// A CSV field, quoted as RFC 4180 says.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// 2·10⁵ rows (6 MB: several of the embedded engine's 1 MB blocks, ten
/// rows per unit): some invalid numbers, categories outside the domain,
/// values outside the bounds and on half-grid points (rounding ties). The
/// cases below read it a dozen times; at 10⁶ rows Spark's executor spent
/// most of this test's four minutes parsing it again.
const BULK_ROWS: u64 = 200_000;

fn bulk(dir: &Path) -> PathBuf {
    let p = dir.join("bulk.csv");
    let mut s = String::with_capacity(6 << 20);
    s.push_str("uid,g,v,w\n");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..BULK_ROWS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let g = ["a", "b", "c", "d", "zz", ""][(x % 6) as usize];
        let v = match (x >> 8) % 50 {
            0 => "oops".to_string(),
            1 => String::new(),
            2 => format!("{}.125", (x >> 20) % 200),
            3 => format!("-{}.375", (x >> 20) % 9),
            _ => format!("{}", ((x >> 16) % 120_000) as f64 / 1000.0 - 8.0),
        };
        let w = match (x >> 30) % 97 {
            0 => "2.5".to_string(),
            1 => "1e1".to_string(),
            _ => format!("{}", (x >> 40) % 14),
        };
        let _ = writeln!(s, "u{},{g},{v},{w}", i % (BULK_ROWS / 10));
    }
    std::fs::write(&p, s).unwrap();
    p
}

/// One unit with 2·10⁵ rows (all alike, so its bounded contribution is
/// deterministic; several of the embedded engine's blocks), then
/// single-row units with ids that need quoting and values that are NaN,
/// infinite, huge, padded, or not numbers at all.
fn adversarial(dir: &Path) -> PathBuf {
    let p = dir.join("adversarial.csv");
    let mut s = String::with_capacity(3 << 20);
    s.push_str("uid,g,v,w\n");
    for _ in 0..BULK_ROWS {
        s.push_str("bot,a,7.5,3\n");
    }
    let ids = [
        "quote\"d",
        "comma,id",
        "new\nline",
        "crlf\r\nid",
        "ünïcødé-✓",
        "emoji-🦀",
        "  spaced  ",
        "'single'",
        "back`tick",
        "semi;colon",
        "\u{a0}nbsp",
        "table:x",
    ];
    let values = [
        "NaN",
        "nan",
        "inf",
        "-inf",
        "Infinity",
        "-INFINITY",
        "1e308",
        "-1e308",
        "1e400",
        "-1e400",
        " 12 ",
        "\u{a0}4\u{2003}",
        "0x10",
        "1_000",
        "1e3",
        "+.5",
        "5.",
        ".",
        "",
        "1d",
        "2.5e-1",
        "99999999999999999999999",
        "4.9e-324",
        "-0",
        "100.125",
        "100.126",
        "-5.125",
    ];
    let mut n = 0;
    for id in ids {
        for v in values {
            let g = ["a", "b", "c", "d", "A", " a"][n % 6];
            let w = ["3", "3.0", "inf", "-inf", "NaN", "1e1", "2.5", " 4"][n % 8];
            let _ = writeln!(s, "{},{g},{},{w}", field(&format!("{id}{n}")), field(v));
            n += 1;
        }
    }
    // an empty id and a short row: dropped
    s.push_str(",a,1,1\nshort,a\n");
    std::fs::write(&p, s).unwrap();
    p
}

/// One row per unit: user-level bounding never binds, so both engines give
/// the same aggregates.
fn one_row_per_unit(dir: &Path) -> PathBuf {
    let p = dir.join("single.csv");
    let mut s = String::from("uid,g,v,w\n");
    for i in 0..20_000u64 {
        let g = ["a", "b", "c", "d", "e"][(i % 5) as usize];
        let _ = writeln!(s, "id{i},{g},{}.{},{}", i % 97, i % 10, i % 11);
    }
    s.push_str("idnan,a,NaN,1\nidnull,b,,2\n");
    std::fs::write(&p, s).unwrap();
    p
}

/// The units of the selection test: each unit's rows are `ROWS` (values,
/// with a duplicate), and the category `who` names the unit, so a grouped
/// sum by `who` returns every unit's bounded sum.
const UNITS: usize = 1500;
const ROWS: [u32; 6] = [0, 0, 1, 2, 3, 5];
const SEEDS: usize = 4;

fn selection(dir: &Path) -> (Dataset, PathBuf, Dataset, PathBuf) {
    let who: Vec<String> = (0..UNITS).map(|u| format!("\"w{u}\"")).collect();
    let text = format!(
        r#"plan "sel" {{
  privacy {{ unit user by uid adjacency add_remove budget epsilon 20 delta 1e-6 }}
  dataset d {{
    column uid : id
    column who : category {{ {} }}
    column v : int in [0, 10]
    contribution {{ rows_per_unit 2 }}
  }}
  dataset e {{
    column uid : id
    column g : category {{ "a", "b", "c", "d" }}
    contribution {{ rows_per_unit 10 groups_per_unit 2 rows_per_group 2 }}
  }}
  query s {{ sum(d.v) noise laplace scale 100 schedule once }}
  query t {{ count(e) noise laplace scale 100 schedule once }}
}}"#,
        who.join(", ")
    );
    let plan = compile(&text);
    let mut s = String::from("uid,who,v\n");
    for u in 0..UNITS {
        for v in ROWS {
            let _ = writeln!(s, "x{u},w{u},{v}");
        }
    }
    let d = dir.join("sel.csv");
    std::fs::write(&d, s).unwrap();
    let mut s = String::from("uid,g\n");
    for u in 0..UNITS {
        for (g, k) in [("a", 1), ("b", 2), ("c", 3), ("d", 4)] {
            for _ in 0..k {
                let _ = writeln!(s, "y{u},{g}");
            }
        }
    }
    let e = dir.join("groups.csv");
    std::fs::write(&e, s).unwrap();
    (
        plan.body.datasets["d"].clone(),
        d,
        plan.body.datasets["e"].clone(),
        e,
    )
}

/// Chi-square statistic of two samples' counts over the same cells (cells
/// with no observation in either are skipped) and its degrees of freedom.
fn two_sample(a: &[u64], b: &[u64]) -> (f64, f64) {
    let (na, nb) = (a.iter().sum::<u64>() as f64, b.iter().sum::<u64>() as f64);
    let (mut chi, mut cells) = (0.0, 0.0);
    for (&x, &y) in a.iter().zip(b) {
        let t = (x + y) as f64;
        if t == 0.0 {
            continue;
        }
        let ea = t * na / (na + nb);
        let eb = t * nb / (na + nb);
        chi += (x as f64 - ea).powi(2) / ea + (y as f64 - eb).powi(2) / eb;
        cells += 1.0;
    }
    (chi, cells - 1.0)
}

fn critical(df: f64) -> f64 {
    ChiSquared::new(df).unwrap().inverse_cdf(1.0 - 1e-6)
}

/// Keys from the data on Spark: the bounded count per key, exact against
/// the embedded engine wherever the selection cannot differ (row-level
/// units; one row per unit; a unit whose rows are all alike), under both
/// invalid-row rules, with and without a filter; then the site-visits
/// example run whole on Spark through the runtime, whose threshold keeps
/// only keys seen in the data.
#[test]
fn keys_from_data_on_a_real_spark() {
    let Some(engine) = spark() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bulk = bulk(dir.path());
    let adv = adversarial(dir.path());
    let single = one_row_per_unit(dir.path());
    let user = "rows_per_unit 3 groups_per_unit 1 rows_per_group 2";
    let cases = [
        ("bulk", &bulk, "row", "", "", None),
        ("bulk", &bulk, "row", "", "invalid_rows clamp", Some(0)),
        ("adversarial", &adv, "user by uid", user, "", None),
        (
            "one row per unit",
            &single,
            "user by uid",
            user,
            "",
            Some(1),
        ),
    ];
    let mut rng = SecureRng::from_os().unwrap();
    for (what, source, unit, bounds, drop, f) in cases {
        let ds = dataset(unit, bounds, drop);
        let filter = f.map(|f| filters()[f].clone());
        let got = engine
            .aggregate_keys(&ds, source, "g", filter.as_ref(), &mut rng)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let want = CsvEngine
            .aggregate_keys(&ds, source, "g", filter.as_ref(), &mut rng)
            .unwrap();
        assert!(!want.is_empty(), "{what}: no key");
        assert_eq!(got, want, "{what}, {unit}, {drop}, filter {f:?}");
    }
    // the whole example on Spark: nothing refused, every released key is
    // a value of the data
    let ex = examples().join("site-visits");
    let text = std::fs::read_to_string(ex.join("site-visits.dpplan")).unwrap();
    let plan = compile(&text);
    let opts = dpplan_runtime::RunOptions {
        base_dir: Some(ex.clone()),
        ledger: dir.path().join("site-visits.sqlite"),
        slot: Some(0),
        ..Default::default()
    };
    let out = dpplan_runtime::run(&plan, &opts, &engine).unwrap();
    assert!(out.refused.is_empty(), "{:?}", out.refused);
    let data = std::fs::read_to_string(ex.join("data/visits.csv")).unwrap();
    let fresh: Vec<_> = out
        .results
        .iter()
        .filter(|r| r.origin == dpplan_runtime::Origin::Fresh)
        .collect();
    assert_eq!(fresh.len(), 2, "both queries released");
    for r in fresh {
        for c in &r.cells {
            let label = c.group.as_deref().unwrap_or_default();
            assert!(
                data.contains(&format!(",{label}")),
                "{}: `{label}`",
                r.query
            );
        }
    }
}

#[test]
fn spark_engine_on_a_real_spark() {
    let Some(engine) = spark() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    example_cases(&mut cases);

    let bulk = bulk(dir.path());
    for (unit, drop) in [("row", ""), ("row", "invalid_rows clamp")] {
        cases.push(Case {
            name: format!("2·10^5 rows, {unit} {drop}"),
            dataset: dataset(unit, "", drop),
            source: bulk.clone(),
            stats: all_stats(),
            check: Check::Equal,
        });
    }
    let adv = adversarial(dir.path());
    for drop in ["", "invalid_rows clamp"] {
        cases.push(Case {
            name: format!("adversarial {drop}"),
            dataset: dataset(
                "user by uid",
                "rows_per_unit 3 groups_per_unit 1 rows_per_group 2",
                drop,
            ),
            source: adv.clone(),
            stats: all_stats(),
            check: Check::Equal,
        });
    }
    let single = one_row_per_unit(dir.path());
    cases.push(Case {
        name: "one row per unit".into(),
        dataset: dataset(
            "user by uid",
            "rows_per_unit 2 groups_per_unit 1 rows_per_group 1",
            "",
        ),
        source: single.clone(),
        stats: all_stats(),
        check: Check::Equal,
    });
    // a path that would break SQL if it were ever spliced into it: it only
    // travels in the job file
    let hostile = dir.path().join("we'ird `dir` \"ü\"; DROP TABLE x; --");
    std::fs::create_dir_all(&hostile).unwrap();
    let hostile = hostile.join("single copy.csv");
    std::fs::copy(&single, &hostile).unwrap();
    cases.push(Case {
        name: "hostile path".into(),
        dataset: dataset("row", "", ""),
        source: hostile,
        stats: all_stats(),
        check: Check::Equal,
    });
    // the same rows from a typed source (Parquet: doubles, a NaN, integers)
    let parquet = dir.path().join("single.parquet");
    to_parquet(
        &single,
        &parquet,
        "uid STRING, g STRING, v DOUBLE, w BIGINT",
    );
    for drop in ["", "invalid_rows clamp"] {
        cases.push(Case {
            name: format!("parquet {drop}"),
            dataset: dataset("row", "", drop),
            source: parquet.clone(),
            stats: all_stats(),
            check: Check::Equal,
        });
    }
    // `where` filters, decided on the valid rows before bounding: the
    // same exact aggregates as the embedded engine, row- and user-level,
    // under both invalid-row rules, from text and from a typed source
    let filtered = [
        ("bulk", &bulk, "row", "", 0),
        ("bulk", &bulk, "row", "invalid_rows clamp", 1),
        ("bulk", &bulk, "row", "", 2),
        ("adversarial", &adv, "user by uid", "invalid_rows clamp", 0),
        ("adversarial", &adv, "user by uid", "", 2),
        ("one row per unit", &single, "user by uid", "", 0),
        ("parquet", &parquet, "row", "", 1),
    ];
    for (what, source, unit, drop, f) in filtered {
        let bounds = if unit == "row" {
            ""
        } else {
            "rows_per_unit 3 groups_per_unit 1 rows_per_group 2"
        };
        cases.push(Case {
            name: format!("{what}, filter {f}, {unit} {drop}"),
            dataset: dataset(unit, bounds, drop),
            source: source.clone(),
            stats: filtered_stats(&filters()[f]),
            check: Check::Equal,
        });
    }
    // several keys and bins (clamped and dropped outside their edges), a
    // count and a sum per cell, with and without a filter
    let celled = [
        ("bulk", &bulk, "row", "", None),
        ("bulk", &bulk, "row", "invalid_rows clamp", Some(1)),
        ("adversarial", &adv, "user by uid", "", None),
        (
            "adversarial",
            &adv,
            "user by uid",
            "invalid_rows clamp",
            Some(0),
        ),
        ("parquet", &parquet, "row", "", Some(2)),
    ];
    for (what, source, unit, drop, f) in celled {
        let bounds = if unit == "row" {
            ""
        } else {
            "rows_per_unit 3 groups_per_unit 1 rows_per_group 2"
        };
        let stats = cell_stats();
        cases.push(Case {
            name: format!("{what}, cells, filter {f:?}, {unit} {drop}"),
            dataset: dataset(unit, bounds, drop),
            source: source.clone(),
            stats: match f {
                Some(f) => with_filter(stats, &filters()[f]),
                None => stats,
            },
            check: Check::Equal,
        });
    }
    // the distinct values of a column other than the unit's, among the
    // kept rows (deterministic here: the adversarial unit's rows are
    // alike, every other unit has one row), with a grouped count beside
    let distinct_g = vec![
        stat(StatKind::Distinct { column: "g".into() }, 0),
        stat(StatKind::GroupedCount { by: "g".into() }, 0),
    ];
    for (what, source, unit, bounds) in [
        ("bulk", &bulk, "row", ""),
        (
            "adversarial",
            &adv,
            "user by uid",
            "rows_per_unit 3 groups_per_unit 1 rows_per_group 2",
        ),
        (
            "one row per unit",
            &single,
            "user by uid",
            "rows_per_unit 2 groups_per_unit 1 rows_per_group 1",
        ),
    ] {
        cases.push(Case {
            name: format!("{what}, distinct g, {unit}"),
            dataset: dataset(unit, bounds, ""),
            source: source.clone(),
            stats: distinct_g.clone(),
            check: Check::Equal,
        });
    }
    // sampled units: 30 % of 20,002 single-row units (exact), half of
    // the adversarial ids (quotes, new lines, Unicode: the HMAC reads the
    // id's UTF-8 bytes as the CSV gives them; the bot's 2·10⁵ rows bounded)
    for (what, source, rate, bounds) in [
        (
            "one row per unit",
            &single,
            0.3,
            "rows_per_unit 2 groups_per_unit 1 rows_per_group 1",
        ),
        (
            "adversarial",
            &adv,
            0.5,
            "rows_per_unit 3 groups_per_unit 1 rows_per_group 2",
        ),
    ] {
        let mut ds = dataset("user by uid", bounds, "");
        ds.sample = Some(rate);
        cases.push(Case {
            name: format!("{what}, sampled {rate}"),
            dataset: ds,
            source: source.clone(),
            stats: all_stats(),
            check: Check::Sampled { bounded: false },
        });
    }
    let (sel_d, sel_csv, grp_e, grp_csv) = selection(dir.path());
    let sel_stats = vec![
        stat(
            StatKind::GroupedSum {
                by: "who".into(),
                column: "v".into(),
            },
            0,
        ),
        stat(StatKind::GroupedCount { by: "who".into() }, 0),
    ];
    let grp_stats = vec![stat(StatKind::GroupedCount { by: "g".into() }, 0)];
    for s in 0..SEEDS {
        cases.push(Case {
            name: format!("selection, seed {s}"),
            dataset: sel_d.clone(),
            source: sel_csv.clone(),
            stats: sel_stats.clone(),
            check: Check::Selection(0),
        });
        cases.push(Case {
            name: format!("groups, seed {s}"),
            dataset: grp_e.clone(),
            source: grp_csv.clone(),
            stats: grp_stats.clone(),
            check: Check::Selection(1),
        });
    }

    let requests: Vec<Request<'_>> = cases
        .iter()
        .map(|c| Request {
            dataset: &c.dataset,
            source: &c.source,
            stats: &c.stats,
        })
        .collect();
    // seeded, so that the sampled jobs' keys can be drawn again below
    // (each job draws its seed, then a sampled job its key)
    let mut rng = SecureRng::from_seed_for_tests(28);
    let got = engine.aggregate_many(&requests, &mut rng).unwrap();
    assert_eq!(got.len(), cases.len());
    let mut replay = SecureRng::from_seed_for_tests(28);
    let keys: Vec<Option<[u8; 32]>> = cases
        .iter()
        .map(|c| {
            replay.next_u64();
            c.dataset
                .sample
                .map(|_| dpplan_spark::sample_key(&mut replay))
        })
        .collect();
    let mut sampled_jobs = 0;

    let mut sel_spark: Vec<Vec<i128>> = Vec::new();
    let mut grp_spark: Vec<Vec<i128>> = Vec::new();
    for ((c, g), key) in cases.iter().zip(&got).zip(&keys) {
        if let (Check::Sampled { bounded }, Some(key)) = (&c.check, key) {
            check_sampled(c, g, key, *bounded, dir.path(), &mut rng);
            sampled_jobs += 1;
            continue;
        }
        // the embedded engine reads the CSV a Parquet file was made from
        let csv = match c.source.extension() {
            Some(x) if x == "parquet" => c.source.with_extension("csv"),
            _ => c.source.clone(),
        };
        let want = CsvEngine
            .aggregate(&c.dataset, &csv, &c.stats, &mut rng)
            .unwrap();
        match &c.check {
            Check::Equal => assert_eq!(g, &want, "{}", c.name),
            Check::Bounded { row_level } => check_bounded(c, g, &want, row_level),
            Check::Selection(0) => {
                // every unit keeps exactly 2 rows; its sum is within [0, 8]
                assert!(g[1].iter().all(|&n| n == 2), "{}", c.name);
                sel_spark.push(g[0].clone());
            }
            Check::Selection(_) => grp_spark.push(g[0].clone()),
            Check::Sampled { .. } => unreachable!("a sampled case has a key"),
        }
    }
    // the two sampled cases and examples/daily-panel's passes (one per
    // sampled release)
    assert!(sampled_jobs >= 5, "{sampled_jobs} sampled jobs");
    check_selection(&sel_d, &sel_csv, &sel_stats, &sel_spark);
    check_groups(&grp_e, &grp_csv, &grp_stats, &grp_spark);
}

/// A sampled job: Spark's aggregates are the embedded engine's of the
/// units its key selects (the statement's HMAC computed again here), the
/// sample's size is within six standard deviations of its binomial mean,
/// and (negative controls) neither every unit nor the units of another key
/// give the same aggregates.
fn check_sampled(
    c: &Case,
    got: &[Vec<i128>],
    key: &[u8; 32],
    bounded: bool,
    dir: &Path,
    rng: &mut SecureRng,
) {
    let q = c.dataset.sample.unwrap();
    let below = (q * 2f64.powi(60)).floor() as u64;
    let id = c.dataset.bounding.id_column.as_deref().unwrap();
    let mut plain = c.dataset.clone();
    plain.sample = None;
    let row_stats: Vec<Statistic> = c.stats.iter().map(rows_per_cell).collect();
    let mut row = plain.clone();
    row.bounding.per_unit = false;
    let reference = |key: &[u8; 32], rng: &mut SecureRng| {
        let out = dir.join(format!("sampled-{:02x}{:02x}.csv", key[0], key[1]));
        let (kept, seen) = sampled_csv(&c.source, id, key, below, &out);
        let want = CsvEngine.aggregate(&plain, &out, &c.stats, rng).unwrap();
        let row_level = CsvEngine.aggregate(&row, &out, &row_stats, rng).unwrap();
        (want, row_level, kept, seen)
    };
    let (want, row_level, kept, seen) = reference(key, rng);
    let (n, p) = (seen as f64, below as f64 / 2f64.powi(60));
    let sd = (n * p * (1.0 - p)).sqrt();
    assert!(
        (kept as f64 - n * p).abs() <= 6.0 * sd + 1.0,
        "{}: {kept} of {seen} units sampled at {q}",
        c.name
    );
    if bounded {
        check_bounded(c, got, &want, &row_level);
    } else {
        assert_eq!(got, &want[..], "{}", c.name);
    }
    // negative controls: the whole data, and another key's sample
    if seen > 100 {
        let all = CsvEngine
            .aggregate(&plain, &c.source, &c.stats, rng)
            .unwrap();
        assert_ne!(got, &all[..], "{}: nothing was sampled", c.name);
        let mut other = *key;
        other[0] ^= 1;
        let (want_other, ..) = reference(&other, rng);
        assert_ne!(got, &want_other[..], "{}: another key's sample", c.name);
    }
}

/// User-level bounding of an example: counts without group bounds are
/// deterministic (Σ min(rows, rows_per_unit)) and equal; grouped cells are
/// subsets of the row-level cells; sums stay within count × the bounds.
fn check_bounded(c: &Case, got: &[Vec<i128>], embedded: &[Vec<i128>], row: &[Vec<i128>]) {
    let b = &c.dataset.bounding;
    for (i, s) in c.stats.iter().enumerate() {
        let summed = match s.kind.unfiltered() {
            StatKind::Sum { column }
            | StatKind::GroupedSum { column, .. }
            | StatKind::Cells {
                column: Some(column),
                ..
            } => Some(column),
            _ => None,
        };
        match (s.kind.unfiltered(), summed) {
            (StatKind::Count, _) => assert_eq!(got[i], embedded[i], "{}: count", c.name),
            // the units with a kept row: those with a valid row
            (StatKind::Distinct { column }, _) if b.id_column.as_ref() == Some(column) => {
                assert_eq!(got[i], embedded[i], "{}: units", c.name)
            }
            // another column's distinct values among the kept rows
            (StatKind::Distinct { .. }, _) => {
                assert!(0 <= got[i][0] && got[i][0] <= row[i][0], "{}", c.name)
            }
            (_, None) => {
                // a grouped count: each cell within the row-level cell
                for (x, r) in got[i].iter().zip(&row[i]) {
                    assert!(0 <= *x && x <= r, "{}: {x} > {r}", c.name);
                }
                let total: i128 = got[i].iter().sum();
                let cap = b.rows_per_unit.unwrap_or(1) as i128;
                let units_rows: i128 = row[i].iter().sum();
                assert!(total <= units_rows.min(i128::MAX / cap), "{}", c.name);
            }
            (_, Some(column)) => {
                let col = c
                    .dataset
                    .columns
                    .iter()
                    .find(|x| &x.name == column)
                    .unwrap();
                let [lo, hi] = col.bounds.unwrap();
                let scale = 2f64.powi(-s.grid);
                let m = (lo.abs().max(hi.abs()) * scale).ceil() as i128;
                let rows: i128 = row
                    .iter()
                    .zip(&c.stats)
                    .find(|(_, s)| *s.kind.unfiltered() == StatKind::Count)
                    .map(|(r, s)| r[0] >> -s.grid)
                    .unwrap_or(i128::MAX / (m + 1));
                for x in &got[i] {
                    assert!(x.abs() <= rows * m, "{}: |{x}| > {rows} × {m}", c.name);
                }
            }
        }
    }
}

/// Per-unit bounded sums: Spark's against the embedded engine's (two-sample
/// chi-square) and against the exact distribution of the sum of a uniform
/// 2-subset of the unit's rows (goodness of fit), at a 10⁻⁶ false alarm.
fn check_selection(ds: &Dataset, csv: &Path, stats: &[Statistic], spark: &[Vec<i128>]) {
    let cells = 11;
    let hist = |runs: &[Vec<i128>]| {
        let mut h = vec![0u64; cells];
        for r in runs {
            for &x in r {
                assert!((0..=8).contains(&x), "a unit's sum {x} outside [0, 8]");
                h[x as usize] += 1;
            }
        }
        h
    };
    let mut rng = SecureRng::from_os().unwrap();
    let embedded: Vec<Vec<i128>> = (0..SEEDS)
        .map(|_| CsvEngine.aggregate(ds, csv, stats, &mut rng).unwrap()[0].clone())
        .collect();
    let (hs, he) = (hist(spark), hist(&embedded));
    let (chi, df) = two_sample(&hs, &he);
    assert!(
        chi < critical(df),
        "two-sample χ² {chi} (df {df}): {hs:?} vs {he:?}"
    );
    // exact: all pairs of distinct positions
    let mut pmf = vec![0f64; cells];
    let pairs = (ROWS.len() * (ROWS.len() - 1) / 2) as f64;
    for i in 0..ROWS.len() {
        for j in i + 1..ROWS.len() {
            pmf[(ROWS[i] + ROWS[j]) as usize] += 1.0 / pairs;
        }
    }
    let n = hs.iter().sum::<u64>() as f64;
    let (mut chi, mut df) = (0.0, -1.0);
    for (o, p) in hs.iter().zip(&pmf) {
        if *p > 0.0 {
            chi += (*o as f64 - n * p).powi(2) / (n * p);
            df += 1.0;
        } else {
            assert_eq!(*o, 0);
        }
    }
    assert!(chi < critical(df), "goodness of fit χ² {chi}: {hs:?}");
    // negative control: the selection that ignores duplicates (each
    // distinct value equally likely) is rejected by the same test
    let mut wrong = vec![0f64; cells];
    let distinct = [0u32, 1, 2, 3, 5];
    for i in 0..distinct.len() {
        for j in i + 1..distinct.len() {
            wrong[(distinct[i] + distinct[j]) as usize] += 1.0 / 10.0;
        }
    }
    let chi_wrong: f64 = hs
        .iter()
        .zip(&wrong)
        .filter(|(_, p)| **p > 0.0)
        .map(|(o, p)| (*o as f64 - n * p).powi(2) / (n * p))
        .sum();
    assert!(
        chi_wrong > critical(df),
        "the wrong pmf was not rejected: {chi_wrong}"
    );
}

/// groups_per_unit 2 of 4 groups (sizes 1, 2, 3, 4), rows_per_group 2:
/// each group is kept with probability 1/2, and then with min(size, 2)
/// rows. Both engines' totals over the seeds within 6 standard deviations
/// of the exact mean.
fn check_groups(ds: &Dataset, csv: &Path, stats: &[Statistic], spark: &[Vec<i128>]) {
    let mut rng = SecureRng::from_os().unwrap();
    let embedded: Vec<Vec<i128>> = (0..SEEDS)
        .map(|_| CsvEngine.aggregate(ds, csv, stats, &mut rng).unwrap()[0].clone())
        .collect();
    let n = (UNITS * SEEDS) as f64;
    for (name, runs) in [("spark", spark), ("embedded", &embedded[..])] {
        assert_eq!(runs.len(), SEEDS);
        for run in runs {
            // every unit keeps exactly 2 groups
            let kept: i128 = run.iter().sum();
            assert!(
                kept <= (UNITS * 4) as i128 && kept >= (UNITS * 3) as i128,
                "{name} {run:?}"
            );
        }
        for (g, rows) in [1f64, 2.0, 2.0, 2.0].into_iter().enumerate() {
            let total: i128 = runs.iter().map(|r| r[g]).sum();
            let mean = n * 0.5 * rows;
            let sd = (n * 0.25).sqrt() * rows;
            assert!(
                (total as f64 - mean).abs() < 6.0 * sd,
                "{name} group {g}: {total} vs {mean} ± {sd}"
            );
        }
    }
}
