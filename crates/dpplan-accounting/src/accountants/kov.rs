//! The exact optimal composition of k identical ε₀-DP releases
//! (Kairouz–Oh–Viswanath 2015, Thm 3.3; Murtagh–Vadhan 2016), in one pass
//! over a window of the k + 1 loss atoms — linear in the window, ~√k, so 10¹²
//! releases take milliseconds — and sound by construction.
//!
//! # The profile
//! The k-fold composition of randomized response RR_ε₀ dominates every
//! k-fold composition of ε₀-DP mechanisms (KOV Thm 3.3). Under P the number
//! l of "flipped" outputs is Binomial(k, q), q = 1/(1 + e^ε₀), with weights
//! w(l) = C(k,l) p^{k−l} q^l, p = 1 − q, and the privacy loss is the atom
//! L_l = ε₀(k − 2l). The hockey-stick divergence is
//!
//! δ(ε) = Σ_l w(l) (1 − e^{ε − L_l})₊,
//!
//! a sum of non-negative terms. Between two atoms it has a closed form: for
//! ε = L_m − t, t ∈ [0, 2ε₀] (so ε ∈ [L_{m+1}, L_m]),
//!
//! δ(L_m − t) = D_m + (1 − e^{−t}) C_m,
//! D_m = Σ_{l<m} w(l) (1 − e^{−2ε₀(m−l)}) = δ(L_m),
//! C_m = Σ_{l≤m} w(l) e^{−2ε₀(m−l)},
//!
//! and both follow from one forward recurrence of non-negative terms (no
//! cancellation anywhere):
//!
//! D_{m+1} = D_m + (1 − e^{−2ε₀}) C_m,   C_{m+1} = e^{−2ε₀} C_m + w(m+1).
//!
//! So one walk over the atoms finds the last atom L_m with δ(L_m) ≤ δ and
//! then ε = L_m − t with t = −ln(1 − (δ − D_m)/C_m): no bisection.
//!
//! # The window and the weights
//! The weights are never evaluated through ln C(k,l) (lgamma of 10¹² has an
//! absolute error near 0.1). They are walked by the exact ratio
//! w(l+1)/w(l) = (k − l)/(l + 1)·e^{−ε₀} from an anchor l₀ where the
//! unnormalised weight is set to 2⁻⁹⁰⁰, and normalised by their own sum S
//! over the window: S ≤ Σ_all, so dividing by the computed window sum can
//! only make each weight larger (sound), and the upper end of the window is
//! where the rest is below 10⁻¹⁷·S (tightness only). Two walks: the first
//! sums S; the second — bit for bit the same weights — accumulates D and C
//! up to the crossing. l₀ is below the mode, picked by the Chernoff bound
//! P[l ≤ a] ≤ e^{−k·KL(a/k ‖ q)} so that the lower tail is about 10⁻¹⁰·δ.
//!
//! # Error terms (each one moves ε up)
//! * the lower tail Σ_{l<l₀} w(l) ≤ w(l₀)·ρ/(1 − ρ), ρ the (rounded up)
//!   ratio w(l₀−1)/w(l₀) = l₀/(k−l₀+1)·e^ε₀, which falls as l does; it is
//!   added to D_m and C_m (each omitted term is at most w(l) in both);
//! * rounding (u = 2⁻⁵³): a weight j steps from the anchor carries
//!   ≤ 11.01·j·u in |ln| (a division, two products, e^{−ε₀} within
//!   [`ELEM_ULPS`]); C and D add ≤ 11.02·u per step of the second walk
//!   (e^{−2ε₀} and 1 − e^{−2ε₀} within [`ELEM_ULPS`], products, sums) and
//!   10·u; S ≤ 1.01·n·u for its n additions. All terms are non-negative, so
//!   these bound the sums' relative errors; D and C are raised, S lowered,
//!   by e^{that};
//! * underflow: past the mode the weights fall and may reach subnormals;
//!   every result carries at most 2⁻¹⁰⁷⁵ absolute, covered by
//!   2·(N+2)²·2⁻¹⁰⁷⁴ added to D and C and taken off S;
//! * the last step: (δ − D)/C rounded down, log1p within [`ELEM_ULPS`], the
//!   atom ε₀(k − 2m) rounded up, the subtraction one float up. The result
//!   is min(L_m, max(ε̂, L_{m+1}, 0)) with every atom rounded up: δ(L_m) ≤ δ
//!   is certified, and on [L_{m+1}, L_m] the profile is at most the
//!   closed form with the raised D and C.
//!
//! When the window cannot be represented (a plan beyond 2⁵² releases,
//! ε₀ > 350, a weight range past the floats) or the crossing lies more than
//! 10⁷ steps beyond the window (δ near the total variation distance of a
//! long schedule with a large ε₀), [`kov_epsilon`] says so with `None` and
//! the advanced accountant keeps its other theorems.

use crate::special::{mul_up, sum_up, ELEM_ULPS, U};

/// The unnormalised weight of the first atom of the window, 2⁻⁹⁰⁰: the
/// weights rise from it to the mode by at most ~e^{800}·√k (the tail target
/// is clamped at e^{−800}) and stay normal floats.
const ANCHOR: f64 = f64::from_bits((1023 - 900) << 52);

/// Above this ε₀, e^{−2ε₀} is no longer a normal float (its relative error
/// bound would not hold); such a release costs k·ε₀ within e^{−350} anyway.
const MAX_EPS0: f64 = 350.0;

/// The second walk stops (and the accountant falls back) after this many
/// steps beyond twice the first walk's: only a δ close to the total
/// variation of a long schedule with a large ε₀ crosses that far above the
/// mode.
const EXTRA_STEPS: f64 = 1e7;

/// The lower tail aimed at, relative to δ (tightness only).
const TAIL_SHARE: f64 = 1e-10;

/// The precomputed constants of one composition.
struct Rr {
    k: f64,
    eps0: f64,
    /// e^{−ε₀}: the weight ratio's factor
    c: f64,
    /// e^{−2ε₀}
    h: f64,
    /// 1 − e^{−2ε₀}
    g: f64,
}

impl Rr {
    fn new(k: f64, eps0: f64) -> Rr {
        Rr {
            k,
            eps0,
            c: libm::exp(-eps0),
            h: libm::exp(-2.0 * eps0),
            g: -libm::expm1(-2.0 * eps0),
        }
    }

    /// w(l+1)/w(l), the same operations in both walks
    #[inline(always)]
    fn ratio(&self, l: f64) -> f64 {
        (self.k - l) / (l + 1.0) * self.c
    }

    /// the atom ε₀(k − 2l) rounded up (k − 2l is an exact integer)
    fn atom_up(&self, l: f64) -> f64 {
        let n = self.k - 2.0 * l;
        if n <= 0.0 {
            return 0.0;
        }
        mul_up(self.eps0, n)
    }
}

/// The first walk: the window's weight sum from `lo` up to where the rest is
/// below 10⁻¹⁷ of it. Returns (S, steps), or `None` on overflow.
fn window_sum(rr: &Rr, lo: f64) -> Option<(f64, f64)> {
    let mut w = ANCHOR;
    let mut s = 0.0;
    let mut l = lo;
    loop {
        s += w;
        if l >= rr.k {
            break;
        }
        let r = rr.ratio(l);
        // past the mode the ratios fall: the rest is below w·r/(1 − r)
        if r < 1.0 && w * r <= 1e-17 * s * (1.0 - r) {
            break;
        }
        w *= r;
        l += 1.0;
    }
    if !s.is_finite() {
        return None;
    }
    Some((s, l - lo))
}

/// The lowest atom l₀ of the window: the largest a ≤ kq with
/// k·KL(a/k ‖ q) ≥ −ln τ, τ = TAIL_SHARE·δ clamped at e^{−800} (a float
/// estimate: the tail actually left out is bounded separately).
fn window_start(k: f64, eps0: f64, delta: f64) -> f64 {
    let q = 1.0 / (1.0 + libm::exp(eps0));
    let target = -(libm::log(delta * TAIL_SHARE).max(-800.0));
    let kl = |a: f64| -> f64 {
        let x = a / k;
        let t1 = if x > 0.0 { x * libm::log(x / q) } else { 0.0 };
        let t2 = (1.0 - x) * libm::log1p((q - x) / (1.0 - q));
        k * (t1 + t2)
    };
    let mode = (k * q).floor();
    if mode <= 0.0 || kl(0.0) < target {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0f64, mode);
    while hi - lo > 1.0 {
        let mid = ((lo + hi) / 2.0).floor();
        if kl(mid) >= target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The sound allowances of one evaluation (see the module doc).
struct Allowance {
    /// the lower tail, unnormalised
    tail: f64,
    /// the underflow allowance, unnormalised
    abs: f64,
    /// S lowered: a float ≤ the exact window sum of the exact weights
    s_lo: f64,
    /// e^{Γ} rounded up: the relative allowance of D and C
    up: f64,
}

/// e^x for 0 ≤ x ≤ 10⁻³, rounded up (e^x ≤ 1 + 1.01x there)
fn exp_small_up(x: f64) -> f64 {
    (1.0 + 1.01 * x).next_up()
}

impl Allowance {
    /// `n1`, `n2`: the steps of the two walks (n2 an upper bound)
    fn new(rr: &Rr, lo: f64, s: f64, n1: f64, n2: f64) -> Option<Allowance> {
        let far = n1.max(n2) + 2.0;
        let eps_w = 11.01 * far * U;
        let gamma = eps_w + 11.02 * n2 * U + 10.0 * U;
        let gamma_s = eps_w + 1.01 * (n1 + 2.0) * U;
        if gamma > 1e-3 || gamma_s > 1e-3 {
            return None;
        }
        let abs = 2.0 * far * far * f64::from_bits(1); // 2⁻¹⁰⁷⁴
        let tail = if lo > 0.0 {
            let e = libm::exp(rr.eps0) * (1.0 + 2.0 * ELEM_ULPS * U);
            let rho = (lo / (rr.k - lo + 1.0) * e * (1.0 + 4.0 * U)).next_up();
            if rho >= 1.0 {
                return None;
            }
            (ANCHOR * rho / (1.0 - rho) * (1.0 + 4.0 * U)).next_up()
        } else {
            0.0
        };
        let s_lo = ((s - abs) / exp_small_up(gamma_s) * (1.0 - 2.0 * U)).next_down();
        if s_lo <= 0.0 {
            return None;
        }
        Some(Allowance {
            tail,
            abs,
            s_lo,
            up: exp_small_up(gamma),
        })
    }

    /// an upper bound on the normalised value of an unnormalised D or C
    fn norm_up(&self, x: f64) -> f64 {
        let raised = ((x * self.up).next_up() + self.tail + self.abs)
            .next_up()
            .next_up();
        (raised / self.s_lo).next_up()
    }

    /// the largest unnormalised D whose normalised bound is ≤ δ (rounded down)
    fn threshold(&self, delta: f64) -> f64 {
        // one subtraction, so one float down covers its rounding
        let room = ((delta * self.s_lo).next_down() - (self.tail + self.abs).next_up()).next_down();
        (room / self.up).next_down()
    }
}

/// Where the second walk stopped: the last certified atom m and its sums.
struct Crossing {
    m: f64,
    d: f64,
    c: f64,
    steps: f64,
    /// the walk ran out of positive atoms with δ(0) ≤ δ certified
    zero: bool,
}

/// The second walk: from the window's first atom up, while the next atom's
/// δ is certified ≤ δ. The allowance grows with the walk's length, so its
/// step cap doubles when reached (the D's only grow, so the check of the
/// current one covers the earlier ones).
fn walk(rr: &Rr, lo: f64, s: f64, n1: f64, delta: f64) -> Option<(Crossing, Allowance)> {
    let mut cap = n1.max(16.0);
    let mut al = Allowance::new(rr, lo, s, n1, cap)?;
    let mut thr = al.threshold(delta);
    let (mut w, mut c, mut d) = (ANCHOR, ANCHOR, 0.0f64);
    if d > thr {
        return None;
    }
    let mut m = lo;
    let mut steps = 0.0;
    loop {
        let d_next = d + rr.g * c;
        let next_positive = rr.k - 2.0 * (m + 1.0) > 0.0;
        if d_next > thr {
            break;
        }
        if !next_positive {
            let cr = Crossing {
                m,
                d,
                c,
                steps,
                zero: true,
            };
            return Some((cr, al));
        }
        d = d_next;
        w *= rr.ratio(m);
        c = rr.h * c + w;
        m += 1.0;
        steps += 1.0;
        if steps >= cap {
            if steps > 2.0 * n1 + EXTRA_STEPS {
                return None;
            }
            cap *= 2.0;
            al = Allowance::new(rr, lo, s, n1, cap)?;
            thr = al.threshold(delta);
            if d > thr {
                return None;
            }
        }
    }
    let cr = Crossing {
        m,
        d,
        c,
        steps,
        zero: false,
    };
    Some((cr, al))
}

/// ε on [L_{m+1}, L_m] from the raised D_m and C_m (module doc), rounded up
/// and clamped to that interval.
fn solve(rr: &Rr, cr: &Crossing, al: &Allowance, delta: f64) -> f64 {
    let d_hi = al.norm_up(cr.d);
    let c_hi = al.norm_up(cr.c);
    let l_m = rr.atom_up(cr.m);
    let l_next = rr.atom_up(cr.m + 1.0);
    let num = (delta - d_hi).next_down().max(0.0);
    let x = (num / c_hi).next_down();
    let eps_hat = if x >= 1.0 {
        f64::NEG_INFINITY
    } else {
        let t = -libm::log1p(-x);
        let t_lo = (t * (1.0 - 2.0 * ELEM_ULPS * U - U)).next_down().max(0.0);
        (l_m - t_lo).next_up()
    };
    eps_hat.max(l_next).max(0.0).min(l_m)
}

/// The exact optimal composition of k ε₀-DP releases at δ, rounded up, with
/// its detail; `None` when the window cannot be represented.
pub(crate) fn kov_epsilon(k: u64, eps0: f64, delta: f64) -> Option<(f64, String)> {
    if k == 0 || eps0.is_nan() || eps0 <= 0.0 || eps0 > MAX_EPS0 || k > 1u64 << 52 || delta.is_nan()
    {
        return None;
    }
    let head = format!("KOV optimal composition (exact, {k} × {eps0:.6}-DP");
    if delta <= 0.0 {
        return Some((
            sum_up([(k as f64, eps0)]),
            format!("{head}: k·ε₀ at δ = 0)"),
        ));
    }
    if delta >= 1.0 {
        return Some((0.0, format!("{head}: δ ≥ 1)")));
    }
    let kf = k as f64;
    let rr = Rr::new(kf, eps0);
    let lo = window_start(kf, eps0, delta);
    let (s, n1) = window_sum(&rr, lo)?;
    let (cr, al) = walk(&rr, lo, s, n1, delta)?;
    let eps = if cr.zero {
        0.0
    } else {
        solve(&rr, &cr, &al, delta)
    };
    let detail = format!(
        "{head}; loss atoms {lo}..{} of {} walked in {} + {} steps, omitted lower tail ≤ {:.1e}, rounding allowance {:.1e} relative, ε rounded up)",
        lo + n1,
        k + 1,
        n1,
        cr.steps,
        al.tail / al.s_lo,
        al.up - 1.0
    );
    Some((eps, detail))
}
