//! `cargo bench -p dpplan-runtime --bench language_v2` (release): the cost
//! of Language v2 in the CSV engine over a generated trips CSV (10⁷ rows by
//! default, `DPPLAN_BENCH_ROWS` to change; `DPPLAN_BENCH_THREADS`, e.g.
//! `1,2`): user-level bounded aggregation **with a filter and a two-key
//! histogram** against the same plan **without filter and keys** (a count
//! and a one-key histogram), in one run, alternating, best of
//! `DPPLAN_BENCH_REPEAT` (default 3). The filter passes every row in the
//! "all rows pass" case (its cost with no rows dropped: the worst case) and
//! about a third of them in the selective case.
//!
//! `DPPLAN_BENCH_DISTINCT=1` instead measures a row-level
//! `count(distinct …)` over `DPPLAN_BENCH_ROWS` rows with as many distinct
//! ids, and the process's peak resident memory (run it in its own process:
//! scripts/bench-language-v2.sh does).
//!
//! Prints figures; asserts nothing about time.

#[path = "support/mem.rs"]
mod mem;
use mem::peak_mb;

use std::fs::File;
use std::io::Write;
use std::num::NonZeroUsize;
use std::path::Path;
use std::time::Instant;

use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, Engine};
use dpplan_runtime::{planned_aggregates, RunOptions};

const PLAN: &str = r#"plan "bench" {
  privacy { unit user by rider_id adjacency add_remove budget epsilon 100 delta 1e-6 }
  dataset trips {
    column rider_id : id
    column city     : category { "Madrid", "Barcelona", "Valencia" }
    column district : category { "centro", "norte", "sur", "este", "oeste" }
    column hour     : category { "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17", "18", "19", "20", "21", "22", "23" }
    column fare     : float in [0, 80]
    contribution { rows_per_unit 5 groups_per_unit 3 }
  }
  QUERIES
}"#;

const PLAIN: &str = "query c { count(trips) noise laplace scale 10 schedule once }
  query h { histogram(trips by district) noise gaussian sigma 20 schedule once }";

/// `FILTER` is replaced by the filter.
const V2: &str = "query c { count(trips where FILTER) noise laplace scale 10 schedule once }
  query h { histogram(trips where FILTER by district, hour) noise gaussian sigma 20 schedule once }";

/// Writes `rows` trips of `riders` riders; deterministic (xorshift).
fn generate(path: &Path, rows: u64, riders: u64) {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, File::create(path).unwrap());
    writeln!(f, "rider_id,city,district,hour,fare,started_at").unwrap();
    let cities = ["Madrid", "Barcelona", "Valencia"];
    let districts = ["centro", "norte", "sur", "este", "oeste"];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..rows {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = if riders >= rows { i } else { x % riders };
        let c = cities[((x >> 20) % 3) as usize];
        let d = districts[((x >> 24) % 5) as usize];
        let h = (x >> 28) % 24;
        let fare = (x >> 32) % 700;
        writeln!(
            f,
            "r{u:08},{c},{d},{h},{}.{},2026-03-02T{h:02}:05:00Z",
            fare / 10 + 1,
            fare % 10
        )
        .unwrap();
    }
    f.flush().unwrap();
}

fn env(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// One engine pass per (dataset, filter) of the plan's releases; seconds.
fn time(src: &str, path: &Path, engine: &CsvEngine, rng: &mut SecureRng) -> f64 {
    let plan = dpplan_compile::compile(src).unwrap_or_else(|e| panic!("{e}"));
    let mut opts = RunOptions::default();
    opts.data.insert("trips".into(), path.to_path_buf());
    let t = Instant::now();
    for (ds, path, stats) in planned_aggregates(&plan, &opts).unwrap() {
        std::hint::black_box(engine.aggregate(ds, &path, &stats, rng).unwrap());
    }
    t.elapsed().as_secs_f64()
}

fn distinct(rows: u64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trips.csv");
    generate(&path, rows, rows);
    let before = peak_mb();
    let src = PLAN
        .replace("unit user by rider_id", "unit row")
        .replace("contribution { rows_per_unit 5 groups_per_unit 3 }", "")
        .replace(
            "QUERIES",
            "query d { count(distinct trips.rider_id) noise laplace scale 10 schedule once }",
        );
    let engine = CsvEngine.threads(NonZeroUsize::new(1).unwrap());
    let mut rng = SecureRng::from_os().unwrap();
    let s = time(&src, &path, &engine, &mut rng);
    println!(
        "row-level count(distinct) of {rows} distinct ids, 1 thread: {s:.2} s, peak RSS {:.0} MB (before the pass {before:.0} MB): {:.1} bytes per id",
        peak_mb(),
        (peak_mb() - before) * 1048576.0 / rows as f64
    );
}

fn main() {
    let rows = env("DPPLAN_BENCH_ROWS").unwrap_or(10_000_000);
    if env("DPPLAN_BENCH_DISTINCT") == Some(1) {
        distinct(rows);
        return;
    }
    let repeat = env("DPPLAN_BENCH_REPEAT").unwrap_or(3).max(1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trips.csv");
    generate(&path, rows, (rows / 10).max(1));
    println!(
        "generated {rows} rows ({:.0} MB, {} riders)",
        std::fs::metadata(&path).unwrap().len() as f64 / 1e6,
        (rows / 10).max(1)
    );
    let plain = PLAN.replace("QUERIES", PLAIN);
    if let Ok(only) = std::env::var("DPPLAN_BENCH_ONLY") {
        // one plan alone, for a profiler: `plain` or `v2` (all rows pass)
        let filter = "fare > 0 and city in { \"Madrid\", \"Barcelona\", \"Valencia\" }";
        let v2 = PLAN.replace("QUERIES", &V2.replace("FILTER", filter));
        let src = match only.as_str() {
            "v2" => v2,
            "keys" => PLAN.replace("QUERIES", &V2.replace(" where FILTER", "")),
            "filter" => PLAN.replace(
                "QUERIES",
                &V2.replace("FILTER", filter)
                    .replace("by district, hour", "by district"),
            ),
            _ => plain,
        };
        let engine = CsvEngine.threads(NonZeroUsize::new(1).unwrap());
        let mut rng = SecureRng::from_os().unwrap();
        println!("{only}: {:.2} s", time(&src, &path, &engine, &mut rng));
        return;
    }
    let cases = [
        (
            "all rows pass",
            "fare > 0 and city in { \"Madrid\", \"Barcelona\", \"Valencia\" }",
        ),
        ("selective", "city == \"Madrid\" and fare > 10"),
    ];
    // the two costs apart: the filter alone, the second key alone
    let parts = [
        (
            "filter (all rows pass) alone",
            V2.replace("by district, hour", "by district")
                .replace("FILTER", cases[0].1),
        ),
        (
            "two-key histogram alone",
            V2.replace(" where FILTER", "")
                .replace("trips where FILTER", "trips"),
        ),
    ];
    let cores = CsvEngine.thread_count();
    let threads: Vec<usize> = std::env::var("DPPLAN_BENCH_THREADS")
        .ok()
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .unwrap_or_else(|| if cores > 1 { vec![1, cores] } else { vec![1] });
    let mut rng = SecureRng::from_os().unwrap();
    for t in threads {
        let engine = CsvEngine.threads(NonZeroUsize::new(t).unwrap());
        for (name, filter) in cases {
            let v2 = PLAN.replace("QUERIES", &V2.replace("FILTER", filter));
            let (mut best_plain, mut best_v2) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..repeat {
                best_plain = best_plain.min(time(&plain, &path, &engine, &mut rng));
                best_v2 = best_v2.min(time(&v2, &path, &engine, &mut rng));
            }
            println!(
                "user level, {t} thread(s), filter ({name}) + two-key histogram: {best_v2:.2} s vs count + one-key histogram without filter {best_plain:.2} s: {:.2}× ({:.2} vs {:.2} M rows/s)",
                best_v2 / best_plain,
                rows as f64 / best_v2 / 1e6,
                rows as f64 / best_plain / 1e6
            );
        }
        for (name, queries) in &parts {
            let src = PLAN.replace("QUERIES", queries);
            let (mut best_plain, mut best) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..repeat {
                best_plain = best_plain.min(time(&plain, &path, &engine, &mut rng));
                best = best.min(time(&src, &path, &engine, &mut rng));
            }
            println!(
                "user level, {t} thread(s), {name}: {:.2}× the plan without filter and keys",
                best / best_plain
            );
        }
    }
}
