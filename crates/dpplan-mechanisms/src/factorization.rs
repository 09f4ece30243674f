//! Continual counting by the square-root factorization of the prefix-sum
//! matrix (Fichtenberger, Henzinger and Upadhyay 2023, "Constant matters:
//! fine-grained error bound on differentially private continual
//! observation"; Henzinger, Upadhyay and Upadhyay 2023): `cumulative
//! count(d)` with `mechanism factorization`.
//!
//! **The factorization.** Let A be the T × T lower-triangular all-ones
//! matrix (the running totals: (A·x)_t = x_1 + … + x_t for the slots'
//! exact counts x). A = C·C for the lower-triangular Toeplitz matrix C with
//! entries c_{i−j} = binom(2k, k)/4ᵏ at k = i − j ≥ 0 (the coefficients of
//! (1 − z)^(−1/2), whose square is 1/(1 − z)). The mechanism releases, at
//! each slot t, one noisy coordinate of an encoder E·x,
//! u_t = (E·x)_t + z_t with z_t ~ N(0, σ²) fresh (ONE vector release of T
//! coordinates, one per slot, each depending on the slots up to t only), and
//! publishes the running total s_t = Σ_{j ≤ t} c_{t−j}·u_j: post-processing.
//!
//! **The encoder is exact.** E is C with its coefficients rounded down to
//! the grid 2^−60: ẽ_k = ⌊c_k·2^60⌋/2^60, from an integer recurrence
//! (c_k = c_{k−1}·(2k − 1)/(2k), carried at 2^−100 and floored at every
//! step, then shifted). So (E·x)_t is a dyadic rational the runtime
//! computes exactly from the integer counts, and the exact Gaussian sampler
//! adds its noise to that exact value (no float enters the release: the
//! same guarantee as every other release). The decoder is C itself (in
//! f64); C·E differs from A by at most 2^−59·Σ_k c_k·(the counts) — a bias
//! below 10⁻¹⁵ of the running total, far under the noise.
//!
//! **Sensitivity.** ẽ_k ≥ 0 is non-increasing in k (each step multiplies
//! by (2k − 1)/(2k) < 1 and floors). G = EᵀE then has entries
//! G_ij = Σ_{k=0}^{T−1−max(i,j)} ẽ_k·ẽ_{k+|i−j|} ≥ 0, non-increasing in
//! max(i, j) (fewer non-negative terms) and in |i − j| (each term smaller).
//! One unit changes the slots' counts by a vector v with 0 ≤ v_i ≤ r and
//! Σ v_i ≤ M (add/remove; at most W slots, a subset of that polytope).
//! ‖E·v‖ is convex, so its maximum over the polytope is at a vertex: r on
//! ⌊M/r⌋ slots and M mod r on at most one more. Since G ≥ 0,
//! ‖E·v‖² = vᵀGv grows with every v_i, so raising that one to r bounds it
//! by the value with v_i = r on a support S of m = ⌈M/r⌉ slots; and for
//! S = {s_1 < … < s_m}, s_a ≥ a − 1 and |s_a − s_b| ≥ |a − b|, so
//! G_{s_a s_b} ≤ G_{a−1, b−1} term by term: the first m slots are the
//! worst support. Hence, under add/remove, exactly when r divides M (a
//! placement reaches it) and soundly otherwise,
//!
//!   L2 = r·‖E·1_[0,m)‖₂,   m = min(T, ⌈M/r⌉)
//!
//! (M = min(R, W·r) the unit's rows; the runtime keeps a unit in at most
//! W′ = min(W, ⌊R/r⌋) ≤ m slots). Under `replace` the unit's placement x is
//! exchanged for another y; E·x and E·y are non-negative, so
//! ‖E(x − y)‖² ≤ ‖E·x‖² + ‖E·y‖²: L2 grows by at most √2 (sound; not
//! reached, as E·x and E·y overlap a little wherever they are placed).
//! The L2 norm is computed from exact integer column sums and rounded up
//! at every floating-point step, so it is never below the true norm.
//! Gaussian noise only: the L1 norm of a column of E grows like √T
//! (Σ_k c_k ≈ 2√(T/π)), so Laplace noise on it is worse than the tree's.
//!
//! **Error.** The running total at t has variance σ²·Σ_{k<t} c_k² (the
//! decoder's row), increasing in t; Σ_{k<t} c_k² ≈ 1 + ln(t)/π. It is read
//! from the coordinates released up to t only (online) and is unbiased
//! (up to the bias above).

use dpplan_vocab::Adjacency;

use crate::sensitivity::{fmt_num, Derived, UnitBound};
use crate::tree::TreeBounds;

/// The encoder's grid: ẽ_k = ⌊c_k·2^FRAC_BITS⌋ / 2^FRAC_BITS.
pub const FRAC_BITS: u32 = 60;

/// The precision the coefficients are carried at before the encoder's
/// grid: (2k − 1)·c_k·2^100 < 2^121 for k ≤ 2^20.
const CARRY_BITS: u32 = 100;

/// The most slots: the recurrence's carry fits in a u128 up to here.
pub const MAX_SLOTS: u64 = 1 << 20;

/// c_k·2^100, floored at every step of c_k = c_{k−1}·(2k − 1)/(2k), for
/// k < n (n ≤ [`MAX_SLOTS`]).
fn carried(n: u64) -> Vec<u128> {
    let n = n.min(MAX_SLOTS) as usize;
    let mut out = Vec::with_capacity(n);
    let mut c: u128 = 1 << CARRY_BITS;
    for k in 0..n {
        if k > 0 {
            let k = k as u128;
            c = c * (2 * k - 1) / (2 * k);
        }
        out.push(c);
    }
    out
}

/// The encoder's coefficients ẽ_k·2^60 (integers), k < n: non-negative,
/// non-increasing, ẽ_0 = 2^60.
pub fn encoder(n: u64) -> Vec<u64> {
    carried(n)
        .into_iter()
        .map(|c| (c >> (CARRY_BITS - FRAC_BITS)) as u64)
        .collect()
}

/// The decoder's coefficients c_k = binom(2k, k)/4ᵏ in f64, k < n.
pub fn decoder(n: u64) -> Vec<f64> {
    let scale = (-f64::from(CARRY_BITS)).exp2();
    carried(n).into_iter().map(|c| c as f64 * scale).collect()
}

/// (E·x)_t·2^60 for slot `t` (1-based) from the exact counts of slots
/// 1 … t (`counts[j]` is slot j + 1's): exact, `None` on overflow.
pub fn encode(enc: &[u64], counts: &[i128], t: u64) -> Option<i128> {
    let t = usize::try_from(t).ok()?;
    if t == 0 || t > counts.len() || t > enc.len() {
        return None;
    }
    let mut sum: i128 = 0;
    for (j, &x) in counts[..t].iter().enumerate() {
        let e = i128::from(enc[t - 1 - j]);
        sum = sum.checked_add(e.checked_mul(x)?)?;
    }
    Some(sum)
}

/// The running total at slot `t` (1-based) from the released coordinates
/// u_1 … u_t (`released[j]` is slot j + 1's): Σ_j c_{t−1−j}·u_j.
pub fn running_total(dec: &[f64], released: &[f64], t: u64) -> Option<f64> {
    let t = usize::try_from(t).ok()?;
    if t == 0 || t > released.len() || t > dec.len() {
        return None;
    }
    Some(
        released[..t]
            .iter()
            .enumerate()
            .map(|(j, u)| dec[t - 1 - j] * u)
            .sum(),
    )
}

/// Σ_{k<t} c_k² for t = 1 … n: the variance of the running total at t per
/// unit of σ².
pub fn variance_factors(n: u64) -> Vec<f64> {
    let mut acc = 0.0;
    decoder(n)
        .into_iter()
        .map(|c| {
            acc += c * c;
            acc
        })
        .collect()
}

/// m: the slots of the worst support, ⌈M/r⌉ capped at T.
fn support(b: TreeBounds) -> u64 {
    let r = b.rows_per_slot.max(1);
    b.mass().div_ceil(r).clamp(1, b.slots.max(1))
}

/// ‖E·1_[0,m)‖₂ over T slots, rounded up: from the exact integer column
/// sums (prefix sums of ẽ·2^60), each step of the float sum of squares
/// moved up one ulp, so the result is never below the true norm.
pub fn prefix_norm(slots: u64, m: u64) -> f64 {
    let enc = encoder(slots);
    let mut prefix: Vec<u128> = Vec::with_capacity(enc.len() + 1);
    prefix.push(0);
    for &e in &enc {
        let last = *prefix.last().unwrap_or(&0);
        prefix.push(last + u128::from(e));
    }
    let m = usize::try_from(m).unwrap_or(usize::MAX).max(1);
    let unit = (-f64::from(FRAC_BITS)).exp2();
    let mut sq = 0.0f64;
    for t in 0..enc.len() {
        // (E·1_[0,m))_t = Σ_{j ≤ min(t, m−1)} ẽ_{t−j} = P(t+1) − P(t+1−min(t+1, m))
        let hi = prefix[t + 1];
        let lo = prefix[t + 1 - (t + 1).min(m)];
        // u128 → f64 rounds to nearest: one ulp up bounds it
        let col = ((hi - lo) as f64).next_up() * unit;
        sq = (sq + (col * col).next_up()).next_up();
    }
    sq.sqrt().next_up()
}

/// The L1 sensitivity of the encoded vector under `adjacency`, rounded
/// up: ‖E·v‖₁ = Σ_j v_j·S_j with S_j = Σ_{k ≤ T−1−j} ẽ_k decreasing in j,
/// linear in v, so its maximum over {0 ≤ v ≤ r, Σv ≤ M} puts r on each of
/// the first ⌊M/r⌋ slots and M mod r on the next (exact); doubled under
/// replace (‖E(x − y)‖₁ ≤ ‖E·x‖₁ + ‖E·y‖₁, sound). Not used by any
/// accountant (Gaussian noise only): the derivation states it.
pub fn l1(adjacency: Adjacency, b: TreeBounds) -> f64 {
    let enc = encoder(b.slots);
    let n = enc.len();
    let r = u128::from(b.rows_per_slot.max(1));
    let m = u128::from(b.mass());
    // suffix sums of ẽ·2^60: S_j = Σ_{k < T − j} ẽ_k
    let total: u128 = enc.iter().map(|&e| u128::from(e)).sum();
    let mut s = total;
    let mut sum: u128 = 0;
    let mut left = m;
    for j in 0..n {
        if left == 0 {
            break;
        }
        let w = left.min(r);
        sum += w * s;
        left -= w;
        s -= u128::from(enc[n - 1 - j]);
    }
    let unit = (-f64::from(FRAC_BITS)).exp2();
    let ar = ((sum as f64).next_up() * unit).next_up();
    match adjacency {
        Adjacency::AddRemove => ar,
        Adjacency::Replace => 2.0 * ar,
    }
}

/// The L2 sensitivity of the encoded vector under `adjacency`.
pub fn l2(adjacency: Adjacency, b: TreeBounds) -> f64 {
    l2_of(adjacency, b, prefix_norm(b.slots, support(b)))
}

/// [`l2`] from ‖E·1_[0,m)‖ already computed (rounded up).
fn l2_of(adjacency: Adjacency, b: TreeBounds, norm: f64) -> f64 {
    let r = b.rows_per_slot.max(1) as f64;
    let ar = (r * norm).next_up();
    match adjacency {
        Adjacency::AddRemove => ar,
        Adjacency::Replace => (ar * std::f64::consts::SQRT_2).next_up(),
    }
}

/// The sensitivity of the whole factorization as one vector release (L2;
/// its L1 is not used: Gaussian noise only), with its derivation in words.
pub fn derived(unit: UnitBound, adjacency: Adjacency, b: TreeBounds) -> Derived {
    let m = support(b);
    let r = b.rows_per_slot.max(1);
    let mut steps = vec![format!(
        "the {slots} running totals are post-processing of one vector release of {slots} coordinates, one per slot: u_t = (E·x)_t + noise, with E the square root of the prefix-sum matrix (lower-triangular Toeplitz, entries binom(2k, k)/4ᵏ, rounded down to 2⁻⁶⁰ so that E·x is exact), and the total at t = Σ_(j ≤ t) c_(t−j)·u_j",
        slots = b.slots
    )];
    let norm = prefix_norm(b.slots, m);
    if unit.user {
        steps.push(format!(
            "a unit has at most M = min(rows_per_unit {}, windows_per_unit {} × rows_per_window {r}) = {} rows, at most r = {r} in one slot; ‖E·v‖ is convex in the unit's slot counts v, so its worst is a vertex of {{0 ≤ v ≤ r, Σv ≤ M}}, and E's entries are non-negative and non-increasing, so no placement beats r rows in each of the first m = min(T, ⌈M/r⌉) = {m} slots: L2 = r·‖E·1_[0,m)‖ = {r} × {} = {}{}",
            b.rows,
            b.windows.min(b.slots),
            b.mass(),
            fmt_num(norm),
            fmt_num(r as f64 * norm),
            if b.mass().is_multiple_of(r) { " (reached)" } else { " (sound; r does not divide M)" },
        ));
    } else {
        steps.push(format!(
            "a row has one time, so it changes one slot's count by 1; the worst slot is the first: L2 = ‖E·e_1‖ = √(Σ_(k<T) ẽ_k²) = {}",
            fmt_num(norm)
        ));
    }
    let l2v = l2_of(adjacency, b, norm);
    steps.push(format!(
        "L1 (not used: Gaussian noise only) = {}: ‖E·v‖₁ is linear in v and each slot's column sum falls with the slot, so the same rows packed from the first slot are its worst{}",
        fmt_num(l1(adjacency, b)),
        if adjacency == Adjacency::Replace { ", doubled under replace" } else { "" }
    ));
    if adjacency == Adjacency::Replace {
        steps.push(format!(
            "replace: the unit's placement x is exchanged for another y; E·x and E·y are non-negative, so ‖E(x − y)‖² ≤ ‖E·x‖² + ‖E·y‖²: L2 = √2 × {} = {} (sound, not reached)",
            fmt_num(r as f64 * norm),
            fmt_num(l2v)
        ));
    }
    Derived {
        // not used (Gaussian noise only): the exact ℓ1 of the worst placement
        l1: l1(adjacency, b),
        l2: l2v,
        coords: b.slots,
        linf: (r * m) as f64,
        steps,
    }
}

/// The standard deviation of the running total at slot 1 and at slot T
/// (the worst: the variance grows with t) for noise σ.
pub fn spread(sigma: f64, slots: u64) -> (f64, f64) {
    let v = variance_factors(slots);
    let last = v.last().copied().unwrap_or(1.0);
    (sigma, sigma * last.sqrt())
}

/// The standard deviation of each running total's error, as sentences:
/// the formula, the first and last slots, the tree's figures at the same
/// privacy, and a 95 % statement (the estimate is Gaussian).
pub fn error_steps(sigma: f64, adjacency: Adjacency, b: TreeBounds) -> Vec<String> {
    let (first, last) = spread(sigma, b.slots);
    let ((fw, fm), (tw, tm)) = against_tree(adjacency, b);
    vec![
        format!(
            "error of the running total at slot t: Σ_(j ≤ t) c_(t−j)·(noise of u_j), variance σ²·Σ_(k<t) c_k² (≈ σ²·(ln t + 3.35)/π, growing with t); standard deviation {} at slot 1, {} at slot {} (the worst), {} in root mean square over the slots",
            fmt_num(first),
            fmt_num(last),
            b.slots,
            fmt_num(sigma * fm),
        ),
        format!(
            "the binary tree at the same privacy (its σ scaled by its L2 over this one's): standard deviation {} at its worst slot and {} in root mean square (Honaker's estimator) — the factorization's error is {} × and {} × the tree's",
            fmt_num(sigma * tw),
            fmt_num(sigma * tm),
            fmt_num(fw / tw),
            fmt_num(fm / tm),
        ),
        format!(
            "95 % of the time a running total is within 1.96 × its standard deviation of the true total (the estimate is Gaussian): within ±{} at slot {}",
            fmt_num(crate::Z95 * last),
            b.slots
        ),
    ]
}

/// The error of the factorization against the binary tree (Honaker's
/// estimator) at the same privacy: the tree's σ scaled by the ratio of
/// the two L2 sensitivities (a Gaussian's privacy depends on L2/σ only).
/// Per unit of the factorization's σ: (worst-slot standard deviation,
/// root-mean-square over the slots) of each, factorization first.
pub fn against_tree(adjacency: Adjacency, b: TreeBounds) -> ((f64, f64), (f64, f64)) {
    // the tree's own exact norms (tree.rs), the same the checker claims
    let (_, tree_l2sq) = match adjacency {
        Adjacency::AddRemove => crate::tree::add_remove(b),
        Adjacency::Replace => crate::tree::replace(b),
    };
    let ratio = (tree_l2sq as f64).sqrt() / l2(adjacency, b);
    let f = variance_factors(b.slots);
    let f_worst = f.last().copied().unwrap_or(1.0).sqrt();
    let f_mean = (f.iter().sum::<f64>() / f.len().max(1) as f64).sqrt();
    let v = crate::tree::node_variances(ratio * ratio, crate::tree::levels(b.slots));
    let t_worst = crate::tree::worst_slot(&v, b.slots).1.sqrt();
    let t_mean = ((1..=b.slots)
        .map(|t| crate::tree::total_variance(&v, t))
        .sum::<f64>()
        / b.slots.max(1) as f64)
        .sqrt();
    ((f_worst, f_mean), (t_worst, t_mean))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C·C = A: the convolution of the decoder's coefficients with
    /// themselves is 1 at every lag (jax_privacy's reference property of
    /// the square-root factorization), to float precision.
    #[test]
    fn the_square_of_c_is_the_prefix_sum_matrix() {
        let n = 2048;
        let c = decoder(n);
        for k in 0..n as usize {
            let s: f64 = (0..=k).map(|j| c[j] * c[k - j]).sum();
            assert!((s - 1.0).abs() < 1e-12, "lag {k}: {s}");
        }
        // and the exact first values
        assert_eq!(&c[..4], &[1.0, 0.5, 0.375, 0.3125]);
    }

    /// The exact encoder: ẽ_k·2^60 against binom(2k, k)·2^60/4ᵏ computed
    /// with exact rationals for small k, and E·E = A up to its grid.
    #[test]
    fn the_encoder_is_c_on_its_grid() {
        let enc = encoder(40);
        for (k, &e) in enc.iter().enumerate() {
            // binom(2k, k) fits in u128 up to k = 40; c_k·2^60 = binom·2^(60−2k)
            let mut binom: u128 = 1;
            for i in 0..k as u128 {
                binom = binom * (2 * k as u128 - i) / (i + 1);
            }
            let exact_scaled = if 2 * k <= 60 {
                binom << (60 - 2 * k)
            } else {
                binom >> (2 * k - 60)
            };
            // floored at every step of the carry: at most k ulps of 2^−100
            // below, so at most one below on the 2^−60 grid
            assert!(u128::from(e) <= exact_scaled, "k = {k}");
            assert!(exact_scaled - u128::from(e) <= 1, "k = {k}");
        }
        assert!(enc.windows(2).all(|w| w[1] <= w[0]), "non-increasing");
    }

    /// Brute force: the L2 sensitivity over every placement of a unit's
    /// rows (at most r per slot, at most W slots, M rows) for small T is
    /// at most the claim, and reached when r divides M.
    #[test]
    fn the_sensitivity_holds_against_every_placement() {
        for slots in 1..=7u64 {
            for r in 1..=3u64 {
                for windows in 1..=slots {
                    for rows in r..=3 * r {
                        let b = TreeBounds {
                            slots,
                            windows,
                            rows_per_slot: r,
                            rows,
                        };
                        let enc = enc_f64(b.slots);
                        let worst_l1 = placements(b)
                            .iter()
                            .map(|p| {
                                (0..p.len())
                                    .map(|t| (0..=t).map(|j| enc[t - j] * p[j] as f64).sum::<f64>())
                                    .sum::<f64>()
                            })
                            .fold(0.0, f64::max);
                        let claim1 = l1(Adjacency::AddRemove, b);
                        assert!(
                            worst_l1 <= claim1 && claim1 - worst_l1 <= 1e-9 * claim1,
                            "{b:?} L1: {worst_l1} vs {claim1}"
                        );
                        let claim = l2(Adjacency::AddRemove, b);
                        let worst = brute_force(b);
                        assert!(worst <= claim, "{b:?}: {worst} > {claim}");
                        if b.mass().is_multiple_of(r) {
                            assert!(claim - worst <= 1e-9 * claim, "{b:?}: {worst} vs {claim}");
                        }
                        if (r + 1).pow(slots as u32) <= 300 {
                            let rep = l2(Adjacency::Replace, b);
                            let worst_rep = brute_force_replace(b);
                            assert!(worst_rep <= rep, "{b:?} replace: {worst_rep} > {rep}");
                        }
                    }
                }
            }
        }
    }

    /// Every vector of per-slot counts a unit can add.
    fn placements(b: TreeBounds) -> Vec<Vec<u64>> {
        let n = b.slots as usize;
        let mut out = Vec::new();
        let mut v = vec![0u64; n];
        fn rec(i: usize, v: &mut Vec<u64>, b: TreeBounds, out: &mut Vec<Vec<u64>>) {
            if i == v.len() {
                let used = v.iter().filter(|&&x| x > 0).count() as u64;
                let total: u64 = v.iter().sum();
                if used <= b.windows && total <= b.mass() {
                    out.push(v.clone());
                }
                return;
            }
            for x in 0..=b.rows_per_slot {
                v[i] = x;
                rec(i + 1, v, b, out);
            }
            v[i] = 0;
        }
        rec(0, &mut v, b, &mut out);
        out
    }

    fn norm_of(enc: &[f64], v: &[i64]) -> f64 {
        let n = v.len();
        (0..n)
            .map(|t| {
                let s: f64 = (0..=t).map(|j| enc[t - j] * v[j] as f64).sum();
                s * s
            })
            .sum::<f64>()
            .sqrt()
    }

    fn enc_f64(n: u64) -> Vec<f64> {
        encoder(n)
            .into_iter()
            .map(|e| e as f64 / (FRAC_BITS as f64).exp2())
            .collect()
    }

    fn brute_force(b: TreeBounds) -> f64 {
        let enc = enc_f64(b.slots);
        placements(b)
            .iter()
            .map(|p| norm_of(&enc, &p.iter().map(|&x| x as i64).collect::<Vec<_>>()))
            .fold(0.0, f64::max)
    }

    fn brute_force_replace(b: TreeBounds) -> f64 {
        let enc = enc_f64(b.slots);
        let all = placements(b);
        let mut worst = 0.0f64;
        for x in &all {
            for y in &all {
                let d: Vec<i64> = x
                    .iter()
                    .zip(y)
                    .map(|(&a, &c)| a as i64 - c as i64)
                    .collect();
                worst = worst.max(norm_of(&enc, &d));
            }
        }
        worst
    }

    /// A negative control: a placement moved off the first slots is
    /// strictly smaller, and one more row per slot raises the claim.
    #[test]
    fn the_claim_moves_with_the_bounds() {
        let b = TreeBounds {
            slots: 365,
            windows: 365,
            rows_per_slot: 1,
            rows: 2,
        };
        let claim = l2(Adjacency::AddRemove, b);
        let enc = enc_f64(365);
        let mut late = vec![0i64; 365];
        late[100] = 1;
        late[200] = 1;
        assert!(norm_of(&enc, &late) < claim - 0.1);
        let more = l2(
            Adjacency::AddRemove,
            TreeBounds {
                rows_per_slot: 2,
                rows: 4,
                ..b
            },
        );
        assert!((more - 2.0 * claim).abs() < 1e-9 * more);
        assert!(l2(Adjacency::Replace, b) > claim);
    }

    /// The running total decodes E·x back to A·x (no noise): exact up to
    /// the encoder's grid.
    #[test]
    fn decoding_the_encoded_counts_gives_the_running_totals() {
        let counts: Vec<i128> = (0..500).map(|i| (i * 7919 % 1000) as i128).collect();
        let enc = encoder(500);
        let dec = decoder(500);
        let u: Vec<f64> = (1..=500u64)
            .map(|t| encode(&enc, &counts, t).unwrap() as f64 / (FRAC_BITS as f64).exp2())
            .collect();
        let mut truth = 0i128;
        for t in 1..=500u64 {
            truth += counts[t as usize - 1];
            let s = running_total(&dec, &u, t).unwrap();
            assert!((s - truth as f64).abs() < 1e-6, "t = {t}: {s} vs {truth}");
        }
    }

    /// The error ratio to the tree at the same privacy (docs/language.md
    /// quotes these): below 1 at a daily year and an hourly year, for an
    /// event-level unit and for a unit of 30 rows on 30 days.
    #[test]
    fn the_factorization_beats_the_tree() {
        for slots in [365u64, 8760] {
            for (r, w, rows) in [(1, 1, 1), (1, 30, 30)] {
                let b = TreeBounds {
                    slots,
                    windows: w,
                    rows_per_slot: r,
                    rows,
                };
                let ((fw, fm), (tw, tm)) = against_tree(Adjacency::AddRemove, b);
                eprintln!(
                    "T = {slots}, M = {rows}: worst {fw:.4} vs {tw:.4} ({:.3}), rms {fm:.4} vs {tm:.4} ({:.3})",
                    fw / tw,
                    fm / tm
                );
                assert!(fw < tw && fm < tm, "{b:?}");
            }
        }
    }

    /// Σ_{k<t} c_k² against its asymptotic form: Σ_k c_k² zᵏ = (2/π)·K(z)
    /// (the complete elliptic integral), K(z) ~ ½·ln(16/(1 − z)), so the
    /// partial sums are (ln t + γ + ln 16)/π + O(1/t).
    #[test]
    fn the_variance_grows_like_log_t_over_pi() {
        let v = variance_factors(8760);
        let t = 8760f64;
        let approx = (t.ln() + 0.577_215_664_901_532_9 + 16f64.ln()) / std::f64::consts::PI;
        assert!((v[8759] - approx).abs() < 2e-3, "{} vs {approx}", v[8759]);
        assert!(v.windows(2).all(|w| w[1] > w[0]));
    }
}
