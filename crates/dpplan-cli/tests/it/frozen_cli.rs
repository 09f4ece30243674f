//! Frozen reports, the budget left in `ledger show`, the end of a schedule
//! and the ledger's format migration, through the real `dpplan` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dpplan_runtime::ledger::Entry;
use rusqlite::{params, Connection};

use crate::support::{dpplan, exported, ok, root, sql, text};

/// SHA-256 by coreutils' `sha256sum`: not dpplan's own code.
fn sha256sum(path: &Path) -> String {
    let o = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(o.status.success());
    text(&o.stdout)[..64].to_string()
}

const WEB: &str = "examples/web-analytics/web-analytics.dpplan";

/// `dpplan report PLAN --format FORMAT [--start START]` written to `out`.
fn render(plan: &Path, format: &str, start: Option<&str>, out: &Path) -> Vec<u8> {
    let mut args = vec![
        "report",
        "--format",
        format,
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    if let Some(s) = start {
        args.extend(["--start", s]);
    }
    ok(&dpplan(&args));
    std::fs::read(out).unwrap()
}

struct Setup {
    dir: tempfile::TempDir,
    ledger: String,
    report: PathBuf,
    /// The report's bytes, as `dpplan report` rendered them.
    bytes: Vec<u8>,
    hash: String,
}

/// A frozen report of the web-analytics example in a new ledger (created
/// by the freeze, schedules starting 2030-01-01), with the example's data
/// and its compiled plan next to it.
fn frozen_setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("examples/web-analytics");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::copy(
        src.join("data/visits.csv"),
        dir.path().join("data/visits.csv"),
    )
    .unwrap();
    let plan_json = dir.path().join("plan.json");
    ok(&dpplan(&[
        "compile",
        root().join(WEB).to_str().unwrap(),
        "-o",
        plan_json.to_str().unwrap(),
    ]));
    let report = dir.path().join("report.html");
    let bytes = render(&root().join(WEB), "html", Some("2030-01-01"), &report);
    let ledger = dir.path().join("l.sqlite").to_str().unwrap().to_string();
    let o = dpplan(&[
        "ledger",
        "freeze",
        "--ledger",
        &ledger,
        "--report",
        report.to_str().unwrap(),
        "--plan",
        root().join(WEB).to_str().unwrap(),
        "--start",
        "2030-01-01",
    ]);
    ok(&o);
    let hash = sha256sum(&report);
    assert!(text(&o.stdout).contains(&hash), "{}", text(&o.stdout));
    Setup {
        dir,
        ledger,
        report,
        bytes,
        hash,
    }
}

fn plan_json(s: &Setup) -> String {
    s.dir.path().join("plan.json").to_str().unwrap().to_string()
}

fn entries(ledger: &str) -> Vec<Entry> {
    exported(ledger)
}

#[test]
fn a_frozen_report_is_served_byte_for_byte_with_its_exact_inputs() {
    let s = frozen_setup();
    let o = dpplan(&["ledger", "frozen", &s.hash, "--ledger", &s.ledger]);
    ok(&o);
    assert_eq!(o.stdout, s.bytes, "the bytes as frozen");
    assert!(text(&o.stderr).contains("verified"), "{}", text(&o.stderr));
    // a unique prefix names it too
    let o = dpplan(&["ledger", "frozen", &s.hash[..12], "--ledger", &s.ledger]);
    ok(&o);
    assert_eq!(o.stdout, s.bytes);

    // The entry records the report's hash and the claim that `dpplan check
    // --format json` makes for the same plan, with its inputs.
    let e = entries(&s.ledger);
    let f = e
        .iter()
        .find(|e| e.kind.as_str() == "frozen_report")
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(f.value.as_deref().unwrap()).unwrap();
    assert_eq!(v["report_sha256"], s.hash.as_str());
    assert_eq!(v["size"], s.bytes.len());
    assert_eq!(v["format"], "html");
    let check = dpplan(&[
        "check",
        "--format",
        "json",
        root().join(WEB).to_str().unwrap(),
    ]);
    let j: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    let plan = &j["files"][0];
    assert!(plan["epsilon"].is_f64(), "{plan}");
    assert_eq!(v["inputs"]["claim"]["epsilon"], plan["epsilon"]);
    assert_eq!(v["inputs"]["claim"]["delta"], plan["delta"]);
    assert_eq!(v["inputs"]["claim"]["accountant"], plan["accountant"]);
    assert_eq!(v["inputs"]["accountant"], plan["accountant_requested"]);
    assert_eq!(v["inputs"]["delta"], plan["budget"]["delta"]);
    // one accounted mechanism per noisy part, with the query's releases
    let mut parts = 0;
    for q in plan["queries"].as_array().unwrap() {
        for p in q["parts"].as_array().unwrap() {
            if p["mechanism"]["kind"] != "none" {
                parts += 1;
                let m = v["inputs"]["mechanisms"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|m| m["query"] == q["name"] && m["l1"] == p["l1"])
                    .unwrap_or_else(|| panic!("no input for {}", q["name"]));
                assert_eq!(m["releases"], q["releases"]);
                assert_eq!(m["coords"], p["coords"]);
                let scale = p["mechanism"]["scale"]
                    .as_f64()
                    .or(p["mechanism"]["sigma"].as_f64());
                assert_eq!(m["scale"].as_f64(), scale);
            }
        }
    }
    assert_eq!(v["inputs"]["mechanisms"].as_array().unwrap().len(), parts);
    // the plan's source hash (coreutils), the version and the revision
    assert_eq!(v["plan_source_sha256"], sha256sum(&root().join(WEB)));
    assert_eq!(
        v["dpplan_version"],
        format!("dpplan {}", env!("CARGO_PKG_VERSION"))
    );
    let rev = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown".to_string(), |o| {
            text(&o.stdout).trim().to_string()
        });
    if std::env::var("DPPLAN_SOURCE_REVISION").is_err() {
        assert_eq!(v["source_revision"], rev.as_str());
    }

    // the same bytes are frozen once
    let again = dpplan(&[
        "ledger",
        "freeze",
        "--ledger",
        &s.ledger,
        "--report",
        s.report.to_str().unwrap(),
        "--plan",
        root().join(WEB).to_str().unwrap(),
        "--start",
        "2030-01-01",
    ]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already frozen in ledger entry"),
        "{}",
        text(&again.stderr)
    );
    // an unknown hash
    let o = dpplan(&["ledger", "frozen", "00000000", "--ledger", &s.ledger]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("no frozen report"));
    // the ledger was created for the plan: a run continues on it
    let o = dpplan(&["run", &plan_json(&s), "--ledger", &s.ledger, "--slot", "0"]);
    ok(&o);
    ok(&dpplan(&["ledger", "verify", &s.ledger]));
}

#[test]
fn freezing_a_new_ledger_asks_for_the_schedule_start() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("r.md");
    render(&root().join(WEB), "md", None, &report);
    let ledger = dir.path().join("l.sqlite");
    let o = dpplan(&[
        "ledger",
        "freeze",
        "--ledger",
        ledger.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--plan",
        root().join(WEB).to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("--start"), "{}", text(&o.stderr));
    assert!(!ledger.exists());
    // a plan without `every … for …` needs none
    let census = root().join("examples/census/census.dpplan");
    let want = render(&census, "md", None, &report);
    let o = dpplan(&[
        "ledger",
        "freeze",
        "--ledger",
        ledger.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
        "--plan",
        root()
            .join("examples/census/census.dpplan")
            .to_str()
            .unwrap(),
    ]);
    ok(&o);
    let o = dpplan(&[
        "ledger",
        "frozen",
        &sha256sum(&report),
        "--ledger",
        ledger.to_str().unwrap(),
    ]);
    ok(&o);
    assert_eq!(o.stdout, want);
}

#[test]
fn addenda_follow_the_original_in_order() {
    let s = frozen_setup();
    let seq = |o: &Output| -> String {
        text(&o.stdout)
            .split("appended addendum ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    let a = dpplan(&[
        "ledger",
        "correct",
        &s.ledger,
        "--report",
        &s.hash[..10],
        "--reason",
        "first: the weekly figure",
    ]);
    ok(&a);
    let frozen_seq = entries(&s.ledger)
        .iter()
        .find(|e| e.kind.as_str() == "frozen_report")
        .unwrap()
        .seq
        .to_string();
    let b = dpplan(&[
        "ledger",
        "correct",
        &s.ledger,
        "--entry",
        &frozen_seq,
        "--reason",
        "second: δ",
    ]);
    ok(&b);
    let o = dpplan(&["ledger", "frozen", &s.hash, "--ledger", &s.ledger]);
    ok(&o);
    // the original first, unchanged, then the addenda in order
    assert!(o.stdout.starts_with(&s.bytes));
    let rest = text(&o.stdout[s.bytes.len()..]);
    let first = rest.find("first: the weekly figure").unwrap();
    let second = rest.find("second: δ").unwrap();
    assert!(first < second, "{rest}");
    assert!(rest.contains(&format!("Addendum (ledger entry {}", seq(&a))));
    assert!(rest.contains(&format!("Addendum (ledger entry {}", seq(&b))));
    ok(&dpplan(&["ledger", "verify", &s.ledger]));
}

/// The exact text of the append-only triggers.
const FROZEN_NO_UPDATE: &str = "CREATE TRIGGER frozen_reports_no_update BEFORE UPDATE ON frozen_reports BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;";
const FROZEN_NO_DELETE: &str = "CREATE TRIGGER frozen_reports_no_delete BEFORE DELETE ON frozen_reports BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;";
const ENTRIES_NO_UPDATE: &str = "CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;";

/// The frozen report's entry rewritten with `edit`, re-chained: only the
/// recorded inputs tell the forgery.
fn forge_inputs(ledger: &str, edit: impl Fn(&mut serde_json::Value)) {
    crate::support::forge_value(ledger, "frozen_report", edit);
}

struct Tamper {
    name: &'static str,
    damage: fn(&Setup),
    says: &'static str,
}

fn tampering() -> Vec<Tamper> {
    vec![
        Tamper {
            name: "the stored bytes edited (triggers dropped and restored)",
            damage: |s| {
                sql(
                    &s.ledger,
                    &format!("DROP TRIGGER frozen_reports_no_update; UPDATE frozen_reports SET bytes = CAST('<html>better</html>' AS BLOB); {FROZEN_NO_UPDATE}"),
                )
            },
            says: "do not hash to the hash its entry records",
        },
        Tamper {
            name: "the stored bytes deleted",
            damage: |s| {
                sql(
                    &s.ledger,
                    &format!("DROP TRIGGER frozen_reports_no_delete; DELETE FROM frozen_reports; {FROZEN_NO_DELETE}"),
                )
            },
            says: "are missing",
        },
        Tamper {
            name: "another report inserted",
            damage: |s| {
                sql(
                    &s.ledger,
                    "INSERT INTO frozen_reports (sha256, seq, format, bytes) VALUES ('ab', 99, 'html', x'00')",
                )
            },
            says: "no frozen-report entry records",
        },
        Tamper {
            name: "the entry's recorded hash edited (chain broken)",
            damage: |s| {
                let e = entries(&s.ledger);
                let f = e
                    .iter()
                    .find(|e| e.kind.as_str() == "frozen_report")
                    .unwrap();
                let v = f
                    .value
                    .as_deref()
                    .unwrap()
                    .replace(&s.hash[..8], "00000000");
                let c = Connection::open(&s.ledger).unwrap();
                c.execute_batch("DROP TRIGGER entries_no_update;").unwrap();
                c.execute(
                    "UPDATE entries SET value = ?1 WHERE seq = ?2",
                    params![v, f.seq],
                )
                .unwrap();
                c.execute_batch(ENTRIES_NO_UPDATE).unwrap();
            },
            says: "was modified",
        },
        Tamper {
            // the negative control of the re-derivation: one release less
            name: "the inputs forged consistently: a release dropped",
            damage: |s| {
                forge_inputs(&s.ledger, |v| {
                    let m = &mut v["inputs"]["mechanisms"][0]["releases"];
                    *m = serde_json::json!(m.as_u64().unwrap() - 1);
                })
            },
            says: "does not re-derive",
        },
        Tamper {
            name: "the inputs forged consistently: a sensitivity halved",
            damage: |s| {
                forge_inputs(&s.ledger, |v| {
                    let m = &mut v["inputs"]["mechanisms"][0];
                    m["l1"] = serde_json::json!(m["l1"].as_f64().unwrap() / 2.0);
                    m["l2"] = serde_json::json!(m["l2"].as_f64().unwrap() / 2.0);
                })
            },
            says: "does not re-derive",
        },
    ]
}

#[test]
fn tampering_with_a_frozen_report_is_refused_by_frozen_verify_and_run() {
    for t in tampering() {
        let s = frozen_setup();
        (t.damage)(&s);
        let f = dpplan(&["ledger", "frozen", &s.hash, "--ledger", &s.ledger]);
        assert_eq!(f.status.code(), Some(1), "{}: frozen", t.name);
        assert!(f.stdout.is_empty(), "{}: nothing is printed", t.name);
        assert!(
            text(&f.stderr).contains(t.says),
            "{}: {}",
            t.name,
            text(&f.stderr)
        );
        let v = dpplan(&["ledger", "verify", &s.ledger]);
        assert_eq!(v.status.code(), Some(1), "{}: verify", t.name);
        assert!(
            text(&v.stderr).contains(t.says),
            "{}: {}",
            t.name,
            text(&v.stderr)
        );
        let r = dpplan(&["run", &plan_json(&s), "--ledger", &s.ledger, "--slot", "0"]);
        assert_eq!(r.status.code(), Some(1), "{}: run", t.name);
        assert!(r.stdout.is_empty(), "{}: run printed results", t.name);
        assert!(
            text(&r.stderr).contains(t.says),
            "{}: {}",
            t.name,
            text(&r.stderr)
        );
        assert!(
            !entries(&s.ledger)
                .iter()
                .any(|e| e.kind.as_str() == "intent"),
            "{}: nothing charged",
            t.name
        );
    }
}

/// The meta row of a key.
fn meta(ledger: &str, key: &str) -> Option<String> {
    Connection::open(ledger)
        .unwrap()
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
        .ok()
}

#[test]
fn a_ledger_of_format_1_verifies_runs_and_migrates_on_its_first_write() {
    // A ledger as the previous dpplan wrote it: format 1 in `meta`, no
    // `frozen_reports` table, four triggers.
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("examples/web-analytics");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::copy(
        src.join("data/visits.csv"),
        dir.path().join("data/visits.csv"),
    )
    .unwrap();
    let plan = dir.path().join("plan.json").to_str().unwrap().to_string();
    ok(&dpplan(&[
        "compile",
        root().join(WEB).to_str().unwrap(),
        "-o",
        &plan,
    ]));
    let ledger = dir.path().join("l.sqlite").to_str().unwrap().to_string();
    ok(&dpplan(&["run", &plan, "--ledger", &ledger, "--slot", "0"]));
    sql(
        &ledger,
        "DROP TRIGGER entries_append_only;
         DROP TABLE frozen_reports;
         DROP TABLE window_units;
         DROP TRIGGER meta_no_update;
         UPDATE meta SET value = 'dpplan-ledger-1' WHERE key = 'format';
         CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;",
    );
    let tables = |l: &str| -> i64 {
        Connection::open(l)
            .unwrap()
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'frozen_reports%'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(tables(&ledger), 0);
    // it verifies and is shown as it is (reading does not migrate)
    ok(&dpplan(&["ledger", "verify", &ledger]));
    ok(&dpplan(&["ledger", "show", &ledger]));
    assert_eq!(meta(&ledger, "migrated_to"), None);
    // a format-1 ledger with a `frozen_reports` table it never had is
    // refused (an added trigger)
    let copy = dir.path().join("copy.sqlite").to_str().unwrap().to_string();
    std::fs::copy(&ledger, &copy).unwrap();
    std::fs::copy(format!("{ledger}.head"), format!("{copy}.head")).unwrap();
    sql(
        &copy,
        &format!("CREATE TABLE frozen_reports (sha256 TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, format TEXT NOT NULL, bytes BLOB NOT NULL); {FROZEN_NO_DELETE}"),
    );
    let v = dpplan(&["ledger", "verify", &copy]);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v.stderr));
    assert!(
        text(&v.stderr).contains("a trigger `frozen_reports_no_delete` it was not created with"),
        "{}",
        text(&v.stderr)
    );
    // another copy of the format-1 ledger, for a freeze below
    let old = dir.path().join("old.sqlite").to_str().unwrap().to_string();
    std::fs::copy(&ledger, &old).unwrap();
    std::fs::copy(format!("{ledger}.head"), format!("{old}.head")).unwrap();
    // the next run releases and migrates
    ok(&dpplan(&["run", &plan, "--ledger", &ledger, "--slot", "1"]));
    assert_eq!(
        meta(&ledger, "migrated_to").as_deref(),
        Some("dpplan-ledger-2")
    );
    assert_eq!(meta(&ledger, "format").as_deref(), Some("dpplan-ledger-1"));
    assert_eq!(tables(&ledger), 3, "the table and its two triggers");
    ok(&dpplan(&["ledger", "verify", &ledger]));
    // and now keeps frozen reports
    let report = dir.path().join("r.json");
    let want = render(&root().join(WEB), "json", None, &report);
    ok(&dpplan(&[
        "ledger",
        "freeze",
        "--ledger",
        &ledger,
        "--report",
        report.to_str().unwrap(),
        "--plan",
        root().join(WEB).to_str().unwrap(),
    ]));
    let o = dpplan(&["ledger", "frozen", &sha256sum(&report), "--ledger", &ledger]);
    ok(&o);
    assert_eq!(o.stdout, want);
    ok(&dpplan(&["ledger", "verify", &ledger]));
    // a freeze into a ledger of format 1 migrates it first
    let o = dpplan(&[
        "ledger",
        "freeze",
        "--ledger",
        &old,
        "--report",
        report.to_str().unwrap(),
        "--plan",
        root().join(WEB).to_str().unwrap(),
    ]);
    ok(&o);
    assert_eq!(
        meta(&old, "migrated_to").as_deref(),
        Some("dpplan-ledger-2")
    );
    ok(&dpplan(&["ledger", "verify", &old]));
}

#[test]
fn ledger_show_gives_the_budget_left_after_each_charge() {
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("examples/web-analytics");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::copy(
        src.join("data/visits.csv"),
        dir.path().join("data/visits.csv"),
    )
    .unwrap();
    let plan = dir.path().join("plan.json").to_str().unwrap().to_string();
    ok(&dpplan(&[
        "compile",
        root().join(WEB).to_str().unwrap(),
        "-o",
        &plan,
    ]));
    let budget: f64 =
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(&plan).unwrap())
            .unwrap()["body"]["privacy"]["budget_epsilon"]
            .as_f64()
            .unwrap();
    assert_eq!(budget, 4.0, "the example's `budget epsilon 4.0`");
    let ledger = dir.path().join("l.sqlite").to_str().unwrap().to_string();
    for slot in ["0", "1"] {
        ok(&dpplan(&[
            "run", &plan, "--ledger", &ledger, "--slot", slot,
        ]));
    }
    let o = dpplan(&["ledger", "show", &ledger, "--json"]);
    ok(&o);
    let shown: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    // every entry's fields exactly as `ledger export` writes them
    let exported: Vec<serde_json::Value> = text(&dpplan(&["ledger", "export", &ledger]).stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(shown.len(), exported.len());
    let mut last = budget;
    let mut intents = 0;
    for (s, x) in shown.iter().zip(&exported) {
        let mut s = s.clone();
        let left = s.as_object_mut().unwrap().remove("budget_remaining");
        assert_eq!(&s, x, "old fields unchanged");
        if x["kind"] != "intent" {
            assert!(left.is_none());
            continue;
        }
        intents += 1;
        let left = left.expect("an intent has the budget left");
        let t: serde_json::Value = serde_json::from_str(x["value"].as_str().unwrap()).unwrap();
        let so_far = t["running_totals"]["plan"]["epsilon"].as_f64().unwrap();
        assert_eq!(left["budget_epsilon"].as_f64(), Some(budget));
        assert_eq!(left["epsilon"].as_f64(), Some(budget - so_far));
        assert_eq!(
            left["accountant"],
            t["running_totals"]["plan"]["accountant"]
        );
        // every charge leaves less
        let l = left["epsilon"].as_f64().unwrap();
        assert!(l < last, "{l} after {last}");
        last = l;
    }
    assert!(intents >= 4, "{intents}");
    // the table has the column and says what it means
    let o = dpplan(&["ledger", "show", &ledger]);
    ok(&o);
    let out = text(&o.stdout);
    assert!(out.contains("ε remaining"), "{out}");
    assert!(out.contains(&format!("{:.4}", last)), "{out}");
    assert!(out.contains("another accountant"), "{out}");
}

#[test]
fn a_run_after_the_schedule_says_it_is_over() {
    // `once` schedules: the second run has nothing left
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("examples/census");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::copy(
        src.join("data/persons.csv"),
        dir.path().join("data/persons.csv"),
    )
    .unwrap();
    let plan = dir.path().join("census.json").to_str().unwrap().to_string();
    ok(&dpplan(&[
        "compile",
        src.join("census.dpplan").to_str().unwrap(),
        "-o",
        &plan,
    ]));
    let ledger = dir.path().join("l.sqlite").to_str().unwrap().to_string();
    let first = dpplan(&["run", &plan, "--ledger", &ledger]);
    ok(&first);
    assert!(!text(&first.stderr).contains("ended on"));
    let o = dpplan(&["run", &plan, "--ledger", &ledger]);
    ok(&o);
    let err = text(&o.stderr);
    assert!(
        err.contains("the schedule of census-tables ended on ")
            && err.contains("nothing left to release"),
        "{err}"
    );
    assert!(!err.contains("released 0 value(s)"), "{err}");
    // it ended with its last release: the last intent's time
    let last_intent = entries(&ledger)
        .into_iter()
        .rfind(|e| e.kind.as_str() == "intent")
        .unwrap();
    assert!(
        err.contains(&format!("ended on {}", last_intent.time)),
        "{err}"
    );
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["schedule_ended"], last_intent.time.as_str());
    assert!(err.contains("latest hash"), "{err}");

    // `every` schedules: over at start + slots × period. web-analytics
    // releases daily for 365 days and weekly for 52 weeks from 2030-01-01
    // (not a leap year), and once.
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("examples/web-analytics");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::copy(
        src.join("data/visits.csv"),
        dir.path().join("data/visits.csv"),
    )
    .unwrap();
    let plan = dir.path().join("plan.json").to_str().unwrap().to_string();
    ok(&dpplan(&[
        "compile",
        root().join(WEB).to_str().unwrap(),
        "-o",
        &plan,
    ]));
    let ledger = dir.path().join("l.sqlite").to_str().unwrap().to_string();
    let base = ["--ledger", &ledger, "--start", "2030-01-01"];
    let run_at = |at: &str| {
        let mut a = vec!["run", plan.as_str()];
        a.extend_from_slice(&base);
        // a schedule in the future: a test clock
        a.extend_from_slice(&["--at", at, "--test-clock"]);
        dpplan(&a)
    };
    // on the last day the daily release is still due
    let o = run_at("2030-12-31T12:00Z");
    ok(&o);
    assert!(!text(&o.stderr).contains("ended on"), "{}", text(&o.stderr));
    // a second later than its end, nothing is
    let o = run_at("2031-01-01T00:00:00Z");
    ok(&o);
    assert!(
        text(&o.stderr).contains("ended on 2031-01-01T00:00:00Z: nothing left to release"),
        "{}",
        text(&o.stderr)
    );
    // a second before its end, the last day is served from the ledger
    let o = run_at("2030-12-31T23:59:59Z");
    ok(&o);
    assert!(!text(&o.stderr).contains("ended on"), "{}", text(&o.stderr));
}

/// `dpplan report --freeze` freezes exactly the bytes `dpplan report`
/// renders; `dpplan report --frozen` gives them back byte for byte, then an
/// addendum in the report's own format; a report whose negative controls
/// fail is not frozen.
#[test]
fn report_freeze_and_frozen_round_trip_through_the_report_command() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.db");
    let ledger = ledger.to_str().unwrap();
    let plan = root().join("examples/census/census.dpplan");
    let plan = plan.to_str().unwrap();
    let rendered = dpplan(&["report", "--format", "md", plan]);
    ok(&rendered);
    let frozen = dpplan(&[
        "report", "--format", "md", "--freeze", "--ledger", ledger, plan,
    ]);
    ok(&frozen);
    let out = text(&frozen.stdout);
    let hash = out
        .split("froze report ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{out}"))
        .to_string();
    // the frozen hash is the SHA-256 of exactly what `dpplan report` renders
    let md = dir.path().join("report.md");
    std::fs::write(&md, &rendered.stdout).unwrap();
    assert_eq!(hash, sha256sum(&md));

    let back = dpplan(&["report", "--frozen", &hash[..12], "--ledger", ledger]);
    ok(&back);
    assert_eq!(back.stdout, rendered.stdout, "byte for byte");
    assert!(
        text(&back.stderr).contains("re-derives"),
        "{}",
        text(&back.stderr)
    );

    ok(&dpplan(&[
        "ledger",
        "correct",
        ledger,
        "--report",
        &hash,
        "--reason",
        "the census date moved",
    ]));
    let again = dpplan(&["report", "--frozen", &hash, "--ledger", ledger]);
    ok(&again);
    assert!(
        again.stdout.starts_with(&rendered.stdout),
        "the original comes first, unchanged"
    );
    let tail = text(&again.stdout[rendered.stdout.len()..]);
    assert!(
        tail.contains("**Addendum (ledger entry") && tail.contains("the census date moved"),
        "{tail}"
    );

    // negative control: a report whose controls fail is not frozen
    let zero = root().join("crates/dpplan-review/tests/zero-sensitivity.dpplan");
    let other = dir.path().join("other.db");
    let refused = dpplan(&[
        "report",
        "--format",
        "md",
        "--freeze",
        "--ledger",
        other.to_str().unwrap(),
        zero.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(
        !other.exists(),
        "no ledger is created for a report that fails its controls"
    );
}
