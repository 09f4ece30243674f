//! Times the per-keystroke analysis of a plan: `cargo run --release --example time_analysis -- FILE`.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("a plan file");
    let text = std::fs::read_to_string(path).unwrap();
    for (name, opts) in [
        ("fast (per-query costs)", dpplan_ide::fast_options()),
        (
            "no per-query costs",
            dpplan_ide::dpplan_check::AnalysisOptions {
                all_accountants: false,
                per_query_costs: false,
                accounting: true,
            },
        ),
        (
            "all accountants",
            dpplan_ide::dpplan_check::AnalysisOptions::default(),
        ),
    ] {
        let t = Instant::now();
        let n = 5;
        for _ in 0..n {
            std::hint::black_box(dpplan_ide::dpplan_check::analyze_with(&text, &opts));
        }
        println!("{name}: {:?}", t.elapsed() / n);
    }
    let t = Instant::now();
    for _ in 0..5 {
        std::hint::black_box(dpplan_ide::Document::syntax_diagnostics(&text));
    }
    println!("parse only: {:?}", t.elapsed() / 5);
    let t = Instant::now();
    let doc = dpplan_ide::Document::new(text.clone());
    println!(
        "Document::new: {:?} (costs computed: {}, {} diagnostics)",
        t.elapsed(),
        doc.has_costs(),
        doc.diagnostics().len()
    );
}
