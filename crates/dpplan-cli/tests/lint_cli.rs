//! What a CI job or an editor meets: `dpplan rule` (a code's documentation,
//! from the binary) and `dpplan check -` (a plan on standard input, reported
//! under the name `--stdin-filename` gives).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn dpplan(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dpplan"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dpplan");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn docs() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/diagnostics.md"))
        .unwrap()
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
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
