//! What a release's intent needs from the history, kept between the
//! intents of one process: the history composed so far, each query's
//! intents, the vector releases charged, and the last running totals.
//!
//! The composed history is read from the last intent, which stores it
//! (ledger format 6, [`super::IntentValue::composed`]): a process's first
//! intent no longer re-reads and re-groups every earlier intent (only the
//! first intent after a migration from an earlier format does, once). What
//! each query needs (its intents so far, whether a vector release was
//! charged, its skipped slots) is read by indexed look-ups the first time
//! a query asks, then kept. The cache is keyed by the ledger's tail (its
//! last sequence number and hash, re-read inside each intent's exclusive
//! transaction): another process that appended anything changes the tail,
//! and the cache is read again, so it never decides from a history that is
//! not the ledger's.

use std::collections::HashMap;

use dpplan_accounting as acct;
use rusqlite::Connection;

use super::entry::Entry;
use super::totals::{after_intent, composed_history, MechanismRecord, RunningTotals};
use super::LedgerError;

/// The history as of `tail`.
#[derive(Debug, Clone)]
pub(super) struct History {
    tail: (i64, String),
    pub(super) releases: Vec<acct::Release>,
    /// Intents in all.
    pub(super) n: u64,
    /// Per query asked about so far, its intents.
    per_query: HashMap<String, u64>,
    /// Per (query, mechanism record) asked about so far, whether an intent
    /// of it was charged (a windowed or tree release).
    vectors: HashMap<(String, String), bool>,
    /// Per query asked about so far, the slots recorded as skipped.
    skips: HashMap<String, Vec<(u64, u64)>>,
    /// The running totals last computed, for the releases they were
    /// computed from (a later window of a vector release adds none).
    totals: Option<(Vec<acct::Release>, String, RunningTotals)>,
}

impl History {
    /// Read from the ledger whose tail is `tail`.
    pub(super) fn read(conn: &Connection, tail: &Entry) -> Result<History, LedgerError> {
        let (releases, n) = composed_history(conn, tail.seq)?;
        Ok(History {
            tail: (tail.seq, tail.hash.clone()),
            releases,
            n,
            per_query: HashMap::new(),
            vectors: HashMap::new(),
            skips: HashMap::new(),
            totals: None,
        })
    }

    /// Whether this is the history of a ledger whose tail is `tail`.
    pub(super) fn is_at(&self, tail: &Entry) -> bool {
        self.tail.0 == tail.seq && self.tail.1 == tail.hash
    }

    pub(super) fn intents_of(
        &mut self,
        conn: &Connection,
        query: &str,
    ) -> Result<u64, LedgerError> {
        if let Some(&n) = self.per_query.get(query) {
            return Ok(n);
        }
        let n = super::schema::intents_of(conn, query)?;
        self.per_query.insert(query.to_string(), n);
        Ok(n)
    }

    /// Whether `slot` of `query` was recorded as skipped.
    pub(super) fn skipped(
        &mut self,
        conn: &Connection,
        query: &str,
        slot: u64,
    ) -> Result<bool, LedgerError> {
        if !self.skips.contains_key(query) {
            let ranges = super::store::skipped_ranges(conn, query)?;
            self.skips.insert(query.to_string(), ranges);
        }
        Ok(self.skips[query]
            .iter()
            .any(|&(a, b)| (a..=b).contains(&slot)))
    }

    /// Whether an intent of `query` with this mechanism record was charged
    /// (then a window of that vector release charges nothing).
    pub(super) fn vector_charged(
        &mut self,
        conn: &Connection,
        query: &str,
        mechanism: &str,
    ) -> Result<bool, LedgerError> {
        let key = (query.to_string(), mechanism.to_string());
        if let Some(&c) = self.vectors.get(&key) {
            return Ok(c);
        }
        let c = super::store::charged_with(conn, query, mechanism, i64::MAX)?;
        self.vectors.insert(key, c);
        Ok(c)
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
            // a query not asked about yet is read when it is
            if let Some(n) = self.per_query.get_mut(q) {
                *n += 1;
            }
            if let (true, Some(m)) = (
                record.window.is_some() || record.cumulative.is_some(),
                &e.mechanism,
            ) {
                self.vectors.insert((q.clone(), m.clone()), true);
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
    after_intent(releases, record, false)
}
