//! Cumulative counts (the binary tree mechanism, docs/language.md
//! "Continual counting"), run slot by slot across runs.
//!
//! **What is charged.** The checker accounts a cumulative count as ONE
//! release of its tree's nodes. The ledger charges it with the first
//! slot's intent; every later slot's intent charges nothing (as the
//! windows of one windowed release).
//!
//! **A slot.** At slot t (1-based; ledger slot t − 1) a run reads the rows
//! of the slot's window through the windowed runtime (at most r rows of a
//! unit, a unit kept in at most W′ slots: [`dpplan_plan::Cumulative::kept_slots_for`]),
//! feeds the slot's exact count to the open nodes ([`tree::Open`]), and
//! in the slot's intent transaction draws the nodes that close at t, with
//! the exact samplers, and stores them in the intent
//! ([`Ledger::begin_release_cumulative`]). The value released at t is the
//! running total from the stored nodes only (Honaker's estimator, the
//! checker's own): post-processing. A slot whose intent is stored but
//! whose value is not (a run killed in between) is completed from its
//! stored nodes, never drawn again. Slots missed by the clock (no run on
//! a day) are run in order by the next run: a node's exact count needs
//! every slot below it. Late rows: a row whose slot was already run is
//! never read again, so never counted (as for windows).
//!
//! **The open nodes' exact sums.** Between runs the exact counts of the
//! slots of the nodes still open must be kept: they are as private as the
//! data, so they never go into the ledger (which may be shared with
//! auditors), but into `<ledger>.tree-state`, written owner-only and
//! atomically (a new file renamed over the old; the temporary copy a run
//! killed before the rename leaves is removed by the next run of the
//! trees, under their lock). Each slot is two steps:
//! the state file first records the slot's count as *pending*, then the
//! ledger's intent commits; a pending count is applied when the ledger
//! has its slot's intent and dropped when it has not (the run died before
//! the charge: nothing of that slot was released, and the next run reads
//! it afresh). A state that does not match the ledger (lost, behind or
//! ahead of it) stops the tree, refused with the reason (the run's other
//! releases stand): continuing would release nodes whose exact counts are
//! not the data's. So does a slot whose data cannot be read: the slots run
//! before it stand, and the next run goes on from it. Runs of a ledger's trees
//! are serialised by an exclusive lock on `<ledger>.tree-state.lock`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dpplan_mechanisms::factorization;
use dpplan_mechanisms::tree as math;
use dpplan_plan::{ExecutablePlan, Release};
use serde::{Deserialize, Serialize};

use crate::ledger::{Entry, Ledger, SlotState, TreeNode};
use crate::tree::{self, Open};
use crate::{window, Cell, Refusal, ReleaseResult, RunError, RunOptions};
use dpplan_engine::rng::SecureRng;
use dpplan_engine::{Engine, EngineError, IoError};
use dpplan_noise::Noise;

/// The format of `<ledger>.tree-state`: format 1 bound to its ledger (the
/// hash of the ledger's opening entry, each tree's latest intent) under an
/// HMAC-SHA256 with the ledger's unit key.
pub const STATE_FORMAT: &str = "dpplan-tree-state-2";
/// The format written by an earlier dpplan (no binding): read once, for a
/// tree begun before the chain recorded a unit key, and rewritten bound.
pub const STATE_FORMAT_1: &str = "dpplan-tree-state-1";

/// The exact state of a ledger's trees: `<ledger>.tree-state`.
pub fn state_path(ledger: &Path) -> PathBuf {
    suffixed(ledger, ".tree-state")
}

fn suffixed(ledger: &Path, suffix: &str) -> PathBuf {
    let mut p = ledger.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// What `<ledger>.tree-state` holds: per cumulative query, its open
/// nodes' exact sums and the count of a slot whose intent may or may not
/// have committed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    format: String,
    /// The hash of the ledger's opening entry: the state of that ledger
    /// and no other (absent in format 1).
    #[serde(default)]
    ledger: String,
    queries: BTreeMap<String, QueryState>,
    /// HMAC-SHA256 (hex), with the ledger's unit key, over the state with
    /// an empty `mac` (absent in format 1).
    #[serde(default)]
    mac: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct QueryState {
    open: Open,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pending: Option<Pending>,
    /// The hash of the tree's latest intent the state has fed (absent
    /// before its first slot, and in format 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_intent: Option<String>,
    /// Under the factorization: the exact count of every slot fed, in
    /// order (its encoder reads them all); absent for a tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    counts: Vec<i128>,
}

/// Slot `slot`'s (1-based) exact count, written before its intent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct Pending {
    slot: u64,
    count: i128,
}

fn state_error(ledger: &Path, why: impl std::fmt::Display) -> RunError {
    RunError::Data(format!(
        "the exact state of the cumulative counts `{}`: {why}",
        state_path(ledger).display()
    ))
}

fn io(path: &Path, what: &str, e: std::io::Error) -> RunError {
    RunError::Engine(EngineError::Io(
        IoError::new(format!("cannot {what} `{}`", path.display())).with_source(e),
    ))
}

/// What binds a ledger's tree state to it: the hash of its opening entry
/// and its unit key; whether an unbound state (format 1) may still be
/// read (no tree intent recorded a unit key yet).
pub(crate) struct Binding {
    genesis: String,
    key: window::UnitKey,
    legacy_ok: bool,
}

impl Binding {
    /// The binding of `ledger`'s tree state (the unit key created when
    /// the chain has none recorded yet).
    pub(crate) fn of(ledger: &Ledger, rng: &mut SecureRng) -> Result<Binding, RunError> {
        let genesis = ledger
            .entry(1)?
            .ok_or(crate::ledger::LedgerError::NoSuchEntry(1))?
            .hash;
        // read before the key may be created below
        let legacy_ok = !ledger.key_recorded()?;
        Ok(Binding {
            genesis,
            key: window::ledger_key(ledger.path(), Some(ledger), rng)?,
            legacy_ok,
        })
    }
}

/// The MAC of a state with the unit key `key` (its `mac` field ignored).
fn mac(key: &window::UnitKey, state: &State) -> String {
    use hmac::Mac;
    let unsigned = State {
        mac: String::new(),
        ..state.clone()
    };
    // Invariant: plain data with string keys; cannot fail.
    let bytes = serde_json::to_vec(&unsigned).expect("serialises");
    // Invariant: HMAC takes a key of any length; cannot fail.
    let mut m = <hmac::Hmac<sha2::Sha256> as Mac>::new_from_slice(key.bytes())
        .expect("HMAC takes a key of any length");
    m.update(b"dpplan-tree-state\n");
    m.update(&bytes);
    m.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Why `state` is not bound to the ledger whose opening entry hashes to
/// `genesis`: another ledger's, a MAC that does not hold (not checked
/// without the key: an auditor's copy), an unbound format-1 state where
/// the chain recorded a key (`legacy_ok` false), or an unknown format.
/// One check for every run and for `ledger verify`.
fn bound_to(
    state: &State,
    genesis: &str,
    key: Option<&window::UnitKey>,
    legacy_ok: bool,
) -> Result<(), String> {
    match state.format.as_str() {
        STATE_FORMAT => {
            if state.ledger != genesis {
                return Err("it belongs to another ledger (its opening entry's hash differs); the exact sums are not this ledger's, so no tree can continue (restore this ledger's own state from a backup)".into());
            }
            if key.is_some_and(|k| state.mac != mac(k, state)) {
                return Err("its MAC does not hold: it was modified outside dpplan (or the unit key was replaced); no tree can continue (restore it from a backup)".into());
            }
            Ok(())
        }
        STATE_FORMAT_1 if legacy_ok => Ok(()),
        STATE_FORMAT_1 => Err(format!("format `{STATE_FORMAT_1}` carries no binding, but this ledger's trees were run with one; no tree can continue (restore it from a backup)")),
        other => Err(format!("format `{other}`, expected `{STATE_FORMAT}`")),
    }
}

/// Reads the state (`None` when there is no file yet); with a binding,
/// refuses a state of another ledger, one whose MAC does not hold, and an
/// unbound one where the chain expects a bound one.
fn load(ledger: &Path, binding: Option<&Binding>) -> Result<Option<State>, RunError> {
    let path = state_path(ledger);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(&path, "read", e)),
    };
    let state: State = serde_json::from_slice(&bytes).map_err(|e| {
        state_error(
            ledger,
            format!("unreadable ({e}); the open nodes' exact sums are lost, so no tree can continue (restore the file from a backup)"),
        )
    })?;
    if let Some(b) = binding {
        bound_to(&state, &b.genesis, Some(&b.key), b.legacy_ok)
            .map_err(|why| state_error(ledger, why))?;
    }
    Ok(Some(state))
}

/// Writes the state atomically, owner-only (`ledger::replace_file`), bound
/// to its ledger.
fn save(ledger: &Path, state: &mut State, b: &Binding) -> Result<(), RunError> {
    state.format = STATE_FORMAT.into();
    state.ledger = b.genesis.clone();
    state.mac = mac(&b.key, state);
    // Invariant: plain data with string keys; cannot fail.
    let bytes = serde_json::to_vec_pretty(state).expect("serialises");
    crate::ledger::replace_file(
        &state_path(ledger),
        &bytes,
        true,
        "the exact state of the cumulative counts",
    )?;
    Ok(())
}

/// `ledger verify` and every run's open: a tree state next to `ledger`
/// must be bound to it (its opening entry, its MAC when the key is at
/// hand) and, per tree, fed up to the tree's latest intent (or the one
/// before it, with that slot still pending).
pub(crate) fn check_bound(ledger: &Ledger) -> Result<(), crate::ledger::LedgerError> {
    let damaged = |why: String| crate::ledger::LedgerError::Damaged {
        seq: None,
        why: format!(
            "the exact state of the cumulative counts `{}`: {why}",
            state_path(ledger.path()).display()
        ),
    };
    let Ok(bytes) = std::fs::read(state_path(ledger.path())) else {
        return Ok(());
    };
    let state: State =
        serde_json::from_slice(&bytes).map_err(|e| damaged(format!("unreadable ({e})")))?;
    let genesis = ledger.entry(1)?.map(|e| e.hash).unwrap_or_default();
    let key = window::UnitKey::read(ledger.path()).ok();
    bound_to(&state, &genesis, key.as_ref(), !ledger.key_recorded()?).map_err(damaged)?;
    if state.format != STATE_FORMAT {
        // an earlier dpplan's state: it records no intents to compare
        return Ok(());
    }
    for (name, q) in &state.queries {
        let intents = ledger.intent_hashes(name)?;
        let fed_ok = match (&q.last_intent, intents.as_slice()) {
            (None, []) => true,
            (None, [_]) => q.pending.is_some(),
            (Some(h), [.., last]) if h == last => true,
            (Some(h), [.., before, _]) => h == before && q.pending.is_some(),
            _ => false,
        };
        if !fed_ok {
            return Err(damaged(format!(
                "`{name}` was not fed up to its latest intent (a state of another moment)"
            )));
        }
        // a factorization keeps one exact count per slot fed (a pending
        // slot is in neither)
        if !q.counts.is_empty() && q.counts.len() as u64 != q.open.last {
            return Err(damaged(format!(
                "`{name}` keeps {} slot count(s) but has fed {} slot(s)",
                q.counts.len(),
                q.open.last
            )));
        }
    }
    Ok(())
}

/// An exclusive lock on a ledger's trees, held while a run runs them.
pub(crate) struct Lock(#[allow(dead_code)] File);

fn lock(ledger: &Path) -> Result<Lock, RunError> {
    let path = suffixed(ledger, ".tree-state.lock");
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let f = o.open(&path).map_err(|e| io(&path, "open", e))?;
    f.lock().map_err(|e| io(&path, "lock", e))?;
    Ok(Lock(f))
}

/// A query's state made to agree with the ledger: a pending count is
/// applied when the ledger has its slot's intent, dropped otherwise; then
/// the slots fed must be exactly the slots the ledger charged.
fn reconcile(
    ledger_path: &Path,
    r: &Release,
    c: &dpplan_plan::Cumulative,
    state: Option<QueryState>,
    ledger: &Ledger,
) -> Result<QueryState, RunError> {
    let charged = ledger.intents_of(&r.name)?;
    let mut q = match state {
        Some(q) => q,
        None if charged == 0 => QueryState {
            open: Open::new(c.slots, c.levels),
            pending: None,
            last_intent: None,
            counts: Vec::new(),
        },
        None => {
            return Err(state_error(
                ledger_path,
                format!(
                    "`{}` has {charged} slot(s) in the ledger but no exact state; the open nodes' exact sums are lost, so its tree cannot continue (restore the file from a backup)",
                    r.name
                ),
            ))
        }
    };
    if q.open.slots != c.slots || q.open.levels != c.levels {
        return Err(state_error(
            ledger_path,
            format!("`{}` is a tree of another shape", r.name),
        ));
    }
    if let Some(p) = q.pending.take() {
        let committed = p.slot >= 1 && ledger.slot_state(&r.name, p.slot - 1)? != SlotState::Free;
        if committed {
            q.open
                .close(p.slot, p.count)
                .map_err(|e| state_error(ledger_path, format!("`{}`: {e}", r.name)))?;
            if !c.mechanism.is_tree() {
                q.counts.push(p.count);
            }
            q.last_intent = ledger.intent_hashes(&r.name)?.last().cloned();
        }
    }
    // fed up to the tree's latest intent, not a state of another moment
    // (an unbound state of an earlier dpplan records none)
    let latest = ledger.intent_hashes(&r.name)?.last().cloned();
    if q.last_intent.is_some() && q.last_intent != latest {
        return Err(state_error(
            ledger_path,
            format!(
                "`{}` was fed up to another intent than the ledger's latest; the exact sums do not match the released nodes, so its tree cannot continue",
                r.name
            ),
        ));
    }
    if !c.mechanism.is_tree() && q.counts.len() as u64 != q.open.last {
        return Err(state_error(
            ledger_path,
            format!(
                "`{}` keeps {} slot count(s) for its factorization but has fed {} slot(s); the exact counts do not match the released coordinates, so it cannot continue",
                r.name,
                q.counts.len(),
                q.open.last
            ),
        ));
    }
    if q.open.last != charged {
        return Err(state_error(
            ledger_path,
            format!(
                "`{}` has fed {} slot(s) but the ledger charged {charged}; the exact sums do not match the released nodes, so its tree cannot continue",
                r.name, q.open.last
            ),
        ));
    }
    Ok(q)
}

/// A slot's exact count and the units kept in it, read before the ledger
/// exists (a first run reads its data before creating the ledger).
pub(crate) struct Counted {
    slot: u64,
    count: i128,
    units: BTreeSet<String>,
}

/// The cumulative release `r` as the windowed runtime reads its slots:
/// each slot a window of r rows per unit, a unit kept in W′ slots.
fn windowed(r: &Release) -> Result<Release, RunError> {
    Ok(Release {
        window: Some(tree_of(r)?.slot_window()),
        ..r.clone()
    })
}

/// A tree's slots read in ONE pass of its data and counted in slot order,
/// each without the units brought to W′ slots by the ledger or by an
/// earlier slot of this run ([`window::slots_of`]: by the engine itself
/// when it selects windows, else by the runtime).
struct SlotReader {
    counted: BTreeMap<u64, Counted>,
    name: String,
}

impl SlotReader {
    /// Counts slots `slots` (ascending) of `r`, each unit kept in its first
    /// slots up to W′ counting the ledger's and `before`'s (the units of a
    /// slot counted before the reader, not yet recorded).
    fn new(
        (plan, opts, engine): (&ExecutablePlan, &RunOptions, &dyn Engine),
        r: &Release,
        slots: &[u64],
        (ledger_start, ledger): (i64, Option<&Ledger>),
        before: Option<&BTreeSet<String>>,
        rng: &mut SecureRng,
    ) -> Result<SlotReader, RunError> {
        let c = tree_of(r)?;
        let ds = window::dataset_of(plan, r)?;
        let start = r.schedule.start.unwrap_or(ledger_start);
        let key = window::unit_key(ds, opts, ledger, rng)?;
        let mut kept = window::Kept::read(ledger, &r.name, c.kept_slots, ds.bounding.per_unit)?;
        if let Some(units) = before {
            kept.add(units);
        }
        let windowed = windowed(r)?;
        let mut counted = BTreeMap::new();
        for s in window::slots_of(
            (plan, opts, engine),
            &windowed,
            start,
            slots,
            (&kept, key.as_ref()),
            rng,
        )? {
            let count = s
                .values
                .first()
                .and_then(|v| v.first().copied())
                .ok_or_else(|| {
                    RunError::Data(format!("no count for `{}` slot {}", r.name, s.slot))
                })?;
            let slot = s.slot;
            counted.insert(
                slot,
                Counted {
                    slot,
                    count,
                    units: s.units,
                },
            );
        }
        Ok(SlotReader {
            counted,
            name: r.name.clone(),
        })
    }

    /// Slot `slot`'s exact count and the units kept in it.
    fn count(&mut self, slot: u64) -> Result<Counted, RunError> {
        self.counted
            .remove(&slot)
            .ok_or_else(|| RunError::Data(format!("`{}`: slot {slot} was not read", self.name)))
    }
}

fn tree_of(r: &Release) -> Result<&dpplan_plan::Cumulative, RunError> {
    r.cumulative
        .as_ref()
        .ok_or_else(|| RunError::Data(format!("`{}` is not a cumulative count", r.name)))
}

/// Before a first run creates the ledger: the first slot of each
/// cumulative release due, read (so a run that cannot read its data
/// leaves no ledger behind). A state file without a ledger is refused.
pub(crate) fn count_first(
    plan: &ExecutablePlan,
    opts: &RunOptions,
    engine: &dyn Engine,
    due: &[(&Release, u64)],
    ledger_start: i64,
    rng: &mut SecureRng,
) -> Result<BTreeMap<String, Counted>, RunError> {
    let mut out = BTreeMap::new();
    if due.is_empty() {
        return Ok(out);
    }
    if load(&opts.ledger, None)?.is_some_and(|s| s.queries.values().any(|q| q.open.last > 0)) {
        return Err(state_error(
            &opts.ledger,
            "it records slots of a tree, but the ledger does not exist; a new ledger would release those nodes again (restore the ledger, or remove this file to start the trees over)",
        ));
    }
    for &(r, _) in due {
        let mut reader = SlotReader::new(
            (plan, opts, engine),
            r,
            &[0],
            (ledger_start, None),
            None,
            rng,
        )?;
        out.insert(r.name.clone(), reader.count(0)?);
    }
    Ok(out)
}

/// What a run of the cumulative releases due produced.
#[derive(Default)]
pub(crate) struct Ran {
    pub(crate) results: Vec<ReleaseResult>,
    pub(crate) refused: Vec<Refusal>,
}

/// The engine and the times a run reads slots with.
pub(crate) struct Reader<'a> {
    pub(crate) engine: &'a dyn Engine,
    pub(crate) ledger_start: i64,
}

/// Runs every cumulative release due: for each, the slot left charged
/// but unpublished (completed from its stored nodes), then each slot not
/// run yet up to the one due, in order.
pub(crate) fn run_due(
    (ledger, charges): (&mut Ledger, &mut crate::budgets::Charges<'_>),
    plan: &ExecutablePlan,
    opts: &RunOptions,
    due: &[(&Release, u64)],
    reader: Reader<'_>,
    mut first: BTreeMap<String, Counted>,
    rng: &mut SecureRng,
) -> Result<Ran, RunError> {
    let mut ran = Ran::default();
    if due.is_empty() {
        return Ok(ran);
    }
    let _lock = lock(&opts.ledger)?;
    // The state's temporary copies (each holds exact sums) that a run
    // killed in `save` left: under the lock no other run writes the state,
    // so every one is a dead write's.
    crate::ledger::remove_temp_siblings(&state_path(&opts.ledger), &["tmp"], Duration::ZERO);
    let binding = Binding::of(ledger, rng)?;
    let mut state = match load(&opts.ledger, Some(&binding)) {
        Ok(s) => s.unwrap_or_else(|| State {
            format: STATE_FORMAT.into(),
            ledger: String::new(),
            queries: BTreeMap::new(),
            mac: String::new(),
        }),
        // no tree can go on; the run's other releases stand
        Err(e) => {
            for &(r, due_slot) in due {
                ran.refused.push(Refusal {
                    query: r.name.clone(),
                    slot: Some(due_slot),
                    reason: e.to_string(),
                });
            }
            return Ok(ran);
        }
    };
    for &(r, due_slot) in due {
        let first = first.remove(&r.name);
        let tree = Tree {
            plan,
            opts,
            reader: &reader,
            r,
            binding: &binding,
        };
        // a tree that cannot go on is refused; the run's other releases
        // (and this tree's slots run so far) stand
        if let Err(e) = run_tree(
            (&mut *ledger, &mut *charges),
            &tree,
            due_slot,
            first,
            &mut state,
            &mut ran,
            rng,
        ) {
            ran.refused.push(Refusal {
                query: r.name.clone(),
                slot: Some(due_slot),
                reason: e.to_string(),
            });
        }
    }
    Ok(ran)
}

/// A tree's stored noisy nodes, read once per run and added to as each
/// slot stores its own, and the estimates computed from them so far.
struct Stored {
    nodes: BTreeMap<tree::NodeId, f64>,
    estimates: tree::Estimates,
}

/// One cumulative release as a run runs it.
struct Tree<'a> {
    plan: &'a ExecutablePlan,
    opts: &'a RunOptions,
    reader: &'a Reader<'a>,
    r: &'a Release,
    binding: &'a Binding,
}

/// One tree up to its slot due: the state reconciled with the ledger, a
/// slot left charged but unpublished completed, then each new slot.
fn run_tree(
    (ledger, charges): (&mut Ledger, &mut crate::budgets::Charges<'_>),
    tree: &Tree<'_>,
    due_slot: u64,
    mut first: Option<Counted>,
    state: &mut State,
    ran: &mut Ran,
    rng: &mut SecureRng,
) -> Result<(), RunError> {
    let (r, opts) = (tree.r, tree.opts);
    let c = tree_of(r)?;
    let q = reconcile(
        &opts.ledger,
        r,
        c,
        state.queries.get(&r.name).cloned(),
        ledger,
    )?;
    if state.queries.get(&r.name) != Some(&q) {
        state.queries.insert(r.name.clone(), q);
        save(&opts.ledger, state, tree.binding)?;
    }
    let next = state.queries[&r.name].open.last;
    // the stored nodes, read once; each new slot's are added as stored
    let mut nodes = Stored {
        nodes: ledger.tree_nodes(&r.name)?,
        estimates: tree::Estimates::default(),
    };
    // a slot charged whose value was never written: from its nodes
    if next > 0 {
        if let SlotState::Charged(seq) = ledger.slot_state(&r.name, next - 1)? {
            let intent = ledger
                .entry(seq)?
                .ok_or(crate::ledger::LedgerError::NoSuchEntry(seq))?;
            ran.results.push(publish(ledger, r, &intent, &mut nodes)?);
        }
    }
    let last = due_slot.min(c.slots.saturating_sub(1));
    if next > last {
        return Ok(());
    }
    // a first run counted slot 0 before the ledger existed
    let from = match &first {
        Some(f) if f.slot == next => next + 1,
        _ => next,
    };
    let slots: Vec<u64> = (from..=last).collect();
    let mut reader = SlotReader::new(
        (tree.plan, opts, tree.reader.engine),
        r,
        &slots,
        (tree.reader.ledger_start, Some(ledger)),
        first.as_ref().filter(|f| f.slot == next).map(|f| &f.units),
        rng,
    )?;
    for slot in next..=last {
        let counted = match first.take() {
            Some(f) if f.slot == slot => f,
            _ => reader.count(slot)?,
        };
        match run_slot(
            (&mut *ledger, &mut *charges),
            tree,
            state,
            counted,
            &mut nodes,
            rng,
        )? {
            Ok(mut result) => {
                result.backfilled = slot < last;
                ran.results.push(result);
            }
            Err(refusal) => {
                ran.refused.push(refusal);
                break;
            }
        }
    }
    Ok(())
}

/// One new slot: its count recorded as pending, its intent with the nodes
/// that close at it (added to `nodes` as stored), the state advanced, then
/// its value.
fn run_slot(
    (ledger, charges): (&mut Ledger, &mut crate::budgets::Charges<'_>),
    tree: &Tree<'_>,
    state: &mut State,
    counted: Counted,
    nodes: &mut Stored,
    rng: &mut SecureRng,
) -> Result<Result<ReleaseResult, Refusal>, RunError> {
    let (plan, opts, r) = (tree.plan, tree.opts, tree.r);
    // the shared budgets first: a refusal leaves the ledger and the
    // tree's state as they were, and nothing is drawn
    if let Some(why) = charges.charge(ledger, plan, opts, r, counted.slot)? {
        return Ok(Err(Refusal {
            query: r.name.clone(),
            slot: Some(counted.slot),
            reason: why,
        }));
    }
    let t = counted.slot + 1;
    let q = state
        .queries
        .get_mut(&r.name)
        .ok_or_else(|| state_error(&opts.ledger, format!("`{}` has no state", r.name)))?;
    let mut after = q.open.clone();
    let closing = after
        .close(t, counted.count)
        .map_err(|e| RunError::Data(format!("`{}`: {e}", r.name)))?;
    q.pending = Some(Pending {
        slot: t,
        count: counted.count,
    });
    let mut counts = q.counts.clone();
    save(&opts.ledger, state, tree.binding)?;

    let part = r
        .parts
        .first()
        .ok_or_else(|| RunError::Data(format!("`{}` has no noisy part", r.name)))?;
    let noise =
        Noise::new(part.mechanism, part.scale, part.grid_exponent).map_err(RunError::Noise)?;
    let k = part.grid_exponent;
    let c = tree_of(r)?;
    // Under the factorization the one coordinate closing at t is
    // (E·x)_t, exact on the grid 2^(k − 60), from every slot's exact count.
    let closing = if c.mechanism.is_tree() {
        closing
            .into_iter()
            .map(|(id, exact)| (id, exact, k))
            .collect::<Vec<_>>()
    } else {
        counts.push(counted.count);
        let exact = factorized_centre(r, c.slots, &counts, t)?;
        closing
            .into_iter()
            .map(|(id, _)| (id, exact.0, k + exact.1))
            .collect()
    };
    let mut draw = || {
        Ok(closing
            .iter()
            .map(|&((level, index), exact, k)| TreeNode {
                level,
                index,
                value: noise.release(exact, k, rng),
            })
            .collect())
    };
    let begun = ledger.begin_release_cumulative(plan, r, counted.slot, &counted.units, &mut draw);
    let q = state
        .queries
        .get_mut(&r.name)
        .ok_or_else(|| state_error(&opts.ledger, format!("`{}` has no state", r.name)))?;
    let intent = match begun {
        Ok(e) => {
            q.open = after;
            if !tree_of(r)?.mechanism.is_tree() {
                q.counts.push(counted.count);
            }
            q.pending = None;
            q.last_intent = Some(e.hash.clone());
            save(&opts.ledger, state, tree.binding)?;
            e
        }
        Err(e) => {
            // nothing of the slot was charged or drawn
            q.pending = None;
            save(&opts.ledger, state, tree.binding)?;
            return Ok(Err(Refusal {
                query: r.name.clone(),
                slot: Some(counted.slot),
                reason: e.to_string(),
            }));
        }
    };
    for n in intent.tree_nodes().unwrap_or_default() {
        nodes.nodes.insert((n.level, n.index), n.value);
    }
    crate::test_hooks::pause_after_intent();
    publish(ledger, r, &intent, nodes).map(Ok)
}

/// The value of a slot whose intent (with its nodes) is stored: the
/// running total from the stored nodes (post-processing), written as the
/// intent's value.
fn publish(
    ledger: &mut Ledger,
    r: &Release,
    intent: &Entry,
    nodes: &mut Stored,
) -> Result<ReleaseResult, RunError> {
    let c = tree_of(r)?;
    let slot = intent
        .slot
        .and_then(|s| u64::try_from(s).ok())
        .ok_or_else(|| RunError::Data(format!("an intent of `{}` has no slot", r.name)))?;
    let t = slot + 1;
    let part = r
        .parts
        .first()
        .ok_or_else(|| RunError::Data(format!("`{}` has no noisy part", r.name)))?;
    let gaussian = part.mechanism.is_some_and(|m| m.is_gaussian());
    let scale = part.scale.unwrap_or(0.0);
    let (total, sd) = if c.mechanism.is_tree() {
        let s2 = math::node_variance(scale, gaussian);
        let total = tree::running_total_with(&nodes.nodes, s2, t, &mut nodes.estimates)
            .map_err(|e| RunError::Data(format!("`{}`: {e}", r.name)))?;
        let sd = math::total_variance(&math::node_variances(s2, math::levels(c.slots)), t).sqrt();
        (total, sd)
    } else {
        factorized_total(r, &nodes.nodes, scale, t)?
    };
    let half = math::ci95(sd, gaussian);
    let mut result = crate::fresh_result(r, slot, vec![Cell::noisy(None, total, sd, half)], false);
    result.epsilon = intent.epsilon;
    result.delta = intent.delta;
    // Invariant: plain data with string keys; cannot fail.
    let value = ledger.commit_value(intent, serde_json::to_string(&result).expect("serialises"))?;
    result.ledger_seq = Some(value.seq);
    Ok(result)
}

/// Under the factorization, the one coordinate closing at slot `t` is
/// (E·x)_t, exact, from every slot's exact count so far (`counts`, in
/// grid units): its numerator and the shift of the grid's exponent. The
/// counts' common trailing zero bits (35 on a count's grid) are dropped,
/// exactly, so that E·x fits in 128 bits.
fn factorized_centre(
    r: &Release,
    slots: u64,
    counts: &[i128],
    t: u64,
) -> Result<(i128, i32), RunError> {
    let zeros = counts
        .iter()
        .filter(|&&x| x != 0)
        .map(|x| x.trailing_zeros())
        .min()
        .unwrap_or(0);
    let counts: Vec<i128> = counts.iter().map(|&x| x >> zeros).collect();
    let enc = factorization::encoder(slots);
    let exact = factorization::encode(&enc, &counts, t).ok_or_else(|| {
        RunError::Data(format!(
            "`{}`: the factorization's encoded count overflowed",
            r.name
        ))
    })?;
    let shift = i32::try_from(factorization::FRAC_BITS).unwrap_or(i32::MAX);
    Ok((exact, i32::try_from(zeros).unwrap_or(0) - shift))
}

/// The running total at slot `t` (1-based) of a factorized cumulative
/// count from its stored coordinates u_1 … u_t (the level-0 nodes), and
/// its standard deviation: post-processing, the checker's own figures.
fn factorized_total(
    r: &Release,
    stored: &BTreeMap<tree::NodeId, f64>,
    sigma: f64,
    t: u64,
) -> Result<(f64, f64), RunError> {
    let mut u = Vec::with_capacity(usize::try_from(t).unwrap_or(0));
    for j in 0..t {
        let v = stored.get(&(0, j)).ok_or_else(|| {
            RunError::Data(format!(
                "`{}`: the running total at slot {t} needs the coordinate of slot {}, which is not stored",
                r.name,
                j + 1
            ))
        })?;
        u.push(*v);
    }
    let dec = factorization::decoder(t);
    let total = factorization::running_total(&dec, &u, t)
        .ok_or_else(|| RunError::Data(format!("`{}`: no running total at slot {t}", r.name)))?;
    let var = factorization::variance_factors(t)
        .last()
        .copied()
        .unwrap_or(1.0);
    Ok((total, sigma * var.sqrt()))
}

/// `dpplan audit` and the Spark engine's `--explain` do not run a tree:
/// refuses the first selected release that is a cumulative count.
pub fn refuse<'a>(
    releases: impl IntoIterator<Item = &'a Release>,
    what: &str,
) -> Result<(), RunError> {
    match releases.into_iter().find(|r| r.cumulative.is_some()) {
        None => Ok(()),
        Some(r) => Err(RunError::Data(format!(
            "`{}` is a cumulative count ({}): {what} does not run its tree, which `dpplan run` runs slot by slot on the embedded CSV engine; nothing was charged (leave it out with --query)",
            r.name,
            if r.cumulative.as_ref().is_some_and(|c| !c.mechanism.is_tree()) {
                "the square-root factorization"
            } else {
                "the binary tree mechanism"
            }
        ))),
    }
}
