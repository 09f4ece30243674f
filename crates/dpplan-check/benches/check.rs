//! Benchmarks of the whole front end (parse + check + account):
//! - a generated ~1 MB plan with thousands of queries (goal: well under 1 s),
//! - a plan with a release every minute for 30 days (43,200 releases),
//! - 10,000 one-release queries of the same statistic (issue 13).
//!
//! The whole command at 10³–10⁵ queries, with its peak memory:
//! `scripts/bench-check-scale.sh`.
//!
//! Run: `cargo bench -p dpplan-check --bench check`.

use criterion::{criterion_group, criterion_main, Criterion};
use dpplan_check::{analyze, analyze_with, AnalysisOptions};

mod plans;
use plans::{generated_plan, heterogeneous_queries, one_release_queries};

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
    let many = one_release_queries(10_000);
    g.bench_function("10,000 one-release queries, everything", |b| {
        b.iter(|| analyze(&many))
    });
    let unlike = heterogeneous_queries(10_000);
    g.bench_function(
        "10,000 one-release queries, every noise different, everything",
        |b| b.iter(|| analyze(&unlike)),
    );
    g.bench_function("parse only, 1MB plan", |b| {
        b.iter(|| dpplan_syntax::parse(&big))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
