//! The PLD accountant's leaf for k identical pure releases composed, when
//! k is large: the exact privacy-loss distribution of k-fold randomized
//! response, a binomial on the loss atoms, put on the grid once.
//!
//! **Why.** Any ε₀-DP release is dominated by randomized response RR_ε₀
//! (Kairouz, Oh & Viswanath 2015), and the k-fold composition of RR_ε₀ has
//! an exact privacy-loss distribution: under P the number l of flipped
//! outputs is Binomial(k, q), q = 1/(1 + e^ε₀), and the loss is the atom
//! L_l = ε₀(k − 2l). The grid composition of k leaves (log₂ k convolutions,
//! each truncated and coarsened) loses accuracy when k is huge and ε₀ tiny
//! (10⁸ releases of ε₀ = 10⁻⁴: 8.19 where the exact value is 4.8866); this
//! leaf has one discretisation only, connect-the-dots of exact atoms, and
//! composes with the rest of the plan like any other node (dominating
//! pairs compose, Zhu, Dong & Wang 2022 Thm 10).
//!
//! **The weights** are walked from the mode l* = ⌊(k + 1)q⌋ (unnormalised
//! weight 1) in both directions by the exact ratios
//! w(l−1)/w(l) = l/(k − l + 1)·e^{ε₀} and w(l+1)/w(l) = (k − l)/(l + 1)·e^{−ε₀},
//! both below 1 away from the mode and falling further out, until the rest
//! of a side is provably below a cut: it is at most w·r/(1 − r) for the last
//! weight w and the next ratio r. Each weight j steps from the mode carries
//! at most 11.01·j·u relative error (a division, two products, e^{±ε₀}
//! within [`ELEM_ULPS`]; the constant of `kov.rs`), the window sum S at most
//! 1.01·N·u more for its N additions.
//!
//! **Every stored mass is an upper bound, in the accountant's order**
//! (docs/accounting.md, "The PLD's grid"): each weight is raised by its
//! allowance and divided by S lowered by its own (S ≤ the sum over all
//! atoms, so w/S_lo ≥ the exact normalised weight); each atom's loss is
//! ε₀(k − 2l) rounded up (k − 2l is an exact integer below 2⁵³); the
//! omitted side of high losses (small l) goes to +∞ and the omitted side of
//! low losses is added to the lowest kept atom (moving mass up keeps the
//! order); `from_atoms` then rounds its split up.

use super::{regularise, target_e, Ctx, GridPld, LeafKind};
use crate::special::{mul_down, mul_up, ELEM_ULPS, U};

/// The binomial leaf is tried from this many randomized-response releases
/// on (it is their exact composition; the grid's is close below).
const RR_FROM: u64 = 64;
/// … and from this many Laplace releases on: below, the grid composition of
/// the Laplace leaf is as tight or tighter (Laplace is strictly better than
/// RR; measured: 10⁵ releases of ε₀ ≥ 10⁻⁴ within 3·10⁻⁴ of KOV or below).
const LAPLACE_FROM: u64 = 1 << 16;

/// Whether the binomial leaf is tried for `count` releases of leaf `k`.
fn eligible(k: LeafKind, count: u64) -> bool {
    match k {
        LeafKind::Rr(_) => count >= RR_FROM,
        LeafKind::Laplace(_) => count >= LAPLACE_FROM,
        _ => false,
    }
}
/// At most this many atoms per side (the window of 10¹² releases at
/// ε₀ = 10⁻⁶ is ~4·10⁶ wide on each side).
const MAX_SIDE: u64 = 1 << 23;
/// Above this ε₀ the ratios' factor e^{ε₀} is beyond the normal floats'
/// comfort (such a release costs k·ε₀ within e^{−350} anyway).
const MAX_EPS0: f64 = 350.0;

/// Under `Ctx::binomial`, enough ([`eligible`])
/// releases of a pure leaf as the exact binomial PLD of their randomized
/// response, when its window can be represented.
pub(super) fn binomial(
    ctx: &mut Ctx,
    k: LeafKind,
    count: u64,
    note: &mut String,
) -> Option<GridPld> {
    let (LeafKind::Laplace(eps) | LeafKind::Rr(eps)) = k else {
        return None;
    };
    if !ctx.binomial || !eligible(k, count) {
        return None;
    }
    let q = 1.0 / (1.0 + libm::exp(eps));
    let sd = 2.0 * eps * (count as f64 * q * (1.0 - q)).sqrt();
    let g = binomial_leaf(ctx, target_e(ctx, sd), count, eps)?;
    *note += &format!(", {count} × ε₀ = {eps:.6} as the exact binomial of randomized response");
    Some(regularise(ctx, g))
}

/// Whether a plan's leaves have one the binomial leaf applies to.
pub(super) fn has_binomial(leaves: &[(LeafKind, u64)]) -> bool {
    leaves.iter().any(|&(k, c)| eligible(k, c))
}

/// One side of the walk from the mode: its weights (unnormalised, the
/// mode's excluded) and the bound of the rest.
struct Side {
    w: Vec<f64>,
    rest: f64,
}

/// The grid PLD of k-fold RR_ε₀ on the grid 2^e, or `None` when the window
/// cannot be represented (then the caller keeps the grid composition).
pub(super) fn binomial_leaf(ctx: &Ctx, e: i32, k: u64, eps0: f64) -> Option<GridPld> {
    if !((2..=1u64 << 52).contains(&k) && eps0 > 0.0 && eps0 <= MAX_EPS0) {
        return None;
    }
    let kf = k as f64;
    let q = 1.0 / (1.0 + libm::exp(eps0));
    let mode = ((kf + 1.0) * q).floor().clamp(0.0, kf);
    // the rest of a side below this (relative to the mode's weight 1) is cut
    let cut = (ctx.tau * 1e-3).clamp(1e-290, 1e-18);
    let (up_c, down_c) = (libm::exp(-eps0), libm::exp(eps0));
    // towards l = 0: higher losses; towards l = k: lower losses
    let high = walk(
        mode,
        cut,
        |l| l > 0.0,
        |l| l / (kf - l + 1.0) * down_c,
        -1.0,
    )?;
    let low = walk(mode, cut, |l| l < kf, |l| (kf - l) / (l + 1.0) * up_c, 1.0)?;
    let n = high.w.len().max(low.w.len()) as f64 + 1.0;
    let atoms_n = (high.w.len() + low.w.len() + 1) as f64;
    let gamma = 11.01 * n * U + 2.0 * U;
    if gamma > 1e-3 {
        return None;
    }
    let s: f64 = 1.0 + high.w.iter().sum::<f64>() + low.w.iter().sum::<f64>();
    let s_lo = (s / (1.0 + gamma + 1.01 * atoms_n * U) * (1.0 - 2.0 * U)).next_down();
    let norm = |w: f64| ((w * (1.0 + gamma)).next_up() / s_lo).next_up();
    let loss = |l: f64| {
        let m = kf - 2.0 * l;
        if m >= 0.0 {
            mul_up(eps0, m)
        } else {
            -mul_down(eps0, -m)
        }
    };
    let mut atoms = Vec::with_capacity(atoms_n as usize);
    for (j, &w) in high.w.iter().enumerate().rev() {
        atoms.push((loss(mode - 1.0 - j as f64), norm(w)));
    }
    atoms.push((loss(mode), norm(1.0)));
    for (j, &w) in low.w.iter().enumerate() {
        atoms.push((loss(mode + 1.0 + j as f64), norm(w)));
    }
    // the low-loss side's rest moves up to the lowest kept atom
    if let Some(last) = atoms.last_mut() {
        last.1 = (last.1 + norm(low.rest)).next_up();
    }
    let inf = norm(high.rest);
    Some(GridPld::from_atoms(e, &atoms, inf))
}

/// The weights from the mode outwards by `ratio` (stepping l by `dir`)
/// while `more(l)`, until the rest is provably below `cut`: after weight w
/// with next ratio r < 1 (the ratios fall further out), the rest is at most
/// w·r/(1 − r), rounded up with the weights' own allowance.
fn walk(
    mode: f64,
    cut: f64,
    more: impl Fn(f64) -> bool,
    ratio: impl Fn(f64) -> f64,
    dir: f64,
) -> Option<Side> {
    let mut w = 1.0f64;
    let mut l = mode;
    let mut out = Vec::new();
    while more(l) {
        let r = ratio(l);
        // r's own rounding (a division, a product, e^{±ε₀}): raised
        let r_up = (r * (1.0 + (4.0 + 2.0 * ELEM_ULPS) * U)).next_up();
        if r_up < 1.0 {
            let rest = (w * r_up / (1.0 - r_up) * (1.0 + 4.0 * U)).next_up();
            if rest <= cut {
                return Some(Side { w: out, rest });
            }
        }
        w *= r;
        l += dir;
        out.push(w);
        if out.len() as u64 > MAX_SIDE || !w.is_finite() {
            return None;
        }
    }
    Some(Side { w: out, rest: 0.0 })
}
