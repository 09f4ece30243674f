//! What the binary's tests share: running the real `dpplan` and reading
//! its output. (Each test module uses part of it.)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// The binary, as every test runs it: a wide terminal (`COLUMNS=1000`), so
/// that the human format's lines are not wrapped where a test reads them
/// (`summary_cli` tests the fitting to a width).
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpplan"));
    c.env("COLUMNS", "1000");
    c
}

/// `dpplan ARGS…` in the test's working directory, with no standard input.
pub fn dpplan(args: &[&str]) -> Output {
    command()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run dpplan")
}

/// `dpplan ARGS…` with `STDIN` (none: an empty one) on a pipe.
pub fn dpplan_piped(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = command()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dpplan");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// `dpplan ARGS…` in `dir` (so that the paths it prints are relative to
/// it), without colours and with no standard input.
pub fn dpplan_in(dir: &Path, args: &[&str]) -> Output {
    command()
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        // outside CI whatever runs the tests (policy_cli sets it where it
        // tests what CI changes)
        .env_remove("CI")
        .stdin(Stdio::null())
        .output()
        .expect("run dpplan")
}

/// `dpplan ARGS…` from the repository root (so that the paths it prints are
/// relative to it), without colours and with no standard input.
pub fn dpplan_at_root(args: &[&str]) -> Output {
    dpplan_in(&root(), args)
}

/// Output bytes as text (invalid UTF-8 replaced).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts that the command succeeded, showing its exit code and output.
pub fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// Writes `source_text` as `DIR/NAME.dpplan` and compiles it to
/// `DIR/NAME.json` (asserting that it compiles); the compiled plan's path.
pub fn compiled(dir: &Path, name: &str, source_text: &str) -> PathBuf {
    let source = dir.join(format!("{name}.dpplan"));
    std::fs::write(&source, source_text).unwrap();
    let plan = dir.join(format!("{name}.json"));
    let o = dpplan(&[
        "compile",
        source.to_str().unwrap(),
        "-o",
        plan.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    plan
}

/// The entries of `dpplan ledger export LEDGER`, one JSON document a line.
pub fn exported<T: serde::de::DeserializeOwned>(ledger: &str) -> Vec<T> {
    let o = dpplan(&["ledger", "export", ledger]);
    text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs the SQL `batch` on the ledger's SQLite database behind the
/// binary's back (tests that damage or forge a ledger).
pub fn sql(ledger: &str, batch: &str) {
    rusqlite::Connection::open(ledger)
        .unwrap()
        .execute_batch(batch)
        .unwrap();
}

/// Rewrites the value of the first entry of `kind` with `edit` and
/// re-chains every later entry and the anchor consistently (the triggers
/// dropped and recreated around the edit), so that only what the value
/// records can tell the forgery.
pub fn forge_value(ledger: &str, kind: &str, edit: impl Fn(&mut serde_json::Value)) {
    use dpplan_runtime::ledger::Entry;
    const NO_UPDATE: &str = "CREATE TRIGGER entries_no_update BEFORE UPDATE ON entries BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;";
    let mut all: Vec<Entry> = exported(ledger);
    let k = all.iter().position(|e| e.kind.as_str() == kind).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(all[k].value.as_deref().unwrap()).unwrap();
    edit(&mut v);
    all[k].value = Some(serde_json::to_string(&v).unwrap());
    for i in k..all.len() {
        if i > 0 {
            all[i].prev_hash = all[i - 1].hash.clone();
        }
        all[i].hash = all[i].compute_hash();
    }
    let c = rusqlite::Connection::open(ledger).unwrap();
    c.execute_batch("DROP TRIGGER entries_no_update;").unwrap();
    for e in &all[k..] {
        c.execute(
            "UPDATE entries SET value = ?1, prev_hash = ?2, hash = ?3 WHERE seq = ?4",
            rusqlite::params![e.value, e.prev_hash, e.hash, e.seq],
        )
        .unwrap();
    }
    c.execute_batch(NO_UPDATE).unwrap();
    let head = serde_json::json!({
        "format": "dpplan-ledger-head-1",
        "genesis_hash": all[0].hash,
        "entries": all.len(),
        "latest_hash": all.last().unwrap().hash,
    });
    std::fs::write(format!("{ledger}.head"), format!("{head}\n")).unwrap();
}

/// Unix seconds of `2026-01-DDTHH:MM:00Z` (schedules in January 2026).
pub fn jan_2026(day: i64, h: i64, m: i64) -> i64 {
    1_767_225_600 + (day - 1) * 86_400 + h * 3600 + m * 60
}

/// A plan compiled in a temporary directory (`p.dpplan` → `p.json`), with
/// its ledger's path beside it (`l.sqlite`), for the tests that run it as
/// cron would, at chosen times: they write its data into `dir` first.
pub struct Scheduled {
    _tmp: tempfile::TempDir,
    pub dir: PathBuf,
    pub plan: String,
    pub ledger: String,
}

impl Scheduled {
    pub fn new(plan_text: &str) -> Scheduled {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let plan = compiled(&dir, "p", plan_text).to_str().unwrap().to_string();
        let ledger = dir.join("l.sqlite").to_str().unwrap().to_string();
        Scheduled {
            _tmp: tmp,
            dir,
            plan,
            ledger,
        }
    }

    /// `dpplan run PLAN --ledger LEDGER --at AT [extra…]`: the output and
    /// its JSON (null when there is none).
    pub fn run_at(&self, at: i64, extra: &[&str]) -> (Output, serde_json::Value) {
        let at = at.to_string();
        let mut args = vec!["run", &self.plan, "--ledger", &self.ledger, "--at", &at];
        args.extend_from_slice(extra);
        let o = dpplan(&args);
        let v = serde_json::from_slice(&o.stdout).unwrap_or_default();
        (o, v)
    }

    /// `dpplan ledger verify` passes.
    pub fn verify(&self) {
        let o = dpplan(&["ledger", "verify", &self.ledger]);
        assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    }
}

/// The fresh releases of a run's JSON (`results` whose origin is `fresh`).
pub fn fresh_results(v: &serde_json::Value) -> impl Iterator<Item = &serde_json::Value> {
    v["results"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter(|r| r["origin"] == "fresh")
}
