//! The accounting cache is invisible in results: with and without it, cold
//! and warm, every example gives the same diagnostics and report; an edit
//! that keeps the releases runs no accountant; a changed release misses
//! (negative control) and gives the fresh result.

use crate::memo::{AccountingCache, CacheStats};
use crate::{analyze_cached, analyze_with, Analysis, AnalysisOptions};

fn examples() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap().path();
        let name = e.file_name().unwrap().to_string_lossy().to_string();
        let plan = e.join(format!("{name}.dpplan"));
        if plan.is_file() {
            out.push((name, std::fs::read_to_string(plan).unwrap()));
        }
    }
    assert!(out.len() >= 5, "{out:?}");
    out
}

/// Everything an analysis shows, as text.
fn shown(a: &Analysis) -> String {
    format!("{:?}\n{:?}\n{:?}", a.diagnostics, a.report, a.suppressed)
}

fn options() -> [AnalysisOptions; 2] {
    [
        AnalysisOptions::default(),
        AnalysisOptions {
            all_accountants: false,
            per_query_costs: false,
            accounting: true,
        },
    ]
}

#[test]
fn cached_analyses_are_identical_to_uncached_ones() {
    for (name, text) in examples() {
        for opts in options() {
            let plain = shown(&analyze_with(&text, &opts));
            let cache = AccountingCache::new();
            let cold = shown(&analyze_cached(&text, &opts, &cache));
            let after_cold = cache.stats();
            let warm = shown(&analyze_cached(&text, &opts, &cache));
            assert_eq!(plain, cold, "{name}");
            assert_eq!(plain, warm, "{name}");
            let warm_stats = cache.stats();
            // the second analysis ran no accountant
            assert_eq!(warm_stats.misses, after_cold.misses, "{name}");
            assert!(warm_stats.hits > after_cold.hits, "{name}");
        }
    }
}

fn retail() -> String {
    examples()
        .into_iter()
        .find(|(n, _)| n == "retail-mixed")
        .unwrap()
        .1
}

fn delta(before: CacheStats, after: CacheStats) -> (u64, u64) {
    (after.hits - before.hits, after.misses - before.misses)
}

#[test]
fn an_edit_that_keeps_the_releases_runs_no_accountant() {
    let text = retail();
    let opts = AnalysisOptions::default();
    let cache = AccountingCache::new();
    analyze_cached(&text, &opts, &cache);
    for edited in [
        text.replacen("// A retail", "// An edited comment about a retail", 1),
        text.replace("live_orders", "live_order_count"),
        text.replacen("  query live_orders {", "\n\n  query live_orders   {", 1),
    ] {
        let before = cache.stats();
        let cached = analyze_cached(&edited, &opts, &cache);
        let (hits, misses) = delta(before, cache.stats());
        assert_eq!(misses, 0, "an accountant ran again");
        assert!(hits > 0);
        assert_eq!(shown(&cached), shown(&analyze_with(&edited, &opts)));
    }
}

#[test]
fn a_changed_release_is_accounted_again() {
    let text = retail();
    let opts = AnalysisOptions::default();
    let cache = AccountingCache::new();
    let first = analyze_cached(&text, &opts, &cache);
    for (i, edited) in [
        text.replacen("sigma 1500", "sigma 1600", 1),
        text.replacen("1 minute for 30 days", "1 minute for 29 days", 1),
        text.replacen("rows_per_unit 10", "rows_per_unit 11", 1),
        text.replacen("delta 1e-7", "delta 2e-7", 1),
    ]
    .into_iter()
    .enumerate()
    {
        assert_ne!(edited, text);
        let before = cache.stats();
        let cached = analyze_cached(&edited, &opts, &cache);
        let (_, misses) = delta(before, cache.stats());
        assert!(
            misses > 0,
            "the accountants must run on new releases: edit {i}"
        );
        assert_eq!(shown(&cached), shown(&analyze_with(&edited, &opts)));
        // the claim moved (or is refused): not the cached one
        let claim = |a: &Analysis| {
            let r = a.report.as_ref().unwrap();
            (
                r.total.clone(),
                r.queries
                    .iter()
                    .map(|q| q.total.clone())
                    .collect::<Vec<_>>(),
            )
        };
        assert_ne!(claim(&cached), claim(&first), "edit {i}");
    }
}

/// A plan large enough that each query's cost is computed on a second
/// thread beside the total: that thread uses the analysis's cache too, so
/// a warm analysis runs no accountant there either; the results are the
/// uncached ones.
#[test]
fn the_second_thread_of_a_large_plan_uses_the_same_cache() {
    let mut text = String::from(
        "plan \"p\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 1000 delta 1e-6\n  }\n  dataset visits {\n    column uid : id\n    contribution {\n      rows_per_unit 5\n    }\n  }\n",
    );
    for i in 0..600 {
        text += &format!(
            "  query q{i} {{\n    count(visits)\n    noise gaussian sigma {}\n    schedule once\n  }}\n",
            100 + i % 7
        );
    }
    text += "}\n";
    let opts = AnalysisOptions::default();
    let plain = shown(&analyze_with(&text, &opts));
    let cache = AccountingCache::new();
    let cold = shown(&analyze_cached(&text, &opts, &cache));
    let after_cold = cache.stats();
    // 7 distinct per-query costs (one release each), remembered on the
    // second thread: misses beyond the total's few
    assert!(after_cold.misses >= 7, "{after_cold:?}");
    let warm = shown(&analyze_cached(&text, &opts, &cache));
    assert_eq!(plain, cold);
    assert_eq!(plain, warm);
    assert_eq!(
        cache.stats().misses,
        after_cold.misses,
        "{:?}",
        cache.stats()
    );
}
