use super::*;
use dpplan_engine::StatKind;

fn plan(src: &str) -> dpplan_plan::ExecutablePlan {
    dpplan_compile::compile(src).unwrap_or_else(|e| panic!("{e}"))
}

fn web() -> dpplan_plan::ExecutablePlan {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/web-analytics");
    let text = std::fs::read_to_string(format!("{dir}/web-analytics.dpplan")).unwrap();
    plan(&text)
}

fn stats() -> Vec<Statistic> {
    vec![
        Statistic {
            kind: StatKind::Count,
            grid: 0,
        },
        Statistic {
            kind: StatKind::GroupedCount { by: "page".into() },
            grid: 0,
        },
        Statistic {
            kind: StatKind::Sum {
                column: "seconds".into(),
            },
            grid: -2,
        },
    ]
}

/// The statement is deterministic and reviewed: a snapshot (also shown in
/// docs/executable-plan.md).
#[test]
fn generated_sql_snapshot() {
    let p = web();
    let ds = &p.body.datasets["visits"];
    let st = stats();
    let req = [Request {
        dataset: ds,
        source: Path::new("/data/visits.csv"),
        stats: &st,
    }];
    let a = SparkEngine::explain(&req).unwrap();
    let b = SparkEngine::explain(&req).unwrap();
    assert_eq!(a, b);
    assert!(a.contains(":seed"));
    insta::assert_snapshot!("web_analytics_csv", a);
    let req = [Request {
        dataset: ds,
        source: Path::new("table:warehouse.visits"),
        stats: &st,
    }];
    insta::assert_snapshot!("web_analytics_table", SparkEngine::explain(&req).unwrap());
}

#[test]
fn row_level_sql_has_no_bounding() {
    let p = plan(
        r#"plan "t" {
  privacy { unit row adjacency add_remove budget epsilon 1 delta 1e-6 }
  dataset d { column v : int in [0, 10] column g : category { "a", "b" } }
  query s { histogram(d by g) noise laplace scale 10 schedule once }
}"#,
    );
    let q = sql::generate(
        &p.body.datasets["d"],
        &[Statistic {
            kind: StatKind::GroupedCount { by: "g".into() },
            grid: 0,
        }],
        Columns::Text,
    )
    .unwrap();
    assert!(!q.sql.contains("OVER"), "{}", q.sql);
    assert!(!q.sql.contains("seed"), "{}", q.sql);
    // the int is still checked (invalid rows dropped)
    assert!(q.sql.contains("p0 % 1.0D"), "{}", q.sql);
}

/// A sampled dataset's statement keeps the rows of the units whose
/// HMAC-SHA256 under the job's key falls below ⌊q·2⁶⁰⌋, before the
/// bounding reads them; the key is bound per job and never written into
/// the statement or `--explain` (its names are). Where no unit is drawn
/// for (a row unit) it is refused by name; unsampled (or at 100 %) the
/// statement has no sampling step (negative control).
#[test]
fn a_sampled_dataset_draws_its_units_by_a_keyed_hmac() {
    let p = web();
    let mut ds = p.body.datasets["visits"].clone();
    let st = stats();
    let plain = sql::generate(&ds, &st, Columns::Text).unwrap();
    assert!(!plain.sampled() && !plain.sql.contains("sampled AS"));
    assert!(!plain.params.contains_key(sql::SAMPLE_BELOW));
    ds.sample = Some(1.0);
    assert_eq!(sql::generate(&ds, &st, Columns::Text).unwrap(), plain);
    ds.sample = Some(0.05);
    let q = sql::generate(&ds, &st, Columns::Text).unwrap();
    assert!(q.sampled());
    // ⌊q·2⁶⁰⌋ of the f64 q the accountants compose (0.05 rounds up a little)
    let want = (0.05f64 * 2f64.powi(60)).floor() as i64;
    assert_eq!(want, 57_646_075_230_342_352);
    assert_eq!(q.params[sql::SAMPLE_BELOW], sql::Param::Int(want));
    assert!(
        q.sql
            .contains("sampled AS (\n  SELECT * FROM cells\n  WHERE"),
        "{}",
        q.sql
    );
    assert!(q.sql.contains("FROM sampled"), "{}", q.sql);
    assert!(q.sql.contains(":sample_ikey") && q.sql.contains(":sample_okey"));
    // the shuffle by unit reads the sample, not every valid row
    let numbered = q.sql.find("numbered AS").unwrap();
    assert!(q.sql.find("sampled AS").unwrap() < numbered);
    // HMAC's pads: the key then zeros to 64 bytes, XORed with 0x36 / 0x5c
    let key: [u8; 32] = std::array::from_fn(|i| i as u8);
    let inner = sql::hmac_pad_hex(&key, 0x36);
    assert_eq!(inner.len(), 128);
    assert!(inner.starts_with("363734353233"), "{inner}");
    assert!(inner.ends_with("3636"), "{inner}");
    assert!(sql::hmac_pad_hex(&key, 0x5c).starts_with("5c5d5e5f"));
    // --explain names the key, never a value
    let source = std::path::PathBuf::from("visits.csv");
    let text = crate::SparkEngine::explain(&[crate::Request {
        dataset: &ds,
        source: &source,
        stats: &st,
    }])
    .unwrap();
    assert!(
        text.contains(":sample_ikey and :sample_okey = a secret 256-bit HMAC key"),
        "{text}"
    );
    assert!(text.contains(&format!(":sample_below = {want}")), "{text}");
    // the rate as the run's words print it: 7 %, not 7.000000000000001 %
    let mut seven = ds.clone();
    seven.sample = Some(0.07);
    let q7 = sql::generate(&seven, &st, Columns::Text).unwrap();
    assert!(q7.sql.contains("-- sample units 7 %:"), "{}", q7.sql);
    // a rate outside (0, 1] (never from the compiler) is refused, not
    // taken for no sampling
    for bad in [0.0, -0.5, 1.5, f64::NAN] {
        let mut b = ds.clone();
        b.sample = Some(bad);
        let err = sql::generate(&b, &st, Columns::Text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not in (0, 1]"), "{bad}: {err}");
    }
    // a row unit has no unit to draw for: refused by name
    let mut rows = ds.clone();
    rows.bounding.per_unit = false;
    let err = sql::generate(&rows, &st, Columns::Text)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("samples its units") && err.contains("user-level"),
        "{err}"
    );
}

/// No user string reaches the SQL unquoted: names that are not plain
/// identifiers are refused, domain values are bound parameters, table names
/// are validated, and file paths only travel in the job file.
#[test]
fn hostile_names_never_reach_the_sql() {
    for bad in [
        "a`b",
        "a b",
        "x; DROP TABLE t",
        "é",
        "",
        "1a",
        "a\nb",
        "a'b",
        "a\"b",
        "a.b",
    ] {
        assert!(sql::quote(bad).is_err(), "{bad:?}");
    }
    assert_eq!(sql::quote("_ok1").unwrap(), "`_ok1`");
    // a plan whose executable form was edited by hand (the loader would
    // refuse it; the generator refuses it too)
    let mut p = web();
    let ds = p.body.datasets.get_mut("visits").unwrap();
    ds.columns[1].name = "page` FROM x --".into();
    let e = sql::generate(
        ds,
        &[Statistic {
            kind: StatKind::GroupedCount {
                by: "page` FROM x --".into(),
            },
            grid: 0,
        }],
        Columns::Text,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not a plain identifier"), "{e}");
    // hostile domain values: bound, never in the text
    let mut p = web();
    let ds = p.body.datasets.get_mut("visits").unwrap();
    ds.columns[1].domain = Some(vec!["x') OR 1=1 --".into(), "`;\n".into()]);
    let q = sql::generate(ds, &stats(), Columns::Text).unwrap();
    assert!(
        !q.sql.contains("OR 1=1") && !q.sql.contains("`;"),
        "{}",
        q.sql
    );
    assert_eq!(
        q.params["dk0"],
        sql::Param::Strings(vec!["x') OR 1=1 --".into(), "`;\n".into()])
    );
    // table names: parts are identifiers
    for bad in [
        "table:db.`x`",
        "table:a;b",
        "table:",
        "table:a..b",
        "table:a b",
    ] {
        assert!(Source::parse("d", Path::new(bad)).is_err(), "{bad}");
    }
    assert_eq!(
        Source::parse("d", Path::new("table:db.events")).unwrap(),
        Source {
            format: "table".into(),
            location: "`db`.`events`".into()
        }
    );
    // a hostile path is data of the job file, not SQL
    let s = Source::parse("d", Path::new("/tmp/x'`;\n DROP/a.parquet")).unwrap();
    assert_eq!(s.format, "parquet");
    let st = stats();
    let text = SparkEngine::explain(&[Request {
        dataset: &web().body.datasets["visits"],
        source: Path::new("/tmp/x'`;\n DROP/a.parquet"),
        stats: &st,
    }])
    .unwrap();
    let sql_part = text.split_once("WITH").unwrap().1;
    assert!(!sql_part.contains("DROP"), "{text}");
}

#[test]
fn formats_by_extension() {
    for (p, f) in [
        ("a.csv", "csv"),
        ("dir/x.PARQUET", "parquet"),
        ("hdfs://nn/x.orc/", "orc"),
        ("s3a://b/events.parquet", "parquet"),
    ] {
        assert_eq!(Source::parse("d", Path::new(p)).unwrap().format, f, "{p}");
    }
    let e = Source::parse("d", Path::new("x.json")).unwrap_err();
    assert!(e.to_string().contains(".csv, .parquet or .orc"), "{e}");
    assert_eq!(
        Source::parse("d", Path::new("s3a://b/events.parquet"))
            .unwrap()
            .location,
        "s3a://b/events.parquet"
    );
    assert!(Path::new(&Source::parse("d", Path::new("a.csv")).unwrap().location).is_absolute());
}

/// The result rows are read back per statistic: the ungrouped set, each
/// grouping set, rows outside the domain or not kept skipped, counts shifted
/// onto the grid.
#[test]
fn decode_reads_grouping_sets() {
    let p = web();
    let ds = &p.body.datasets["visits"];
    let mut st = stats();
    st.push(Statistic {
        kind: StatKind::Count,
        grid: -3,
    });
    let q = sql::generate(ds, &st, Columns::Text).unwrap();
    assert_eq!(q.width(), 2 + 1 + 1);
    let r = |a: &str, k: Option<&str>, n: &str, s: Option<&str>| {
        vec![
            Some(a.to_string()),
            k.map(str::to_string),
            Some(n.to_string()),
            s.map(str::to_string),
        ]
    };
    let rows = vec![
        r(
            "1",
            None,
            "10",
            Some("-170141183460469231731687303715884105728"),
        ),
        r("0", Some("2"), "4", Some("7")),
        r("0", None, "3", Some("1")),
        r("0", Some("0"), "2", Some("5")),
    ];
    let out = q.decode(&rows).unwrap();
    assert_eq!(out[0], vec![10]);
    assert_eq!(out[1], vec![2, 0, 4]);
    assert_eq!(out[2], vec![i128::MIN]);
    assert_eq!(out[3], vec![80]);
    // nothing returned: zeros
    let out = q.decode(&[]).unwrap();
    assert_eq!(out, vec![vec![0], vec![0, 0, 0], vec![0], vec![0]]);
    // malformed
    assert!(q.decode(&[vec![None]]).is_err());
    assert!(q.decode(&[r("0", Some("9"), "1", Some("1"))]).is_err());
    assert!(q.decode(&[r("1", None, "x", None)]).is_err());
}

/// The runner's failures, with stand-in `spark-submit` programs (no Spark
/// needed): each error is clear, names no data, and keeps Spark's log out
/// of the message.
#[cfg(unix)]
#[test]
fn runner_failures_are_clear() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let fake = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        SparkEngine {
            submit: p,
            master: Some("local[1]".into()),
            conf: vec![],
        }
    };
    let p = web();
    let ds = &p.body.datasets["visits"];
    let st = stats();
    let run = |e: &SparkEngine| {
        let mut rng = SecureRng::from_seed_for_tests(3);
        e.aggregate(ds, Path::new("/data/visits.csv"), &st, &mut rng)
            .unwrap_err()
            .to_string()
    };
    // killed: by signal, the log kept but not printed
    let e = run(&fake("killed", "echo 'secret-value-42' >&2\nkill -9 $$"));
    assert!(e.contains("was killed by signal 9"), "{e}");
    assert!(
        e.contains("spark-submit.log") && !e.contains("secret-value-42"),
        "{e}"
    );
    let kept = |e: &str, secret: bool| {
        let log = e.split('`').nth(1).unwrap();
        let log = Path::new(log);
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(log.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700, "the job's directory is private");
        }
        // the job file (the run's seed, a ledger's unit key) is not kept
        assert!(!log.with_file_name("job.json").exists());
        assert!(!log.with_file_name("result.json").exists());
        assert_eq!(
            std::fs::read_to_string(log)
                .unwrap()
                .contains("secret-value-42"),
            secret
        );
        std::fs::remove_dir_all(log.parent().unwrap()).unwrap();
    };
    kept(&e, true);
    // failed without a result
    let e = run(&fake("fails", "echo 'secret-value-42'\nexit 7"));
    assert!(e.contains("exited with status 7"), "{e}");
    assert!(!e.contains("secret-value-42"), "{e}");
    kept(&e, true);
    // the driver's own refusal: its message, as a schema error; the
    // arguments are the driver, the job file and the result file
    let e = run(&fake(
        "refuses",
        r#"for a; do out="$a"; done
printf '{"error": {"kind": "schema", "dataset": "visits", "message": "column `seconds` of dataset `visits` is `string` in the source, but the plan declares it `float`"}}' > "$out"
exit 3"#,
    ));
    assert_eq!(
        e,
        "column `seconds` of dataset `visits` is `string` in the source, but the plan declares it `float`"
    );
    // a malformed result
    let e = run(&fake(
        "garbage",
        r#"for a; do out="$a"; done
printf '{"results": [[["1", "x"]]]}' > "$out""#,
    ));
    assert!(e.contains("malformed"), "{e}");
    // the job file holds the seed's value, the SQL and the source
    let e = run(&fake(
        "inspect",
        r#"for a; do job="$out"; out="$a"; done
grep -q '"seed":' "$job" && grep -q ':seed' "$job" && grep -q '"location":"/data/visits.csv"' "$job" && exit 9
exit 1"#,
    ));
    assert!(e.contains("exited with status 9"), "{e}");
    kept(&e, false);
}

/// A quantile's statistic (the rows per bin of its candidate grid: a
/// value's bin is the number of candidates ≤ it) is counted by Spark — a
/// balanced tree of comparisons per row, depth log2 of the grid — and the
/// selection stays in dpplan. The tree's literals are the grid's edges,
/// written so that Spark reads back the same doubles.
#[test]
fn quantiles_are_counted_per_bin() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/trip-fares");
    let text = std::fs::read_to_string(format!("{dir}/trip-fares.dpplan")).unwrap();
    let p = plan(&text);
    let opts = dpplan_runtime::RunOptions::default();
    let planned = dpplan_runtime::planned_aggregates(&p, &opts).unwrap();
    let (ds, source, st) = &planned[0];
    let req = [Request {
        dataset: ds,
        source,
        stats: st,
    }];
    let sql = SparkEngine::explain(&req).unwrap();
    // the median's grid: 161 candidates 0, 0.5, …, 80 (bins 0..=161),
    // values below the first or above the last clamped into the end bins
    assert!(sql.contains("WHEN n0 < -5e-324 THEN 0"), "{sql}");
    assert!(
        sql.contains("WHEN n0 > 8.000000000000001e1 THEN 161"),
        "{sql}"
    );
    assert!(sql.contains("CASE WHEN n0 >= 4e1 THEN"), "{sql}");
    // a tree, not a chain: depth ⌈log2 162⌉ = 8 comparisons deep at most
    let line = sql
        .lines()
        .find(|l| l.contains("8.000000000000001e1"))
        .unwrap();
    let mut depth: usize = 0;
    let mut deepest = 0;
    for w in line.split_whitespace() {
        match w {
            "CASE" => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            "END" | "END)" => depth = depth.saturating_sub(1),
            _ if w.starts_with("END") => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    assert!((8..=10).contains(&deepest), "{deepest}: {line}");
}

/// A grid of 80,000 candidates (`candidates every 0.001` over [0, 80],
/// tests/corpus/dp030-near-miss.dpplan) is a loop over its edges bound as
/// one parameter, not a tree written out: the statement stays small
/// (written out it was 3.7 MB, which Spark's parser could not hold).
/// tests/real_spark_windows.rs runs it against the embedded engine.
#[test]
fn large_candidate_grids_are_bound_not_written_out() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus");
    let text = std::fs::read_to_string(format!("{dir}/dp030-near-miss.dpplan")).unwrap();
    let p = plan(&text);
    let mut data = std::collections::BTreeMap::new();
    data.insert(
        "trips".to_string(),
        std::path::PathBuf::from("/data/trips.csv"),
    );
    let opts = dpplan_runtime::RunOptions {
        data,
        ..Default::default()
    };
    let planned = dpplan_runtime::planned_aggregates(&p, &opts).unwrap();
    let mut largest = 0;
    for (ds, _, st) in &planned {
        let q = sql::generate(ds, st, Columns::Text).unwrap();
        assert!(q.sql.len() < 64 << 10, "{} bytes", q.sql.len());
        for (name, v) in &q.params {
            if let (true, sql::Param::Text(json)) = (name.starts_with("be"), v) {
                let edges: Vec<f64> = serde_json::from_str(json).unwrap();
                assert!(edges.windows(2).all(|w| w[0] < w[1]));
                largest = largest.max(edges.len());
                assert!(q
                    .sql
                    .contains(&format!("from_json(:{name}, 'ARRAY<DOUBLE>')")));
            }
        }
    }
    assert!(largest > 80_000, "{largest} edges");
}

/// A histogram over keys from the data asks Spark for the counts per key
/// before the ledger exists: a Spark that cannot start fails the run with
/// the reason, and nothing is charged. The statement keeps the key as its
/// value (no domain), drops rows without one, and is bounded per unit.
#[test]
fn keys_from_data_are_counted_before_any_charge() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/site-visits");
    let text = std::fs::read_to_string(format!("{dir}/site-visits.dpplan")).unwrap();
    let p = plan(&text);
    let tmp = tempfile::tempdir().unwrap();
    let ledger = tmp.path().join("l.sqlite");
    let opts = dpplan_runtime::RunOptions {
        base_dir: Some(dir.into()),
        ledger: ledger.clone(),
        ..Default::default()
    };
    let engine = SparkEngine {
        submit: "/nonexistent/spark-submit".into(),
        master: None,
        conf: Vec::new(),
    };
    let e = dpplan_runtime::run(&p, &opts, &engine)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot start"), "{e}");
    assert!(!ledger.exists(), "a ledger was created");
    let ds = &p.body.datasets["visits"];
    let q = sql::generate_keys(ds, "country", None, Columns::Text).unwrap();
    assert!(q.sql.contains("c0 IS NOT NULL AND c0 <> ''"), "{}", q.sql);
    assert!(q.sql.contains("c0 AS g0"), "{}", q.sql);
    assert!(q.sql.contains("coalesce(g0, '')"), "{}", q.sql);
    assert!(
        q.sql.contains("gr0 <= 2") && q.sql.contains("rr0 <= 1"),
        "{}",
        q.sql
    );
    assert!(!q.sql.contains("map_from_arrays"), "{}", q.sql);
    // rows back: the ungrouped total is no key, a NULL key was not kept,
    // a zero count is no key; byte order
    let row = |a: &str, k: Option<&str>, n: &str| {
        vec![
            Some(a.to_string()),
            k.map(str::to_string),
            Some(n.to_string()),
        ]
    };
    let rows = vec![
        row("1", None, "9"),
        row("0", Some("fr"), "4"),
        row("0", None, "2"),
        row("0", Some("de"), "3"),
        row("0", Some("it"), "0"),
    ];
    assert_eq!(
        q.decode_keys(&rows).unwrap(),
        vec![(b"de".to_vec(), 3), (b"fr".to_vec(), 4)]
    );
}

/// A `where` filter becomes a predicate on the valid rows before bounding:
/// a comparison reads the valid (or imputed) number, an `in` set is a
/// bound parameter that is never written into the statement (a hostile
/// value stays out of the SQL text), a negated set stays two-valued; the
/// statement is deterministic; statistics with different filters are
/// refused (as the embedded engine refuses them in one pass), and so is a
/// comparison of a column that is not a number.
#[test]
fn filters_are_predicates_with_bound_sets() {
    use dpplan_vocab::rows::Filter;
    use dpplan_vocab::Comparison;
    let p = plan(
        r#"plan "t" {
  privacy { unit user by uid adjacency add_remove budget epsilon 1 delta 1e-6 }
  dataset d {
    column uid : id
    column v : float in [0, 10]
    column w : int in [0, 5]
    column g : category { "a", "q'u`ote\"; DROP TABLE x; --" }
    invalid_rows clamp
    contribution { rows_per_unit 2 groups_per_unit 1 }
  }
  query s { histogram(d by g) noise laplace scale 10 schedule once }
}"#,
    );
    let ds = &p.body.datasets["d"];
    let hostile = "q'u`ote\"; DROP TABLE x; --".to_string();
    let filter = Filter::Or {
        items: vec![
            Filter::And {
                items: vec![
                    Filter::Compare {
                        column: "w".into(),
                        cmp: Comparison::Gt,
                        value: 2.0,
                    },
                    Filter::In {
                        column: "g".into(),
                        values: vec![hostile.clone()],
                    },
                ],
            },
            Filter::Not {
                inner: Box::new(Filter::In {
                    column: "g".into(),
                    values: vec!["a".into()],
                }),
            },
        ],
    };
    let of = |kind: StatKind, f: &Filter| Statistic {
        kind: StatKind::Where {
            filter: f.clone(),
            of: Box::new(kind),
        },
        grid: 0,
    };
    let st = vec![
        of(StatKind::Count, &filter),
        of(StatKind::GroupedCount { by: "g".into() }, &filter),
    ];
    let q = sql::generate(ds, &st, Columns::Text).unwrap();
    assert_eq!(q, sql::generate(ds, &st, Columns::Text).unwrap());
    // w is the second declared number (n1), compared before bounding, and
    // imputed under `invalid_rows clamp` although nothing sums it
    assert!(
        q.sql
            .contains("(((n1 > 2e0) AND coalesce(array_contains(:fv0, w0), FALSE)) OR (NOT coalesce(array_contains(:fv1, w0), FALSE)))"),
        "{}",
        q.sql
    );
    assert!(q.sql.contains(", 0e0) AS n1"), "{}", q.sql);
    assert!(q.sql.contains("CAST(`g` AS STRING) AS w0"), "{}", q.sql);
    let filtered = q.sql.find("array_contains").unwrap();
    let bounded = q.sql.find("numbered AS").unwrap();
    assert!(filtered < bounded, "the filter comes before bounding");
    assert!(!q.sql.contains("DROP TABLE"), "{}", q.sql);
    assert_eq!(q.params["fv0"], sql::Param::Strings(vec![hostile]));
    assert_eq!(q.params["fv1"], sql::Param::Strings(vec!["a".into()]));
    // different filters in one statement: refused
    let other = Filter::Compare {
        column: "v".into(),
        cmp: Comparison::Lt,
        value: 1.0,
    };
    let mixed = vec![of(StatKind::Count, &filter), of(StatKind::Count, &other)];
    let e = sql::generate(ds, &mixed, Columns::Text).unwrap_err();
    assert!(e.to_string().contains("different filters"), "{e}");
    // near miss: the unfiltered statement has no predicate and no set
    let plain = sql::generate(ds, &[stat_count()], Columns::Text).unwrap();
    assert!(!plain.sql.contains("array_contains"), "{}", plain.sql);
    assert!(plain.params.keys().all(|k| !k.starts_with("fv")));
    // a comparison of a category: refused
    let bad = Filter::Compare {
        column: "g".into(),
        cmp: Comparison::Lt,
        value: 1.0,
    };
    let e = sql::generate(ds, &[of(StatKind::Count, &bad)], Columns::Text).unwrap_err();
    assert!(e.to_string().contains("not a declared number"), "{e}");
}

fn stat_count() -> Statistic {
    Statistic {
        kind: StatKind::Count,
        grid: 0,
    }
}

/// A distinct count: under a user-level unit, of the unit's own id, the
/// units with a kept row (`count(DISTINCT u)`); of another id column (and
/// under a row unit), the distinct non-empty ids of the kept rows, which
/// also enter the rows' hash (rows that differ only in them are told apart
/// by value). Read back from the ungrouped set, shifted as a count; a
/// number column is refused.
#[test]
fn distinct_counts_count_the_kept_rows_ids() {
    let p = plan(
        r#"plan "t" {
  privacy { unit user by uid adjacency add_remove budget epsilon 1 delta 1e-6 }
  dataset d {
    column uid : id
    column sid : id
    column v : float in [0, 10]
    column g : category { "a", "b" }
    contribution { rows_per_unit 2 groups_per_unit 1 }
  }
  query s { histogram(d by g) noise laplace scale 10 schedule once }
}"#,
    );
    let ds = &p.body.datasets["d"];
    let distinct = |c: &str, grid| Statistic {
        kind: StatKind::Distinct { column: c.into() },
        grid,
    };
    let st = vec![
        distinct("uid", 0),
        distinct("sid", -1),
        Statistic {
            kind: StatKind::GroupedCount { by: "g".into() },
            grid: 0,
        },
    ];
    let q = sql::generate(ds, &st, Columns::Text).unwrap();
    assert!(q.sql.contains("count(DISTINCT u) AS dc0"), "{}", q.sql);
    assert!(q.sql.contains("count(DISTINCT d1) AS dc1"), "{}", q.sql);
    assert!(q.sql.contains("CAST(`sid` AS STRING) AS d1"), "{}", q.sql);
    assert!(
        q.sql.contains("CASE WHEN d1 <> '' THEN d1 END AS d1"),
        "{}",
        q.sql
    );
    assert!(q.sql.contains("coalesce(d1, '')"), "{}", q.sql);
    assert_eq!(q.width(), 2 + 1 + 2);
    // the ungrouped row (flags 1: not grouped by g), then g's cells
    let row = |a: &str, k: Option<&str>, n: &str, d0: &str, d1: &str| {
        vec![
            Some(a.to_string()),
            k.map(str::to_string),
            Some(n.to_string()),
            Some(d0.to_string()),
            Some(d1.to_string()),
        ]
    };
    let rows = vec![
        row("1", None, "9", "4", "6"),
        row("0", Some("0"), "5", "3", "3"),
        row("0", Some("1"), "4", "2", "2"),
    ];
    let got = q.decode(&rows).unwrap();
    assert_eq!(got, vec![vec![4], vec![12], vec![5, 4]]);
    // a number is not an id
    let e = sql::generate(ds, &[distinct("v", 0)], Columns::Text).unwrap_err();
    assert!(e.to_string().contains("not an id"), "{e}");
}

/// The ride-sharing example's hourly windows: the three statements are
/// deterministic and reviewed (a snapshot, shown in docs/executable-plan.md);
/// the unit key and the units' state are views, never text or parameters.
#[test]
fn windowed_sql_snapshot() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/ride-sharing");
    let p = plan(&std::fs::read_to_string(format!("{dir}/ride-sharing.dpplan")).unwrap());
    let ds = &p.body.datasets["trips"];
    let st = [Statistic {
        kind: StatKind::GroupedCount {
            by: "district".into(),
        },
        grid: 0,
    }];
    let req = [WindowsRequest {
        release: "hourly_district_trips",
        dataset: ds,
        source: Path::new("/data/trips.csv"),
        column: "started_at",
        period: 3600,
        bound: Some(20),
        stats: &st,
    }];
    let a = SparkEngine::explain_windows(&req).unwrap();
    assert_eq!(a, SparkEngine::explain_windows(&req).unwrap());
    assert!(!a.contains(":key"));
    insta::assert_snapshot!("ride_sharing_hourly_windows", a);
    // a row-level unit: no key, no state, no units
    let mut row = ds.clone();
    row.bounding.per_unit = false;
    let q = sql::generate_windows(&row, "q", "started_at", 3600, None, &st, Columns::Text).unwrap();
    assert!(!q.select.contains("dpplan_unit_key") && !q.select.contains("dpplan_window_state"));
    assert!(q.units_sql.is_empty());
    // a unit state that does not match the dataset's unit, a column that is
    // not a time, a window under a second: refused
    assert!(
        sql::generate_windows(&row, "q", "started_at", 3600, Some(3), &st, Columns::Text).is_err()
    );
    assert!(sql::generate_windows(ds, "q", "city", 3600, Some(3), &st, Columns::Text).is_err());
    assert!(sql::generate_windows(ds, "q", "started_at", 0, Some(3), &st, Columns::Text).is_err());
}

/// A windowed statement's rows are read back per slot asked (a slot
/// without rows: zeros); a row of a slot not asked, or without its slot, is
/// a malformed result. The units come back per slot, as lowercase hex.
#[test]
fn windowed_results_are_read_per_slot() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/ride-sharing");
    let p = plan(&std::fs::read_to_string(format!("{dir}/ride-sharing.dpplan")).unwrap());
    let ds = &p.body.datasets["trips"];
    let st = [
        stat_count(),
        Statistic {
            kind: StatKind::GroupedCount {
                by: "district".into(),
            },
            grid: 0,
        },
    ];
    let q = sql::generate_windows(ds, "q", "started_at", 3600, Some(2), &st, Columns::Text)
        .unwrap()
        .aggregate;
    let s = |x: &str| Some(x.to_string());
    // (sl, a0, k0, n)
    let rows = vec![
        vec![s("3"), s("1"), None, s("7")],
        vec![s("3"), s("0"), s("1"), s("4")],
        vec![s("5"), s("1"), None, s("2")],
    ];
    let out = q.decode_slots(&rows, &[3, 4, 5]).unwrap();
    assert_eq!(out[0], vec![vec![7], vec![0, 4, 0, 0, 0]]);
    assert_eq!(out[1], vec![vec![0], vec![0; 5]]);
    assert_eq!(out[2], vec![vec![2], vec![0; 5]]);
    assert!(q.decode_slots(&rows, &[3, 4]).is_err(), "slot 5 not asked");
    assert!(q
        .decode_slots(&[vec![None, s("1"), None, s("7")]], &[3])
        .is_err());
    assert!(q
        .decode_slots(&[vec![s("x"), s("1"), None, s("7")]], &[3])
        .is_err());
    // an ordinary statement has no slots
    assert!(sql::generate(ds, &st, Columns::Text)
        .unwrap()
        .decode_slots(&[], &[0])
        .is_err());

    let h = "ab".repeat(32);
    let answer = serde_json::json!({"units": [[["3", h], ["5", h.to_uppercase()]]]});
    let units = window_units(&answer, 0, &[3, 4, 5], true).unwrap();
    assert_eq!(units[0].iter().collect::<Vec<_>>(), [&h]);
    assert!(units[1].is_empty());
    assert_eq!(units[2].iter().collect::<Vec<_>>(), [&h]);
    for bad in [
        serde_json::json!({"units": [[["9", h]]]}),
        serde_json::json!({"units": [[["3", "not hex"]]]}),
        serde_json::json!({"units": [[["3"]]]}),
        serde_json::json!({}),
    ] {
        assert!(window_units(&bad, 0, &[3], true).is_err(), "{bad}");
    }
    // a row-level unit returns no units
    assert!(window_units(&serde_json::json!({}), 0, &[3], false).unwrap()[0].is_empty());
}
