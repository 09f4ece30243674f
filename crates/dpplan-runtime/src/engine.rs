//! Reading and bounded aggregation behind the [`Engine`] trait.
//!
//! The engine computes **exact** bounded aggregates only (integers in units
//! of each statistic's grid 2^k); noise is never the engine's business.
//! [`CsvEngine`] streams a CSV file once:
//!
//! * row- and event-level units: every row is a unit; it goes straight into
//!   the accumulators (memory is constant in the number of rows);
//! * user-level units: per unit id a reservoir of at most `rows_per_unit`
//!   rows (Algorithm R, secure random indices) is kept in a flat table —
//!   memory is O(units × rows_per_unit), never O(rows); at the end, grouped statistics
//!   keep at most `groups_per_unit` groups per unit and `rows_per_group` rows
//!   per group, chosen uniformly at random.
//!
//! Error messages name files and declared columns, never a data value, a row
//! number or a count of dropped rows.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use dpplan_plan::Dataset;

use crate::rng::SecureRng;

/// What is aggregated.
#[derive(Debug, Clone, PartialEq)]
pub enum StatKind {
    Count,
    Sum { column: String },
    GroupedCount { by: String },
    GroupedSum { by: String, column: String },
}

/// One exact statistic to compute, in units of 2^grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Statistic {
    pub kind: StatKind,
    pub grid: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    Io(String),
    Schema(String),
    Overflow(String),
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Io(s) | EngineError::Schema(s) | EngineError::Overflow(s) => {
                f.write_str(s)
            }
        }
    }
}

impl std::error::Error for EngineError {}

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
}

/// The built-in streaming CSV engine.
#[derive(Debug, Default, Clone, Copy)]
pub struct CsvEngine;

/// A declared numeric column as parsed per row.
struct NumCol {
    index: usize,
    int: bool,
    /// What `invalid_rows clamp` substitutes for an invalid value.
    impute: f64,
}

/// Per-statistic pre-computed clamp in grid units.
struct Prepared {
    /// Index into the row's numeric values (sums).
    value: Option<usize>,
    /// Index into the row's category slots (grouped).
    group: Option<usize>,
    grid_scale: f64,
    lo: f64,
    hi: f64,
    coords: usize,
    count_shift: i32,
}

const OUT: u32 = u32::MAX;

struct Domain {
    values: Vec<Vec<u8>>,
    map: Option<HashMap<Vec<u8>, u32>>,
}

impl Domain {
    fn new(values: &[String]) -> Domain {
        let values: Vec<Vec<u8>> = values.iter().map(|v| v.as_bytes().to_vec()).collect();
        let map = (values.len() > 16).then(|| {
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), i as u32))
                .collect()
        });
        Domain { values, map }
    }
    #[inline]
    fn index(&self, field: &[u8]) -> u32 {
        match &self.map {
            Some(m) => m.get(field).copied().unwrap_or(OUT),
            None => self
                .values
                .iter()
                .position(|v| v.as_slice() == field)
                .map_or(OUT, |i| i as u32),
        }
    }
}

/// Parses a number; `None` for empty, unparsable, NaN, or a fractional int.
#[inline]
fn parse_number(field: Option<&[u8]>, int: bool) -> Option<f64> {
    let f = field?;
    let s = std::str::from_utf8(f).ok()?.trim();
    if s.is_empty() {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    if v.is_nan() || (int && v.is_finite() && v.fract() != 0.0) {
        return None;
    }
    Some(v)
}

struct Accumulators {
    values: Vec<Vec<i128>>,
    counts: Vec<Vec<u64>>,
}

impl Accumulators {
    fn new(prepared: &[Prepared]) -> Self {
        Accumulators {
            values: prepared.iter().map(|p| vec![0i128; p.coords]).collect(),
            counts: prepared.iter().map(|p| vec![0u64; p.coords]).collect(),
        }
    }

    /// Adds one kept row (numeric values and category indexes).
    #[inline]
    fn add(
        &mut self,
        prepared: &[Prepared],
        nums: &[f64],
        cats: &[u32],
    ) -> Result<(), EngineError> {
        for (i, p) in prepared.iter().enumerate() {
            let slot = match p.group {
                Some(g) => {
                    let c = cats[g];
                    if c == OUT {
                        continue;
                    }
                    c as usize
                }
                None => 0,
            };
            match p.value {
                None => self.counts[i][slot] += 1,
                Some(v) => {
                    let x = (nums[v] * p.grid_scale).round().clamp(p.lo, p.hi) as i128;
                    let acc = &mut self.values[i][slot];
                    *acc = acc
                        .checked_add(x)
                        .ok_or_else(|| EngineError::Overflow("a sum overflowed 128 bits".into()))?;
                }
            }
        }
        Ok(())
    }

    fn finish(self, prepared: &[Prepared]) -> Result<Vec<Vec<i128>>, EngineError> {
        let mut out = Vec::with_capacity(prepared.len());
        for (i, p) in prepared.iter().enumerate() {
            if p.value.is_some() {
                out.push(self.values[i].clone());
            } else {
                let mut v = Vec::with_capacity(p.coords);
                for &c in &self.counts[i] {
                    let x = (c as i128)
                        .checked_shl(p.count_shift as u32)
                        .filter(|y| (y >> p.count_shift) == c as i128);
                    v.push(x.ok_or_else(|| {
                        EngineError::Overflow("a count overflowed 128 bits".into())
                    })?);
                }
                out.push(v);
            }
        }
        Ok(out)
    }
}

/// The per-unit reservoirs of user-level bounding, in one flat
/// open-addressing table (linear probing) so that a row costs one cache
/// miss. A slot is `[k0, k1, seen, row 0 …, row cap−1]`, each row `width`
/// words (numbers as f64 bits, then category indexes).
///
/// Units are keyed by a 128-bit SipHash-1-3 of the id under a secret random
/// key, not by the id itself: the ids are never stored, and two distinct ids
/// share a slot only with probability about n²/2¹²⁹ (n units) — about
/// 10⁻²⁷ for a million units — which an adversary cannot raise without the
/// key.
struct UnitTable {
    slot: usize,
    mask: usize,
    len: usize,
    data: Vec<u64>,
    hasher: siphasher::sip128::SipHasher13,
}

impl UnitTable {
    fn new(slot: usize, rng: &mut SecureRng) -> Self {
        let cap = 1usize << 12;
        UnitTable {
            slot,
            mask: cap - 1,
            len: 0,
            data: vec![0; cap * slot],
            hasher: siphasher::sip128::SipHasher13::new_with_keys(rng.next_u64(), rng.next_u64()),
        }
    }

    #[inline]
    fn key(&self, id: &[u8]) -> (u64, u64) {
        let h = self.hasher.hash(id);
        // (0, 0) marks an empty slot
        (h.h1, if h.h1 == 0 && h.h2 == 0 { 1 } else { h.h2 })
    }

    /// The offset of the unit's slot, inserted when new.
    #[inline]
    fn slot_of(&mut self, k: (u64, u64)) -> usize {
        if (self.len + 1) * 10 > (self.mask + 1) * 7 {
            self.grow();
        }
        let mut i = (k.0 as usize) & self.mask;
        loop {
            let b = i * self.slot;
            let (a, c) = (self.data[b], self.data[b + 1]);
            if a == k.0 && c == k.1 {
                return b;
            }
            if a == 0 && c == 0 {
                self.data[b] = k.0;
                self.data[b + 1] = k.1;
                self.len += 1;
                return b;
            }
            i = (i + 1) & self.mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.data);
        let cap = (self.mask + 1) * 2;
        self.mask = cap - 1;
        self.data = vec![0; cap * self.slot];
        for chunk in old.chunks_exact(self.slot) {
            if chunk[0] == 0 && chunk[1] == 0 {
                continue;
            }
            let mut i = (chunk[0] as usize) & self.mask;
            loop {
                let b = i * self.slot;
                if self.data[b] == 0 && self.data[b + 1] == 0 {
                    self.data[b..b + self.slot].copy_from_slice(chunk);
                    break;
                }
                i = (i + 1) & self.mask;
            }
        }
    }

    fn slots(&self) -> impl Iterator<Item = &[u64]> {
        self.data
            .chunks_exact(self.slot)
            .filter(|c| c[0] != 0 || c[1] != 0)
    }
}

/// The schema resolved against a CSV header.
struct Layout {
    id: Option<usize>,
    nums: Vec<NumCol>,
    /// CSV index and domain of every grouping column used.
    cats: Vec<(usize, Domain)>,
    drop_invalid: bool,
}

impl Layout {
    /// Parses the row into `nums`/`cats`; false when the row is dropped.
    #[inline]
    fn parse(&self, rec: &csv::ByteRecord, nums: &mut [f64], cats: &mut [u32]) -> bool {
        if let Some(i) = self.id {
            match rec.get(i) {
                Some(f) if !f.is_empty() => {}
                _ => return false,
            }
        }
        for (slot, c) in self.nums.iter().enumerate() {
            match parse_number(rec.get(c.index), c.int) {
                Some(v) => nums[slot] = v,
                None if self.drop_invalid => return false,
                None => nums[slot] = c.impute,
            }
        }
        for (slot, (index, domain)) in self.cats.iter().enumerate() {
            cats[slot] = rec.get(*index).map_or(OUT, |f| domain.index(f));
        }
        true
    }
}

fn header_index(
    headers: &csv::ByteRecord,
    dataset: &str,
    name: &str,
) -> Result<usize, EngineError> {
    headers
        .iter()
        .position(|h| {
            h == name.as_bytes() || (h.starts_with(b"\xef\xbb\xbf") && &h[3..] == name.as_bytes())
        })
        .ok_or_else(|| {
            EngineError::Schema(format!(
                "column `{name}` of dataset `{dataset}` is missing from the CSV header"
            ))
        })
}

impl CsvEngine {
    fn layout(
        &self,
        dataset: &Dataset,
        headers: &csv::ByteRecord,
        stats: &[Statistic],
    ) -> Result<(Layout, Vec<Prepared>), EngineError> {
        let id = if dataset.bounding.per_unit {
            let name = dataset.bounding.id_column.as_deref().ok_or_else(|| {
                EngineError::Schema(format!("dataset `{}` has no unit id column", dataset.name))
            })?;
            Some(header_index(headers, &dataset.name, name)?)
        } else {
            None
        };
        let mut nums = Vec::new();
        let mut num_names: Vec<&str> = Vec::new();
        for c in &dataset.columns {
            if c.ty == "int" || c.ty == "float" {
                nums.push(NumCol {
                    index: header_index(headers, &dataset.name, &c.name)?,
                    int: c.ty == "int",
                    impute: c.bounds.map_or(0.0, |b| b[0]),
                });
                num_names.push(&c.name);
            } else if c.ty == "category" || c.ty == "id" {
                header_index(headers, &dataset.name, &c.name)?;
            }
        }
        let mut cats: Vec<(usize, Domain)> = Vec::new();
        let mut cat_names: Vec<&str> = Vec::new();
        let mut prepared = Vec::new();
        for s in stats {
            let (value, by) = match &s.kind {
                StatKind::Count => (None, None),
                StatKind::Sum { column } => (Some(column.as_str()), None),
                StatKind::GroupedCount { by } => (None, Some(by.as_str())),
                StatKind::GroupedSum { by, column } => (Some(column.as_str()), Some(by.as_str())),
            };
            let mut coords = 1;
            let group = match by {
                None => None,
                Some(by) => {
                    let col = dataset
                        .columns
                        .iter()
                        .find(|c| c.name == by)
                        .ok_or_else(|| {
                            EngineError::Schema(format!(
                                "dataset `{}` declares no column `{by}`",
                                dataset.name
                            ))
                        })?;
                    let domain = col.domain.as_ref().ok_or_else(|| {
                        EngineError::Schema(format!("column `{by}` has no public domain"))
                    })?;
                    coords = domain.len();
                    Some(match cat_names.iter().position(|n| *n == by) {
                        Some(i) => i,
                        None => {
                            cats.push((
                                header_index(headers, &dataset.name, by)?,
                                Domain::new(domain),
                            ));
                            cat_names.push(by);
                            cats.len() - 1
                        }
                    })
                }
            };
            let grid_scale = 2f64.powi(-s.grid);
            let (value, lo, hi) = match value {
                None => (None, 0.0, 0.0),
                Some(name) => {
                    let slot = num_names.iter().position(|n| *n == name).ok_or_else(|| {
                        EngineError::Schema(format!("column `{name}` is not a declared number"))
                    })?;
                    let b = dataset
                        .columns
                        .iter()
                        .find(|c| c.name == name)
                        .and_then(|c| c.bounds)
                        .ok_or_else(|| {
                            EngineError::Schema(format!("column `{name}` has no public bounds"))
                        })?;
                    // Bounds rounded inward onto the grid: every kept value
                    // lies in [lo, hi], so the declared sensitivity holds.
                    let lo = (b[0] * grid_scale).ceil();
                    let hi = (b[1] * grid_scale).floor();
                    if !(lo.abs() <= 2f64.powi(62) && hi.abs() <= 2f64.powi(62)) || lo > hi {
                        return Err(EngineError::Schema(format!(
                            "column `{name}`: the bounds do not fit the grid 2^{}",
                            s.grid
                        )));
                    }
                    (Some(slot), lo, hi)
                }
            };
            if value.is_none() && s.grid > 0 {
                return Err(EngineError::Schema(
                    "a count needs a grid exponent ≤ 0".into(),
                ));
            }
            prepared.push(Prepared {
                value,
                group,
                grid_scale,
                lo,
                hi,
                coords,
                count_shift: -s.grid,
            });
        }
        Ok((
            Layout {
                id,
                nums,
                cats,
                drop_invalid: dataset.invalid_rows != "clamp",
            },
            prepared,
        ))
    }

    /// Aggregates from any reader (the file variant opens the path).
    pub fn aggregate_reader<R: Read>(
        &self,
        dataset: &Dataset,
        reader: R,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        let io = |_: csv::Error| {
            EngineError::Io(format!("cannot read the CSV of dataset `{}`", dataset.name))
        };
        let mut rdr = csv::ReaderBuilder::new()
            .flexible(true)
            .has_headers(true)
            .from_reader(reader);
        let headers = rdr.byte_headers().map_err(io)?.clone();
        let (layout, prepared) = self.layout(dataset, &headers, stats)?;
        let mut acc = Accumulators::new(&prepared);
        let mut rec = csv::ByteRecord::new();
        let mut nums = vec![0f64; layout.nums.len()];
        let mut cats = vec![0u32; layout.cats.len()];
        let Some(id_index) = layout.id else {
            // Row/event-level unit: every valid row is a unit of its own.
            while rdr.read_byte_record(&mut rec).map_err(io)? {
                if layout.parse(&rec, &mut nums, &mut cats) {
                    acc.add(&prepared, &nums, &cats)?;
                }
            }
            return acc.finish(&prepared);
        };
        let cap = dataset.bounding.rows_per_unit.unwrap_or(1).max(1);
        let width = nums.len() + cats.len();
        let n_nums = nums.len();
        let mut units = UnitTable::new(3 + cap as usize * width, rng);
        // Rows are handled in batches: parse and hash a batch, touch every
        // slot it needs with independent loads (the misses overlap instead
        // of stalling one by one), then update the reservoirs in row order.
        const BATCH: usize = 64;
        let mut keys: Vec<(u64, u64)> = Vec::with_capacity(BATCH);
        let mut batch_nums: Vec<f64> = Vec::with_capacity(BATCH * n_nums);
        let mut batch_cats: Vec<u32> = Vec::with_capacity(BATCH * cats.len());
        let mut more = true;
        while more {
            keys.clear();
            batch_nums.clear();
            batch_cats.clear();
            while keys.len() < BATCH {
                if !rdr.read_byte_record(&mut rec).map_err(io)? {
                    more = false;
                    break;
                }
                if !layout.parse(&rec, &mut nums, &mut cats) {
                    continue;
                }
                keys.push(units.key(&rec[id_index]));
                batch_nums.extend_from_slice(&nums);
                batch_cats.extend_from_slice(&cats);
            }
            let mut sink = 0u64;
            for k in &keys {
                sink = sink.wrapping_add(units.data[((k.0 as usize) & units.mask) * units.slot]);
            }
            std::hint::black_box(sink);
            for (n, key) in keys.iter().enumerate() {
                let b = units.slot_of(*key);
                let seen = units.data[b + 2] + 1;
                units.data[b + 2] = seen;
                // Algorithm R: the n-th row replaces a random kept row with
                // probability cap/n, so the kept rows are a uniform sample.
                let row = if seen <= cap {
                    Some((seen - 1) as usize)
                } else {
                    let j = rng.below_u64(seen);
                    (j < cap).then_some(j as usize)
                };
                if let Some(row) = row {
                    let w = &mut units.data[b + 3 + row * width..b + 3 + (row + 1) * width];
                    for (i, v) in batch_nums[n * n_nums..(n + 1) * n_nums].iter().enumerate() {
                        w[i] = v.to_bits();
                    }
                    let nc = cats.len();
                    for (i, c) in batch_cats[n * nc..(n + 1) * nc].iter().enumerate() {
                        w[n_nums + i] = *c as u64;
                    }
                }
            }
        }
        // Per unit: the kept rows feed ungrouped statistics; grouped ones
        // are bounded further per grouping column.
        let groups_cap = dataset
            .bounding
            .groups_per_unit
            .map_or(usize::MAX, |g| g as usize);
        let per_group_cap = dataset
            .bounding
            .rows_per_group
            .map_or(usize::MAX, |g| g as usize);
        let mut row_nums = vec![0f64; n_nums];
        let mut row_cats = vec![0u32; cats.len()];
        let mut keep: Vec<Vec<bool>> = vec![Vec::new(); cats.len()];
        let mut distinct: Vec<u64> = Vec::new();
        let mut members: Vec<usize> = Vec::new();
        for slot in units.slots() {
            let rows = slot[2].min(cap) as usize;
            let words = &slot[3..3 + rows * width];
            // Which rows each grouping column keeps.
            for (g, kept) in keep.iter_mut().enumerate() {
                kept.clear();
                kept.resize(rows, false);
                let col = n_nums + g;
                distinct.clear();
                for r in 0..rows {
                    let c = words[r * width + col];
                    if c != OUT as u64 && !distinct.contains(&c) {
                        distinct.push(c);
                    }
                }
                shuffle_prefix(&mut distinct, groups_cap, rng);
                distinct.truncate(groups_cap);
                for &c in &distinct {
                    members.clear();
                    members.extend((0..rows).filter(|&r| words[r * width + col] == c));
                    shuffle_prefix(&mut members, per_group_cap, rng);
                    members.truncate(per_group_cap);
                    for &r in &members {
                        kept[r] = true;
                    }
                }
            }
            for r in 0..rows {
                let w = &words[r * width..(r + 1) * width];
                for (x, bits) in row_nums.iter_mut().zip(w) {
                    *x = f64::from_bits(*bits);
                }
                for (g, kept) in keep.iter().enumerate() {
                    row_cats[g] = if kept[r] { w[n_nums + g] as u32 } else { OUT };
                }
                // Ungrouped statistics see every kept row; grouped ones
                // only the rows kept for their grouping column (OUT
                // otherwise, which `add` skips).
                acc.add(&prepared, &row_nums, &row_cats)?;
            }
        }
        acc.finish(&prepared)
    }
}

/// Moves a uniformly random selection of min(k, len) elements to the front
/// (partial Fisher–Yates).
fn shuffle_prefix<T>(v: &mut [T], k: usize, rng: &mut SecureRng) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    for i in 0..k.min(n - 1) {
        let j = i + rng.below_u64((n - i) as u64) as usize;
        v.swap(i, j);
    }
}

impl Engine for CsvEngine {
    fn aggregate(
        &self,
        dataset: &Dataset,
        source: &Path,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        let file = File::open(source).map_err(|_| {
            EngineError::Io(format!(
                "cannot open `{}` for dataset `{}`",
                source.display(),
                dataset.name
            ))
        })?;
        self.aggregate_reader(dataset, BufReader::with_capacity(1 << 20, file), stats, rng)
    }
}

/// A plain, non-private aggregation of the same file (no bounding, no
/// clamping, no noise): the benchmark's baseline. Returns the row count,
/// the sum of `sum_column` and the histogram of `by` over `domain`.
pub fn plain_aggregate(
    source: &Path,
    sum_column: &str,
    by: &str,
    domain: &[String],
) -> Result<(u64, f64, Vec<u64>), EngineError> {
    let file = File::open(source).map_err(|_| EngineError::Io("cannot open the file".into()))?;
    let io = |_: csv::Error| EngineError::Io("cannot read the CSV".into());
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(BufReader::with_capacity(1 << 20, file));
    let headers = rdr.byte_headers().map_err(io)?.clone();
    let si = header_index(&headers, "bench", sum_column)?;
    let bi = header_index(&headers, "bench", by)?;
    let dom = Domain::new(domain);
    let mut rec = csv::ByteRecord::new();
    let (mut n, mut sum, mut hist) = (0u64, 0f64, vec![0u64; domain.len()]);
    while rdr.read_byte_record(&mut rec).map_err(io)? {
        n += 1;
        if let Some(v) = parse_number(rec.get(si), false) {
            sum += v;
        }
        let g = rec.get(bi).map_or(OUT, |f| dom.index(f));
        if g != OUT {
            hist[g as usize] += 1;
        }
    }
    Ok((n, sum, hist))
}
