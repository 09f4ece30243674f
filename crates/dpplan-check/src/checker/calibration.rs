//! Noise calibration: a scale for every part given as a per-release ε, and
//! one noise multiplier for all `auto` parts so that the plan fits its
//! budget (DP011, DP018).

use dpplan_accounting as acct;
use dpplan_accounting::roots::{self, find_bracket, Bisection, Bracket, End, Midpoint};
use dpplan_diagnostics::{num, Code, Diagnostic};
use dpplan_syntax::ast::NoiseKind;

use super::privacy::Privacy;
use super::query::{QueryPlan, Scale};
use super::{fast_best, mechanism, Checker};
use dpplan_mechanisms::sensitivity::{fmt_num, Derived};

/// The smallest multiplier t in [lo, hi] that fits (ε falls as the noise
/// grows), by bisection at geometric midpoints until hi/lo < 1 + 10⁻⁹, at
/// most `steps` steps. `hi` must fit; the upper end is returned, so the
/// result fits.
fn bisect(lo: f64, hi: f64, steps: u32, fits: &dyn Fn(f64) -> bool) -> f64 {
    let rule = Bisection {
        rel: 1e-9,
        abs: 0.0,
        max_steps: steps,
        midpoint: Midpoint::Geometric,
        end: End::Upper,
    };
    roots::bisect(lo, hi, &rule, fits)
}

/// Solves for the noise multiplier: first with the fast accountants (or the
/// requested one), then — for `best` when `precise` — refined with every
/// accountant in a narrow bracket. The result always meets the target under
/// the accountant that reports the plan's total, since that accountant's ε is
/// at most the one the search used.
fn solve_multiplier(
    build: &dyn Fn(f64) -> Vec<acct::Release>,
    target: f64,
    delta: f64,
    choice: Option<acct::Accountant>,
    precise: bool,
) -> Option<f64> {
    let fits_fast = |t: f64| -> bool {
        let rs = build(t);
        let r = match choice {
            Some(a) => crate::memo::epsilon(&rs, delta, a),
            None => fast_best(&rs, delta),
        };
        r.is_ok_and(|b| b.epsilon <= target)
    };
    let fits_best = |x: f64| crate::memo::best(&build(x), delta).is_ok_and(|b| b.epsilon <= target);
    match search(&fits_fast, 100) {
        Some(t) if choice.is_some() || !precise => Some(t),
        // The tighter accountants need less noise: look below t.
        Some(t) => {
            let floor = t / 4.0;
            if fits_best(floor) {
                Some(t)
            } else {
                Some(bisect(floor, t, 12, &fits_best))
            }
        }
        // The fast accountants cannot fit the plan at any noise level (the
        // fixed queries alone exceed the budget under them): search with
        // every accountant.
        None if choice.is_none() && precise => search(&fits_best, 30),
        None => None,
    }
}

/// Brackets the smallest fitting multiplier by powers of 4 (up from 1, then
/// down from the first that fits), then bisects.
fn search(fits: &dyn Fn(f64) -> bool, steps: u32) -> Option<f64> {
    let Bracket::Found { first_held: hi, .. } = find_bracket(1.0, 40, |x| Some(x * 4.0), fits)
    else {
        return None;
    };
    match find_bracket(hi / 4.0, 40, |x| Some(x / 4.0), |x| !fits(x)) {
        Bracket::Found {
            last_failed,
            first_held: lo,
        } => Some(bisect(lo, last_failed.unwrap_or(hi), steps, fits)),
        Bracket::Exhausted { last_tried } => Some(last_tried),
    }
}

pub(super) fn calibrate_epsilon_parts(c: &mut Checker, queries: &mut [QueryPlan]) {
    for q in queries.iter_mut() {
        for p in q.parts.iter_mut().filter(|p| !p.public) {
            let Scale::FromEpsilon { epsilon, delta } = p.scale else {
                continue;
            };
            let sens = if p.kind.is_gaussian() {
                p.derived.l2
            } else {
                p.derived.l1
            };
            let result = match p.kind {
                // the selections: ε = Δ/b, as for Laplace
                NoiseKind::Laplace
                | NoiseKind::DiscreteLaplace
                | NoiseKind::Exponential
                | NoiseKind::PermuteAndFlip => Ok(sens / epsilon),
                NoiseKind::Gaussian => {
                    acct::analytic_gaussian_sigma(sens, epsilon, delta.unwrap_or(0.0))
                }
                NoiseKind::DiscreteGaussian => {
                    let kind = p.kind;
                    let derived = p.derived.clone();
                    let build = move |t: f64| {
                        vec![acct::Release {
                            sample: None,
                            mechanism: mechanism(kind, t, &derived, 1.0, false),
                            count: 1,
                        }]
                    };
                    solve_multiplier(&build, epsilon, delta.unwrap_or(0.0), None, false).ok_or_else(
                        || acct::AccountingError::NoSolution("no σ reaches this ε".into()),
                    )
                }
            };
            match result {
                Ok(s) if s.is_finite() && s > 0.0 => p.resolved = Some(s),
                Ok(_) | Err(_) => {
                    let span = q.q.noises.first().map_or(q.q.name.span, |n| n.span);
                    c.error(
                        Diagnostic::new(
                            Code::Accounting,
                            format!(
                                "no noise scale gives ε = {} for `{}`",
                                fmt_num(epsilon),
                                q.q.name.value
                            ),
                            span,
                        )
                        .help("check ε and δ"),
                    );
                    q.ok = false;
                }
            }
        }
    }
}

pub(super) fn calibrate_auto(
    c: &mut Checker,
    queries: &mut [QueryPlan],
    privacy: &Privacy,
    choice: Option<acct::Accountant>,
    precise: bool,
) {
    let any_auto = queries.iter().any(|q| {
        q.parts
            .iter()
            .any(|p| matches!(p.scale, Scale::Auto { .. }))
    });
    if !any_auto {
        return;
    }
    // Every other part must be resolved for the calibration to mean anything.
    if queries.iter().any(|q| !q.ok) {
        return;
    }
    // scale = t · sensitivity / weight for every auto part.
    let fixed: Vec<acct::Release> = queries
        .iter()
        .flat_map(|q| {
            q.parts.iter().filter(|p| !p.public).filter_map(move |p| {
                Some(acct::Release {
                    sample: q.sample,
                    mechanism: p.accounted(1.0)?,
                    count: q.accounted_releases(),
                })
            })
        })
        .collect();
    let autos: Vec<(NoiseKind, Derived, f64, u64, bool, Option<f64>)> = queries
        .iter()
        .flat_map(|q| {
            q.parts
                .iter()
                .filter(|p| !p.public)
                .filter_map(move |p| match p.scale {
                    Scale::Auto { weight } => Some((
                        p.kind,
                        p.derived.clone(),
                        weight,
                        q.accounted_releases(),
                        p.statistic.is_count(),
                        q.sample,
                    )),
                    _ => None,
                })
        })
        .collect();
    let unit_scale = |kind: NoiseKind, d: &Derived, w: f64| -> f64 {
        let s = if kind.is_gaussian() { d.l2 } else { d.l1 };
        s / w
    };
    let build = |t: f64| -> Vec<acct::Release> {
        let mut rs = fixed.clone();
        for (kind, d, w, n, count, sample) in &autos {
            rs.push(acct::Release {
                sample: *sample,
                mechanism: mechanism(*kind, t * unit_scale(*kind, d, *w), d, 1.0, *count),
                count: *n,
            });
        }
        rs
    };
    match solve_multiplier(&build, privacy.epsilon, privacy.delta, choice, precise) {
        Some(t) if t.is_finite() && t > 0.0 => {
            for q in queries.iter_mut() {
                for p in q.parts.iter_mut().filter(|p| !p.public) {
                    if let Scale::Auto { weight } = p.scale {
                        p.resolved = Some(t * unit_scale(p.kind, &p.derived, weight));
                    }
                }
            }
        }
        _ => {
            super::accuracy::auto_conflict(c, queries, &fixed, privacy, choice);
            c.error(no_fit(queries, &fixed, privacy, choice));
            for q in queries.iter_mut() {
                if q.parts
                    .iter()
                    .any(|p| matches!(p.scale, Scale::Auto { .. }))
                {
                    q.ok = false;
                }
            }
        }
    }
}

/// DP011 when no noise level for the `auto` queries fits: which queries,
/// what the others spend alone (under the accountant the total uses), and
/// so the budget needed: more than that. No budget at or below it fits
/// (the `auto` parts cost more than nothing); one above it fits once the
/// `auto` noise is large enough, which the message does not promise for
/// a budget within the calibration's reach of it (its search stops at
/// 4⁴⁰ times the sensitivity, and the privacy-loss distribution's
/// discretisation adds a little).
fn no_fit(
    queries: &[QueryPlan],
    fixed: &[acct::Release],
    privacy: &Privacy,
    choice: Option<acct::Accountant>,
) -> Diagnostic {
    let autos: Vec<&QueryPlan> = queries
        .iter()
        .filter(|q| {
            q.parts
                .iter()
                .any(|p| matches!(p.scale, Scale::Auto { .. }))
        })
        .collect();
    let names = autos
        .iter()
        .map(|q| format!("`{}`", q.q.name.value))
        .collect::<Vec<_>>()
        .join(", ");
    let spent = (!fixed.is_empty())
        .then(|| match choice {
            Some(a) => crate::memo::epsilon(fixed, privacy.delta, a),
            None => crate::memo::best(fixed, privacy.delta),
        })
        .and_then(Result::ok)
        .filter(|b| b.epsilon >= privacy.epsilon);
    let at = if privacy.delta > 0.0 {
        format!(" at δ = {}", num(privacy.delta))
    } else {
        String::new()
    };
    let mut d = match &spent {
        Some(b) => Diagnostic::new(
            Code::OverBudget,
            format!(
                "no noise level for the `auto` queries ({names}) fits the budget ε = {}: the other queries alone spend ε = {}{at} ({}), which leaves nothing for them",
                num(privacy.epsilon),
                num(b.epsilon),
                b.accountant.title()
            ),
            privacy.budget_span,
        )
        .label("the budget")
        .help(format!(
            "the budget must be above ε = {}, what the other queries spend alone (the `auto` noise grows without bound as the budget comes down to it); or give the other queries more noise or fewer releases",
            num(b.epsilon)
        )),
        None => Diagnostic::new(
            Code::OverBudget,
            format!(
                "no noise level for the `auto` queries ({names}) fits the budget ε = {}{at}, up to the largest the calibration tries (4⁴⁰ times their sensitivity)",
                num(privacy.epsilon)
            ),
            privacy.budget_span,
        )
        .label("the budget")
        .help("raise the budget, or δ for Gaussian noise (at δ = 0 it has no finite ε)"),
    };
    for q in autos {
        d = d.secondary(q.q.name.span, "`auto` noise");
    }
    d
}
