//! The plan's total: the composed (ε, δ) under every accountant (DP018),
//! each query's cost alone, and the budget check (DP011).

use super::query::{Part, Scale};
use crate::report::*;

/// The stable id of a part's statistic (the executable plan keys on it).
fn statistic_of(role: &str) -> &'static str {
    match role {
        "count" => "count",
        "sum" => "sum",
        "histogram" | "grouped count" => "grouped_count",
        _ => "grouped_sum",
    }
}

pub(super) fn part_report(p: &Part) -> PartReport {
    let statistic = statistic_of(p.role).to_string();
    if p.public {
        return PartReport {
            role: p.role.into(),
            statistic,
            mechanism: MechanismReport {
                kind: "none".into(),
                scale: None,
                sigma: None,
                calibration: "none".into(),
            },
            l1: 0.0,
            l2: 0.0,
            coords: p.derived.coords,
            derivation: p.derived.steps.clone(),
            noise_std: 0.0,
            ci95_half_width: 0.0,
        };
    }
    let scale = p.resolved.unwrap_or(f64::NAN);
    let (std, ci) = crate::noise::spread(p.kind, scale);
    let calibration = match p.scale {
        Scale::Fixed(_) => "declared",
        Scale::FromEpsilon { .. } => "from epsilon",
        Scale::Auto { .. } => "auto",
    };
    PartReport {
        role: p.role.into(),
        statistic,
        mechanism: MechanismReport {
            kind: p.kind.as_str().into(),
            scale: (!p.kind.is_gaussian()).then_some(scale),
            sigma: p.kind.is_gaussian().then_some(scale),
            calibration: calibration.into(),
        },
        l1: p.derived.l1,
        l2: p.derived.l2,
        coords: p.derived.coords,
        derivation: p.derived.steps.clone(),
        noise_std: std,
        ci95_half_width: ci,
    }
}
