//! Verification of a ledger before anything is charged or served: the
//! append-only triggers, the hash chain with the protocol's invariants, the
//! anchor file and an operator's expected hash.

use std::collections::{BTreeMap, HashMap, HashSet};

use rusqlite::OptionalExtension;

use dpplan_accounting as acct;
use rusqlite::params;
use serde::Deserialize;

use super::anchor::{read_head, write_head, Checkpoint, Head};
use super::schema::schema_version;
use super::store::read_entries;
use super::totals::{after_intent, composed_history, MechanismRecord};
use super::{
    format_version, frozen, migrate, triggers_of, units_digest, Entry, EntryKind, Ledger,
    LedgerError, ANCHOR_FORMAT, ANCHOR_KEY, GENESIS_PREV,
};

/// The outcome of [`Ledger::verify`]: the chain alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    pub entries: i64,
    pub latest_hash: String,
    /// The first entry whose chain does not hold, and why.
    pub first_bad: Option<(i64, String)>,
}

use serde::Serialize;

/// How the ledger's tail is vouched for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Anchored {
    /// The anchor file matches; `appended` entries were written after it
    /// (a crash between a commit and the anchor's update leaves 1).
    Head { entries: i64, appended: i64 },
    /// The anchor file is missing but the operator's expected hash is
    /// entry `seq`.
    Expected { seq: i64 },
    /// A ledger that holds only its opening entry (nothing charged yet),
    /// before its first anchor write.
    Fresh,
    /// A ledger written by an earlier dpplan, which kept no anchor: a
    /// cut-off tail can only be detected with an expected hash. The next
    /// run that writes to it starts keeping one.
    Legacy,
}

/// The outcome of [`Ledger::integrity`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Integrity {
    pub entries: i64,
    pub latest_hash: String,
    pub anchored: Anchored,
    /// The entry that carries the operator's expected hash, when one was
    /// given.
    pub expected_seq: Option<i64>,
    /// A run's check ([`Ledger::integrity_for_run`]) that verified only the
    /// entries after this checkpoint (and the checkpoint's binding);
    /// `None` when the whole ledger was verified.
    #[serde(skip)]
    pub checked_after: Option<i64>,
}

fn damaged(seq: Option<i64>, why: impl Into<String>) -> LedgerError {
    LedgerError::Damaged {
        seq,
        why: why.into(),
    }
}

/// The protocol's invariants over the whole history, checked entry by
/// entry: the first entry is the only `open`; every intent names a query, a
/// slot and its mechanism, and no slot has two; every value completes an
/// earlier intent of the same slot that had none; a correction refers to an
/// earlier entry; a frozen report carries a readable record and charges
/// nothing.
#[derive(Default)]
struct Protocol {
    intents: HashMap<(String, i64), i64>,
    intent_slot: HashMap<i64, (String, i64)>,
    valued: HashSet<i64>,
    /// Per query, the ranges recorded as skipped.
    skipped: HashMap<String, Vec<(u64, u64)>>,
}

impl Protocol {
    fn check(&mut self, e: &Entry) -> Result<(), &'static str> {
        match e.kind {
            EntryKind::Open if e.seq == 1 => Ok(()),
            EntryKind::Open => Err("a second opening entry"),
            _ if e.seq == 1 => Err("the first entry is not the opening entry"),
            EntryKind::Intent => {
                let (Some(q), Some(s), Some(m)) = (&e.query, e.slot, &e.mechanism) else {
                    return Err("an intent without its query, slot or mechanism");
                };
                tree_nodes_hold(e, m, s)?;
                let in_skip = self.skipped.get(q).is_some_and(|r| {
                    r.iter()
                        .any(|&(a, b)| u64::try_from(s).is_ok_and(|s| (a..=b).contains(&s)))
                });
                if in_skip {
                    return Err("an intent for a slot recorded as skipped");
                }
                if self.intents.insert((q.clone(), s), e.seq).is_some() {
                    return Err("a second intent for a slot already charged");
                }
                self.intent_slot.insert(e.seq, (q.clone(), s));
                Ok(())
            }
            EntryKind::Value => {
                let Some(r) = e.refers_to else {
                    return Err("a value that completes no intent");
                };
                match self.intent_slot.get(&r) {
                    Some((q, s)) if Some(q) == e.query.as_ref() && Some(*s) == e.slot => {}
                    _ => return Err("a value that completes no earlier intent of its slot"),
                }
                if !self.valued.insert(r) {
                    return Err("a second value for one intent");
                }
                Ok(())
            }
            EntryKind::Correction => match e.refers_to {
                Some(r) if r >= 1 && r < e.seq => Ok(()),
                _ => Err("a correction of no earlier entry"),
            },
            EntryKind::Upgrade => Ok(()),
            EntryKind::State => match e.state_value() {
                Some(_) if e.query.is_none() && e.slot.is_none() && e.mechanism.is_none() => Ok(()),
                _ => Err("a state entry whose record is unreadable"),
            },
            EntryKind::Skip => {
                let (Some(q), Some((from, through)), None) = (&e.query, e.skipped(), &e.mechanism)
                else {
                    return Err("a skip entry without its query or its slots");
                };
                let charged = self.intents.keys().any(|(iq, s)| {
                    iq == q && u64::try_from(*s).is_ok_and(|s| (from..=through).contains(&s))
                });
                if charged {
                    return Err("a skip entry for a slot already charged");
                }
                let ranges = self.skipped.entry(q.clone()).or_default();
                if ranges.iter().any(|&(a, b)| a <= through && from <= b) {
                    return Err("a skip entry for a slot already skipped");
                }
                ranges.push((from, through));
                Ok(())
            }
            // its signature and its report: signoff::verify_all
            EntryKind::Signoff => match e.refers_to {
                Some(r) if r >= 1 && r < e.seq && e.query.is_none() && e.mechanism.is_none() => {
                    Ok(())
                }
                _ => Err("a sign-off of no earlier entry"),
            },
            EntryKind::FrozenReport => match frozen::frozen_value(e) {
                Some(_) if e.query.is_none() && e.slot.is_none() && e.mechanism.is_none() => Ok(()),
                _ => Err("a frozen report whose record is unreadable"),
            },
        }
    }
}

/// A cumulative count's intent stores exactly the nodes that close at its
/// slot, each a finite number; no other intent stores any.
fn tree_nodes_hold(e: &Entry, mechanism: &str, slot: i64) -> Result<(), &'static str> {
    let tree = serde_json::from_str::<super::MechanismRecord>(mechanism)
        .ok()
        .and_then(|r| r.cumulative);
    let nodes = e.tree_nodes();
    match (tree, nodes) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err("an intent that is not a cumulative count's stores tree nodes"),
        (Some(_), None) => Err("a cumulative count's intent without its tree nodes"),
        (Some(c), Some(nodes)) => {
            let t = u64::try_from(slot).map_or(0, |s| s + 1);
            let want = dpplan_mechanisms::tree::closing(t, c.levels);
            let got: Vec<(u32, u64)> = nodes.iter().map(|n| (n.level, n.index)).collect();
            if got != want || t > c.slots {
                return Err(
                    "a cumulative count's intent stores other nodes than those closing at its slot",
                );
            }
            if nodes.iter().any(|n| !n.value.is_finite()) {
                return Err(
                    "a cumulative count's intent stores a node that is not a finite number",
                );
            }
            Ok(())
        }
    }
}

/// What an intent stored of the composed history (ledger format 6), read
/// without the rest of its value.
#[derive(Deserialize)]
struct StoredComposition {
    #[serde(default)]
    composed: Option<Vec<acct::Release>>,
    running_totals: StoredCount,
}

#[derive(Deserialize)]
struct StoredCount {
    releases: u64,
}

fn stored_composition(e: &Entry) -> Option<StoredComposition> {
    serde_json::from_str(e.value.as_deref()?).ok()
}

/// A tail of more than `LONG_TAIL.0` entries that is also more than
/// 1/`LONG_TAIL.1` of the ledger is verified whole (a small ledger, or a
/// short tail, from the checkpoint).
const LONG_TAIL: (i64, i64) = (1000, 4);

const COMPOSED_WRONG: &str = "the history it records as composed is not the chain's (the history before it plus its release)";

/// The history composed along the chain, intent by intent: what each
/// intent of format 6 must have stored ([`super::IntentValue::composed`]).
#[derive(Default)]
struct Composition {
    releases: Vec<acct::Release>,
    intents: u64,
    /// (query, mechanism record) of the vector releases charged.
    vectors: HashSet<(String, String)>,
    /// An intent whose mechanism record cannot be read was met: the
    /// composition is not known after it (and nothing is compared).
    unknown: bool,
}

impl Composition {
    fn intent(&mut self, e: &Entry) -> Result<(), &'static str> {
        let (Some(q), Some(m)) = (&e.query, &e.mechanism) else {
            return Ok(());
        };
        self.intents += 1;
        match serde_json::from_str::<MechanismRecord>(m) {
            Ok(rec) => {
                let vector = rec.window.is_some() || rec.cumulative.is_some();
                let charged_before = vector && !self.vectors.insert((q.clone(), m.clone()));
                self.releases = after_intent(&self.releases, &rec, charged_before);
            }
            Err(_) => self.unknown = true,
        }
        match stored_composition(e) {
            Some(StoredComposition {
                composed: Some(c),
                running_totals,
            }) if !self.unknown => {
                if c != self.releases || running_totals.releases != self.intents {
                    return Err(COMPOSED_WRONG);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Checks a whole history (in sequence order) against the chain and the
/// protocol's invariants; reports the first entry that does not hold.
pub(super) fn verify_entries(entries: &[Entry]) -> Verification {
    let n = entries.len() as i64;
    let latest = entries
        .last()
        .map_or_else(|| GENESIS_PREV.to_string(), |e| e.hash.clone());
    let mut prev_hash = GENESIS_PREV;
    let mut totals = (0.0f64, 0.0f64);
    let mut protocol = Protocol::default();
    let mut composition = Composition::default();
    for (i, e) in entries.iter().enumerate() {
        let bad = |why: &str| Verification {
            entries: n,
            latest_hash: latest.clone(),
            first_bad: Some((e.seq, why.to_string())),
        };
        if e.seq != i as i64 + 1 {
            return bad("sequence numbers are not contiguous (an entry was removed or inserted)");
        }
        if e.prev_hash != prev_hash {
            return bad("it does not link to the previous entry's hash");
        }
        let expected = (totals.0 + e.epsilon, totals.1 + e.delta);
        if e.total_epsilon != expected.0 || e.total_delta != expected.1 {
            return bad("the running total does not add up");
        }
        if (e.kind != EntryKind::Intent) && (e.epsilon != 0.0 || e.delta != 0.0) {
            return bad("only an intent may charge");
        }
        if e.compute_hash() != e.hash {
            return bad("its content does not match its hash (it was modified)");
        }
        if let Err(why) = protocol.check(e) {
            return bad(why);
        }
        if e.kind == EntryKind::Intent {
            if let Err(why) = composition.intent(e) {
                return bad(why);
            }
        }
        totals = expected;
        prev_hash = &e.hash;
    }
    Verification {
        entries: n,
        latest_hash: latest,
        first_bad: None,
    }
}

impl Ledger {
    /// Checks the whole chain and the protocol's invariants; reports the
    /// first entry that does not hold.
    pub fn verify(&self) -> Result<Verification, LedgerError> {
        Ok(verify_entries(&self.entries()?))
    }

    /// The append-only triggers must be exactly the ones the ledger was
    /// created with: a dropped trigger lets an edit through, an added one
    /// could rewrite what is appended.
    fn check_triggers(&self) -> Result<(), LedgerError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")?;
        let expected = triggers_of(format_version(&self.conn)?);
        let found = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        for &(name, sql) in &expected {
            match found.iter().find(|(n, _)| n == name) {
                None => {
                    return Err(damaged(
                        None,
                        format!("the append-only trigger `{name}` was dropped"),
                    ))
                }
                Some((_, s)) if s.as_deref() != Some(sql) => {
                    return Err(damaged(
                        None,
                        format!("the append-only trigger `{name}` was altered"),
                    ))
                }
                Some(_) => {}
            }
        }
        if let Some((extra, _)) = found
            .iter()
            .find(|(n, _)| !expected.iter().any(|(t, _)| t == n))
        {
            return Err(damaged(
                None,
                format!("the ledger has a trigger `{extra}` it was not created with"),
            ));
        }
        Ok(())
    }

    /// Whether this ledger keeps an anchor file (created, or first written,
    /// by a dpplan that keeps one).
    fn anchor_required(&self) -> Result<bool, LedgerError> {
        let v: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [ANCHOR_KEY], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(v.is_some())
    }

    /// Everything that must hold before a run charges or serves anything:
    /// the triggers, the chain and its invariants, the anchor file (the
    /// ledger must still contain the anchored entry with the anchored hash),
    /// and `expect_hash` (an operator's latest hash) when given. Any failure
    /// is [`LedgerError::Damaged`], naming the first bad entry where there
    /// is one.
    ///
    /// Runs under the ledger's write lock: the anchor is only written under
    /// it too, so the history read here and the anchor read here are of the
    /// same moment (another runtime's commit and anchor update cannot fall
    /// between the two reads and make a sound ledger look cut off).
    pub fn integrity(&self, expect_hash: Option<&str>) -> Result<Integrity, LedgerError> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let r = self.integrity_locked(expect_hash);
        // Nothing was written: ending the transaction cannot lose anything.
        let _ = self.conn.execute_batch("ROLLBACK");
        r
    }

    /// A run's check before it charges or serves anything: as
    /// [`Ledger::integrity`], but from the anchor's checkpoint (the last
    /// successful verification) when there is one that still holds, so
    /// that its cost follows the entries appended since, not the history.
    ///
    /// From the checkpoint, it checks: the checkpoint's binding (entry
    /// `checkpoint.entries` is there with the checkpoint's hash, and its
    /// content still hashes to it; entry 1 is the anchor's); that nothing
    /// changed SQLite's schema since (the schema cookie: every edit of an
    /// entry through SQL drops a trigger first, `schema.rs`) and the
    /// triggers are the ones expected; that the entries run from 1 to n;
    /// the anchor, as the full check does;
    /// then every entry after the checkpoint as [`Ledger::verify`] checks
    /// it (the chain from the checkpoint's hash, the running totals, its
    /// hash, the protocol's invariants against the whole history by
    /// indexed look-ups, its composed history) with the window state and
    /// unit key fingerprints those entries recorded (and the window state's
    /// row count against the checkpoint's), and every frozen report and
    /// the trees' exact state, whole, as the full check does.
    ///
    /// When any of it does not hold (or there is no checkpoint, or an
    /// expected hash was given) the whole ledger is verified as by
    /// [`Ledger::integrity`], whose verdict and message are the run's: a
    /// ledger the full check refuses, for a reason this one sees, is
    /// refused with the same words.
    ///
    /// What only the full check finds: an entry behind the checkpoint
    /// changed without going through SQLite's schema — bytes of the
    /// database file edited directly, or the schema cookie itself reset
    /// after a trigger was dropped and recreated. Both are deliberate
    /// forgeries by someone who can write the files, who could as well
    /// recompute every hash and rewrite the anchor (which no unkeyed
    /// chain detects); `dpplan ledger verify` remains the whole check.
    pub fn integrity_for_run(&self, expect_hash: Option<&str>) -> Result<Integrity, LedgerError> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let r = match expect_hash {
            None => self.checkpoint_check_locked().transpose(),
            Some(_) => None,
        };
        let r = match r {
            Some(r) => r,
            None => self.integrity_locked(expect_hash),
        };
        // Nothing was written: ending the transaction cannot lose anything.
        let _ = self.conn.execute_batch("ROLLBACK");
        r
    }

    /// The check from the anchor's checkpoint: `None` when it does not
    /// apply or anything it checks does not hold (the full check then
    /// decides).
    fn checkpoint_check_locked(&self) -> Result<Option<Integrity>, LedgerError> {
        let Some(head) = read_head(&self.path)? else {
            return Ok(None);
        };
        let Some(cp) = head.checkpoint.clone() else {
            return Ok(None);
        };
        if format_version(&self.conn)? < 6 || cp.entries < 1 || cp.entries > head.entries {
            return Ok(None);
        }
        if schema_version(&self.conn)? != cp.schema_version || self.check_triggers().is_err() {
            return Ok(None);
        }
        // the checkpoint's binding
        let (Ok(Some(first)), Ok(Some(at))) = (self.entry(1), self.entry(cp.entries)) else {
            return Ok(None);
        };
        if first.hash != head.genesis_hash || at.hash != cp.hash || at.compute_hash() != at.hash {
            return Ok(None);
        }
        // a long tail (a catch-up's appends since the last run's check) is
        // verified whole: per entry, the look-ups below cost more than the
        // full check's one pass
        let last: Option<i64> = self
            .conn
            .query_row("SELECT MAX(seq) FROM entries", [], |r| r.get(0))?;
        if last.is_some_and(|n| n - cp.entries > LONG_TAIL.0 && (n - cp.entries) * LONG_TAIL.1 > n)
        {
            return Ok(None);
        }
        let Ok(tail) = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE seq > ?1 ORDER BY seq",
            [cp.entries],
        ) else {
            return Ok(None);
        };
        let n = tail.last().map_or(at.seq, |e| e.seq);
        // the entries run from 1 to n (between them, none can be removed
        // or inserted through SQL without a trigger dropped)
        // (one query each: SQLite reads a lone MIN or MAX off the b-tree)
        let end = |sql: &str| -> Result<Option<i64>, LedgerError> {
            Ok(self.conn.query_row(sql, [], |r| r.get(0))?)
        };
        if end("SELECT MIN(seq) FROM entries")? != Some(1)
            || end("SELECT MAX(seq) FROM entries")? != Some(n)
        {
            return Ok(None);
        }
        // the anchor, as the full check reads it
        if head.entries > n {
            return Ok(None);
        }
        match self.entry(head.entries) {
            Ok(Some(e)) if e.hash == head.latest_hash => {}
            _ => return Ok(None),
        }
        let mut fingerprint = cp.units_key_sha256.clone();
        // the composed history after the last intent checked (read from
        // the ledger for the first intent after the checkpoint)
        let mut composed: Option<(Vec<acct::Release>, u64)> = None;
        let mut prev = &at;
        let mut windowed: BTreeMap<i64, (&Entry, String)> = BTreeMap::new();
        for e in &tail {
            if e.seq != prev.seq + 1
                || e.prev_hash != prev.hash
                || e.total_epsilon != prev.total_epsilon + e.epsilon
                || e.total_delta != prev.total_delta + e.delta
                || (e.kind != EntryKind::Intent && (e.epsilon != 0.0 || e.delta != 0.0))
                || e.compute_hash() != e.hash
                || !self.tail_protocol(e)?
            {
                return Ok(None);
            }
            if e.kind == EntryKind::Intent {
                if !self.tail_composition(e, &mut composed)? {
                    return Ok(None);
                }
                let Some(v) = e.intent_value() else {
                    prev = e;
                    continue;
                };
                if let Some(f) = v.units_key_sha256 {
                    if fingerprint.get_or_insert_with(|| f.clone()) != &f {
                        return Ok(None);
                    }
                }
                if let Some(d) = v.window_units_sha256 {
                    windowed.insert(e.seq, (e, d));
                }
            }
            prev = e;
        }
        let Some(window_units) = self.tail_window_state(cp.entries, &windowed)? else {
            return Ok(None);
        };
        if window_units != cp.window_units + self.window_rows_after(cp.entries)? {
            return Ok(None);
        }
        if let Some(f) = &fingerprint {
            if super::key_fingerprint(&self.path)?.is_some_and(|k| &k != f) {
                return Ok(None);
            }
        }
        let frozen = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE kind = 'frozen_report' ORDER BY seq",
            [],
        )?;
        // every sign-off's signature, with the first entry and the frozen
        // reports they refer to (a sign-off is rare: read them all)
        let signed = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE seq = 1 OR kind IN ('frozen_report', 'signoff') ORDER BY seq",
            [],
        )?;
        if frozen::verify_all(&self.conn, &frozen).is_err()
            || super::signoff::verify_all(&self.conn, &signed).is_err()
            || crate::cumulative::check_bound(self).is_err()
        {
            return Ok(None);
        }
        let latest_hash = prev.hash.clone();
        self.checkpoint.replace(Some(Checkpoint {
            entries: n,
            hash: latest_hash.clone(),
            schema_version: cp.schema_version,
            window_units,
            units_key_sha256: fingerprint,
        }));
        Ok(Some(Integrity {
            entries: n,
            latest_hash,
            anchored: Anchored::Head {
                entries: head.entries,
                appended: n - head.entries,
            },
            expected_seq: None,
            checked_after: Some(cp.entries),
        }))
    }

    /// The protocol's invariants ([`Protocol::check`]) for one entry after
    /// the checkpoint, against the whole history before it by indexed
    /// look-ups; false when one does not hold (or for a state entry, which
    /// binds the history behind it: the full check decides).
    fn tail_protocol(&self, e: &Entry) -> Result<bool, LedgerError> {
        let exists = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> Result<bool, LedgerError> {
            Ok(self
                .conn
                .query_row(sql, p, |_| Ok(()))
                .optional()?
                .is_some())
        };
        let skips_before = |q: &str| -> Result<Vec<(u64, u64)>, LedgerError> {
            let skips = read_entries(
                &self.conn,
                "SELECT * FROM entries WHERE kind = 'skip' AND query = ?1 AND seq < ?2 ORDER BY seq",
                params![q, e.seq],
            )?;
            Ok(skips.iter().filter_map(Entry::skipped).collect())
        };
        Ok(match e.kind {
            EntryKind::Open | EntryKind::State => false,
            EntryKind::Intent => {
                let (Some(q), Some(s), Some(m)) = (&e.query, e.slot, &e.mechanism) else {
                    return Ok(false);
                };
                if tree_nodes_hold(e, m, s).is_err() {
                    return Ok(false);
                }
                let in_skip = skips_before(q)?
                    .iter()
                    .any(|&(a, b)| u64::try_from(s).is_ok_and(|s| (a..=b).contains(&s)));
                !in_skip
                    && !exists(
                        "SELECT 1 FROM entries WHERE kind = 'intent' AND query = ?1 AND slot = ?2 AND seq < ?3",
                        params![q, s, e.seq],
                    )?
            }
            EntryKind::Value => {
                let Some(r) = e.refers_to.filter(|&r| r < e.seq) else {
                    return Ok(false);
                };
                let intent_ok = self.entry(r)?.is_some_and(|i| {
                    i.kind == EntryKind::Intent && i.query == e.query && i.slot == e.slot
                });
                intent_ok
                    && !exists(
                        "SELECT 1 FROM entries WHERE kind = 'value' AND refers_to = ?1 AND seq < ?2",
                        params![r, e.seq],
                    )?
            }
            EntryKind::Correction => matches!(e.refers_to, Some(r) if r >= 1 && r < e.seq),
            EntryKind::Upgrade => true,
            EntryKind::Skip => {
                let (Some(q), Some((from, through)), None) = (&e.query, e.skipped(), &e.mechanism)
                else {
                    return Ok(false);
                };
                let to_i64 = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
                let charged = exists(
                    "SELECT 1 FROM entries WHERE kind = 'intent' AND query = ?1 AND slot BETWEEN ?2 AND ?3 AND seq < ?4",
                    params![q, to_i64(from), to_i64(through), e.seq],
                )?;
                !charged
                    && !skips_before(q)?
                        .iter()
                        .any(|&(a, b)| a <= through && from <= b)
            }
            EntryKind::FrozenReport => {
                frozen::frozen_value(e).is_some()
                    && e.query.is_none()
                    && e.slot.is_none()
                    && e.mechanism.is_none()
            }
            // its signature: signoff::verify_all, after the tail
            EntryKind::Signoff => {
                matches!(e.refers_to, Some(r) if r >= 1 && r < e.seq)
                    && e.query.is_none()
                    && e.mechanism.is_none()
            }
        })
    }

    /// An intent after the checkpoint that stored its composed history:
    /// it is the history before it (the intent before it stored it, or
    /// composed afresh) plus its release.
    /// `last`: the composed history after the intent checked before this
    /// one, if it stored one (then the ledger is not read again).
    fn tail_composition(
        &self,
        e: &Entry,
        last: &mut Option<(Vec<acct::Release>, u64)>,
    ) -> Result<bool, LedgerError> {
        let Some(StoredComposition {
            composed: Some(c),
            running_totals,
        }) = stored_composition(e)
        else {
            *last = None;
            return Ok(true);
        };
        let (Some(q), Some(m)) = (&e.query, &e.mechanism) else {
            return Ok(false);
        };
        let Ok(rec) = serde_json::from_str::<MechanismRecord>(m) else {
            return Ok(false);
        };
        let (before, n) = match last.take() {
            Some(b) => b,
            None => match composed_history(&self.conn, e.seq - 1) {
                Ok(b) => b,
                Err(_) => return Ok(false),
            },
        };
        let vector = rec.window.is_some() || rec.cumulative.is_some();
        let charged_before = vector && super::store::charged_with(&self.conn, q, m, e.seq)?;
        let ok =
            c == after_intent(&before, &rec, charged_before) && running_totals.releases == n + 1;
        *last = Some((c, running_totals.releases));
        Ok(ok)
    }

    /// The window state of the intents after the checkpoint: every row
    /// added since belongs to one of them, matches the digest it recorded,
    /// and keeps its unit within its bound. The table's row count, or
    /// `None` when anything does not hold.
    fn tail_window_state(
        &self,
        after: i64,
        windowed: &BTreeMap<i64, (&Entry, String)>,
    ) -> Result<Option<i64>, LedgerError> {
        let mut stmt = self
            .conn
            .prepare("SELECT query, unit, slot, seq FROM window_units WHERE seq > ?1")?;
        let mut rows: BTreeMap<i64, Vec<(String, String, i64)>> = BTreeMap::new();
        for row in stmt.query_map([after], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })? {
            let (q, u, slot, seq) = row?;
            rows.entry(seq).or_default().push((q, u, slot));
        }
        for (seq, (e, want)) in windowed {
            let got = rows.remove(seq).unwrap_or_default();
            if &units_digest(got.iter().map(|(_, u, _)| u.as_str())) != want {
                return Ok(None);
            }
            let Some(bound) = e
                .mechanism
                .as_deref()
                .and_then(|m| serde_json::from_str::<MechanismRecord>(m).ok())
                .and_then(|r| {
                    r.window
                        .map(|w| w.windows_per_unit)
                        .or(r.cumulative.map(|c| c.kept_slots))
                })
            else {
                if got.is_empty() {
                    continue;
                }
                return Ok(None);
            };
            for (q, u, slot) in &got {
                if Some(q) != e.query.as_ref() || Some(*slot) != e.slot {
                    return Ok(None);
                }
                let kept: i64 = self.conn.query_row(
                    "SELECT COUNT(*) FROM window_units WHERE query = ?1 AND unit = ?2",
                    params![q, u],
                    |r| r.get(0),
                )?;
                if u64::try_from(kept).map_or(true, |k| k > bound) {
                    return Ok(None);
                }
            }
        }
        // rows that no intent after the checkpoint recorded
        if !rows.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.window_rows()?))
    }

    /// The rows of the window state (0 without the table).
    fn window_rows(&self) -> Result<i64, LedgerError> {
        if !super::window_state::has_table(&self.conn)? {
            return Ok(0);
        }
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM window_units", [], |r| r.get(0))?)
    }

    /// The rows of the window state recorded by intents after `after`.
    fn window_rows_after(&self, after: i64) -> Result<i64, LedgerError> {
        if !super::window_state::has_table(&self.conn)? {
            return Ok(0);
        }
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM window_units WHERE seq > ?1",
            [after],
            |r| r.get(0),
        )?)
    }

    fn integrity_locked(&self, expect_hash: Option<&str>) -> Result<Integrity, LedgerError> {
        // The chain first: when entries were edited, the operator learns
        // which one, not only that the triggers were dropped to do it.
        let entries = self.entries()?;
        let v = verify_entries(&entries);
        if let Some((seq, why)) = v.first_bad {
            return Err(damaged(Some(seq), why));
        }
        self.check_triggers()?;
        frozen::verify_all(&self.conn, &entries)?;
        super::signoff::verify_all(&self.conn, &entries)?;
        super::window_state::verify_all(&self.conn, &entries)?;
        let units_key_sha256 = self.verify_state(&entries)?;
        let n = v.entries;
        let expected_seq = match expect_hash {
            None => None,
            Some(h) => Some(
                entries
                    .iter()
                    .find(|e| e.hash.eq_ignore_ascii_case(h.trim()))
                    .map(|e| e.seq)
                    .ok_or_else(|| {
                        damaged(
                            None,
                            format!(
                                "no entry has the expected hash {}: the ledger was cut off, rewritten, or is not the one expected",
                                short(h)
                            ),
                        )
                    })?,
            ),
        };
        let genesis = entries.first().map(|e| e.hash.as_str()).unwrap_or("");
        let anchored = match read_head(&self.path)? {
            Some(head) => {
                if head.genesis_hash != genesis {
                    return Err(damaged(
                        None,
                        "the anchor file belongs to another ledger (its first entry differs)",
                    ));
                }
                if head.entries > n {
                    return Err(damaged(
                        Some(n + 1),
                        format!(
                            "the ledger ends at entry {n} but its anchor records {} entries: entries {}–{} are missing (a lost WAL file, cut-off pages, or an older copy restored)",
                            head.entries,
                            n + 1,
                            head.entries
                        ),
                    ));
                }
                let at = usize::try_from(head.entries - 1)
                    .ok()
                    .and_then(|i| entries.get(i));
                match at {
                    Some(e) if e.hash == head.latest_hash => {}
                    _ => {
                        return Err(damaged(
                            Some(head.entries),
                            format!(
                                "entry {}'s hash differs from the anchor's {}: the ledger was rewritten",
                                head.entries,
                                short(&head.latest_hash)
                            ),
                        ))
                    }
                }
                Anchored::Head {
                    entries: head.entries,
                    appended: n - head.entries,
                }
            }
            None if !self.anchor_required()? => Anchored::Legacy,
            None if n <= 1 => Anchored::Fresh,
            None => match expected_seq {
                Some(seq) => Anchored::Expected { seq },
                None => {
                    return Err(damaged(
                        None,
                        format!(
                            "its anchor `{}` is missing, so a cut-off tail cannot be ruled out; pass --expect-hash with the latest hash printed by the last run to re-anchor it",
                            super::anchor::head_path(&self.path).display()
                        ),
                    ))
                }
            },
        };
        self.checkpoint.replace(Some(Checkpoint {
            entries: n,
            hash: v.latest_hash.clone(),
            schema_version: schema_version(&self.conn)?,
            window_units: self.window_rows()?,
            units_key_sha256,
        }));
        Ok(Integrity {
            entries: n,
            latest_hash: v.latest_hash,
            anchored,
            expected_seq,
            checked_after: None,
        })
    }

    /// Records the ledger's current tail in the anchor file (and, for a
    /// ledger from an earlier dpplan, starts keeping one). Runs under an
    /// exclusive transaction, so concurrent writers update the anchor in
    /// the order of their commits and it never moves backwards.
    pub fn anchor(&self) -> Result<(), LedgerError> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let r = self.anchor_locked();
        let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
        let ended = self.conn.execute_batch(end);
        r?;
        ended?;
        Ok(())
    }

    fn anchor_locked(&self) -> Result<(), LedgerError> {
        // The first write of a dpplan that knows format 2 migrates a ledger
        // of format 1 (as it starts keeping an anchor). A checkpoint taken
        // before this migration stays valid after it: the schema changed
        // here, under the write lock, and by nothing else since.
        let schema_before = schema_version(&self.conn)?;
        migrate(&self.conn)?;
        let schema_after = schema_version(&self.conn)?;
        if !self.anchor_required()? {
            self.conn.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)",
                [ANCHOR_KEY, ANCHOR_FORMAT],
            )?;
        }
        let tail = self.tail()?;
        let genesis: String =
            self.conn
                .query_row("SELECT hash FROM entries WHERE seq = 1", [], |r| r.get(0))?;
        let old = read_head(&self.path)?.filter(|h| h.genesis_hash == genesis);
        if old.as_ref().is_some_and(|h| h.entries > tail.seq) {
            // Never move the anchor back: the lost entries stay visible to
            // the next verification.
            return Ok(());
        }
        // this process's last verification, else the one the anchor kept
        let checkpoint = self
            .checkpoint
            .borrow_mut()
            .take()
            .or_else(|| old.and_then(|h| h.checkpoint))
            .filter(|c| c.entries <= tail.seq)
            .map(|mut c| {
                if c.schema_version == schema_before {
                    c.schema_version = schema_after;
                }
                c
            });
        write_head(
            &self.path,
            &Head {
                checkpoint,
                ..Head::new(&genesis, tail.seq, &tail.hash)
            },
        )
    }
}

/// The first 16 hex digits of a hash (never a long echo of user input).
fn short(h: &str) -> String {
    let h: String = h.chars().filter(|c| !c.is_control()).take(16).collect();
    format!("{h}…")
}

#[cfg(test)]
mod tree_node_tests {
    use super::*;

    /// An intent with this mechanism record's `cumulative` (T = 8, K = 4
    /// levels; none when `tree` is false) and these stored nodes.
    fn intent(tree: bool, slot: i64, nodes: Option<&[(u32, u64, f64)]>) -> Entry {
        let cumulative = if tree {
            r#","cumulative":{"column":"t","seconds":86400.0,"slots":8,"levels":4,"nodes":15,"windows_per_unit":1,"rows_per_window":1,"kept_slots":1}"#
        } else {
            ""
        };
        let mechanism = format!(
            r#"{{"aggregation":"count(d)","parts":[{{"statistic":"count","mechanism":"laplace","scale":1.0,"grid_exponent":-30,"l1":4.0,"l2":2.0,"coords":15}}]{cumulative}}}"#
        );
        let mut value = serde_json::json!({"running_totals": {"releases": 1, "at_delta": 1e-6}});
        if let Some(nodes) = nodes {
            value["tree_nodes"] = nodes
                .iter()
                .map(|&(level, index, value)| serde_json::json!({"level": level, "index": index, "value": value}))
                .collect();
        }
        serde_json::from_value(serde_json::json!({
            "seq": 2, "kind": "intent", "plan_hash": "p", "query": "q", "slot": slot,
            "mechanism": mechanism, "epsilon": 0.0, "delta": 0.0, "total_epsilon": 0.0,
            "total_delta": 0.0, "value": value.to_string(), "refers_to": null,
            "time": "t", "version": "v", "prev_hash": "h", "hash": "h"
        }))
        .expect("an entry")
    }

    fn holds(e: &Entry) -> Result<(), &'static str> {
        tree_nodes_hold(
            e,
            e.mechanism.as_deref().expect("a mechanism"),
            e.slot.expect("a slot"),
        )
    }

    #[test]
    fn a_cumulative_intent_stores_exactly_the_nodes_closing_at_its_slot() {
        // slot index 3 is t = 4: nodes (0, 3), (1, 1), (2, 0) close
        let ok = [(0, 3, 1.5), (1, 1, -2.0), (2, 0, 7.25)];
        assert_eq!(holds(&intent(true, 3, Some(&ok))), Ok(()));
        assert_eq!(holds(&intent(true, 0, Some(&[(0, 0, 0.5)]))), Ok(()));
        assert_eq!(holds(&intent(false, 3, None)), Ok(()));
        // controls: a node missing, one of another slot, an extra one, a
        // non-finite value (JSON null), none at all, nodes on a plain intent
        for bad in [
            intent(true, 3, Some(&ok[..2])),
            intent(true, 3, Some(&[(0, 2, 1.0), (1, 1, 1.0), (2, 0, 1.0)])),
            intent(
                true,
                3,
                Some(&[(0, 3, 1.0), (1, 1, 1.0), (2, 0, 1.0), (3, 0, 1.0)]),
            ),
            intent(true, 3, Some(&[(0, 3, f64::NAN), (1, 1, 1.0), (2, 0, 1.0)])),
            intent(true, 3, None),
            intent(false, 3, Some(&ok)),
            intent(true, 8, Some(&[(0, 8, 1.0)])),
        ] {
            assert!(holds(&bad).is_err(), "{:?}", bad.value);
        }
    }
}
