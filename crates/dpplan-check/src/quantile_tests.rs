//! Quantiles in the checker: the score's sensitivity from the unit, the
//! adjacency and the level (against the formulas of docs/language.md), ε =
//! Δ/b per level, the rank-error figures, and negative controls.

use crate::{analyze, CheckedPlan, NoiseKind, Statistic};

fn plan(unit: &str, adjacency: &str, agg: &str, noise: &str) -> String {
    format!(
        r#"plan "q" {{
  privacy {{ {unit} adjacency {adjacency} budget epsilon 10 }}
  dataset d {{
    column id : id
    column x : float in [0, 100]
    contribution {{ rows_per_unit 3 }}
  }}
  query m {{
    {agg}
    candidates every 1
    noise {noise}
    schedule once
  }}
}}"#
    )
}

fn checked(text: &str) -> CheckedPlan {
    let a = analyze(text);
    assert!(
        !a.diagnostics.iter().any(|d| d.is_error()),
        "{:?}",
        a.diagnostics
    );
    a.report.expect("a checked plan")
}

#[test]
fn the_score_sensitivity_follows_unit_adjacency_and_level() {
    // (unit, adjacency, level, Δ): c·max(q, 1 − q) under add/remove, c under
    // replace (c = 3 for the user, 1 for a row)
    let cases = [
        ("unit row", "add_remove", 0.5, 0.5),
        ("unit row", "add_remove", 0.9, 0.9),
        ("unit row", "add_remove", 0.2, 0.8),
        ("unit row", "replace", 0.5, 1.0),
        ("unit user by id", "add_remove", 0.5, 1.5),
        ("unit user by id", "add_remove", 0.25, 2.25),
        ("unit user by id", "replace", 0.9, 3.0),
    ];
    for (unit, adj, q, delta) in cases {
        let text = plan(
            unit,
            adj,
            &format!("quantile(d.x, {q})"),
            "exponential epsilon 0.5",
        );
        let r = checked(&text);
        let p = &r.queries[0].parts[0];
        assert_eq!(p.statistic, Statistic::Quantile);
        assert_eq!(p.mechanism.kind, Some(NoiseKind::Exponential));
        assert_eq!((p.l1, p.l2), (delta, delta), "{unit} {adj} q {q}");
        // ε = Δ/b: b = Δ/ε
        let b = p.scale().unwrap();
        assert!((b - delta / 0.5).abs() < 1e-12 * b, "b {b}");
        assert!(p
            .derivation
            .iter()
            .any(|s| s.contains("1-Lipschitz") || s.contains("each way")));
        // the rank error at 95 %: 2b·ln(20m), m = 101 candidates
        let want = 2.0 * b * (20.0f64 * 101.0).ln();
        assert!(
            (p.ci95_half_width - want).abs() < 1e-9 * want,
            "{} vs {want}",
            p.ci95_half_width
        );
        let rms = 2.0 * b * ((101f64.ln() + 1.0).powi(2) + 1.0).sqrt();
        assert!((p.noise_std - rms).abs() < 1e-9 * rms);
        let cost = r.queries[0].per_release.as_ref().unwrap();
        assert!((cost.epsilon - 0.5).abs() < 1e-12, "{cost:?}");
    }
    // negative control: more rows per unit, larger Δ (and b)
    let a = checked(&plan(
        "unit user by id",
        "replace",
        "quantile(d.x, 0.5)",
        "exponential epsilon 0.5",
    ));
    let more = plan(
        "unit user by id",
        "replace",
        "quantile(d.x, 0.5)",
        "exponential epsilon 0.5",
    )
    .replace("rows_per_unit 3", "rows_per_unit 4");
    let b = checked(&more);
    assert_eq!(
        (a.queries[0].parts[0].l1, b.queries[0].parts[0].l1),
        (3.0, 4.0)
    );
}

#[test]
fn several_levels_split_epsilon_and_compose() {
    let text = plan(
        "unit row",
        "add_remove",
        "quantiles(d.x, [0.25, 0.5, 0.9])",
        "exponential epsilon 0.9",
    );
    let r = checked(&text);
    let q = &r.queries[0];
    assert_eq!(q.parts.len(), 3);
    for (p, delta) in q.parts.iter().zip([0.75, 0.5, 0.9]) {
        assert_eq!(p.l1, delta);
        let eps = p.l1 / p.scale().unwrap();
        assert!((eps - 0.3).abs() < 1e-12, "{eps}");
    }
    let cost = q.per_release.as_ref().unwrap();
    assert!(
        cost.epsilon >= 0.9 && cost.epsilon < 0.9 + 1e-12,
        "{cost:?}"
    );
    // negative control: one level fewer costs less
    let two = checked(&text.replace("[0.25, 0.5, 0.9]", "[0.25, 0.5]"));
    assert_eq!(two.queries[0].parts.len(), 2);
}

#[test]
fn mismatched_mechanisms_and_levels_are_errors() {
    let codes = |text: &str| -> Vec<&'static str> {
        let a = analyze(text);
        a.diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.code.as_str())
            .collect()
    };
    let laplace = plan(
        "unit row",
        "add_remove",
        "quantile(d.x, 0.5)",
        "laplace epsilon 0.5",
    );
    assert!(codes(&laplace).contains(&"DP017"));
    let count = plan(
        "unit row",
        "add_remove",
        "count(d)",
        "exponential epsilon 0.5",
    );
    assert!(codes(&count).contains(&"DP017"));
    let level = plan(
        "unit row",
        "add_remove",
        "quantile(d.x, 1.5)",
        "exponential epsilon 0.5",
    );
    assert!(codes(&level).contains(&"DP007"));
    let list = plan(
        "unit row",
        "add_remove",
        "quantile(d.x, [0.5])",
        "exponential epsilon 0.5",
    );
    assert!(codes(&list).contains(&"DP017"));
    let accuracy = plan(
        "unit row",
        "add_remove",
        "quantile(d.x, 0.5)",
        "exponential epsilon 0.5",
    )
    .replace("schedule once", "schedule once accuracy ci95 <= 5");
    assert!(codes(&accuracy).contains(&"DP014"));
    // near miss: all well formed
    let ok = plan(
        "unit row",
        "add_remove",
        "quantile(d.x, 0.5)",
        "exponential scale 2",
    );
    assert!(codes(&ok).is_empty(), "{:?}", codes(&ok));
}
