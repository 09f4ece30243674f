//! What the accounting tests share: running a Python reference (mpmath,
//! 50–60 digits) on a JSON document.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

/// A Python with mpmath: `DPPLAN_MPMATH_PYTHON`, the venv of
/// scripts/test-deps.sh, or `python3` when it has mpmath.
fn python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("DPPLAN_MPMATH_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = root.join("target/test-deps/mpmath-venv/bin/python");
    [venv, PathBuf::from("python3")].into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import mpmath"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Runs `tests/<script>` on `doc` (JSON on stdin, JSON on stdout); `None`
/// when Python/mpmath is missing outside CI (a failure under CI=true).
pub fn reference(script: &str, doc: &Value) -> Option<Value> {
    let Some(py) = python() else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("Python with mpmath is required under CI=true (scripts/test-deps.sh)");
        }
        eprintln!("SKIPPED: no Python with mpmath (run scripts/test-deps.sh)");
        return None;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(script);
    let mut child = Command::new(py)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the reference");
    let input = serde_json::to_vec(doc).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("reference output");
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "reference failed");
    Some(serde_json::from_slice(&out.stdout).expect("reference JSON"))
}
