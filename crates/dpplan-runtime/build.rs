//! Embeds the build's source revision (`git rev-parse HEAD`) as
//! `DPPLAN_SOURCE_REVISION`, recorded in every frozen report. Outside a git
//! checkout (a source tarball, a vendored copy) the revision is `unknown`;
//! a packager may set `DPPLAN_SOURCE_REVISION` in the build's environment.
//! Never fails the build.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=DPPLAN_SOURCE_REVISION");
    let given = std::env::var("DPPLAN_SOURCE_REVISION")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let revision = given.or_else(|| {
        let rev = git(&["rev-parse", "HEAD"])?;
        // Rebuild when HEAD moves: HEAD itself, the branch it names, and the
        // packed refs (only files that exist: a missing one would rerun
        // this script on every build).
        let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(git(&["rev-parse", "--git-path", &r]));
        }
        watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
        let dir = std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default();
        for p in watched.into_iter().flatten() {
            let p = Path::new(&dir).join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
        Some(rev)
    });
    println!(
        "cargo:rustc-env=DPPLAN_SOURCE_REVISION={}",
        revision.unwrap_or_else(|| "unknown".into())
    );
}
