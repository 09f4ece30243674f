//! What the Python tests read and users never get: compiled only with the
//! `test-hooks` feature, which `scripts/build-wheel.sh --profile test`
//! (the wheel `scripts/test-python.sh` tests) turns on and the release wheel
//! does not.
//!
//! `_exact_aggregates` returns a compiled plan's exact aggregates (no noise,
//! nothing charged, no ledger) as the embedded engine reads them from the
//! given files or frames, so that tests/python can show that a DataFrame
//! handed over as `dpplan.run` hands it (`dpplan._as_arrow_table`, then
//! the Arrow C stream interface: `crate::frames`) and the same data as CSV
//! give byte-identical aggregates, as `dpplan-runtime`'s columnar tests show
//! for Parquet and Arrow files written in Rust. The aggregates are
//! raw private values: a released wheel must not carry this.

use std::collections::BTreeMap;
use std::path::Path;

use pyo3::prelude::*;

use dpplan_engine::rng::SecureRng;
use dpplan_engine::Engine;

use crate::{argument, Failure};

/// One request's exact aggregates: the dataset's name, the source read,
/// each statistic's aggregate per coordinate (i128, in decimal).
type Request = (String, String, Vec<Vec<String>>);

/// Each dataset's exact aggregates for every windowed release and
/// cumulative count of the compiled plan at `plan`, per window
/// (`dpplan_runtime::window::runtime_windows` over the windows that cover
/// the data: the slot, the units kept in it, its aggregates), then for
/// every plain release (`dpplan_runtime::planned_aggregates`; a plan with
/// a cumulative count is asked release by release), and the counts per
/// key of every histogram over keys from the data (`planned_keys`), the
/// datasets in `data` read from the given files or frames, the others from
/// the plan's sources. The user-level selection draws from a generator
/// seeded with `seed` on one thread, so two calls on the same rows in the
/// same order select the same rows.
#[pyfunction]
pub fn _exact_aggregates(
    py: Python<'_>,
    plan: String,
    data: BTreeMap<String, Bound<'_, PyAny>>,
    seed: u64,
) -> PyResult<Vec<Request>> {
    let (data, held) = crate::frames::sources(data)?;
    py.detach(move || {
        let _held = held;
        let path = Path::new(&plan);
        let text = std::fs::read_to_string(path)
            .map_err(|e| argument(format!("cannot read `{plan}`: {e}")))?;
        let compiled = dpplan_compile::load(&text)
            .map_err(|e| argument(format!("`{plan}` is not a compiled plan: {e}")))?;
        let opts = dpplan_runtime::RunOptions {
            data,
            base_dir: path.parent().map(Path::to_path_buf),
            ..Default::default()
        };
        let failed = |e: &dyn std::fmt::Display| Failure {
            kind: "run",
            message: e.to_string(),
            payload: None,
        };
        let planned = match dpplan_runtime::planned_aggregates(&compiled, &opts) {
            Ok(p) => p,
            Err(_) => {
                let mut all = Vec::new();
                for r in compiled
                    .body
                    .releases
                    .iter()
                    .filter(|r| r.cumulative.is_none())
                {
                    let one = dpplan_runtime::RunOptions {
                        queries: vec![r.name.clone()],
                        ..opts.clone()
                    };
                    all.extend(
                        dpplan_runtime::planned_aggregates(&compiled, &one)
                            .map_err(|e| failed(&e))?,
                    );
                }
                all
            }
        };
        let mut out = Vec::new();
        for w in dpplan_runtime::planned_windows(&compiled, &opts).map_err(|e| failed(&e))? {
            let (start, slots) = time_span(&w.dataset, &w.source, w.column, w.period)?;
            let slots: Vec<u64> = (0..slots).collect();
            let kept = std::collections::HashMap::new();
            let request = dpplan_engine::WindowRequest {
                release: w.release,
                column: w.column,
                start,
                period: w.period,
                slots: &slots,
                units: w.bound.map(|bound| dpplan_engine::WindowUnits {
                    key: &UNIT_KEY,
                    kept: &kept,
                    bound,
                }),
            };
            let got = dpplan_runtime::window::runtime_windows(
                &one_thread(),
                &w.dataset,
                &w.source,
                &request,
                &w.stats,
                &mut SecureRng::from_seed_for_tests(seed),
            )
            .map_err(|e| failed(&e))?;
            for slot in got {
                // the slot, then the keyed hashes of the units kept in it,
                // then its aggregates
                let mut values = vec![vec![format!("slot {}", slot.slot)]];
                values.push(slot.units.into_iter().collect());
                values.extend(decimal(&slot.values));
                out.push((
                    w.dataset.name.clone(),
                    w.source.display().to_string(),
                    values,
                ));
            }
        }
        for k in dpplan_runtime::requests::planned_keys(&compiled, &opts).map_err(|e| failed(&e))? {
            let got = one_thread()
                .aggregate_keys(
                    k.dataset,
                    &k.source,
                    k.column,
                    k.filter,
                    &mut SecureRng::from_seed_for_tests(seed),
                )
                .map_err(|e| failed(&e))?;
            // each key seen (its bytes, lossily as text) with its count
            let values = got
                .into_iter()
                .map(|(key, n)| vec![String::from_utf8_lossy(&key).into_owned(), n.to_string()])
                .collect();
            out.push((
                k.dataset.name.clone(),
                k.source.display().to_string(),
                values,
            ));
        }
        for (ds, source, stats) in planned {
            if stats.is_empty() {
                continue;
            }
            let got = one_thread()
                .aggregate(
                    ds,
                    &source,
                    &stats,
                    &mut SecureRng::from_seed_for_tests(seed),
                )
                .map_err(|e| failed(&e))?;
            out.push((ds.name.clone(), source.display().to_string(), decimal(&got)));
        }
        Ok(out)
    })
}

/// The embedded engine on the calling thread: the rows arrive in the
/// source's order whatever its format, so a user-level bounding's random
/// choices (seeded) are the same for the same rows in the same order. (On
/// several threads they also follow where the source is cut into pieces:
/// a CSV's blocks, an Arrow file's batches.)
fn one_thread() -> dpplan_engine::CsvEngine {
    dpplan_engine::CsvEngine.threads(std::num::NonZeroUsize::MIN)
}

/// A fixed unit key: the keyed hashes of the two calls compared agree.
const UNIT_KEY: [u8; 32] = [7; 32];

fn decimal(values: &[Vec<i128>]) -> Vec<Vec<String>> {
    values
        .iter()
        .map(|v| v.iter().map(i128::to_string).collect())
        .collect()
}

/// The windows that cover the data: the first starts at the earliest time
/// of `column` (rounded down to a multiple of `period`), and as many follow
/// as reach its latest time (at most 10,000). Read through the engine's own
/// reader of the source (`open_source`), whatever its format.
fn time_span(
    dataset: &dpplan_plan::Dataset,
    source: &Path,
    column: &str,
    period: i64,
) -> Result<(i64, u64), Failure> {
    let failed = |e: &dyn std::fmt::Display| Failure {
        kind: "run",
        message: format!("dataset `{}`: {e}", dataset.name),
        payload: None,
    };
    let reader = dpplan_engine::open_source(dataset, source).map_err(|e| failed(&e))?;
    let mut rdr = csv::ReaderBuilder::new().flexible(true).from_reader(reader);
    let header = rdr.byte_headers().map_err(|e| failed(&e))?.clone();
    let i = header
        .iter()
        .position(|h| h == column.as_bytes())
        .ok_or_else(|| failed(&format!("no column `{column}`")))?;
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    let mut rec = csv::ByteRecord::new();
    while rdr.read_byte_record(&mut rec).map_err(|e| failed(&e))? {
        if let Some(t) = rec.get(i).and_then(dpplan_runtime::window::parse_time) {
            lo = lo.min(t);
            hi = hi.max(t);
        }
    }
    if lo > hi {
        return Err(failed(&format!("no time in column `{column}`")));
    }
    let start = lo.div_euclid(period) * period;
    let slots = ((hi - start) / period + 1).min(10_000) as u64;
    Ok((start, slots))
}
