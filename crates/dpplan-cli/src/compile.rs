//! `dpplan compile`: a checked plan → an executable plan (JSON).

use std::path::PathBuf;
use std::process::ExitCode;

use miette::{IntoDiagnostic, Result, WrapErr};

use dpplan_compile::CompileError;
use dpplan_render::FileResult;

#[derive(clap::Args)]
pub struct Args {
    /// The plan source (.dpplan).
    pub plan: PathBuf,
    /// Write the executable plan here (default: stdout).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let (path, out) = (a.plan.as_path(), a.out.as_ref());
    let text = crate::check::read_plan(path)?;
    match dpplan_compile::compile(&text) {
        Ok(plan) => {
            let json = dpplan_plan::to_json(&plan);
            match out {
                Some(o) => {
                    std::fs::write(o, json)
                        .into_diagnostic()
                        .wrap_err_with(|| format!("cannot write `{}`", o.display()))?;
                    errln!(
                        "compiled `{}` → `{}` ({} release(s), ε = {} at δ = {}, plan sha256 {})",
                        path.display(),
                        o.display(),
                        plan.body.releases.len(),
                        plan.body.privacy.total.epsilon,
                        plan.body.privacy.total.delta,
                        plan.body_sha256
                    );
                }
                None => out!("{json}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(CompileError::Diagnostics(analysis)) => {
            let shown = path.display().to_string();
            let file = FileResult {
                path: &shown,
                text: &text,
                analysis: &analysis,
            };
            err!("{}", dpplan_render::human(&file, false));
            errln!("error: `{}` has errors: not compiled", path.display());
            Ok(ExitCode::from(1))
        }
        Err(e) => {
            errln!("error: `{}`: {e}", path.display());
            Ok(ExitCode::from(1))
        }
    }
}
