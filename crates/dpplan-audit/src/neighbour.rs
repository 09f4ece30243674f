//! The neighbouring data sets D and D′, built the way the plan's adjacency
//! defines neighbours, around a planted canary unit:
//!
//! * `add_remove`: D is the data plus the canary, D′ the data (D without
//!   one unit);
//! * `replace`: D is the data, D′ the data with the first unit's rows
//!   replaced by the canary's rows (under the same unit id; under a
//!   user-level unit the first unit is the first row's with a non-empty
//!   id: a row without one is no unit's, and the engine drops it).
//!
//! Under a user-level unit "the data" is the data with each unit reduced
//! to its first row: every other unit is then within every contribution
//! bound, the engine's random selection keeps all of its rows on D and on
//! D′ alike, and the only difference between the two aggregates is the
//! canary's (bounded) contribution. Without the reduction the two engine
//! passes would select different rows of every unit over its bounds, a
//! difference that is not a neighbouring pair.
//!
//! The canary is adversarial: twice the rows a unit may contribute, every
//! number 1,000 bound-widths past its bound on the side of larger
//! magnitude (so a correct runtime clamps it to the extreme value the
//! bounds allow, and a skipped clamp shows), categories cycled through as
//! many of the values the query's filter lets through as a unit may touch
//! (`groups_per_unit`), a binned number at the last edge, fresh ids for every other id
//! column. The side is switched when the query's filter would drop the
//! canary.

use std::collections::BTreeMap;

use dpplan_plan::{Dataset, Release};
use dpplan_vocab::rows::{Filter, GroupKey};
use dpplan_vocab::{Adjacency, ColumnKind};

use dpplan_runtime::RunError;

/// The id of the planted canary unit.
pub const CANARY_ID: &str = "dpplan-audit-canary";
/// The canary's time, for a dataset with a `time` column: a windowed
/// release is audited on the window that starts there.
pub const CANARY_TIME: &str = "2026-01-01T00:00:00Z";

/// D and D′ as CSV bytes, and what they are, in words.
pub struct Neighbours {
    pub d: Vec<u8>,
    pub dp: Vec<u8>,
    pub description: String,
    /// The canary passes the query's filter (else it changes nothing).
    pub passes_filter: bool,
}

/// A canary cell's value.
#[derive(Clone, Debug)]
enum Value {
    Text(String),
    Number(f64),
}

struct Table {
    header: csv::ByteRecord,
    rows: Vec<csv::ByteRecord>,
}

fn read_table(dataset: &str, data: &[u8]) -> Result<Table, RunError> {
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(true)
        .from_reader(data);
    let err =
        |e: csv::Error| RunError::Data(format!("cannot read the CSV of dataset `{dataset}`: {e}"));
    let header = rd.byte_headers().map_err(err)?.clone();
    let mut rows = Vec::new();
    let mut rec = csv::ByteRecord::new();
    while rd.read_byte_record(&mut rec).map_err(err)? {
        rows.push(rec.clone());
    }
    Ok(Table { header, rows })
}

fn write_table(header: &csv::ByteRecord, rows: impl Iterator<Item = csv::ByteRecord>) -> Vec<u8> {
    let mut w = csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    // Invariant: writing to a Vec cannot fail.
    w.write_byte_record(header).expect("write to memory");
    for r in rows {
        w.write_byte_record(&r).expect("write to memory");
    }
    w.into_inner().unwrap_or_default()
}

/// The categories a top-level `in` (or a conjunction of them) allows for
/// each column.
fn allowed_categories(f: Option<&Filter>, out: &mut BTreeMap<String, Vec<String>>) {
    match f {
        Some(Filter::And { items }) => items.iter().for_each(|i| allowed_categories(Some(i), out)),
        Some(Filter::In { column, values }) => {
            out.insert(column.clone(), values.clone());
        }
        _ => {}
    }
}

fn holds(f: &Filter, row: &BTreeMap<String, Value>) -> bool {
    match f {
        Filter::And { items } => items.iter().all(|i| holds(i, row)),
        Filter::Or { items } => items.iter().any(|i| holds(i, row)),
        Filter::Not { inner } => !holds(inner, row),
        Filter::Compare { column, cmp, value } => match row.get(column) {
            Some(Value::Number(x)) => cmp.holds(*x, *value),
            _ => false,
        },
        Filter::In { column, values } => match row.get(column) {
            Some(Value::Text(x)) => values.contains(x),
            _ => false,
        },
    }
}

/// The canary's number for a column: past the bound of larger magnitude
/// (`high`), or past the other one; a binned column takes its last edge.
fn extreme(bounds: Option<[f64; 2]>, high: bool, int: bool) -> f64 {
    let Some([lo, hi]) = bounds else {
        return if high { 1.0e6 } else { -1.0e6 };
    };
    let width = (hi - lo).abs().max(1.0);
    let up = hi.abs() >= lo.abs();
    let v = if up == high {
        hi + 1000.0 * width
    } else {
        lo - 1000.0 * width
    };
    if int {
        v.round()
    } else {
        v
    }
}

/// The canary's `j`-th row as values by column.
fn canary_row(
    ds: &Dataset,
    r: &Release,
    j: usize,
    id: &str,
    high: bool,
    victim: &BTreeMap<String, String>,
) -> BTreeMap<String, Value> {
    let mut allowed = BTreeMap::new();
    allowed_categories(r.aggregation.filter.as_ref(), &mut allowed);
    let binned: BTreeMap<&str, f64> = r
        .aggregation
        .keys
        .iter()
        .filter_map(|k| match k {
            GroupKey::Bins { column, edges, .. } => Some((column.as_str(), *edges.last()?)),
            _ => None,
        })
        .collect();
    let groups = ds.bounding.groups_per_unit.unwrap_or(u64::MAX).min(1 << 20) as usize;
    let mut row = BTreeMap::new();
    for c in &ds.columns {
        let v = match c.ty {
            ColumnKind::Id if ds.bounding.id_column.as_deref() == Some(c.name.as_str()) => {
                Value::Text(id.to_string())
            }
            ColumnKind::Id => Value::Text(format!("{CANARY_ID}-{j}")),
            ColumnKind::Category => {
                let dom = allowed
                    .get(&c.name)
                    .or(c.domain.as_ref())
                    .cloned()
                    .unwrap_or_default();
                // as many groups as a unit may touch: its rows concentrate
                // where the bounds let them count most
                // (under replace, never the replaced row's own category)
                let dom: Vec<String> = dom
                    .into_iter()
                    .filter(|v| victim.get(&c.name) != Some(v))
                    .collect();
                let cycle = dom.len().min(groups).max(1);
                Value::Text(dom.get(j % cycle).cloned().unwrap_or_default())
            }
            // the audited window's first instant
            ColumnKind::Time => Value::Text(CANARY_TIME.into()),
            ColumnKind::Int | ColumnKind::Float => match binned.get(c.name.as_str()) {
                Some(&edge) => Value::Number(edge),
                None => Value::Number(extreme(c.bounds, high, c.ty == ColumnKind::Int)),
            },
        };
        row.insert(c.name.clone(), v);
    }
    // the unit's id column, declared or not
    if let Some(idc) = ds
        .bounding
        .id_column
        .as_ref()
        .filter(|_| ds.bounding.per_unit)
    {
        row.insert(idc.clone(), Value::Text(id.to_string()));
    }
    row
}

fn to_record(header: &csv::ByteRecord, row: &BTreeMap<String, Value>) -> csv::ByteRecord {
    header
        .iter()
        .map(|h| match row.get(String::from_utf8_lossy(h).as_ref()) {
            Some(Value::Text(s)) => s.clone(),
            Some(Value::Number(x)) => x.to_string(),
            None => String::new(),
        })
        .collect::<Vec<_>>()
        .iter()
        .map(|s| s.as_bytes())
        .collect()
}

/// The canary's rows (twice what a unit may contribute) on the side whose
/// numbers pass the query's filter.
fn canary(
    ds: &Dataset,
    r: &Release,
    header: &csv::ByteRecord,
    id: &str,
    victim: Option<&csv::ByteRecord>,
) -> (Vec<csv::ByteRecord>, bool) {
    let victim: BTreeMap<String, String> = victim
        .map(|v| {
            header
                .iter()
                .zip(v.iter())
                .map(|(h, x)| {
                    (
                        String::from_utf8_lossy(h).into_owned(),
                        String::from_utf8_lossy(x).into_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let n = if ds.bounding.per_unit {
        2 * ds.bounding.rows_per_unit.unwrap_or(1).clamp(1, 1_000_000) as usize
    } else {
        1
    };
    let passes = |high: bool| {
        r.aggregation
            .filter
            .as_ref()
            .is_none_or(|f| holds(f, &canary_row(ds, r, 0, id, high, &victim)))
    };
    let (high, ok) = if passes(true) {
        (true, true)
    } else {
        (false, passes(false))
    };
    let rows = (0..n)
        .map(|j| to_record(header, &canary_row(ds, r, j, id, high, &victim)))
        .collect();
    (rows, ok)
}

fn reduced(ds: &Dataset) -> &'static str {
    if ds.bounding.per_unit {
        " (each unit reduced to its first row)"
    } else {
        ""
    }
}

/// The index of the unit id column in `header`, under a user-level unit.
fn id_index(ds: &Dataset, header: &csv::ByteRecord) -> Option<usize> {
    let name = ds
        .bounding
        .id_column
        .as_deref()
        .filter(|_| ds.bounding.per_unit)?;
    header.iter().position(|h| h == name.as_bytes())
}

/// Each unit reduced to its first row (user-level units only).
fn first_rows(ds: &Dataset, t: Table) -> Table {
    let Some(ix) = id_index(ds, &t.header) else {
        return t;
    };
    let mut seen = std::collections::HashSet::new();
    let rows = t
        .rows
        .into_iter()
        .filter(|r| seen.insert(r.get(ix).unwrap_or_default().to_vec()))
        .collect();
    Table {
        header: t.header,
        rows,
    }
}

/// D and D′ for release `r` on the dataset's CSV `data`.
pub fn neighbours(
    ds: &Dataset,
    r: &Release,
    adjacency: Adjacency,
    data: &[u8],
) -> Result<Neighbours, RunError> {
    let t = first_rows(ds, read_table(&ds.name, data)?);
    match adjacency {
        Adjacency::AddRemove => {
            let (rows, passes_filter) = canary(ds, r, &t.header, CANARY_ID, None);
            let n = rows.len();
            Ok(Neighbours {
                d: write_table(&t.header, t.rows.iter().cloned().chain(rows)),
                dp: write_table(&t.header, t.rows.into_iter()),
                description: format!(
                    "add/remove: D = the data{} plus a canary unit ({n} row(s), every number 1,000 bound-widths past its bound); D′ = the data (D without the canary)",
                    reduced(ds)
                ),
                passes_filter,
            })
        }
        Adjacency::Replace => {
            let idx = id_index(ds, &t.header);
            // the first unit: under a user-level unit the first row with an
            // id (a row without one is no unit's, and the engine drops it:
            // replacing "its unit" would change nothing)
            let found = t.rows.iter().enumerate().find(|(_, row)| match idx {
                Some(ix) => row.get(ix).is_some_and(|id| !id.is_empty()),
                None => true,
            });
            let Some((at, first)) = found else {
                return Err(RunError::Data(format!(
                    "dataset `{}` has no {}: under replace adjacency the audit replaces one unit's rows",
                    ds.name,
                    if t.rows.is_empty() { "rows" } else { "row with a unit id" }
                )));
            };
            let victim = idx.and_then(|i| first.get(i)).map(<[u8]>::to_vec);
            let id = victim.as_deref().map_or(CANARY_ID.to_string(), |v| {
                String::from_utf8_lossy(v).into_owned()
            });
            let (rows, passes_filter) = canary(ds, r, &t.header, &id, Some(first));
            let n = rows.len();
            let kept = t
                .rows
                .iter()
                .enumerate()
                .filter(|(i, row)| match (idx, &victim) {
                    (Some(ix), Some(v)) => row.get(ix) != Some(v.as_slice()),
                    _ => *i != at,
                });
            let dp = write_table(&t.header, kept.map(|(_, r)| r.clone()).chain(rows));
            Ok(Neighbours {
                d: write_table(&t.header, t.rows.iter().cloned()),
                dp,
                description: format!(
                    "replace: D = the data{}; D′ = the data with the first unit's rows{} replaced by a canary's ({n} row(s), every number 1,000 bound-widths past its bound)",
                    reduced(ds),
                    if idx.is_some() { " (the first with an id)" } else { "" }
                ),
                passes_filter,
            })
        }
    }
}
