//! The golden corpus: every file under tests/corpus/ states its expected
//! diagnostics inline, as `// error[DP012]` (or `warning[…]`, `hint[…]`) on
//! the line the diagnostic points at. The test checks that the checker
//! reports exactly those, that `dpplan check` exits 1 exactly when one of
//! them is an error, and that every diagnostic code has a file that triggers
//! it and a near miss (`dpNNN-near-miss.dpplan`) that does not (the
//! policy's codes, DP100 and up, in tests/policy/).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dpplan_diagnostics::{Code, LineIndex};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus")
}

fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "dpplan"))
        .collect();
    files.sort();
    files
}

type Expectation = (usize, String, String); // (line, severity, code)

/// Parses `// error[DP001]`-style expectations out of comments.
fn expectations(text: &str) -> BTreeSet<Expectation> {
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let Some(pos) = line.find("//") else { continue };
        let comment = &line[pos..];
        for sev in ["error", "warning", "hint"] {
            let pat = format!("{sev}[");
            let mut rest = comment;
            while let Some(at) = rest.find(&pat) {
                let after = &rest[at + pat.len()..];
                if let Some(end) = after.find(']') {
                    out.insert((i + 1, sev.to_string(), after[..end].to_string()));
                }
                rest = &rest[at + pat.len()..];
            }
        }
    }
    out
}

fn actual(text: &str) -> BTreeSet<Expectation> {
    let analysis = dpplan_check::analyze(text);
    let index = LineIndex::new(text);
    analysis
        .diagnostics
        .iter()
        .map(|d| {
            (
                index.line_col(text, d.primary.span.start).line,
                d.severity.as_str().to_string(),
                d.code.as_str().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_corpus_file_reports_exactly_its_expectations() {
    let mut failures = Vec::new();
    for path in corpus_files() {
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        let expected = expectations(&text);
        let got = actual(&text);
        if expected != got {
            let missing: Vec<_> = expected.difference(&got).collect();
            let extra: Vec<_> = got.difference(&expected).collect();
            failures.push(format!(
                "{}:\n  missing: {missing:?}\n  unexpected: {extra:?}\n  all diagnostics: {:#?}",
                path.display(),
                dpplan_check::analyze(&text)
                    .diagnostics
                    .iter()
                    .map(|d| format!("{} {}", d.code, d.message))
                    .collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `suggests[laplace]` in a comment: a diagnostic on that line offers
/// "did you mean `laplace`?" (its help starts with it).
fn suggestions_expected(text: &str) -> BTreeSet<(usize, String)> {
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let Some(pos) = line.find("//") else { continue };
        let mut rest = &line[pos..];
        while let Some(at) = rest.find("suggests[") {
            let after = &rest[at + "suggests[".len()..];
            if let Some(end) = after.find(']') {
                out.insert((i + 1, after[..end].to_string()));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn every_did_you_mean_is_expected_and_every_expected_one_is_given() {
    let mut failures = Vec::new();
    let mut seen = 0;
    for path in corpus_files() {
        let text = std::fs::read_to_string(&path).expect("readable corpus file");
        let index = LineIndex::new(&text);
        let analysis = dpplan_check::analyze(&text);
        let got: BTreeSet<(usize, String)> = analysis
            .diagnostics
            .iter()
            .filter_map(|d| {
                let word = d.suggestion.clone()?;
                let help = d.help.as_deref().unwrap_or("");
                assert!(
                    help.starts_with(&format!("did you mean `{word}`?")),
                    "{}: {help}",
                    path.display()
                );
                Some((index.line_col(&text, d.primary.span.start).line, word))
            })
            .collect();
        let expected = suggestions_expected(&text);
        seen += expected.len();
        if got != expected {
            failures.push(format!(
                "{}: expected {expected:?}, got {got:?}",
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(seen >= 5, "the corpus expects only {seen} suggestions");
}

#[test]
fn every_code_has_a_trigger_and_a_near_miss() {
    let files = corpus_files();
    // the policy's codes (DP100 and up) need a policy file: their triggers
    // and near misses are in tests/policy/ (crates/dpplan-cli/tests/it/policy_cli.rs)
    for code in Code::ALL.iter().filter(|c| !c.is_policy()) {
        let prefix = code.as_str().to_ascii_lowercase();
        let triggers: Vec<&PathBuf> = files
            .iter()
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.starts_with(&prefix) && !name.contains("near-miss")
            })
            .collect();
        assert!(!triggers.is_empty(), "no corpus file triggers {code}");
        for t in &triggers {
            let text = std::fs::read_to_string(t).unwrap();
            assert!(
                expectations(&text)
                    .iter()
                    .any(|(_, _, c)| c == code.as_str()),
                "{} is named for {code} but does not expect it",
                t.display()
            );
        }
        let near = corpus_dir().join(format!("{prefix}-near-miss.dpplan"));
        let text = std::fs::read_to_string(&near)
            .unwrap_or_else(|_| panic!("missing near miss {}", near.display()));
        assert!(
            !actual(&text).iter().any(|(_, _, c)| c == code.as_str()),
            "the near miss for {code} triggers it"
        );
    }
}

#[test]
fn the_cli_exits_1_exactly_for_files_with_errors() {
    for path in corpus_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let has_error = expectations(&text).iter().any(|(_, sev, _)| sev == "error");
        let out = crate::support::command()
            .args(["check", "--format", "json"])
            .arg(&path)
            .output()
            .expect("run dpplan");
        let code = out.status.code();
        assert_eq!(
            code,
            Some(if has_error { 1 } else { 0 }),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stdout)
        );
        // The JSON lists exactly the expected codes.
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
        let codes: BTreeSet<String> = json["files"][0]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["code"].as_str().unwrap().to_string())
            .collect();
        let expected: BTreeSet<String> =
            expectations(&text).into_iter().map(|(_, _, c)| c).collect();
        assert_eq!(codes, expected, "{}", path.display());
    }
}

#[test]
fn every_example_checks_clean() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let out = crate::support::command()
        .args(["check", "--format", "json"])
        .arg(&examples)
        .output()
        .expect("run dpplan");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = json["files"].as_array().unwrap();
    assert!(files.len() >= 5, "expected at least five examples");
    for f in files {
        assert!(
            f["epsilon"].as_f64().is_some(),
            "{} has no total",
            f["path"]
        );
        assert_eq!(f["within_budget"], serde_json::Value::Bool(true));
        // Every shipped example is one well-formed plan in the grammar.
        let text = std::fs::read_to_string(f["path"].as_str().unwrap()).unwrap();
        dpplan_syntax::parse_strict(&text).unwrap_or_else(|e| panic!("{}: {e}", f["path"]));
    }
}

#[test]
fn every_code_is_documented() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/diagnostics.md"),
    )
    .unwrap();
    for code in Code::ALL {
        assert!(
            doc.contains(&format!("## {}\n", code.as_str())),
            "docs/diagnostics.md lacks {code}"
        );
        assert!(
            doc.contains(&format!("`{}`", code.name())),
            "docs/diagnostics.md lacks the name of {code}"
        );
    }
}
