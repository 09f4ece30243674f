//! Advanced composition: the minimum of basic composition, Dwork–Rothblum–Vadhan
//! 2010 (heterogeneous form), Kairouz–Oh–Viswanath 2015 Thm 3.5 (heterogeneous
//! form, both variants) and, for a homogeneous pure plan, the KOV optimal
//! composition (Thm 3.3: the k-fold composition of randomized response is the
//! worst case), evaluated exactly.

use super::{approx_items, infinite, single_eps};
use crate::roots::{bisect, Bisection, End};
use crate::special::golden;
use crate::{AccountingError, Plan};

/// (Σ c ε, Σ c ε², Σ c ε tanh(ε/2), Σ c ε(e^ε − 1))
fn moments(list: &[(f64, f64)]) -> (f64, f64, f64, f64) {
    let mut s = (0.0, 0.0, 0.0, 0.0);
    for &(e, c) in list {
        s.0 += c * e;
        s.1 += c * e * e;
        s.2 += c * e * (e / 2.0).tanh();
        s.3 += c * e * e.exp_m1();
    }
    s
}

/// min over the heterogeneous advanced-composition theorems at slack δ'; returns (ε, which)
fn adv_from_moments(m: (f64, f64, f64, f64), dprime: f64) -> (f64, &'static str) {
    let (s1, s2, st, se) = m;
    let mut best = (s1, "basic");
    if dprime > 0.0 && dprime < 1.0 {
        let l = (1.0 / dprime).ln();
        let drv = (2.0 * l * s2).sqrt() + se;
        if drv < best.0 {
            best = (drv, "Dwork–Rothblum–Vadhan");
        }
        let kov1 = st + (2.0 * s2 * l).sqrt();
        if kov1 < best.0 {
            best = (kov1, "Kairouz–Oh–Viswanath Thm 3.5");
        }
        let kov2 = st + (2.0 * s2 * (std::f64::consts::E + s2.sqrt() / dprime).ln()).sqrt();
        if kov2 < best.0 {
            best = (kov2, "Kairouz–Oh–Viswanath Thm 3.5");
        }
    }
    best
}

/// Exact δ(ε_g) of the k-fold composition of RR_ε (KOV optimal composition), log-space.
fn kov_rr_delta(k: u64, eps: f64, eg: f64) -> f64 {
    // atoms at (k − 2l)ε with P-mass C(k,l) p^{k−l} q^l, p = e^ε/(1+e^ε)
    let kf = k as f64;
    let ln_p = -(-eps).exp().ln_1p();
    let ln_q = -eps.exp().ln_1p();
    // terms with (k − 2l)ε > eg  ⇔  l < (kε − eg)/(2ε)
    let lmax_f = (kf * eps - eg) / (2.0 * eps);
    if lmax_f <= 0.0 {
        return 0.0;
    }
    let mut lmax = lmax_f.ceil() as u64 - 1;
    if lmax > k {
        lmax = k;
    }
    // ensure strictness
    while lmax > 0 && (kf - 2.0 * lmax as f64) * eps <= eg {
        lmax -= 1;
    }
    if (kf - 2.0 * lmax as f64) * eps <= eg {
        return 0.0;
    }
    let lg = |x: f64| statrs::function::gamma::ln_gamma(x);
    let lk = lg(kf + 1.0);
    let term = |l: u64| -> f64 {
        let lf = l as f64;
        let lw = lk - lg(lf + 1.0) - lg(kf - lf + 1.0) + (kf - lf) * ln_p + lf * ln_q;
        let loss = (kf - 2.0 * lf) * eps;
        lw.exp() * (-(eg - loss).exp_m1())
    };
    // sum from lmax downward (terms increase towards the mode, which lies above lmax in
    // the tail regime); stop when terms become negligible.
    let mut sum = 0.0;
    let mut l = lmax as i64;
    let mut small_run = 0;
    while l >= 0 {
        let t = term(l as u64);
        sum += t;
        if t < 1e-18 * sum {
            small_run += 1;
            if small_run > 20 {
                break;
            }
        } else {
            small_run = 0;
        }
        l -= 1;
    }
    // the ln_gamma sums carry ~1e-13 relative error for large k; inflate slightly
    (sum * (1.0 + 1e-10)).min(1.0)
}

fn kov_homogeneous(k: u64, eps: f64, delta: f64) -> f64 {
    let total = k as f64 * eps;
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
        let (mut best, mut which) = adv_from_moments(m, delta);
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
        let dprime = theta * delta;
        let share = (1.0 - theta) * delta / n_approx;
        let mut list = pure.clone();
        for (e, c) in &approx {
            list.push((single_eps(e, share)?, *c as f64));
        }
        Ok(adv_from_moments(moments(&list), dprime))
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
