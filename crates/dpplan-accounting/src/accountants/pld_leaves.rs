//! The PLD accountant's leaves: a plan split into its Gaussian part and
//! the releases of each grid leaf, counted by parameters (many distinct
//! pure ε bucketed onto a geometric grid first), and each leaf's grid PLD
//! composed with itself as often as it is used (on two threads for many
//! leaves).

use super::pld_dgauss::Coord;
use super::pld_laplace::laplace_leaf;
use super::pld_sampled::{Direction, Sampled};
use super::{pld_binomial, pld_dgauss, pld_sampled};
use super::{regularise, self_compose, target_e, Ctx, GridPld};
use super::{BUCKET_ABOVE, BUCKET_RATIO};
use crate::dgauss::DiscreteGaussian;
use crate::dgauss_shapes::ShapeBound;
use crate::grid::GeometricGrid;
use crate::special::{ELEM_ULPS, U};
use crate::{AccountingError, Eff, Plan};
use std::collections::BTreeMap;

/// Which Laplace noise a shapes leaf has on each coordinate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Noise {
    Laplace,
    DiscreteLaplace,
}

/// Above this many distinct multi-coordinate Laplace releases in one plan,
/// they are accounted as randomized response (see [`Split::leaves`]).
const MAX_LAPLACE_SHAPE_LEAVES: usize = 16;

#[derive(Debug, Clone, Copy)]
pub(super) enum LeafKind {
    Laplace(f64),
    Rr(f64),
    DGauss(f64, i64),
    /// σ and the shift bounds of a multi-coordinate discrete Gaussian
    DGaussShapes(f64, ShapeBound),
    /// b, the shift bounds and ε = Δ₁/b of a multi-coordinate Laplace
    /// release of an integer-valued query (its RR pair at ε if the shapes
    /// are too many)
    LaplaceShapes(f64, ShapeBound, f64, Noise),
    /// a mechanism on a Poisson sample, in one order (`pld_sampled.rs`)
    Sampled(Sampled, Direction),
}

pub(super) fn leaf_sd(k: &LeafKind) -> f64 {
    match *k {
        LeafKind::Laplace(e) | LeafKind::Rr(e) => e,
        LeafKind::DGauss(s, d) => d as f64 / s,
        LeafKind::DGaussShapes(s, b) => b.l2_max() / s,
        LeafKind::LaplaceShapes(scale, b, eps, _) => (b.l2_max() / scale).min(eps),
        LeafKind::Sampled(s, _) => s.sd(),
    }
}

/// A plan split into its Gaussian part (Σ μ², composed exactly at the end)
/// and the releases of each grid leaf, counted by parameters.
#[derive(Default)]
pub(super) struct Split {
    pub(super) mu2: f64,
    lap: BTreeMap<u64, u64>,
    rr: BTreeMap<u64, u64>,
    dgs: BTreeMap<(u64, i64), u64>,
    shapes: BTreeMap<(u64, ShapeBound), u64>,
    /// (b, bounds, ε) of multi-coordinate Laplace releases
    lap_shapes: BTreeMap<(u64, ShapeBound, u64, Noise), u64>,
    /// (kind: 0 Gaussian μ, 1 Laplace ε, 2 randomized response ε; the
    /// parameter and q as bits) of releases on a Poisson sample
    sampled: BTreeMap<(u8, u64, u64), u64>,
}

impl Split {
    pub(super) fn of(plan: &Plan) -> Result<Split, AccountingError> {
        let mut s = Split::default();
        let add = |c: &mut u64, n: u64| *c = c.saturating_add(n);
        for it in &plan.items {
            match it.eff {
                Eff::Gauss { mu } => s.mu2 += it.count as f64 * mu * mu,
                Eff::Laplace {
                    eps, scalar: true, ..
                } => add(s.lap.entry(eps.to_bits()).or_insert(0), it.count),
                Eff::Laplace {
                    eps,
                    scalar: false,
                    shape: Some((b, bound)),
                } => add(
                    s.lap_shapes
                        .entry((b, bound, eps.to_bits(), Noise::Laplace))
                        .or_insert(0),
                    it.count,
                ),
                Eff::DLaplace {
                    eps,
                    shape: Some((b, bound)),
                } => add(
                    s.lap_shapes
                        .entry((b, bound, eps.to_bits(), Noise::DiscreteLaplace))
                        .or_insert(0),
                    it.count,
                ),
                // any ε-DP mechanism is dominated by randomized response
                // (Kairouz et al. 2015); the exponential mechanism's
                // bounded range is not used here
                Eff::Laplace {
                    eps,
                    scalar: false,
                    shape: None,
                }
                | Eff::DLaplace { eps, shape: None }
                | Eff::Exp { eps }
                | Eff::Pure { eps } => {
                    add(s.rr.entry(eps.to_bits()).or_insert(0), it.count)
                }
                Eff::DGauss {
                    sigma, shift: Some(d), ..
                } if DiscreteGaussian::new(sigma, d).is_some() => {
                    add(s.dgs.entry((sigma.to_bits(), d)).or_insert(0), it.count)
                }
                Eff::DGauss {
                    sigma,
                    shift: None,
                    shape: Some(b),
                    ..
                } => add(s.shapes.entry((sigma.to_bits(), b)).or_insert(0), it.count),
                Eff::SGauss { mu, q } => add(
                    s.sampled.entry((0, mu.to_bits(), q.to_bits())).or_insert(0),
                    it.count,
                ),
                Eff::SPure {
                    base, q, laplace, ..
                } => add(
                    s.sampled
                        .entry((if laplace { 1 } else { 2 }, base.to_bits(), q.to_bits()))
                        .or_insert(0),
                    it.count,
                ),
                Eff::DGauss { .. } => {
                    return Err(AccountingError::NotApplicable(
                        "PLD: no exact dominating pair for a discrete Gaussian with σ > 2·10⁴, or over several coordinates without an ℓ∞ sensitivity".into(),
                    ))
                }
            }
        }
        Ok(s)
    }

    /// Whether some release is on a Poisson sample: its pair then differs
    /// between the two orders of neighbours, and the plan is composed in each.
    pub(super) fn has_sampled(&self) -> bool {
        !self.sampled.is_empty()
    }

    /// The grid leaves and how often each is used, the sampled ones in the
    /// order `dir`; many distinct ε are bucketed first ([`bucket`]).
    pub(super) fn leaves(&self, dir: Direction) -> Vec<(LeafKind, u64)> {
        let mut this = Split {
            mu2: self.mu2,
            lap: self.lap.clone(),
            rr: self.rr.clone(),
            dgs: self.dgs.clone(),
            shapes: self.shapes.clone(),
            lap_shapes: self.lap_shapes.clone(),
            sampled: BTreeMap::new(),
        };
        let mut leaves = this.unsampled_leaves();
        for (&(kind, p, q), &c) in &self.sampled {
            let (p, q) = (f64::from_bits(p), f64::from_bits(q));
            let s = match kind {
                0 => Sampled::Gauss { mu: p, q },
                1 => Sampled::Laplace { eps: p, q },
                _ => Sampled::Rr { eps: p, q },
            };
            leaves.push((LeafKind::Sampled(s, dir), c));
        }
        leaves
    }

    fn unsampled_leaves(&mut self) -> Vec<(LeafKind, u64)> {
        // many distinct multi-coordinate Laplace releases: each would cost
        // up to 48 shapes of convolutions; their RR pairs (which dominate
        // every shape) keep the accounting fast
        if self.lap_shapes.len() > MAX_LAPLACE_SHAPE_LEAVES {
            for ((_, _, e, _), c) in std::mem::take(&mut self.lap_shapes) {
                let v = self.rr.entry(e).or_insert(0);
                *v = v.saturating_add(c);
            }
        }
        let mut leaves: Vec<(LeafKind, u64)> = vec![];
        for (e, c) in bucket(std::mem::take(&mut self.lap)) {
            leaves.push((LeafKind::Laplace(e), c));
        }
        for (e, c) in bucket(std::mem::take(&mut self.rr)) {
            leaves.push((LeafKind::Rr(e), c));
        }
        for ((s, d), c) in std::mem::take(&mut self.dgs) {
            leaves.push((LeafKind::DGauss(f64::from_bits(s), d), c));
        }
        for ((s, b), c) in std::mem::take(&mut self.shapes) {
            leaves.push((LeafKind::DGaussShapes(f64::from_bits(s), b), c));
        }
        for ((s, b, e, n), c) in std::mem::take(&mut self.lap_shapes) {
            let kind = LeafKind::LaplaceShapes(f64::from_bits(s), b, f64::from_bits(e), n);
            leaves.push((kind, c));
        }
        leaves
    }
}

/// The counts of ε (as bits); above [`BUCKET_ABOVE`] distinct values, each
/// ε is rounded up onto a geometric grid: a larger-ε Laplace / RR
/// dominates; one ε per grid point (the largest rounded member, all equal
/// unless the round-up's check had to lift one).
fn bucket(m: BTreeMap<u64, u64>) -> Vec<(f64, u64)> {
    let v: Vec<(f64, u64)> = m.into_iter().map(|(b, c)| (f64::from_bits(b), c)).collect();
    if v.len() <= BUCKET_ABOVE {
        return v;
    }
    let grid = GeometricGrid::new(BUCKET_RATIO);
    let mut mm: BTreeMap<i64, (f64, u64)> = BTreeMap::new();
    for (e, c) in v {
        let (k, up) = grid.round_up(e);
        let v = mm.entry(k).or_insert((up, 0));
        v.0 = v.0.max(up);
        v.1 = v.1.saturating_add(c);
    }
    mm.into_values().collect()
}

/// One leaf's grid PLD, composed with itself as often as it is used; the
/// note names a multi-coordinate discrete Gaussian's shapes.
fn leaf_pld(
    ctx: &mut Ctx,
    k: LeafKind,
    count: u64,
    note: &mut String,
) -> Result<GridPld, AccountingError> {
    if let Some(g) = pld_binomial::binomial(ctx, k, count, note) {
        return Ok(g);
    }
    let e = target_e(ctx, leaf_sd(&k));
    let g = match k {
        LeafKind::Sampled(s, dir) => pld_sampled::sampled_leaf(e, s, dir, ctx.tau),
        LeafKind::Laplace(eps) => laplace_leaf(e, eps),
        LeafKind::Rr(eps) => rr_leaf(e, eps),
        LeafKind::DGauss(s, d) => match DiscreteGaussian::new(s, d) {
            Some(dg) => dgauss_leaf(e, &dg),
            None => {
                return Err(AccountingError::NotApplicable(
                    "PLD: discrete Gaussian σ too large".into(),
                ))
            }
        },
        LeafKind::DGaussShapes(s, b) => {
            let (g, n) = pld_dgauss::shapes_leaf(ctx, e, Coord::DGauss(s), &b, count)?;
            *note += &format!(", discrete Gaussian σ = {s}: max over {n} shift shapes");
            g
        }
        LeafKind::LaplaceShapes(scale, b, eps, noise) => {
            let (coord, name) = match noise {
                Noise::Laplace => (Coord::Laplace(scale), "Laplace"),
                Noise::DiscreteLaplace => (Coord::DLaplace(scale), "discrete Laplace"),
            };
            match pld_dgauss::shapes_leaf(ctx, e, coord, &b, count) {
                Ok((g, n)) => {
                    *note += &format!(", {name} b = {scale}: max over {n} shift shapes");
                    g
                }
                // too many shapes: the RR pair at ε still dominates
                Err(_) => {
                    *note += &format!(", {name} b = {scale}: randomized response at ε = {eps}");
                    rr_leaf(e, eps)
                }
            }
        }
    };
    // the leaf is used `count` times: scale its truncation threshold (see
    // self_compose)
    let tau = ctx.tau;
    ctx.tau = (tau / count.max(1) as f64).max(1e-300);
    let g = regularise(ctx, g);
    ctx.tau = tau;
    Ok(self_compose(ctx, g, count))
}

/// From this many leaves on, [`leaf_plds`] builds them on two threads.
const PARALLEL_LEAVES: usize = 8;

/// Each leaf's PLD ([`leaf_pld`]), in order. From [`PARALLEL_LEAVES`] leaves
/// on, the later leaves (about half the work: a leaf used c times costs
/// about log₂ c convolutions) are built on a second thread with a fork of
/// the context, and the fork's statistics and notes are appended after
/// this thread's: the same grids, statistics (the added mass summed term by
/// term in the same order) and note as one pass over the leaves, and the
/// same first error. (The leaves read the context's parameters only; τ is
/// changed and restored around each.)
pub(super) fn leaf_plds(
    ctx: &mut Ctx,
    leaves: &[(LeafKind, u64)],
    note: &mut String,
) -> Result<Vec<GridPld>, AccountingError> {
    fn build(
        ctx: &mut Ctx,
        part: &[(LeafKind, u64)],
        note: &mut String,
    ) -> Result<Vec<GridPld>, AccountingError> {
        part.iter()
            .map(|&(k, c)| leaf_pld(ctx, k, c, note))
            .collect()
    }
    if leaves.len() < PARALLEL_LEAVES {
        return build(ctx, leaves, note);
    }
    let work = |c: u64| 1.0 + (c.max(1) as f64).log2();
    let total: f64 = leaves.iter().map(|&(_, c)| work(c)).sum();
    let mut at = 0;
    let mut done = 0.0;
    while at < leaves.len() && done < total / 2.0 {
        done += work(leaves[at].1);
        at += 1;
    }
    let (first, second) = leaves.split_at(at);
    let mut fork = ctx.fork();
    let (mine, theirs) = std::thread::scope(|s| {
        let fork = &mut fork;
        let other = s.spawn(move || {
            let mut note = String::new();
            let grids = build(fork, second, &mut note);
            (grids, note)
        });
        let mine = build(ctx, first, note);
        let theirs = other
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (mine, theirs)
    });
    let mut grids = mine?;
    let (their_grids, their_note) = theirs;
    grids.extend(their_grids?);
    note.push_str(&their_note);
    ctx.conv.stats.append(fork.conv.stats);
    Ok(grids)
}

/// Randomized response RR_ε: atom 1/(1+e^{−ε}) at +ε, 1/(1+e^{ε}) at −ε,
/// each mass an upper bound of the exact one (see [`rr_mass_up`]).
fn rr_leaf(e: i32, eps: f64) -> GridPld {
    let atoms = [
        (eps, rr_mass_up(libm::exp(-eps))),
        (-eps, rr_mass_up(libm::exp(eps))),
    ];
    GridPld::from_atoms(e, &atoms, 0.0)
}

/// 1/(1 + x) for x = e^{±ε} computed by `libm::exp` (≤ [`ELEM_ULPS`] ulps),
/// rounded up: the relative error of x passes to 1 + x at most whole
/// (x/(1+x) ≤ 1), the addition and the division add u each, so the computed
/// value is within (ELEM_ULPS + 2)u of the exact one; the result is moved up
/// by the factor 1 + 1.01(ELEM_ULPS + 3)u (the + 1 the product's rounding)
/// and then to the next double. An overflowing x (ε > 709) gives the mass 0
/// at −ε, whose exact value is below 2^−1022: mass at a negative loss that
/// no δ ≥ 10⁻³⁰⁰ can see.
pub(super) fn rr_mass_up(x: f64) -> f64 {
    let raw = 1.0 / (1.0 + x);
    (raw * (1.0 + 1.01 * (ELEM_ULPS + 3.0) * U)).next_up()
}

pub(super) fn dgauss_leaf(e: i32, dg: &DiscreteGaussian) -> GridPld {
    let n = dg.n_max();
    let mut atoms = Vec::with_capacity((2 * n + 1) as usize);
    for y in -n..=n {
        let w = dg.weight(y) / dg.z;
        if w > 0.0 {
            atoms.push((dg.loss(y), w));
        }
    }
    // mass beyond ±n underflows (< 1e-300); count it at +∞ to stay pessimistic
    GridPld::from_atoms(e, &atoms, 1e-300)
}

#[cfg(test)]
mod tests {
    use super::super::{Ctx, Resolution};
    use super::{leaf_pld, leaf_plds, LeafKind, PARALLEL_LEAVES};
    use crate::AccountingError;

    /// What a composition reads of its leaves: each grid (bits), the note,
    /// and the convolutions' statistics.
    type Built = (Vec<(i32, i64, Vec<u64>, u64)>, String, String);

    fn built(leaves: &[(LeafKind, u64)], two_threads: bool) -> Result<Built, AccountingError> {
        let mut ctx = Ctx::for_leaves(leaves, 0.0, 1e-6, Resolution::Claim);
        let mut note = String::new();
        let grids = if two_threads {
            leaf_plds(&mut ctx, leaves, &mut note)?
        } else {
            leaves
                .iter()
                .map(|&(k, c)| leaf_pld(&mut ctx, k, c, &mut note))
                .collect::<Result<Vec<_>, _>>()?
        };
        let grids = grids
            .iter()
            .map(|g| {
                let bits = g.p.iter().map(|x| x.to_bits()).collect();
                (g.e, g.lo, bits, g.inf.to_bits())
            })
            .collect();
        let s = &ctx.conv.stats;
        let stats = format!(
            "{} {} {} {:x} {:x}",
            s.direct,
            s.fft,
            s.tilted,
            s.added_mass.to_bits(),
            s.max_rel.to_bits()
        );
        Ok((grids, note, stats))
    }

    /// The leaves built on two threads are the leaves built one after the
    /// other: every grid bit for bit, the note, and the statistics the
    /// detail string prints (the added mass as the same float: the fork's
    /// terms are added in order). Several kinds, the heavy ones (used
    /// hundreds of times) in the half the second thread takes. Negative
    /// control: the same leaves in another order give other statistics,
    /// so the comparison sees the order of the added terms.
    #[test]
    fn leaves_on_two_threads_are_the_leaves_of_one_pass() {
        let mut leaves: Vec<(LeafKind, u64)> = (0..PARALLEL_LEAVES + 4)
            .map(|i| {
                (
                    LeafKind::Laplace(0.01 * (1.0 + i as f64 / 7.0)),
                    1 + 3 * i as u64,
                )
            })
            .collect();
        leaves.push((LeafKind::Rr(0.05), 300));
        leaves.push((LeafKind::DGauss(4.0, 1), 200));
        leaves.push((LeafKind::Laplace(0.002), 700));
        let one = built(&leaves, false).expect("built");
        let two = built(&leaves, true).expect("built");
        assert_eq!(one.0, two.0, "the grids");
        assert_eq!(one.1, two.1, "the note");
        assert_eq!(one.2, two.2, "the statistics");
        let mut reversed = leaves.clone();
        reversed.reverse();
        let other = built(&reversed, true).expect("built");
        assert_ne!(other.2, one.2, "the comparison cannot see the order");
    }

    /// A leaf that cannot be built, in the second thread's half, is the
    /// error one pass returns.
    #[test]
    fn the_first_error_is_one_pass_error() {
        let bad = LeafKind::DGauss(1e300, 1);
        let mut leaves: Vec<(LeafKind, u64)> = (0..PARALLEL_LEAVES + 2)
            .map(|i| (LeafKind::Laplace(0.01 * (1.0 + i as f64)), 2))
            .collect();
        leaves.push((bad, 1));
        let one = built(&leaves, false).map(|_| ()).unwrap_err().to_string();
        let two = built(&leaves, true).map(|_| ()).unwrap_err().to_string();
        assert_eq!(one, two);
        assert!(two.contains("discrete Gaussian σ too large"), "{two}");
    }
}
