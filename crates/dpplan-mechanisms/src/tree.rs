//! Continual counting by the binary tree mechanism (Dwork, Naor, Pitassi
//! and Rothblum 2010; Chan, Shi and Song 2011): the sensitivity of the
//! whole tree and the error of each running total.
//!
//! A `cumulative count(d)` with a schedule of `T` slots releases, at slot
//! `t` (1-based), the number of rows whose time lies in the first `t`
//! slots. Instead of `T` fresh counts over the whole history, it releases
//! the dyadic nodes of a binary tree over the slots: the node of level `l`
//! and index `j` counts the rows of slots `[j·2ˡ, (j+1)·2ˡ)` and is released
//! (with independent noise) at the slot where it closes. Only the nodes
//! that close within the schedule are ever released: `n_l = ⌊T / 2ˡ⌋` at
//! level `l`, for `l = 0 … K−1` with `K = ⌊log₂ T⌋ + 1` levels (the level
//! `⌈log₂ T⌉` of a full tree over `2^⌈log₂ T⌉` leaves closes after the
//! schedule when `T` is not a power of two, so a row lies in at most `K`
//! released nodes, `⌈log₂ T⌉ + 1` when `T` is a power of two). The nodes
//! together are ONE vector release; the running total at `t` is
//! post-processing of the nodes closed by `t`.
//!
//! **Sensitivity.** One unit has at most `M = min(R, W·r)` rows
//! (`rows_per_unit R`, `windows_per_unit W ≤ T`, `rows_per_window r ≤ R`),
//! at most `r` in one slot. At level `l` a node spans `2ˡ` slots, so it
//! holds at most `c_l = r·2ˡ` of the unit's rows, and the released nodes
//! of that level together at most `M_l = min(M, c_l·n_l)`. The unit's
//! rows packed into its first slots (`r` per slot from slot 0) reach every
//! one of these maxima at once: at each level they fill whole nodes from
//! the first one, and a filled-first vector of node counts majorises every
//! other vector with the same caps and total (so it maximises the sum of
//! squares as well as the sum). Hence, under add/remove,
//!
//! * `L1 = Σ_l M_l` (`K·M` when the unit's rows fit in the first
//!   `2^(K−1)` slots),
//! * `L2² = Σ_l (⌊M_l / c_l⌋·c_l² + (M_l mod c_l)²)`,
//!
//! both exact (a placement reaches them). Under `replace` a unit's rows
//! are exchanged for another placement `y` of the same shape; both node
//! vectors are non-negative, so `‖x − y‖₁ ≤ ‖x‖₁ + ‖y‖₁` and
//! `‖x − y‖₂² ≤ ‖x‖₂² + ‖y‖₂²`: L1 doubles and L2 grows by √2 (sound, not
//! always reached: the top nodes both placements share cancel). A row- or
//! event-level unit is one row (`M = r = 1`). The brute-force tests below
//! enumerate every placement for small `T` and check both claims.
//!
//! **Error.** Each node carries independent noise of variance `s²` (σ² for
//! Gaussian noise, 2b² for Laplace). The running total at `t` is the sum
//! of the nodes of the dyadic decomposition of `[0, t)`: one per set bit
//! of `t`, `popcount(t)` nodes (the plain binary mechanism). dpplan uses
//! the online variant of Honaker's estimator (Honaker 2015, "Efficient use
//! of differentially private binary trees"): every node closed by `t` is
//! re-estimated bottom-up as the inverse-variance weighted mean of its own
//! noisy value and the sum of its two children's estimates, so a level-`l`
//! estimate has variance `v_0 = s²`, `v_l = s²·2v_{l−1} / (s² + 2v_{l−1})`
//! (< s² for l ≥ 1). The estimate at `t` sums the estimates of its
//! decomposition's nodes, whose subtrees are disjoint (independent): its
//! variance is `Σ_{l ∈ bits(t)} v_l`. It only reads nodes closed by `t`
//! (online) and is unbiased; it is post-processing, so it costs nothing.

use dpplan_vocab::Adjacency;

use crate::sensitivity::{fmt_num, Derived, UnitBound};

/// The shape of a unit's contribution to a cumulative count's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeBounds {
    /// T: the schedule's slots (the tree's leaves).
    pub slots: u64,
    /// W: the slots one unit may have rows in (at most T).
    pub windows: u64,
    /// r: the rows of one unit in one slot.
    pub rows_per_slot: u64,
    /// R: the rows of one unit in all (rows_per_unit).
    pub rows: u64,
}

impl TreeBounds {
    /// M: the most rows one unit has over the schedule.
    pub fn mass(&self) -> u64 {
        let w = self.windows.min(self.slots).max(1);
        let r = self.rows_per_slot.max(1);
        self.rows.max(1).min(w.saturating_mul(r))
    }
}

/// K = ⌊log₂ T⌋ + 1: the levels with at least one node closing within the
/// schedule (0 for T = 0).
pub fn levels(slots: u64) -> u32 {
    64 - slots.leading_zeros()
}

/// n_l = ⌊T / 2ˡ⌋: the released nodes of level `l`.
pub fn nodes_at(slots: u64, level: u32) -> u64 {
    slots >> level
}

/// The nodes released over the whole schedule: Σ_l ⌊T / 2ˡ⌋ (= 2T −
/// popcount(T)).
pub fn nodes(slots: u64) -> u64 {
    (0..levels(slots)).map(|l| nodes_at(slots, l)).sum()
}

/// The nodes of the dyadic decomposition of the first `t` slots, as
/// (level, index), highest level first: one per set bit of `t`.
pub fn decomposition(t: u64) -> Vec<(u32, u64)> {
    let mut out = Vec::with_capacity(t.count_ones() as usize);
    let mut start = 0u64;
    for l in (0..levels(t)).rev() {
        if t >> l & 1 == 1 {
            out.push((l, start >> l));
            start += 1 << l;
        }
    }
    out
}

/// The most rows of one unit in the released nodes of each level, and the
/// node cap `c_l = r·2ˡ`, for l = 0 … K−1.
fn per_level(b: TreeBounds) -> impl Iterator<Item = (u128, u128)> {
    let m = u128::from(b.mass());
    let r = u128::from(b.rows_per_slot.max(1));
    (0..levels(b.slots)).map(move |l| {
        let cap = r << l;
        let released = cap.saturating_mul(u128::from(nodes_at(b.slots, l)));
        (m.min(released), cap)
    })
}

/// (L1, L2²) of the tree under add/remove, exact.
pub fn add_remove(b: TreeBounds) -> (u128, u128) {
    per_level(b).fold((0, 0), |(l1, l2sq), (ml, cap)| {
        let (q, rem) = (ml / cap, ml % cap);
        (l1 + ml, l2sq + q * cap * cap + rem * rem)
    })
}

/// The sensitivity of the whole tree as one vector release, with its
/// derivation in words.
pub fn derived(unit: UnitBound, adjacency: Adjacency, b: TreeBounds) -> Derived {
    let (l1, l2sq) = add_remove(b);
    let k = levels(b.slots);
    let m = b.mass();
    let mut steps = vec![explain(unit.user, b, k, m)];
    steps.push(format!(
        "add/remove: the unit's rows packed {r} per slot from the first slot fill whole nodes at every level, which maximises both norms (a filled-first vector of node counts majorises every other); per level the released nodes hold at most min(M, r·2ˡ·⌊T/2ˡ⌋) of them: L1 = {l1}, L2 = √{l2sq} = {}",
        fmt_num((l2sq as f64).sqrt()),
        r = b.rows_per_slot.max(1),
    ));
    let (l1, l2) = match adjacency {
        Adjacency::AddRemove => (l1 as f64, (l2sq as f64).sqrt()),
        Adjacency::Replace => {
            // the add/remove L1, before the name is the replace one's
            let ar_l1 = l1;
            // the search once, for the norms and for the words
            let tree = replace_by_tree(b);
            let (r1, r2sq) = smaller(replace_by_level(b), tree);
            let (l1, l2) = (r1 as f64, (r2sq as f64).sqrt());
            let by_tree = if tree.is_some() {
                format!(
                    "; and tree by tree (the released nodes are {} perfect trees, one per set bit of T, and in each every level's nodes sum to exactly the rows x and y have there, so where both share a tree's top nodes their rows cancel), maximised over how x and y split their rows between the trees; each norm the smaller of the two",
                    forest(b.slots).len()
                )
            } else {
                format!(
                    " (the tree-by-tree bound is not searched at M = {}: more than 2·10⁷ steps)",
                    b.mass()
                )
            };
            steps.push(format!(
                "replace: the unit's placement x is exchanged for another y; level by level both node vectors are non-negative, at most r·2ˡ per node, M in all and in at most min(W, ⌊T/2ˡ⌋) nodes, and the worst pair of such vectors has disjoint supports (where both touch a node, lowering the smaller to 0 only widens the gap), so each level's share is the best split of its nodes between the two (twice the add/remove share where there is room, less on the top levels' few nodes){by_tree}: L1 = {}, L2 = {} (≤ 2 × {} and √2 × {})",
                fmt_num(l1),
                fmt_num(l2),
                fmt_num(ar_l1 as f64),
                fmt_num((l2sq as f64).sqrt()),
            ));
            (l1, l2)
        }
    };
    let factor = if adjacency == Adjacency::Replace {
        2
    } else {
        1
    };
    let touched: u64 = (0..k)
        .map(|l| nodes_at(b.slots, l).min(factor * b.windows.max(1)))
        .sum();
    Derived {
        l1,
        l2,
        coords: touched,
        // a node holds at most M of a unit's rows, and under replace
        // |xₙ − yₙ| ≤ max(xₙ, yₙ) ≤ M as well
        linf: m as f64,
        steps,
    }
}

/// (L1, L2²) of the tree under replace: the smaller of two sound bounds,
/// each norm on its own — the levels one by one ([`replace_by_level`])
/// and the trees one by one ([`replace_by_tree`], when its search is
/// small enough).
pub fn replace(b: TreeBounds) -> (u128, u128) {
    smaller(replace_by_level(b), replace_by_tree(b))
}

/// Each norm the smaller of the level-by-level bound and the tree-by-tree
/// one, when there is one.
fn smaller((l1, l2sq): (u128, u128), by_tree: Option<(u128, u128)>) -> (u128, u128) {
    match by_tree {
        Some((t1, t2sq)) => (l1.min(t1), l2sq.min(t2sq)),
        None => (l1, l2sq),
    }
}

/// The released nodes as a forest: one perfect tree per set bit h of T,
/// of height h (levels 0 … h, 2^h slots), the tallest first. A node of
/// level l and index j closes within the schedule iff (j + 1)·2ˡ ≤ T; the
/// first 2^h₁ slots (h₁ the top bit) hold every released node of level ≤
/// h₁ that starts there and no node of a higher level closes, and the
/// rest, T − 2^h₁ < 2^h₁ slots starting at a multiple of every 2ˡ with
/// l ≤ h₁, is the same structure again.
pub fn forest(slots: u64) -> Vec<u32> {
    (0..64u32).rev().filter(|&h| slots >> h & 1 == 1).collect()
}

/// The largest search [`replace_by_tree`] runs: (M + 1)⁴ × trees.
const TREE_SEARCH: u128 = 20_000_000;

/// (L1, L2²) under replace, bounded tree by tree: a unit's placements x
/// and y put masses a_k and b_k in tree k (Σ a_k ≤ M, Σ b_k ≤ M, each at
/// most r·2^h_k), and at every level of a tree the nodes partition its
/// slots, so the level's node vectors of x and y sum to exactly a_k and
/// b_k ([`level_bound`] bounds such a pair). Summed over the tree's levels
/// (one table per tree) and maximised over the split of the masses (a search
/// over (M + 1)² states per tree), it bounds every pair: each pair's norm is the sum of
/// its trees' levels. `None` when the search would exceed 2·10⁷ steps
/// ((M + 1)⁴ × the trees).
pub fn replace_by_tree(b: TreeBounds) -> Option<(u128, u128)> {
    let m = b.mass();
    let r = b.rows_per_slot.max(1);
    let trees = forest(b.slots);
    let side = u128::from(m) + 1;
    let steps = side
        .checked_pow(4)
        .and_then(|s| s.checked_mul(trees.len() as u128));
    if steps.is_none_or(|s| s > TREE_SEARCH) {
        return None;
    }
    let m = m as usize;
    let width = m + 1;
    // best[A·width + B]: the largest (L1, L2²), each maximised on its own,
    // over the trees so far with at most A rows of x and B of y in them.
    // Every state starts at 0: a state no split reaches is worth no more
    // than (0, 0), from which the same later splits are open.
    let mut best = vec![(0u128, 0u128); width * width];
    for &h in &trees {
        let cap = (m as u128).min(u128::from(r) << h) as usize;
        let own = tree_table(h, r, cap);
        let mut next = vec![(0u128, 0u128); width * width];
        for sa in 0..=m {
            for sb in 0..=m {
                let (p1, p2) = best[sa * width + sb];
                for a in 0..=cap.min(m - sa) {
                    for bb in 0..=cap.min(m - sb) {
                        let (o1, o2) = own[a * (cap + 1) + bb];
                        let at = &mut next[(sa + a) * width + sb + bb];
                        *at = (at.0.max(p1 + o1), at.1.max(p2 + o2));
                    }
                }
            }
        }
        best = next;
    }
    Some(
        best.into_iter()
            .fold((0, 0), |(l1, l2), (v1, v2)| (l1.max(v1), l2.max(v2))),
    )
}

/// One tree's bound (L1, L2²) at every split: entry a·(cap + 1) + b for a
/// rows of x and b of y in a tree of height `h` (levels 0 … h, nodes of
/// r·2ˡ rows at most), the sum of its levels' [`level_bound`]s.
fn tree_table(h: u32, r: u64, cap: usize) -> Vec<(u128, u128)> {
    let mut own = Vec::with_capacity((cap + 1) * (cap + 1));
    for a in 0..=cap {
        for b in 0..=cap {
            own.push((0..=h).fold((0, 0), |(t1, t2), l| {
                let (v1, v2) =
                    level_bound(a as u128, b as u128, 1u128 << (h - l), u128::from(r) << l);
                (t1 + v1, t2 + v2)
            }));
        }
    }
    own
}

/// An upper bound on (Σ|Xᵥ − Yᵥ|, Σ(Xᵥ − Yᵥ)²) over n nodes of capacity c
/// (0 ≤ Xᵥ, Yᵥ ≤ c) with ΣX = a and ΣY = b exactly. When x and y fit in
/// separate nodes (⌈a/c⌉ + ⌈b/c⌉ ≤ n), each packed c per node from the
/// first: a + b and the two packed sums of squares, reached. Otherwise,
/// for the set P of the j nodes where X ≥ Y: X(P) ≤ min(a, j·c) and
/// Y(P) ≥ b − (n − j)·c, so the positive differences sum to at most
/// D⁺ = min(a, jc) − (b − (n − j)c)⁺, each at most c, and likewise the
/// negative ones to D⁻ = min(b, (n − j)c) − (a − jc)⁺; their squares sum
/// to at most the packed squares of D⁺ and D⁻ (the square is convex); the
/// largest over j = 0 … n bounds both norms (one node: |a − b| and
/// (a − b)², exact).
pub fn level_bound(a: u128, b: u128, n: u128, c: u128) -> (u128, u128) {
    let packed = |d: u128| (d / c) * c * c + (d % c) * (d % c);
    if a.div_ceil(c) + b.div_ceil(c) <= n {
        return (a + b, packed(a) + packed(b));
    }
    let (mut l1, mut l2) = (0u128, 0u128);
    for j in 0..=n {
        let pos = a.min(j * c).saturating_sub(b.saturating_sub((n - j) * c));
        let neg = b.min((n - j) * c).saturating_sub(a.saturating_sub(j * c));
        l1 = l1.max(pos + neg);
        l2 = l2.max(packed(pos) + packed(neg));
    }
    (l1, l2)
}

/// (L1, L2²) of the tree under replace, level by level: per level, the
/// exact worst pair of the level's node vectors
/// (`sensitivity::replace_counts` over its ⌊T/2ˡ⌋ nodes, at most
/// min(W, ⌊T/2ˡ⌋) touched by one unit, r·2ˡ rows per node, M in all),
/// summed over the levels (sound: each level's part of x − y is such a
/// pair).
pub fn replace_by_level(b: TreeBounds) -> (u128, u128) {
    let m = b.mass();
    let r = b.rows_per_slot.max(1);
    (0..levels(b.slots)).fold((0, 0), |(l1, l2sq), l| {
        let n = nodes_at(b.slots, l);
        let cap = r.saturating_mul(1u64 << l.min(63));
        let w = b.windows.max(1).min(n);
        let (a, c) = crate::sensitivity::replace_counts(m, w, cap, n);
        (l1 + a, l2sq + c)
    })
}

/// The first step: the vector and the unit's share of it.
fn explain(user: bool, b: TreeBounds, k: u32, m: u64) -> String {
    let vector = format!(
        "the {} running totals are post-processing of one vector release: the {} dyadic nodes of a binary tree over the {} slots that close within the schedule (⌊T/2ˡ⌋ at level l, {k} levels: ⌊log₂ {}⌋ + 1), one coordinate per node",
        b.slots,
        nodes(b.slots),
        b.slots,
        b.slots
    );
    let share = if user {
        format!(
            "a unit has at most M = min(rows_per_unit {}, windows_per_unit {} × rows_per_window {}) = {m} rows over the schedule, at most r = {} in one slot (undeclared, windows_per_unit is the slots and rows_per_window is rows_per_unit); a row lies in at most {k} released nodes (one per level)",
            b.rows,
            b.windows.min(b.slots),
            b.rows_per_slot,
            b.rows_per_slot
        )
    } else {
        format!("a row has one time, so it lies in one slot and in at most {k} released nodes (one per level)")
    };
    format!("{vector}; {share}")
}

/// v_l: the variance of Honaker's online estimate of a level-`l` node,
/// for a node noise variance `s2`; `v[0] = s2`.
pub fn node_variances(s2: f64, levels: u32) -> Vec<f64> {
    let mut v = Vec::with_capacity(levels as usize);
    for _ in 0..levels {
        let next = match v.last() {
            None => s2,
            Some(&prev) => {
                let children = 2.0 * prev;
                s2 * children / (s2 + children)
            }
        };
        v.push(next);
    }
    v
}

/// The variance of the running total released at slot `t` (1-based), for
/// node variances `v` ([`node_variances`]): Σ over the set bits l of t.
pub fn total_variance(v: &[f64], t: u64) -> f64 {
    decomposition(t).iter().map(|&(l, _)| v[l as usize]).sum()
}

/// The running total at slot `t` (1-based) from the noisy node values
/// `noisy(level, index)` of the nodes closed by `t`, by Honaker's online
/// estimator for a node noise variance `s2`: each node's estimate is
/// a_l·(its noisy value) + (1 − a_l)·(its children's estimates summed),
/// with a_l = v_l / s² the inverse-variance weight ([`node_variances`]),
/// and the total sums the estimates of `t`'s decomposition. Reads only
/// nodes inside [0, t): post-processing of what was released by `t`.
pub fn running_total(noisy: &dyn Fn(u32, u64) -> f64, s2: f64, t: u64) -> f64 {
    running_total_memo(noisy, s2, t, &mut std::collections::HashMap::new())
}

/// [`running_total`], keeping each node's estimate in `memo`: a closed
/// node's estimate never changes, so the totals of every slot of a
/// schedule cost O(T) in all instead of O(T²). The same operations in the
/// same order: the same bits.
pub fn running_total_memo(
    noisy: &dyn Fn(u32, u64) -> f64,
    s2: f64,
    t: u64,
    memo: &mut std::collections::HashMap<(u32, u64), f64>,
) -> f64 {
    let v = node_variances(s2, levels(t));
    decomposition(t)
        .into_iter()
        .map(|(l, j)| node_estimate(noisy, &v, s2, (l, j), memo))
        .sum()
}

/// Honaker's estimate of node (l, j) from its subtree's noisy values (the
/// weights v[l] do not depend on the tree's height, so an estimate kept
/// in `memo` serves every later slot).
fn node_estimate(
    noisy: &dyn Fn(u32, u64) -> f64,
    v: &[f64],
    s2: f64,
    (l, j): (u32, u64),
    memo: &mut std::collections::HashMap<(u32, u64), f64>,
) -> f64 {
    if let Some(&e) = memo.get(&(l, j)) {
        return e;
    }
    let e = if l == 0 {
        noisy(0, j)
    } else {
        let a = v[l as usize] / s2;
        let children = node_estimate(noisy, v, s2, (l - 1, 2 * j), memo)
            + node_estimate(noisy, v, s2, (l - 1, 2 * j + 1), memo);
        a * noisy(l, j) + (1.0 - a) * children
    };
    memo.insert((l, j), e);
    e
}

/// The slot whose running total has the largest variance, and that
/// variance, for node variances `v` over `slots` slots. Scanned exactly up
/// to 65,536 slots; beyond, over the slots 2^j − 1 and T (the variance is
/// a sum over set bits of an increasing v, so the maximum is at a slot
/// with every bit below its highest one set, or at one of those whose
/// highest bit is T's: 2^j − 1 dominates every t < 2^j).
pub fn worst_slot(v: &[f64], slots: u64) -> (u64, f64) {
    let candidates: Vec<u64> = if slots <= 1 << 16 {
        (1..=slots).collect()
    } else {
        let k = levels(slots);
        let mut c: Vec<u64> = (1..=k).map(|j| (1u64 << j) - 1).collect();
        // below T with T's highest bit: T's prefix bits then all ones
        for j in 0..k {
            if slots >> j & 1 == 1 {
                c.push((slots & !((1u64 << (j + 1)) - 1)) | ((1u64 << j) - 1));
            }
        }
        c.push(slots);
        c
    };
    let mut worst = (1, 0.0f64);
    for t in candidates.into_iter().filter(|&t| t >= 1 && t <= slots) {
        let var = total_variance(v, t);
        if var > worst.1 {
            worst = (t, var);
        }
    }
    worst
}

/// The half-width of a 95 % interval around a running total of standard
/// deviation `sd`: 1.96·sd for Gaussian noise (the estimate is Gaussian),
/// √20·sd for Laplace noise (Chebyshev: P(|X| ≥ √20·sd) ≤ 1/20; the
/// estimate is a weighted sum of Laplace draws, not Gaussian).
pub fn ci95(sd: f64, gaussian: bool) -> f64 {
    if gaussian {
        crate::Z95 * sd
    } else {
        20f64.sqrt() * sd
    }
}

/// The noise variance of one node: σ² (Gaussian) or 2b² (Laplace).
pub fn node_variance(scale: f64, gaussian: bool) -> f64 {
    if gaussian {
        scale * scale
    } else {
        2.0 * scale * scale
    }
}

/// (standard deviation, 95 % half-width) of the worst running total.
pub fn worst_spread(scale: f64, slots: u64, gaussian: bool) -> (f64, f64) {
    let v = node_variances(node_variance(scale, gaussian), levels(slots));
    let sd = worst_slot(&v, slots).1.sqrt();
    (sd, ci95(sd, gaussian))
}

/// The standard deviation of each running total's error, as sentences:
/// the formula, the first and worst slots, the plain binary mechanism's
/// figure for comparison, and a 95 % statement.
pub fn error_steps(s2: f64, slots: u64, gaussian: bool) -> Vec<String> {
    let v = node_variances(s2, levels(slots));
    let (worst_t, worst) = worst_slot(&v, slots);
    let sd = |x: f64| fmt_num(x.sqrt());
    let plain = f64::from(worst_t.count_ones()) * s2;
    let ci = if gaussian {
        format!(
            "95 % of the time a running total is within 1.96 × its standard deviation of the true total (the estimate is Gaussian): within ±{} at slot {worst_t}",
            fmt_num(ci95(worst.sqrt(), true))
        )
    } else {
        format!(
            "95 % of the time a running total is within √20 ≈ 4.47 × its standard deviation of the true total (Chebyshev: the estimate is a weighted sum of Laplace draws, not Gaussian; conservative): within ±{} at slot {worst_t}",
            fmt_num(ci95(worst.sqrt(), false))
        )
    };
    vec![
        format!(
            "error of the running total at slot t: the sum of the Honaker-estimated nodes of t's binary decomposition (one per set bit of t), variance Σ_(l ∈ bits(t)) v_l with v_0 = s² = {}, v_l = s²·2v_(l−1)/(s² + 2v_(l−1)); standard deviation {} at slot 1, {} at slot {worst_t} (the worst; the plain binary mechanism: √(popcount(t))·s = {} there)",
            fmt_num(s2),
            sd(v[0]),
            sd(worst),
            sd(plain)
        ),
        ci,
    ]
}

/// A node of the tree: its level and its index within the level.
pub type NodeId = (u32, u64);

/// The nodes that close at slot `t` (1-based), lowest level first, among
/// the `levels` released levels (slots are 1-based: slot t covers
/// (t − 1, t] of the schedule's periods): (l, t/2ˡ − 1) for each l with 2ˡ | t.
pub fn closing(t: u64, levels: u32) -> Vec<NodeId> {
    if t == 0 {
        return Vec::new();
    }
    (0..levels.min(64))
        .take_while(|&l| t.trailing_zeros() >= l)
        .map(|l| (l, (t >> l) - 1))
        .collect()
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
