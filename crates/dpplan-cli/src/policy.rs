//! The organisation policy (`dpplan.toml`) at the commands' gates:
//! `compile`, `run`, `report --freeze` and `ledger freeze` go on, are
//! refused, or go on by an operator's explicit `--policy-override`, each
//! decision printed. What a policy does to a checked plan is
//! `dpplan_policy::checked` (shared with the Python module); a policy file
//! that cannot be used is an error located in it (rendered as a plan's
//! diagnostics are, DP108 in the policy file's text), exit 2.

use std::path::{Path, PathBuf};

use dpplan_check::analyze;
use dpplan_policy::checked::check_source;
use dpplan_policy::Policy;

/// `--config` and `--policy-override`: the policy of `compile`, `run`,
/// `report --freeze` and `ledger freeze`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct GateArgs {
    /// The policy file (default: the nearest `dpplan.toml` up from the plan,
    /// with the chain it extends; in CI only a root: docs/policy.md).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Go on with a plan compiled under no policy, or under another one
    /// than the policy in force (or whose source fails it): an explicit
    /// operator decision, whose reason is printed with what it overrides.
    #[arg(long, value_name = "REASON")]
    pub policy_override: Option<String>,
}

/// The policy in force for `at`, or the exit code after its error was
/// printed.
fn in_force(at: &Path, config: Option<&Path>) -> Result<Option<Policy>, std::process::ExitCode> {
    dpplan_policy::in_force(at, config).map_err(|e| {
        err!("{}", dpplan_render::policy_error(&e, false));
        std::process::ExitCode::from(2)
    })
}

/// Prints an override or a refusal: `None` to go on, else the exit code.
fn decide(
    what: &str,
    problem: &str,
    help: &str,
    reason: Option<&str>,
) -> Option<std::process::ExitCode> {
    use crate::out::escape_control as esc;
    match reason {
        Some(r) => {
            errln!(
                "warning: policy override (\"{}\"): {problem}; going on as the operator decided",
                esc(r)
            );
            None
        }
        None => {
            errln!("error: {what} is refused: {problem}");
            errln!("help: {help}, or, as an explicit decision, pass --policy-override \"why\"");
            Some(std::process::ExitCode::from(1))
        }
    }
}

/// `dpplan run`'s gate: the executable plan at `file` must have been
/// compiled under the policy in force there (the nearest `dpplan.toml` up
/// from it, or `--config`), and its embedded source must still pass it;
/// a plan compiled under no policy or another is refused unless
/// `--policy-override` says otherwise. `None`: go on.
pub fn gate_compiled(
    file: &Path,
    plan: &dpplan_plan::ExecutablePlan,
    gate: &GateArgs,
) -> Option<std::process::ExitCode> {
    let policy = match in_force(file, gate.config.as_deref()) {
        Ok(p) => p,
        Err(code) => return Some(code),
    };
    let what = format!("`{}`", file.display());
    let Some(policy) = policy else {
        if let Some(r) = &plan.policy {
            errln!(
                "note: `{}` was compiled under policy {} (sha256 {}); no policy is in force here",
                file.display(),
                r.files.join(" → "),
                r.sha256
            );
        }
        return None;
    };
    let problem = match &plan.policy {
        None => Some(format!(
            "it was compiled under no policy, and {} (sha256 {}) is in force",
            policy.chain_text(),
            policy.hash
        )),
        Some(r) if r.sha256 != policy.hash => Some(format!(
            "it was compiled under policy {} (sha256 {}), and {} (sha256 {}) is in force",
            r.files.join(" → "),
            r.sha256,
            policy.chain_text(),
            policy.hash
        )),
        Some(r) => {
            // the record says so; the embedded source must also pass it
            // (a record is not a signature)
            let root = policy
                .chain()
                .first()
                .and_then(|f| dpplan_policy::normalise(f).parent().map(Path::to_path_buf))
                .unwrap_or_default();
            let at = root.join(&r.plan);
            let mut a = analyze(&plan.body.source.text);
            dpplan_policy::apply(&policy, &at, &mut a);
            a.diagnostics.iter().find(|d| d.is_error()).map(|d| {
                format!(
                    "its source fails the policy in force ({}): {} {}",
                    policy.chain_text(),
                    d.code.as_str(),
                    d.message
                )
            })
        }
    };
    match problem {
        Some(p) => decide(
            &what,
            &p,
            "recompile the plan under the policy in force (`dpplan compile PLAN.dpplan -o PLAN.json`)",
            gate.policy_override.as_deref(),
        ),
        None => {
            errln!(
                "policy: {} (sha256 {}), in force and the one `{}` was compiled under{}",
                policy.chain_text(),
                policy.hash,
                file.display(),
                if gate.policy_override.is_some() {
                    "; --policy-override changes nothing"
                } else {
                    ""
                }
            );
            None
        }
    }
}

/// `report --freeze` and `ledger freeze`'s gate: the plan source at
/// `path` must pass the policy in force there, as `dpplan check` would
/// report it (a report of a plan the policy refuses is no sign-off),
/// unless `--policy-override` says otherwise. `None`: go on.
pub fn gate_source(path: &Path, gate: &GateArgs) -> Option<std::process::ExitCode> {
    // reading is the freeze's own error to report
    let Ok(text) = std::fs::read_to_string(path) else {
        return None;
    };
    let policy = match in_force(path, gate.config.as_deref()) {
        Ok(p) => p?,
        Err(code) => return Some(code),
    };
    let (analysis, failed) = match check_source(path, &text, gate.config.as_deref()) {
        Ok(x) => x,
        Err(e) => {
            err!("{}", dpplan_render::policy_error(&e, false));
            return Some(std::process::ExitCode::from(2));
        }
    };
    if !failed {
        errln!(
            "policy: {} (sha256 {}), in force; `{}` passes it",
            policy.chain_text(),
            policy.hash,
            path.display()
        );
        return None;
    }
    let shown = path.display().to_string();
    if gate.policy_override.is_none() {
        let file = dpplan_render::FileResult {
            path: &shown,
            text: &text,
            analysis: &analysis,
        };
        err!("{}", crate::out::human(&file));
    }
    decide(
        &format!("freezing a report of `{shown}`"),
        &format!(
            "the plan fails the policy in force ({}, sha256 {})",
            policy.chain_text(),
            policy.hash
        ),
        "fix what the policy reports (`dpplan check` shows it), then make and freeze the report again",
        gate.policy_override.as_deref(),
    )
}
