//! Parquet and Arrow IPC sources read natively: the rows of their Arrow
//! columns go through the same layout, bounding and accumulators as a
//! CSV's records, without the CSV text of [`crate::columnar`] in between.
//!
//! **Same semantics, by construction where it matters.** The file's schema
//! is checked, and each declared column's writer chosen, by the bridge's
//! own functions ([`columnar::resolve`]). A row is a [`Fields`] value: a
//! column the layout reads as text (the unit id, a distinct count's ids,
//! an `in` set, a category key) gives its string's bytes, or, for any
//! other Arrow type (an integer id, a boolean category, a timestamp), the
//! very text the bridge writes for it; a null is an empty field, as in the
//! bridge's CSV. A column read only as a number gives its value without
//! text: an integer `k` is `k as f64` (the correctly rounded value, as the
//! text of `k` parses to), a float `v` is `v` itself (the bridge writes the
//! shortest text that reads back as `v`, bit for bit), NaN and null are
//! invalid, a fractional value of an `int` column is invalid — exactly
//! [`parse_number`](crate::number) of the bridge's text. Decimals and
//! temporal values are read through their bridge text. The test suite
//! holds both paths, and the CSV, to the same exact aggregates.
//!
//! **Pieces.** A Parquet source is cut into pieces of whole row groups
//! (consecutive, across the parts of a directory, at least the engine's
//! block size of uncompressed data each); a worker decodes its piece's row
//! groups itself, so decoding runs on every core. An Arrow IPC file is read
//! in batches on the calling thread (decoding IPC is a copy) and its
//! batches grouped into pieces the same way. On one thread the pieces are
//! read in order on the calling thread, so the rows arrive in the file's
//! order, as a CSV's do.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::LargeStringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int64Array, LargeStringArray, RecordBatch, StringArray,
    StringViewArray, UInt64Array,
};
use arrow_schema::{ArrowError, DataType};
use dpplan_plan::Dataset;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;

use crate::columnar::{self, Batches, SourceFormat, Write};
use crate::layout::Fields;
use crate::number::{is_integer, parse_number, valid_number};
use crate::parallel::{Feed, OnRecord, Piece};
use crate::{EngineError, RowReader};

/// Rows per decoded batch.
const BATCH_ROWS: usize = 8192;

/// One file of the source: its declared columns' writers (in declared
/// order) and, for Parquet, its metadata and projection, read once.
struct Part {
    path: PathBuf,
    columns: Vec<(String, Write)>,
    parquet: Option<(ArrowReaderMetadata, ProjectionMask)>,
}

/// How a row reads a header column.
#[derive(Clone, Copy, PartialEq)]
enum Read {
    /// Never (a declared column no statistic, check or filter reads).
    Not,
    /// As text (`Fields::field`; its number from the text).
    Text,
    /// Only as a number.
    Number,
}

/// What every piece shares: the dataset (for errors), the parts, and how
/// each header column is read.
struct Source {
    dataset: Dataset,
    parts: Vec<Part>,
    reads: Vec<Read>,
}

impl Source {
    fn decode_error(&self, part: usize, e: impl std::fmt::Display) -> EngineError {
        columnar::io_error(
            &self.dataset,
            &self.parts[part].path,
            format!("a batch cannot be decoded ({e})"),
        )
    }
}

/// The source opened: every part's schema checked (before anything is
/// read, hence before any charge), the header of the declared columns, and
/// an IPC file's batches.
pub(crate) struct Opened {
    /// The declared columns, in declared order: the header the layout is
    /// resolved against.
    pub(crate) header: csv::ByteRecord,
    dataset: Dataset,
    parts: Vec<Part>,
    ipc: Option<Batches>,
}

/// Opens a Parquet or Arrow IPC source (see the module's documentation).
pub(crate) fn open(
    dataset: &Dataset,
    source: &Path,
    format: SourceFormat,
) -> Result<Opened, EngineError> {
    let paths = columnar::parts(dataset, source, format)?;
    let mut parts = Vec::with_capacity(paths.len());
    let mut ipc = None;
    for path in paths {
        let bad = |e: &dyn std::fmt::Display| {
            columnar::io_error(dataset, &path, format!("not a readable Parquet file ({e})"))
        };
        match format {
            SourceFormat::Parquet => {
                let file = File::open(&path).map_err(|e| {
                    EngineError::Io(crate::cannot_open(dataset, &path, &e).with_source(e))
                })?;
                let meta = ArrowReaderMetadata::load(&file, ArrowReaderOptions::new())
                    .map_err(|e| bad(&e))?;
                let resolved = columnar::resolve(dataset, &path, meta.schema())?;
                let mask = ProjectionMask::roots(
                    meta.parquet_schema(),
                    resolved.iter().map(|(i, _, _)| *i),
                );
                let columns = resolved.into_iter().map(|(_, n, w)| (n, w)).collect();
                parts.push(Part {
                    path,
                    columns,
                    parquet: Some((meta, mask)),
                });
            }
            _ => {
                let (batches, columns) = columnar::open_part(dataset, &path, format)?;
                ipc = Some(batches);
                parts.push(Part {
                    path,
                    columns,
                    parquet: None,
                });
            }
        }
    }
    let mut header = csv::ByteRecord::new();
    if let Some(p) = parts.first() {
        for (name, _) in &p.columns {
            header.push_field(name.as_bytes());
        }
    }
    Ok(Opened {
        header,
        dataset: dataset.clone(),
        parts,
        ipc,
    })
}

impl Opened {
    /// The source's pieces of about `block` bytes, with the header columns
    /// at `text` read as text, those at `numbers` (and not at `text`) only
    /// as numbers, the others never (not even decoded into a row).
    pub(crate) fn feed(self, text: &[usize], numbers: &[usize], block: usize) -> NativeFeed {
        let mut reads = vec![Read::Not; self.header.len()];
        for (&i, how) in numbers
            .iter()
            .map(|i| (i, Read::Number))
            .chain(text.iter().map(|i| (i, Read::Text)))
        {
            if let Some(r) = reads.get_mut(i) {
                *r = how;
            }
        }
        let groups = self
            .parts
            .iter()
            .enumerate()
            .filter_map(|(p, part)| part.parquet.as_ref().map(|(m, _)| (p, m)))
            .flat_map(|(p, m)| {
                let meta = m.metadata();
                (0..meta.num_row_groups()).map(move |g| {
                    let bytes = meta.row_group(g).total_byte_size().max(1) as u64;
                    (p, g, bytes)
                })
            })
            .collect();
        NativeFeed {
            source: Arc::new(Source {
                dataset: self.dataset,
                parts: self.parts,
                reads,
            }),
            block: block.max(1) as u64,
            groups,
            ipc: self.ipc,
        }
    }
}

/// The pieces of a source, in order.
pub(crate) struct NativeFeed {
    source: Arc<Source>,
    block: u64,
    /// The Parquet row groups not yet handed out: (part, group, bytes).
    groups: VecDeque<(usize, usize, u64)>,
    /// An IPC file's batches not yet read.
    ipc: Option<Batches>,
}

/// What a piece holds.
enum Work {
    /// Parquet row groups (part, group), decoded by whoever reads the piece.
    RowGroups(Vec<(usize, usize)>),
    /// Batches of an IPC file (part 0), already decoded.
    Batches(Vec<RecordBatch>),
}

/// A piece of a Parquet or Arrow IPC source.
pub(crate) struct NativePiece {
    source: Arc<Source>,
    work: Work,
}

impl Feed for NativeFeed {
    type Piece = NativePiece;

    fn next_piece(&mut self) -> Result<Option<NativePiece>, EngineError> {
        let mut bytes = 0u64;
        if let Some(batches) = &mut self.ipc {
            let mut out = Vec::new();
            while bytes < self.block {
                match batches.next() {
                    None => break,
                    Some(Err(e)) => return Err(self.source.decode_error(0, e)),
                    Some(Ok(b)) => {
                        bytes += b.get_array_memory_size().max(1) as u64;
                        out.push(b);
                    }
                }
            }
            return Ok((!out.is_empty()).then(|| NativePiece {
                source: Arc::clone(&self.source),
                work: Work::Batches(out),
            }));
        }
        let mut out = Vec::new();
        while bytes < self.block {
            let Some((p, g, b)) = self.groups.pop_front() else {
                break;
            };
            bytes += b;
            out.push((p, g));
        }
        Ok((!out.is_empty()).then(|| NativePiece {
            source: Arc::clone(&self.source),
            work: Work::RowGroups(out),
        }))
    }
}

impl NativePiece {
    /// Every batch of the piece, in order, with its part.
    fn each_batch(
        &self,
        mut f: impl FnMut(usize, &RecordBatch) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        let source = &self.source;
        match &self.work {
            Work::Batches(batches) => {
                for b in batches {
                    f(0, b)?;
                }
            }
            Work::RowGroups(groups) => {
                for &(p, g) in groups {
                    let part = &source.parts[p];
                    let Some((meta, mask)) = &part.parquet else {
                        continue;
                    };
                    let file = File::open(&part.path).map_err(|e| {
                        EngineError::Io(
                            crate::cannot_open(&source.dataset, &part.path, &e).with_source(e),
                        )
                    })?;
                    let reader =
                        ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta.clone())
                            .with_projection(mask.clone())
                            .with_row_groups(vec![g])
                            .with_batch_size(BATCH_ROWS)
                            .build()
                            .map_err(|e| source.decode_error(p, e))?;
                    for b in reader {
                        f(p, &b.map_err(|e| source.decode_error(p, e))?)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The piece's batches, decoded, in order.
    fn batches(&self) -> Result<Vec<(usize, RecordBatch)>, EngineError> {
        let mut out = Vec::new();
        self.each_batch(|p, b| {
            out.push((p, b.clone()));
            Ok(())
        })?;
        Ok(out)
    }
}

impl Piece for NativePiece {
    fn each_row<O: OnRecord>(&self, _dataset: &str, o: &mut O) -> Result<(), EngineError> {
        let mut row = ArrowRow::default();
        self.each_batch(|p, b| {
            row.load(&self.source, p, b)?;
            for r in 0..row.len {
                row.row = r;
                o.on(&row)?;
            }
            Ok(())
        })
    }
}

/// The rows of a source on one thread, in order.
pub(crate) struct NativeRows {
    feed: NativeFeed,
    batches: VecDeque<(usize, RecordBatch)>,
}

impl NativeRows {
    pub(crate) fn new(feed: NativeFeed) -> Self {
        NativeRows {
            feed,
            batches: VecDeque::new(),
        }
    }
}

impl RowReader for NativeRows {
    type Rec = ArrowRow;

    fn record(&self) -> ArrowRow {
        ArrowRow::default()
    }

    #[inline]
    fn next_row(&mut self, rec: &mut ArrowRow) -> Result<bool, EngineError> {
        loop {
            if rec.next < rec.len {
                rec.row = rec.next;
                rec.next += 1;
                return Ok(true);
            }
            if let Some((p, b)) = self.batches.pop_front() {
                rec.load(&self.feed.source, p, &b)?;
                continue;
            }
            match self.feed.next_piece()? {
                Some(piece) => self.batches.extend(piece.batches()?),
                None => return Ok(false),
            }
        }
    }
}

/// One column of a batch as a row reads it.
enum Col {
    Utf8(StringArray),
    LargeUtf8(LargeStringArray),
    Utf8View(StringViewArray),
    Int64(Int64Array),
    UInt64(UInt64Array),
    Float64(Float64Array),
    /// A column no row reads.
    Unread,
}

impl Col {
    /// The column for header column `i` of part `part`'s `batch`.
    fn new(source: &Source, part: usize, i: usize, batch: &RecordBatch) -> Result<Col, ArrowError> {
        let (name, write) = &source.parts[part].columns[i];
        let text = match source.reads[i] {
            Read::Not => return Ok(Col::Unread),
            Read::Text => true,
            Read::Number => false,
        };
        let array = batch.column(batch.schema().index_of(name)?);
        let ty = array.data_type();
        Ok(match (write, ty) {
            (Write::Text, DataType::Utf8) => Col::Utf8(array.as_string::<i32>().clone()),
            (Write::Text, DataType::LargeUtf8) => Col::LargeUtf8(array.as_string::<i64>().clone()),
            (Write::Text, DataType::Utf8View) => Col::Utf8View(array.as_string_view().clone()),
            (Write::Text, _) => {
                let cast = arrow_cast::cast(array, &DataType::LargeUtf8)?;
                Col::LargeUtf8(cast.as_string::<i64>().clone())
            }
            (Write::Integer, DataType::Int64) if !text => {
                Col::Int64(array.as_primitive::<Int64Type>().clone())
            }
            (Write::Integer, DataType::UInt64) if !text => {
                Col::UInt64(array.as_primitive::<UInt64Type>().clone())
            }
            (Write::Integer, DataType::UInt8 | DataType::UInt16 | DataType::UInt32) if !text => {
                let cast = arrow_cast::cast(array, &DataType::UInt64)?;
                Col::UInt64(cast.as_primitive::<UInt64Type>().clone())
            }
            (Write::Integer, _) if !text => {
                let cast = arrow_cast::cast(array, &DataType::Int64)?;
                Col::Int64(cast.as_primitive::<Int64Type>().clone())
            }
            // Float16 and Float32 widen to f64 exactly
            (Write::Float, _) if !text => {
                let cast = arrow_cast::cast(array, &DataType::Float64)?;
                Col::Float64(cast.as_primitive::<Float64Type>().clone())
            }
            // anything else: the bridge's text of it
            _ => Col::LargeUtf8(bridge_text(array, *write)?),
        })
    }
}

/// The text the bridge writes for each value of `array` (a null: empty).
fn bridge_text(array: &ArrayRef, write: Write) -> Result<LargeStringArray, ArrowError> {
    let field = columnar::Field::new(array, write)?;
    let mut b = LargeStringBuilder::with_capacity(array.len(), 8 * array.len());
    let (mut buf, mut scratch) = (Vec::new(), String::new());
    for row in 0..array.len() {
        buf.clear();
        field.write(row, &mut buf, &mut scratch);
        let text = std::str::from_utf8(&buf).map_err(|e| ArrowError::CastError(e.to_string()))?;
        b.append_value(text);
    }
    Ok(b.finish())
}

/// A row of a batch: its columns in header order, and the row's index.
#[derive(Default)]
pub(crate) struct ArrowRow {
    cols: Vec<Col>,
    row: usize,
    /// The next row to hand out, and the batch's rows (one thread).
    next: usize,
    len: usize,
}

impl ArrowRow {
    /// Points the row at the start of `batch` (of part `part`).
    fn load(
        &mut self,
        source: &Source,
        part: usize,
        batch: &RecordBatch,
    ) -> Result<(), EngineError> {
        self.cols.clear();
        for i in 0..source.reads.len() {
            let col = Col::new(source, part, i, batch).map_err(|e| source.decode_error(part, e))?;
            self.cols.push(col);
        }
        self.row = 0;
        self.next = 0;
        self.len = batch.num_rows();
        Ok(())
    }
}

impl Fields for ArrowRow {
    /// A text column's bytes (a null: empty); `None` for a column read
    /// only as a number, or not at all (never asked:
    /// [`crate::layout::Layout::text_columns`]).
    #[inline]
    fn field(&self, i: usize) -> Option<&[u8]> {
        let r = self.row;
        match self.cols.get(i)? {
            Col::Utf8(a) => Some(if a.is_null(r) {
                b""
            } else {
                a.value(r).as_bytes()
            }),
            Col::LargeUtf8(a) => Some(if a.is_null(r) {
                b""
            } else {
                a.value(r).as_bytes()
            }),
            Col::Utf8View(a) => Some(if a.is_null(r) {
                b""
            } else {
                a.value(r).as_bytes()
            }),
            Col::Int64(_) | Col::UInt64(_) | Col::Float64(_) | Col::Unread => None,
        }
    }

    #[inline]
    fn number(&self, i: usize, int: bool) -> Option<f64> {
        let r = self.row;
        match self.cols.get(i)? {
            Col::Int64(a) => (!a.is_null(r)).then(|| a.value(r) as f64),
            Col::UInt64(a) => (!a.is_null(r)).then(|| a.value(r) as f64),
            Col::Float64(a) => {
                let v = a.value(r);
                let invalid = a.is_null(r) || v.is_nan() || (int && !is_integer(v));
                (!invalid).then_some(v)
            }
            _ => parse_number(self.field(i), int),
        }
    }

    #[inline]
    fn valid(&self, i: usize, int: bool) -> bool {
        match self.cols.get(i) {
            Some(Col::Int64(a)) => !a.is_null(self.row),
            Some(Col::UInt64(a)) => !a.is_null(self.row),
            Some(Col::Float64(_)) => self.number(i, int).is_some(),
            _ => valid_number(self.field(i), int),
        }
    }
}
