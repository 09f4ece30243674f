//! What the binary's tests share: running the real `dpplan` and reading
//! its output. (Each test file uses part of it.)
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// `dpplan ARGS…` in the test's working directory, with no standard input.
pub fn dpplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpplan"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run dpplan")
}

/// `dpplan ARGS…` from the repository root (so that the paths it prints are
/// relative to it), without colours and with no standard input.
pub fn dpplan_at_root(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpplan"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run dpplan")
}

/// Output bytes as text (invalid UTF-8 replaced).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts that the command succeeded, showing its exit code and output.
pub fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// Writes `source_text` as `DIR/NAME.dpplan` and compiles it to
/// `DIR/NAME.json` (asserting that it compiles); the compiled plan's path.
pub fn compiled(dir: &Path, name: &str, source_text: &str) -> PathBuf {
    let source = dir.join(format!("{name}.dpplan"));
    std::fs::write(&source, source_text).unwrap();
    let plan = dir.join(format!("{name}.json"));
    let o = dpplan(&[
        "compile",
        source.to_str().unwrap(),
        "-o",
        plan.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    plan
}
