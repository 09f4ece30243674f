//! Windowed queries end to end, through the real `dpplan` binary: a week
//! of hourly windows (one `dpplan run --at` per hour, separate processes),
//! each reading only its own window; the horizon bound (windows_per_unit)
//! kept across runs in the ledger; late rows never released; a kill -9
//! between the charge (with the state) and the draw; `--upgrade` of an
//! extended schedule; a ledger of format 2 migrated. The noise is a
//! discrete Laplace of scale 0.01 (P(noise ≠ 0) ≈ 2e^−100), so every
//! released count is the exact bounded count, checked against the bound
//! computed here independently.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use rusqlite::Connection;

use crate::support::{dpplan, ok};

/// 2026-03-02T00:00:00Z
const START: i64 = 1_772_409_600;
const HOUR: i64 = 3600;
const W: usize = 3;
const R: usize = 2;

fn plan_text(until: &str) -> String {
    format!(
        r#"plan "hourly" {{
  privacy {{
    unit user by rider_id
    adjacency add_remove
    budget epsilon 1000 delta 1e-6
  }}
  dataset trips {{
    source "trips.csv"
    column rider_id : id
    column started_at : time
    contribution {{
      rows_per_unit 50
      windows_per_unit {W}
      rows_per_window {R}
    }}
  }}
  query hourly_trips {{
    count(trips)
    noise discrete_laplace scale 0.01
    schedule every 1 hour from 2026-03-02 until {until}
    window 1 hour
  }}
}}
"#
    )
}

/// One trip row: rider, time.
type Row = (String, String);

/// Riders 0..40: rider i rides in hour h when (7i + 13h) mod `modulus` < 2, with
/// 1 + (i + h) mod 4 trips, at minutes 0, 10, 20, 30 of the hour (ISO 8601
/// or, for odd riders, Unix seconds); and rows without a valid time.
fn trips(hours: i64, modulus: i64) -> Vec<Row> {
    let mut rows = Vec::new();
    for h in 0..hours {
        for i in 0..40i64 {
            if (7 * i + 13 * h) % modulus >= 2 {
                continue;
            }
            for k in 0..(1 + (i + h) % 4) {
                let t = START + h * HOUR + k * 600;
                let time = if i % 2 == 0 { iso(t) } else { t.to_string() };
                rows.push((format!("r{i}"), time));
            }
        }
        rows.push(("r1".into(), "not a time".into()));
        rows.push(("r2".into(), String::new()));
    }
    rows
}

fn write_csv(path: &Path, rows: &[Row]) {
    let mut s = String::from("rider_id,started_at\n");
    for (id, t) in rows {
        s.push_str(&format!("{id},{t}\n"));
    }
    std::fs::write(path, s).unwrap();
}

/// `2026-03-DDTHH:MM:SSZ` for a time within March 2026 (the test's week).
fn iso(t: i64) -> String {
    let s = t - START;
    let (d, h, m, sec) = (2 + s / 86_400, s % 86_400 / 3600, s % 3600 / 60, s % 60);
    format!("2026-03-{d:02}T{h:02}:{m:02}:{sec:02}Z")
}

/// A time as the test wrote it (Unix seconds, or [`iso`]).
fn time_of(t: &str) -> Option<i64> {
    if let Ok(n) = t.parse::<i64>() {
        return Some(n);
    }
    let n = |a: usize, b: usize| t.get(a..b)?.parse::<i64>().ok();
    Some(START + (n(8, 10)? - 2) * 86_400 + n(11, 13)? * 3600 + n(14, 16)? * 60 + n(17, 19)?)
}

/// The exact bounded count of each slot, computed independently: windows
/// are released in slot order; a rider with rows in a window is kept in it
/// while it was kept in fewer than W windows, with min(rows, R) rows.
fn expected(rows: &[Row], slots: &[u64]) -> BTreeMap<u64, i64> {
    expected_as_read(&|_| rows, slots)
}

/// The same, each slot reading the rows present when it ran.
fn expected_as_read<'a>(rows_at: &dyn Fn(u64) -> &'a [Row], slots: &[u64]) -> BTreeMap<u64, i64> {
    let mut kept: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for &s in slots {
        let rows = rows_at(s);
        let lo = START + s as i64 * HOUR;
        let mut per: BTreeMap<&str, usize> = BTreeMap::new();
        for (id, t) in rows {
            if time_of(t).is_some_and(|t| t >= lo && t < lo + HOUR) {
                *per.entry(id).or_default() += 1;
            }
        }
        let mut n = 0;
        for (id, c) in per {
            let k = kept.entry(id).or_default();
            if *k < W {
                *k += 1;
                n += c.min(R) as i64;
            }
        }
        out.insert(s, n);
    }
    out
}

struct Setup {
    dir: tempfile::TempDir,
    plan: String,
    ledger: String,
}

fn setup(until: &str, rows: &[Row]) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("hourly.dpplan");
    std::fs::write(&src, plan_text(until)).unwrap();
    write_csv(&dir.path().join("trips.csv"), rows);
    let plan = dir.path().join("plan.json").to_str().unwrap().to_string();
    ok(&dpplan(&["compile", src.to_str().unwrap(), "-o", &plan]));
    let ledger = dir.path().join("l.sqlite").to_str().unwrap().to_string();
    Setup { dir, plan, ledger }
}

/// Runs the slot due five minutes after hour `s` ends (its window closed:
/// an hourly cron run); its released count (or None when nothing was
/// released fresh).
fn run_slot(plan: &str, ledger: &str, s: u64, extra: &[&str]) -> (Output, Option<i64>) {
    let at = (START + (s as i64 + 1) * HOUR + 300).to_string();
    let mut args = vec!["run", plan, "--ledger", ledger, "--at", &at];
    args.extend_from_slice(extra);
    let o = dpplan(&args);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let value = v["results"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["origin"] == "fresh"))
        .map(|r| {
            assert_eq!(r["slot"], s, "{r}");
            r["cells"][0]["value"].as_f64().unwrap() as i64
        });
    (o, value)
}

fn query<T: rusqlite::types::FromSql>(ledger: &str, sql: &str) -> Vec<T> {
    let c = Connection::open(ledger).unwrap();
    let mut st = c.prepare(sql).unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn intents(ledger: &str) -> Vec<(i64, f64, String)> {
    let c = Connection::open(ledger).unwrap();
    let mut st = c
        .prepare("SELECT slot, epsilon, value FROM entries WHERE kind = 'intent' ORDER BY seq")
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The ε of the plan's accountant in an intent's running totals.
fn running_epsilon(value: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(value).unwrap();
    v["running_totals"]["plan"]["epsilon"].as_f64().unwrap()
}

/// `dpplan check` states a windowed query's cost as one release over all
/// its windows.
#[test]
fn check_states_a_windowed_cost_for_all_windows() {
    let s = setup("2026-03-09", &trips(2, 3));
    let path = s.dir.path().join("hourly.dpplan");
    let o = dpplan(&["check", path.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(all windows)"), "{out}");
    // the control: without the window the per-release cost is per release
    let source = std::fs::read_to_string(&path).unwrap();
    let plain = s.dir.path().join("plain.dpplan");
    let without: String = source
        .lines()
        .filter(|l| !l.trim_start().starts_with("window "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(without, source);
    std::fs::write(&plain, without).unwrap();
    let o = dpplan(&["check", plain.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains("(all windows)") && out.contains("hourly"),
        "{out}"
    );
}

/// The checker's total for the plan source.
fn checked_total(s: &Setup) -> f64 {
    let o = dpplan(&[
        "check",
        "--format",
        "json",
        s.dir.path().join("hourly.dpplan").to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["files"][0]["epsilon"].as_f64().unwrap()
}

fn max_windows_per_unit(ledger: &str) -> i64 {
    query::<i64>(
        ledger,
        "SELECT COALESCE(MAX(n), 0) FROM (SELECT COUNT(*) AS n FROM window_units GROUP BY query, unit)",
    )[0]
}

#[test]
fn a_week_of_hourly_windows_releases_each_window_once_within_the_horizon_bound() {
    let original = trips(168, 37);
    let mut rows = original.clone();
    let s = setup("2026-03-09", &rows);
    let mut released = BTreeMap::new();
    for slot in 0..168u64 {
        if slot == 20 {
            // late rows: a new rider and an old one in window 5 (released),
            // after it was released; and one in window 30 (not yet)
            rows.push(("late".into(), (START + 5 * HOUR + 60).to_string()));
            rows.push(("r0".into(), (START + 5 * HOUR + 120).to_string()));
            rows.push(("r39".into(), (START + 30 * HOUR + 60).to_string()));
            write_csv(&s.dir.path().join("trips.csv"), &rows);
        }
        let (o, v) = run_slot(&s.plan, &s.ledger, slot, &[]);
        ok(&o);
        released.insert(slot, v.expect("a fresh release"));
    }
    // every window released the exact bounded count of its own rows; the
    // late rows of window 5 are in no window (window 5 was computed
    // before they arrived), the row of window 30 is counted there
    let want = expected_as_read(
        &|slot| if slot < 20 { &original } else { &rows },
        &(0..168).collect::<Vec<_>>(),
    );
    assert_eq!(released, want);
    // the late rows changed nothing: with them read from the start, the
    // counts differ (r0 would have had window 5)
    assert_ne!(expected(&rows, &(0..168).collect::<Vec<_>>()), want);
    // the bound bit: riders ride in ~9 hours each, kept in 3
    assert_eq!(max_windows_per_unit(&s.ledger), W as i64);
    let units = query::<String>(&s.ledger, "SELECT DISTINCT unit FROM window_units");
    assert_eq!(units.len(), 40, "the late rider was never kept");
    assert!(units.iter().all(|u| u.len() == 64 && !u.contains('r')));
    // a slot already released is served, never drawn again
    let (o, v) = run_slot(&s.plan, &s.ledger, 7, &[]);
    ok(&o);
    assert_eq!(v, None);
    // one vector release: the first window charges it, the others nothing,
    // and the running total is the checker's ε for the whole schedule
    let it = intents(&s.ledger);
    assert_eq!(it.len(), 168);
    assert!(it[0].1 > 0.0);
    assert!(it[1..].iter().all(|x| x.1 == 0.0));
    let total = checked_total(&s);
    assert!(
        (it[0].1 - total).abs() <= total * 1e-9,
        "{} {total}",
        it[0].1
    );
    let last = running_epsilon(&it[167].2);
    assert!((last - total).abs() <= total * 1e-9, "{last} {total}");
    ok(&dpplan(&["ledger", "verify", &s.ledger]));
}

#[test]
fn a_kill_between_the_charge_and_the_draw_keeps_the_state_and_never_redraws() {
    let rows = trips(12, 11);
    let s = setup("2026-03-09", &rows);
    for slot in 0..3 {
        ok(&run_slot(&s.plan, &s.ledger, slot, &[]).0);
    }
    let at = (START + 4 * HOUR + 10).to_string();
    let mut child = crate::support::command()
        .args(["run", &s.plan, "--ledger", &s.ledger, "--at", &at])
        .env("DPPLAN_TEST_PAUSE_AFTER_INTENT_MS", "60000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // wait for the intent of slot 3, then SIGKILL
    let mut waited = 0;
    while intents(&s.ledger).len() < 4 {
        std::thread::sleep(Duration::from_millis(20));
        waited += 1;
        assert!(waited < 1500, "the run never charged slot 3");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // the state of slot 3 was written with its charge
    let recorded = query::<i64>(
        &s.ledger,
        "SELECT COUNT(*) FROM window_units WHERE slot = 3",
    )[0];
    let riders_in_3 = expected(&rows, &[3]);
    assert!(recorded > 0 && riders_in_3[&3] > 0);
    let values = query::<i64>(
        &s.ledger,
        "SELECT COUNT(*) FROM entries WHERE kind = 'value' AND slot = 3",
    )[0];
    assert_eq!(values, 0);
    // run again at slot 3: refused (charged, unpublished), never drawn
    let (o, v) = run_slot(&s.plan, &s.ledger, 3, &[]);
    assert_eq!(v, None);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("slot 3")
            || !o.status.success()
            || String::from_utf8_lossy(&o.stdout).contains("refused")
    );
    assert_eq!(intents(&s.ledger).len(), 4);
    // the later windows count slot 3 among each rider's windows
    let mut got = BTreeMap::new();
    for slot in 4..12 {
        let (o, v) = run_slot(&s.plan, &s.ledger, slot, &[]);
        ok(&o);
        got.insert(slot, v.unwrap());
    }
    let want: BTreeMap<u64, i64> = expected(&rows, &(0..12).collect::<Vec<_>>())
        .into_iter()
        .filter(|(s, _)| *s >= 4)
        .collect();
    assert_eq!(got, want);
    assert!(max_windows_per_unit(&s.ledger) <= W as i64);
    ok(&dpplan(&["ledger", "verify", &s.ledger]));
}

#[test]
fn an_upgrade_that_extends_the_schedule_keeps_the_state_and_the_single_release() {
    let rows = trips(24, 11);
    let s = setup("2026-03-02T12:00Z", &rows);
    for slot in 0..12 {
        ok(&run_slot(&s.plan, &s.ledger, slot, &[]).0);
    }
    // beyond the first plan's schedule: nothing is due
    assert_eq!(run_slot(&s.plan, &s.ledger, 12, &[]).1, None);
    // the extended plan
    let src = s.dir.path().join("hourly.dpplan");
    std::fs::write(&src, plan_text("2026-03-03")).unwrap();
    let plan2 = s
        .dir
        .path()
        .join("plan2.json")
        .to_str()
        .unwrap()
        .to_string();
    ok(&dpplan(&["compile", src.to_str().unwrap(), "-o", &plan2]));
    let mut got = BTreeMap::new();
    for slot in 12..24 {
        let extra: &[&str] = if slot == 12 { &["--upgrade"] } else { &[] };
        let (o, v) = run_slot(&plan2, &s.ledger, slot, extra);
        ok(&o);
        got.insert(slot, v.unwrap());
    }
    // the riders' windows before the upgrade still count
    let want: BTreeMap<u64, i64> = expected(&rows, &(0..24).collect::<Vec<_>>())
        .into_iter()
        .filter(|(s, _)| *s >= 12)
        .collect();
    assert_eq!(got, want);
    assert_eq!(max_windows_per_unit(&s.ledger), W as i64);
    // the same vector release (same bounds, same noise): charged once, and
    // the upgrade composed the history with nothing more
    let it = intents(&s.ledger);
    assert_eq!(it.iter().filter(|x| x.1 > 0.0).count(), 1);
    let total = checked_total(&s);
    assert!((running_epsilon(&it[23].2) - total).abs() <= total * 1e-9);
    let up = query::<String>(
        &s.ledger,
        "SELECT value FROM entries WHERE kind = 'upgrade'",
    );
    let up: serde_json::Value = serde_json::from_str(&up[0]).unwrap();
    assert!(
        (up["epsilon"].as_f64().unwrap() - total).abs() <= total * 1e-9,
        "{up}"
    );
    ok(&dpplan(&["ledger", "verify", &s.ledger]));
}

#[test]
fn a_ledger_of_format_2_opens_and_migrates_on_a_windowed_write() {
    // nobody rides in hour 0: slot 0 keeps no unit, so the ledger below
    // is one a format-2 dpplan could have written (no window state); a
    // slot that kept units would record their digest, and the dropped
    // table would be found (`schedule_cli`'s tampering tests)
    let mut rows = trips(4, 11);
    rows.retain(|(_, t)| time_of(t).is_none_or(|t| t >= START + HOUR));
    let s = setup("2026-03-09", &rows);
    ok(&run_slot(&s.plan, &s.ledger, 0, &[]).0);
    // as dpplan wrote it before windows: no window_units table, format 2
    let c = Connection::open(&s.ledger).unwrap();
    c.execute_batch(
        "DROP TRIGGER entries_append_only;
         DROP TABLE window_units;
         DROP TRIGGER meta_no_update;
         UPDATE meta SET value = 'dpplan-ledger-2' WHERE key = 'format';
         CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;",
    )
    .unwrap();
    drop(c);
    ok(&dpplan(&["ledger", "verify", &s.ledger]));
    // the next windowed run migrates it (the unit key file already exists
    // but the state is gone: the state of slot 0 was lost with the table,
    // which only this test's hand edit can do)
    ok(&run_slot(&s.plan, &s.ledger, 1, &[]).0);
    let migrated = query::<String>(
        &s.ledger,
        "SELECT value FROM meta WHERE key = 'migrated_to_3'",
    );
    assert_eq!(migrated, vec!["dpplan-ledger-3".to_string()]);
    let migrated = query::<String>(
        &s.ledger,
        "SELECT value FROM meta WHERE key = 'migrated_to_4'",
    );
    assert_eq!(migrated, vec!["dpplan-ledger-4".to_string()]);
    assert!(
        query::<i64>(
            &s.ledger,
            "SELECT COUNT(*) FROM window_units WHERE slot = 1"
        )[0] > 0
    );
    ok(&dpplan(&["ledger", "verify", &s.ledger]));
    // a unit inserted into the state behind dpplan's back is found
    let seq = query::<i64>(&s.ledger, "SELECT MAX(seq) FROM window_units")[0];
    Connection::open(&s.ledger)
        .unwrap()
        .execute(
            "INSERT INTO window_units (query, unit, slot, seq) VALUES ('hourly_trips', 'forged', 0, ?1)",
            [seq],
        )
        .unwrap();
    let v = dpplan(&["ledger", "verify", &s.ledger]);
    assert_eq!(v.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&v.stderr).contains("window state"));
}

/// `ledger show` labels a windowed query's first intent: it charges the
/// whole window schedule, so the ε remaining after it (already what is
/// left at the schedule's end) is marked as pre-charged; the later windows'
/// intents charge nothing and are not marked. Negative control: the same
/// hourly count without `window` charges each slot, and nothing is marked.
#[test]
fn ledger_show_labels_the_pre_charged_window_schedule() {
    let rows = trips(3, 5);
    let s = setup("2026-03-03", &rows);
    for slot in 0..2 {
        let (o, v) = run_slot(&s.plan, &s.ledger, slot, &[]);
        assert!(v.is_some(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let show = shown(&s.ledger, false);
    let intents: Vec<&str> = show.lines().filter(|l| l.contains(" intent ")).collect();
    assert_eq!(intents.len(), 2, "{show}");
    assert!(intents[0].contains("*"), "{show}");
    assert!(!intents[1].contains("*"), "{show}");
    assert!(show.contains("*: pre-charged for the whole window schedule"));
    let json: serde_json::Value = serde_json::from_str(&shown(&s.ledger, true)).unwrap();
    let marked: Vec<bool> = json
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "intent")
        .map(|e| e["precharged_schedule"] == true)
        .collect();
    assert_eq!(marked, [true, false]);

    // negative control: no window, each slot charged on its own
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("hourly.dpplan");
    let text = plan_text("2026-03-03")
        .replace("    window 1 hour\n", "")
        .replace("scale 0.01", "scale 10")
        .replace("      windows_per_unit 3\n      rows_per_window 2\n", "");
    std::fs::write(&src, text).unwrap();
    write_csv(&dir.path().join("trips.csv"), &rows);
    let plan = dir.path().join("plan.json").to_str().unwrap().to_string();
    ok(&dpplan(&["compile", src.to_str().unwrap(), "-o", &plan]));
    let ledger = dir.path().join("l.sqlite").to_str().unwrap().to_string();
    for hour in 1..3 {
        let at = (START + hour * HOUR + 300).to_string();
        ok(&dpplan(&["run", &plan, "--ledger", &ledger, "--at", &at]));
    }
    let show = shown(&ledger, false);
    assert_eq!(
        show.lines().filter(|l| l.contains(" intent ")).count(),
        2,
        "{show}"
    );
    assert!(!show.contains('*'), "{show}");
}

/// `dpplan ledger show LEDGER [--json]`'s stdout (it must succeed).
fn shown(ledger: &str, json: bool) -> String {
    let mut args = vec!["ledger", "show", ledger];
    if json {
        args.push("--json");
    }
    let o = dpplan(&args);
    ok(&o);
    crate::support::text(&o.stdout)
}
