//! The schema resolved against a CSV header: which fields a row needs, how
//! each is parsed, and what each statistic reads.

use dpplan_plan::Dataset;
use dpplan_vocab::{ColumnKind, InvalidRule};

use super::hash::IdHasher;
use super::number::{parse_number, valid_number, Grid};
use super::rows::{DistinctIds, Grouping, NumberSlots, RowFilter};
use super::{EngineError, StatKind, Statistic};
use dpplan_vocab::rows::{Filter, GroupKey};

/// A declared numeric column as parsed per row.
#[derive(Clone, Copy)]
pub(super) struct NumCol {
    index: usize,
    int: bool,
    /// What `invalid_rows clamp` substitutes for an invalid value.
    impute: f64,
}

/// Per-statistic pre-computed clamp in grid units.
pub(super) struct Prepared {
    /// Index into the row's parsed numbers ([`Layout::vals`]).
    pub(super) value: Option<usize>,
    /// Index into the stored values of user-level bounding
    /// ([`Layout::fields`]).
    pub(super) field: Option<usize>,
    /// Index into the row's category slots (grouped).
    pub(super) group: Option<usize>,
    pub(super) grid: Grid,
    pub(super) coords: usize,
    pub(super) count_shift: i32,
    /// A distinct count (of the ids of [`Layout::distinct`] when
    /// `of_ids`, or of the
    /// units under a user-level unit).
    pub(super) distinct: bool,
    /// A distinct count of the ids of [`Layout::distinct`] (a row-level
    /// unit's, or under a user-level unit another id column's), not of the
    /// units.
    pub(super) of_ids: bool,
}

/// The category index of a value outside the public domain.
pub(super) const OUT: u32 = u32::MAX;

/// A row: its fields by index (in the order of the header the layout was
/// resolved against). A CSV record holds only text; a row of Arrow columns
/// ([`crate::native`]) gives its numbers without text in between, with
/// exactly the value and validity the text of the same number has.
pub(super) trait Fields {
    /// The field's bytes; `None` when the record has no such field (an
    /// empty field, and a null, are `Some(b"")`).
    fn field(&self, i: usize) -> Option<&[u8]>;

    /// The field as a number ([`parse_number`] of its text).
    #[inline]
    fn number(&self, i: usize, int: bool) -> Option<f64> {
        parse_number(self.field(i), int)
    }

    /// Whether the field is a valid number ([`valid_number`] of its text):
    /// exactly `self.number(i, int).is_some()`.
    #[inline]
    fn valid(&self, i: usize, int: bool) -> bool {
        valid_number(self.field(i), int)
    }
}

impl Fields for csv::ByteRecord {
    #[inline]
    fn field(&self, i: usize) -> Option<&[u8]> {
        self.get(i)
    }
}

/// The schema resolved against a CSV header.
pub(super) struct Layout {
    pub(super) id: Option<usize>,
    /// The numbers some filter, bin or sum reads, parsed once per row.
    pub(super) vals: Vec<NumCol>,
    /// The other declared numbers, only checked when invalid rows are
    /// dropped (under `clamp` they would be imputed, and nothing reads them).
    checks: Vec<NumCol>,
    /// Every grouping used (a category column, or the cells of several
    /// keys and bins).
    pub(super) cats: Vec<Grouping>,
    /// The statistics' common `where` filter, decided before bounding.
    pub(super) filter: Option<RowFilter>,
    /// The id column of a distinct count of ids (its hashers are set by
    /// the caller: [`Layout::set_distinct_hashers`]): any id column under a
    /// row-level unit; under a user-level unit one other than the unit's
    /// (a count of the unit's own ids is the number of units).
    pub(super) distinct_column: Option<usize>,
    pub(super) distinct: Option<DistinctIds>,
    /// The distinct (number, grid) pairs the sums need: what user-level
    /// bounding stores per kept row.
    pub(super) fields: Vec<(usize, Grid)>,
    drop_invalid: bool,
}

impl Layout {
    /// Zeroed buffers for [`Layout::parse`]: one row's parsed numbers and
    /// category cells, sized for this layout (a caller that passes shorter
    /// ones indexes past their end).
    pub(super) fn row_buffers(&self) -> (Vec<f64>, Vec<u32>) {
        (vec![0.0; self.vals.len()], vec![0; self.cats.len()])
    }

    /// Parses the row into `vals`/`cats` (sized as [`Layout::row_buffers`]);
    /// false when the row is dropped.
    #[inline]
    pub(super) fn parse<F: Fields>(&self, rec: &F, vals: &mut [f64], cats: &mut [u32]) -> bool {
        debug_assert!(vals.len() == self.vals.len() && cats.len() == self.cats.len());
        if let Some(i) = self.id {
            match rec.field(i) {
                Some(f) if !f.is_empty() => {}
                _ => return false,
            }
        }
        for (slot, c) in self.vals.iter().enumerate() {
            match rec.number(c.index, c.int) {
                Some(v) => vals[slot] = v,
                None if self.drop_invalid => return false,
                None => vals[slot] = c.impute,
            }
        }
        for c in &self.checks {
            if !rec.valid(c.index, c.int) {
                return false;
            }
        }
        if let Some(f) = &self.filter {
            if !f.holds(rec, vals) {
                return false;
            }
        }
        for (slot, g) in self.cats.iter().enumerate() {
            cats[slot] = g.cell(rec, vals);
        }
        true
    }

    /// What user-level bounding stores per kept row: the summed numbers on
    /// their grids, then the two halves of the distinct id's keyed hash
    /// when a distinct count of ids needs it.
    pub(super) fn stored_fields(&self) -> usize {
        self.fields.len() + 2 * usize::from(self.distinct.is_some())
    }

    /// The columns a row is read through as text ([`Fields::field`]): the
    /// unit id, a distinct count's ids, the `in` sets and the category
    /// keys, in header order without repeats. Every other column is read
    /// only as a number ([`Fields::number`], [`Fields::valid`]).
    pub(super) fn text_columns(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self.id.into_iter().chain(self.distinct_column).collect();
        if let Some(f) = &self.filter {
            f.text_columns(&mut out);
        }
        for g in &self.cats {
            g.text_columns(&mut out);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The columns a row is read through as numbers ([`Fields::number`],
    /// [`Fields::valid`]): the parsed ones and the checked ones, in header
    /// order without repeats. A column neither here nor in
    /// [`Layout::text_columns`] is never read.
    pub(super) fn number_columns(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .vals
            .iter()
            .chain(&self.checks)
            .map(|c| c.index)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Keys the distinct count's ids with `hashers`.
    pub(super) fn set_distinct_hashers(&mut self, hashers: (IdHasher, IdHasher)) {
        if let Some(index) = self.distinct_column {
            self.distinct = Some(DistinctIds { index, hashers });
        }
    }
}

pub(super) fn header_index(
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

impl Layout {
    /// Resolves the dataset's schema and the statistics against the CSV
    /// header: every declared column must be in the header; the numbers
    /// a filter, a bin or a sum reads are parsed (once each), the other
    /// declared numbers only checked (when invalid rows are dropped).
    pub(super) fn resolve(
        dataset: &Dataset,
        headers: &csv::ByteRecord,
        stats: &[Statistic],
    ) -> Result<(Layout, Vec<Prepared>), EngineError> {
        let id = unit_id_index(dataset, headers)?;
        let (nums, num_names) = declared_numbers(dataset, headers)?;
        // the numbers filters and bins compare take the first slots
        let mut slots = NumberSlots {
            csv: nums.iter().map(|c| c.index).collect(),
            used: Vec::new(),
        };
        let filter = common_filter(dataset, stats)?
            .map(|f| RowFilter::resolve(dataset, headers, f, &mut slots))
            .transpose()?;
        let distinct_column = distinct_column(dataset, headers, stats, id)?;
        let mut groups = Groupings::default();
        let mut prepared = Vec::new();
        for s in stats {
            prepared.push(prepare(
                dataset,
                headers,
                s,
                &num_names,
                &mut groups,
                &mut slots,
            )?);
        }
        // The numbers read are parsed (once each); the others are checked.
        let fields = stored_fields(&mut prepared, &mut slots);
        let used = slots.used;
        let drop_invalid = dataset.invalid_rows != InvalidRule::Clamp;
        let vals = used.iter().map(|&n| nums[n]).collect();
        let checks = match drop_invalid {
            true => (0..nums.len())
                .filter(|n| !used.contains(n))
                .map(|n| nums[n])
                .collect(),
            false => Vec::new(),
        };
        Ok((
            Layout {
                id,
                vals,
                checks,
                cats: groups.cats,
                filter,
                distinct_column,
                distinct: None,
                fields,
                drop_invalid,
            },
            prepared,
        ))
    }
}

/// The CSV index of the unit id column under a user-level unit, `None` for
/// row- and event-level units.
fn unit_id_index(
    dataset: &Dataset,
    headers: &csv::ByteRecord,
) -> Result<Option<usize>, EngineError> {
    if !dataset.bounding.per_unit {
        return Ok(None);
    }
    let name = dataset.bounding.id_column.as_deref().ok_or_else(|| {
        EngineError::Schema(format!("dataset `{}` has no unit id column", dataset.name))
    })?;
    Ok(Some(header_index(headers, &dataset.name, name)?))
}

/// Every declared `int`/`float` column with its name, in declared order;
/// checks that the declared categories and ids are in the header too.
fn declared_numbers<'d>(
    dataset: &'d Dataset,
    headers: &csv::ByteRecord,
) -> Result<(Vec<NumCol>, Vec<&'d str>), EngineError> {
    let mut nums = Vec::new();
    let mut num_names: Vec<&str> = Vec::new();
    for c in &dataset.columns {
        if matches!(c.ty, ColumnKind::Int | ColumnKind::Float) {
            nums.push(NumCol {
                index: header_index(headers, &dataset.name, &c.name)?,
                int: c.ty == ColumnKind::Int,
                impute: c.bounds.map_or(0.0, |b| b[0]),
            });
            num_names.push(&c.name);
        } else {
            // ids and categories: the column must exist
            header_index(headers, &dataset.name, &c.name)?;
        }
    }
    Ok((nums, num_names))
}

/// The groupings the statistics use, each once.
#[derive(Default)]
struct Groupings {
    cats: Vec<Grouping>,
}

impl Groupings {
    /// The slot of the grouping by category column `by` (added when new)
    /// and the size of its public domain.
    fn slot(
        &mut self,
        dataset: &Dataset,
        headers: &csv::ByteRecord,
        by: &str,
        slots: &mut NumberSlots,
    ) -> Result<(usize, usize), EngineError> {
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
        let domain = col
            .domain
            .as_ref()
            .ok_or_else(|| EngineError::Schema(format!("column `{by}` has no public domain")))?;
        let keys = [GroupKey::Category {
            column: by.to_string(),
            domain: domain.clone(),
        }];
        self.slot_of(dataset, headers, &keys, slots)
    }

    /// The slot of the grouping by `keys` (added when new) and its number
    /// of cells.
    fn slot_of(
        &mut self,
        dataset: &Dataset,
        headers: &csv::ByteRecord,
        keys: &[GroupKey],
        slots: &mut NumberSlots,
    ) -> Result<(usize, usize), EngineError> {
        if let Some(i) = self.cats.iter().position(|g| g.keys == keys) {
            return Ok((i, self.cats[i].len()));
        }
        let g = Grouping::resolve(dataset, headers, keys, slots)?;
        let len = g.len();
        self.cats.push(g);
        Ok((self.cats.len() - 1, len))
    }
}

/// The filter every statistic shares (`Where`), or none: statistics with
/// different filters are bounded on different rows and are asked for in
/// separate passes.
fn common_filter<'s>(
    dataset: &Dataset,
    stats: &'s [Statistic],
) -> Result<Option<&'s Filter>, EngineError> {
    let filter_of = |s: &'s Statistic| match &s.kind {
        StatKind::Where { filter, .. } => Some(filter),
        _ => None,
    };
    let first = stats.first().and_then(filter_of);
    if stats.iter().any(|s| filter_of(s) != first) {
        return Err(EngineError::Schema(format!(
            "dataset `{}`: statistics with different filters need separate passes",
            dataset.name
        )));
    }
    Ok(first)
}

/// The CSV index of the column of a distinct count of ids (see
/// [`Layout::distinct_column`]): one column per pass.
fn distinct_column(
    dataset: &Dataset,
    headers: &csv::ByteRecord,
    stats: &[Statistic],
    id: Option<usize>,
) -> Result<Option<usize>, EngineError> {
    let mut out = None;
    for s in stats {
        let StatKind::Distinct { column } = s.kind.unfiltered() else {
            continue;
        };
        let index = header_index(headers, &dataset.name, column)?;
        if id == Some(index) {
            continue; // the units: counted as they are kept
        }
        match out {
            Some(other) if other != index => {
                return Err(EngineError::Schema(format!(
                    "dataset `{}`: distinct counts of two columns need separate passes",
                    dataset.name
                )))
            }
            _ => out = Some(index),
        }
    }
    Ok(out)
}

/// A statistic resolved: its grouping slot, its summed number (an index
/// into the declared numbers for now, see [`stored_fields`]) and its grid.
fn prepare(
    dataset: &Dataset,
    headers: &csv::ByteRecord,
    s: &Statistic,
    num_names: &[&str],
    groups: &mut Groupings,
    slots: &mut NumberSlots,
) -> Result<Prepared, EngineError> {
    let kind = s.kind.unfiltered();
    let (value, group, coords) = match kind {
        StatKind::Count | StatKind::Distinct { .. } => (None, None, 1),
        StatKind::Sum { column } => (Some(column.as_str()), None, 1),
        StatKind::GroupedCount { by } => {
            let (slot, coords) = groups.slot(dataset, headers, by, slots)?;
            (None, Some(slot), coords)
        }
        StatKind::GroupedSum { by, column } => {
            let (slot, coords) = groups.slot(dataset, headers, by, slots)?;
            (Some(column.as_str()), Some(slot), coords)
        }
        StatKind::Cells { keys, column } => {
            let (slot, coords) = groups.slot_of(dataset, headers, keys, slots)?;
            (column.as_deref(), Some(slot), coords)
        }
        StatKind::UnitsPerCell { keys } => {
            if !dataset.bounding.per_unit {
                return Err(EngineError::Schema(format!(
                    "dataset `{}`: units per cell need a user-level unit (its rows bounded per unit)",
                    dataset.name
                )));
            }
            let (slot, coords) = groups.slot_of(dataset, headers, keys, slots)?;
            (None, Some(slot), coords)
        }
        StatKind::Where { .. } => {
            return Err(EngineError::Schema("a filter inside a filter".into()))
        }
    };
    let grid_scale = 2f64.powi(-s.grid);
    let (value, lo, hi) = match value {
        None => (None, 0.0, 0.0),
        Some(name) => {
            let slot = num_names.iter().position(|n| *n == name).ok_or_else(|| {
                EngineError::Schema(format!("column `{name}` is not a declared number"))
            })?;
            let (_, lo, hi) = grid_bounds(dataset, name, s.grid)?;
            (Some(slot), lo, hi)
        }
    };
    if value.is_none() && s.grid > 0 {
        return Err(EngineError::Schema(
            "a count needs a grid exponent ≤ 0".into(),
        ));
    }
    Ok(Prepared {
        value,
        field: None,
        group,
        grid: Grid {
            scale: grid_scale,
            lo,
            hi,
        },
        coords,
        count_shift: -s.grid,
        distinct: matches!(
            kind,
            StatKind::Distinct { .. } | StatKind::UnitsPerCell { .. }
        ),
        of_ids: match kind {
            StatKind::Distinct { column } => {
                !dataset.bounding.per_unit
                    || dataset.bounding.id_column.as_deref() != Some(column.as_str())
            }
            _ => false,
        },
    })
}

/// A summed number's grid, as every engine applies it: the scale 2^−k and
/// the column's public bounds rounded **inward** onto the grid (every kept
/// value lies in [lo, hi], so the declared sensitivity holds), each an
/// integer of magnitude ≤ 2^62.
pub fn grid_bounds(
    dataset: &Dataset,
    name: &str,
    grid: i32,
) -> Result<(f64, f64, f64), EngineError> {
    let grid_scale = 2f64.powi(-grid);
    let b = dataset
        .columns
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.bounds)
        .ok_or_else(|| EngineError::Schema(format!("column `{name}` has no public bounds")))?;
    let lo = (b[0] * grid_scale).ceil();
    let hi = (b[1] * grid_scale).floor();
    if !(lo.abs() <= 2f64.powi(62) && hi.abs() <= 2f64.powi(62)) || lo > hi {
        return Err(EngineError::Schema(format!(
            "column `{name}`: the bounds do not fit the grid 2^{grid}"
        )));
    }
    Ok((grid_scale, lo, hi))
}

/// Sets each statistic's `value` to its summed number's slot among the
/// numbers a row's parse reads (`slots`, a new slot on first use) and its
/// `field` to the distinct (slot, grid) pair user-level bounding stores per
/// kept row (the pairs it returns).
fn stored_fields(prepared: &mut [Prepared], slots: &mut NumberSlots) -> Vec<(usize, Grid)> {
    let mut fields: Vec<(usize, Grid)> = Vec::new();
    for p in prepared {
        if let Some(n) = p.value {
            let v = slots.slot_of_declared(n);
            p.value = Some(v);
            let f = (v, p.grid);
            p.field = Some(fields.iter().position(|x| *x == f).unwrap_or_else(|| {
                fields.push(f);
                fields.len() - 1
            }));
        }
    }
    fields
}
