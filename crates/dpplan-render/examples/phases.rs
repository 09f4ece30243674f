use std::time::Instant;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let t = Instant::now();
    let p = dpplan_syntax::parse(&text);
    eprintln!("parse {:?}", t.elapsed());
    drop(p);
    if std::env::args().nth(2).as_deref() == Some("parse") {
        for _ in 0..3 {
            let t = Instant::now();
            let p = dpplan_syntax::parse(&text);
            eprintln!("parse {:?} {}", t.elapsed(), p.plan.queries.len());
        }
        return;
    }
    let t = Instant::now();
    let a = dpplan_check::analyze_with(
        &text,
        &dpplan_check::AnalysisOptions {
            accounting: false,
            all_accountants: false,
            per_query_costs: false,
        },
    );
    eprintln!(
        "analyze no accounting {:?} diags {}",
        t.elapsed(),
        a.diagnostics.len()
    );
    drop(a);
    let t = Instant::now();
    let a = dpplan_check::analyze_with(
        &text,
        &dpplan_check::AnalysisOptions {
            accounting: true,
            all_accountants: false,
            per_query_costs: false,
        },
    );
    eprintln!("analyze best only {:?}", t.elapsed());
    drop(a);
    let t = Instant::now();
    let a = dpplan_check::analyze_with(
        &text,
        &dpplan_check::AnalysisOptions {
            accounting: true,
            all_accountants: true,
            per_query_costs: false,
        },
    );
    eprintln!("analyze all accts {:?}", t.elapsed());
    drop(a);
    let t = Instant::now();
    let a = dpplan_check::analyze(&text);
    eprintln!("analyze full {:?}", t.elapsed());
    let f = dpplan_render::FileResult {
        path: &path,
        text: &text,
        analysis: &a,
    };
    let t = Instant::now();
    let v = dpplan_render::json_value(std::slice::from_ref(&f));
    eprintln!("json value {:?}", t.elapsed());
    let t = Instant::now();
    let s = serde_json::to_string_pretty(&v).unwrap();
    eprintln!("json string {:?} {}", t.elapsed(), s.len());
    let t = Instant::now();
    let s = dpplan_render::human(&f, false);
    eprintln!("human {:?} {}", t.elapsed(), s.len());
}
