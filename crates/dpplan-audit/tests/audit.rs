//! `dpplan audit` in the library: the real samplers pass, every
//! deliberately broken mechanism (feature `audit-faults`, on for this
//! crate's tests only) fails, and the numbers behind the bound are checked
//! against independent values.

use std::path::{Path, PathBuf};

use dpplan_audit::distinguish::naive_reachable;
use dpplan_audit::distinguish::Distinguisher;
use dpplan_audit::faults::{naive_laplace, Fault};
use dpplan_audit::neighbour::{neighbours, CANARY_ID};
use dpplan_audit::stats::{clopper_pearson_upper, epsilon_from_rates, epsilon_lower_bound};
use dpplan_audit::{audit, AuditOptions, QueryAudit, Verdict};
use dpplan_plan::ExecutablePlan;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn compiled_text(text: &str) -> ExecutablePlan {
    let json = dpplan_plan::to_json(&dpplan_compile::compile(text).unwrap());
    dpplan_compile::load(&json).unwrap()
}

fn example(name: &str) -> (ExecutablePlan, AuditOptions) {
    let text =
        std::fs::read_to_string(root().join(format!("examples/{name}/{name}.dpplan"))).unwrap();
    let o = AuditOptions {
        base_dir: Some(root().join(format!("examples/{name}"))),
        ..Default::default()
    };
    (compiled_text(&text), o)
}

const EXAMPLES: [&str; 9] = [
    "accuracy-targets",
    "app-events",
    "census",
    "daily-panel",
    "news-sections",
    "repeated-release",
    "retail-mixed",
    "ride-sharing",
    "web-analytics",
];

/// Runs per side in the audit of every shipped example (the test command
/// runs this; about 15 s on the 2-core machine of docs/benchmarks.md).
const EXAMPLE_RUNS: u64 = 50_000;

/// The probability that this test fails for a correct runtime, split
/// evenly (Bonferroni) over every audited release of every example.
const FALSE_FAILURE: f64 = 1e-6;

/// Every shipped example passes its audit with fresh operating-system
/// randomness: no measured bound above the claim, no behaviour that
/// differs between D and D′. Each release is audited at confidence
/// 1 − 10⁻⁶/(number of releases), so a correct runtime fails this test with
/// probability at most 10⁻⁶ in all.
#[test]
fn every_shipped_example_passes_its_audit() {
    let plans: Vec<_> = EXAMPLES.iter().map(|n| (n, example(n))).collect();
    let releases: usize = plans.iter().map(|(_, (p, _))| p.body.releases.len()).sum();
    let confidence = 1.0 - FALSE_FAILURE / releases as f64;
    for (name, (plan, mut o)) in plans {
        o.runs = EXAMPLE_RUNS;
        o.confidence = confidence;
        let rep = audit(&plan, &o).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(rep.queries.len(), plan.body.releases.len());
        for q in &rep.queries {
            assert!(
                q.passed && q.verdict == Verdict::Passed,
                "{name}/{}: measured ε ≥ {} > claimed {}, or {:?}",
                q.query,
                q.measured_epsilon,
                q.claimed_epsilon,
                q.behaviour_differences
            );
            assert!(q.notes.is_empty(), "{name}/{}: {:?}", q.query, q.notes);
        }
    }
}

/// A plan whose releases cost ε = 1 (Laplace) and, at δ = 10⁻⁵, about 2
/// (Gaussian, Δ/σ = ½): large enough that a factor of two shows at the
/// default number of runs.
const FAULT_PLAN: &str = r#"plan "audit-faults" {
  privacy {
    unit row
    adjacency add_remove
    budget epsilon 10.0 delta 1e-5
    accountant best
  }
  dataset t {
    source "t.csv"
    column x : float in [0, 10]
    column g : category { "a", "b", "c" }
  }
  query lap_sum {
    sum(t.x)
    noise laplace scale 10
    schedule once
  }
  query gauss_sum {
    sum(t.x)
    noise gaussian sigma 20
    schedule once
  }
  query hist {
    histogram(t by g)
    noise laplace scale 1
    schedule once
  }
}"#;

fn fault_plan(dir: &Path) -> (ExecutablePlan, AuditOptions) {
    // no row in group `a`: the canary's group
    let mut csv = String::from("x,g\n");
    for i in 0..200 {
        let g = if i % 2 == 0 { "b" } else { "c" };
        csv.push_str(&format!("{},{g}\n", (i % 11) as f64 * 0.73));
    }
    std::fs::write(dir.join("t.csv"), csv).unwrap();
    let o = AuditOptions {
        base_dir: Some(dir.to_path_buf()),
        seed: Some(20_260_101),
        ..Default::default()
    };
    (compiled_text(FAULT_PLAN), o)
}

fn audited(dir: &Path, query: &str, fault: Option<Fault>) -> QueryAudit {
    let (plan, mut o) = fault_plan(dir);
    o.queries = vec![query.to_string()];
    o.fault = fault;
    let rep = audit(&plan, &o).unwrap();
    assert_eq!(o.runs, 100_000, "the default number of runs");
    let q = rep.queries.into_iter().next().unwrap();
    println!(
        "{query} {fault:?}: measured {} claimed {} tests {:?}",
        q.measured_epsilon,
        q.claimed_epsilon,
        q.tests
            .iter()
            .map(|t| (
                t.distinguisher,
                t.false_positives,
                t.false_negatives,
                t.epsilon_lower_bound
            ))
            .collect::<Vec<_>>()
    );
    q
}

/// The audit of `query` under `fault`, whose outputs must not differ
/// besides their values.
fn audited_alike(dir: &Path, query: &str, fault: Option<Fault>) -> QueryAudit {
    let q = audited(dir, query, fault);
    assert!(
        q.behaviour_differences.is_empty(),
        "{:?}",
        q.behaviour_differences
    );
    q
}

/// The real samplers: the measured bound stays below the claim, and is
/// not trivially 0 (the audit has power: the Laplace bound comes close).
#[test]
fn the_real_samplers_pass() {
    let dir = tempfile::tempdir().unwrap();
    let lap = audited_alike(dir.path(), "lap_sum", None);
    assert_eq!(lap.verdict, Verdict::Passed);
    assert!(lap.measured_epsilon > 0.8 && lap.measured_epsilon <= lap.claimed_epsilon);
    // the low-bits test has some power from where the output lies (a
    // tail far from x is sparse in the textbook sampler's outputs), never
    // more than the mechanism's ε
    let low_bits = lap
        .tests
        .iter()
        .find(|t| t.distinguisher == Distinguisher::LowBits)
        .unwrap();
    assert!(
        low_bits.epsilon_lower_bound <= lap.claimed_epsilon,
        "{low_bits:?}"
    );
    let gauss = audited_alike(dir.path(), "gauss_sum", None);
    assert_eq!(gauss.verdict, Verdict::Passed);
    assert!(gauss.measured_epsilon > 1.0 && gauss.measured_epsilon <= gauss.claimed_epsilon);
}

/// The audit reads a Parquet source through the engine's columnar bridge
/// (`dpplan_engine::open_source`): the fault plan's data as a Parquet file
/// audits as the CSV does — every release passes, with power — and a
/// skipped clamp still fails on it (negative control: the audit of a
/// Parquet source is not vacuous).
#[test]
fn a_parquet_source_is_audited_as_its_csv() {
    use arrow_array::builder::{Float64Builder, StringBuilder};
    use arrow_array::{ArrayRef, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let (plan, mut o) = fault_plan(dir.path());
    // the same rows as fault_plan's t.csv
    let (mut x, mut g) = (Float64Builder::new(), StringBuilder::new());
    for i in 0..200 {
        x.append_value((i % 11) as f64 * 0.73);
        g.append_value(if i % 2 == 0 { "b" } else { "c" });
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("x", DataType::Float64, true),
        Field::new("g", DataType::Utf8, true),
    ]));
    let columns: Vec<ArrayRef> = vec![Arc::new(x.finish()), Arc::new(g.finish())];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
    let path = dir.path().join("t.parquet");
    let mut w =
        parquet::arrow::ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, None)
            .unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    o.data.insert("t".into(), path);
    o.runs = 20_000;
    let rep = audit(&plan, &o).unwrap();
    assert_eq!(rep.queries.len(), 3);
    for q in &rep.queries {
        assert!(
            q.verdict == Verdict::Passed && q.behaviour_differences.is_empty(),
            "{}: {q:?}",
            q.query
        );
    }
    let lap = rep.queries.iter().find(|q| q.query == "lap_sum").unwrap();
    assert!(lap.measured_epsilon > 0.5, "{}", lap.measured_epsilon);
    o.queries = vec!["lap_sum".into()];
    o.fault = Some(Fault::SkippedClamp);
    let q = audit(&plan, &o).unwrap().queries.remove(0);
    assert!(
        q.verdict == Verdict::Failed && q.measured_epsilon > q.claimed_epsilon,
        "{q:?}"
    );
}

/// A top-k on tied counts (3 cells of 20 rows; the canary's row breaks
/// the tie): the audit reads each run's ranked keys per candidate and
/// tests them by the exact law of peeling, by the exponential mechanism
/// and by permute-and-flip. The real sampler passes with power (the exact
/// bound for this pair is ln 3.13 ≈ 1.14 of the claimed 2 for the
/// exponential mechanism); doubling the counts' difference (a sensitivity
/// off by two: truly 4-DP) fails.
#[test]
fn a_top_k_is_audited_by_its_choices() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("g\n");
    for i in 0..60 {
        csv.push_str(["a\n", "b\n", "c\n"][i % 3]);
    }
    std::fs::write(dir.path().join("top.csv"), csv).unwrap();
    for noise in ["exponential", "permute_and_flip"] {
        let plan = compiled_text(&format!(
            r#"plan "top" {{
  privacy {{ unit row adjacency add_remove budget epsilon 10 }}
  dataset d {{
    source "top.csv"
    column g : category {{ "a", "b", "c" }}
  }}
  query first {{
    top(d by g, 1)
    noise {noise} scale 0.5
    schedule once
  }}
}}"#
        ));
        let o = AuditOptions {
            base_dir: Some(dir.path().to_path_buf()),
            seed: Some(20_261_206),
            ..Default::default()
        };
        let q = audit(&plan, &o).unwrap().queries.remove(0);
        assert!(
            q.behaviour_differences.is_empty(),
            "{noise}: {:?}",
            q.behaviour_differences
        );
        assert_eq!(q.claimed_epsilon, 2.0);
        assert_eq!(q.verdict, Verdict::Passed, "{noise}: {q:?}");
        assert!(
            q.measured_epsilon > 0.8 && q.measured_epsilon <= 2.0,
            "{noise}: {q:?}"
        );
        let broken = AuditOptions {
            fault: Some(Fault::SensitivityOffByTwo),
            ..o
        };
        let q = audit(&plan, &broken).unwrap().queries.remove(0);
        assert!(
            q.verdict == Verdict::Failed && q.measured_epsilon > q.claimed_epsilon,
            "{noise}: {q:?}"
        );
    }
}

#[test]
fn a_sensitivity_off_by_two_fails() {
    let dir = tempfile::tempdir().unwrap();
    for query in ["lap_sum", "gauss_sum"] {
        let q = audited_alike(dir.path(), query, Some(Fault::SensitivityOffByTwo));
        assert!(
            q.verdict == Verdict::Failed && q.measured_epsilon > q.claimed_epsilon,
            "{query}"
        );
    }
}

#[test]
fn a_halved_sigma_fails() {
    let dir = tempfile::tempdir().unwrap();
    let q = audited_alike(dir.path(), "gauss_sum", Some(Fault::HalvedSigma));
    assert!(q.verdict == Verdict::Failed && q.measured_epsilon > q.claimed_epsilon);
}

#[test]
fn a_skipped_clamp_fails() {
    let dir = tempfile::tempdir().unwrap();
    for query in ["lap_sum", "gauss_sum"] {
        let q = audited_alike(dir.path(), query, Some(Fault::SkippedClamp));
        assert!(
            q.verdict == Verdict::Failed && q.measured_epsilon > q.claimed_epsilon,
            "{query}"
        );
    }
}

/// A count on a 10 % Poisson sample of the units with Laplace noise of ε
/// = 2 per unit: the amplified claim ln(1 + q(e² − 1)) ≈ 0.494.
const SAMPLED_PLAN: &str = r#"plan "sampled-audit" {
  privacy {
    unit user by uid
    adjacency add_remove
    budget epsilon 10.0 delta 1e-6
    accountant best
  }
  dataset t {
    source "t.csv"
    sample units 10%
    column uid : id
    column x : float in [0, 10]
    contribution { rows_per_unit 1 }
  }
  query n {
    count(t)
    noise laplace scale 0.5
    schedule once
  }
}"#;

fn sampled_audit(fault: Option<Fault>) -> dpplan_audit::AuditReport {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("uid,x\n");
    for i in 0..300 {
        csv.push_str(&format!("u{i},{}\n", i % 10));
    }
    std::fs::write(dir.path().join("t.csv"), csv).unwrap();
    let o = AuditOptions {
        base_dir: Some(dir.path().to_path_buf()),
        seed: Some(20_261_207),
        fault,
        ..Default::default()
    };
    let rep = audit(&compiled_text(SAMPLED_PLAN), &o).unwrap();
    let q = &rep.queries[0];
    println!(
        "sampled {fault:?}: measured {} claimed {}",
        q.measured_epsilon, q.claimed_epsilon
    );
    rep
}

/// A sampled release is audited with the canary's coin drawn on every
/// run by the engine's rule: the measured bound stays below the amplified
/// claim but well above 0 (the audit has power there), and a sample that
/// keeps every unit (the fault) is caught: the base mechanism's loss is
/// measured above the amplified claim.
#[test]
fn a_sampled_release_is_audited_with_its_coin() {
    let rep = sampled_audit(None);
    let q = &rep.queries[0];
    let amplified = (1.0 + 0.1 * (2f64.exp() - 1.0)).ln();
    assert!(q.claimed_epsilon <= amplified + 1e-9, "{q:?}");
    assert!(
        q.verdict == Verdict::Passed && q.measured_epsilon > 0.3,
        "{q:?}"
    );
    assert!(
        q.neighbours.contains("a sampled release"),
        "{}",
        q.neighbours
    );
    assert!(
        rep.executed.every_run[0].contains("coin for the canary"),
        "{:?}",
        rep.executed
    );
    // negative control: the same release with the sample ignored
    let q = sampled_audit(Some(Fault::IgnoredSample)).queries.remove(0);
    assert!(
        q.verdict == Verdict::Failed && q.measured_epsilon > q.claimed_epsilon,
        "{q:?}"
    );
    assert!(q.measured_epsilon > 1.0, "{q:?}");
}

/// A histogram that hides its empty cells publishes a number of cells
/// that depends on the data: a data-dependent branch, whatever the values
/// (negative control: the real release path publishes every cell).
#[test]
fn a_data_dependent_number_of_cells_fails() {
    let dir = tempfile::tempdir().unwrap();
    let q = audited(dir.path(), "hist", Some(Fault::SuppressEmptyCells));
    assert!(q.verdict == Verdict::Failed);
    assert!(
        q.behaviour_differences[0].contains("differs besides its values"),
        "{:?}",
        q.behaviour_differences
    );
    let q = audited_alike(dir.path(), "hist", None);
    assert!(q.verdict == Verdict::Passed && q.measured_epsilon <= q.claimed_epsilon);
}

/// A runtime that refuses a number past its bounds instead of clamping it
/// errs on D (the canary's numbers) and not on D′: a data-dependent error.
#[test]
fn a_data_dependent_error_fails() {
    let dir = tempfile::tempdir().unwrap();
    let q = audited(dir.path(), "lap_sum", Some(Fault::RefuseOutOfRange));
    assert!(q.verdict == Verdict::Failed && q.tests.is_empty());
    assert_eq!(
        q.behaviour_differences,
        ["the engine answered differently: on D error: a value of column `x` is outside its bounds, on D′ released"]
    );
}

/// Mironov 2012: the textbook floating-point Laplace fails, through the
/// low-bits test (the likelihood ratio sees a correct Laplace).
#[test]
fn the_naive_floating_point_laplace_fails_on_its_low_bits() {
    let dir = tempfile::tempdir().unwrap();
    let q = audited_alike(dir.path(), "lap_sum", Some(Fault::NaiveLaplace));
    assert!(q.verdict == Verdict::Failed && q.measured_epsilon > q.claimed_epsilon);
    let lr = q
        .tests
        .iter()
        .find(|t| t.distinguisher == Distinguisher::LikelihoodRatio)
        .unwrap();
    assert!(lr.epsilon_lower_bound <= q.claimed_epsilon, "{lr:?}");
    let lb = q
        .tests
        .iter()
        .find(|t| t.distinguisher == Distinguisher::LowBits)
        .unwrap();
    assert!(lb.epsilon_lower_bound > q.claimed_epsilon, "{lb:?}");
}

/// The fault plan's claims, as the accountants give them (the tests above
/// rest on them): Laplace ε = 1 (slightly less at δ = 10⁻⁵ under RDP), and
/// the exact Gaussian at Δ/σ = ½, δ = 10⁻⁵ (Balle–Wang: ε ≈ 1.993).
#[test]
fn fault_plan_costs() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, _) = fault_plan(dir.path());
    let lap = plan.body.release("lap_sum").unwrap();
    assert!((lap.cost_per_release.epsilon - 1.0).abs() < 1e-3);
    let gauss = plan.body.release("gauss_sum").unwrap();
    assert!((gauss.cost_per_release.epsilon - 1.993).abs() < 1e-2);
}

/// scipy 1.17.1, `scipy.stats.beta.ppf(1 - gamma, k + 1, n - k)`: the
/// one-sided Clopper–Pearson upper bound, computed once and written here
/// (k, n, gamma, bound).
const SCIPY_CLOPPER_PEARSON: [(u64, u64, f64, f64); 9] = [
    (0, 10, 2.5e-2, 0.3084971078187607),
    (0, 1000, 5e-2, 0.002991249545095295),
    (3, 50, 2.5e-2, 0.16548194660377288),
    (50, 100, 5e-3, 0.6311385626410759),
    (9230, 50000, 1.25e-2, 0.18852221596705582),
    (216, 50000, 1e-8, 0.006195696508824228),
    (0, 50000, 2.5e-9, 0.00039606104933015575),
    (49999, 50000, 5e-2, 0.9999989741346385),
    (1, 2, 0.3, 0.8366600265340756),
];

#[test]
fn clopper_pearson_matches_scipy_and_never_falls_below() {
    for (k, n, gamma, want) in SCIPY_CLOPPER_PEARSON {
        let got = clopper_pearson_upper(k, n, gamma);
        assert!(
            got >= want * (1.0 - 1e-9),
            "({k}, {n}, {gamma}): {got} < {want}"
        );
        assert!(
            got <= want * (1.0 + 1e-7),
            "({k}, {n}, {gamma}): {got} ≫ {want}"
        );
    }
    // k = 0 in closed form: 1 − γ^(1/n); k = n: 1
    for n in [1u64, 7, 100, 12_345] {
        let want = 1.0 - 0.01f64.powf(1.0 / n as f64);
        let got = clopper_pearson_upper(0, n, 0.01);
        assert!((got - want).abs() <= 1e-9 * want, "{n}: {got} vs {want}");
        assert_eq!(clopper_pearson_upper(n, n, 0.01), 1.0);
    }
    // negative control: more errors, a larger bound
    assert!(clopper_pearson_upper(4, 50, 0.025) > clopper_pearson_upper(3, 50, 0.025));
}

/// The bound against the DP inequalities written out by hand.
#[test]
fn the_epsilon_bound_is_the_dp_inequality() {
    let (a, b, d): (f64, f64, f64) = (0.01, 0.3, 1e-6);
    let want = ((1.0 - d - b) / a).ln();
    assert!((epsilon_from_rates(a, b, d) - want).abs() < 1e-12);
    // symmetric in the two rates
    assert_eq!(epsilon_from_rates(b, a, d), epsilon_from_rates(a, b, d));
    // a coin flip shows nothing; δ larger than what the test sees: 0
    assert_eq!(epsilon_from_rates(0.5, 0.5, 0.0), 0.0);
    assert_eq!(epsilon_from_rates(0.2, 0.2, 0.7), 0.0);
    // the counts go through Clopper–Pearson at the given level
    let bnd = epsilon_lower_bound(10, 1000, 300, 1000, 0.0, 0.025);
    let want = ((1.0 - bnd.beta_upper) / bnd.alpha_upper).ln();
    assert!((bnd.epsilon - want).abs() < 1e-12);
    assert!(bnd.alpha_upper > 0.01 && bnd.beta_upper > 0.3);
}

/// Every output of the textbook sampler is reachable from its own input
/// (the binary search misses none), and an exact sampler's outputs are not
/// all reachable (the test can tell them apart).
#[test]
fn naive_reachability_finds_every_naive_output() {
    let mut rng = dpplan_engine::rng::SecureRng::from_seed_for_tests(7);
    for i in 0..20_000 {
        let x = [0.0, 3.0, 1234.5, -7.25][i % 4];
        let b = [1.0, 10.0, 0.3][i % 3];
        let y = naive_laplace(x, b, rng.next_u64());
        assert!(naive_reachable(y, x, b), "{y} from {x} at {b}");
    }
    let noise =
        dpplan_noise::Noise::new(Some(dpplan_vocab::NoiseKind::Laplace), Some(10.0), -10).unwrap();
    let unreachable = (0..20_000)
        .filter(|_| !naive_reachable(noise.release(10 << 10, -10, &mut rng), 10.0, 10.0))
        .count();
    assert!(unreachable > 100, "{unreachable}");
}

fn rows(csv: &[u8]) -> Vec<Vec<String>> {
    csv::Reader::from_reader(csv)
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect()
}

fn example_data(name: &str, file: &str) -> Vec<u8> {
    std::fs::read(root().join(format!("examples/{name}/data/{file}"))).unwrap()
}

/// add/remove under a user-level unit: D′ is the data with each unit
/// reduced to its first row, D adds the canary's 2 × rows_per_unit rows,
/// every number past its bound.
#[test]
fn add_remove_plants_a_canary_over_every_bound() {
    let (plan, _) = example("web-analytics");
    let ds = &plan.body.datasets["visits"];
    let r = plan.body.release("daily_visits").unwrap();
    let data = example_data("web-analytics", "visits.csv");
    let nb = neighbours(ds, r, plan.body.privacy.adjacency, &data).unwrap();
    let (d, dp) = (rows(&nb.d), rows(&nb.dp));
    let users: std::collections::BTreeSet<String> =
        rows(&data).into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(dp.len(), users.len(), "one row per unit in D′");
    assert_eq!(d.len(), dp.len() + 10, "2 × rows_per_unit canary rows");
    assert_eq!(&d[..dp.len()], &dp[..]);
    for row in &d[dp.len()..] {
        assert_eq!(row[0], CANARY_ID);
        let seconds: f64 = row[2].parse().unwrap();
        assert!(seconds > 3600.0, "past the bound: {seconds}");
        assert!(["home", "search", "checkout"].contains(&row[1].as_str()));
    }
    assert!(nb.passes_filter);
}

/// replace under a row unit: D is the data, D′ replaces its first row by
/// the canary's, with categories other than the replaced row's.
#[test]
fn replace_swaps_the_first_unit_for_the_canary() {
    let (plan, _) = example("census");
    let ds = &plan.body.datasets["persons"];
    let r = plan.body.release("by_region").unwrap();
    let data = example_data("census", "persons.csv");
    let nb = neighbours(ds, r, plan.body.privacy.adjacency, &data).unwrap();
    let (d, dp) = (rows(&nb.d), rows(&nb.dp));
    assert_eq!(d, rows(&data));
    assert_eq!(dp.len(), d.len());
    assert_eq!(
        &dp[..dp.len() - 1],
        &d[1..],
        "every other row kept, in order"
    );
    let canary = dp.last().unwrap();
    for (i, v) in canary.iter().enumerate().take(3) {
        assert_ne!(v, &d[0][i], "column {i}: the replaced row's own category");
    }
    let rooms: f64 = canary[3].parse().unwrap();
    assert!(rooms > 12.0, "past the bound: {rooms}");
}

/// A filtered query: the canary passes the filter (`city == "Madrid" and
/// fare > 10`), so that it moves the statistic.
#[test]
fn the_canary_passes_the_query_filter() {
    let (plan, _) = example("ride-sharing");
    let ds = &plan.body.datasets["trips"];
    let r = plan.body.release("madrid_paid_trips").unwrap();
    let data = example_data("ride-sharing", "trips.csv");
    let nb = neighbours(ds, r, plan.body.privacy.adjacency, &data).unwrap();
    assert!(nb.passes_filter);
    let d = rows(&nb.d);
    let canary: Vec<_> = d.iter().filter(|r| r[0] == CANARY_ID).collect();
    assert_eq!(canary.len(), 20);
    for row in canary {
        assert_eq!(row[1], "Madrid");
        assert!(row[4].parse::<f64>().unwrap() > 10.0);
    }
}

/// replace under a user-level unit: the replaced unit is the first row's
/// with an id; rows without one (no unit's, dropped by the engine) stay in
/// both data sets, never replaced (negative control: the same data with
/// the id-less rows removed replaces the same unit).
#[test]
fn replace_never_replaces_a_row_without_a_unit_id() {
    let plan = compiled_text(
        r#"plan "p" {
  privacy { unit user by uid adjacency replace budget epsilon 10 delta 1e-6 }
  dataset d {
    source "d.csv"
    column uid : id
    column x : float in [0, 10]
    contribution { rows_per_unit 1 }
  }
  query s { sum(d.x) noise laplace scale 10 schedule once }
}"#,
    );
    let ds = &plan.body.datasets["d"];
    let r = plan.body.release("s").unwrap();
    let with_empty = b"uid,x\n,1\n,2\nu1,3\nu2,4\nu1,5\n";
    let nb = neighbours(ds, r, plan.body.privacy.adjacency, with_empty).unwrap();
    let (d, dp) = (rows(&nb.d), rows(&nb.dp));
    // (each id reduced to its first row: the id-less rows to one) every
    // row of u1 left, the canary took its id, the id-less row stays
    assert_eq!(d.len(), 3, "{d:?}");
    assert_eq!(dp.iter().filter(|r| r[0].is_empty()).count(), 1, "{dp:?}");
    assert!(dp.iter().any(|r| r == &["u2", "4"]), "{dp:?}");
    assert!(!dp.iter().any(|r| r == &["u1", "3"]), "{dp:?}");
    let canary: Vec<_> = dp.iter().filter(|r| r[0] == "u1").collect();
    assert_eq!(canary.len(), 2, "{dp:?}");
    assert!(canary.iter().all(|r| r[1].parse::<f64>().unwrap() > 10.0));
    let without = b"uid,x\nu1,3\nu2,4\n";
    let control = neighbours(ds, r, plan.body.privacy.adjacency, without).unwrap();
    let non_empty = |t: &[Vec<String>]| -> Vec<Vec<String>> {
        t.iter().filter(|r| !r[0].is_empty()).cloned().collect()
    };
    assert_eq!(non_empty(&dp), rows(&control.dp));
    // only id-less rows: no unit to replace
    let e = neighbours(ds, r, plan.body.privacy.adjacency, b"uid,x\n,1\n")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no row with a unit id"), "{e}");
}
