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
    run(python(), "mpmath", script, doc)
}

/// A Python with Google's dp_accounting: `DPPLAN_DP_ACCOUNTING_PYTHON` or
/// the venv of scripts/test-deps.sh.
#[allow(dead_code)]
fn dp_accounting_python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("DPPLAN_DP_ACCOUNTING_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = root.join("target/test-deps/dp-accounting-venv/bin/python");
    Some(venv).filter(|p| {
        Command::new(p)
            .args(["-c", "import dp_accounting"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Runs `tests/<script>` under dp_accounting's Python, as [`reference`].
#[allow(dead_code)]
pub fn dp_accounting_reference(script: &str, doc: &Value) -> Option<Value> {
    run(dp_accounting_python(), "dp_accounting", script, doc)
}

fn run(py: Option<PathBuf>, what: &str, script: &str, doc: &Value) -> Option<Value> {
    let Some(py) = py else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("Python with {what} is required under CI=true (scripts/test-deps.sh)");
        }
        eprintln!("SKIPPED: no Python with {what} (run scripts/test-deps.sh)");
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

/// The smallest ε in [0, `hi`] with `delta_of(ε)` ≤ `delta`, by 100
/// bisection steps (δ(ε) decreases in ε): how the tests invert a reference
/// privacy curve they compute without the accountants.
#[allow(dead_code)]
pub fn invert_delta(delta_of: impl Fn(f64) -> f64, delta: f64, hi: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, hi);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if delta_of(mid) <= delta {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}
