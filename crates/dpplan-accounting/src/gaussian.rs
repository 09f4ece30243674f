//! Exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Theorem 8;
//! equivalently μ-GDP, Dong–Roth–Su 2019, Corollary 2.13).

use crate::conversions::linear_rdp_closed_form_mu;
use crate::roots::{bisect, bisect_known, find_bracket, Bisection, Bracket, End};
use crate::special::{
    ln_mills_approx, ln_phi_approx, log_norm_cdf, Approx, ELEM_ULPS, MILLS_FROM, U,
};
use std::cmp::Ordering;

/// δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), valid for every real ε,
/// to nearest (no guarantee of direction; every search uses
/// [`gdp_delta_upper`]). Computed as Φ(a)·(−expm1(ε + lnΦ(b) − lnΦ(a))) so that neither large ε nor tiny δ
/// lose relative accuracy to cancellation.
pub fn gdp_delta(mu: f64, eps: f64) -> f64 {
    if mu <= 0.0 {
        // identical distributions: δ(ε) = max(0, 1 − e^ε)
        return if eps >= 0.0 { 0.0 } else { -eps.exp_m1() };
    }
    if eps == f64::INFINITY {
        return 0.0;
    }
    let a = -eps / mu + 0.5 * mu;
    let b = -eps / mu - 0.5 * mu;
    let la = log_norm_cdf(a);
    let lb = log_norm_cdf(b);
    let r = eps + lb - la;
    if r >= 0.0 {
        return 0.0;
    }
    let d = la.exp() * (-r.exp_m1());
    d.clamp(0.0, 1.0)
}

/// A proven upper bound on δ_μ(ε) = Φ(a) − e^ε Φ(b), a = μ/2 − ε/μ,
/// b = −ε/μ − μ/2, for ε ≥ 0 (any float μ, ε; NaN in, NaN out).
///
/// # The form evaluated
/// With ε = μ(μ/2 − a) one has ε − b²/2 = −a²/2 exactly, so
/// e^ε Φ(b) = e^{−a²/2}·e^{b²/2}Φ(b) = φ(a)·m(−b) with m the Mills ratio:
/// * ln A = ln Φ(a) ([`ln_phi_approx`]);
/// * ln B = ε + ln Φ(b) when b ≥ −10 (then μ < 20 and ε < 50, nothing is
///   large), else ln B = −a²/2 − ln√(2π) + ln m(−b) ([`ln_mills_approx`]):
///   no term of size μ² or ε appears, which is what lost the precision of
///   ε + ln Φ(b) − ln Φ(a) above μ ≈ 3·10⁸ (three terms of size μ²/2 whose
///   sum is O(1)). Up to μ ≈ 1.9·10¹⁵⁴, where ε ≈ μ²/2 leaves the doubles
///   (the search then returns +∞, reported as an unbounded ε), every step
///   below is finite.
/// * δ ≤ e^{ln A⁺}·(−expm1(r⁻)), ln A⁺ an upper bound on ln A and r⁻ a
///   lower bound on r = ln B − ln A: ln B⁻ − ln A⁺, or, when a < −10 and
///   both are in Mills form, ln m(−b) − ln m(−a) directly (the −a²/2 terms
///   cancel exactly, and with them their rounding, which is what limits
///   the tightness at small μ and tiny δ). A non-negative r⁻ means δ = 0.
///
/// # Error budget (each term added to the bound, never estimated)
/// 1. a and b are computed from the float ε: ε/μ (≤ u relative) and one
///    subtraction, so |â − a| ≤ 2u(|ε/μ| + |â|) =: da, likewise db;
///    ln Φ has slope φ/Φ ≤ max(−a, 0) + 1 (inverse-Mills bound), so ln A
///    moves by ≤ (max(−a,0)+1)·da and ln B by ≤ (|b|+1)·db (erfc form) or
///    ≤ |a|·da + da² + db (Mills form, |d ln m/dy| ≤ 1/y < 1).
/// 2. ln Φ and ln m: their own proven bounds (erfc ≤ 16 ulps, the series'
///    remainder and rounding; see [`crate::special`]).
/// 3. The additions forming ln B (u each, on the magnitudes), the
///    difference r (one step down after rounding), expm1 and exp
///    ([`ELEM_ULPS`] each) and the product (u): a factor
///    1 + (4·[`ELEM_ULPS`] + 4)u on the result, plus 2 subnormal units
///    (the product may fall below the normal range).
pub fn gdp_delta_upper(mu: f64, eps: f64) -> f64 {
    if eps.is_nan() || mu.is_nan() {
        return f64::NAN;
    }
    let grow = 1.0 + (4.0 * ELEM_ULPS + 4.0) * U;
    let tiny = 2.0 * f64::from_bits(1);
    if mu <= 0.0 {
        return if eps >= 0.0 {
            0.0
        } else {
            (-libm::expm1(eps) * grow).min(1.0)
        };
    }
    if eps == f64::INFINITY {
        return 0.0;
    }
    if !mu.is_finite() {
        return 1.0;
    }
    let q = eps / mu;
    let hm = 0.5 * mu;
    let a = hm - q;
    let b = -q - hm;
    if !(a.is_finite() && b.is_finite()) {
        return 1.0;
    }
    let da = 2.0 * U * (q.abs() + a.abs());
    let db = 2.0 * U * (q.abs() + b.abs());
    let la = ln_phi_approx(a);
    let la = Approx {
        v: la.v,
        err: la.err + ((-a).max(0.0) + 1.0) * da,
    };
    let lb = if b >= -MILLS_FROM {
        let l = ln_phi_approx(b);
        let v = eps + l.v;
        Approx {
            v,
            err: l.err + (b.abs() + 1.0) * db + U * (eps.abs() + l.v.abs()),
        }
    } else {
        let m = ln_mills_approx(-b);
        let h = 0.5 * (a * a);
        let v = -h - LN_SQRT_2PI + m.v;
        Approx {
            v,
            err: m.err
                + db
                + a.abs() * da
                + da * da
                + U * h
                + 3.0 * U * (h + LN_SQRT_2PI + m.v.abs()),
        }
    };
    let la_hi = la.hi();
    let r = if a < -MILLS_FROM {
        // both in Mills form: ln B − ln A = ln m(−b) − ln m(−a) exactly (the
        // −a²/2 − ln√(2π) terms are the same floats and cancel), so only
        // the Mills ratios' errors and their slopes (≤ 1/10) on da, db count
        let ma = ln_mills_approx(-a);
        let mb = ln_mills_approx(-b);
        let v = mb.v - ma.v;
        Approx {
            v,
            err: ma.err + mb.err + 0.1 * (da + db) + U * v.abs(),
        }
        .lo()
    } else {
        (lb.lo() - la_hi).next_down()
    };
    if r >= 0.0 {
        return 0.0;
    }
    let d = -libm::expm1(r);
    if la_hi > -700.0 {
        (libm::exp(la_hi) * d * grow + tiny).min(1.0)
    } else {
        // e^{ln A⁺} is below the normal range: add the logs instead
        let l = la_hi + libm::log(d);
        libm::exp(l + 2.0 * ELEM_ULPS * U * l.abs() + 4.0 * ELEM_ULPS * U) + tiny
    }
}

const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Smallest ε ≥ 0 with [`gdp_delta_upper`]`(μ, ε) ≤ δ`: the returned float is
/// the upper end of the final bisection bracket, a point where the proven
/// upper bound on δ_μ was seen ≤ δ, or one above such a point (a step
/// answered from Newton's bracket, [`crate::roots::bisect_known`]); the
/// exact δ_μ decreases in ε, so it never lies below the exact root.
/// The bracket stops at 10⁻¹⁴ relative, so the result is within 10⁻¹⁴ of
/// the root of the upper bound, which lies above the exact root by the
/// bound's slack (see [`gdp_delta_upper`]).
///
/// Remembered by the exact bits of (μ, δ) for the whole process
/// ([`memo::remembered`]): the composition accountants (basic, advanced)
/// solve it once per Gaussian release, so without the memo every analysis
/// of a plan re-solved every release's; with it, an edit that changes one
/// release's σ solves one. The function is deterministic, so a remembered
/// value is the one a new solve returns, bit for bit.
pub fn gdp_epsilon(mu: f64, delta: f64) -> f64 {
    memo::remembered(mu, delta, gdp_epsilon_solved)
}

/// [`gdp_epsilon`], solved (not remembered).
fn gdp_epsilon_solved(mu: f64, delta: f64) -> f64 {
    if mu <= 0.0 {
        return 0.0;
    }
    if delta <= 0.0 {
        return f64::INFINITY;
    }
    if gdp_delta_upper(mu, 0.0) <= delta {
        return 0.0;
    }
    let hi = upper_end(mu, delta);
    let rule = Bisection::arithmetic(1e-14, 1e-300, End::Upper);
    let holds = |e: f64| gdp_delta_upper(mu, e) <= delta;
    // the bisection's own steps, evaluated only near the root: Newton's
    // estimate x, and (x(1 − w), x(1 + w)) a bracket once seen so
    match known_bracket(mu, delta, hi) {
        Some(known) => bisect_known(0.0, hi, &rule, known, holds),
        None => bisect(0.0, hi, &rule, holds),
    }
}

/// The upper end of [`gdp_epsilon_solved`]'s bracket: from the classical
/// RDP bound μ²/2 + μ√(2 ln(1/δ)) (always ≥ the root), doubled until the
/// bound on δ is seen ≤ δ.
fn upper_end(mu: f64, delta: f64) -> f64 {
    let hi = linear_rdp_closed_form_mu(mu, delta) + 1e-3;
    find_bracket(
        hi,
        200,
        |x| Some(x * 2.0),
        |e| gdp_delta_upper(mu, e).partial_cmp(&delta) != Some(Ordering::Greater),
    )
    .upper()
}

/// (x(1 − [`NEAR`]), x(1 + NEAR)) around Newton's estimate x of
/// [`gdp_epsilon_solved`]'s root below `hi`, when the bound was seen above
/// δ at its low end and at most δ at its high end; `None` below
/// [`NEAR_FROM_MU`], when Newton's steps do not settle, or when the
/// bracket is not seen.
fn known_bracket(mu: f64, delta: f64, hi: f64) -> Option<(f64, f64)> {
    if mu < NEAR_FROM_MU {
        return None;
    }
    let x = root_estimate(mu, delta, linear_rdp_closed_form_mu(mu, delta).min(hi), hi)?;
    let (a, b) = (x * (1.0 - NEAR), x * (1.0 + NEAR));
    (gdp_delta_upper(mu, a) > delta && gdp_delta_upper(mu, b) <= delta).then_some((a, b))
}

/// The half-width, relative, of the bracket [`gdp_epsilon_solved`] checks
/// around Newton's estimate of its root. The bisection inside it has
/// about log₂(2·NEAR/10⁻¹⁴) ≈ 21 steps left of the ~60 it takes from 0;
/// it is wide enough that the bound's rounding (≤ 10⁻¹⁰ relative in δ at
/// μ = 10⁻⁶, where δ moves by ~z²·NEAR ≈ 2·10⁻⁷ across it) cannot make the
/// predicate disagree with its monotone answer outside it.
const NEAR: f64 = 1.0 / (1u64 << 27) as f64;

/// Below this μ the bound's rounding, relative, grows as 1/μ (δ is the
/// difference of two nearly equal terms) and could reach the change of δ
/// across [`NEAR`]: the solve bisects from 0 there, as it always did.
const NEAR_FROM_MU: f64 = 1e-6;

/// Newton's estimate of the root of ln δ̄(ε) = ln δ, δ̄ = [`gdp_delta_upper`],
/// below `hi` (where δ̄ ≤ δ): d ln δ/dε = −e^ε Φ(b)/δ(ε) (b = −ε/μ − μ/2),
/// each step kept inside the bracket the steps have seen (else halved),
/// until a step moves less than [`NEAR`]/64 relative; `None` after 30 steps. An
/// estimate only: [`gdp_epsilon_solved`] keeps it when the bracket around
/// it is seen, and otherwise bisects from 0.
fn root_estimate(mu: f64, delta: f64, start: f64, hi: f64) -> Option<f64> {
    let target = delta.ln();
    let (mut lo, mut hi) = (0.0, hi);
    let mut x = start;
    for _ in 0..30 {
        let d = gdp_delta_upper(mu, x);
        if d.is_nan() || d <= 0.0 {
            // past the last ε with δ̄ > 0: halve toward the bracket's low end
            hi = x;
            x = 0.5 * (lo + hi);
            continue;
        }
        let g = d.ln() - target;
        if g > 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        let slope = -(x + ln_phi_approx(-x / mu - 0.5 * mu).v - d.ln()).exp();
        let mut next = x - g / slope;
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        if (next - x).abs() <= NEAR / 64.0 * x {
            return Some(next);
        }
        x = next;
    }
    None
}

/// Largest μ with [`gdp_delta_upper`]`(μ, ε) ≤ δ` (lower end of the bracket,
/// so μ is never overstated).
pub fn gdp_mu_for(eps: f64, delta: f64) -> f64 {
    // δ_μ(ε) increases with μ: search on "μ violates δ" and keep the lower end.
    let violates = |mu: f64| {
        gdp_delta_upper(mu, eps)
            .partial_cmp(&delta)
            .is_none_or(Ordering::is_gt)
    };
    let (lo, hi) = match find_bracket(1.0, 1999, |x| Some(x * 2.0), violates) {
        Bracket::Found {
            last_failed,
            first_held,
        } => (last_failed.unwrap_or(0.0), first_held),
        Bracket::Exhausted { last_tried } => (last_tried, last_tried * 2.0),
    };
    bisect(
        lo,
        hi,
        &Bisection::arithmetic(1e-15, 0.0, End::Lower),
        violates,
    )
}

/// The process-wide memo of [`gdp_epsilon`].
mod memo {
    use foldhash::{HashMap, HashMapExt};
    use std::sync::{Mutex, OnceLock, PoisonError};

    /// At most this many (μ, δ) pairs (24 bytes each, plus the table's
    /// overhead); past it the memo is emptied and refills.
    pub(super) const MAX_ENTRIES: usize = 1 << 16;

    fn table() -> &'static Mutex<HashMap<(u64, u64), f64>> {
        static TABLE: OnceLock<Mutex<HashMap<(u64, u64), f64>>> = OnceLock::new();
        TABLE.get_or_init(|| Mutex::new(HashMap::new()))
    }

    /// `solve(mu, delta)`, or the value remembered for the same bits. The
    /// lock is not held while solving (threads of one analysis solve
    /// different releases at once; two solving the same pair store the same
    /// value).
    pub(super) fn remembered(mu: f64, delta: f64, solve: fn(f64, f64) -> f64) -> f64 {
        let key = (mu.to_bits(), delta.to_bits());
        let found = table()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .copied();
        if let Some(v) = found {
            return v;
        }
        let v = solve(mu, delta);
        let mut t = table().lock().unwrap_or_else(PoisonError::into_inner);
        if t.len() >= MAX_ENTRIES {
            t.clear();
        }
        t.insert(key, v);
        v
    }

    #[cfg(test)]
    pub(super) fn contains(mu: f64, delta: f64) -> bool {
        table()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&(mu.to_bits(), delta.to_bits()))
    }
}

#[cfg(test)]
mod memo_tests {
    use super::*;

    /// Deterministic (μ, δ) pairs over the ranges plans use, each with two
    /// close neighbours (the key must tell them apart).
    fn pairs() -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mu = 1e-3 * 10f64.powf(4.0 * (x % 10_000) as f64 / 10_000.0);
            let delta = 10f64.powi(-(((x >> 20) % 14) as i32) - 2);
            out.push((mu, delta));
            out.push((mu * (1.0 + 1e-12), delta));
            out.push((mu, delta * (1.0 + 1e-9)));
        }
        out
    }

    #[test]
    fn a_remembered_epsilon_is_the_solved_one_bit_for_bit() {
        let pairs = pairs();
        // First calls solve, second calls are answered by the memo
        // (unless another test filled it past its limit meanwhile).
        for &(mu, delta) in &pairs {
            let solved = gdp_epsilon_solved(mu, delta);
            assert_eq!(gdp_epsilon(mu, delta).to_bits(), solved.to_bits());
            assert!(memo::contains(mu, delta));
            assert_eq!(gdp_epsilon(mu, delta).to_bits(), solved.to_bits());
        }
        // Neighbours are different keys with their own values: a relative
        // 10⁻¹² of μ moves the solved ε (it is solved to 10⁻¹⁴), so a memo
        // keyed coarser than the bits would answer wrongly above.
        let moved = pairs
            .chunks(3)
            .filter(|c| gdp_epsilon(c[0].0, c[0].1) != gdp_epsilon(c[1].0, c[1].1))
            .count();
        assert!(moved > 250, "{moved} of 300 neighbours moved ε");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The solve as it was before Newton's bracket: bisection from 0 (to
    /// the same upper end).
    fn plain(mu: f64, delta: f64) -> f64 {
        if mu <= 0.0 || delta <= 0.0 || gdp_delta_upper(mu, 0.0) <= delta {
            return gdp_epsilon_solved(mu, delta);
        }
        bisect(
            0.0,
            upper_end(mu, delta),
            &Bisection::arithmetic(1e-14, 1e-300, End::Upper),
            |e| gdp_delta_upper(mu, e) <= delta,
        )
    }

    #[test]
    fn the_bracketed_solve_is_the_plain_bisection_bit_for_bit() {
        // μ from 10⁻⁸ to 10⁴ and δ from 10⁻¹⁵ to 0.55, 480 × 24 points: the
        // same float (issue 34 item 5: `dpplan check`'s output byte for
        // byte), and Newton's bracket taken for ≥ 95 % of the cases it is
        // tried at (μ ≥ 10⁻⁶; 97.6 % when written): else it saves nothing
        let (mut taken, mut tried) = (0, 0);
        for i in 0..480 {
            let mu = 10f64.powf(-8.0 + 12.0 * i as f64 / 479.0) * 1.000_123;
            for j in 0..24 {
                let delta = 10f64.powf(-15.0 + 14.5 * j as f64 / 23.0)
                    * (1.0 + 0.37 * (i % 7) as f64 / 7.0);
                let got = gdp_epsilon_solved(mu, delta);
                assert_eq!(
                    got.to_bits(),
                    plain(mu, delta).to_bits(),
                    "μ = {mu}, δ = {delta}"
                );
                if mu >= NEAR_FROM_MU && gdp_delta_upper(mu, 0.0) > delta {
                    tried += 1;
                    let hi = upper_end(mu, delta);
                    taken += usize::from(known_bracket(mu, delta, hi).is_some());
                }
            }
        }
        assert!(taken * 20 >= tried * 19, "{taken} of {tried}");
    }

    #[test]
    fn a_bracket_that_misses_the_root_changes_the_answer() {
        // the negative control of the test above: the saved evaluations
        // are answered from the bracket, so a bracket not around the
        // threshold (which `known_bracket` never returns) moves the result
        let (mu, delta) = (0.5, 1e-6);
        let hi = upper_end(mu, delta);
        let rule = Bisection::arithmetic(1e-14, 1e-300, End::Upper);
        let holds = |e: f64| gdp_delta_upper(mu, e) <= delta;
        let (a, b) = known_bracket(mu, delta, hi).expect("a bracket at μ = 0.5");
        let right = bisect_known(0.0, hi, &rule, (a, b), holds);
        assert_eq!(right.to_bits(), plain(mu, delta).to_bits());
        let off = (b - a) * 4.0;
        let wrong = bisect_known(0.0, hi, &rule, (a + off, b + off), holds);
        assert!(wrong > right * (1.0 + 1e-9), "{wrong} vs {right}");
    }
}
