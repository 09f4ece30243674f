//! A distinct count of another id column under a user-level unit, through
//! the real binary: `dpplan check` derives a sensitivity of rows_per_unit
//! (not one), `dpplan run` releases the count of the kept rows' ids, and
//! the ledger verifies.

use crate::support::{dpplan, text};

const PLAN: &str = r#"plan "drivers" {
  privacy { unit user by rider_id adjacency add_remove budget epsilon 1000 }
  dataset trips {
    column rider_id : id
    column driver_id : id
    contribution { rows_per_unit 2 }
  }
  query drivers {
    count(distinct trips.driver_id)
    noise laplace scale 0.01
    schedule once
  }
}
"#;

#[test]
fn distinct_drivers_cost_rows_per_unit_and_count_the_kept_rows() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("drivers.dpplan");
    std::fs::write(&source, PLAN).unwrap();
    // 300 riders, each with 5 trips and 5 drivers of their own: 2 kept
    let mut csv = String::from("rider_id,driver_id\n");
    for u in 0..300 {
        for k in 0..5 {
            csv.push_str(&format!("r{u},d{u}-{k}\n"));
        }
    }
    let data = dir.path().join("trips.csv");
    std::fs::write(&data, csv).unwrap();
    let source = source.to_str().unwrap();

    let o = dpplan(&["check", source, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let checked: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let part = &checked["files"][0]["queries"][0]["parts"][0];
    assert_eq!(part["l1"], 2.0, "{part}");
    // ε = L1 / b = 2 / 0.01
    let eps = checked["files"][0]["epsilon"].as_f64().unwrap();
    assert!((eps - 200.0).abs() < 1e-6, "{eps}");
    let o = dpplan(&["check", source]);
    assert!(
        text(&o.stdout).contains("drivers") && text(&o.stdout).contains("200"),
        "{}",
        text(&o.stdout)
    );

    let plan = dir.path().join("plan.json");
    let plan = plan.to_str().unwrap();
    let o = dpplan(&["compile", source, "-o", plan]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ledger = dir.path().join("ledger.sqlite");
    let ledger = ledger.to_str().unwrap();
    let data_arg = format!("trips={}", data.display());
    let o = dpplan(&["run", plan, "--ledger", ledger, "--data", &data_arg]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let value = out["results"][0]["cells"][0]["value"].as_f64().unwrap();
    // 2 kept drivers per rider (noise of scale 0.01: |noise| < 1 but with
    // probability e^−100); a count of riders would be 300, of rows 1,500
    assert!((value - 600.0).abs() < 1.0, "{value}");
    let o = dpplan(&["ledger", "verify", ledger]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// Daily active users over a year of daily windows (the review's DAU): a
/// distinct count of the unit's own id moves by at most 1 in a window,
/// whatever its rows there, so the 365 windows give L2 = √365 (it was
/// charged rows_per_window = 10 a window: 10·√365 ≈ 191); under replace
/// the unit's windows and its replacement's: √min(2W, 365). Negative
/// controls: the row count of the same windows is 10 a window, and a
/// distinct count of another id column is too.
#[test]
fn a_windowed_distinct_count_of_the_unit_costs_one_a_window() {
    let plan = |adjacency: &str, w: u32, agg: &str| {
        format!(
            r#"plan "dau" {{
  privacy {{ unit user by uid adjacency {adjacency} budget epsilon 100 delta 1e-6 }}
  dataset events {{
    column uid : id
    column device : id
    column at : time
    contribution {{ rows_per_unit 100 windows_per_unit {w} rows_per_window 10 }}
  }}
  query dau {{
    {agg}
    noise gaussian sigma 100
    schedule every 1 day for 365 days
    window 1 day
  }}
}}
"#
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let l2 = |text: String| -> (f64, Vec<String>) {
        let path = dir.path().join("dau.dpplan");
        std::fs::write(&path, text).unwrap();
        let o = dpplan(&["check", path.to_str().unwrap(), "--format", "json"]);
        assert!(o.status.success(), "{}", text_of(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let part = &v["files"][0]["queries"][0]["parts"][0];
        let steps = part["derivation"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        (part["l2"].as_f64().unwrap(), steps)
    };
    let dau = "count(distinct events.uid)";
    let (a, steps) = l2(plan("add_remove", 365, dau));
    assert!((a - 365f64.sqrt()).abs() < 1e-9, "{a}");
    assert!(
        steps
            .iter()
            .any(|s| s.contains("moves the distinct count of its own id by at most 1")),
        "{steps:#?}"
    );
    for (w, windows) in [(10, 20.0), (365, 365.0), (200, 365.0)] {
        let (r, _) = l2(plan("replace", w, dau));
        assert!((r - f64::sqrt(windows)).abs() < 1e-9, "W = {w}: {r}");
    }
    for other in ["count(events)", "count(distinct events.device)"] {
        let (c, _) = l2(plan("add_remove", 365, other));
        assert!((c - 10.0 * 365f64.sqrt()).abs() < 1e-9, "{other}: {c}");
    }
    // the terminal shows it too
    let path = dir.path().join("dau.dpplan");
    std::fs::write(&path, plan("add_remove", 365, dau)).unwrap();
    let o = dpplan(&["check", path.to_str().unwrap()]);
    assert!(text(&o.stdout).contains("19.105"), "{}", text(&o.stdout));
}

fn text_of(o: &std::process::Output) -> String {
    format!("{}{}", text(&o.stdout), text(&o.stderr))
}
