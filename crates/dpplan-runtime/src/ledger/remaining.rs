//! The budget left after each intent of a ledger's history (`dpplan
//! ledger show`): the budget in force at that entry (the opening's or the
//! latest upgrade's) minus the running total recorded with it.

use serde::Serialize;

use super::{Budget, Entry, EntryKind, OpenInfo, UpgradeValue};

/// The budget left after an intent: the ε of the budget in force at that
/// entry minus the running total under the plan's accountant (at the
/// budget's δ).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Remaining {
    pub epsilon: f64,
    pub budget_epsilon: f64,
    /// The accountant of the running total (the plan's; for `best`, the
    /// tightest at that entry).
    pub accountant: String,
    pub at_delta: f64,
}

/// For each entry, the budget left after it (intents whose running totals
/// and budget in force were recorded; `None` for the others).
pub fn remaining_budget(entries: &[Entry]) -> Vec<Option<Remaining>> {
    let mut budget: Option<Budget> = None;
    entries
        .iter()
        .map(|e| {
            let value = e.value.as_deref().unwrap_or("");
            match e.kind {
                EntryKind::Open => {
                    budget = serde_json::from_str::<OpenInfo>(value)
                        .ok()
                        .and_then(|o| o.budget);
                }
                EntryKind::Upgrade => {
                    budget = serde_json::from_str::<UpgradeValue>(value)
                        .ok()
                        .map(|u| Budget {
                            epsilon: u.budget_epsilon,
                            delta: u.budget_delta.unwrap_or(f64::NAN),
                        });
                }
                _ => {}
            }
            let t = e.running_totals()?;
            let b = budget?;
            let spent = t.plan.epsilon?;
            Some(Remaining {
                epsilon: b.epsilon - spent,
                budget_epsilon: b.epsilon,
                accountant: t.plan.accountant.map_or("", |a| a.name()).to_string(),
                at_delta: t.at_delta,
            })
        })
        .collect()
}
