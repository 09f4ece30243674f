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
use crate::special::{golden, SumUp, U};
use crate::{AccountingError, Plan};

/// (Σ c ε, Σ c ε², Σ c ε tanh(ε/2), Σ c ε(e^ε − 1)) over (ε, c) terms
/// added in order; Σ c ε rounded up exactly ([`SumUp`]); the other three
/// are sums of positive terms each within (2·8 + 6)u (tanh allowed 8 ulps,
/// expm1 [`ELEM_ULPS`](crate::special::ELEM_ULPS), three products) plus n·u
/// for the sum, covered by [`adv_from_moments`]'s factor. An accumulator:
/// the pure releases' terms, the same at every slack split, are added once
/// and each split's approximate terms after them (the same floats as the
/// whole list summed afresh, in the same order).
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    s1: SumUp,
    s2: f64,
    st: f64,
    se: f64,
    /// the number of terms
    n: usize,
}

impl Moments {
    fn of(list: &[(f64, f64)]) -> Self {
        let mut m = Moments::default();
        for &(e, c) in list {
            m.add(e, c);
        }
        m
    }

    fn add(&mut self, e: f64, c: f64) {
        self.s2 += c * e * e;
        self.st += c * e * libm::tanh(e / 2.0);
        self.se += c * e * libm::expm1(e);
        self.s1.add(c, e);
        self.n += 1;
    }

    fn value(&self) -> (f64, f64, f64, f64) {
        (self.s1.value(), self.s2, self.st, self.se)
    }
}

/// The moments as they were computed before [`Moments`] kept a prefix: one
/// pass over the whole list, Σ c ε by the one-pass rounded-up sum as
/// `special::sum_up` was written before its accumulator (copied here) — the
/// reference the accumulator is tested against.
#[cfg(test)]
fn sum_moments_reference(list: &[(f64, f64)]) -> (f64, f64, f64, f64) {
    let mut s = (0.0, 0.0, 0.0, 0.0);
    for &(e, c) in list {
        s.1 += c * e * e;
        s.2 += c * e * libm::tanh(e / 2.0);
        s.3 += c * e * libm::expm1(e);
    }
    s.0 = (|| {
        let (mut s, mut e, mut e_abs, mut n) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for &(x, c) in list {
            let p = c * x;
            if !p.is_finite() {
                return p;
            }
            let pe = c.mul_add(x, -p);
            if p != 0.0 && p < 1e-290 {
                e_abs += 1e-290;
            }
            let t = s + p;
            let bb = t - s;
            let te = (s - (t - bb)) + (p - bb);
            s = t;
            e += pe + te;
            e_abs += pe.abs() + te.abs();
            n += 2.0;
        }
        let corr = e + 1.01 * (n + 2.0) * U * e_abs;
        if corr == 0.0 {
            s
        } else {
            (s + corr).next_up()
        }
    })();
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
        let m = Moments::of(&pure);
        let (mut best, mut which) = adv_from_moments(m.value(), delta, m.n);
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
    let pure_moments = Moments::of(&pure);
    let eval = |theta: f64| -> Result<(f64, &'static str), AccountingError> {
        // rounded down, so that δ' + n·share never exceeds δ
        let dprime = (theta * delta).next_down();
        let share = ((1.0 - theta) * delta / n_approx).next_down().next_down();
        let mut m = pure_moments;
        for (e, c) in &approx {
            m.add(single_eps(e, share)?, *c as f64);
        }
        Ok(adv_from_moments(m.value(), dprime, m.n))
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

#[cfg(test)]
mod tests {
    use super::{sum_moments_reference, Moments};

    /// A deterministic stream of (ε, count) terms: tiny to large ε,
    /// counts up to 10⁶.
    fn terms(seed: u64, n: usize) -> Vec<(f64, f64)> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                let e = 10f64.powf(-8.0 + 9.0 * u);
                let c = ((x >> 40) % 1_000_000 + 1) as f64;
                (e, c)
            })
            .collect()
    }

    /// The pure prefix's moments kept and extended by each tail are the
    /// same floats, bit for bit, as the whole list summed afresh (the
    /// computation `advanced` did before at every slack split); negative
    /// control: the same terms in another order give other floats, so the
    /// comparison sees the order.
    #[test]
    fn a_kept_prefix_extended_is_the_whole_list_summed() {
        let mut reordered_differs = false;
        for seed in 0..40 {
            let prefix = terms(seed, 50 + seed as usize * 37);
            let base = Moments::of(&prefix);
            for t in 0..3 {
                let tail = terms(1000 + seed * 3 + t, 1 + (t as usize) * 20);
                let mut kept = base;
                for &(e, c) in &tail {
                    kept.add(e, c);
                }
                let whole: Vec<(f64, f64)> = prefix.iter().chain(&tail).copied().collect();
                let fresh = sum_moments_reference(&whole);
                let got = kept.value();
                assert_eq!(
                    (
                        got.0.to_bits(),
                        got.1.to_bits(),
                        got.2.to_bits(),
                        got.3.to_bits()
                    ),
                    (
                        fresh.0.to_bits(),
                        fresh.1.to_bits(),
                        fresh.2.to_bits(),
                        fresh.3.to_bits()
                    ),
                    "seed {seed}, tail {t}"
                );
                assert_eq!(kept.n, whole.len());
                let mut reversed = whole.clone();
                reversed.reverse();
                let other = sum_moments_reference(&reversed);
                reordered_differs |= other.0.to_bits() != fresh.0.to_bits()
                    || other.1.to_bits() != fresh.1.to_bits()
                    || other.2.to_bits() != fresh.2.to_bits()
                    || other.3.to_bits() != fresh.3.to_bits();
            }
        }
        assert!(reordered_differs, "the comparison cannot see the order");
    }

    /// A non-finite term makes Σ c ε that term, however many follow (as
    /// the one-pass sum returned it at once).
    #[test]
    fn a_non_finite_term_is_the_sum() {
        let mut m = Moments::of(&[(1.0, 2.0), (f64::INFINITY, 1.0)]);
        m.add(3.0, 1.0);
        assert_eq!(m.value().0, f64::INFINITY);
        assert_eq!(
            sum_moments_reference(&[(1.0, 2.0), (f64::INFINITY, 1.0), (3.0, 1.0)]).0,
            f64::INFINITY
        );
    }
}
