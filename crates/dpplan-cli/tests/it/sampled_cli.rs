//! A sampled dataset through the real binary, as an operator runs it:
//! examples/daily-panel from cron a few minutes after midnight, day after
//! day, after a missed day and long after. Each run releases the day's
//! slot on a fresh sample (the values count about 5 % of the users), the
//! ledger charges the checker's amplified ε per release and composes its
//! history as sampled mechanisms, a missed period is skipped and recorded,
//! and the ledger verifies. The Spark engine's `--explain` shows the
//! sample drawn in its statement; the audit draws the canary's coin on
//! every run; neither charges anything.

use crate::support::{dpplan, jan_2026 as unix, root, text, Scheduled};

fn plan_text() -> String {
    std::fs::read_to_string(root().join("examples/daily-panel/daily-panel.dpplan")).unwrap()
}

/// (query, slot, value of the first cell, ε, mechanism words) of each
/// fresh release of a run.
fn fresh(v: &serde_json::Value) -> Vec<(String, u64, f64, f64, String)> {
    crate::support::fresh_results(v)
        .map(|r| {
            (
                r["query"].as_str().unwrap().to_string(),
                r["slot"].as_u64().unwrap(),
                r["cells"][0]["value"].as_f64().unwrap(),
                r["epsilon"].as_f64().unwrap(),
                r["mechanism"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_daily_sampled_dashboard_from_cron() {
    let s = Scheduled::new(&plan_text());
    std::fs::create_dir_all(s.dir.join("data")).unwrap();
    std::fs::copy(
        root().join("examples/daily-panel/data/sessions.csv"),
        s.dir.join("data/sessions.csv"),
    )
    .unwrap();
    let checked = dpplan(&[
        "check",
        "--format",
        "json",
        root()
            .join("examples/daily-panel/daily-panel.dpplan")
            .to_str()
            .unwrap(),
    ]);
    let checked: serde_json::Value = serde_json::from_slice(&checked.stdout).unwrap();
    let per_release = |q: &str| -> f64 {
        checked["files"][0]["queries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == q)
            .unwrap()["per_release"]["epsilon"]
            .as_f64()
            .unwrap()
    };
    // day 1, 00:05: slot 0 of the three queries
    let (o, v) = s.run_at(unix(1, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got = fresh(&v);
    assert_eq!(got.len(), 3, "{v}");
    let mut actives = vec![];
    for (q, slot, value, eps, words) in &got {
        assert_eq!(*slot, 0);
        // the checker's amplified ε, charged as claimed
        assert_eq!(*eps, per_release(q), "{q}");
        assert!(words.contains("Poisson sample of 5 %"), "{words}");
        if q == "active_users" {
            actives.push(*value);
        }
    }
    // 12,001 users: about 600 in a 5 % sample (binomial sd 24, noise σ 6)
    assert!((450.0..750.0).contains(&actives[0]), "{actives:?}");
    let (o, v) = s.run_at(unix(2, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got = fresh(&v);
    assert!(got.iter().all(|g| g.1 == 1), "{v}");
    actives.extend(got.iter().filter(|g| g.0 == "active_users").map(|g| g.2));
    // no run on day 3: day 4's run releases slot 3 and records slot 2
    let (o, v) = s.run_at(unix(4, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got = fresh(&v);
    assert!(got.iter().all(|g| g.1 == 3), "{v}");
    assert_eq!(v["skipped"][0]["from"], 2, "{v}");
    actives.extend(got.iter().filter(|g| g.0 == "active_users").map(|g| g.2));
    // a fresh sample each day: the three values are not one sample's
    // (equal to the unit only with noise σ 6 around the same count)
    assert!(actives.windows(2).all(|w| w[0] != w[1]), "{actives:?}");
    // long after (day 300): only its own slot, the gap recorded once
    let (o, v) = s.run_at(unix(300, 0, 5), &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let got = fresh(&v);
    assert!(got.len() == 3 && got.iter().all(|g| g.1 == 299), "{v}");
    assert_eq!(v["skipped"][0]["from"], 4, "{v}");
    // the ledger: 4 fresh slots of 3 queries, each charged its ε
    let o = dpplan(&["ledger", "show", &s.ledger, "--json"]);
    let entries: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    let intents: Vec<&serde_json::Value> =
        entries.iter().filter(|e| e["kind"] == "intent").collect();
    assert_eq!(intents.len(), 12);
    let charged: f64 = intents.iter().map(|e| e["epsilon"].as_f64().unwrap()).sum();
    let claimed: f64 = ["active_users", "minutes_spent", "users_by_platform"]
        .iter()
        .map(|q| 4.0 * per_release(q))
        .sum();
    assert!((charged - claimed).abs() < 1e-9, "{charged} vs {claimed}");
    // and the records carry the rate, under the chain
    assert!(
        intents.iter().all(
            |e| e["mechanism"].to_string().contains("\\\"sample\\\":0.05")
                || e["mechanism"]["sample"] == 0.05
        ),
        "{:?}",
        intents[0]
    );
    s.verify();
    // the Spark engine draws the sample in its statement (a keyed HMAC of
    // the unit; the real-Spark run is in spark_cli.rs): `--explain` shows
    // the step and the key's names, never a key, and charges nothing
    let o = dpplan(&[
        "run",
        &s.plan,
        "--ledger",
        &s.ledger,
        "--engine",
        "spark",
        "--explain",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let explained = text(&o.stdout);
    assert_eq!(explained.matches("sampled AS (").count(), 3, "{explained}");
    assert!(
        explained.contains(":sample_ikey and :sample_okey = a secret 256-bit HMAC key"),
        "{explained}"
    );
    // the threshold of 5 %: ⌊0.05·2⁶⁰⌋
    assert!(
        explained.contains(":sample_below = 57646075230342352"),
        "{explained}"
    );
    // the audit draws the canary's coin on every run, and passes (its
    // measured bounds below the amplified claims); it opens no ledger
    let o = dpplan(&["audit", &s.plan, "--runs", "2000"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let said = text(&o.stdout);
    assert!(said.contains("coin for the canary"), "{said}");
    assert_eq!(
        said.matches("a sampled release (sample units 5 %)").count(),
        3,
        "{said}"
    );
    let o = dpplan(&["ledger", "show", &s.ledger, "--json"]);
    let after: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        after.len(),
        entries.len(),
        "nothing charged by the explanation or the audit"
    );
}
