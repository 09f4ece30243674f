//! What averaging fresh releases buys next to what it costs: for every
//! single-part query released more than once, the standard deviation of
//! the mean of r releases (σ/√r) next to the ε of r releases alone. One
//! computation, read by `dpplan account` and by the report's figure.

use dpplan_accounting as acct;
use dpplan_check::CheckedPlan;
use serde::{Deserialize, Serialize};

/// One point: r fresh releases averaged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AveragingPoint {
    pub r: u64,
    /// σ/√r: the standard deviation of the mean of r releases.
    pub std_of_mean: f64,
    /// ε of r releases of this query alone, at the budget's δ ([`acct::best`]).
    pub epsilon: f64,
}

/// One re-released query's curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Averaging {
    pub query: String,
    /// The noise's standard deviation of one release.
    pub sigma: f64,
    pub points: Vec<AveragingPoint>,
}

/// For every single-part query released more than once, the points at
/// r = 1, 2, 4, 10, 25, 100, 365, 1000, 10 000 below its release count,
/// and at the release count itself.
pub fn averaging(report: &CheckedPlan) -> Vec<Averaging> {
    let delta = report.accounting_delta();
    let mut out = Vec::new();
    for q in &report.queries {
        let [part] = q.parts.as_slice() else { continue };
        // a windowed query's releases read disjoint windows: there is no
        // one statistic to average (its schedule is one release)
        if q.releases < 2 || q.accounted_releases != q.releases {
            continue;
        }
        // on a sampled dataset each answer also carries its sample's
        // error, which the noise's std does not show: no advice
        if q.sampled().is_some() {
            continue;
        }
        // exactly the mechanism the checker accounted
        let Some(mech) = part.accounted else {
            continue;
        };
        // a selection is not averaged: it has no additive noise
        if mech.kind.is_selection() {
            continue;
        }
        let mut rs: Vec<u64> = [1u64, 2, 4, 10, 25, 100, 365, 1000, 10_000]
            .into_iter()
            .filter(|&r| r < q.releases)
            .collect();
        rs.push(q.releases);
        let points = rs
            .into_iter()
            .filter_map(|r| {
                let b = acct::best(
                    &[acct::Release {
                        sample: None,
                        mechanism: mech,
                        count: r,
                    }],
                    delta,
                )
                .ok()?;
                Some(AveragingPoint {
                    r,
                    std_of_mean: part.noise_std / (r as f64).sqrt(),
                    epsilon: b.epsilon,
                })
            })
            .collect();
        out.push(Averaging {
            query: q.name.clone(),
            sigma: part.noise_std,
            points,
        });
    }
    out
}

/// `dpplan account --json`'s document (also the Python module's
/// `dpplan.account`): the plan's budget and releases, the best guarantee,
/// every accountant's, and what averaging buys.
pub fn account_document(path: &str, report: &CheckedPlan) -> serde_json::Value {
    serde_json::json!({
        "path": path,
        "plan": report.name,
        "budget": report.budget,
        "releases": report.releases,
        "best": report.total,
        "accountants": report.accountants,
        "averaging": averaging(report),
    })
}
