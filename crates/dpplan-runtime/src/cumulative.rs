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

/// The per-slot bounds a runtime of the tree enforces, as the window of
/// one slot (the windowed runtime's machinery: at most `rows_per_window`
/// rows of a unit in a slot, a unit kept in at most `windows_per_unit`
/// slots, kept across runs by the ledger's horizon state).
///
/// The claim assumes a unit has at most r rows in a slot, rows in at most
/// W slots, and at most R = `rows_per_unit` rows in all (M = min(R, W·r),
/// `dpplan_check::tree`). Per-slot bounds alone give W·r, above R when
/// R < W·r, so the slots a unit is kept in are capped at
/// W′ = min(W, ⌊R/r⌋) (≥ 1, as r ≤ R): its rows are then at most
/// W′·r ≤ min(W·r, R) = M in all, at most r in a slot and in at most W
/// slots, every assumption of the claim, with no per-unit row count kept
/// across runs. (When r does not divide R this keeps fewer rows than the
/// claim allows: sound, not tight; a per-unit row count in the horizon
/// state would keep up to R.) A row- or event-level unit is one row: no
/// per-unit state (W′ = r = 1).
pub fn slot_window(c: &dpplan_plan::Cumulative, rows_per_unit: Option<u64>) -> dpplan_plan::Window {
    let r = c.rows_per_window.max(1);
    let w = match rows_per_unit {
        Some(rows) => c.windows_per_unit.min(rows / r).max(1),
        None => c.windows_per_unit.max(1),
    };
    dpplan_plan::Window {
        column: c.column.clone(),
        seconds: c.seconds,
        windows_per_unit: w,
        rows_per_window: r,
    }
}

#[cfg(test)]
mod tests {
    use dpplan_check::tree::{add_remove, TreeBounds};

    use super::*;

    fn tree(slots: u64, w: u64, r: u64) -> dpplan_plan::Cumulative {
        dpplan_plan::Cumulative {
            column: "t".into(),
            seconds: 86_400.0,
            slots,
            levels: 64 - slots.leading_zeros(),
            nodes: 0,
            windows_per_unit: w,
            rows_per_window: r,
        }
    }

    /// Whatever a unit keeps under the enforced bounds (W′ slots, r rows
    /// each, so W′·r rows at most) has tree norms within the claim's, for
    /// every T ≤ 40, r ≤ 3, W ≤ T and R from r to W·r + 1 (the claim's
    /// norms are exact for their bounds, checked by brute force in
    /// dpplan-check). Negative control: the per-slot bounds alone (W slots
    /// of r rows) exceed the claim whenever R < W·r.
    #[test]
    fn the_enforced_slot_bounds_stay_within_the_claim() {
        let mut naive_exceeds = 0;
        for slots in 1..=40u64 {
            for r in 1..=3u64 {
                for w in 1..=slots {
                    for rows in r..=w * r + 1 {
                        let claim = add_remove(TreeBounds {
                            slots,
                            windows: w,
                            rows_per_slot: r,
                            rows,
                        });
                        let win = slot_window(&tree(slots, w, r), Some(rows));
                        assert_eq!(win.rows_per_window, r);
                        assert!(win.windows_per_unit <= w && win.windows_per_unit * r <= rows);
                        let enforced = add_remove(TreeBounds {
                            slots,
                            windows: win.windows_per_unit,
                            rows_per_slot: r,
                            rows: win.windows_per_unit * r,
                        });
                        assert!(
                            enforced.0 <= claim.0 && enforced.1 <= claim.1,
                            "T={slots} W={w} r={r} R={rows}: {enforced:?} > {claim:?}"
                        );
                        let naive = add_remove(TreeBounds {
                            slots,
                            windows: w,
                            rows_per_slot: r,
                            rows: w * r,
                        });
                        if rows < w * r {
                            assert!(naive.0 > claim.0, "T={slots} W={w} r={r} R={rows}");
                            naive_exceeds += 1;
                        }
                    }
                }
            }
        }
        assert!(naive_exceeds > 1000, "{naive_exceeds}");
    }

    /// Tight when r divides R: the enforced bounds reach the claim exactly.
    #[test]
    fn the_enforced_slot_bounds_are_the_claim_when_r_divides_rows() {
        let win = slot_window(&tree(365, 365, 1), Some(2));
        assert_eq!((win.windows_per_unit, win.rows_per_window), (2, 1));
        let win = slot_window(&tree(365, 10, 2), Some(6));
        assert_eq!((win.windows_per_unit, win.rows_per_window), (3, 2));
        // a row-level unit: one row in one slot
        let win = slot_window(&tree(365, 1, 1), None);
        assert_eq!((win.windows_per_unit, win.rows_per_window), (1, 1));
    }
}
