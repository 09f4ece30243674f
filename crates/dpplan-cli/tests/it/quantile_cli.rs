//! Quantiles through the real binary, as a user meets them: `dpplan check`
//! shows the rank error, `dpplan compile` and `dpplan run` release one
//! candidate of the public grid per level (labelled by the level), the
//! ledger charges the claimed ε and verifies, and `dpplan report` states
//! the mechanism.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{compiled, dpplan, exported, forge_value, ok, root, text};

#[test]
fn the_trip_fares_example_checks_compiles_runs_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("examples/trip-fares");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::copy(
        src.join("data/trips.csv"),
        dir.path().join("data/trips.csv"),
    )
    .unwrap();
    let source = dir.path().join("trip-fares.dpplan");
    std::fs::copy(src.join("trip-fares.dpplan"), &source).unwrap();
    let source = source.to_str().unwrap();

    let o = dpplan(&["check", source, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let checked: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let file = &checked["files"][0];
    assert!(file["epsilon"].as_f64().unwrap() <= 2.0, "{file}");
    assert_eq!(file["within_budget"], true);

    let plan = dir.path().join("plan.json");
    let plan = plan.to_str().unwrap();
    let o = dpplan(&["compile", source, "-o", plan]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ledger = dir.path().join("ledger.sqlite");
    let ledger = ledger.to_str().unwrap();
    let o = dpplan(&["run", plan, "--ledger", ledger]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = out["results"].as_array().unwrap();
    let cells = |q: &str| -> Vec<(Option<String>, f64)> {
        results.iter().find(|r| r["query"] == q).unwrap()["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["group"].as_str().map(str::to_string),
                    c["value"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    // the median: one value of the grid 0, 0.5, …, 80
    let median = cells("median_fare");
    assert_eq!(median.len(), 1);
    let m = median[0].1;
    assert!((0.0..=80.0).contains(&m) && (m * 2.0).fract() == 0.0, "{m}");
    // three levels, each a declared candidate, labelled by its level
    let grid = [
        0., 2., 4., 6., 8., 10., 12., 14., 16., 18., 20., 25., 30., 35., 40., 50., 60., 80.,
    ];
    let q = cells("fare_quantiles");
    let labels: Vec<_> = q.iter().map(|(g, _)| g.clone().unwrap()).collect();
    assert_eq!(labels, ["0.25", "0.5", "0.9"]);
    for (_, v) in &q {
        assert!(grid.contains(v), "{v} is not a candidate");
    }
    // charged what the checker claims: ε 0.5 + 1.2 under basic composition
    let charged: f64 = results.iter().map(|r| r["epsilon"].as_f64().unwrap()).sum();
    assert!((charged - 1.7).abs() < 1e-9, "{charged}");
    let o = dpplan(&["ledger", "verify", ledger]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));

    let o = dpplan(&["report", source]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let md = text(&o.stdout);
    assert!(md.contains("exponential"), "{md}");
    assert!(md.contains("quantile 0.9"), "{md}");
}

/// A plan with quantiles, a count and a re-publication of the median, on
/// the trip-fares data.
const MIXED: &str = r#"plan "fares-and-count" {
  privacy {
    unit user by rider_id
    adjacency add_remove
    budget epsilon 2.0
    accountant best
  }

  dataset trips {
    source "data/trips.csv"
    column rider_id : id
    column fare : float in [0, 80]
    contribution {
      rows_per_unit 4
    }
    invalid_rows drop
  }

  query median_fare {
    quantile(trips.fare, 0.5)
    candidates every 0.5
    noise exponential epsilon 0.5
    schedule once
  }

  query fare_quantiles {
    quantiles(trips.fare, [0.25, 0.9])
    candidates [0, 5, 10, 15, 20, 30, 40, 80]
    noise exponential epsilon 0.8
    schedule once
  }

  query trips_count {
    count(trips)
    noise laplace scale 8
    schedule once
  }

  publish median_copy = median_fare
}
"#;

/// The mixed plan compiled in `dir` (with its data), and the rank error
/// or 95 % half-width of each query's parts from `dpplan check --format
/// json` (`ci95_half_width`: a quantile's is in ranks).
fn mixed(dir: &Path) -> (PathBuf, BTreeMap<String, Vec<f64>>) {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::copy(
        root().join("examples/trip-fares/data/trips.csv"),
        dir.join("data/trips.csv"),
    )
    .unwrap();
    let plan = compiled(dir, "mixed", MIXED);
    let source = dir.join("mixed.dpplan");
    let o = dpplan(&["check", source.to_str().unwrap(), "--format", "json"]);
    ok(&o);
    let checked: Value = serde_json::from_slice(&o.stdout).unwrap();
    let half = checked["files"][0]["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let parts = q["parts"].as_array().unwrap();
            let h = parts.iter().map(|p| p["ci95_half_width"].as_f64().unwrap());
            (q["name"].as_str().unwrap().to_string(), h.collect())
        })
        .collect();
    (plan, half)
}

/// The cells of `query` in a run's JSON output.
fn cells_of<'a>(out: &'a Value, query: &str) -> &'a [Value] {
    out["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["query"] == query)
        .unwrap_or_else(|| panic!("no {query} in {out}"))["cells"]
        .as_array()
        .unwrap()
}

/// A quantile's cell: its rank error, no value-unit figure.
fn assert_ranks(c: &Value, rank_error: f64) {
    assert_eq!(c["rank_error95"].as_f64(), Some(rank_error), "{c}");
    for k in ["noise_std", "ci95_low", "ci95_high"] {
        assert!(c[k].is_null(), "{k} of a quantile: {c}");
    }
}

/// A count's cell: value ± the plan's half-width, no rank error.
fn assert_interval(c: &Value, half: f64) {
    let v = c["value"].as_f64().unwrap();
    assert_eq!(c["ci95_low"].as_f64(), Some(v - half), "{c}");
    assert_eq!(c["ci95_high"].as_f64(), Some(v + half), "{c}");
    assert!(c["noise_std"].as_f64().unwrap() > 0.0, "{c}");
    assert!(c.get("rank_error95").is_none(), "{c}");
}

#[test]
fn a_quantiles_accuracy_is_its_rank_error_in_the_json_the_csv_and_the_export() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, half) = mixed(dir.path());
    let plan = plan.to_str().unwrap();
    let ledger = dir.path().join("l.sqlite");
    let ledger = ledger.to_str().unwrap();
    let o = dpplan(&["run", plan, "--ledger", ledger]);
    ok(&o);
    let out: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(out["format"], "dpplan-run");
    assert_eq!(out["format_version"], 3);
    // the rank error is the plan's, per level; the re-published median's too
    let median = half["median_fare"][0];
    assert_ranks(&cells_of(&out, "median_fare")[0], median);
    assert_ranks(&cells_of(&out, "median_copy")[0], median);
    let levels = cells_of(&out, "fare_quantiles");
    assert_eq!(levels.len(), 2);
    for (c, &h) in levels.iter().zip(&half["fare_quantiles"]) {
        assert_ranks(c, h);
    }
    // the two levels' rank errors differ (0.25 vs 0.9): each is its own
    assert_ne!(half["fare_quantiles"][0], half["fare_quantiles"][1]);
    // negative control: the count keeps its interval in the value's units
    let count = half["trips_count"][0];
    assert_interval(&cells_of(&out, "trips_count")[0], count);

    // the CSV: the rank error in the last column, the interval empty
    let o = dpplan(&["run", plan, "--ledger", ledger, "--slot", "0", "--csv"]);
    ok(&o);
    let csv = text(&o.stdout);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "query,slot,origin,republished_from,group,value,noise_std,ci95_low,ci95_high,epsilon,delta,ledger_seq,corrected_by,rank_error95,raw_value"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let row = |q: &str| rows.iter().find(|r| r[0] == q).unwrap();
    let m = row("median_fare");
    assert_eq!((m[2], &m[6..9]), ("ledger", &["", "", ""][..]), "{m:?}");
    assert_eq!(m[13].parse::<f64>().unwrap(), median);
    let c = row("trips_count");
    let v: f64 = c[5].parse().unwrap();
    assert_eq!(c[7].parse::<f64>().unwrap(), v - count);
    assert_eq!(c[8].parse::<f64>().unwrap(), v + count);
    assert_eq!(c[13], "", "a count has no rank error");

    // the ledger export: each value entry carries its cells' accuracy
    let values: BTreeMap<String, Value> = exported::<Value>(ledger)
        .into_iter()
        .filter(|e| e["kind"] == "value")
        .map(|e| {
            let v = serde_json::from_str(e["value"].as_str().unwrap()).unwrap();
            (e["query"].as_str().unwrap().to_string(), v)
        })
        .collect();
    assert_ranks(&values["median_fare"]["cells"][0], median);
    assert_interval(&values["trips_count"]["cells"][0], count);
    assert_eq!(
        values["trips_count"]["cells"]
            .as_array()
            .unwrap()
            .as_slice(),
        cells_of(&out, "trips_count")
    );
}

#[test]
fn a_quantile_released_before_run_format_2_is_served_with_its_rank_error() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, half) = mixed(dir.path());
    let plan = plan.to_str().unwrap();
    let ledger = dir.path().join("l.sqlite");
    let ledger = ledger.to_str().unwrap();
    ok(&dpplan(&["run", plan, "--ledger", ledger]));
    // the median's value as an earlier dpplan stored it: noise_std 0, the
    // grid's range as its interval, no rank error (chain and anchor
    // recomputed over these bytes, as that dpplan would have written them)
    forge_value(ledger, "value", |v| {
        assert_eq!(v["query"], "median_fare");
        let c = &mut v["cells"][0];
        c.as_object_mut().unwrap().remove("rank_error95");
        c["noise_std"] = 0.0.into();
        c["ci95_low"] = 0.0.into();
        c["ci95_high"] = 80.0.into();
    });
    ok(&dpplan(&["ledger", "verify", ledger]));
    // exported as stored, byte for byte
    let old = exported::<Value>(ledger)
        .into_iter()
        .find(|e| e["kind"] == "value" && e["query"] == "median_fare")
        .unwrap();
    let stored = old["value"].as_str().unwrap();
    assert!(
        stored.contains(r#""ci95_high":80.0,"ci95_low":0.0,"group":null,"noise_std":0.0,"value":"#)
            && !stored.contains("rank_error95"),
        "{stored}"
    );
    // served and re-published as format 2 states it: the rank error its
    // mechanism recorded, no interval
    let o = dpplan(&["run", plan, "--ledger", ledger, "--slot", "0"]);
    ok(&o);
    let out: Value = serde_json::from_slice(&o.stdout).unwrap();
    let median = &cells_of(&out, "median_fare")[0];
    assert_eq!(
        median["value"].as_f64(),
        serde_json::from_str::<Value>(stored).unwrap()["cells"][0]["value"].as_f64()
    );
    assert_ranks(median, half["median_fare"][0]);
    assert_ranks(&cells_of(&out, "median_copy")[0], half["median_fare"][0]);
    // negative control: the count, stored as format 2 wrote it, unchanged
    assert_interval(&cells_of(&out, "trips_count")[0], half["trips_count"][0]);
    ok(&dpplan(&["ledger", "verify", ledger]));
}
