//! How a plan's items are parsed: on several threads, and consecutive
//! queries in one call of the parser — each way the plan one pass over
//! the items, each parsed alone, gives.

use super::*;
use crate::ast::*;

/// A plan large enough to be parsed on several threads gives the same AST,
/// broken items and diagnostics as one pass over its items, in source order.
#[test]
fn a_large_plan_parsed_in_parallel_is_the_plan_parsed_in_one_pass() {
    let mut text = String::from("plan \"big\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 1\n  }\n  dataset d {\n    column x : int in [0, 1]\n  }\n");
    for i in 0..(2 * PARALLEL_ITEMS + 7) {
        if i % 1000 == 999 {
            // a broken query every 1,000
            text.push_str(&format!("  query q{i} {{\n    count(d\n  }}\n"));
        } else {
            text.push_str(&format!(
                "  query q{i} {{\n    count(d)\n    noise laplace scale {}\n    schedule once\n  }}\n",
                i + 1
            ));
        }
    }
    text.push_str("  publish p = q0\n}\n");
    let split = split::split(&text);
    assert!(split.items.len() >= PARALLEL_ITEMS);
    let (one_pass, one_pass_broken) = parse_run(&text, &split.items);
    let (parallel, parallel_broken) = parse_items(&text, &split.items);
    assert_eq!(parallel, one_pass);
    assert_eq!(parallel_broken, one_pass_broken);
    assert_eq!(parallel.queries.len(), 2 * PARALLEL_ITEMS + 7 - 8);
    assert_eq!(parallel.queries[0].name.value, "q0");
    assert_eq!(
        parallel.queries.last().unwrap().name.value,
        format!("q{}", 2 * PARALLEL_ITEMS + 6)
    );
    assert_eq!(parallel.broken.len(), 8);
    assert_eq!(parallel.publishes.len(), 1);
    assert_eq!(parallel.name.as_ref().unwrap().value, "big");
    // and through `parse`: the 8 broken queries are 8 syntax errors
    let parsed = parse(&text);
    assert_eq!(parsed.plan, one_pass);
    assert_eq!(parsed.diagnostics.len(), 8);
}

/// Every item parsed alone, in order: what [`parse_run`] gives without its
/// runs of queries.
fn parse_each<'i>(text: &str, items: &'i [RawItem]) -> (Plan, Vec<&'i RawItem>) {
    let mut plan = Plan::default();
    let mut broken = Vec::new();
    for item in items {
        parse_item(&mut plan, &mut broken, text, item);
    }
    (plan, broken)
}

fn dpplan_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            dpplan_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "dpplan") {
            out.push(p);
        }
    }
}

/// Consecutive queries parsed in one call of the parser give the AST
/// (spans included) and the broken items of each item parsed alone: on
/// every shipped example and corpus plan, and on runs with comments,
/// strings and braces between and inside queries; a run with a broken
/// query is refused whole and its items parsed one by one.
#[test]
fn queries_parsed_in_runs_are_the_queries_parsed_one_by_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    dpplan_files(&root.join("examples"), &mut files);
    dpplan_files(&root.join("tests/corpus"), &mut files);
    assert!(files.len() > 40, "{}", files.len());
    let mut texts: Vec<(String, String)> = files
        .iter()
        .filter_map(|f| Some((f.display().to_string(), std::fs::read_to_string(f).ok()?)))
        .collect();
    let q = |i: usize, body: &str| format!("  query q{i} {{\n{body}\n  }}\n");
    let plain = "    count(d)\n    noise laplace scale 2\n    schedule once";
    let header = "plan \"runs\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 1\n  }\n  dataset d {\n    column x : int in [0, 1]\n  }\n";
    let hostile = [
        // comments between queries, with braces and quotes in them
        format!(
            "{header}{}  // }} {{ \"\n{}  /* }} query z {{ */ {}}}\n",
            q(0, plain),
            q(1, plain),
            q(2, plain)
        ),
        // a comment and a string inside a query holding a brace
        format!(
            "{header}{}{}}}\n",
            q(
                0,
                "    count(d) // }\n    noise laplace scale 2 /* } */\n    schedule once"
            ),
            q(1, plain)
        ),
        format!(
            "{header}{}{}}}\n",
            q(
                0,
                "    count(d where x in {\"}\"})\n    noise laplace scale 2\n    schedule once"
            ),
            q(1, plain)
        ),
        // a broken query in the middle of the run, and one at its end
        format!(
            "{header}{}{}{}}}\n",
            q(0, plain),
            q(1, "    count(d\n    schedule once"),
            q(2, plain)
        ),
        format!(
            "{header}{}{}}}\n",
            q(0, plain),
            q(1, "    noise laplace scale")
        ),
        // queries with nothing between them, and CRLF line ends
        format!("{header}{}{}}}\n", q(0, plain).trim_end(), q(1, plain)).replace('\n', "\r\n"),
        // an unterminated string in a query
        format!(
            "{header}{}{}}}\n",
            q(0, "    count(d where x in {\"a})\n    schedule once"),
            q(1, plain)
        ),
    ];
    for (i, t) in hostile.into_iter().enumerate() {
        texts.push((format!("hostile {i}"), t));
    }
    let mut runs = 0;
    for (name, text) in &texts {
        let split = split::split(text);
        let (each, each_broken) = parse_each(text, &split.items);
        let (run, run_broken) = parse_run(text, &split.items);
        // (as their Debug text: a NaN literal is not equal to itself)
        assert_eq!(format!("{run:?}"), format!("{each:?}"), "{name}");
        assert_eq!(run_broken, each_broken, "{name}");
        // the runs were taken where every query of the run parses
        let queries: Vec<&RawItem> = split
            .items
            .iter()
            .filter(|i| i.kind == ItemKind::Query)
            .collect();
        if queries.len() >= 2
            && queries.windows(2).all(|w| {
                let (a, b) = (w[0], w[1]);
                split
                    .items
                    .iter()
                    .position(|i| std::ptr::eq(i, a))
                    .map(|k| k + 1)
                    == split.items.iter().position(|i| std::ptr::eq(i, b))
            })
            && each_broken.is_empty()
        {
            let first = split
                .items
                .iter()
                .position(|i| i.kind == ItemKind::Query)
                .unwrap();
            let mut plan = Plan::default();
            assert!(
                parse_queries(&mut plan, text, &split.items[first..first + queries.len()]),
                "{name}"
            );
            assert_eq!(
                format!("{:?}", plan.queries),
                format!("{:?}", each.queries),
                "{name}"
            );
            runs += 1;
        }
    }
    assert!(runs > 20, "{runs}");
    // a run with a broken query is refused whole
    let text = format!(
        "{header}{}{}{}}}\n",
        q(0, plain),
        q(1, "    count(d"),
        q(2, plain)
    );
    let split = split::split(&text);
    let queries: Vec<RawItem> = split
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Query)
        .cloned()
        .collect();
    let mut plan = Plan::default();
    assert!(!parse_queries(&mut plan, &text, &queries));
    assert!(plan.queries.is_empty());
}
