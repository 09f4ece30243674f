//! ARCHITECTURE.md is a code map that cannot drift: its crate table names
//! every crate of the workspace and, for each, every dependency it declares
//! (`[dependencies]`: the workspace's own crates and the external ones),
//! and nothing more. This test reads the table and holds it against
//! `cargo metadata`; a dependency added to a crate without the table (or a
//! crate's row naming one it no longer has) fails here.
//!
//! It also holds each crate's "must never depend on" column against the
//! crate's whole dependency closure, and checks that every test named by an
//! "Architecture invariant:" line exists.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The table's rows: crate → (declared dependencies, forbidden ones).
struct Row {
    depends: BTreeSet<String>,
    never: BTreeSet<String>,
}

/// Names in a table cell: words in backticks, or comma-separated words;
/// a workspace crate may be written without its `dpplan-` prefix.
fn names(cell: &str, members: &BTreeSet<String>) -> BTreeSet<String> {
    cell.split(',')
        .map(|w| w.trim().trim_matches('`').trim())
        .filter(|w| !w.is_empty() && *w != "—" && *w != "-")
        .map(|w| {
            let prefixed = format!("dpplan-{w}");
            if members.contains(&prefixed) {
                prefixed
            } else {
                w.to_string()
            }
        })
        .collect()
}

fn table(doc: &str, members: &BTreeSet<String>) -> BTreeMap<String, Row> {
    let start = doc
        .find("| crate | owns | depends on | never depends on |")
        .expect("ARCHITECTURE.md has the crate table (`| crate | owns | depends on | never depends on |`)");
    let mut rows = BTreeMap::new();
    for line in doc[start..].lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        assert_eq!(cells.len(), 4, "a crate row has four cells: {line}");
        let name = cells[0].trim().trim_matches('`').to_string();
        rows.insert(
            name,
            Row {
                depends: names(cells[2], members),
                never: names(cells[3], members),
            },
        );
    }
    rows
}

/// Per workspace crate, its normal dependencies (no dev, no build).
fn metadata() -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
    let mut crates = BTreeMap::new();
    for p in v["packages"].as_array().expect("packages") {
        let deps = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .map(|d| d["name"].as_str().expect("a name").to_string())
            .collect();
        crates.insert(p["name"].as_str().expect("a name").to_string(), deps);
    }
    crates
}

/// The crates a crate reaches through the workspace's own crates.
fn closure(name: &str, crates: &BTreeMap<String, BTreeSet<String>>, seen: &mut BTreeSet<String>) {
    for d in crates.get(name).into_iter().flatten() {
        if seen.insert(d.clone()) {
            closure(d, crates, seen);
        }
    }
}

fn check(doc: &str, crates: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let members: BTreeSet<String> = crates.keys().cloned().collect();
    let rows = table(doc, &members);
    let mut problems = Vec::new();
    for (name, deps) in crates {
        let Some(row) = rows.get(name) else {
            problems.push(format!("`{name}` has no row in the crate table"));
            continue;
        };
        for d in deps.difference(&row.depends) {
            problems.push(format!(
                "`{name}` depends on `{d}`, which its row does not say"
            ));
        }
        for d in row.depends.difference(deps) {
            problems.push(format!(
                "`{name}`'s row says it depends on `{d}`, which it does not"
            ));
        }
        let mut reach = BTreeSet::new();
        closure(name, crates, &mut reach);
        for d in row.never.intersection(&reach) {
            problems.push(format!(
                "`{name}` must never depend on `{d}`, and it reaches it"
            ));
        }
    }
    for name in rows.keys() {
        if !crates.contains_key(name) {
            problems.push(format!(
                "the crate table names `{name}`, not a crate of the workspace"
            ));
        }
    }
    problems
}

#[test]
fn the_crate_table_is_the_workspace() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let problems = check(&doc, &metadata());
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md's crate table has drifted from the code:\n  {}",
        problems.join("\n  ")
    );
}

/// Negative control: a dependency added against the table, one removed, a
/// forbidden one reached, and a crate missing from the table are all found.
#[test]
fn the_table_check_finds_drift() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let real = metadata();
    let mut added = real.clone();
    added
        .get_mut("dpplan-vocab")
        .expect("vocab")
        .insert("rusqlite".into());
    assert!(check(&doc, &added)
        .iter()
        .any(|p| p.contains("`dpplan-vocab` depends on `rusqlite`")));

    let mut upward = real.clone();
    upward
        .get_mut("dpplan-accounting")
        .expect("accounting")
        .insert("dpplan-syntax".into());
    let problems = check(&doc, &upward);
    assert!(problems
        .iter()
        .any(|p| p.contains("`dpplan-accounting` must never depend on `dpplan-syntax`")));

    let mut removed = real.clone();
    removed
        .get_mut("dpplan-check")
        .expect("check")
        .remove("dpplan-syntax");
    assert!(check(&doc, &removed)
        .iter()
        .any(|p| p.contains("`dpplan-check`'s row says it depends on `dpplan-syntax`")));

    let mut new = real;
    new.insert("dpplan-new".into(), BTreeSet::new());
    assert!(check(&doc, &new)
        .iter()
        .any(|p| p.contains("`dpplan-new` has no row")));
}

/// Every "Architecture invariant:" line names the test that enforces it,
/// as `path::to::test_name` in backticks after "test"; each named test's
/// function exists in the named file.
#[test]
fn every_invariant_names_a_test_that_exists() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut count = 0;
    for line in doc
        .lines()
        .filter(|l| l.contains("Architecture invariant:"))
    {
        count += 1;
        let (_, rest) = line
            .split_once("(test: `")
            .unwrap_or_else(|| panic!("an invariant without `(test: `file::fn`)`: {line}"));
        let (reference, _) = rest.split_once('`').expect("a closing backtick");
        let (file, func) = reference
            .rsplit_once("::")
            .unwrap_or_else(|| panic!("`file::fn` expected: {reference}"));
        let text = std::fs::read_to_string(root().join(file))
            .unwrap_or_else(|e| panic!("{file}, named by an invariant: {e}"));
        assert!(
            text.contains(&format!("fn {func}(")),
            "{file} has no `fn {func}`, named by: {line}"
        );
    }
    assert!(
        count >= 10,
        "ARCHITECTURE.md states its invariants ({count} found)"
    );
}
