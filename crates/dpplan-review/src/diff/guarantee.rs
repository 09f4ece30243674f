//! The guarantee before and after: both plans' releases composed under one
//! accountant at one δ, and each query's leave-one-in contribution.

use super::*;

/// Exactly the releases the checker composed for a query: each noisy
/// part's accounted mechanism, released `releases` times.
pub(super) fn releases_of(q: Option<&QueryReport>) -> Vec<acct::Release> {
    q.map(|q| {
        q.parts
            .iter()
            .filter_map(|p| p.accounted)
            .map(|m| acct::Release {
                sample: q.sampled(),
                mechanism: m,
                count: q.accounted_releases,
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Every release of the plan, in the checker's order.
pub fn plan_releases(p: &CheckedPlan) -> Vec<acct::Release> {
    p.queries
        .iter()
        .flat_map(|q| releases_of(Some(q)))
        .collect()
}

type Figures = Vec<(Accountant, Result<f64, String>)>;

/// Every accountant's ε for a list of releases at δ (0 for no release).
pub(super) fn recompute(releases: &[acct::Release], delta: f64) -> Figures {
    if releases.is_empty() {
        return Accountant::ALL.iter().map(|&a| (a, Ok(0.0))).collect();
    }
    acct::all(releases, delta)
        .into_iter()
        .map(|(a, r)| (a, r.map(|b| b.epsilon).map_err(|e| e.to_string())))
        .collect()
}

/// The checker's own table for the plan (at its δ).
pub(super) fn checker_figures(p: &CheckedPlan) -> Figures {
    let releases = plan_releases(p);
    if releases.is_empty() || p.accountants.is_empty() {
        return recompute(&releases, p.accounting_delta());
    }
    p.accountants
        .iter()
        .map(|a| {
            (
                a.accountant,
                a.epsilon
                    .ok_or_else(|| a.error.clone().unwrap_or_else(|| "no bound".into())),
            )
        })
        .collect()
}

/// The comparison, and (accountant, δ, old ε) for the leave-one-in runs.
pub(super) fn guarantee(
    old: &CheckedPlan,
    new: &CheckedPlan,
) -> (Guarantee, Option<(Accountant, f64, f64)>) {
    let same_delta = old.accounting_delta() == new.accounting_delta();
    let delta = old.accounting_delta().min(new.accounting_delta());
    let (of, nf, delta_rule) = if same_delta {
        (
            checker_figures(old),
            checker_figures(new),
            "both plans' δ".to_string(),
        )
    } else {
        (
            recompute(&plan_releases(old), delta),
            recompute(&plan_releases(new), delta),
            "the smaller of the two plans' δ, as they differ; both recomputed there".to_string(),
        )
    };
    let get = |f: &Figures, a: Accountant| f.iter().find(|(x, _)| *x == a).map(|(_, r)| r.clone());
    let accountants: Vec<AccountantPair> = Accountant::ALL
        .iter()
        .map(|&a| {
            let o = get(&of, a).unwrap_or_else(|| Err("not evaluated".into()));
            let n = get(&nf, a).unwrap_or_else(|| Err("not evaluated".into()));
            AccountantPair {
                accountant: a,
                accountant_name: a.to_string(),
                old: o.as_ref().ok().copied(),
                new: n.as_ref().ok().copied(),
                old_error: o.err(),
                new_error: n.err(),
            }
        })
        .collect();
    let both: Vec<&AccountantPair> = accountants
        .iter()
        .filter(|p| p.old.is_some() && p.new.is_some())
        .collect();
    let requested = match (
        old.accountant_requested.accountant(),
        new.accountant_requested.accountant(),
    ) {
        (Some(a), Some(b)) if a == b => both.iter().find(|p| p.accountant == a).copied(),
        _ => None,
    };
    let (chosen, accountant_rule) = match requested {
        Some(p) => (
            Some(p),
            format!("both plans ask for the {} accountant", p.accountant_name),
        ),
        None => {
            // the smallest worst case over the two plans; the first in
            // the accountants' order among equals
            let mut best: Option<&AccountantPair> = None;
            for p in &both {
                let m = p
                    .old
                    .unwrap_or(f64::INFINITY)
                    .max(p.new.unwrap_or(f64::INFINITY));
                let bm = best.map_or(f64::INFINITY, |b| {
                    b.old
                        .unwrap_or(f64::INFINITY)
                        .max(b.new.unwrap_or(f64::INFINITY))
                });
                if best.is_none() || m < bm {
                    best = Some(p);
                }
            }
            (
                best,
                "the tightest accountant that bounds both plans: the smallest larger-of-the-two ε"
                    .to_string(),
            )
        }
    };
    let chosen: Option<AccountantPair> = chosen.cloned();
    let chosen = chosen.as_ref();
    let old_epsilon = chosen.and_then(|p| p.old);
    let new_epsilon = chosen.and_then(|p| p.new);
    let g = Guarantee {
        delta,
        delta_rule,
        accountant: chosen.map(|p| p.accountant),
        accountant_name: chosen.map(|p| p.accountant_name.clone()),
        accountant_rule: if chosen.is_some() {
            accountant_rule
        } else {
            "no accountant bounds both plans".into()
        },
        old_epsilon,
        new_epsilon,
        change: old_epsilon.zip(new_epsilon).map(|(o, n)| n - o),
        recomputed: !same_delta,
        accountants: accountants.clone(),
    };
    let cmp = chosen
        .zip(old_epsilon)
        .map(|(p, o)| (p.accountant, delta, o));
    (g, cmp)
}

/// The old plan with only `name`'s change applied, under `accountant` at
/// `delta`; `None` when that query's composed releases did not change.
pub(super) fn leave_one_in(
    old: &CheckedPlan,
    new: &CheckedPlan,
    name: &str,
    accountant: Accountant,
    delta: f64,
    old_eps: f64,
) -> Option<LeaveOneIn> {
    let oq = old.queries.iter().find(|q| q.name == name);
    let nq = new.queries.iter().find(|q| q.name == name);
    let after = releases_of(nq);
    if releases_of(oq) == after {
        return None;
    }
    let mut releases: Vec<acct::Release> = Vec::new();
    let mut placed = false;
    for q in &old.queries {
        if q.name == name {
            releases.extend(after.iter().copied());
            placed = true;
        } else {
            releases.extend(releases_of(Some(q)));
        }
    }
    if !placed {
        releases.extend(after.iter().copied());
    }
    let r = if releases.is_empty() {
        Ok(0.0)
    } else {
        acct::epsilon(&releases, delta, accountant)
            .map(|b| b.epsilon)
            .map_err(|e| e.to_string())
    };
    Some(match r {
        Ok(e) => LeaveOneIn {
            epsilon: Some(e),
            change: Some(e - old_eps),
            error: None,
        },
        Err(e) => LeaveOneIn {
            epsilon: None,
            change: None,
            error: Some(e),
        },
    })
}
