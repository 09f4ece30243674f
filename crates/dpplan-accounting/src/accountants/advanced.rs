//! Advanced composition: the minimum of basic composition, Dwork–Rothblum–Vadhan
//! 2010 (heterogeneous form), Kairouz–Oh–Viswanath 2015 Thm 3.5 (heterogeneous
//! form, both variants) and, for a homogeneous pure plan, the KOV optimal
//! composition (Thm 3.3: the k-fold composition of randomized response is the
//! worst case), evaluated exactly by [`super::kov`] (one walk over a window of
//! the loss atoms, up to 10¹² releases). The exact method is for identical
//! pure releases only; several groups of different ε₀, or pure releases
//! mixed with Gaussians, are bounded here by the heterogeneous theorems and,
//! tighter, by the PLD and RDP accountants.

use super::kov::kov_epsilon;
use super::{approx_items, infinite, single_eps};
use crate::special::{golden, sum_up, U};
use crate::{AccountingError, Plan};

/// (Σ c ε, Σ c ε², Σ c ε tanh(ε/2), Σ c ε(e^ε − 1)); Σ c ε rounded up
/// exactly ([`sum_up`]); the other three are sums of positive terms each
/// within (2·8 + 6)u (tanh allowed 8 ulps, expm1 [`ELEM_ULPS`](crate::special::ELEM_ULPS), three
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
/// and at most 2·[`ELEM_ULPS`](crate::special::ELEM_ULPS) + 10 ulps for its ln, √, products and sum —
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

/// The pure releases as (ε, count) terms, one per distinct ε (counts
/// added exactly in integers), in increasing ε: the moments are evaluated
/// once per distinct ε, not once per release at each of the ~50 slack
/// splits tried below (10⁵ one-release queries of a few noises: a few
/// terms, not 10⁵ × 50 tanh and expm1).
fn pure_terms(plan: &Plan) -> Vec<(f64, f64)> {
    let mut pure: Vec<(f64, u64)> = plan
        .items
        .iter()
        .filter_map(|i| i.eff.pure_eps().map(|e| (e, i.count)))
        .collect();
    pure.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut merged: Vec<(f64, u64)> = Vec::with_capacity(pure.len());
    for (e, c) in pure {
        match merged.last_mut() {
            Some(last) if last.0.to_bits() == e.to_bits() => last.1 = last.1.saturating_add(c),
            _ => merged.push((e, c)),
        }
    }
    merged
        .into_iter()
        .map(|(e, c)| {
            // a count above 2⁵³ is rounded up, never down
            let f = c as f64;
            (e, if (f as u64) < c { f.next_up() } else { f })
        })
        .collect()
}

pub(super) fn advanced(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    let pure = pure_terms(plan);
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
            if let Some((e, d)) = kov_epsilon(k, distinct[0], delta) {
                if e < best {
                    best = e;
                    which = "KOV optimal composition";
                    detail = d;
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
