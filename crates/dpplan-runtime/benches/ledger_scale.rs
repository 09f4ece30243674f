//! `cargo bench -p dpplan-runtime --bench ledger_scale` (release): what an
//! append and a whole run cost as one ledger grows to 10⁴, 10⁵ and 10⁶
//! entries (docs/benchmarks.md, "A shared ledger at 10⁴–10⁶ entries").
//!
//! Builds the history of a count released every minute (an intent and a
//! value per release) with one ledger handle, as a long catch-up would,
//! and at each mark in `DPPLAN_BENCH_MARKS` (entries, default
//! `10000,100000,1000000`) times:
//!
//! * **append, warm**: `DPPLAN_BENCH_WARM` (default 200) releases with the
//!   handle that built the history (the process's history kept);
//! * **append, cold**: the first release of a fresh handle (a new process:
//!   nothing kept), without the run's verification;
//! * **full check**: [`Ledger::integrity`], the whole chain and state
//!   (`dpplan ledger verify`'s work);
//! * **run**: whole `run`s of the next slot: the first (which may verify
//!   the whole ledger), then `DPPLAN_BENCH_RUNS` (default 10), averaged (open, the pre-run
//!   check, the schedule, the data, the charge, the draw, the commit).
//!
//! Each figure is wall-clock time and, in brackets, the process's CPU time
//! (all threads, from `/proc/self/stat`, 10 ms ticks: meaningful over the
//! warm appends and the ten runs, which are averaged), because a shared
//! machine's load inflates wall-clock time. The ledger lives in
//! `DPPLAN_BENCH_DIR` (default /dev/shm when it exists: the figures are
//! the runtime's work, not the disk's fsyncs). Prints figures; asserts
//! nothing about time.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use dpplan_engine::CsvEngine;
use dpplan_runtime::ledger::{Budget, Genesis, Ledger};
use dpplan_runtime::{run, RunOptions};

/// The plan; `NOISE` is `laplace scale 100` by default, or
/// `DPPLAN_BENCH_NOISE` (e.g. `gaussian sigma 100`: the PLD accountant
/// composes Gaussian releases in closed form, so an append is the ledger's
/// own work rather than the accountants').
const PLAN: &str = r#"plan "bench" {
  privacy { unit user by user_id adjacency add_remove budget epsilon 1000000 delta 1e-6 }
  dataset visits {
    column user_id : id
    column seconds : float in [0, 3600]
    contribution { rows_per_unit 5 }
  }
  query per_minute { count(visits) noise NOISE schedule every 1 minute for 1000 days }
}"#;

/// The process's CPU time so far (user + system, all threads), in ms;
/// 0 where `/proc/self/stat` cannot be read.
fn cpu_ms() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // the fields after the command name (which is in parentheses)
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the whole line (11 and 12
    // after the command); the tick is 10 ms on Linux
    (ticks(11) + ticks(12)) * 10.0
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let marks: Vec<i64> = std::env::var("DPPLAN_BENCH_MARKS")
        .unwrap_or_else(|_| "10000,100000,1000000".into())
        .split(',')
        .filter_map(|m| m.trim().parse().ok())
        .collect();
    let warm = env_u64("DPPLAN_BENCH_WARM", 200);
    let base = std::env::var_os("DPPLAN_BENCH_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            let shm = PathBuf::from("/dev/shm");
            shm.is_dir().then_some(shm)
        })
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&base).unwrap();
    let noise = std::env::var("DPPLAN_BENCH_NOISE").unwrap_or_else(|_| "laplace scale 100".into());
    let plan = dpplan_compile::compile(&PLAN.replace("NOISE", &noise)).unwrap();
    println!("noise {noise}");
    let release = plan.body.release("per_minute").unwrap().clone();
    let path = dir.path().join("l.sqlite");
    let genesis = Genesis {
        plan_hash: &plan.body_sha256,
        budget: Budget {
            epsilon: plan.body.privacy.budget_epsilon,
            delta: plan.body.privacy.budget_delta,
        },
        schedule_start: 0,
        contract: plan.body.contract(),
    };
    let csv = dir.path().join("visits.csv");
    let mut body = String::from("user_id,seconds\n");
    for u in 0..1000 {
        body.push_str(&format!("u{u},{}\n", u % 3600));
    }
    std::fs::write(&csv, body).unwrap();

    let mut l = Ledger::open(&path, Some(genesis)).unwrap();
    let mut slot = 0u64;
    let started = Instant::now();
    let append = |l: &mut Ledger, slot: &mut u64| {
        let i = l.begin_release(&plan, &release, *slot).unwrap();
        l.commit_value(&i, "{}".into()).unwrap();
        *slot += 1;
    };
    for &mark in &marks {
        let mut chunk = Instant::now();
        let mut chunk_cpu = cpu_ms();
        let mut chunk_n = 0u64;
        while l.tail().unwrap().seq < mark - 2 * warm as i64 {
            append(&mut l, &mut slot);
            chunk_n += 1;
            if chunk_n == 5_000 {
                println!(
                    "  building: {} entries, {:.3} ms [cpu {:.3}] per release over the last {chunk_n}, {:.0} s so far",
                    l.tail().unwrap().seq,
                    chunk.elapsed().as_secs_f64() * 1e3 / chunk_n as f64,
                    (cpu_ms() - chunk_cpu) / chunk_n as f64,
                    started.elapsed().as_secs_f64()
                );
                chunk = Instant::now();
                chunk_cpu = cpu_ms();
                chunk_n = 0;
            }
        }
        let (t, c) = (Instant::now(), cpu_ms());
        for _ in 0..warm {
            append(&mut l, &mut slot);
        }
        let warm_ms = t.elapsed().as_secs_f64() * 1e3 / warm as f64;
        let warm_cpu = (cpu_ms() - c) / warm as f64;
        let entries = l.tail().unwrap().seq;
        drop(l);
        let t = Instant::now();
        let mut fresh = Ledger::open(&path, None).unwrap();
        append(&mut fresh, &mut slot);
        let cold_ms = t.elapsed().as_secs_f64() * 1e3;
        let (t, c) = (Instant::now(), cpu_ms());
        fresh.integrity(None).unwrap();
        let full_ms = t.elapsed().as_secs_f64() * 1e3;
        let full_cpu = cpu_ms() - c;
        drop(fresh);
        let mut runs = Vec::new();
        let (mut runs_ms, mut runs_cpu) = (0.0, 0.0);
        let extra_runs = env_u64("DPPLAN_BENCH_RUNS", 10);
        eprintln!("runs at {entries} entries");
        for i in 0..=extra_runs {
            let opts = RunOptions {
                data: BTreeMap::from([("visits".to_string(), csv.clone())]),
                slot: Some(slot),
                ledger: path.clone(),
                ..RunOptions::default()
            };
            let (t, c) = (Instant::now(), cpu_ms());
            let out = run(&plan, &opts, &CsvEngine).unwrap();
            let ms = t.elapsed().as_secs_f64() * 1e3;
            runs.push(ms);
            // the first run after the build may verify the whole ledger
            // (no checkpoint yet): the ten after it are averaged
            if i > 0 {
                runs_ms += ms / extra_runs as f64;
                runs_cpu += (cpu_ms() - c) / extra_runs as f64;
            }
            assert_eq!(out.results.len(), 1);
            slot += 1;
        }
        println!(
            "at {entries} entries: append warm {warm_ms:.2} ms [cpu {warm_cpu:.2}] per release (intent + value), append cold {cold_ms:.1} ms, full check {full_ms:.0} ms [cpu {full_cpu:.0}], first run {:.1} ms, next {extra_runs} runs {runs_ms:.1} ms [cpu {runs_cpu:.1}] each, min {:.1} ms (built in {:.0} s)",
            runs[0],
            runs[1..].iter().copied().fold(f64::INFINITY, f64::min),
            started.elapsed().as_secs_f64()
        );
        l = Ledger::open(&path, None).unwrap();
    }
}
