//! End to end on the shipped examples and their data, and the faults:
//! hostile CSV, tampering, crashes between intent and value, concurrent
//! runtimes (real processes: this test binary re-executes itself).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, Engine, StatKind, Statistic};
use dpplan_plan::ExecutablePlan;
use dpplan_runtime::ledger::{EntryKind, Ledger, SlotState};
use dpplan_runtime::{run, ReleaseResult, RunError, RunOptions};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example_source(name: &str) -> String {
    std::fs::read_to_string(root().join(format!("examples/{name}/{name}.dpplan"))).unwrap()
}

fn compiled(name: &str) -> ExecutablePlan {
    let json = dpplan_plan::to_json(&dpplan_compile::compile(&example_source(name)).unwrap());
    dpplan_compile::load(&json).unwrap()
}

fn opts(name: &str, ledger: &Path) -> RunOptions {
    RunOptions {
        base_dir: Some(root().join(format!("examples/{name}"))),
        ledger: ledger.to_path_buf(),
        ..Default::default()
    }
}

const EXAMPLES: [&str; 8] = [
    "app-events",
    "census",
    "news-sections",
    "repeated-release",
    "retail-mixed",
    "ride-sharing",
    "trip-fares",
    "web-analytics",
];

#[test]
fn every_example_runs_on_its_data() {
    let dir = tempfile::tempdir().unwrap();
    for name in EXAMPLES {
        let plan = compiled(name);
        let ledger = dir.path().join(format!("{name}.sqlite"));
        let mut o = opts(name, &ledger);
        o.slot = Some(0);
        // schedules that started a week ago: every slot 0 (a window's too)
        // has closed
        o.start = Some(dpplan_runtime::ledger::now_unix() - 7 * 86_400);
        let out = run(&plan, &o, &CsvEngine).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(out.refused.is_empty(), "{name}: {:?}", out.refused);
        let fresh: Vec<_> = out
            .results
            .iter()
            .filter(|r| r.origin == dpplan_runtime::Origin::Fresh)
            .collect();
        assert_eq!(
            fresh.len(),
            plan.body.releases.len(),
            "{name}: every release has a slot 0"
        );
        for r in &out.results {
            let rel = plan
                .body
                .release(r.republished_from.as_deref().unwrap_or(&r.query))
                .unwrap();
            match &rel.aggregation.groups {
                // a top-k: k distinct keys of the domain, ranked 1 to k,
                // with no count and no noise figure
                Some(g) if rel.aggregation.top.is_some() => {
                    let k = rel.aggregation.top.unwrap().k as usize;
                    assert_eq!(r.cells.len(), k, "{name}");
                    let mut seen = std::collections::BTreeSet::new();
                    for (i, c) in r.cells.iter().enumerate() {
                        let key = c.group.clone().unwrap();
                        assert!(g.contains(&key) && seen.insert(key), "{name}: {c:?}");
                        assert_eq!(c.value, (i + 1) as f64);
                        assert_eq!(
                            (c.noise_std, c.ci95_low, c.rank_error95),
                            (None, None, None)
                        );
                    }
                    continue;
                }
                Some(g) => {
                    // a histogram with its total: the total last, without
                    // a group (consistent: the cells add up to it)
                    let cells = match rel.aggregation.total {
                        true => {
                            let (total, cells) = r.cells.split_last().unwrap();
                            assert!(total.group.is_none(), "{name}: {total:?}");
                            if rel
                                .postprocess
                                .contains(&dpplan_vocab::PostStep::Consistent)
                            {
                                let sum: f64 = cells.iter().map(|c| c.value).sum();
                                assert_eq!(sum, total.value, "{name}: consistent");
                            }
                            cells
                        }
                        false => &r.cells[..],
                    };
                    let keys: Vec<&str> =
                        cells.iter().map(|c| c.group.as_deref().unwrap()).collect();
                    assert_eq!(
                        keys,
                        g.iter().map(String::as_str).collect::<Vec<_>>(),
                        "{name}: keys are the public domain"
                    );
                }
                None => assert_eq!(r.cells.len(), 1),
            }
            for (pi, c) in r.cells.iter().enumerate() {
                if rel.aggregation.quantile.is_some() {
                    // a quantile's accuracy: its level's rank error, in ranks
                    let want = rel.parts[pi].ci95_half_width;
                    assert!(
                        c.value.is_finite()
                            && (c.noise_std, c.ci95_low, c.ci95_high) == (None, None, None)
                            && c.rank_error95 == Some(want),
                        "{name}: {c:?}"
                    );
                    continue;
                }
                assert!(
                    c.value.is_finite()
                        && c.noise_std.is_some_and(|s| s >= 0.0)
                        && c.ci95_low.is_some_and(|l| l <= c.value)
                        && c.ci95_high.is_some_and(|h| c.value <= h)
                        && c.rank_error95.is_none(),
                    "{name}: {c:?}"
                );
            }
        }
        let l = Ledger::open(&ledger, None).unwrap();
        let v = l.verify().unwrap();
        assert_eq!(v.first_bad, None);
        assert_eq!(v.latest_hash, out.ledger_latest_hash);
        // open + (intent, value) per fresh release
        assert_eq!(v.entries as usize, 1 + 2 * fresh.len(), "{name}");
        // the same slot again: served from the ledger, nothing charged
        let again = run(&plan, &o, &CsvEngine).unwrap();
        assert!(
            again
                .results
                .iter()
                .all(|r| r.origin != dpplan_runtime::Origin::Fresh && r.epsilon == 0.0),
            "{name}"
        );
        for r in again
            .results
            .iter()
            .filter(|r| r.origin == dpplan_runtime::Origin::Ledger)
        {
            let first = out
                .results
                .iter()
                .find(|x| x.query == r.query && x.origin == dpplan_runtime::Origin::Fresh)
                .unwrap();
            assert_eq!(
                first.cells, r.cells,
                "{name}: the same value, no fresh noise"
            );
        }
        assert_eq!(
            Ledger::open(&ledger, None)
                .unwrap()
                .verify()
                .unwrap()
                .entries,
            v.entries
        );
    }
}

fn exact(plan: &ExecutablePlan, dataset: &str, path: &Path, stats: &[Statistic]) -> Vec<Vec<i128>> {
    let ds = &plan.body.datasets[dataset];
    let mut rng = SecureRng::from_os().unwrap();
    CsvEngine.aggregate(ds, path, stats, &mut rng).unwrap()
}

#[test]
fn user_level_bounding_removes_the_bots_weight() {
    let plan = compiled("web-analytics");
    let path = root().join("examples/web-analytics/data/visits.csv");
    let stats = [
        Statistic {
            kind: StatKind::Count,
            grid: 0,
        },
        Statistic {
            kind: StatKind::GroupedCount { by: "page".into() },
            grid: 0,
        },
    ];
    let bounded = exact(&plan, "visits", &path, &stats);
    // the unbounded figures, counted here from the raw file
    let text = std::fs::read_to_string(&path).unwrap();
    let pages = ["home", "search", "checkout"];
    let mut raw_rows = 0u64;
    let mut raw_hist = [0u64; 3];
    for line in text.lines().skip(1) {
        raw_rows += 1;
        if let Some(i) = pages
            .iter()
            .position(|p| line.split(',').nth(1) == Some(*p))
        {
            raw_hist[i] += 1;
        }
    }
    let users: std::collections::HashSet<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .filter(|u| !u.is_empty())
        .collect();
    // at most 5 rows per user survive
    assert!(bounded[0][0] <= 5 * users.len() as i128);
    // the bot's 500 visits count 5 at most: the count drops by more than 495
    assert!(
        raw_rows as i128 - bounded[0][0] >= 495,
        "raw {raw_rows}, bounded {}",
        bounded[0][0]
    );
    // the home page's share falls visibly once the bot is bounded
    let share = |h: &[i128]| h[0] as f64 / h.iter().sum::<i128>() as f64;
    let raw: Vec<i128> = raw_hist.iter().map(|&x| x as i128).collect();
    assert!(
        share(&raw) - share(&bounded[1]) > 0.08,
        "raw home share {} vs bounded {}",
        share(&raw),
        share(&bounded[1])
    );
    // histogram keys come from the domain only: `admin` is nowhere
    assert_eq!(bounded[1].len(), 3);
}

fn one_user_plan(rows_per_unit: u64, groups: u64, per_group: u64) -> ExecutablePlan {
    let src = format!(
        r#"plan "t" {{
  privacy {{ unit user by uid adjacency add_remove budget epsilon 20 delta 1e-6 }}
  dataset d {{
    column uid : id
    column g : category {{ "a", "b", "c", "d" }}
    column v : int in [0, 100]
    contribution {{ rows_per_unit {rows_per_unit} groups_per_unit {groups} rows_per_group {per_group} }}
  }}
  query s {{ sum(d.v) noise discrete_laplace scale 100 schedule once }}
  query h {{ histogram(d by g) noise discrete_laplace scale 100 schedule once }}
}}"#
    );
    dpplan_compile::compile(&src).unwrap_or_else(|e| panic!("{e}"))
}

/// Bounds of ±2^62 on the integer grid: a kept value is stored as its
/// offset from the lower bound, up to 2^63, which overflows an i64 (a panic
/// under overflow checks before the fix). Sums must come back exact.
#[test]
fn extreme_bounds_round_trip_through_the_unit_table() {
    let src = r#"plan "t" {
  privacy { unit user by uid adjacency add_remove budget epsilon 20 delta 1e-6 }
  dataset d {
    column uid : id
    column v : int in [-4611686018427387904, 4611686018427387904]
    contribution { rows_per_unit 2 }
  }
  query s { sum(d.v) noise discrete_laplace scale 1e19 schedule once }
}"#;
    let plan = dpplan_compile::compile(src).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.csv");
    std::fs::write(
        &path,
        "uid,v\nu1,4611686018427387904\nu1,-4611686018427387904\nu2,4611686018427387904\nu3,-5\n",
    )
    .unwrap();
    let stat = [Statistic {
        kind: StatKind::Sum { column: "v".into() },
        grid: 0,
    }];
    let v = exact(&plan, "d", &path, &stat);
    assert_eq!(v[0][0], (1i128 << 62) - 5);
}

#[test]
fn reservoir_keeps_a_uniform_sample_not_the_first_rows() {
    let plan = one_user_plan(1, 1, 1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.csv");
    let mut csv = String::from("uid,g,v\n");
    for i in 0..10 {
        csv.push_str(&format!("u1,a,{i}\n"));
    }
    std::fs::write(&path, csv).unwrap();
    let mut counts = [0u32; 10];
    let mut rng = SecureRng::from_seed_for_tests(3);
    let stat = [Statistic {
        kind: StatKind::Sum { column: "v".into() },
        grid: 0,
    }];
    let n = 3000;
    for _ in 0..n {
        let v = CsvEngine
            .aggregate(&plan.body.datasets["d"], &path, &stat, &mut rng)
            .unwrap();
        counts[v[0][0] as usize] += 1;
    }
    // chi-square against uniform, 9 df, false alarm 1e-6: critical ≈ 43.3
    let e = n as f64 / 10.0;
    let chi: f64 = counts.iter().map(|&o| (o as f64 - e).powi(2) / e).sum();
    assert!(chi < 43.3, "reservoir not uniform: {counts:?}");
}

#[test]
fn group_bounds_are_enforced() {
    // 1 user, 12 rows over 4 groups; rows_per_unit 10, 2 groups, 3 per group
    let plan = one_user_plan(10, 2, 3);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.csv");
    let mut csv = String::from("uid,g,v\n");
    for g in ["a", "b", "c", "d"] {
        for _ in 0..3 {
            csv.push_str(&format!("u1,{g},1\n"));
        }
    }
    csv.push_str("u1,zzz,1\n");
    std::fs::write(&path, csv).unwrap();
    let stats = [
        Statistic {
            kind: StatKind::Count,
            grid: 0,
        },
        Statistic {
            kind: StatKind::GroupedCount { by: "g".into() },
            grid: 0,
        },
    ];
    for _ in 0..50 {
        let v = exact(&plan, "d", &path, &stats);
        assert_eq!(v[0][0], 10, "rows_per_unit");
        let touched = v[1].iter().filter(|&&c| c > 0).count();
        assert!(touched <= 2, "groups_per_unit: {:?}", v[1]);
        assert!(v[1].iter().all(|&c| c <= 3), "rows_per_group: {:?}", v[1]);
    }
}

const SECRET: &str = "SECRET4242";

fn web_plan_with_data(dir: &Path, csv: &[u8]) -> (ExecutablePlan, RunOptions) {
    let plan = compiled("web-analytics");
    let path = dir.join("visits.csv");
    std::fs::write(&path, csv).unwrap();
    let mut o = opts("web-analytics", &dir.join("l.sqlite"));
    o.data = BTreeMap::from([("visits".to_string(), path)]);
    o.slot = Some(0);
    (plan, o)
}

#[test]
fn hostile_csv_never_panics_nor_leaks() {
    let cases: Vec<Vec<u8>> = vec![
        // missing column
        format!("user_id,page\nu1,{SECRET}\n").into_bytes(),
        // NaN, huge, infinite, negative, garbage numbers
        format!("user_id,page,seconds\nu1,home,NaN\nu2,home,1e308\nu3,home,-inf\nu4,home,{SECRET}\nu5,home,99999999999999999999999999\n").into_bytes(),
        // invalid UTF-8 everywhere
        b"user_id,page,seconds\n\xff\xfe,home,1\nu1,\xc3\x28,2\nu2,home,\xff\n".to_vec(),
        // ragged rows, quotes, empty lines
        format!("user_id,page,seconds\nu1\nu2,home\n\"u3,\"\"{SECRET}\",home,1,extra,fields\n\n\"unterminated,home,3\n").into_bytes(),
        // header only, and nothing at all
        b"user_id,page,seconds\n".to_vec(),
        b"".to_vec(),
        // invalid UTF-8 in the header
        b"user_id,pa\xffge,seconds\nu1,home,1\n".to_vec(),
    ];
    for (i, csv) in cases.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let (plan, o) = web_plan_with_data(dir.path(), csv);
        let outcome = std::panic::catch_unwind(|| run(&plan, &o, &CsvEngine));
        let result = outcome.unwrap_or_else(|_| panic!("case {i} panicked"));
        let text = match &result {
            Ok(out) => serde_json::to_string(out).unwrap(),
            Err(e) => e.to_string(),
        };
        assert!(!text.contains(SECRET), "case {i} leaked a value: {text}");
        if let Err(e) = &result {
            // a schema error names the column, nothing else, and leaves no
            // ledger behind (it would fix the schedule's start)
            assert!(
                matches!(e, RunError::NoLedgerCreated(b) if matches!(**b, RunError::Engine(_))),
                "case {i}: {e}"
            );
            assert!(!o.ledger.exists(), "case {i}: a ledger was created");
            assert!(
                e.to_string().contains("seconds")
                    || e.to_string().contains("page")
                    || e.to_string().contains("user_id"),
                "case {i}: {e}"
            );
        }
    }
}

#[test]
fn invalid_rows_clamp_rule_imputes_the_lower_bound() {
    let src = r#"plan "t" {
  privacy { unit row adjacency add_remove budget epsilon 30 }
  dataset d { column v : float in [10, 20] invalid_rows clamp }
  query s { sum(d.v) noise laplace scale 1 schedule once }
  query c { count(d) noise laplace scale 1 schedule once }
}"#;
    let plan = dpplan_compile::compile(src).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.csv");
    std::fs::write(&path, "v\n15\nNaN\nabc\n\n100\n-5\n").unwrap();
    let stats = [
        Statistic {
            kind: StatKind::Sum { column: "v".into() },
            grid: 0,
        },
        Statistic {
            kind: StatKind::Count,
            grid: 0,
        },
    ];
    let v = exact(&plan, "d", &path, &stats);
    // 15 + 10 (NaN) + 10 (abc) + 20 (100 clamped) + 10 (-5 clamped); the empty line is skipped by the reader
    assert_eq!(v[0][0], 65);
    assert_eq!(v[1][0], 5);
    // the drop rule drops NaN and abc
    let plan =
        dpplan_compile::compile(&src.replace("invalid_rows clamp", "invalid_rows drop")).unwrap();
    let v = exact(&plan, "d", &path, &stats);
    assert_eq!((v[0][0], v[1][0]), (45, 3));
}

/// The web-analytics example set to run `daily_visits` (and its
/// re-publication) at `slot`, on a fresh ledger in the returned directory.
fn daily_visits_at(slot: u64) -> (ExecutablePlan, tempfile::TempDir, RunOptions) {
    let plan = compiled("web-analytics");
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts("web-analytics", &dir.path().join("l.sqlite"));
    o.slot = Some(slot);
    o.queries = vec!["daily_visits".into()];
    (plan, dir, o)
}

fn result<'a>(out: &'a dpplan_runtime::RunOutput, query: &str) -> &'a ReleaseResult {
    out.results
        .iter()
        .find(|r| r.query == query)
        .unwrap_or_else(|| panic!("no result for {query}"))
}

#[test]
fn republication_is_served_from_the_ledger_for_free() {
    let (plan, _dir, o) = daily_visits_at(3);
    let out = run(&plan, &o, &CsvEngine).unwrap();
    let fresh = result(&out, "daily_visits");
    let copy = result(&out, "dashboard_copy");
    assert_eq!(copy.origin, dpplan_runtime::Origin::Republished);
    assert_eq!(copy.republished_from.as_deref(), Some("daily_visits"));
    assert_eq!(copy.cells, fresh.cells);
    assert_eq!(copy.epsilon, 0.0);
    let l = Ledger::open(&o.ledger, None).unwrap();
    let entries = l.entries().unwrap();
    assert_eq!(
        entries
            .iter()
            .filter(|e| e.kind == EntryKind::Intent)
            .count(),
        1,
        "one charge only"
    );
}

#[test]
fn a_corrected_value_is_served_with_its_correction() {
    let (plan, _dir, o) = daily_visits_at(5);
    let first = run(&plan, &o, &CsvEngine).unwrap();
    let fresh = result(&first, "daily_visits");
    assert!(fresh.corrections.is_empty());
    let value_seq = fresh.ledger_seq.unwrap();
    // not corrected yet: served clean
    let again = run(&plan, &o, &CsvEngine).unwrap();
    assert!(again.results.iter().all(|r| r.corrections.is_empty()));
    // a correction of the value entry, then one of its intent
    let mut l = Ledger::open(&o.ledger, None).unwrap();
    let c1 = l
        .correct(value_seq, "the source table was restated")
        .unwrap();
    let intent = l
        .entries()
        .unwrap()
        .into_iter()
        .find(|e| e.seq == value_seq)
        .and_then(|e| e.refers_to)
        .unwrap();
    let c2 = l.correct(intent, "second note").unwrap();
    drop(l);
    let served = run(&plan, &o, &CsvEngine).unwrap();
    for r in &served.results {
        // the value itself is unchanged (never rewritten), and it carries
        // both corrections, in ledger order, served or republished
        assert_eq!(r.cells, fresh.cells);
        let notes: Vec<_> = r
            .corrections
            .iter()
            .map(|c| (c.seq, c.corrects, c.reason.as_str()))
            .collect();
        assert_eq!(
            notes,
            vec![
                (c1.seq, value_seq, "the source table was restated"),
                (c2.seq, intent, "second note")
            ],
            "{}",
            r.query
        );
    }
    assert!(served
        .results
        .iter()
        .any(|r| r.origin == dpplan_runtime::Origin::Republished));
    let csv = dpplan_runtime::results_csv(&served);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with(",corrected_by,rank_error95,raw_value"));
    assert!(csv.contains(&format!("{} {}", c1.seq, c2.seq)));
    // a correction of another slot does not attach here
    let mut o6 = o.clone();
    o6.slot = Some(6);
    let other = run(&plan, &o6, &CsvEngine).unwrap();
    assert!(other.results.iter().all(|r| r.corrections.is_empty()));
}

/// δ(ε) of the μ-GDP Gaussian mechanism (Dong, Roth & Su 2019):
/// Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), recomputed here with statrs.
fn gdp_delta(mu: f64, eps: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    let n = Normal::new(0.0, 1.0).unwrap();
    n.cdf(-eps / mu + mu / 2.0) - eps.exp() * n.cdf(-eps / mu - mu / 2.0)
}

#[test]
fn every_intent_records_the_running_totals_under_every_accountant() {
    let plan = compiled("repeated-release");
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts("repeated-release", &dir.path().join("l.sqlite"));
    for slot in 0..5 {
        o.slot = Some(slot);
        run(&plan, &o, &CsvEngine).unwrap();
    }
    let l = Ledger::open(&o.ledger, None).unwrap();
    let intents: Vec<_> = l
        .entries()
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EntryKind::Intent)
        .collect();
    assert_eq!(intents.len(), 5);
    let mut last_best = 0.0;
    for (i, e) in intents.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(e.value.as_deref().unwrap()).unwrap();
        let t = &v["running_totals"];
        let typed = e.running_totals().expect("an intent has running totals");
        assert_eq!(serde_json::to_value(&typed).unwrap(), *t);
        let r = (i + 1) as f64;
        assert_eq!(t["releases"], i as u64 + 1);
        assert_eq!(t["at_delta"], 1e-6);
        assert_eq!(t["plan_accountant"], "best");
        let eps = |name: &str| {
            t["accountants"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["accountant"] == name)
                .and_then(|a| a["epsilon"].as_f64())
                .unwrap_or_else(|| panic!("no {name} total in {t}"))
        };
        // exact Gaussian: r releases of σ = 8, Δ = 1 are μ = √r/8 GDP, and
        // the recorded ε is where δ(ε) meets the plan's δ
        let mu = r.sqrt() / 8.0;
        let g = eps("gdp");
        assert!(
            (gdp_delta(mu, g) - 1e-6).abs() < 1e-9,
            "r = {r}: δ({g}) = {}",
            gdp_delta(mu, g)
        );
        // RDP never beats the exact curve and stays under the reference
        // text's closed form a + 2√(a ln 1/δ), a = rΔ²/2σ²
        let a = r / (2.0 * 64.0);
        let closed = a + 2.0 * (a * (1e6f64).ln()).sqrt();
        assert!(eps("rdp") >= g - 1e-9 && eps("rdp") <= closed + 1e-9);
        // the plan's accountant is `best`: the minimum of them all
        let best = t["plan"]["epsilon"].as_f64().unwrap();
        let min = ["basic", "advanced", "zcdp", "rdp", "gdp", "pld"]
            .iter()
            .filter_map(|n| {
                t["accountants"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|a| a["accountant"] == *n)
                    .and_then(|a| a["epsilon"].as_f64())
            })
            .fold(f64::INFINITY, f64::min);
        assert!((best - min).abs() <= 1e-12 * min, "{best} vs {min}");
        // negative control: one more release always costs more
        assert!(best > last_best, "release {r}: {best} ≤ {last_best}");
        last_best = best;
        // basic composition's running sum is still kept in the columns
        assert!((e.total_epsilon - r * e.epsilon).abs() < 1e-9 * r * e.epsilon);
    }
    // the whole schedule (10 releases) fits the budget; half of it is less
    assert!(last_best < plan.body.privacy.budget_epsilon);
}

#[test]
fn a_first_run_without_its_data_creates_no_ledger() {
    let plan = compiled("web-analytics");
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts("web-analytics", &dir.path().join("l.sqlite"));
    o.base_dir = Some(dir.path().to_path_buf());
    let e = run(&plan, &o, &CsvEngine).unwrap_err();
    assert!(e.to_string().contains("no ledger was created"), "{e}");
    assert!(!o.ledger.exists(), "the schedule start must not be fixed");
}

#[test]
fn refusals_outside_the_schedule() {
    let plan = compiled("web-analytics");
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts("web-analytics", &dir.path().join("l.sqlite"));
    // mean_time is `once`: slot 1 does not exist
    o.slot = Some(1);
    o.queries = vec!["mean_time".into()];
    let out = run(&plan, &o, &CsvEngine).unwrap();
    assert!(out.results.is_empty());
    assert!(
        out.refused[0].reason.contains("not in its schedule"),
        "{:?}",
        out.refused
    );
    // a release that is not in the plan
    o.queries = vec!["nope".into()];
    assert!(run(&plan, &o, &CsvEngine)
        .unwrap_err()
        .to_string()
        .contains("not a release"));
    // `every` schedules: a time maps to a slot; after the window nothing is due
    o.queries = vec!["daily_visits".into()];
    o.slot = None;
    o.start = Some(1_000_000);
    let ledger2 = dir.path().join("l2.sqlite");
    o.ledger = ledger2.clone();
    o.at = Some(1_000_000 + 86_400 * 2 + 5);
    let out = run(&plan, &o, &CsvEngine).unwrap();
    assert_eq!(
        out.results
            .iter()
            .find(|r| r.query == "daily_visits")
            .unwrap()
            .slot,
        2
    );
    o.at = Some(1_000_000 + 86_400 * 365);
    let out = run(&plan, &o, &CsvEngine).unwrap();
    assert!(out.results.is_empty());
}

#[test]
fn times_schedule_cannot_be_overspent() {
    let plan = compiled("repeated-release");
    let dir = tempfile::tempdir().unwrap();
    let o = opts("repeated-release", &dir.path().join("l.sqlite"));
    for i in 0..10 {
        let out = run(&plan, &o, &CsvEngine).unwrap();
        let r = out
            .results
            .iter()
            .find(|r| r.origin == dpplan_runtime::Origin::Fresh)
            .unwrap();
        assert_eq!(r.slot, i);
    }
    let out = run(&plan, &o, &CsvEngine).unwrap();
    assert!(
        out.results
            .iter()
            .all(|r| r.origin != dpplan_runtime::Origin::Fresh),
        "an 11th release of a 10-times schedule"
    );
    let l = Ledger::open(&o.ledger, None).unwrap();
    assert_eq!(
        l.entries()
            .unwrap()
            .iter()
            .filter(|e| e.kind == EntryKind::Intent)
            .count(),
        10
    );
    let mut o2 = o.clone();
    o2.slot = Some(10);
    let out = run(&plan, &o2, &CsvEngine).unwrap();
    assert!(out
        .results
        .iter()
        .all(|r| r.origin != dpplan_runtime::Origin::Fresh));
}

#[test]
fn another_plan_needs_an_accounted_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let plan = compiled("repeated-release");
    let mut o = opts("repeated-release", &dir.path().join("l.sqlite"));
    for _ in 0..10 {
        run(&plan, &o, &CsvEngine).unwrap();
    }
    // the same plan with more noise: a different hash
    let src = example_source("repeated-release");
    let quieter = dpplan_compile::compile(&src.replace("sigma 8", "sigma 40")).unwrap();
    let err = run(&quieter, &o, &CsvEngine).unwrap_err();
    assert!(err.to_string().contains("--upgrade"), "{err}");
    // history (10 × σ 8) + 10 × σ 40 fits ε = 2.5
    o.upgrade = true;
    let out = run(&quieter, &o, &CsvEngine).unwrap();
    assert!(out.upgraded);
    // a plan whose own schedule fits, but not on top of the history
    let greedy = dpplan_compile::compile(&src.replace("sigma 8", "sigma 7.9")).unwrap();
    let err = run(&greedy, &o, &CsvEngine).unwrap_err();
    assert!(err.to_string().contains("upgrade is refused"), "{err}");
    assert_eq!(
        Ledger::open(&o.ledger, None)
            .unwrap()
            .verify()
            .unwrap()
            .first_bad,
        None
    );
}

#[test]
fn tampering_is_detected() {
    let plan = compiled("census");
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts("census", &dir.path().join("l.sqlite"));
    o.slot = Some(0);
    run(&plan, &o, &CsvEngine).unwrap();
    let before = Ledger::open(&o.ledger, None).unwrap().verify().unwrap();
    assert_eq!(before.first_bad, None);
    let conn = rusqlite::Connection::open(&o.ledger).unwrap();
    // append-only: the triggers refuse edits
    assert!(conn
        .execute("UPDATE entries SET epsilon = 0 WHERE seq = 2", [])
        .is_err());
    assert!(conn
        .execute("DELETE FROM entries WHERE seq = 9", [])
        .is_err());
    // an attacker who drops the triggers and rewrites a released value
    conn.execute_batch("DROP TRIGGER entries_no_update; DROP TRIGGER entries_no_delete;")
        .unwrap();
    conn.execute(
        "UPDATE entries SET value = replace(value, '\"value\":', '\"value\":1') WHERE seq = 5",
        [],
    )
    .unwrap();
    let v = Ledger::open(&o.ledger, None).unwrap().verify().unwrap();
    assert_eq!(v.first_bad.as_ref().map(|b| b.0), Some(5), "{v:?}");
    // cutting the tail keeps a valid chain, but the printed latest hash is gone
    let dir2 = tempfile::tempdir().unwrap();
    let mut o2 = opts("census", &dir2.path().join("l.sqlite"));
    o2.slot = Some(0);
    let out = run(&plan, &o2, &CsvEngine).unwrap();
    let conn = rusqlite::Connection::open(&o2.ledger).unwrap();
    conn.execute_batch("DROP TRIGGER entries_no_delete;")
        .unwrap();
    conn.execute("DELETE FROM entries WHERE seq >= 8", [])
        .unwrap();
    let l = Ledger::open(&o2.ledger, None).unwrap();
    assert_eq!(l.verify().unwrap().first_bad, None);
    assert!(
        l.entries()
            .unwrap()
            .iter()
            .all(|e| e.hash != out.ledger_latest_hash),
        "the cut is visible against the printed hash"
    );
}

// ------------------------------------------------------------ processes

/// The child side: runs one `run` from environment variables.
#[test]
#[ignore = "child process of the crash and concurrency tests"]
fn child_runner() {
    let Ok(plan_path) = std::env::var("DPPLAN_CHILD_PLAN") else {
        return;
    };
    let plan = dpplan_compile::load(&std::fs::read_to_string(plan_path).unwrap()).unwrap();
    let name = std::env::var("DPPLAN_CHILD_EXAMPLE").unwrap();
    let mut o = opts(
        &name,
        Path::new(&std::env::var("DPPLAN_CHILD_LEDGER").unwrap()),
    );
    o.slot = std::env::var("DPPLAN_CHILD_SLOT")
        .ok()
        .map(|s| s.parse().unwrap());
    o.queries = std::env::var("DPPLAN_CHILD_QUERY")
        .ok()
        .into_iter()
        .collect();
    let out = run(&plan, &o, &CsvEngine).unwrap();
    std::fs::write(
        std::env::var("DPPLAN_CHILD_OUT").unwrap(),
        serde_json::to_string(&out).unwrap(),
    )
    .unwrap();
}

fn spawn_child(
    example: &str,
    plan: &Path,
    ledger: &Path,
    out: &Path,
    slot: Option<u64>,
    query: Option<&str>,
    pause_ms: Option<u64>,
) -> std::process::Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "e2e::child_runner",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env("DPPLAN_CHILD_PLAN", plan)
    .env("DPPLAN_CHILD_EXAMPLE", example)
    .env("DPPLAN_CHILD_LEDGER", ledger)
    .env("DPPLAN_CHILD_OUT", out)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    if let Some(s) = slot {
        c.env("DPPLAN_CHILD_SLOT", s.to_string());
    }
    if let Some(q) = query {
        c.env("DPPLAN_CHILD_QUERY", q);
    }
    if let Some(ms) = pause_ms {
        c.env(dpplan_runtime::test_hooks::PAUSE_ENV, ms.to_string());
    }
    c.spawn().unwrap()
}

fn write_plan(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(format!("{name}.json"));
    std::fs::write(&p, dpplan_plan::to_json(&compiled(name))).unwrap();
    p
}

#[test]
fn sigkill_between_intent_and_value_leaves_the_slot_charged() {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = write_plan(dir.path(), "web-analytics");
    let ledger = dir.path().join("l.sqlite");
    let mut child = spawn_child(
        "web-analytics",
        &plan_path,
        &ledger,
        &dir.path().join("o.json"),
        Some(0),
        Some("mean_time"),
        Some(60_000),
    );
    // wait until the intent is durable, then kill -9
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "the child never wrote its intent"
        );
        if ledger.exists() {
            if let Ok(l) = Ledger::open(&ledger, None) {
                if matches!(l.slot_state("mean_time", 0), Ok(SlotState::Charged(_))) {
                    break;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let l = Ledger::open(&ledger, None).unwrap();
    assert_eq!(
        l.verify().unwrap().first_bad,
        None,
        "the ledger verifies after the crash"
    );
    let intents: Vec<_> = l
        .entries()
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == EntryKind::Intent)
        .collect();
    assert_eq!(intents.len(), 1);
    assert!(intents[0].epsilon > 0.0, "the slot is charged");
    assert!(matches!(
        l.slot_state("mean_time", 0).unwrap(),
        SlotState::Charged(_)
    ));
    // running it again never draws fresh noise for the slot
    let plan = dpplan_compile::load(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    let mut o = opts("web-analytics", &ledger);
    o.slot = Some(0);
    o.queries = vec!["mean_time".into()];
    let out = run(&plan, &o, &CsvEngine).unwrap();
    assert!(out.results.is_empty());
    assert!(
        out.refused[0].reason.contains("never published"),
        "{:?}",
        out.refused
    );
    assert_eq!(
        Ledger::open(&ledger, None)
            .unwrap()
            .entries()
            .unwrap()
            .iter()
            .filter(|e| e.kind == EntryKind::Intent)
            .count(),
        1
    );
}

#[test]
fn concurrent_runtimes_never_both_spend_the_last_release() {
    let dir = tempfile::tempdir().unwrap();
    let plan_path = write_plan(dir.path(), "repeated-release");
    let ledger = dir.path().join("l.sqlite");
    // 9 of the 10 releases are spent…
    let plan = dpplan_compile::load(&std::fs::read_to_string(&plan_path).unwrap()).unwrap();
    let o = opts("repeated-release", &ledger);
    for _ in 0..9 {
        run(&plan, &o, &CsvEngine).unwrap();
    }
    // …and 6 processes race for the last one (and each would take any slot)
    let n = 6;
    let outs: Vec<PathBuf> = (0..n)
        .map(|i| dir.path().join(format!("o{i}.json")))
        .collect();
    let children: Vec<_> = outs
        .iter()
        .map(|out| {
            spawn_child(
                "repeated-release",
                &plan_path,
                &ledger,
                out,
                None,
                None,
                Some(200),
            )
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let mut fresh = 0;
    for out in &outs {
        let o: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
        fresh += o["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["origin"] == "fresh")
            .count();
    }
    assert_eq!(fresh, 1, "exactly one process spent the last release");
    let l = Ledger::open(&ledger, None).unwrap();
    assert_eq!(l.verify().unwrap().first_bad, None);
    assert_eq!(
        l.entries()
            .unwrap()
            .iter()
            .filter(|e| e.kind == EntryKind::Intent)
            .count(),
        10
    );
    // and concurrent first runs create one ledger
    let ledger2 = dir.path().join("fresh.sqlite");
    let children: Vec<_> = (0..4)
        .map(|i| {
            spawn_child(
                "repeated-release",
                &plan_path,
                &ledger2,
                &dir.path().join(format!("p{i}.json")),
                None,
                None,
                None,
            )
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let l = Ledger::open(&ledger2, None).unwrap();
    assert_eq!(l.verify().unwrap().first_bad, None);
    let slots: Vec<i64> = l
        .entries()
        .unwrap()
        .iter()
        .filter(|e| e.kind == EntryKind::Intent)
        .map(|e| e.slot.unwrap())
        .collect();
    assert_eq!(slots.len(), 4);
    let mut dedup = slots.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), 4, "four distinct slots: {slots:?}");
}

const POST_PLAN: &str = r#"plan "p" {
  privacy { unit user by uid adjacency add_remove budget epsilon 100 delta 1e-6 }
  dataset d {
    source "d.csv"
    column uid : id
    column g : category { "a", "b", "c", "d", "e", "f", "g", "h" }
    column x : float in [0, 10]
    contribution { rows_per_unit 1 groups_per_unit 1 }
  }
  query users { count(distinct d.uid by g) noise laplace scale 40 schedule once POST }
  query total { sum(d.x) noise gaussian sigma 30 schedule once POST }
}"#;

/// `postprocess nonnegative, round` on the release path itself: with the
/// same seed, the released values are the ones the plan without it
/// releases (post-processing draws nothing), and the published ones are
/// those values rounded and clipped at 0; the interval is the same, clipped
/// at 0. Through a run, the ledger keeps both, and serves both again.
#[test]
fn postprocess_publishes_a_function_of_the_released_values_and_keeps_them() {
    let with =
        dpplan_compile::compile(&POST_PLAN.replace("POST", "postprocess nonnegative, round"))
            .unwrap();
    let without = dpplan_compile::compile(&POST_PLAN.replace("POST", "")).unwrap();
    assert_eq!(
        with.body.releases[0].postprocess,
        [
            dpplan_vocab::PostStep::Nonnegative,
            dpplan_vocab::PostStep::Round
        ]
    );
    assert!(without.body.releases[0].postprocess.is_empty());
    // post-processing costs nothing
    assert_eq!(
        with.body.privacy.total.epsilon.to_bits(),
        without.body.privacy.total.epsilon.to_bits()
    );
    let mut exact = BTreeMap::new();
    exact.insert(("users".to_string(), 0), vec![0i128, 1, 2, 3, 5, 8, 13, 21]);
    // the sum on its grid: 7 units of 2^k
    let k = with.body.release("total").unwrap().parts[0].grid_exponent;
    exact.insert(("total".to_string(), 0), vec![7i128 << (-k).max(0)]);
    let mut negatives = 0;
    for seed in 0..20 {
        for name in ["users", "total"] {
            let a = dpplan_runtime::draw(
                with.body.release(name).unwrap(),
                0,
                &exact,
                &mut SecureRng::from_seed_for_tests(seed),
            )
            .unwrap();
            let b = dpplan_runtime::draw(
                without.body.release(name).unwrap(),
                0,
                &exact,
                &mut SecureRng::from_seed_for_tests(seed),
            )
            .unwrap();
            for (ca, cb) in a.cells.iter().zip(&b.cells) {
                assert_eq!(ca.raw_value, Some(cb.value), "{name}");
                assert_eq!(cb.raw_value, None);
                assert_eq!(ca.value, cb.value.round_ties_even().max(0.0), "{name}");
                assert_eq!(ca.ci95_low, cb.ci95_low.map(|x| x.max(0.0)));
                assert_eq!(ca.ci95_high, cb.ci95_high.map(|x| x.max(0.0)));
                assert_eq!(ca.noise_std, cb.noise_std);
                negatives += usize::from(cb.value < 0.0);
            }
        }
    }
    // the control: the mechanism did release negative values
    assert!(negatives > 10, "{negatives}");

    // a run: the ledger keeps the released value beside the published one
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("uid,g,x\n");
    for u in 0..30 {
        csv.push_str(&format!("u{u},{},{}\n", ["a", "b", "c"][u % 3], u % 11));
    }
    std::fs::write(dir.path().join("d.csv"), csv).unwrap();
    let o = RunOptions {
        base_dir: Some(dir.path().to_path_buf()),
        ledger: dir.path().join("l.sqlite"),
        ..Default::default()
    };
    let first = run(&with, &o, &CsvEngine).unwrap();
    let again = run(&with, &o, &CsvEngine).unwrap();
    assert_eq!(first.results.len(), 2);
    for (f, a) in first.results.iter().zip(&again.results) {
        assert_eq!(a.origin.name(), "ledger");
        for (cf, ca) in f.cells.iter().zip(&a.cells) {
            let raw = cf.raw_value.expect("the released value");
            assert_eq!(cf.value, raw.round_ties_even().max(0.0));
            assert_eq!((ca.value, ca.raw_value), (cf.value, cf.raw_value));
        }
    }
    let csv_out = dpplan_runtime::results_csv(&first);
    assert!(csv_out
        .lines()
        .next()
        .unwrap()
        .ends_with(",rank_error95,raw_value"));
}

/// A window that is not a whole number of seconds (a plan edited by hand)
/// is refused by what an engine is asked for, never truncated; the same
/// plan with whole seconds is asked for as compiled.
#[test]
fn a_window_of_a_fraction_of_a_second_is_refused_not_truncated() {
    let mut plan = compiled("ride-sharing");
    let o = opts("ride-sharing", Path::new("unused.sqlite"));
    let hourly = |p: &ExecutablePlan| {
        dpplan_runtime::planned_windows(p, &o).map(|w| {
            w.iter()
                .find(|w| w.release == "hourly_district_trips")
                .map(|w| w.period)
        })
    };
    assert_eq!(hourly(&plan).unwrap(), Some(3600));
    for bad in [3600.5, 0.5, f64::INFINITY, 1e300] {
        let r = plan
            .body
            .releases
            .iter_mut()
            .find(|r| r.name == "hourly_district_trips")
            .unwrap();
        r.window.as_mut().unwrap().seconds = bad;
        let e = hourly(&plan).unwrap_err().to_string();
        assert!(e.contains("not a whole number of seconds"), "{bad}: {e}");
    }
}
