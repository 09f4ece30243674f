//! The ledger's rows in SQLite: appending an entry to the hash chain,
//! reading entries, a slot's state, the budget and plan in force.

use rusqlite::{params, Connection, OptionalExtension};

use super::*;

/// What a new entry says; [`append`] fills in the chain (sequence number,
/// running totals, time, version, previous hash and hash).
pub(super) struct NewEntry<'a> {
    pub(super) kind: EntryKind,
    pub(super) plan_hash: &'a str,
    pub(super) query: Option<String>,
    pub(super) slot: Option<i64>,
    pub(super) mechanism: Option<String>,
    pub(super) epsilon: f64,
    pub(super) delta: f64,
    pub(super) value: Option<String>,
    pub(super) refers_to: Option<i64>,
}

impl<'a> NewEntry<'a> {
    pub(super) fn new(kind: EntryKind, plan_hash: &'a str) -> Self {
        NewEntry {
            kind,
            plan_hash,
            query: None,
            slot: None,
            mechanism: None,
            epsilon: 0.0,
            delta: 0.0,
            value: None,
            refers_to: None,
        }
    }
}

/// Appends an entry after the tail (entry 1 on an empty ledger), inside the
/// caller's transaction: the one place where the chain is extended.
pub(super) fn append(conn: &Connection, new: NewEntry<'_>) -> Result<Entry, LedgerError> {
    let prev = read_entries(conn, "SELECT * FROM entries ORDER BY seq DESC LIMIT 1", [])?
        .into_iter()
        .next();
    let (seq, total_epsilon, total_delta, prev_hash) = match prev {
        Some(p) => (p.seq + 1, p.total_epsilon, p.total_delta, p.hash),
        None => (1, 0.0, 0.0, GENESIS_PREV.to_string()),
    };
    let mut e = Entry {
        seq,
        kind: new.kind,
        plan_hash: new.plan_hash.to_string(),
        query: new.query,
        slot: new.slot,
        mechanism: new.mechanism,
        epsilon: new.epsilon,
        delta: new.delta,
        total_epsilon: total_epsilon + new.epsilon,
        total_delta: total_delta + new.delta,
        value: new.value,
        refers_to: new.refers_to,
        time: now_rfc3339(),
        version: dpplan_plan::COMPILER.into(),
        prev_hash,
        hash: String::new(),
    };
    e.hash = e.compute_hash();
    insert(conn, &e)?;
    Ok(e)
}

/// Whether `query` has an intent with this mechanism record before entry
/// `before` (a vector release, windowed or a tree, already charged).
pub(super) fn charged_with(
    conn: &Connection,
    query: &str,
    mechanism: &str,
    before: i64,
) -> Result<bool, LedgerError> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM entries WHERE kind = 'intent' AND query = ?1 AND mechanism = ?2 AND seq < ?3 LIMIT 1",
            params![query, mechanism, before],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// How a slot stands in the ledger.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotState {
    Free,
    /// Intent at this seq, no value.
    Charged(i64),
    Released(Box<Entry>),
}

pub(super) fn slot_state(
    conn: &Connection,
    query: &str,
    slot: u64,
) -> Result<SlotState, LedgerError> {
    let intent: Option<i64> = conn
        .query_row(
            "SELECT seq FROM entries WHERE kind = 'intent' AND query = ?1 AND slot = ?2 ORDER BY seq LIMIT 1",
            params![query, slot as i64],
            |r| r.get(0),
        )
        .optional()?;
    let Some(seq) = intent else {
        return Ok(SlotState::Free);
    };
    let v = read_entries(
        conn,
        "SELECT * FROM entries WHERE kind = 'value' AND refers_to = ?1 LIMIT 1",
        params![seq],
    )?;
    Ok(match v.into_iter().next() {
        Some(e) => SlotState::Released(Box::new(e)),
        None => SlotState::Charged(seq),
    })
}

/// The budget of the plan in force: the last upgrade's, or the one the
/// ledger was opened with; `None` when the ledger never recorded it.
pub(super) fn budget_in_force(conn: &Connection) -> Result<Option<Budget>, LedgerError> {
    let last = read_entries(
        conn,
        "SELECT * FROM entries WHERE kind IN ('open', 'upgrade') ORDER BY seq DESC LIMIT 1",
        [],
    )?;
    let Some(e) = last.into_iter().next() else {
        return Err(LedgerError::Corrupt("no opening entry".into()));
    };
    let value = e.value.as_deref().unwrap_or("");
    let unreadable = || LedgerError::Corrupt(format!("entry {} is unreadable", e.seq));
    Ok(if e.kind == EntryKind::Open {
        serde_json::from_str::<OpenInfo>(value)
            .map_err(|_| unreadable())?
            .budget
    } else {
        let u: UpgradeValue = serde_json::from_str(value).map_err(|_| unreadable())?;
        u.budget_delta.map(|delta| Budget {
            epsilon: u.budget_epsilon,
            delta,
        })
    })
}

/// Refuses a write for `plan` when another plan is in force.
pub(super) fn plan_in_force(
    conn: &Connection,
    plan: &dpplan_plan::ExecutablePlan,
) -> Result<(), LedgerError> {
    let current = current_plan(conn)?;
    if current != plan.body_sha256 {
        return Err(LedgerError::PlanMismatch {
            ledger: current,
            plan: plan.body_sha256.clone(),
        });
    }
    Ok(())
}

pub(super) fn current_plan(conn: &Connection) -> Result<String, LedgerError> {
    conn.query_row(
        "SELECT plan_hash FROM entries WHERE kind IN ('open', 'upgrade') ORDER BY seq DESC LIMIT 1",
        [],
        |r| r.get(0),
    )
    .optional()?
    .ok_or_else(|| LedgerError::Corrupt("no opening entry".into()))
}

pub(super) fn tail(conn: &Connection) -> Result<Entry, LedgerError> {
    read_entries(conn, "SELECT * FROM entries ORDER BY seq DESC LIMIT 1", [])?
        .into_iter()
        .next()
        .ok_or_else(|| LedgerError::Corrupt("the ledger is empty".into()))
}

pub(super) fn insert(conn: &Connection, e: &Entry) -> Result<(), LedgerError> {
    conn.execute(
        "INSERT INTO entries (seq, kind, plan_hash, query, slot, mechanism, epsilon, delta, total_epsilon, total_delta, value, refers_to, time, version, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        params![
            e.seq,
            e.kind.as_str(),
            e.plan_hash,
            e.query,
            e.slot,
            e.mechanism,
            e.epsilon,
            e.delta,
            e.total_epsilon,
            e.total_delta,
            e.value,
            e.refers_to,
            e.time,
            e.version,
            e.prev_hash,
            e.hash
        ],
    )?;
    Ok(())
}

pub(super) fn read_entries<P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    p: P,
) -> Result<Vec<Entry>, LedgerError> {
    let mut stmt = conn.prepare(sql)?;
    // An entry whose kind is not one of ours (written behind the runtime's
    // back) makes the ledger damaged, naming the entry.
    let mut unknown: Option<(i64, String)> = None;
    let rows = stmt.query_map(p, |r| {
        let seq: i64 = r.get("seq")?;
        let name: String = r.get("kind")?;
        let kind = EntryKind::from_name(&name).unwrap_or_else(|| {
            unknown.get_or_insert((seq, name));
            EntryKind::Correction
        });
        Ok(Entry {
            seq,
            kind,
            plan_hash: r.get("plan_hash")?,
            query: r.get("query")?,
            slot: r.get("slot")?,
            mechanism: r.get("mechanism")?,
            epsilon: r.get("epsilon")?,
            delta: r.get("delta")?,
            total_epsilon: r.get("total_epsilon")?,
            total_delta: r.get("total_delta")?,
            value: r.get("value")?,
            refers_to: r.get("refers_to")?,
            time: r.get("time")?,
            version: r.get("version")?,
            prev_hash: r.get("prev_hash")?,
            hash: r.get("hash")?,
        })
    })?;
    let mut out = Vec::new();
    for r in rows {
        out.push(r?);
    }
    match unknown {
        Some((seq, name)) => Err(LedgerError::Damaged {
            seq: Some(seq),
            why: format!(
                "an entry of an unknown kind `{}`",
                name.chars()
                    .filter(|c| !c.is_control())
                    .take(40)
                    .collect::<String>()
            ),
        }),
        None => Ok(out),
    }
}

/// Every slot of `query` charged: its intent's seq and its value's, if any.
pub(super) fn charged_slots(
    conn: &Connection,
    query: &str,
) -> Result<std::collections::BTreeMap<u64, (i64, Option<i64>)>, LedgerError> {
    let mut out = std::collections::BTreeMap::new();
    let mut by_seq = std::collections::HashMap::new();
    let mut stmt =
        conn.prepare_cached("SELECT slot, seq FROM entries WHERE kind = 'intent' AND query = ?1")?;
    for row in stmt.query_map(params![query], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
    })? {
        let (slot, seq) = row?;
        let slot = u64::try_from(slot)
            .map_err(|_| LedgerError::Corrupt(format!("entry {seq} has a negative slot")))?;
        out.entry(slot).or_insert((seq, None));
        by_seq.insert(seq, slot);
    }
    // in the index's order (not by seq: ordering would read every value's
    // row); the earliest value of a slot is kept
    let mut stmt = conn
        .prepare_cached("SELECT refers_to, seq FROM entries WHERE kind = 'value' AND query = ?1")?;
    for row in stmt.query_map(params![query], |r| {
        Ok((r.get::<_, Option<i64>>(0)?, r.get::<_, i64>(1)?))
    })? {
        let (refers, seq) = row?;
        if let Some(slot) = refers.and_then(|r| by_seq.get(&r)) {
            if let Some(e) = out.get_mut(slot) {
                e.1 = Some(e.1.map_or(seq, |s: i64| s.min(seq)));
            }
        }
    }
    Ok(out)
}

/// The slots of `query` recorded as skipped, as (first, last) ranges.
pub(super) fn skipped_ranges(
    conn: &Connection,
    query: &str,
) -> Result<Vec<(u64, u64)>, LedgerError> {
    let e = read_entries(
        conn,
        "SELECT * FROM entries WHERE kind = 'skip' AND query = ?1 ORDER BY seq",
        params![query],
    )?;
    e.iter()
        .map(|e| {
            e.skipped()
                .ok_or_else(|| LedgerError::Corrupt(format!("skip entry {} is unreadable", e.seq)))
        })
        .collect()
}

/// Whether `slot` of `query` lies in a range recorded as skipped.
pub(super) fn skipped_slot(conn: &Connection, query: &str, slot: u64) -> Result<bool, LedgerError> {
    Ok(skipped_ranges(conn, query)?
        .iter()
        .any(|&(a, b)| (a..=b).contains(&slot)))
}
