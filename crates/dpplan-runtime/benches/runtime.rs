//! `cargo bench -p dpplan-runtime` (release): bounded aggregation over a
//! generated CSV (10⁷ rows by default, `DPPLAN_BENCH_ROWS` to change) against
//! a plain, non-private aggregation of the same file in the same binary, and
//! sampler throughput. Prints figures; asserts nothing about time.
//!
//! The engine runs on 1 thread and on every core (`DPPLAN_BENCH_THREADS`,
//! e.g. `1,2`, to choose). `DPPLAN_BENCH_GENERATE=PATH` only writes the CSV
//! (for `scripts/bench-vs-duckdb.sh`).

#[path = "support/mem.rs"]
mod mem;
use mem::peak_mb;

use std::fs::File;
use std::io::{BufReader, Write};
use std::num::NonZeroUsize;
use std::path::Path;
use std::time::Instant;

use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, Engine, StatKind, Statistic};
use dpplan_noise::Noise;
use dpplan_vocab::NoiseKind;

const PLAN: &str = r#"plan "bench" {
  privacy { unit user by user_id adjacency add_remove budget epsilon 10 delta 1e-6 }
  dataset visits {
    column user_id : id
    column page    : category { "home", "search", "checkout", "account" }
    column seconds : float in [0, 3600]
    contribution { rows_per_unit 5 groups_per_unit 3 }
  }
  query c { count(visits) noise laplace scale 10 schedule once }
  query s { sum(visits.seconds) noise laplace scale 10000 schedule once }
  query h { histogram(visits by page) noise gaussian sigma 20 schedule once }
}"#;

/// A number as the engine parses it: UTF-8, trimmed, `f64::from_str`,
/// `None` for an empty, unparsable or NaN field.
#[inline]
fn parse_number(field: Option<&[u8]>) -> Option<f64> {
    let s = std::str::from_utf8(field?).ok()?.trim();
    if s.is_empty() {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    (!v.is_nan()).then_some(v)
}

/// The baseline: a plain, non-private aggregation of the same file (no
/// bounding, no clamping, no noise) with what the engine reads it with —
/// the csv crate's byte records through a 1 MiB buffer, the engine's number
/// parsing, a linear search of the (small) domain. Returns the row count,
/// the sum of `sum_column` and the histogram of `by` over `domain`.
fn plain_aggregate(
    source: &Path,
    sum_column: &str,
    by: &str,
    domain: &[String],
) -> (u64, f64, Vec<u64>) {
    let file = File::open(source).unwrap();
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(BufReader::with_capacity(1 << 20, file));
    let headers = rdr.byte_headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name.as_bytes()).unwrap();
    let (si, bi) = (column(sum_column), column(by));
    let domain: Vec<&[u8]> = domain.iter().map(|d| d.as_bytes()).collect();
    let mut rec = csv::ByteRecord::new();
    let (mut n, mut sum, mut hist) = (0u64, 0f64, vec![0u64; domain.len()]);
    while rdr.read_byte_record(&mut rec).unwrap() {
        n += 1;
        if let Some(v) = parse_number(rec.get(si)) {
            sum += v;
        }
        if let Some(g) = rec
            .get(bi)
            .and_then(|f| domain.iter().position(|d| *d == f))
        {
            hist[g] += 1;
        }
    }
    (n, sum, hist)
}

/// Writes the benchmark's CSV: `rows` visits of `users` users (ids
/// `u00000000`…), 4 pages, seconds in [0, 4000) with one decimal;
/// deterministic (xorshift).
fn generate(path: &Path, rows: u64, users: u64) {
    let mut f = std::io::BufWriter::with_capacity(1 << 20, File::create(path).unwrap());
    writeln!(f, "user_id,page,seconds").unwrap();
    let pages = ["home", "search", "checkout", "account"];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..rows {
        // xorshift: a deterministic, cheap stream for the file's content
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = x % users;
        let p = pages[((x >> 20) % 4) as usize];
        let s = (x >> 32) % 4000;
        writeln!(f, "u{u:08},{p},{}.{}", s, (x >> 8) % 10).unwrap();
    }
    f.flush().unwrap();
}

/// CPU time of the process so far (user + system, Linux), in seconds.
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // the fields after the command name (which ends with `)`)
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
            Some(ticks / 100.0)
        })
        .unwrap_or(f64::NAN)
}

fn main() {
    let rows: u64 = std::env::var("DPPLAN_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let users: u64 = std::env::var("DPPLAN_BENCH_USERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or((rows / 10).max(1));
    if let Ok(out) = std::env::var("DPPLAN_BENCH_GENERATE") {
        // only write the CSV (scripts/bench-vs-duckdb.sh)
        generate(Path::new(&out), rows, users);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("visits.csv");
    let t = Instant::now();
    generate(&path, rows, users);
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "generated {rows} rows ({:.0} MB, {users} users) in {:.1} s",
        size as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    let plan = dpplan_compile::compile(PLAN).unwrap();
    let ds = &plan.body.datasets["visits"];
    let grid = |q: &str| plan.body.release(q).unwrap().parts[0].grid_exponent;
    let domain: Vec<String> = ["home", "search", "checkout", "account"]
        .iter()
        .map(|s| s.to_string())
        .collect();

    let t = Instant::now();
    let (n, _, _) = plain_aggregate(&path, "seconds", "page", &domain);
    let plain = t.elapsed().as_secs_f64();
    println!(
        "plain aggregation (count + sum + histogram): {:.2} s, {:.2} M rows/s, peak RSS {:.0} MB",
        plain,
        n as f64 / plain / 1e6,
        peak_mb()
    );

    let mut rng = SecureRng::from_os().unwrap();
    let cases: Vec<(&str, Vec<Statistic>)> = vec![
        (
            "bounded count",
            vec![Statistic {
                kind: StatKind::Count,
                grid: grid("c"),
            }],
        ),
        (
            "bounded sum",
            vec![Statistic {
                kind: StatKind::Sum {
                    column: "seconds".into(),
                },
                grid: grid("s"),
            }],
        ),
        (
            "bounded histogram",
            vec![Statistic {
                kind: StatKind::GroupedCount { by: "page".into() },
                grid: grid("h"),
            }],
        ),
        (
            "bounded count + sum + histogram (one pass)",
            vec![
                Statistic {
                    kind: StatKind::Count,
                    grid: grid("c"),
                },
                Statistic {
                    kind: StatKind::Sum {
                        column: "seconds".into(),
                    },
                    grid: grid("s"),
                },
                Statistic {
                    kind: StatKind::GroupedCount { by: "page".into() },
                    grid: grid("h"),
                },
            ],
        ),
    ];
    let cores = CsvEngine.thread_count();
    let threads: Vec<usize> = std::env::var("DPPLAN_BENCH_THREADS")
        .ok()
        .map(|v| v.split(',').filter_map(|t| t.trim().parse().ok()).collect())
        .unwrap_or_else(|| if cores > 1 { vec![1, cores] } else { vec![1] });
    let engines: Vec<(usize, CsvEngine)> = threads
        .iter()
        .filter_map(|&t| Some((t, CsvEngine.threads(NonZeroUsize::new(t)?))))
        .collect();
    for (name, stats) in &cases {
        for (t_count, engine) in &engines {
            let (t, cpu) = (Instant::now(), cpu_s());
            let v = engine.aggregate(ds, &path, stats, &mut rng).unwrap();
            let s = t.elapsed().as_secs_f64();
            let cpu = cpu_s() - cpu;
            std::hint::black_box(v);
            println!(
                "{name}, {t_count} thread(s): {:.2} s (CPU {cpu:.2} s), {:.2} M rows/s, {:.2}× the plain aggregation (1 thread), peak RSS so far {:.0} MB",
                s,
                rows as f64 / s / 1e6,
                s / plain,
                peak_mb()
            );
        }
    }

    // The same file under a row-level unit: no per-unit state.
    let row_plan = dpplan_compile::compile(
        &PLAN
            .replace("unit user by user_id", "unit row")
            .replace("contribution { rows_per_unit 5 groups_per_unit 3 }", ""),
    )
    .unwrap();
    let rows_ds = &row_plan.body.datasets["visits"];
    let row_stats = [
        Statistic {
            kind: StatKind::Count,
            grid: 0,
        },
        Statistic {
            kind: StatKind::Sum {
                column: "seconds".into(),
            },
            grid: grid("s"),
        },
        Statistic {
            kind: StatKind::GroupedCount { by: "page".into() },
            grid: 0,
        },
    ];
    for (t_count, engine) in &engines {
        let t = Instant::now();
        let v = engine
            .aggregate(rows_ds, &path, &row_stats, &mut rng)
            .unwrap();
        let s = t.elapsed().as_secs_f64();
        std::hint::black_box(v);
        println!(
            "row-level unit, count + sum + histogram (one pass, no per-unit state), {t_count} thread(s): {:.2} s, {:.2} M rows/s, {:.2}× the plain aggregation",
            s,
            rows as f64 / s / 1e6,
            s / plain
        );
    }

    // Continuous mechanisms: an exact draw around a statistic on its grid,
    // rounded to the nearest float; discrete ones on the integers.
    for (kind, scale, x, k) in [
        ("discrete_laplace", 250.0, 12_345i128, 0),
        ("discrete_gaussian", 60.0, 12_345, 0),
        ("laplace", 250.0, 12_345 << 33, -33),
        ("gaussian", 20.0, 12_345 << 35, -35),
        ("gaussian", 1e-3, 1 << 50, -50),
    ] {
        let noise = Noise::new(
            Some(NoiseKind::from_name(kind).expect("a noise kind")),
            Some(scale),
            k,
        )
        .unwrap();
        let n = 200_000;
        let t = Instant::now();
        for _ in 0..n {
            std::hint::black_box(noise.release(x, k, &mut rng));
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "sampler {kind} scale {scale}: {:.0} draws/s ({:.2} µs/draw)",
            n as f64 / s,
            s / n as f64 * 1e6
        );
    }
}
