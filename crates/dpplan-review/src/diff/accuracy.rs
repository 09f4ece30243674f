//! What a change costs in accuracy: each statistic's noise of one release
//! (its standard deviation and the half-width of its central 95 %
//! interval, the checker's own `noise_std` and `ci95_half_width`), before →
//! after, with the ratio, and whether it got worse by more than a limit.
//!
//! Only statistics present on both sides are compared (an added or a
//! removed query releases nothing to compare with). A quantile's figures
//! are its rank error (in ranks, as the checker states them), compared the
//! same way.

use dpplan_check::{CheckedPlan, PartReport};
use serde::Serialize;

use super::Pair;

/// The default limit of `--fail-on accuracy`: a statistic whose noise std
/// or 95 % half-width grows by more than 10 % is a regression.
pub const DEFAULT_ACCURACY_RATIO: f64 = 1.1;

/// One statistic's noise before and after.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccuracyChange {
    pub query: String,
    /// The part's role (`count`, `sum`, …; a mean has two).
    pub role: String,
    /// The standard deviation of the noise of one release (per value).
    pub noise_std: Pair,
    /// The half-width of the central 95 % interval of that noise.
    pub ci95_half_width: Pair,
    /// `noise_std.new / noise_std.old`; `None` when the old side has no
    /// noise (a public statistic: std 0) or a figure is not finite.
    pub std_ratio: Option<f64>,
    /// `ci95_half_width.new / ci95_half_width.old`, likewise.
    pub ci95_ratio: Option<f64>,
    /// Either ratio is above the limit, or a public statistic (no noise)
    /// became noisy.
    pub worse: bool,
}

impl AccuracyChange {
    /// The larger of the two ratios (`None` when neither is defined).
    pub fn ratio(&self) -> Option<f64> {
        match (self.std_ratio, self.ci95_ratio) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

fn ratio(old: f64, new: f64) -> Option<f64> {
    (old.is_finite() && new.is_finite() && old > 0.0).then(|| new / old)
}

fn change(query: &str, o: &PartReport, n: &PartReport, limit: f64) -> Option<AccuracyChange> {
    if o.noise_std == n.noise_std && o.ci95_half_width == n.ci95_half_width {
        return None;
    }
    let std_ratio = ratio(o.noise_std, n.noise_std);
    let ci95_ratio = ratio(o.ci95_half_width, n.ci95_half_width);
    let above = |r: Option<f64>| r.is_some_and(|r| r > limit);
    // no noise before, some after: worse by any ratio
    let became_noisy = o.noise_std == 0.0 && n.noise_std > 0.0;
    Some(AccuracyChange {
        query: query.to_string(),
        role: n.role.clone(),
        noise_std: Pair {
            old: Some(o.noise_std),
            new: Some(n.noise_std),
        },
        ci95_half_width: Pair {
            old: Some(o.ci95_half_width),
            new: Some(n.ci95_half_width),
        },
        std_ratio,
        ci95_ratio,
        worse: above(std_ratio) || above(ci95_ratio) || became_noisy,
    })
}

/// Every statistic of a query present in both plans whose noise changed,
/// in the new plan's order; `worse` against `limit`.
pub fn accuracy_changes(old: &CheckedPlan, new: &CheckedPlan, limit: f64) -> Vec<AccuracyChange> {
    let mut out = Vec::new();
    for nq in &new.queries {
        let Some(oq) = old.queries.iter().find(|q| q.name == nq.name) else {
            continue;
        };
        for np in &nq.parts {
            if let Some(op) = oq.parts.iter().find(|p| p.role == np.role) {
                out.extend(change(&nq.name, op, np, limit));
            }
        }
    }
    out
}

/// The regression with the largest ratio (a statistic that became noisy
/// first), if any statistic is worse.
pub fn worst(changes: &[AccuracyChange]) -> Option<&AccuracyChange> {
    let key = |c: &AccuracyChange| c.ratio().unwrap_or(f64::INFINITY);
    changes
        .iter()
        .filter(|c| c.worse)
        .fold(None, |best: Option<&AccuracyChange>, c| match best {
            Some(b) if key(b) >= key(c) => Some(b),
            _ => Some(c),
        })
}
