//! The ride-sharing example (filters, bins, several keys, distinct counts,
//! a time window)
//! end to end through the real binary: `dpplan compile`, `dpplan run` of a
//! week of daily slots and the first weekly slot, `dpplan ledger verify`;
//! and the Spark engine's refusal of these constructs before any charge.

use std::path::Path;

use crate::support::{compiled, dpplan, root, text};

fn compile(dir: &Path) -> String {
    let src = root().join("examples/ride-sharing");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::copy(src.join("data/trips.csv"), dir.join("data/trips.csv")).unwrap();
    let text = std::fs::read_to_string(src.join("ride-sharing.dpplan")).unwrap();
    let plan = compiled(dir, "ride-sharing", &text);
    plan.to_str().unwrap().to_string()
}

/// The queries released fresh by the run at the middle of hour `h` (from
/// 2026-03-02T00:00Z), and the run's results.
fn run_hour(plan: &str, ledger: &str, h: i64) -> (Vec<String>, serde_json::Value) {
    let at = (1_772_409_600 + h * 3600 + 1800).to_string();
    let o = dpplan(&[
        "run",
        plan,
        "--ledger",
        ledger,
        "--start",
        "2026-03-02",
        "--at",
        &at,
    ]);
    assert!(o.status.success(), "hour {h}: {}", text(&o.stderr));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let fresh = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["origin"] == "fresh")
        .map(|r| r["query"].as_str().unwrap().to_string())
        .collect();
    (fresh, out)
}

/// The run's result of query `q`.
fn result<'o>(out: &'o serde_json::Value, q: &str) -> &'o serde_json::Value {
    out["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["query"] == q)
        .unwrap()
}

/// The labels of a query's released cells.
fn cells(out: &serde_json::Value, q: &str) -> Vec<String> {
    result(out, q)["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["group"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_ride_sharing_example_compiles_runs_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let plan = compile(dir.path());
    let ledger = dir.path().join("ledger.sqlite");
    let ledger = ledger.to_str().unwrap();
    // a week of hourly windows from 2026-03-02, one process per hour (at
    // half past): the daily queries fall due at each day's first hour, the
    // weekly ones at the very first only, and each hourly (daily) window
    // once it has closed (the previous hour's, day's; none at the very
    // first)
    for h in 0..168 {
        let (mut fresh, out) = run_hour(&plan, ledger, h);
        fresh.sort();
        if h == 0 {
            assert_eq!(fresh.len(), 5, "{fresh:?}");
            assert!(!fresh.contains(&"hourly_district_trips".to_string()));
            assert_eq!(
                cells(&out, "trip_lengths"),
                ["[0, 1)", "[1, 2)", "[2, 5)", "[5, 10)", "[10, 20]"]
            );
            let grid = cells(&out, "madrid_district_hours");
            assert_eq!(grid.len(), 5 * 24);
            assert_eq!(grid[0], "centro, 0");
            assert_eq!(grid[119], "oeste, 23");
            continue;
        } else if h % 24 == 0 {
            // and the day that closed: its riders per city
            assert_eq!(
                fresh,
                [
                    "daily_riders",
                    "daily_riders_by_city",
                    "hourly_district_trips",
                    "madrid_paid_trips"
                ],
                "hour {h}"
            );
            assert_eq!(
                cells(&out, "daily_riders_by_city"),
                ["Madrid", "Barcelona", "Valencia"]
            );
            // `postprocess nonnegative, round`: whole, non-negative values,
            // the released ones beside them
            let riders = result(&out, "daily_riders_by_city");
            for c in riders["cells"].as_array().unwrap() {
                let (v, raw) = (
                    c["value"].as_f64().unwrap(),
                    c["raw_value"].as_f64().unwrap(),
                );
                assert_eq!(v, raw.round_ties_even().max(0.0), "{c}");
                assert!(c["ci95_low"].as_f64().unwrap() >= 0.0, "{c}");
            }
        } else {
            assert_eq!(fresh, ["hourly_district_trips"], "hour {h}");
        }
        let hourly = result(&out, "hourly_district_trips");
        assert_eq!(hourly["slot"], h - 1, "hour {h}: the window that closed");
        assert_eq!(cells(&out, "hourly_district_trips").len(), 5);
    }
    let o = dpplan(&["ledger", "verify", ledger]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
}

/// The Spark engine selects the windows itself (its statements are shown
/// by --explain, reading nothing); a Spark that cannot start charges
/// nothing. The runs on a real Spark, against the embedded engine, are in
/// crates/dpplan-spark/tests/real_spark_windows.rs.
#[test]
fn the_spark_engine_runs_windows_and_charges_nothing_without_spark() {
    let dir = tempfile::tempdir().unwrap();
    let plan = compile(dir.path());
    let ledger = dir.path().join("ledger.sqlite");
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "run",
            &plan,
            "--ledger",
            ledger.to_str().unwrap(),
            "--engine",
            "spark",
            "--spark-submit",
            "/nonexistent/spark-submit",
            "--query",
            "hourly_district_trips",
            "--start",
            "2026-03-02",
            "--at",
            // half past the second hour: the first hour's window has closed
            "1772415000",
        ];
        a.extend_from_slice(extra);
        a
    };
    let o = dpplan(&args(&[]));
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("cannot start `/nonexistent/spark-submit`"),
        "{err}"
    );
    assert!(!ledger.exists(), "nothing charged: no ledger was created");
    let o = dpplan(&args(&["--explain"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let sql = text(&o.stdout);
    for part in [
        "release `hourly_district_trips`: the rows of the due windows of `started_at`",
        "a unit kept in at most 20 windows",
        "LEFT JOIN dpplan_window_state",
        "SELECT DISTINCT `#sl`, `#uh` FROM dpplan_windowed",
        "exact bounded aggregates per window",
        "GROUP BY GROUPING SETS ((sl), (sl, k0))",
    ] {
        assert!(sql.contains(part), "{part}: {sql}");
    }
    // the key and the units' state are views, never in the text
    assert!(!sql.contains(":key"), "{sql}");
    assert!(!ledger.exists(), "--explain reads and charges nothing");
}
