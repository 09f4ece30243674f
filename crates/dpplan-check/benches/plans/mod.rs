//! Generated plans for the front end's benchmarks, shared by the
//! criterion bench (`benches/check.rs`) and the generator example
//! (`cargo run --release -p dpplan-check --example gen-plan`), which
//! `scripts/bench-check-scale.sh` times with `/usr/bin/time -v`.

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

/// `n` queries of one release each (`schedule once`), all the same
/// statistic (`count(visits)`), alternating Laplace and Gaussian noise with
/// noise large enough that the plan fits its budget: the plan of issue 13's
/// "linear at scale" measurement, where every query after the first is a
/// fresh re-release of the first one's statistic (DP009).
pub fn one_release_queries(n: usize) -> String {
    let n64 = n as u64;
    count_queries("one-release queries", n, |i| {
        (n64 * (10 + i % 7), n64 * (10 + i % 5))
    })
}

/// `n` queries of one release each, as [`one_release_queries`], but every
/// query with its own noise parameter (no two releases alike): issue 34's
/// "heterogeneous plans at scale", where nothing can be grouped by its
/// parameters.
pub fn heterogeneous_queries(n: usize) -> String {
    let n64 = n as u64;
    count_queries("heterogeneous queries", n, |i| (n64 * 10 + i, n64 * 10 + i))
}

/// `n` one-release `count(visits)` queries, query i with Laplace noise of
/// scale `noise(i).0` when i is even, Gaussian of σ `noise(i).1` when odd.
fn count_queries(title: &str, n: usize, noise: impl Fn(u64) -> (u64, u64)) -> String {
    let mut s = format!(
        "plan \"{title}\" {{\n  privacy {{\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 10 delta 1e-6\n    accountant best\n  }}\n\n  dataset visits {{\n    source \"data/visits.csv\"\n    column uid : id\n    column page : category {{ \"a\", \"b\", \"c\", \"d\" }}\n    contribution {{\n      rows_per_unit 5\n    }}\n  }}\n",
    );
    for i in 0..n {
        let (scale, sigma) = noise(i as u64);
        let noise = if i % 2 == 0 {
            format!("laplace scale {scale}")
        } else {
            format!("gaussian sigma {sigma}")
        };
        s.push_str(&format!(
            "\n  query q{i} {{\n    count(visits)\n    noise {noise}\n    schedule once\n  }}\n"
        ));
    }
    s.push_str("}\n");
    s
}
