//! Benchmarks of the whole front end (parse + check + account):
//! - a generated ~1 MB plan with thousands of queries (goal: well under 1 s),
//! - a plan with a release every minute for 30 days (43,200 releases).
//!
//! Run: `cargo bench -p dpplan-check --bench check`.

use criterion::{criterion_group, criterion_main, Criterion};
use dpplan_check::{analyze, analyze_with, AnalysisOptions};

/// A plan of about `bytes` bytes: a user-level dataset and many queries
/// mixing Laplace and Gaussian noise and schedules, with noise large enough
/// that the whole plan fits a realistic budget (ε = 10).
pub fn generated_plan(bytes: usize) -> String {
    let mut s = String::from(
        "plan \"generated\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 10 delta 1e-6\n    accountant best\n  }\n\n  dataset visits {\n    source \"data/visits.csv\"\n    column uid : id\n    column page : category { \"a\", \"b\", \"c\", \"d\" }\n    column secs : float in [0, 3600]\n    column n : int in [0, 100]\n    contribution {\n      rows_per_unit 5\n      groups_per_unit 2\n    }\n  }\n",
    );
    let mut i = 0;
    while s.len() < bytes {
        let (agg, noise) = match i % 4 {
            0 => (
                "count(visits)".to_string(),
                format!("laplace scale {}", (10 + i % 97) * 100_000),
            ),
            1 => (
                "sum(visits.secs)".to_string(),
                format!("gaussian sigma {}", (20000 + i % 89) * 1000),
            ),
            2 => (
                "histogram(visits by page)".to_string(),
                format!("gaussian sigma {}", (30 + i % 53) * 1000),
            ),
            _ => (
                "sum(visits.n by page)".to_string(),
                format!("discrete_laplace scale {}", (500 + i % 71) * 1000),
            ),
        };
        let sched = match i % 3 {
            0 => "once".to_string(),
            1 => format!("every 1 day for {} days", 1 + i % 365),
            _ => format!("every 1 hour from 2026-01-01 until 2026-0{}-01", 2 + i % 7),
        };
        s.push_str(&format!(
            "\n  // query number {i}\n  query q{i} {{\n    {agg}\n    noise {noise}\n    schedule {sched}\n  }}\n"
        ));
        i += 1;
    }
    s.push_str("}\n");
    s
}

const EVERY_MINUTE: &str = "plan \"live\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 10 delta 1e-7\n  }\n  dataset orders {\n    column uid : id\n    contribution {\n      rows_per_unit 10\n    }\n  }\n  query live {\n    count(orders)\n    noise gaussian sigma 1500\n    schedule every 1 minute for 30 days\n  }\n}\n";

fn bench(c: &mut Criterion) {
    let big = generated_plan(1 << 20);
    let n_queries = big.matches("query q").count();
    eprintln!("generated plan: {} bytes, {} queries", big.len(), n_queries);
    let a = analyze(&big);
    assert!(!a.has_errors(), "{:?}", a.diagnostics.first());
    let mut g = c.benchmark_group("check");
    g.sample_size(10);
    g.bench_function("1MB plan, best accountant only", |b| {
        let opts = AnalysisOptions {
            all_accountants: false,
            per_query_costs: false,
            accounting: true,
        };
        b.iter(|| analyze_with(&big, &opts))
    });
    g.bench_function(
        "1MB plan, everything (all accountants, per-query costs)",
        |b| b.iter(|| analyze(&big)),
    );
    g.bench_function(
        "every minute for 30 days (43,200 releases), everything",
        |b| b.iter(|| analyze(EVERY_MINUTE)),
    );
    g.bench_function("parse only, 1MB plan", |b| {
        b.iter(|| dpplan_syntax::parse(&big))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
