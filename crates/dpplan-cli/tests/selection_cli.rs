//! Histograms over keys from the data through the real binary:
//! `dpplan check` claims the total with the thresholds' δ, `compile` and
//! `run` release only keys above τ (sorted; the one-user keys of the
//! generated data never appear, not in the output nor in the ledger),
//! the ledger charges the claimed ε and verifies, and `dpplan report`
//! states τ and the δ it costs.

mod support;

use support::{dpplan, root, text};

#[test]
fn the_site_visits_example_checks_compiles_runs_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("examples/site-visits");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::copy(
        src.join("data/visits.csv"),
        dir.path().join("data/visits.csv"),
    )
    .unwrap();
    let source = dir.path().join("site-visits.dpplan");
    std::fs::copy(src.join("site-visits.dpplan"), &source).unwrap();
    let source = source.to_str().unwrap();

    let o = dpplan(&["check", source, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let checked: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let file = &checked["files"][0];
    assert_eq!(file["within_budget"], true, "{file}");
    let selections: Vec<&serde_json::Value> = file["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| &q["selection"])
        .collect();
    let thr_delta: f64 = selections
        .iter()
        .map(|s| s["delta"].as_f64().unwrap())
        .sum();
    // half of δ = 1e-7 is kept for the thresholds; they fit in it
    assert!(thr_delta > 0.0 && thr_delta <= 0.5e-7, "{thr_delta}");
    assert!(file["delta"].as_f64().unwrap() <= 1e-7);
    let tau = |i: usize| selections[i]["threshold"].as_f64().unwrap();

    let plan = dir.path().join("plan.json");
    let plan = plan.to_str().unwrap();
    let o = dpplan(&["compile", source, "-o", plan]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ledger = dir.path().join("ledger.sqlite");
    let ledger_s = ledger.to_str().unwrap();
    let o = dpplan(&["run", plan, "--ledger", ledger_s]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    for secret in ["ZZ-ONLY-ONE-USER", "/secret-only-one-user"] {
        assert!(!stdout.contains(secret), "{secret} revealed");
        assert!(!text(&o.stderr).contains(secret));
        let bytes = std::fs::read(&ledger).unwrap();
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()));
    }
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = out["results"].as_array().unwrap();
    for (i, q) in ["by_country", "by_page"].iter().enumerate() {
        let r = results.iter().find(|r| r["query"] == *q).unwrap();
        let cells = r["cells"].as_array().unwrap();
        let keys: Vec<&str> = cells.iter().map(|c| c["group"].as_str().unwrap()).collect();
        // the most common keys pass (C00 has hundreds of users), sorted
        assert!(keys.len() >= 3, "{q}: {keys:?}");
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        assert!(cells.iter().all(|c| c["value"].as_f64().unwrap() > tau(i)));
    }
    // charged what the checker claims per query, in ε
    let charged: f64 = results.iter().map(|r| r["epsilon"].as_f64().unwrap()).sum();
    let claimed: f64 = file["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["total"]["epsilon"].as_f64().unwrap())
        .sum();
    assert!((charged - claimed).abs() < 1e-9, "{charged} vs {claimed}");
    let o = dpplan(&["ledger", "verify", ledger_s]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));

    let o = dpplan(&["report", source]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let md = text(&o.stdout);
    assert!(md.contains("keys from data"), "{md}");
    assert!(md.contains("τ = "), "{md}");
    assert!(md.contains("added to the plan's δ"), "{md}");
}
