//! # dpplan-accounting — the privacy accounting engine of dpplan
//!
//! Mechanism descriptions in, `(ε, δ)` guarantees out. The crate knows nothing of
//! syntax. Its promises, in order: **sound** (an ε below the true one is never
//! printed — in floating point too: parameters are rounded up, every special
//! function has a documented error allowance, and each accountant's last step
//! adds its rounding bound; the error budget is in `docs/accounting.md`),
//! **tight**, **fast**.
//!
//! A plan is a slice of [`Release`]s; each is a noise [`Mechanism`] (Laplace, Gaussian,
//! discrete Laplace, discrete Gaussian) with a [`Sensitivity`], released `count` times
//! (adaptive composition of fresh releases). [`epsilon`] evaluates one [`Accountant`];
//! [`all`] evaluates every accountant; [`best`] returns the smallest sound ε.
//!
//! ## Conventions
//! * Laplace kinds: density ∝ exp(−|x|/b), `scale = b`; a release is ε-DP with
//!   ε = Δ₁/b. Gaussian kinds: `scale = σ`. The exponential mechanism
//!   (`NoiseKind::Exponential`, a quantile's selection): candidate c with
//!   probability ∝ exp(score(c)/(2b)), Δ₁ the score's sensitivity, ε = Δ₁/b;
//!   it is ε-bounded-range (Durfee & Rogers 2019), so zCDP and RDP charge it
//!   min(ε·tanh(ε/2), ε²/8) per release (Cesar & Rogers 2021, Lemma 3.2);
//!   the other accountants treat it as any ε-DP mechanism (PLD: the
//!   randomized-response dominating pair, sound for every ε-DP mechanism).
//!   Permute-and-flip (`NoiseKind::PermuteAndFlip`) has the same ε = Δ₁/b
//!   but is not bounded-range: every accountant treats it as any ε-DP
//!   mechanism (`Eff::Pure`; zCDP ε·tanh(ε/2)).
//! * Sensitivities are tightened with the norm inequalities ‖v‖₂ ≤ ‖v‖₁ ≤ √coords·‖v‖₂
//!   (only when the other norm is given, i.e. non-zero).
//! * Discrete kinds assume integer-valued queries; for `coords = 1` the (integer) shift
//!   used is ⌈Δ⌉, and, as for the continuous kinds, the worst neighbouring pair is the
//!   shift by the full sensitivity (Dong–Roth–Su 2019, log-concave location families).
//! * All mechanisms here have symmetric privacy profiles (δ_{P‖Q} = δ_{Q‖P}), so one
//!   ordering of the dominating pair suffices.
//!
//! ## The accountants and the theorems they rest on
//! * [`Accountant::Basic`] — basic composition (Dwork et al. 2006; Dwork & Roth 2014,
//!   Thm 3.16): Σεᵢ, Σδᵢ. Approximate-DP releases share δ evenly and each is charged its
//!   tightest single-release ε at its share ([`single_release_epsilon`]).
//! * [`Accountant::Advanced`] — min of: basic; heterogeneous advanced composition of
//!   Dwork–Rothblum–Vadhan 2010 (ε = √(2 ln(1/δ')Σεᵢ²) + Σεᵢ(e^{εᵢ}−1), δ = δ' + Σδᵢ);
//!   Kairouz–Oh–Viswanath 2015 Thm 3.5 (heterogeneous form, ε = Σεᵢ tanh(εᵢ/2) +
//!   √(2Σεᵢ² ln(1/δ')) and its ln(e + √Σεᵢ²/δ') variant); and for a homogeneous pure
//!   plan the KOV optimal composition (Thm 3.3: the k-fold composition of randomized
//!   response RR_ε is the worst case), evaluated exactly as the hockey-stick divergence
//!   of the composed RR: one walk over ~√k of its loss atoms, closed form between atoms,
//!   up to 10¹² releases (`accountants/kov.rs`). The δ split between δ' and the
//!   mechanisms is optimised by a 1-D search.
//! * [`Accountant::Zcdp`] — Bun & Steinke 2016: ρ adds up. Gaussian ρ = Δ₂²/2σ²
//!   (Prop 1.6); discrete Gaussian the same (Canonne–Kamath–Steinke 2020, Prop 5 and
//!   composition over coordinates); pure ε-DP ρ = ε·tanh(ε/2) (Steinke 2024, "Tight RDP &
//!   zCDP bounds from pure DP", Thm 5, tight; ≤ ε²/2 of Bun–Steinke Prop 3.3).
//!   Conversion: min of ρ + 2√(ρ ln(1/δ)) (Bun–Steinke Prop 1.3) and the CKS 2020
//!   Corollary 13 conversion δ = inf_α e^{(α−1)(αρ−ε)}/(α−1)·(1−1/α)^α, solved for ε.
//! * [`Accountant::Rdp`] — Mironov 2017: per-order curves add up. Gaussian αΔ₂²/2σ²;
//!   continuous Laplace Mironov's closed form (Prop 6) at ε = Δ₁/b — also for several
//!   coordinates: the product curve is Σⱼ R(α, εⱼ) with Σεⱼ ≤ ε, and R(α, ·) is a
//!   log-sum-exp of affine functions of ε, hence convex with R(α,0) = 0, hence
//!   superadditive, so Σⱼ R(α, εⱼ) ≤ R(α, ε); discrete Laplace: the randomized-response
//!   curve, the exact worst case for any ε-DP mechanism (Steinke 2024 Thm 4); discrete
//!   Gaussian: αρ (CKS 2020). Orders are optimised over a continuous range (log grid then
//!   golden-section refinement; any order yields a valid bound) with both the classical
//!   conversion ε = R(α) + ln(1/δ)/(α−1) (Mironov Prop 3) and Balle et al. 2020 Thm 21,
//!   ε = R(α) + ln((α−1)/α) − (ln δ + ln α)/(α−1); the smaller is reported. Many
//!   distinct Laplace releases are bucketed geometrically and each bucket bounded by the
//!   chord of the convex curve (a sound upper bound, error second order in the width).
//! * [`Accountant::Gdp`] — exact for plans of continuous Gaussians only: the
//!   composition is μ-GDP with μ = √(Σ k Δ₂²/σ²) (Dong–Roth–Su 2019 Cor 3.3), whose
//!   profile is Balle–Wang 2018 Thm 8: δ(ε) = Φ(−ε/μ+μ/2) − e^εΦ(−ε/μ−μ/2), inverted by
//!   bisection returning the upper end of the bracket.
//! * [`Accountant::Pld`] — numerical composition of privacy-loss distributions
//!   (Koskela et al. 2020; Google dp_accounting). Non-Gaussian mechanisms are put on a
//!   grid of width h = 2^k with the *connect-the-dots* dominating discretisation of
//!   Doroshenko et al. 2022 (each loss atom is split between its two neighbouring grid
//!   points so that P- and Q-masses are preserved and the hockey-stick curve — convex in
//!   e^ε — is replaced by its chords, hence only increases); tails are truncated
//!   pessimistically (upper tail → the ∞ atom counted in δ, lower tail → rounded up);
//!   grids are coarsened the same way. Dominating pairs compose (Zhu, Dong & Wang 2022,
//!   Thm 10). All continuous Gaussians are folded into one exact μ-GDP pair and combined
//!   analytically: δ(ε) = p_∞ + Σⱼ pⱼ·δ_μ(ε − lⱼ). Many distinct Laplace ε are rounded
//!   up onto a geometric grid (ratio 1+10⁻³), sound because the Laplace (and RR) profile
//!   increases with ε. A discrete Gaussian over several coordinates (with ℓ∞ given)
//!   enters as one pair dominating every maximal shift shape (`dgauss_shapes.rs`,
//!   `accountants/pld_dgauss.rs`, docs/accounting.md).
//!
//! ## Where each result lives (one home per theorem)
//! * `accountants/`: one file per accountant (basic, advanced, zcdp, rdp, gdp,
//!   pld) and their shared dispatch; [`best_of`] is the one minimum over
//!   accountants.
//! * [`conversions`]: RDP → (ε, δ) — Mironov 2017 Prop 3, Balle et al. 2020
//!   Thm 21 (= CKS 2020 Cor 13 for zCDP), the closed form a + 2√(a ln 1/δ)
//!   (Bun–Steinke 2016 Prop 1.3).
//! * `gaussian.rs`: the Gaussian privacy profile (Balle–Wang 2018 Thm 8);
//!   [`selection`]: the δ of partition selection by thresholding (Wilson
//!   et al. 2020), added to the plan's δ outside the accountants;
//!   `dgauss.rs`: the discrete Gaussian's (CKS 2020 Thm 7) and its normaliser
//!   [`discrete_gaussian_normaliser`].
//! * [`roots`]: the one bracket search and bisection (monotone predicate,
//!   returned end chosen explicitly), and Brent's search for the PLD's ε
//!   ([`roots::profile_root`], the same answer in a quarter of the steps);
//!   `grid.rs`: the one geometric round-up used for bucketing;
//!   `special.rs`: normal CDF and 1-D minimisation.
#![forbid(unsafe_code)]

use dgauss_shapes::ShapeBound;
use roots::{try_bisect, try_find_bracket, Bisection, Bracket, End};
use serde::{Deserialize, Serialize};
use std::fmt;

mod accountants;
pub mod conversions;
mod dgauss;
mod dgauss_shapes;
pub mod dp_event;
mod gaussian;
mod grid;
pub mod roots;
mod sampled;
pub mod selection;
mod special;
pub mod tradeoff;

pub use accountants::{rdp_epsilon_with, zcdp_epsilon_from_rho, RdpConversion};
pub use dgauss::discrete_gaussian_normaliser;
pub use special::{log_norm_cdf, norm_cdf};
pub use tradeoff::{attack_risk, AttackRisk, CurveSource, TprPoint, FPRS};

/// Sensitivity of the released query.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sensitivity {
    /// ℓ1 sensitivity (used by the Laplace kinds)
    pub l1: f64,
    /// ℓ2 sensitivity (used by the Gaussian kinds)
    pub l2: f64,
    /// max number of output coordinates one unit's change can touch (1 = scalar query)
    pub coords: u64,
    /// ℓ∞ sensitivity: the most one coordinate can move (0 = not given).
    /// Giving it over several coordinates also states that the query is
    /// integer-valued (every shift is an integer vector): a discrete
    /// Gaussian, discrete Laplace or Laplace release then gets the PLD
    /// accountant's shape analysis (`dgauss_shapes.rs`). Leave it 0 for a
    /// sum of real values.
    #[serde(default, skip_serializing_if = "dpplan_vocab::is_zero")]
    pub linf: f64,
}

impl Sensitivity {
    /// A scalar query with |Δ| ≤ `delta`.
    pub fn scalar(delta: f64) -> Self {
        Sensitivity {
            l1: delta,
            l2: delta,
            coords: 1,
            linf: 0.0,
        }
    }
}

pub use dpplan_vocab::{Accountant, NoiseKind, Vocabulary};

/// One noise-addition mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Mechanism {
    pub kind: NoiseKind,
    /// b for the Laplace kinds (density ∝ exp(−|x|/b)), σ for the Gaussian kinds
    pub scale: f64,
    pub sensitivity: Sensitivity,
}

/// `count`-fold self-composition of a mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Release {
    pub mechanism: Mechanism,
    pub count: u64,
    /// Poisson sampling of the privacy units, drawn afresh for each of the
    /// `count` releases: each unit is kept independently with probability
    /// q ∈ (0, 1] (`None`: no sampling). Accounted for add/remove
    /// neighbours only, as dp_accounting does: the caller refuses a
    /// sampled release under replace neighbours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<f64>,
}

/// A proven (ε, δ)-DP guarantee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub accountant: Accountant,
    pub epsilon: f64,
    pub delta: f64,
    /// how it was obtained, e.g. "RDP at order α = 12.41, Balle et al. 2020 conversion"
    pub detail: String,
}

/// Why no bound was produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AccountingError {
    /// NaN / infinite / non-positive parameter, δ outside [0, 1), …
    InvalidParameter(String),
    /// the accountant does not apply to this plan
    NotApplicable(String),
    /// the plan has no finite ε at this δ under this accountant (e.g. Gaussian noise at δ = 0)
    InfiniteEpsilon(String),
    /// a search (calibration) failed to bracket a solution
    NoSolution(String),
}

impl fmt::Display for AccountingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountingError::InvalidParameter(s) => write!(f, "invalid parameter: {s}"),
            AccountingError::NotApplicable(s) => write!(f, "not applicable: {s}"),
            AccountingError::InfiniteEpsilon(s) => write!(f, "infinite epsilon: {s}"),
            AccountingError::NoSolution(s) => write!(f, "no solution: {s}"),
        }
    }
}

impl std::error::Error for AccountingError {}

// ---------------------------------------------------------------------------
// Normalised internal representation
// ---------------------------------------------------------------------------

/// Effective privacy parameters of one mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Eff {
    /// continuous Gaussian, μ = Δ₂/σ
    Gauss { mu: f64 },
    /// discrete Gaussian; `shift` is the integer shift when coords = 1,
    /// `shape` the bounds on the shift vector otherwise (when Δ∞ is given)
    DGauss {
        sigma: f64,
        shift: Option<i64>,
        rho: f64,
        shape: Option<ShapeBound>,
    },
    /// continuous Laplace, ε = Δ₁/b; `scalar` when coords = 1; `shape`
    /// (b as bits, the bounds on the integer shift vector) over several
    /// coordinates of an integer-valued query when Δ∞ is given
    Laplace {
        eps: f64,
        scalar: bool,
        shape: Option<(u64, ShapeBound)>,
    },
    /// discrete Laplace, ε = Δ₁/b; `shape` (b as bits, the bounds on the
    /// integer shift vector) when known — always for one coordinate (its
    /// shift is Δ₁), over several when Δ∞ is given — else treated through
    /// its RR dominating pair
    DLaplace {
        eps: f64,
        shape: Option<(u64, ShapeBound)>,
    },
    /// the exponential mechanism, ε = Δ/b: ε-DP and ε-bounded-range
    /// (Durfee & Rogers 2019), hence ε²/8-zCDP (Cesar & Rogers 2021);
    /// otherwise treated as any ε-DP mechanism (the RR dominating pair)
    Exp { eps: f64 },
    /// an ε-DP mechanism known by its ε alone, ε = Δ/b (permute-and-flip):
    /// every accountant treats it as any ε-DP mechanism (the RR
    /// dominating pair, ε·tanh(ε/2)-zCDP)
    Pure { eps: f64 },
    /// a continuous Gaussian (μ = Δ₂/σ) on a Poisson sample of the units
    /// at rate q < 1, add/remove neighbours (`sampled.rs`)
    SGauss { mu: f64, q: f64 },
    /// an ε-DP mechanism (`base` = Δ₁/b) on a Poisson sample at rate q < 1:
    /// `eps` = ln(1 + q(e^base − 1)) rounded up, the amplified pure ε every
    /// accountant may use as for any ε-DP mechanism (Balle, Barthe &
    /// Gaboardi 2018, Thm 8); `laplace` when it is one continuous Laplace
    /// coordinate, whose exact subsampled pair the PLD uses (`sampled.rs`)
    SPure {
        eps: f64,
        base: f64,
        q: f64,
        laplace: bool,
    },
}

impl Eff {
    pub(crate) fn pure_eps(&self) -> Option<f64> {
        match *self {
            Eff::Laplace { eps, .. }
            | Eff::DLaplace { eps, .. }
            | Eff::Exp { eps }
            | Eff::Pure { eps }
            | Eff::SPure { eps, .. } => Some(eps),
            _ => None,
        }
    }
    pub(crate) fn key(&self) -> EffKey {
        match *self {
            Eff::Gauss { mu } => (0, mu.to_bits(), 0, 0, None),
            Eff::DGauss {
                sigma,
                shift,
                rho,
                shape,
            } => (
                1,
                sigma.to_bits(),
                shift.map(|s| s as u64 + 1).unwrap_or(0),
                rho.to_bits(),
                shape,
            ),
            Eff::Laplace { eps, scalar, shape } => (
                2,
                eps.to_bits(),
                scalar as u64,
                shape.map_or(0, |s| s.0),
                shape.map(|s| s.1),
            ),
            Eff::DLaplace { eps, shape } => (
                3,
                eps.to_bits(),
                0,
                shape.map_or(0, |s| s.0),
                shape.map(|s| s.1),
            ),
            Eff::Exp { eps } => (4, eps.to_bits(), 0, 0, None),
            Eff::Pure { eps } => (7, eps.to_bits(), 0, 0, None),
            Eff::SGauss { mu, q } => (5, mu.to_bits(), q.to_bits(), 0, None),
            Eff::SPure {
                base, q, laplace, ..
            } => (6, base.to_bits(), q.to_bits(), laplace as u64, None),
        }
    }
}

/// What identifies an effective mechanism (for grouping).
pub(crate) type EffKey = (u8, u64, u64, u64, Option<ShapeBound>);

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Item {
    pub eff: Eff,
    pub count: u64,
    /// for pure releases, the (Δ₁, b) whose exact ratio ε rounds up: lets
    /// [`Plan::pure_sum`] keep Σε exact when it is (10 × 2/40 = 0.5)
    pub ratio: Option<(f64, f64)>,
}

/// Grouped plan: identical effective mechanisms merged, zero-loss releases dropped.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Plan {
    pub items: Vec<Item>,
}

impl Plan {
    pub(crate) fn total_count(&self) -> f64 {
        self.items.iter().map(|i| i.count as f64).sum()
    }
    pub(crate) fn all_pure(&self) -> bool {
        self.items.iter().all(|i| i.eff.pure_eps().is_some())
    }
    /// Σ count·ε of the pure releases, rounded up. When every pure release
    /// has the same (Δ₁, b), the sum is (Σ count)·Δ₁/b, divided once: the
    /// product is split exactly (fma) into p + pe, q = p/b, and q moves one
    /// float up only if the exact remainder (p − q·b) + pe, whose sign is
    /// decided exactly from two floats, is positive — so 10 × 2/40 is 0.5
    /// and 3 × 1/3 is 1. Otherwise [`special::sum_up`] of the rounded-up ε.
    pub(crate) fn pure_sum(&self) -> f64 {
        let mut pure = self.items.iter().filter(|i| i.eff.pure_eps().is_some());
        let first = pure.clone().next().and_then(|i| i.ratio);
        if let Some((l1, b)) = first {
            if pure.clone().all(|i| i.ratio == Some((l1, b))) {
                let c: f64 = pure.clone().map(|i| i.count as f64).sum();
                if c < 9.0e15 {
                    let p = c * l1;
                    let pe = c.mul_add(l1, -p);
                    let q = p / b;
                    if q.is_finite() && q > 1e-290 {
                        let r = (-q).mul_add(b, p);
                        // sign of r + pe, exactly
                        let positive = if r >= 0.0 && pe >= 0.0 {
                            r > 0.0 || pe > 0.0
                        } else if r <= 0.0 && pe <= 0.0 {
                            false
                        } else {
                            r.abs() != pe.abs()
                                && (if r > 0.0 {
                                    r.abs() > pe.abs()
                                } else {
                                    pe.abs() > r.abs()
                                })
                        };
                        return if positive { q.next_up() } else { q };
                    }
                }
            }
        }
        special::sum_up(
            pure.by_ref()
                .filter_map(|i| i.eff.pure_eps().map(|e| (i.count as f64, e))),
        )
    }
}

fn check_finite_nonneg(what: &str, v: f64) -> Result<(), AccountingError> {
    if !v.is_finite() || v < 0.0 {
        return Err(AccountingError::InvalidParameter(format!(
            "{what} must be finite and ≥ 0, got {v}"
        )));
    }
    Ok(())
}

pub(crate) fn check_delta(delta: f64) -> Result<(), AccountingError> {
    if !(0.0..1.0).contains(&delta) {
        return Err(AccountingError::InvalidParameter(format!(
            "δ must lie in [0, 1), got {delta}"
        )));
    }
    Ok(())
}

/// The ℓ1 sensitivity used for Laplace kinds: Δ₁, tightened to √coords·Δ₂
/// when that is given and smaller (√ and × to nearest carry ½ ulp each:
/// two floats up).
fn pure_l1(s: &Sensitivity) -> f64 {
    if s.l2 > 0.0 && s.coords > 1 {
        s.l1.min(((s.coords as f64).sqrt() * s.l2).next_up().next_up())
    } else if s.l2 > 0.0 {
        s.l1.min(s.l2)
    } else {
        s.l1
    }
}

/// Effective parameters of one mechanism (validated). `None` = zero privacy loss.
pub(crate) fn effective(m: &Mechanism) -> Result<Option<Eff>, AccountingError> {
    if !m.scale.is_finite() || m.scale <= 0.0 {
        return Err(AccountingError::InvalidParameter(format!(
            "noise scale must be finite and > 0, got {}",
            m.scale
        )));
    }
    let s = &m.sensitivity;
    check_finite_nonneg("l1 sensitivity", s.l1)?;
    check_finite_nonneg("l2 sensitivity", s.l2)?;
    if s.coords == 0 {
        return Err(AccountingError::InvalidParameter(
            "coords must be ≥ 1".into(),
        ));
    }
    // Every parameter below is rounded UP (the exact real ratio of the
    // plan's floats is never understated): quotients and products by their
    // exact remainders ([`special::div_up`], [`special::mul_up`]).
    let l1 = pure_l1(s);
    let l2 = if s.l1 > 0.0 { s.l2.min(s.l1) } else { s.l2 };
    let scalar = s.coords == 1;
    let eff = match m.kind {
        NoiseKind::Gaussian => {
            if l2 == 0.0 {
                return Ok(None);
            }
            Eff::Gauss {
                mu: special::div_up(l2, m.scale),
            }
        }
        NoiseKind::Laplace => {
            if l1 == 0.0 {
                return Ok(None);
            }
            Eff::Laplace {
                eps: special::div_up(l1, m.scale),
                scalar,
                // an integer-valued query's shift vectors (Δ∞ given): the
                // PLD accounts its worst shapes (`pld_dgauss.rs`)
                shape: if scalar {
                    None
                } else {
                    ShapeBound::new(l1, s.l2, s.linf, s.coords).map(|b| (m.scale.to_bits(), b))
                },
            }
        }
        NoiseKind::DiscreteLaplace => {
            if l1 == 0.0 {
                return Ok(None);
            }
            Eff::DLaplace {
                eps: special::div_up(l1, m.scale),
                // integer shifts: one coordinate moves by at most ⌊Δ₁⌋;
                // several, by the shapes Δ∞ allows (`pld_dgauss.rs`)
                shape: if scalar {
                    ShapeBound::new(l1, l1, l1, 1)
                } else {
                    ShapeBound::new(l1, s.l2, s.linf, s.coords)
                }
                // a shift of 1 is randomized response exactly: kept as such
                // (the binomial leaf composes it exactly)
                .filter(|b| !scalar || b.l1 >= 2)
                .map(|b| (m.scale.to_bits(), b)),
            }
        }
        // a selection: the score's sensitivity Δ over the scale b,
        // ε = Δ/b; the exponential mechanism is also ε-bounded-range,
        // permute-and-flip only ε-DP
        NoiseKind::Exponential | NoiseKind::PermuteAndFlip => {
            if l1 == 0.0 {
                return Ok(None);
            }
            let eps = special::div_up(l1, m.scale);
            if m.kind == NoiseKind::Exponential {
                Eff::Exp { eps }
            } else {
                Eff::Pure { eps }
            }
        }
        NoiseKind::DiscreteGaussian => {
            if scalar {
                let d = if l1 > 0.0 && l2 > 0.0 {
                    l1.min(l2)
                } else {
                    l1.max(l2)
                };
                if d == 0.0 {
                    return Ok(None);
                }
                let shift = (d - 1e-9).ceil().max(1.0);
                if shift > 1e15 {
                    return Err(AccountingError::InvalidParameter(format!(
                        "sensitivity {d} too large"
                    )));
                }
                Eff::DGauss {
                    sigma: m.scale,
                    shift: Some(shift as i64),
                    shape: None,
                    rho: special::div_up(
                        special::mul_up(shift, shift),
                        2.0 * special::mul_down(m.scale, m.scale),
                    ),
                }
            } else {
                if l2 == 0.0 {
                    return Ok(None);
                }
                Eff::DGauss {
                    sigma: m.scale,
                    shift: None,
                    shape: ShapeBound::new(
                        if s.l1 > 0.0 {
                            s.l1
                        } else {
                            s.coords as f64 * s.linf
                        },
                        l2,
                        s.linf,
                        s.coords,
                    ),
                    rho: special::div_up(
                        special::mul_up(l2, l2),
                        2.0 * special::mul_down(m.scale, m.scale),
                    ),
                }
            }
        }
    };
    let finite = match eff {
        Eff::Gauss { mu } => mu.is_finite(),
        Eff::DGauss { rho, .. } => rho.is_finite(),
        Eff::Laplace { eps, .. }
        | Eff::DLaplace { eps, .. }
        | Eff::Exp { eps }
        | Eff::Pure { eps } => eps.is_finite(),
        // built from an effective mechanism below, in [`normalise`]
        Eff::SGauss { .. } | Eff::SPure { .. } => true,
    };
    if !finite {
        return Err(AccountingError::InvalidParameter(
            "sensitivity/scale ratio overflows".into(),
        ));
    }
    Ok(Some(eff))
}

/// Validate and collect the plan. Identical mechanisms are NOT merged here (that would
/// cost a hash per release on 10⁵-release plans for accountants that only sum); the
/// accountants that need grouping do it themselves ([`Plan::grouped`]).
pub(crate) fn normalise(releases: &[Release]) -> Result<Plan, AccountingError> {
    let mut plan = Plan {
        items: Vec::with_capacity(releases.len()),
    };
    for r in releases {
        let Some(eff) = effective(&r.mechanism)? else {
            continue;
        };
        if r.count == 0 {
            continue;
        }
        let eff = match r.sample {
            None => eff,
            Some(q) => sampled::effective(eff, q)?,
        };
        // Σε is exact only for the plan's own Δ₁/b, not an amplified ε
        let ratio = match eff {
            Eff::SPure { .. } => None,
            _ => eff
                .pure_eps()
                .map(|_| (pure_l1(&r.mechanism.sensitivity), r.mechanism.scale)),
        };
        plan.items.push(Item {
            eff,
            count: r.count,
            ratio,
        });
    }
    Ok(plan)
}

impl Plan {
    /// identical effective mechanisms merged (counts added)
    pub(crate) fn grouped(&self) -> Plan {
        use foldhash::{HashMap, HashMapExt};
        let mut index: HashMap<EffKey, usize> = HashMap::new();
        let mut out = Plan::default();
        for it in &self.items {
            match index.get(&it.eff.key()) {
                Some(&i) => {
                    let item = &mut out.items[i];
                    item.count = item.count.saturating_add(it.count);
                    if item.ratio != it.ratio {
                        item.ratio = None;
                    }
                }
                None => {
                    index.insert(it.eff.key(), out.items.len());
                    out.items.push(it.clone());
                }
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

/// ε of the whole plan at `delta` under one accountant.
pub fn epsilon(
    releases: &[Release],
    delta: f64,
    accountant: Accountant,
) -> Result<Bound, AccountingError> {
    check_delta(delta)?;
    let plan = normalise(releases)?;
    accountants::evaluate(&plan, delta, accountant)
}

/// Every accountant, in enum order.
///
/// The PLD accountant, the slowest by far on large plans, runs on a thread
/// of its own while the others run on the caller's (on two cores the total
/// takes as long as the PLD alone); the results are the same, in
/// [`Accountant::ALL`]'s order, whichever finishes first.
pub fn all(releases: &[Release], delta: f64) -> Vec<(Accountant, Result<Bound, AccountingError>)> {
    let prepared = check_delta(delta).and_then(|_| normalise(releases));
    let evaluate = |a: Accountant| match &prepared {
        Ok(plan) => accountants::evaluate(plan, delta, a),
        Err(e) => Err(e.clone()),
    };
    let (pld, mut others) = std::thread::scope(|s| {
        let pld = s.spawn(|| evaluate(Accountant::Pld));
        let others: Vec<(Accountant, Result<Bound, AccountingError>)> = Accountant::ALL
            .iter()
            .filter(|&&a| a != Accountant::Pld)
            .map(|&a| (a, evaluate(a)))
            .collect();
        let pld = pld
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (pld, others)
    });
    others.push((Accountant::Pld, pld));
    others.sort_by_key(|(a, _)| Accountant::ALL.iter().position(|x| x == a));
    others
}

/// The smallest ε over the [`TIGHT`] accountants that apply;
/// `Bound.accountant` names the winner.
pub fn best(releases: &[Release], delta: f64) -> Result<Bound, AccountingError> {
    best_among(releases, delta, &TIGHT)
}

/// The accountants [`best`] chooses from: all but the classical closed
/// form, which is never below zCDP's bound (it is zCDP's Bun–Steinke
/// conversion with the looser ε²/2 for pure releases) and is there to be
/// named, not chosen.
pub const TIGHT: [Accountant; 6] = [
    Accountant::Basic,
    Accountant::Advanced,
    Accountant::Zcdp,
    Accountant::Rdp,
    Accountant::Gdp,
    Accountant::Pld,
];

/// The accountants that are fast (closed forms and a 1-D optimisation):
/// exact Gaussian, RDP, zCDP, basic for any plan, and the privacy-loss
/// distribution where it is a closed form (one Laplace release at δ > 0,
/// docs/accounting.md). Each is a proven upper bound, so their
/// minimum is too, and it is never below [`best`]'s (a subset of the same
/// accountants). Used for per-query figures, the first stage of
/// calibration and the report's calendar; a plan's total uses every
/// accountant.
pub const FAST: [Accountant; 5] = [
    Accountant::Gdp,
    Accountant::Pld,
    Accountant::Rdp,
    Accountant::Zcdp,
    Accountant::Basic,
];

/// The smallest ε over the [`FAST`] accountants that apply and are fast
/// for this plan (the privacy-loss distribution only where it is a closed
/// form).
pub fn fast_best(releases: &[Release], delta: f64) -> Result<Bound, AccountingError> {
    check_delta(delta)?;
    let plan = normalise(releases)?;
    let fast: Vec<Accountant> = FAST
        .iter()
        .copied()
        .filter(|&a| accountants::is_fast(&plan, delta, a))
        .collect();
    best_among_plan(&plan, delta, &fast)
}

/// The smallest ε over `accountants` (evaluated in that order) that apply;
/// `Bound.accountant` names the winner. See [`best_of`].
pub fn best_among(
    releases: &[Release],
    delta: f64,
    accountants: &[Accountant],
) -> Result<Bound, AccountingError> {
    check_delta(delta)?;
    let plan = normalise(releases)?;
    best_among_plan(&plan, delta, accountants)
}

/// [`best_among`] on a normalised plan.
fn best_among_plan(
    plan: &Plan,
    delta: f64,
    accountants: &[Accountant],
) -> Result<Bound, AccountingError> {
    // the leader so far, by best_of's rule: an accountant proven unable to
    // print less ([`accountants::cannot_beat`]) is not run, since its
    // result would not replace the leader (and errors matter only when no
    // accountant gives a bound, so never once there is a leader)
    let mut leader: Option<f64> = None;
    let mut results = Vec::with_capacity(accountants.len());
    let lower = std::cell::OnceCell::new();
    for &a in accountants {
        if leader.is_some_and(|w| accountants::cannot_beat(plan, delta, a, w, &lower)) {
            continue;
        }
        let r = accountants::evaluate(plan, delta, a);
        if let Ok(b) = &r {
            if TIGHT.contains(&b.accountant) && leader.is_none_or(|w| replaces(b.epsilon, w)) {
                leader = Some(b.epsilon);
            }
        }
        results.push(r);
    }
    best_of(results)
}

/// [`best_of`]'s rule: a bound of ε `challenger` replaces the leader's
/// `leader` when it is smaller by more than the tie allowance.
fn replaces(challenger: f64, leader: f64) -> bool {
    challenger < leader * (1.0 - TIE)
}

/// Best of accountants' results: the bound with the smallest ε (the first of
/// equal ones, in the order given; equal within 10⁻¹² relative, so that
/// floating-point rounding does not name advanced composition for what
/// is basic composition's sum) among the [`TIGHT`] accountants'. Each bound is proven, so their minimum
/// is. Without any bound: the last `InfiniteEpsilon` error when an
/// accountant found ε unbounded (that is the plan's problem, whatever the
/// others say, e.g. PLD not applicable beyond 10¹² releases), else the
/// first error, or `NotApplicable` when there was no result at all. One
/// rule for the checker, the language server and the runtime.
pub fn best_of(
    results: impl IntoIterator<Item = Result<Bound, AccountingError>>,
) -> Result<Bound, AccountingError> {
    let mut winner: Option<Bound> = None;
    let mut error: Option<AccountingError> = None;
    for r in results {
        match r {
            // named, never chosen: see [`TIGHT`]
            Ok(b) if !TIGHT.contains(&b.accountant) => {}
            Ok(b) => {
                if winner
                    .as_ref()
                    .is_none_or(|w| replaces(b.epsilon, w.epsilon))
                {
                    winner = Some(b);
                }
            }
            Err(e) => {
                if error.is_none() || matches!(e, AccountingError::InfiniteEpsilon(_)) {
                    error = Some(e);
                }
            }
        }
    }
    winner.ok_or_else(|| {
        error.unwrap_or_else(|| AccountingError::NotApplicable("no accountant applies".into()))
    })
}

/// Two accountants' ε within this relative distance are a tie: the first
/// in [`best_of`]'s order is named.
pub(crate) const TIE: f64 = 1e-12;

/// Tightest ε of ONE release at δ, as basic and advanced composition add it
/// up: Laplace kinds Δ₁/b (pure, spending no δ; one continuous Laplace
/// release alone at δ > 0 has the smaller exact ε₀ + 2·ln(1 − δ), the PLD
/// accountant's closed form, which [`fast_best`] and [`best`] print); Gaussian: analytic
/// Balle–Wang; discrete Gaussian: its exact CKS 2020 curve for coords = 1 (σ ≤ 2·10⁴),
/// otherwise the sound zCDP-based bound.
pub fn single_release_epsilon(m: &Mechanism, delta: f64) -> Result<f64, AccountingError> {
    check_delta(delta)?;
    match effective(m)? {
        None => Ok(0.0),
        Some(eff) => accountants::single_eps(&eff, delta),
    }
}

/// zCDP ρ of one release: Gaussian kinds Δ₂²/(2σ²); pure ε-DP ones ε²/2
/// (Bun–Steinke Prop 3.3). The zCDP accountant itself uses the tighter ε·tanh(ε/2) for
/// pure releases, see [`rho_tight`].
pub fn rho(m: &Mechanism) -> Option<f64> {
    match effective(m).ok()? {
        None => Some(0.0),
        Some(Eff::Gauss { mu }) | Some(Eff::SGauss { mu, .. }) => Some(mu * mu / 2.0),
        Some(Eff::SPure { eps, .. }) => Some(eps * eps / 2.0),
        Some(Eff::DGauss { rho, .. }) => Some(rho),
        Some(Eff::Laplace { eps, .. })
        | Some(Eff::DLaplace { eps, .. })
        | Some(Eff::Pure { eps }) => Some(eps * eps / 2.0),
        // ε-bounded range ⇒ ε²/8-zCDP (Cesar & Rogers 2021, Lemma 3.2)
        Some(Eff::Exp { eps }) => Some(eps * eps / 8.0),
    }
}

/// Tight zCDP ρ of one release: as [`rho`] but pure ε-DP releases get ε·tanh(ε/2)
/// (Steinke 2024, Thm 5).
pub fn rho_tight(m: &Mechanism) -> Option<f64> {
    match effective(m).ok()? {
        None => Some(0.0),
        Some(e) => Some(accountants::eff_rho(&e)),
    }
}

/// Smallest multiplier t > 0 such that `build(t)` meets `target_epsilon` at `delta`
/// (under `accountant`, or [`best`] when `None`). Bracketing by doubling/halving, then
/// bisection to 1e-10 relative; returns the upper end of the final bracket, which is
/// verified to satisfy the target.
pub fn calibrate(
    build: &dyn Fn(f64) -> Vec<Release>,
    target_epsilon: f64,
    delta: f64,
    accountant: Option<Accountant>,
) -> Result<f64, AccountingError> {
    if !target_epsilon.is_finite() || target_epsilon <= 0.0 {
        return Err(AccountingError::InvalidParameter(format!(
            "target ε must be finite and > 0, got {target_epsilon}"
        )));
    }
    check_delta(delta)?;
    let eval = |t: f64| -> Result<f64, AccountingError> {
        let plan = build(t);
        match accountant {
            Some(a) => epsilon(&plan, delta, a).map(|b| b.epsilon),
            None => best(&plan, delta).map(|b| b.epsilon),
        }
    };
    // ok(t): plan meets the target. Non-recoverable errors (invalid input, not
    // applicable) abort; an infinite ε simply means "not yet".
    let ok = |t: f64| -> Result<bool, AccountingError> {
        match eval(t) {
            Ok(e) => Ok(e <= target_epsilon),
            Err(AccountingError::InfiniteEpsilon(_)) => Ok(false),
            Err(e) => Err(e),
        }
    };
    // Bracket the threshold by halving (the plan already meets the target at
    // t = 1) or doubling, then bisect keeping the upper end (it meets the target).
    let (lo, hi) = if ok(1.0)? {
        let halve = |x: f64| Some(x * 0.5).filter(|&y| y != 0.0);
        match try_find_bracket(0.5, 1100, halve, |t| ok(t).map(|b| !b))? {
            Bracket::Found {
                last_failed,
                first_held,
            } => (first_held, last_failed.unwrap_or(1.0)),
            Bracket::Exhausted { .. } => {
                return Err(AccountingError::NoSolution(
                    "plan meets the target for every multiplier (no privacy loss?)".into(),
                ))
            }
        }
    } else {
        let double = |x: f64| Some(x * 2.0).filter(|y| y.is_finite());
        match try_find_bracket(2.0, 1000, double, ok)? {
            Bracket::Found {
                last_failed,
                first_held,
            } => (last_failed.unwrap_or(1.0), first_held),
            Bracket::Exhausted { .. } => {
                return Err(AccountingError::NoSolution(format!(
                    "no noise multiplier reaches ε = {target_epsilon} at δ = {delta}"
                )))
            }
        }
    };
    let rule = Bisection {
        max_steps: 200,
        ..Bisection::arithmetic(1e-10, 0.0, End::Upper)
    };
    try_bisect(lo, hi, &rule, ok)
}

/// Balle–Wang analytic Gaussian calibration: the smallest σ (upper end of a bisection
/// bracket, so never too small) such that one Gaussian release with ℓ2 sensitivity `l2`
/// is (ε, δ)-DP.
pub fn analytic_gaussian_sigma(l2: f64, epsilon: f64, delta: f64) -> Result<f64, AccountingError> {
    if !l2.is_finite() || l2 <= 0.0 {
        return Err(AccountingError::InvalidParameter(format!(
            "l2 must be finite and > 0, got {l2}"
        )));
    }
    if !epsilon.is_finite() || epsilon < 0.0 {
        return Err(AccountingError::InvalidParameter(format!(
            "ε must be finite and ≥ 0, got {epsilon}"
        )));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(AccountingError::InvalidParameter(format!(
            "δ must lie in (0, 1), got {delta}"
        )));
    }
    let mu = gaussian::gdp_mu_for(epsilon, delta);
    if mu.is_nan() || mu <= 0.0 {
        return Err(AccountingError::NoSolution(
            "no finite σ reaches this (ε, δ)".into(),
        ));
    }
    // σ = l2/μ rounded up a hair; verify.
    let mut sigma = l2 / mu;
    let mut guard = 0;
    // (l2/σ rounded to nearest may lie ½ ulp below the exact ratio: one step up)
    while gaussian::gdp_delta_upper((l2 / sigma).next_up(), epsilon) > delta && guard < 100 {
        sigma *= 1.0 + 1e-15 * (1u64 << guard.min(40)) as f64;
        guard += 1;
    }
    Ok(sigma)
}

/// δ(ε) of μ-GDP (Balle–Wang 2018 Thm 8): Φ(−ε/μ+μ/2) − e^εΦ(−ε/μ−μ/2).
pub fn gdp_delta(mu: f64, epsilon: f64) -> f64 {
    gaussian::gdp_delta(mu, epsilon)
}

/// A proven upper bound on δ_μ(ε) (see the crate's error analysis in
/// `docs/accounting.md`); every search of this crate uses it.
pub fn gdp_delta_upper(mu: f64, epsilon: f64) -> f64 {
    gaussian::gdp_delta_upper(mu, epsilon)
}

/// Smallest ε with δ_μ(ε) ≤ δ (never below the exact value).
pub fn gdp_epsilon(mu: f64, delta: f64) -> f64 {
    gaussian::gdp_epsilon(mu, delta)
}
