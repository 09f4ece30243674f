//! Times the phases on one plan: `cargo run --release -p dpplan-check --example timing -- PLAN`.
fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: timing PLAN");
        return;
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("cannot read {path}");
        return;
    };
    let t = std::time::Instant::now();
    let p = dpplan_syntax::parse(&text);
    eprintln!(
        "parse: {:?} ({} diagnostics)",
        t.elapsed(),
        p.diagnostics.len()
    );
    for (label, opts) in [
        (
            "check, requested accountant only",
            dpplan_check::AnalysisOptions {
                all_accountants: false,
                per_query_costs: false,
                accounting: true,
            },
        ),
        (
            "check, everything",
            dpplan_check::AnalysisOptions::default(),
        ),
    ] {
        let t = std::time::Instant::now();
        let a = dpplan_check::analyze_with(&text, &opts);
        eprintln!(
            "{label}: {:?} ({} diagnostics)",
            t.elapsed(),
            a.diagnostics.len()
        );
    }
}
