//! The organisation's rules on one plan (DP100–DP106, DP109): each reads the
//! checked plan (and the syntax tree, for where to point) and the limits
//! that apply to the plan's path.

use dpplan_check::{Analysis, CheckedPlan};
use dpplan_diagnostics::{num, percent, percent_up, Code, Diagnostic, Span};
use dpplan_vocab::{ColumnKind, NoiseKind, UnitKind};

use crate::config::{Effective, Limits};

/// Where a plan-wide rule points: the statement named, else the `privacy`
/// keyword, else the start of the file.
struct Anchors {
    privacy: Span,
    budget: Span,
    unit: Span,
    adjacency: Span,
    accountant: Span,
}

fn anchors(a: &Analysis) -> Anchors {
    let p = a.ast.privacy.first();
    let privacy = p.map_or(Span::new(0, 0), |p| p.keyword);
    let or = |s: Option<Span>| s.unwrap_or(privacy);
    Anchors {
        privacy,
        budget: or(p.and_then(|p| p.budgets.first()).map(|b| b.span)),
        unit: or(p.and_then(|p| p.units.first()).map(|u| u.span)),
        adjacency: or(p.and_then(|p| p.adjacencies.first()).map(|u| u.span)),
        accountant: or(p.and_then(|p| p.accountants.first()).map(|u| u.span)),
    }
}

/// The policy's diagnostics for one plan. `source` names the policy file in
/// the messages.
pub fn check(a: &Analysis, e: &Effective, source: &str) -> Vec<Diagnostic> {
    let Some(r) = a.report.as_ref() else {
        return Vec::new();
    };
    let at = anchors(a);
    let l = &e.limits;
    let mut out = Vec::new();
    budget(r, l, &at, source, &mut out);
    delta(r, l, &at, source, &mut out);
    unit(r, l, &at, source, &mut out);
    mechanisms(r, l, &at, source, &mut out);
    releases(r, l, &at, source, &mut out);
    noise(r, l, source, &mut out);
    accuracy(r, l, source, &mut out);
    attack_risk(r, l, &at, source, &mut out);
    out
}

/// DP109: the plan's bound on a membership test's TPR at each capped
/// false-positive rate against the cap (only when a total is claimed).
fn attack_risk(r: &CheckedPlan, l: &Limits, at: &Anchors, source: &str, out: &mut Vec<Diagnostic>) {
    let Some(risk) = &r.attack_risk else {
        return;
    };
    for cap in l.tpr_caps() {
        let (fpr, max) = (*cap.fpr.get_ref(), *cap.tpr.get_ref());
        let Some(tpr) = risk.tpr_at(fpr) else {
            continue;
        };
        if tpr > max {
            out.push(
                Diagnostic::new(
                    Code::PolicyAttackRisk,
                    format!(
                        "at a false-positive rate of {}, a membership test could reach a true-positive rate of {}, above the policy's {} ({source}: max-tpr-at-fpr)",
                        percent(fpr),
                        percent_up(tpr),
                        percent(max)
                    ),
                    at.budget,
                )
                .label("attack risk above the policy's cap")
                .help("more noise or fewer releases (a smaller ε), or a reviewed exception for this path"),
            );
        }
    }
}

fn budget(r: &CheckedPlan, l: &Limits, at: &Anchors, source: &str, out: &mut Vec<Diagnostic>) {
    if let Some(max) = &l.max_epsilon {
        let max = *max.get_ref();
        let claimed = r.total.as_ref().map(|t| t.epsilon);
        let (what, v) = match claimed {
            Some(t) if t > max => ("claims a total of", t),
            _ if r.budget.epsilon > max => ("has a budget of", r.budget.epsilon),
            _ => ("", f64::NAN),
        };
        if !what.is_empty() {
            out.push(
                Diagnostic::new(
                    Code::PolicyBudget,
                    format!("the plan {what} ε = {}, above the policy's largest ε = {} ({source}: max-epsilon)", num(v), num(max)),
                    at.budget,
                )
                .label("over the policy's ε")
                .help(format!("a budget and spending of at most ε = {}, or a reviewed exception for this path in {source}", num(max))),
            );
        }
    }
    if let Some(max) = &l.max_delta {
        let max = *max.get_ref();
        if r.budget.delta > max {
            out.push(
                Diagnostic::new(
                    Code::PolicyBudget,
                    format!("the plan's δ = {} is above the policy's largest δ = {} ({source}: max-delta)", num(r.budget.delta), num(max)),
                    at.budget,
                )
                .label("over the policy's δ")
                .help(format!("δ at most {}", num(max))),
            );
        }
    }
}

fn delta(r: &CheckedPlan, l: &Limits, at: &Anchors, source: &str, out: &mut Vec<Diagnostic>) {
    let k = l.delta_population_exponent.as_ref().map(|k| *k.get_ref());
    match (r.population, k) {
        (None, _)
            if l.require_population == Some(true) || (k.is_some() && r.budget.delta > 0.0) =>
        {
            out.push(
                Diagnostic::new(
                    Code::PolicyDelta,
                    format!("the plan declares no population, which the policy needs to judge δ ({source})"),
                    at.privacy,
                )
                .label("no `population` in this block")
                .help("declare how many units the data may hold: `population N`"),
            );
        }
        (Some(n), Some(k)) if r.budget.delta > 0.0 => {
            let limit = n.powf(-k);
            if r.budget.delta > limit {
                out.push(
                    Diagnostic::new(
                        Code::PolicyDelta,
                        format!(
                            "δ = {} is above 1/population^{} = 1/{}^{} = {} ({source}: delta-population-exponent)",
                            num(r.budget.delta),
                            num(k),
                            num(n),
                            num(k),
                            num(limit)
                        ),
                        at.budget,
                    )
                    .label("δ too large for this population")
                    .help(format!("δ at most {}", num(limit))),
                );
            }
        }
        _ => {}
    }
}

fn unit(r: &CheckedPlan, l: &Limits, at: &Anchors, source: &str, out: &mut Vec<Diagnostic>) {
    if let Some(allowed) = &l.allowed_units {
        if !allowed.contains(&r.unit.kind) {
            out.push(
                Diagnostic::new(
                    Code::PolicyUnit,
                    format!("the privacy unit `{}` is not one the policy allows ({source}: allowed-units = {})", r.unit.kind, names(allowed)),
                    at.unit,
                )
                .label("unit not allowed")
                .help("protect a unit the policy allows, e.g. `unit user by <id>` with contribution bounds"),
            );
        }
    }
    if let Some(allowed) = &l.allowed_adjacency {
        if !allowed.contains(&r.adjacency) {
            out.push(
                Diagnostic::new(
                    Code::PolicyUnit,
                    format!("the adjacency `{}` is not one the policy allows ({source}: allowed-adjacency = {})", r.adjacency, names(allowed)),
                    at.adjacency,
                )
                .label("adjacency not allowed"),
            );
        }
    }
    if l.user_unit_for_id_columns == Some(true) && r.unit.kind != UnitKind::User {
        let with_id = r.datasets.iter().find_map(|d| {
            d.columns
                .iter()
                .find(|c| c.kind == ColumnKind::Id)
                .map(|c| (d.name.clone(), c.name.clone()))
        });
        if let Some((dataset, column)) = with_id {
            out.push(
                Diagnostic::new(
                    Code::PolicyUnit,
                    format!(
                        "`{dataset}` identifies persons by `{column}`, but the unit is `{}`: the policy asks for a user-level unit on such data ({source}: user-unit-for-id-columns)",
                        r.unit.kind
                    ),
                    at.unit,
                )
                .label("not user-level")
                .help(format!("`unit user by {column}` with a `contribution {{ rows_per_unit N }}` bound")),
            );
        }
    }
}

fn mechanisms(r: &CheckedPlan, l: &Limits, at: &Anchors, source: &str, out: &mut Vec<Diagnostic>) {
    if let Some(allowed) = &l.allowed_mechanisms {
        for q in &r.queries {
            let kinds: Vec<NoiseKind> = q.parts.iter().filter_map(|p| p.mechanism.kind).collect();
            if let Some(k) = kinds.iter().find(|k| !allowed.contains(k)) {
                out.push(
                    Diagnostic::new(
                        Code::PolicyMechanism,
                        format!("query `{}` adds `{k}` noise, which the policy does not allow ({source}: allowed-mechanisms = {})", q.name, names(allowed)),
                        q.name_span,
                    )
                    .label("mechanism not allowed"),
                );
            }
        }
    }
    if let Some(allowed) = &l.allowed_accountants {
        if !allowed.contains(&r.accountant_requested) {
            out.push(
                Diagnostic::new(
                    Code::PolicyMechanism,
                    format!("the plan asks for `accountant {}`, which the policy does not allow ({source}: allowed-accountants = {})", r.accountant_requested, names(allowed)),
                    at.accountant,
                )
                .label("accountant not allowed"),
            );
        }
    }
}

fn releases(r: &CheckedPlan, l: &Limits, at: &Anchors, source: &str, out: &mut Vec<Diagnostic>) {
    if let Some(max) = l.max_releases {
        for q in r.queries.iter().filter(|q| q.releases > max) {
            out.push(
                Diagnostic::new(
                    Code::PolicyReleases,
                    format!("query `{}` releases {} times, more than the policy's {max} ({source}: max-releases)", q.name, q.releases),
                    q.name_span,
                )
                .label("too many fresh releases")
                .help("fewer fresh releases; showing a released value again (`publish`) costs nothing"),
            );
        }
    }
    if let Some(max) = l.max_plan_releases {
        if r.releases > max {
            out.push(
                Diagnostic::new(
                    Code::PolicyReleases,
                    format!("the plan releases {} times in all, more than the policy's {max} ({source}: max-plan-releases)", r.releases),
                    at.privacy,
                )
                .label("too many releases in this plan"),
            );
        }
    }
}

fn noise(r: &CheckedPlan, l: &Limits, source: &str, out: &mut Vec<Diagnostic>) {
    let Some(min) = l.min_noise_multiplier.as_ref().map(|m| *m.get_ref()) else {
        return;
    };
    for q in &r.queries {
        for p in &q.parts {
            let Some(m) = p.accounted else { continue };
            let (sens, norm) = if m.kind.is_gaussian() {
                (m.sensitivity.l2, "Δ₂")
            } else {
                (m.sensitivity.l1, "Δ₁")
            };
            if sens > 0.0 && m.scale / sens < min {
                let sym = if m.kind.is_gaussian() { "σ" } else { "b" };
                out.push(
                    Diagnostic::new(
                        Code::PolicyNoise,
                        format!(
                            "query `{}` ({}): {sym}/{norm} = {}/{} = {} is below the policy's {} ({source}: min-noise-multiplier)",
                            q.name,
                            p.role,
                            num(m.scale),
                            num(sens),
                            num(m.scale / sens),
                            num(min)
                        ),
                        q.name_span,
                    )
                    .label("too little noise per release")
                    .help(format!("{sym} at least {} (= {} × {norm}), or tighter contribution bounds", num(min * sens), num(min))),
                );
            }
        }
    }
}

fn accuracy(r: &CheckedPlan, l: &Limits, source: &str, out: &mut Vec<Diagnostic>) {
    if l.require_accuracy != Some(true) {
        return;
    }
    for q in r.queries.iter().filter(|q| q.accuracy.is_none()) {
        out.push(
            Diagnostic::new(
                Code::PolicyAccuracy,
                format!("query `{}` states no accuracy requirement, which the policy asks for ({source}: require-accuracy)", q.name),
                q.name_span,
            )
            .label("no `accuracy`")
            .help("add `accuracy ci95 <= …` (or `std <= …`); `noise … auto` solves the noise from it"),
        );
    }
}

fn names<T: std::fmt::Display>(v: &[T]) -> String {
    let inner: Vec<String> = v.iter().map(|x| format!("\"{x}\"")).collect();
    format!("[{}]", inner.join(", "))
}
