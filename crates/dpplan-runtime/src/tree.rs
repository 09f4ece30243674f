//! The binary tree of a cumulative count, as the runtime walks it: which
//! nodes close at a slot, their exact counts from the slots' exact counts,
//! and the running total read from the stored noisy nodes.
//!
//! Slots are 1-based here, as in docs/language.md: slot t covers the rows
//! of [start + (t−1)·period, start + t·period). At slot t the node of level
//! l closes when 2ˡ divides t; it is node (l, t/2ˡ − 1) and covers slots
//! (t − 2ˡ, t]. Only the levels l < K (`Cumulative::levels`) are released,
//! so over T slots exactly Σ_l ⌊T/2ˡ⌋ nodes close, each once.
//!
//! [`Open`] keeps, per level, the exact count of the closed slots of that
//! level's open node: feeding it each slot's exact count in order gives
//! each closing node's exact count, with no slot read twice (a row counts
//! in the one slot it was read in). These sums are as private as the data:
//! they never go into the ledger; only the nodes' noisy values do.
//! [`running_total`] reads only stored noisy nodes (post-processing), by
//! the checker's estimator (`dpplan_mechanisms::tree::running_total`), so
//! the error the checker claims is the error of what runs.

use std::collections::BTreeMap;

use dpplan_mechanisms::tree as math;
use serde::{Deserialize, Serialize};

pub use dpplan_mechanisms::tree::{closing, NodeId};

/// Why a slot's count was refused by [`Open::close`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("slot {got} of the tree was fed after slot {last}: slots are counted once each, in order (slot {want} is next)")]
    OutOfOrder { got: u64, last: u64, want: u64 },
    #[error("slot {t} is beyond the tree's {slots} slots")]
    Beyond { t: u64, slots: u64 },
    #[error("a count of the tree overflowed")]
    Overflow,
    #[error("the running total at slot {t} needs node (level {level}, index {index}), which is not stored")]
    Missing { t: u64, level: u32, index: u64 },
}

/// The exact counts of the open nodes of a tree over `slots` slots with
/// `levels` released levels: `sums[l]` is the exact count of the slots
/// already closed in the level-l node that is still open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Open {
    pub slots: u64,
    pub levels: u32,
    /// The last slot fed (0: none yet).
    pub last: u64,
    pub sums: Vec<i128>,
}

impl Open {
    pub fn new(slots: u64, levels: u32) -> Open {
        Open {
            slots,
            levels,
            last: 0,
            sums: vec![0; levels as usize],
        }
    }

    /// Feeds slot `t`'s exact count (the next slot, `last + 1`): returns
    /// the nodes that close at `t` with their exact counts, lowest level
    /// first, and resets their sums. Refused out of order or beyond T.
    pub fn close(&mut self, t: u64, count: i128) -> Result<Vec<(NodeId, i128)>, TreeError> {
        if t > self.slots {
            return Err(TreeError::Beyond {
                t,
                slots: self.slots,
            });
        }
        if t != self.last + 1 {
            return Err(TreeError::OutOfOrder {
                got: t,
                last: self.last,
                want: self.last + 1,
            });
        }
        for s in &mut self.sums {
            *s = s.checked_add(count).ok_or(TreeError::Overflow)?;
        }
        let closed: Vec<(NodeId, i128)> = closing(t, self.levels)
            .into_iter()
            .map(|(l, j)| ((l, j), std::mem::take(&mut self.sums[l as usize])))
            .collect();
        self.last = t;
        Ok(closed)
    }
}

/// The running total released at slot `t` (1-based) from the stored noisy
/// nodes, by Honaker's online estimator for a node noise variance `s2`
/// (the checker's). Refused when a node it reads is not stored.
pub fn running_total(stored: &BTreeMap<NodeId, f64>, s2: f64, t: u64) -> Result<f64, TreeError> {
    running_total_with(stored, s2, t, &mut Estimates::default())
}

/// The estimates of the nodes a run has read so far, each computed once
/// (a closed node's estimate never changes): a run's totals over T slots
/// cost O(T), not O(T²).
#[derive(Debug, Default)]
pub struct Estimates(std::collections::HashMap<NodeId, f64>);

/// [`running_total`], with the estimates kept in `est` across a run's
/// slots; only nodes not estimated yet are checked for.
pub fn running_total_with(
    stored: &BTreeMap<NodeId, f64>,
    s2: f64,
    t: u64,
    est: &mut Estimates,
) -> Result<f64, TreeError> {
    for (l, j) in math::decomposition(t) {
        if let Some((level, index)) = first_missing(stored, est, (l, j)) {
            return Err(TreeError::Missing { t, level, index });
        }
    }
    let noisy = |l: u32, j: u64| stored[&(l, j)];
    Ok(math::running_total_memo(&noisy, s2, t, &mut est.0))
}

/// The first node of (l, j)'s subtree, top down, that is neither
/// estimated nor stored.
fn first_missing(
    stored: &BTreeMap<NodeId, f64>,
    est: &Estimates,
    (l, j): NodeId,
) -> Option<NodeId> {
    if est.0.contains_key(&(l, j)) {
        return None;
    }
    if !stored.contains_key(&(l, j)) {
        return Some((l, j));
    }
    if l == 0 {
        return None;
    }
    first_missing(stored, est, (l - 1, 2 * j))
        .or_else(|| first_missing(stored, est, (l - 1, 2 * j + 1)))
}

/// The nodes the estimate at `t` reads: every node of the subtrees of
/// t's dyadic decomposition (all of them closed by t).
pub fn needed(t: u64) -> Vec<NodeId> {
    let mut out = Vec::new();
    for (l, j) in math::decomposition(t) {
        for level in 0..=l {
            let width = l - level;
            out.extend(((j << width)..((j + 1) << width)).map(|i| (level, i)));
        }
    }
    out
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
