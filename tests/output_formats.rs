//! `dpplan check` in every output format: snapshots (tests/snapshots/), the
//! JSON against its documented schema (docs/json-output.schema.json), the
//! SARIF against the official SARIF 2.1.0 schema, exit codes.

use std::path::Path;
use std::process::Output;

use crate::support::{dpplan_at_root as dpplan, root};

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("UTF-8 output")
}

const FILES: &[&str] = &[
    "examples/app-events/app-events.dpplan",
    "tests/corpus/dp011-over-budget.dpplan",
    "tests/corpus/dp000-syntax.dpplan",
];

fn schema(path: &Path) -> jsonschema::Validator {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run scripts/test-deps.sh (the README's test command does)",
            path.display()
        )
    });
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("a valid schema")
}

fn assert_valid(v: &jsonschema::Validator, doc: &serde_json::Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match its schema:\n{}",
        errors.join("\n")
    );
}

#[test]
fn human_snapshots() {
    for f in FILES {
        let out = dpplan(&["check", "--color", "never", f]);
        insta::assert_snapshot!(format!("human__{}", name(f)), stdout(&out));
    }
}

#[test]
fn github_snapshots() {
    for f in FILES {
        let out = dpplan(&["check", "--format", "github", f]);
        insta::assert_snapshot!(format!("github__{}", name(f)), stdout(&out));
    }
}

#[test]
fn json_snapshots_and_schema() {
    let v = schema(&root().join("docs/json-output.schema.json"));
    for f in FILES {
        let out = dpplan(&["check", "--format", "json", f]);
        let text = stdout(&out);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_valid(&v, &doc, f);
        insta::assert_snapshot!(format!("json__{}", name(f)), text);
    }
    // All examples and the whole corpus, at once.
    let out = dpplan(&["check", "--format", "json", "examples", "tests/corpus"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&v, &doc, "examples + corpus");
    // The schema is not vacuous: a broken document fails it.
    let mut broken = doc.clone();
    broken["files"][0]["diagnostics"] = serde_json::json!([{"code": "E1"}]);
    assert!(!v.is_valid(&broken));
}

#[test]
fn sarif_validates_against_the_sarif_2_1_0_schema() {
    let v = schema(&root().join("target/test-deps/sarif-2.1.0.json"));
    for f in FILES {
        let out = dpplan(&["check", "--format", "sarif", f]);
        let text = stdout(&out);
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_valid(&v, &doc, f);
        insta::assert_snapshot!(format!("sarif__{}", name(f)), text);
    }
    let out = dpplan(&["check", "--format", "sarif", "examples", "tests/corpus"]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&v, &doc, "examples + corpus");
    let mut broken = doc.clone();
    broken["runs"][0]["results"][0]["level"] = serde_json::json!("fatal");
    assert!(
        !v.is_valid(&broken),
        "the SARIF schema must reject an invalid level"
    );
}

#[test]
fn exit_codes() {
    assert_eq!(dpplan(&["check", "examples"]).status.code(), Some(0));
    assert_eq!(
        dpplan(&["check", "tests/corpus/dp011-over-budget.dpplan"])
            .status
            .code(),
        Some(1)
    );
    // warnings pass unless denied
    assert_eq!(
        dpplan(&["check", "examples/app-events"]).status.code(),
        Some(0)
    );
    assert_eq!(
        dpplan(&["check", "--deny", "warnings", "examples/app-events"])
            .status
            .code(),
        Some(1)
    );
    // usage and IO errors: 2, with a message on stderr
    let missing = dpplan(&["check", "no/such/file.dpplan"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/file.dpplan"));
    assert_eq!(
        dpplan(&["check", "--format", "xml", "examples"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(dpplan(&["check"]).status.code(), Some(2));
    // not UTF-8
    let dir = std::env::temp_dir().join(format!("dpplan-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.dpplan");
    std::fs::write(&bad, b"plan \"x\" {\xff}").unwrap();
    let out = dpplan(&["check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("UTF-8"));
}

fn name(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .replace('-', "_")
}

/// A plan large enough that `dpplan check --format json` renders its
/// queries array on two threads and splices it into the stream: the
/// binary's output is valid against the schema and has every query, in
/// order, with its own pure cost (5 rows at scale 1000 + i). (The splice is
/// compared byte for byte with the one-thread document in
/// dpplan-render's `query_array` tests.)
#[test]
fn a_large_plan_json_is_complete_and_valid() {
    let n = 5000;
    let mut text = String::from(
        "plan \"large\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 1000\n  }\n  dataset visits {\n    column uid : id\n    contribution {\n      rows_per_unit 5\n    }\n  }\n",
    );
    for i in 0..n {
        text += &format!(
            "  query q{i} {{\n    count(visits)\n    noise laplace scale {}\n    schedule once\n  }}\n",
            1000 + i
        );
    }
    text += "}\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.dpplan");
    std::fs::write(&path, &text).unwrap();
    let out = dpplan(&["check", "--format", "json", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_valid(
        &schema(&root().join("docs/json-output.schema.json")),
        &doc,
        "the large plan's JSON",
    );
    let queries = doc["files"][0]["queries"].as_array().expect("queries");
    assert_eq!(queries.len(), n);
    for (i, q) in queries.iter().enumerate() {
        assert_eq!(q["name"], format!("q{i}"));
        let want = 5.0 / (1000 + i) as f64;
        let got = q["total"]["epsilon"].as_f64().unwrap();
        assert!((got - want).abs() <= 1e-12 * want, "q{i}: {got} vs {want}");
    }
}
