//! The privacy ledger: an append-only, hash-chained SQLite table.
//!
//! * Created once, atomically (built under a temporary name with WAL mode
//!   and the schema, then hard-linked into place), so concurrent first runs
//!   never race on `PRAGMA journal_mode`.
//! * Every connection uses `synchronous=FULL` and a busy timeout; every
//!   write is a `BEGIN IMMEDIATE` transaction, so two runtimes serialise and
//!   re-read the tail before appending.
//! * Triggers refuse UPDATE and DELETE; each entry's hash is SHA-256 over its
//!   sequence number, the cumulative spend, its content and the previous
//!   hash, so an edit made behind SQLite's back is found by [`Ledger::verify`].
//! * A release is two entries: the `intent` (with its charge) is durable
//!   before noise is drawn, the `value` after. An intent without a value is
//!   a crashed release: charged, unpublished, and never drawn again.
//! * Frozen reports ([`frozen`]): a reviewer's signed-off report, its hash
//!   and the exact inputs of its claim in a `frozen_report` entry, its bytes
//!   in the append-only `frozen_reports` table.
//!
//! * Each intent stores the history composed so far (format 6,
//!   [`IntentValue::composed`]); the next adds its release to it. A run
//!   verifies from the anchor's checkpoint ([`Ledger::integrity_for_run`]),
//!   `dpplan ledger verify` the whole ledger ([`Ledger::integrity`]).
//!
//! Formats: `dpplan-ledger-6` adds the composed history to intents, the
//! `entries_append_only` trigger and the `window_units_seq` index to
//! `dpplan-ledger-5`; a ledger of an earlier format is migrated on its first
//! write (a `migrated_to_6` row in `meta`). `dpplan-ledger-3` adds the `window_units` table (and its
//! triggers) to `dpplan-ledger-2`: which windows of a windowed query each
//! unit was kept in, by the keyed hash of its id ([`crate::window`]).
//! `dpplan-ledger-2` adds the `frozen_reports` table (and its
//! triggers) to `dpplan-ledger-1`. A ledger of format 2 is read and run as
//! it is and migrated to format 3 on its first write (the table and its
//! triggers created and a `migrated_to_3` row added to `meta`, in the
//! writing transaction), as format 1 is to 2 and then 3. A ledger of format 1 is read, verified
//! and run as it is, and migrated on its first write (the table and its
//! triggers created and a `migrated_to` row added to `meta`, in one
//! transaction; `meta` stays append-only, so its `format` row keeps the
//! format the ledger was created with).

mod anchor;
pub mod budget;
mod cache;
mod entry;
pub mod frozen;
mod remaining;
mod schema;
mod signoff;
mod state;
mod store;
mod totals;
mod upgrade;
mod verify;
mod window_state;

use std::path::{Path, PathBuf};
use std::time::Duration;

use dpplan_engine::IoError;
use dpplan_plan::{ExecutablePlan, Release};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

pub use anchor::{head_path, remove_temp_siblings, replace_file, Checkpoint};
pub use entry::{
    CorrectionValue, Entry, EntryKind, IntentValue, SkipValue, StateValue, TreeNode, UpgradeValue,
};
pub use frozen::{
    AccountantInputs, AccountedRelease, Addendum, Claim, Frozen, FrozenReport, FrozenValue,
    SOURCE_REVISION,
};
pub use remaining::{remaining_budget, Remaining};
use schema::{
    format_version, intents_of, migrate, triggers_of, FROZEN_TABLE, INDEXES, TABLES, WINDOW_INDEX,
    WINDOW_TABLE,
};
pub use schema::{
    LEDGER_FORMAT, LEDGER_FORMAT_1, LEDGER_FORMAT_2, LEDGER_FORMAT_3, LEDGER_FORMAT_4,
    LEDGER_FORMAT_5,
};
pub use signoff::{
    public_key, ReviewerKey, Signoff, SignoffRule, SignoffValue, SIGNOFF_MESSAGE, SIGNOFF_SCHEME,
};
pub use state::{key_fingerprint, units_digest, units_key_path};
pub use store::SlotState;
use store::{append, current_plan, read_entries, slot_state, tail, NewEntry};
pub use totals::{MechanismRecord, PartRecord, RunningTotals, TotalOf};
pub use verify::{Anchored, Integrity, Verification};

pub const GENESIS_PREV: &str = "0000000000000000000000000000000000000000000000000000000000000000";
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("ledger database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot enable WAL mode (got {0}); keep the ledger on a local disk")]
    NoWal(String),
    #[error("cannot create `{}`: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The ledger belongs to another plan.
    #[error("the ledger belongs to plan {ledger}, not to this plan {plan}; pass --upgrade to account the ledger's history together with the new plan")]
    PlanMismatch { ledger: String, plan: String },
    #[error("`{0}` is not a release of the compiled plan")]
    NotInPlan(String),
    #[error("`{query}` slot {slot} was already released; its value is served from the ledger")]
    AlreadyReleased { query: String, slot: u64 },
    /// An intent without a value: charged, never re-drawn.
    #[error("`{query}` slot {slot} was charged (ledger entry {seq}) but never published (the run was interrupted); it is not drawn again")]
    Unpublished { query: String, slot: u64, seq: i64 },
    #[error("`{query}` has {slots} slot(s) (0..{}); slot {slot} is not in its schedule", slots.saturating_sub(1))]
    SlotOutOfRange {
        query: String,
        slot: u64,
        slots: u64,
    },
    /// A period recorded as skipped (it passed without a run) is never
    /// released afterwards.
    #[error("`{query}` slot {slot} was recorded as skipped (its period passed without a run); a fresh release cannot be made for a past period")]
    Skipped { query: String, slot: u64 },
    #[error("`{query}` was already released the {slots} time(s) its schedule declares")]
    ScheduleExhausted { query: String, slots: u64 },
    #[error("{0}")]
    OverBudget(String),
    /// A unit selected for a window reached its horizon bound in another
    /// run meanwhile: the window is not charged; run it again.
    #[error("`{query}` slot {slot}: a unit of this window reached its windows_per_unit bound in another run since its rows were selected; nothing was charged, run again")]
    WindowBound { query: String, slot: u64 },
    /// The noise of a cumulative count's nodes could not be drawn: nothing
    /// was charged.
    #[error("`{query}` slot {slot}: {why}; nothing was charged")]
    TreeDraw {
        query: String,
        slot: u64,
        why: String,
    },
    /// An upgrade that changes the guarantee (unit, its id column,
    /// adjacency): the history's ε and the new plan's bound different
    /// things, so they are not composed.
    #[error("the new plan changes the guarantee the ledger's history was charged under ({}): its ε and the history's bound different things, so they cannot be composed in one ledger; the upgrade is refused (start a new ledger for the new plan, with its own claim, and keep this one as the record of the old)", changes.iter().map(|c| format!("{} {} → {}", c.field, c.old.as_deref().unwrap_or("none"), c.new.as_deref().unwrap_or("none"))).collect::<Vec<_>>().join("; "))]
    GuaranteeChanged {
        changes: Vec<dpplan_vocab::contract::ContractChange>,
    },
    /// An upgrade of a ledger that records no contract (written by an
    /// earlier dpplan, never run since).
    #[error("the ledger records no contract (it was written by an earlier dpplan): the unit and adjacency its history was charged under are not known, so an upgrade cannot be checked; run the plan in force once with this dpplan (it records its contract), then upgrade")]
    NoContract,
    /// An upgrade that changes a cumulative count whose tree has begun.
    #[error("`{0}` is a cumulative count whose tree has begun in this ledger, and the new plan changes it (its schedule, noise or bounds): the nodes released and the exact sums kept are of the old tree, so the upgrade is refused; keep the query unchanged, or give the new tree another name")]
    TreeChanged(String),
    #[error("not a dpplan ledger: {0}")]
    NotALedger(String),
    #[error("the ledger is corrupt: {0}")]
    Corrupt(String),
    #[error("the ledger has no entry {0}")]
    NoSuchEntry(i64),
    /// The ledger failed verification (chain, triggers, anchor, expected
    /// hash): nothing may be charged or served from it.
    #[error("the ledger failed verification{}: {why}; nothing was charged or served (restore the ledger from a backup, or investigate with `dpplan ledger verify`)", seq.map(|s| format!(" at entry {s}")).unwrap_or_default())]
    Damaged {
        /// The first bad entry, where there is one.
        seq: Option<i64>,
        why: String,
    },
    /// Reading or writing a file next to the ledger failed.
    #[error(transparent)]
    Io(IoError),
    /// An upgrade whose plan has a larger budget than the one in force,
    /// without `--raise-budget`.
    #[error("the new plan's budget (ε = {}, δ = {}) is larger than the one in force ({}); an upgrade that raises the budget needs --raise-budget, and records both", new.0, new.1, old_budget(*old))]
    BudgetRaise {
        old: Option<(f64, f64)>,
        new: (f64, f64),
    },
    /// A time outside what a schedule can express.
    #[error("{0}")]
    Time(String),
    /// A report whose claim does not re-derive from its accountant inputs
    /// is not frozen.
    #[error("{0}")]
    FrozenClaim(String),
    #[error("this report (sha256 {sha256}) is already frozen in ledger entry {seq}")]
    AlreadyFrozen { sha256: String, seq: i64 },
    #[error("{0}")]
    NoSuchReport(String),
    /// A sign-off that cannot be made, or one a policy requires and the
    /// ledger does not hold.
    #[error("{0}")]
    Signoff(String),
}

fn old_budget(old: Option<(f64, f64)>) -> String {
    match old {
        Some((e, d)) => format!("ε = {e}, δ = {d}"),
        None => "not recorded (a ledger opened by an earlier dpplan)".into(),
    }
}

pub struct Ledger {
    conn: Connection,
    path: PathBuf,
    /// The history as of the tail this process last wrote
    /// ([`cache::History`]; checked against the tail in each intent's
    /// transaction).
    cache: Option<cache::History>,
    /// What this process's last successful verification vouched for,
    /// written into the anchor by the next anchor write
    /// ([`anchor::Checkpoint`]).
    checkpoint: std::cell::RefCell<Option<anchor::Checkpoint>>,
}

/// The `meta` key whose presence means the ledger keeps an anchor file
/// (every ledger created or first written by this version).
const ANCHOR_KEY: &str = "anchor";
const ANCHOR_FORMAT: &str = "dpplan-ledger-head-1";

/// The current time as `YYYY-MM-DDTHH:MM:SSZ` (a clock before 1970 reads
/// as 1970-01-01T00:00:00Z).
pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::try_from(std::time::SystemTime::now())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    rfc3339(now.max(jiff::Timestamp::UNIX_EPOCH))
}

pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (outside jiff's range: clamped).
pub fn unix_rfc3339(secs: i64) -> String {
    let t = jiff::Timestamp::from_second(secs).unwrap_or(if secs < 0 {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    });
    rfc3339(t)
}

/// `t` as `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC): the fraction of a second
/// is dropped, not rounded.
fn rfc3339(t: jiff::Timestamp) -> String {
    format!("{t:.0}")
}

fn configure(conn: &Connection) -> Result<(), LedgerError> {
    conn.busy_timeout(Duration::from_secs(60))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(())
}

/// Refuses to start a new history where a ledger's anchor stays without its
/// ledger (deleted or moved): see [`Ledger::open`].
pub fn refuse_orphan_anchor(path: &Path) -> Result<(), LedgerError> {
    match anchor::read_head(path)? {
        Some(head) if !path.exists() => Err(LedgerError::Damaged {
            seq: None,
            why: format!(
                "`{}` is missing, but its anchor `{}` records {} entries: the ledger was deleted or moved, and a new one would forget what was spent; restore it (or remove the anchor deliberately to start a new history)",
                path.display(),
                head_path(path).display(),
                head.entries
            ),
        }),
        _ => Ok(()),
    }
}

/// What a new ledger is opened for.
pub struct Genesis<'a> {
    pub plan_hash: &'a str,
    /// The plan's budget, recorded so that an upgrade can show it.
    pub budget: Budget,
    /// Start (Unix seconds) of `every … for …` schedules.
    pub schedule_start: i64,
    /// The plan's contract ([`dpplan_plan::PlanBody::contract`]).
    pub contract: dpplan_vocab::contract::Contract,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenInfo {
    pub schedule_start: i64,
    pub ledger_format: String,
    /// The budget of the plan the ledger was opened for (absent in ledgers
    /// opened by an earlier dpplan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    /// The contract of the plan the ledger was opened for (absent in
    /// ledgers opened by an earlier dpplan: a state entry records it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<dpplan_vocab::contract::Contract>,
    /// 128 random bits (hex) that make this ledger's opening entry, and so
    /// its hash, its own: state bound to it (a tree's exact state) is
    /// never taken for another ledger's of the same plan, opened in the
    /// same second (absent in ledgers opened by an earlier dpplan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_id: Option<String>,
}

/// 128 random bits from the operating system, in hex.
fn ledger_id() -> Result<String, LedgerError> {
    let mut id = [0u8; 16];
    getrandom::fill(&mut id).map_err(|e| {
        LedgerError::Io(IoError::new(format!(
            "cannot draw the ledger's id from the operating system: {e}"
        )))
    })?;
    Ok(id.iter().map(|b| format!("{b:02x}")).collect())
}

/// Fresh slots of a period schedule that passed without a run: recorded
/// in the ledger as skipped, never released.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub query: String,
    /// The first and the last slot skipped.
    pub from: u64,
    pub through: u64,
    pub reason: String,
}

/// A plan's budget, as the ledger records it at open and at each upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    pub epsilon: f64,
    pub delta: f64,
}

impl Ledger {
    /// Opens a ledger, creating it (for `genesis`) when the file does not
    /// exist.
    pub fn open(path: &Path, genesis: Option<Genesis>) -> Result<Ledger, LedgerError> {
        if !path.exists() {
            let Some(g) = genesis else {
                return Err(LedgerError::NotALedger(format!(
                    "`{}` does not exist",
                    path.display()
                )));
            };
            // A ledger deleted (or moved) while its anchor stayed is a lost
            // history: starting a new one would reset the spent budget.
            refuse_orphan_anchor(path)?;
            if Self::create(path, &g)? {
                let l = Self::open(path, None)?;
                l.anchor()?;
                return Ok(l);
            }
        }
        if !path.is_file() {
            return Err(LedgerError::NotALedger(format!(
                "`{}` is not a file",
                path.display()
            )));
        }
        let conn = Connection::open(path)?;
        configure(&conn)?;
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        let format: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|_| {
                LedgerError::NotALedger(format!("`{}` has no ledger tables", path.display()))
            })?;
        if !matches!(
            format.as_deref(),
            Some(
                LEDGER_FORMAT
                    | LEDGER_FORMAT_5
                    | LEDGER_FORMAT_4
                    | LEDGER_FORMAT_3
                    | LEDGER_FORMAT_2
                    | LEDGER_FORMAT_1
            )
        ) {
            return Err(LedgerError::NotALedger(format!(
                "`{}` is not a {LEDGER_FORMAT} (or {LEDGER_FORMAT_5}, {LEDGER_FORMAT_4}, {LEDGER_FORMAT_3}, {LEDGER_FORMAT_2}, {LEDGER_FORMAT_1}) ledger",
                path.display()
            )));
        }
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(LedgerError::Corrupt(format!(
                "journal mode is {mode}, expected wal"
            )));
        }
        Ok(Ledger {
            conn,
            path: path.to_path_buf(),
            cache: None,
            checkpoint: Default::default(),
        })
    }

    /// Creates the ledger; false when another process created it first.
    fn create(path: &Path, g: &Genesis) -> Result<bool, LedgerError> {
        // Leftovers of creations killed half-way (older than any creation
        // still under way).
        anchor::remove_leftovers(path, Duration::from_secs(60));
        let tmp = anchor::temp_sibling(path, "creating")?;
        {
            let conn = Connection::open(&tmp)?;
            // WAL is set exactly once, here, on a file no one else sees.
            let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                let _ = std::fs::remove_file(&tmp);
                return Err(LedgerError::NoWal(mode));
            }
            configure(&conn)?;
            conn.execute_batch(TABLES)?;
            conn.execute_batch(FROZEN_TABLE)?;
            conn.execute_batch(WINDOW_TABLE)?;
            conn.execute_batch(INDEXES)?;
            conn.execute_batch(WINDOW_INDEX)?;
            for (_, sql) in triggers_of(6) {
                conn.execute_batch(&format!("{sql};"))?;
            }
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('format', ?1), (?2, ?3)",
                params![LEDGER_FORMAT, ANCHOR_KEY, ANCHOR_FORMAT],
            )?;
            let info = OpenInfo {
                schedule_start: g.schedule_start,
                ledger_format: LEDGER_FORMAT.into(),
                budget: Some(g.budget),
                contract: Some(g.contract.clone()),
                ledger_id: Some(ledger_id()?),
            };
            append(
                &conn,
                NewEntry {
                    // Invariant: plain data with string keys; cannot fail.
                    value: Some(serde_json::to_string(&info).expect("serialises")),
                    ..NewEntry::new(EntryKind::Open, g.plan_hash)
                },
            )?;
            conn.close().map_err(|(_, e)| LedgerError::from(e))?;
        }
        // Publish atomically; if another process won the race, use theirs.
        anchor::publish_created(&tmp, path)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The units (keyed hashes) of windowed query `query` already kept in
    /// `bound` windows: left out of its later windows.
    pub fn units_at_bound(
        &self,
        query: &str,
        bound: u64,
    ) -> Result<std::collections::BTreeSet<String>, LedgerError> {
        window_state::at_bound(&self.conn, query, bound)
    }

    /// How many windows (a tree's slots) each unit of `query` was kept in.
    pub fn windows_of_units(
        &self,
        query: &str,
    ) -> Result<std::collections::HashMap<String, u64>, LedgerError> {
        window_state::windows_of_units(&self.conn, query)
    }

    /// How many (unit, window) pairs the windowed queries recorded.
    pub fn window_units_recorded(&self) -> Result<u64, LedgerError> {
        window_state::units_recorded(&self.conn)
    }

    /// The ledger's format, 1 to 6 (schema.rs); an older one is migrated on
    /// its next write.
    pub fn format_version(&self) -> Result<u32, LedgerError> {
        format_version(&self.conn)
    }

    pub fn entries(&self) -> Result<Vec<Entry>, LedgerError> {
        read_entries(&self.conn, "SELECT * FROM entries ORDER BY seq", [])
    }

    /// The entry with sequence number `seq`.
    pub fn entry(&self, seq: i64) -> Result<Option<Entry>, LedgerError> {
        let e = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE seq = ?1",
            params![seq],
        )?;
        Ok(e.into_iter().next())
    }

    pub fn tail(&self) -> Result<Entry, LedgerError> {
        tail(&self.conn)
    }

    /// The plan hash currently in force (the last `open` or `upgrade`).
    pub fn plan_hash(&self) -> Result<String, LedgerError> {
        current_plan(&self.conn)
    }

    pub fn open_info(&self) -> Result<OpenInfo, LedgerError> {
        let v: Option<String> =
            self.conn
                .query_row("SELECT value FROM entries WHERE seq = 1", [], |r| r.get(0))?;
        serde_json::from_str(v.as_deref().unwrap_or(""))
            .map_err(|_| LedgerError::Corrupt("the opening entry is unreadable".into()))
    }

    /// The committed value of a release, if any.
    pub fn value_of(&self, query: &str, slot: u64) -> Result<Option<Entry>, LedgerError> {
        let v = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE kind = 'value' AND query = ?1 AND slot = ?2 ORDER BY seq LIMIT 1",
            params![query, slot as i64],
        )?;
        Ok(v.into_iter().next())
    }

    /// The latest committed value of a query.
    pub fn latest_value(&self, query: &str) -> Result<Option<Entry>, LedgerError> {
        let v = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE kind = 'value' AND query = ?1 ORDER BY seq DESC LIMIT 1",
            params![query],
        )?;
        Ok(v.into_iter().next())
    }

    /// The time (Unix seconds) of a query's latest intent, if any.
    pub fn last_intent_time(&self, query: &str) -> Result<Option<i64>, LedgerError> {
        let v = read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE kind = 'intent' AND query = ?1 ORDER BY seq DESC LIMIT 1",
            params![query],
        )?;
        let Some(e) = v.into_iter().next() else {
            return Ok(None);
        };
        e.time
            .parse::<jiff::Timestamp>()
            .map(|t| Some(t.as_second()))
            .map_err(|_| LedgerError::Corrupt(format!("entry {} has an unreadable time", e.seq)))
    }

    /// Every slot of `query` charged so far: its intent's sequence number,
    /// and its value's once committed (two indexed reads, whatever the
    /// number of slots).
    pub fn charged_slots(
        &self,
        query: &str,
    ) -> Result<std::collections::BTreeMap<u64, (i64, Option<i64>)>, LedgerError> {
        store::charged_slots(&self.conn, query)
    }

    /// The ranges of slots of `query` recorded as skipped, first and last.
    pub fn skipped_ranges(&self, query: &str) -> Result<Vec<(u64, u64)>, LedgerError> {
        store::skipped_ranges(&self.conn, query)
    }

    /// Whether slot `slot` of `query` was recorded as skipped.
    pub fn skipped_slot(&self, query: &str, slot: u64) -> Result<bool, LedgerError> {
        store::skipped_slot(&self.conn, query, slot)
    }

    /// Records periods that passed without a run as skipped, one entry
    /// per range, in one transaction; a range that overlaps a slot charged
    /// or skipped meanwhile (another run) is left out.
    pub fn record_skips(
        &mut self,
        plan: &ExecutablePlan,
        skips: &[Skipped],
    ) -> Result<Vec<Entry>, LedgerError> {
        if skips.is_empty() {
            return Ok(Vec::new());
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        store::plan_in_force(&tx, plan)?;
        migrate(&tx)?;
        let mut out = Vec::new();
        for s in skips {
            let charged = store::charged_slots(&tx, &s.query)?;
            let overlaps = charged.range(s.from..=s.through).next().is_some()
                || store::skipped_ranges(&tx, &s.query)?
                    .iter()
                    .any(|&(a, b)| a <= s.through && s.from <= b);
            if overlaps {
                continue;
            }
            out.push(append(
                &tx,
                NewEntry {
                    query: Some(s.query.clone()),
                    slot: Some(s.from as i64),
                    // Invariant: plain data with string keys; cannot fail.
                    value: Some(
                        serde_json::to_string(&SkipValue {
                            through: s.through,
                            reason: s.reason.clone(),
                        })
                        .expect("serialises"),
                    ),
                    ..NewEntry::new(EntryKind::Skip, &plan.body_sha256)
                },
            )?);
        }
        tx.commit()?;
        self.anchor()?;
        Ok(out)
    }

    /// Whether a slot has an intent (charged), and its value if committed.
    pub fn slot_state(&self, query: &str, slot: u64) -> Result<SlotState, LedgerError> {
        slot_state(&self.conn, query, slot)
    }

    /// Step 1 of a release: under an exclusive transaction, re-read the tail
    /// and the plan, refuse anything outside the plan's schedule, and append
    /// the intent with its charge. Durable (synchronous=FULL) on return.
    pub fn begin_release(
        &mut self,
        plan: &ExecutablePlan,
        release: &Release,
        slot: u64,
    ) -> Result<Entry, LedgerError> {
        self.begin(plan, release, slot, None, None)
    }

    /// Step 1 of a windowed release: as [`Ledger::begin_release`], and in
    /// the same transaction the units kept in this window (keyed hashes)
    /// are recorded against the query's horizon bound. Refused when one
    /// of them is already at its bound (another run recorded it since the
    /// window's rows were selected). The whole schedule is one release:
    /// only the first intent of its mechanism charges it.
    pub fn begin_release_windowed(
        &mut self,
        plan: &ExecutablePlan,
        release: &Release,
        slot: u64,
        units: &std::collections::BTreeSet<String>,
    ) -> Result<Entry, LedgerError> {
        self.begin(plan, release, slot, Some(units), None)
    }

    /// Step 1 of a cumulative count's slot: as
    /// [`Ledger::begin_release_windowed`] (the units kept in the slot,
    /// against the tree's W′ slots per unit; the whole tree charged by its
    /// first intent only), and in the same transaction `draw` draws the
    /// nodes that close at this slot, stored in the intent
    /// ([`IntentValue::tree_nodes`]). The draw happens only once the slot
    /// is accepted, and its nodes are durable together with the charge or
    /// not at all: a crash before the commit leaves neither (the draw was
    /// never output), a crash after it leaves nodes that are read, never
    /// drawn again.
    pub fn begin_release_cumulative(
        &mut self,
        plan: &ExecutablePlan,
        release: &Release,
        slot: u64,
        units: &std::collections::BTreeSet<String>,
        draw: &mut dyn FnMut() -> Result<Vec<TreeNode>, String>,
    ) -> Result<Entry, LedgerError> {
        if release.cumulative.is_none() {
            return Err(LedgerError::NotInPlan(format!(
                "{} (not a cumulative count)",
                release.name
            )));
        }
        self.begin(plan, release, slot, Some(units), Some(draw))
    }

    /// The noisy nodes every intent of `query` stored, by (level, index).
    pub fn tree_nodes(
        &self,
        query: &str,
    ) -> Result<std::collections::BTreeMap<(u32, u64), f64>, LedgerError> {
        let mut stmt = self.conn.prepare(
            "SELECT value FROM entries WHERE kind = 'intent' AND query = ?1 ORDER BY seq",
        )?;
        let rows = stmt
            .query_map(params![query], |r| r.get::<_, Option<String>>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = std::collections::BTreeMap::new();
        for v in rows.into_iter().flatten() {
            let v: IntentValue = serde_json::from_str(&v)
                .map_err(|e| LedgerError::Corrupt(format!("an intent of `{query}`: {e}")))?;
            for n in v.tree_nodes.unwrap_or_default() {
                out.insert((n.level, n.index), n.value);
            }
        }
        Ok(out)
    }

    /// How many intents `query` has (its slots charged so far).
    pub fn intents_of(&self, query: &str) -> Result<u64, LedgerError> {
        intents_of(&self.conn, query)
    }

    fn begin(
        &mut self,
        plan: &ExecutablePlan,
        release: &Release,
        slot: u64,
        units: Option<&std::collections::BTreeSet<String>>,
        draw: Option<&mut dyn FnMut() -> Result<Vec<TreeNode>, String>>,
    ) -> Result<Entry, LedgerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        store::plan_in_force(&tx, plan)?;
        // the intent carries its composed history (format 6)
        migrate(&tx)?;
        if plan.body.release(&release.name) != Some(release) {
            return Err(LedgerError::NotInPlan(release.name.clone()));
        }
        let slots = release.schedule.slots;
        if slot >= slots {
            return Err(LedgerError::SlotOutOfRange {
                query: release.name.clone(),
                slot,
                slots,
            });
        }
        match slot_state(&tx, &release.name, slot)? {
            SlotState::Free => {}
            SlotState::Released(_) => {
                return Err(LedgerError::AlreadyReleased {
                    query: release.name.clone(),
                    slot,
                })
            }
            SlotState::Charged(seq) => {
                return Err(LedgerError::Unpublished {
                    query: release.name.clone(),
                    slot,
                    seq,
                })
            }
        }
        let tail_now = tail(&tx)?;
        let mut hist = match self.cache.take() {
            Some(h) if h.is_at(&tail_now) => h,
            _ => cache::History::read(&tx, &tail_now)?,
        };
        if hist.skipped(&tx, &release.name, slot)? {
            return Err(LedgerError::Skipped {
                query: release.name.clone(),
                slot,
            });
        }
        if hist.intents_of(&tx, &release.name)? >= slots {
            return Err(LedgerError::ScheduleExhausted {
                query: release.name.clone(),
                slots,
            });
        }
        let record = MechanismRecord::of(release);
        // Invariant: plain data with string keys; cannot fail.
        let mechanism = serde_json::to_string(&record).expect("serialises");
        // a window of a vector release already charged charges nothing,
        // nor does a later slot of a cumulative count's tree
        let charged_before = (release.window.is_some() || release.cumulative.is_some())
            && hist.vector_charged(&tx, &release.name, &mechanism)?;
        let releases = if charged_before {
            hist.releases.clone()
        } else {
            cache::with_release(&hist.releases, &record)
        };
        let totals = hist.totals(&releases, hist.n + 1, &plan.body, &plan.body_sha256);
        // a cumulative slot's nodes: drawn now that the slot is accepted,
        // committed with its charge
        let tree_nodes = match draw {
            Some(draw) => Some(draw().map_err(|why| LedgerError::TreeDraw {
                query: release.name.clone(),
                slot,
                why,
            })?),
            None => None,
        };
        let vector = release.window.is_some() || release.cumulative.is_some();
        let (units_key_sha256, window_units_sha256) = match units {
            Some(u) if vector => (
                key_fingerprint(&self.path)?,
                Some(units_digest(u.iter().map(String::as_str))),
            ),
            _ => (None, None),
        };
        // Invariant: plain data with string keys; cannot fail.
        let totals = serde_json::to_string(&IntentValue {
            running_totals: totals,
            tree_nodes,
            units_key_sha256,
            window_units_sha256,
            composed: Some(releases.clone()),
        })
        .expect("serialises");
        let e = append(
            &tx,
            NewEntry {
                query: Some(release.name.clone()),
                slot: Some(slot as i64),
                mechanism: Some(mechanism),
                epsilon: if charged_before {
                    0.0
                } else {
                    release.cost_per_release.epsilon
                },
                delta: if charged_before {
                    0.0
                } else {
                    release.cost_per_release.delta
                },
                value: Some(totals),
                ..NewEntry::new(EntryKind::Intent, &plan.body_sha256)
            },
        )?;
        let window = release
            .window
            .clone()
            .or_else(|| release.cumulative.as_ref().map(|c| c.slot_window()));
        if let (Some(w), Some(units)) = (window, units) {
            migrate(&tx)?;
            window_state::record(&tx, &release.name, slot, e.seq, w.windows_per_unit, units)?;
        }
        tx.commit()?;
        hist.intent_appended(&e, releases, &record);
        self.cache = Some(hist);
        // anchored before returning: nothing after it (a noise draw)
        // happens on an entry the anchor does not vouch for
        self.anchor()?;
        Ok(e)
    }

    /// Step 2: append the drawn value for an intent. Durable on return.
    pub fn commit_value(
        &mut self,
        intent: &Entry,
        value_json: String,
    ) -> Result<Entry, LedgerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let e = append(
            &tx,
            NewEntry {
                query: intent.query.clone(),
                slot: intent.slot,
                value: Some(value_json),
                refers_to: Some(intent.seq),
                ..NewEntry::new(EntryKind::Value, &intent.plan_hash)
            },
        )?;
        tx.commit()?;
        if !self.cache.as_mut().is_some_and(|h| h.other_appended(&e)) {
            self.cache = None;
        }
        // anchored before returning: nothing after it (a noise draw)
        // happens on an entry the anchor does not vouch for
        self.anchor()?;
        Ok(e)
    }

    /// The corrections appended for a value entry or for the intent it
    /// completes, oldest first.
    pub fn corrections_of(&self, value: &Entry) -> Result<Vec<Entry>, LedgerError> {
        read_entries(
            &self.conn,
            "SELECT * FROM entries WHERE kind = 'correction' AND (refers_to = ?1 OR refers_to = ?2) ORDER BY seq",
            params![value.seq, value.refers_to.unwrap_or(-1)],
        )
    }

    /// Appends a correction of entry `seq` (it stays as it was).
    pub fn correct(&mut self, seq: i64, reason: &str) -> Result<Entry, LedgerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let target = read_entries(&tx, "SELECT * FROM entries WHERE seq = ?1", params![seq])?;
        let target = target
            .into_iter()
            .next()
            .ok_or(LedgerError::NoSuchEntry(seq))?;
        let plan_hash = current_plan(&tx)?;
        let e = append(
            &tx,
            NewEntry {
                query: target.query.clone(),
                slot: target.slot,
                // Invariant: one string field; cannot fail.
                value: Some(
                    serde_json::to_string(&CorrectionValue {
                        reason: reason.to_string(),
                    })
                    .expect("serialises"),
                ),
                refers_to: Some(seq),
                ..NewEntry::new(EntryKind::Correction, &plan_hash)
            },
        )?;
        tx.commit()?;
        // anchored before returning: nothing after it (a noise draw)
        // happens on an entry the anchor does not vouch for
        self.anchor()?;
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;
    use totals::MechanismRecord;

    /// The history a process keeps between its intents is the ledger's:
    /// an intent another process appended in between is composed, and the
    /// running totals equal those of a process that read the whole
    /// ledger afresh (negative control: the cache's own totals without
    /// the other process's intent are smaller).
    #[test]
    fn the_history_kept_between_intents_sees_another_process() {
        let plan = dpplan_compile::compile(
            r#"plan "c" {
  privacy { unit row adjacency add_remove budget epsilon 100 delta 1e-6 }
  dataset d { column v : float in [0, 1] }
  query q { count(d) noise laplace scale 2 schedule 5 times }
}"#,
        )
        .unwrap();
        let r = plan.body.release("q").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.sqlite");
        let genesis = Genesis {
            plan_hash: &plan.body_sha256,
            budget: Budget {
                epsilon: 100.0,
                delta: 1e-6,
            },
            schedule_start: 0,
            contract: plan.body.contract(),
        };
        let mut a = Ledger::open(&path, Some(genesis)).unwrap();
        let mut b = Ledger::open(&path, None).unwrap();
        let eps = |e: &Entry| e.running_totals().unwrap().plan.epsilon.unwrap();
        let first = a.begin_release(&plan, r, 0).unwrap();
        let alone = a.begin_release(&plan, r, 1).unwrap();
        b.begin_release(&plan, r, 2).unwrap();
        let after = a.begin_release(&plan, r, 3).unwrap();
        assert_eq!(after.running_totals().unwrap().releases, 4);
        let mut c = Ledger::open(&path, None).unwrap();
        let fresh = c.begin_release(&plan, r, 4).unwrap();
        assert_eq!(fresh.running_totals().unwrap().releases, 5);
        // 1, 2, 4 and 5 Laplace releases of ε = 0.5: basic composition
        // bounds each total (the plan's accountant is at most it)
        for (e, n) in [(&first, 1.0), (&alone, 2.0), (&after, 4.0), (&fresh, 5.0)] {
            assert!(eps(e) <= 0.5 * n * (1.0 + 1e-12), "{} {n}", eps(e));
        }
        assert!(eps(&alone) < eps(&after) && eps(&after) < eps(&fresh));
        // a's history was rebuilt when b's intent moved the tail
        assert_eq!(a.cache.as_ref().map(|h| h.n), Some(4));
        // the history read afresh is the one the last intent composed
        let d = Ledger::open(&path, None).unwrap();
        let h = cache::History::read(&d.conn, &d.tail().unwrap()).unwrap();
        assert_eq!(h.n, 5);
        assert_eq!(Some(&h.releases), c.cache.as_ref().map(|x| &x.releases));
    }

    const MIXED: &str = r#"plan "mixed" {
  privacy { unit user by uid adjacency add_remove budget epsilon 1000000 delta 1e-6 }
  dataset d {
    column uid : id
    column t : time
    column v : float in [0, 10]
    contribution { rows_per_unit 4 windows_per_unit 3 rows_per_window 2 }
  }
  query a { count(d) noise laplace scale 2 schedule 400 times }
  query b { sum(d.v) noise gaussian sigma 30 schedule 400 times }
  query c { mean(d.v) noise gaussian sigma 40 schedule 400 times }
  query w { count(d) noise laplace scale 3 schedule every 1 hour for 400 hours window 1 hour }
}"#;

    fn genesis(plan: &ExecutablePlan) -> Genesis<'_> {
        Genesis {
            plan_hash: &plan.body_sha256,
            budget: Budget {
                epsilon: plan.body.privacy.budget_epsilon,
                delta: plan.body.privacy.budget_delta,
            },
            schedule_start: 0,
            contract: plan.body.contract(),
        }
    }

    /// A deterministic pseudo-random sequence (xorshift64).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// `n` intents of `plan`'s queries in a random order, from two handles
    /// in turn at random (so each handle's kept history is read again from
    /// the ledger when the other appended), a value after some of them.
    fn random_history(plan: &ExecutablePlan, ledgers: &mut [Ledger], n: usize, seed: u64) {
        random_history_from(plan, ledgers, n, &mut Rng(seed), &mut Default::default());
    }

    fn random_history_from<'p>(
        plan: &'p ExecutablePlan,
        ledgers: &mut [Ledger],
        n: usize,
        rng: &mut Rng,
        next: &mut std::collections::HashMap<&'p str, u64>,
    ) {
        let names: Vec<&str> = plan.body.releases.iter().map(|r| r.name.as_str()).collect();
        for _ in 0..n {
            let name = names[(rng.next() % names.len() as u64) as usize];
            let l = &mut ledgers[(rng.next() % ledgers.len() as u64) as usize];
            let r = plan.body.release(name).unwrap();
            let slot = next.entry(name).or_default();
            let e = if r.window.is_some() {
                let units = std::collections::BTreeSet::from([format!("u{slot}")]);
                l.begin_release_windowed(plan, r, *slot, &units).unwrap()
            } else {
                l.begin_release(plan, r, *slot).unwrap()
            };
            *slot += 1;
            if !rng.next().is_multiple_of(3) {
                l.commit_value(&e, "{}".into()).unwrap();
            }
        }
    }

    /// Each intent adds its release to the history the intent before it
    /// stored: over a long random history (four queries, one of them a
    /// windowed vector release composed once, written by two processes in
    /// turn), every intent's composed history and running totals are
    /// exactly those composed afresh from every intent up to it (the same
    /// accountants, the same ε to the bit). Negative controls: the totals
    /// composed afresh one intent short, and a composed history with one
    /// count off by one, differ; and the full verification finds a stored
    /// history that is not the chain's.
    #[test]
    fn incremental_running_totals_are_the_totals_composed_afresh() {
        let plan = dpplan_compile::compile(MIXED).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.sqlite");
        let mut ledgers = vec![
            Ledger::open(&path, Some(genesis(&plan))).unwrap(),
            Ledger::open(&path, None).unwrap(),
        ];
        random_history(&plan, &mut ledgers, 160, 0x9e37_79b9_7f4a_7c15);
        let l = Ledger::open(&path, None).unwrap();
        let intents: Vec<Entry> = l
            .entries()
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EntryKind::Intent)
            .collect();
        assert_eq!(intents.len(), 160);
        let mut vectors = 0;
        for e in &intents {
            let v = e.intent_value().unwrap();
            let (releases, n) = totals::history_through(&l.conn, e.seq).unwrap();
            assert_eq!(v.composed.as_ref(), Some(&releases), "entry {}", e.seq);
            let afresh = totals::running_totals(&releases, n, &plan.body);
            assert_eq!(v.running_totals, afresh, "entry {}", e.seq);
            let bits = |t: &RunningTotals| {
                t.accountants
                    .iter()
                    .chain([&t.plan])
                    .map(|a| (a.accountant, a.epsilon.map(f64::to_bits)))
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&v.running_totals), bits(&afresh));
            if e.epsilon == 0.0 {
                vectors += 1;
            }
        }
        // the windows after the first charged nothing and composed nothing
        assert!(vectors > 10, "{vectors}");
        assert_eq!(l.verify().unwrap().first_bad, None);

        // negative controls
        let last = intents.last().unwrap();
        let stored = last.running_totals().unwrap();
        let (short, n) = totals::history_through(&l.conn, last.seq - 1).unwrap();
        let plain = intents
            .iter()
            .rev()
            .find(|e| e.epsilon > 0.0)
            .unwrap()
            .running_totals()
            .unwrap();
        let short_totals = totals::running_totals(&short, n, &plan.body);
        if last.epsilon > 0.0 {
            assert_ne!(short_totals.plan.epsilon, stored.plan.epsilon);
        }
        let mut off = last.intent_value().unwrap().composed.unwrap();
        off[0].count += 1;
        let off_totals = totals::running_totals(&off, stored.releases, &plan.body);
        assert_ne!(off_totals.plan.epsilon, plain.plan.epsilon);
        assert_ne!(off_totals.plan.epsilon, stored.plan.epsilon);

        // a stored history that is not the chain's, with every hash after
        // it recomputed, is found by the full verification
        let mut entries = l.entries().unwrap();
        let i = entries
            .iter()
            .position(|e| e.seq == intents[80].seq)
            .unwrap();
        let mut v: IntentValue = entries[i].intent_value().unwrap();
        v.composed.as_mut().unwrap()[0].count += 1;
        entries[i].value = Some(serde_json::to_string(&v).unwrap());
        for j in i..entries.len() {
            if j > 0 {
                entries[j].prev_hash = entries[j - 1].hash.clone();
            }
            entries[j].hash = entries[j].compute_hash();
        }
        let bad = verify::verify_entries(&entries).first_bad.unwrap();
        assert_eq!(bad.0, intents[80].seq);
        assert!(bad.1.contains("composed"), "{}", bad.1);
    }

    /// An intent as format 5 wrote it: the running totals of the whole
    /// history composed afresh, no composed history stored.
    fn format_5_intent(l: &mut Ledger, plan: &ExecutablePlan, name: &str, slot: u64) {
        let r = plan.body.release(name).unwrap();
        let tx = l.conn.transaction().unwrap();
        let (releases, n) = totals::history_through(&tx, i64::MAX).unwrap();
        let record = MechanismRecord::of(r);
        let releases = cache::with_release(&releases, &record);
        let value = IntentValue {
            running_totals: totals::running_totals(&releases, n + 1, &plan.body),
            tree_nodes: None,
            units_key_sha256: None,
            window_units_sha256: None,
            composed: None,
        };
        append(
            &tx,
            NewEntry {
                query: Some(name.into()),
                slot: Some(slot as i64),
                mechanism: Some(serde_json::to_string(&record).unwrap()),
                epsilon: r.cost_per_release.epsilon,
                delta: r.cost_per_release.delta,
                value: Some(serde_json::to_string(&value).unwrap()),
                ..NewEntry::new(EntryKind::Intent, &plan.body_sha256)
            },
        )
        .unwrap();
        tx.commit().unwrap();
    }

    /// A ledger of format 5 (its intents store no composed history, no
    /// append trigger on INSERT, no index of the window state) is read,
    /// verified and run as it is and migrated on its first write: the
    /// first intent composes the whole history afresh and stores it, the
    /// next add to it, and both equal the history composed afresh; `meta`
    /// keeps the format it was created with and records the migration.
    #[test]
    fn a_format_5_ledger_is_migrated_on_its_first_write() {
        let plan = dpplan_compile::compile(MIXED).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.sqlite");
        {
            let mut l = Ledger::open(&path, Some(genesis(&plan))).unwrap();
            l.conn
                .execute_batch(&format!(
                    "DROP TRIGGER entries_append_only; DROP INDEX window_units_seq;
                     DROP TRIGGER meta_no_update;
                     UPDATE meta SET value = 'dpplan-ledger-5' WHERE key = 'format';
                     {};",
                    schema::TRIGGERS[3].1
                ))
                .unwrap();
            for (name, slot) in [("a", 0), ("b", 0), ("a", 1), ("c", 0), ("a", 2)] {
                format_5_intent(&mut l, &plan, name, slot);
            }
            assert_eq!(l.format_version().unwrap(), 5);
            l.integrity(None).unwrap();
        }
        let meta = |l: &Ledger, key: &str| -> Option<String> {
            l.conn
                .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
                .optional()
                .unwrap()
        };
        let mut l = Ledger::open(&path, None).unwrap();
        assert_eq!(l.format_version().unwrap(), 5);
        l.integrity_for_run(None).unwrap();
        let first = l
            .begin_release(&plan, plan.body.release("b").unwrap(), 1)
            .unwrap();
        assert_eq!(l.format_version().unwrap(), 6);
        assert_eq!(meta(&l, "format").as_deref(), Some(LEDGER_FORMAT_5));
        assert_eq!(meta(&l, "migrated_to_6").as_deref(), Some(LEDGER_FORMAT));
        let mut other = Ledger::open(&path, None).unwrap();
        let second = other
            .begin_release(&plan, plan.body.release("a").unwrap(), 3)
            .unwrap();
        for e in [&first, &second] {
            let (releases, n) = totals::history_through(&l.conn, e.seq).unwrap();
            let v = e.intent_value().unwrap();
            assert_eq!(v.composed.as_ref(), Some(&releases));
            assert_eq!(
                v.running_totals,
                totals::running_totals(&releases, n, &plan.body)
            );
        }
        assert_eq!(second.running_totals().unwrap().releases, 7);
        // the migrated ledger has format 6's trigger, and verifies
        let i = l.integrity(None).unwrap();
        assert_eq!(i.entries, second.seq);
        let replace = l
            .conn
            .execute_batch("INSERT OR REPLACE INTO entries SELECT * FROM entries WHERE seq = 2");
        assert!(replace.unwrap_err().to_string().contains("append-only"));
    }

    /// A ledger with a checkpoint: 60 intents verified (the checkpoint),
    /// then 10 more appended after it.
    fn checkpointed(plan: &ExecutablePlan, path: &Path) -> i64 {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut next = Default::default();
        let mut l = vec![Ledger::open(path, Some(genesis(plan))).unwrap()];
        random_history_from(plan, &mut l, 60, &mut rng, &mut next);
        let i = l[0].integrity_for_run(None).unwrap();
        assert_eq!(i.checked_after, None, "no checkpoint yet: the whole ledger");
        l[0].anchor().unwrap();
        random_history_from(plan, &mut l, 10, &mut rng, &mut next);
        let head = anchor::read_head(path).unwrap().unwrap();
        let cp = head.checkpoint.unwrap();
        assert_eq!(cp.entries, i.entries);
        assert!(head.entries > cp.entries + 10);
        cp.entries
    }

    fn sql(path: &Path, batch: &str) -> rusqlite::Result<()> {
        Connection::open(path).unwrap().execute_batch(batch)
    }

    /// A run verifies the entries after its checkpoint (and the
    /// checkpoint's binding), and reaches the full check's verdict: the
    /// same entries and latest hash on a sound ledger; on a damaged one,
    /// the full check's refusal, word for word — for an edit after the
    /// checkpoint, an edit behind it made with the triggers dropped and
    /// recreated (the schema cookie moved), a window-state row inserted
    /// behind it (the row count moved). An INSERT over an entry is refused
    /// by SQLite itself. Controls: a forged checkpoint hash or a moved
    /// schema cookie on a sound ledger make the run verify the whole ledger
    /// (and accept it).
    #[test]
    fn a_run_verifies_from_its_checkpoint_and_refuses_what_the_full_check_refuses() {
        let plan = dpplan_compile::compile(MIXED).unwrap();
        let no_update = schema::TRIGGERS[1].1;
        let recreate = format!("{no_update};");

        // sound: verified from the checkpoint, the full check's result
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.sqlite");
        let cp = checkpointed(&plan, &path);
        let l = Ledger::open(&path, None).unwrap();
        let quick = l.integrity_for_run(None).unwrap();
        assert_eq!(quick.checked_after, Some(cp));
        let full = l.integrity(None).unwrap();
        assert_eq!(
            (quick.entries, &quick.latest_hash, &quick.anchored),
            (full.entries, &full.latest_hash, &full.anchored)
        );
        l.anchor().unwrap();
        let moved = anchor::read_head(&path)
            .unwrap()
            .unwrap()
            .checkpoint
            .unwrap();
        assert_eq!(moved.entries, full.entries);
        assert_eq!(
            l.integrity_for_run(None).unwrap().checked_after,
            Some(full.entries)
        );
        // the INSERT OR REPLACE that would rewrite an entry without any
        // DELETE trigger firing is refused
        let e = sql(
            &path,
            "INSERT OR REPLACE INTO entries SELECT * FROM entries WHERE seq = 3",
        );
        assert!(e.unwrap_err().to_string().contains("append-only"));
        drop(l);

        type Damage = fn(&Path, i64, &str);
        let cases: [(&str, Damage); 4] = [
            ("a value after the checkpoint edited", |p, cp, _| {
                sql(p, &format!(
                    "DROP TRIGGER entries_no_update; UPDATE entries SET value = '{{\"x\":1}}' WHERE seq = (SELECT MAX(seq) FROM entries WHERE kind = 'value' AND seq > {cp})"
                )).unwrap()
            }),
            (
                "an intent behind the checkpoint moved to another slot, the trigger recreated",
                |p, cp, recreate| {
                    sql(p, &format!(
                    "DROP TRIGGER entries_no_update; UPDATE entries SET slot = 399 WHERE seq = (SELECT MAX(seq) FROM entries WHERE kind = 'intent' AND query = 'a' AND seq <= {cp}); {recreate}"
                )).unwrap()
                },
            ),
            (
                "a window-state row inserted behind the checkpoint",
                |p, cp, _| {
                    sql(p, &format!(
                    "INSERT INTO window_units (query, unit, slot, seq) SELECT query, 'another', slot, seq FROM entries WHERE kind = 'intent' AND query = 'w' AND seq <= {cp} LIMIT 1"
                )).unwrap()
                },
            ),
            ("the append trigger dropped and recreated", |p, _, _| {
                sql(
                    p,
                    &format!(
                        "DROP TRIGGER entries_append_only; {};",
                        schema::APPEND_TRIGGER.1
                    ),
                )
                .unwrap()
            }),
        ];
        for (i, (name, damage)) in cases.iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("l.sqlite");
            let cp = checkpointed(&plan, &path);
            damage(&path, cp, &recreate);
            let l = Ledger::open(&path, None).unwrap();
            let full = l.integrity(None);
            let run = l.integrity_for_run(None);
            if i == 3 {
                // nothing edited: verified whole (the cookie moved), accepted
                assert_eq!(run.unwrap().checked_after, None, "{name}");
                assert!(full.is_ok(), "{name}");
                continue;
            }
            let full = full.expect_err(name).to_string();
            assert_eq!(run.expect_err(name).to_string(), full, "{name}");
            let says = ["was modified", "was modified", "window state"][i];
            assert!(full.contains(says), "{name}: {full}");
        }

        // a checkpoint whose hash is not its entry's: verified whole
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.sqlite");
        checkpointed(&plan, &path);
        let mut head = anchor::read_head(&path).unwrap().unwrap();
        head.checkpoint.as_mut().unwrap().hash = "ab".repeat(32);
        anchor::write_head(&path, &head).unwrap();
        let l = Ledger::open(&path, None).unwrap();
        assert_eq!(l.integrity_for_run(None).unwrap().checked_after, None);
    }

    /// The plan's total read from every accountant's results is what the
    /// plan's accountant alone computes, to the bit, for every accountant
    /// choice (`best` and each named one), on histories that mix pure and
    /// approximate releases (negative control: another history differs).
    #[test]
    fn the_plans_total_read_from_every_accountant_is_its_own() {
        use dpplan_accounting as acct;
        let laplace = acct::Mechanism {
            kind: acct::NoiseKind::Laplace,
            scale: 2.0,
            sensitivity: acct::Sensitivity::scalar(1.0),
        };
        let gauss = acct::Mechanism {
            kind: acct::NoiseKind::Gaussian,
            scale: 30.0,
            sensitivity: acct::Sensitivity::scalar(10.0),
        };
        let histories = [
            vec![acct::Release {
                sample: None,
                mechanism: laplace,
                count: 37,
            }],
            vec![
                acct::Release {
                    sample: None,
                    mechanism: gauss,
                    count: 12,
                },
                acct::Release {
                    sample: None,
                    mechanism: laplace,
                    count: 5,
                },
            ],
            vec![acct::Release {
                sample: None,
                mechanism: gauss,
                count: 400,
            }],
        ];
        for choice in dpplan_vocab::AccountantChoice::ALL {
            for h in &histories {
                let all = acct::all(h, 1e-6);
                let direct = totals::plan_bound(h, choice, 1e-6);
                let read = totals::plan_of_all(&all, choice);
                match (&direct, &read) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.accountant, b.accountant, "{choice:?}");
                        assert_eq!(a.epsilon.to_bits(), b.epsilon.to_bits(), "{choice:?}");
                    }
                    (Err(a), Err(b)) => assert_eq!(a, b, "{choice:?}"),
                    _ => panic!("{choice:?}: {direct:?} vs {read:?}"),
                }
            }
            let a = totals::plan_of_all(&acct::all(&histories[0], 1e-6), choice);
            let b = totals::plan_of_all(&acct::all(&histories[1], 1e-6), choice);
            if let (Ok(a), Ok(b)) = (a, b) {
                assert_ne!(a.epsilon, b.epsilon, "{choice:?}");
            }
        }
    }

    /// Independently known Unix times (famous timestamps, other systems'
    /// epochs) and their text.
    #[test]
    fn known_timestamps() {
        for (secs, text) in [
            (0, "1970-01-01T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (951_868_800, "2000-03-01T00:00:00Z"),
            (1_000_000_000, "2001-09-09T01:46:40Z"),
            (1_234_567_890, "2009-02-13T23:31:30Z"),
            (1_709_164_800, "2024-02-29T00:00:00Z"),
            (i64::from(i32::MAX), "2038-01-19T03:14:07Z"),
            (-2_208_988_800, "1900-01-01T00:00:00Z"),
            (-11_644_473_600, "1601-01-01T00:00:00Z"),
            (-62_135_596_800, "0001-01-01T00:00:00Z"),
        ] {
            assert_eq!(rfc3339(Timestamp::from_second(secs).unwrap()), text);
        }
        // the fraction is dropped, not rounded
        let t = Timestamp::new(1_234_567_890, 999_999_999).unwrap();
        assert_eq!(rfc3339(t), "2009-02-13T23:31:30Z");
        let now = now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        let back = now.parse::<Timestamp>().unwrap().as_second();
        assert!((back - now_unix()).abs() <= 2, "{now}");
    }

    /// The run's limits are the first and the last second of the years
    /// 1-9999 (past jiff's last timestamp, so as civil times).
    #[test]
    fn time_limits() {
        let epoch = jiff::civil::datetime(1970, 1, 1, 0, 0, 0, 0);
        let secs = |dt: jiff::civil::DateTime| dt.duration_since(epoch).as_secs();
        assert_eq!(
            secs(jiff::civil::datetime(1, 1, 1, 0, 0, 0, 0)),
            crate::MIN_TIME
        );
        assert_eq!(
            secs(jiff::civil::datetime(9999, 12, 31, 23, 59, 59, 0)),
            crate::MAX_TIME
        );
    }

    /// An anchor that cannot be read: an IO error (exit code 2 in the CLI)
    /// that names the file and keeps the OS's error as its source.
    #[test]
    fn an_unreadable_anchor_keeps_its_cause() {
        use std::error::Error;
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("l.sqlite");
        let head = head_path(&ledger);
        std::fs::create_dir(&head).unwrap();
        let os = std::fs::read(&head).unwrap_err();
        let e = anchor::read_head(&ledger).unwrap_err();
        assert!(matches!(e, LedgerError::Io(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("cannot read the ledger's anchor `{}`: {os}", head.display())
        );
        let cause = e
            .source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .unwrap();
        assert_eq!(cause.kind(), os.kind());
    }
}
