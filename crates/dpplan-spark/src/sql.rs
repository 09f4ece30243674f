//! The Spark SQL of one dataset's exact bounded aggregates.
//!
//! One statement per dataset, generated from the executable plan alone and
//! deterministic (the same plan gives the same text, byte for byte). It
//! reads the temporary view `dpplan_source` that the driver registers, and
//! reproduces the embedded engine (dpplan-runtime's `CsvEngine`) step by
//! step:
//!
//! 1. `typed`: the declared columns, numbers parsed as the embedded engine
//!    parses a CSV field (Unicode white space trimmed, Rust's `f64` grammar,
//!    NaN invalid, an `int` must be integral) when the source is a CSV file,
//!    or cast to `DOUBLE` from a typed source (a table, Parquet, ORC);
//! 2. `cells`: the valid rows (invalid rows dropped, or imputed under
//!    `invalid_rows clamp`), each summed number on its statistic's grid 2^k
//!    (as `Grid::at`: v·2^−k clamped to the inward-rounded bounds, rounded
//!    half away from zero by truncation and an exact remainder test), each
//!    category as its index in the public domain (NULL outside it); the
//!    statistics' common `where` filter decides here, on the valid rows and
//!    before bounding (a comparison reads the valid or imputed number, an
//!    `in` set is a bound parameter and false for a null);
//!    A sampled dataset (`sample units q`) then keeps the rows of the
//!    units whose HMAC-SHA256 under the job's secret key falls below
//!    ⌊q·2⁶⁰⌋ (`sampled`, before the shuffle by unit);
//! 3. user-level units only: `rows_per_unit` rows per unit, then per
//!    grouping column `groups_per_unit` groups per unit and `rows_per_group`
//!    rows per group, each a selection ordered by a keyed hash
//!    (`xxhash64` of the run's secret seed, the unit and the row's used
//!    fields);
//! 4. one aggregation with a grouping set per grouping column: counts and
//!    sums as `DECIMAL(38,0)` integers (Spark's ANSI mode turns an overflow
//!    into an error, never a wrong sum).
//!
//! Names are validated identifiers, quoted with backticks; the public
//! domains, the filters' sets, the seed and a sample's key and threshold
//! are bound parameters (`:seed`, `:dk0`…, `:fv0`…, `:sample_ikey`…); the only
//! literals written into the text are numbers the compiler computed (grid
//! scales and bounds) and fixed patterns.

use std::collections::BTreeMap;
use std::fmt::Write;

use dpplan_engine::{grid_bounds, EngineError, StatKind, Statistic};
use dpplan_plan::Dataset;
use dpplan_vocab::rows::{Filter, GroupKey};
use dpplan_vocab::{ColumnKind, InvalidRule};
use serde::Serialize;

mod decode;
mod filter;
mod sample;
mod window;
use filter::{check_filter, leaf_columns, predicate};
pub use sample::{hmac_pad_hex, SAMPLE_BELOW, SAMPLE_KEY_INNER, SAMPLE_KEY_OUTER};
use sample::{sample_below, sampling};
pub use window::{
    generate_windows, select_params, Windowed, UNIT_KEY_VIEW, WINDOWED_VIEW, WINDOW_STATE_VIEW,
};

/// The view the driver registers the dataset's source as.
pub const SOURCE_VIEW: &str = "dpplan_source";

/// How the source's columns arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Columns {
    /// Every column a string (a CSV file read without inference): numbers
    /// are parsed in SQL exactly as the embedded engine parses them.
    Text,
    /// Typed columns (a table, Parquet, ORC), checked by the driver against
    /// the plan's declaration before anything runs.
    Typed,
}

/// A bound parameter of the statement (never the seed's value: the seed is
/// drawn per run and bound by the runner).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Param {
    Strings(Vec<String>),
    Ints(Vec<i64>),
    Int(i64),
    /// Text, e.g. a JSON array that a statement parses (PySpark cannot bind
    /// an array whose numbers need both `INT` and `BIGINT`).
    Text(String),
}

/// One statistic's place in the result rows.
#[derive(Debug, Clone, PartialEq)]
struct Cell {
    /// The grouping set (index into [`Query::groupings`]), `None` for the
    /// ungrouped set.
    set: Option<usize>,
    /// What it reads of its set's row.
    value: Value,
    coords: usize,
    count_shift: i32,
}

/// What a statistic reads of a result row.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    /// The row count (shifted onto the grid).
    Count,
    /// A summed field (index into the sums).
    Sum(usize),
    /// A distinct count (index into the distinct counts; shifted onto the
    /// grid as a count).
    Distinct(usize),
}

/// The generated statement and how to read its rows back.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The statement, deterministic.
    pub sql: String,
    /// The bound parameters other than `seed`, by name.
    pub params: BTreeMap<String, Param>,
    groupings: usize,
    fields: usize,
    distincts: usize,
    cells: Vec<Cell>,
    /// Rows lead with their slot (a windowed statement).
    slotted: bool,
}

impl Query {
    /// The statement samples the units (`sample units`: it has the
    /// threshold [`SAMPLE_BELOW`]): the runner binds a fresh secret HMAC
    /// key ([`SAMPLE_KEY_INNER`], [`SAMPLE_KEY_OUTER`]).
    pub fn sampled(&self) -> bool {
        self.params.contains_key(SAMPLE_BELOW)
    }
}

fn schema(msg: String) -> EngineError {
    EngineError::Schema(msg)
}

/// A name as the grammar's `ident` (ASCII letter or `_`, then ASCII letters,
/// digits, `_`), quoted with backticks; anything else is refused.
pub fn quote(name: &str) -> Result<String, EngineError> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(schema(format!(
            "`{}` is not a plain identifier: the Spark engine only reads columns named by letters, digits and `_`",
            name.escape_default()
        )));
    }
    Ok(format!("`{name}`"))
}

/// A double literal that Spark reads back as the same `f64` (Rust's
/// shortest round-trip form, in scientific notation: Spark types `2e1` as
/// `DOUBLE`).
fn double(x: f64) -> String {
    format!("{x:e}")
}

/// A declared column.
fn column<'d>(ds: &'d Dataset, name: &str) -> Result<&'d dpplan_plan::Column, EngineError> {
    ds.columns
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| schema(format!("dataset `{}` declares no column `{name}`", ds.name)))
}

/// Rust's `f64::from_str` grammar for a finite number, and for an infinity
/// (NaN is not a valid number).
const FINITE: &str = "^[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?$";
const INFINITE: &str = "^[+-]?([iI][nN][fF]|[iI][nN][fF][iI][nN][iI][tT][yY])$";
/// `str::trim`: Unicode White_Space at both ends.
const TRIM: &str = "^\\\\p{IsWhite_Space}+|\\\\p{IsWhite_Space}+$";

/// A declared number as the source gives it (`t`): the text trimmed of
/// Unicode white space (`str::trim`), or the typed value as a `DOUBLE`.
fn raw(col: &str, columns: Columns) -> String {
    match columns {
        Columns::Typed => format!("CAST({col} AS DOUBLE)"),
        Columns::Text => format!("regexp_replace({col}, '{TRIM}', '')"),
    }
}

/// The number as a `DOUBLE`, NULL when invalid (what `parse_number`
/// returns `None` for; an `int`'s integrality is checked next).
fn number(t: &str, columns: Columns) -> String {
    match columns {
        // the driver checked the type: an integral type for `int`, a numeric
        // one for `float`; NaN is invalid
        Columns::Typed => format!("CASE WHEN NOT isnan({t}) THEN {t} END"),
        Columns::Text => format!(
            "CASE WHEN {t} RLIKE '{FINITE}' OR {t} RLIKE '{INFINITE}' THEN CAST({t} AS DOUBLE) END"
        ),
    }
}

/// What the statistics use: the distinct (number, grid) fields and the
/// grouping columns, each in order of first use, and how each statistic's
/// cells are read back.
struct Uses {
    fields: Vec<(String, i32)>,
    /// Each grouping's keys: one category (a histogram), or the cells of
    /// several keys and bins (the first key slowest).
    groupings: Vec<Vec<GroupKey>>,
    cells: Vec<Cell>,
    /// The columns of the distinct counts, in order of first use (the
    /// unit id's own column under a user-level unit: the units).
    distincts: Vec<String>,
    /// Keys from the data: the only grouping is this column's values as
    /// they are (no public domain; an empty or null value drops the row).
    data_keys: Option<String>,
    /// The statistics' common `where` filter, decided on the valid rows
    /// before bounding (as the embedded engine decides it).
    filter: Option<Filter>,
    /// Windows: the rows come from [`WINDOWED_VIEW`] with their slot
    /// `#sl`; a unit is bounded per slot (its id prefixed by the slot) and
    /// every grouping set is grouped by the slot too.
    slotted: bool,
}

/// Generates the statement of `stats` over dataset `ds`: four steps, each a
/// few common table expressions.
pub fn generate(ds: &Dataset, stats: &[Statistic], columns: Columns) -> Result<Query, EngineError> {
    let head = format!(
        "-- dataset `{}`: exact bounded aggregates (no noise is drawn here)",
        ds.name
    );
    statement(ds, uses(ds, stats)?, &head, columns)
}

/// The four steps of what `uses` asks for, under the comment `head`.
fn statement(ds: &Dataset, uses: Uses, head: &str, columns: Columns) -> Result<Query, EngineError> {
    let below = sample_below(ds, &uses)?;
    let mut sql = String::new();
    let _ = writeln!(sql, "{head}");
    let typed = typed(&mut sql, ds, &uses, columns)?;
    let mut params = cells(&mut sql, ds, &uses, typed)?;
    let rows = match below {
        Some(t) => {
            sampling(&mut sql, ds);
            params.insert(SAMPLE_BELOW.into(), Param::Int(t));
            "sampled"
        }
        None => "cells",
    };
    bounding(&mut sql, ds, &uses, rows);
    aggregation(&mut sql, ds, &uses);
    Ok(Query {
        sql,
        params,
        groupings: uses.groupings.len(),
        fields: uses.fields.len(),
        distincts: uses.distincts.len(),
        cells: uses.cells,
        slotted: uses.slotted,
    })
}

/// The statement of a histogram over keys taken from the data: the
/// bounded count of every value of `column` seen in the valid rows that
/// `filter` holds for, by the same steps as [`generate`] (the dataset's
/// validity rules; under a user-level unit `rows_per_unit` rows, then
/// `groups_per_unit` keys, then `rows_per_group` rows per key, each by the
/// keyed hash), the key being the column's value itself. Its rows are read
/// back by [`Query::decode_keys`]; what they hold must never be revealed
/// but through the threshold.
pub fn generate_keys(
    ds: &Dataset,
    column_name: &str,
    filter: Option<&Filter>,
    columns: Columns,
) -> Result<Query, EngineError> {
    let c = column(ds, column_name)?;
    if !matches!(c.ty, ColumnKind::Id | ColumnKind::Category) {
        return Err(schema(format!(
            "column `{column_name}` holds the keys but is not a category"
        )));
    }
    quote(column_name)?;
    if let Some(f) = filter {
        check_filter(ds, f)?;
    }
    let uses = Uses {
        fields: Vec::new(),
        groupings: vec![vec![GroupKey::Category {
            column: column_name.to_string(),
            domain: Vec::new(),
        }]],
        cells: vec![Cell {
            set: Some(0),
            value: Value::Count,
            coords: 0,
            count_shift: 0,
        }],
        distincts: Vec::new(),
        data_keys: Some(column_name.to_string()),
        filter: filter.cloned(),
        slotted: false,
    };
    let head = format!(
        "-- dataset `{}`: exact bounded counts per key of `{column_name}` (keys from the data: never revealed but through the threshold)",
        ds.name
    );
    statement(ds, uses, &head, columns)
}

/// A histogram's key: the category column `by` and its public domain.
fn category_key(ds: &Dataset, by: &str) -> Result<GroupKey, EngineError> {
    let domain = column(ds, by)?
        .domain
        .clone()
        .ok_or_else(|| schema(format!("column `{by}` has no public domain")))?;
    Ok(GroupKey::Category {
        column: by.to_string(),
        domain,
    })
}

/// The number of cells of `keys`, checked: every key declared (a bin's
/// column a number, its edges finite and strictly increasing), at least one
/// cell, and few enough for an `INT` cell index.
fn cell_count(ds: &Dataset, keys: &[GroupKey]) -> Result<usize, EngineError> {
    let mut n: usize = 1;
    for k in keys {
        let c = column(ds, k.column())?;
        quote(k.column())?;
        if let GroupKey::Bins { edges, .. } = k {
            if !matches!(c.ty, ColumnKind::Int | ColumnKind::Float) {
                return Err(schema(format!(
                    "column `{}` is binned but is not a declared number",
                    c.name
                )));
            }
            if !edges.iter().all(|e| e.is_finite()) || edges.windows(2).any(|w| w[0] >= w[1]) {
                return Err(schema(format!(
                    "the bins of `{}` are not finite and increasing",
                    c.name
                )));
            }
        }
        n = n
            .checked_mul(k.len())
            .filter(|&n| n < i32::MAX as usize)
            .ok_or_else(|| {
                schema(format!(
                    "dataset `{}`: a grouped statistic has too many cells",
                    ds.name
                ))
            })?;
    }
    if n == 0 || keys.is_empty() {
        return Err(schema(format!(
            "dataset `{}`: a grouped statistic has no cell",
            ds.name
        )));
    }
    Ok(n)
}

/// What a statistic reads of each cell's rows: their count, a summed
/// number, or the distinct values of an id column (of the unit's own
/// column, the units).
enum Reads<'s> {
    Rows,
    Sum(&'s String),
    Distinct(&'s String),
}

/// The index of `x` in `v`, pushed at the end when it is not there yet
/// (groupings, fields and distinct columns each listed once).
fn index_of<T: PartialEq>(v: &mut Vec<T>, x: T) -> usize {
    match v.iter().position(|y| *y == x) {
        Some(i) => i,
        None => {
            v.push(x);
            v.len() - 1
        }
    }
}

fn uses(ds: &Dataset, stats: &[Statistic]) -> Result<Uses, EngineError> {
    let mut fields: Vec<(String, i32)> = Vec::new();
    let mut groupings: Vec<Vec<GroupKey>> = Vec::new();
    let mut distincts: Vec<String> = Vec::new();
    let mut cells = Vec::new();
    // one filter for every statistic of a statement, as the embedded
    // engine's pass
    let filter_of = |s: &Statistic| s.kind.filter().cloned();
    let filter = stats.first().and_then(filter_of);
    if stats.iter().any(|s| filter_of(s) != filter) {
        return Err(schema(format!(
            "dataset `{}`: statistics with different filters need separate passes",
            ds.name
        )));
    }
    if let Some(f) = &filter {
        check_filter(ds, f)?;
    }
    for s in stats {
        let (reads, keys) = match s.kind.unfiltered() {
            StatKind::Count => (Reads::Rows, None),
            StatKind::Sum { column } => (Reads::Sum(column), None),
            StatKind::GroupedCount { by } => (Reads::Rows, Some(vec![category_key(ds, by)?])),
            StatKind::GroupedSum { by, column } => {
                (Reads::Sum(column), Some(vec![category_key(ds, by)?]))
            }
            StatKind::Cells { keys, column } => (
                column.as_ref().map_or(Reads::Rows, Reads::Sum),
                Some(keys.clone()),
            ),
            StatKind::Distinct { column: d } => {
                // an id column: the distinct non-empty ids of the kept rows
                if !matches!(column(ds, d)?.ty, ColumnKind::Id | ColumnKind::Category) {
                    return Err(schema(format!(
                        "column `{d}` is counted distinct but is not an id"
                    )));
                }
                quote(d)?;
                (Reads::Distinct(d), None)
            }
            StatKind::UnitsPerCell { keys } => {
                // the unit id's distinct count in each cell's grouping set
                // (`u`, counted over the rows kept for that grouping)
                let (Some(id), true) = (&ds.bounding.id_column, ds.bounding.per_unit) else {
                    return Err(schema(format!(
                        "dataset `{}`: units per cell need a user-level unit (its rows bounded per unit)",
                        ds.name
                    )));
                };
                (Reads::Distinct(id), Some(keys.clone()))
            }
            StatKind::Where { .. } => {
                return Err(schema("a filter inside a filter is not a statistic".into()))
            }
        };
        if !matches!(reads, Reads::Sum(_)) && s.grid > 0 {
            return Err(schema("a count needs a grid exponent ≤ 0".into()));
        }
        let (set, coords) = match keys {
            None => (None, 1),
            Some(keys) => {
                let coords = cell_count(ds, &keys)?;
                (Some(index_of(&mut groupings, keys)), coords)
            }
        };
        let value = match reads {
            Reads::Rows => Value::Count,
            Reads::Distinct(d) => Value::Distinct(index_of(&mut distincts, d.clone())),
            Reads::Sum(name) => {
                let c = column(ds, name)?;
                if !matches!(c.ty, ColumnKind::Int | ColumnKind::Float) {
                    return Err(schema(format!("column `{name}` is not a declared number")));
                }
                grid_bounds(ds, name, s.grid)?;
                Value::Sum(index_of(&mut fields, (name.clone(), s.grid)))
            }
        };
        cells.push(Cell {
            set,
            value,
            coords,
            count_shift: -s.grid,
        });
    }

    Ok(Uses {
        fields,
        groupings,
        cells,
        distincts,
        data_keys: None,
        filter,
        slotted: false,
    })
}

/// The column each distinct count counts: `u` for the unit id's own column
/// under a user-level unit (the units with a kept row), `d{q}` for any
/// other id column.
fn distinct_aliases(ds: &Dataset, uses: &Uses) -> Vec<String> {
    let b = &ds.bounding;
    uses.distincts
        .iter()
        .enumerate()
        .map(|(q, d)| {
            if b.per_unit && b.id_column.as_deref() == Some(d.as_str()) {
                "u".to_string()
            } else {
                format!("d{q}")
            }
        })
        .collect()
}

/// The suffix of the names of key `m` of grouping `j` when it is a
/// category (its column `c…`, its domain's parameters `:dk…`, `:di…`):
/// `{j}` for a grouping of one category (a histogram), `{j}_{m}` in a
/// product of keys.
fn key_suffix(keys: &[GroupKey], j: usize, m: usize) -> String {
    if keys.len() == 1 {
        format!("{j}")
    } else {
        format!("{j}_{m}")
    }
}

/// Edges above which a bin is found by a loop over a bound array rather
/// than a written-out tree of comparisons (whose text grows with the
/// edges: 80,000 candidates of a quantile made a 3.7 MB statement that
/// Spark's parser could not hold in a 1 GB driver).
const BIN_TREE_EDGES: usize = 257;

/// The bin of the number `x` (never NaN: a valid or imputed number) as
/// [`GroupKey::bin`] computes it: outside [e0, en] the first or last bin
/// (`clamp`) or NULL (`drop`), else the number of inner edges e1…e(n−1)
/// that are ≤ x, found by binary search (depth log2 n, so a quantile's
/// grid of thousands of candidates stays cheap per row): up to
/// [`BIN_TREE_EDGES`] edges as a balanced tree of comparisons in the text,
/// above it as a loop of `aggregate` over the edges bound as the parameter
/// `name` (a JSON array of the exact doubles, parsed once), the same
/// comparisons in the same order.
fn bin(
    x: &str,
    edges: &[f64],
    outside: InvalidRule,
    (name, params): (&str, &mut BTreeMap<String, Param>),
) -> Result<String, EngineError> {
    let n = edges.len() - 1;
    let (below, above) = match outside {
        InvalidRule::Clamp => ("0".to_string(), (n - 1).to_string()),
        InvalidRule::Drop => ("NULL".to_string(), "NULL".to_string()),
    };
    // the count of inner edges ≤ x, known to lie in [lo, hi]
    fn count(x: &str, edges: &[f64], lo: usize, hi: usize) -> String {
        if lo == hi {
            return lo.to_string();
        }
        let mid = (lo + hi).div_ceil(2);
        format!(
            "CASE WHEN {x} >= {} THEN {} ELSE {} END",
            double(edges[mid]),
            count(x, edges, mid, hi),
            count(x, edges, lo, mid - 1)
        )
    }
    let inner = if edges.len() <= BIN_TREE_EDGES {
        count(x, edges, 0, n - 1)
    } else {
        let json = serde_json::to_string(edges)
            .map_err(|_| schema("the bins' edges cannot be written".into()))?;
        params.insert(name.to_string(), Param::Text(json));
        // ⌈log2 n⌉ + 1 halvings reach lo = hi from [0, n − 1]
        let steps = usize::BITS - n.leading_zeros() + 1;
        format!(
            "CAST(aggregate(sequence(1, {steps}), named_struct('lo', CAST(0 AS BIGINT), 'hi', CAST({} AS BIGINT)), \
             (a, s) -> CASE WHEN a.lo >= a.hi THEN a \
             WHEN {x} >= element_at(from_json(:{name}, 'ARRAY<DOUBLE>'), CAST((a.lo + a.hi + 1) DIV 2 + 1 AS INT)) \
             THEN named_struct('lo', (a.lo + a.hi + 1) DIV 2, 'hi', a.hi) \
             ELSE named_struct('lo', a.lo, 'hi', (a.lo + a.hi + 1) DIV 2 - 1) END).lo AS INT)",
            n - 1
        )
    };
    Ok(format!(
        "(CASE WHEN {x} < {} THEN {below} WHEN {x} > {} THEN {above} ELSE {inner} END)",
        double(edges[0]),
        double(edges[n]),
    ))
}

/// What step 1 leaves to step 2: the declared numbers, whether there is a
/// unit id, and the validity checks of a row.
struct Typed<'d> {
    numbers: Vec<&'d dpplan_plan::Column>,
    id: bool,
    checks: Vec<String>,
    /// The columns an `in` set of the filter reads (`w{m}`).
    ins: Vec<String>,
}

/// Step 1, `typed`, `parsed`, `valid`: the declared columns this statement
/// reads, their numbers parsed, invalid values dropped or imputed.
fn typed<'d>(
    w: &mut String,
    ds: &'d Dataset,
    uses: &Uses,
    columns: Columns,
) -> Result<Typed<'d>, EngineError> {
    let (fields, groupings) = (&uses.fields, &uses.groupings);
    let b = &ds.bounding;
    let drop = ds.invalid_rows != InvalidRule::Clamp;
    let id = if b.per_unit {
        let name = b
            .id_column
            .as_deref()
            .ok_or_else(|| schema(format!("dataset `{}` has no unit id column", ds.name)))?;
        Some(quote(name)?)
    } else {
        None
    };
    let numbers: Vec<&dpplan_plan::Column> = ds
        .columns
        .iter()
        .filter(|c| matches!(c.ty, ColumnKind::Int | ColumnKind::Float))
        .collect();
    // the numbers a filter compares are read as the summed ones (under
    // `invalid_rows clamp` an invalid one is imputed and compared)
    let mut compared: Vec<String> = Vec::new();
    if let Some(f) = &uses.filter {
        leaf_columns(f, true, &mut compared);
    }
    // and so are the binned ones
    for k in groupings.iter().flatten() {
        if let GroupKey::Bins { column, .. } = k {
            if !compared.contains(column) {
                compared.push(column.clone());
            }
        }
    }
    let used = |c: &dpplan_plan::Column| {
        fields.iter().any(|(n, _)| *n == c.name) || compared.contains(&c.name)
    };
    let mut select: Vec<String> = Vec::new();
    if let Some(id) = &id {
        if uses.slotted {
            // a unit per slot: bounded in each window apart
            select.push(format!(
                "CASE WHEN CAST({id} AS STRING) <> '' THEN concat(CAST(`#sl` AS STRING), ':', CAST({id} AS STRING)) END AS u"
            ));
        } else {
            select.push(format!("CAST({id} AS STRING) AS u"));
        }
    }
    if uses.slotted {
        select.push("`#sl` AS sl".into());
    }
    let mut checks: Vec<String> = Vec::new();
    let mut valid: Vec<String> = Vec::new();
    let mut parse: Vec<String> = Vec::new();
    for (i, c) in numbers.iter().enumerate() {
        if !(used(c) || drop) {
            continue;
        }
        let q = quote(&c.name)?;
        select.push(format!("{} AS t{i}", raw(&q, columns)));
        parse.push(format!("{} AS p{i}", number(&format!("t{i}"), columns)));
        // an `int` read from text must be integral (an infinity is)
        let expr = if c.ty == ColumnKind::Int && columns == Columns::Text {
            format!("CASE WHEN p{i} % 1.0D = 0.0D OR abs(p{i}) = CAST('Infinity' AS DOUBLE) THEN p{i} END")
        } else {
            format!("p{i}")
        };
        if used(c) {
            let expr = if drop {
                checks.push(format!("n{i} IS NOT NULL"));
                expr
            } else {
                let impute = c.bounds.map_or(0.0, |b| b[0]);
                format!("coalesce({expr}, {})", double(impute))
            };
            valid.push(format!("{expr} AS n{i}"));
        } else {
            // declared but not summed: only checked
            valid.push(format!("{expr} AS n{i}"));
            checks.push(format!("n{i} IS NOT NULL"));
        }
    }
    for (j, keys) in groupings.iter().enumerate() {
        for (m, k) in keys.iter().enumerate() {
            if let GroupKey::Category { column, .. } = k {
                select.push(format!(
                    "CAST({} AS STRING) AS c{}",
                    quote(column)?,
                    key_suffix(keys, j, m)
                ));
            }
        }
    }
    for (d, alias) in uses.distincts.iter().zip(distinct_aliases(ds, uses)) {
        if alias != "u" {
            select.push(format!("CAST({} AS STRING) AS {alias}", quote(d)?));
        }
    }
    let mut ins = Vec::new();
    if let Some(f) = &uses.filter {
        leaf_columns(f, false, &mut ins);
    }
    for (m, c) in ins.iter().enumerate() {
        select.push(format!("CAST({} AS STRING) AS w{m}", quote(c)?));
    }
    // every declared column must exist: the driver checks it (with its
    // type) before the statement runs
    if select.is_empty() {
        select.push("1 AS one".into());
    }
    let _ = writeln!(
        w,
        "WITH typed AS (\n  SELECT\n    {}\n  FROM {}\n),",
        select.join(",\n    "),
        if uses.slotted {
            WINDOWED_VIEW
        } else {
            SOURCE_VIEW
        }
    );
    let _ = writeln!(
        w,
        "parsed AS (\n  SELECT *{}\n  FROM typed\n),",
        parse
            .iter()
            .map(|c| format!(",\n    {c}"))
            .collect::<String>()
    );
    let _ = writeln!(
        w,
        "valid AS (\n  SELECT *{}\n  FROM parsed\n),",
        valid
            .iter()
            .map(|c| format!(",\n    {c}"))
            .collect::<String>()
    );

    Ok(Typed {
        numbers,
        id: id.is_some(),
        checks,
        ins,
    })
}

/// Step 2, `scaled`, `cells`: valid rows, fields on their grids, categories as
/// indexes of their public domains; returns the domains' parameters.
fn cells(
    w: &mut String,
    ds: &Dataset,
    uses: &Uses,
    typed: Typed<'_>,
) -> Result<BTreeMap<String, Param>, EngineError> {
    let (fields, groupings) = (&uses.fields, &uses.groupings);
    let Typed {
        numbers,
        id,
        mut checks,
        ins,
    } = typed;
    let mut cell_cols: Vec<String> = Vec::new();
    let mut grid_cols: Vec<String> = Vec::new();
    let mut params = BTreeMap::new();
    if id {
        cell_cols.push("u".into());
        checks.insert(0, "u IS NOT NULL AND u <> ''".into());
    }
    if uses.slotted {
        cell_cols.push("sl".into());
    }
    for alias in distinct_aliases(ds, uses) {
        if alias != "u" {
            cell_cols.push(format!(
                "CASE WHEN {alias} <> '' THEN {alias} END AS {alias}"
            ));
        }
    }
    // the filter, on the valid rows, before bounding
    if let Some(f) = &uses.filter {
        checks.push(predicate(f, &numbers, &ins, &mut params));
    }
    // keys from the data: a row without a key is no row of the histogram
    if uses.data_keys.is_some() {
        checks.push("c0 IS NOT NULL AND c0 <> ''".into());
    }
    for (f, (name, k)) in fields.iter().enumerate() {
        let (scale, lo, hi) = grid_bounds(ds, name, *k)?;
        let i = numbers.iter().position(|c| c.name == *name).unwrap_or(0);
        cell_cols.push(format!(
            "least(greatest(n{i} * {}, {}), {}) AS x{f}",
            double(scale),
            double(lo),
            double(hi)
        ));
        // round half away from zero: truncate, then compare the exact
        // remainder (|x| ≤ 2^62: the BIGINT cast truncates exactly)
        grid_cols.push(format!(
            "CASE WHEN x{f} - CAST(x{f} AS BIGINT) >= 0.5D THEN CAST(x{f} AS BIGINT) + 1 \
             WHEN x{f} - CAST(x{f} AS BIGINT) <= -0.5D THEN CAST(x{f} AS BIGINT) - 1 \
             ELSE CAST(x{f} AS BIGINT) END AS f{f}"
        ));
    }
    for (j, keys) in groupings.iter().enumerate() {
        if uses.data_keys.is_some() {
            // the key is the value itself
            cell_cols.push(format!("c{j} AS g{j}"));
            continue;
        }
        // first key slowest: a key's stride is the product of the later
        // keys' sizes
        let mut terms = Vec::with_capacity(keys.len());
        let mut stride: usize = 1;
        for (m, k) in keys.iter().enumerate().rev() {
            let index = match k {
                GroupKey::Category { domain, .. } => {
                    let suffix = key_suffix(keys, j, m);
                    // the first index of each distinct value (as the
                    // embedded engine's lookup), as two parallel arrays
                    let (mut names, mut idx): (Vec<String>, Vec<i64>) = (Vec::new(), Vec::new());
                    for (i, v) in domain.iter().enumerate() {
                        if !names.contains(v) {
                            names.push(v.clone());
                            idx.push(i as i64);
                        }
                    }
                    params.insert(format!("dk{suffix}"), Param::Strings(names));
                    params.insert(format!("di{suffix}"), Param::Ints(idx));
                    format!(
                        "CAST(try_element_at(map_from_arrays(:dk{suffix}, :di{suffix}), c{suffix}) AS INT)"
                    )
                }
                GroupKey::Bins {
                    column,
                    edges,
                    outside,
                } => {
                    let i = numbers.iter().position(|c| c.name == *column).unwrap_or(0);
                    let name = format!("be{}", key_suffix(keys, j, m));
                    bin(&format!("n{i}"), edges, *outside, (&name, &mut params))?
                }
            };
            terms.push(if stride == 1 {
                index
            } else {
                format!("{index} * {stride}")
            });
            stride *= k.len();
        }
        terms.reverse();
        // NULL (outside) when any key is
        cell_cols.push(format!("{} AS g{j}", terms.join(" + ")));
    }
    if cell_cols.is_empty() {
        cell_cols.push("1 AS one".into());
    }
    let filter = if checks.is_empty() {
        String::new()
    } else {
        format!("\n  WHERE {}", checks.join("\n    AND "))
    };
    let _ = writeln!(
        w,
        "scaled AS (\n  SELECT\n    {}\n  FROM valid{filter}\n),",
        cell_cols.join(",\n    ")
    );
    let _ = writeln!(
        w,
        "cells AS (\n  SELECT *{}\n  FROM scaled\n),",
        grid_cols
            .iter()
            .map(|c| format!(",\n    {c}"))
            .collect::<String>()
    );

    Ok(params)
}

/// Step 3, `selected`: user-level bounding (rows per unit, then groups per unit
/// and rows per group, each by a keyed hash); every row for row- and
/// event-level units.
fn bounding(w: &mut String, ds: &Dataset, uses: &Uses, rows: &str) {
    let (fields, groupings) = (&uses.fields, &uses.groupings);
    let b = &ds.bounding;
    // a distinct count's ids are used fields too: rows that differ only in
    // them are told apart by their values, not by an arbitrary order
    let used_cols: Vec<String> = (0..fields.len())
        .map(|f| format!("f{f}"))
        .chain((0..groupings.len()).map(|j| match uses.data_keys {
            // a key is a string, never NULL once the row is valid
            Some(_) => format!("coalesce(g{j}, '')"),
            None => format!("coalesce(g{j}, -1)"),
        }))
        .chain(
            distinct_aliases(ds, uses)
                .into_iter()
                .filter(|a| a != "u")
                .map(|a| format!("coalesce({a}, '')")),
        )
        .collect();
    if b.per_unit {
        let cap = b.rows_per_unit.unwrap_or(1).max(1);
        let order = if used_cols.is_empty() {
            "u".to_string()
        } else {
            used_cols.join(", ")
        };
        let hash_in = std::iter::once("u".to_string())
            .chain(used_cols.iter().cloned())
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            w,
            "-- rows identical in every used field are numbered, so that the hash tells them apart\n\
             numbered AS (\n  SELECT *,\n    ROW_NUMBER() OVER (PARTITION BY u ORDER BY {order}) - RANK() OVER (PARTITION BY u ORDER BY {order}) AS dup\n  FROM {rows}\n),\n\
             keyed AS (\n  SELECT *, xxhash64(CAST(:seed AS BIGINT), 0, {hash_in}, dup) AS h\n  FROM numbered\n),\n\
             -- rows_per_unit: the {cap} rows of least hash per unit\n\
             kept AS (\n  SELECT * FROM (\n    SELECT *, ROW_NUMBER() OVER (PARTITION BY u ORDER BY h, {order}, dup) AS r\n    FROM keyed\n  ) WHERE r <= {cap}\n),"
        );
        let caps = b.groups_per_unit.is_some() || b.rows_per_group.is_some();
        // the window columns, then the kept group of each row (which reads
        // them: a SELECT of its own)
        let (mut windows, mut ks) = (Vec::new(), Vec::new());
        for j in 0..groupings.len() {
            let mut conds = vec![format!("g{j} IS NOT NULL")];
            if caps {
                if let Some(gc) = b.groups_per_unit {
                    windows.push(format!(
                        "DENSE_RANK() OVER (PARTITION BY u, g{j} IS NULL ORDER BY xxhash64(CAST(:seed AS BIGINT), {}, u, g{j}), g{j}) AS gr{j}",
                        j + 1
                    ));
                    conds.push(format!("gr{j} <= {gc}"));
                }
                if let Some(rc) = b.rows_per_group {
                    windows.push(format!(
                        "ROW_NUMBER() OVER (PARTITION BY u, g{j} ORDER BY h, {order}, dup) AS rr{j}"
                    ));
                    conds.push(format!("rr{j} <= {rc}"));
                }
            }
            ks.push(format!(
                "CASE WHEN {} THEN g{j} END AS k{j}",
                conds.join(" AND ")
            ));
        }
        let _ = writeln!(
            w,
            "-- per grouping column: groups_per_unit groups of least hash per unit, rows_per_group rows of least hash per group\n\
             selected AS (\n  SELECT *{}\n  FROM (\n    SELECT *{}\n    FROM kept\n  )\n)",
            ks.iter().map(|c| format!(",\n    {c}")).collect::<String>(),
            windows.iter().map(|c| format!(",\n      {c}")).collect::<String>(),
        );
    } else {
        // row- and event-level units: every valid row counts
        let ks: String = (0..groupings.len())
            .map(|j| format!(",\n    g{j} AS k{j}"))
            .collect();
        let _ = writeln!(w, "selected AS (\n  SELECT *{ks}\n  FROM {rows}\n)");
    }
}

/// Step 4: one aggregation, a grouping set per grouping column; a distinct
/// count counts the kept rows' distinct non-empty ids (the decoder reads it
/// from the ungrouped set only).
fn aggregation(w: &mut String, ds: &Dataset, uses: &Uses) {
    let (fields, groupings) = (&uses.fields, &uses.groupings);
    let mut out: Vec<String> = Vec::new();
    if uses.slotted {
        out.push("sl".into());
    }
    for j in 0..groupings.len() {
        out.push(format!("grouping(k{j}) AS a{j}"));
    }
    for j in 0..groupings.len() {
        out.push(format!("k{j}"));
    }
    out.push("count(*) AS n".into());
    for f in 0..fields.len() {
        out.push(format!("sum(CAST(f{f} AS DECIMAL(38,0))) AS s{f}"));
    }
    for (q, alias) in distinct_aliases(ds, uses).iter().enumerate() {
        out.push(format!("count(DISTINCT {alias}) AS dc{q}"));
    }
    let sl = if uses.slotted { "sl" } else { "" };
    let group_by = if groupings.is_empty() {
        if uses.slotted {
            "\nGROUP BY sl".to_string()
        } else {
            String::new()
        }
    } else {
        let with = if uses.slotted { "sl, " } else { "" };
        let sets: Vec<String> = std::iter::once(format!("({sl})"))
            .chain((0..groupings.len()).map(|j| format!("({with}k{j})")))
            .collect();
        format!("\nGROUP BY GROUPING SETS ({})", sets.join(", "))
    };
    let _ = write!(
        w,
        "SELECT\n  {}\nFROM selected{group_by}\n",
        out.join(",\n  ")
    );
}
