//! `dpplan export` and `dpplan account --dp-event` against dp_accounting
//! itself (issue 30, items 1–3): every shipped example, every corpus plan
//! that checks clean and a set of generated plans are exported as DpEvent
//! trees; dp_accounting (PyPI, `target/test-deps/dp-accounting-venv`) reads
//! each with `DpEvent.from_named_tuple` and accounts it
//! (tests/dp_event/reference.py). Held: dpplan's ε is never looser than
//! dp_accounting's pessimistic PLD (+10⁻⁶ relative) or its RDP, and never
//! below its optimistic PLD where every event is exact; dp_accounting's own
//! `to_named_tuple()` JSON reads back into the same events; and a tree of
//! exact events re-accounted by `dpplan account --dp-event` gives the plan's
//! own ε.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dpplan_accounting::dp_event::DpEvent;
use serde_json::{json, Value};

use crate::support::{dpplan, ok, root, text};

fn python() -> Option<PathBuf> {
    let venv = root().join("target/test-deps/dp-accounting-venv/bin/python");
    let found = Command::new(&venv)
        .args(["-c", "import dp_accounting"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some(venv);
    }
    assert!(
        !std::env::var("CI").is_ok_and(|v| v == "true"),
        "dp_accounting is required under CI=true (scripts/test-deps.sh)"
    );
    eprintln!("SKIPPED: no dp_accounting venv (run scripts/test-deps.sh)");
    None
}

/// A number of the reference's output: "inf" is dp_accounting's +∞.
fn number(v: &Value) -> Option<f64> {
    v.as_f64().or(match v.as_str() {
        Some("inf") => Some(f64::INFINITY),
        _ => None,
    })
}

fn reference(py: &Path, cases: &Value) -> Vec<Value> {
    let script = root().join("crates/dpplan-cli/tests/dp_event/reference.py");
    let mut child = Command::new(py)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start dp_accounting");
    let input = serde_json::to_vec(cases).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("dp_accounting output");
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "dp_accounting failed");
    serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("reference JSON")
}

/// Plans that are not in examples/: each construct's mechanism at least once.
const GENERATED: &[(&str, &str)] = &[
    (
        "gaussian-daily",
        r#"plan "g" {
  privacy { unit row adjacency add_remove budget epsilon 50 delta 1e-6 }
  dataset d { column v : int in [0, 1] }
  query q { sum(d.v) noise gaussian sigma 20 schedule every 1 day for 365 days }
}"#,
    ),
    (
        "laplace-and-gaussian",
        r#"plan "lg" {
  privacy { unit row adjacency add_remove budget epsilon 50 delta 1e-7 }
  dataset d { column v : float in [0, 10] column c : category { "a", "b", "c" } }
  query s { sum(d.v) noise laplace scale 40 schedule 12 times }
  query h { histogram(d by c) noise gaussian sigma 8 schedule 30 times }
}"#,
    ),
    (
        "discrete-laplace",
        r#"plan "dl" {
  privacy { unit row adjacency add_remove budget epsilon 50 delta 1e-6 }
  dataset d { column v : int in [0, 3] }
  query n { count(d) noise discrete_laplace scale 4 schedule 50 times }
  query s { sum(d.v) noise discrete_laplace scale 9 schedule 20 times }
}"#,
    ),
    (
        "discrete-gaussian",
        r#"plan "dg" {
  privacy { unit row adjacency add_remove budget epsilon 50 delta 1e-6 }
  dataset d { column v : int in [0, 1] }
  query n { count(d) noise discrete_gaussian sigma 6 schedule 10 times }
}"#,
    ),
    (
        "replace-mean",
        r#"plan "rm" {
  privacy { unit row adjacency replace budget epsilon 50 delta 1e-6 }
  dataset d { column v : float in [0, 100] }
  query m { mean(d.v) noise gaussian sigma 300 schedule 5 times }
}"#,
    ),
];

/// `dpplan account --dp-event FILE --delta D --json`, which must succeed.
/// `dpplan account --dp-event FILE --delta DELTA`, its output as it is.
fn account_cmd(file: &Path, delta: &str) -> std::process::Output {
    dpplan(&[
        "account",
        "--dp-event",
        file.to_str().unwrap(),
        "--delta",
        delta,
    ])
}

fn account_tree(file: &Path, delta: f64) -> Value {
    let o = dpplan(&[
        "account",
        "--dp-event",
        file.to_str().unwrap(),
        "--delta",
        &delta.to_string(),
        "--json",
    ]);
    ok(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

struct Exported {
    name: String,
    doc: Value,
}

fn export_all(dir: &Path) -> Vec<Exported> {
    let mut plans: Vec<(String, PathBuf)> = Vec::new();
    let mut examples: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    examples.sort();
    for d in examples {
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        plans.push((format!("examples/{name}"), d.join(format!("{name}.dpplan"))));
    }
    let mut corpus: Vec<PathBuf> = std::fs::read_dir(root().join("tests/corpus"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "dpplan"))
        .collect();
    corpus.sort();
    for p in corpus {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        plans.push((format!("tests/corpus/{name}"), p));
    }
    for (name, src) in GENERATED {
        let p = dir.join(format!("{name}.dpplan"));
        std::fs::write(&p, src).unwrap();
        plans.push((format!("generated/{name}"), p));
    }
    let mut out = Vec::new();
    for (name, plan) in plans {
        let file = dir.join(format!("{}.json", name.replace('/', "_")));
        let o = dpplan(&[
            "export",
            plan.to_str().unwrap(),
            "-o",
            file.to_str().unwrap(),
        ]);
        if name.starts_with("tests/corpus/") && !o.status.success() {
            // a corpus plan with errors exports nothing, and says why
            assert_eq!(o.status.code(), Some(1), "{name}: {}", text(&o.stderr));
            assert!(text(&o.stderr).contains("nothing is exported"), "{name}");
            assert!(!file.exists(), "{name}: a plan with errors wrote a file");
            continue;
        }
        ok(&o);
        let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        if doc["epsilon"].is_null() {
            continue; // a plan that releases nothing
        }
        out.push(Exported { name, doc });
    }
    out
}

#[test]
fn exported_trees_are_accounted_by_dp_accounting_within_the_tolerances() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let exported = export_all(dir.path());
    let examples = exported
        .iter()
        .filter(|e| e.name.starts_with("examples/"))
        .count();
    assert!(examples >= 10, "only {examples} examples exported");
    assert!(
        exported.len() >= 30,
        "only {} plans exported",
        exported.len()
    );
    let cases = Value::Array(
        exported
            .iter()
            .map(|e| json!({"name": e.name, "event": e.doc["event"], "delta": e.doc["delta"]}))
            .collect(),
    );
    let refs = reference(&py, &cases);
    assert_eq!(refs.len(), exported.len());
    let (mut pld_checked, mut lower_checked, mut reaccounted_zcdp) = (0, 0, 0);
    // the worst of the trees without and with Poisson-sampled events
    let (mut worst, mut worst_sampled) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for (e, r) in exported.iter().zip(&refs) {
        let name = &e.name;
        let eps = e.doc["epsilon"].as_f64().unwrap();
        let delta = e.doc["delta"].as_f64().unwrap();
        let selection = e.doc["selection_delta"].as_f64().unwrap();
        assert!(selection >= 0.0, "{name}");
        // never looser than dp_accounting (it composes the same events) but
        // by dpplan's proven error terms: the issue's 10⁻⁶ relative, for
        // trees with Poisson-sampled events too since their leaves split
        // each cell by connect-the-dots (docs/accounting.md, "DpEvent":
        // examples/web-analytics is the closest, 8.2·10⁻⁷; the sampled ones
        // are below dp_accounting's, whose 10⁻⁴ grid has not converged)
        let sampled = e.doc["event"].to_string().contains("PoissonSampledDpEvent");
        let tolerance = 1e-6;
        if let Some(p) = number(&r["pld_pessimistic"]) {
            assert!(
                eps <= p * (1.0 + tolerance),
                "{name}: dpplan {eps} > dp_accounting PLD {p}"
            );
            if sampled {
                worst_sampled = worst_sampled.max(eps / p - 1.0);
            } else {
                worst = worst.max(eps / p - 1.0);
            }
            pld_checked += 1;
        }
        if let Some(rdp) = number(&r["rdp"]) {
            assert!(
                eps <= rdp * (1.0 + 1e-6),
                "{name}: dpplan {eps} > dp_accounting RDP {rdp}"
            );
        }
        assert!(
            !(r["rdp"].is_null() && r["pld_pessimistic"].is_null()),
            "{name}: neither of dp_accounting's accountants took the tree"
        );
        // never below dp_accounting's optimistic estimate where the events
        // are exactly what dpplan composed (at δ = 0 its discretised PLDs
        // give +∞ even for pure releases: no estimate there)
        if e.doc["exact"] == json!(true) && delta > 0.0 {
            if let Some(o) = number(&r["pld_optimistic"]) {
                assert!(
                    eps >= o * (1.0 - 1e-6),
                    "{name}: dpplan {eps} < dp_accounting's optimistic {o}"
                );
                lower_checked += 1;
            }
        }
        // the tree read back by `dpplan account --dp-event` (its zCDP
        // events by their curve only): never below the plan's own ε, and,
        // where it has a zCDP event, never looser than dp_accounting's RDP
        // on the same tree
        let file = dir
            .path()
            .join(format!("{}.again.json", name.replace('/', "_")));
        std::fs::write(&file, serde_json::to_vec(&e.doc).unwrap()).unwrap();
        let again = account_tree(&file, delta);
        let has_zcdp = e.doc["event"].to_string().contains("ZCDpEvent");
        // at δ = 0 a zCDP curve gives no finite ε: nothing is claimed
        let again_eps = number(&again["best"]["epsilon"]).unwrap_or(f64::INFINITY);
        assert!(
            again_eps.is_finite() || (has_zcdp && delta == 0.0),
            "{name}: {again}"
        );
        assert!(
            again_eps >= eps * (1.0 - 1e-12),
            "{name}: the tree re-accounted gives {again_eps} < the plan's {eps}"
        );
        assert_eq!(
            !again["zcdp_events"].as_array().unwrap().is_empty(),
            has_zcdp,
            "{name}"
        );
        if has_zcdp {
            eprintln!(
                "{name}: re-accounted by the zCDP curves {again_eps:.6} (plan {eps:.6}, dp_accounting RDP {})",
                r["rdp"]
            );
            reaccounted_zcdp += 1;
            if let Some(rdp) = number(&r["rdp"]) {
                assert!(
                    again_eps <= rdp * (1.0 + 1e-6),
                    "{name}: dpplan's re-accounted {again_eps} > dp_accounting RDP {rdp}"
                );
            }
        }
        // dp_accounting's own named-tuple JSON reads back into the same tree
        let ours = DpEvent::from_json(&e.doc["event"]).unwrap();
        let theirs = DpEvent::from_json(&r["roundtrip"]).unwrap();
        assert_eq!(ours, theirs, "{name}: the round trip changed the tree");
        eprintln!(
            "{name}: dpplan {eps:.6} at δ {delta:e}; dp_accounting PLD {} / optimistic {} / RDP {}",
            r["pld_pessimistic"], r["pld_optimistic"], r["rdp"]
        );
    }
    eprintln!(
        "dpplan's ε over dp_accounting's pessimistic PLD: at worst {worst:+.2e} relative ({worst_sampled:+.2e} with sampled events)"
    );
    assert!(
        pld_checked >= 10,
        "only {pld_checked} trees the PLD accountant takes"
    );
    assert!(lower_checked >= 8, "only {lower_checked} exact trees");
    assert!(
        reaccounted_zcdp >= 3,
        "only {reaccounted_zcdp} trees with a zCDP event"
    );
}

/// A `ZCDpEvent` (what OpenDP, Tumult and dpplan's own export write for a
/// mechanism known by its zCDP curve) is accounted by the accountants of
/// its RDP curve only: alone it gives OpenDP's published conversion (ρ =
/// 1/32, δ = 10⁻³: ε = 0.6880024554878085, `zCDP_to_approxDP`'s test),
/// the accountants that read a Gaussian's whole profile say they do not
/// apply (a Gaussian stand-in's PLD would give less: 0.59 here), and one
/// more event moves ε (negative control).
#[test]
fn zcdp_events_are_accounted_by_their_curve() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("zcdp.json");
    let z = r#"{"module_name": "dp_accounting.dp_event", "class_name": "ZCDpEvent", "rho": 0.03125, "xi": 0.0}"#;
    std::fs::write(&f, z).unwrap();
    let got = account_tree(&f, 1e-3);
    let eps = got["best"]["epsilon"].as_f64().unwrap();
    assert!(
        (0.6880024554878085..=0.6880024554878085 * (1.0 + 1e-12)).contains(&eps),
        "{eps}"
    );
    assert_eq!(got["best"]["accountant"], json!("zcdp"));
    for a in got["accountants"].as_array().unwrap() {
        let name = a["accountant"].as_str().unwrap();
        let applies = ["classical", "zcdp", "rdp"].contains(&name);
        assert_eq!(a["epsilon"].is_number(), applies, "{a}");
        if !applies {
            assert!(a["error"].as_str().unwrap().contains("zCDP curve"), "{a}");
        }
    }
    // the Gaussian of the same ρ, as an exact event: its PLD is tighter,
    // which a mechanism known only as ρ-zCDP may not claim
    std::fs::write(
        &f,
        r#"{"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent", "noise_multiplier": 4.0}"#,
    )
    .unwrap();
    let gauss = account_tree(&f, 1e-3)["best"]["epsilon"].as_f64().unwrap();
    assert!(gauss < eps * 0.9, "{gauss} vs {eps}");
    // composed with exact events: the sum of ρ (10 Gaussians of σ = 4 add
    // 10/32), and one more zCDP event claims more
    let tree = |n: usize| {
        let zs = vec![z; n].join(", ");
        format!(
            r#"{{"module_name": "dp_accounting.dp_event", "class_name": "ComposedDpEvent", "events": [{zs},
                {{"module_name": "dp_accounting.dp_event", "class_name": "SelfComposedDpEvent", "count": 10,
                  "event": {{"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent", "noise_multiplier": 4.0}}}}]}}"#
        )
    };
    std::fs::write(&f, tree(1)).unwrap();
    let one = account_tree(&f, 1e-3);
    let want = dpplan_accounting::zcdp_epsilon_from_rho(11.0 / 32.0, 1e-3);
    let zc = one["accountants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["accountant"] == json!("zcdp"))
        .unwrap()["epsilon"]
        .as_f64()
        .unwrap();
    assert!(zc >= want && zc <= want * (1.0 + 1e-12), "{zc} vs {want}");
    assert_eq!(one["zcdp_events"].as_array().unwrap().len(), 1);
    std::fs::write(&f, tree(2)).unwrap();
    let two = account_tree(&f, 1e-3)["best"]["epsilon"].as_f64().unwrap();
    assert!(two > one["best"]["epsilon"].as_f64().unwrap());
    // the human form names each zCDP event and what applies
    let o = account_cmd(&f, "1e-3");
    ok(&o);
    let out = text(&o.stdout);
    assert!(
        out.contains("2 ZCDpEvent(s), known only by their zCDP curve")
            && out.contains("the event.events[1]: ZCDpEvent(ρ = 0.03125)"),
        "{out}"
    );
    // ξ > 0 and a sampled zCDP event are named, no ε is claimed
    for body in [
        r#"{"module_name": "dp_accounting.dp_event", "class_name": "ZCDpEvent", "rho": 0.1, "xi": 0.5}"#,
        r#"{"module_name": "dp_accounting.dp_event", "class_name": "PoissonSampledDpEvent", "sampling_probability": 0.1,
            "event": {"module_name": "dp_accounting.dp_event", "class_name": "ZCDpEvent", "rho": 0.1, "xi": 0.0}}"#,
    ] {
        std::fs::write(&f, body).unwrap();
        let o = account_cmd(&f, "1e-6");
        assert_eq!(o.status.code(), Some(1), "{body}");
        assert!(
            text(&o.stderr).contains("claims no ε"),
            "{}",
            text(&o.stderr)
        );
        assert!(text(&o.stdout).is_empty());
    }
}

/// A tree of exact events, read back by `dpplan account --dp-event`, gives
/// the plan's own ε: never below it (the parameters were rounded towards
/// more loss), within 10⁻⁶ (normalised to a shift of 1, a mechanism's
/// parameters differ from the plan's in their last bits, and the PLD's grid
/// follows them: 1.1·10⁻⁷ on laplace-and-gaussian); one release more moves
/// it (negative control).
#[test]
fn an_exported_tree_is_accounted_again_by_dpplan() {
    let dir = tempfile::tempdir().unwrap();
    for (name, src) in GENERATED.iter().filter(|(n, _)| *n != "discrete-gaussian") {
        let plan = dir.path().join(format!("{name}.dpplan"));
        std::fs::write(&plan, src).unwrap();
        let file = dir.path().join(format!("{name}.json"));
        ok(&dpplan(&[
            "export",
            plan.to_str().unwrap(),
            "-o",
            file.to_str().unwrap(),
        ]));
        let doc: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(doc["exact"], json!(true), "{name}");
        let (eps, delta) = (
            doc["epsilon"].as_f64().unwrap(),
            doc["delta"].as_f64().unwrap(),
        );
        let got = account_tree(&file, delta);
        let again = got["best"]["epsilon"].as_f64().unwrap();
        assert!(
            again >= eps * (1.0 - 1e-12) && again <= eps * (1.0 + 1e-6),
            "{name}: {again} vs {eps}"
        );
        // the bare tree (what any tool writes) reads the same
        let bare = dir.path().join(format!("{name}.event.json"));
        std::fs::write(&bare, serde_json::to_vec(&doc["event"]).unwrap()).unwrap();
        let bare_got = account_tree(&bare, delta);
        assert_eq!(bare_got["best"], got["best"], "{name}");
        // negative control: one more self-composition claims more
        let mut grown = doc["event"].clone();
        let first = grown["events"][0].clone();
        if first["class_name"] == json!("SelfComposedDpEvent") {
            grown["events"][0]["count"] = json!(first["count"].as_u64().unwrap() + 1);
        } else {
            grown["events"].as_array_mut().unwrap().push(first);
        }
        std::fs::write(&bare, serde_json::to_vec(&grown).unwrap()).unwrap();
        let g = account_tree(&bare, delta);
        assert!(
            g["best"]["epsilon"].as_f64().unwrap() > again,
            "{name}: one more release did not move ε"
        );
    }
}

/// What dpplan cannot account is named, and no ε is claimed; a malformed
/// file is a clear error with a hint.
#[test]
fn unsupported_and_malformed_trees_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("sgd.json");
    // a DP-SGD run as dp_accounting writes it: 1,000 Poisson-sampled
    // Gaussian steps, accounted (dp_accounting 0.6.0's PLD at δ = 10⁻⁵,
    // value interval 10⁻⁴: 1.515370 pessimistic, 1.4654 optimistic)
    let sgd = r#"{"module_name": "dp_accounting.dp_event", "class_name": "SelfComposedDpEvent", "count": 1000,
            "event": {"module_name": "dp_accounting.dp_event", "class_name": "PoissonSampledDpEvent", "sampling_probability": 0.01,
                      "event": {"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent", "noise_multiplier": 1.1}}}"#;
    std::fs::write(&f, sgd).unwrap();
    let got = account_tree(&f, 1e-5);
    let eps = got["best"]["epsilon"].as_f64().unwrap();
    // (dpplan's sampled leaves split their cells: 1.515408, within 10⁻⁴
    // of the pessimistic 1.515370; 1.523 when each cell went whole to its
    // top, docs/accounting.md)
    assert!((1.4654..=1.515370 * (1.0 + 1e-4)).contains(&eps), "{eps}");
    // and far in its tail (dp_accounting at δ = 10⁻⁹: 2.4079653 pessimistic
    // at 10⁻⁴, 2.4079564 at 10⁻⁵): 2.40813; 2.41622 while the convolutions'
    // tilt was aimed at the truncation point instead of at δ
    let far = account_tree(&f, 1e-9);
    let far = far["best"]["epsilon"].as_f64().unwrap();
    assert!(
        (2.4079564..=2.4079653 * (1.0 + 1e-4)).contains(&far),
        "{far}"
    );
    // one sample shared by several steps is one mixture, not several
    // sampled steps: named, and no ε is claimed
    std::fs::write(
        &f,
        r#"{"module_name": "dp_accounting.dp_event", "class_name": "PoissonSampledDpEvent", "sampling_probability": 0.01,
            "event": {"module_name": "dp_accounting.dp_event", "class_name": "SelfComposedDpEvent", "count": 1000,
                      "event": {"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent", "noise_multiplier": 1.1}}}"#,
    )
    .unwrap();
    let o = account_cmd(&f, "1e-5");
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("PoissonSampledDpEvent") && err.contains("claims no ε"),
        "{err}"
    );
    assert!(
        text(&o.stdout).is_empty(),
        "an ε was printed: {}",
        text(&o.stdout)
    );
    for (body, want) in [
        ("{not json", "is not JSON"),
        (r#"{"class_name": "GaussianDpEvent"}"#, "noise_multiplier"),
        (r#"[1, 2]"#, "class_name"),
        (
            r#"{"module_name": "dp_accounting.dp_event", "class_name": "ComposedDpEvent", "events": [{"class_name": "LaplaceDpEvent", "noise_multiplier": "x"}]}"#,
            "events[0]",
        ),
    ] {
        std::fs::write(&f, body).unwrap();
        let o = account_cmd(&f, "1e-6");
        assert_eq!(o.status.code(), Some(2), "{body}");
        assert!(
            text(&o.stderr).contains(want),
            "{body}: {}",
            text(&o.stderr)
        );
    }
    let o = account_cmd(&f, "1.5");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("not in [0, 1)"),
        "{}",
        text(&o.stderr)
    );
}
