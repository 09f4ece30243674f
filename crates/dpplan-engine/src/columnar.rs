//! Parquet and Arrow IPC sources: their schema checks, and the bridge that
//! reads them as CSV text of the declared columns.
//!
//! A `source` ending in `.parquet` (a file, or a directory of parts, as
//! Spark and most lake tools write them), `.arrow`, `.feather` or `.ipc`
//! (the Arrow IPC file format) or `.arrows` (the IPC stream format) is
//! decoded with Apache Arrow's own crates, projected to the declared
//! columns. The engine's aggregates read its rows natively
//! ([`crate::native`], on every core, no text); every other reader of a
//! source (a window's selection, keys from the data, the audit) reads it
//! through [`open_source`]: each value written as the text a CSV of the
//! same data holds, which the CSV engine then reads. The native rows are
//! defined as this text's values (and tested against it), so every
//! construct, every rule and every error of the CSV engine is the columnar
//! sources': the invalid-row rules (a null is an empty field; NaN and
//! ±∞ are written `NaN`, `inf`, `-inf` and treated as in a CSV), the grid
//! rounding (a float is written in the shortest text that reads back as
//! the same `f64`, so the value aggregated is the file's value, bit for
//! bit), the bounding, windows, trees, keys from the data, the audit.
//!
//! **Types.** The declared types are checked against the file's schema
//! before anything is read (hence before any charge): a mismatch is an
//! error naming the dataset, the column, the file's type and the plan's.
//! Accepted, as the Spark engine accepts them for typed sources:
//!
//! | declared | Arrow types |
//! |---|---|
//! | `id`, `category` | strings (`Utf8`, `LargeUtf8`, `Utf8View`, dictionaries of them), integers, booleans (`true`/`false`) |
//! | `int` | integers, decimals of scale ≤ 0 |
//! | `float` | integers, `Float16`/`Float32`/`Float64` (widened exactly), decimals |
//! | `time` | timestamps of any unit and time zone (UTC instants, floored to the second, as the CSV engine floors RFC 3339 fractions), `Date32`/`Date64` (midnight UTC), integers (Unix seconds, as in a CSV), strings (RFC 3339 text) |
//!
//! Nested types (lists, structs, maps, unions), binary columns and the
//! other temporal types are refused. Every declared column must be in the
//! file, as in a CSV's header. Columns the plan does not declare are never
//! decoded (Parquet's projection; IPC's).
//!
//! A directory is read as its `*.parquet` files in name order (files whose
//! name starts with `_` or `.`, such as Spark's `_SUCCESS` and checksums,
//! are skipped; any other file, and any subdirectory — a partitioned
//! dataset — is refused rather than left unread); each part's schema is checked on its own, and its
//! columns are written in the declared order whatever the part's own.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, Float16Type, Float32Type, Float64Type,
    Int64Type, TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Schema, TimeUnit};
use dpplan_plan::Dataset;
use dpplan_vocab::ColumnKind;

use crate::{EngineError, IoError};

/// The format of a source, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    Csv,
    /// A Parquet file or a directory of Parquet parts.
    Parquet,
    /// The Arrow IPC file format (`.arrow`, `.feather`, `.ipc`).
    ArrowFile,
    /// The Arrow IPC stream format (`.arrows`).
    ArrowStream,
    /// A table in this process's memory (`arrow-memory:<n>`,
    /// [`crate::memory`]): read as an Arrow IPC file's batches are.
    ArrowMemory,
}

impl SourceFormat {
    /// The format a source's name says (case-insensitive extension, a
    /// trailing `/` ignored); CSV for every other name.
    pub fn of(source: &Path) -> SourceFormat {
        if crate::memory::is_memory(source) {
            return SourceFormat::ArrowMemory;
        }
        let name = source.to_string_lossy().to_ascii_lowercase();
        let name = name.trim_end_matches('/');
        let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
        match ext {
            "parquet" | "parq" => SourceFormat::Parquet,
            "arrow" | "feather" | "ipc" => SourceFormat::ArrowFile,
            "arrows" => SourceFormat::ArrowStream,
            _ => SourceFormat::Csv,
        }
    }
}

/// Opens a dataset's source for reading as CSV: the file itself for a CSV,
/// the CSV text of its declared columns for Parquet and Arrow IPC (see the
/// module's documentation). Every schema check happens here, before a
/// byte is returned.
pub fn open_source(dataset: &Dataset, source: &Path) -> Result<Box<dyn Read + Send>, EngineError> {
    match SourceFormat::of(source) {
        SourceFormat::Csv => Ok(Box::new(io::BufReader::with_capacity(
            1 << 20,
            crate::open_csv(dataset, source)?,
        ))),
        format => Ok(Box::new(ColumnarCsv::open(dataset, source, format)?)),
    }
}

/// An error about a file, naming it and the dataset.
pub(super) fn io_error(dataset: &Dataset, path: &Path, why: impl std::fmt::Display) -> EngineError {
    EngineError::Io(IoError::new(format!(
        "cannot read {} for dataset `{}`: {why}",
        crate::memory::shown(path),
        dataset.name
    )))
}

/// The files of a source: the file, or a directory's Parquet parts.
pub(super) fn parts(
    dataset: &Dataset,
    source: &Path,
    format: SourceFormat,
) -> Result<Vec<PathBuf>, EngineError> {
    if format == SourceFormat::ArrowMemory {
        return Ok(vec![source.to_path_buf()]);
    }
    let meta = std::fs::metadata(source)
        .map_err(|e| EngineError::Io(crate::cannot_open(dataset, source, &e).with_source(e)))?;
    if !meta.is_dir() {
        return Ok(vec![source.to_path_buf()]);
    }
    if format != SourceFormat::Parquet {
        return Err(io_error(
            dataset,
            source,
            "it is a directory; a directory source must hold Parquet parts (name it `….parquet`)",
        ));
    }
    let entries = std::fs::read_dir(source).map_err(|e| io_error(dataset, source, e))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dataset, source, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('_') || name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| io_error(dataset, source, e))?;
        if kind.is_dir() {
            // a partitioned dataset (`year=2026/part-….parquet`): its rows
            // would be left out unread, so it is refused
            return Err(io_error(
                dataset,
                source,
                format!(
                    "it holds the subdirectory `{name}`; partitioned directories are not read (give each partition's directory as its own source, or write the parts side by side)"
                ),
            ));
        }
        if name.to_ascii_lowercase().ends_with(".parquet") {
            files.push(path);
        } else {
            // a file that is neither a part nor hidden: not silently skipped
            return Err(io_error(
                dataset,
                source,
                format!("it holds `{name}`, which is not a `*.parquet` part (files whose name starts with `_` or `.` are skipped)"),
            ));
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(io_error(
            dataset,
            source,
            "the directory holds no `*.parquet` part",
        ));
    }
    Ok(files)
}

/// How one declared column's values are written.
#[derive(Debug, Clone, Copy)]
pub(super) enum Write {
    /// Strings, written as they are (quoted where CSV needs it).
    Text,
    /// Integers, in decimal.
    Integer,
    /// Floating-point values, in the shortest text that reads back as the
    /// same `f64`.
    Float,
    /// Decimals, exactly, from their unscaled integer and scale.
    Decimal(i8),
    /// Booleans, as `true` / `false`.
    Bool,
    /// Timestamps in this many units per second: Unix seconds, floored.
    Timestamp(i64),
    /// Days since the epoch: Unix seconds at midnight UTC.
    Date32,
    /// Milliseconds since the epoch: Unix seconds, floored.
    Date64,
}

/// Whether an Arrow type is accepted for a declared column, and how its
/// values are written; `None` when refused.
fn writer_for(kind: ColumnKind, ty: &DataType) -> Option<Write> {
    use DataType as D;
    let integer = matches!(
        ty,
        D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::UInt8 | D::UInt16 | D::UInt32 | D::UInt64
    );
    let text = match ty {
        D::Utf8 | D::LargeUtf8 | D::Utf8View => true,
        D::Dictionary(_, v) => matches!(**v, D::Utf8 | D::LargeUtf8 | D::Utf8View),
        _ => false,
    };
    let decimal_scale = match ty {
        D::Decimal128(_, s) | D::Decimal256(_, s) => Some(*s),
        _ => None,
    };
    match kind {
        ColumnKind::Id | ColumnKind::Category => {
            if text {
                Some(Write::Text)
            } else if integer {
                Some(Write::Integer)
            } else if matches!(ty, D::Boolean) {
                Some(Write::Bool)
            } else {
                None
            }
        }
        ColumnKind::Int => {
            if integer {
                Some(Write::Integer)
            } else {
                decimal_scale.filter(|&s| s <= 0).map(Write::Decimal)
            }
        }
        ColumnKind::Float => {
            if integer {
                Some(Write::Integer)
            } else if matches!(ty, D::Float16 | D::Float32 | D::Float64) {
                Some(Write::Float)
            } else {
                decimal_scale.map(Write::Decimal)
            }
        }
        ColumnKind::Time => match ty {
            D::Timestamp(unit, _) => Some(Write::Timestamp(match unit {
                TimeUnit::Second => 1,
                TimeUnit::Millisecond => 1_000,
                TimeUnit::Microsecond => 1_000_000,
                TimeUnit::Nanosecond => 1_000_000_000,
            })),
            D::Date32 => Some(Write::Date32),
            D::Date64 => Some(Write::Date64),
            _ if integer => Some(Write::Integer),
            _ if text => Some(Write::Text),
            _ => None,
        },
    }
}

/// The Arrow types accepted for a declared column, in words.
fn accepted(kind: ColumnKind) -> &'static str {
    match kind {
        ColumnKind::Id | ColumnKind::Category => "a string, an integer or a boolean",
        ColumnKind::Int => "an integer, or a decimal of scale 0",
        ColumnKind::Float => "an integer, a floating-point number or a decimal",
        ColumnKind::Time => "a timestamp, a date, an integer (Unix seconds) or a string (RFC 3339)",
    }
}

/// The declared columns, in declared order, each with its field's index
/// in `schema` (the first of equal names, as the CSV header lookup) and its
/// writer; an error for the first declared column missing or of a type
/// refused.
pub(super) fn resolve(
    dataset: &Dataset,
    path: &Path,
    schema: &Schema,
) -> Result<Vec<(usize, String, Write)>, EngineError> {
    let mut out: Vec<(usize, String, Write)> = Vec::new();
    for col in &dataset.columns {
        if out.iter().any(|(_, n, _)| *n == col.name) {
            continue;
        }
        // every declared column, as the CSV engine wants it in the header
        let Some(i) = schema.fields().iter().position(|f| *f.name() == col.name) else {
            return Err(EngineError::Schema(format!(
                "column `{}` of dataset `{}` is missing from {}",
                col.name,
                dataset.name,
                crate::memory::shown(path)
            )));
        };
        let ty = schema.field(i).data_type();
        let Some(w) = writer_for(col.ty, ty) else {
            let nested = ty.is_nested();
            return Err(EngineError::Schema(format!(
                "column `{}` of dataset `{}` is {} `{ty}` in {}, but the plan declares it `{}`: {} is accepted for it",
                col.name,
                dataset.name,
                if nested { "of the nested type" } else { "of type" },
                crate::memory::shown(path),
                col.ty.as_str(),
                accepted(col.ty),
            )));
        };
        out.push((i, col.name.clone(), w));
    }
    Ok(out)
}

/// The batches of one file, projected to the declared columns.
pub(super) type Batches =
    Box<dyn Iterator<Item = Result<RecordBatch, arrow_schema::ArrowError>> + Send>;

/// Opens one file: its projected batches and the writers of their columns
/// (in the batches' column order).
pub(super) fn open_part(
    dataset: &Dataset,
    path: &Path,
    format: SourceFormat,
) -> Result<(Batches, Vec<(String, Write)>), EngineError> {
    if format == SourceFormat::ArrowMemory {
        let table = crate::memory::table(path).ok_or_else(|| {
            io_error(
                dataset,
                path,
                "no table of that name is held in memory (such a source is given by the Python module's `dpplan.run`, for the run's duration)",
            )
        })?;
        let (schema, batches) = (table.0.clone(), table.1.clone());
        let reader = arrow_array::RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        return ipc(dataset, path, reader);
    }
    let file = File::open(path)
        .map_err(|e| EngineError::Io(crate::cannot_open(dataset, path, &e).with_source(e)))?;
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        io_error(dataset, path, format!("not a readable {what} file ({e})"))
    };
    match format {
        SourceFormat::Parquet => {
            use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
            use parquet::arrow::ProjectionMask;
            let builder =
                ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| bad("Parquet", &e))?;
            let columns = resolve(dataset, path, builder.schema())?;
            let mask =
                ProjectionMask::roots(builder.parquet_schema(), columns.iter().map(|(i, _, _)| *i));
            let reader = builder
                .with_projection(mask)
                .with_batch_size(8192)
                .build()
                .map_err(|e| bad("Parquet", &e))?;
            Ok((Box::new(reader), named(columns)))
        }
        SourceFormat::ArrowFile => {
            let reader = arrow_ipc::reader::FileReader::try_new(io::BufReader::new(file), None)
                .map_err(|e| bad("Arrow IPC", &e))?;
            ipc(dataset, path, reader)
        }
        SourceFormat::ArrowStream => {
            let reader = arrow_ipc::reader::StreamReader::try_new(io::BufReader::new(file), None)
                .map_err(|e| bad("Arrow IPC stream", &e))?;
            ipc(dataset, path, reader)
        }
        // `open_source` opens a CSV as a file; never asked here
        SourceFormat::Csv => Err(bad("columnar", &"a CSV source")),
        SourceFormat::ArrowMemory => Err(bad("columnar", &"an in-memory table")),
    }
}

/// An Arrow IPC reader's batches, each projected to the declared columns
/// (IPC buffers are decoded as they are read; the undeclared columns'
/// are dropped at once).
fn ipc<R>(
    dataset: &Dataset,
    path: &Path,
    reader: R,
) -> Result<(Batches, Vec<(String, Write)>), EngineError>
where
    R: arrow_array::RecordBatchReader + Send + 'static,
{
    let columns = resolve(dataset, path, &reader.schema())?;
    let projection: Vec<usize> = columns.iter().map(|(i, _, _)| *i).collect();
    let batches = reader.map(move |b| b.and_then(|b| b.project(&projection)));
    Ok((Box::new(batches), named(columns)))
}

fn named(columns: Vec<(usize, String, Write)>) -> Vec<(String, Write)> {
    columns.into_iter().map(|(_, n, w)| (n, w)).collect()
}

/// One file being read: its path, its batches and its columns' writers.
type Part = (PathBuf, Batches, Vec<(String, Write)>);

/// The CSV text of a columnar source's declared columns, batch by batch.
struct ColumnarCsv {
    dataset: Dataset,
    format: SourceFormat,
    /// The parts not yet opened, in reading order (reversed: popped).
    pending: Vec<PathBuf>,
    /// The part being read.
    current: Option<Part>,
    /// The header's column names: the declared columns, in declared order.
    header: Vec<String>,
    buf: Vec<u8>,
    pos: usize,
}

impl ColumnarCsv {
    fn open(dataset: &Dataset, source: &Path, format: SourceFormat) -> Result<Self, EngineError> {
        let mut pending = parts(dataset, source, format)?;
        pending.reverse();
        // every part's schema is checked before a byte is returned; each
        // part's columns are written in the declared order, whatever the
        // part's own order
        let mut header = None;
        for p in pending.iter().rev() {
            let (_, columns) = open_part(dataset, p, format)?;
            header
                .get_or_insert_with(|| columns.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>());
        }
        let header = header.unwrap_or_default();
        let mut buf = Vec::new();
        for (i, name) in header.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            push_text(&mut buf, name.as_bytes());
        }
        buf.push(b'\n');
        Ok(ColumnarCsv {
            dataset: dataset.clone(),
            format,
            pending,
            current: None,
            header,
            buf,
            pos: 0,
        })
    }

    /// Fills the buffer with the next batch's rows; false at the end.
    fn next_batch(&mut self) -> Result<bool, EngineError> {
        loop {
            if self.current.is_none() {
                let Some(path) = self.pending.pop() else {
                    return Ok(false);
                };
                let (batches, columns) = open_part(&self.dataset, &path, self.format)?;
                self.current = Some((path, batches, columns));
            }
            let Some((path, batches, columns)) = &mut self.current else {
                continue;
            };
            match batches.next() {
                None => self.current = None,
                Some(Err(e)) => {
                    return Err(io_error(
                        &self.dataset,
                        path,
                        format!("a batch cannot be decoded ({e})"),
                    ))
                }
                Some(Ok(batch)) => {
                    debug_assert_eq!(columns.len(), self.header.len());
                    self.buf.clear();
                    self.pos = 0;
                    write_batch(&batch, columns, &mut self.buf).map_err(|e| {
                        io_error(
                            &self.dataset,
                            path,
                            format!("a batch cannot be decoded ({e})"),
                        )
                    })?;
                    if !self.buf.is_empty() {
                        return Ok(true);
                    }
                }
            }
        }
    }
}

impl Read for ColumnarCsv {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buf.len() {
            match self.next_batch() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => return Err(io::Error::other(e)),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// A field's text, quoted as RFC 4180 wants when it holds a comma, a
/// quote or a line break (quotes doubled).
fn push_text(buf: &mut Vec<u8>, s: &[u8]) {
    if s.iter().any(|&b| matches!(b, b',' | b'"' | b'\n' | b'\r')) {
        buf.push(b'"');
        for &b in s {
            if b == b'"' {
                buf.push(b'"');
            }
            buf.push(b);
        }
        buf.push(b'"');
    } else {
        buf.extend_from_slice(s);
    }
}

/// Every row of `batch` as CSV lines, column by column per row; a null is
/// an empty field.
fn write_batch(
    batch: &RecordBatch,
    columns: &[(String, Write)],
    buf: &mut Vec<u8>,
) -> Result<(), arrow_schema::ArrowError> {
    // by name: a projected batch keeps the file's column order
    let schema = batch.schema();
    let arrays: Vec<Field> = columns
        .iter()
        .map(|(name, w)| {
            let i = schema
                .fields()
                .iter()
                .position(|f| f.name() == name)
                .ok_or_else(|| {
                    arrow_schema::ArrowError::SchemaError(format!("no column `{name}` in a batch"))
                })?;
            Field::new(batch.column(i), *w)
        })
        .collect::<Result<_, _>>()?;
    let mut scratch = String::new();
    for row in 0..batch.num_rows() {
        for (i, f) in arrays.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            f.write(row, buf, &mut scratch);
        }
        buf.push(b'\n');
    }
    Ok(())
}

/// One column of a batch, ready to write: strings normalised to
/// `LargeUtf8` (dictionaries and views decoded).
pub(super) struct Field {
    array: ArrayRef,
    write: Write,
}

impl Field {
    pub(super) fn new(array: &ArrayRef, write: Write) -> Result<Field, arrow_schema::ArrowError> {
        use DataType as D;
        let array = match (write, array.data_type()) {
            (Write::Text, D::LargeUtf8) | (Write::Integer, D::Int64 | D::UInt64) => {
                Arc::clone(array)
            }
            (Write::Text, _) => arrow_cast::cast(array, &D::LargeUtf8)?,
            // the narrower integers widened (exactly) to one of two types
            (Write::Integer, D::UInt8 | D::UInt16 | D::UInt32) => {
                arrow_cast::cast(array, &D::UInt64)?
            }
            (Write::Integer, _) => arrow_cast::cast(array, &D::Int64)?,
            _ => Arc::clone(array),
        };
        Ok(Field { array, write })
    }

    pub(super) fn write(&self, row: usize, buf: &mut Vec<u8>, scratch: &mut String) {
        use std::fmt::Write as _;
        let a = &self.array;
        if a.is_null(row) {
            return;
        }
        scratch.clear();
        match self.write {
            Write::Text => {
                push_text(buf, a.as_string::<i64>().value(row).as_bytes());
                return;
            }
            Write::Bool => {
                buf.extend_from_slice(if a.as_boolean().value(row) {
                    b"true"
                } else {
                    b"false"
                });
                return;
            }
            Write::Integer => {
                let _ = match a.data_type() {
                    DataType::UInt64 => {
                        write!(scratch, "{}", a.as_primitive::<UInt64Type>().value(row))
                    }
                    _ => write!(scratch, "{}", a.as_primitive::<Int64Type>().value(row)),
                };
            }
            Write::Float => {
                let v: f64 = match a.data_type() {
                    DataType::Float16 => f64::from(a.as_primitive::<Float16Type>().value(row)),
                    DataType::Float32 => f64::from(a.as_primitive::<Float32Type>().value(row)),
                    _ => a.as_primitive::<Float64Type>().value(row),
                };
                write_f64(buf, v);
                return;
            }
            Write::Decimal(scale) => match a.data_type() {
                DataType::Decimal128(..) => {
                    let v = a.as_primitive::<Decimal128Type>().value(row);
                    write_decimal(scratch, &v.to_string(), scale);
                }
                _ => {
                    let v = a.as_primitive::<Decimal256Type>().value(row);
                    write_decimal(scratch, &v.to_string(), scale);
                }
            },
            Write::Timestamp(per_second) => {
                let v = match a.data_type() {
                    DataType::Timestamp(TimeUnit::Second, _) => {
                        a.as_primitive::<TimestampSecondType>().value(row)
                    }
                    DataType::Timestamp(TimeUnit::Millisecond, _) => {
                        a.as_primitive::<TimestampMillisecondType>().value(row)
                    }
                    DataType::Timestamp(TimeUnit::Microsecond, _) => {
                        a.as_primitive::<TimestampMicrosecondType>().value(row)
                    }
                    _ => a.as_primitive::<TimestampNanosecondType>().value(row),
                };
                let _ = write!(scratch, "{}", v.div_euclid(per_second));
            }
            Write::Date32 => {
                let days = i64::from(a.as_primitive::<Date32Type>().value(row));
                let _ = write!(scratch, "{}", days * 86_400);
            }
            Write::Date64 => {
                let ms = a.as_primitive::<Date64Type>().value(row);
                let _ = write!(scratch, "{}", ms.div_euclid(1_000));
            }
        }
        buf.extend_from_slice(scratch.as_bytes());
    }
}

/// The shortest text that reads back as `v` (`ryu`: `NaN`, `inf` and
/// `-inf` for the non-finite, which the CSV engine treats as a CSV's).
fn write_f64(out: &mut Vec<u8>, v: f64) {
    let mut b = ryu::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}

/// The exact decimal text of an unscaled integer `digits` (with its sign)
/// at `scale`: `12345` at scale 2 is `123.45`, at scale −2 `1234500`.
fn write_decimal(out: &mut String, digits: &str, scale: i8) {
    let (neg, digits) = match digits.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, digits),
    };
    if neg {
        out.push('-');
    }
    if scale <= 0 {
        out.push_str(digits);
        if digits != "0" {
            for _ in 0..(-i32::from(scale)) {
                out.push('0');
            }
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() > scale {
        let (int, frac) = digits.split_at(digits.len() - scale);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else {
        out.push_str("0.");
        for _ in 0..(scale - digits.len()) {
            out.push('0');
        }
        out.push_str(digits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_written_exactly() {
        let w = |d: &str, s: i8| {
            let mut out = String::new();
            write_decimal(&mut out, d, s);
            out
        };
        assert_eq!(w("12345", 2), "123.45");
        assert_eq!(w("-12345", 2), "-123.45");
        assert_eq!(w("5", 3), "0.005");
        assert_eq!(w("-5", 3), "-0.005");
        assert_eq!(w("12", -2), "1200");
        assert_eq!(w("0", -2), "0");
        assert_eq!(w("0", 2), "0.00");
    }

    #[test]
    fn floats_read_back_as_the_same_bits() {
        for v in [
            0.1,
            -0.0,
            1e300,
            5e-324,
            f64::MAX,
            f64::MIN_POSITIVE,
            123_456_789.123_456_78,
            f64::from(0.1f32),
        ] {
            let mut s = Vec::new();
            write_f64(&mut s, v);
            let s = String::from_utf8(s).unwrap();
            let back: f64 = s.parse().unwrap();
            assert_eq!(back.to_bits(), v.to_bits(), "{s}");
            assert_eq!(
                crate::number::parse_number(Some(s.as_bytes()), false).map(f64::to_bits),
                Some(v.to_bits())
            );
        }
        for (v, text) in [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            let mut s = Vec::new();
            write_f64(&mut s, v);
            assert_eq!(s, text.as_bytes());
        }
    }

    #[test]
    fn the_format_follows_the_name() {
        assert_eq!(SourceFormat::of(Path::new("a/b.csv")), SourceFormat::Csv);
        assert_eq!(
            SourceFormat::of(Path::new("a/B.PARQUET")),
            SourceFormat::Parquet
        );
        assert_eq!(
            SourceFormat::of(Path::new("lake/events.parquet/")),
            SourceFormat::Parquet
        );
        assert_eq!(
            SourceFormat::of(Path::new("x.arrow")),
            SourceFormat::ArrowFile
        );
        assert_eq!(
            SourceFormat::of(Path::new("x.feather")),
            SourceFormat::ArrowFile
        );
        assert_eq!(
            SourceFormat::of(Path::new("x.arrows")),
            SourceFormat::ArrowStream
        );
        assert_eq!(SourceFormat::of(Path::new("data")), SourceFormat::Csv);
    }
}
