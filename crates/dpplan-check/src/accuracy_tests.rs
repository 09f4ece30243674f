//! `accuracy` requirements: every figure against an independent formula
//! (closed forms, and direct sums of the discrete pmfs), with negative
//! controls: a requirement just below the achieved figure fails and just
//! above passes; a scale solved from a requirement is the largest that meets
//! it; the smallest budget a conflict names makes the plan pass, and a
//! budget just below it does not.

use dpplan_diagnostics::Code;
use dpplan_syntax::ast::{AccuracyMeasure, NoiseKind};
use statrs::distribution::{ContinuousCDF, Normal};

use crate::analyze;
use crate::test_support::{codes, report};
use dpplan_mechanisms::noise::{largest_scale, measure, spread};

const KINDS: [NoiseKind; 4] = [
    NoiseKind::Laplace,
    NoiseKind::Gaussian,
    NoiseKind::DiscreteLaplace,
    NoiseKind::DiscreteGaussian,
];
const MEASURES: [AccuracyMeasure; 2] = [AccuracyMeasure::Ci95, AccuracyMeasure::Std];

/// z₀.₉₇₅ from statrs, independently of the checker's constant.
fn z975() -> f64 {
    Normal::new(0.0, 1.0).unwrap().inverse_cdf(0.975)
}

/// (std, 95 % half-width) of integer noise with an unnormalised pmf `w(k)`
/// (symmetric), by direct summation over |k| ≤ limit.
fn direct(w: &dyn Fn(i64) -> f64, limit: i64) -> (f64, f64) {
    let z: f64 = (-limit..=limit).map(w).sum();
    let var: f64 = (-limit..=limit).map(|k| (k * k) as f64 * w(k)).sum::<f64>() / z;
    let mut mass = w(0) / z;
    let mut k = 0;
    while mass < 0.95 {
        k += 1;
        mass += 2.0 * w(k) / z;
    }
    (var.sqrt(), k as f64)
}

fn direct_discrete_laplace(t: f64) -> (f64, f64) {
    direct(
        &|k| (-(k.abs() as f64) / t).exp(),
        (t * 60.0).ceil() as i64 + 10,
    )
}

fn direct_discrete_gaussian(sigma: f64) -> (f64, f64) {
    direct(
        &|k| (-((k * k) as f64) / (2.0 * sigma * sigma)).exp(),
        (sigma * 50.0).ceil() as i64 + 10,
    )
}

#[test]
fn spread_matches_closed_forms_and_direct_pmf_sums() {
    for b in [0.3, 1.0, 2.5, 10.0, 1234.5] {
        let (sd, ci) = spread(NoiseKind::Laplace, b);
        assert!((ci - b * 20f64.ln()).abs() <= 1e-12 * ci, "{b}");
        assert!((sd - b * 2f64.sqrt()).abs() <= 1e-12 * sd, "{b}");
        let (sd, ci) = spread(NoiseKind::Gaussian, b);
        assert!((ci - z975() * b).abs() <= 1e-9 * ci, "{b}");
        assert!((ci - 1.959964 * b).abs() <= 1e-6 * ci, "{b}");
        assert_eq!(sd, b);
    }
    for t in [0.2, 0.7, 1.0, 2.5, 7.0, 40.0] {
        let (sd, ci) = spread(NoiseKind::DiscreteLaplace, t);
        let (dsd, dci) = direct_discrete_laplace(t);
        assert_eq!(ci, dci, "discrete laplace t = {t}");
        assert!(
            (sd - dsd).abs() <= 1e-9 * dsd.max(1e-9),
            "t = {t}: {sd} vs {dsd}"
        );
    }
    for s in [0.4, 1.0, 3.0, 12.3, 100.0] {
        let (sd, ci) = spread(NoiseKind::DiscreteGaussian, s);
        let (dsd, dci) = direct_discrete_gaussian(s);
        assert_eq!(ci, dci, "discrete gaussian σ = {s}");
        assert!((sd - dsd).abs() <= 1e-9 * dsd, "σ = {s}: {sd} vs {dsd}");
    }
}

#[test]
fn the_solved_scale_is_the_largest_that_meets_the_target() {
    for kind in KINDS {
        for m in MEASURES {
            for target in [0.9, 3.0, 29.0, 50.0, 500.0] {
                let s = largest_scale(kind, m, target)
                    .unwrap_or_else(|| panic!("{kind} {m} {target}: no scale"));
                assert!(measure(kind, s, m) <= target, "{kind} {m} {target}: {s}");
                // negative control: a hair more noise misses it
                assert!(
                    measure(kind, s * (1.0 + 1e-9), m) > target,
                    "{kind} {m} {target}: {s} is not the largest"
                );
            }
        }
    }
    // the continuous kinds: the closed forms, to the last ulp or so
    let close = |a: f64, b: f64| (a - b).abs() <= 4.0 * f64::EPSILON * b;
    let s = largest_scale(NoiseKind::Laplace, AccuracyMeasure::Ci95, 500.0).unwrap();
    assert!(close(s, 500.0 / 20f64.ln()), "{s}");
    let s = largest_scale(NoiseKind::Laplace, AccuracyMeasure::Std, 500.0).unwrap();
    assert!(close(s, 500.0 / 2f64.sqrt()), "{s}");
    let s = largest_scale(NoiseKind::Gaussian, AccuracyMeasure::Ci95, 500.0).unwrap();
    assert!((s - 500.0 / z975()).abs() <= 1e-9 * s, "{s}");
    let s = largest_scale(NoiseKind::Gaussian, AccuracyMeasure::Std, 500.0).unwrap();
    assert_eq!(s, 500.0);
    // the discrete kinds against the direct pmf sums: the threshold lies
    // within 10⁻⁹ of s (exactly at it, the two summation orders may round
    // the mass 0.95 differently)
    for target in [2.0, 20.0, 75.0] {
        let s = largest_scale(NoiseKind::DiscreteGaussian, AccuracyMeasure::Ci95, target).unwrap();
        assert!(direct_discrete_gaussian(s * (1.0 - 1e-9)).1 <= target);
        assert!(direct_discrete_gaussian(s * (1.0 + 1e-9)).1 > target);
        let s = largest_scale(NoiseKind::DiscreteLaplace, AccuracyMeasure::Ci95, target).unwrap();
        assert!(direct_discrete_laplace(s * (1.0 - 1e-9)).1 <= target);
        assert!(direct_discrete_laplace(s * (1.0 + 1e-9)).1 > target);
        let s = largest_scale(NoiseKind::DiscreteLaplace, AccuracyMeasure::Std, target).unwrap();
        assert!(direct_discrete_laplace(s).0 <= target * (1.0 + 1e-12));
        assert!(direct_discrete_laplace(s * (1.0 + 1e-6)).0 > target);
    }
    // no positive scale for a non-positive or non-finite target
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(
            largest_scale(NoiseKind::Laplace, AccuracyMeasure::Ci95, bad),
            None
        );
    }
}

fn plan(budget: &str, queries: &str) -> String {
    format!(
        "plan \"t\" {{\n  privacy {{\n    unit user by uid\n    adjacency add_remove\n    budget {budget}\n  }}\n  dataset d {{\n    column uid : id\n    column x : int in [0, 100]\n    column g : category {{ \"a\", \"b\" }}\n    contribution {{\n      rows_per_unit 5\n      groups_per_unit 1\n    }}\n  }}\n{queries}\n}}\n"
    )
}

fn query(name: &str, agg: &str, noise: &str, accuracy: &str, schedule: &str) -> String {
    format!("  query {name} {{\n    {agg}\n    noise {noise}\n    {accuracy}\n    schedule {schedule}\n  }}")
}

#[test]
fn a_requirement_just_below_the_achieved_figure_fails_and_just_above_passes() {
    // Laplace b = 10: ci95 = 10·ln 20; Gaussian σ = 8: std = 8.
    let ci = 10.0 * 20f64.ln();
    for (noise, m, achieved) in [
        ("laplace scale 10", "ci95", ci),
        ("gaussian sigma 8", "std", 8.0),
        ("gaussian sigma 8", "ci95", 8.0 * z975()),
    ] {
        let at = |t: f64| {
            plan(
                "epsilon 10 delta 1e-6",
                &query(
                    "n",
                    "count(d)",
                    noise,
                    &format!("accuracy {m} <= {t:?}"),
                    "once",
                ),
            )
        };
        let below = codes(&at(achieved * (1.0 - 1e-9)));
        assert_eq!(below, vec![Code::AccuracyTarget], "{noise} {m}");
        let r = report(&at(achieved * (1.0 + 1e-9)));
        let a = r.queries[0].accuracy.as_ref().unwrap();
        assert_eq!(a.met, Some(true));
        assert!((a.achieved.unwrap() - achieved).abs() <= 1e-9 * achieved);
        assert!(r.total.is_some());
    }
    // the message gives the derivation and the largest scale that meets it
    let text = plan(
        "epsilon 10",
        &query(
            "n",
            "count(d)",
            "laplace scale 10",
            "accuracy ci95 <= 29",
            "once",
        ),
    );
    let a = analyze(&text);
    let d = &a.diagnostics[0];
    assert!(
        d.message.contains("b·ln 20 = 29.9574 > 29"),
        "{}",
        d.message
    );
    let help = d.help.as_deref().unwrap();
    // 29 / ln 20 = 9.680435…, rounded down
    assert!(help.contains("b = 9.68043 "), "{help}");
    assert!(
        a.report.unwrap().total.is_none(),
        "no claim for a plan with an error"
    );
}

#[test]
fn auto_from_a_requirement_is_the_cheapest_noise_that_meets_it() {
    // count under a user unit: L1 = 5; b = 50/ln 20, ε = 5/b per release,
    // 10 releases, basic composition (pure budget).
    let text = plan(
        "epsilon 100",
        &query(
            "n",
            "count(d)",
            "laplace auto",
            "accuracy ci95 <= 50",
            "10 times",
        ),
    );
    let r = report(&text);
    let q = &r.queries[0];
    let b = q.parts[0].scale().unwrap();
    assert!(
        (b - 50.0 / 20f64.ln()).abs() <= 4.0 * f64::EPSILON * b,
        "{b}"
    );
    assert_eq!(q.mechanism.calibration, crate::Calibration::Accuracy);
    assert!(q.parts[0].ci95_half_width <= 50.0);
    assert!(spread(NoiseKind::Laplace, b * (1.0 + 1e-9)).1 > 50.0);
    let eps = r.total.as_ref().unwrap().epsilon;
    assert!(
        (eps - 10.0 * 5.0 * 20f64.ln() / 50.0).abs() <= 1e-9 * eps,
        "{eps}"
    );
    // negative control: a looser requirement costs less, whatever the budget
    let looser = report(&text.replace("<= 50", "<= 100"));
    assert!(looser.total.unwrap().epsilon < eps / 1.9);
    // the budget does not move the noise (only `auto` without a requirement)
    let richer = report(&text.replace("epsilon 100", "epsilon 1000"));
    assert_eq!(richer.queries[0].parts[0].scale(), Some(b));

    // a mean: the requirement applies to its sum and its count each
    let text = plan(
        "epsilon 100",
        &query(
            "m",
            "mean(d.x)",
            "laplace auto",
            "accuracy std <= 100",
            "once",
        ),
    );
    let r = report(&text);
    for p in &r.queries[0].parts {
        let b = p.scale().unwrap();
        assert!(
            (b - 100.0 / 2f64.sqrt()).abs() <= 4.0 * f64::EPSILON * b,
            "{}",
            p.role
        );
        assert!(p.noise_std <= 100.0);
    }
    // a discrete Gaussian histogram, against the direct pmf sum
    let text = plan(
        "epsilon 100 delta 1e-6",
        &query(
            "h",
            "histogram(d by g)",
            "discrete_gaussian auto",
            "accuracy ci95 <= 20",
            "once",
        ),
    );
    let r = report(&text);
    let s = r.queries[0].parts[0].scale().unwrap();
    assert!(r.queries[0].parts[0].ci95_half_width <= 20.0);
    assert!(direct_discrete_gaussian(s * (1.0 - 1e-9)).1 <= 20.0);
    assert!(direct_discrete_gaussian(s * (1.0 + 1e-9)).1 > 20.0);
    // other `auto` queries still share what is left of the budget
    let text = plan(
        "epsilon 2",
        &format!(
            "{}\n{}",
            query(
                "n",
                "count(d)",
                "laplace auto",
                "accuracy ci95 <= 50",
                "once"
            ),
            query("s", "sum(d.x)", "laplace auto", "", "once"),
        ),
    );
    let r = report(&text);
    let t = r.total.unwrap().epsilon;
    assert!(t <= 2.0 && t > 2.0 * (1.0 - 1e-6), "{t}");
    let n_eps = 5.0 * 20f64.ln() / 50.0;
    let s_b = r.queries[1].parts[0].scale().unwrap();
    assert!((500.0 / s_b - (2.0 - n_eps)).abs() < 1e-6, "{s_b}");
}

/// The number after `marker` in `text`.
fn number_after(text: &str, marker: &str) -> f64 {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} in {text}"))
        + marker.len();
    let s: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | '-'))
        .collect();
    s.parse().unwrap_or_else(|_| panic!("{s:?}"))
}

#[test]
fn a_conflict_with_the_budget_names_the_smallest_budget_that_satisfies_both() {
    for (budget, noise, delta) in [
        ("epsilon 0.5", "laplace auto", ""),
        ("epsilon 0.5 delta 1e-6", "gaussian auto", " delta 1e-6"),
    ] {
        let queries = format!(
            "{}\n{}",
            query("n", "count(d)", noise, "accuracy ci95 <= 20", "30 times"),
            query("s", "sum(d.x)", "laplace scale 5000", "", "once"),
        );
        let text = plan(budget, &queries);
        let a = analyze(&text);
        let errors: Vec<Code> = a
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.code)
            .collect();
        assert_eq!(
            errors,
            vec![Code::OverBudget, Code::AccuracyTarget],
            "{noise}"
        );
        let d = &a.diagnostics[1];
        assert!(d.message.contains("cannot both hold"), "{}", d.message);
        let smallest = number_after(
            &d.message,
            "the smallest budget that meets every requirement is ε = ",
        );
        let spent = a.report.unwrap().total.unwrap().epsilon;
        assert!(
            smallest >= spent && smallest <= spent * (1.0 + 1e-5),
            "{smallest} vs {spent}"
        );
        assert!(d
            .help
            .as_deref()
            .unwrap()
            .contains(&format!("budget epsilon {smallest}{delta}")));
        // that budget passes, with the same noise …
        let fixed = plan(&format!("epsilon {smallest}{delta}"), &queries);
        let r = report(&fixed);
        assert_eq!(r.within_budget, Some(true));
        assert!(r.queries[0].accuracy.as_ref().unwrap().met == Some(true));
        // … and one just below it does not (negative control)
        let below = plan(
            &format!("epsilon {}{delta}", smallest * (1.0 - 2e-5)),
            &queries,
        );
        assert!(codes(&below).contains(&Code::AccuracyTarget));
    }
    // with other `auto` queries: the budget must exceed what the solved and
    // fixed queries spend
    let queries = format!(
        "{}\n{}",
        query(
            "n",
            "count(d)",
            "laplace auto",
            "accuracy ci95 <= 20",
            "30 times"
        ),
        query("s", "sum(d.x)", "laplace auto", "", "once"),
    );
    let a = analyze(&plan("epsilon 0.5", &queries));
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code == Code::AccuracyTarget)
        .expect("DP019");
    let above = number_after(&d.message, "a budget above ε = ");
    assert!(
        (above - 30.0 * 5.0 * 20f64.ln() / 20.0).abs() <= 1e-5 * above,
        "{above}"
    );
    let r = report(&plan(&format!("epsilon {}", above * 1.01), &queries));
    assert_eq!(r.within_budget, Some(true));
}

#[test]
fn invalid_and_duplicate_requirements_are_errors() {
    let q = |acc: &str| {
        plan(
            "epsilon 1",
            &query("n", "count(d)", "laplace scale 10", acc, "once"),
        )
    };
    assert_eq!(
        codes(&q("accuracy ci95 <= 0")),
        vec![Code::InvalidParameter]
    );
    assert_eq!(
        codes(&q("accuracy std <= nan")),
        vec![Code::InvalidParameter]
    );
    assert_eq!(
        codes(&q("accuracy ci95 <= 50\n    accuracy std <= 50")),
        vec![Code::Duplicate]
    );
    assert!(codes(&q("accuracy ci95 <= 50")).is_empty());
    // a plan without a requirement has no `accuracy` in its report
    let r = report(&plan(
        "epsilon 1",
        &query("n", "count(d)", "laplace scale 10", "", "once"),
    ));
    assert!(r.queries[0].accuracy.is_none());
}
