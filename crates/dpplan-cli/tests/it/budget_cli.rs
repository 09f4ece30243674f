//! A budget shared by plans, enforced where data is released: the policy's
//! `[[budgets]]` entry with a `ledger` (docs/policy.md). Two plans on one
//! budget ledger, the release that would overspend it refused before any
//! noise is drawn, a plan with another unit refused, a tampered budget
//! ledger refused; the composition checked against basic composition.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{compiled, dpplan, sql, text};

/// ε of one release: a count (sensitivity 1 with one row per user)
/// with Laplace noise of scale 2.
const EPS: f64 = 0.5;

/// A team's plan: `releases` Laplace counts of `data/visits.csv` (one per
/// slot), under `unit`.
fn plan_text(team: &str, releases: u64, unit: &str) -> String {
    format!(
        r#"plan "team-{team}" {{
  privacy {{
    {unit}
    adjacency add_remove
    budget epsilon {budget} delta 1e-8
    accountant best
  }}

  dataset visits {{
    source "data/visits.csv"
    column user_id : id
    contribution {{
      rows_per_unit 1
    }}
  }}

  query visitors_{team} {{
    count(visits)
    noise laplace scale 2
    schedule {releases} times
  }}
}}
"#,
        budget = EPS * releases as f64,
    )
}

/// A directory with the data, the policy (`epsilon` shared, a budget
/// ledger) and the compiled plans `(team, releases, unit)`.
fn setup(dir: &Path, epsilon: f64, plans: &[(&str, u64, &str)]) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let mut csv = String::from("user_id\n");
    for i in 0..200 {
        csv.push_str(&format!("u{i:04}\n"));
    }
    std::fs::write(dir.join("data/visits.csv"), csv).unwrap();
    std::fs::write(
        dir.join("dpplan.toml"),
        format!(
            "[[budgets]]\nsource = \"data/visits.csv\"\nepsilon = {epsilon}\ndelta = 1e-8\nledger = \"visits-budget.db\"\n"
        ),
    )
    .unwrap();
    plans
        .iter()
        .map(|(team, n, unit)| compiled(dir, &format!("team-{team}"), &plan_text(team, *n, unit)))
        .collect()
}

fn run(plan: &Path, slot: u64) -> Output {
    dpplan(&["run", plan.to_str().unwrap(), "--slot", &slot.to_string()])
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&o.stdout), text(&o.stderr)))
}

fn plan_ledger(plan: &Path) -> String {
    plan.with_file_name(format!(
        "{}.ledger.sqlite",
        plan.file_stem().unwrap().to_string_lossy()
    ))
    .to_str()
    .unwrap()
    .to_string()
}

fn export(ledger: &str) -> String {
    text(&dpplan(&["ledger", "export", ledger]).stdout)
}

fn summary(budget: &Path) -> serde_json::Value {
    let o = dpplan(&["ledger", "show", budget.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    json(&o)
}

fn released(o: &Output) {
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v = json(o);
    assert_eq!(v["results"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["results"][0]["origin"], "fresh");
}

/// Team a releases 3 counts and team b 2 on one shared budget of ε = 2.5:
/// 5 Laplace releases of ε = 0.5 compose to at most 5 · Δ/b = 2.5 (basic
/// composition; the tightest accountant is at most that), so they fit
/// (the negative control: one release fewer than the refused one fits).
/// Team b's third release would bring 6 · 0.5 = 3 > 2.5 (the tightest
/// accountant gives more than 2.5 too): it is refused before anything is
/// drawn, both plans named with their shares; nothing is charged in
/// team b's ledger nor in the budget ledger, and no value is printed.
#[test]
fn the_release_that_would_overspend_a_shared_budget_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let unit = "unit user by user_id";
    let plans = setup(dir.path(), 2.5, &[("a", 3, unit), ("b", 3, unit)]);
    let (a, b) = (&plans[0], &plans[1]);
    let budget = dir.path().join("visits-budget.db");
    for slot in 0..3 {
        released(&run(a, slot));
    }
    let s = summary(&budget);
    let total_a = s["total_epsilon"].as_f64().unwrap();
    assert!(total_a <= 3.0 * EPS && total_a > 2.0 * EPS, "{s}");
    for slot in 0..2 {
        released(&run(b, slot));
    }
    let s = summary(&budget);
    let total = s["total_epsilon"].as_f64().unwrap();
    // 5 releases: at most basic composition's 5 · Δ/b, more than 4's
    assert!(total <= 5.0 * EPS && total > 4.0 * EPS, "{s}");
    assert_eq!(s["entries"], 1 + 5);
    let shares: Vec<(String, u64)> = s["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["plan"].as_str().unwrap().to_string(),
                p["releases"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shares,
        [("team-a".to_string(), 3), ("team-b".to_string(), 2)]
    );
    // each share alone is at most its own basic composition
    for p in s["plans"].as_array().unwrap() {
        let e = p["epsilon"].as_f64().unwrap();
        let n = p["releases"].as_f64().unwrap();
        assert!(e <= n * EPS && e > (n - 1.0) * EPS, "{p}");
    }

    let before_b = export(&plan_ledger(b));
    let before_budget = export(budget.to_str().unwrap());
    let o = run(b, 2);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let v = json(&o);
    assert_eq!(v["results"], serde_json::json!([]), "no value is printed");
    let reason = v["refused"][0]["reason"].as_str().unwrap();
    for needle in [
        "would be overspent",
        "`team-a` ε = ",
        "(3 release(s))",
        "`team-b` ε = ",
        "(3 release(s), this one included)",
        "nothing was drawn or charged",
        "data/visits.csv",
    ] {
        assert!(reason.contains(needle), "{needle}: {reason}");
    }
    // the refused total: above the budget, at most basic composition's 6 · 0.5
    let composed: f64 = reason
        .split("compose to ε = ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(composed > 2.5 && composed <= 6.0 * EPS, "{reason}");
    assert!(text(&o.stderr).contains("refused: visitors_b slot 2"));
    assert_eq!(
        export(&plan_ledger(b)),
        before_b,
        "team b's ledger unchanged"
    );
    assert_eq!(export(budget.to_str().unwrap()), before_budget);

    // `ledger show` names each plan with its share and the total
    let o = dpplan(&["ledger", "show", budget.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let shown = text(&o.stdout);
    for needle in ["team-a", "team-b", "composed: ε = ", "remaining ε = "] {
        assert!(shown.contains(needle), "{needle}: {shown}");
    }
    let o = dpplan(&["ledger", "verify", budget.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// A plan protecting rows cannot charge a budget its ledger holds for
/// users: refused with that reason, nothing charged anywhere.
#[test]
fn a_plan_with_another_unit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plans = setup(
        dir.path(),
        10.0,
        &[("a", 1, "unit user by user_id"), ("c", 1, "unit row")],
    );
    let budget = dir.path().join("visits-budget.db");
    released(&run(&plans[0], 0));
    let before = export(budget.to_str().unwrap());
    let o = run(&plans[1], 0);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let v = json(&o);
    assert_eq!(v["results"], serde_json::json!([]));
    let reason = v["refused"][0]["reason"].as_str().unwrap();
    for needle in [
        "plan `team-c` protects unit row, adjacency add_remove",
        "charged for unit user by user_id, adjacency add_remove",
        "never composed",
    ] {
        assert!(reason.contains(needle), "{needle}: {reason}");
    }
    assert_eq!(export(budget.to_str().unwrap()), before);
    assert!(
        !export(&plan_ledger(&plans[1])).contains("\"intent\""),
        "nothing charged in team c's ledger"
    );
}

/// A budget ledger edited behind the runtime's back (its triggers dropped
/// and put back) or cut short is refused: the run stops before anything
/// is charged or drawn, and `ledger verify` names the entry.
#[test]
fn a_tampered_budget_ledger_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let unit = "unit user by user_id";
    let plans = setup(dir.path(), 10.0, &[("a", 3, unit), ("b", 3, unit)]);
    let budget = dir.path().join("visits-budget.db");
    let b = budget.to_str().unwrap();
    released(&run(&plans[0], 0));
    released(&run(&plans[0], 1));
    let before = export(&plan_ledger(&plans[1]));
    // a charge's mechanism made cheaper, the trigger put back
    let trigger = "CREATE TRIGGER charges_no_update BEFORE UPDATE ON charges BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END;";
    sql(
        b,
        &format!(
            "DROP TRIGGER charges_no_update; UPDATE charges SET mechanism = replace(mechanism, '\"scale\":2.0', '\"scale\":200.0') WHERE seq = 2; {trigger}"
        ),
    );
    let o = run(&plans[1], 0);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty(), "no value printed: {}", text(&o.stdout));
    let err = text(&o.stderr);
    assert!(
        err.contains("failed verification at entry 2")
            && err.contains("visits-budget.db")
            && err.contains("its content does not match its hash"),
        "{err}"
    );
    assert_eq!(export(&plan_ledger(&plans[1])), before);
    let o = dpplan(&["ledger", "verify", b]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("FAILED: entry 2"),
        "{}",
        text(&o.stderr)
    );
    assert!(text(&o.stderr).contains("modified"));

    // cut short: the last charge removed (its trigger put back) is found by
    // the anchor
    let dir = tempfile::tempdir().unwrap();
    let plans = setup(dir.path(), 10.0, &[("a", 3, unit), ("b", 3, unit)]);
    let budget = dir.path().join("visits-budget.db");
    let b = budget.to_str().unwrap();
    released(&run(&plans[0], 0));
    released(&run(&plans[0], 1));
    let trigger = "CREATE TRIGGER charges_no_delete BEFORE DELETE ON charges BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END;";
    sql(
        b,
        &format!("DROP TRIGGER charges_no_delete; DELETE FROM charges WHERE seq = 3; {trigger}"),
    );
    let o = run(&plans[1], 0);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("charges were lost"),
        "{}",
        text(&o.stderr)
    );
    // a dropped trigger is found even when no entry was edited
    let dir = tempfile::tempdir().unwrap();
    let plans = setup(dir.path(), 10.0, &[("a", 3, unit)]);
    let budget = dir.path().join("visits-budget.db");
    released(&run(&plans[0], 0));
    sql(budget.to_str().unwrap(), "DROP TRIGGER meta_no_update;");
    let o = run(&plans[0], 1);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("the append-only trigger `meta_no_update` was dropped"),
        "{}",
        text(&o.stderr)
    );
}
