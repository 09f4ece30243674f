//! `dpplan check` on a plan past every parallel threshold (the parse's
//! 4,096 items, the planning's and the per-query costs' 2,048 queries,
//! the JSON's 4,096 queries on two threads): through the binary, each
//! query's report is the report of that query checked alone, the broken
//! queries' errors are one each in source order, and the document is one
//! valid JSON document.

use crate::support::dpplan;

const HEADER: &str = "plan \"large\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 100000 delta 1e-6\n  }\n  dataset visits {\n    source \"visits.csv\"\n    column uid : id\n    column page : category { \"a\", \"b\", \"c\", \"d\" }\n    column secs : int in [0, 600]\n    contribution {\n      rows_per_unit 5\n      groups_per_unit 2\n    }\n  }\n";

/// Query `i`: counts, sums, histograms and quantiles, with Laplace,
/// Gaussian and discrete noises of scales that differ from query to query.
fn query(i: usize) -> String {
    let (aggregate, noise) = match i % 7 {
        0 => (
            "count(visits)".to_string(),
            format!("laplace scale {}", 10 + i),
        ),
        1 => (
            "count(visits)".to_string(),
            format!("gaussian sigma {}", 10 + i),
        ),
        2 => (
            "sum(visits.secs)".to_string(),
            format!("discrete_laplace scale {}", 1000 + i),
        ),
        3 => (
            "histogram(visits by page)".to_string(),
            format!("gaussian sigma {}", 20 + i),
        ),
        4 => (
            "mean(visits.secs)".to_string(),
            format!("laplace scale {}", 500 + i),
        ),
        5 => (
            "quantile(visits.secs, 0.5)\n    candidates every 60".to_string(),
            format!("exponential scale {}", 1 + i % 5),
        ),
        // a few σ only: each distinct discrete Gaussian is a PLD leaf of
        // its own lattice (hundreds of them take seconds)
        _ => (
            "count(visits)".to_string(),
            format!("discrete_gaussian sigma {}", 30 + i % 3),
        ),
    };
    let schedule = if i.is_multiple_of(11) {
        "every 1 day for 30 days"
    } else {
        "once"
    };
    format!("  query q{i} {{\n    {aggregate}\n    noise {noise}\n    schedule {schedule}\n  }}\n")
}

fn check_json(dir: &std::path::Path, name: &str, text: &str) -> serde_json::Value {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let o = dpplan(&["check", "--format", "json", path.to_str().unwrap()]);
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{name}: {e}\n{}", String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn a_plan_past_every_parallel_threshold_reports_each_query_as_alone() {
    let n = 5000;
    let dir = tempfile::tempdir().unwrap();
    let mut text = HEADER.to_string();
    for i in 0..n {
        text.push_str(&query(i));
    }
    text.push_str("}\n");
    let big = check_json(dir.path(), "big.dpplan", &text);
    let file = &big["files"][0];
    let queries = file["queries"].as_array().unwrap();
    assert_eq!(queries.len(), n);
    assert!(
        file["epsilon"].as_f64().is_some_and(|e| e > 0.0),
        "{}",
        file["epsilon"]
    );
    assert!(file["attack_risk"].is_object(), "{}", file["attack_risk"]);
    // around every thread's boundary, and spread over the plan
    let mut sample: Vec<usize> = (0..n).step_by(397).collect();
    sample.extend([1023, 1024, 2047, 2048, 2499, 2500, 4095, 4096, n - 1]);
    for i in sample {
        let alone = check_json(
            dir.path(),
            "one.dpplan",
            &format!("{HEADER}{}}}\n", query(i)),
        );
        let one = &alone["files"][0]["queries"][0];
        assert_eq!(&queries[i], one, "q{i}");
    }
    // negative control: a query's report is not its neighbour's
    assert_ne!(queries[7]["parts"], queries[14]["parts"]);
}

#[test]
fn a_large_plan_with_broken_queries_has_one_error_each_in_order() {
    let n = 4500;
    let dir = tempfile::tempdir().unwrap();
    let mut text = HEADER.to_string();
    let mut broken = Vec::new();
    for i in 0..n {
        if i % 900 == 450 {
            text.push_str(&format!("  query q{i} {{\n    count(visits\n  }}\n"));
            broken.push(i);
        } else {
            text.push_str(&query(i));
        }
    }
    text.push_str("}\n");
    let big = check_json(dir.path(), "broken.dpplan", &text);
    let file = &big["files"][0];
    assert!(file["epsilon"].is_null(), "no claim with broken items");
    let errors: Vec<&serde_json::Value> = file["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), broken.len(), "{errors:?}");
    let lines: Vec<u64> = errors
        .iter()
        .map(|d| d["range"]["start"]["line"].as_u64().unwrap_or(0))
        .collect();
    // each on its broken query's `count(visits` line or the next, in order
    let at: Vec<u64> = broken
        .iter()
        .map(|&i| {
            let before = text.find(&format!("query q{i} {{")).unwrap();
            text[..before].matches('\n').count() as u64 + 1
        })
        .collect();
    assert!(
        lines
            .iter()
            .zip(&at)
            .all(|(l, q)| (q + 1..=q + 2).contains(l)),
        "{lines:?} vs queries at {at:?}"
    );
    // every query that parses is reported, the broken ones are not
    assert_eq!(file["queries"].as_array().unwrap().len(), n - broken.len());
}
