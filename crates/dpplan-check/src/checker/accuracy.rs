//! `accuracy` requirements (DP019): the noise of `auto` queries that state
//! one is solved from it — the largest scale that meets it, the cheapest
//! noise — and every query's noise is checked against its requirement. When
//! the requirements and the budget cannot both hold, the smallest budget
//! that would satisfy both is given.
//!
//! A requirement applies to each value the query releases: every noisy part
//! (a mean's noisy sum and noisy count each, with their own noise), every
//! cell of a histogram (all cells carry the same noise). A public part (no
//! noise) meets any requirement.

use dpplan_accounting as acct;
use dpplan_diagnostics::{Code, Diagnostic};
use dpplan_syntax::ast::{AccuracyMeasure, NoiseKind};

use super::privacy::Privacy;
use super::query::{Accuracy, Part, QueryPlan, Scale};
use super::Checker;
use crate::report::TotalReport;
use dpplan_mechanisms::noise;
use dpplan_mechanisms::sensitivity::fmt_num;

/// `b` or `σ`, as the noise kind names its scale.
fn scale_name(kind: NoiseKind) -> &'static str {
    if kind.is_gaussian() {
        "σ"
    } else {
        "b"
    }
}

/// The formula of the figure, in words, for the derivation.
fn formula(kind: NoiseKind, m: AccuracyMeasure) -> &'static str {
    match (kind, m) {
        (NoiseKind::Laplace, AccuracyMeasure::Ci95) => "b·ln 20",
        (NoiseKind::Laplace, AccuracyMeasure::Std) => "b·√2",
        (NoiseKind::Gaussian, AccuracyMeasure::Ci95) => "1.959964·σ",
        (NoiseKind::Gaussian, AccuracyMeasure::Std) => "σ",
        (NoiseKind::DiscreteLaplace, AccuracyMeasure::Ci95) => {
            "the smallest integer k with P(|X| > k) = 2q^(k+1)/(1+q) ≤ 0.05, q = e^(−1/b)"
        }
        (NoiseKind::DiscreteLaplace, AccuracyMeasure::Std) => "√(2q)/(1−q), q = e^(−1/b)",
        (NoiseKind::DiscreteGaussian, AccuracyMeasure::Ci95) => {
            "the smallest integer k with P(|X| ≤ k) ≥ 0.95, summed over the pmf"
        }
        (NoiseKind::DiscreteGaussian, AccuracyMeasure::Std) => {
            "√(Σ k²·pmf(k)), summed over the pmf"
        }
        // (a quantile refuses an `accuracy` requirement, DP014)
        (NoiseKind::Exponential | NoiseKind::PermuteAndFlip, _) => {
            "no additive noise: a rank error, 2b·ln(20m) at 95 %"
        }
    }
}

/// A number rounded *down* to six significant digits, for "at most".
fn fmt_down(x: f64) -> String {
    let printed = fmt_num(x);
    if printed.parse::<f64>().is_ok_and(|p| p <= x) || !x.is_finite() || x <= 0.0 {
        return printed;
    }
    let mag = x.log10().floor() as i32;
    let f = 10f64.powi(5 - mag);
    let mut down = (x * f).floor() / f;
    if down > x {
        down = ((x * f).floor() - 1.0) / f;
    }
    fmt_num(down)
}

/// The largest figure over the query's noisy parts, or `None` when one of
/// them has no resolved noise.
pub(super) fn achieved(q: &QueryPlan, m: AccuracyMeasure) -> Option<f64> {
    let mut worst = 0.0f64;
    for p in q.parts.iter().filter(|p| !p.public) {
        worst = worst.max(noise::measure(p.kind, p.resolved?, m));
    }
    Some(worst)
}

/// Sets the noise of every `auto` part of a query with a requirement: the
/// largest scale that meets it (DP019 when none does).
pub(super) fn calibrate_accuracy(c: &mut Checker, queries: &mut [QueryPlan]) {
    for q in queries.iter_mut() {
        let Some(a) = q.accuracy else { continue };
        let mut failed = false;
        for p in q.parts.iter_mut().filter(|p| !p.public) {
            if !matches!(p.scale, Scale::FromAccuracy) {
                continue;
            }
            match noise::largest_scale(p.kind, a.measure, a.at_most) {
                Some(s) => p.resolved = Some(s),
                None => failed = true,
            }
        }
        if failed {
            let kind = q.parts.first().map_or(NoiseKind::Laplace, |p| p.kind);
            c.error(
                Diagnostic::new(
                    Code::AccuracyTarget,
                    format!(
                        "no {} noise meets `accuracy {} <= {}` for `{}`",
                        kind,
                        a.measure,
                        fmt_num(a.at_most),
                        q.q.name.value
                    ),
                    a.span,
                )
                .help("loosen the requirement, or use continuous noise"),
            );
            q.ok = false;
        }
    }
}

/// Checks every query's noise against its requirement (DP019), with the
/// derivation of the figure that misses it.
pub(super) fn check_accuracy(c: &mut Checker, queries: &[QueryPlan]) {
    for q in queries {
        let Some(a) = q.accuracy else { continue };
        for p in q.parts.iter().filter(|p| !p.public) {
            let Some(scale) = p.resolved else { continue };
            let got = noise::measure(p.kind, scale, a.measure);
            if got <= a.at_most {
                continue;
            }
            c.error(miss(q, &a, p, scale, got));
        }
    }
}

fn miss(q: &QueryPlan, a: &Accuracy, p: &Part, scale: f64, got: f64) -> Diagnostic {
    let sn = scale_name(p.kind);
    let fix = noise::largest_scale(p.kind, a.measure, a.at_most);
    let mut d = Diagnostic::new(
        Code::AccuracyTarget,
        format!(
            "`{}` does not meet `accuracy {} <= {}`: the noise of its {} ({}, {sn} = {}) has a {} of {} = {} > {}",
            q.q.name.value,
            a.measure,
            fmt_num(a.at_most),
            p.role,
            p.kind,
            fmt_num(scale),
            a.measure.title(),
            formula(p.kind, a.measure),
            fmt_num(got),
            fmt_num(a.at_most),
        ),
        a.span,
    )
    .label(format!("{} = {}", a.measure, fmt_num(got)));
    if let Some(n) = q.q.noises.first() {
        d = d.secondary(n.span, "the noise is set here");
    }
    d.help(match fix {
        Some(s) => format!(
            "use at most {sn} = {} for the {} (the largest that meets it), or `noise {} auto` to solve the noise from the requirement",
            fmt_down(s),
            p.role,
            p.kind
        ),
        None => "loosen the requirement".to_string(),
    })
}

/// The queries whose noise was solved from a requirement.
fn solved<'q, 'a>(queries: &'q [QueryPlan<'a>]) -> Vec<&'q QueryPlan<'a>> {
    queries
        .iter()
        .filter(|q| {
            q.accuracy.is_some()
                && q.parts
                    .iter()
                    .any(|p| matches!(p.scale, Scale::FromAccuracy))
        })
        .collect()
}

/// The noise each solved part got, in words, for a conflict's message.
fn solved_noise(q: &QueryPlan, a: &Accuracy) -> String {
    q.parts
        .iter()
        .filter(|p| !p.public)
        .filter_map(|p| {
            let s = p.resolved?;
            Some(format!(
                "{} {} {} = {} ({} = {} ≤ {})",
                p.role,
                p.kind,
                scale_name(p.kind),
                fmt_down(s),
                formula_short(p.kind, a.measure),
                fmt_num(noise::measure(p.kind, s, a.measure)),
                fmt_num(a.at_most)
            ))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The figure's short name in a conflict's message.
fn formula_short(kind: NoiseKind, m: AccuracyMeasure) -> &'static str {
    match (kind, m) {
        (NoiseKind::Laplace | NoiseKind::Gaussian, _) => formula(kind, m),
        (_, AccuracyMeasure::Ci95) => "ci95",
        (_, AccuracyMeasure::Std) => "std",
    }
}

fn conflict(
    queries: &[&QueryPlan],
    privacy: &Privacy,
    message_tail: String,
    help: String,
) -> Option<Diagnostic> {
    let first = queries.first()?;
    let a = first.accuracy?;
    let solved: Vec<String> = queries
        .iter()
        .filter_map(|q| {
            let a = q.accuracy?;
            Some(format!(
                "`{}` (`accuracy {} <= {}`: {})",
                q.q.name.value,
                a.measure,
                fmt_num(a.at_most),
                solved_noise(q, &a)
            ))
        })
        .collect();
    let mut d = Diagnostic::new(
        Code::AccuracyTarget,
        format!(
            "the accuracy requirements and the budget cannot both hold: the largest noise that meets them is {}; {message_tail}",
            solved.join("; ")
        ),
        a.span,
    )
    .label("needs more budget than the plan has")
    .secondary(privacy.budget_span, "the budget");
    for q in &queries[1..] {
        if let Some(a) = q.accuracy {
            d = d.secondary(a.span, "also solved from its requirement");
        }
    }
    Some(d.help(help))
}

/// DP019 when the plan, with the noise solved from its requirements, spends
/// more than the budget: the smallest budget that satisfies both is the
/// plan's total itself (rounded up), since that noise does not depend on
/// the budget.
pub(super) fn budget_conflict(
    c: &mut Checker,
    queries: &[QueryPlan],
    total: &TotalReport,
    privacy: &Privacy,
) {
    let solved = solved(queries);
    let smallest = fmt_num(total.epsilon);
    let tail = format!(
        "with it the plan spends ε = {} at δ = {} ({}), over the budget ε = {}; the smallest budget that meets every requirement is ε = {smallest}",
        fmt_num(total.epsilon),
        fmt_num(privacy.delta),
        total.accountant_name,
        fmt_num(privacy.epsilon),
    );
    let help = format!(
        "raise the budget to `budget epsilon {smallest}{}`, or loosen the requirements",
        if privacy.delta > 0.0 {
            format!(" delta {}", fmt_num(privacy.delta))
        } else {
            String::new()
        }
    );
    if let Some(d) = conflict(&solved, privacy, tail, help) {
        c.error(d);
    }
}

/// DP019 when the budget-`auto` queries find no noise because the queries
/// solved from their requirements (with the fixed ones) already spend the
/// budget: any budget above what those spend leaves room.
pub(super) fn auto_conflict(
    c: &mut Checker,
    queries: &[QueryPlan],
    fixed: &[acct::Release],
    privacy: &Privacy,
    choice: Option<acct::Accountant>,
) {
    let solved = solved(queries);
    if solved.is_empty() {
        return;
    }
    let spent = match choice {
        Some(a) => crate::memo::epsilon(fixed, privacy.delta, a),
        None => crate::memo::best(fixed, privacy.delta),
    };
    let Ok(spent) = spent else { return };
    let tail = format!(
        "with it the queries whose noise is fixed spend ε = {} at δ = {} ({}) of the budget ε = {}, which leaves nothing for the `auto` queries; a budget above ε = {} leaves them room",
        fmt_num(spent.epsilon),
        fmt_num(privacy.delta),
        spent.accountant,
        fmt_num(privacy.epsilon),
        fmt_num(spent.epsilon),
    );
    let help = "raise the budget, or loosen the requirements".to_string();
    if let Some(d) = conflict(&solved, privacy, tail, help) {
        c.error(d);
    }
}
