//! Parquet and Arrow IPC sources through the embedded engine: the same
//! plans and data as CSV and as Parquet / Arrow give the same exact
//! aggregates (every shipped example, row- and user-level, one and every
//! thread; hostile values; dictionary and plain encodings; several row
//! groups; a directory of parts), and a type the plan does not declare is
//! refused naming the column and both types.

use std::fs::File;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder, TimestampSecondBuilder};
use arrow_array::{Array, ArrayRef, ListArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, Engine, EngineError, StatKind, Statistic};
use dpplan_plan::{Dataset, ExecutablePlan};
use dpplan_vocab::ColumnKind;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

fn compile(text: &str) -> ExecutablePlan {
    dpplan_compile::compile(text).unwrap_or_else(|e| panic!("{e}"))
}

/// How a converted file is written.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Parquet, dictionary-encoded strings, row groups of 1,000 rows.
    ParquetDictionary,
    /// Parquet, plain encoding, row groups of 97 rows, zstd.
    ParquetPlain,
    /// The Arrow IPC file format, batches of 500 rows.
    ArrowFile,
}

/// The CSV `csv` as typed columns of the dataset's declared columns that
/// its header has: id and category as strings, int as Int64, float as
/// Float64, time as a UTC timestamp in seconds; a field that does not
/// parse as its type is a null (as a CSV's unparsable field is invalid).
fn typed_batch(ds: &Dataset, csv: &Path) -> RecordBatch {
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(csv)
        .unwrap();
    let header = rdr.byte_headers().unwrap().clone();
    let records: Vec<csv::ByteRecord> = rdr.byte_records().map(Result::unwrap).collect();
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for col in &ds.columns {
        let Some(i) = header.iter().position(|h| h == col.name.as_bytes()) else {
            continue;
        };
        let text = |r: &csv::ByteRecord| r.get(i).map(|f| String::from_utf8_lossy(f).into_owned());
        let (ty, array): (DataType, ArrayRef) = match col.ty {
            ColumnKind::Id | ColumnKind::Category => {
                let mut b = StringBuilder::new();
                for r in &records {
                    match text(r) {
                        // an empty CSV field and a null are the same to the engine
                        Some(s) if !s.is_empty() => b.append_value(s),
                        _ => b.append_null(),
                    }
                }
                (DataType::Utf8, Arc::new(b.finish()))
            }
            ColumnKind::Int => {
                let mut b = Int64Builder::new();
                for r in &records {
                    let v = text(r).and_then(|s| s.trim().parse::<f64>().ok());
                    match v {
                        Some(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => b.append_value(v as i64),
                        _ => b.append_null(),
                    }
                }
                (DataType::Int64, Arc::new(b.finish()))
            }
            ColumnKind::Float => {
                let mut b = Float64Builder::new();
                for r in &records {
                    match text(r).and_then(|s| s.trim().parse::<f64>().ok()) {
                        Some(v) => b.append_value(v),
                        None => b.append_null(),
                    }
                }
                (DataType::Float64, Arc::new(b.finish()))
            }
            ColumnKind::Time => {
                let mut b = TimestampSecondBuilder::new().with_timezone("UTC");
                for r in &records {
                    match r.get(i).and_then(dpplan_runtime::window::parse_time) {
                        Some(t) => b.append_value(t),
                        None => b.append_null(),
                    }
                }
                (
                    DataType::Timestamp(TimeUnit::Second, Some("UTC".into())),
                    Arc::new(b.finish()),
                )
            }
        };
        fields.push(Field::new(&col.name, ty, true));
        columns.push(array);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// Writes `batch` to `out` in `layout`.
fn write(batch: &RecordBatch, out: &Path, layout: Layout) {
    let file = File::create(out).unwrap();
    match layout {
        Layout::ParquetDictionary | Layout::ParquetPlain => {
            let props = match layout {
                Layout::ParquetDictionary => WriterProperties::builder()
                    .set_dictionary_enabled(true)
                    .set_max_row_group_row_count(Some(1000)),
                _ => WriterProperties::builder()
                    .set_dictionary_enabled(false)
                    .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
                    .set_max_row_group_row_count(Some(97)),
            }
            .build();
            let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
            w.write(batch).unwrap();
            w.close().unwrap();
        }
        Layout::ArrowFile => {
            let mut w = arrow_ipc::writer::FileWriter::try_new(file, &batch.schema()).unwrap();
            let mut start = 0;
            while start < batch.num_rows() {
                let n = 500.min(batch.num_rows() - start);
                w.write(&batch.slice(start, n)).unwrap();
                start += n;
            }
            w.finish().unwrap();
        }
    }
}

fn extension(layout: Layout) -> &'static str {
    match layout {
        Layout::ParquetDictionary | Layout::ParquetPlain => "parquet",
        Layout::ArrowFile => "arrow",
    }
}

const LAYOUTS: [Layout; 3] = [
    Layout::ParquetDictionary,
    Layout::ParquetPlain,
    Layout::ArrowFile,
];

/// Every shipped example with its plan: (name, directory, compiled plan),
/// in name order.
fn example_plans() -> Vec<(String, PathBuf, ExecutablePlan)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|dir| {
            let name = dir.file_name()?.to_string_lossy().into_owned();
            let text = std::fs::read_to_string(dir.join(format!("{name}.dpplan"))).ok()?;
            Some((name, dir, compile(&text)))
        })
        .collect()
}

/// The same statistics on the CSV and on each conversion, on one and on
/// two threads, with the same seed: the rows arrive in the same order,
/// so even the user-level bounding's random choices are the same. (On two
/// threads the random choices also follow where the text is cut into
/// blocks, and the converted text is not the CSV's byte for byte — `3.0`
/// in an int column is written `3` — so under a user-level unit the
/// blocks are made larger than either text; row-level aggregates, which
/// draw nothing, are compared with blocks of 4 KiB.)
fn assert_same(ds: &Dataset, csv: &Path, stats: &[Statistic], dir: &Path, what: &str) {
    let batch = typed_batch(ds, csv);
    for threads in [1, 2] {
        let block = if ds.bounding.per_unit { 1 << 30 } else { 4096 };
        let engine = CsvEngine
            .threads(NonZeroUsize::new(threads).unwrap())
            .block_size(block);
        let want = engine
            .aggregate(ds, csv, stats, &mut SecureRng::from_seed_for_tests(7))
            .unwrap_or_else(|e| panic!("{what}: CSV: {e}"));
        for layout in LAYOUTS {
            let out = dir.join(format!("{}-{layout:?}.{}", ds.name, extension(layout)));
            write(&batch, &out, layout);
            let got = engine
                .aggregate(ds, &out, stats, &mut SecureRng::from_seed_for_tests(7))
                .unwrap_or_else(|e| panic!("{what}: {layout:?}: {e}"));
            assert_eq!(got, want, "{what}: {layout:?} on {threads} threads");
        }
        // the same batches held in memory (what `dpplan.run` hands over),
        // in slices of 500 rows as the Arrow file's
        let slices: Vec<RecordBatch> = (0..batch.num_rows())
            .step_by(500)
            .map(|at| batch.slice(at, 500.min(batch.num_rows() - at)))
            .collect();
        let held = dpplan_engine::memory::MemorySource::register(batch.schema(), slices);
        let got = engine
            .aggregate(
                ds,
                held.path(),
                stats,
                &mut SecureRng::from_seed_for_tests(7),
            )
            .unwrap_or_else(|e| panic!("{what}: in memory: {e}"));
        assert_eq!(got, want, "{what}: in memory on {threads} threads");
    }
}

#[test]
fn every_example_gives_the_same_exact_aggregates_from_parquet_and_arrow() {
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (name, dir, plan) in example_plans() {
        let opts = dpplan_runtime::RunOptions {
            base_dir: Some(dir.clone()),
            ..Default::default()
        };
        // a plan with a cumulative count is run slot by slot: its other
        // releases are checked one by one below
        let planned = match dpplan_runtime::planned_aggregates(&plan, &opts) {
            Ok(p) => p,
            Err(_) => {
                let mut all = Vec::new();
                for r in plan.body.releases.iter().filter(|r| r.cumulative.is_none()) {
                    let opts = dpplan_runtime::RunOptions {
                        queries: vec![r.name.clone()],
                        ..opts.clone()
                    };
                    all.extend(dpplan_runtime::planned_aggregates(&plan, &opts).unwrap());
                }
                all
            }
        };
        for (ds, source, stats) in planned {
            if !source.exists() || stats.is_empty() {
                continue;
            }
            let out = tmp.path().join(&name);
            std::fs::create_dir_all(&out).unwrap();
            assert_same(ds, &source, &stats, &out, &format!("{name}/{}", ds.name));
            if ds.bounding.per_unit {
                let mut row = ds.clone();
                row.bounding.per_unit = false;
                // (the engine samples the units of a user-level unit only:
                // the rows of a sampled dataset, unsampled)
                row.sample = None;
                // (users per cell count units: user-level only)
                let stats: Vec<Statistic> = stats
                    .iter()
                    .filter(|s| !matches!(s.kind.unfiltered(), StatKind::UnitsPerCell { .. }))
                    .cloned()
                    .collect();
                assert_same(
                    &row,
                    &source,
                    &stats,
                    &out,
                    &format!("{name}/{} (rows)", ds.name),
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} example datasets with data");
}

/// Users per cell from Parquet and Arrow as from CSV: the corpus plan's
/// grouped distinct counts (a category, a filter with bins) on riders with
/// several rows in several cities, groups_per_unit binding.
#[test]
fn users_per_cell_are_the_same_from_parquet_and_arrow() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/users-per-cell.dpplan"),
    )
    .unwrap();
    let plan = compile(&text);
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("trips.csv");
    let mut s = String::from("rider_id,city,fare,started_at\n");
    let cities = ["Madrid", "Lisbon", "Porto", "Paris"];
    for u in 0..300u64 {
        for k in 0..(1 + u % 6) {
            let city = cities[((u * 7 + k * 3) % 4) as usize];
            let fare = if (u + k) % 17 == 0 {
                "NaN".to_string()
            } else {
                format!("{}", (u * 13 + k * 5) % 90)
            };
            s.push_str(&format!(
                "r{u},{city},{fare},2026-03-0{}T10:00:00Z\n",
                1 + k % 3
            ));
        }
    }
    std::fs::write(&csv, s).unwrap();
    let mut opts = dpplan_runtime::RunOptions::default();
    opts.data.insert("trips".into(), csv.clone());
    opts.queries = vec!["riders_by_city".into(), "riders_by_city_and_fare".into()];
    let mut seen = 0;
    for (ds, source, stats) in dpplan_runtime::planned_aggregates(&plan, &opts).unwrap() {
        assert!(stats
            .iter()
            .all(|s| matches!(s.kind.unfiltered(), StatKind::UnitsPerCell { .. })));
        seen += stats.len();
        assert_same(ds, &source, &stats, tmp.path(), "users per cell");
    }
    assert_eq!(seen, 2);
}

const HOSTILE_PLAN: &str = r#"plan "t" {
  privacy { unit user by uid adjacency add_remove budget epsilon 20 delta 1e-6 }
  dataset d {
    source "d.csv"
    column uid : id
    column g : category { "a", "b,c", "q\"uote", "line\nbreak" }
    column v : float in [-5, 100]
    column w : int in [0, 10]
    INVALID
    contribution { rows_per_unit 3 groups_per_unit 2 rows_per_group 2 }
  }
  query s { sum(d.v) noise laplace scale 100 schedule once }
}"#;

fn stat(kind: StatKind, grid: i32) -> Statistic {
    Statistic { kind, grid }
}

/// NaN, ±∞, nulls, huge strings, quotes, commas and line breaks in
/// categories and ids, out-of-domain categories and fractional ints: the
/// CSV and the Parquet / Arrow files agree under both invalid-row rules.
#[test]
fn hostile_values_give_the_same_aggregates_as_the_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("d.csv");
    let mut text = String::from("uid,g,v,w,extra\n");
    let huge = "x".repeat(100_000);
    let gs = [
        "a",
        "\"b,c\"",
        "\"q\"\"uote\"",
        "\"line\nbreak\"",
        "zzz",
        "",
        "A",
    ];
    let vs = [
        "1.5", "NaN", "inf", "-inf", "", "1e308", "-7", "99.25", "0.1", "5e-324",
    ];
    let ws = ["3", "4.5", "", "11", "-1", "7", "3.0"];
    for i in 0..3000 {
        let uid = match i % 11 {
            0 => format!("\"u,{}\"", i % 97),
            1 => huge.clone(),
            _ => format!("u{}", i % 313),
        };
        text.push_str(&format!(
            "{uid},{},{},{},junk\n",
            gs[i % gs.len()],
            vs[i % vs.len()],
            ws[i % ws.len()]
        ));
    }
    std::fs::write(&csv, &text).unwrap();
    let stats = vec![
        stat(StatKind::Count, 0),
        stat(StatKind::Sum { column: "v".into() }, -20),
        stat(StatKind::Sum { column: "w".into() }, 0),
        stat(StatKind::GroupedCount { by: "g".into() }, 0),
        stat(
            StatKind::GroupedSum {
                by: "g".into(),
                column: "v".into(),
            },
            -10,
        ),
        stat(
            StatKind::Distinct {
                column: "uid".into(),
            },
            0,
        ),
    ];
    for invalid in ["", "invalid_rows clamp"] {
        let ds = compile(&HOSTILE_PLAN.replace("INVALID", invalid))
            .body
            .datasets["d"]
            .clone();
        assert_same(
            &ds,
            &csv,
            &stats,
            tmp.path(),
            &format!("hostile, `{invalid}`"),
        );
        let mut row = ds.clone();
        row.bounding.per_unit = false;
        assert_same(
            &row,
            &csv,
            &stats,
            tmp.path(),
            &format!("hostile rows, `{invalid}`"),
        );
    }
}

/// A plan's own `source` never names an in-memory table, even a held one
/// and even where the plan's directory is the empty path (a plan run as
/// `plan.json` from its own directory, where the join would leave the name
/// as it is): a table is given to its own run as data, and a plan must not
/// read one given to another run.
#[test]
fn a_plans_source_cannot_name_an_in_memory_table() {
    let held = dpplan_engine::memory::MemorySource::register(
        Arc::new(Schema::new(vec![Field::new("uid", DataType::Utf8, true)])),
        Vec::new(),
    );
    let mut ds = hostile_dataset();
    ds.source = Some(held.path().display().to_string());
    let opts = dpplan_runtime::RunOptions {
        base_dir: Some(PathBuf::new()),
        ..Default::default()
    };
    let e = dpplan_runtime::requests::source_path(&ds, &opts).unwrap_err();
    assert!(e.to_string().contains("names an in-memory table"), "{e}");
    // given as the run's data, the same name is the dataset's source
    let opts = dpplan_runtime::RunOptions {
        data: [(ds.name.clone(), held.path().to_path_buf())].into(),
        ..opts
    };
    assert_eq!(
        dpplan_runtime::requests::source_path(&ds, &opts).unwrap(),
        held.path()
    );
}

/// An in-memory name that no table holds (a `--data` of the binary, or a
/// table dropped) is refused naming what such a source is, before anything
/// is read.
#[test]
fn an_in_memory_name_without_its_table_is_refused() {
    let ds = hostile_dataset();
    let stats = vec![stat(StatKind::Count, 0)];
    let held = dpplan_engine::memory::MemorySource::register(
        Arc::new(Schema::new(vec![Field::new("uid", DataType::Utf8, true)])),
        Vec::new(),
    );
    let path = held.path().to_path_buf();
    drop(held);
    let msg = refusal(&ds, &path, &stats);
    assert!(
        msg.contains("no table of that name is held in memory"),
        "{msg}"
    );
    assert!(msg.contains("dpplan.run"), "{msg}");
}

/// The error of aggregating `path`, as the CLI prints it.
fn refusal(ds: &Dataset, path: &Path, stats: &[Statistic]) -> String {
    CsvEngine
        .aggregate(ds, path, stats, &mut SecureRng::from_seed_for_tests(1))
        .unwrap_err()
        .to_string()
}

fn hostile_dataset() -> Dataset {
    compile(&HOSTILE_PLAN.replace("INVALID", "")).body.datasets["d"].clone()
}

fn write_batch(path: &Path, fields: Vec<Field>, columns: Vec<ArrayRef>) {
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap();
    write(&batch, path, Layout::ParquetDictionary);
}

fn uids(n: usize) -> ArrayRef {
    let mut b = StringBuilder::new();
    for i in 0..n {
        b.append_value(format!("u{i}"));
    }
    Arc::new(b.finish())
}

/// The dataset's other declared columns, `g` and `v`, for `n` rows.
fn g_and_v(n: usize) -> (Vec<Field>, Vec<ArrayRef>) {
    let mut g = StringBuilder::new();
    let mut v = Float64Builder::new();
    for _ in 0..n {
        g.append_value("a");
        v.append_value(1.0);
    }
    (
        vec![
            Field::new("g", DataType::Utf8, true),
            Field::new("v", DataType::Float64, true),
        ],
        vec![Arc::new(g.finish()), Arc::new(v.finish())],
    )
}

#[test]
fn a_type_the_plan_does_not_declare_is_refused_naming_the_column_and_both_types() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = hostile_dataset();
    let stats = vec![stat(StatKind::Sum { column: "w".into() }, 0)];
    // an int column stored as a float
    let path = tmp.path().join("float-int.parquet");
    let mut w = Float64Builder::new();
    w.append_value(1.0);
    let (mut fields, mut columns) = g_and_v(1);
    fields.extend([
        Field::new("uid", DataType::Utf8, false),
        Field::new("w", DataType::Float64, true),
    ]);
    columns.extend([uids(1), Arc::new(w.finish()) as ArrayRef]);
    write_batch(&path, fields, columns);
    let e = CsvEngine
        .aggregate(&ds, &path, &stats, &mut SecureRng::from_seed_for_tests(1))
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, EngineError::Schema(_)), "{msg}");
    for part in ["`w`", "`d`", "Float64", "`int`", "float-int.parquet"] {
        assert!(msg.contains(part), "{part} missing from: {msg}");
    }
    // a nested column
    let path = tmp.path().join("nested.parquet");
    let list =
        ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(vec![Some(vec![
            Some(1),
            Some(2),
        ])]);
    let (mut fields, mut columns) = g_and_v(1);
    fields.extend([
        Field::new("uid", DataType::Utf8, false),
        Field::new("w", list.data_type().clone(), true),
    ]);
    columns.extend([uids(1), Arc::new(list) as ArrayRef]);
    write_batch(&path, fields, columns);
    let msg = refusal(&ds, &path, &stats);
    assert!(msg.contains("nested") && msg.contains("`w`"), "{msg}");
    // negative control: the same column as Int64 is read
    let path = tmp.path().join("int.parquet");
    let mut w = Int64Builder::new();
    w.append_value(4);
    let (mut fields, mut columns) = g_and_v(1);
    fields.extend([
        Field::new("uid", DataType::Utf8, false),
        Field::new("w", DataType::Int64, true),
    ]);
    columns.extend([uids(1), Arc::new(w.finish()) as ArrayRef]);
    write_batch(&path, fields, columns);
    let got = CsvEngine
        .aggregate(&ds, &path, &stats, &mut SecureRng::from_seed_for_tests(1))
        .unwrap();
    assert_eq!(got, vec![vec![4]]);
    // and as the narrower integer types, an unsigned `w` and an Int32 id
    let path = tmp.path().join("narrow.parquet");
    let (mut fields, mut columns) = g_and_v(2);
    fields.extend([
        Field::new("uid", DataType::Int32, false),
        Field::new("w", DataType::UInt8, true),
    ]);
    columns.extend([
        Arc::new(arrow_array::Int32Array::from(vec![-7, 2_000_000_000])) as ArrayRef,
        Arc::new(arrow_array::UInt8Array::from(vec![4, 250])) as ArrayRef,
    ]);
    write_batch(&path, fields, columns);
    let got = CsvEngine
        .aggregate(&ds, &path, &stats, &mut SecureRng::from_seed_for_tests(1))
        .unwrap();
    // 250 clamped to the declared bound 10
    assert_eq!(got, vec![vec![14]]);
    // a declared column missing from the file: the CSV engine's error
    let path = tmp.path().join("missing.parquet");
    let (mut fields, mut columns) = g_and_v(1);
    fields.push(Field::new("uid", DataType::Utf8, false));
    columns.push(uids(1));
    write_batch(&path, fields, columns);
    let msg = refusal(&ds, &path, &stats);
    assert!(
        msg.contains("column `w` of dataset `d` is missing from")
            && msg.contains("missing.parquet"),
        "{msg}"
    );
    // not a Parquet file at all
    let path = tmp.path().join("text.parquet");
    std::fs::write(&path, "uid,w\nu1,4\n").unwrap();
    let msg = refusal(&ds, &path, &stats);
    assert!(
        msg.contains("not a readable Parquet file") && msg.contains("`d`"),
        "{msg}"
    );
}

/// A directory of parts (as Spark writes it: `part-*.parquet`, `_SUCCESS`,
/// checksums) is read as its parts in name order: the same aggregates as
/// the whole CSV, whatever each part's column order; a part without a
/// declared column is refused, naming it.
#[test]
fn a_directory_of_parts_is_read_in_name_order() {
    let tmp = tempfile::tempdir().unwrap();
    let ds = hostile_dataset();
    let csv = tmp.path().join("d.csv");
    let mut text = String::from("uid,g,v,w\n");
    for i in 0..2000 {
        text.push_str(&format!("u{},a,{}.25,{}\n", i % 37, i % 90, i % 11));
    }
    std::fs::write(&csv, &text).unwrap();
    let batch = typed_batch(&ds, &csv);
    let parts = tmp.path().join("lake.parquet");
    std::fs::create_dir(&parts).unwrap();
    let mut start = 0;
    for (k, n) in [700, 1, 1299].into_iter().enumerate() {
        write(
            &batch.slice(start, n),
            &parts.join(format!("part-{k:05}-x.snappy.parquet")),
            Layout::ParquetPlain,
        );
        start += n;
    }
    std::fs::write(parts.join("_SUCCESS"), "").unwrap();
    std::fs::write(parts.join(".part-00000-x.snappy.parquet.crc"), "junk").unwrap();
    let stats = vec![
        stat(StatKind::Count, 0),
        stat(StatKind::Sum { column: "v".into() }, -4),
    ];
    for per_unit in [true, false] {
        let mut d = ds.clone();
        d.bounding.per_unit = per_unit;
        let want = CsvEngine
            .aggregate(&d, &csv, &stats, &mut SecureRng::from_seed_for_tests(3))
            .unwrap();
        let got = CsvEngine
            .aggregate(&d, &parts, &stats, &mut SecureRng::from_seed_for_tests(3))
            .unwrap();
        assert_eq!(got, want, "per unit: {per_unit}");
    }
    // a part with its columns in another order is read by name
    let mut g = StringBuilder::new();
    let mut v = Float64Builder::new();
    let mut w = Int64Builder::new();
    for _ in 0..5 {
        g.append_value("a");
        v.append_value(2.5);
        w.append_value(1);
    }
    write_batch(
        &parts.join("part-00003-z.parquet"),
        vec![
            Field::new("w", DataType::Int64, true),
            Field::new("v", DataType::Float64, true),
            Field::new("g", DataType::Utf8, true),
            Field::new("uid", DataType::Utf8, false),
        ],
        vec![
            Arc::new(w.finish()),
            Arc::new(v.finish()),
            Arc::new(g.finish()),
            uids(5),
        ],
    );
    let mut d = ds.clone();
    d.bounding.per_unit = false;
    let before = CsvEngine
        .aggregate(&d, &csv, &stats, &mut SecureRng::from_seed_for_tests(3))
        .unwrap();
    let got = CsvEngine
        .aggregate(&d, &parts, &stats, &mut SecureRng::from_seed_for_tests(3))
        .unwrap();
    // five more rows, each v = 2.5 = 40 on the grid 2^-4
    assert_eq!(got, vec![vec![before[0][0] + 5], vec![before[1][0] + 200]]);
    // a subdirectory (a partitioned dataset) and a stray file are refused,
    // never left unread
    for (what, make) in [
        ("subdirectory `year=2026`", true),
        ("`notes.txt`, which is not", false),
    ] {
        let lake = tmp.path().join(format!("lake-{make}.parquet"));
        std::fs::create_dir(&lake).unwrap();
        std::fs::copy(
            parts.join("part-00000-x.snappy.parquet"),
            lake.join("part-0.parquet"),
        )
        .unwrap();
        if make {
            std::fs::create_dir(lake.join("year=2026")).unwrap();
        } else {
            std::fs::write(lake.join("notes.txt"), "x").unwrap();
        }
        let msg = refusal(&ds, &lake, &stats);
        assert!(msg.contains(what), "{msg}");
    }
    // a part without `v`
    write_batch(
        &parts.join("part-00009-y.parquet"),
        vec![Field::new("uid", DataType::Utf8, false)],
        vec![uids(3)],
    );
    let msg = refusal(&ds, &parts, &stats);
    assert!(
        msg.contains("is missing from") && msg.contains("part-00009-y.parquet"),
        "{msg}"
    );
}

/// Every shipped example runs end to end with each dataset's CSV replaced
/// by its Parquet conversion (and, for one in three, its Arrow IPC file):
/// the same releases as on the CSV, nothing refused — windows, cumulative
/// counts, keys from the data and quantiles included, since every reader
/// of a source goes through the same bridge.
#[test]
fn every_example_runs_on_parquet_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ran = Vec::new();
    for (k, (name, dir, plan)) in example_plans().into_iter().enumerate() {
        let base = dpplan_runtime::RunOptions {
            base_dir: Some(dir.clone()),
            slot: Some(0),
            start: Some(dpplan_runtime::ledger::now_unix() - 7 * 86_400),
            ..Default::default()
        };
        let layout = if k % 3 == 2 {
            Layout::ArrowFile
        } else {
            Layout::ParquetDictionary
        };
        let mut data = std::collections::BTreeMap::new();
        for (ds_name, ds) in &plan.body.datasets {
            let Ok(csv) = dpplan_runtime::requests::source_path(ds, &base) else {
                continue;
            };
            if !csv.is_file() {
                continue;
            }
            let out = tmp
                .path()
                .join(format!("{name}-{ds_name}.{}", extension(layout)));
            write(&typed_batch(ds, &csv), &out, layout);
            data.insert(ds_name.clone(), out);
        }
        if data.is_empty() {
            continue;
        }
        let run = |data: std::collections::BTreeMap<String, PathBuf>, ledger: &str| {
            let o = dpplan_runtime::RunOptions {
                data,
                ledger: tmp.path().join(ledger),
                ..base.clone()
            };
            dpplan_runtime::run(&plan, &o, &CsvEngine)
        };
        let Ok(on_csv) = run(Default::default(), &format!("{name}-csv.sqlite")) else {
            // an example that needs more than a slot to run (none today)
            continue;
        };
        let on_columnar = run(data, &format!("{name}-columnar.sqlite"))
            .unwrap_or_else(|e| panic!("{name} on {layout:?}: {e}"));
        // fresh releases only: a `publish … when` follows the noise
        let key = |out: &dpplan_runtime::RunOutput| -> Vec<(String, usize)> {
            out.results
                .iter()
                .filter(|r| r.origin == dpplan_runtime::Origin::Fresh)
                .map(|r| (r.query.clone(), r.cells.len()))
                .collect()
        };
        assert!(
            on_columnar.refused.is_empty(),
            "{name}: {:?}",
            on_columnar.refused
        );
        // keys from the data: which keys pass depends on the noise
        let keyed = plan
            .body
            .releases
            .iter()
            .any(|r| r.aggregation.selection.is_some());
        if keyed {
            let fresh = |out: &dpplan_runtime::RunOutput| key(out).len();
            assert_eq!(fresh(&on_columnar), fresh(&on_csv), "{name}");
        } else {
            assert_eq!(key(&on_columnar), key(&on_csv), "{name} on {layout:?}");
        }
        ran.push(name);
    }
    assert!(ran.len() >= 9, "only {ran:?} ran");
}

const TYPED_PLAN: &str = r#"plan "t" {
  privacy { unit user by uid adjacency add_remove budget epsilon 20 delta 1e-6 }
  dataset d {
    source "d.parquet"
    column uid : id
    column g : category { "1", "2", "3", "true", "a" }
    column v : float in [-5, 100]
    column w : int in [0, 10]
    INVALID
    contribution { rows_per_unit 3 groups_per_unit 2 rows_per_group 2 }
  }
  query s { sum(d.v) noise laplace scale 100 schedule once }
}"#;

/// `values` (`None`: a null) as a Float64 array cast to `ty`.
fn floats_as(values: &[Option<f64>], ty: &DataType) -> ArrayRef {
    let a: ArrayRef = Arc::new(arrow_array::Float64Array::from(values.to_vec()));
    arrow_cast::cast(&a, ty).unwrap()
}

/// `values` as an Int64 array cast to `ty` (a string type: their decimal
/// text; a boolean: non-zero is true).
fn ints_as(values: &[Option<i64>], ty: &DataType) -> ArrayRef {
    let a: ArrayRef = Arc::new(arrow_array::Int64Array::from(values.to_vec()));
    arrow_cast::cast(&a, ty).unwrap()
}

/// The native reading of a Parquet or Arrow file and the bridge's (its
/// CSV text through the CSV engine) give the same exact aggregates for
/// every Arrow type a declared column accepts: integer, unsigned and
/// boolean ids and categories (read as the bridge's text), Float16 and
/// Float32 values with NaN and ±∞, integers and decimals (negative scale
/// too) as numbers, string views and dictionaries; nulls everywhere; under
/// both invalid-row rules, row- and user-level, one and two threads, with
/// `in` sets and comparisons.
#[test]
fn every_accepted_arrow_type_reads_natively_as_through_the_bridge() {
    use DataType as D;
    let tmp = tempfile::tempdir().unwrap();
    let n = 2000;
    let uid: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 37 != 0).then_some((i as i64 * 7) % 211))
        .collect();
    let g: Vec<Option<i64>> = (0..n)
        .map(|i| [Some(1), Some(2), Some(3), None, Some(7), Some(0)][i % 6])
        .collect();
    let hostile = [
        Some(1.5),
        Some(f64::NAN),
        Some(f64::INFINITY),
        Some(f64::NEG_INFINITY),
        None,
        Some(1e308),
        Some(-7.0),
        Some(99.25),
        Some(0.1),
        Some(5e-324),
        Some(-0.0),
        Some(42.0),
    ];
    let v: Vec<Option<f64>> = (0..n).map(|i| hostile[i % hostile.len()]).collect();
    let v_int: Vec<Option<i64>> = (0..n)
        .map(|i| [Some(3), None, Some(200), Some(-9), Some(0), Some(77)][i % 6])
        .collect();
    let w: Vec<Option<i64>> = (0..n)
        .map(|i| {
            [
                Some(3),
                None,
                Some(11),
                Some(-1),
                Some(7),
                Some(0),
                Some(10),
            ][i % 7]
        })
        .collect();
    let w_tens: Vec<Option<i64>> = (0..n)
        .map(|i| [Some(0), Some(1), None, Some(2)][i % 4])
        .collect();
    let dict = D::Dictionary(Box::new(D::Int16), Box::new(D::Utf8));
    let dec = |p, s| D::Decimal128(p, s);
    // (name, [uid, g, v, w] arrays, written as Parquet too)
    let variants: Vec<(&str, [ArrayRef; 4], bool)> = vec![
        (
            "int ids, float32, int8",
            [
                ints_as(&uid, &D::Int64),
                ints_as(&g, &D::Int64),
                floats_as(&v, &D::Float32),
                ints_as(&w, &D::Int8),
            ],
            true,
        ),
        (
            "unsigned, float16, uint32",
            [
                ints_as(
                    &uid.iter().map(|x| x.map(|x| x + 1)).collect::<Vec<_>>(),
                    &D::UInt64,
                ),
                ints_as(&g, &D::UInt8),
                floats_as(&v, &D::Float16),
                ints_as(
                    &w.iter().map(|x| x.map(i64::abs)).collect::<Vec<_>>(),
                    &D::UInt32,
                ),
            ],
            true,
        ),
        (
            "dictionary, decimals",
            [
                ints_as(&uid, &dict),
                ints_as(&g, &dict),
                ints_as(&v_int, &dec(12, 4)),
                ints_as(&w, &dec(6, 0)),
            ],
            true,
        ),
        (
            "views, booleans, integer floats, negative scale",
            [
                ints_as(&uid, &D::Utf8View),
                ints_as(&g, &D::Boolean),
                ints_as(&v_int, &D::Int32),
                ints_as(&w_tens, &dec(6, -1)),
            ],
            false,
        ),
        (
            "large strings, float64, int64",
            [
                ints_as(&uid, &D::LargeUtf8),
                ints_as(&g, &D::LargeUtf8),
                floats_as(&v, &D::Float64),
                ints_as(&w, &D::Int64),
            ],
            true,
        ),
    ];
    let filters = [
        None,
        Some(dpplan_vocab::rows::Filter::In {
            column: "g".into(),
            values: vec!["1".into(), "true".into()],
        }),
        Some(dpplan_vocab::rows::Filter::Compare {
            column: "v".into(),
            cmp: dpplan_vocab::Comparison::Gt,
            value: 2.5,
        }),
    ];
    let mut compared = 0;
    for (what, arrays, parquet) in variants {
        let fields: Vec<Field> = ["uid", "g", "v", "w"]
            .iter()
            .zip(&arrays)
            .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
            .collect();
        let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays.to_vec()).unwrap();
        let mut layouts = vec![Layout::ArrowFile];
        if parquet {
            layouts.extend([Layout::ParquetDictionary, Layout::ParquetPlain]);
        }
        for layout in layouts {
            let path = tmp.path().join(format!("d.{}", extension(layout)));
            write(&batch, &path, layout);
            for invalid in ["", "invalid_rows clamp"] {
                let ds = compile(&TYPED_PLAN.replace("INVALID", invalid))
                    .body
                    .datasets["d"]
                    .clone();
                let mut rows = ds.clone();
                rows.bounding.per_unit = false;
                for ds in [&ds, &rows] {
                    for filter in &filters {
                        let of = |kind: StatKind| match filter {
                            Some(f) => StatKind::Where {
                                filter: f.clone(),
                                of: Box::new(kind),
                            },
                            None => kind,
                        };
                        let stats = vec![
                            stat(of(StatKind::Count), 0),
                            stat(of(StatKind::Sum { column: "v".into() }), -20),
                            stat(of(StatKind::Sum { column: "w".into() }), 0),
                            stat(of(StatKind::GroupedCount { by: "g".into() }), 0),
                            stat(
                                of(StatKind::GroupedSum {
                                    by: "g".into(),
                                    column: "v".into(),
                                }),
                                -10,
                            ),
                            stat(
                                of(StatKind::Distinct {
                                    column: "uid".into(),
                                }),
                                0,
                            ),
                        ];
                        for threads in [1, 2] {
                            let block = if ds.bounding.per_unit { 1 << 30 } else { 512 };
                            let engine = CsvEngine
                                .threads(NonZeroUsize::new(threads).unwrap())
                                .block_size(block);
                            let case = format!(
                                "{what}, {layout:?}, `{invalid}`, per unit {}, {filter:?}, {threads} threads",
                                ds.bounding.per_unit
                            );
                            let native = engine
                                .aggregate(
                                    ds,
                                    &path,
                                    &stats,
                                    &mut SecureRng::from_seed_for_tests(3),
                                )
                                .unwrap_or_else(|e| panic!("{case}: native: {e}"));
                            let text = dpplan_engine::open_source(ds, &path).unwrap();
                            let bridge = engine
                                .aggregate_reader(
                                    ds,
                                    text,
                                    &stats,
                                    &mut SecureRng::from_seed_for_tests(3),
                                )
                                .unwrap_or_else(|e| panic!("{case}: bridge: {e}"));
                            assert_eq!(native, bridge, "{case}");
                            // the data is not empty to the statistics
                            assert!(native[0][0] > 0, "{case}: nothing counted");
                            compared += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(compared, 13 * 2 * 2 * 3 * 2);
}
