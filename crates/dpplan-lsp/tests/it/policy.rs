//! The server applies the plan's `dpplan.toml` as `dpplan check` does: the
//! nearest one up from the document's file, its rule levels, per-path
//! overrides and organisation rules; a broken policy file is one DP108
//! diagnostic; a changed file is read again.

use std::path::Path;

use crate::common::*;
use serde_json::{json, Value};

const PLAN: &str = "plan \"p\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 3\n  }\n  dataset visits {\n    column uid : id\n    column n : int in [0, 5]\n  }\n  query total {\n    sum(visits.n)\n    noise laplace scale 50\n    schedule once\n  }\n}\n";

const POLICY: &str = "[rules]\nDP008 = \"error\"\n\n[limits]\nmax-epsilon = 2\n\n[[overrides]]\npaths = [\"experiments/*.dpplan\"]\nrules = { DP008 = \"off\" }\nlimits = { max-epsilon = 10 }\n";

fn uri(path: &Path) -> String {
    format!("file://{}", path.display()).replace(' ', "%20")
}

/// (code, LSP severity) of each diagnostic.
fn codes(diags: &[Value]) -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = diags
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or("").to_string(),
                d["severity"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    v.sort();
    v
}

/// What `dpplan check` reports for the plan at `path` (the same functions).
fn cli(path: &Path, text: &str) -> Vec<(String, i64)> {
    let mut a = dpplan_ide::dpplan_check::analyze(text);
    if let Some(file) = dpplan_policy::discover(path) {
        let policy = dpplan_policy::Policy::load(&file).unwrap();
        dpplan_policy::apply(&policy, path, &mut a);
    }
    let mut v: Vec<(String, i64)> = a
        .diagnostics
        .iter()
        .map(|d| {
            let sev = match d.severity {
                dpplan_ide::Severity::Error => 1,
                dpplan_ide::Severity::Warning => 2,
                dpplan_ide::Severity::Hint => 4,
            };
            (d.code.as_str().to_string(), sev)
        })
        .collect();
    v.sort();
    v
}

fn write_plan(dir: &Path, rel: &str) -> std::path::PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, PLAN).unwrap();
    path
}

#[test]
fn the_nearest_policy_sets_levels_overrides_and_organisation_rules() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo with space");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("dpplan.toml"), POLICY).unwrap();
    let plain = write_plan(&root, "plans/a.dpplan");
    let experiment = write_plan(&root, "experiments/b.dpplan");
    let outside = write_plan(dir.path(), "elsewhere/c.dpplan");
    let mut c = Client::utf16();

    let got = codes(&c.open(&uri(&plain), PLAN));
    // DP008 raised to an error, DP100: the budget is above max-epsilon
    assert!(got.contains(&("DP008".into(), 1)), "{got:?}");
    assert!(got.contains(&("DP100".into(), 1)), "{got:?}");
    assert_eq!(got, cli(&plain, PLAN));

    // the override: DP008 off, a larger ε allowed
    let got = codes(&c.open(&uri(&experiment), PLAN));
    assert!(
        !got.iter()
            .any(|(code, _)| code == "DP008" || code == "DP100"),
        "{got:?}"
    );
    assert_eq!(got, cli(&experiment, PLAN));

    // negative control: no policy above the plan, DP008 a warning
    let got = codes(&c.open(&uri(&outside), PLAN));
    assert!(got.contains(&("DP008".into(), 2)), "{got:?}");
    assert!(!got.iter().any(|(code, _)| code == "DP100"), "{got:?}");
    assert_eq!(got, cli(&outside, PLAN));

    // an unsaved buffer has no path, hence no policy
    let got = codes(&c.open("untitled:Untitled-1", PLAN));
    assert!(got.contains(&("DP008".into(), 2)), "{got:?}");
    assert!(c.shutdown());
}

#[test]
fn a_broken_policy_is_one_diagnostic_and_a_fixed_one_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("dpplan.toml");
    std::fs::write(&toml, POLICY).unwrap();
    let plan = write_plan(dir.path(), "a.dpplan");
    let u = uri(&plan);
    let mut c = Client::utf16();
    let before = codes(&c.open(&u, PLAN));
    assert!(before.contains(&("DP100".into(), 1)), "{before:?}");

    // The file breaks; the client reports the change.
    std::fs::write(&toml, "[limits]\nmax-epsilon = \"two\"\n").unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({ "changes": [{ "uri": uri(&toml), "type": 2 }] }),
    );
    let diags = c.diagnostics_for(1, PLAN);
    let broken: Vec<&Value> = diags.iter().filter(|d| d["code"] == "DP108").collect();
    assert_eq!(broken.len(), 1, "{diags:#?}");
    let message = broken[0]["message"].as_str().unwrap();
    assert!(message.contains("dpplan.toml:2:"), "{message}");
    // none of the policy's rules apply until it is fixed; the plan's own
    // diagnostics are still there
    let got = codes(&diags);
    assert!(got.contains(&("DP008".into(), 2)), "{got:?}");
    assert!(!got.iter().any(|(code, _)| code == "DP100"), "{got:?}");

    // Fixed, without a notification: the next edit reads it again (its
    // modification time or length changed).
    std::fs::write(&toml, POLICY).unwrap();
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": u, "version": 2 }, "contentChanges": [{ "text": format!("{PLAN}\n") }] }),
    );
    let got = codes(&c.diagnostics_for(2, PLAN));
    assert_eq!(got, before);
    assert!(c.shutdown());
}
