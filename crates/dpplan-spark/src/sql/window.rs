//! Windows on Spark: the rows of a windowed release's due slots, selected
//! by Spark as the runtime selects them (`dpplan-runtime`'s `window`), and
//! their bounded aggregates per slot.
//!
//! Three statements, run by the driver in order over the same source:
//!
//! 1. the **selection** ([`Windowed::select`]): each row's time read by
//!    dpplan's time grammar (`dpplan_runtime::window::parse_time`: Unix
//!    seconds, or an RFC 3339 instant with its variants, the calendar
//!    computed by the same integer formula), its slot
//!    `(t − start) div period`, the rows of the wanted slots kept; under a
//!    per-unit bound, the unit's keyed hash (SHA-256 of the ledger's unit
//!    key, a one-row view [`UNIT_KEY_VIEW`] that never appears in the
//!    statement's text, then the id's bytes), and a unit is kept in its
//!    present slots in slot order while the windows it was kept in so far
//!    (the view [`WINDOW_STATE_VIEW`], from the ledger) plus its rank stay
//!    below the bound: exactly the runtime's slot-by-slot rule, and a
//!    unit's selection depends on that unit's rows only. The driver keeps
//!    the result as the view [`WINDOWED_VIEW`];
//! 2. the **units** kept per slot ([`Windowed::units_sql`]): recorded by
//!    dpplan in the ledger with the slot's charge;
//! 3. the **aggregates** ([`Windowed::aggregate`]): the ordinary statement
//!    over [`WINDOWED_VIEW`], a unit bounded per slot (its id prefixed by
//!    the slot, so `rows_per_window` rows per unit and window) and every
//!    grouping set grouped by the slot.

use std::collections::BTreeMap;
use std::fmt::Write;

use dpplan_engine::{EngineError, Statistic};
use dpplan_plan::Dataset;
use dpplan_vocab::ColumnKind;

use super::{column, quote, schema, statement, uses, Columns, Param, Query, SOURCE_VIEW, TRIM};

/// The rows of the due windows, as the selection leaves them.
pub const WINDOWED_VIEW: &str = "dpplan_windowed";
/// The windows each unit was kept in so far: `#su` (keyed hash), `#sn`.
pub const WINDOW_STATE_VIEW: &str = "dpplan_window_state";
/// The ledger's unit key: one row, one column `#key` (BINARY).
pub const UNIT_KEY_VIEW: &str = "dpplan_unit_key";

/// An RFC 3339 instant of the time grammar: groups 1–5 the date and the
/// clock to the minute, 7 the seconds, 10 the offset's sign, 11 and 13 its
/// hours and minutes.
const INSTANT: &str = "^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2})(:([0-9]{2})([.,][0-9]{1,9})?)?([Zz]|([+-])([0-9]{2})(:?([0-9]{2}))?)$";
/// Unix seconds of the time grammar (a 64-bit integer: `try_cast`).
const UNIX: &str = "^-?[0-9]+$";

/// The three statements of a windowed release.
#[derive(Debug, Clone, PartialEq)]
pub struct Windowed {
    /// The selection; its parameters `:start` and `:slots` are bound per run.
    pub select: String,
    /// The units kept per slot: rows (slot, keyed hash).
    pub units_sql: String,
    /// The aggregates per slot; rows lead with the slot.
    pub aggregate: Query,
}

/// The statements of a windowed release over `ds` (its `rows_per_unit`
/// already the window's), with time column `time`, windows of `period`
/// seconds and, under a per-unit bound, `bound` windows per unit.
pub fn generate_windows(
    ds: &Dataset,
    release: &str,
    time: &str,
    period: i64,
    bound: Option<u64>,
    stats: &[Statistic],
    columns: Columns,
) -> Result<Windowed, EngineError> {
    if column(ds, time)?.ty != ColumnKind::Time {
        return Err(schema(format!(
            "column `{time}` holds the windows' times but is not declared `time`"
        )));
    }
    if period < 1 {
        return Err(schema(format!(
            "`{release}`: a window must last at least one second"
        )));
    }
    let per_unit = bound.is_some();
    if per_unit != ds.bounding.per_unit {
        return Err(schema(format!(
            "`{release}`: the window's unit state does not match the dataset's unit"
        )));
    }
    let mut u = uses(ds, stats)?;
    u.slotted = true;
    let head = format!(
        "-- dataset `{}`, release `{release}`: exact bounded aggregates per window (no noise is drawn here)",
        ds.name
    );
    let aggregate = statement(ds, u, &head, columns)?;
    let select = selection(ds, release, time, period, bound)?;
    let units_sql = format!(
        "-- release `{release}`: the units kept in each window (keyed hashes), recorded in the ledger\n\
         SELECT DISTINCT `#sl`, `#uh` FROM {WINDOWED_VIEW} WHERE `#uh` IS NOT NULL\n"
    );
    Ok(Windowed {
        select,
        units_sql: if per_unit { units_sql } else { String::new() },
        aggregate,
    })
}

/// Step 1: the selection statement.
fn selection(
    ds: &Dataset,
    release: &str,
    time: &str,
    period: i64,
    bound: Option<u64>,
) -> Result<String, EngineError> {
    let mut w = String::new();
    let declared: Vec<String> = ds
        .columns
        .iter()
        .map(|c| quote(&c.name))
        .collect::<Result<_, _>>()?;
    let t = quote(time)?;
    let _ = writeln!(
        w,
        "-- dataset `{}`, release `{release}`: the rows of the due windows of `{time}` (slot s: [:start + s·{period}, :start + (s + 1)·{period}) in Unix seconds){}",
        ds.name,
        match bound {
            Some(b) => format!(", a unit kept in at most {b} windows"),
            None => String::new(),
        }
    );
    let mut text = declared.clone();
    text.push(format!(
        "regexp_replace(CAST({t} AS STRING), '{TRIM}', '') AS `#tt`"
    ));
    let from = if bound.is_some() {
        let id = quote(
            ds.bounding
                .id_column
                .as_deref()
                .ok_or_else(|| schema(format!("dataset `{}` has no unit id column", ds.name)))?,
        )?;
        // the runtime's UnitKey::hash: SHA-256 of the key, then the id's bytes
        text.push(format!(
            "CASE WHEN CAST({id} AS STRING) <> '' THEN sha2(concat(k.`#key`, CAST(CAST({id} AS STRING) AS BINARY)), 256) END AS `#uh`"
        ));
        format!("{SOURCE_VIEW} CROSS JOIN {UNIT_KEY_VIEW} k")
    } else {
        SOURCE_VIEW.to_string()
    };
    let _ = writeln!(
        w,
        "WITH wtext AS (\n  SELECT\n    {}\n  FROM {from}\n),",
        text.join(",\n    ")
    );
    let group = |n: usize| {
        format!("try_cast(nullif(regexp_extract(`#tt`, '{INSTANT}', {n}), '') AS BIGINT)")
    };
    let parts = [
        format!("{} AS `#y`", group(1)),
        format!("{} AS `#mo`", group(2)),
        format!("{} AS `#d`", group(3)),
        format!("{} AS `#h`", group(4)),
        format!("{} AS `#mi`", group(5)),
        format!("coalesce({}, 0) AS `#s`", group(7)),
        format!("regexp_extract(`#tt`, '{INSTANT}', 10) AS `#os`"),
        format!("coalesce({}, 0) AS `#oh`", group(11)),
        format!("coalesce({}, 0) AS `#om`", group(13)),
    ];
    let _ = writeln!(
        w,
        "-- the time grammar: Unix seconds, or an RFC 3339 instant (its fields here)\n\
         wparts AS (\n  SELECT *,\n    {}\n  FROM wtext\n),",
        parts.join(",\n    ")
    );
    // H. Hinnant's days_from_civil, as the runtime computes it (year ≥ 1)
    let _ = writeln!(
        w,
        "wcal AS (\n  SELECT *,\n    `#y` - CASE WHEN `#mo` <= 2 THEN 1 ELSE 0 END AS `#yy`,\n    \
         CASE WHEN `#mo` > 2 THEN `#mo` - 3 ELSE `#mo` + 9 END AS `#mp`\n  FROM wparts\n),\n\
         wera AS (\n  SELECT *, `#yy` DIV 400 AS `#era`, `#yy` - (`#yy` DIV 400) * 400 AS `#yoe`\n  FROM wcal\n),"
    );
    let month_days = "CASE `#mo` WHEN 2 THEN CASE WHEN `#y` % 4 = 0 AND (`#y` % 100 <> 0 OR `#y` % 400 = 0) THEN 29 ELSE 28 END \
                      WHEN 4 THEN 30 WHEN 6 THEN 30 WHEN 9 THEN 30 WHEN 11 THEN 30 ELSE 31 END";
    let days = "(`#era` * 146097 + `#yoe` * 365 + `#yoe` DIV 4 - `#yoe` DIV 100 + (153 * `#mp` + 2) DIV 5 + `#d` - 1 - 719468)";
    let _ = writeln!(
        w,
        "wtime AS (\n  SELECT *,\n    CASE WHEN `#tt` RLIKE '{UNIX}' THEN try_cast(`#tt` AS BIGINT)\n      \
         WHEN `#y` >= 1 AND `#mo` BETWEEN 1 AND 12 AND `#d` >= 1 AND `#d` <= {month_days}\n        \
         AND `#h` <= 23 AND `#mi` <= 59 AND `#s` <= 60 AND `#oh` <= 23 AND `#om` <= 59\n      \
         THEN {days} * 86400 + `#h` * 3600 + `#mi` * 60 + least(`#s`, 59)\n        \
         - CASE WHEN `#os` = '-' THEN -1 ELSE 1 END * (`#oh` * 3600 + `#om` * 60)\n    END AS `#t`\n  FROM wera\n),"
    );
    let _ = writeln!(
        w,
        "wslot AS (\n  SELECT *,\n    CASE WHEN `#t` >= CAST(:start AS BIGINT) THEN try_subtract(`#t`, CAST(:start AS BIGINT)) DIV {period} END AS `#sl`\n  FROM wtime\n),\n\
         wrows AS (\n  SELECT * FROM wslot WHERE array_contains(from_json(:slots, 'ARRAY<BIGINT>'), `#sl`)\n)"
    );
    let out: Vec<String> = declared.iter().map(|c| format!("r.{c}")).collect();
    match bound {
        Some(b) => {
            let _ = write!(
                w,
                ",\n-- a unit is kept in its present windows in slot order while its windows so far stay below {b}\n\
                 wpresent AS (\n  SELECT DISTINCT `#uh`, `#sl` FROM wrows WHERE `#uh` IS NOT NULL\n),\n\
                 wkept AS (\n  SELECT p.`#uh` AS `#ku`, p.`#sl` AS `#ks`\n  FROM (\n    \
                 SELECT *, ROW_NUMBER() OVER (PARTITION BY `#uh` ORDER BY `#sl`) - 1 AS `#rank` FROM wpresent\n  ) p\n  \
                 LEFT JOIN {WINDOW_STATE_VIEW} s ON p.`#uh` = s.`#su`\n  WHERE coalesce(s.`#sn`, 0) + p.`#rank` < {b}\n)\n\
                 SELECT\n  {},\n  r.`#sl`,\n  r.`#uh`\nFROM wrows r LEFT JOIN wkept k ON r.`#uh` = k.`#ku` AND r.`#sl` = k.`#ks`\n\
                 WHERE r.`#uh` IS NULL OR k.`#ku` IS NOT NULL\n",
                out.join(",\n  ")
            );
        }
        None => {
            let _ = write!(
                w,
                "\nSELECT\n  {},\n  r.`#sl`\nFROM wrows r\n",
                out.join(",\n  ")
            );
        }
    }
    Ok(w)
}

/// The run's parameters of the selection: the first window's start and
/// the wanted slots (a JSON array: the statement parses it).
pub fn select_params(start: i64, slots: &[u64]) -> Result<BTreeMap<String, Param>, EngineError> {
    let slots = slots
        .iter()
        .map(|&s| i64::try_from(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| schema("a slot number beyond 64 bits".into()))?;
    let slots = serde_json::to_string(&slots)
        .map_err(|_| schema("the due slots cannot be written".into()))?;
    Ok(BTreeMap::from([
        ("start".to_string(), Param::Int(start)),
        ("slots".to_string(), Param::Text(slots)),
    ]))
}
