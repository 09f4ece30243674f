//! Bounding: the accumulators of the exact aggregates, and user-level
//! bounding in two steps — [`Reservoirs::fill`] reads every row into its
//! unit's reservoir (Algorithm R), [`Reservoirs::drain`] then bounds each
//! unit's groups ([`GroupBounds`]) and adds its kept rows to the
//! [`Accumulators`].

use dpplan_plan::{Bounding, Dataset};

use super::hash::IdHasher;
use super::layout::{Fields, Layout, Prepared, OUT};
use super::rows::IdSet;
use super::table::UnitTable;
use super::{EngineError, RowReader};
use crate::rng::SecureRng;

/// A sampled dataset's rate q in (0, 1), checked; `None` without
/// sampling or at 100 %. A rate outside (0, 1] (NaN included) is refused,
/// never taken for "no sampling", and so is a sample without a user-level
/// unit id: the engine samples the units of a user-level unit only, all
/// of a unit's rows kept or dropped together (the checker refuses both,
/// DP007 and DP014; a hand-written plan file still meets this). Every
/// engine reads the rate through here (the Spark engine too).
pub fn sample_rate(dataset: &Dataset) -> Result<Option<f64>, EngineError> {
    let Some(q) = dataset.sample else {
        return Ok(None);
    };
    if q == 1.0 {
        return Ok(None);
    }
    if q == 0.0 || !(0.0..1.0).contains(&q) {
        return Err(EngineError::Schema(format!(
            "dataset `{}`: the sample rate {q} is not in (0, 1]",
            dataset.name
        )));
    }
    if !dataset.bounding.per_unit || dataset.bounding.id_column.is_none() {
        return Err(EngineError::Schema(format!(
            "dataset `{}` samples its units but has no unit id column: the engine samples the units of a user-level unit only",
            dataset.name
        )));
    }
    Ok(Some(q))
}

/// A sampled dataset's coin: a unit is kept when a uniform 64-bit draw is
/// below ⌊q·2⁶⁴⌋, with probability ⌊q·2⁶⁴⌋/2⁶⁴ ≤ q — never above the rate
/// the accountants compose (their bound grows with q). `None`: no sampling
/// ([`sample_rate`], whose refusals it returns).
pub fn sample_threshold(dataset: &Dataset) -> Result<Option<u64>, EngineError> {
    // q·2⁶⁴ is exact (a power of two), its floor below 2⁶⁴ for q < 1
    Ok(sample_rate(dataset)?.map(|q| (q * 18_446_744_073_709_551_616.0).floor() as u64))
}

/// One unit's coin of a sampled pass: kept when a uniform 64-bit draw of
/// `rng` is below the threshold `t` ([`sample_threshold`]). The engine's
/// rule, which `dpplan audit` runs for its canary too.
#[inline]
pub fn sample_coin(t: u64, rng: &mut SecureRng) -> bool {
    rng.next_u64() < t
}

fn overflow() -> EngineError {
    EngineError::Overflow("a sum overflowed 128 bits".into())
}

/// The exact aggregates, per statistic and coordinate (group): sums in
/// grid units, counts.
pub(super) struct Accumulators {
    values: Vec<Vec<i128>>,
    counts: Vec<Vec<u64>>,
    /// The ids of a row-level distinct count (one set, shared by every
    /// distinct statistic of the pass: they count one column).
    ids: IdSet,
    /// Scratch: the cells one unit counted in, for users per cell (reused
    /// from unit to unit: no allocation per unit).
    unit_cells: Vec<u32>,
}

impl Accumulators {
    pub(super) fn new(prepared: &[Prepared]) -> Self {
        Accumulators {
            values: prepared.iter().map(|p| vec![0i128; p.coords]).collect(),
            counts: prepared.iter().map(|p| vec![0u64; p.coords]).collect(),
            ids: IdSet::default(),
            unit_cells: Vec::new(),
        }
    }

    /// Adds a row's id (its keyed hash) to the row-level distinct count.
    #[inline]
    pub(super) fn add_distinct(&mut self, prepared: &[Prepared], id: Option<u128>) {
        if let Some(id) = id {
            if prepared.iter().any(|p| p.of_ids) {
                self.ids.insert(id);
            }
        }
    }

    /// Adds one row (numeric values and category indexes) of a row-level
    /// unit.
    #[inline]
    pub(super) fn add(
        &mut self,
        prepared: &[Prepared],
        nums: &[f64],
        cats: &[u32],
    ) -> Result<(), EngineError> {
        for (i, p) in prepared.iter().enumerate() {
            if p.distinct {
                continue; // `add_distinct`, or the units
            }
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
                Some(v) => self.add_value(i, slot, i128::from(p.grid.at(nums[v])))?,
            }
        }
        Ok(())
    }

    /// Adds another thread's accumulators: exact (integers), so the
    /// result does not depend on how the rows were shared out.
    pub(super) fn merge(&mut self, mut other: Accumulators) -> Result<(), EngineError> {
        for (mine, theirs) in self.values.iter_mut().zip(other.values) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a = a.checked_add(b).ok_or_else(overflow)?;
            }
        }
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                // at most one per row read: cannot reach 2^64
                *a += b;
            }
        }
        if self.ids.len() < other.ids.len() {
            std::mem::swap(&mut self.ids, &mut other.ids);
        }
        self.ids.extend(other.ids);
        Ok(())
    }

    #[inline]
    fn add_value(&mut self, stat: usize, slot: usize, x: i128) -> Result<(), EngineError> {
        let acc = &mut self.values[stat][slot];
        *acc = acc.checked_add(x).ok_or_else(overflow)?;
        Ok(())
    }

    pub(super) fn finish(self, prepared: &[Prepared]) -> Result<Vec<Vec<i128>>, EngineError> {
        let mut out = Vec::with_capacity(prepared.len());
        for (i, p) in prepared.iter().enumerate() {
            if p.value.is_some() {
                out.push(self.values[i].clone());
            } else {
                let distinct = [self.ids.len() as u64];
                // a distinct count of ids is the set's size (of the units,
                // `counts` holds them)
                let counts = match p.of_ids {
                    true => &distinct[..],
                    false => &self.counts[i][..],
                };
                let mut v = Vec::with_capacity(p.coords);
                for &c in counts {
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

/// Uniform bounded integers from the [`SecureRng`], exact (Lemire's
/// multiply-and-reject), drawing 32 random bits per draw when the bound
/// fits in 32 bits (every realistic reservoir) from a buffer filled in
/// bulk: half the generator output of [`SecureRng::below_u64`] and no
/// per-draw call into the generator.
struct Draws {
    buf: [u8; 256],
    pos: usize,
}

impl Draws {
    fn new() -> Self {
        Draws {
            buf: [0; 256],
            pos: 256,
        }
    }

    #[inline]
    fn next_u32(&mut self, rng: &mut SecureRng) -> u32 {
        if self.pos == self.buf.len() {
            rng.fill_bytes(&mut self.buf);
            self.pos = 0;
        }
        let b = &self.buf[self.pos..self.pos + 4];
        self.pos += 4;
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Uniform in `0..n` (n ≥ 1).
    #[inline]
    fn below(&mut self, n: u64, rng: &mut SecureRng) -> u64 {
        let Ok(n32) = u32::try_from(n) else {
            return rng.below_u64(n);
        };
        let mut m = u64::from(self.next_u32(rng)) * n;
        if (m as u32) < n32 {
            // reject the 2^32 mod n lowest products: every result then has
            // exactly ⌊2^32 / n⌋ preimages
            let threshold = n32.wrapping_neg() % n32;
            while (m as u32) < threshold {
                m = u64::from(self.next_u32(rng)) * n;
            }
        }
        m >> 32
    }
}

/// Moves a uniformly random selection of min(k, len) elements to the front
/// (partial Fisher–Yates).
fn shuffle_prefix<T>(v: &mut [T], k: usize, draws: &mut Draws, rng: &mut SecureRng) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    for i in 0..k.min(n - 1) {
        let j = i + draws.below((n - i) as u64, rng) as usize;
        v.swap(i, j);
    }
}

/// Rows per batch of user-level bounding.
const BATCH: usize = 256;

/// A kept row without a distinct id (its field missing or empty): no keyed
/// hash half reaches 2^61, so this one is never a hash.
pub(super) const NO_ID: u128 = u128::MAX;

/// A distinct id as two stored fields (high half first).
#[inline]
fn id_fields(id: u128) -> [u64; 2] {
    [(id >> 64) as u64, id as u64]
}

/// Parsed rows awaiting their reservoir update: keys, and per row the
/// summed numbers and category indexes (fixed-size rows, no allocation),
/// then the rows' slots in the table.
struct Batch {
    keys: Vec<u64>,
    checks: Vec<u64>,
    /// The rows' distinct ids (keyed hashes, [`NO_ID`] for none), when a
    /// distinct count of ids needs them.
    ids: Vec<u128>,
    vals: Vec<f64>,
    cats: Vec<u32>,
    n_vals: usize,
    n_cats: usize,
    slots: Vec<usize>,
}

impl Batch {
    fn new(n_vals: usize, n_cats: usize) -> Self {
        Batch {
            keys: Vec::with_capacity(BATCH),
            checks: Vec::with_capacity(BATCH),
            ids: Vec::with_capacity(BATCH),
            vals: vec![0.0; BATCH * n_vals],
            cats: vec![OUT; BATCH * n_cats],
            n_vals,
            n_cats,
            slots: Vec::with_capacity(BATCH),
        }
    }

    /// The summed numbers of row `n`.
    #[inline]
    fn vals(&self, n: usize) -> &[f64] {
        &self.vals[n * self.n_vals..(n + 1) * self.n_vals]
    }

    /// The category indexes of row `n`.
    #[inline]
    fn cats(&self, n: usize) -> &[u32] {
        &self.cats[n * self.n_cats..(n + 1) * self.n_cats]
    }

    /// Reads the next [`BATCH`] valid rows (fewer at the end of the data):
    /// parses them and hashes their unit ids (column `id`) with the
    /// table's hashers. False when the data ended.
    #[inline]
    fn read<Rd: RowReader>(
        &mut self,
        records: &mut Rd,
        rec: &mut Rd::Rec,
        layout: &Layout,
        id: usize,
        units: &UnitTable,
    ) -> Result<bool, EngineError> {
        let (n_vals, n_cats) = (self.n_vals, self.n_cats);
        self.keys.clear();
        self.checks.clear();
        self.ids.clear();
        while self.keys.len() < BATCH {
            if !records.next_row(rec)? {
                return Ok(false);
            }
            let n = self.keys.len();
            if !layout.parse(
                rec,
                &mut self.vals[n * n_vals..(n + 1) * n_vals],
                &mut self.cats[n * n_cats..(n + 1) * n_cats],
            ) {
                continue;
            }
            if let Some(d) = &layout.distinct {
                self.ids.push(d.key(rec).unwrap_or(NO_ID));
            }
            // `parse` refuses a row without its id
            let id = rec.field(id).unwrap_or_default();
            self.keys.push(units.hasher.key(id));
            self.checks.push(units.checker.check(id));
        }
        Ok(true)
    }
}

/// Parsed rows of user-level bounding on their way to the thread that owns
/// their units: per row the unit's key and check, the stored values (each
/// summed number's offset on its grid, as the reservoirs store it) and the
/// category indexes.
pub(super) struct Routed {
    pub(super) keys: Vec<u64>,
    pub(super) checks: Vec<u64>,
    pub(super) fields: Vec<u64>,
    pub(super) cats: Vec<u32>,
    n_fields: usize,
    n_cats: usize,
}

impl Routed {
    pub(super) fn new(layout: &Layout, rows: usize) -> Self {
        let (nf, nc) = (layout.stored_fields(), layout.cats.len());
        Routed {
            keys: Vec::with_capacity(rows),
            checks: Vec::with_capacity(rows),
            fields: Vec::with_capacity(rows * nf),
            cats: Vec::with_capacity(rows * nc),
            n_fields: nf,
            n_cats: nc,
        }
    }

    /// Adds a parsed row (`vals`: the row's parsed numbers, `cats`: its
    /// category indexes, `id`: its distinct id when a distinct count of ids
    /// needs it) of the unit (`key`, `check`).
    #[inline]
    pub(super) fn push(
        &mut self,
        layout: &Layout,
        (key, check): (u64, u64),
        vals: &[f64],
        cats: &[u32],
        id: Option<u128>,
    ) {
        self.keys.push(key);
        self.checks.push(check);
        for (v, grid) in &layout.fields {
            // as in `Reservoirs::keep`
            let x = (i128::from(grid.at(vals[*v])) - i128::from(grid.lo as i64)) as u64;
            self.fields.push(x);
        }
        if let Some(id) = id {
            self.fields.extend(id_fields(id));
        }
        self.cats.extend_from_slice(cats);
    }

    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// An empty batch of the same shape, with the same capacity.
    pub(super) fn take(&mut self) -> Routed {
        let rows = self.keys.capacity();
        std::mem::replace(
            self,
            Routed {
                keys: Vec::with_capacity(rows),
                checks: Vec::with_capacity(rows),
                fields: Vec::with_capacity(rows * self.n_fields),
                cats: Vec::with_capacity(rows * self.n_cats),
                n_fields: self.n_fields,
                n_cats: self.n_cats,
            },
        )
    }

    pub(super) fn clear(&mut self) {
        self.keys.clear();
        self.checks.clear();
        self.fields.clear();
        self.cats.clear();
    }
}

/// User-level bounding: a reservoir of at most `rows_per_unit` rows per
/// unit, in the [`UnitTable`].
pub(super) struct Reservoirs {
    units: UnitTable,
    /// `rows_per_unit`, at least 1.
    cap: u64,
    /// Whether a kept row stores anything (a count alone stores nothing,
    /// and then a row needs no random index).
    payload: bool,
    draws: Draws,
    batch: Batch,
    /// A kept row's stored values, before they go into the table.
    fields: Vec<u64>,
}

impl Reservoirs {
    /// Empty reservoirs sized for what the statistics store per row, keyed
    /// by `hashers` (the unit key's and the check's).
    pub(super) fn new(
        dataset: &Dataset,
        layout: &Layout,
        hashers: (IdHasher, IdHasher),
    ) -> Result<Self, EngineError> {
        let cap = dataset.bounding.rows_per_unit.unwrap_or(1).max(1);
        let too_large = || {
            EngineError::Schema(format!(
                "dataset `{}`: rows_per_unit is too large",
                dataset.name
            ))
        };
        let cap_rows = usize::try_from(cap).map_err(|_| too_large())?;
        let n_fields = layout.stored_fields();
        let n_cats = layout.cats.len();
        // the least bytes that hold every hi − lo, and every domain index
        // plus the all-ones "outside" marker
        let span = layout
            .fields
            .iter()
            .map(|(_, g)| (g.hi - g.lo) as u64)
            .max();
        let field_bytes = match layout.distinct {
            // a distinct id's halves take 8 bytes each
            Some(_) => 8,
            None => span.map_or(1, |s| (64 - s.leading_zeros() as usize).div_ceil(8).max(1)),
        };
        let largest_domain = layout.cats.iter().map(|g| g.len()).max();
        let cat_bytes = match largest_domain.unwrap_or(0) {
            0..=254 => 1,
            255..=65534 => 2,
            _ => 4,
        };
        let units = UnitTable::new(cap_rows, n_fields, field_bytes, n_cats, cat_bytes, hashers)
            .ok_or_else(too_large)?;
        Ok(Reservoirs {
            units,
            cap,
            payload: n_fields + n_cats > 0,
            draws: Draws::new(),
            batch: Batch::new(layout.vals.len(), n_cats),
            fields: vec![0u64; n_fields],
        })
    }

    /// Step 1: reads every row into its unit's reservoir (unit id in
    /// column `id`). Rows are handled in batches: parse and hash a batch,
    /// load the home slot of every row in a loop of independent loads (the
    /// cache misses overlap instead of stalling one by one), find every
    /// row's slot (now cached), then update the reservoirs in row order.
    pub(super) fn fill<Rd: RowReader>(
        &mut self,
        records: &mut Rd,
        layout: &Layout,
        id: usize,
        rng: &mut SecureRng,
    ) -> Result<(), EngineError> {
        let mut rec = records.record();
        let mut more = true;
        while more {
            more = self
                .batch
                .read(records, &mut rec, layout, id, &self.units)?;
            self.units.prefetch(&self.batch.keys);
            self.units
                .locate(&self.batch.keys, &self.batch.checks, &mut self.batch.slots);
            self.keep(layout, rng);
        }
        Ok(())
    }

    /// Counts each row of the batch for its unit and keeps it by Algorithm
    /// R: the n-th row of a unit replaces a random kept row with
    /// probability cap/n, so the kept rows are a uniform sample.
    #[inline]
    fn keep(&mut self, layout: &Layout, rng: &mut SecureRng) {
        let Reservoirs {
            units,
            cap,
            payload,
            draws,
            batch,
            fields,
        } = self;
        let (cap, payload) = (*cap, *payload);
        for (n, &at) in batch.slots.iter().enumerate() {
            let seen = units.bump(at);
            if !payload {
                continue;
            }
            let row = if seen <= cap {
                seen - 1
            } else {
                let j = draws.below(seen, rng);
                if j >= cap {
                    continue;
                }
                j
            };
            let vals = batch.vals(n);
            for (x, (v, grid)) in fields.iter_mut().zip(&layout.fields) {
                // in [0, hi − lo] ⊆ [0, 2^63]: fits field_bytes; i128,
                // since 2^63 does not fit an i64 (bounds ±2^62)
                *x = (i128::from(grid.at(vals[*v])) - i128::from(grid.lo as i64)) as u64;
            }
            if let Some(&id) = batch.ids.get(n) {
                let nf = layout.fields.len();
                fields[nf..nf + 2].copy_from_slice(&id_fields(id));
            }
            units.put(at, row as usize, fields, batch.cats(n));
        }
    }

    /// Step 1 of the parallel engine: counts and keeps rows parsed by
    /// any thread (their stored values already on their grids), exactly as
    /// [`Reservoirs::keep`] does, in the order given, [`BATCH`] rows at a
    /// time (prefetch, locate, update).
    pub(super) fn keep_routed(&mut self, rows: &Routed, rng: &mut SecureRng) {
        let (nf, nc) = (rows.n_fields, rows.n_cats);
        let mut slots = std::mem::take(&mut self.batch.slots);
        let mut start = 0;
        while start < rows.keys.len() {
            let end = (start + BATCH).min(rows.keys.len());
            let keys = &rows.keys[start..end];
            self.units.prefetch(keys);
            self.units
                .locate(keys, &rows.checks[start..end], &mut slots);
            for (i, &at) in slots.iter().enumerate() {
                let seen = self.units.bump(at);
                if !self.payload {
                    continue;
                }
                let row = if seen <= self.cap {
                    seen - 1
                } else {
                    let j = self.draws.below(seen, rng);
                    if j >= self.cap {
                        continue;
                    }
                    j
                };
                let n = start + i;
                self.units.put(
                    at,
                    row as usize,
                    &rows.fields[n * nf..(n + 1) * nf],
                    &rows.cats[n * nc..(n + 1) * nc],
                );
            }
            start = end;
        }
        self.batch.slots = slots;
    }

    /// Step 2: per unit, the kept rows feed the ungrouped statistics; the
    /// grouped ones are bounded further per grouping column (at most
    /// `groups_per_unit` groups and `rows_per_group` rows per group).
    /// A sampled dataset ([`sample_threshold`]) keeps each unit with
    /// probability t/2⁶⁴, by a coin of `rng` drawn for it alone.
    pub(super) fn drain(
        self,
        layout: &Layout,
        prepared: &[Prepared],
        bounding: &Bounding,
        sample: Option<u64>,
        acc: &mut Accumulators,
        rng: &mut SecureRng,
    ) -> Result<(), EngineError> {
        let Reservoirs {
            units,
            cap,
            mut draws,
            ..
        } = self;
        let mut groups =
            GroupBounds::new(layout, bounding.groups_per_unit, bounding.rows_per_group);
        let mut sums = vec![0u128; layout.fields.len()];
        let mut row_cats: Vec<u32> = Vec::with_capacity(cap.min(1 << 16) as usize);
        for at in units.units() {
            if let Some(t) = sample {
                if !sample_coin(t, rng) {
                    continue;
                }
            }
            let unit = KeptRows {
                units: &units,
                at,
                rows: units.seen(at).min(cap) as usize,
            };
            unit.add_ungrouped(prepared, &mut sums, acc)?;
            if layout.distinct.is_some() {
                unit.add_ids(layout.fields.len(), acc);
            }
            for g in 0..layout.cats.len() {
                row_cats.clear();
                row_cats.extend((0..unit.rows).map(|r| units.cat(at, r, g)));
                let kept = groups.select(g, &row_cats, &mut draws, rng);
                unit.add_grouped(g, &row_cats, kept, prepared, acc)?;
            }
        }
        Ok(())
    }
}

/// The rows a unit kept: the first `rows` rows of the reservoir at `at`.
#[derive(Clone, Copy)]
struct KeptRows<'t> {
    units: &'t UnitTable,
    at: usize,
    rows: usize,
}

impl KeptRows<'_> {
    /// Adds the distinct ids of the kept rows (stored after the `nf` summed
    /// numbers) to the distinct count's set.
    #[inline]
    fn add_ids(self, nf: usize, acc: &mut Accumulators) {
        for r in 0..self.rows {
            let hi = u128::from(self.units.field(self.at, r, nf));
            let id = (hi << 64) | u128::from(self.units.field(self.at, r, nf + 1));
            if id != NO_ID {
                acc.ids.insert(id);
            }
        }
    }

    /// Ungrouped statistics see every kept row.
    #[inline]
    fn add_ungrouped(
        self,
        prepared: &[Prepared],
        sums: &mut [u128],
        acc: &mut Accumulators,
    ) -> Result<(), EngineError> {
        let (units, at, rows) = (self.units, self.at, self.rows);
        for (f, sum) in sums.iter_mut().enumerate() {
            *sum = (0..rows).map(|r| u128::from(units.field(at, r, f))).sum();
        }
        for (i, p) in prepared.iter().enumerate() {
            match (p.group, p.field) {
                (Some(_), _) => {}
                // the unit is in the table: it has a kept row, and its id
                // is counted once
                (None, None) if p.distinct => acc.counts[i][0] += 1,
                (None, None) => acc.counts[i][0] += rows as u64,
                (None, Some(f)) => {
                    // rows · lo + Σ (value − lo)
                    let x = (rows as i128)
                        .checked_mul(p.grid.lo as i128)
                        .zip(i128::try_from(sums[f]).ok())
                        .and_then(|(a, b)| a.checked_add(b))
                        .ok_or_else(overflow)?;
                    acc.add_value(i, 0, x)?;
                }
            }
        }
        Ok(())
    }

    /// The statistics grouped by column `g` see the rows `kept` for it
    /// (`cats`: the rows' categories in `g`).
    #[inline]
    fn add_grouped(
        self,
        g: usize,
        cats: &[u32],
        kept: &[bool],
        prepared: &[Prepared],
        acc: &mut Accumulators,
    ) -> Result<(), EngineError> {
        for (i, p) in prepared.iter().enumerate() {
            if p.group != Some(g) {
                continue;
            }
            if p.distinct {
                // users per cell: the unit counts once in each cell it kept
                // a row in (at most groups_per_unit cells, so few to scan)
                acc.unit_cells.clear();
                for r in (0..self.rows).filter(|&r| kept[r]) {
                    if !acc.unit_cells.contains(&cats[r]) {
                        acc.unit_cells.push(cats[r]);
                        acc.counts[i][cats[r] as usize] += 1;
                    }
                }
                continue;
            }
            for r in (0..self.rows).filter(|&r| kept[r]) {
                let c = cats[r] as usize;
                match p.field {
                    None => acc.counts[i][c] += 1,
                    Some(f) => {
                        let x = p.grid.lo as i128 + self.units.field(self.at, r, f) as i128;
                        acc.add_value(i, c, x)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The per-unit group bounding of grouped statistics, with scratch space
/// reused from unit to unit (no allocation per unit).
struct GroupBounds {
    groups_cap: usize,
    per_group_cap: usize,
    /// Per grouping column and category: the unit (counter) that last saw
    /// it, and its index in `distinct`.
    stamp: Vec<Vec<u64>>,
    index: Vec<Vec<u32>>,
    unit: u64,
    /// The unit's distinct categories, their row counts, whether kept.
    distinct: Vec<u32>,
    members: Vec<u32>,
    chosen: Vec<bool>,
    order: Vec<u32>,
    rows: Vec<usize>,
    kept: Vec<bool>,
}

impl GroupBounds {
    fn new(layout: &Layout, groups: Option<u64>, per_group: Option<u64>) -> Self {
        let cap =
            |g: Option<u64>| g.map_or(usize::MAX, |g| usize::try_from(g).unwrap_or(usize::MAX));
        GroupBounds {
            groups_cap: cap(groups),
            per_group_cap: cap(per_group),
            stamp: layout.cats.iter().map(|g| vec![0; g.len()]).collect(),
            index: layout.cats.iter().map(|g| vec![0; g.len()]).collect(),
            unit: 0,
            distinct: Vec::new(),
            members: Vec::new(),
            chosen: Vec::new(),
            order: Vec::new(),
            rows: Vec::new(),
            kept: Vec::new(),
        }
    }

    /// Which of a unit's kept rows grouping column `g` keeps, given their
    /// categories: at most `groups_cap` of the unit's groups (categories in
    /// the domain), chosen uniformly at random, and in each at most
    /// `per_group_cap` rows, chosen uniformly at random. Draws only when a
    /// cap actually binds.
    fn select(
        &mut self,
        g: usize,
        cats: &[u32],
        draws: &mut Draws,
        rng: &mut SecureRng,
    ) -> &[bool] {
        let n = cats.len();
        self.kept.clear();
        self.kept.extend(cats.iter().map(|&c| c != OUT));
        if n <= self.groups_cap && n <= self.per_group_cap {
            return &self.kept; // no cap can bind
        }
        self.unit += 1;
        let (stamp, index) = (&mut self.stamp[g], &mut self.index[g]);
        self.distinct.clear();
        self.members.clear();
        for &c in cats {
            if c == OUT {
                continue;
            }
            let c = c as usize;
            if stamp[c] != self.unit {
                stamp[c] = self.unit;
                index[c] = self.distinct.len() as u32;
                self.distinct.push(c as u32);
                self.members.push(0);
            }
            self.members[index[c] as usize] += 1;
        }
        let groups = self.distinct.len();
        if groups > self.groups_cap {
            // a uniformly random subset of groups_cap of the distinct groups
            self.order.clear();
            self.order.extend(0..groups as u32);
            shuffle_prefix(&mut self.order, self.groups_cap, draws, rng);
            self.chosen.clear();
            self.chosen.resize(groups, false);
            for &d in &self.order[..self.groups_cap] {
                self.chosen[d as usize] = true;
            }
            for (k, &c) in self.kept.iter_mut().zip(cats) {
                *k = *k && self.chosen[index[c as usize] as usize];
            }
        } else {
            self.chosen.clear();
            self.chosen.resize(groups, true);
        }
        // groups with more rows than per_group_cap: keep a random subset
        for d in 0..groups {
            if !self.chosen[d] || self.members[d] as usize <= self.per_group_cap {
                continue;
            }
            let c = self.distinct[d];
            self.rows.clear();
            self.rows.extend((0..n).filter(|&r| cats[r] == c));
            shuffle_prefix(&mut self.rows, self.per_group_cap, draws, rng);
            for &r in &self.rows[self.per_group_cap..] {
                self.kept[r] = false;
            }
        }
        &self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_in_range_and_uniform() {
        let mut rng = SecureRng::from_seed_for_tests(7);
        let mut d = Draws::new();
        let mut seen = [0u32; 6];
        for _ in 0..60_000 {
            seen[d.below(6, &mut rng) as usize] += 1;
        }
        // chi-square, 5 df, false alarm 1e-6: critical ≈ 35.9
        let chi: f64 = seen
            .iter()
            .map(|&o| (o as f64 - 10_000.0).powi(2) / 10_000.0)
            .sum();
        assert!(chi < 35.9, "{seen:?}");
        for n in [1, 2, 3 << 30, u32::MAX as u64, 1 << 32, u64::MAX] {
            for _ in 0..100 {
                assert!(d.below(n, &mut rng) < n);
            }
        }
    }
}
