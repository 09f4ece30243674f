//! What a CI job or an editor meets: `dpplan rule` (a code's documentation,
//! from the binary) and `dpplan check -` (a plan on standard input, reported
//! under the name `--stdin-filename` gives).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::{dpplan_piped as dpplan, root, text};

fn docs() -> String {
    std::fs::read_to_string(root().join("docs/diagnostics.md")).unwrap()
}

#[test]
fn rule_prints_the_documented_section_under_every_spelling() {
    let doc = docs();
    let start = doc.find("## DP009\n").unwrap() + "## DP009\n".len();
    let end = start + doc[start..].find("\n## ").unwrap();
    let section = doc[start..end].trim();
    for spelling in ["DP009", "dp009", "dp9", "9", "fresh-rerelease"] {
        let o = dpplan(&["rule", spelling], None);
        assert!(o.status.success(), "{spelling}: {}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(out.starts_with("DP009 fresh-rerelease: "), "{out}");
        assert!(out.contains(section), "{spelling}: {out}");
        // not another code's text
        assert!(!out.contains("**large-delta**"));
    }
    let o = dpplan(&["rule", "DP010", "--json"], None);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["name"], "large-delta");
    assert_eq!(v["severity"], "warning");
    assert!(v["documentation"]
        .as_str()
        .unwrap()
        .starts_with("**large-delta** (warning)."));
}

#[test]
fn rule_refuses_an_unknown_code_and_lists_every_code() {
    let o = dpplan(&["rule", "DP999"], None);
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("`DP999` is not a dpplan diagnostic code"),
        "{err}"
    );
    assert!(err.contains("dpplan rule --list"), "{err}");

    let o = dpplan(&["rule", "--list"], None);
    assert!(o.status.success());
    let list = text(&o.stdout);
    // one line per table row of the document
    let rows = docs().lines().filter(|l| l.starts_with("| [DP")).count();
    assert_eq!(list.lines().count(), rows, "{list}");
    assert!(list
        .lines()
        .any(|l| l.starts_with("DP011  over-budget") && l.contains("error")));
}

#[test]
fn check_reads_standard_input_under_the_name_given() {
    let root = root();
    let plan = std::fs::read(root.join("examples/census/census.dpplan")).unwrap();
    let o = dpplan(
        &[
            "check",
            "-",
            "--stdin-filename",
            "plans/census.dpplan",
            "--format",
            "json",
        ],
        Some(&plan),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"][0]["path"], "plans/census.dpplan", "{v}");

    // a broken plan: its error is located in the name given, exit 1
    let o = dpplan(
        &[
            "check",
            "-",
            "--stdin-filename",
            "broken.dpplan",
            "--color",
            "never",
        ],
        Some(b"plan \"x\" {\n"),
    );
    assert_eq!(o.status.code(), Some(1));
    let out = text(&o.stdout);
    assert!(out.contains("broken.dpplan:1:11"), "{out}");

    // without a name: <stdin>
    let o = dpplan(&["check", "-", "--color", "never"], Some(b"plan \"x\" {\n"));
    assert!(text(&o.stdout).contains("<stdin>:1:11"));

    // misuse is an argument error (exit 2), not a silent default
    let o = dpplan(&["check", "-", "-"], Some(b""));
    assert_eq!(o.status.code(), Some(2));
    let o = dpplan(&["check", "examples", "--stdin-filename", "a.dpplan"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("without `-`"));
    // invalid UTF-8 on stdin: an error that names it
    let o = dpplan(&["check", "-"], Some(&[0x70, 0xff, 0xfe]));
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("not valid UTF-8"),
        "{}",
        text(&o.stderr)
    );
}

fn sarif_of(plan: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "check",
        "-",
        "--stdin-filename",
        "p.dpplan",
        "--format",
        "sarif",
    ];
    args.extend_from_slice(extra);
    let o = dpplan(&args, Some(plan.as_bytes()));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o.stderr)))
}

/// (fingerprint, start line) of every result.
fn prints(sarif: &serde_json::Value) -> Vec<(String, u64)> {
    sarif["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["partialFingerprints"]["dpplan/v1"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                r["locations"][0]["physicalLocation"]["region"]["startLine"]
                    .as_u64()
                    .unwrap(),
            )
        })
        .collect()
}

#[test]
fn sarif_fingerprints_survive_edits_elsewhere_and_rules_carry_their_docs() {
    let root = root();
    let plan =
        std::fs::read_to_string(root.join("tests/corpus/dp009-fresh-rerelease.dpplan")).unwrap();
    let before = prints(&sarif_of(&plan, &[]));
    assert!(!before.is_empty());
    // three comment lines above: every region moves, no fingerprint does
    let moved = prints(&sarif_of(&format!("// a\n// b\n// c\n{plan}"), &[]));
    assert_eq!(before.len(), moved.len());
    for ((p0, l0), (p1, l1)) in before.iter().zip(&moved) {
        assert_eq!(p0, p1);
        assert_eq!(l0 + 3, *l1);
    }
    // distinct results, distinct fingerprints
    let mut unique: Vec<&String> = before.iter().map(|(p, _)| p).collect();
    unique.dedup();
    assert_eq!(unique.len(), before.len());
    // negative control: the flagged text itself changes -> a new fingerprint
    let edited = plan.replacen("schedule", "schedule  ", 1);
    let changed = prints(&sarif_of(&edited.replacen("10 times", "11 times", 1), &[]));
    assert!(changed.iter().any(|c| !before.contains(c)), "{changed:?}");

    // rules: documentation as help; a link only where a base is given
    let s = sarif_of(&plan, &[]);
    let rule = &s["runs"][0]["tool"]["driver"]["rules"][9];
    assert_eq!(rule["id"], "DP009");
    assert!(rule["help"]["markdown"]
        .as_str()
        .unwrap()
        .contains("**fresh-rerelease** (hint)"));
    assert!(rule.get("helpUri").is_none());
    let s = sarif_of(
        &plan,
        &["--docs-url", "https://docs.example/diagnostics.md"],
    );
    assert_eq!(
        s["runs"][0]["tool"]["driver"]["rules"][9]["helpUri"],
        "https://docs.example/diagnostics.md#dp009"
    );
    // the plan's claim travels with the run
    let claim = &s["runs"][0]["properties"]["plans"][0];
    assert_eq!(claim["path"], "p.dpplan");
    assert!(claim["epsilon"].as_f64().unwrap() > 0.0);
    assert_eq!(claim["budget"]["epsilon"], 3.0);
}

/// Parses JUnit XML with Python's ElementTree (an independent XML parser)
/// and returns, per suite, (name, tests, failures, failing case names).
fn junit_suites(xml: &[u8]) -> Vec<(String, usize, usize, Vec<String>)> {
    let script = r#"
import json, sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
assert root.tag == "testsuites"
out = []
for s in root.findall("testsuite"):
    cases = s.findall("testcase")
    failing = [c.get("name") for c in cases if c.find("failure") is not None]
    assert int(s.get("tests")) == len(cases)
    assert int(s.get("failures")) == len(failing)
    out.append([s.get("name"), len(cases), len(failing), failing])
assert int(root.get("tests")) == sum(o[1] for o in out)
assert int(root.get("failures")) == sum(o[2] for o in out)
print(json.dumps(out))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    child.stdin.take().unwrap().write_all(xml).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "not valid JUnit XML:\n{}", text(xml));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn junit_report_fails_what_check_fails() {
    let root = root();
    let p = |f: &str| root.join(f).to_str().unwrap().to_string();
    let (good, bad, warn) = (
        p("examples/census/census.dpplan"),
        p("tests/corpus/dp001-unbounded-contribution.dpplan"),
        p("tests/corpus/dp008-per-person.dpplan"),
    );
    let o = dpplan(&["check", "--format", "junit", &good, &bad, &warn], None);
    assert_eq!(o.status.code(), Some(1));
    let suites = junit_suites(&o.stdout);
    assert_eq!(suites.len(), 3);
    assert_eq!((suites[0].1, suites[0].2), (1, 0), "{suites:?}");
    assert!(suites[1]
        .3
        .iter()
        .any(|n| n.starts_with("DP001 unbounded-contribution (line 7)")));
    assert!(
        suites[1].3.contains(&"budget".to_string()),
        "no claim: the budget case fails"
    );
    assert_eq!(suites[2].2, 0, "a warning passes");
    // the claim is in the budget case's output
    // the claim is the one `--format json` gives, with its accountant
    let j = dpplan(&["check", "--format", "json", &good], None);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    let f = &v["files"][0];
    let accountant = dpplan_vocab_title(f["accountant"].as_str().unwrap());
    let claim = format!(
        "<system-out>ε = {}, δ = 1e-9 ({accountant}); budget ε = 2, δ = 1e-9</system-out>",
        dpplan_render::num(f["epsilon"].as_f64().unwrap())
    );
    let out = text(&o.stdout);
    assert!(out.contains(&claim), "{claim} not in {out}");
    // denied warnings fail, in the report as in the exit code
    let o = dpplan(
        &["check", "--format", "junit", "--deny", "warnings", &warn],
        None,
    );
    assert_eq!(o.status.code(), Some(1));
    let suites = junit_suites(&o.stdout);
    assert_eq!(suites[0].3.len(), 1);
    assert!(suites[0].3[0].starts_with("DP008"));
    // an over-budget plan fails its budget case
    let over = p("tests/corpus/dp011-over-budget.dpplan");
    let o = dpplan(&["check", "--format", "junit", &over], None);
    let suites = junit_suites(&o.stdout);
    assert!(suites[0].3.contains(&"budget".to_string()), "{suites:?}");
}

/// Suppressed diagnostics leave the counts and the exit code, and are kept,
/// with their reasons, in JSON (`suppressed`) and SARIF (`suppressions`).
#[test]
fn suppressions_are_listed_with_their_reasons() {
    let root = root();
    let near = root.join("tests/corpus/dp020-near-miss.dpplan");
    let path = near.to_str().unwrap();
    let o = dpplan(&["check", path, "--format", "json"], None);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["files"][0]["diagnostics"].as_array().unwrap().is_empty());
    let s = v["files"][0]["suppressed"].as_array().unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0]["code"], "DP009");
    assert_eq!(s[0]["reason"], "a weekly re-release reviewed in PRIV-12");
    assert_eq!(s[0]["suppressed_by"]["start"]["line"], 15);
    // negative control: without the comments, the hints come back
    let bare: String = std::fs::read_to_string(&near)
        .unwrap()
        .lines()
        .map(|l| l.split("// dpplan:").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let o = dpplan(&["check", "-", "--format", "json"], Some(bare.as_bytes()));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["files"][0]["diagnostics"].as_array().unwrap().len(), 2);
    assert!(v["files"][0].get("suppressed").is_none());
    // SARIF keeps them as suppressed results
    let o = dpplan(&["check", path, "--format", "sarif"], None);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = v["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["suppressions"][0]["kind"], "inSource");
        assert!(
            r["suppressions"][0]["justification"]
                .as_str()
                .unwrap()
                .len()
                > 5
        );
    }
    // the human summary says how many were suppressed
    let o = dpplan(&["check", path, "--color", "never"], None);
    assert!(text(&o.stdout).contains("0 hints (2 suppressed by `dpplan: allow` comments)"));
}

/// An accountant's long name, as reports print it.
fn dpplan_vocab_title(name: &str) -> &'static str {
    dpplan_check::Accountant::from_name(name).unwrap().title()
}

/// The nesting limit through the binary, as a CI job meets it: `dpplan
/// check` and `dpplan fmt` on filters nested past 32 levels of
/// parentheses and `not` (pest runs without its stack probe, so the item
/// splitter's bound is all that stands between such a plan and a stack
/// overflow) exit 1 with DP016 and its hint, never a crash; at 32 levels
/// the plan checks clean (the negative control).
#[test]
fn filters_nested_past_the_limit_are_a_dp016_not_a_crash() {
    let plan = |filter: &str| {
        format!(
            "plan \"p\" {{\n  privacy {{ unit row adjacency replace budget epsilon 1 }}\n  dataset t {{ source \"t.csv\" columns {{ a: int in 0..10 }} }}\n  query q {{\n    count(t where {filter})\n    noise laplace scale 1\n    schedule once\n  }}\n}}\n"
        )
    };
    let deep = [
        format!("{}a > 1", "not ".repeat(100_000)),
        format!("{}a > 1{}", "not (".repeat(50_000), ")".repeat(50_000)),
        format!("{}not not a > 1{}", "not (".repeat(15), ")".repeat(15)),
    ];
    for (k, filter) in deep.iter().enumerate() {
        let src = plan(filter);
        let o = dpplan(&["check", "-", "--format", "json"], Some(src.as_bytes()));
        assert_eq!(o.status.code(), Some(1), "case {k}: {}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let diags = v["files"][0]["diagnostics"].as_array().unwrap();
        assert!(
            diags.iter().any(|d| d["code"] == "DP016"
                && d["message"].as_str().unwrap().contains("`not`")
                && d["help"].as_str().unwrap().contains("`not not p` is `p`")),
            "case {k}: {diags:?}"
        );
        assert!(v["files"][0]["epsilon"].is_null(), "case {k}: a claim");
        assert!(!text(&o.stderr).contains("panicked"), "case {k}");
        let o = dpplan(&["fmt", "-"], Some(src.as_bytes()));
        assert_ne!(o.status.code(), Some(0), "case {k}: fmt accepted it");
        assert!(!text(&o.stderr).contains("panicked"), "case {k}");
    }
    let src = plan(&format!(
        "{}not a > 1{}",
        "not (".repeat(15),
        ")".repeat(15)
    ));
    let o = dpplan(&["check", "-", "--format", "json"], Some(src.as_bytes()));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        !v["files"][0]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "DP016"),
        "{v}"
    );
}
