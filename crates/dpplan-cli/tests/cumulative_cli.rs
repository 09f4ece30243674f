//! Cumulative counts through the real binary: `dpplan check` claims the
//! tree's ε (one release of its nodes) and shows each slot's error;
//! `dpplan compile` writes the tree into the executable plan (format 5);
//! `dpplan run` and `dpplan audit` refuse it with a clear error and leave
//! no ledger (the runtime does not run the tree yet, and running the slots
//! as fresh counts would spend more than the claim), while the same plan
//! without `cumulative` runs (negative control).

mod support;

use support::{dpplan, root, text};

#[test]
fn the_signups_example_compiles_with_its_tree_and_run_refuses_it_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("signups.dpplan");
    std::fs::copy(root().join("examples/signups/signups.dpplan"), &source).unwrap();
    let src = source.to_str().unwrap();

    let o = dpplan(&["check", src, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let checked: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let file = &checked["files"][0];
    let eps = file["epsilon"].as_f64().unwrap();
    assert!(eps < 3.0, "{file}");
    let q = &file["queries"][0];
    assert_eq!(q["aggregation"], "cumulative count(signups)");
    assert_eq!(q["releases"], 365);
    let part = &q["parts"][0];
    let steps: Vec<&str> = part["derivation"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(steps[0].contains("724 dyadic nodes"), "{steps:?}");
    assert!(steps.iter().any(|s| s.contains("as fresh releases")));
    // the worst running total's error (slot 255), above one node's σ = 40
    let sd = part["noise_std"].as_f64().unwrap();
    assert!(sd > 40.0 && sd < 40.0 * 8f64.sqrt(), "{sd}");

    let plan = dir.path().join("plan.json");
    let o = dpplan(&["compile", src, "-o", plan.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let compiled: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    assert_eq!(compiled["format_version"], 5);
    let tree = &compiled["body"]["releases"][0]["cumulative"];
    assert_eq!(tree["slots"], 365);
    assert_eq!(tree["levels"], 9);
    assert_eq!(tree["nodes"], 724);
    assert_eq!(tree["column"], "signed_up_at");
    assert_eq!(tree["seconds"], 86_400.0);

    let ledger = dir.path().join("l.sqlite");
    let data = format!(
        "signups={}",
        root().join("examples/signups/data/signups.csv").display()
    );
    let run = |plan: &std::path::Path| {
        dpplan(&[
            "run",
            plan.to_str().unwrap(),
            "--ledger",
            ledger.to_str().unwrap(),
            "--data",
            &data,
            "--at",
            "2026-01-02T00:00:00Z",
        ])
    };
    let o = run(&plan);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("running_signups"), "{err}");
    assert!(err.contains("does not run the tree yet"), "{err}");
    assert!(!ledger.exists());
    // the Spark engine is refused the same way, before spark-submit is
    // looked for (and --explain shows no statement for the tree)
    for extra in [&[][..], &["--explain"][..]] {
        let mut args = vec![
            "run",
            plan.to_str().unwrap(),
            "--ledger",
            ledger.to_str().unwrap(),
            "--data",
            &data,
            "--engine",
            "spark",
            "--spark-submit",
            "/nonexistent/spark-submit",
        ];
        args.extend_from_slice(extra);
        let o = dpplan(&args);
        assert!(!o.status.success());
        let err = text(&o.stderr);
        assert!(err.contains("does not run the tree yet"), "{err}");
        assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
        assert!(!ledger.exists());
    }
    let o = dpplan(&[
        "audit",
        plan.to_str().unwrap(),
        "--data",
        &data,
        "--runs",
        "2",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("cumulative count"),
        "{}",
        text(&o.stderr)
    );

    // negative control: without `cumulative` (and with the fresh counts'
    // far larger cost under a larger budget) the plan has no tree and runs
    let fresh = std::fs::read_to_string(&source)
        .unwrap()
        .replace("cumulative count", "count")
        .replace("budget epsilon 3.0", "budget epsilon 1000");
    std::fs::write(&source, fresh).unwrap();
    let o = dpplan(&["compile", src, "-o", plan.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(!std::fs::read_to_string(&plan)
        .unwrap()
        .contains("cumulative"));
    let o = run(&plan);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(ledger.exists());
}
