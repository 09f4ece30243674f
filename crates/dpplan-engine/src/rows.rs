//! Language v2 on one row: the compiled `where` filter ([`RowFilter`]),
//! the cell of a row under several group keys and bins ([`Grouping`]), and
//! the set of distinct ids ([`DistinctIds`]).
//!
//! * A filter is decided per row **before bounding**: a row it rejects is
//!   dropped like an invalid row, so it never enters a unit's reservoir
//!   and the unit's bounds are spent on the rows the query counts.
//! * A grouping maps a row to one cell of the product of its keys' public
//!   categories (first key slowest) or to [`OUT`]: a category outside its
//!   domain, a number outside the bins under `outside drop`, NaN.
//! * Distinct ids are kept as the 122-bit keyed hash of the id (two
//!   independent keyed universal hashes, [`IdHasher`]), never the id.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

use dpplan_plan::Dataset;
use dpplan_vocab::rows::{Filter, GroupKey};
use dpplan_vocab::{ColumnKind, Comparison};

use super::domain::Domain;
use super::hash::IdHasher;
use super::layout::{header_index, Fields, OUT};
use super::EngineError;

/// A numeric field as a filter or a bin reads it: its slot among the
/// row's parsed numbers (`Layout::vals`), so a
/// number that a filter, a bin and a sum all read is parsed once. An
/// invalid value is what `invalid_rows clamp` imputes (under `drop` the
/// row was dropped before any filter or bin reads it).
#[derive(Clone, Copy)]
pub(super) struct Number {
    slot: usize,
}

impl Number {
    fn resolve(
        dataset: &Dataset,
        headers: &csv::ByteRecord,
        column: &str,
        slots: &mut NumberSlots,
    ) -> Result<Number, EngineError> {
        let c = declared(dataset, column)?;
        if !matches!(c.ty, ColumnKind::Int | ColumnKind::Float) {
            return Err(EngineError::Schema(format!(
                "column `{column}` of dataset `{}` is not a number",
                dataset.name
            )));
        }
        let index = header_index(headers, &dataset.name, column)?;
        let slot = slots.slot(index).ok_or_else(|| {
            EngineError::Schema(format!("column `{column}` is not a declared number"))
        })?;
        Ok(Number { slot })
    }

    #[inline]
    fn read(&self, vals: &[f64]) -> f64 {
        vals[self.slot]
    }
}

/// Which declared numbers a row's parse reads, in slot order: the numbers
/// filters and bins compare, then the summed ones.
pub(super) struct NumberSlots {
    /// The CSV index of every declared number, in declared order.
    pub(super) csv: Vec<usize>,
    /// Per slot, its declared number (an index into `csv`).
    pub(super) used: Vec<usize>,
}

impl NumberSlots {
    /// The slot of the declared number `n` (added when new).
    pub(super) fn slot_of_declared(&mut self, n: usize) -> usize {
        self.used.iter().position(|&u| u == n).unwrap_or_else(|| {
            self.used.push(n);
            self.used.len() - 1
        })
    }

    /// The slot of the declared number in CSV column `index`; `None` when
    /// no declared number is there.
    fn slot(&mut self, index: usize) -> Option<usize> {
        let n = self.csv.iter().position(|&c| c == index)?;
        Some(self.slot_of_declared(n))
    }
}

fn declared<'d>(
    dataset: &'d Dataset,
    column: &str,
) -> Result<&'d dpplan_plan::Column, EngineError> {
    dataset
        .columns
        .iter()
        .find(|c| c.name == column)
        .ok_or_else(|| {
            EngineError::Schema(format!(
                "dataset `{}` declares no column `{column}`",
                dataset.name
            ))
        })
}

/// A [`Filter`] resolved against the CSV header.
pub(super) enum RowFilter {
    And(Vec<RowFilter>),
    Or(Vec<RowFilter>),
    Not(Box<RowFilter>),
    Compare(Number, Comparison, f64),
    /// The field's bytes are one of these (looked up as a domain is).
    In(usize, Domain),
}

impl RowFilter {
    pub(super) fn resolve(
        dataset: &Dataset,
        headers: &csv::ByteRecord,
        f: &Filter,
        slots: &mut NumberSlots,
    ) -> Result<RowFilter, EngineError> {
        let mut all = |items: &[Filter]| {
            items
                .iter()
                .map(|i| RowFilter::resolve(dataset, headers, i, slots))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(match f {
            Filter::And { items } => RowFilter::And(all(items)?),
            Filter::Or { items } => RowFilter::Or(all(items)?),
            Filter::Not { inner } => RowFilter::Not(Box::new(RowFilter::resolve(
                dataset, headers, inner, slots,
            )?)),
            Filter::Compare { column, cmp, value } => RowFilter::Compare(
                Number::resolve(dataset, headers, column, slots)?,
                *cmp,
                *value,
            ),
            Filter::In { column, values } => {
                declared(dataset, column)?;
                RowFilter::In(
                    header_index(headers, &dataset.name, column)?,
                    Domain::new(values),
                )
            }
        })
    }

    /// The columns an `in` set reads as text, added to `out`.
    pub(super) fn text_columns(&self, out: &mut Vec<usize>) {
        match self {
            RowFilter::And(items) | RowFilter::Or(items) => {
                items.iter().for_each(|i| i.text_columns(out));
            }
            RowFilter::Not(inner) => inner.text_columns(out),
            RowFilter::Compare(..) => {}
            RowFilter::In(index, _) => out.push(*index),
        }
    }

    /// Whether the row (its fields, its parsed numbers `vals`) passes. A
    /// comparison with NaN is false.
    #[inline]
    pub(super) fn holds<F: Fields>(&self, rec: &F, vals: &[f64]) -> bool {
        // the items of `and`/`or` that are comparisons or `in` sets (the
        // usual filter) are decided in the loop, without a call
        match self {
            RowFilter::And(items) => items.iter().all(|i| i.item(rec, vals)),
            RowFilter::Or(items) => items.iter().any(|i| i.item(rec, vals)),
            RowFilter::Not(inner) => !inner.item(rec, vals),
            _ => self.item(rec, vals),
        }
    }

    /// [`RowFilter::holds`], with a comparison or an `in` set decided
    /// inline.
    #[inline(always)]
    fn item<F: Fields>(&self, rec: &F, vals: &[f64]) -> bool {
        match self {
            RowFilter::Compare(n, cmp, v) => cmp.holds(n.read(vals), *v),
            RowFilter::In(index, values) => {
                rec.field(*index).is_some_and(|f| values.index(f) != OUT)
            }
            _ => self.holds(rec, vals),
        }
    }
}

/// One key of a grouping and its stride in the cell index.
enum Part {
    Category { index: usize, domain: Domain },
    Bins { number: Number, key: GroupKey },
}

/// The cells of a grouped statistic: the product of its keys.
pub(super) struct Grouping {
    parts: Vec<(Part, u32)>,
    len: usize,
    /// The keys, to tell two groupings apart.
    pub(super) keys: Vec<GroupKey>,
}

impl Grouping {
    pub(super) fn resolve(
        dataset: &Dataset,
        headers: &csv::ByteRecord,
        keys: &[GroupKey],
        slots: &mut NumberSlots,
    ) -> Result<Grouping, EngineError> {
        let mut parts = Vec::with_capacity(keys.len());
        let mut len: usize = 1;
        for k in keys.iter().rev() {
            let part = match k {
                GroupKey::Category { column, domain } => {
                    declared(dataset, column)?;
                    Part::Category {
                        index: header_index(headers, &dataset.name, column)?,
                        domain: Domain::new(domain),
                    }
                }
                GroupKey::Bins { column, .. } => Part::Bins {
                    number: Number::resolve(dataset, headers, column, slots)?,
                    key: k.clone(),
                },
            };
            let stride = u32::try_from(len).map_err(|_| too_many(dataset))?;
            parts.push((part, stride));
            len = len.checked_mul(k.len()).ok_or_else(|| too_many(dataset))?;
        }
        if len == 0 || u32::try_from(len).map_or(true, |l| l == OUT) {
            return Err(too_many(dataset));
        }
        parts.reverse();
        Ok(Grouping {
            parts,
            len,
            keys: keys.to_vec(),
        })
    }

    /// The columns its category keys read as text, added to `out`.
    pub(super) fn text_columns(&self, out: &mut Vec<usize>) {
        for (part, _) in &self.parts {
            if let Part::Category { index, .. } = part {
                out.push(*index);
            }
        }
    }

    /// The number of cells.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The row's cell (from its fields and its parsed numbers `vals`), or
    /// [`OUT`].
    #[inline]
    pub(super) fn cell<F: Fields>(&self, rec: &F, vals: &[f64]) -> u32 {
        let mut cell = 0u32;
        for (part, stride) in &self.parts {
            let i = match part {
                Part::Category { index, domain } => {
                    rec.field(*index).map_or(OUT, |f| domain.index(f))
                }
                Part::Bins { number, key } => key.bin(number.read(vals)).map_or(OUT, |b| b as u32),
            };
            if i == OUT {
                return OUT;
            }
            cell += i * stride;
        }
        cell
    }
}

fn too_many(dataset: &Dataset) -> EngineError {
    EngineError::Schema(format!(
        "dataset `{}`: a grouped statistic has too many cells",
        dataset.name
    ))
}

/// A hasher for keys that are already uniform keyed hashes: their low 64
/// bits.
#[derive(Default)]
pub(super) struct Uniform(u64);

impl Hasher for Uniform {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u128(&mut self, x: u128) {
        self.0 = x as u64;
    }
}

/// The distinct ids of a row-level `count(distinct …)`: their keyed hashes.
pub(super) type IdSet = HashSet<u128, BuildHasherDefault<Uniform>>;

/// The id column of a row-level distinct count and its two keyed hashes.
#[derive(Clone)]
pub(super) struct DistinctIds {
    pub(super) index: usize,
    pub(super) hashers: (IdHasher, IdHasher),
}

impl DistinctIds {
    /// The row's id as a 122-bit keyed hash; `None` when the field is
    /// missing or empty (that row adds no id).
    #[inline]
    pub(super) fn key<F: Fields>(&self, rec: &F) -> Option<u128> {
        let id = rec.field(self.index).filter(|f| !f.is_empty())?;
        Some((u128::from(self.hashers.0.field(id)) << 64) | u128::from(self.hashers.1.field(id)))
    }
}
