//! # dpplan-engine — reading and bounded aggregation behind the [`Engine`] trait
//!
//! The engine is what the runtime and the other engines (Spark) share:
//! the trait, the statistics asked of it, the secure random source the
//! bounding draws from (`rng`), and the embedded streaming CSV engine.
//! It knows nothing of noise, ledgers or schedules.
//!
//! The engine computes **exact** bounded aggregates only (integers in units
//! of each statistic's grid 2^k); noise is never the engine's business.
//! [`CsvEngine`](struct@CsvEngine) streams a CSV file once, on every core (`parallel`: the
//! file cut into chunks at record boundaries, units partitioned among the
//! threads) or on one thread, and parses only
//! the fields the statistics need (the unit id, the summed numbers, the
//! grouping categories; other declared numbers are only checked for
//! validity when invalid rows are dropped):
//!
//! * row- and event-level units: every row is a unit; it goes straight into
//!   the accumulators (memory is constant in the number of rows);
//! * user-level units: per unit id a reservoir of at most `rows_per_unit`
//!   rows (Algorithm R, secure random indices) is kept in a flat
//!   open-addressing table keyed by a secret-keyed universal hash of the id
//!   (the ids themselves are never stored) — memory is
//!   O(units × rows_per_unit), never O(rows), and a slot holds only what
//!   the statistics use (each summed number as its offset on the grid in as
//!   few bytes as its public bounds allow, category indexes in 1, 2 or 4
//!   bytes; nothing for a count). Rows go through the table in batches, so
//!   that their cache misses overlap. At the end, grouped statistics keep
//!   at most `groups_per_unit` groups per unit and `rows_per_group` rows per
//!   group, chosen uniformly at random.
//!
//! Error messages name files and declared columns, never a data value, a row
//! number or a count of dropped rows.
//!
//! Inside: `number` (parsing and validating a number, a value on its
//! grid), `layout` (the schema resolved against the CSV header), `hash`
//! (the keyed unit hash), `table` (the unit table that holds the
//! reservoirs), `bounding` (filling and draining the reservoirs, group
//! selection, the accumulators), `columnar` (Parquet and Arrow IPC
//! sources: schema checks, and their CSV text for the readers other than
//! the aggregates), `native` (the aggregates' rows of a Parquet or Arrow
//! source, without text).

use std::fs::File;
use std::io::Read;
use std::num::NonZeroUsize;
use std::path::Path;

use dpplan_plan::Dataset;
use dpplan_vocab::rows::{Filter, GroupKey};

pub mod rng;

use crate::rng::SecureRng;

mod bounding;
mod columnar;
pub use columnar::{open_source, SourceFormat};
mod domain;
mod hash;
mod keys;
mod layout;
pub mod memory;
pub use bounding::{sample_coin, sample_rate, sample_threshold};
pub use layout::grid_bounds;
mod native;
mod number;
mod parallel;
mod rows;
mod split;
mod table;

use bounding::{Accumulators, Reservoirs};
use hash::IdHasher;
use layout::Layout;

/// What is aggregated.
#[derive(Debug, Clone, PartialEq)]
pub enum StatKind {
    Count,
    Sum {
        column: String,
    },
    GroupedCount {
        by: String,
    },
    GroupedSum {
        by: String,
        column: String,
    },
    /// One count (no `column`) or sum per cell of the product of `keys`
    /// (categories and bins), the first key varying slowest.
    Cells {
        keys: Vec<GroupKey>,
        column: Option<String>,
    },
    /// The number of distinct values of an id column; under a user-level
    /// unit, of the unit's id: the number of units with a kept row.
    Distinct {
        column: String,
    },
    /// Users per cell: the number of units with a kept row in each cell of
    /// the product of `keys` (rows bounded as for [`StatKind::Cells`]),
    /// under a user-level unit only.
    UnitsPerCell {
        keys: Vec<GroupKey>,
    },
    /// `of`, on the rows `filter` holds for, decided before bounding. The
    /// statistics of one engine call share one filter (or none).
    Where {
        filter: Filter,
        of: Box<StatKind>,
    },
}

impl StatKind {
    /// The statistic without its filter.
    pub fn unfiltered(&self) -> &StatKind {
        match self {
            StatKind::Where { of, .. } => of.unfiltered(),
            other => other,
        }
    }

    /// The filter, if any.
    pub fn filter(&self) -> Option<&Filter> {
        match self {
            StatKind::Where { filter, .. } => Some(filter),
            _ => None,
        }
    }
}

/// One exact statistic to compute, in units of 2^grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Statistic {
    pub kind: StatKind,
    pub grid: i32,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A data file that cannot be opened or read.
    #[error(transparent)]
    Io(IoError),
    #[error("{0}")]
    Schema(String),
    #[error("{0}")]
    Overflow(String),
}

/// A file that cannot be opened, read or written (a dataset's CSV, a file
/// next to the ledger): the whole message, as the CLI prints it, and the
/// underlying error where there is one, as the error's `source()`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct IoError {
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl IoError {
    pub fn new(message: impl Into<String>) -> Self {
        IoError {
            message: message.into(),
            source: None,
        }
    }

    /// The same message, with the error that caused it.
    pub fn with_source(self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        IoError {
            source: Some(Box::new(source)),
            ..self
        }
    }
}

/// Reading and bounded aggregation. Another engine (SQL, distributed) takes
/// the same request and must apply the same bounding steps.
pub trait Engine {
    /// One vector per statistic: a single value, or one per group of the
    /// public domain, in domain order.
    fn aggregate(
        &self,
        dataset: &Dataset,
        source: &Path,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError>;

    /// The same over rows already selected (a windowed release's window:
    /// CSV bytes, header first). An engine that cannot take them refuses,
    /// and windowed releases then need the embedded engine.
    fn aggregate_selected(
        &self,
        dataset: &Dataset,
        _csv: &[u8],
        _stats: &[Statistic],
        _rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        Err(EngineError::Schema(format!(
            "dataset `{}`: a windowed query or a cumulative count runs on the embedded CSV engine only",
            dataset.name
        )))
    }

    /// The due slots of a windowed release (or of a cumulative count's
    /// windows), each window's rows selected by the engine itself from the
    /// source: an engine that reads the data where it is kept (Spark)
    /// cannot hand the rows back for [`Engine::aggregate_selected`]. The
    /// selection is the runtime's exactly (`dpplan-runtime`'s `window`):
    /// the rows whose time (by the time grammar) lies in a wanted slot;
    /// under a per-unit bound, a unit of keyed hash `h` that has a row in
    /// the window is kept in its slots in slot order until it reaches
    /// `bound` windows (counting `kept[h]` of earlier runs), its rows in any
    /// other wanted slot left out; a row without an id is left to the
    /// bounding, which drops it. Each slot is then bounded and aggregated as
    /// [`Engine::aggregate_selected`] would (`dataset` carries the window's
    /// `rows_per_window` as its `rows_per_unit`). `None`: the engine takes
    /// no source for windows, and the runtime selects the rows itself.
    fn aggregate_windows(
        &self,
        _dataset: &Dataset,
        _source: &Path,
        _window: &WindowRequest<'_>,
        _stats: &[Statistic],
        _rng: &mut SecureRng,
    ) -> Result<Option<Vec<WindowSlot>>, EngineError> {
        Ok(None)
    }

    /// A histogram over keys taken from the data: the exact bounded count
    /// of every value of `column` seen (in byte order of the key), on the
    /// rows `filter` holds for. What is returned must never be revealed
    /// but through the threshold (the runtime's `selection`). An engine that
    /// cannot count keys refuses, before any charge.
    fn aggregate_keys(
        &self,
        dataset: &Dataset,
        _source: &Path,
        _column: &str,
        _filter: Option<&Filter>,
        _rng: &mut SecureRng,
    ) -> Result<Vec<(Vec<u8>, i128)>, EngineError> {
        Err(EngineError::Schema(format!(
            "dataset `{}`: a histogram over keys from the data runs on the embedded CSV engine only",
            dataset.name
        )))
    }
}

/// The windows a windowed release asks of [`Engine::aggregate_windows`].
#[derive(Debug, Clone, Copy)]
pub struct WindowRequest<'a> {
    /// The release (for messages).
    pub release: &'a str,
    /// The `time` column.
    pub column: &'a str,
    /// Slot s is [start + s·period, start + (s + 1)·period), in Unix seconds.
    pub start: i64,
    pub period: i64,
    /// The wanted slots, ascending.
    pub slots: &'a [u64],
    /// Per-unit bounds only: the ledger's secret unit key (a unit's keyed
    /// hash is the lowercase hex SHA-256 of the key then the id's bytes),
    /// the windows each unit was kept in so far, by keyed hash (a unit
    /// absent was kept in none), and the bound.
    pub units: Option<WindowUnits<'a>>,
}

/// The per-unit state of a [`WindowRequest`].
#[derive(Debug, Clone, Copy)]
pub struct WindowUnits<'a> {
    pub key: &'a [u8],
    pub kept: &'a std::collections::HashMap<String, u64>,
    pub bound: u64,
}

/// One slot's exact bounded aggregates and the keyed hashes of the units
/// kept in it (empty without a per-unit bound).
#[derive(Debug, Clone, PartialEq)]
pub struct WindowSlot {
    pub slot: u64,
    pub values: Vec<Vec<i128>>,
    pub units: std::collections::BTreeSet<String>,
}

/// The built-in streaming CSV engine, on every core by default.
///
/// `CsvEngine` is also the name of the engine with its defaults, so
/// `&CsvEngine` is the default engine; `CsvEngine::threads` and
/// `CsvEngine::block_size` change them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsvEngine {
    threads: Option<NonZeroUsize>,
    block: usize,
}

/// The engine with its defaults: one worker per core
/// ([`std::thread::available_parallelism`]), blocks of 1 MiB.
#[allow(non_upper_case_globals)]
pub const CsvEngine: CsvEngine = CsvEngine {
    threads: None,
    block: 1 << 20,
};

impl Default for CsvEngine {
    fn default() -> Self {
        CsvEngine
    }
}

impl CsvEngine {
    /// Runs on `n` threads: 1 is the single-threaded engine (one reader,
    /// no worker threads); more parse in parallel (see `parallel`).
    pub fn threads(self, n: NonZeroUsize) -> Self {
        CsvEngine {
            threads: Some(n),
            ..self
        }
    }

    /// Reads the CSV in blocks of about `bytes` bytes (at least 1), each cut
    /// at a record boundary into a chunk a worker parses. The results do not
    /// depend on it; tests use tiny blocks to force every kind of cut.
    pub fn block_size(self, bytes: usize) -> Self {
        CsvEngine {
            block: bytes.max(1),
            ..self
        }
    }

    /// The number of threads this engine runs on.
    pub fn thread_count(&self) -> usize {
        match self.threads {
            Some(n) => n.get(),
            None => std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
        }
    }
}

/// The error of a CSV that cannot be read: names the dataset, keeps the
/// reader's error as the source.
fn read_error(dataset: &str, e: csv::Error) -> EngineError {
    let message = format!("cannot read the CSV of dataset `{dataset}`: {e}");
    EngineError::Io(IoError::new(message).with_source(e))
}

/// The records of a dataset's CSV, with read errors that name the dataset.
struct Records<'d, R> {
    reader: csv::Reader<R>,
    dataset: &'d str,
}

impl<'d, R: Read> Records<'d, R> {
    fn new(dataset: &'d str, reader: R) -> Self {
        let reader = csv::ReaderBuilder::new()
            .flexible(true)
            .has_headers(true)
            .from_reader(reader);
        Records { reader, dataset }
    }

    fn error(&self, e: csv::Error) -> EngineError {
        read_error(self.dataset, e)
    }

    fn headers(&mut self) -> Result<csv::ByteRecord, EngineError> {
        match self.reader.byte_headers() {
            Ok(h) => Ok(h.clone()),
            Err(e) => Err(self.error(e)),
        }
    }

    /// Reads the next record into `rec`; false at the end of the data.
    #[inline]
    fn read(&mut self, rec: &mut csv::ByteRecord) -> Result<bool, EngineError> {
        match self.reader.read_byte_record(rec) {
            Ok(more) => Ok(more),
            Err(e) => Err(self.error(e)),
        }
    }
}

/// The rows of a source on one thread, read one at a time into a reused
/// record: a CSV's records, or the rows of Arrow columns
/// ([`native`]).
trait RowReader {
    type Rec: layout::Fields;
    /// An empty record to read into.
    fn record(&self) -> Self::Rec;
    /// Reads the next row into `rec`; false at the end of the data.
    fn next_row(&mut self, rec: &mut Self::Rec) -> Result<bool, EngineError>;
}

impl<R: Read> RowReader for Records<'_, R> {
    type Rec = csv::ByteRecord;
    fn record(&self) -> csv::ByteRecord {
        csv::ByteRecord::new()
    }
    #[inline]
    fn next_row(&mut self, rec: &mut csv::ByteRecord) -> Result<bool, EngineError> {
        self.read(rec)
    }
}

impl CsvEngine {
    /// Aggregates from any reader (the file variant opens the path).
    pub fn aggregate_reader<R: Read>(
        &self,
        dataset: &Dataset,
        mut reader: R,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        let threads = self.thread_count();
        if threads == 1 {
            let mut records = Records::new(&dataset.name, reader);
            let headers = records.headers()?;
            let (layout, prepared) = Layout::resolve(dataset, &headers, stats)?;
            return one_thread(dataset, &mut records, layout, &prepared, rng);
        }
        // on `threads` threads (see `parallel`): the header is read here,
        // the data cut into chunks at record boundaries
        let (headers, rest, eof) = split::read_header(&mut reader, self.block)
            .map_err(|e| read_error(&dataset.name, csv::Error::from(e)))?;
        let (layout, prepared) = Layout::resolve(dataset, &headers, stats)?;
        let feed = parallel::CsvFeed {
            chunks: split::Chunks::new(reader, rest, eof, self.block),
            dataset: &dataset.name,
        };
        on_threads(dataset, feed, threads, layout, &prepared, rng)
    }

    /// The same from a Parquet or Arrow IPC source, read natively
    /// ([`native`]): the same rows in the same order as the CSV text of
    /// [`open_source`] would give, without the text.
    fn aggregate_native(
        &self,
        dataset: &Dataset,
        source: &Path,
        format: SourceFormat,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        let opened = native::open(dataset, source, format)?;
        let (layout, prepared) = Layout::resolve(dataset, &opened.header, stats)?;
        let feed = opened.feed(&layout.text_columns(), &layout.number_columns(), self.block);
        match self.thread_count() {
            1 => one_thread(
                dataset,
                &mut native::NativeRows::new(feed),
                layout,
                &prepared,
                rng,
            ),
            threads => on_threads(dataset, feed, threads, layout, &prepared, rng),
        }
    }
}

/// The exact aggregates on the calling thread.
fn one_thread<Rd: RowReader>(
    dataset: &Dataset,
    records: &mut Rd,
    mut layout: Layout,
    prepared: &[layout::Prepared],
    rng: &mut SecureRng,
) -> Result<Vec<Vec<i128>>, EngineError> {
    // a sample's rate and unit checked before anything is read
    let sample = bounding::sample_threshold(dataset)?;
    let mut acc = Accumulators::new(prepared);
    layout.set_distinct_hashers((IdHasher::new(rng), IdHasher::new(rng)));
    match layout.id {
        // Row/event-level unit: every valid row is a unit of its own.
        None => add_every_row(records, &layout, prepared, &mut acc)?,
        // User-level unit: 1. every row into its unit's reservoir while
        // reading; 2. each unit's kept rows, bounded per group, into the
        // accumulators.
        Some(id) => {
            let hashers = (IdHasher::new(rng), IdHasher::new(rng));
            let mut reservoirs = Reservoirs::new(dataset, &layout, hashers)?;
            reservoirs.fill(records, &layout, id, rng)?;
            reservoirs.drain(&layout, prepared, &dataset.bounding, sample, &mut acc, rng)?;
        }
    }
    acc.finish(prepared)
}

/// The exact aggregates on `threads` threads (see `parallel`), with the
/// same draws from `rng` before the work as [`one_thread`].
fn on_threads<F: parallel::Feed>(
    dataset: &Dataset,
    feed: F,
    threads: usize,
    mut layout: Layout,
    prepared: &[layout::Prepared],
    rng: &mut SecureRng,
) -> Result<Vec<Vec<i128>>, EngineError> {
    // a sample's rate and unit checked before anything is read
    bounding::sample_threshold(dataset)?;
    layout.set_distinct_hashers((IdHasher::new(rng), IdHasher::new(rng)));
    let acc = match layout.id {
        None => parallel::every_row(feed, threads, dataset, &layout, prepared)?,
        Some(id) => {
            let hashers = (IdHasher::new(rng), IdHasher::new(rng));
            parallel::per_unit(feed, threads, dataset, &layout, prepared, id, hashers, rng)?
        }
    };
    acc.finish(prepared)
}

/// Row- and event-level units: every valid row goes straight into the
/// accumulators (memory is constant in the number of rows).
fn add_every_row<Rd: RowReader>(
    records: &mut Rd,
    layout: &Layout,
    prepared: &[layout::Prepared],
    acc: &mut Accumulators,
) -> Result<(), EngineError> {
    let mut rec = records.record();
    let (mut vals, mut cats) = layout.row_buffers();
    while records.next_row(&mut rec)? {
        if layout.parse(&rec, &mut vals, &mut cats) {
            acc.add(prepared, &vals, &cats)?;
            if let Some(d) = &layout.distinct {
                acc.add_distinct(prepared, d.key(&rec));
            }
        }
    }
    Ok(())
}

/// A dataset's CSV file, opened, or the error that names it.
fn open_csv(dataset: &Dataset, source: &Path) -> Result<File, EngineError> {
    if source.is_dir() {
        let why = "it is a directory, not a CSV file";
        return Err(EngineError::Io(cannot_open(dataset, source, &why)));
    }
    File::open(source).map_err(|e| EngineError::Io(cannot_open(dataset, source, &e).with_source(e)))
}

/// The error of a dataset's file that cannot be opened: names both.
fn cannot_open(dataset: &Dataset, path: &Path, why: &dyn std::fmt::Display) -> IoError {
    IoError::new(format!(
        "cannot open `{}` for dataset `{}`: {why}",
        path.display(),
        dataset.name
    ))
}

impl Engine for CsvEngine {
    fn aggregate_keys(
        &self,
        dataset: &Dataset,
        source: &Path,
        column: &str,
        filter: Option<&Filter>,
        rng: &mut SecureRng,
    ) -> Result<Vec<(Vec<u8>, i128)>, EngineError> {
        let reader = open_source(dataset, source)?;
        Ok(keys::count_keys(dataset, reader, column, filter, rng)?
            .into_iter()
            .collect())
    }

    fn aggregate(
        &self,
        dataset: &Dataset,
        source: &Path,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        match SourceFormat::of(source) {
            SourceFormat::Csv => {
                self.aggregate_reader(dataset, open_source(dataset, source)?, stats, rng)
            }
            format => self.aggregate_native(dataset, source, format, stats, rng),
        }
    }

    fn aggregate_selected(
        &self,
        dataset: &Dataset,
        csv: &[u8],
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        // a window's rows are usually a few kilobytes: starting threads for
        // them costs more than it saves (a catch-up runs thousands)
        let engine = if csv.len() < self.block {
            self.threads(NonZeroUsize::MIN)
        } else {
            *self
        };
        engine.aggregate_reader(dataset, csv, stats, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(rows_per_unit: u64, extra: &str) -> Dataset {
        let src = format!(
            r#"plan "t" {{
  privacy {{ unit user by uid adjacency add_remove budget epsilon 20 delta 1e-6 }}
  dataset d {{
    column uid : id
    column g : category {{ "a", "b", "c" }}
    column v : float in [-5, 100]
    column w : int in [0, 10]
    contribution {{ rows_per_unit {rows_per_unit} {extra} }}
  }}
  query s {{ sum(d.v) noise laplace scale 100 schedule once }}
}}"#
        );
        let plan = dpplan_compile::compile(&src).unwrap_or_else(|e| panic!("{e}"));
        plan.body.datasets["d"].clone()
    }

    /// The counts per key seen are the same for the same rows in the same
    /// order and the same generator: the units are bounded in the order
    /// first seen (a map's order varies from one map to the next, and with
    /// it which draw each unit gets).
    #[test]
    fn keys_from_the_data_draw_in_row_order() {
        let ds = dataset(2, "groups_per_unit 1");
        let mut csv = String::from("uid,g,v,w\n");
        // units of different shapes: one to three keys, in turn
        for u in 0..500 {
            for g in ["a", "b", "c"].iter().cycle().skip(u % 3).take(u % 3 + 1) {
                csv.push_str(&format!("id{u},{g},1,1\n"));
            }
        }
        let count = |seed| {
            keys::count_keys(
                &ds,
                csv.as_bytes(),
                "g",
                None,
                &mut SecureRng::from_seed_for_tests(seed),
            )
            .unwrap()
        };
        let first = count(9);
        assert_eq!(first.values().sum::<i128>(), 500);
        assert_eq!(count(9), first);
        // a control: another generator chooses other keys
        assert_ne!(count(10), first);
    }

    #[test]
    fn a_bound_that_never_binds_gives_the_exact_clamped_aggregates() {
        // many units (the table grows), at most 3 rows each, rows_per_unit 3
        let ds = dataset(3, "groups_per_unit 3");
        let mut csv = String::from("uid,g,v,w\n");
        let (mut count, mut sum, mut hist, mut gsum) = (0i128, 0i128, [0i128; 3], [0i128; 3]);
        let mut x: u64 = 12345;
        for u in 0..20_000u64 {
            for r in 0..(u % 3 + 1) {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = (x >> 40) as f64 / 1000.0 - 8.0; // some below -5, some above 100
                let g = ["a", "b", "c", "zz"][(x >> 20) as usize % 4];
                csv.push_str(&format!("id{u},{g},{v},{}\n", r));
                count += 1;
                let on = (v * 4.0).round().clamp(-20.0, 400.0) as i128;
                sum += on;
                if let Some(i) = ["a", "b", "c"].iter().position(|c| *c == g) {
                    hist[i] += 1;
                    gsum[i] += on;
                }
            }
        }
        let stats = [
            Statistic {
                kind: StatKind::Count,
                grid: 0,
            },
            Statistic {
                kind: StatKind::Sum { column: "v".into() },
                grid: -2,
            },
            Statistic {
                kind: StatKind::GroupedCount { by: "g".into() },
                grid: 0,
            },
            Statistic {
                kind: StatKind::GroupedSum {
                    by: "g".into(),
                    column: "v".into(),
                },
                grid: -2,
            },
        ];
        let mut rng = SecureRng::from_seed_for_tests(5);
        let out = CsvEngine
            .aggregate_reader(&ds, csv.as_bytes(), &stats, &mut rng)
            .unwrap();
        assert_eq!(out[0], vec![count]);
        assert_eq!(out[1], vec![sum]);
        assert_eq!(out[2], hist.to_vec());
        assert_eq!(out[3], gsum.to_vec());
    }

    #[test]
    fn a_heavy_unit_keeps_rows_per_unit_rows() {
        let ds = dataset(3, "");
        let mut csv = String::from("uid,g,v,w\n");
        for i in 0..70_000 {
            csv.push_str(&format!("bot,a,{},1\n", i % 7));
        }
        csv.push_str("other,b,1,1\n");
        let stats = [
            Statistic {
                kind: StatKind::Count,
                grid: 0,
            },
            Statistic {
                kind: StatKind::Sum { column: "v".into() },
                grid: 0,
            },
        ];
        let mut rng = SecureRng::from_seed_for_tests(6);
        let out = CsvEngine
            .aggregate_reader(&ds, csv.as_bytes(), &stats, &mut rng)
            .unwrap();
        assert_eq!(out[0], vec![4]);
        assert!(out[1][0] >= 1 && out[1][0] <= 1 + 3 * 6, "{:?}", out[1]);
    }

    #[test]
    fn unused_numbers_are_checked_only_when_invalid_rows_are_dropped() {
        // `w` is not summed: an invalid `w` drops the row, unless clamping
        let mut csv = String::from("uid,g,v,w\n");
        csv.push_str("u1,a,1,1\nu2,a,1,oops\nu3,a,1,2.5\nu4,a,1,\n");
        let stats = [Statistic {
            kind: StatKind::Count,
            grid: 0,
        }];
        let mut rng = SecureRng::from_seed_for_tests(8);
        let drop = dataset(1, "");
        let out = CsvEngine
            .aggregate_reader(&drop, csv.as_bytes(), &stats, &mut rng)
            .unwrap();
        assert_eq!(out[0], vec![1]);
        let mut clamp = dataset(1, "");
        clamp.invalid_rows = dpplan_vocab::InvalidRule::Clamp;
        let out = CsvEngine
            .aggregate_reader(&clamp, csv.as_bytes(), &stats, &mut rng)
            .unwrap();
        assert_eq!(out[0], vec![4]);
    }

    /// A data file that cannot be opened or read: the message names the
    /// file and the dataset, and the OS's or CSV reader's error is kept as
    /// the source.
    #[test]
    fn io_errors_keep_their_cause() {
        use std::error::Error;
        let ds = dataset(3, "");
        let stats = [Statistic {
            kind: StatKind::Count,
            grid: 0,
        }];
        let mut rng = SecureRng::from_seed_for_tests(1);
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.csv");
        let e = CsvEngine
            .aggregate(&ds, &missing, &stats, &mut rng)
            .unwrap_err();
        let os = std::fs::File::open(&missing).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("cannot open `{}` for dataset `d`: {os}", missing.display())
        );
        let cause = e
            .source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .unwrap();
        assert_eq!(cause.kind(), std::io::ErrorKind::NotFound);
        // a directory: refused without an underlying error
        let e = CsvEngine
            .aggregate(&ds, dir.path(), &stats, &mut rng)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot open `{}` for dataset `d`: it is a directory, not a CSV file",
                dir.path().display()
            )
        );
        assert!(e.source().is_none());
        // a read that fails half-way
        struct Broken(bool);
        impl Read for Broken {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if std::mem::replace(&mut self.0, true) {
                    return Err(std::io::Error::other("the disk went away"));
                }
                let head = b"uid,g,v,w\nu1,a,1,1\n";
                buf[..head.len()].copy_from_slice(head);
                Ok(head.len())
            }
        }
        let e = CsvEngine
            .aggregate_reader(&ds, Broken(false), &stats, &mut rng)
            .unwrap_err();
        assert!(matches!(e, EngineError::Io(_)));
        assert_eq!(
            e.to_string(),
            "cannot read the CSV of dataset `d`: the disk went away"
        );
        let cause = e.source().unwrap().downcast_ref::<csv::Error>().unwrap();
        assert_eq!(cause.to_string(), "the disk went away");
    }
}
