//! The horizon state of windowed queries (format 3): which windows each
//! unit was kept in, by the keyed hash of its id, written in the
//! transaction of the window's intent, so that the state and the charge
//! are durable together or not at all.
//!
//! A crash (kill -9) after that transaction and before the noise is drawn
//! leaves the slot charged and unpublished: it is never drawn again, and
//! its units keep the window they were recorded in (a window they may
//! never have been released in: conservative, never above the bound).
//! A crash before it leaves neither the charge nor the state.

use std::collections::BTreeSet;

use dpplan_plan::Release;
use rusqlite::{params, Connection, OptionalExtension};

use super::entry::{Entry, EntryKind};
use super::totals::MechanismRecord;
use super::LedgerError;

/// Whether the `window_units` table exists (format 3, or migrated).
pub(super) fn has_table(conn: &Connection) -> Result<bool, LedgerError> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'window_units'",
            [],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Whether an intent of `query` with this exact mechanism record was
/// charged before: then this window belongs to that vector release.
pub(super) fn charged(
    conn: &Connection,
    query: &str,
    mechanism: &str,
) -> Result<bool, LedgerError> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM entries WHERE kind = 'intent' AND query = ?1 AND mechanism = ?2 LIMIT 1",
            params![query, mechanism],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// Whether the windowed release `r` of a new plan is the vector release
/// the history already charged (same query, same mechanism record).
pub(super) fn same_vector(conn: &Connection, r: &Release) -> Result<bool, LedgerError> {
    // Invariant: plain data with string keys; cannot fail.
    let rec = serde_json::to_string(&MechanismRecord::of(r)).expect("serialises");
    charged(conn, &r.name, &rec)
}

/// The units of `query` kept in `bound` windows or more.
pub(super) fn at_bound(
    conn: &Connection,
    query: &str,
    bound: u64,
) -> Result<BTreeSet<String>, LedgerError> {
    if !has_table(conn)? {
        return Ok(BTreeSet::new());
    }
    let mut stmt = conn.prepare(
        "SELECT unit FROM window_units WHERE query = ?1 GROUP BY unit HAVING COUNT(*) >= ?2",
    )?;
    let units = stmt
        .query_map(params![query, bound as i64], |r| r.get::<_, String>(0))?
        .collect::<Result<BTreeSet<_>, _>>()?;
    Ok(units)
}

/// How many windows each unit of `query` was kept in.
pub(super) fn windows_of_units(
    conn: &Connection,
    query: &str,
) -> Result<std::collections::HashMap<String, u64>, LedgerError> {
    if !has_table(conn)? {
        return Ok(Default::default());
    }
    let mut stmt =
        conn.prepare("SELECT unit, COUNT(*) FROM window_units WHERE query = ?1 GROUP BY unit")?;
    let rows = stmt
        .query_map(params![query], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// Records the units kept in `query`'s window `slot` (intent `seq`);
/// refused when one of them is already at `bound`.
pub(super) fn record(
    conn: &Connection,
    query: &str,
    slot: u64,
    seq: i64,
    bound: u64,
    units: &BTreeSet<String>,
) -> Result<(), LedgerError> {
    let mut count =
        conn.prepare("SELECT COUNT(*) FROM window_units WHERE query = ?1 AND unit = ?2")?;
    let mut insert =
        conn.prepare("INSERT INTO window_units (query, unit, slot, seq) VALUES (?1, ?2, ?3, ?4)")?;
    for u in units {
        let n: i64 = count.query_row(params![query, u], |r| r.get(0))?;
        if n as u64 >= bound {
            return Err(LedgerError::WindowBound {
                query: query.to_string(),
                slot,
            });
        }
        insert.execute(params![query, u, slot as i64, seq])?;
    }
    Ok(())
}

/// How many units were recorded for `query` (0 without the table).
pub(super) fn units_recorded(conn: &Connection) -> Result<u64, LedgerError> {
    if !has_table(conn)? {
        return Ok(0);
    }
    let n: i64 = conn.query_row("SELECT COUNT(*) FROM window_units", [], |r| r.get(0))?;
    Ok(n as u64)
}

/// Every recorded (unit, window) belongs to an intent of its query and
/// slot whose mechanism is windowed, and no unit is in more windows of a
/// query than that mechanism's bound: a row inserted behind dpplan's back
/// (or one missing its intent) is found.
pub(super) fn verify_all(conn: &Connection, entries: &[Entry]) -> Result<(), LedgerError> {
    if !has_table(conn)? {
        return Ok(());
    }
    let bound_of = |seq: i64, query: &str, slot: i64| -> Option<u64> {
        let e = entries.get(usize::try_from(seq - 1).ok()?)?;
        if e.seq != seq
            || e.kind != EntryKind::Intent
            || e.query.as_deref() != Some(query)
            || e.slot != Some(slot)
        {
            return None;
        }
        let rec: MechanismRecord = serde_json::from_str(e.mechanism.as_deref()?).ok()?;
        rec.window
            .map(|w| w.windows_per_unit)
            .or(rec.cumulative.map(|c| c.kept_slots))
    };
    let mut stmt = conn.prepare("SELECT query, unit, slot, seq FROM window_units ORDER BY seq")?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut seen: std::collections::HashMap<(String, String), u64> = Default::default();
    for (query, unit, slot, seq) in rows {
        let damaged = |why: &str| LedgerError::Damaged {
            seq: Some(seq),
            why: format!("the window state of `{query}` slot {slot}: {why}"),
        };
        let Some(bound) = bound_of(seq, &query, slot) else {
            return Err(damaged("no windowed intent of that slot records it"));
        };
        let n = seen.entry((query.clone(), unit)).or_default();
        *n += 1;
        if *n > bound {
            return Err(damaged("a unit is in more windows than its bound"));
        }
    }
    Ok(())
}
