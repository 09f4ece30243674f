//! `dpplan run` and friends as a user meets them: the real binary, real
//! files, real pipes. Each test pins a defect found by an adversarial
//! review (closed stdout, clock overflow, a failed first run, the slot a
//! re-publication serves, refusals that used to exit 0, budget raises).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::{dpplan, root, text};

fn bin() -> Command {
    let mut c = crate::support::command();
    c.stdin(Stdio::null());
    c
}

/// The web-analytics example compiled into `dir` with its data (or, with
/// `source`, another source text of it).
fn setup(dir: &Path, source: Option<&str>) -> String {
    let src = root().join("examples/web-analytics");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::copy(src.join("data/visits.csv"), dir.join("data/visits.csv")).unwrap();
    let source_path = dir.join("plan.dpplan");
    let text_ = match source {
        Some(s) => s.to_string(),
        None => std::fs::read_to_string(src.join("web-analytics.dpplan")).unwrap(),
    };
    std::fs::write(&source_path, text_).unwrap();
    let plan = dir.join("plan.json");
    let o = dpplan(&[
        "compile",
        source_path.to_str().unwrap(),
        "-o",
        plan.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    plan.to_str().unwrap().to_string()
}

fn example_source() -> String {
    std::fs::read_to_string(root().join("examples/web-analytics/web-analytics.dpplan")).unwrap()
}

/// `dpplan run PLAN --ledger LEDGER ARGS…`.
fn run(plan: &str, ledger: &Path, args: &[&str]) -> Output {
    let mut all = vec!["run", plan, "--ledger", ledger.to_str().unwrap()];
    all.extend_from_slice(args);
    dpplan(&all)
}

/// Runs `args` with stdout closed before the command writes anything.
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let mut child = bin()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (child.wait().unwrap().code(), stderr)
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let source = dir.path().join("plan.dpplan");
    let source = source.to_str().unwrap();
    // a large plan, so that the output cannot fit in the pipe's buffer
    let big = dir.path().join("big.dpplan");
    let mut t = example_source().replace("}\n", "}\n\n");
    for i in 0..300 {
        t = t.replace(
            "  publish dashboard_copy = daily_visits",
            &format!("  publish copy_{i} = daily_visits\n  publish dashboard_copy = daily_visits"),
        );
    }
    std::fs::write(&big, &t).unwrap();
    for args in [
        vec!["account", source],
        vec!["check", source],
        vec!["fmt", big.to_str().unwrap()],
        vec!["compile", source],
        vec!["ledger", "show", "nope.sqlite"],
    ] {
        let (code, stderr) = with_closed_stdout(&args);
        assert_ne!(code, Some(101), "{args:?} panicked: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    // a run commits its releases whatever happens to stdout, and the latest
    // hash (the operator's defence against a cut-off tail) is on stderr
    let ledger = dir.path().join("l.sqlite");
    let (code, stderr) = with_closed_stdout(&[
        "run",
        &plan,
        "--ledger",
        ledger.to_str().unwrap(),
        "--slot",
        "0",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("latest hash "), "{stderr}");
    let v = dpplan(&["ledger", "verify", ledger.to_str().unwrap()]);
    assert!(v.status.success());
    // `ledger show` and `export` on a closed stdout
    for sub in ["show", "export"] {
        let (code, stderr) = with_closed_stdout(&["ledger", sub, ledger.to_str().unwrap()]);
        assert_eq!(code, Some(0), "{sub}: {stderr}");
    }
}

#[test]
fn times_that_would_overflow_the_schedule_clock_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let ledger = dir.path().join("l.sqlite");
    let o = run(
        &plan,
        &ledger,
        &["--start=-9223372036854775808", "--at=9223372036854775807"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("outside the years"),
        "{}",
        text(&o.stderr)
    );
    assert!(o.stdout.is_empty());
    assert!(!ledger.exists(), "nothing is due, nothing was created");
    // the edges of the accepted range are fine, and nothing is due before
    // the start
    let o = run(
        &plan,
        &ledger,
        &[
            "--query",
            "daily_visits",
            "--start=253402300799",
            "--at=-62135596800",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(out["results"].as_array().unwrap().is_empty());
}

#[test]
fn a_first_run_that_cannot_read_its_data_creates_no_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let ledger = dir.path().join("l.sqlite");
    let l = ledger.to_str().unwrap();
    // a CSV without a declared column: a schema error, exit 1
    let csv = dir.path().join("short.csv");
    std::fs::write(&csv, "user_id,page\nu1,home\n").unwrap();
    let o = run(
        &plan,
        &ledger,
        &[
            "--slot",
            "0",
            "--data",
            &format!("visits={}", csv.display()),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("no ledger was created"));
    assert!(!ledger.exists());
    // a directory where the CSV should be: an IO error, exit 2
    let o = run(
        &plan,
        &ledger,
        &[
            "--slot",
            "0",
            "--data",
            &format!("visits={}", dir.path().display()),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("is a directory"));
    assert!(!ledger.exists());
    assert!(!Path::new(&format!("{l}.head")).exists());
}

#[test]
fn a_republication_serves_the_slot_of_this_run() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let ledger = dir.path().join("l.sqlite");
    let release = |slot: &str| {
        let o = run(&plan, &ledger, &["--slot", slot, "--query", "daily_visits"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    release("364");
    release("5"); // the latest by sequence number
    let out = release("364"); // served from the ledger, and republished
    let results = out["results"].as_array().unwrap();
    let daily = results
        .iter()
        .find(|r| r["query"] == "daily_visits")
        .unwrap();
    let copy = results
        .iter()
        .find(|r| r["query"] == "dashboard_copy")
        .unwrap();
    assert_eq!(copy["slot"], 364, "{copy}");
    assert_eq!(copy["cells"], daily["cells"]);
    assert_eq!(copy["ledger_seq"], daily["ledger_seq"]);
    assert_eq!(copy["origin"], "republished");
}

#[test]
fn a_slot_beyond_every_schedule_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let ledger = dir.path().join("l.sqlite");
    let o = run(&plan, &ledger, &["--slot", "400"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("daily_visits has 365 slot(s)")
            || stderr.contains("`daily_visits` has 365 slot(s)"),
        "{stderr}"
    );
    assert!(!ledger.exists(), "nothing was charged");
    // a slot only some releases have: those run, the others have no such slot
    let o = run(&plan, &ledger, &["--slot", "100"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn leftovers_of_a_killed_creation_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let ledger = dir.path().join("l.sqlite");
    let old = dir.path().join(".l.sqlite.123.creating");
    let fresh = dir.path().join(".l.sqlite.456.creating");
    for p in [&old, &fresh] {
        std::fs::write(p, "x").unwrap();
    }
    let f = std::fs::File::options().write(true).open(&old).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    drop(f);
    let o = run(&plan, &ledger, &["--slot", "0"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!old.exists(), "an hour-old leftover is removed");
    assert!(
        fresh.exists(),
        "a creation that may be under way is not touched"
    );
}

#[test]
fn a_correction_reason_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let ledger = dir.path().join("l.sqlite");
    let l = ledger.to_str().unwrap();
    let run = || run(&plan, &ledger, &["--slot", "0", "--query", "daily_visits"]);
    assert!(run().status.success());
    let o = dpplan(&[
        "ledger",
        "correct",
        l,
        "--entry",
        "3",
        "--reason",
        "typo\u{1b}[2J\rreleased: fake line\n",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = run();
    let stderr = text(&o.stderr);
    assert!(stderr.contains("has a correction"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert!(!stderr.contains('\r'), "{stderr:?}");
    assert!(
        stderr.contains("\\u{1b}[2J\\rreleased: fake line\\n"),
        "{stderr:?}"
    );
}

#[test]
fn account_exits_like_check_on_a_plan_with_errors() {
    let plan = root().join("tests/corpus/dp000-syntax.dpplan");
    let plan = plan.to_str().unwrap();
    let check = dpplan(&["check", plan]);
    let account = dpplan(&["account", plan]);
    assert_eq!(check.status.code(), Some(1));
    assert_eq!(account.status.code(), Some(1), "{}", text(&account.stderr));
}

#[test]
fn an_upgrade_that_raises_the_budget_must_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let ledger = dir.path().join("l.sqlite");
    let l = ledger.to_str().unwrap();
    let o = run(&plan, &ledger, &["--slot", "0"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // the same plan recompiled with a 100× budget
    let dir2 = tempfile::tempdir().unwrap();
    let raised = setup(
        dir2.path(),
        Some(&example_source().replace("budget epsilon 4.0", "budget epsilon 400.0")),
    );
    let o = dpplan(&["run", &raised, "--ledger", l, "--slot", "1", "--upgrade"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(stderr.contains("--raise-budget"), "{stderr}");
    assert!(stderr.contains("ε = 400"), "{stderr}");
    assert!(stderr.contains("ε = 4,"), "{stderr}");
    assert!(o.stdout.is_empty());
    let o = dpplan(&[
        "run",
        &raised,
        "--ledger",
        l,
        "--slot",
        "1",
        "--upgrade",
        "--raise-budget",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains(
            "budget ε = 4, δ = 0.00000001 → ε = 400, δ = 0.00000001 (raised with --raise-budget)"
        ),
        "{stderr}"
    );
    // the upgrade entry records both budgets
    let export = text(&dpplan(&["ledger", "export", l]).stdout);
    let upgrade: serde_json::Value = export
        .lines()
        .map(|x| serde_json::from_str::<serde_json::Value>(x).unwrap())
        .find(|e| e["kind"] == "upgrade")
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(upgrade["value"].as_str().unwrap()).unwrap();
    assert_eq!(v["from_budget"]["epsilon"], 4.0);
    assert_eq!(v["budget_epsilon"], 400.0);
    assert_eq!(v["budget_raised"], true);
    // a smaller budget needs no flag
    let dir3 = tempfile::tempdir().unwrap();
    let lowered = setup(
        dir3.path(),
        Some(&example_source().replace("budget epsilon 4.0", "budget epsilon 300.0")),
    );
    let o = dpplan(&["run", &lowered, "--ledger", l, "--slot", "2", "--upgrade"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// An engine's options given to the other engine are refused before
/// anything is read or charged (never silently ignored).
#[test]
fn an_engine_option_without_its_engine_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let ledger = dir.path().join("l.sqlite");
    for (args, says) in [
        (
            &["--spark-master", "spark://127.0.0.1:7077"][..],
            "options of the Spark engine",
        ),
        (
            &["--spark-submit", "/bin/true"][..],
            "options of the Spark engine",
        ),
        (
            &["--engine", "spark", "--threads", "2"][..],
            "option of the built-in CSV engine",
        ),
    ] {
        let mut all = vec!["--slot", "0"];
        all.extend_from_slice(args);
        let o = run(&plan, &ledger, &all);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(
            text(&o.stderr).contains(says),
            "{args:?}: {}",
            text(&o.stderr)
        );
        assert!(!ledger.exists(), "{args:?}");
    }
    // negative control: the same plan runs with the CSV engine's own option
    let o = run(&plan, &ledger, &["--slot", "0", "--threads", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(ledger.exists());
}

/// Writes web-analytics' visits CSV as Parquet (`seconds` as `seconds_ty`:
/// Float64, or Utf8 for a type the plan does not declare).
fn visits_parquet(csv: &Path, out: &Path, seconds_ty: arrow_schema::DataType) {
    use arrow_array::builder::{Float64Builder, StringBuilder};
    use arrow_array::{ArrayRef, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let text = std::fs::read_to_string(csv).unwrap();
    let (mut ids, mut pages, mut secs, mut secs_text) = (
        StringBuilder::new(),
        StringBuilder::new(),
        Float64Builder::new(),
        StringBuilder::new(),
    );
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        ids.append_value(f[0]);
        pages.append_value(f[1]);
        match f[2].parse::<f64>() {
            Ok(v) => secs.append_value(v),
            Err(_) => secs.append_null(),
        }
        secs_text.append_value(f[2]);
    }
    let seconds: ArrayRef = match seconds_ty {
        DataType::Float64 => Arc::new(secs.finish()),
        _ => Arc::new(secs_text.finish()),
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("user_id", DataType::Utf8, true),
        Field::new("page", DataType::Utf8, true),
        Field::new("seconds", seconds.data_type().clone(), true),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(ids.finish()), Arc::new(pages.finish()), seconds],
    )
    .unwrap();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(out).unwrap(), schema, None)
            .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

/// `dpplan run` on a Parquet source, as a user runs it: the releases of
/// the CSV run, written to the ledger; a column of a type the plan does
/// not declare is a clear error (exit 1, a schema error) before any ledger
/// exists.
#[test]
fn run_reads_a_parquet_source() {
    let dir = tempfile::tempdir().unwrap();
    let plan = setup(dir.path(), None);
    let csv = dir.path().join("data/visits.csv");
    let pq = dir.path().join("visits.parquet");
    visits_parquet(&csv, &pq, arrow_schema::DataType::Float64);
    let data = format!("visits={}", pq.display());
    let on_csv = run(&plan, &dir.path().join("csv.sqlite"), &["--slot", "0"]);
    assert_eq!(on_csv.status.code(), Some(0), "{}", text(&on_csv.stderr));
    let ledger = dir.path().join("pq.sqlite");
    let on_pq = run(&plan, &ledger, &["--slot", "0", "--data", &data]);
    assert_eq!(on_pq.status.code(), Some(0), "{}", text(&on_pq.stderr));
    let names = |o: &Output| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["query"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(!names(&on_pq).is_empty());
    assert_eq!(names(&on_pq), names(&on_csv));
    assert!(ledger.exists());
    // `seconds` stored as text: refused, naming the column and both types
    let bad = dir.path().join("bad.parquet");
    visits_parquet(&csv, &bad, arrow_schema::DataType::Utf8);
    let ledger = dir.path().join("bad.sqlite");
    let o = run(
        &plan,
        &ledger,
        &[
            "--slot",
            "0",
            "--data",
            &format!("visits={}", bad.display()),
        ],
    );
    let err = text(&o.stderr);
    // exit 1, as for a CSV whose header lacks a declared column (a schema
    // error; 2 is for files that cannot be opened)
    assert_eq!(o.status.code(), Some(1), "{err}");
    for part in ["`seconds`", "Utf8", "`float`", "bad.parquet"] {
        assert!(err.contains(part), "{part} missing from: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        !ledger.exists(),
        "nothing is charged before the schema check"
    );
}
