//! Writes a generated plan to standard output, for timing the whole
//! `dpplan check` (scripts/bench-check-scale.sh):
//!
//! ```text
//! cargo run --release -p dpplan-check --example gen-plan -- queries 100000
//! cargo run --release -p dpplan-check --example gen-plan -- heterogeneous 100000
//! cargo run --release -p dpplan-check --example gen-plan -- bytes 1048576
//! ```

#[allow(dead_code)]
#[path = "../benches/plans/mod.rs"]
mod plans;

use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |i: usize| -> usize {
        args.get(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| usage())
    };
    let plan = match args.first().map(String::as_str) {
        Some("queries") => plans::one_release_queries(n(1)),
        Some("heterogeneous") => plans::heterogeneous_queries(n(1)),
        Some("bytes") => plans::generated_plan(n(1)),
        _ => usage(),
    };
    std::io::stdout()
        .write_all(plan.as_bytes())
        .expect("cannot write the plan to standard output");
}

fn usage() -> ! {
    eprintln!("usage: gen-plan (queries N | heterogeneous N | bytes N)");
    std::process::exit(2)
}
