//! Times each phase of `dpplan check` on one plan file, to find the step
//! that grows faster than the plan (docs/benchmarks.md, "dpplan check at
//! scale"):
//!
//! ```text
//! cargo run --release -p dpplan-render --example phases -- PLAN.dpplan
//! ```
//!
//! Each line is one phase alone: the parser, the checker without
//! accounting, with the requested accountant only, with every accountant,
//! with each query's cost alone (everything, as `dpplan check` runs it),
//! then the JSON and terminal renderers of that analysis.

use std::time::{Duration, Instant};

use dpplan_check::{analyze_with, AnalysisOptions};

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    let took: Duration = t.elapsed();
    eprintln!("{what:<40} {:>10.1} ms", took.as_secs_f64() * 1e3);
    out
}

fn options(accounting: bool, all_accountants: bool, per_query_costs: bool) -> AnalysisOptions {
    AnalysisOptions {
        accounting,
        all_accountants,
        per_query_costs,
    }
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: phases PLAN.dpplan");
        std::process::exit(2)
    };
    let text = std::fs::read_to_string(&path).expect("a readable plan file");
    drop(timed("parse", || dpplan_syntax::parse(&text)));
    for (what, o) in [
        ("check, no accounting", options(false, false, false)),
        ("check, requested accountant", options(true, false, false)),
        ("check, every accountant", options(true, true, false)),
    ] {
        drop(timed(what, || analyze_with(&text, &o)));
    }
    let a = timed("check, everything (dpplan check)", || {
        analyze_with(&text, &AnalysisOptions::default())
    });
    let f = dpplan_render::FileResult {
        path: &path,
        text: &text,
        analysis: &a,
    };
    let json = timed("render JSON", || {
        dpplan_render::json(std::slice::from_ref(&f))
    });
    let human = timed("render terminal", || dpplan_render::human(&f, false));
    eprintln!("JSON {} bytes, terminal {} bytes", json.len(), human.len());
}
