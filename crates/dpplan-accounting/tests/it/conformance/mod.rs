//! The conformance suite (issue 30, item 4): published values of the peers'
//! own test suites, one file per source, each case naming the file and the
//! test it comes from. dpplan's value is held to the published one in the
//! sound direction (never below the truth the published value states) and
//! within the published tolerance (never looser than the peer beyond it);
//! where dpplan differs, the case says by how much and why. Every file has
//! a negative control: change the plan (drop a release, loosen a bound) and
//! the value must move.
//!
//! The sources (read from the peers' repositories and releases; nothing is
//! run from them here, the values are copied with their source named):
//! - dp_accounting 0.6.0 (Google, PyPI), `dp_accounting/pld/pld_privacy_accountant_test.py`,
//!   `dp_accounting/pld/accountant_test.py`, `dp_accounting/rdp/rdp_privacy_accountant_test.py`;
//! - OpenDP (`opendp/opendp`), `rust/src/combinators/measure_cast/zCDP_to_approxDP/test.rs`
//!   and `…/zCDP_to_approxDP/cdp_delta/test.rs`;
//! - the PRV accountant (`microsoft/prv_accountant`), `tests/test_accountant.py`.

// the values are written as their sources print them (σ = 2.71828 is the
// source's own noise multiplier, not e; 20-digit constants are mpmath's)
#![allow(clippy::excessive_precision, clippy::approx_constant)]

mod dp_accounting_calibration;
mod dp_accounting_pld;
mod dp_accounting_rdp;
mod opendp_zcdp;
mod prv_accountant;

use dpplan_accounting::*;
use statrs::distribution::{ContinuousCDF, Normal};

/// Where a published value comes from.
pub struct Source {
    pub file: &'static str,
    pub test: &'static str,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} :: {}", self.file, self.test)
    }
}

pub fn release(kind: NoiseKind, scale: f64, sens: f64, count: u64) -> Release {
    Release {
        sample: None,
        mechanism: Mechanism {
            kind,
            scale,
            sensitivity: Sensitivity::scalar(sens),
        },
        count,
    }
}

pub fn gauss(sigma: f64, sens: f64, count: u64) -> Release {
    release(NoiseKind::Gaussian, sigma, sens, count)
}

pub fn laplace(b: f64, sens: f64, count: u64) -> Release {
    release(NoiseKind::Laplace, b, sens, count)
}

/// dp_accounting's `DiscreteLaplaceDpEvent(noise_parameter = a)`: P(k) ∝
/// e^{−a|k|}, i.e. dpplan's discrete Laplace of scale b = 1/a.
pub fn discrete_laplace_param(a: f64, sens: f64, count: u64) -> Release {
    release(NoiseKind::DiscreteLaplace, 1.0 / a, sens, count)
}

pub fn eps(plan: &[Release], delta: f64, a: Accountant) -> f64 {
    epsilon(plan, delta, a)
        .unwrap_or_else(|e| panic!("{a}: {e}"))
        .epsilon
}

pub fn best_eps(plan: &[Release], delta: f64) -> f64 {
    best(plan, delta).expect("best").epsilon
}

/// δ(ε) of μ-GDP with statrs' normal CDF (independent of the crate's
/// libm-based one): Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).
pub fn gdp_delta_statrs(mu: f64, eps: f64) -> f64 {
    let n = Normal::new(0.0, 1.0).unwrap();
    n.cdf(-eps / mu + mu / 2.0) - eps.exp() * n.cdf(-eps / mu - mu / 2.0)
}

/// The ε with `gdp_delta_statrs(mu, ε) = delta`, by bisection (δ(ε) is
/// decreasing).
pub fn gdp_epsilon_statrs(mu: f64, delta: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while gdp_delta_statrs(mu, hi) > delta {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if gdp_delta_statrs(mu, mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// Prints one case's comparison (shown with `--nocapture`, kept in the
/// test log of CI).
pub fn report(source: &Source, what: &str, dpplan: f64, published: f64) {
    let rel = (dpplan - published) / published.abs().max(f64::MIN_POSITIVE);
    eprintln!("{source}: {what}: dpplan {dpplan:.12} published {published} ({rel:+.3e} relative)");
}
