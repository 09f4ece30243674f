//! The diff against the checker's own numbers, with negative controls.

use super::guarantee::recompute;
use super::*;

const EXAMPLES: &[&str] = &[
    "app-events",
    "census",
    "repeated-release",
    "retail-mixed",
    "web-analytics",
];

fn example(name: &str) -> String {
    let p = format!(
        "{}/../../examples/{name}/{name}.dpplan",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn checked(text: &str) -> CheckedPlan {
    let a = dpplan_check::analyze(text);
    comparable(&a)
        .unwrap_or_else(|| panic!("{:?}", a.diagnostics))
        .clone()
}

/// `text` with `from` replaced once (and it must occur).
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "`{from}` not in the plan");
    text.replacen(from, to, 1)
}

fn run(old: &str, new: &str) -> PlanDiff {
    diff("old", &checked(old), "new", &checked(new))
}

#[test]
fn the_releases_read_back_are_exactly_what_the_checker_composed() {
    // Every accountant over `plan_releases` at the plan's δ gives the
    // checker's own table bit for bit: the diff composes the same releases.
    for name in EXAMPLES {
        let p = checked(&example(name));
        let again = recompute(&plan_releases(&p), p.budget.delta);
        for a in &p.accountants {
            let mine = again.iter().find(|(x, _)| *x == a.accountant).unwrap();
            assert_eq!(
                mine.1.as_ref().ok().copied(),
                a.epsilon,
                "{name} {}",
                a.accountant
            );
        }
    }
}

#[test]
fn identical_plans_give_an_empty_diff() {
    for name in EXAMPLES {
        let t = example(name);
        let d = run(&t, &t);
        assert!(d.identical, "{name}: {d:#?}");
        assert!(!d.verdict.increase && !d.verdict.contract_changed, "{name}");
        assert!(d.queries.is_empty() && d.contract.is_empty() && d.datasets.is_empty());
        assert_eq!(d.guarantee.change, Some(0.0));
        // the compared ε is one of the checker's own figures
        let p = checked(&t);
        let a = d.guarantee.accountant.unwrap();
        let own = p.accountants.iter().find(|x| x.accountant == a).unwrap();
        assert_eq!(d.guarantee.old_epsilon, own.epsilon);
        // with `best` on both sides and one δ, the tightest common
        // accountant is the checker's best
        assert_eq!(
            d.guarantee.old_epsilon,
            p.total.as_ref().map(|t| t.epsilon),
            "{name}"
        );
    }
}

#[test]
fn more_noise_lowers_epsilon_and_is_not_an_increase() {
    let t = example("repeated-release");
    let d = run(&t, &edit(&t, "gaussian sigma 8", "gaussian sigma 16"));
    assert!(!d.identical && !d.verdict.increase && !d.verdict.contract_changed);
    let (o, n) = (
        d.guarantee.old_epsilon.unwrap(),
        d.guarantee.new_epsilon.unwrap(),
    );
    assert!(n < o, "{o} → {n}");
    // independent: 10 Gaussian releases, Δ₂ = 1, compose exactly to μ-GDP
    // with μ = √10/σ (Dong–Roth–Su Cor 3.3), ε from the Balle–Wang profile
    assert_eq!(d.guarantee.accountant, Some(Accountant::Gdp));
    let mu = |s: f64| 10f64.sqrt() / s;
    assert!((o - acct::gdp_epsilon(mu(8.0), 1e-6)).abs() < 1e-9);
    assert!((n - acct::gdp_epsilon(mu(16.0), 1e-6)).abs() < 1e-9);
    let q = &d.queries[0];
    assert_eq!(q.name, "yes_count");
    assert!(q.parts[0]
        .changes
        .iter()
        .any(|c| c.field == "sigma" && c.old == json!(8.0) && c.new == json!(16.0)));
    // one query changed: its leave-one-in total is the new plan's total
    let l = q.leave_one_in.as_ref().unwrap();
    assert_eq!(l.epsilon, Some(n));
    assert_eq!(l.change, Some(n - o));
}

#[test]
fn a_doubled_contribution_bound_raises_epsilon_and_is_flagged() {
    let t = example("web-analytics");
    let d = run(&t, &edit(&t, "rows_per_unit 5 ", "rows_per_unit 10 "));
    assert!(d.verdict.increase && d.verdict.contract_changed);
    assert!(d.guarantee.new_epsilon.unwrap() > d.guarantee.old_epsilon.unwrap());
    assert_eq!(
        d.new.within_budget,
        Some(false),
        "over budget, still compared"
    );
    let ds = &d.datasets[0];
    assert_eq!(ds.name, "visits");
    assert!(ds
        .changes
        .iter()
        .any(|c| c.field == "rows_per_unit" && c.old == json!(5) && c.new == json!(10)));
    // the sensitivity and its derivation moved for the count
    let q = d.queries.iter().find(|q| q.name == "daily_visits").unwrap();
    let p = &q.parts[0];
    assert!(p.changes.iter().any(|c| c.field == "l1"));
    assert!(!p.derivation_added.is_empty() && !p.derivation_removed.is_empty());
    // negative control: halving the bound lowers ε
    let d = run(&t, &edit(&t, "rows_per_unit 5 ", "rows_per_unit 2 "));
    assert!(!d.verdict.increase);
}

/// A larger sample raises ε and shows as a dataset change (not a change
/// of the contract: the ledger composes each release at its own rate);
/// dropping the sampling raises it far more; a smaller one lowers it.
#[test]
fn a_changed_sampling_rate_moves_epsilon_and_is_a_dataset_change() {
    let t = example("daily-panel");
    let d = run(&t, &edit(&t, "sample units 5%", "sample units 10%"));
    assert!(d.verdict.increase && !d.verdict.contract_changed);
    let (o, n) = (
        d.guarantee.old_epsilon.unwrap(),
        d.guarantee.new_epsilon.unwrap(),
    );
    assert!(n > 1.5 * o, "{o} → {n}");
    let ds = &d.datasets[0];
    assert!(ds
        .changes
        .iter()
        .any(|c| c.field == "sample" && c.old == json!(0.05) && c.new == json!(0.1)));
    // no sampling at all: the year on every unit
    let all = run(&t, &edit(&t, "    sample units 5%\n", ""));
    assert!(all.guarantee.new_epsilon.unwrap() > 10.0 * o);
    // negative control: a smaller sample lowers ε
    let d = run(&t, &edit(&t, "sample units 5%", "sample units 2%"));
    assert!(!d.verdict.increase);
    assert!(d.guarantee.new_epsilon.unwrap() < o);
}

#[test]
fn a_removed_query_lowers_epsilon_and_an_added_one_raises_it() {
    let t = example("census");
    let start = t.find("  query by_tenure").unwrap();
    let end = start + t[start..].find("  }\n").unwrap() + 4;
    let without = format!("{}{}", &t[..start], &t[end..]);
    let d = run(&t, &without);
    let q = d.queries.iter().find(|q| q.name == "by_tenure").unwrap();
    assert_eq!(q.status, Status::Removed);
    assert!(!d.verdict.increase);
    assert!(d.guarantee.change.unwrap() < 0.0);
    assert_eq!(
        q.leave_one_in.as_ref().unwrap().epsilon,
        d.guarantee.new_epsilon
    );
    let d = run(&without, &t);
    assert_eq!(d.queries[0].status, Status::Added);
    assert!(d.verdict.increase && d.guarantee.change.unwrap() > 0.0);
}

#[test]
fn a_unit_or_delta_change_breaks_the_comparison() {
    let t = example("repeated-release");
    let d = run(&t, &edit(&t, "adjacency add_remove", "adjacency replace"));
    assert!(d.verdict.contract_changed && !d.verdict.comparable);
    assert!(d
        .contract
        .iter()
        .any(|c| c.field == "adjacency" && c.breaks_comparison));
    // δ: compared at the smaller δ, recomputed; a larger δ is an increase
    let d = run(&t, &edit(&t, "delta 1e-6", "delta 1e-5"));
    assert!(d.guarantee.recomputed && d.guarantee.delta == 1e-6);
    assert!(d.verdict.increase, "a larger δ spends more");
    // same releases at the same δ: the same ε
    assert_eq!(d.guarantee.change, Some(0.0));
    let d = run(&edit(&t, "delta 1e-6", "delta 1e-5"), &t);
    assert!(!d.verdict.increase, "a smaller δ with the same releases");
    // the budget alone: flagged, still comparable
    let d = run(&t, &edit(&t, "epsilon 2.5", "epsilon 3"));
    assert!(d.verdict.contract_changed && d.verdict.comparable && !d.verdict.increase);
    assert!(!d.identical);
}

#[test]
fn different_accountants_are_compared_under_one() {
    let t = example("repeated-release");
    let d = run(&t, &edit(&t, "accountant best", "accountant rdp"));
    assert!(d.contract.iter().any(|c| c.field == "accountant"));
    // one accountant for both sides: the tightest common one (GDP here),
    // while the new plan's own claim is RDP's
    assert_eq!(d.guarantee.accountant, Some(Accountant::Gdp));
    assert_eq!(d.new.claim.as_ref().unwrap().accountant, Accountant::Rdp);
    assert_eq!(d.guarantee.change, Some(0.0));
    // both ask for RDP: RDP is used
    let r = edit(&t, "accountant best", "accountant rdp");
    let d = run(&r, &edit(&r, "sigma 8", "sigma 9"));
    assert_eq!(d.guarantee.accountant, Some(Accountant::Rdp));
}

#[test]
fn a_plan_with_an_error_is_not_comparable() {
    let t = example("census");
    let broken = edit(&t, "sigma 12", "sigma -1");
    assert!(comparable(&dpplan_check::analyze(&broken)).is_none());
    assert!(comparable(&dpplan_check::analyze(&t)).is_some());
}

#[test]
fn an_auto_plan_that_cannot_fit_is_not_comparable() {
    // the live counter doubled leaves no room for `basket_size`'s auto
    // noise: DP011 without a total, so no claim to compare
    let t = example("retail-mixed");
    let a = dpplan_check::analyze(&edit(&t, "sigma 1500", "sigma 150"));
    assert!(a.report.as_ref().unwrap().total.is_none());
    assert!(comparable(&a).is_none());
}

#[test]
fn auto_noise_absorbs_a_change_within_the_tolerance() {
    // `noise … auto` refills the budget: more releases of another query
    // leave the plan's ε where it was (up to the solver's precision), so it
    // is not an increase; the leave-one-in figures show the two moves
    let t = example("retail-mixed");
    let d = run(&t, &edit(&t, "for 4 weeks", "for 8 weeks"));
    let (o, n) = (
        d.guarantee.old_epsilon.unwrap(),
        d.guarantee.new_epsilon.unwrap(),
    );
    assert!((n - o).abs() <= o * SAME_EPSILON, "{o} {n}");
    assert!(!d.verdict.increase, "{}", d.verdict.summary);
    let up = d
        .queries
        .iter()
        .find(|q| q.name == "items_by_store")
        .unwrap();
    let down = d.queries.iter().find(|q| q.name == "basket_size").unwrap();
    assert!(up.leave_one_in.as_ref().unwrap().change.unwrap() > 0.0);
    assert!(down.leave_one_in.as_ref().unwrap().change.unwrap() < 0.0);
    assert!(larger(1.0 + 2e-9, 1.0) && !larger(1.0 + 1e-10, 1.0));
}

/// A cumulative count's schedule doubled: one more level of the tree (a
/// row in 10 nodes instead of 9), about twice the nodes, ε up — the diff
/// shows the releases, the norms, the nodes and the derivation's levels.
#[test]
fn a_cumulative_counts_doubled_schedule_adds_a_tree_level() {
    let t = std::fs::read_to_string(format!(
        "{}/../../examples/signups/signups.dpplan",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    // the Laplace tree at a fixed scale: with `epsilon 1` its b follows Δ₁,
    // and its ε, spread over one more level of coordinates by its shift
    // shape, would fall by more than the Gaussian tree's rises
    .replace("noise laplace epsilon 1", "noise laplace scale 18");
    let longer = t.replace("until 2027-01-01", "until 2027-12-31");
    let d = run(&t, &longer);
    assert!(d.verdict.increase);
    let q = d
        .queries
        .iter()
        .find(|q| q.name == "running_signups")
        .unwrap();
    assert!(q
        .changes
        .iter()
        .any(|c| c.field == "releases" && c.old == json!(365) && c.new == json!(729)));
    let p = &q.parts[0];
    let change = |f: &str| p.changes.iter().find(|c| c.field == f).unwrap().clone();
    // rows_per_unit 2 packed in one slot: 2 per level, 9 → 10 levels
    assert_eq!(
        (change("l1").old, change("l1").new),
        (json!(18.0), json!(20.0))
    );
    assert_eq!(
        (change("coords").old, change("coords").new),
        (json!(724), json!(1452))
    );
    assert!(p.derivation_added.iter().any(|l| l.contains("10 levels")));
    assert!(p.derivation_removed.iter().any(|l| l.contains("9 levels")));
    // ε alone rises with one level, but far less than fresh releases would
    let (o, n) = (q.epsilon_alone.old.unwrap(), q.epsilon_alone.new.unwrap());
    assert!(n > o && n < 1.1 * o, "{o} → {n}");
    // negative control: the same plan against itself changes nothing
    assert!(run(&t, &t).identical);
}

/// A `release after` delay added, changed or removed is a change of the
/// query (`release_after`, in words) and of nothing it costs: the same ε,
/// no increase, no part changed. Negative control: the same text twice is
/// identical.
#[test]
fn a_changed_release_delay_is_a_query_change_of_no_epsilon() {
    let t = example("ride-sharing");
    let delayed = edit(
        &t,
        "    window 1 hour\n",
        "    window 1 hour\n    release after 2 hours\n",
    );
    let later = edit(
        &delayed,
        "release after 2 hours",
        "release after 180 minutes",
    );
    for (old, new, was, now) in [
        (&t, &delayed, json!(null), json!("2 hours")),
        (&delayed, &later, json!("2 hours"), json!("3 hours")),
        (&later, &t, json!("3 hours"), json!(null)),
    ] {
        let d = run(old, new);
        assert!(!d.identical && !d.verdict.increase && !d.verdict.contract_changed);
        assert_eq!(d.guarantee.change, Some(0.0));
        assert_eq!(d.queries.len(), 1, "{:#?}", d.queries);
        let q = &d.queries[0];
        assert_eq!(q.name, "hourly_district_trips");
        assert_eq!(q.status, Status::Changed);
        assert_eq!(
            q.changes,
            [Change {
                field: "release_after".into(),
                old: was,
                new: now,
            }]
        );
        assert!(q.parts.is_empty() && q.leave_one_in.is_none());
        assert_eq!(q.epsilon_alone.old, q.epsilon_alone.new);
    }
    // the same delay written in other units is no change
    let same = edit(
        &delayed,
        "release after 2 hours",
        "release after 7200 seconds",
    );
    assert!(run(&delayed, &same).identical);
    assert!(run(&delayed, &delayed).identical);
}

/// `postprocess` steps added, reordered or removed are a change of the
/// query and of nothing it costs (post-processing is free).
#[test]
fn a_changed_postprocess_is_a_query_change_of_no_epsilon() {
    let t = example("ride-sharing");
    let none = edit(&t, "    postprocess nonnegative, round\n", "");
    let swapped = edit(
        &t,
        "postprocess nonnegative, round",
        "postprocess round, nonnegative",
    );
    for (old, new, was, now) in [
        (&none, &t, json!(null), json!(["nonnegative", "round"])),
        (
            &t,
            &swapped,
            json!(["nonnegative", "round"]),
            json!(["round", "nonnegative"]),
        ),
        (&t, &none, json!(["nonnegative", "round"]), json!(null)),
    ] {
        let d = run(old, new);
        assert!(!d.identical && !d.verdict.increase && !d.verdict.contract_changed);
        assert_eq!(d.guarantee.change, Some(0.0));
        assert_eq!(d.queries.len(), 1, "{:#?}", d.queries);
        let q = &d.queries[0];
        assert_eq!(q.name, "daily_riders_by_city");
        assert_eq!(
            q.changes,
            [Change {
                field: "postprocess".into(),
                old: was,
                new: now,
            }]
        );
        assert!(q.parts.is_empty());
        assert_eq!(q.epsilon_alone.old, q.epsilon_alone.new);
    }
    assert!(run(&t, &t).identical);
}

/// A top-k asked for one more key: a rank added, each rank's share of ε
/// smaller (scale up), the derivation unchanged; the rows bound loosened:
/// every rank's sensitivity moves; with `epsilon` fixed the scale follows
/// (the top-k's ε the same, its count error worse, the contract changed;
/// the example's Gaussian histogram, at a fixed σ, costs more).
#[test]
fn a_top_k_with_another_rank_or_a_looser_bound() {
    let t = example("news-sections");
    let more = edit(&t, "top(reads by section, 3)", "top(reads by section, 4)");
    let d = run(&t, &more);
    assert_eq!(d.queries.len(), 1, "{:#?}", d.queries);
    let q = &d.queries[0];
    assert_eq!(q.name, "top_sections_weekly");
    let roles: Vec<(&str, Status)> = q
        .parts
        .iter()
        .map(|p| (p.role.as_str(), p.status))
        .collect();
    assert_eq!(
        roles,
        [
            ("top 1", Status::Changed),
            ("top 2", Status::Changed),
            ("top 3", Status::Changed),
            ("top 4", Status::Added)
        ]
    );
    for p in &q.parts[..3] {
        assert!(
            p.derivation_added.is_empty() && p.derivation_removed.is_empty(),
            "{p:#?}"
        );
        assert!(p.changes.iter().any(|c| c.field == "scale"), "{p:#?}");
    }
    let looser = edit(&t, "rows_per_group 4", "rows_per_group 5");
    let d = run(&t, &looser);
    assert!(
        d.verdict.contract_changed && d.verdict.accuracy_worse,
        "{:#?}",
        d.verdict
    );
    let weekly = d
        .queries
        .iter()
        .find(|q| q.name == "top_sections_weekly")
        .unwrap();
    assert_eq!(weekly.epsilon_alone.old, weekly.epsilon_alone.new);
    assert!(weekly
        .parts
        .iter()
        .all(|p| p.changes.iter().any(|c| c.field == "l1")));
    assert!(weekly
        .parts
        .iter()
        .all(|p| p.changes.iter().any(|c| c.field == "scale")));
}

/// The issue's example: `auto` noise refills the budget, so ε barely moves,
/// while a loosened clamp and `2 times` multiply a sum's σ.
const FARES: &str = r#"plan "fares" {
  privacy {
    unit user by rider_id
    adjacency add_remove
    budget epsilon 1 delta 1e-6
    accountant best
  }
  dataset trips {
    source "trips.csv"
    column rider_id : id
    column city : category { "a", "b" }
    column fare : float in [0, 200000]
    contribution {
      rows_per_unit 10
    }
  }
  query total_fares {
    sum(trips.fare)
    noise gaussian auto
    schedule once
  }
  query rides {
    count(trips)
    noise gaussian auto
    schedule once
  }
}
"#;

fn fares_loosened() -> String {
    edit(
        &edit(FARES, "[0, 200000]", "[0, 500000]"),
        "schedule once",
        "schedule 2 times",
    )
}

#[test]
fn an_accuracy_regression_is_flagged_with_its_ratio() {
    let (o, n) = (checked(FARES), checked(&fares_loosened()));
    let d = diff("old", &o, "new", &n);
    let a = d
        .accuracy
        .iter()
        .find(|a| a.query == "total_fares")
        .expect("the sum's noise changed");
    let (os, ns) = (
        o.queries[0].parts[0].noise_std,
        n.queries[0].parts[0].noise_std,
    );
    // the checker's own figures, and the ratio of the two
    assert_eq!(a.noise_std.old, Some(os));
    assert_eq!(a.noise_std.new, Some(ns));
    assert_eq!(a.std_ratio, Some(ns / os));
    // Gaussian: the 95 % half-width is z₀.₉₇₅·σ on both sides, so its
    // ratio is σ's
    let z = 1.959_963_984_540_054;
    assert!((a.ci95_half_width.old.unwrap() - z * os).abs() <= 1e-9 * z * os);
    assert!((a.ci95_ratio.unwrap() - ns / os).abs() < 1e-12);
    // the sensitivity ×2.5 and a second release: σ nearly triples, while ε
    // stays at the budget
    assert!(ns / os > 2.5 && ns / os < 3.6, "{}", ns / os);
    assert!(a.worse && d.verdict.accuracy_worse);
    assert!(!d.verdict.increase);
    assert!(d.verdict.summary.contains("accuracy is WORSE: total_fares"));
    // the clamp is part of the contract
    assert!(d.verdict.contract_changed);
    assert!(d
        .contract
        .iter()
        .any(|c| c.field == "dataset trips: column fare: bounds" && !c.breaks_comparison));
    // negative control: under a limit above the ratio, not worse
    let lax = diff_with_limit("old", &o, "new", &n, 4.0);
    assert!(!lax.verdict.accuracy_worse);
    assert!(lax.accuracy.iter().all(|a| !a.worse));
}

#[test]
fn a_change_that_improves_accuracy_is_not_a_regression() {
    // a tighter clamp: the sum's noise shrinks, the count's grows by less
    // than nothing (the budget is shared differently)
    let tighter = edit(FARES, "[0, 200000]", "[0, 100000]");
    let d = run(FARES, &tighter);
    let sum = d
        .accuracy
        .iter()
        .find(|a| a.query == "total_fares")
        .unwrap();
    assert!(sum.std_ratio.unwrap() < 1.0 && !sum.worse);
    // the clamp is still a contract change
    assert!(d.verdict.contract_changed);
    // nothing changed in the noise: no accuracy entry at all
    let same = run(
        FARES,
        &edit(FARES, "source \"trips.csv\"", "source \"t.csv\""),
    );
    assert!(same.accuracy.is_empty() && !same.verdict.accuracy_worse);
    assert!(!same.verdict.contract_changed, "{:?}", same.contract);
}

#[test]
fn every_dataset_bound_is_part_of_the_contract() {
    for (from, to, field) in [
        (
            "rows_per_unit 10",
            "rows_per_unit 11",
            "dataset trips: rows_per_unit",
        ),
        (
            "[0, 200000]",
            "[0, 200001]",
            "dataset trips: column fare: bounds",
        ),
        (
            "{ \"a\", \"b\" }",
            "{ \"a\", \"b\", \"c\" }",
            "dataset trips: column city: domain",
        ),
    ] {
        let d = run(FARES, &edit(FARES, from, to));
        assert!(d.verdict.contract_changed, "{field}");
        assert!(
            d.contract.iter().any(|c| c.field == field),
            "{field}: {:?}",
            d.contract
        );
    }
}

/// A cumulative count switched from the tree to the factorization: the
/// diff names the mechanism, the L2 falls (2 × 3 → 2 × 1.7158), and so
/// does ε (a decrease); switching back is an increase (negative control).
#[test]
fn a_cumulative_count_switched_to_the_factorization() {
    let t = std::fs::read_to_string(format!(
        "{}/../../examples/signups/signups.dpplan",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let f = t.replace(
        "    cumulative count(signups)\n    noise gaussian sigma 40\n",
        "    cumulative count(signups)\n    mechanism factorization\n    noise gaussian sigma 40\n",
    );
    assert_ne!(t, f);
    let d = run(&t, &f);
    assert!(!d.verdict.increase);
    let q = d
        .queries
        .iter()
        .find(|q| q.name == "running_signups")
        .unwrap();
    assert!(
        q.changes.iter().any(|c| c.field == "cumulative_mechanism"
            && c.old == json!("tree")
            && c.new == json!("factorization")),
        "{:#?}",
        q.changes
    );
    let l2 = q.parts[0].changes.iter().find(|c| c.field == "l2").unwrap();
    assert_eq!(l2.old, json!(6.0));
    let new = l2.new.as_f64().unwrap();
    assert!((new - 2.0 * 1.715_83).abs() < 1e-4, "{new}");
    assert!(run(&f, &t).verdict.increase);
}
