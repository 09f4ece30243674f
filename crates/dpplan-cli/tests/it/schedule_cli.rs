//! The schedule as an operator runs it: `dpplan run` from cron, one process
//! a day, a few minutes after midnight, with the data as they are at that
//! moment (rows of the day that has just begun already arriving). A
//! window (and a tree's slot) is released only once it has closed; a
//! missed day is backfilled, in order, and reported; a fresh release's
//! missed period is skipped and recorded; a future time or a window not
//! closed is refused; `--dry-run` says what a run would do and writes
//! nothing. Each figure is checked against the data's exact counts (Laplace
//! noise of scale 0.0001).

use std::path::Path;

use crate::support::{dpplan, jan_2026 as unix, sql, text, Scheduled};

const PLAN: &str = r#"plan "cron" {
  privacy {
    unit row
    adjacency add_remove
    budget epsilon 100000 delta 1e-6
  }
  dataset ev {
    source "ev.csv"
    column t : time
  }
  query total {
    cumulative count(ev)
    noise laplace scale 0.0001
    schedule every 1 day from 2026-01-01 until 2026-01-06
  }
  query daily {
    count(ev)
    noise laplace scale 0.0001
    window 1 day
    schedule every 1 day from 2026-01-01 until 2026-01-06
  }
}
"#;

/// Ten rows on each of January 1–5, three of them in the first minutes of
/// the day (00:01–00:03), so that a run at 00:05 sees rows of a window
/// that is still open.
fn all_rows() -> Vec<String> {
    let mut rows = Vec::new();
    for d in 1..=5 {
        for m in 1..=3 {
            rows.push(format!("2026-01-{d:02}T00:{m:02}:00Z"));
        }
        for h in 10..17 {
            rows.push(format!("2026-01-{d:02}T{h}:00:00Z"));
        }
    }
    rows
}

fn time_of(row: &str) -> i64 {
    let n = |a: usize, b: usize| row[a..b].parse::<i64>().unwrap();
    unix(n(8, 10), n(11, 13), n(14, 16))
}

/// The cron plan compiled beside its ledger, run on the data as they are
/// at each run's time.
struct Setup(Scheduled);

impl std::ops::Deref for Setup {
    type Target = Scheduled;
    fn deref(&self) -> &Scheduled {
        &self.0
    }
}

fn setup(plan_text: &str) -> Setup {
    Setup(Scheduled::new(plan_text))
}

impl Setup {
    /// The data as they are at `at`: the rows whose time is before it.
    fn data_at(&self, at: i64) {
        let mut s = String::from("t\n");
        for r in all_rows().iter().filter(|r| time_of(r) < at) {
            s.push_str(r);
            s.push('\n');
        }
        std::fs::write(self.dir.join("ev.csv"), s).unwrap();
    }

    /// `dpplan run` at `at` with the data as they are then.
    fn run_at(&self, at: i64, extra: &[&str]) -> (std::process::Output, serde_json::Value) {
        self.data_at(at);
        self.0.run_at(at, extra)
    }

    fn entries(&self) -> usize {
        if !Path::new(&self.ledger).exists() {
            return 0;
        }
        let o = dpplan(&["ledger", "show", &self.ledger, "--json"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_slice::<Vec<serde_json::Value>>(&o.stdout)
            .unwrap()
            .len()
    }
}

/// The fresh results of a run: (query, slot, value, backfilled).
fn fresh(v: &serde_json::Value) -> Vec<(String, u64, f64, bool)> {
    let mut out: Vec<_> = crate::support::fresh_results(v)
        .map(|r| {
            (
                r["query"].as_str().unwrap().to_string(),
                r["slot"].as_u64().unwrap(),
                r["cells"][0]["value"].as_f64().unwrap(),
                r["backfilled"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    out
}

fn near(x: f64, want: f64) -> bool {
    (x - want).abs() < 0.01
}

#[test]
fn a_daily_cron_at_five_past_midnight_releases_each_closed_day_whole() {
    let s = setup(PLAN);
    // day 1, 00:05: no window has closed; nothing is charged, no ledger
    let (o, v) = s.run_at(unix(1, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(fresh(&v).is_empty(), "{v}");
    assert_eq!(s.entries(), 0);
    for day in 2..=6 {
        let (o, v) = s.run_at(unix(day, 0, 5), &[]);
        assert!(o.status.success(), "day {day}: {}", text(&o.stderr));
        let got = fresh(&v);
        let slot = (day - 2) as u64;
        // yesterday's window, whole (10 rows), not today's open one (3 rows
        // so far); the running total of every closed day
        assert_eq!(got.len(), 2, "day {day}: {got:?}");
        assert_eq!((got[0].0.as_str(), got[0].1), ("daily", slot), "{got:?}");
        assert!(near(got[0].2, 10.0), "day {day}: {got:?}");
        assert_eq!((got[1].0.as_str(), got[1].1), ("total", slot), "{got:?}");
        assert!(
            near(got[1].2, 10.0 * (day - 1) as f64),
            "day {day}: {got:?}"
        );
        assert!(got.iter().all(|g| !g.3), "on time, not backfilled: {got:?}");
    }
    // the schedule is over: a later run releases nothing new
    let (o, v) = s.run_at(unix(9, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(fresh(&v).is_empty(), "{v}");
    s.verify();
}

#[test]
fn a_missed_day_is_backfilled_in_order_and_reported() {
    let s = setup(PLAN);
    let (o, _) = s.run_at(unix(2, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // no run on days 3 and 4: day 5's run releases slots 1 and 2 late, and
    // slot 3 on time
    let (o, v) = s.run_at(unix(5, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got = fresh(&v);
    let daily: Vec<_> = got.iter().filter(|g| g.0 == "daily").collect();
    let total: Vec<_> = got.iter().filter(|g| g.0 == "total").collect();
    assert_eq!(
        daily.iter().map(|g| (g.1, g.3)).collect::<Vec<_>>(),
        [(1, true), (2, true), (3, false)]
    );
    assert!(daily.iter().all(|g| near(g.2, 10.0)), "{daily:?}");
    assert_eq!(total.iter().map(|g| g.1).collect::<Vec<_>>(), [1, 2, 3]);
    for g in &total {
        assert!(near(g.2, 10.0 * (g.1 + 1) as f64), "{total:?}");
    }
    let stderr = text(&o.stderr);
    assert!(stderr.contains("backfilled: daily slot(s) 1–2"), "{stderr}");
    assert!(stderr.contains("backfilled: total slot(s) 1–2"), "{stderr}");
    // the same moment again: served from the ledger, nothing new
    let before = s.entries();
    let (o, v) = s.run_at(unix(5, 0, 10), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(fresh(&v).is_empty(), "{v}");
    assert_eq!(s.entries(), before);
    s.verify();
}

#[test]
fn the_future_and_open_windows_are_refused() {
    let s = setup(PLAN);
    // a mistyped year: refused before anything is read or created
    let (o, _) = s.run_at(unix(2, 0, 5) + 7000 * 365 * 86_400, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("later than this machine's clock"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(s.entries(), 0);
    // a window that has not closed, asked for by slot: a plan whose
    // schedule lies in the far future
    let future = setup(&PLAN.replace("2026-01-0", "9000-01-0"));
    std::fs::write(future.dir.join("ev.csv"), "t\n").unwrap();
    let o = dpplan(&[
        "run",
        &future.plan,
        "--ledger",
        &future.ledger,
        "--slot",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("daily slot 0: `daily` slot 0: its window [9000-01-01T00:00:00Z, 9000-01-02T00:00:00Z) has not closed"),
        "{stderr}"
    );
    assert!(stderr.contains("total slot 0"), "{stderr}");
    assert!(fresh(&serde_json::from_slice(&o.stdout).unwrap_or_default()).is_empty());
    // a test clock is an explicit choice: the windows closed by it run
    let o = dpplan(&[
        "run",
        &future.plan,
        "--ledger",
        &future.ledger,
        "--at",
        "9000-01-03T00:05:00Z",
        "--test-clock",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got = fresh(&serde_json::from_slice(&o.stdout).unwrap());
    assert_eq!(
        got.iter().map(|g| (g.0.as_str(), g.1)).collect::<Vec<_>>(),
        [("daily", 0), ("daily", 1), ("total", 0), ("total", 1)]
    );
    assert!(got.iter().all(|g| near(g.2, 0.0)), "{got:?}");
}

const PERIODS: &str = r#"plan "periods" {
  privacy {
    unit row
    adjacency add_remove
    budget epsilon 100000 delta 1e-6
  }
  dataset ev {
    source "ev.csv"
    column t : time
  }
  query so_far {
    count(ev)
    noise laplace scale 0.0001
    schedule every 1 day from 2026-01-01 until 2026-01-06
  }
}
"#;

#[test]
fn a_missed_period_of_a_fresh_release_is_skipped_and_recorded() {
    let s = setup(PERIODS);
    let (o, v) = s.run_at(unix(1, 12, 0), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(fresh(&v).iter().map(|g| g.1).collect::<Vec<_>>(), [0]);
    // no run on days 2 and 3: day 4's run releases slot 3 (the data as
    // they are now) and records slots 1–2 as skipped
    let (o, v) = s.run_at(unix(4, 12, 0), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got = fresh(&v);
    assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), [3]);
    // 30 rows of days 1–3 and 5 of day 4 before noon
    assert!(near(got[0].2, 35.0), "{got:?}");
    assert_eq!(v["skipped"][0]["from"], 1, "{v}");
    assert_eq!(v["skipped"][0]["through"], 2, "{v}");
    assert!(
        text(&o.stderr).contains("skipped: so_far slots 1–2: its period passed without a run"),
        "{}",
        text(&o.stderr)
    );
    let o = dpplan(&["ledger", "show", &s.ledger, "--json"]);
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let skips: Vec<_> = entries.iter().filter(|e| e["kind"] == "skip").collect();
    assert_eq!(skips.len(), 1, "{entries:?}");
    assert_eq!(skips[0]["slot"], 1);
    assert_eq!(skips[0]["epsilon"], 0.0);
    // a dry run later that day: nothing due, nothing to skip, and the next
    // slot is tomorrow's, not a period already skipped
    let (o, v) = s.run_at(unix(4, 13, 0), &["--dry-run"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = &v["releases"][0];
    assert_eq!(r["due_now"], serde_json::json!([]), "{r}");
    assert_eq!(r["would_skip"], serde_json::json!([]), "{r}");
    assert_eq!(r["skipped"], 2, "{r}");
    assert_eq!(r["next_slot"], 4, "{r}");
    assert_eq!(r["next_due"], "2026-01-05T00:00:00Z", "{r}");
    // recorded once: the next runs do not skip them again
    let (o, v) = s.run_at(unix(5, 12, 0), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(v.get("skipped").is_none(), "{v}");
    // a skipped period is never released afterwards
    s.data_at(unix(5, 12, 0));
    let o = dpplan(&["run", &s.plan, "--ledger", &s.ledger, "--slot", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("recorded as skipped"),
        "{}",
        text(&o.stderr)
    );
    s.verify();
}

#[test]
fn a_dry_run_says_what_is_due_and_writes_nothing() {
    let s = setup(PLAN);
    let (o, _) = s.run_at(unix(2, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let before = std::fs::read(&s.ledger).unwrap();
    let entries = s.entries();
    let (o, v) = s.run_at(unix(5, 0, 5), &["--dry-run"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for r in v["releases"].as_array().unwrap() {
        assert_eq!(r["released"], 1, "{r}");
        assert_eq!(r["due_now"], serde_json::json!([[1, 3]]), "{r}");
        assert_eq!(r["next_slot"], 4, "{r}");
        assert_eq!(r["next_due"], "2026-01-06T00:00:00Z", "{r}");
    }
    let stderr = text(&o.stderr);
    assert!(stderr.contains("daily (every 1 day from 2026-01-01 until 2026-01-06): 1 of 5 released; due now: 1–3; next: slot 4 at 2026-01-06T00:00:00Z"), "{stderr}");
    assert_eq!(std::fs::read(&s.ledger).unwrap(), before);
    assert_eq!(s.entries(), entries);
    // and a dry run before any ledger creates none
    let fresh_setup = setup(PLAN);
    let (o, v) = fresh_setup.run_at(unix(3, 0, 5), &["--dry-run"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(v["ledger_exists"], false);
    assert!(!Path::new(&fresh_setup.ledger).exists());
}

/// A user-level plan with a window and a tree: the contract an upgrade is
/// held to.
const USERS: &str = r#"plan "u" {
  privacy {
    unit user by uid
    adjacency add_remove
    budget epsilon 100 delta 1e-6
  }
  dataset ev {
    source "ev.csv"
    column uid : id
    column email : id
    column t : time
    contribution {
      rows_per_unit 5
      windows_per_unit 2
      rows_per_window 5
    }
  }
  query daily {
    count(ev)
    noise laplace scale 1
    window 1 day
    schedule every 1 day from 2026-01-01 until 2026-01-06
  }
  query total {
    cumulative count(ev)
    noise laplace scale 1
    schedule every 1 day from 2026-01-01 until 2026-01-06
  }
}
"#;

/// The user-level plan's data: user `u{i}` (email `e{i}`) active every day.
fn users_csv(dir: &Path) {
    let mut s = String::from("uid,email,t\n");
    for d in 1..=5 {
        for i in 0..4 {
            s.push_str(&format!("u{i},e{i},2026-01-{d:02}T12:00:00Z\n"));
        }
    }
    std::fs::write(dir.join("ev.csv"), s).unwrap();
}

fn compile_to(dir: &Path, name: &str, source: &str) -> String {
    std::fs::write(dir.join(format!("{name}.dpplan")), source).unwrap();
    let out = dir
        .join(format!("{name}.json"))
        .to_str()
        .unwrap()
        .to_string();
    let src = dir.join(format!("{name}.dpplan"));
    let o = dpplan(&["compile", src.to_str().unwrap(), "-o", &out]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    out
}

fn run_plan(plan: &str, ledger: &str, at: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["run", plan, "--ledger", ledger, "--at", at];
    args.extend_from_slice(extra);
    dpplan(&args)
}

#[test]
fn an_upgrade_never_changes_the_guarantee_and_an_unchanged_one_continues() {
    let s = setup(USERS);
    users_csv(&s.dir);
    let o = run_plan(&s.plan, &s.ledger, "2026-01-03T00:05:00Z", &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let entries = s.entries();
    for (name, from, to, says) in [
        (
            "email",
            "unit user by uid",
            "unit user by email",
            "unit_id uid → email",
        ),
        ("rows", "unit user by uid", "unit row", "unit user → row"),
        (
            "replace",
            "adjacency add_remove",
            "adjacency replace",
            "adjacency add_remove → replace",
        ),
    ] {
        let plan = compile_to(&s.dir, name, &USERS.replace(from, to));
        let o = run_plan(&plan, &s.ledger, "2026-01-04T00:05:00Z", &["--upgrade"]);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains("changes the guarantee"), "{name}: {stderr}");
        assert!(stderr.contains(says), "{name}: {stderr}");
        assert!(o.stdout.is_empty(), "{name}: {}", text(&o.stdout));
        assert_eq!(s.entries(), entries, "{name}: the refused upgrade wrote");
    }
    // control: a new query, the window and the tree unchanged — they
    // continue, charging nothing more
    let more = USERS.replace(
        "  query total {",
        "  query once_more {\n    count(ev)\n    noise laplace scale 1\n    schedule once\n  }\n  query total {",
    );
    let plan = compile_to(&s.dir, "more", &more);
    let o = run_plan(&plan, &s.ledger, "2026-01-04T00:05:00Z", &["--upgrade"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["upgraded"], true);
    for r in v["results"].as_array().unwrap() {
        match r["query"].as_str().unwrap() {
            "daily" | "total" => {
                assert_eq!(r["slot"], 2, "{r}");
                assert_eq!(r["epsilon"], 0.0, "a begun vector release continues: {r}");
            }
            _ => assert!(r["epsilon"].as_f64().unwrap() > 0.0, "{r}"),
        }
    }
    s.verify();
}

/// Runs the user-level plan for two days; the setup and the paths of its
/// state files.
fn users_run() -> Setup {
    let s = setup(USERS);
    users_csv(&s.dir);
    for at in ["2026-01-02T00:05:00Z", "2026-01-03T00:05:00Z"] {
        let o = run_plan(&s.plan, &s.ledger, at, &[]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    s
}

/// `verify` and the next day's run both refuse; the run charges nothing.
fn refused_by_verify_and_run(s: &Setup, says: &str, what: &str) {
    let v = dpplan(&["ledger", "verify", &s.ledger]);
    let verify_says = format!("{}{}", text(&v.stdout), text(&v.stderr));
    assert!(
        !v.status.success(),
        "{what}: verify accepted it: {verify_says}"
    );
    assert!(verify_says.contains(says), "{what}: {verify_says}");
    let before = s.entries();
    let o = run_plan(&s.plan, &s.ledger, "2026-01-04T00:05:00Z", &[]);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{what}: {stderr}");
    assert!(stderr.contains(says), "{what}: {stderr}");
    let fresh_charges = serde_json::from_slice::<serde_json::Value>(&o.stdout)
        .ok()
        .and_then(|v| v["results"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|r| r["origin"] == "fresh")
        .count();
    assert_eq!(fresh_charges, 0, "{what}: released after tampering");
    assert_eq!(s.entries(), before, "{what}: the run wrote");
}

#[test]
fn a_replaced_unit_key_is_refused() {
    let s = users_run();
    let key = format!("{}.units-key", s.ledger);
    assert_eq!(std::fs::read(&key).unwrap().len(), 32);
    std::fs::write(&key, [7u8; 32]).unwrap();
    refused_by_verify_and_run(&s, "unit key", "a replaced key");
}

#[test]
fn window_state_removed_behind_recreated_triggers_is_refused() {
    let s = users_run();
    let triggers: Vec<String> = {
        let c = rusqlite::Connection::open(&s.ledger).unwrap();
        let mut st = c
            .prepare("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'window_units'")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(triggers.len(), 2);
    sql(
        &s.ledger,
        &format!(
            "DROP TRIGGER window_units_no_delete; DROP TRIGGER window_units_no_update; DELETE FROM window_units; {};",
            triggers.join("; ")
        ),
    );
    refused_by_verify_and_run(&s, "window state", "rows deleted");
}

#[test]
fn another_ledgers_tree_state_is_refused() {
    let a = users_run();
    let b = users_run();
    // b's state has fed the same slots as a's: only its binding differs
    std::fs::copy(
        format!("{}.tree-state", b.ledger),
        format!("{}.tree-state", a.ledger),
    )
    .unwrap();
    refused_by_verify_and_run(&a, "another ledger", "another ledger's state");
}

#[test]
fn an_unbound_tree_state_is_refused_where_the_chain_recorded_a_key() {
    // the earlier format carries no binding: written over a bound state,
    // it would dodge the check if its format were taken at its word
    let s = users_run();
    let path = format!("{}.tree-state", s.ledger);
    let mut state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    state["format"] = "dpplan-tree-state-1".into();
    state.as_object_mut().unwrap().remove("ledger");
    state.as_object_mut().unwrap().remove("mac");
    std::fs::write(&path, serde_json::to_vec(&state).unwrap()).unwrap();
    refused_by_verify_and_run(&s, "carries no binding", "a format-1 state");
}
