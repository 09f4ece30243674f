//! Rényi DP (Mironov 2017): per-order curves add up; converted to (ε, δ) at the
//! best order.

use super::{eff_rho, infinite};
use crate::conversions::{balle2020_thm21_at, linear_rdp_closed_form, mironov_prop3_at, Order};
use crate::grid::GeometricGrid;
use crate::sampled::rdp_sgm;
use crate::special::{log_grid, minimize_on_grid, mul_up, sum_up, ELEM_ULPS, U};
use crate::{normalise, Accountant, AccountingError, Bound, Eff, Plan, Release};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Which RDP → (ε, δ) conversion to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RdpConversion {
    /// ε = R(α) + ln(1/δ)/(α−1) (Mironov 2017, Prop 3; [`crate::conversions::mironov_prop3`])
    Classical,
    /// ε = R(α) + ln((α−1)/α) − (ln δ + ln α)/(α−1) (Balle et al. 2020, Thm 21;
    /// [`crate::conversions::balle2020_thm21`])
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
    /// ε-bounded-range releases (the exponential mechanism): the smaller
    /// of the RR curve and α·ε²/8 (Cesar & Rogers 2021), both valid
    br: Vec<(f64, f64)>,
    /// Gaussians on a Poisson sample: (μ, q, n), each term already an
    /// upper bound ([`rdp_sgm`]); above 64 distinct, μ and q rounded up
    /// onto a geometric grid (the curve grows with both)
    sgm: Vec<(f64, f64, f64)>,
}

/// RDP of an ε-bounded-range mechanism at α: min(RR curve, α·ε²/8).
fn rdp_br(alpha: f64, eps: f64) -> f64 {
    rdp_rr(alpha, eps).min(alpha * eps * eps / 8.0)
}

impl RdpCurve {
    fn new(plan: &Plan) -> Self {
        let mut c = RdpCurve {
            gauss_rho: 0.0,
            laplace: vec![],
            lap_buckets: vec![],
            rr: vec![],
            br: vec![],
            sgm: vec![],
        };
        let mut rho_terms = vec![];
        for it in &plan.items {
            let n = it.count as f64;
            match it.eff {
                Eff::Gauss { .. } | Eff::DGauss { .. } => rho_terms.push((n, eff_rho(&it.eff))),
                Eff::Laplace { eps, .. } => c.laplace.push((eps, n)),
                // any ε′-DP mechanism: the randomized-response curve at ε′
                Eff::DLaplace { eps, .. } | Eff::Pure { eps } | Eff::SPure { eps, .. } => {
                    c.rr.push((eps, n))
                }
                Eff::SGauss { mu, q } => c.sgm.push((mu, q, n)),
                Eff::Exp { eps } => c.br.push((eps, n)),
            }
        }
        // ρ of the Gaussian kinds, each rounded up and summed upwards
        c.gauss_rho = sum_up(rho_terms);
        if c.laplace.len() > 512 {
            // chord bucketing: R(α,·) convex ⇒ on [lo,hi], R(ε) ≤ R(lo) + (ε−lo)·slope
            let grid = GeometricGrid::new(0.01);
            let mut map: BTreeMap<i64, (f64, f64)> = BTreeMap::new();
            for &(e, n) in &c.laplace {
                let k = grid.index_below(e);
                let ent = map.entry(k).or_insert((0.0, 0.0));
                ent.0 += n;
                ent.1 += n * e;
            }
            for (k, (n, s)) in map {
                let lo = grid.point(k);
                let hi = grid.point(k + 1);
                // make sure the bucket really contains its members after rounding: the
                // cell ends are widened by 10⁻¹², above the round-off of ln and exp
                // (≈ |ln ε|·u ≤ 2·10⁻¹³ for any positive normal ε), and include the mean.
                // An enclosure, not a round-up: both ends matter for the chord.
                let mean = s / n;
                let lo = lo.min(mean);
                let hi = hi.max(mean) * (1.0 + 1e-12);
                c.lap_buckets.push((lo * (1.0 - 1e-12), hi, n, s));
            }
            c.laplace.clear();
        }
        if c.sgm.len() > 64 {
            let grid = GeometricGrid::new(1e-2);
            let mut map: BTreeMap<(u64, u64), f64> = BTreeMap::new();
            for &(mu, q, n) in &c.sgm {
                let q = grid.round_up(q).1.min(1.0);
                *map.entry((grid.round_up(mu).1.to_bits(), q.to_bits()))
                    .or_insert(0.0) += n;
            }
            c.sgm = map
                .into_iter()
                .map(|((m, q), n)| (f64::from_bits(m), f64::from_bits(q), n))
                .collect();
        }
        // both curves increase with ε: rounding ε up is sound
        for list in [&mut c.rr, &mut c.br] {
            if list.len() > 512 {
                let grid = GeometricGrid::new(1e-3);
                let mut map: BTreeMap<u64, f64> = BTreeMap::new();
                for &(e, n) in list.iter() {
                    *map.entry(grid.round_up(e).1.to_bits()).or_insert(0.0) += n;
                }
                *list = map
                    .into_iter()
                    .map(|(b, n)| (f64::from_bits(b), n))
                    .collect();
            }
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
        for &(e, n) in &self.br {
            r += n * rdp_br(alpha, e);
        }
        for &(mu, q, n) in &self.sgm {
            r += n * rdp_sgm(alpha, mu, q);
        }
        r
    }
    /// A bound on the absolute rounding error of [`RdpCurve::eval`] at α
    /// (the exact curve of the plan's rounded-up parameters lies below
    /// eval + err):
    /// * α·ρ: u (ρ itself is rounded up);
    /// * a Laplace term R = ε + log1p(x)/(α−1): x carries ≤ (2E+7)u (the
    ///   products, and expm1 whose condition number is ≤ 1 here), log1p on
    ///   x ∈ (−½, 0] doubles it and adds its own, the quotient 2u: the
    ///   second term has ≤ (6E+17)u relative and is ≤ ε in size, the sum u:
    ///   ≤ (6E+18)u·ε per release (E = [`ELEM_ULPS`]);
    /// * a chord bucket: its two end values as above at `hi`, the slope's
    ///   error times (s − n·lo) ≤ n(hi − lo) doubles that, and the three
    ///   roundings of n·rl + (s − n·lo)·slope: ≤ 3(6E+18)u·n·hi + 4u·(|n·rl|
    ///   + |(s−n·lo)·slope|) + 2u·(s + n·lo)·|slope|;
    /// * a randomized-response term ε − (a − b)/(α−1), a = log1p(e^{−ε}),
    ///   b = log1p(e^{−(2α−1)ε}): a with ≤ (4E+2+2ε)u, b with
    ///   ≤ (4E+2+6αε)u relative, the difference and quotient 3u;
    /// * the sum of m terms: (m + 1)u on the sum of their magnitudes.
    fn err(&self, alpha: f64) -> f64 {
        let e = ELEM_ULPS;
        let lap_rel = (6.0 * e + 18.0) * U;
        let mut err = U * alpha * self.gauss_rho;
        let mut mag = alpha * self.gauss_rho;
        let mut m = 1.0;
        for &(eps, n) in &self.laplace {
            err += lap_rel * n * eps;
            mag += n * eps;
            m += 1.0;
        }
        for &(lo, hi, n, s) in &self.lap_buckets {
            let rl = rdp_laplace(alpha, lo);
            let rh = rdp_laplace(alpha, hi);
            let slope = ((rh - rl) / (hi - lo)).max(0.0);
            let a = n * rl;
            let b = (s - n * lo).max(0.0) * slope;
            err += 3.0 * lap_rel * n * hi
                + 4.0 * U * (a.abs() + b.abs())
                + 2.0 * U * (s + n * lo) * slope;
            mag += a.abs() + b.abs();
            m += 2.0;
        }
        let am1 = alpha - 1.0;
        // a bounded-range term: the error of either branch of the min
        // bounds the min's (the RR branch's as below; α·ε²/8: 3u)
        let rr = self.rr.iter().map(|&(e, n)| (e, n, 0.0));
        let br = self.br.iter().map(|&(e, n)| (e, n, alpha * e * e));
        for (eps, n, other) in rr.chain(br) {
            let a = libm::log1p(libm::exp(-eps));
            let b = libm::log1p(libm::exp(-(2.0 * alpha - 1.0) * eps));
            let ea = (4.0 * e + 2.0 + 2.0 * eps) * U * a.abs();
            let eb = (4.0 * e + 2.0 + 6.0 * alpha * eps) * U * b.abs();
            let q = (a - b) / am1;
            err += n * ((ea + eb) * 1.01 / am1 + 3.0 * U * (q.abs() + eps + other));
            mag += n * eps;
            m += 1.0;
        }
        // a sampled Gaussian's term is an upper bound already: the product
        // by n (u) and the sum below
        for &(mu, q, n) in &self.sgm {
            let v = n * rdp_sgm(alpha, mu, q);
            err += U * v;
            mag += v;
            m += 1.0;
        }
        err + (m + 1.0) * U * mag
    }
    /// [`RdpCurve::eval`] raised by its error bound, one float up.
    fn eval_up(&self, alpha: f64) -> f64 {
        if self.only_gauss() {
            // α·ρ rounded up exactly (as the zCDP accountant does)
            return mul_up(alpha, self.gauss_rho);
        }
        (self.eval(alpha) + self.err(alpha)).next_up()
    }
    fn only_gauss(&self) -> bool {
        self.laplace.is_empty()
            && self.lap_buckets.is_empty()
            && self.rr.is_empty()
            && self.br.is_empty()
            && self.sgm.is_empty()
    }
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

/// The orders the RDP accountant scans, α − 1 log-spaced over [1e-6, 1e7]
/// (181 points): the points, and each with its conversion terms. The same
/// for every plan, so computed once per process.
fn grid_orders() -> &'static (Vec<f64>, Vec<Order>) {
    static ORDERS: OnceLock<(Vec<f64>, Vec<Order>)> = OnceLock::new();
    ORDERS.get_or_init(|| {
        let (a_lo, a_hi, n) = (1.0 + 1e-6, 1.0 + 1e7, 181);
        let points = log_grid(1.0, a_lo, a_hi, n);
        let orders = points.iter().copied().map(Order::new).collect();
        (points, orders)
    })
}

pub(super) fn rdp(
    plan: &Plan,
    delta: f64,
    conv: RdpConversion,
) -> Result<(f64, String), AccountingError> {
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
    let mut results: Vec<(f64, f64, &'static str)> = vec![];
    let use_classical = matches!(conv, RdpConversion::Classical | RdpConversion::Best);
    let use_balle = matches!(conv, RdpConversion::Balle2020 | RdpConversion::Best);
    let ld = libm::log(delta);
    let (points, orders) = grid_orders();
    // the curve at the grid's orders, once for both conversions
    let needs_scan = use_balle || (use_classical && !curve.only_gauss());
    let at_grid: Vec<f64> = if needs_scan {
        orders.iter().map(|o| curve.eval(o.alpha)).collect()
    } else {
        vec![]
    };
    if use_classical {
        if curve.only_gauss() {
            // closed form: min_α αa + L/(α−1) = a + 2√(aL) at α = 1 + √(L/a)
            let (e, alpha) = linear_rdp_closed_form(curve.gauss_rho, delta);
            results.push((e, alpha, "classical conversion (closed form)"));
        } else {
            // the order is chosen on the nearest curve; the bound reported
            // is the conversion of the raised curve at that order
            let (al, _) = minimize_on_grid(
                points,
                |i| mironov_prop3_at(at_grid[i], &orders[i], ld),
                |al| mironov_prop3_at(curve.eval(al), &Order::new(al), ld),
            );
            let v = mironov_prop3_at(curve.eval_up(al), &Order::new(al), ld);
            results.push((v, al, "classical conversion"));
        }
    }
    if use_balle {
        let (al, _) = minimize_on_grid(
            points,
            |i| balle2020_thm21_at(at_grid[i], &orders[i], ld),
            |al| balle2020_thm21_at(curve.eval(al), &Order::new(al), ld),
        );
        let v = balle2020_thm21_at(curve.eval_up(al), &Order::new(al), ld);
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
