//! The contract in words: who is protected, what is not, what δ means.

use dpplan_check::{Adjacency, CheckedPlan, UnitKind};
use dpplan_diagnostics::num;

use super::DatasetBounds;

/// (protected, not protected) sentences for the plan's unit and adjacency.
pub(super) fn protection(plan: &CheckedPlan) -> (Vec<String>, Vec<String>) {
    let mut yes = Vec::new();
    let mut no = Vec::new();
    match plan.unit.kind {
        UnitKind::User => {
            let id = plan.unit.id.as_deref().unwrap_or("the id column");
            yes.push(format!(
                "One unit is every row that shares one value of `{id}`: the guarantee covers all of that unit's rows at once, up to the contribution bounds below."
            ));
            for d in &plan.datasets {
                if let Some(r) = d.rows_per_unit {
                    no.push(format!(
                        "In `{}`, a unit with more than rows_per_unit = {r} rows keeps only {r} of them (sampled at random before aggregation): its other rows are never released, and the guarantee is about the rows kept.",
                        d.name
                    ));
                }
            }
            no.push(format!(
                "A person with k values of `{id}` (several accounts or devices) counts as k units: for them only the group-privacy guarantee holds, which grows with k (about k·ε)."
            ));
        }
        UnitKind::Row | UnitKind::Event => {
            let what = if plan.unit.kind == UnitKind::Row {
                "row"
            } else {
                "event"
            };
            yes.push(format!(
                "One {what} is protected: whether any single {what} is in the data (or what it says) changes each outcome's probability by at most the factor and slack of the claim."
            ));
            no.push(format!(
                "A person is not the unit: a person with k {what}s has only the group-privacy guarantee for them together, which grows with k (about k·ε, and a δ that grows faster)."
            ));
            for d in &plan.datasets {
                if let Some(r) = d.rows_per_unit {
                    no.push(format!(
                        "`{}` declares rows_per_unit = {r} for the per-person statement only; it is not enforced under a {what}-level unit: a person with more than {r} {what}s is protected only in part.",
                        d.name
                    ));
                }
            }
        }
    }
    for d in plan.datasets.iter().filter(|d| d.sample.is_some()) {
        let pct = num(d.sample.unwrap_or(1.0) * 100.0);
        yes.push(format!(
            "Every release that reads `{}` runs on a fresh Poisson sample of {pct} % of the units (each unit kept or left out with all its rows, independently, by the runtime's secure random source): the claim composes these sampled mechanisms, which lose less than the same releases on every unit (amplification by sampling). A released value counts its sample: divided by the rate it estimates all the units, with the sampling's error on top of the noise's.",
            d.name
        ));
        no.push(format!(
            "The amplification of `{}` holds only while each release's sample stays unknown: whoever learns which units a release kept faces, for those units, the loss of the same release on every unit. A group's claim (k units) forgoes it.",
            d.name
        ));
    }
    match plan.adjacency {
        Adjacency::AddRemove => yes.push(
            "Neighbouring datasets differ by adding or removing one unit: the guarantee also hides whether a unit is in the data at all."
                .into(),
        ),
        Adjacency::Replace => {
            yes.push(
                "Neighbouring datasets differ by replacing one unit's data with another's: what a unit's data says is protected."
                    .into(),
            );
            no.push(
                "Under replace adjacency the number of units is treated as public, and whether a given unit is in the data at all is not what the claim protects."
                    .into(),
            );
        }
    }
    (yes, no)
}

/// The formal meaning of (ε, δ) and a practical reading.
pub(super) fn delta_meaning(plan: &CheckedPlan, epsilon: f64, delta: f64) -> Vec<String> {
    let mut out = vec![
        format!(
            "The claim is ({}, {})-differential privacy: for every two neighbouring datasets D and D′ and every set S of possible outputs of the whole schedule, P[M(D) ∈ S] ≤ e^ε · P[M(D′) ∈ S] + δ, with e^ε = {}.",
            num(epsilon),
            num(delta),
            num(epsilon.exp())
        ),
        "δ is not “the probability that everything leaks”, and ε is not a probability at all. The two together bound how much any conclusion drawn from the released numbers can depend on one unit.".into(),
        format!(
            "In practice: whatever anyone concludes from everything this plan releases, each conclusion is at most e^ε = {} times more likely (plus an additive slack of at most δ = {} in probability) than it would have been had the unit's data been {}.",
            num(epsilon.exp()),
            num(delta),
            match plan.adjacency {
                Adjacency::AddRemove => "left out",
                Adjacency::Replace => "replaced by anyone else's",
            }
        ),
    ];
    if delta > 0.0 {
        match plan.population {
            Some(n) if n > 0.0 => out.push(format!(
                "δ should be far below 1/population = {} (population {}): a mechanism that published one randomly chosen unit's data outright would still meet a δ of 1/population.",
                num(1.0 / n),
                num(n)
            )),
            _ => out.push(
                "δ should be far below 1/n for n units: a mechanism that published one randomly chosen unit's data outright would still meet a δ of 1/n."
                    .into(),
            ),
        }
    } else {
        out.push("δ = 0: the claim is pure ε-differential privacy, with no additive slack.".into());
    }
    out
}

/// A dataset's bounds as data and in words.
pub(super) fn dataset_bounds(plan: &CheckedPlan) -> Vec<DatasetBounds> {
    plan.datasets
        .iter()
        .map(|d| {
            let clamps: Vec<super::ColumnBounds> = d
                .columns
                .iter()
                .filter_map(|c| {
                    c.bounds.map(|[lo, hi]| super::ColumnBounds {
                        column: c.name.clone(),
                        lo,
                        hi,
                    })
                })
                .collect();
            let mut words = Vec::new();
            if plan.unit.kind == UnitKind::User {
                words.push(format!(
                    "rows_per_unit = {}",
                    d.rows_per_unit
                        .map_or("not declared".to_string(), |r| r.to_string())
                ));
            } else {
                words.push(format!("one {} per unit", plan.unit.kind));
            }
            if let Some(g) = d.groups_per_unit {
                words.push(format!("groups_per_unit = {g}"));
            }
            if let Some(g) = d.rows_per_group {
                words.push(format!("rows_per_group = {g}"));
            }
            if let Some(q) = d.sample {
                words.push(format!(
                    "each release on a fresh Poisson sample of {} % of the units",
                    num(q * 100.0)
                ));
            }
            for c in &clamps {
                words.push(format!(
                    "`{}` clamped to [{}, {}]",
                    c.column,
                    num(c.lo),
                    num(c.hi)
                ));
            }
            DatasetBounds {
                name: d.name.clone(),
                rows_per_unit: d.rows_per_unit,
                groups_per_unit: d.groups_per_unit,
                rows_per_group: d.rows_per_group,
                clamps,
                summary: words.join("; "),
            }
        })
        .collect()
}
