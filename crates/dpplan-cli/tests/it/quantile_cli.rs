//! Quantiles through the real binary, as a user meets them: `dpplan check`
//! shows the rank error, `dpplan compile` and `dpplan run` release one
//! candidate of the public grid per level (labelled by the level), the
//! ledger charges the claimed ε and verifies, and `dpplan report` states
//! the mechanism.

use crate::support::{dpplan, root, text};

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
