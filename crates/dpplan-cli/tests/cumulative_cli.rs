//! Cumulative counts through the real binary: `dpplan check` claims the
//! tree's ε (one release of its nodes) and shows each slot's error;
//! `dpplan compile` refuses the plan with a clear error (the runtime does
//! not run the tree yet, and running the slots as fresh counts would
//! spend more than the claim), while the same plan without `cumulative`
//! compiles (negative control).

mod support;

use support::{dpplan, root, text};

#[test]
fn the_signups_example_checks_and_compile_refuses_it_clearly() {
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
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("running_signups"), "{err}");
    assert!(err.contains("cumulative count"), "{err}");
    assert!(!plan.exists());

    // negative control: without `cumulative` (and with the fresh counts'
    // far larger cost under a larger budget) the plan compiles
    let fresh = std::fs::read_to_string(&source)
        .unwrap()
        .replace("cumulative count", "count")
        .replace("budget epsilon 3.0", "budget epsilon 1000");
    std::fs::write(&source, fresh).unwrap();
    let o = dpplan(&["compile", src, "-o", plan.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(plan.exists());
}
