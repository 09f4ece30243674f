//! Cumulative counts (the binary tree mechanism, docs/language.md
//! "Continual counting"): what the runtime runs of them so far.
//!
//! The checker accounts a cumulative count as ONE release of its tree's
//! nodes, and the executable plan carries the tree (`Release.cumulative`).
//! Running its slots as fresh counts of the whole history would spend
//! far more than that claim, and the tree's state (its noisy nodes, the
//! units' slots) is not kept in the ledger yet, so `run` and `audit`
//! refuse such a release before reading any data or touching the ledger:
//! nothing is charged and no ledger is created.

use dpplan_plan::Release;

use crate::RunError;

/// Refuses the first release of `releases` that is a cumulative count.
pub fn refuse<'a>(releases: impl IntoIterator<Item = &'a Release>) -> Result<(), RunError> {
    match releases.into_iter().find(|r| r.cumulative.is_some()) {
        None => Ok(()),
        Some(r) => Err(RunError::Data(format!(
            "`{}` is a cumulative count (the binary tree mechanism): this runtime does not run the tree yet, and running its slots as fresh counts would spend more than the plan claims; nothing was charged (leave it out with --query, or check it with `dpplan check` / `report`)",
            r.name
        ))),
    }
}
