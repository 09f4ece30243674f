//! Cumulative counts: the whole tree accounted as one vector release,
//! against independent formulas (the tree's L2 summed here over the
//! released nodes listed one by one, then the exact Gaussian mechanism's
//! curve, or ε = L1/b for Laplace), with negative controls (more rows per
//! unit: ε rises; T doubled: one more level; the same schedule as fresh
//! releases).

use crate::analyze;
use crate::test_support::{codes, gdp_epsilon, report, total};
use dpplan_diagnostics::Code;

const SIGNUPS: &str = "  dataset signups {\n    column user_id : id\n    column signed_up_at : time\n    column plan : category { \"free\", \"pro\" }\n    column amount : float in [0, 10]\n    contribution {\n      rows_per_unit 3\n    }\n  }";

fn plan(unit: &str, accountant: &str, dataset: &str, query: &str) -> String {
    format!(
        "plan \"c\" {{\n  privacy {{\n    unit {unit}\n    adjacency add_remove\n    budget epsilon 1000 delta 1e-6\n    accountant {accountant}\n  }}\n{dataset}\n{query}\n}}\n"
    )
}

fn query(agg: &str, noise: &str, schedule: &str) -> String {
    format!("  query running {{\n    {agg}\n    noise {noise}\n    schedule {schedule}\n  }}")
}

fn daily(noise: &str) -> String {
    query(
        "cumulative count(signups)",
        noise,
        "every 1 day for 365 days",
    )
}

/// The tree's (L1, L2) for `m` rows packed `r` per slot from slot 0,
/// summed over the released nodes listed one by one (every [a, a + 2ˡ)
/// ending at or before T).
fn packed_norms(t: u64, r: u64, m: u64) -> (f64, f64) {
    let slots: Vec<u64> = (0..t).map(|s| r.min(m.saturating_sub(s * r))).collect();
    let (mut l1, mut l2) = (0u64, 0u64);
    let mut len = 1;
    while len <= t {
        let mut a = 0;
        while a + len <= t {
            let v: u64 = slots[a as usize..(a + len) as usize].iter().sum();
            l1 += v;
            l2 += v * v;
            a += len;
        }
        len *= 2;
    }
    (l1 as f64, (l2 as f64).sqrt())
}

#[test]
fn a_gaussian_cumulative_count_is_one_release_over_the_tree() {
    let text = plan(
        "user by user_id",
        "gdp",
        SIGNUPS,
        &daily("gaussian sigma 10"),
    );
    let r = report(&text);
    let q = &r.queries[0];
    assert_eq!(q.releases, 365);
    assert_eq!(q.accounted_releases, 1);
    let spec = q.spec.as_ref().unwrap().cumulative.as_ref().unwrap();
    assert_eq!((spec.levels, spec.nodes), (9, 724));
    assert_eq!(spec.column, "signed_up_at");
    let (l1, l2) = packed_norms(365, 3, 3);
    assert_eq!(q.l1, l1);
    assert!((q.l2 - l2).abs() < 1e-12, "{} {l2}", q.l2);
    let eps = r.total.as_ref().unwrap().epsilon;
    let want = gdp_epsilon(l2 / 10.0, 1e-6);
    assert!(eps >= want * (1.0 - 1e-9), "{eps} < {want}");
    assert!(eps <= want * (1.0 + 1e-6), "{eps} vs {want}");

    // negative control: one more row per unit, ε rises to the new norm's
    let more = total(&text.replace("rows_per_unit 3", "rows_per_unit 4"));
    let want_more = gdp_epsilon(packed_norms(365, 4, 4).1 / 10.0, 1e-6);
    assert!(more > eps);
    assert!((more - want_more).abs() <= want_more * 1e-6);

    // negative control: the same schedule as 365 fresh counts of the whole
    // history (c = 3 each): μ = √365 · 3 / 10
    let fresh = total(&text.replace("cumulative count", "count"));
    let want_fresh = gdp_epsilon(365f64.sqrt() * 3.0 / 10.0, 1e-6);
    assert!((fresh - want_fresh).abs() <= want_fresh * 1e-6);
    assert!(fresh > 3.0 * eps, "{fresh} vs {eps}");
}

#[test]
fn a_laplace_tree_costs_l1_over_b_and_doubling_t_adds_a_level() {
    let text = plan(
        "row",
        "basic",
        SIGNUPS,
        &query(
            "cumulative count(signups)",
            "laplace scale 9",
            "every 1 day for 256 days",
        ),
    );
    let q = &report(&text).queries[0];
    // a row lies in one node per level: ⌈log₂ 256⌉ + 1 = 9
    assert_eq!((q.l1, q.l2), (9.0, 3.0));
    let eps = total(&text);
    assert!((eps - 1.0).abs() < 1e-12, "{eps}");
    // T doubled: one more level, ε = 10/9
    let doubled = text.replace("for 256 days", "for 512 days");
    assert_eq!(report(&doubled).queries[0].l1, 10.0);
    assert!((total(&doubled) - 10.0 / 9.0).abs() < 1e-12);
    // T = 365 is not a power of two: its top level never closes, 9 levels
    let year = text.replace("for 256 days", "for 365 days");
    assert_eq!(report(&year).queries[0].l1, 9.0);
}

#[test]
fn the_derivation_compares_with_fresh_releases_and_gives_each_slots_error() {
    let text = plan(
        "user by user_id",
        "gdp",
        SIGNUPS,
        &daily("gaussian sigma 10"),
    );
    let r = report(&text);
    let steps = r.queries[0].parts[0].derivation.join("\n");
    assert!(steps.contains("724 dyadic nodes"), "{steps}");
    assert!(
        steps.contains("as fresh releases: 365 running totals"),
        "{steps}"
    );
    assert!(
        steps.contains("error of the running total at slot t"),
        "{steps}"
    );
    assert!(steps.contains("95 %"), "{steps}");
    // the worst slot of a year is 255 (eight set bits, the deepest)
    assert!(steps.contains("at slot 255"), "{steps}");
    // slot 1: one leaf, sd = σ
    assert!(steps.contains("standard deviation 10 at slot 1"), "{steps}");
    // the table's figures are the worst running total's, not one node's:
    // between σ and the plain binary mechanism's √8·σ at slot 255
    let p = &r.queries[0].parts[0];
    let v = dpplan_mechanisms::tree::node_variances(100.0, 9);
    let want = dpplan_mechanisms::tree::total_variance(&v, 255).sqrt();
    assert_eq!(p.noise_std, want);
    assert!(p.noise_std > 10.0 && p.noise_std < 8f64.sqrt() * 10.0);
    assert!((p.ci95_half_width - 1.959_963_984_540_054 * want).abs() < 1e-12);
}

#[test]
fn noise_from_epsilon_is_calibrated_on_the_tree() {
    let text = plan("row", "basic", SIGNUPS, &daily("laplace epsilon 1"));
    let r = report(&text);
    // pure ε, one release: b = L1 / ε = 9
    assert!((r.total.as_ref().unwrap().epsilon - 1.0).abs() < 1e-9);
    assert!((r.queries[0].mechanism.scale.unwrap() - 9.0).abs() < 1e-9);
}

#[test]
fn dp041_rules() {
    let time_less = SIGNUPS.replace("column signed_up_at : time\n", "");
    let cases = [
        (
            query(
                "cumulative sum(signups.amount)",
                "gaussian sigma 10",
                "every 1 day for 30 days",
            ),
            SIGNUPS.to_string(),
        ),
        (
            query(
                "cumulative count(signups by plan)",
                "gaussian sigma 10",
                "every 1 day for 30 days",
            ),
            SIGNUPS.to_string(),
        ),
        (
            query("cumulative count(signups)", "gaussian sigma 10", "once"),
            SIGNUPS.to_string(),
        ),
        (daily("discrete_gaussian sigma 10"), SIGNUPS.to_string()),
        (daily("gaussian sigma 10"), time_less),
        (
            daily("gaussian sigma 10").replace("schedule", "window 1 day\n    schedule"),
            SIGNUPS.to_string(),
        ),
        (
            daily("gaussian sigma 10").replace("schedule", "accuracy std <= 50\n    schedule"),
            SIGNUPS.to_string(),
        ),
        (
            query(
                "cumulative count(signups)",
                "gaussian sigma 10",
                "every 1 second for 30 days",
            ),
            SIGNUPS.to_string(),
        ),
    ];
    for (q, ds) in cases {
        let text = plan("user by user_id", "gdp", &ds, &q);
        let c = codes(&text);
        assert!(c.contains(&Code::Cumulative), "{q}\n{c:?}");
        assert!(analyze(&text).report.unwrap().total.is_none());
    }
    // near miss: a filtered cumulative count checks clean
    let ok = plan(
        "user by user_id",
        "gdp",
        SIGNUPS,
        &daily("gaussian sigma 10")
            .replace("count(signups)", "count(signups where plan == \"pro\")"),
    );
    assert!(codes(&ok).is_empty(), "{:?}", codes(&ok));
}

/// Under `replace` a unit's rows are exchanged for another placement. A
/// daily year's nodes are six perfect trees (256, 64, 32, 8, 4 and 1
/// days); with M = 3 rows in one slot, x in the first tree (9 levels) and
/// y in the second (7 levels) give L1 = 9·3 + 7·3 = 48 and L2² = 9·9 +
/// 7·9 = 144, and no pair does more (tree.rs, tree by tree; the levels
/// alone gave 8·6 + 3 = 51, doubling 54). A row-level unit's moved row:
/// 9 + 7 = 16 (the levels alone: 2·8 + 1).
#[test]
fn replace_is_bounded_tree_by_tree() {
    let text = plan(
        "user by user_id",
        "basic",
        SIGNUPS,
        &daily("laplace scale 100"),
    );
    let ar = &report(&text).queries[0];
    let rp = &report(&text.replace("add_remove", "replace")).queries[0];
    // 9 levels of M = 3 rows (one node holds them all)
    assert_eq!(ar.l1, 27.0);
    assert_eq!(rp.l1, 9.0 * 3.0 + 7.0 * 3.0);
    assert!((rp.l2 - 12.0).abs() < 1e-12, "{}", rp.l2);
    // negative controls: the level-by-level bound and the doubled one are
    // above
    assert!(rp.l1 < 8.0 * 6.0 + 3.0 && rp.l2 < (8.0 * 18.0 + 9.0f64).sqrt());
    assert!(rp.l1 < 2.0 * ar.l1 && rp.l2 < 2f64.sqrt() * ar.l2);
    // a row-level count is public under replace without a tree (L1 = 0),
    // but with one a replaced row can move to another slot
    let row =
        plan("row", "basic", SIGNUPS, &daily("laplace scale 100")).replace("add_remove", "replace");
    assert_eq!(report(&row).queries[0].l1, 16.0);
}

/// `mechanism factorization`: the L2 of r rows in each of the first
/// ⌈M/r⌉ slots through E = √A, summed here from binom(2k, k)/4ᵏ computed
/// as a float product (independently of the mechanisms crate's integer
/// recurrence), then the exact Gaussian mechanism's curve.
fn factorized_l2(t: usize, r: f64, m: usize) -> f64 {
    let mut c = vec![1.0f64; t];
    for k in 1..t {
        c[k] = c[k - 1] * (2 * k - 1) as f64 / (2 * k) as f64;
    }
    (0..t)
        .map(|i| {
            let s: f64 = (0..=i.min(m - 1)).map(|j| c[i - j]).sum();
            (r * s) * (r * s)
        })
        .sum::<f64>()
        .sqrt()
}

fn factorized(noise: &str) -> String {
    format!(
        "  query running {{\n    cumulative count(signups)\n    mechanism factorization\n    noise {noise}\n    schedule every 1 day for 365 days\n  }}"
    )
}

#[test]
fn a_factorized_cumulative_count_is_one_release_of_t_coordinates() {
    let text = plan(
        "user by user_id",
        "gdp",
        SIGNUPS,
        &factorized("gaussian sigma 10"),
    );
    let r = report(&text);
    let q = &r.queries[0];
    assert_eq!((q.releases, q.accounted_releases), (365, 1));
    let spec = q.spec.as_ref().unwrap().cumulative.as_ref().unwrap();
    assert_eq!((spec.levels, spec.nodes), (1, 365));
    assert_eq!(
        spec.mechanism,
        dpplan_vocab::CumulativeMechanism::Factorization
    );
    // rows_per_unit 3, rows_per_window 3 (undeclared): one slot of 3 rows
    let l2 = factorized_l2(365, 3.0, 1);
    assert!(q.l2 >= l2 && q.l2 - l2 < 1e-9 * l2, "{} vs {l2}", q.l2);
    let eps = r.total.as_ref().unwrap().epsilon;
    let want = gdp_epsilon(l2 / 10.0, 1e-6);
    assert!(eps >= want * (1.0 - 1e-9), "{eps} < {want}");
    assert!(eps <= want * (1.0 + 1e-6), "{eps} vs {want}");
    // the derivation compares it with the tree at the same privacy
    let steps = &q.parts[0].derivation;
    assert!(
        steps
            .iter()
            .any(|s| s.contains("the binary tree at the same privacy")),
        "{steps:#?}"
    );

    // negative controls: one more row per unit raises ε; the tree at the
    // same σ claims more; rows spread over slots (rows_per_window 1) are
    // bounded by the first three slots
    let more = total(&text.replace("rows_per_unit 3", "rows_per_unit 4"));
    assert!(more > eps);
    assert!((more - gdp_epsilon(factorized_l2(365, 4.0, 1) / 10.0, 1e-6)).abs() < 1e-6 * more);
    let tree = total(&text.replace("    mechanism factorization\n", ""));
    assert!(tree > 1.5 * eps, "{tree} vs {eps}");
    let spread = report(&text.replace(
        "rows_per_unit 3\n",
        "rows_per_unit 3\n      rows_per_window 1\n",
    ));
    let l2_spread = factorized_l2(365, 1.0, 3);
    assert!((spread.queries[0].l2 - l2_spread).abs() < 1e-9 * l2_spread);
    assert!(l2_spread < l2, "three rows in one slot are the worst");

    // replace: at most √2 × add/remove
    let rp = report(&text.replace("add_remove", "replace"));
    let want_rp = 2f64.sqrt() * l2;
    assert!(rp.queries[0].l2 >= want_rp && rp.queries[0].l2 < want_rp * (1.0 + 1e-9));
}

#[test]
fn the_factorization_is_refused_where_it_does_not_apply() {
    // Laplace noise: its L1 grows like √T
    let laplace = plan(
        "user by user_id",
        "basic",
        SIGNUPS,
        &factorized("laplace scale 10"),
    );
    assert_eq!(codes(&laplace), vec![Code::Cumulative]);
    // not a cumulative count
    let plain = plan(
        "user by user_id",
        "basic",
        SIGNUPS,
        "  query q {\n    count(signups)\n    mechanism factorization\n    noise gaussian sigma 10\n    schedule once\n  }",
    );
    assert_eq!(codes(&plain), vec![Code::Cumulative]);
    // twice
    let twice = plan(
        "user by user_id",
        "basic",
        SIGNUPS,
        &factorized("gaussian sigma 10").replace(
            "mechanism factorization\n",
            "mechanism factorization\n    mechanism tree\n",
        ),
    );
    assert_eq!(codes(&twice), vec![Code::Duplicate]);
    // `mechanism tree` is the default: the same claim as none
    let explicit = plan(
        "user by user_id",
        "gdp",
        SIGNUPS,
        &factorized("gaussian sigma 10").replace("factorization", "tree"),
    );
    let default = plan(
        "user by user_id",
        "gdp",
        SIGNUPS,
        &daily("gaussian sigma 10"),
    );
    assert_eq!(total(&explicit), total(&default));
}

/// More slots than the factorization takes (65,536) are refused with the
/// reason; the tree takes them (negative control).
#[test]
fn a_factorization_over_too_many_slots_is_refused() {
    let minutely = |m: &str| {
        plan(
            "row",
            "gdp",
            SIGNUPS,
            &format!("  query running {{\n    cumulative count(signups)\n{m}    noise gaussian sigma 10\n    schedule every 1 minute for 46 days\n  }}"),
        )
    };
    let a = analyze(&minutely("    mechanism factorization\n"));
    let refusal = a
        .diagnostics
        .iter()
        .find(|d| d.code == Code::Cumulative)
        .expect("DP041");
    assert!(
        refusal.message.contains("at most 65536 slots"),
        "{}",
        refusal.message
    );
    assert!(!codes(&minutely("")).contains(&Code::Cumulative));
}
