//! `release after <duration>` through the real `dpplan` binary: `check`
//! and `compile` accept it on a windowed query (the executable plan then
//! has the delay in the release's schedule, and the same claim as without
//! it) and refuse it, with its location, on a query without a window.

use crate::support::{dpplan, text};

fn plan_text(window: &str) -> String {
    format!(
        r#"plan "delayed" {{
  privacy {{
    unit user by rider_id
    adjacency add_remove
    budget epsilon 10 delta 1e-6
  }}
  dataset trips {{
    source "trips.csv"
    column rider_id : id
    column started_at : time
    contribution {{
      rows_per_unit 20
      windows_per_unit 30
      rows_per_window 2
    }}
  }}
  query hourly_trips {{
    count(trips)
    noise gaussian sigma 40
    schedule every 1 hour for 7 days
{window}    release after 2 hours
  }}
}}
"#
    )
}

/// What `dpplan check --format json` says of the plan (every accountant,
/// every query's cost and derivation), its path aside.
fn checked(path: &str) -> serde_json::Value {
    let o = dpplan(&["check", "--format", "json", path]);
    assert!(o.status.success(), "{}", text(&o.stdout));
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let file = v["files"][0].as_object_mut().expect("one file");
    file.remove("path");
    assert!(file["epsilon"].as_f64().is_some_and(|e| e > 0.0), "{v}");
    v["files"][0].take()
}

#[test]
fn check_and_compile_accept_a_delay_on_a_windowed_query() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("delayed.dpplan");
    let source = source.to_str().unwrap();
    std::fs::write(source, plan_text("    window 1 hour\n")).unwrap();
    let o = dpplan(&["check", source]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(text(&o.stdout).contains("0 errors"), "{}", text(&o.stdout));

    let out = dir.path().join("plan.json");
    let out = out.to_str().unwrap();
    let o = dpplan(&["compile", source, "-o", out]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    let schedule = &plan["body"]["releases"][0]["schedule"];
    assert_eq!(schedule["release_after_seconds"], serde_json::json!(7200.0));
    assert_eq!(schedule["every_seconds"], serde_json::json!(3600.0));

    // the same plan without the delay: the same claim, and no such field
    let plain = dir.path().join("plain.dpplan");
    let plain = plain.to_str().unwrap();
    std::fs::write(
        plain,
        plan_text("    window 1 hour\n").replace("    release after 2 hours\n", ""),
    )
    .unwrap();
    assert_eq!(checked(plain), checked(source));
    let o = dpplan(&["compile", plain]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let compiled: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let release = &compiled["body"]["releases"][0];
    assert!(release["schedule"].get("release_after_seconds").is_none());
    assert_eq!(
        release["cost_total"],
        plan["body"]["releases"][0]["cost_total"]
    );
}

#[test]
fn check_and_compile_refuse_a_delay_on_a_plain_query() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("plain.dpplan");
    let source = source.to_str().unwrap();
    let plan = plan_text("");
    std::fs::write(source, &plan).unwrap();
    let line = plan
        .lines()
        .position(|l| l.contains("release after"))
        .unwrap()
        + 1;

    let o = dpplan(&["check", source]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let shown = text(&o.stdout);
    assert!(
        shown.contains("error[DP024]: `release after` delays the release of a window, but `hourly_trips` has neither a `window` nor a `cumulative` count"),
        "{shown}"
    );
    assert!(shown.contains(&format!("plain.dpplan:{line}:5")), "{shown}");
    assert!(shown.contains("no window to wait for"), "{shown}");

    let out = dir.path().join("plan.json");
    let o = dpplan(&["compile", source, "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("error[DP024]"), "{err}");
    assert!(err.contains("has errors: not compiled"), "{err}");
    assert!(!out.exists(), "nothing is written");
}
