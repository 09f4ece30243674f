//! Exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Theorem 8;
//! equivalently μ-GDP, Dong–Roth–Su 2019, Corollary 2.13).

use crate::special::{bisect_upper, log_norm_cdf};

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
    // upper bracket: classical bound mu^2/2 + mu*sqrt(2 ln(1/δ)) is always ≥ the root
    let mut hi = 0.5 * mu * mu + mu * (2.0 * (1.0 / delta).ln()).max(0.0).sqrt() + 1e-3;
    let mut guard = 0;
    while gdp_delta(mu, hi) > delta && guard < 200 {
        hi *= 2.0;
        guard += 1;
    }
    bisect_upper(0.0, hi, 1e-14, 1e-300, |e| gdp_delta(mu, e) <= delta)
}

/// Largest μ with δ_μ(ε) ≤ δ (lower end of the bracket, so μ is never overstated).
pub fn gdp_mu_for(eps: f64, delta: f64) -> f64 {
    // δ_μ(ε) increases with μ.
    let mut lo = 0.0f64;
    let mut hi = 1.0f64;
    let mut guard = 0;
    while gdp_delta(hi, eps) <= delta && guard < 2000 {
        lo = hi;
        hi *= 2.0;
        guard += 1;
    }
    for _ in 0..300 {
        if hi - lo <= 1e-15 * hi {
            break;
        }
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if gdp_delta(mid, eps) <= delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}
