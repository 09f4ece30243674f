//! Every piece of state a run reads back, bound to the hash chain
//! (ledger format 5).
//!
//! * **The contract** the history was charged under: in the opening entry
//!   (and in each upgrade's), so that an upgrade that changes the
//!   guarantee is refused ([`Ledger::contract_in_force`]).
//! * **The unit key** (`<ledger>.units-key`, never in the ledger): each
//!   windowed or tree intent records its fingerprint, so a key replaced
//!   behind the runtime's back (which would restart every unit at zero
//!   windows) is found by `verify` and refused by `run`.
//! * **The window state** (`window_units`): each intent records the digest
//!   of the rows it adds, so rows deleted or inserted behind SQLite's
//!   triggers (dropped and recreated identical) are found.
//!
//! A ledger written by an earlier dpplan had none of this: the first run
//! of the plan in force binds what is there in a `state` entry (the
//! contract, the key's fingerprint, the digests of the window state so
//! far). That is trust on first use: tampering before it is not found.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, TransactionBehavior};

use super::entry::{Entry, EntryKind, StateValue};
use super::store::{append, plan_in_force, read_entries, NewEntry};
use super::{migrate, Ledger, LedgerError};

/// The unit key of a ledger: `<ledger>.units-key`.
pub fn units_key_path(ledger: &Path) -> PathBuf {
    let mut p = ledger.as_os_str().to_owned();
    p.push(".units-key");
    PathBuf::from(p)
}

/// The fingerprint of a ledger's unit key, as the chain records it
/// (SHA-256 of a domain tag and the key; the key itself is never stored);
/// `None` when there is no key file.
pub fn key_fingerprint(ledger: &Path) -> Result<Option<String>, LedgerError> {
    let path = units_key_path(ledger);
    match std::fs::read(&path) {
        Ok(key) => {
            let mut bytes = b"dpplan-units-key-fingerprint\n".to_vec();
            bytes.extend_from_slice(&key);
            Ok(Some(dpplan_plan::sha256_hex(&bytes)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LedgerError::Io(
            dpplan_engine::IoError::new(format!("cannot read `{}`", path.display())).with_source(e),
        )),
    }
}

/// The digest of one intent's window-state rows: SHA-256 over the units'
/// keyed hashes, sorted, one per line.
pub fn units_digest<'a>(units: impl IntoIterator<Item = &'a str>) -> String {
    let mut u: Vec<&str> = units.into_iter().collect();
    u.sort_unstable();
    let mut bytes = b"dpplan-window-units\n".to_vec();
    for x in u {
        bytes.extend_from_slice(x.as_bytes());
        bytes.push(b'\n');
    }
    dpplan_plan::sha256_hex(&bytes)
}

/// The window-state rows of every intent, by intent.
fn rows_by_intent(conn: &Connection) -> Result<BTreeMap<i64, Vec<String>>, LedgerError> {
    let has: bool = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'window_units'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)?;
    let mut out: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    if !has {
        return Ok(out);
    }
    let mut stmt = conn.prepare("SELECT seq, unit FROM window_units")?;
    for row in stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))? {
        let (seq, unit) = row?;
        out.entry(seq).or_default().push(unit);
    }
    Ok(out)
}

/// The contract in force: the last upgrade's, else the state entry's or
/// the opening entry's; `None` for a ledger that never recorded one.
pub(super) fn contract_in_force(
    conn: &Connection,
) -> Result<Option<dpplan_vocab::contract::Contract>, LedgerError> {
    let entries = read_entries(
        conn,
        "SELECT * FROM entries WHERE kind IN ('open', 'upgrade', 'state') ORDER BY seq DESC",
        [],
    )?;
    for e in entries {
        let c = match e.kind {
            EntryKind::Upgrade => e.upgrade_value().and_then(|u| u.contract),
            EntryKind::State => e.state_value().map(|s| s.contract),
            EntryKind::Open => {
                let info: Option<super::OpenInfo> =
                    serde_json::from_str(e.value.as_deref().unwrap_or("")).ok();
                info.and_then(|i| i.contract)
            }
            _ => None,
        };
        if c.is_some() {
            return Ok(c);
        }
    }
    Ok(None)
}

impl Ledger {
    /// Whether the chain recorded a unit key's fingerprint (an intent of a
    /// windowed query or a tree, or a state entry): then a missing key is
    /// lost state, never created anew.
    pub fn key_recorded(&self) -> Result<bool, LedgerError> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM entries WHERE kind IN ('intent', 'state') AND value LIKE '%\"units_key_sha256\":\"%'",
            [],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    /// The hashes of `query`'s intents, oldest first.
    pub fn intent_hashes(&self, query: &str) -> Result<Vec<String>, LedgerError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT hash FROM entries WHERE kind = 'intent' AND query = ?1 ORDER BY seq",
        )?;
        let rows = stmt
            .query_map(rusqlite::params![query], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    }

    /// The contract the ledger's history is charged under (`None`: written
    /// by an earlier dpplan, not run since).
    pub fn contract_in_force(
        &self,
    ) -> Result<Option<dpplan_vocab::contract::Contract>, LedgerError> {
        contract_in_force(&self.conn)
    }

    /// A ledger written by an earlier dpplan, opened to run the plan in
    /// force (`plan`): binds its contract, its unit key's fingerprint and
    /// its window state so far to the chain, in a `state` entry. Nothing
    /// for a ledger that records its contract.
    pub fn bind_state(
        &mut self,
        plan: &dpplan_plan::ExecutablePlan,
    ) -> Result<Option<Entry>, LedgerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        if contract_in_force(&tx)?.is_some() {
            return Ok(None);
        }
        plan_in_force(&tx, plan)?;
        migrate(&tx)?;
        let window_units = rows_by_intent(&tx)?
            .into_iter()
            .map(|(seq, units)| (seq, units_digest(units.iter().map(String::as_str))))
            .collect();
        let value = StateValue {
            contract: plan.body.contract(),
            units_key_sha256: key_fingerprint(&self.path)?,
            window_units,
        };
        let e = append(
            &tx,
            NewEntry {
                // Invariant: plain data with string keys; cannot fail.
                value: Some(serde_json::to_string(&value).expect("serialises")),
                ..NewEntry::new(EntryKind::State, &plan.body_sha256)
            },
        )?;
        tx.commit()?;
        self.anchor()?;
        Ok(Some(e))
    }

    /// The state beside the chain holds: every intent's window-state rows
    /// match the digest it (or the state entry) recorded, and every unit
    /// key fingerprint the chain recorded is the same, and the key file's.
    /// Returns that fingerprint (the first the chain recorded), if any.
    pub(super) fn verify_state(&self, entries: &[Entry]) -> Result<Option<String>, LedgerError> {
        let damaged = |seq: i64, why: String| LedgerError::Damaged {
            seq: Some(seq),
            why,
        };
        let mut rows = rows_by_intent(&self.conn)?;
        let mut fingerprints: Vec<(i64, String)> = Vec::new();
        let mut legacy: BTreeMap<i64, String> = BTreeMap::new();
        for e in entries {
            match e.kind {
                EntryKind::Intent => {
                    let Some(v) = e.intent_value() else { continue };
                    if let Some(f) = v.units_key_sha256 {
                        fingerprints.push((e.seq, f));
                    }
                    let Some(want) = v.window_units_sha256 else {
                        continue;
                    };
                    let got = rows.remove(&e.seq).unwrap_or_default();
                    if units_digest(got.iter().map(String::as_str)) != want {
                        return Err(damaged(e.seq, format!(
                            "the window state of `{}` slot {} does not match the digest its intent recorded (rows were removed or added behind the ledger's triggers)",
                            e.query.as_deref().unwrap_or(""),
                            e.slot.unwrap_or(-1)
                        )));
                    }
                }
                EntryKind::State => {
                    let Some(v) = e.state_value() else {
                        return Err(damaged(e.seq, "a state entry that cannot be read".into()));
                    };
                    if let Some(f) = v.units_key_sha256 {
                        fingerprints.push((e.seq, f));
                    }
                    legacy.extend(v.window_units.into_iter().filter(|(s, _)| *s < e.seq));
                }
                _ => {}
            }
        }
        // the rows of intents older than the state entry: as it recorded them
        for (seq, want) in &legacy {
            let got = rows.remove(seq).unwrap_or_default();
            if &units_digest(got.iter().map(String::as_str)) != want {
                return Err(damaged(
                    *seq,
                    "the window state of an intent does not match the digest the state entry recorded (rows were removed or added behind the ledger's triggers)".into(),
                ));
            }
        }
        // a ledger whose state is bound (created by this format, or bound
        // by a state entry): every row is covered by a digest
        let bound = entries.iter().any(|e| {
            e.kind == EntryKind::State
                || e.kind == EntryKind::Open
                    && serde_json::from_str::<super::OpenInfo>(e.value.as_deref().unwrap_or(""))
                        .is_ok_and(|i| i.contract.is_some())
        });
        if bound {
            if let Some((&seq, _)) = rows.iter().next() {
                return Err(damaged(
                    seq,
                    "window-state rows that no intent's digest covers (added behind the ledger's triggers)".into(),
                ));
            }
        }
        if let Some((first_seq, first)) = fingerprints.first() {
            if let Some((seq, _)) = fingerprints.iter().find(|(_, f)| f != first) {
                return Err(damaged(
                    *seq,
                    format!("the unit key's fingerprint differs from the one entry {first_seq} recorded: the key was replaced between runs"),
                ));
            }
            match key_fingerprint(&self.path)? {
                Some(f) if &f != first => {
                    return Err(damaged(
                        *first_seq,
                        format!(
                            "`{}` is not the unit key the chain recorded: it was replaced (every unit would restart at zero windows); restore the key from a backup",
                            units_key_path(&self.path).display()
                        ),
                    ))
                }
                // an auditor's copy without the secret key: nothing to compare
                _ => {}
            }
        }
        // last: a replaced key is named as such, not as a MAC that fails
        crate::cumulative::check_bound(self)?;
        Ok(fingerprints.into_iter().next().map(|(_, f)| f))
    }
}
