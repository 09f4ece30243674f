//! Organisation policies (`dpplan.toml`) as a CI job meets them: the real
//! binary on the fixtures in tests/policy/.
//!
//! - tests/policy/org/: one plan per rule (and a near miss that breaks
//!   none), each annotated with the diagnostics it must get
//!   (`// error[DP100]` on the line where the diagnostic starts), under a
//!   policy that sets every limit, two rule levels and a per-path override;
//! - tests/policy/shared/: three plans that each fit their own budget and
//!   together exceed the budget their data source shares;
//! - tests/policy/errors/: policy files that cannot be used, each located.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{dpplan_at_root as dpplan, root};

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
}

/// (line, "severity[CODE]") of every diagnostic of the first file.
fn found(v: &serde_json::Value) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap(),
                format!(
                    "{}[{}]",
                    d["severity"].as_str().unwrap(),
                    d["code"].as_str().unwrap()
                ),
            )
        })
        .collect();
    out.sort();
    out
}

/// The annotations of a fixture: `// error[DP100] warning[DP008]` at the
/// end of a line.
fn expected(text: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for word in line.split_whitespace() {
            let is_annotation = ["error[DP", "warning[DP", "hint[DP"]
                .iter()
                .any(|p| word.starts_with(p));
            if is_annotation && word.ends_with(']') {
                out.push((i as u64 + 1, word.to_string()));
            }
        }
    }
    out.sort();
    out
}

fn fixtures(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            fixtures(&p, out);
        } else if p.extension().is_some_and(|x| x == "dpplan") {
            out.push(p);
        }
    }
}

#[test]
fn every_organisation_rule_triggers_and_its_near_miss_does_not() {
    let mut files = Vec::new();
    fixtures(&root().join("tests/policy/org"), &mut files);
    files.sort();
    assert!(files.len() >= 15, "{files:?}");
    let mut codes_seen = std::collections::BTreeSet::new();
    for f in &files {
        let rel = f
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let o = dpplan(&["check", &rel, "--format", "json"]);
        let got = found(&json(&o));
        let want = expected(&std::fs::read_to_string(f).unwrap());
        assert_eq!(got, want, "{rel}");
        let fails = want.iter().any(|(_, w)| w.starts_with("error["));
        assert_eq!(o.status.code(), Some(if fails { 1 } else { 0 }), "{rel}");
        codes_seen.extend(want.into_iter().map(|(_, w)| w));
    }
    // every policy rule is exercised, at its level
    for code in [
        "DP100", "DP101", "DP102", "DP103", "DP104", "DP105", "DP106",
    ] {
        assert!(
            codes_seen.iter().any(|c| c.contains(code)),
            "no fixture triggers {code}: {codes_seen:?}"
        );
    }
}

/// The same plans under an empty policy: the policy's rules are gone and
/// the rule levels are the defaults again (negative controls).
#[test]
fn without_the_policy_nothing_of_it_remains() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    let e = empty.to_str().unwrap();
    for f in [
        "dp100-epsilon",
        "dp103-mechanism",
        "dp105-noise",
        "dp106-accuracy",
    ] {
        let v = json(&dpplan(&[
            "check",
            &format!("tests/policy/org/{f}.dpplan"),
            "--format",
            "json",
            "--config",
            e,
        ]));
        assert!(found(&v).is_empty(), "{f}: {:?}", found(&v));
    }
    // DP009 (turned off by the policy) is a hint by default
    let v = json(&dpplan(&[
        "check",
        "tests/policy/org/dp009-off.dpplan",
        "--format",
        "json",
        "--config",
        e,
    ]));
    assert!(
        found(&v).iter().any(|(_, c)| c == "hint[DP009]"),
        "{:?}",
        found(&v)
    );
    // DP010 (raised to an error by the policy) is a warning by default
    let v = json(&dpplan(&[
        "check",
        "tests/policy/org/dp101-delta.dpplan",
        "--format",
        "json",
        "--config",
        e,
    ]));
    assert_eq!(found(&v), vec![(6, "warning[DP010]".to_string())]);
}

/// The override applies by path: the research plan, moved out of
/// experiments/, is held to the global limits again.
#[test]
fn overrides_apply_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let org = root().join("tests/policy/org");
    std::fs::copy(org.join("dpplan.toml"), dir.path().join("dpplan.toml")).unwrap();
    std::fs::copy(
        org.join("experiments/research.dpplan"),
        dir.path().join("research.dpplan"),
    )
    .unwrap();
    let plan = dir.path().join("research.dpplan");
    let v = json(&dpplan(&[
        "check",
        plan.to_str().unwrap(),
        "--format",
        "json",
    ]));
    let got = found(&v);
    assert!(got.contains(&(6, "error[DP100]".to_string())), "{got:?}");
    assert!(got.contains(&(20, "error[DP106]".to_string())), "{got:?}");
}

fn shared_of(v: &serde_json::Value) -> &serde_json::Value {
    &v["shared_budgets"][0]
}

#[test]
fn a_shared_budget_composes_every_plan_reading_its_source() {
    let o = dpplan(&["check", "tests/policy/shared", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let s = shared_of(&v);
    assert_eq!(s["source"], "data/visits.csv");
    assert_eq!(s["within_budget"], false);
    // three Gaussian counts (Δ₂ = 1, σ = 3) compose to μ = √3/3 exactly
    // (Dong–Roth–Su); each alone is μ = 1/3
    let total = s["epsilon"].as_f64().unwrap();
    let exact = dpplan_accounting::gdp_epsilon(3f64.sqrt() / 3.0, 1e-8);
    assert!((total / exact - 1.0).abs() < 1e-9, "{total} vs {exact}");
    let shares = s["shares"].as_array().unwrap();
    assert_eq!(shares.len(), 3, "the plan on another source is not counted");
    let alone = dpplan_accounting::gdp_epsilon(1.0 / 3.0, 1e-8);
    for sh in shares {
        let e = sh["epsilon"].as_f64().unwrap();
        assert!((e / alone - 1.0).abs() < 1e-9, "{sh}");
        assert!(e < 3.0, "each fits alone");
    }
    // DP107 on the dataset of each plan that reads the source, naming the shares
    for (i, f) in v["files"].as_array().unwrap().iter().enumerate() {
        let d107: Vec<&serde_json::Value> = f["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == "DP107")
            .collect();
        if i < 3 {
            assert_eq!(d107.len(), 1, "{f}");
            assert_eq!(d107[0]["range"]["start"]["line"], 11);
            let m = d107[0]["message"].as_str().unwrap();
            assert!(
                m.contains("tests/policy/shared/a.dpplan ε = 1.75429"),
                "{m}"
            );
            assert!(m.contains("compose to ε = 3.16256"), "{m}");
        } else {
            assert!(d107.is_empty(), "team d reads another table: {f}");
        }
    }
    // the document, shared budgets included, follows the documented schema
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/json-output.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let mut broken = v.clone();
    broken["shared_budgets"][0]["within_budget"] = serde_json::json!("no");
    assert!(!validator.is_valid(&broken));
    // the human output names the total and each share
    let o = dpplan(&["check", "tests/policy/shared"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("shared budget `data/visits.csv`"), "{out}");
    assert!(out.contains(": OVER"), "{out}");
}

#[test]
fn a_shared_budget_that_fits_and_its_negative_controls() {
    // two of the three plans fit together (negative control: one plan fewer)
    let o = dpplan(&[
        "check",
        "tests/policy/shared/a.dpplan",
        "tests/policy/shared/b.dpplan",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(shared_of(&v)["within_budget"], true);
    let two = dpplan_accounting::gdp_epsilon(2f64.sqrt() / 3.0, 1e-8);
    let e = shared_of(&v)["epsilon"].as_f64().unwrap();
    assert!((e / two - 1.0).abs() < 1e-9, "{e} vs {two}");
    // all three under a larger shared budget
    let o = dpplan(&[
        "check",
        "tests/policy/shared",
        "--config",
        "tests/policy/shared/fits.toml",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(shared_of(&json(&o))["within_budget"], true);
}

#[test]
fn a_policy_file_that_cannot_be_used_is_located() {
    let cases = [
        ("unknown-key", "4:1", "unknown field `max-epsiolon`"),
        ("wrong-type", "3:15", "invalid type: string \"two\""),
        (
            "lower-error",
            "4:9",
            "DP001 (unbounded-contribution) cannot be lowered",
        ),
        (
            "unknown-code",
            "3:1",
            "`DP999` is not a dpplan diagnostic code",
        ),
        ("bad-glob", "3:25", "`a/[b` is not a glob"),
        ("bad-unit", "3:17", "unknown variant `person`"),
        ("negative", "3:13", "`max-delta` must be in (0, 1]"),
        ("syntax", "2:8", "unclosed table"),
    ];
    for (name, at, message) in cases {
        let file = format!("tests/policy/errors/{name}.toml");
        let o = dpplan(&[
            "check",
            "tests/policy/org/near-miss.dpplan",
            "--config",
            &file,
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        // rendered as a plan's diagnostics are: DP108, located in the file
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error[DP108]: "), "{name}: {err}");
        assert!(err.contains(&format!("┌─ {file}:{at}\n")), "{name}: {err}");
        assert!(err.contains(message), "{name}: {err}");
        assert!(o.stdout.is_empty(), "{name}: no plan's result is written");
        // and the same on standard error in the machine formats, whose
        // output would otherwise claim a check under no policy
        for format in ["json", "sarif", "github"] {
            let m = dpplan(&[
                "check",
                "tests/policy/org/near-miss.dpplan",
                "--config",
                &file,
                "--format",
                format,
            ]);
            assert_eq!(m.status.code(), Some(2), "{name} {format}");
            assert!(m.stdout.is_empty(), "{name} {format}");
            assert_eq!(m.stderr, o.stderr, "{name} {format}");
        }
    }
}

/// Plans that protect different units on one source cannot be composed
/// into one guarantee: DP107 says so instead of printing a total.
#[test]
fn plans_with_different_units_are_not_composed() {
    let dir = tempfile::tempdir().unwrap();
    let shared = root().join("tests/policy/shared");
    std::fs::copy(shared.join("dpplan.toml"), dir.path().join("dpplan.toml")).unwrap();
    std::fs::copy(shared.join("a.dpplan"), dir.path().join("a.dpplan")).unwrap();
    let rows = std::fs::read_to_string(shared.join("b.dpplan"))
        .unwrap()
        .replace("unit user by user_id", "unit row");
    std::fs::write(dir.path().join("b.dpplan"), rows).unwrap();
    let o = dpplan(&["check", dir.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let s = shared_of(&v);
    assert!(s["epsilon"].is_null(), "{s}");
    assert!(
        s["problem"].as_str().unwrap().contains("different units"),
        "{s}"
    );
    let messages: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["diagnostics"].as_array().unwrap())
        .filter(|d| d["code"] == "DP107")
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].contains("cannot be checked"), "{messages:?}");
}
