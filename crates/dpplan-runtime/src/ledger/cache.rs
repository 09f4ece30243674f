//! What a release's intent needs from the history, kept between the
//! intents of one process: the history composed so far, each query's
//! intents, the vector releases charged, and the last running totals.
//!
//! Without it each intent re-reads and re-groups every earlier intent and
//! composes the whole history again under every accountant: a catch-up of
//! n slots is quadratic. The cache is keyed by the ledger's tail (its last
//! sequence number and hash, re-read inside each intent's exclusive
//! transaction): another process that appended anything changes the tail,
//! and the cache is rebuilt from the ledger, so it never decides from a
//! history that is not the ledger's.

use std::collections::{HashMap, HashSet};

use dpplan_accounting as acct;
use rusqlite::Connection;

use super::entry::Entry;
use super::totals::{add_release, history, MechanismRecord, RunningTotals};
use super::LedgerError;

/// The history as of `tail`.
#[derive(Debug, Clone)]
pub(super) struct History {
    tail: (i64, String),
    pub(super) releases: Vec<acct::Release>,
    /// Intents in all.
    pub(super) n: u64,
    per_query: HashMap<String, u64>,
    /// (query, mechanism record) of every windowed or tree intent.
    vectors: HashSet<(String, String)>,
    /// Per query, the slots recorded as skipped.
    skips: HashMap<String, Vec<(u64, u64)>>,
    /// The running totals last computed, for the releases they were
    /// computed from (a later window of a vector release adds none).
    totals: Option<(Vec<acct::Release>, String, RunningTotals)>,
}

impl History {
    /// Read from the ledger whose tail is `tail`.
    pub(super) fn read(conn: &Connection, tail: &Entry) -> Result<History, LedgerError> {
        let (releases, n) = history(conn)?;
        let mut per_query = HashMap::new();
        let mut vectors = HashSet::new();
        let mut stmt = conn.prepare(
            "SELECT query, mechanism, COUNT(*) FROM entries WHERE kind = 'intent' GROUP BY query, mechanism",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })?;
        for row in rows {
            let (q, m, count) = row?;
            let (Some(q), Some(m)) = (q, m) else { continue };
            *per_query.entry(q.clone()).or_default() += count as u64;
            let vector = serde_json::from_str::<MechanismRecord>(&m)
                .is_ok_and(|r| r.window.is_some() || r.cumulative.is_some());
            if vector {
                vectors.insert((q, m));
            }
        }
        let mut skips: HashMap<String, Vec<(u64, u64)>> = HashMap::new();
        let skip_entries =
            super::store::read_entries(conn, "SELECT * FROM entries WHERE kind = 'skip'", [])?;
        for e in skip_entries {
            let (Some(q), Some(range)) = (&e.query, e.skipped()) else {
                return Err(LedgerError::Corrupt(format!(
                    "skip entry {} is unreadable",
                    e.seq
                )));
            };
            skips.entry(q.clone()).or_default().push(range);
        }
        Ok(History {
            tail: (tail.seq, tail.hash.clone()),
            releases,
            n,
            per_query,
            vectors,
            skips,
            totals: None,
        })
    }

    /// Whether this is the history of a ledger whose tail is `tail`.
    pub(super) fn is_at(&self, tail: &Entry) -> bool {
        self.tail.0 == tail.seq && self.tail.1 == tail.hash
    }

    pub(super) fn intents_of(&self, query: &str) -> u64 {
        self.per_query.get(query).copied().unwrap_or(0)
    }

    /// Whether `slot` of `query` was recorded as skipped.
    pub(super) fn skipped(&self, query: &str, slot: u64) -> bool {
        self.skips
            .get(query)
            .is_some_and(|r| r.iter().any(|&(a, b)| (a..=b).contains(&slot)))
    }

    /// Whether an intent of `query` with this mechanism record was charged
    /// (then a window of that vector release charges nothing).
    pub(super) fn vector_charged(&self, query: &str, mechanism: &str) -> bool {
        self.vectors
            .contains(&(query.to_string(), mechanism.to_string()))
    }

    /// The running totals of `releases` (`n` intents) under `plan`:
    /// recomputed only when the releases or the plan changed.
    pub(super) fn totals(
        &mut self,
        releases: &[acct::Release],
        n: u64,
        plan: &dpplan_plan::PlanBody,
        plan_hash: &str,
    ) -> RunningTotals {
        if let Some((r, h, t)) = &self.totals {
            if r == releases && h == plan_hash {
                let mut t = t.clone();
                t.releases = n;
                return t;
            }
        }
        let t = super::totals::running_totals(releases, n, plan);
        self.totals = Some((releases.to_vec(), plan_hash.to_string(), t.clone()));
        t
    }

    /// An intent appended (and committed) after the tail: the history
    /// moves to it.
    pub(super) fn intent_appended(
        &mut self,
        e: &Entry,
        releases: Vec<acct::Release>,
        record: &MechanismRecord,
    ) {
        self.tail = (e.seq, e.hash.clone());
        self.releases = releases;
        self.n += 1;
        if let Some(q) = &e.query {
            *self.per_query.entry(q.clone()).or_default() += 1;
            if let (true, Some(m)) = (
                record.window.is_some() || record.cumulative.is_some(),
                &e.mechanism,
            ) {
                self.vectors.insert((q.clone(), m.clone()));
            }
        }
    }

    /// Another entry (a value) appended right after the tail: the history
    /// of intents is unchanged.
    pub(super) fn other_appended(&mut self, e: &Entry) -> bool {
        if e.seq == self.tail.0 + 1 && e.prev_hash == self.tail.1 {
            self.tail = (e.seq, e.hash.clone());
            true
        } else {
            false
        }
    }
}

/// Adds a release's mechanisms to a copy of the history's.
pub(super) fn with_release(
    releases: &[acct::Release],
    record: &MechanismRecord,
) -> Vec<acct::Release> {
    let mut out = releases.to_vec();
    for m in record.accounting() {
        add_release(&mut out, m, 1);
    }
    out
}
