//! `dpplan compile`: a checked plan → an executable plan (JSON).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::{IntoDiagnostic, Result, WrapErr};

use dpplan_compile::CompileError;
use dpplan_gate::Compiled;
use dpplan_render::FileResult;

#[derive(clap::Args)]
pub struct Args {
    /// The plan source (.dpplan).
    pub plan: PathBuf,
    /// Write the executable plan here (default: stdout).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// The policy file (default: the nearest `dpplan.toml` up from the plan,
    /// with the chain it extends; in CI only a root: docs/policy.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let (path, out) = (a.plan.as_path(), a.out.as_ref());
    let text = crate::check::read_plan(path)?;
    // The policy in force first: a plan that fails it, as `dpplan check`
    // reports it, is not compiled; one that passes records it.
    let (compiled, policy) = match dpplan_gate::compile(path, &text, a.config.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            err!("{}", dpplan_render::policy_error(&e, false));
            return Ok(ExitCode::from(2));
        }
    };
    match compiled {
        Compiled::FailsPolicy(analysis) => {
            print_diagnostics(path, &text, &analysis);
            if let Some(policy) = &policy {
                errln!(
                    "error: `{}` fails the policy in force ({}, sha256 {}): not compiled",
                    path.display(),
                    policy.chain_text(),
                    policy.hash
                );
            }
            Ok(ExitCode::from(1))
        }
        Compiled::Plan(plan) => {
            let json = dpplan_plan::to_json(&plan);
            match out {
                Some(o) => {
                    std::fs::write(o, json)
                        .into_diagnostic()
                        .wrap_err_with(|| format!("cannot write `{}`", o.display()))?;
                    errln!(
                        "compiled `{}` → `{}` ({} release(s), ε = {} at δ = {}, plan sha256 {}), {}",
                        path.display(),
                        o.display(),
                        plan.body.releases.len(),
                        dpplan_diagnostics::num(plan.body.privacy.total.epsilon),
                        dpplan_diagnostics::num(plan.body.privacy.total.delta),
                        plan.body_sha256,
                        match (&policy, &plan.policy) {
                            (Some(p), Some(r)) => format!(
                                "under policy {} (sha256 {}; rules checked: {})",
                                p.chain_text(),
                                r.sha256,
                                if r.rules.is_empty() { "none".to_string() } else { r.rules.join(", ") }
                            ),
                            _ => "under no policy (no dpplan.toml above it)".to_string(),
                        }
                    );
                }
                None => out!("{json}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        Compiled::Refused(CompileError::Diagnostics(analysis)) => {
            print_diagnostics(path, &text, &analysis);
            errln!("error: `{}` has errors: not compiled", path.display());
            Ok(ExitCode::from(1))
        }
        Compiled::Refused(e) => {
            errln!("error: `{}`: {e}", path.display());
            Ok(ExitCode::from(1))
        }
    }
}

/// The plan's diagnostics on stderr, as `dpplan check` renders them.
fn print_diagnostics(path: &Path, text: &str, analysis: &dpplan_check::Analysis) {
    let shown = path.display().to_string();
    let file = FileResult {
        path: &shown,
        text,
        analysis,
    };
    err!("{}", crate::out::human(&file));
}
