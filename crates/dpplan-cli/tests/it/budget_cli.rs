//! A budget shared by plans, enforced where data is released: the policy's
//! `[[budgets]]` entry with a `ledger` (docs/policy.md). Two plans on one
//! budget ledger, the release that would overspend it refused before any
//! noise is drawn, a plan with another unit refused, a tampered budget
//! ledger refused; the composition checked against basic composition.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{compiled, dpplan, dpplan_in, sql, text};

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

/// `dpplan ledger export LEDGER` (a plan's or a budget ledger): its
/// entries, one a line; "" for a ledger that does not exist.
fn export(ledger: &str) -> String {
    if !Path::new(ledger).exists() {
        return String::new();
    }
    let o = dpplan(&["ledger", "export", ledger]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.lines().count() >= 1, "an exported ledger has an entry");
    out
}

fn summary(budget: &Path) -> serde_json::Value {
    let o = dpplan(&["ledger", "show", budget.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    json(&o)
}

/// The composed ε a refusal states.
fn composed(reason: &str) -> f64 {
    reason
        .split("compose to ε = ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no composed ε: {reason}"))
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
    assert_eq!(before_budget.lines().count(), 6);
    assert_eq!(before_b.matches("\"intent\"").count(), 2);
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
    let e = composed(reason);
    assert!(e > 2.5 && e <= 6.0 * EPS, "{reason}");
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

/// 2026-01-01T00:00:00Z and one day.
const Q1: i64 = 1_767_225_600;
const DAY: i64 = 86_400;

/// A plan on `data/visits.csv` (user_id, t) with one query `q`.
fn quarter_plan(name: &str, query: &str) -> String {
    format!(
        r#"plan "{name}" {{
  privacy {{
    unit user by user_id
    adjacency add_remove
    budget epsilon 10 delta 1e-8
  }}
  dataset visits {{
    source "data/visits.csv"
    column user_id : id
    column t : time
    contribution {{
      rows_per_unit 100
      windows_per_unit 31
      rows_per_window 1
    }}
  }}
  query q {{
{query}
  }}
}}
"#
    )
}

/// `dpplan run PLAN --at DATE --test-clock`.
fn run_at(plan: &Path, at: &str) -> Output {
    dpplan(&["run", plan.to_str().unwrap(), "--at", at, "--test-clock"])
}

fn fresh(o: &Output) -> usize {
    assert!(o.status.success(), "{}", text(&o.stderr));
    json(o)["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["origin"] == "fresh")
        .count()
}

/// ε per user per calendar month, across a simulated quarter (2026 Q1)
/// run with `--at`: plan `daily` releases daily windows (one vector
/// release, ε = 31 · 1 / 62 = 0.5, counted once in each month its windows
/// lie in), plan `total` counts every row so far (ε = 100 / 200 = 0.5
/// each time, counted against every month up to its release), plan
/// `march` daily windows of March only. The budget is ε = 1 per month:
///
/// * Feb 1: daily's January windows (January 0.5), total's first count
///   (January and February +0.5: 1.0 and 0.5): both fit;
/// * Mar 1: daily's February windows (February 1.0); total's second count
///   would bring January (read again) to 1.5: refused, in 2026-01 — a
///   budget that "refreshes" each month would have let it through;
/// * Apr 1: daily's March windows and march's (March 0.5 + 0.5 = 1.0)
///   fit: their data lie in March only, in parallel with January's and
///   February's. Under one budget for all time (the negative control) the
///   same releases compose to 0.5 + 0.5 + 0.5 = 1.5 and march's is refused.
#[test]
fn a_monthly_budget_is_enforced_across_a_quarter() {
    for per_month in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("data")).unwrap();
        let mut csv = String::from("user_id,t\n");
        for day in 0..90 {
            for u in 0..10 {
                csv.push_str(&format!("u{u},{}\n", Q1 + day * DAY + 12 * 3600));
            }
        }
        std::fs::write(d.join("data/visits.csv"), csv).unwrap();
        let per = if per_month { "per = \"month\"\n" } else { "" };
        std::fs::write(
            d.join("dpplan.toml"),
            format!(
                "[[budgets]]\nsource = \"data/visits.csv\"\nepsilon = 1\ndelta = 1e-8\nledger = \"visits-budget.db\"\n{per}"
            ),
        )
        .unwrap();
        let daily = compiled(
            d,
            "daily",
            &quarter_plan(
                "daily",
                "    count(visits)\n    noise laplace scale 62\n    schedule every 1 day from 2026-01-01 until 2026-04-01\n    window 1 day",
            ),
        );
        let total = compiled(
            d,
            "total",
            &quarter_plan(
                "total",
                "    count(visits)\n    noise laplace scale 200\n    schedule 2 times",
            ),
        );
        let march = compiled(
            d,
            "march",
            &quarter_plan(
                "march",
                "    count(visits)\n    noise laplace scale 62\n    schedule every 1 day from 2026-03-01 until 2026-04-01\n    window 1 day",
            ),
        );
        let budget = d.join("visits-budget.db");
        // the checker states which releases compose in parallel across
        // months and which count in every month
        let o = dpplan_in(
            d,
            &["check", "daily.dpplan", "total.dpplan", "march.dpplan"],
        );
        let said = text(&o.stdout);
        let statement = "in parallel across months, each counted once in every month its windows lie in: daily.dpplan: q, march.dpplan: q; in every month up to each release (no window: it reads every row so far): total.dpplan: q";
        assert_eq!(said.contains(statement), per_month, "{said}");

        assert_eq!(fresh(&run_at(&daily, "2026-02-01T00:00Z")), 31);
        assert_eq!(fresh(&run_at(&total, "2026-02-01T00:00Z")), 1);
        assert_eq!(fresh(&run_at(&daily, "2026-03-01T00:00Z")), 28);
        let before = export(&plan_ledger(&total));
        let o = run_at(&total, "2026-03-01T00:00Z");
        if per_month {
            assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
            let v = json(&o);
            assert_eq!(v["results"], serde_json::json!([]));
            let reason = v["refused"][0]["reason"].as_str().unwrap();
            for needle in [
                "ε = 1 per user per month",
                "would be overspent in 2026-01",
                "it has no window: it reads every month up to 2026-03",
                "`daily` ε = ",
                "`total` ε = ",
                "(2 release(s), this one included)",
            ] {
                assert!(reason.contains(needle), "{needle}: {reason}");
            }
            // January: daily's windows and two counts, at most 3 · 0.5
            let e = composed(reason);
            assert!(e > 1.0 && e <= 1.5, "{reason}");
            assert_eq!(export(&plan_ledger(&total)), before);
        } else {
            // one budget for all time: 0.5 + 0.5 + 0.5 > 1 already here
            assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        }
        assert_eq!(fresh(&run_at(&daily, "2026-04-01T00:00Z")), 31);
        let o = run_at(&march, "2026-04-01T00:00Z");
        if !per_month {
            assert_eq!(o.status.code(), Some(1));
            let reason = json(&o)["refused"][0]["reason"]
                .as_str()
                .unwrap()
                .to_string();
            let e = composed(&reason);
            assert!(e > 1.0 && e <= 1.5, "{reason}");
            continue;
        }
        assert_eq!(fresh(&o), 31);
        let s = summary(&budget);
        assert_eq!(s["per"], "month");
        let blocks: Vec<(String, f64)> = s["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["block"].as_str().unwrap().to_string(),
                    b["epsilon"].as_f64().unwrap(),
                )
            })
            .collect();
        let names: Vec<&str> = blocks.iter().map(|(b, _)| b.as_str()).collect();
        assert_eq!(names, ["2026-01", "2026-02", "2026-03", "any other"]);
        // each month: the releases whose data lie in it, by basic
        // composition 0.5 + 0.5 (the tightest accountant at most that);
        // a month no window lies in: total's one count
        for (b, e) in &blocks {
            let basic = if b == "any other" { 0.5 } else { 1.0 };
            assert!(*e <= basic && *e > basic - 0.5, "{b}: {e}");
        }
        // 31 + 28 + 31 daily windows, 1 count, 31 march windows
        assert_eq!(s["entries"], 1 + 31 + 28 + 31 + 1 + 31);
        let o = dpplan(&["ledger", "show", budget.to_str().unwrap()]);
        let shown = text(&o.stdout);
        assert!(shown.contains("ε per user per month"), "{shown}");
        assert!(shown.contains("2026-02"), "{shown}");
    }
}

/// `per` needs a budget ledger (nothing else enforces it): the policy is
/// refused, located in it.
#[test]
fn a_per_block_budget_without_a_ledger_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plans = setup(dir.path(), 2.5, &[("a", 1, "unit user by user_id")]);
    std::fs::write(
        dir.path().join("dpplan.toml"),
        "[[budgets]]\nsource = \"data/visits.csv\"\nepsilon = 1\nper = \"month\"\n",
    )
    .unwrap();
    let o = run(&plans[0], 0);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("give it `ledger = \"…\"`"), "{err}");
    assert!(err.contains("dpplan.toml"), "{err}");
    std::fs::write(
        dir.path().join("dpplan.toml"),
        "[[budgets]]\nsource = \"data/visits.csv\"\nepsilon = 1\nledger = \"b.db\"\nper = \"year\"\n",
    )
    .unwrap();
    let o = run(&plans[0], 0);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("year"), "{}", text(&o.stderr));
}

/// Two runs of two plans at the same moment, on a budget that holds one
/// of their releases: the budget ledger's exclusive transaction lets
/// exactly one through, whichever it is, and the other is refused with
/// nothing drawn (repeated to give the runs a chance to overlap).
#[test]
fn two_runs_at_once_never_overspend_the_shared_budget() {
    for _ in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let unit = "unit user by user_id";
        let plans = setup(dir.path(), EPS, &[("a", 1, unit), ("b", 1, unit)]);
        let spawn = |p: &Path| {
            crate::support::command()
                .args(["run", p.to_str().unwrap(), "--slot", "0"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (x, y) = (spawn(&plans[0]), spawn(&plans[1]));
        let outs = [x.wait_with_output().unwrap(), y.wait_with_output().unwrap()];
        let passed: Vec<bool> = outs.iter().map(|o| o.status.success()).collect();
        assert_eq!(
            passed.iter().filter(|p| **p).count(),
            1,
            "{}\n{}",
            text(&outs[0].stderr),
            text(&outs[1].stderr)
        );
        for o in &outs {
            let v = json(o);
            let fresh = v["results"].as_array().unwrap().len();
            let refused = v["refused"].as_array().unwrap().len();
            assert_eq!(
                (fresh, refused),
                if o.status.success() { (1, 0) } else { (0, 1) }
            );
        }
        let s = summary(&dir.path().join("visits-budget.db"));
        assert_eq!(s["entries"], 2);
        assert!(s["total_epsilon"].as_f64().unwrap() <= EPS);
    }
}
