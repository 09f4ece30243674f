use std::collections::BTreeMap;

use super::*;

/// A deterministic, irregular count for slot t.
fn leaf(t: u64) -> i128 {
    i128::from((t * 7919 + 13) % 23) - 3
}

/// Feeds slots 1..=T and checks every closing node's count against the
/// direct sum over the slots it covers, (t − 2ˡ, t]; over T slots every
/// node of levels < K = ⌊log₂ T⌋ + 1 closes exactly once, Σ_l ⌊T/2ˡ⌋ in
/// all (independent: counted here, not by the checker's formula).
#[test]
fn every_node_closes_once_with_the_exact_count_of_its_slots() {
    for slots in [1u64, 2, 3, 5, 8, 13, 16, 31, 64, 100, 365] {
        let levels = 64 - slots.leading_zeros();
        let mut open = Open::new(slots, levels);
        let mut seen = BTreeMap::new();
        for t in 1..=slots {
            for ((l, j), exact) in open.close(t, leaf(t)).unwrap() {
                let width = 1u64 << l;
                assert_eq!(j, t / width - 1, "T={slots} t={t} l={l}");
                let direct: i128 = (t - width + 1..=t).map(leaf).sum();
                assert_eq!(exact, direct, "T={slots} t={t} l={l}");
                assert!(seen.insert((l, j), t).is_none(), "({l},{j}) twice");
            }
        }
        let mut expected = 0;
        let mut width = 1;
        while width <= slots {
            expected += slots / width;
            width *= 2;
        }
        assert_eq!(seen.len() as u64, expected, "T={slots}");
        assert_eq!(seen.len() as u64, math::nodes(slots));
    }
}

/// Slots are fed once each, in order, never beyond T; a refused slot
/// changes nothing (negative control: the right slot is then accepted).
#[test]
fn slots_out_of_order_again_or_beyond_the_tree_are_refused() {
    let mut open = Open::new(4, 3);
    open.close(1, 5).unwrap();
    let before = open.clone();
    assert!(matches!(
        open.close(1, 5),
        Err(TreeError::OutOfOrder {
            got: 1,
            last: 1,
            want: 2
        })
    ));
    assert!(matches!(
        open.close(3, 5),
        Err(TreeError::OutOfOrder { .. })
    ));
    assert_eq!(open, before);
    assert_eq!(open.close(2, 1).unwrap(), vec![((0, 1), 1), ((1, 0), 6)]);
    open.close(3, 2).unwrap();
    assert_eq!(
        open.close(4, 3).unwrap(),
        vec![((0, 3), 3), ((1, 1), 5), ((2, 0), 11)]
    );
    assert!(matches!(
        open.close(5, 1),
        Err(TreeError::Beyond { t: 5, slots: 4 })
    ));
    let mut full = Open::new(2, 2);
    full.close(1, i128::MAX).unwrap();
    assert_eq!(full.close(2, 1), Err(TreeError::Overflow));
}

/// The nodes closing at t: one per trailing zero of t plus one, capped at
/// K levels (at T = 12, K = 4: slot 8 closes levels 0–3, not 4).
#[test]
fn the_nodes_closing_at_a_slot_follow_its_trailing_zeros() {
    assert_eq!(closing(1, 4), vec![(0, 0)]);
    assert_eq!(closing(6, 4), vec![(0, 5), (1, 2)]);
    assert_eq!(closing(8, 4), vec![(0, 7), (1, 3), (2, 1), (3, 0)]);
    assert_eq!(closing(16, 4).len(), 4);
    assert!(closing(0, 4).is_empty());
}

/// With every stored node exact (no noise), the running total at t is the
/// exact count of the first t slots; with noisy nodes it is the checker's
/// estimator on the same values; a missing node is refused; changing one
/// stored node moves the totals from the slot it closed at on, never
/// before (online: negative control).
#[test]
fn the_running_total_reads_the_stored_nodes_only() {
    let slots = 37u64;
    let levels = 64 - slots.leading_zeros();
    let mut open = Open::new(slots, levels);
    let mut stored = BTreeMap::new();
    let mut noisy = BTreeMap::new();
    let noise = |l: u32, j: u64| ((l as f64 + 1.0) * 0.37 + j as f64 * 0.11).sin() * 5.0;
    let s2 = 2.0 * 3.0 * 3.0;
    for t in 1..=slots {
        for ((l, j), exact) in open.close(t, leaf(t)).unwrap() {
            stored.insert((l, j), exact as f64);
            noisy.insert((l, j), exact as f64 + noise(l, j));
        }
        let exact: i128 = (1..=t).map(leaf).sum();
        let total = running_total(&stored, s2, t).unwrap();
        assert!(
            (total - exact as f64).abs() < 1e-9,
            "t={t}: {total} vs {exact}"
        );
        let f = |l: u32, j: u64| noisy[&(l, j)];
        assert_eq!(
            running_total(&noisy, s2, t).unwrap(),
            math::running_total(&f, s2, t)
        );
        // it reads only nodes inside the first t slots
        for (l, j) in needed(t) {
            assert!((j + 1) << l <= t, "t={t} reads ({l},{j})");
        }
    }
    let mut without = noisy.clone();
    without.remove(&(2, 1));
    assert_eq!(
        running_total(&without, s2, 12),
        Err(TreeError::Missing {
            t: 12,
            level: 2,
            index: 1
        })
    );
    // node (2, 1) covers slots 5–8 and closes at 8
    let mut moved = noisy.clone();
    *moved.get_mut(&(2, 1)).unwrap() += 100.0;
    for t in 1..=slots {
        let (a, b) = (
            running_total(&noisy, s2, t).unwrap(),
            running_total(&moved, s2, t).unwrap(),
        );
        assert_eq!(a == b, t < 8, "t={t}");
    }
}
