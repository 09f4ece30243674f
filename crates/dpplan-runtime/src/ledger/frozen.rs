//! Frozen reports: what a reviewer signed off, kept in the ledger.
//!
//! A `frozen_report` entry records the report's SHA-256 and the exact
//! inputs of its claim (every accounted mechanism with its kind, scale,
//! sensitivities and release count, the δ, the accountant requested and
//! the claimed (ε, δ)), the plan's source hash, the dpplan version and the
//! source revision of the build that froze it. The report's bytes are kept
//! in the `frozen_reports` table (keyed by their hash, append-only like the
//! entries). A frozen report is served only after it is verified: its bytes
//! hash to the entry's hash, and its claim is derived again from the
//! recorded inputs by the accounting crate.
//!
//! A correction of a frozen-report entry (`dpplan ledger correct`) is an
//! addendum: the report is never changed, and [`Ledger::frozen`] returns the
//! addenda, oldest first, to be shown after it.
//!
//! Freezing needs an existing ledger ([`Ledger::open`] with a genesis
//! creates one for the plan): the CLI creates it when it is missing, as a
//! first run would.

use dpplan_accounting as acct;
use dpplan_vocab::{Accountant, AccountantChoice, NoiseKind};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use super::totals::plan_bound;
use super::{
    append, current_plan, format_version, migrate, read_entries, Entry, EntryKind, Ledger,
    LedgerError, NewEntry,
};

/// The source revision of this build (`git rev-parse HEAD` at build time,
/// `unknown` outside a git checkout).
pub const SOURCE_REVISION: &str = env!("DPPLAN_SOURCE_REVISION");

/// The relative tolerance within which a re-derived ε must equal the
/// claimed one: far below any change of an input (a release more or less,
/// a sensitivity doubled), above the last-bit differences a later build of
/// the accounting crate may make.
pub const REDERIVE_TOLERANCE: f64 = 1e-9;

/// One accounted mechanism of a frozen claim: one noisy part of a query, and
/// how many times the query releases it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountedRelease {
    /// The query the part belongs to (a mean has two parts).
    pub query: String,
    pub kind: NoiseKind,
    /// b for the Laplace kinds, σ for the Gaussian kinds.
    pub scale: f64,
    pub l1: f64,
    pub l2: f64,
    pub coords: u64,
    /// ℓ∞ sensitivity of a discrete Gaussian over several coordinates
    /// (absent: not given).
    #[serde(default, skip_serializing_if = "dpplan_vocab::is_zero")]
    pub linf: f64,
    /// The query's release count over its whole schedule.
    pub releases: u64,
    /// The Poisson sampling rate the query's releases run at (absent: not
    /// sampled; a frozen report written before it existed reads as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<f64>,
}

/// A claim: the (ε, δ) and the accountant that produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub epsilon: f64,
    pub delta: f64,
    pub accountant: Accountant,
}

/// Exactly what the accountants composed for a report's claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountantInputs {
    /// In the plan's order.
    pub mechanisms: Vec<AccountedRelease>,
    /// The δ at which ε is stated (the budget's).
    pub delta: f64,
    /// The accountant the plan asked for (`best` = the tightest).
    pub accountant: AccountantChoice,
    pub claim: Claim,
}

impl AccountantInputs {
    /// The accounting crate's releases, in order.
    pub fn releases(&self) -> Vec<acct::Release> {
        self.mechanisms
            .iter()
            .map(|m| acct::Release {
                sample: m.sample,
                mechanism: acct::Mechanism {
                    kind: m.kind,
                    scale: m.scale,
                    sensitivity: acct::Sensitivity {
                        l1: m.l1,
                        l2: m.l2,
                        coords: m.coords,
                        linf: m.linf,
                    },
                },
                count: m.releases,
            })
            .collect()
    }

    /// The claim derived again from the inputs, by the requested
    /// accountant (or the tightest, for `best`).
    pub fn rederive(&self) -> Result<Claim, String> {
        let b = plan_bound(&self.releases(), self.accountant, self.delta)
            .map_err(|e| format!("the {} accountant gives no bound: {e}", self.accountant))?;
        Ok(Claim {
            epsilon: b.epsilon,
            delta: b.delta,
            accountant: b.accountant,
        })
    }

    /// Checks that the claim re-derives from the inputs: the same ε and δ
    /// (within [`REDERIVE_TOLERANCE`], relative) by the same accountant.
    pub fn check(&self) -> Result<Claim, String> {
        let again = self.rederive()?;
        let close =
            |a: f64, b: f64| a == b || (a - b).abs() <= REDERIVE_TOLERANCE * a.abs().max(b.abs());
        let c = &self.claim;
        if !close(again.epsilon, c.epsilon)
            || !close(again.delta, c.delta)
            || again.accountant != c.accountant
        {
            return Err(format!(
                "the recorded inputs give ε = {} at δ = {} ({}), but the report claims ε = {} at δ = {} ({})",
                again.epsilon,
                again.delta,
                again.accountant.name(),
                c.epsilon,
                c.delta,
                c.accountant.name()
            ));
        }
        Ok(again)
    }
}

/// The `value` of a `frozen_report` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenValue {
    /// SHA-256 (hex) of the report's bytes.
    pub report_sha256: String,
    /// What the bytes are (`html`, `md`, `json`, or another name).
    pub format: String,
    /// The report's length in bytes.
    pub size: u64,
    pub plan_name: Option<String>,
    /// SHA-256 (hex) of the plan's source text.
    pub plan_source_sha256: String,
    /// The executable plan's body hash (what a run's entries name), when
    /// the plan compiles.
    pub plan_sha256: Option<String>,
    /// The dpplan that froze it (`dpplan X.Y.Z`).
    pub dpplan_version: String,
    /// The source revision of that build (`unknown` outside git).
    pub source_revision: String,
    pub inputs: AccountantInputs,
}

/// A report to freeze.
#[derive(Debug, Clone, PartialEq)]
pub struct FrozenReport {
    pub bytes: Vec<u8>,
    pub format: String,
    pub plan_name: Option<String>,
    pub plan_source_sha256: String,
    pub plan_sha256: Option<String>,
    pub inputs: AccountantInputs,
}

/// An addendum to a frozen report (a correction of its entry).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Addendum {
    pub seq: i64,
    pub time: String,
    pub text: String,
}

/// A frozen report as the ledger holds it, verified.
#[derive(Debug, Clone, PartialEq)]
pub struct Frozen {
    /// Exactly the bytes that were frozen.
    pub bytes: Vec<u8>,
    pub entry: Entry,
    pub value: FrozenValue,
    /// Oldest first; shown after the report.
    pub addenda: Vec<Addendum>,
    /// The reviewers' sign-offs, verified, oldest first.
    pub signoffs: Vec<super::Signoff>,
}

/// A stored report's row.
struct Stored {
    seq: i64,
    format: String,
    bytes: Vec<u8>,
}

fn read_stored(conn: &Connection, sha256: &str) -> Result<Option<Stored>, LedgerError> {
    Ok(conn
        .query_row(
            "SELECT seq, format, bytes FROM frozen_reports WHERE sha256 = ?1",
            params![sha256],
            |r| {
                Ok(Stored {
                    seq: r.get(0)?,
                    format: r.get(1)?,
                    bytes: r.get(2)?,
                })
            },
        )
        .optional()?)
}

fn short(h: &str) -> String {
    h.chars().filter(|c| !c.is_control()).take(16).collect()
}

fn damaged(seq: i64, why: String) -> LedgerError {
    LedgerError::Damaged {
        seq: Some(seq),
        why,
    }
}

/// The value of a `frozen_report` entry (`None` when unreadable).
pub(super) fn frozen_value(e: &Entry) -> Option<FrozenValue> {
    serde_json::from_str(e.value.as_deref()?).ok()
}

/// Verifies one frozen report: its stored bytes are there, belong to its
/// entry and hash to the entry's hash, and its claim re-derives.
fn verify_one(conn: &Connection, e: &Entry) -> Result<(FrozenValue, Vec<u8>), LedgerError> {
    let v = frozen_value(e)
        .ok_or_else(|| damaged(e.seq, "a frozen report whose record is unreadable".into()))?;
    let name = short(&v.report_sha256);
    let stored = read_stored(conn, &v.report_sha256)?.ok_or_else(|| {
        damaged(
            e.seq,
            format!("the bytes of frozen report {name}… are missing from the ledger"),
        )
    })?;
    if stored.seq != e.seq || stored.format != v.format {
        return Err(damaged(
            e.seq,
            format!(
                "the stored report {name}… does not belong to this entry (its row was replaced)"
            ),
        ));
    }
    if dpplan_plan::sha256_hex(&stored.bytes) != v.report_sha256 {
        return Err(damaged(
            e.seq,
            format!("the stored bytes of frozen report {name}… do not hash to the hash its entry records (they were modified)"),
        ));
    }
    v.inputs.check().map_err(|why| {
        damaged(
            e.seq,
            format!("frozen report {name}…'s claim does not re-derive from its accountant inputs: {why}"),
        )
    })?;
    Ok((v, stored.bytes))
}

/// Every frozen report of the history verified, and no stored report
/// without its entry (part of [`Ledger::integrity`]).
pub(super) fn verify_all(conn: &Connection, entries: &[Entry]) -> Result<(), LedgerError> {
    let frozen: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::FrozenReport)
        .collect();
    if format_version(conn)? < 2 {
        return match frozen.first() {
            Some(e) => Err(damaged(
                e.seq,
                "a frozen report in a ledger of format 1 (which has none)".into(),
            )),
            None => Ok(()),
        };
    }
    for e in &frozen {
        verify_one(conn, e)?;
    }
    let mut stmt = conn.prepare("SELECT sha256, seq FROM frozen_reports ORDER BY seq")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    for (sha, seq) in rows {
        let owned = frozen
            .iter()
            .any(|e| e.seq == seq && frozen_value(e).is_some_and(|v| v.report_sha256 == sha));
        if !owned {
            return Err(LedgerError::Damaged {
                seq: None,
                why: format!(
                    "the ledger stores a report {}… that no frozen-report entry records (it was inserted behind dpplan's back)",
                    short(&sha)
                ),
            });
        }
    }
    Ok(())
}

impl Ledger {
    /// Appends a frozen report: its entry (hash, accountant inputs, plan
    /// hash, version, source revision) and its bytes, in one transaction.
    /// The claim must re-derive from the inputs, and the same bytes are
    /// frozen once. Migrates a ledger of format 1 first.
    pub fn freeze(&mut self, report: FrozenReport) -> Result<Frozen, LedgerError> {
        report.inputs.check().map_err(|why| {
            LedgerError::FrozenClaim(format!("the report's claim is not frozen: {why}"))
        })?;
        let sha256 = dpplan_plan::sha256_hex(&report.bytes);
        let value = FrozenValue {
            report_sha256: sha256.clone(),
            format: report.format.clone(),
            size: report.bytes.len() as u64,
            plan_name: report.plan_name,
            plan_source_sha256: report.plan_source_sha256,
            plan_sha256: report.plan_sha256,
            dpplan_version: dpplan_plan::COMPILER.into(),
            source_revision: SOURCE_REVISION.into(),
            inputs: report.inputs,
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        migrate(&tx)?;
        if let Some(s) = read_stored(&tx, &sha256)? {
            return Err(LedgerError::AlreadyFrozen { sha256, seq: s.seq });
        }
        let plan_hash = current_plan(&tx)?;
        let entry = append(
            &tx,
            NewEntry {
                // Invariant: plain data with string keys; cannot fail.
                value: Some(serde_json::to_string(&value).expect("serialises")),
                ..NewEntry::new(EntryKind::FrozenReport, &plan_hash)
            },
        )?;
        tx.execute(
            "INSERT INTO frozen_reports (sha256, seq, format, bytes) VALUES (?1, ?2, ?3, ?4)",
            params![sha256, entry.seq, report.format, report.bytes],
        )?;
        tx.commit()?;
        self.anchor()?;
        Ok(Frozen {
            bytes: report.bytes,
            entry,
            value,
            addenda: Vec::new(),
            signoffs: Vec::new(),
        })
    }

    /// The frozen report whose hash is `sha256` (or starts with it: at
    /// least 8 hex digits, naming one report), verified: its bytes hash to
    /// its entry's hash and its claim re-derives; with its addenda, oldest
    /// first. Verify the whole ledger ([`Ledger::integrity`]) before
    /// trusting its entries.
    pub fn frozen(&self, sha256: &str) -> Result<Frozen, LedgerError> {
        let want = sha256.trim().to_ascii_lowercase();
        let shown = short(&want);
        if want.len() < 8 || !want.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(LedgerError::NoSuchReport(format!(
                "`{shown}` is not a report hash (64 hex digits, or a prefix of at least 8)"
            )));
        }
        let entries = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE kind = 'frozen_report' ORDER BY seq",
            [],
        )?;
        let matching: Vec<&Entry> = entries
            .iter()
            .filter(|e| frozen_value(e).is_some_and(|v| v.report_sha256.starts_with(&want)))
            .collect();
        let e = match matching.as_slice() {
            [e] => *e,
            [] => {
                return Err(LedgerError::NoSuchReport(format!(
                    "the ledger has no frozen report {shown}…"
                )))
            }
            _ => {
                return Err(LedgerError::NoSuchReport(format!(
                    "{} frozen reports start with {shown}: give more of the hash",
                    matching.len()
                )))
            }
        };
        let (value, bytes) = verify_one(&self.conn, e)?;
        let addenda = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE kind = 'correction' AND refers_to = ?1 ORDER BY seq",
            params![e.seq],
        )?
        .into_iter()
        .map(|c| Addendum {
            seq: c.seq,
            text: c.correction_reason().unwrap_or_default(),
            time: c.time,
        })
        .collect();
        let signoffs = self.signoffs_of(e.seq)?;
        Ok(Frozen {
            bytes,
            entry: e.clone(),
            value,
            addenda,
            signoffs,
        })
    }

    /// Every frozen report's entry, in order.
    pub fn frozen_entries(&self) -> Result<Vec<(Entry, FrozenValue)>, LedgerError> {
        let entries = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE kind = 'frozen_report' ORDER BY seq",
            [],
        )?;
        Ok(entries
            .into_iter()
            .filter_map(|e| frozen_value(&e).map(|v| (e, v)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Laplace with scale b and ℓ1 sensitivity Δ, released n times, under
    /// basic composition: ε = n·Δ/b (Dwork–Roth, Thm 3.6 and 3.16).
    fn laplace(n: u64, l1: f64, b: f64, claim: f64) -> AccountantInputs {
        AccountantInputs {
            mechanisms: vec![AccountedRelease {
                sample: None,
                query: "q".into(),
                kind: NoiseKind::Laplace,
                scale: b,
                l1,
                l2: l1,
                coords: 1,
                linf: 0.0,
                releases: n,
            }],
            delta: 0.0,
            accountant: AccountantChoice::Basic,
            claim: Claim {
                epsilon: claim,
                delta: 0.0,
                accountant: Accountant::Basic,
            },
        }
    }

    #[test]
    fn a_claim_re_derives_and_its_negative_controls_do_not() {
        let c = laplace(10, 2.0, 40.0, 10.0 * 2.0 / 40.0).check().unwrap();
        assert_eq!(c.epsilon, 0.5);
        // one release less, a sensitivity doubled, another accountant named
        assert!(laplace(9, 2.0, 40.0, 0.5).check().is_err());
        assert!(laplace(10, 4.0, 40.0, 0.5).check().is_err());
        let mut other = laplace(10, 2.0, 40.0, 0.5);
        other.claim.accountant = Accountant::Rdp;
        assert!(other.check().is_err());
        // within the tolerance, not beyond it
        assert!(laplace(10, 2.0, 40.0, 0.5 * (1.0 + 1e-12)).check().is_ok());
        assert!(laplace(10, 2.0, 40.0, 0.5 * (1.0 + 1e-6)).check().is_err());
    }

    #[test]
    fn the_source_revision_is_a_commit_or_unknown() {
        let r = SOURCE_REVISION;
        assert!(
            r == "unknown"
                || std::env::var("DPPLAN_SOURCE_REVISION").is_ok()
                || (r.len() == 40 && r.chars().all(|c| c.is_ascii_hexdigit())),
            "{r}"
        );
    }
}
