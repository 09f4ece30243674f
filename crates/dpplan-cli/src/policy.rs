//! The organisation policy (`dpplan.toml`) as `dpplan check` applies it:
//! found for each plan (the nearest one up from it, or `--config`), applied
//! (rule levels, the organisation's rules) and the budgets shared across
//! the checked plans composed. A policy file that cannot be used is an
//! error located in it (miette), exit 2.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use miette::{LabeledSpan, MietteDiagnostic, NamedSource, Report, Result};

use dpplan_check::Analysis;
use dpplan_policy::{ConfigError, Policy, SharedResult};

fn located(e: ConfigError) -> Report {
    let mut d = MietteDiagnostic::new(format!("{}: {}", e.file.display(), e.message));
    if let Some(span) = e.span {
        d = d.with_label(LabeledSpan::at(span, "here"));
    }
    if let Some(h) = e.help {
        d = d.with_help(h);
    }
    Report::new(d).with_source_code(NamedSource::new(e.file.display().to_string(), e.text))
}

/// The shared budgets checked, with the policy file that declares them.
pub struct Shared {
    pub policy: PathBuf,
    pub result: SharedResult,
}

/// Applies the policies to `plans` (name, analysis) in place and returns the
/// shared budgets' results. `explicit`: the `--config` file for every plan;
/// otherwise each plan's nearest `dpplan.toml` (a plan read from standard
/// input is placed at its `--stdin-filename`, else in the current
/// directory).
pub fn apply(
    plans: &mut [(String, String, Analysis)],
    explicit: Option<&Path>,
) -> Result<Vec<Shared>> {
    let mut policies: BTreeMap<PathBuf, Policy> = BTreeMap::new();
    let mut governed: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    if let Some(file) = explicit {
        policies.insert(file.to_path_buf(), Policy::load(file).map_err(located)?);
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
            let p = Policy::load(&file).map_err(located)?;
            policies.insert(file.clone(), p);
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

/// The shared budgets in words, for the human format.
pub fn human(shared: &[Shared], names: &[&str]) -> String {
    let mut s = String::new();
    for sh in shared {
        let r = &sh.result;
        let shares: Vec<String> = r
            .shares
            .iter()
            .map(|x| {
                format!(
                    "{} ε = {} ({} releases)",
                    names[x.plan],
                    x.epsilon.map_or("—".into(), dpplan_render::num),
                    x.releases
                )
            })
            .collect();
        let verdict = match (&r.total, r.within) {
            (Some((e, a)), true) => format!(
                "ε = {} of {} ({a}): within",
                dpplan_render::num(*e),
                dpplan_render::num(r.budget.epsilon)
            ),
            (Some((e, a)), false) => format!(
                "ε = {} of {} ({a}): OVER",
                dpplan_render::num(*e),
                dpplan_render::num(r.budget.epsilon)
            ),
            (None, _) => format!(
                "not composed: {}",
                r.problem.as_deref().unwrap_or("no total")
            ),
        };
        s.push_str(&format!(
            "\nshared budget `{}` ({}), δ = {}: {verdict}\n  each plan alone: {}\n",
            r.budget.source,
            sh.policy.display(),
            dpplan_render::num(r.budget.delta),
            shares.join(", ")
        ));
    }
    s
}

/// The shared budgets as JSON (the `shared_budgets` field of
/// `--format json`, docs/json-output.md).
pub fn json(shared: &[Shared], names: &[&str]) -> serde_json::Value {
    serde_json::Value::Array(
        shared
            .iter()
            .map(|sh| {
                let r = &sh.result;
                serde_json::json!({
                    "policy": sh.policy.display().to_string(),
                    "source": r.budget.source,
                    "budget": {"epsilon": r.budget.epsilon, "delta": r.budget.delta},
                    "epsilon": r.total.map(|t| t.0),
                    "accountant": r.total.map(|t| t.1.name()),
                    "within_budget": r.within,
                    "problem": r.problem,
                    "shares": r.shares.iter().map(|x| serde_json::json!({
                        "path": names[x.plan],
                        "datasets": x.datasets,
                        "epsilon": x.epsilon,
                        "releases": x.releases,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}
