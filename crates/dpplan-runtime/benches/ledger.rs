//! `cargo bench -p dpplan-runtime --bench ledger` (release): what verifying
//! the ledger before every run costs as the ledger grows. Builds a ledger of
//! `DPPLAN_BENCH_RELEASES` releases (default 50,000: 100,001 entries, ten
//! times a minute-by-minute month) of a count released every minute, then
//! times the chain verification, the full pre-run integrity check, and one
//! whole `run` of a fresh slot against it. The ledger lives in
//! `DPPLAN_BENCH_DIR` (default /dev/shm when it exists, so that building it
//! does not take 200,000 fsyncs; the per-append cost on a real disk, the
//! system's temporary directory or `DPPLAN_BENCH_DISK_DIR`, is timed
//! separately). Prints figures; asserts nothing
//! about time.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use dpplan_engine::CsvEngine;
use dpplan_runtime::ledger::{Budget, Genesis, Ledger};
use dpplan_runtime::{run, RunOptions};

const PLAN: &str = r#"plan "bench" {
  privacy { unit user by user_id adjacency add_remove budget epsilon 1000000 delta 1e-6 }
  dataset visits {
    column user_id : id
    column seconds : float in [0, 3600]
    contribution { rows_per_unit 5 }
  }
  query per_minute { count(visits) noise laplace scale 100 schedule every 1 minute for 365 days }
}"#;

fn main() {
    let n: u64 = std::env::var("DPPLAN_BENCH_RELEASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let base = std::env::var_os("DPPLAN_BENCH_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            let shm = PathBuf::from("/dev/shm");
            shm.is_dir().then_some(shm)
        })
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&base).unwrap();
    let plan = dpplan_compile::compile(PLAN).unwrap();
    let release = plan.body.release("per_minute").unwrap().clone();
    let genesis = || Genesis {
        plan_hash: &plan.body_sha256,
        budget: Budget {
            epsilon: plan.body.privacy.budget_epsilon,
            delta: plan.body.privacy.budget_delta,
        },
        schedule_start: 0,
        contract: plan.body.contract(),
    };

    // appends on a real disk (fsynced): the system's temporary directory,
    // or DPPLAN_BENCH_DISK_DIR
    let disk = match std::env::var_os("DPPLAN_BENCH_DISK_DIR") {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
    .unwrap();
    let mut l = Ledger::open(&disk.path().join("l.sqlite"), Some(genesis())).unwrap();
    let t = Instant::now();
    let k = 50;
    for slot in 0..k {
        let i = l.begin_release(&plan, &release, slot).unwrap();
        l.commit_value(&i, "{}".into()).unwrap();
    }
    println!(
        "append on disk: {:.2} ms per release (intent + value, each fsynced and anchored)",
        t.elapsed().as_secs_f64() * 1e3 / k as f64
    );

    let path = dir.path().join("l.sqlite");
    let mut l = Ledger::open(&path, Some(genesis())).unwrap();
    let t = Instant::now();
    for slot in 0..n {
        let i = l.begin_release(&plan, &release, slot).unwrap();
        l.commit_value(&i, "{}".into()).unwrap();
        if (slot + 1) % 10_000 == 0 {
            println!(
                "  {} releases appended, {:.2} ms per release so far",
                slot + 1,
                t.elapsed().as_secs_f64() * 1e3 / (slot + 1) as f64
            );
        }
    }
    let entries = l.tail().unwrap().seq;
    println!(
        "built {entries} entries in {:.1} s ({})",
        t.elapsed().as_secs_f64(),
        base.display()
    );
    for _ in 0..3 {
        let t = Instant::now();
        let v = l.verify().unwrap();
        let verify = t.elapsed();
        assert!(v.first_bad.is_none());
        let t = Instant::now();
        l.integrity(None).unwrap();
        let integrity = t.elapsed();
        println!(
            "verify the chain: {:.0} ms; full integrity check (chain, triggers, anchor): {:.0} ms; {:.2} µs per entry",
            verify.as_secs_f64() * 1e3,
            integrity.as_secs_f64() * 1e3,
            integrity.as_secs_f64() * 1e6 / entries as f64
        );
    }
    drop(l);

    // one whole run of the next slot: open, verify, anchor, aggregate,
    // charge, draw, commit
    let csv = dir.path().join("visits.csv");
    let mut body = String::from("user_id,seconds\n");
    for u in 0..1000 {
        body.push_str(&format!("u{u},{}\n", u % 3600));
    }
    std::fs::write(&csv, body).unwrap();
    for s in 0..3 {
        let opts = RunOptions {
            data: BTreeMap::from([("visits".to_string(), csv.clone())]),
            slot: Some(n + s),
            ledger: path.clone(),
            ..RunOptions::default()
        };
        let t = Instant::now();
        let out = run(&plan, &opts, &CsvEngine).unwrap();
        assert_eq!(out.results.len(), 1);
        println!(
            "one run against {} entries: {:.0} ms",
            out.ledger_entries,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
}
