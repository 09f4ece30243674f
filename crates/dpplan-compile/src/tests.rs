use super::*;
use dpplan_vocab::NoiseKind;

fn example(name: &str) -> String {
    let path = format!(
        "{}/../../examples/{name}/{name}.dpplan",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

const EXAMPLES: [&str; 6] = [
    "app-events",
    "census",
    "repeated-release",
    "retail-mixed",
    "ride-sharing",
    "web-analytics",
];

#[test]
fn every_example_compiles_byte_identically() {
    for name in EXAMPLES {
        let text = example(name);
        let a = to_json(&compile(&text).unwrap_or_else(|e| panic!("{name}: {e}")));
        let b = to_json(&compile(&text).unwrap());
        assert_eq!(a, b, "{name}");
        let loaded = load(&a).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(to_json(&loaded), a, "{name}: load → save is the identity");
    }
}

#[test]
fn plan_records_mechanisms_and_bounding() {
    let p = compile(&example("web-analytics")).unwrap();
    let b = &p.body;
    assert_eq!(b.privacy.unit, UnitKind::User);
    assert_eq!(b.privacy.unit_id.as_deref(), Some("user_id"));
    let visits = &b.datasets["visits"];
    assert_eq!(visits.bounding.rows_per_unit, Some(5));
    assert_eq!(visits.bounding.groups_per_unit, Some(3));
    let daily = b.release("daily_visits").unwrap();
    assert_eq!(daily.schedule.slots, 365);
    assert_eq!(daily.schedule.every_seconds, Some(86_400.0));
    assert_eq!(daily.parts[0].mechanism, Some(NoiseKind::Laplace));
    assert_eq!(daily.parts[0].scale, Some(250.0));
    assert_eq!(daily.parts[0].l1, 5.0);
    assert!(daily.parts[0].grid_exponent < -30);
    let mean = b.release("mean_time").unwrap();
    assert_eq!(mean.parts.len(), 2);
    assert_eq!(mean.parts[0].statistic, Statistic::Sum);
    assert_eq!(mean.parts[1].statistic, Statistic::Count);
    let mix = b.release("page_mix").unwrap();
    assert_eq!(
        mix.aggregation.groups.as_ref().unwrap(),
        &vec!["home".to_string(), "search".into(), "checkout".into()]
    );
    assert_eq!(b.publishes[0].source, "daily_visits");
    assert!(p.body.privacy.total.epsilon <= 4.0);
}

#[test]
fn a_plan_with_errors_is_not_compiled() {
    let text = example("web-analytics").replace("rows_per_unit 5", "");
    assert!(matches!(compile(&text), Err(CompileError::Diagnostics(_))));
}

#[test]
fn hand_edits_are_refused() {
    let p = compile(&example("web-analytics")).unwrap();
    let json = to_json(&p);
    // 1. edit a value, keep the hash: the hash check fails.
    let edited = json.replace("\"scale\": 250.0", "\"scale\": 2.5");
    assert_ne!(edited, json);
    assert!(
        matches!(load(&edited), Err(LoadError::HashMismatch { .. })),
        "{:?}",
        load(&edited)
    );
    // 2. edit a value and recompute the hash: the recompilation check fails.
    let mut forged: ExecutablePlan = serde_json::from_str(&edited).unwrap();
    forged.body_sha256 = body_hash(&forged.body);
    let err = load(&to_json(&forged)).unwrap_err();
    assert!(matches!(err, LoadError::Recompiled(_)), "{err:?}");
    assert!(err.to_string().contains("recompile"));
    // 3. edit the embedded source without its hash.
    let mut forged: ExecutablePlan = serde_json::from_str(&json).unwrap();
    forged.body.source.text = forged.body.source.text.replace("scale 250", "scale 2.5");
    forged.body_sha256 = body_hash(&forged.body);
    assert_eq!(
        load(&to_json(&forged)).unwrap_err(),
        LoadError::SourceHashMismatch
    );
    // 4. an unknown field is refused.
    let extra = json.replacen("\"format_version\"", "\"x\": 1, \"format_version\"", 1);
    assert!(matches!(load(&extra), Err(LoadError::NotJson(_))));
    // 5. a wrong version.
    let ours = format!("\"format_version\": {FORMAT_VERSION}");
    for other in [1, READS[0] - 1, FORMAT_VERSION + 1] {
        let v = json.replacen(&ours, &format!("\"format_version\": {other}"), 1);
        assert_ne!(v, json);
        assert!(matches!(load(&v), Err(LoadError::WrongFormat(_))));
    }
    // 6. a version-5 file (no `policy`) is still read, as compiled under
    // no policy; a version-5 file with a `policy` is not one.
    let v5 =
        json.replacen(&ours, "\"format_version\": 5", 1)
            .replacen(",\n  \"policy\": null", "", 1);
    assert!(!v5.contains("\"policy\""), "{v5}");
    let old = load(&v5).unwrap();
    assert_eq!((old.format_version, old.policy), (5, None));
    let mut with: ExecutablePlan = serde_json::from_str(&json).unwrap();
    with.format_version = 5;
    with.policy = Some(PolicyRecord {
        sha256: "ab".repeat(32),
        files: vec!["dpplan.toml".into()],
        rules: vec!["DP100".into()],
        plan: "p.dpplan".into(),
    });
    assert!(matches!(
        load(&to_json(&with)),
        Err(LoadError::WrongFormat(_))
    ));
    // the same record in versions 6 to 8 is read back as written
    for v in [6, 7, FORMAT_VERSION] {
        with.format_version = v;
        assert_eq!(load(&to_json(&with)).unwrap().policy, with.policy);
    }
    // a version-6 runtime must not meet users per cell (version 7), a
    // version-7 one a top-k (version 8), a version-8 one a sampled dataset
    // (version 9), a version-9 one a factorized cumulative count (version
    // 10), a version-10 one permute-and-flip (version 11,
    // `permute_and_flip_is_version_11`)
    assert_eq!(FORMAT_VERSION, 11);
    let grouped = compile("plan \"u\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 1\n  }\n  dataset d {\n    source \"d.csv\"\n    column uid : id\n    column g : category { \"a\", \"b\" }\n    contribution { rows_per_unit 3 groups_per_unit 1 }\n  }\n  query users {\n    count(distinct d.uid by g)\n    noise laplace scale 1\n    schedule once\n  }\n}\n").unwrap();
    let part = &grouped.body.releases[0].parts[0];
    assert_eq!(
        part.statistic,
        dpplan_vocab::Statistic::GroupedDistinctCount
    );
    assert_eq!((part.l1, part.l2), (1.0, 1.0));
    assert!(to_json(&grouped).contains("\"grouped_distinct_count\""));
}

/// A sampled dataset: its rate on the dataset and on each release that
/// reads it (the ledger composes the release's parts as sampled); a file
/// that says otherwise, or an older version that carries it, is refused.
#[test]
fn a_sampled_dataset_is_version_9_and_its_releases_carry_the_rate() {
    let src = "plan \"s\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 1 delta 1e-6\n  }\n  dataset d {\n    source \"d.csv\"\n    sample units 2%\n    column uid : id\n    contribution { rows_per_unit 3 }\n  }\n  query n {\n    count(d)\n    noise gaussian sigma 10\n    schedule every 1 day for 30 days\n  }\n}\n";
    let plan = compile(src).unwrap();
    assert_eq!(plan.body.datasets["d"].sample, Some(0.02));
    assert_eq!(plan.body.releases[0].sample, Some(0.02));
    let json = to_json(&plan);
    assert!(load(&json).is_ok());
    // the release's rate must be its dataset's
    let mut off = plan.clone();
    off.body.releases[0].sample = Some(0.5);
    off.body_sha256 = dpplan_plan::body_hash(&off.body);
    assert!(matches!(
        load(&to_json(&off)),
        Err(LoadError::WrongFormat(_))
    ));
    // a version-8 file has no sampled datasets
    let mut old = plan.clone();
    old.format_version = 8;
    assert!(matches!(
        load(&to_json(&old)),
        Err(LoadError::WrongFormat(_))
    ));
    // negative control: the same plan without sampling carries no field
    // (and costs ε ≈ 8.7: a larger budget)
    let plain = src
        .replace("    sample units 2%\n", "")
        .replace("epsilon 1 ", "epsilon 20 ");
    let plain = compile(&plain).unwrap();
    assert!(!to_json(&plain).contains("\"sample\""));
}

/// A factorized cumulative count: `mechanism: "factorization"` on its
/// `cumulative`, one level and T coordinates (format version 10); a
/// version-9 file that carries it is refused; the tree carries no field.
#[test]
fn a_factorized_count_is_version_10() {
    let src = "plan \"f\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 5 delta 1e-6\n  }\n  dataset d {\n    source \"d.csv\"\n    column at : time\n  }\n  query n {\n    cumulative count(d)\n    mechanism factorization\n    noise gaussian sigma 10\n    schedule every 1 day for 30 days\n  }\n}\n";
    let plan = compile(src).unwrap();
    let c = plan.body.releases[0].cumulative.as_ref().unwrap();
    assert_eq!(
        c.mechanism,
        dpplan_vocab::CumulativeMechanism::Factorization
    );
    assert_eq!((c.levels, c.nodes, c.slots), (1, 30, 30));
    let json = to_json(&plan);
    assert!(json.contains("\"mechanism\": \"factorization\""));
    assert!(load(&json).is_ok());
    let mut old = plan.clone();
    old.format_version = 9;
    assert!(matches!(
        load(&to_json(&old)),
        Err(LoadError::WrongFormat(_))
    ));
    // negative control: the tree writes no `mechanism`, and its levels
    let tree = compile(&src.replace("    mechanism factorization\n", "")).unwrap();
    let t = tree.body.releases[0].cumulative.as_ref().unwrap();
    assert_eq!((t.levels, t.nodes), (5, 56));
    let t_json = serde_json::to_value(t).unwrap();
    assert!(t_json.get("mechanism").is_none(), "{t_json}");
    assert_eq!(
        serde_json::to_value(c).unwrap()["mechanism"],
        "factorization"
    );
}

/// A top-k and a quantile chosen by permute-and-flip: each part's
/// `mechanism` is `permute_and_flip` (format version 11), with the scale
/// and sensitivity of the exponential mechanism's at the same ε; a
/// version-10 file that carries it is refused, one with the exponential
/// mechanism is not.
#[test]
fn permute_and_flip_is_version_11() {
    let src = "plan \"p\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 5\n  }\n  dataset d {\n    source \"d.csv\"\n    column page : category { \"a\", \"b\", \"c\" }\n    column x : int in [0, 100]\n  }\n  query t {\n    top(d by page, 2)\n    noise permute_and_flip epsilon 1\n    schedule once\n  }\n  query m {\n    quantile(d.x, 0.5)\n    candidates every 10\n    noise permute_and_flip epsilon 1\n    schedule once\n  }\n}\n";
    let plan = compile(src).unwrap();
    let kinds: Vec<_> = plan
        .body
        .releases
        .iter()
        .flat_map(|r| r.parts.iter().map(|p| (p.mechanism, p.scale)))
        .collect();
    let pf = Some(dpplan_vocab::NoiseKind::PermuteAndFlip);
    // ε 1 split over the top-k's two ranks (Δ = 1): b = 2; the median's
    // score moves by max(q, 1 − q) = 0.5: b = 0.5
    assert_eq!(
        kinds,
        vec![(pf, Some(2.0)), (pf, Some(2.0)), (pf, Some(0.5))]
    );
    let json = to_json(&plan);
    assert!(json.contains("\"permute_and_flip\""));
    assert!(load(&json).is_ok());
    let mut old = plan.clone();
    old.format_version = 10;
    assert!(matches!(
        load(&to_json(&old)),
        Err(LoadError::WrongFormat(_))
    ));
    // negative control: the exponential mechanism at the same ε, the same
    // scales, and a version-10 file of it is read
    let em = compile(&src.replace("permute_and_flip", "exponential")).unwrap();
    let em_scales: Vec<_> = em
        .body
        .releases
        .iter()
        .flat_map(|r| r.parts.iter().map(|p| p.scale))
        .collect();
    assert_eq!(em_scales, vec![Some(2.0), Some(2.0), Some(0.5)]);
    let mut old = em.clone();
    old.format_version = 10;
    assert!(load(&to_json(&old)).is_ok());
}

#[test]
fn grid_exponents() {
    // noise spans ≥ 2^40 steps
    assert_eq!(grid_exponent(1.0, None), -40);
    assert_eq!(grid_exponent(1500.0, None), 10 - 40);
    // a count stays on the integers
    assert_eq!(grid_exponent(1e30, None), 0);
    // one value fits in 62 bits
    assert_eq!(grid_exponent(1e-6, Some([0.0, 1e6])), 20 - 62);
}

/// The errors' texts, word for word (the CLI prints them).
#[test]
fn error_texts() {
    let text = example("web-analytics").replace("rows_per_unit 5", "");
    let e = compile(&text).unwrap_err();
    let CompileError::Diagnostics(a) = &e else {
        panic!("{e:?}")
    };
    let n = a.diagnostics.iter().filter(|d| d.is_error()).count();
    assert!(n > 0);
    assert_eq!(
        e.to_string(),
        format!("the plan has {n} error(s): it is not compiled")
    );
    for (e, want) in [
        (
            CompileError::NoTotal("why".into()),
            "the plan claims no total guarantee (why): it is not compiled",
        ),
        (
            CompileError::Unsupported("why".into()),
            "the runtime cannot execute this plan: why",
        ),
    ] {
        assert_eq!(e.to_string(), want);
    }
    for (e, want) in [
        (LoadError::NotJson("x".into()), "not an executable plan (invalid JSON: x)"),
        (LoadError::WrongFormat("x".into()), "not an executable plan of this version: x"),
        (
            LoadError::HashMismatch { stated: "s".into(), actual: "a".into() },
            "the plan was modified after compilation: its body hashes to a, not to the recorded s; recompile it with `dpplan compile`",
        ),
        (
            LoadError::SourceHashMismatch,
            "the plan's embedded source does not match its recorded SHA-256; recompile it with `dpplan compile`",
        ),
        (
            LoadError::Recompiled("x".into()),
            "the plan is not what `dpplan compile` produces from its source: x; recompile it",
        ),
    ] {
        assert_eq!(e.to_string(), want);
    }
}

/// A cumulative count compiles to a release with its tree (T, levels,
/// nodes, column, slot length, bounds), charged once: its whole schedule
/// costs what one release costs. Negative control: the same plan without
/// `cumulative` has no tree and its schedule costs 365 releases.
#[test]
fn a_cumulative_count_compiles_with_its_tree_charged_once() {
    let text = "plan \"c\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 10 delta 1e-6\n  }\n  dataset signups {\n    source \"signups.csv\"\n    column signed_up_at : time\n  }\n  query running {\n    cumulative count(signups)\n    noise laplace scale 9\n    schedule every 1 day for 365 days\n  }\n}\n";
    let plan = compile(text).unwrap();
    assert_eq!(plan.format_version, FORMAT_VERSION);
    let r = &plan.body.releases[0];
    let c = r.cumulative.as_ref().expect("the tree");
    // independent: K = ⌊log₂ 365⌋ + 1 = 9 (2⁸ = 256 ≤ 365 < 512), and the
    // nodes Σ_l ⌊365/2ˡ⌋ = 365+182+91+45+22+11+5+2+1
    let nodes: u64 = [365, 182, 91, 45, 22, 11, 5, 2, 1].iter().sum();
    assert_eq!((c.slots, c.levels, c.nodes), (365, 9, nodes));
    assert_eq!(c.column, "signed_up_at");
    assert_eq!(c.seconds, 86_400.0);
    assert_eq!((c.windows_per_unit, c.rows_per_window), (1, 1));
    assert!(r.window.is_none());
    // one row lies in one node per level: L1 = K = 9, ε = 9/9
    assert_eq!(r.parts[0].l1, 9.0);
    // (the best accountant may be a hair below the pure ε = 1 at δ)
    let tree_eps = r.cost_total.epsilon;
    assert!(
        tree_eps <= 1.0 + 1e-12 && tree_eps > 0.99,
        "{:?}",
        r.cost_total
    );
    assert_eq!(r.cost_total.epsilon, r.cost_per_release.epsilon);
    assert!(to_json(&plan).contains("\"cumulative\""));
    let again = load(&to_json(&plan)).unwrap();
    assert_eq!(again, plan);

    let fresh = compile(
        &text
            .replace("cumulative count", "count")
            .replace("epsilon 10", "epsilon 1000"),
    )
    .unwrap();
    let r = &fresh.body.releases[0];
    assert!(r.cumulative.is_none());
    assert!(!to_json(&fresh).contains("\"cumulative\""));
    // 365 fresh counts of L1 1 at b = 9: far above the tree's one release
    assert!(r.cost_total.epsilon > 10.0 * tree_eps, "{:?}", r.cost_total);
    assert!(
        r.cost_total.epsilon <= 365.0 / 9.0 + 1e-9,
        "{:?}",
        r.cost_total
    );
}

/// `release after <duration>` is the schedule's `release_after_seconds`,
/// and nothing else of the plan moves: the body with the delay is the body
/// without it but for that field and the embedded source. A plan without
/// it (every example) has no such field at all, so it compiles to the
/// bytes it compiled to before the field existed.
#[test]
fn release_after_is_in_the_schedule_and_absent_unless_stated() {
    for name in EXAMPLES {
        let json = to_json(&compile(&example(name)).unwrap());
        assert!(!json.contains("release_after"), "{name}");
    }
    let text = "plan \"w\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 10 delta 1e-6\n  }\n  dataset trips {\n    source \"trips.csv\"\n    column started_at : time\n  }\n  query hourly {\n    count(trips)\n    noise laplace scale 4\n    schedule every 1 hour for 7 days\n    window 1 hour\n  }\n  query running {\n    cumulative count(trips)\n    noise laplace scale 9\n    schedule every 1 day for 30 days\n  }\n}\n";
    let plain = compile(text).unwrap();
    let delayed_text = text
        .replace(
            "window 1 hour\n",
            "window 1 hour\n    release after 2 hours\n",
        )
        .replace(
            "for 30 days\n",
            "for 30 days\n    release after 1.5 minutes\n",
        );
    let delayed = compile(&delayed_text).unwrap();
    let delays: Vec<Option<f64>> = delayed
        .body
        .releases
        .iter()
        .map(|r| r.schedule.release_after_seconds)
        .collect();
    assert_eq!(delays, [Some(7200.0), Some(90.0)]);
    assert!(plain
        .body
        .releases
        .iter()
        .all(|r| r.schedule.release_after_seconds.is_none()));
    let json = to_json(&delayed);
    assert!(json.contains("\"release_after_seconds\": 7200.0"), "{json}");
    assert_eq!(load(&json).unwrap(), delayed);
    // the rest of the body is the plan's without the delay
    let mut body = delayed.body.clone();
    for r in &mut body.releases {
        r.schedule.release_after_seconds = None;
    }
    body.source = plain.body.source.clone();
    assert_eq!(body, plain.body);
    // a runtime that does not know the field refuses the plan: the
    // schedule is `deny_unknown_fields` (here: an unknown one next to it)
    let unknown = json.replace("\"release_after_seconds\"", "\"release_after_secs\"");
    assert!(matches!(load(&unknown), Err(LoadError::NotJson(_))));
}

/// A top-k: its `top` and its `top_k` parts, counted on the integer grid;
/// executable plan format 8.
#[test]
fn a_top_k_compiles_with_its_parts() {
    let top = compile("plan \"t\" {\n  privacy {\n    unit row\n    adjacency replace\n    budget epsilon 1\n  }\n  dataset d {\n    source \"d.csv\"\n    column g : category { \"a\", \"b\", \"c\" }\n  }\n  query best {\n    top(d by g, 2)\n    noise exponential scale 4\n    schedule once\n  }\n}\n").unwrap();
    let r = &top.body.releases[0];
    assert_eq!(
        r.aggregation.top,
        Some(TopK {
            k: 2,
            monotone: false
        })
    );
    assert!(r
        .parts
        .iter()
        .all(|p| p.statistic == dpplan_vocab::Statistic::TopK && p.grid_exponent == 0));
    let json = to_json(&top);
    assert!(json.contains("\"top_k\"") && json.contains("\"monotone\": false"));
    assert_eq!(load(&json).unwrap().body, top.body);
}

mod kept_slots {
    use dpplan_mechanisms::tree::{add_remove, TreeBounds};

    use dpplan_plan::{Cumulative, Window};

    fn tree(slots: u64, w: u64, r: u64) -> Cumulative {
        Cumulative {
            column: "t".into(),
            seconds: 86_400.0,
            slots,
            levels: 64 - slots.leading_zeros(),
            nodes: 0,
            windows_per_unit: w,
            rows_per_window: r,
            kept_slots: 0,
            mechanism: Default::default(),
        }
    }
    fn slot_window(c: &Cumulative, rows: Option<u64>) -> Window {
        Cumulative {
            kept_slots: c.kept_slots_for(rows),
            ..c.clone()
        }
        .slot_window()
    }

    /// Whatever a unit keeps under the enforced bounds (W′ slots, r rows
    /// each, so W′·r rows at most) has tree norms within the claim's, for
    /// every T ≤ 40, r ≤ 3, W ≤ T and R from r to W·r + 1 (the claim's
    /// norms are exact for their bounds, checked by brute force in
    /// dpplan-check). Negative control: the per-slot bounds alone (W slots
    /// of r rows) exceed the claim whenever R < W·r.
    #[test]
    fn the_enforced_slot_bounds_stay_within_the_claim() {
        let mut naive_exceeds = 0;
        for slots in 1..=40u64 {
            for r in 1..=3u64 {
                for w in 1..=slots {
                    for rows in r..=w * r + 1 {
                        let claim = add_remove(TreeBounds {
                            slots,
                            windows: w,
                            rows_per_slot: r,
                            rows,
                        });
                        let win = slot_window(&tree(slots, w, r), Some(rows));
                        assert_eq!(win.rows_per_window, r);
                        assert!(win.windows_per_unit <= w && win.windows_per_unit * r <= rows);
                        let enforced = add_remove(TreeBounds {
                            slots,
                            windows: win.windows_per_unit,
                            rows_per_slot: r,
                            rows: win.windows_per_unit * r,
                        });
                        assert!(
                            enforced.0 <= claim.0 && enforced.1 <= claim.1,
                            "T={slots} W={w} r={r} R={rows}: {enforced:?} > {claim:?}"
                        );
                        let naive = add_remove(TreeBounds {
                            slots,
                            windows: w,
                            rows_per_slot: r,
                            rows: w * r,
                        });
                        if rows < w * r {
                            assert!(naive.0 > claim.0, "T={slots} W={w} r={r} R={rows}");
                            naive_exceeds += 1;
                        }
                    }
                }
            }
        }
        assert!(naive_exceeds > 1000, "{naive_exceeds}");
    }

    /// Tight when r divides R: the enforced bounds reach the claim exactly.
    #[test]
    fn the_enforced_slot_bounds_are_the_claim_when_r_divides_rows() {
        let win = slot_window(&tree(365, 365, 1), Some(2));
        assert_eq!((win.windows_per_unit, win.rows_per_window), (2, 1));
        let win = slot_window(&tree(365, 10, 2), Some(6));
        assert_eq!((win.windows_per_unit, win.rows_per_window), (3, 2));
        // a row-level unit: one row in one slot
        let win = slot_window(&tree(365, 1, 1), None);
        assert_eq!((win.windows_per_unit, win.rows_per_window), (1, 1));
    }
}
