//! Budgets shared across plans (a policy's `[[budget]]`, docs/policy.md) in
//! the human and JSON formats of `dpplan check`.

use std::path::Path;

use dpplan_policy::SharedResult;
use serde_json::{json, Value};

use crate::num;

/// One shared budget, checked, with the policy file that declares it.
pub struct SharedBudget<'a> {
    pub policy: &'a Path,
    pub result: &'a SharedResult,
}

/// The shared budgets in words, after the human format's summary line;
/// `names[i]` is the path of the i-th checked plan.
pub fn shared_budgets_human(shared: &[SharedBudget], names: &[&str]) -> String {
    let mut s = String::new();
    for sh in shared {
        let r = sh.result;
        let shares: Vec<String> = r
            .shares
            .iter()
            .map(|x| {
                format!(
                    "{} ε = {} ({} releases)",
                    names[x.plan],
                    x.epsilon.map_or("—".into(), num),
                    x.releases
                )
            })
            .collect();
        let verdict = match (&r.total, r.within) {
            (Some((e, a)), within) => format!(
                "ε = {} of {} ({a}): {}",
                num(*e),
                num(r.budget.epsilon),
                if within { "within" } else { "OVER" }
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
            num(r.budget.delta),
            shares.join(", ")
        ));
    }
    s
}

/// The shared budgets as JSON: the `shared_budgets` field of
/// `--format json` (docs/json-output.md).
pub fn shared_budgets_json(shared: &[SharedBudget], names: &[&str]) -> Value {
    Value::Array(
        shared
            .iter()
            .map(|sh| {
                let r = sh.result;
                json!({
                    "policy": sh.policy.display().to_string(),
                    "source": r.budget.source,
                    "budget": {"epsilon": r.budget.epsilon, "delta": r.budget.delta},
                    "epsilon": r.total.map(|t| t.0),
                    "accountant": r.total.map(|t| t.1.name()),
                    "within_budget": r.within,
                    "problem": r.problem,
                    "shares": r.shares.iter().map(|x| json!({
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
