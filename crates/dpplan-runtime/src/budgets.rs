//! A run's shared budgets ([`crate::RunOptions::budgets`]): each fresh
//! release whose dataset reads a shared budget's source is charged to its
//! budget ledger ([`crate::ledger::budget`]) before the release's intent is
//! written in the plan's own ledger, so before any noise is drawn. A
//! refusal refuses the release (nothing drawn, nothing charged in the
//! plan's ledger); a damaged budget ledger stops the run.

use std::collections::BTreeMap;
use std::path::PathBuf;

use dpplan_plan::{ExecutablePlan, Release};
use dpplan_vocab::paths::canonical;

use crate::ledger::budget::{BudgetLedger, Reads, SharedBudget};
use crate::ledger::{Ledger, LedgerError};
use crate::{requests, RunError, RunOptions};

/// The budget ledgers a run opened (lazily, at their first charge).
pub(crate) struct Charges<'a> {
    budgets: &'a [SharedBudget],
    open: BTreeMap<usize, BudgetLedger>,
    /// Each budget's source, as compared.
    sources: Vec<PathBuf>,
    /// The run's time: what a release without a window reads up to.
    at: i64,
}

impl<'a> Charges<'a> {
    /// The budgets whose source a dataset of `plan` reads; each budget
    /// ledger that exists is opened and verified now, before the run reads
    /// data or creates its own ledger: a damaged one stops the run before
    /// anything is written.
    pub(crate) fn new(
        plan: &ExecutablePlan,
        opts: &'a RunOptions,
        at: i64,
    ) -> Result<Self, RunError> {
        let mut c = Charges {
            budgets: &opts.budgets,
            open: BTreeMap::new(),
            sources: opts.budgets.iter().map(|b| canonical(&b.path)).collect(),
            at,
        };
        let mut read = Vec::new();
        for ds in plan.body.datasets.values() {
            if let Ok(p) = requests::source_path(ds, opts) {
                read.push(canonical(&p));
            }
        }
        for (i, b) in c.budgets.iter().enumerate() {
            if !read.contains(&c.sources[i]) {
                continue;
            }
            if b.ledger.exists() {
                c.open.insert(i, BudgetLedger::open_to_charge(&b.ledger)?);
            } else {
                crate::ledger::refuse_orphan_anchor(&b.ledger)?;
            }
        }
        Ok(c)
    }

    /// What slot `slot` of `r` reads, in time: its window (a tree's slot's),
    /// or everything up to the run's time.
    fn reads(&self, ledger: &Ledger, r: &Release, slot: u64) -> Result<Reads, RunError> {
        let window = r
            .window
            .clone()
            .or_else(|| r.cumulative.as_ref().map(|c| c.slot_window()));
        let Some(w) = window else {
            return Ok(Reads::UpTo(self.at));
        };
        let start = match r.schedule.start {
            Some(s) => s,
            None => ledger.open_info()?.schedule_start,
        };
        let (lo, hi) = crate::window::bounds(start, w.seconds, slot).ok_or_else(|| {
            RunError::Data(format!(
                "`{}`: the window of slot {slot} is not a whole number of seconds within the years 1–9999",
                r.name
            ))
        })?;
        Ok(Reads::Window(lo, hi))
    }

    /// Charges every shared budget whose source release `r` reads; the
    /// reason when one refuses it. Budgets charged before a refusing one
    /// stay charged (over-counted: sound).
    pub(crate) fn charge(
        &mut self,
        ledger: &Ledger,
        plan: &ExecutablePlan,
        opts: &RunOptions,
        r: &Release,
        slot: u64,
    ) -> Result<Option<String>, RunError> {
        if self.budgets.is_empty() {
            return Ok(None);
        }
        let ds = plan
            .body
            .datasets
            .get(&r.dataset)
            .ok_or_else(|| RunError::Data(format!("no dataset `{}`", r.dataset)))?;
        let read = canonical(&requests::source_path(ds, opts)?);
        let reads = self.reads(ledger, r, slot)?;
        for (i, b) in self.budgets.iter().enumerate() {
            if self.sources[i] != read {
                continue;
            }
            let l = match self.open.entry(i) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(BudgetLedger::open_for(b, &plan.body.guarantee())?)
                }
            };
            // the plan ledger's opening entry: which ledger's windows
            let plan_ledger = ledger
                .entry(1)?
                .ok_or_else(|| LedgerError::Corrupt("no opening entry".into()))?
                .hash;
            let charged = l
                .check_budget(b)
                .and_then(|()| l.charge(plan, &plan_ledger, r, (slot, reads)));
            match charged {
                Ok(_) => {}
                Err(LedgerError::OverBudget(why)) => return Ok(Some(why)),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(None)
    }
}
