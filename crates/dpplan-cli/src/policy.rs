//! The organisation policy (`dpplan.toml`) as `dpplan check` applies it:
//! found for each plan (the nearest one up from it, or `--config`), applied
//! (rule levels, the organisation's rules) and the budgets shared across
//! the checked plans composed. A policy file that cannot be used is an
//! error located in it (`dpplan check` renders it as it renders a plan's
//! diagnostics, DP108 in the policy file's text), exit 2.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dpplan_check::Analysis;
use dpplan_policy::{ConfigError, Policy, SharedResult};

/// The shared budgets checked, with the policy file that declares them.
pub struct Shared {
    pub policy: PathBuf,
    pub result: SharedResult,
}

/// Applies the policies to `plans` (name, analysis) in place and returns the
/// shared budgets' results. `explicit`: the `--config` file for every plan;
/// otherwise each plan's nearest `dpplan.toml` (a plan read from standard
/// input is placed at its `--stdin-filename`, else in the current
/// directory). The first policy file that cannot be used is the error.
pub fn apply(
    plans: &mut [(String, String, Analysis)],
    explicit: Option<&Path>,
) -> Result<Vec<Shared>, Box<ConfigError>> {
    let mut policies: BTreeMap<PathBuf, Policy> = BTreeMap::new();
    let mut governed: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    if let Some(file) = explicit {
        policies.insert(file.to_path_buf(), Policy::load(file).map_err(Box::new)?);
    }
    for (i, (name, _, _)) in plans.iter().enumerate() {
        let place = if name == "<stdin>" {
            Path::new("plan.dpplan")
        } else {
            Path::new(name)
        };
        let file = match explicit {
            Some(f) => f.to_path_buf(),
            None => match dpplan_policy::discover(place) {
                Some(f) => f,
                None => continue,
            },
        };
        if !policies.contains_key(&file) {
            if let Some(p) = dpplan_policy::in_force(place, Some(&file)).map_err(Box::new)? {
                policies.insert(file.clone(), p);
            }
        }
        governed.entry(file).or_default().push(i);
    }
    let mut shared = Vec::new();
    for (file, members) in governed {
        let policy = &policies[&file];
        for &i in &members {
            let (name, _, analysis) = &mut plans[i];
            dpplan_policy::apply(policy, Path::new(name.as_str()), analysis);
        }
        let view: Vec<(&Path, &Analysis)> = members
            .iter()
            .map(|&i| (Path::new(plans[i].0.as_str()), &plans[i].2))
            .collect();
        let (results, diags) = dpplan_policy::shared_budgets(policy, &view);
        let effective: Vec<_> = members
            .iter()
            .map(|&i| policy.effective(Path::new(plans[i].0.as_str())))
            .collect();
        for (k, d) in diags {
            let analysis = &mut plans[members[k]].2;
            analysis.diagnostics.push(d);
            dpplan_policy::set_levels(&effective[k], &mut analysis.diagnostics);
            analysis.apply_allows();
        }
        shared.extend(results.into_iter().map(|result| Shared {
            policy: file.clone(),
            result,
        }));
    }
    Ok(shared)
}

/// The shared budgets as the renderers take them.
pub fn rendered(shared: &[Shared]) -> Vec<dpplan_render::SharedBudget<'_>> {
    shared
        .iter()
        .map(|sh| dpplan_render::SharedBudget {
            policy: &sh.policy,
            result: &sh.result,
        })
        .collect()
}
