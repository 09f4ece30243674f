//! The PLD accountant's leaf for a discrete Gaussian over several
//! coordinates: one dominating pair for every shift shape at once.
//!
//! **Shapes.** The contribution bounds limit the shift vector d ∈ ℤᵐ to a
//! set whose worst members are finitely many *maximal shapes*
//! (`dgauss_shapes.rs`: sign, order and zero entries do not matter, and
//! raising one |dᵢ| gives a dominating pair). For a shape a = (a₁, …, a_k)
//! the pair is ⊗ᵢ (N_ℤ(0, σ²), N_ℤ(aᵢ, σ²)); its PLD is the convolution of
//! the one-dimensional PLDs, each put on the grid by connect-the-dots
//! (Doroshenko et al. 2022) and composed with the accountant's own
//! machinery (tails to ∞, FFT round-off to ∞). So each shape s gets a grid
//! pair (P_s, Q_s) whose hockey-stick curve δ_s dominates the shape's.
//!
//! **One pair for all shapes.** A neighbouring pair of datasets realises
//! one shape, in one of two orders; both orders have the same curve (the
//! discrete Gaussian's profile is symmetric: y ↦ d − y swaps the pair). So a
//! pair (P*, Q*) with δ*(ε) ≥ max_s δ_s(ε) for every real ε dominates the
//! mechanism (Zhu, Dong & Wang 2022, Def 8), and dominating pairs compose
//! adaptively with the rest of the plan (their Thm 10).
//!
//! **Construction.** In x = e^ε, a grid pair's curve is
//! δ(x) = p_∞ + Σ_k p_k (1 − x/x_k)_+, x_k = e^{kh}: convex, decreasing,
//! piecewise linear with kinks only at grid points, δ(0) = total P-mass = 1.
//! Conversely masses p_k ≥ 0 are read off a convex piecewise-linear curve
//! through its kinks: p_k = x_k·(slope right of x_k − slope left of x_k),
//! i.e. p_k = (g_k − e^{−h} g_{k+1})/(1 − e^{−h}) with g_k = D_{k−1} − D_k
//! the decrements of its values D_j at the grid points. The maximum of
//! convex functions is convex, and the chords of the maximum between grid
//! points lie above every δ_s (each is linear there). So the curve through
//! D_j = max_s δ_s(x_j), linear in x between grid points, constant p_∞* =
//! max_s p_∞,s to the right of all supports and the chord to (0, 1) left of
//! them, is the curve of a genuine pair: masses ≥ 0 (convexity), total
//! P-mass 1 (δ*(0) = 1), Q-mass (1 − δ*(x_L))/x_L ≤ 1 (δ_s(x) ≥ 1 − x for
//! every pair) — and it dominates every shape. It is not looser than the
//! worst shape anywhere except between grid points where the argmax
//! changes.
//!
//! **Floating point.** Where one shape is the maximum at three neighbouring
//! grid points, the mass is that shape's mass, copied; only where the
//! maximum changes shape (the argmax is chosen with a 4η hysteresis so that
//! near-ties do not flip it) is a mass computed from differences, and a
//! negative result set to 0 (which only raises the curve to its left). The
//! lowest grid point L (below every support) takes the remaining mass,
//! max_s(total mass of s) − Σ_{k>L} p*_k − p*_∞ (not below 0). The result is
//! then **verified**, shape by shape, at every grid point, on the
//! differences d_k = p*_k − p_{s,k}: T_j = (p*_∞ − p_{s,∞}) +
//! Σ_{k>j} d_k (1 − e^{−(k−j)h}) must be ≥ 0, computed by the positive
//! recursions S_j = d_j + e^{−h}S_{j+1}, T_{j−1} = T_j + (1 − e^{−h})S_j
//! with an error bound η·T^abs_j (the same recursion on |d_k|;
//! η = 1.01((6 + 4)n + 10)u covers e^{−h} to 4 ulps raised to n powers,
//! the subtraction, the products and sums over n grid points). A deficit is
//! repaired by moving twice that mass (divided by e^{−h}) from the lowest
//! atoms to +∞ — raising the curve at every grid point above them by at
//! least that much — and verified again (at most eight rounds, else the
//! accountant declines). The differences vanish where the copied shape is
//! the maximum, so the verification's error is tiny in the tail; it is
//! largest where δ ≈ 1 (ε far below 0): there every shape's curve nears
//! 1 − e^ε, their differences fall below the bound η·T^abs (≈ 10⁻¹¹ for a
//! few thousand grid points), and that much mass can end up at +∞ — it
//! shows in the detail's "mass at ∞" and matters only for δ below ≈ 10⁻⁹.
//! Between grid points
//! both curves are linear, so the checks at grid points cover [x_L, ∞); on
//! (0, x_L) both are linear from their total masses at 0 (the anchor makes
//! P*'s the largest) to the checked values at x_L.

use super::pld_dlaplace::dlaplace_leaf;
use super::pld_laplace::laplace_leaf;
use super::pld_leaves::dgauss_leaf;
use super::{compose, h_of, regularise, self_compose, Ctx, GridPld};
use crate::dgauss::{DiscreteGaussian, MAX_EXACT_SIGMA};
use crate::dgauss_shapes::{maximal_shapes, Shape, ShapeBound};
use crate::special::{div_up, ELEM_ULPS, U};
use crate::AccountingError;
use std::collections::HashMap;

/// Most grid values kept for the maximum (shapes × grid points).
const MAX_CELLS: usize = 1 << 24;

fn declined(why: String) -> AccountingError {
    AccountingError::NotApplicable(format!(
        "PLD: discrete Gaussian over several coordinates: {why}; RDP and zCDP still apply"
    ))
}

/// The noise on each coordinate.
#[derive(Debug, Clone, Copy)]
pub(super) enum Coord {
    /// N_ℤ(0, σ²)
    DGauss(f64),
    /// Lap(0, b): the one-dimensional pair for an integer shift a is the
    /// Laplace leaf at ε = a/b (`pld_laplace.rs`)
    Laplace(f64),
    /// the discrete Laplace with P(y) ∝ e^{−|y|/b} on ℤ: a shift a gives
    /// a + 1 loss atoms (`pld_dlaplace.rs`)
    DLaplace(f64),
}

impl Coord {
    fn declined(&self, why: String) -> AccountingError {
        match self {
            Coord::DGauss(_) => declined(why),
            Coord::Laplace(_) => AccountingError::NotApplicable(format!(
                "PLD: Laplace over several coordinates: {why}"
            )),
            Coord::DLaplace(_) => AccountingError::NotApplicable(format!(
                "PLD: discrete Laplace over several coordinates: {why}"
            )),
        }
    }

    /// The one-dimensional grid PLD of the pair (noise, noise + a).
    fn leaf(&self, e: i32, a: u64) -> Result<GridPld, AccountingError> {
        match *self {
            Coord::DGauss(sigma) => DiscreteGaussian::new(sigma, a as i64)
                .map(|dg| dgauss_leaf(e, &dg))
                .ok_or_else(|| declined(format!("no exact table for σ = {sigma}"))),
            // a ≤ 2⁴⁰ is exact as a float; ε = a/b rounded up
            Coord::Laplace(b) => Ok(laplace_leaf(e, div_up(a as f64, b))),
            Coord::DLaplace(b) => {
                dlaplace_leaf(e, a, b).ok_or_else(|| self.declined(format!("shift {a}, b = {b}")))
            }
        }
    }
}

/// The dominating grid pair of one release of noise `coord` on every
/// coordinate of a query whose shift vectors obey `b`, used `count` times
/// by the caller; and the number of maximal shapes it covers.
pub(super) fn shapes_leaf(
    ctx: &mut Ctx,
    e: i32,
    coord: Coord,
    b: &ShapeBound,
    count: u64,
) -> Result<(GridPld, usize), AccountingError> {
    match coord {
        Coord::DGauss(sigma) if !(sigma > 0.0 && sigma <= MAX_EXACT_SIGMA) => {
            return Err(declined(format!("σ = {sigma} beyond the exact tables")));
        }
        Coord::Laplace(scale) | Coord::DLaplace(scale) if !(scale > 0.0 && scale.is_finite()) => {
            return Err(coord.declined(format!("b = {scale}")));
        }
        _ => {}
    }
    let shapes = maximal_shapes(b).map_err(|w| coord.declined(w))?;
    let tau = ctx.tau;
    ctx.tau = (tau / count.max(1) as f64).max(1e-300);
    let mut cache: HashMap<u64, GridPld> = HashMap::new();
    let mut grids = Vec::with_capacity(shapes.len());
    for s in &shapes {
        match shape_pld(ctx, e, coord, s, &mut cache) {
            Ok(g) => grids.push(g),
            Err(err) => {
                ctx.tau = tau;
                return Err(err);
            }
        }
    }
    ctx.tau = tau;
    let n = shapes.len();
    let e_max = grids.iter().map(|g| g.e).max().unwrap_or(e);
    let grids: Vec<GridPld> = grids.iter().map(|g| g.coarsen(e_max)).collect();
    if grids.len() == 1 {
        return Ok((
            grids.into_iter().next().unwrap_or_else(GridPld::identity),
            n,
        ));
    }
    Ok((max_profile(&grids)?, n))
}

/// The grid PLD of one shape: the convolution of its coordinates' PLDs.
fn shape_pld(
    ctx: &mut Ctx,
    e: i32,
    coord: Coord,
    shape: &Shape,
    cache: &mut HashMap<u64, GridPld>,
) -> Result<GridPld, AccountingError> {
    let mut acc: Option<GridPld> = None;
    for &(a, k) in shape {
        let leaf = match cache.get(&a) {
            Some(g) => g.clone(),
            None => {
                let g = coord.leaf(e, a)?;
                cache.insert(a, g.clone());
                g
            }
        };
        let tau = ctx.tau;
        ctx.tau = (tau / k as f64).max(1e-300);
        let leaf = regularise(ctx, leaf);
        ctx.tau = tau;
        let part = self_compose(ctx, leaf, k);
        acc = Some(match acc {
            None => part,
            Some(g) => compose(ctx, &g, &part),
        });
    }
    acc.ok_or_else(|| coord.declined("empty shape".into()))
}

/// The shapes' grids on one index range [lo, hi] (hi inclusive): masses
/// padded with zeros.
struct Common {
    lo: i64,
    n: usize,
    /// e^{−h} and 1 − e^{−h}
    r: f64,
    omr: f64,
}

impl Common {
    fn of(grids: &[GridPld]) -> Self {
        let lo = grids.iter().map(|g| g.lo).min().unwrap_or(0) - 1;
        let hi = grids
            .iter()
            .map(|g| g.lo + g.p.len() as i64 - 1)
            .max()
            .unwrap_or(0)
            + 1;
        let h = h_of(grids[0].e);
        Common {
            lo,
            n: (hi - lo + 1) as usize,
            r: libm::exp(-h),
            omr: -libm::expm1(-h),
        }
    }

    /// mass of `g` at common index i
    fn at(&self, g: &GridPld, i: usize) -> f64 {
        let k = self.lo + i as i64 - g.lo;
        if k < 0 {
            return 0.0;
        }
        g.p.get(k as usize).copied().unwrap_or(0.0)
    }

    /// δ_g at every grid point, δ(x_j) = p_∞ + Σ_{k>j} p_k(1 − e^{−(k−j)h}),
    /// by the positive recursions of the module doc.
    fn curve(&self, g: &GridPld) -> Vec<f64> {
        let mut v = vec![0.0; self.n];
        let (mut s, mut a) = (0.0, 0.0);
        for i in (0..self.n).rev() {
            v[i] = g.inf + a;
            s = self.at(g, i) + self.r * s;
            a += self.omr * s;
        }
        v
    }
}

/// One grid pair whose curve is ≥ every grid's at every ε (module doc).
fn max_profile(grids: &[GridPld]) -> Result<GridPld, AccountingError> {
    let c = Common::of(grids);
    if grids.len().saturating_mul(c.n) > MAX_CELLS {
        return Err(declined(format!(
            "{} shapes × {} grid points is too many",
            grids.len(),
            c.n
        )));
    }
    let curves: Vec<Vec<f64>> = grids.iter().map(|g| c.curve(g)).collect();
    let eta = 1.01 * ((6.0 + ELEM_ULPS) * c.n as f64 + 10.0) * U;
    let arg = argmax_with_hysteresis(&curves, 4.0 * eta);
    let mut p = masses(&c, grids, &curves, &arg);
    let inf = grids.iter().map(|g| g.inf).fold(0.0, f64::max);
    let total = grids.iter().map(|g| g.mass() + g.inf).fold(0.0, f64::max);
    let rest: f64 = p[1..].iter().sum::<f64>() + inf;
    p[0] = (total - rest).max(0.0);
    let mut g = GridPld {
        e: grids[0].e,
        lo: c.lo,
        p,
        inf,
    };
    for _ in 0..8 {
        let deficit = grids
            .iter()
            .map(|s| deficit(&c, &g, s, eta))
            .fold(0.0, f64::max);
        if deficit == 0.0 {
            return Ok(g.trimmed_zeros());
        }
        // twice the deficit: what is taken from atoms above the lowest
        // point raises the points below it by less
        move_to_infinity(&mut g, 2.0 * deficit / c.r);
    }
    Err(declined(
        "the maximum over shapes could not be verified".into(),
    ))
}

/// The shape taken as the maximum at each grid point, from the top down; it
/// changes only when another curve is above by more than `tol` relative.
fn argmax_with_hysteresis(curves: &[Vec<f64>], tol: f64) -> Vec<usize> {
    let n = curves[0].len();
    let mut arg = vec![0; n];
    let mut cur = (0..curves.len())
        .max_by(|&a, &b| curves[a][n - 1].total_cmp(&curves[b][n - 1]))
        .unwrap_or(0);
    for i in (0..n).rev() {
        let best = (0..curves.len())
            .max_by(|&a, &b| curves[a][i].total_cmp(&curves[b][i]))
            .unwrap_or(cur);
        if curves[best][i] > curves[cur][i] * (1.0 + tol) {
            cur = best;
        }
        arg[i] = cur;
    }
    arg
}

/// Masses of the curve through D_j = curves[arg j][j]: copied where one
/// shape is the maximum at k − 1, k, k + 1, from the decrements elsewhere
/// (not below 0). Index 0 (the anchor) is left to the caller.
fn masses(c: &Common, grids: &[GridPld], curves: &[Vec<f64>], arg: &[usize]) -> Vec<f64> {
    let n = c.n;
    let d = |j: usize| curves[arg[j]][j];
    let dec = |k: usize| if k >= n { 0.0 } else { d(k - 1) - d(k) };
    let mut p = vec![0.0; n];
    for k in 1..n {
        let a = arg[k];
        let same = arg[k - 1] == a && (k + 1 >= n || arg[k + 1] == a);
        p[k] = if same {
            c.at(&grids[a], k)
        } else {
            ((dec(k) - c.r * dec(k + 1)) / c.omr).max(0.0)
        };
    }
    p
}

/// How far (absolute) the candidate's curve may fall below grid `s`'s at
/// some grid point, by the verified recursion of the module doc; 0 when it
/// is proven above everywhere.
fn deficit(c: &Common, cand: &GridPld, s: &GridPld, eta: f64) -> f64 {
    let d_inf = cand.inf - s.inf;
    let (mut t, mut t_abs) = (d_inf, d_inf.abs());
    let (mut sum, mut sum_abs) = (0.0, 0.0);
    let mut worst: f64 = 0.0;
    for i in (0..c.n).rev() {
        let err = eta * t_abs;
        if t < err {
            worst = worst.max(err - t);
        }
        let d = c.at(cand, i) - c.at(s, i);
        sum = d + c.r * sum;
        sum_abs = d.abs() + c.r * sum_abs;
        t += c.omr * sum;
        t_abs += c.omr * sum_abs;
    }
    worst
}

/// Move `m` of P-mass from the lowest atoms to +∞.
fn move_to_infinity(g: &mut GridPld, m: f64) {
    let mut left = m;
    for x in g.p.iter_mut() {
        let take = x.min(left);
        *x -= take;
        left -= take;
        if left <= 0.0 {
            break;
        }
    }
    g.inf += m - left.max(0.0);
}
