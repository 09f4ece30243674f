//! Advanced composition: the minimum of basic composition, Dwork–Rothblum–Vadhan
//! 2010 (heterogeneous form), Kairouz–Oh–Viswanath 2015 Thm 3.5 (heterogeneous
//! form, both variants) and, for a homogeneous pure plan, the KOV optimal
//! composition (Thm 3.3: the k-fold composition of randomized response is the
//! worst case), evaluated exactly.

use super::{approx_items, infinite, single_eps};
use crate::roots::{bisect, Bisection, End};
use crate::special::{golden, sum_up, ELEM_ULPS, U};
use crate::{AccountingError, Plan};

/// (Σ c ε, Σ c ε², Σ c ε tanh(ε/2), Σ c ε(e^ε − 1)); Σ c ε rounded up
/// exactly ([`sum_up`]); the other three are sums of positive terms each
/// within (2·8 + 6)u (tanh allowed 8 ulps, expm1 [`ELEM_ULPS`], three
/// products) plus n·u for the sum, covered by [`adv_from_moments`]'s factor.
fn moments(list: &[(f64, f64)]) -> (f64, f64, f64, f64) {
    let mut s = (0.0, 0.0, 0.0, 0.0);
    for &(e, c) in list {
        s.1 += c * e * e;
        s.2 += c * e * libm::tanh(e / 2.0);
        s.3 += c * e * libm::expm1(e);
    }
    s.0 = sum_up(list.iter().map(|&(e, c)| (c, e)));
    s
}

/// min over the heterogeneous advanced-composition theorems at slack δ'; returns (ε, which).
/// `n` is the number of terms behind the moments: every formula but Σε
/// (exact upwards already) is raised by (n + 40)·2u — the moments' (n + 22)u
/// and at most 2·[`ELEM_ULPS`] + 10 ulps for its ln, √, products and sum —
/// and taken one float up.
fn adv_from_moments(m: (f64, f64, f64, f64), dprime: f64, n: usize) -> (f64, &'static str) {
    let (s1, s2, st, se) = m;
    let up = |v: f64| (v * (1.0 + (n as f64 + 40.0) * 2.0 * U)).next_up();
    let mut best = (s1, "basic");
    if dprime > 0.0 && dprime < 1.0 {
        let l = -libm::log(dprime);
        let drv = up((2.0 * l * s2).sqrt() + se);
        if drv < best.0 {
            best = (drv, "Dwork–Rothblum–Vadhan");
        }
        let kov1 = up(st + (2.0 * s2 * l).sqrt());
        if kov1 < best.0 {
            best = (kov1, "Kairouz–Oh–Viswanath Thm 3.5");
        }
        let kov2 = up(st + (2.0 * s2 * libm::log(std::f64::consts::E + s2.sqrt() / dprime)).sqrt());
        if kov2 < best.0 {
            best = (kov2, "Kairouz–Oh–Viswanath Thm 3.5");
        }
    }
    best
}

/// An upper bound on the exact δ(ε_g) of the k-fold composition of RR_ε
/// (KOV optimal composition), in log space:
/// δ(ε_g) = Σ_{l : (k−2l)ε > ε_g} C(k,l) p^{k−l} q^l (1 − e^{ε_g − (k−2l)ε}),
/// p = e^ε/(1+e^ε).
///
/// Error terms, each added: the loss (k−2l)ε is computed with ≤ 2u relative,
/// so terms are kept while the loss rounded up (×(1+4u)) exceeds ε_g and
/// their factor 1 − e^{ε_g − loss} uses that rounded-up loss; the log
/// weight lk − lgamma(l+1) − lgamma(k−l+1) + (k−l)ln p + l ln q is a sum of
/// values of size up to k·ln k, each with ≤ [`LGAMMA_ULPS`] (lgamma) or
/// 2[`ELEM_ULPS`] + 3 ulps (the logs and products), so it is raised by
/// 2u·(Σ of their magnitudes)·[`LGAMMA_ULPS`] + 4u; exp and expm1 and the
/// product add [`ELEM_ULPS`] each; the sum of n positive terms (n+2)u. The
/// summation walks from the largest loss kept downwards in l and stops
/// below the mode once the terms are negligible; the terms left out are
/// bounded by the last weight times ρ/(1−ρ), ρ = l/(k−l+1)·e^ε the ratio of
/// consecutive weights (which falls as l does), and added.
fn kov_rr_delta(k: u64, eps: f64, eg: f64) -> f64 {
    let kf = k as f64;
    let ln_p = -libm::log1p(libm::exp(-eps));
    let ln_q = -libm::log1p(libm::exp(eps));
    let loss_hi = |l: f64| ((kf - 2.0 * l) * eps) * (1.0 + 4.0 * U);
    // terms with (k − 2l)ε > eg, l ≤ lmax; the float estimate is moved up
    // until the rounded-up loss no longer exceeds eg, then back by one
    let lmax_f = ((kf * eps - eg) / (2.0 * eps)).floor();
    if !lmax_f.is_finite() {
        return 1.0;
    }
    let mut lmax = lmax_f.clamp(-1.0, kf);
    while lmax < kf && loss_hi(lmax + 1.0) > eg {
        lmax += 1.0;
    }
    while lmax >= 0.0 && loss_hi(lmax) <= eg {
        lmax -= 1.0;
    }
    if lmax < 0.0 {
        return 0.0;
    }
    let lg = libm::lgamma;
    let lk = lg(kf + 1.0);
    let grow = 1.0 + (3.0 * ELEM_ULPS + 2.0) * 2.0 * U;
    let weight = |lf: f64| -> f64 {
        let g1 = lg(lf + 1.0);
        let g2 = lg(kf - lf + 1.0);
        let t1 = (kf - lf) * ln_p;
        let t2 = lf * ln_q;
        let lw = lk - g1 - g2 + t1 + t2;
        let mag = lk.abs() + g1.abs() + g2.abs() + t1.abs() + t2.abs();
        let err = 2.0 * U * LGAMMA_ULPS * mag + 4.0 * U;
        libm::exp(lw + err)
    };
    let mut sum = 0.0;
    let mut n = 0.0;
    let mut l = lmax;
    let mut small_run = 0;
    let ratio_e = libm::exp(eps) * (1.0 + 2.0 * ELEM_ULPS * U);
    while l >= 0.0 {
        let w = weight(l);
        let factor = -libm::expm1(eg - loss_hi(l));
        let t = w * factor * grow;
        sum += t;
        n += 1.0;
        if t < 1e-18 * sum {
            small_run += 1;
            // consecutive weights: w(l−1)/w(l) = l/(k−l+1)·e^ε, falling with l
            let rho = l / (kf - l + 1.0) * ratio_e * (1.0 + 4.0 * U);
            if small_run > 20 && rho < 0.5 {
                // the factors are ≤ 1: the rest is ≤ w·ρ/(1−ρ)
                sum += w * rho / (1.0 - rho) * grow;
                break;
            }
        } else {
            small_run = 0;
        }
        l -= 1.0;
    }
    ((sum * (1.0 + 1.01 * (n + 2.0) * U)).next_up()).min(1.0)
}

/// Allowance, in ulps, for `libm::lgamma` at arguments ≥ 1 (FreeBSD's
/// e_lgamma_r; documented near 1 ulp away from its zeros at 1 and 2, where
/// the integer arguments used here give exact zeros).
const LGAMMA_ULPS: f64 = 16.0;

fn kov_homogeneous(k: u64, eps: f64, delta: f64) -> f64 {
    // the bracket's upper end is vouched for, not evaluated: kε rounded up
    let total = sum_up([(k as f64, eps)]);
    if kov_rr_delta(k, eps, 0.0) <= delta {
        return 0.0;
    }
    bisect(
        0.0,
        total,
        &Bisection::arithmetic(1e-13, 1e-300, End::Upper),
        |eg| kov_rr_delta(k, eps, eg) <= delta,
    )
}

pub(super) fn advanced(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    let pure: Vec<(f64, f64)> = plan
        .items
        .iter()
        .filter_map(|i| i.eff.pure_eps().map(|e| (e, i.count as f64)))
        .collect();
    let approx = approx_items(plan, 1e-2, 256);
    let total_pure = plan.pure_sum();
    if approx.is_empty() {
        let m = moments(&pure);
        let (mut best, mut which) = adv_from_moments(m, delta, pure.len());
        let mut detail = format!("{which}, δ' = {delta:.3e}");
        // homogeneous pure plan: exact optimal composition (KOV)
        let distinct: Vec<f64> = {
            let mut v: Vec<f64> = pure.iter().map(|p| p.0).collect();
            v.sort_by(f64::total_cmp);
            v.dedup();
            v
        };
        if distinct.len() == 1 {
            let k: u64 = plan
                .items
                .iter()
                .fold(0u64, |a, i| a.saturating_add(i.count));
            if k <= 50_000_000 {
                let e = kov_homogeneous(k, distinct[0], delta);
                if e < best {
                    best = e;
                    which = "KOV optimal composition";
                    detail = format!("{which} (exact, {k} × {:.6}-DP)", distinct[0]);
                }
            }
        }
        let _ = which;
        return Ok((best.min(total_pure), detail));
    }
    if delta <= 0.0 {
        return Err(infinite("advanced composition"));
    }
    let n_approx: f64 = approx.iter().map(|(_, c)| *c as f64).sum();
    let eval = |theta: f64| -> Result<(f64, &'static str), AccountingError> {
        // rounded down, so that δ' + n·share never exceeds δ
        let dprime = (theta * delta).next_down();
        let share = ((1.0 - theta) * delta / n_approx).next_down().next_down();
        let mut list = pure.clone();
        for (e, c) in &approx {
            list.push((single_eps(e, share)?, *c as f64));
        }
        Ok(adv_from_moments(moments(&list), dprime, list.len()))
    };
    let mut best = (f64::INFINITY, "basic", 0.5);
    let grid = 24;
    let mut best_i = 0;
    let thetas: Vec<f64> = (0..grid)
        .map(|i| 1e-6f64.powf(1.0 - i as f64 / (grid - 1) as f64) * 0.999)
        .collect();
    for (i, &t) in thetas.iter().enumerate() {
        let (e, w) = eval(t)?;
        if e < best.0 {
            best = (e, w, t);
            best_i = i;
        }
    }
    let lo = thetas[best_i.saturating_sub(1)];
    let hi = thetas[(best_i + 1).min(grid - 1)];
    if hi > lo {
        let f = |t: f64| eval(t).map(|v| v.0).unwrap_or(f64::INFINITY);
        let (t, e) = golden(lo, hi, &f);
        if e < best.0 {
            if let Ok((e2, w)) = eval(t) {
                best = (e2, w, t);
            }
        }
    }
    Ok((
        best.0,
        format!(
            "{}; δ' = {:.3e}, rest split over {} approximate releases",
            best.1,
            best.2 * delta,
            n_approx
        ),
    ))
}
