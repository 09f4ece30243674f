//! Privacy-loss-distribution (PLD) accountant with dominating ("pessimistic")
//! discretisation.
//!
//! * A discretised PLD lives on the grid {k·h : k ∈ Z}, h = 2^e, plus an atom at +∞.
//!   Only the P-side masses are stored: δ(ε) = p_∞ + Σ_k p_k (1 − e^{ε − k h})_+.
//! * Discretisation is *connect-the-dots* (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
//!   2022): a loss atom at l ∈ (T, T+H] is split into mass w at T+H and 1−w at T with
//!   w = (1 − e^{−(l−T)})/(1 − e^{−H}). This preserves both the P-mass and the Q-mass
//!   (Σ p e^{−l}), so the result is a genuine pair of distributions, and its hockey-stick
//!   curve is the chordal interpolation (in x = e^ε) of the original one, which is
//!   convex in x: the new pair dominates the old one for every ε.
//! * Upper tails are moved to +∞ (P-only mass), lower tails are moved up to the lowest
//!   kept point: both only increase δ(ε) for every ε.
//! * Dominating pairs compose under adaptive composition (Zhu, Dong & Wang 2022, Thm 10),
//!   and composition is convolution of the grid PLDs.
//! * All continuous Gaussians form one exact μ-GDP pair; its convolution with the grid
//!   part is evaluated analytically: δ(ε) = p_∞ + Σ_k p_k δ_μ(ε − k h).
//! * Error budget (docs/accounting.md, "The PLD's grid"): every stored grid vector
//!   (with its ∞ atom) dominates a genuine dominating pair's masses in the
//!   upper-cumulative order — for every threshold t the stored mass at losses ≥ t is
//!   at least the exact one; entrywise ≥ implies it, and so does moving mass up.
//!   Convolution, connect-the-dots and truncation preserve that order and δ(ε) is
//!   monotone in it, so each step only has to round its outputs up: [`round_up`] for
//!   leaves, coarsening and truncation; `pld_conv.rs` for convolutions — a per-entry
//!   FFT round-off bound (Higham 2002, Thm 24.2) instead of one global allowance at
//!   +∞, with an exponentially tilted second pass (Keich 2005) that makes the bound
//!   relative in the upper tail, where a δ down to 10⁻¹⁵ is decided. The lower tail
//!   is cut with a relative budget ([`Ctx::tau_low`]). The detail string lists the
//!   terms and their size.

use super::pld_conv::Convolver;
use crate::gaussian::gdp_epsilon;
use crate::roots::{find_bracket, profile_root, Bisection, Bracket, End};
use crate::special::{ELEM_ULPS, U};
use crate::{AccountingError, Plan};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[path = "pld_binomial.rs"]
mod pld_binomial;
#[path = "pld_curve.rs"]
mod pld_curve;
#[path = "pld_dgauss.rs"]
mod pld_dgauss;
#[path = "pld_dlaplace.rs"]
mod pld_dlaplace;
#[path = "pld_laplace.rs"]
mod pld_laplace;
#[path = "pld_leaves.rs"]
mod pld_leaves;
#[path = "pld_sampled.rs"]
mod pld_sampled;
pub(crate) use pld_curve::Curve;
pub(crate) use pld_laplace::lone_laplace_epsilon;
use pld_leaves::{leaf_plds, leaf_sd, LeafKind, Split};
pub(crate) use pld_sampled::Direction;

/// grid points per standard deviation of a node's own loss distribution
const RES_NODE: f64 = 256.0;
/// grid points per standard deviation of the whole plan's loss (finest useful grid)
const RES_GLOBAL: f64 = 4096.0;
/// hard cap on bins of one node
const MAX_BINS: usize = 1 << 21;
/// distinct Laplace/RR parameters above which ε is rounded up onto a geometric grid
const BUCKET_ABOVE: usize = 256;
const BUCKET_RATIO: f64 = 1e-3;
/// share of the target δ that tail truncation may spend (over all
/// operations) for the standard grid ([`Resolution::Standard`])
const TRUNC_FRACTION: f64 = 1e-3;
/// the share for the accountant's claim ([`Resolution::Claim`]), while the
/// per-step threshold it gives stays above [`TRUNC_FLOOR`] (where it
/// would not, the threshold is the floor, or [`TRUNC_FRACTION`]'s if that
/// is lower: the FFT round-off floor stops truncation below ~10⁻¹⁷)
const TRUNC_FRACTION_CLAIM: f64 = 1e-5;
const TRUNC_FLOOR: f64 = 1e-16;
/// a plan of at most this many leaf groups (and no sampled leaf) is
/// composed for the accountant's claim on a grid [`SMALL_REFINE`] times
/// finer than [`RES_NODE`]: the connect-the-dots round-up is second
/// order in the grid step, and there it is the largest error term left
/// (docs/accounting.md, "DpEvent")
const SMALL_PLAN_LEAVES: usize = 16;
const SMALL_REFINE: f64 = 4.0;

/// How fine a composition's grid and truncation are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolution {
    /// The PLD accountant's ε: truncation at [`TRUNC_FRACTION_CLAIM`] of δ,
    /// and plans of at most [`SMALL_PLAN_LEAVES`] leaf groups on a grid
    /// [`SMALL_REFINE`] times finer (a plan with a sampled leaf keeps its
    /// own finer grid, [`Ctx::res_node`]).
    Claim,
    /// The standard grid and truncation ([`RES_NODE`], [`TRUNC_FRACTION`]):
    /// the attack-risk curve (`crate::tradeoff`), which evaluates the
    /// curve hundreds of times and bounds a TPR, not the plan's ε.
    Standard,
}

#[derive(Debug, Clone)]
pub(crate) struct GridPld {
    /// h = 2^e
    e: i32,
    /// loss of p[i] is (lo + i)·h
    lo: i64,
    p: Vec<f64>,
    inf: f64,
}

fn h_of(e: i32) -> f64 {
    (e as f64).exp2()
}

impl GridPld {
    fn identity() -> Self {
        GridPld {
            e: 0,
            lo: 0,
            p: vec![1.0],
            inf: 0.0,
        }
    }

    fn mass(&self) -> f64 {
        self.p.iter().sum()
    }

    fn mean_sd(&self) -> (f64, f64) {
        let h = h_of(self.e);
        let m: f64 = self.mass();
        if m <= 0.0 {
            return (0.0, 0.0);
        }
        let mut s1 = 0.0;
        for (i, &p) in self.p.iter().enumerate() {
            s1 += p * i as f64;
        }
        let mi = s1 / m;
        let mut s2 = 0.0;
        for (i, &p) in self.p.iter().enumerate() {
            let d = i as f64 - mi;
            s2 += p * d * d;
        }
        ((self.lo as f64 + mi) * h, (s2 / m).sqrt() * h)
    }

    /// Split atoms (loss, mass) onto the grid of width 2^e (connect-the-dots).
    fn from_atoms(e: i32, atoms: &[(f64, f64)], mut inf: f64) -> Self {
        // degenerate losses (|l| > 1e290 or non-finite) go to the ∞ atom: pessimistic
        let bad = |l: f64| !l.is_finite() || l.abs() > 1e290;
        for &(l, m) in atoms {
            if m > 0.0 && bad(l) {
                inf += m;
            }
        }
        let filtered: Vec<(f64, f64)>;
        let atoms = if atoms.iter().any(|&(l, _)| bad(l)) {
            filtered = atoms.iter().copied().filter(|&(l, _)| !bad(l)).collect();
            &filtered[..]
        } else {
            atoms
        };
        let inf = inf.min(1.0);
        // keep the grid representable: h a normal float and the span ≤ MAX_BINS cells
        let (mut lmin, mut lmax) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(l, m) in atoms {
            if m > 0.0 {
                lmin = lmin.min(l);
                lmax = lmax.max(l);
            }
        }
        let mut e = e.clamp(-1000, 1000);
        if lmax >= lmin {
            let span = (lmax - lmin).max(lmax.abs()).max(lmin.abs());
            while span / h_of(e) > MAX_BINS as f64 && e < 1000 {
                e += 1;
            }
        }
        let h = h_of(e);
        let mut kmin = i64::MAX;
        let mut kmax = i64::MIN;
        for &(l, m) in atoms {
            if m <= 0.0 {
                continue;
            }
            let k = (l / h).floor() as i64;
            kmin = kmin.min(k);
            kmax = kmax.max(k + 1);
        }
        if kmin > kmax {
            return GridPld {
                e,
                lo: 0,
                p: vec![0.0],
                inf,
            };
        }
        let mut p = vec![0.0; (kmax - kmin + 1) as usize];
        let denom = -libm::expm1(-h);
        for &(l, m) in atoms {
            if m <= 0.0 {
                continue;
            }
            let k = (l / h).floor() as i64;
            let u = (l - k as f64 * h).clamp(0.0, h);
            let w = if u <= 0.0 {
                0.0
            } else {
                (-libm::expm1(-u) / denom).min(1.0)
            };
            let i = (k - kmin) as usize;
            p[i] += m * (1.0 - w);
            p[i + 1] += m * w;
        }
        // round-off (see `round_up`): w to (2·ELEM_ULPS + 2 + min(h, 750))u
        // (its argument u rounded, two libm calls, one division), the
        // products and the sums of up to atoms.len() masses per point
        let ulps = atoms.len() as f64 + 2.0 * ELEM_ULPS + h.min(750.0) + 8.0;
        round_up(&mut p, ulps);
        GridPld {
            e,
            lo: kmin,
            p,
            inf: (inf * (1.0 + 4.0 * U)).min(1.0),
        }
    }

    /// Connect-the-dots onto the coarser grid 2^e_new (e_new ≥ e).
    fn coarsen(&self, e_new: i32) -> Self {
        if e_new <= self.e {
            return self.clone();
        }
        let shift = (e_new - self.e) as u32;
        if shift >= 62 {
            // everything collapses onto at most two points; do it through atoms
            let h = h_of(self.e);
            let atoms: Vec<(f64, f64)> = self
                .p
                .iter()
                .enumerate()
                .map(|(i, &m)| ((self.lo + i as i64) as f64 * h, m))
                .collect();
            return GridPld::from_atoms(e_new, &atoms, self.inf);
        }
        let ratio = 1i64 << shift;
        let h_old = h_of(self.e);
        let h_new = h_of(e_new);
        let denom = -libm::expm1(-h_new);
        // precompute weights for each residue r = 0..ratio
        let weights: Vec<f64> = (0..ratio)
            .map(|r| {
                if r == 0 {
                    0.0
                } else {
                    (-libm::expm1(-(r as f64 * h_old)) / denom).min(1.0)
                }
            })
            .collect();
        let first = self.lo.div_euclid(ratio);
        let last = (self.lo + self.p.len() as i64 - 1).div_euclid(ratio) + 1;
        let mut p = vec![0.0; (last - first + 1) as usize];
        for (i, &m) in self.p.iter().enumerate() {
            if m == 0.0 {
                continue;
            }
            let g = self.lo + i as i64;
            let k = g.div_euclid(ratio);
            let r = g.rem_euclid(ratio) as usize;
            let w = weights[r];
            let j = (k - first) as usize;
            p[j] += m * (1.0 - w);
            p[j + 1] += m * w;
        }
        let sources = (2 * ratio as u64).min(self.p.len() as u64) as f64;
        round_up(&mut p, sources + 2.0 * ELEM_ULPS + h_new.min(750.0) + 8.0);
        GridPld {
            e: e_new,
            lo: first,
            p,
            inf: self.inf,
        }
        .trimmed_zeros()
    }

    fn trimmed_zeros(mut self) -> Self {
        let start = self.p.iter().position(|&x| x > 0.0).unwrap_or(0);
        let end = self
            .p
            .iter()
            .rposition(|&x| x > 0.0)
            .map(|x| x + 1)
            .unwrap_or(1)
            .max(start + 1);
        if start > 0 || end < self.p.len() {
            self.p = self.p[start..end].to_vec();
            self.lo += start as i64;
        }
        self
    }

    /// Pessimistic tail truncation: upper mass ≤ tau → ∞, lower mass ≤ tau_low → lowest
    /// kept (moving mass up is always pessimistic; see [`Ctx::tau_low`] for its size).
    fn truncate(&mut self, tau: f64, tau_low: f64) {
        for x in self.p.iter_mut() {
            if *x < 0.0 || x.is_nan() {
                *x = 0.0;
            }
        }
        let n = self.p.len();
        let mut top = n;
        let mut acc = 0.0;
        while top > 1 && acc + self.p[top - 1] <= tau {
            acc += self.p[top - 1];
            top -= 1;
        }
        // a sum of ≤ n masses: relative round-off ≤ (n + 2)u, rounded up
        let sum_up = 1.0 + 1.01 * (n as f64 + 3.0) * U;
        self.inf = ((self.inf + acc * sum_up) * (1.0 + 2.0 * U)).min(1.0);
        let mut bot = 0;
        let mut accl = 0.0;
        let tau_low = tau.max(tau_low);
        while bot + 1 < top && accl + self.p[bot] <= tau_low {
            accl += self.p[bot];
            bot += 1;
        }
        if bot > 0 || top < n {
            let mut v = self.p[bot..top].to_vec();
            v[0] = (v[0] + accl * sum_up) * (1.0 + 2.0 * U);
            self.p = v;
            self.lo += bot as i64;
        }
    }
}

struct Ctx {
    conv: Convolver,
    tau: f64,
    e_global: i32,
    /// many identical pure releases as their exact binomial leaf
    /// (`pld_binomial.rs`) rather than composed on the grid
    binomial: bool,
    /// the target δ (sets the lower-tail budget, [`Ctx::tau_low`])
    delta: f64,
    /// a leaf is on a Poisson sample: tilts follow the tails' reach
    /// ([`Ctx::tilt_to`])
    skewed: bool,
    /// grid points per standard deviation of a node ([`Ctx::res_node`])
    res_node: f64,
}

impl Ctx {
    /// Lower-tail truncation budget. Moving mass M of a node A from below its
    /// median up to a kept point l_cut raises the final δ(ε) = E_A[δ_R(ε − A)]
    /// (R: everything composed with A later) by at most M·δ_R(ε − l_cut) ≤
    /// M·δ_R(ε − med A) ≤ M·δ(ε)/P(A ≥ med A) ≤ 2M·δ(ε): a *relative* cost, so
    /// the budget is τ/(2δ) (the same share of δ as an upper truncation of τ;
    /// capped at 1 % so the cut stays below the median). Sound at any size (it
    /// only moves mass up); the size only bounds the loss of tightness. It
    /// lets the FFT round-off floor of the lower tail (bounded per entry, see
    /// `pld_conv.rs`) be cut, which an absolute τ ≈ 10⁻²¹ at δ = 10⁻¹⁵ could not.
    fn tau_low(&self) -> f64 {
        (0.5 * self.tau / self.delta).min(0.01)
    }

    /// Grid points per standard deviation of a node: [`RES_NODE`], eight
    /// times more in a plan with a sampled leaf (its skewed loss moves its
    /// ε by a grid step's share more than a symmetric one's; the arrays
    /// stay short, as the tilt follows the tails' reach), else
    /// [`SMALL_REFINE`] times more for the claim of a small plan
    /// ([`Ctx::for_leaves`]).
    fn res_node(&self) -> f64 {
        self.res_node
    }

    /// Exponential tilt per grid index for an output whose upper tail
    /// reaches `reach` above its mean: θ = z_δ²/reach with z_δ² = 2 ln(1/δ)
    /// (= z_δ/σ when reach = z_δσ, as for a Gaussian), which puts the
    /// tilted mass where the target δ is read, so that the round-off bound
    /// is smallest there. (Aimed at the cut instead, z_τ² with τ ≪ δ, the
    /// bound brought back from the tilt grew by e^{θ·distance} at ε: 100
    /// sampled Gaussian steps at δ = 10⁻⁹ came out 1 % too loose.)
    fn tilt_to(&self, reach: f64, e: i32) -> f64 {
        if reach.is_nan() || reach <= 0.0 || reach.is_infinite() {
            return 0.0;
        }
        2.0 * (1.0 / self.delta.max(self.tau)).ln() / reach * h_of(e)
    }

    /// Exponential tilt per grid index for a convolution whose output has
    /// standard deviation `sd` on the grid 2^e: θ = z_τ/sd puts the tilted
    /// mass where the upper tail is cut (τ ≈ Φ̄(z_τ)).
    fn tilt(&self, sd: f64, e: i32) -> f64 {
        if sd.is_nan() || sd <= 0.0 || sd.is_infinite() {
            return 0.0;
        }
        let z = (2.0 * (1.0 / self.tau).ln()).sqrt();
        z / sd * h_of(e)
    }
}

/// Σ p rounded up: a sum of n non-negative terms errs by ≤ (n − 1)u relative.
fn mass_up(p: &[f64]) -> f64 {
    p.iter().sum::<f64>() * (1.0 + 1.01 * (p.len() as f64 + 1.0) * U)
}

/// Multiplies every mass by g ≥ 1 + 1.01(ulps + 2)u: the result of a step
/// whose outputs are positive sums computed to ≤ ulps·u relative is then an
/// upper bound of the step's exact result on the same input. The + 2 are the
/// product's own rounding and the rounding of g itself (1 + x rounds to
/// nearest, ≤ u away; `next_up` then moves it above the exact factor).
/// Subnormal round-off (≤ 2^−1074 per operation) is below every mass a
/// δ ≥ 10⁻³⁰⁰ can see and is counted at ∞ by the convolutions that could
/// produce it.
fn round_up(p: &mut [f64], ulps: f64) {
    let g = round_up_factor(ulps);
    for x in p.iter_mut() {
        *x *= g;
    }
}

/// The factor of [`round_up`]: the double above 1 + 1.01(ulps + 2)u.
fn round_up_factor(ulps: f64) -> f64 {
    (1.0 + 1.01 * (ulps + 2.0) * U).next_up()
}

fn target_e(ctx: &Ctx, sd: f64) -> i32 {
    if sd <= 0.0 || !sd.is_finite() {
        return ctx.e_global;
    }
    ((sd / ctx.res_node()).log2().floor() as i32).max(ctx.e_global)
}

/// Bring the node to its resolution and cap its size.
fn regularise(ctx: &mut Ctx, mut g: GridPld) -> GridPld {
    let tau_low = ctx.tau_low();
    g.truncate(ctx.tau, tau_low);
    let (_, sd) = g.mean_sd();
    let te = target_e(ctx, sd);
    if te > g.e {
        g = g.coarsen(te);
        g.truncate(ctx.tau, tau_low);
    }
    while g.p.len() > MAX_BINS {
        g = g.coarsen(g.e + 1);
        g.truncate(ctx.tau, tau_low);
    }
    g
}

fn compose(ctx: &mut Ctx, a: &GridPld, b: &GridPld) -> GridPld {
    let e = a.e.max(b.e);
    let ca;
    let cb;
    let (a, b) = (
        if a.e < e {
            ca = a.coarsen(e);
            &ca
        } else {
            a
        },
        if b.e < e {
            cb = b.coarsen(e);
            &cb
        } else {
            b
        },
    );
    // keep grid indices exactly representable (|index| ≤ 2^50): coarsen otherwise
    let too_big = |x: &GridPld| x.lo.unsigned_abs().saturating_add(x.p.len() as u64) > 1u64 << 49;
    let (ca2, cb2);
    let (a, b) = if too_big(a) || too_big(b) {
        let mut e2 = e;
        let (mut x, mut y) = (a.clone(), b.clone());
        while (too_big(&x) || too_big(&y)) && e2 < 1000 {
            e2 += 1;
            x = x.coarsen(e2);
            y = y.coarsen(e2);
        }
        ca2 = x;
        cb2 = y;
        (&ca2, &cb2)
    } else {
        (a, b)
    };
    let e = a.e;
    // entrywise upper bounds of the exact convolution (pld_conv.rs); the
    // upper-tail round-off needs the tilted pass only if the untilted bound's
    // whole mass would not fit in the truncation budget τ (it then costs at
    // most what one truncation may)
    let (ma, sa) = a.mean_sd();
    let (mb, sb) = b.mean_sd();
    let tilt = if ctx.skewed {
        // a sampled leaf's loss is skewed: its upper tail reaches many
        // standard deviations, and a tilt set by the spread would grow
        // there; set it by how far the kept upper tails reach instead
        // (for a Gaussian both give the same θ: z/σ = z²/(zσ))
        let reach = |g: &GridPld, m: f64| (g.lo + g.p.len() as i64 - 1) as f64 * h_of(g.e) - m;
        ctx.tilt_to(reach(a, ma).hypot(reach(b, mb)), e)
    } else {
        ctx.tilt(sa.hypot(sb), e)
    };
    let (p, underflow) = ctx.conv.convolve(&a.p, &b.p, tilt, ctx.tau);
    // the ∞ mass of the convolution of the stored measures, a∞·(B + b∞) + A·b∞
    // (A, B the finite masses; = 1 − (1 − a∞)(1 − b∞) for probabilities, but the
    // stored masses may exceed 1 by their rounding up), every term rounded up
    let inf =
        (a.inf * (mass_up(&b.p) + b.inf) + mass_up(&a.p) * b.inf + underflow) * (1.0 + 6.0 * U);
    let inf = inf.min(1.0);
    regularise(
        ctx,
        GridPld {
            e,
            lo: a.lo + b.lo,
            p,
            inf,
        },
    )
}

/// k-fold self-composition by repeated squaring.
///
/// Mass sent to ∞ while truncating a power node of m = 2^j copies is multiplied by up
/// to k/m in the end (the node enters the result that many times, and p_∞ composes as
/// 1 − Π(1 − p_∞)). Power nodes are therefore truncated with threshold τ·m/k, so each
/// truncation contributes ≤ τ to the final ∞ atom; result nodes enter once and use τ.
/// The caller must have regularised `base` with threshold τ/k.
fn self_compose(ctx: &mut Ctx, base: GridPld, k: u64) -> GridPld {
    let tau = ctx.tau;
    let total = k as f64;
    let mut rest = k;
    let mut m = 1.0f64;
    let mut result: Option<GridPld> = None;
    let mut power = base;
    loop {
        if rest & 1 == 1 {
            ctx.tau = tau;
            result = Some(match result {
                None => power.clone(),
                Some(r) => compose(ctx, &r, &power),
            });
        }
        rest >>= 1;
        if rest == 0 {
            break;
        }
        m *= 2.0;
        ctx.tau = (tau * (m / total).min(1.0)).max(1e-300);
        power = compose(ctx, &power, &power);
    }
    ctx.tau = tau;
    // k ≥ 1 on entry, so result is set; fall back to identity defensively
    result.unwrap_or_else(GridPld::identity)
}

/// Wrapper ordering nodes by standard deviation (smallest first in a max-heap).
struct Node {
    sd: f64,
    g: GridPld,
}
impl PartialEq for Node {
    fn eq(&self, o: &Self) -> bool {
        self.sd == o.sd
    }
}
impl Eq for Node {}
impl PartialOrd for Node {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Node {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.sd.total_cmp(&self.sd)
    }
}

pub(crate) fn pld_epsilon(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    if plan.items.is_empty() {
        Split::of(plan)?;
        return Ok((0.0, "empty plan".into()));
    }
    if delta <= 0.0 {
        Split::of(plan)?;
        if plan.all_pure() {
            return Ok((plan.pure_sum(), "δ = 0: maximum privacy loss Σε".into()));
        }
        return Err(AccountingError::InfiniteEpsilon(
            "PLD: Gaussian noise has no finite ε at δ = 0".into(),
        ));
    }
    if let Some(eps0) = lone_laplace(plan) {
        let (_, upper) = lone_laplace_epsilon(eps0, delta);
        return Ok((
            upper,
            format!("one Laplace release: its privacy-loss distribution in closed form, ε = ε₀ + 2·ln(1 − δ) with ε₀ = {eps0:.6e} (exact)"),
        ));
    }
    let dirs = directions(plan)?;
    let mut worst: Option<(f64, String)> = None;
    let mut each = vec![];
    for &dir in dirs {
        let (eps, detail) = epsilon_in(plan, delta, dir)?;
        each.push(format!("{} {eps:.6}", dir.name()));
        if worst.as_ref().is_none_or(|w| eps > w.0) {
            worst = Some((eps, detail));
        }
    }
    let (eps, detail) = worst.unwrap_or((0.0, String::new()));
    if dirs.len() > 1 {
        return Ok((
            eps,
            format!(
                "Poisson-sampled releases: composed in both orders of neighbours (ε {}), the larger kept; {detail}",
                each.join(", ")
            ),
        ));
    }
    Ok((eps, detail))
}

/// The orders of neighbours the plan must be composed in: one when every
/// pair is symmetric, both when a release is on a Poisson sample.
pub(crate) fn directions(plan: &Plan) -> Result<&'static [Direction], AccountingError> {
    Ok(if Split::of(plan)?.has_sampled() {
        &[Direction::Remove, Direction::Add]
    } else {
        &[Direction::Remove]
    })
}

/// ε at δ of the plan composed in the order `dir`.
fn epsilon_in(plan: &Plan, delta: f64, dir: Direction) -> Result<(f64, String), AccountingError> {
    let composed = compose_plan(plan, delta, dir, Resolution::Claim)?;
    let (g, mu) = (&composed.curve.g, composed.curve.mu);
    if g.inf >= delta {
        return Err(AccountingError::InfiniteEpsilon(format!(
            "PLD: mass at infinity {:.3e} ≥ δ",
            g.inf
        )));
    }
    let Some(eps) = epsilon_at(&composed.curve, delta)? else {
        return Ok((0.0, "δ(0) already below target".into()));
    };
    // the Gaussian releases composed exactly, when there are any
    let gaussian = if mu > 0.0 {
        format!(", Gaussian part μ = {mu:.6}")
    } else {
        String::new()
    };
    let detail = format!(
        "PLD, connect-the-dots grid h = 2^{} ({} points), {} leaf groups{gaussian}, mass at ∞ {:.2e}{}; {}",
        g.e,
        g.p.len(),
        composed.leaves,
        g.inf,
        composed.shapes_note,
        composed.error_terms
    );
    Ok((eps, detail))
}

/// ε₀ of a plan that is ONE release of one Laplace coordinate, whose
/// ε(δ) the PLD accountant gives in closed form ([`lone_laplace_epsilon`]).
pub(crate) fn lone_laplace(plan: &Plan) -> Option<f64> {
    match plan.items.as_slice() {
        [only] if only.count == 1 => match only.eff {
            crate::Eff::Laplace {
                eps, scalar: true, ..
            } => Some(eps),
            _ => None,
        },
        _ => None,
    }
}

/// [`compose_plan`]'s result: the curve and what the detail string names.
pub(crate) struct Composed {
    pub(crate) curve: Curve,
    leaves: usize,
    shapes_note: String,
    error_terms: String,
}

/// Every release of `plan` composed into one dominating pair; `delta` sets
/// the truncation budget only (soundness does not depend on it, see
/// [`Ctx::for_leaves`]).
pub(crate) fn compose_plan(
    plan: &Plan,
    delta: f64,
    dir: Direction,
    res: Resolution,
) -> Result<Composed, AccountingError> {
    let split = Split::of(plan)?;
    if plan.total_count() > 1e12 {
        return Err(AccountingError::NotApplicable(
            "PLD: more than 10^12 releases; use RDP / zCDP / GDP".into(),
        ));
    }
    let mu = super::gdp::mu_upper(split.mu2, plan.items.len());
    let mu2 = split.mu2;
    let leaves = split.leaves(dir);
    let grid = compose_with(&leaves, mu, mu2, delta, false, res)?;
    if !pld_binomial::has_binomial(&leaves) {
        return Ok(grid);
    }
    // both are dominating pairs: the one with the smaller ε at δ is kept
    // (the grid composition on a tie), so no claim moves up
    let Ok(exact) = compose_with(&leaves, mu, mu2, delta, true, res) else {
        return Ok(grid);
    };
    let eps = |c: &Composed| epsilon_at(&c.curve, delta).map(|e| e.unwrap_or(0.0));
    match (eps(&grid), eps(&exact)) {
        (Ok(a), Ok(b)) if b < a => Ok(exact),
        (Err(_), Ok(_)) => Ok(exact),
        _ => Ok(grid),
    }
}

/// The leaves composed under one choice of [`Ctx::binomial`].
fn compose_with(
    leaves: &[(LeafKind, u64)],
    mu: f64,
    mu2: f64,
    delta: f64,
    binomial: bool,
    res: Resolution,
) -> Result<Composed, AccountingError> {
    let mut ctx = Ctx::for_leaves(leaves, mu2, delta, res);
    ctx.binomial = binomial;
    let (g, shapes_note) = compose_leaves(&mut ctx, leaves, mu2)?;
    Ok(Composed {
        curve: Curve::new(g, mu),
        leaves: leaves.len(),
        shapes_note,
        error_terms: error_terms(&ctx),
    })
}

impl Ctx {
    /// The same parameters with a convolver of its own (whose statistics
    /// keep each added term), for work on another thread.
    fn fork(&self) -> Ctx {
        Ctx {
            conv: Convolver::logged(),
            tau: self.tau,
            e_global: self.e_global,
            binomial: self.binomial,
            delta: self.delta,
            skewed: self.skewed,
            res_node: self.res_node,
        }
    }

    /// The context of a composition of `leaves` and a Gaussian part of
    /// Σ μ² = `mu2` at target `delta`: the global grid exponent from the
    /// total spread, and the truncation budget.
    fn for_leaves(leaves: &[(LeafKind, u64)], mu2: f64, delta: f64, res: Resolution) -> Ctx {
        let var_total: f64 = leaves
            .iter()
            .map(|(k, c)| *c as f64 * leaf_sd(k).powi(2))
            .sum::<f64>()
            + mu2;
        let sd_total = var_total.sqrt();
        let e_global = if sd_total > 0.0 {
            (sd_total / RES_GLOBAL).log2().floor() as i32
        } else {
            0
        };
        // Truncation budget. Soundness does not depend on it: truncated upper mass is added
        // to the ∞ atom (counted in full by δ(ε)) and truncated lower mass is only moved up
        // to the lowest kept point. It only trades tightness for speed: the total truncated
        // mass is ≈ TRUNC_FRACTION·δ, so the final ε moves by a negligible amount, while
        // the per-step threshold stays far above the FFT round-off floor (~1e-17 of total
        // mass spread over the tails). With a threshold below that floor (as with 1e-9·δ)
        // the noise stops every truncation and the grid of a k-fold self-composition grows
        // to the full support ±k·ε instead of ±O(√k·ε).
        let n_ops = (leaves.len() as f64 + 1.0) * 130.0;
        let standard = delta * TRUNC_FRACTION / n_ops;
        let skewed = leaves
            .iter()
            .any(|(k, _)| matches!(k, LeafKind::Sampled(..)));
        let (tau, refine) = match res {
            Resolution::Standard => (standard, 1.0),
            Resolution::Claim => {
                let fine = delta * TRUNC_FRACTION_CLAIM / n_ops;
                let small = leaves.len() <= SMALL_PLAN_LEAVES;
                (
                    fine.max(standard.min(TRUNC_FLOOR)),
                    if small { SMALL_REFINE } else { 1.0 },
                )
            }
        };
        // a sampled plan's grid is finer already, at any resolution
        let res_node = if skewed { 8.0 } else { refine } * RES_NODE;
        Ctx {
            conv: Convolver::new(),
            tau: tau.max(1e-300),
            e_global,
            binomial: false,
            delta,
            skewed,
            res_node,
        }
    }
}

/// Every leaf composed (Huffman-style: always the two narrowest first),
/// then coarsened to [`RES_NODE`] of the total spread (Gaussian part
/// `mu2` included) to make evaluation cheap; and the shapes note.
fn compose_leaves(
    ctx: &mut Ctx,
    leaves: &[(LeafKind, u64)],
    mu2: f64,
) -> Result<(GridPld, String), AccountingError> {
    let mut note = String::new();
    let mut heap: BinaryHeap<Node> = BinaryHeap::new();
    for g in leaf_plds(ctx, leaves, &mut note)? {
        let (_, sd) = g.mean_sd();
        heap.push(Node { sd, g });
    }
    while heap.len() > 1 {
        // two pops are guaranteed by the loop condition
        let (Some(a), Some(b)) = (heap.pop(), heap.pop()) else {
            break;
        };
        let g = compose(ctx, &a.g, &b.g);
        let (_, sd) = g.mean_sd();
        heap.push(Node { sd, g });
    }
    let mut g = heap.pop().map(|n| n.g).unwrap_or_else(GridPld::identity);
    let te = (((g.mean_sd().1.powi(2) + mu2).sqrt() / ctx.res_node())
        .log2()
        .floor() as i32)
        .max(g.e);
    if te > g.e && g.p.len() > 1 {
        g = g.coarsen(te);
        g.truncate(ctx.tau, ctx.tau_low());
    }
    Ok((g, note))
}

/// The least ε with δ(ε) ≤ `delta` for the composed curve (its Gaussian
/// part μ rounded up); `None` when δ(0) is already below.
fn epsilon_at(curve: &Curve, delta: f64) -> Result<Option<f64>, AccountingError> {
    let (mu, h) = (curve.mu, curve.h());
    let delta_of = |eps: f64| curve.delta_upper(eps);
    let d0 = delta_of(0.0);
    if d0 <= delta {
        return Ok(None);
    }
    let lmax = curve.loss_max();
    let hi =
        lmax + if mu > 0.0 {
            gdp_epsilon(mu, delta * 0.5)
        } else {
            0.0
        } + h;
    // δ at the points the bracket search tried, for the search's
    // interpolation at the bracket's ends
    let mut at: Vec<(f64, f64)> = Vec::with_capacity(8);
    let Bracket::Found {
        first_held: hi,
        last_failed,
    } = find_bracket(
        hi,
        200,
        |x| Some(x * 2.0 + 1.0),
        |x| {
            let d = delta_of(x);
            at.push((x, d));
            d.partial_cmp(&delta) != Some(Ordering::Greater)
        },
    )
    else {
        return Err(AccountingError::InfiniteEpsilon(
            "PLD: could not bracket ε".into(),
        ));
    };
    // (each end was tried; were one not, it is evaluated again)
    let tried = |x: f64| {
        at.iter()
            .rev()
            .find(|&&(y, _)| y == x)
            .map_or_else(|| delta_of(x), |&(_, d)| d)
    };
    let d_hi = tried(hi);
    let lo = match last_failed {
        Some(x) => (x, tried(x)),
        None => (0.0, d0),
    };
    Ok(Some(profile_root(
        lo,
        (hi, d_hi),
        delta,
        &Bisection::arithmetic(1e-12, 1e-14, End::Upper),
        delta_of,
    )))
}

/// The error terms added on the way, for the detail string.
fn error_terms(ctx: &Ctx) -> String {
    let st = &ctx.conv.stats;
    format!(
        "error terms: FFT round-off bounded per entry (Higham Thm 24.2) on {} FFT convolutions, {} with an exponentially tilted second pass, {:.2e} of mass added in all; {} direct convolutions, grid steps and tilts rounded up by ≤ {:.1e} relative each; tails cut at τ = {:.1e} (upper, to ∞) and ≤ {:.1e} of mass (lower, moved up)",
        st.fft,
        st.tilted,
        st.added_mass,
        st.direct,
        st.max_rel.max(1.01 * 9.0 * U),
        ctx.tau,
        ctx.tau_low().max(ctx.tau)
    )
}

#[cfg(test)]
#[path = "../../tests/it/common/mod.rs"]
mod common;

#[cfg(test)]
mod tests {
    use super::pld_leaves::rr_mass_up;
    use super::*;
    use serde_json::json;

    /// ε from 10⁻⁸ to 700, 60 per decade, plus the exact integers 1 to 40.
    fn rr_cases() -> Vec<f64> {
        let mut eps: Vec<f64> = (0..=650)
            .map(|i| 10f64.powf(-8.0 + i as f64 / 60.0))
            .collect();
        eps.extend((1..=40).map(f64::from));
        eps
    }

    fn ulps_cases() -> Vec<f64> {
        let mut u: Vec<f64> = (0..200).map(|i| i as f64 * 0.37).collect();
        u.extend([1e3, 1e4 + 0.5, 2.0 * ELEM_ULPS + 750.0 + 8.0]);
        u
    }

    #[test]
    fn rr_masses_and_the_round_up_factor_are_upper_bounds() {
        let rr: Vec<_> = rr_cases()
            .into_iter()
            .map(|e| {
                let raw = |x: f64| 1.0 / (1.0 + x);
                json!([
                    e,
                    rr_mass_up(libm::exp(-e)),
                    rr_mass_up(libm::exp(e)),
                    raw((-e).exp()),
                    raw(e.exp())
                ])
            })
            .collect();
        let mut factors: Vec<_> = ulps_cases()
            .into_iter()
            .map(|u| json!([u, round_up_factor(u)]))
            .collect();
        // negative control: the same factor without `next_up`
        let bare: Vec<_> = ulps_cases()
            .into_iter()
            .map(|u| json!([u, 1.0 + 1.01 * (u + 2.0) * U]))
            .collect();
        factors.extend(bare);
        let doc = json!({ "rr": rr, "factors": factors });
        let Some(out) = common::reference("rr_leaf/reference.py", &doc) else {
            return;
        };
        let mut raw_below = 0;
        for (e, r) in rr_cases().into_iter().zip(out["rr"].as_array().unwrap()) {
            for side in ["up_plus", "up_minus"] {
                let d = r[side].as_f64().unwrap();
                assert!(d >= 0.0, "ε = {e}: {side} below the exact mass by {d:e}");
                assert!(d <= 2.0 * 1.01 * (ELEM_ULPS + 3.0) * U + 4.0 * U);
            }
            for side in ["raw_plus", "raw_minus"] {
                raw_below += usize::from(r[side].as_f64().unwrap() < 0.0);
            }
        }
        // the unrounded masses fall below the exact ones: the round-up matters
        assert!(raw_below > 50, "only {raw_below} raw masses below exact");
        let f = out["factors"].as_array().unwrap();
        let (ours, bare) = f.split_at(ulps_cases().len());
        for (u, d) in ulps_cases().into_iter().zip(ours) {
            let d = d.as_f64().unwrap();
            assert!((0.0..=4.0).contains(&d), "ulps = {u}: factor off by {d}u");
        }
        assert!(bare.iter().any(|d| d.as_f64().unwrap() < 0.0));
    }
}
