//! The streaming CSV engine on any file content, with real compiled plans.
//!
//! At first use every example plan (examples/*/*.dpplan, embedded at build
//! time) is compiled with `dpplan_compile::compile`; each of its datasets, with
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
//! (of rows, of cells, of distinct ids) is never negative and never more
//! than the file has records.
#![no_main]

use std::sync::OnceLock;

use dpplan_plan::Dataset;
use dpplan_engine::{CsvEngine, StatKind, Statistic};
use dpplan_engine::rng::SecureRng;
use dpplan_runtime::{planned_aggregates, RunOptions};
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
    (
        "ride-sharing",
        include_str!("../../examples/ride-sharing/ride-sharing.dpplan"),
    ),
];

struct Config {
    dataset: Dataset,
    stats: Vec<Statistic>,
    /// Per statistic: how many values it yields.
    widths: Vec<usize>,
}

fn configs() -> &'static [Config] {
    static CONFIGS: OnceLock<Vec<Config>> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let mut out = Vec::new();
        for (name, text) in EXAMPLES {
            let plan = dpplan_compile::compile(text)
                .unwrap_or_else(|e| panic!("example {name} does not compile: {e}"));
            // the statistics exactly as `dpplan run` asks for them: one
            // pass per dataset and filter
            let mut opts = RunOptions::default();
            for ds in plan.body.datasets.keys() {
                opts.data.insert(ds.clone(), "unused.csv".into());
            }
            let planned = planned_aggregates(&plan, &opts)
                .unwrap_or_else(|e| panic!("example {name}: {e}"));
            for (ds, _, stats) in planned {
                let widths = stats.iter().map(|s| width(ds, s)).collect();
                out.push(Config {
                    dataset: ds.clone(),
                    stats,
                    widths,
                });
            }
        }
        assert!(out.len() >= EXAMPLES.len(), "every example has a dataset");
        out
    })
}

/// How many values a statistic yields: one, or one per group (a category's
/// domain, or the cells of several keys and bins).
fn width(ds: &Dataset, s: &Statistic) -> usize {
    match s.kind.unfiltered() {
        StatKind::GroupedCount { by } | StatKind::GroupedSum { by, .. } => ds
            .columns
            .iter()
            .find(|c| &c.name == by)
            .and_then(|c| c.domain.as_ref())
            .map_or(0, Vec::len),
        StatKind::Cells { keys, .. } => keys.iter().map(|k| k.len()).product(),
        _ => 1,
    }
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
        let count = matches!(
            s.kind.unfiltered(),
            StatKind::Count
                | StatKind::GroupedCount { .. }
                | StatKind::Distinct { .. }
                | StatKind::Cells { column: None, .. }
        );
        if count {
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
