//! The streaming CSV engine on any file content, with real compiled plans.
//!
//! At first use every example plan (examples/*/*.dpplan, embedded at build
//! time) is compiled with `dpplan_plan::compile`; each of its datasets, with
//! the statistics of all its releases (as `dpplan run` derives them from the
//! releases' parts), is one configuration: row- and event-level units
//! (straight into the accumulators) and user-level units (the reservoir
//! table), `drop` and `clamp` for invalid rows, int and float columns,
//! categories. The first input byte picks the configuration, the rest is the
//! CSV file's content, read through `CsvEngine::aggregate_reader` (what
//! `Engine::aggregate` does with the opened file) with a fixed seed.
//!
//! Errors (a missing column, an unreadable CSV, an overflow refused) are
//! fine; a panic is not. And the result has the documented shape: one vector
//! per statistic, one value or one per group of the public domain; a count
//! is never negative and never more than the file has records.
#![no_main]

use std::sync::OnceLock;

use dpplan_plan::{Dataset, Release};
use dpplan_runtime::engine::{CsvEngine, StatKind, Statistic};
use dpplan_runtime::rng::SecureRng;
use libfuzzer_sys::fuzz_target;

const EXAMPLES: &[(&str, &str)] = &[
    (
        "web-analytics",
        include_str!("../../examples/web-analytics/web-analytics.dpplan"),
    ),
    (
        "retail-mixed",
        include_str!("../../examples/retail-mixed/retail-mixed.dpplan"),
    ),
    (
        "app-events",
        include_str!("../../examples/app-events/app-events.dpplan"),
    ),
    (
        "census",
        include_str!("../../examples/census/census.dpplan"),
    ),
    (
        "repeated-release",
        include_str!("../../examples/repeated-release/repeated-release.dpplan"),
    ),
];

struct Config {
    dataset: Dataset,
    stats: Vec<Statistic>,
    /// Per statistic: how many values it yields.
    widths: Vec<usize>,
}

/// As the runtime's (private) `statistic`: a release's part → a statistic.
fn statistic(r: &Release, p: &dpplan_plan::Part) -> Statistic {
    let col = || r.aggregation.column.clone().expect("a sum has a column");
    let by = || {
        r.aggregation
            .by
            .clone()
            .expect("a grouped query has a `by`")
    };
    let kind = match p.statistic.as_str() {
        "count" => StatKind::Count,
        "sum" => StatKind::Sum { column: col() },
        "grouped_count" => StatKind::GroupedCount { by: by() },
        "grouped_sum" => StatKind::GroupedSum {
            by: by(),
            column: col(),
        },
        other => panic!("unknown statistic `{other}` in a compiled example"),
    };
    Statistic {
        kind,
        grid: p.grid_exponent,
    }
}

fn configs() -> &'static [Config] {
    static CONFIGS: OnceLock<Vec<Config>> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let mut out = Vec::new();
        for (name, text) in EXAMPLES {
            let plan = dpplan_plan::compile(text)
                .unwrap_or_else(|e| panic!("example {name} does not compile: {e}"));
            for ds in plan.body.datasets.values() {
                let mut stats = Vec::new();
                let mut widths = Vec::new();
                for r in plan.body.releases.iter().filter(|r| r.dataset == ds.name) {
                    for p in &r.parts {
                        let s = statistic(r, p);
                        widths.push(match &s.kind {
                            StatKind::Count | StatKind::Sum { .. } => 1,
                            StatKind::GroupedCount { by } | StatKind::GroupedSum { by, .. } => ds
                                .columns
                                .iter()
                                .find(|c| &c.name == by)
                                .and_then(|c| c.domain.as_ref())
                                .map_or(0, Vec::len),
                        });
                        stats.push(s);
                    }
                }
                if !stats.is_empty() {
                    out.push(Config {
                        dataset: ds.clone(),
                        stats,
                        widths,
                    });
                }
            }
        }
        assert!(out.len() >= EXAMPLES.len(), "every example has a dataset");
        out
    })
}

fuzz_target!(|data: &[u8]| {
    let configs = configs();
    let Some((&pick, csv)) = data.split_first() else {
        return;
    };
    let c = &configs[pick as usize % configs.len()];
    let mut rng = SecureRng::from_seed_for_tests(u64::from(pick));
    let Ok(values) = CsvEngine.aggregate_reader(&c.dataset, csv, &c.stats, &mut rng) else {
        return;
    };
    assert_eq!(values.len(), c.stats.len(), "one vector per statistic");
    // Every record ends at a \n, a \r or the end of the file.
    let records = csv.iter().filter(|&&b| b == b'\n' || b == b'\r').count() as i128 + 1;
    for ((v, s), &w) in values.iter().zip(&c.stats).zip(&c.widths) {
        assert_eq!(v.len(), w, "{:?}: one value per group", s.kind);
        if matches!(s.kind, StatKind::Count | StatKind::GroupedCount { .. }) {
            // A count is in units of its grid 2^k (k ≤ 0): each row is 2^−k.
            let Some(max) = 1i128
                .checked_shl((-s.grid).max(0) as u32)
                .and_then(|unit| unit.checked_mul(records))
            else {
                continue;
            };
            assert!(
                v.iter().all(|&x| (0..=max).contains(&x)),
                "{:?} (grid {}): a count outside 0..={max} ({records} records): {v:?}",
                s.kind,
                s.grid
            );
            assert!(
                v.iter().sum::<i128>() <= max,
                "{:?}: counts add up to more than the records",
                s.kind
            );
        }
    }
});
