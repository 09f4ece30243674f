//! `dpplan fmt [--check] PATH...`: rewrite plans in the canonical layout.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use miette::{IntoDiagnostic, Result, WrapErr};

use crate::check::read_plan;

pub fn run(paths: &[PathBuf], check: bool) -> Result<ExitCode> {
    // `dpplan fmt -`: standard input to standard output (for editors).
    if paths.len() == 1 && paths[0].as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .into_diagnostic()?;
        return match dpplan_fmt::format(&text) {
            Ok(out) => {
                if check {
                    return Ok(if out == text {
                        ExitCode::SUCCESS
                    } else {
                        ExitCode::from(1)
                    });
                }
                crate::out::write_bytes(out.as_bytes()).into_diagnostic()?;
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                if !check {
                    crate::out::write_bytes(text.as_bytes()).into_diagnostic()?;
                }
                errln!("<stdin>: {e}");
                Ok(ExitCode::from(1))
            }
        };
    }
    let files = crate::check::plan_files(paths)?;
    let mut failed = false;
    let mut changed = 0usize;
    for f in &files {
        let text = read_plan(f)?;
        match dpplan_fmt::format(&text) {
            Ok(out) if out == text => {}
            Ok(out) => {
                changed += 1;
                if check {
                    outln!("{} is not formatted", f.display());
                    failed = true;
                } else {
                    std::fs::write(f, out)
                        .into_diagnostic()
                        .wrap_err_with(|| format!("cannot write `{}`", f.display()))?;
                    outln!("formatted {}", f.display());
                }
            }
            Err(e) => {
                errln!("{}: {e}", f.display());
                failed = true;
            }
        }
    }
    if check && !failed {
        outln!(
            "{} plan{} already formatted",
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
    } else if !check {
        outln!(
            "{changed} of {} plan{} reformatted",
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        );
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
