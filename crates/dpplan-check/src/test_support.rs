//! What the checker's test modules share: analysing a plan that must have
//! no errors, its total, the codes it reports, and the μ-GDP curve
//! computed independently of the accounting crate.

use statrs::distribution::{ContinuousCDF, Normal};

use crate::{analyze, CheckedPlan};
use dpplan_diagnostics::Code;

/// The checked plan of a text that must have no errors.
pub(crate) fn report(text: &str) -> CheckedPlan {
    let a = analyze(text);
    assert!(!a.has_errors(), "{:#?}", a.diagnostics);
    a.report.expect("a report")
}

/// The plan's total ε.
pub(crate) fn total(text: &str) -> f64 {
    report(text).total.expect("a total").epsilon
}

/// Every code the analysis reports, in order.
pub(crate) fn codes(text: &str) -> Vec<Code> {
    analyze(text).diagnostics.iter().map(|d| d.code).collect()
}

/// δ(ε) of μ-GDP (Balle–Wang 2018 Thm 8 / Dong–Roth–Su), with statrs,
/// independently of the accounting crate.
pub(crate) fn gdp_delta(mu: f64, eps: f64) -> f64 {
    let n = Normal::new(0.0, 1.0).expect("the standard normal");
    n.cdf(-eps / mu + mu / 2.0) - eps.exp() * n.cdf(-eps / mu - mu / 2.0)
}

/// The ε at which δ(ε) = δ, by bisection on the independent curve.
pub(crate) fn gdp_epsilon(mu: f64, delta: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 1000.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if gdp_delta(mu, mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}
