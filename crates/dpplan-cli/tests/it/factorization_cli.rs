//! `mechanism factorization` through the real binary, the way cron runs
//! it: one process a day a few minutes after midnight, a missed day
//! backfilled, a run far in the future finishing the schedule. Each
//! running total is the decoder's estimate from the coordinates stored
//! with the slots' intents (σ = 0.001: within 0.01 of the exact running
//! count), the whole vector is charged once, each intent stores exactly
//! its slot's coordinate, and the exact counts kept beside the ledger are
//! under its MAC (a tampered count stops the run, nothing charged); a begun
//! tree cannot be upgraded into a factorization.

use crate::cumulative_cli::{end_of, entries, run_cmd, verified};
use crate::support::{compiled, text};

fn plan_text(mechanism: &str) -> String {
    format!(
        "plan \"f\" {{\n  privacy {{\n    unit row\n    adjacency add_remove\n    budget epsilon 100000000 delta 1e-6\n  }}\n  dataset events {{\n    source \"events.csv\"\n    column at : time\n  }}\n  query running {{\n    cumulative count(events)\n{mechanism}    noise gaussian sigma 0.001\n    schedule every 1 day from 2026-01-01 until 2026-01-21\n  }}\n}}\n"
    )
}

/// (slot, value, ε charged) of each fresh result of a run (a value
/// served again from the ledger is not drawn again, and charged nothing).
fn released(o: &std::process::Output) -> Vec<(u64, f64, f64)> {
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = out["results"].as_array().unwrap();
    for r in results.iter().filter(|r| r["origin"] != "fresh") {
        assert_eq!(r["origin"], "ledger", "{r}");
        assert_eq!(r["epsilon"], 0.0, "{r}");
    }
    results
        .iter()
        .filter(|r| r["origin"] == "fresh")
        .map(|r| {
            (
                r["slot"].as_u64().unwrap(),
                r["cells"][0]["value"].as_f64().unwrap(),
                r["epsilon"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_factorized_count_keeps_its_schedule_by_cron() {
    let dir = tempfile::tempdir().unwrap();
    let plan = compiled(dir.path(), "f", &plan_text("    mechanism factorization\n"));
    let compiled_plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
    assert_eq!(compiled_plan["format_version"], dpplan_plan::FORMAT_VERSION);
    let c = &compiled_plan["body"]["releases"][0]["cumulative"];
    assert_eq!(c["mechanism"], "factorization");
    assert_eq!(
        (c["levels"].as_u64(), c["nodes"].as_u64()),
        (Some(1), Some(20))
    );
    let cost = compiled_plan["body"]["releases"][0]["cost_per_release"]["epsilon"]
        .as_f64()
        .unwrap();

    // rows on every day of January 1–20, a few per day
    let per_day: Vec<u32> = (1..=20)
        .map(|d| (d * 7 % 5) + u32::from(d % 3 == 0))
        .collect();
    let mut csv = String::from("at\n");
    for (i, &n) in per_day.iter().enumerate() {
        for h in 0..n {
            csv.push_str(&format!("2026-01-{:02}T{:02}:30:00Z\n", i + 1, 1 + h));
        }
    }
    std::fs::write(dir.path().join("events.csv"), csv).unwrap();
    let exact = |t: u64| f64::from(per_day[..t as usize].iter().sum::<u32>());
    let ledger = dir.path().join("l.sqlite");
    let data = format!("events={}", dir.path().join("events.csv").display());
    let run = |at: &str| run_cmd(&plan, &ledger, &data, at, &[]).output().unwrap();
    let mut charged = 0.0;
    let mut seen = Vec::new();
    let mut check = |r: Vec<(u64, f64, f64)>| {
        for (slot, value, eps) in r {
            let t = slot + 1;
            assert!(
                (value - exact(t)).abs() < 0.01,
                "slot {t}: {value} vs {}",
                exact(t)
            );
            charged += eps;
            seen.push(slot);
        }
    };
    // days 1–5, each a few minutes after its midnight; a run before a
    // slot closes releases nothing of it
    for day in 1..=5 {
        let r = released(&run(&end_of(day)));
        assert_eq!(r.len(), 1, "day {day}");
        check(r);
    }
    let early = released(&run("2026-01-06T23:59:00Z"));
    assert!(early.is_empty(), "slot 6 is still open: {early:?}");
    // days 6 and 7 missed: the run of day 8 backfills them in order
    let r = released(&run(&end_of(8)));
    assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![5, 6, 7]);
    check(r);
    verified(&ledger);

    // the exact counts beside the ledger are under its MAC: a changed
    // count stops the run, nothing is charged, the restored file goes on
    let state_path = format!("{}.tree-state", ledger.display());
    let original = std::fs::read_to_string(&state_path).unwrap();
    let mut state: serde_json::Value = serde_json::from_str(&original).unwrap();
    let counts = state["queries"]["running"]["counts"].as_array().unwrap();
    assert_eq!(counts.len(), 8, "{state}");
    let first = counts[0].as_i64().unwrap();
    state["queries"]["running"]["counts"][0] = serde_json::json!(first + (1i64 << 35));
    std::fs::write(&state_path, serde_json::to_string_pretty(&state).unwrap()).unwrap();
    let intents = || {
        entries(&ledger)
            .into_iter()
            .filter(|e| e["kind"] == "intent")
            .collect::<Vec<_>>()
    };
    let before = intents().len();
    let o = run(&end_of(9));
    let err = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert!(err.contains("MAC does not hold"), "{err}");
    assert_eq!(intents().len(), before);
    // and `ledger verify` says so too
    let o = crate::support::dpplan(&["ledger", "verify", ledger.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("MAC does not hold"),
        "{}",
        text(&o.stderr)
    );
    std::fs::write(&state_path, &original).unwrap();

    // far in the future: every remaining slot, in order, then nothing
    let r = released(&run("2026-11-01T00:05:00Z"));
    assert_eq!(
        r.iter().map(|x| x.0).collect::<Vec<_>>(),
        (8..20).collect::<Vec<_>>()
    );
    check(r);
    assert!(released(&run("2026-11-02T00:05:00Z")).is_empty());
    assert_eq!(seen, (0..20).collect::<Vec<_>>());
    // charged once, by the first slot
    assert!((charged - cost).abs() < 1e-12, "{charged} vs {cost}");
    verified(&ledger);

    // every intent stores exactly its slot's coordinate (level 0)
    let all = intents();
    assert_eq!(all.len(), 20);
    for (i, e) in all.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(e["value"].as_str().unwrap()).unwrap();
        let nodes = v["tree_nodes"].as_array().unwrap();
        assert_eq!(nodes.len(), 1);
        assert_eq!(
            (nodes[0]["level"].as_u64(), nodes[0]["index"].as_u64()),
            (Some(0), Some(i as u64))
        );
    }
}

/// A begun tree cannot become a factorization by `--upgrade` (its stored
/// nodes are not the encoder's coordinates): refused, nothing charged.
/// Control: the same factorized plan on a new ledger runs.
#[test]
fn a_begun_tree_cannot_be_upgraded_into_a_factorization() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("events.csv"),
        "at\n2026-01-01T01:00:00Z\n2026-01-02T01:00:00Z\n",
    )
    .unwrap();
    let tree = compiled(dir.path(), "t", &plan_text(""));
    let fact = compiled(dir.path(), "f", &plan_text("    mechanism factorization\n"));
    let ledger = dir.path().join("l.sqlite");
    let data = format!("events={}", dir.path().join("events.csv").display());
    let o = run_cmd(&tree, &ledger, &data, &end_of(1), &[])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = run_cmd(&fact, &ledger, &data, &end_of(2), &["--upgrade"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("whose tree has begun"), "{err}");
    let fresh = dir.path().join("fresh.sqlite");
    let o = run_cmd(&fact, &fresh, &data, &end_of(2), &[])
        .output()
        .unwrap();
    assert_eq!(released(&o).len(), 2);
}
