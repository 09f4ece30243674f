//! The budget ledger: one data source's (ε, δ) budget, shared by every plan
//! that reads the source (a policy's `[[budgets]]` entry with a `ledger`).
//!
//! Each plan keeps its own ledger; before a release's intent is written
//! in it (so before any noise is drawn), the release is charged here:
//! under an exclusive transaction every charge already recorded, of every
//! plan, is composed with this release by the tightest sound accountant
//! (`plan_bound` with `best`, as `dpplan check` composes a shared budget)
//! at the budget's δ, and the release is either appended or refused. A
//! crash between this charge and the plan's own intent leaves the budget
//! over-counted (sound), never under-counted.
//!
//! The discipline is the plan ledger's: created once, atomically (WAL set
//! on a file no one else sees, then hard-linked into place); every
//! connection `synchronous=FULL`; every write `BEGIN IMMEDIATE`; triggers
//! refuse UPDATE and DELETE; each entry's hash covers its content and the
//! previous hash; an anchor file (`LEDGER.head`) makes a cut-off tail
//! visible. The opening entry records the source, the budget, and the
//! guarantee (unit, its id column, adjacency) every charge must share:
//! guarantees for different units or adjacencies are never composed.
//!
//! Composition is grouped: identical mechanisms are counted together
//! (`add_release`), and a windowed query's windows (a cumulative count's
//! slots) are one release per plan ledger, composed once, as the plan
//! ledger composes them. The history is verified and grouped once when the
//! ledger is opened; each charge then reads only the entries appended
//! since (by another process), so a charge costs one accounting of the
//! grouped releases, whatever the number of entries.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use dpplan_accounting as acct;
use dpplan_plan::{ExecutablePlan, Release};
use dpplan_vocab::contract::Guarantee;
use dpplan_vocab::{Accountant, AccountantChoice};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

mod blocks;
pub use blocks::{Blocks, Per, Reads};

use crate::ledger::anchor::{read_head, remove_leftovers, temp_sibling, write_head, Head};
use crate::ledger::totals::{add_release, plan_bound, Accounted, MechanismRecord};
use crate::ledger::{
    configure, ledger_id, now_rfc3339, refuse_orphan_anchor, LedgerError, GENESIS_PREV,
};

/// The format of a budget ledger (its `meta` table's `format`).
pub const BUDGET_FORMAT: &str = "dpplan-budget-1";

/// A shared budget as the policy in force gives it to a run (the CLI
/// translates the policy's `[[budgets]]` entries that name a ledger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedBudget {
    /// The source as the policy writes it.
    pub source: String,
    /// The source resolved against the policy file's directory.
    pub path: PathBuf,
    pub epsilon: f64,
    pub delta: f64,
    /// The budget ledger, resolved against the policy file's directory.
    pub ledger: PathBuf,
    /// The policy file that declares the budget (named in refusals).
    pub policy: PathBuf,
    /// `per = "month"` (or `week`): the budget is ε per unit per calendar
    /// block (UTC), each release counted against every block its data lie
    /// in; `None`: one budget for all time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<Per>,
}

const TABLES: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE charges (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    plan TEXT,
    plan_hash TEXT,
    plan_ledger TEXT,
    query TEXT,
    slot INTEGER,
    mechanism TEXT,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    value TEXT NOT NULL,
    time TEXT NOT NULL,
    version TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
";

/// The append-only triggers, as SQLite stores them: a budget ledger whose
/// triggers differ (dropped, altered or added) is refused at open.
const TRIGGERS: [(&str, &str); 4] = [
    (
        "charges_no_delete",
        "CREATE TRIGGER charges_no_delete BEFORE DELETE ON charges BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END",
    ),
    (
        "charges_no_update",
        "CREATE TRIGGER charges_no_update BEFORE UPDATE ON charges BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END",
    ),
    (
        "meta_no_delete",
        "CREATE TRIGGER meta_no_delete BEFORE DELETE ON meta BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END",
    ),
    (
        "meta_no_update",
        "CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta BEGIN SELECT RAISE(ABORT, 'the budget ledger is append-only'); END",
    ),
];

/// What a budget-ledger entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    /// Entry 1: the source, the budget and the guarantee ([`BudgetOpen`]).
    Open,
    /// One release of one plan, charged before its noise was drawn.
    Charge,
}

impl BudgetKind {
    fn as_str(self) -> &'static str {
        match self {
            BudgetKind::Open => "open",
            BudgetKind::Charge => "charge",
        }
    }
}

/// The value of the opening entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetOpen {
    pub format: String,
    /// The source as the policy wrote it, and resolved.
    pub source: String,
    pub source_path: String,
    pub epsilon: f64,
    pub delta: f64,
    /// The guarantee every plan charging the budget protects (the first
    /// plan's, fixed here).
    pub guarantee: Guarantee,
    /// The accountant every charge is composed with (`best`: the tightest
    /// sound one, as `dpplan check` composes a shared budget).
    pub accountant: AccountantChoice,
    /// The policy file that declared the budget when the ledger was made.
    pub policy: String,
    /// 128 random bits that make this ledger's opening entry its own.
    pub ledger_id: String,
    /// A per-block budget's block (absent: one budget for all time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<Per>,
}

/// The value of a charge entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChargeValue {
    /// False for a later window of a windowed query (a later slot of a
    /// cumulative count) whose one release this plan ledger already
    /// charged: recorded, composed once.
    pub composed: bool,
    /// Every charge of every plan so far, this one included, composed at
    /// the budget's δ.
    pub total_epsilon: f64,
    pub accountant: Accountant,
    pub at_delta: f64,
    /// A per-block budget: the blocks the release's data lie in, each of
    /// which it counts against (`total_epsilon` is then the largest
    /// block's total after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocks: Option<Blocks>,
}

/// One entry of a budget ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetEntry {
    pub seq: i64,
    pub kind: BudgetKind,
    /// The plan's name and hash (charges).
    pub plan: Option<String>,
    pub plan_hash: Option<String>,
    /// The hash of the plan ledger's opening entry: which plan ledger's
    /// windows a windowed query's charges are (charges).
    pub plan_ledger: Option<String>,
    pub query: Option<String>,
    pub slot: Option<i64>,
    /// The mechanism record ([`MechanismRecord`], JSON) that was composed.
    pub mechanism: Option<String>,
    /// The release's own cost, as its plan states it (information: the
    /// budget composes the mechanisms).
    pub epsilon: f64,
    pub delta: f64,
    /// JSON: [`BudgetOpen`] or [`ChargeValue`].
    pub value: String,
    pub time: String,
    pub version: String,
    pub prev_hash: String,
    pub hash: String,
}

impl BudgetEntry {
    pub fn compute_hash(&self) -> String {
        #[derive(Serialize)]
        struct Content<'a> {
            seq: i64,
            kind: &'a str,
            plan: &'a Option<String>,
            plan_hash: &'a Option<String>,
            plan_ledger: &'a Option<String>,
            query: &'a Option<String>,
            slot: Option<i64>,
            mechanism: &'a Option<String>,
            epsilon: u64,
            delta: u64,
            value: &'a str,
            time: &'a str,
            version: &'a str,
            prev_hash: &'a str,
        }
        // Invariant: plain fields with string keys; cannot fail.
        // Invariant: strings, integers and options of them; cannot fail.
        let content = serde_json::to_string(&Content {
            seq: self.seq,
            kind: self.kind.as_str(),
            plan: &self.plan,
            plan_hash: &self.plan_hash,
            plan_ledger: &self.plan_ledger,
            query: &self.query,
            slot: self.slot,
            mechanism: &self.mechanism,
            epsilon: self.epsilon.to_bits(),
            delta: self.delta.to_bits(),
            value: &self.value,
            time: &self.time,
            version: &self.version,
            prev_hash: &self.prev_hash,
        })
        .expect("entry content serialises");
        dpplan_plan::sha256_hex(format!("{BUDGET_FORMAT}\n{content}").as_bytes())
    }

    fn charge_value(&self) -> Option<ChargeValue> {
        match self.kind {
            BudgetKind::Charge => serde_json::from_str(&self.value).ok(),
            BudgetKind::Open => None,
        }
    }
}

/// One plan's part of the budget.
#[derive(Debug, Clone, Default, PartialEq)]
struct PlanPart {
    releases: Vec<acct::Release>,
    charges: u64,
    hashes: BTreeSet<String>,
}

/// The history grouped: what a charge composes.
#[derive(Debug, Clone, Default)]
struct Composed {
    tail: (i64, String),
    releases: Vec<acct::Release>,
    /// (plan ledger, query, mechanism) of every windowed or tree charge.
    vectors: HashSet<(String, String, String)>,
    plans: BTreeMap<String, PlanPart>,
    /// Each mechanism record read, by its text: its mechanisms, and
    /// whether it is a vector release (windows or a tree).
    parsed: HashMap<String, (Vec<Accounted>, bool)>,
    charges: u64,
    /// A per-block budget: each block's charges with a window, composed.
    block: BTreeMap<i64, Vec<acct::Release>>,
    /// A per-block budget: the charges without a window, by the last
    /// block they count against (they count against every block before).
    upto: BTreeMap<i64, Vec<acct::Release>>,
    /// A per-block budget: (plan ledger, query, mechanism) of every vector
    /// charge, per block it counts against (composed once per block).
    block_vectors: HashSet<((String, String, String), i64)>,
}

/// The most blocks one charge may count against (a window longer than
/// 10 000 weeks is not a plan's).
const MAX_BLOCKS: i64 = 10_000;

impl Composed {
    fn mechanisms(&mut self, text: &str) -> Option<(Vec<Accounted>, bool)> {
        if let Some(p) = self.parsed.get(text) {
            return Some(p.clone());
        }
        let rec: MechanismRecord = serde_json::from_str(text).ok()?;
        let p = (
            rec.accounting(),
            rec.window.is_some() || rec.cumulative.is_some(),
        );
        self.parsed.insert(text.to_string(), p.clone());
        Some(p)
    }

    /// Whether a charge of `mechanism` for (plan ledger, query) adds to the
    /// composition of all time: false for a later window of a vector
    /// release.
    fn composes(&self, vector: bool, key: &(String, String, String)) -> bool {
        !(vector && self.vectors.contains(key))
    }

    /// Whether a charge adds to block `k`'s composition: false for a
    /// vector release already charged in that block.
    fn composes_in(&self, vector: bool, key: &(String, String, String), k: i64) -> bool {
        !(vector && self.block_vectors.contains(&(key.clone(), k)))
    }

    /// Whether a charge adds to any composition (its `composed`).
    fn composes_any(
        &self,
        vector: bool,
        key: &(String, String, String),
        blocks: Option<Blocks>,
    ) -> bool {
        match blocks {
            None => self.composes(vector, key),
            Some(Blocks { first: None, .. }) => true,
            Some(Blocks {
                first: Some(f),
                last,
            }) => (f..=last).any(|k| self.composes_in(vector, key, k)),
        }
    }

    /// Block `k`'s releases: its charges with a window, and every charge
    /// without one that counts against it.
    fn in_block(&self, k: i64) -> Vec<acct::Release> {
        let mut out = self.block.get(&k).cloned().unwrap_or_default();
        for rs in self.upto.range(k..).map(|(_, rs)| rs) {
            for r in rs {
                add_release(&mut out, (r.mechanism, r.sample), r.count);
            }
        }
        out
    }

    /// A block no charge with a window counts against: every charge
    /// without one that reaches it (at most all of them).
    fn in_empty_block(&self) -> Vec<acct::Release> {
        let mut out = Vec::new();
        for rs in self.upto.values() {
            for r in rs {
                add_release(&mut out, (r.mechanism, r.sample), r.count);
            }
        }
        out
    }

    /// Adds a charge (already checked) to the history.
    fn add(
        &mut self,
        plan: &str,
        plan_hash: &str,
        key: (String, String, String),
        (mechanisms, vector): (Vec<Accounted>, bool),
        blocks: Option<Blocks>,
    ) {
        let composes = self.composes(vector, &key);
        let part = self.plans.entry(plan.to_string()).or_default();
        part.charges += 1;
        part.hashes.insert(plan_hash.to_string());
        self.charges += 1;
        if composes {
            for &m in &mechanisms {
                add_release(&mut self.releases, m, 1);
                add_release(&mut part.releases, m, 1);
            }
        }
        match blocks {
            None => {}
            Some(Blocks { first: None, last }) => {
                let rs = self.upto.entry(last).or_default();
                for &m in &mechanisms {
                    add_release(rs, m, 1);
                }
            }
            Some(Blocks {
                first: Some(f),
                last,
            }) => {
                for k in f..=last {
                    if !self.composes_in(vector, &key, k) {
                        continue;
                    }
                    let rs = self.block.entry(k).or_default();
                    for &m in &mechanisms {
                        add_release(rs, m, 1);
                    }
                    if vector {
                        self.block_vectors.insert((key.clone(), k));
                    }
                }
            }
        }
        if vector && composes {
            self.vectors.insert(key);
        }
    }

    /// Checks entry `e`, the next after the tail, against the chain and
    /// the protocol, and adds it.
    fn next(&mut self, e: &BudgetEntry) -> Result<(), &'static str> {
        if e.seq != self.tail.0 + 1 {
            return Err("sequence numbers are not contiguous (an entry was removed or inserted)");
        }
        if e.prev_hash != self.tail.1 {
            return Err("it does not link to the previous entry's hash");
        }
        if e.compute_hash() != e.hash {
            return Err("its content does not match its hash (it was modified)");
        }
        match e.kind {
            BudgetKind::Open if e.seq == 1 => {
                if serde_json::from_str::<BudgetOpen>(&e.value).is_err() {
                    return Err("the opening entry is unreadable");
                }
            }
            BudgetKind::Open => return Err("a second opening entry"),
            BudgetKind::Charge if e.seq == 1 => {
                return Err("the first entry is not the opening entry")
            }
            BudgetKind::Charge => {
                let (Some(plan), Some(hash), Some(pl), Some(q), Some(_), Some(m)) = (
                    &e.plan,
                    &e.plan_hash,
                    &e.plan_ledger,
                    &e.query,
                    e.slot,
                    &e.mechanism,
                ) else {
                    return Err("a charge without its plan, query, slot or mechanism");
                };
                let Some(v) = e.charge_value() else {
                    return Err("a charge whose value is unreadable");
                };
                let Some(parsed) = self.mechanisms(m) else {
                    return Err("a charge whose mechanism is unreadable");
                };
                let key = (pl.clone(), q.clone(), m.clone());
                if let Some(b) = v.blocks {
                    let span = b.first.map_or(0, |f| b.last.saturating_sub(f));
                    if !(0..MAX_BLOCKS).contains(&span) {
                        return Err("a charge whose blocks are not a range of a plan's window");
                    }
                }
                if v.composed != self.composes_any(parsed.1, &key, v.blocks) {
                    return Err("a charge whose `composed` does not follow from the history");
                }
                self.add(plan, hash, key, parsed, v.blocks);
            }
        }
        self.tail = (e.seq, e.hash.clone());
        Ok(())
    }
}

fn damaged(path: &Path, seq: Option<i64>, why: impl std::fmt::Display) -> LedgerError {
    LedgerError::Damaged {
        seq,
        why: format!("budget ledger `{}`: {why}", path.display()),
    }
}

/// What a charge did.
#[derive(Debug, Clone, PartialEq)]
pub struct Charged {
    pub entry: BudgetEntry,
    /// The composed ε of every plan's charges with this one.
    pub total_epsilon: f64,
    pub accountant: Accountant,
}

/// One plan's share of a budget ledger, for `dpplan ledger show`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetShare {
    pub plan: String,
    /// The plan hashes it charged under (an upgraded plan has several).
    pub plan_hashes: Vec<String>,
    /// Charges recorded (a windowed query's later windows included).
    pub charges: u64,
    /// Releases composed (each window of a windowed query's one release
    /// counted once).
    pub releases: u64,
    /// The plan's ε on the source alone, at the budget's δ (shares do
    /// not add up: composition is sublinear).
    pub epsilon: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accountant: Option<Accountant>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A budget ledger summed up: its budget, each plan's share, the total.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetSummary {
    pub format: String,
    pub source: String,
    pub source_path: String,
    pub budget_epsilon: f64,
    pub budget_delta: f64,
    pub guarantee: Guarantee,
    pub plans: Vec<BudgetShare>,
    /// Every plan's charges composed, at the budget's δ.
    pub total_epsilon: f64,
    pub accountant: Accountant,
    pub remaining_epsilon: f64,
    /// A per-block budget: the block, and each block charged with its
    /// composed ε (`total_epsilon` is then the largest, with a block no
    /// charge with a window counts against among them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per: Option<Per>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<BlockTotal>,
    pub entries: i64,
    pub latest_hash: String,
}

/// One block of a per-block budget, composed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockTotal {
    /// `2026-02`, `week of 2026-02-02`, or `any other` (a block no charge
    /// with a window counts against).
    pub block: String,
    pub epsilon: f64,
    pub accountant: Accountant,
}

/// An open budget ledger, verified.
pub struct BudgetLedger {
    conn: Connection,
    path: PathBuf,
    open: BudgetOpen,
    composed: Composed,
}

/// The composed ε of `releases` at `delta` by the tightest sound
/// accountant (0 for none).
fn compose(releases: &[acct::Release], delta: f64) -> Result<acct::Bound, acct::AccountingError> {
    if releases.is_empty() {
        return Ok(acct::Bound {
            epsilon: 0.0,
            delta: 0.0,
            accountant: Accountant::Basic,
            detail: "no release".into(),
        });
    }
    plan_bound(releases, AccountantChoice::Best, delta)
}

fn guarantee_text(g: &Guarantee) -> String {
    match &g.unit_id {
        Some(id) => format!("unit {} by {id}, adjacency {}", g.unit, g.adjacency),
        None => format!("unit {}, adjacency {}", g.unit, g.adjacency),
    }
}

impl BudgetLedger {
    /// Whether `path` is a budget ledger (its `meta` says so).
    pub fn is_budget_ledger(path: &Path) -> bool {
        let Ok(conn) =
            Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        else {
            return false;
        };
        conn.query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get::<_, String>(0)
        })
        .is_ok_and(|f| f == BUDGET_FORMAT)
    }

    /// Opens the budget ledger of `budget`, creating it (its guarantee:
    /// `guarantee`) when it does not exist, and verifies it (triggers,
    /// chain, protocol, anchor). Refuses (`OverBudget`, so a run reports
    /// the release refused) a ledger made for another source or budget.
    pub fn open_for(
        budget: &SharedBudget,
        guarantee: &Guarantee,
    ) -> Result<BudgetLedger, LedgerError> {
        let path = &budget.ledger;
        if !path.exists() {
            refuse_orphan_anchor(path)?;
            create(path, &opening(budget, guarantee)?)?;
        }
        let l = Self::open_to_charge(path)?;
        l.check_budget(budget)?;
        Ok(l)
    }

    /// Refuses (`OverBudget`) a budget ledger made for another source or
    /// budget than `budget`.
    pub fn check_budget(&self, budget: &SharedBudget) -> Result<(), LedgerError> {
        let (l, path) = (self, &self.path);
        let o = &l.open;
        if o.source_path != budget.path.display().to_string()
            || o.epsilon != budget.epsilon
            || o.delta != budget.delta
            || o.per != budget.per
        {
            return Err(LedgerError::OverBudget(format!(
                "the budget ledger `{}` holds the budget ε = {}, δ = {}{} of `{}`, but the policy `{}` gives `{}` ε = {}, δ = {}{}: a budget ledger keeps the budget it was made for (a changed budget is a reviewed decision: restore the policy's entry, or give the new budget a new ledger, which starts from nothing only if no plan read the source under the old one); nothing was drawn or charged",
                path.display(),
                o.epsilon,
                o.delta,
                o.per.map(|p| format!(" per {}", p.name())).unwrap_or_default(),
                o.source_path,
                budget.policy.display(),
                budget.path.display(),
                budget.epsilon,
                budget.delta,
                budget.per.map(|p| format!(" per {}", p.name())).unwrap_or_default(),
            )));
        }
        Ok(())
    }

    /// Opens an existing budget ledger and verifies it.
    pub fn open(path: &Path) -> Result<BudgetLedger, LedgerError> {
        if !path.is_file() {
            return Err(LedgerError::NotALedger(format!(
                "`{}` does not exist or is not a file",
                path.display()
            )));
        }
        let conn = Connection::open(path)?;
        configure(&conn)?;
        let format: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|_| {
                LedgerError::NotALedger(format!("`{}` has no budget ledger tables", path.display()))
            })?;
        if format.as_deref() != Some(BUDGET_FORMAT) {
            return Err(LedgerError::NotALedger(format!(
                "`{}` is not a {BUDGET_FORMAT} budget ledger",
                path.display()
            )));
        }
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(LedgerError::Corrupt(format!(
                "journal mode is {mode}, expected wal"
            )));
        }
        let mut l = BudgetLedger {
            conn,
            path: path.to_path_buf(),
            open: BudgetOpen {
                format: String::new(),
                source: String::new(),
                source_path: String::new(),
                epsilon: 0.0,
                delta: 0.0,
                guarantee: Guarantee {
                    unit: dpplan_vocab::UnitKind::Row,
                    unit_id: None,
                    adjacency: dpplan_vocab::Adjacency::AddRemove,
                },
                accountant: AccountantChoice::Best,
                policy: String::new(),
                ledger_id: String::new(),
                per: None,
            },
            composed: Composed {
                tail: (0, GENESIS_PREV.to_string()),
                ..Composed::default()
            },
        };
        l.conn.execute_batch("BEGIN IMMEDIATE")?;
        let verified = l.verify_locked();
        // Nothing was written: ending the transaction cannot lose anything.
        let _ = l.conn.execute_batch("ROLLBACK");
        verified?;
        Ok(l)
    }

    /// [`Self::open`] for charging: a ledger never charged has no anchor
    /// yet (verified: only its opening entry), and gets one now, before
    /// this process can charge it. A charge commits, then anchors; a
    /// second process that opened the ledger between the two would
    /// otherwise meet two entries and no anchor (a cut-off tail, for all
    /// it can tell) and refuse. With every process that charges anchoring
    /// first, every charge finds an anchor in place, and one that names an
    /// earlier entry is valid. Inspection (`ledger show`, `ledger verify`)
    /// opens with [`Self::open`] and writes nothing.
    pub fn open_to_charge(path: &Path) -> Result<BudgetLedger, LedgerError> {
        let l = Self::open(path)?;
        if read_head(path)?.is_none() {
            l.anchor()?;
        }
        Ok(l)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the opening entry recorded.
    pub fn opening(&self) -> &BudgetOpen {
        &self.open
    }

    /// Everything, under the write lock: the chain and the protocol from
    /// entry 1 (grouped as it is read), the triggers, the anchor.
    fn verify_locked(&mut self) -> Result<(), LedgerError> {
        self.read_new()?;
        if self.composed.tail.0 == 0 {
            return Err(damaged(&self.path, None, "it has no opening entry"));
        }
        let open: String =
            self.conn
                .query_row("SELECT value FROM charges WHERE seq = 1", [], |r| r.get(0))?;
        self.open = serde_json::from_str(&open)
            .map_err(|_| damaged(&self.path, Some(1), "the opening entry is unreadable"))?;
        self.check_triggers()?;
        self.check_anchor()
    }

    /// Reads, checks and groups the entries appended after the tail this
    /// process knows (all of them, the first time).
    fn read_new(&mut self) -> Result<(), LedgerError> {
        // the entry at the known tail must still be the one known
        if self.composed.tail.0 > 0 {
            let h: Option<String> = self
                .conn
                .query_row(
                    "SELECT hash FROM charges WHERE seq = ?1",
                    params![self.composed.tail.0],
                    |r| r.get(0),
                )
                .optional()?;
            if h.as_deref() != Some(self.composed.tail.1.as_str()) {
                return Err(damaged(
                    &self.path,
                    Some(self.composed.tail.0),
                    "an entry already verified was changed or removed",
                ));
            }
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT * FROM charges WHERE seq > ?1 ORDER BY seq")?;
        let rows = stmt.query_map(params![self.composed.tail.0], row)?;
        for r in rows {
            let e = r?;
            self.composed
                .next(&e)
                .map_err(|why| damaged(&self.path, Some(e.seq), why))?;
        }
        Ok(())
    }

    fn check_triggers(&self) -> Result<(), LedgerError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name")?;
        let found = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        for (name, sql) in TRIGGERS {
            match found.iter().find(|(n, _)| n == name) {
                None => {
                    return Err(damaged(
                        &self.path,
                        None,
                        format!("the append-only trigger `{name}` was dropped"),
                    ))
                }
                Some((_, s)) if s.as_deref() != Some(sql) => {
                    return Err(damaged(
                        &self.path,
                        None,
                        format!("the append-only trigger `{name}` was altered"),
                    ))
                }
                Some(_) => {}
            }
        }
        if let Some((extra, _)) = found
            .iter()
            .find(|(n, _)| !TRIGGERS.iter().any(|(t, _)| t == n))
        {
            return Err(damaged(
                &self.path,
                None,
                format!("it has a trigger `{extra}` it was not created with"),
            ));
        }
        Ok(())
    }

    /// The anchor must name an entry the ledger still holds, with its
    /// hash (a budget ledger always keeps one: a cut-off tail would
    /// forget charges, and a forgotten charge is budget spent twice).
    fn check_anchor(&self) -> Result<(), LedgerError> {
        let n = self.composed.tail.0;
        let genesis: String =
            self.conn
                .query_row("SELECT hash FROM charges WHERE seq = 1", [], |r| r.get(0))?;
        match read_head(&self.path)? {
            Some(head) => {
                if head.genesis_hash != genesis {
                    return Err(damaged(
                        &self.path,
                        None,
                        "the anchor file belongs to another ledger (its first entry differs)",
                    ));
                }
                if head.entries > n {
                    return Err(damaged(
                        &self.path,
                        Some(n + 1),
                        format!(
                            "it ends at entry {n} but its anchor records {} entries: charges were lost (a lost WAL file, cut-off pages, or an older copy restored)",
                            head.entries
                        ),
                    ));
                }
                let h: Option<String> = self
                    .conn
                    .query_row(
                        "SELECT hash FROM charges WHERE seq = ?1",
                        params![head.entries],
                        |r| r.get(0),
                    )
                    .optional()?;
                if h.as_deref() != Some(head.latest_hash.as_str()) {
                    return Err(damaged(
                        &self.path,
                        Some(head.entries),
                        "the entry's hash differs from the anchor's: the ledger was rewritten",
                    ));
                }
                Ok(())
            }
            None if n <= 1 => Ok(()),
            None => Err(damaged(
                &self.path,
                None,
                format!(
                    "its anchor `{}` is missing, so a cut-off tail cannot be ruled out",
                    crate::ledger::anchor::head_path(&self.path).display()
                ),
            )),
        }
    }

    /// Records the tail in the anchor file, under the write lock (it never
    /// moves backwards).
    fn anchor(&self) -> Result<(), LedgerError> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let r = (|| {
            let genesis: String =
                self.conn
                    .query_row("SELECT hash FROM charges WHERE seq = 1", [], |r| r.get(0))?;
            let (seq, hash): (i64, String) = self.conn.query_row(
                "SELECT seq, hash FROM charges ORDER BY seq DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            if let Some(old) = read_head(&self.path)? {
                if old.genesis_hash == genesis && old.entries > seq {
                    return Ok(());
                }
            }
            write_head(&self.path, &Head::new(&genesis, seq, &hash))
        })();
        let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
        let ended = self.conn.execute_batch(end);
        r?;
        ended?;
        Ok(())
    }

    /// Each plan's share and the total, as of the history this process
    /// verified.
    fn shares(&self, extra: Option<(&str, &[Accounted])>) -> Vec<BudgetShare> {
        let mut plans = self.composed.plans.clone();
        if let Some((plan, ms)) = extra {
            let p = plans.entry(plan.to_string()).or_default();
            p.charges += 1;
            for &m in ms {
                add_release(&mut p.releases, m, 1);
            }
        }
        plans
            .into_iter()
            .map(|(plan, p)| {
                let b = compose(&p.releases, self.open.delta);
                BudgetShare {
                    plan,
                    plan_hashes: p.hashes.into_iter().collect(),
                    charges: p.charges,
                    releases: p.releases.iter().map(|r| r.count).sum(),
                    epsilon: b.as_ref().ok().map(|b| b.epsilon),
                    accountant: b.as_ref().ok().map(|b| b.accountant),
                    error: b.err().map(|e| e.to_string()),
                }
            })
            .collect()
    }

    /// The ledger summed up (`dpplan ledger show`).
    pub fn summary(&self) -> Result<BudgetSummary, LedgerError> {
        let delta = self.open.delta;
        let bound = |rs: &[acct::Release]| {
            compose(rs, delta).map_err(|e| {
                LedgerError::Corrupt(format!(
                    "the charges cannot be composed at δ = {delta}: {e}"
                ))
            })
        };
        let mut blocks = Vec::new();
        let total = match self.open.per {
            None => bound(&self.composed.releases)?,
            Some(p) => {
                let mut worst = bound(&self.composed.in_empty_block())?;
                for &k in self.composed.block.keys() {
                    let b = bound(&self.composed.in_block(k))?;
                    blocks.push(BlockTotal {
                        block: p.label(k),
                        epsilon: b.epsilon,
                        accountant: b.accountant,
                    });
                    if b.epsilon > worst.epsilon {
                        worst = b;
                    }
                }
                if !self.composed.upto.is_empty() {
                    let b = bound(&self.composed.in_empty_block())?;
                    blocks.push(BlockTotal {
                        block: "any other".into(),
                        epsilon: b.epsilon,
                        accountant: b.accountant,
                    });
                }
                worst
            }
        };
        Ok(BudgetSummary {
            format: self.open.format.clone(),
            source: self.open.source.clone(),
            source_path: self.open.source_path.clone(),
            budget_epsilon: self.open.epsilon,
            budget_delta: self.open.delta,
            guarantee: self.open.guarantee.clone(),
            plans: self.shares(None),
            total_epsilon: total.epsilon,
            accountant: total.accountant,
            remaining_epsilon: self.open.epsilon - total.epsilon,
            per: self.open.per,
            blocks,
            entries: self.composed.tail.0,
            latest_hash: self.composed.tail.1.clone(),
        })
    }

    /// Every entry of the budget ledger at `path`, in order, read (not
    /// verified: for inspection).
    pub fn read_entries(path: &Path) -> Result<Vec<BudgetEntry>, LedgerError> {
        if !Self::is_budget_ledger(path) {
            return Err(LedgerError::NotALedger(format!(
                "`{}` is not a {BUDGET_FORMAT} budget ledger",
                path.display()
            )));
        }
        let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
        let mut stmt = conn.prepare("SELECT * FROM charges ORDER BY seq")?;
        let rows = stmt.query_map([], row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Every entry, in order.
    pub fn entries(&self) -> Result<Vec<BudgetEntry>, LedgerError> {
        let mut stmt = self.conn.prepare("SELECT * FROM charges ORDER BY seq")?;
        let rows = stmt.query_map([], row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Charges release `r`'s slot `slot` of `plan` (whose own ledger's
    /// opening entry has hash `plan_ledger`), before anything of it is
    /// written in the plan's ledger or drawn: under an exclusive
    /// transaction, the entries other processes appended are verified and
    /// grouped, this release is composed with every plan's charges at the
    /// budget's δ, and it is appended, or refused (`OverBudget`, naming
    /// the plans and their shares) with nothing appended.
    pub fn charge(
        &mut self,
        plan: &ExecutablePlan,
        plan_ledger: &str,
        r: &Release,
        (slot, reads): (u64, Reads),
    ) -> Result<Charged, LedgerError> {
        let name = &plan.body.name;
        let g = plan.body.guarantee();
        if g != self.open.guarantee {
            return Err(LedgerError::OverBudget(format!(
                "plan `{name}` protects {}, but the shared budget of `{}` (budget ledger `{}`) is charged for {}: guarantees for different units or adjacencies bound different things and are never composed into one budget (no group-privacy conversion is made); nothing was drawn or charged",
                guarantee_text(&g),
                self.open.source,
                self.path.display(),
                guarantee_text(&self.open.guarantee)
            )));
        }
        if r.aggregation.selection.is_some() {
            return Err(LedgerError::OverBudget(format!(
                "`{}` releases keys from the data: the δ of its thresholds is not composed across the plans of a shared budget ledger yet, so it cannot be charged to the shared budget of `{}`; nothing was drawn or charged",
                r.name, self.open.source
            )));
        }
        let record = MechanismRecord::of(r);
        // Invariant: plain data with string keys; cannot fail.
        let mechanism = serde_json::to_string(&record).expect("serialises");
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let out = self.charge_locked(plan, plan_ledger, r, (slot, reads), &mechanism);
        match &out {
            Ok(_) => self.conn.execute_batch("COMMIT")?,
            Err(_) => {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
        }
        let (entry, total) = out?;
        self.composed
            .next(&entry)
            .map_err(|why| damaged(&self.path, Some(entry.seq), why))?;
        // anchored before returning: no noise is drawn on a charge the
        // anchor does not vouch for
        self.anchor()?;
        Ok(Charged {
            entry,
            total_epsilon: total.epsilon,
            accountant: total.accountant,
        })
    }

    /// The refusal of a release of `name` that would overspend the budget
    /// (in block `k` of `blocks`, under a per-block budget): the budget, the
    /// block and what the release reads, the composed total and each plan's
    /// share on the source alone.
    fn overspent(
        &self,
        name: &str,
        parsed: &(Vec<Accounted>, bool),
        key: &(String, String, String),
        blocks: Option<Blocks>,
        k: Option<i64>,
        over: &acct::Bound,
    ) -> LedgerError {
        let (b_eps, b_delta) = (self.open.epsilon, self.open.delta);
        let extra: &[Accounted] = if self.composed.composes(parsed.1, key) {
            &parsed.0
        } else {
            &[]
        };
        let shares = self
            .shares(Some((name, extra)))
            .iter()
            .map(|s| {
                format!(
                    "`{}` ε = {} ({} release(s){})",
                    s.plan,
                    s.epsilon.map_or("—".to_string(), |e| e.to_string()),
                    s.releases,
                    if s.plan == *name {
                        ", this one included"
                    } else {
                        ""
                    }
                )
            })
            .collect::<Vec<_>>();
        let (per, budget) = match (self.open.per, blocks) {
            (Some(p), Some(b)) => {
                let reads = match b.first {
                    Some(f) if f == b.last => format!("its data lie in {}", p.label(f)),
                    Some(f) => format!("its data lie in {} to {}", p.label(f), p.label(b.last)),
                    None => format!(
                        "it has no window: it reads every {} up to {}",
                        p.name(),
                        p.label(b.last)
                    ),
                };
                let block = match k {
                    Some(k) => p.label(k),
                    None => format!("a {} before {}", p.name(), p.label(b.last)),
                };
                (
                    format!(" in {block} ({reads})"),
                    format!(
                        "ε = {b_eps} per {} per {}",
                        self.open.guarantee.unit,
                        p.name()
                    ),
                )
            }
            _ => (String::new(), format!("ε = {b_eps}")),
        };
        LedgerError::OverBudget(format!(
            "the shared budget of `{}` ({budget}, δ = {b_delta}; policy `{}`, budget ledger `{}`) would be overspent{per}: with this release of `{name}` the releases counted there compose to ε = {} ({}); each plan's share on the source alone: {}; nothing was drawn or charged",
            self.open.source,
            self.open.policy,
            self.path.display(),
            over.epsilon,
            over.accountant,
            shares.join(", ")
        ))
    }

    fn charge_locked(
        &mut self,
        plan: &ExecutablePlan,
        plan_ledger: &str,
        r: &Release,
        (slot, reads): (u64, Reads),
        mechanism: &str,
    ) -> Result<(BudgetEntry, acct::Bound), LedgerError> {
        self.read_new()?;
        let name = &plan.body.name;
        let parsed = self
            .composed
            .mechanisms(mechanism)
            .ok_or_else(|| LedgerError::Corrupt("a mechanism record unreadable".into()))?;
        let key = (
            plan_ledger.to_string(),
            r.name.clone(),
            mechanism.to_string(),
        );
        let (b_eps, b_delta) = (self.open.epsilon, self.open.delta);
        let blocks = self.open.per.map(|p| Blocks::of(p, reads));
        let composed = self.composed.composes_any(parsed.1, &key, blocks);
        let cannot = |e: acct::AccountingError| {
            LedgerError::OverBudget(format!(
                "the plans reading `{}` cannot be composed with this release at the shared budget's δ = {b_delta}: {e}; nothing was drawn or charged",
                self.open.source
            ))
        };
        // each composition the release counts in: all time, or each block
        // its data lie in (a block no charge with a window counts against
        // stands for every such block, for a release without a window)
        let mut checked: Vec<(Option<i64>, acct::Bound)> = Vec::new();
        match (self.open.per, blocks) {
            (Some(_), Some(b)) => {
                let ks: Vec<Option<i64>> = match b.first {
                    Some(f) => (f..=b.last).map(Some).collect(),
                    None => self
                        .composed
                        .block
                        .range(..=b.last)
                        .map(|(k, _)| Some(*k))
                        .chain([None])
                        .collect(),
                };
                for k in ks {
                    let mut with = match k {
                        Some(k) => self.composed.in_block(k),
                        None => self.composed.in_empty_block(),
                    };
                    let adds = match (k, b.first) {
                        (Some(k), Some(_)) => self.composed.composes_in(parsed.1, &key, k),
                        _ => true,
                    };
                    if adds {
                        for &m in &parsed.0 {
                            add_release(&mut with, m, 1);
                        }
                    }
                    checked.push((k, compose(&with, b_delta).map_err(cannot)?));
                }
            }
            _ => {
                let mut with = self.composed.releases.clone();
                if composed {
                    for &m in &parsed.0 {
                        add_release(&mut with, m, 1);
                    }
                }
                checked.push((None, compose(&with, b_delta).map_err(cannot)?));
            }
        }
        let over = checked.iter().find(|(_, t)| t.epsilon > b_eps).cloned();
        // Invariant: at least one composition was checked.
        let total = checked
            .into_iter()
            .map(|(_, t)| t)
            .max_by(|a, b| a.epsilon.total_cmp(&b.epsilon))
            .expect("one composition");
        if let Some((k, over)) = over {
            return Err(self.overspent(name, &parsed, &key, blocks, k, &over));
        }
        let value = ChargeValue {
            composed,
            total_epsilon: total.epsilon,
            accountant: total.accountant,
            at_delta: b_delta,
            blocks,
        };
        let mut e = BudgetEntry {
            seq: self.composed.tail.0 + 1,
            kind: BudgetKind::Charge,
            plan: Some(name.clone()),
            plan_hash: Some(plan.body_sha256.clone()),
            plan_ledger: Some(plan_ledger.to_string()),
            query: Some(r.name.clone()),
            slot: Some(slot as i64),
            mechanism: Some(mechanism.to_string()),
            epsilon: r.cost_per_release.epsilon,
            delta: r.cost_per_release.delta,
            // Invariant: plain data with string keys; cannot fail.
            value: serde_json::to_string(&value).expect("serialises"),
            time: now_rfc3339(),
            version: dpplan_plan::COMPILER.into(),
            prev_hash: self.composed.tail.1.clone(),
            hash: String::new(),
        };
        e.hash = e.compute_hash();
        insert(&self.conn, &e)?;
        Ok((e, total))
    }
}

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<BudgetEntry> {
    let kind: String = r.get("kind")?;
    let kind = match kind.as_str() {
        "open" => BudgetKind::Open,
        "charge" => BudgetKind::Charge,
        _ => {
            return Err(rusqlite::Error::FromSqlConversionFailure(
                1,
                rusqlite::types::Type::Text,
                "an entry of an unknown kind".into(),
            ))
        }
    };
    Ok(BudgetEntry {
        seq: r.get("seq")?,
        kind,
        plan: r.get("plan")?,
        plan_hash: r.get("plan_hash")?,
        plan_ledger: r.get("plan_ledger")?,
        query: r.get("query")?,
        slot: r.get("slot")?,
        mechanism: r.get("mechanism")?,
        epsilon: r.get("epsilon")?,
        delta: r.get("delta")?,
        value: r.get("value")?,
        time: r.get("time")?,
        version: r.get("version")?,
        prev_hash: r.get("prev_hash")?,
        hash: r.get("hash")?,
    })
}

fn insert(conn: &Connection, e: &BudgetEntry) -> Result<(), LedgerError> {
    conn.execute(
        "INSERT INTO charges (seq, kind, plan, plan_hash, plan_ledger, query, slot, mechanism, epsilon, delta, value, time, version, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            e.seq,
            e.kind.as_str(),
            e.plan,
            e.plan_hash,
            e.plan_ledger,
            e.query,
            e.slot,
            e.mechanism,
            e.epsilon,
            e.delta,
            e.value,
            e.time,
            e.version,
            e.prev_hash,
            e.hash
        ],
    )?;
    Ok(())
}

/// The opening entry of a new budget ledger for `budget`, whose charges
/// protect `guarantee` (with 128 fresh random bits: its ledger id).
fn opening(budget: &SharedBudget, guarantee: &Guarantee) -> Result<BudgetOpen, LedgerError> {
    Ok(BudgetOpen {
        format: BUDGET_FORMAT.into(),
        source: budget.source.clone(),
        source_path: budget.path.display().to_string(),
        epsilon: budget.epsilon,
        delta: budget.delta,
        guarantee: guarantee.clone(),
        accountant: AccountantChoice::Best,
        policy: budget.policy.display().to_string(),
        ledger_id: ledger_id()?,
        per: budget.per,
    })
}

/// Creates the budget ledger with its opening entry, atomically (built
/// under a temporary name, then hard-linked into place); another process
/// that created it first wins, and its ledger is used.
fn create(path: &Path, open: &BudgetOpen) -> Result<(), LedgerError> {
    let dir = crate::ledger::anchor::parent_dir(path);
    if !dir.is_dir() {
        return Err(LedgerError::Create {
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "its directory `{}` does not exist (the policy's `ledger` is relative to the policy file)",
                    dir.display()
                ),
            ),
        });
    }
    remove_leftovers(path, Duration::from_secs(60));
    let tmp = temp_sibling(path, "creating")?;
    {
        let conn = Connection::open(&tmp)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            let _ = std::fs::remove_file(&tmp);
            return Err(LedgerError::NoWal(mode));
        }
        configure(&conn)?;
        conn.execute_batch(TABLES)?;
        for (_, sql) in TRIGGERS {
            conn.execute_batch(&format!("{sql};"))?;
        }
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('format', ?1)",
            params![BUDGET_FORMAT],
        )?;
        let mut e = BudgetEntry {
            seq: 1,
            kind: BudgetKind::Open,
            plan: None,
            plan_hash: None,
            plan_ledger: None,
            query: None,
            slot: None,
            mechanism: None,
            epsilon: 0.0,
            delta: 0.0,
            // Invariant: plain data with string keys; cannot fail.
            value: serde_json::to_string(open).expect("serialises"),
            time: now_rfc3339(),
            version: dpplan_plan::COMPILER.into(),
            prev_hash: GENESIS_PREV.into(),
            hash: String::new(),
        };
        e.hash = e.compute_hash();
        insert(&conn, &e)?;
        conn.close().map_err(|(_, e)| LedgerError::from(e))?;
    }
    // published atomically; another process's, if it won the race, is kept
    crate::ledger::anchor::publish_created(&tmp, path).map(|_| ())
}

#[cfg(test)]
mod tests;
