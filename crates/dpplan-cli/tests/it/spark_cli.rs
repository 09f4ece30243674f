//! `dpplan run --engine spark` through the real binary: a release with
//! ledger entries on a real Spark (scripts/test.sh starts a standalone
//! master and a worker; without DPPLAN_SPARK_HOME / DPPLAN_SPARK_MASTER the
//! Spark part is skipped, except under CI=true, where it fails), a type
//! mismatch refused before anything is charged, and a run killed after its
//! intent whose slot stays charged and is refused on rerun. `--explain` and
//! a missing spark-submit need no Spark.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::support::{dpplan, text};

const PLAN: &str = r#"plan "spark-cli" {
  privacy { unit user by uid adjacency add_remove budget epsilon 5 delta 1e-6 }
  dataset d {
    source "data.csv"
    column uid : id
    column g : category { "a", "b" }
    column n : int in [0, 10]
    contribution { rows_per_unit 2 groups_per_unit 1 }
  }
  query total { sum(d.n) noise laplace scale 20 schedule 3 times }
  query mix { histogram(d by g) noise laplace scale 10 schedule 3 times }
}"#;

/// The plan compiled next to a CSV of 2,000 rows whose ids and values are
/// recognisable (so that a leak into an error message would be seen).
fn setup(dir: &Path) -> PathBuf {
    let mut csv = String::from("uid,g,n\n");
    for i in 0..2000 {
        csv.push_str(&format!("secret-id-{i},{},{}\n", ["a", "b"][i % 2], 7));
    }
    std::fs::write(dir.join("data.csv"), csv).unwrap();
    std::fs::write(dir.join("plan.dpplan"), PLAN).unwrap();
    let plan = dir.join("plan.json");
    let o = dpplan(&[
        "compile",
        dir.join("plan.dpplan").to_str().unwrap(),
        "-o",
        plan.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    plan
}

fn rows(ledger: &Path) -> i64 {
    Connection::open(ledger)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM entries", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn explain_is_deterministic_and_charges_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path());
    let p = plan.to_str().unwrap();
    let a = dpplan(&["run", "--engine", "spark", "--explain", p]);
    let b = dpplan(&["run", "--engine", "spark", "--explain", p]);
    assert!(a.status.success(), "{}", text(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    let sql = text(&a.stdout);
    assert!(sql.contains("xxhash64(CAST(:seed AS BIGINT)"), "{sql}");
    assert!(sql.contains("GROUP BY GROUPING SETS ((), (k0))"), "{sql}");
    assert!(!dir.path().join("plan.ledger.sqlite").exists());
    // --explain is the Spark engine's
    let o = dpplan(&["run", "--explain", p]);
    assert!(!o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--engine spark"));
}

/// `--explain` shows the statement of a histogram over keys from the data
/// too (the key as its value, no public domain): one statement per such
/// query, beside the others; nothing is read or charged.
#[test]
fn explain_shows_the_keys_from_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/site-visits");
    let plan = dir.path().join("site-visits.json");
    let o = dpplan(&[
        "compile",
        ex.join("site-visits.dpplan").to_str().unwrap(),
        "-o",
        plan.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ledger = dir.path().join("l.sqlite");
    let o = dpplan(&[
        "run",
        "--engine",
        "spark",
        "--explain",
        "--ledger",
        ledger.to_str().unwrap(),
        plan.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sql = text(&o.stdout);
    let keyed = sql.matches("exact bounded counts per key of").count();
    assert_eq!(keyed, 2, "{sql}");
    assert!(sql.contains("per key of `country`") && sql.contains("per key of `page`"));
    assert!(sql.contains("c0 IS NOT NULL AND c0 <> ''"), "{sql}");
    assert!(!ledger.exists());
}

/// A data path is printed escaped: a line break in it cannot end the
/// `-- source:` comment and put text of its own on a line of the SQL (it
/// was printed raw).
#[test]
fn explain_escapes_the_data_path() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path());
    let odd = dir.path().join("a\nDROP TABLE t;\n\x1b[2J\\.csv");
    std::fs::copy(dir.path().join("data.csv"), &odd).unwrap();
    let data = format!("d={}", odd.to_str().unwrap());
    let o = dpplan(&[
        "run",
        "--engine",
        "spark",
        "--explain",
        "--data",
        &data,
        plan.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sql = text(&o.stdout);
    assert!(!sql.lines().any(|l| l.starts_with("DROP")), "{sql}");
    assert!(!sql.contains('\x1b'), "{sql}");
    let escaped = format!(
        "{}/a\\x0aDROP TABLE t;\\x0a\\x1b[2J\\\\.csv`",
        dir.path().display()
    );
    let source = sql.lines().next().unwrap();
    assert!(source.starts_with("-- source: csv `"), "{sql}");
    assert!(source.ends_with(&escaped), "{source} vs {escaped}");
}

#[test]
fn a_missing_spark_submit_is_a_clear_error_before_any_charge() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path());
    let missing = dir.path().join("no-such-spark-submit");
    let o = dpplan(&[
        "run",
        "--engine",
        "spark",
        "--spark-submit",
        missing.to_str().unwrap(),
        plan.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("cannot start") && err.contains("--spark-submit"),
        "{err}"
    );
    assert!(err.contains("no ledger was created"), "{err}");
    assert!(!dir.path().join("plan.ledger.sqlite").exists());
}

fn spark() -> Option<(String, String)> {
    let home = std::env::var("DPPLAN_SPARK_HOME")
        .ok()
        .filter(|h| !h.is_empty());
    let master = std::env::var("DPPLAN_SPARK_MASTER")
        .ok()
        .filter(|m| !m.is_empty());
    match (home, master) {
        (Some(h), Some(m)) => Some((
            Path::new(&h).join("bin/spark-submit").display().to_string(),
            m,
        )),
        _ if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("DPPLAN_SPARK_HOME and DPPLAN_SPARK_MASTER are not set: run scripts/test.sh")
        }
        _ => {
            eprintln!(
                "skipped: set DPPLAN_SPARK_HOME and DPPLAN_SPARK_MASTER (scripts/test.sh does)"
            );
            None
        }
    }
}

/// One test, so that its Spark jobs run one after the other on the
/// worker's cores.
#[test]
fn spark_runs_through_the_cli() {
    let Some((submit, master)) = spark() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path());
    let p = plan.to_str().unwrap();
    let ledger = dir.path().join("plan.ledger.sqlite");
    let l = ledger.to_str().unwrap();
    let spark = [
        "--engine",
        "spark",
        "--spark-submit",
        &submit,
        "--spark-master",
        &master,
    ];

    // 1. a real release: ledger entries, a verified ledger
    let mut args = vec!["run", p, "--slot", "0"];
    args.extend(spark);
    let o = dpplan(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["origin"] == "fresh"));
    // 2,000 single-row units: the exact sum is 14,000; the noise (b = 20)
    // stays far below 1,000 (probability e^-50 otherwise)
    let total = results.iter().find(|r| r["query"] == "total").unwrap();
    let v = total["cells"][0]["value"].as_f64().unwrap();
    assert!((v - 14_000.0).abs() < 1000.0, "{v}");
    let n = rows(&ledger);
    assert!(n >= 4, "{n}");
    let o = dpplan(&["ledger", "verify", l]);
    assert!(o.status.success(), "{}", text(&o.stderr));

    // 2. a column whose type does not match: refused before anything is
    // charged, the ledger untouched; nothing about the data in the message
    let bad = dir.path().join("bad.parquet");
    let python = std::env::var("PYSPARK_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = "import sys\nfrom pyspark.sql import SparkSession\n\
        spark = SparkSession.builder.master('local[1]').config('spark.ui.enabled', 'false').getOrCreate()\n\
        spark.read.option('header', 'true').schema('uid STRING, g STRING, n STRING').csv(sys.argv[1]).write.parquet(sys.argv[2])\n";
    let o = Command::new(python)
        .args(["-c", script])
        .arg(dir.path().join("data.csv"))
        .arg(&bad)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let data = format!("d={}", bad.display());
    let mut args = vec!["run", p, "--slot", "1", "--data", &data];
    args.extend(spark);
    let o = dpplan(&args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "column `n` of dataset `d` is `string` in the source, but the plan declares it `int`"
        ),
        "{err}"
    );
    assert!(!err.contains("secret-id") && !err.contains("2000"), "{err}");
    assert_eq!(rows(&ledger), n);

    // 3. killed after the intent: the slot stays charged and is refused on
    // rerun (the pause is the runtime's test hook)
    let mut args = vec!["run", p, "--slot", "1", "--query", "total"];
    args.extend(spark);
    let mut child = crate::support::command()
        .args(&args)
        .env("DPPLAN_TEST_PAUSE_AFTER_INTENT_MS", "120000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while rows(&ledger) == n {
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "no intent was written"
        );
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(200));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(rows(&ledger), n + 1);
    let o = dpplan(&[
        "run",
        p,
        "--slot",
        "1",
        "--query",
        "total",
        "--engine",
        "spark",
        "--spark-submit",
        &submit,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let refused = out["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{out}");
    assert!(out["results"].as_array().unwrap().is_empty());
    assert_eq!(rows(&ledger), n + 1);
    let o = dpplan(&["ledger", "verify", l]);
    assert!(o.status.success(), "{}", text(&o.stderr));

    // 4. a sampled dataset (examples/daily-panel) from cron, 00:05 on day
    // 1: the three queries' slot 0, each on its own sample drawn by Spark,
    // charged the checker's amplified ε; the next day on the embedded
    // engine continues the same ledger
    let example = crate::support::root().join("examples/daily-panel");
    let s = crate::support::Scheduled::new(
        &std::fs::read_to_string(example.join("daily-panel.dpplan")).unwrap(),
    );
    std::fs::create_dir_all(s.dir.join("data")).unwrap();
    std::fs::copy(
        example.join("data/sessions.csv"),
        s.dir.join("data/sessions.csv"),
    )
    .unwrap();
    let (o, v) = s.run_at(crate::support::jan_2026(1, 0, 5), &spark);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let fresh: Vec<&serde_json::Value> = crate::support::fresh_results(&v).collect();
    assert_eq!(fresh.len(), 3, "{v}");
    let source = example.join("daily-panel.dpplan");
    let checked = dpplan(&["check", "--format", "json", source.to_str().unwrap()]);
    let checked: serde_json::Value = serde_json::from_slice(&checked.stdout).unwrap();
    for r in &fresh {
        assert_eq!(r["slot"], 0, "{v}");
        let q = checked["files"][0]["queries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == r["query"])
            .unwrap();
        assert_eq!(r["epsilon"], q["per_release"]["epsilon"], "{v}");
        let words = r["mechanism"].as_str().unwrap();
        assert!(words.contains("Poisson sample of 5 %"), "{words}");
    }
    // 12,001 users: about 600 in a 5 % sample (binomial sd 24, noise σ 6)
    let active = fresh.iter().find(|r| r["query"] == "active_users").unwrap()["cells"][0]["value"]
        .as_f64()
        .unwrap();
    assert!((450.0..750.0).contains(&active), "{active}");
    let (o, v) = s.run_at(crate::support::jan_2026(2, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        crate::support::fresh_results(&v).all(|r| r["slot"] == 1),
        "{v}"
    );
    s.verify();
}
