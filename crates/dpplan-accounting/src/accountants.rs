//! Basic, advanced, zCDP, RDP and GDP accountants (PLD lives in `pld.rs`).

use crate::dgauss::DiscreteGaussian;
use crate::gaussian::{gdp_delta, gdp_epsilon};
use crate::special::{golden, minimize_log_grid};
use crate::{normalise, Accountant, AccountingError, Bound, Eff, Plan, Release};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub(crate) fn evaluate(plan: &Plan, delta: f64, a: Accountant) -> Result<Bound, AccountingError> {
    let (eps, detail) = match a {
        Accountant::Basic => basic(plan, delta)?,
        Accountant::Advanced => advanced(plan, delta)?,
        Accountant::Zcdp => zcdp(plan, delta)?,
        Accountant::Rdp => rdp(plan, delta, RdpConversion::Best)?,
        Accountant::Gdp => gdp(plan, delta)?,
        Accountant::Pld => crate::pld::pld_epsilon(plan, delta)?,
    };
    if eps.is_nan() {
        return Err(AccountingError::InvalidParameter(
            "numerical failure (NaN ε)".into(),
        ));
    }
    if eps.is_infinite() {
        return Err(AccountingError::InfiniteEpsilon(format!(
            "{a}: ε is unbounded at δ = {delta}"
        )));
    }
    Ok(Bound {
        accountant: a,
        epsilon: eps.max(0.0),
        delta,
        detail,
    })
}

fn infinite(what: &str) -> AccountingError {
    AccountingError::InfiniteEpsilon(format!(
        "{what} needs δ > 0 for approximate-DP (Gaussian) releases"
    ))
}

/// tightest single-release ε of an effective mechanism at δ
pub(crate) fn single_eps(eff: &Eff, delta: f64) -> Result<f64, AccountingError> {
    match *eff {
        Eff::Laplace { eps, .. } | Eff::DLaplace { eps } => Ok(eps),
        Eff::Gauss { mu } => {
            if delta <= 0.0 {
                return Err(infinite("a Gaussian release"));
            }
            Ok(gdp_epsilon(mu, delta))
        }
        Eff::DGauss { sigma, shift, rho } => {
            if delta <= 0.0 {
                return Err(infinite("a discrete Gaussian release"));
            }
            let bound = zcdp_epsilon_from_rho(rho, delta);
            if let Some(s) = shift {
                if let Some(dg) = DiscreteGaussian::new(sigma, s) {
                    return Ok(dg.epsilon(delta).min(bound));
                }
            }
            Ok(bound)
        }
    }
}

pub(crate) fn eff_rho(eff: &Eff) -> f64 {
    match *eff {
        Eff::Gauss { mu } => mu * mu / 2.0,
        Eff::DGauss { rho, .. } => rho,
        // Steinke 2024 Thm 5: ε-DP ⇒ ε·tanh(ε/2)-zCDP (tight; ≤ ε²/2)
        Eff::Laplace { eps, .. } | Eff::DLaplace { eps } => eps * (eps / 2.0).tanh(),
    }
}

// ---------------------------------------------------------------------------
// Geometric bucketing (sound: parameters only rounded UP)
// ---------------------------------------------------------------------------

/// Round x > 0 up onto the grid {(1+r)^k}.
fn round_up_geometric(x: f64, ratio: f64) -> f64 {
    let l = ratio.ln_1p();
    let k = (x.ln() / l).ceil();
    let mut v = (k * l).exp();
    // guard against the exp/ln round trip landing a hair below x
    while v < x {
        v *= 1.0 + 1e-15;
        v = v.max(x);
    }
    v
}

/// Approximate-DP items, optionally bucketed (μ / ρ / σ rounded to be more private-costly).
fn approx_items(plan: &Plan, ratio: f64, max_distinct: usize) -> Vec<(Eff, u64)> {
    let approx: Vec<(Eff, u64)> = plan
        .items
        .iter()
        .filter(|i| i.eff.pure_eps().is_none())
        .map(|i| (i.eff, i.count))
        .collect();
    if approx.len() <= max_distinct {
        return approx;
    }
    let grouped = Plan {
        items: approx
            .iter()
            .map(|&(eff, count)| crate::Item { eff, count })
            .collect(),
    }
    .grouped();
    if grouped.items.len() <= max_distinct {
        return grouped
            .items
            .into_iter()
            .map(|i| (i.eff, i.count))
            .collect();
    }
    let mut map: HashMap<(u8, u64, u64, u64), (Eff, u64)> = HashMap::new();
    for (e, c) in approx {
        let e2 = match e {
            Eff::Gauss { mu } => Eff::Gauss {
                mu: round_up_geometric(mu, ratio),
            },
            // larger ρ with the same bound function; exact DG curve no longer used
            Eff::DGauss { sigma, rho, .. } => Eff::DGauss {
                sigma,
                shift: None,
                rho: round_up_geometric(rho, ratio),
            },
            other => other,
        };
        let e2 = match e2 {
            Eff::DGauss { rho, .. } => Eff::DGauss {
                sigma: 0.0,
                shift: None,
                rho,
            },
            o => o,
        };
        map.entry(e2.key())
            .and_modify(|v| v.1 = v.1.saturating_add(c))
            .or_insert((e2, c));
    }
    map.into_values().collect()
}

// ---------------------------------------------------------------------------
// Basic composition
// ---------------------------------------------------------------------------

fn basic(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    let pure = plan.pure_sum();
    let approx = approx_items(plan, 1e-3, 1024);
    if approx.is_empty() {
        return Ok((
            pure,
            format!("Σε of {} pure ε-DP releases", plan.total_count()),
        ));
    }
    if delta <= 0.0 {
        return Err(infinite("basic composition"));
    }
    let n: f64 = approx.iter().map(|(_, c)| *c as f64).sum();
    let share = delta / n;
    let mut sum = pure;
    for (e, c) in &approx {
        sum += *c as f64 * single_eps(e, share)?;
    }
    Ok((
        sum,
        format!(
            "Σε; δ split evenly: {:.3e} to each of {} approximate-DP releases",
            share, n
        ),
    ))
}

// ---------------------------------------------------------------------------
// Advanced composition (DRV, KOV)
// ---------------------------------------------------------------------------

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
    crate::special::bisect_upper(0.0, total, 1e-13, 1e-300, |eg| {
        kov_rr_delta(k, eps, eg) <= delta
    })
}

fn advanced(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
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

// ---------------------------------------------------------------------------
// zCDP
// ---------------------------------------------------------------------------

/// ε of ρ-zCDP at δ: min of Bun–Steinke ρ + 2√(ρ ln 1/δ) and CKS 2020 Cor 13 (optimised
/// over α).
pub fn zcdp_epsilon_from_rho(rho: f64, delta: f64) -> f64 {
    if rho <= 0.0 {
        return 0.0;
    }
    if delta <= 0.0 {
        return f64::INFINITY;
    }
    let l = (1.0 / delta).ln();
    let bs = rho + 2.0 * (rho * l).sqrt();
    let f = |a: f64| a * rho + ((a - 1.0) / a).ln() - (delta.ln() + a.ln()) / (a - 1.0);
    let a_star = 1.0 + (l / rho).sqrt();
    let (_, v) = minimize_log_grid(
        1.0,
        1.0 + 1e-9 * a_star.min(1e6),
        1.0 + 1e3 * (a_star - 1.0) + 1.0,
        161,
        f,
    );
    bs.min(v).max(0.0)
}

fn zcdp(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    let rho: f64 = plan
        .items
        .iter()
        .map(|i| i.count as f64 * eff_rho(&i.eff))
        .sum();
    if rho == 0.0 {
        return Ok((0.0, "ρ = 0".into()));
    }
    if delta <= 0.0 {
        return Err(AccountingError::InfiniteEpsilon(
            "zCDP gives no finite ε at δ = 0".into(),
        ));
    }
    let e = zcdp_epsilon_from_rho(rho, delta);
    Ok((
        e,
        format!("ρ = {rho:.6e} (Bun–Steinke / Canonne–Kamath–Steinke conversion)"),
    ))
}

// ---------------------------------------------------------------------------
// RDP
// ---------------------------------------------------------------------------

/// Which RDP → (ε, δ) conversion to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RdpConversion {
    /// ε = R(α) + ln(1/δ)/(α−1) (Mironov 2017, Prop 3)
    Classical,
    /// ε = R(α) + ln((α−1)/α) − (ln δ + ln α)/(α−1) (Balle et al. 2020, Thm 21)
    Balle2020,
    /// the smaller of the two
    Best,
}

/// Mironov's Laplace RDP at order α > 1 for ε = Δ/b, stable form
/// ε + ln(α/(2α−1) + (α−1)/(2α−1)·e^{−(2α−1)ε})/(α−1).
pub(crate) fn rdp_laplace(alpha: f64, eps: f64) -> f64 {
    let am1 = alpha - 1.0;
    let t = 2.0 * alpha - 1.0;
    let x = -(am1 / t) * (-(-(t * eps)).exp_m1());
    (eps + x.ln_1p() / am1).max(0.0)
}

/// Worst-case RDP of an ε-DP mechanism (randomized response; Steinke 2024 Thm 4):
/// ε − [ln(1+e^{−ε}) − ln(1+e^{−(2α−1)ε})]/(α−1).
pub(crate) fn rdp_rr(alpha: f64, eps: f64) -> f64 {
    let am1 = alpha - 1.0;
    let a = (-eps).exp().ln_1p();
    let b = (-(2.0 * alpha - 1.0) * eps).exp().ln_1p();
    (eps - (a - b) / am1).clamp(0.0, eps)
}

struct RdpCurve {
    gauss_rho: f64,
    laplace: Vec<(f64, f64)>,
    /// chord buckets: (lo, hi, n, Σε)
    lap_buckets: Vec<(f64, f64, f64, f64)>,
    rr: Vec<(f64, f64)>,
}

impl RdpCurve {
    fn new(plan: &Plan) -> Self {
        let mut c = RdpCurve {
            gauss_rho: 0.0,
            laplace: vec![],
            lap_buckets: vec![],
            rr: vec![],
        };
        for it in &plan.items {
            let n = it.count as f64;
            match it.eff {
                Eff::Gauss { .. } | Eff::DGauss { .. } => c.gauss_rho += n * eff_rho(&it.eff),
                Eff::Laplace { eps, .. } => c.laplace.push((eps, n)),
                Eff::DLaplace { eps } => c.rr.push((eps, n)),
            }
        }
        if c.laplace.len() > 512 {
            // chord bucketing: R(α,·) convex ⇒ on [lo,hi], R(ε) ≤ R(lo) + (ε−lo)·slope
            let ratio: f64 = 0.01;
            let l = ratio.ln_1p();
            let mut map: HashMap<i64, (f64, f64)> = HashMap::new();
            for &(e, n) in &c.laplace {
                let k = (e.ln() / l).floor() as i64;
                let ent = map.entry(k).or_insert((0.0, 0.0));
                ent.0 += n;
                ent.1 += n * e;
            }
            for (k, (n, s)) in map {
                let lo = (k as f64 * l).exp();
                let hi = ((k + 1) as f64 * l).exp();
                // make sure the bucket really contains its members after rounding
                let mean = s / n;
                let lo = lo.min(mean);
                let hi = hi.max(mean) * (1.0 + 1e-12);
                c.lap_buckets.push((lo * (1.0 - 1e-12), hi, n, s));
            }
            c.laplace.clear();
        }
        if c.rr.len() > 512 {
            let mut map: HashMap<u64, f64> = HashMap::new();
            for &(e, n) in &c.rr {
                *map.entry(round_up_geometric(e, 1e-3).to_bits())
                    .or_insert(0.0) += n;
            }
            c.rr = map
                .into_iter()
                .map(|(b, n)| (f64::from_bits(b), n))
                .collect();
        }
        c
    }
    fn eval(&self, alpha: f64) -> f64 {
        let mut r = alpha * self.gauss_rho;
        for &(e, n) in &self.laplace {
            r += n * rdp_laplace(alpha, e);
        }
        for &(lo, hi, n, s) in &self.lap_buckets {
            let rl = rdp_laplace(alpha, lo);
            let rh = rdp_laplace(alpha, hi);
            let slope = ((rh - rl) / (hi - lo)).max(0.0);
            r += n * rl + (s - n * lo).max(0.0) * slope;
        }
        for &(e, n) in &self.rr {
            r += n * rdp_rr(alpha, e);
        }
        r
    }
    fn only_gauss(&self) -> bool {
        self.laplace.is_empty() && self.lap_buckets.is_empty() && self.rr.is_empty()
    }
}

fn conv_classical(r: f64, alpha: f64, delta: f64) -> f64 {
    r + (1.0 / delta).ln() / (alpha - 1.0)
}
fn conv_balle(r: f64, alpha: f64, delta: f64) -> f64 {
    r + ((alpha - 1.0) / alpha).ln() - (delta.ln() + alpha.ln()) / (alpha - 1.0)
}

/// RDP accountant with a chosen conversion; returns the bound for the plan.
pub fn rdp_epsilon_with(
    releases: &[Release],
    delta: f64,
    conv: RdpConversion,
) -> Result<Bound, AccountingError> {
    crate::check_delta(delta)?;
    let plan = normalise(releases)?;
    let (e, detail) = rdp(&plan, delta, conv)?;
    Ok(Bound {
        accountant: Accountant::Rdp,
        epsilon: e,
        delta,
        detail,
    })
}

fn rdp(plan: &Plan, delta: f64, conv: RdpConversion) -> Result<(f64, String), AccountingError> {
    if plan.items.is_empty() {
        return Ok((0.0, "empty plan".into()));
    }
    if delta <= 0.0 {
        if plan.all_pure() {
            return Ok((plan.pure_sum(), "RDP at order α = ∞ (δ = 0): Σε".into()));
        }
        return Err(infinite("RDP"));
    }
    let curve = RdpCurve::new(plan);
    let l = (1.0 / delta).ln();
    let mut results: Vec<(f64, f64, &'static str)> = vec![];
    let use_classical = matches!(conv, RdpConversion::Classical | RdpConversion::Best);
    let use_balle = matches!(conv, RdpConversion::Balle2020 | RdpConversion::Best);
    // range of orders: α − 1 ∈ [1e-6, 1e7]
    let (a_lo, a_hi, n) = (1.0 + 1e-6, 1.0 + 1e7, 181);
    if use_classical {
        if curve.only_gauss() {
            // closed form: min_α αa + L/(α−1) = a + 2√(aL) at α = 1 + √(L/a)
            let a = curve.gauss_rho;
            results.push((
                a + 2.0 * (a * l).sqrt(),
                1.0 + (l / a).sqrt(),
                "classical conversion (closed form)",
            ));
        } else {
            let (al, v) = minimize_log_grid(1.0, a_lo, a_hi, n, |al| {
                conv_classical(curve.eval(al), al, delta)
            });
            results.push((v, al, "classical conversion"));
        }
    }
    if use_balle {
        let (al, v) = minimize_log_grid(1.0, a_lo, a_hi, n, |al| {
            conv_balle(curve.eval(al), al, delta)
        });
        results.push((v, al, "Balle et al. 2020 conversion"));
    }
    let mut best = results[0];
    for r in &results[1..] {
        if r.0 < best.0 {
            best = *r;
        }
    }
    // pure plans: never worse than Σε (order ∞)
    if plan.all_pure() && plan.pure_sum() < best.0 {
        return Ok((plan.pure_sum(), "RDP at order α = ∞: Σε".into()));
    }
    Ok((
        best.0.max(0.0),
        format!("RDP at order α = {:.6}, {}", best.1, best.2),
    ))
}

// ---------------------------------------------------------------------------
// GDP
// ---------------------------------------------------------------------------

fn gdp(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    let mut mu2 = 0.0;
    for it in &plan.items {
        match it.eff {
            Eff::Gauss { mu } => mu2 += it.count as f64 * mu * mu,
            _ => {
                return Err(AccountingError::NotApplicable(
                    "exact Gaussian accounting needs every release to be a continuous Gaussian"
                        .into(),
                ))
            }
        }
    }
    let mu = mu2.sqrt();
    if mu == 0.0 {
        return Ok((0.0, "μ = 0".into()));
    }
    if delta <= 0.0 {
        return Err(infinite("GDP"));
    }
    let e = gdp_epsilon(mu, delta);
    debug_assert!(gdp_delta(mu, e) <= delta);
    Ok((
        e,
        format!("μ-GDP with μ = {mu:.9}, Balle–Wang exact conversion"),
    ))
}
