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
    /// Over the budget, but no checked plan keeps its DP107 as an error
    /// (the policy lowered it, or allows its suppression and every plan
    /// suppressed it): the check passes, so the verdict does not say OVER.
    pub accepted: bool,
}

/// The verdict in words: `within`, `OVER` (the check fails), `over,
/// accepted by the policy`, or why the plans could not be composed.
pub fn verdict(sh: &SharedBudget) -> String {
    let r = sh.result;
    let left = r.shares.iter().filter(|s| s.excluded.is_some()).count();
    let left = match left {
        0 => String::new(),
        n => format!(
            " ({n} plan{} left out, not counted)",
            if n == 1 { "" } else { "s" }
        ),
    };
    match (&r.total, r.within) {
        (Some((e, a)), within) => format!(
            "ε = {} of {} ({a}): {}{left}",
            num(*e),
            num(r.budget.epsilon),
            if within {
                "within"
            } else if sh.accepted {
                "over, accepted by the policy (DP107 lowered or its suppression allowed)"
            } else {
                "OVER"
            }
        ),
        (None, _) => format!(
            "not composed: {}{left}",
            r.problem.as_deref().unwrap_or("no total")
        ),
    }
}

/// The shared budgets in words, after the human format's summary line.
pub fn shared_budgets_human(shared: &[SharedBudget]) -> String {
    let mut s = String::new();
    for sh in shared {
        let r = sh.result;
        let shares: Vec<String> = r
            .shares
            .iter()
            .filter(|x| x.excluded.is_none())
            .map(|x| {
                format!(
                    "{} ε = {} ({} releases){}",
                    x.path,
                    x.epsilon.map_or("—".into(), num),
                    x.releases,
                    if x.checked { "" } else { " [named by `plans`]" }
                )
            })
            .collect();
        s.push_str(&format!(
            "\nshared budget `{}` ({}), δ = {}: {}\n  each plan alone: {}\n",
            r.budget.source,
            sh.policy.display(),
            num(r.budget.delta),
            verdict(sh),
            if shares.is_empty() {
                "—".to_string()
            } else {
                shares.join(", ")
            }
        ));
        for x in r.shares.iter() {
            if let Some(e) = &x.excluded {
                s.push_str(&format!("  left out: {}\n", e.reason));
            }
        }
        if let Some(per) = r.budget.per {
            let per = match per {
                dpplan_policy::Per::Week => "week",
                dpplan_policy::Per::Month => "month",
            };
            let list = |qs: Vec<String>| {
                if qs.is_empty() {
                    "none".to_string()
                } else {
                    qs.join(", ")
                }
            };
            let (mut par, mut seq) = (Vec::new(), Vec::new());
            for x in r.shares.iter().filter(|x| x.excluded.is_none()) {
                par.extend(x.windowed.iter().map(|q| format!("{}: {q}", x.path)));
                seq.extend(x.unwindowed.iter().map(|q| format!("{}: {q}", x.path)));
            }
            s.push_str(&format!(
                "  ε per unit per {per} (enforced by `dpplan run` on its budget ledger): in parallel across {per}s, each counted once in every {per} its windows lie in: {}; in every {per} up to each release (no window: it reads every row so far): {}; a {per} may hold all of them, so the total above is the largest a {per} can reach\n",
                list(par),
                list(seq)
            ));
        }
    }
    s
}

/// The shared budgets as JSON: the `shared_budgets` field of
/// `--format json` (docs/json-output.md).
pub fn shared_budgets_json(shared: &[SharedBudget]) -> Value {
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
                    "accepted": sh.accepted,
                    "problem": r.problem,
                    "shares": r.shares.iter().map(|x| json!({
                        "path": x.path,
                        "datasets": x.datasets,
                        "epsilon": x.epsilon,
                        "releases": x.releases,
                        "checked": x.checked,
                        "excluded": x.excluded.as_ref().map(|e| &e.reason),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// The shared budgets of a check as the renderers take them (only those
/// some plan reads).
pub fn shared_budgets_of(shared: &[dpplan_policy::checked::Shared]) -> Vec<SharedBudget<'_>> {
    shared
        .iter()
        .filter(|sh| !sh.result.shares.is_empty())
        .map(|sh| SharedBudget {
            policy: &sh.policy,
            result: &sh.result,
            accepted: sh.accepted,
        })
        .collect()
}
