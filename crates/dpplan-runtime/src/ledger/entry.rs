//! A ledger entry: its kind, its fields, the typed values it carries, and
//! its hash.

use serde::{Deserialize, Serialize};

use super::{Budget, RunningTotals};

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// Entry 1: the plan, the schedule start and the budget.
    Open,
    /// A release's charge, durable before its noise is drawn.
    Intent,
    /// The released value that completes an intent.
    Value,
    /// A reviewer's correction of an entry (which stays as it was).
    Correction,
    /// The move to another plan, with the history accounted.
    Upgrade,
    /// A report frozen at sign-off: its hash and the exact accountant
    /// inputs of its claim ([`super::FrozenValue`]); the report's bytes are
    /// kept in the `frozen_reports` table (ledger format 2).
    FrozenReport,
    /// Periods of an `every` schedule that passed without a run: never
    /// released, charged nothing (ledger format 5). `slot` is the first,
    /// the value ([`SkipValue`]) the last and why.
    Skip,
    /// State a run bound to the chain in a ledger written by an earlier
    /// dpplan (ledger format 5): the contract in force, the unit key's
    /// fingerprint and the digests of the window state recorded so far
    /// ([`StateValue`]).
    State,
    /// A reviewer's ed25519 signature over a frozen report (ledger format
    /// 6; [`super::SignoffValue`]); `refers_to` is the report's entry.
    Signoff,
}

impl EntryKind {
    pub const ALL: [EntryKind; 9] = [
        EntryKind::Open,
        EntryKind::Intent,
        EntryKind::Value,
        EntryKind::Correction,
        EntryKind::Upgrade,
        EntryKind::FrozenReport,
        EntryKind::Skip,
        EntryKind::State,
        EntryKind::Signoff,
    ];

    /// The name stored in the ledger (and hashed).
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Open => "open",
            EntryKind::Intent => "intent",
            EntryKind::Value => "value",
            EntryKind::Correction => "correction",
            EntryKind::Upgrade => "upgrade",
            EntryKind::FrozenReport => "frozen_report",
            EntryKind::Skip => "skip",
            EntryKind::State => "state",
            EntryKind::Signoff => "signoff",
        }
    }

    pub fn from_name(name: &str) -> Option<EntryKind> {
        EntryKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl std::fmt::Display for EntryKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub seq: i64,
    pub kind: EntryKind,
    /// The plan in force when the entry was written.
    pub plan_hash: String,
    pub query: Option<String>,
    pub slot: Option<i64>,
    /// JSON: the mechanism and its exact parameters (intents).
    pub mechanism: Option<String>,
    /// Charged by this entry (intents only).
    pub epsilon: f64,
    pub delta: f64,
    /// Running totals of the charges (basic composition: Σε, Σδ).
    pub total_epsilon: f64,
    pub total_delta: f64,
    /// JSON: the running totals under every accountant (intents), the
    /// released value (values), a reason (corrections), the accounting
    /// (upgrades), the schedule start (open), the report's hash and claim
    /// (frozen reports).
    pub value: Option<String>,
    /// The entry this one completes or corrects (a correction of a frozen
    /// report is an addendum to it).
    pub refers_to: Option<i64>,
    /// UTC, RFC 3339.
    pub time: String,
    pub version: String,
    pub prev_hash: String,
    pub hash: String,
}

/// The hashed content of an entry (everything but the chain fields).
#[derive(Serialize)]
struct Content<'a> {
    kind: &'a str,
    plan_hash: &'a str,
    query: &'a Option<String>,
    slot: Option<i64>,
    mechanism: &'a Option<String>,
    epsilon: f64,
    delta: f64,
    value: &'a Option<String>,
    refers_to: Option<i64>,
    time: &'a str,
    version: &'a str,
}

/// The `value` of an intent entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentValue {
    pub running_totals: RunningTotals,
    /// A cumulative count's slot: the noisy nodes of its tree that close
    /// at this slot, drawn and stored in the intent's own transaction
    /// (absent for every other intent, whose JSON is unchanged). Released
    /// output of the tree's one charged release: a later slot reads them,
    /// and never draws them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_nodes: Option<Vec<TreeNode>>,
    /// A windowed query's or a tree's intent (ledger format 5): the
    /// fingerprint of the unit key its units were hashed with (and a
    /// tree's exact state is authenticated with), so that a replaced key
    /// is found ([`super::key_fingerprint`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub units_key_sha256: Option<String>,
    /// The digest of the window-state rows this intent adds (its units'
    /// keyed hashes, sorted; [`super::units_digest`]), so that a row
    /// removed or added behind the runtime's back is found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_units_sha256: Option<String>,
    /// The ledger's whole history composed so far, this release included
    /// (ledger format 6): every distinct mechanism charged under any plan,
    /// in the order it first appeared, with how many times it is composed
    /// (a vector release, a windowed query's or a tree's, once). What the
    /// running totals were computed from: the next intent adds its release
    /// to it instead of re-reading every earlier intent, and a verification
    /// checks it against the chain (absent in intents written before
    /// format 6: the first intent after them composes the history afresh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub composed: Option<Vec<dpplan_accounting::Release>>,
}

/// A noisy node of a cumulative count's tree: level l, index j (it covers
/// the 1-based slots (j·2ˡ, (j+1)·2ˡ]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TreeNode {
    pub level: u32,
    pub index: u64,
    pub value: f64,
}

/// The `value` of an upgrade entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpgradeValue {
    /// The plan in force before.
    pub from_plan: String,
    /// Intents charged before the upgrade (under any plan).
    pub history_releases: u64,
    /// The history plus every release of the new plan, composed.
    pub epsilon: f64,
    pub delta: f64,
    pub accountant: String,
    /// The new plan's budget.
    pub budget_epsilon: f64,
    /// Absent in upgrades written by an earlier dpplan.
    #[serde(default)]
    pub budget_delta: Option<f64>,
    /// The budget in force before (absent when the ledger never recorded
    /// it).
    #[serde(default)]
    pub from_budget: Option<Budget>,
    /// True when the new budget is larger (`--raise-budget`).
    #[serde(default)]
    pub budget_raised: bool,
    /// The new plan's contract (absent in upgrades written by an earlier
    /// dpplan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<dpplan_vocab::contract::Contract>,
    /// What changed in the contract besides its guarantee (which an
    /// upgrade never changes): contribution bounds, clamps, domains,
    /// horizons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contract_changes: Vec<dpplan_vocab::contract::ContractChange>,
}

/// The `value` of a state entry: what a ledger written by an earlier
/// dpplan had not bound to its chain, recorded by the first run of the
/// plan in force (trust on first use: tampering before it is not found).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateValue {
    pub contract: dpplan_vocab::contract::Contract,
    /// The unit key's fingerprint, when the key exists.
    pub units_key_sha256: Option<String>,
    /// Per intent (by sequence number) that recorded window state, the
    /// digest of its rows.
    pub window_units: std::collections::BTreeMap<i64, String>,
}

/// The `value` of a skip entry: the last slot skipped (the first is the
/// entry's `slot`) and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkipValue {
    pub through: u64,
    pub reason: String,
}

/// The `value` of a correction entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectionValue {
    pub reason: String,
}

impl Entry {
    /// The running totals an intent recorded (`None` for other entries, or
    /// an intent written before they were recorded).
    pub fn running_totals(&self) -> Option<RunningTotals> {
        if self.kind != EntryKind::Intent {
            return None;
        }
        let v: IntentValue = serde_json::from_str(self.value.as_deref()?).ok()?;
        Some(v.running_totals)
    }

    /// The tree nodes an intent of a cumulative count stored (`None` for
    /// other entries).
    pub fn tree_nodes(&self) -> Option<Vec<TreeNode>> {
        if self.kind != EntryKind::Intent {
            return None;
        }
        #[derive(Deserialize)]
        struct Nodes {
            tree_nodes: Option<Vec<TreeNode>>,
        }
        let v: Nodes = serde_json::from_str(self.value.as_deref()?).ok()?;
        v.tree_nodes
    }

    /// The value of an intent (`None` for other entries, or an unreadable
    /// one).
    pub fn intent_value(&self) -> Option<IntentValue> {
        if self.kind != EntryKind::Intent {
            return None;
        }
        serde_json::from_str(self.value.as_deref()?).ok()
    }

    /// The value of an upgrade (`None` for other entries, or an
    /// unreadable one).
    pub fn upgrade_value(&self) -> Option<UpgradeValue> {
        if self.kind != EntryKind::Upgrade {
            return None;
        }
        serde_json::from_str(self.value.as_deref()?).ok()
    }

    /// The value of a state entry (`None` for other entries, or an
    /// unreadable one).
    pub fn state_value(&self) -> Option<StateValue> {
        if self.kind != EntryKind::State {
            return None;
        }
        serde_json::from_str(self.value.as_deref()?).ok()
    }

    /// The slots a skip entry records, first and last (`None` for other
    /// entries, or an unreadable one).
    pub fn skipped(&self) -> Option<(u64, u64)> {
        if self.kind != EntryKind::Skip {
            return None;
        }
        let v: SkipValue = serde_json::from_str(self.value.as_deref()?).ok()?;
        let from = u64::try_from(self.slot?).ok()?;
        (v.through >= from).then_some((from, v.through))
    }

    /// The reason a correction gives (`None` for other entries).
    pub fn correction_reason(&self) -> Option<String> {
        if self.kind != EntryKind::Correction {
            return None;
        }
        let v: CorrectionValue = serde_json::from_str(self.value.as_deref()?).ok()?;
        Some(v.reason)
    }

    pub fn compute_hash(&self) -> String {
        let content = serde_json::to_string(&Content {
            kind: self.kind.as_str(),
            plan_hash: &self.plan_hash,
            query: &self.query,
            slot: self.slot,
            mechanism: &self.mechanism,
            epsilon: self.epsilon,
            delta: self.delta,
            value: &self.value,
            refers_to: self.refers_to,
            time: &self.time,
            version: &self.version,
        })
        // Invariant: plain fields with string keys; serialising to a String
        // cannot fail.
        .expect("entry content serialises");
        let hashed = format!(
            "{}\n{:016x}\n{:016x}\n{content}\n{}",
            self.seq,
            self.total_epsilon.to_bits(),
            self.total_delta.to_bits(),
            self.prev_hash
        );
        dpplan_plan::sha256_hex(hashed.as_bytes())
    }
}
