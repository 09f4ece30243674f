//! Exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Theorem 8;
//! equivalently μ-GDP, Dong–Roth–Su 2019, Corollary 2.13).

use crate::conversions::linear_rdp_closed_form_mu;
use crate::roots::{bisect, find_bracket, Bisection, Bracket, End};
use crate::special::log_norm_cdf;
use std::cmp::Ordering;

/// δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), valid for every real ε.
/// Computed as Φ(a)·(−expm1(ε + lnΦ(b) − lnΦ(a))) so that neither large ε nor tiny δ
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

/// Smallest ε ≥ 0 with δ_μ(ε) ≤ δ, to ~1e-13 relative; the returned value is the upper
/// end of the final bisection bracket, so it never lies below the exact root.
pub fn gdp_epsilon(mu: f64, delta: f64) -> f64 {
    if mu <= 0.0 {
        return 0.0;
    }
    if delta <= 0.0 {
        return f64::INFINITY;
    }
    if gdp_delta(mu, 0.0) <= delta {
        return 0.0;
    }
    // upper bracket: the classical RDP bound μ²/2 + μ√(2 ln(1/δ)) is always ≥ the root
    let hi = linear_rdp_closed_form_mu(mu, delta) + 1e-3;
    let hi = find_bracket(
        hi,
        200,
        |x| Some(x * 2.0),
        |e| gdp_delta(mu, e).partial_cmp(&delta) != Some(Ordering::Greater),
    )
    .upper();
    bisect(
        0.0,
        hi,
        &Bisection::arithmetic(1e-14, 1e-300, End::Upper),
        |e| gdp_delta(mu, e) <= delta,
    )
}

/// Largest μ with δ_μ(ε) ≤ δ (lower end of the bracket, so μ is never overstated).
pub fn gdp_mu_for(eps: f64, delta: f64) -> f64 {
    // δ_μ(ε) increases with μ: search on "μ violates δ" and keep the lower end.
    let violates = |mu: f64| {
        gdp_delta(mu, eps)
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
