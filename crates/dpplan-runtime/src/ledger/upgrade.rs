//! Moving a ledger to a new plan: the guarantee the history was charged
//! under never changes, the budget is raised only deliberately, and the
//! history plus every release the new plan may make must fit the new
//! budget under its accountant.

use rusqlite::TransactionBehavior;

use super::store::{append, budget_in_force, current_plan, NewEntry};
use super::totals::{self, add_release, composed_history, plan_bound};
use super::{schema::intents_of, state, window_state};
use super::{Budget, EntryKind, Ledger, LedgerError, UpgradeValue};
use dpplan_plan::ExecutablePlan;

impl Ledger {
    /// Moves the ledger to a new plan: the ledger's history (every charged
    /// intent, under any earlier plan) plus every release the new plan may
    /// make must fit the new plan's budget under its accountant.
    ///
    /// A new plan with a larger budget (ε or δ) than the one in force is
    /// refused unless `raise_budget`: a budget is raised deliberately, and
    /// the `upgrade` entry records the old and the new one.
    pub fn upgrade(
        &mut self,
        plan: &ExecutablePlan,
        raise_budget: bool,
    ) -> Result<Option<UpgradeValue>, LedgerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current = current_plan(&tx)?;
        if current == plan.body_sha256 {
            return Ok(None);
        }
        // the guarantee never changes within a ledger; what else changed in
        // the contract is recorded
        let contract = plan.body.contract();
        let in_force = state::contract_in_force(&tx)?.ok_or(LedgerError::NoContract)?;
        let (guarantee, contract_changes): (Vec<_>, Vec<_>) = in_force
            .changes(&contract)
            .into_iter()
            .partition(|c| c.guarantee);
        if !guarantee.is_empty() {
            return Err(LedgerError::GuaranteeChanged { changes: guarantee });
        }
        let new_budget = Budget {
            epsilon: plan.body.privacy.budget_epsilon,
            delta: plan.body.privacy.budget_delta,
        };
        let old_budget = budget_in_force(&tx)?;
        let raised = match old_budget {
            Some(b) => new_budget.epsilon > b.epsilon || new_budget.delta > b.delta,
            None => true,
        };
        if raised && !raise_budget {
            return Err(LedgerError::BudgetRaise {
                old: old_budget.map(|b| (b.epsilon, b.delta)),
                new: (new_budget.epsilon, new_budget.delta),
            });
        }
        let (mut releases, charged) = composed_history(&tx, i64::MAX)?;
        totals::keyed_upgrade(&tx, plan)?;
        for r in &plan.body.releases {
            if r.cumulative.is_some()
                && !window_state::same_vector(&tx, r)?
                && intents_of(&tx, &r.name)? > 0
            {
                return Err(LedgerError::TreeChanged(r.name.clone()));
            }
            let count = match (&r.window, &r.cumulative) {
                // a tree already begun, unchanged: nothing more to compose
                (_, Some(_)) if window_state::same_vector(&tx, r)? => 0,
                // a new tree is one release of all its nodes
                (_, Some(_)) => 1,
                // the same vector release as the history's (the schedule
                // extended, the bounds kept): nothing more to compose
                (Some(_), None) if window_state::same_vector(&tx, r)? => 0,
                // a windowed schedule is one release over its windows
                (Some(_), None) => 1,
                (None, None) => r.schedule.slots,
            };
            for m in r.mechanisms() {
                add_release(&mut releases, (m, r.sample), count);
            }
        }
        let p = &plan.body.privacy;
        let bound = plan_bound(&releases, p.accountant, p.budget_delta).map_err(|e| {
            LedgerError::OverBudget(format!(
                "the ledger's history and the new plan cannot be accounted together: {e}"
            ))
        })?;
        if bound.epsilon > p.budget_epsilon * (1.0 + 1e-12) {
            return Err(LedgerError::OverBudget(format!(
                "the ledger's history ({charged} charged release(s)) plus the new plan spend ε = {} at δ = {} ({}), over the new plan's budget ε = {}; the upgrade is refused",
                bound.epsilon, bound.delta, bound.accountant, p.budget_epsilon
            )));
        }
        let upgrade = UpgradeValue {
            from_plan: current,
            history_releases: charged,
            epsilon: bound.epsilon,
            delta: bound.delta,
            accountant: bound.accountant.name().into(),
            budget_epsilon: new_budget.epsilon,
            budget_delta: Some(new_budget.delta),
            from_budget: old_budget,
            budget_raised: raised,
            contract: Some(contract),
            contract_changes,
        };
        append(
            &tx,
            NewEntry {
                // Invariant: plain data with string keys; cannot fail.
                value: Some(serde_json::to_string(&upgrade).expect("serialises")),
                ..NewEntry::new(EntryKind::Upgrade, &plan.body_sha256)
            },
        )?;
        tx.commit()?;
        // anchored before returning: nothing after it (a noise draw)
        // happens on an entry the anchor does not vouch for
        self.anchor()?;
        Ok(Some(upgrade))
    }
}
