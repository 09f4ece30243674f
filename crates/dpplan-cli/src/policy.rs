//! The organisation policy (`dpplan.toml`) at the commands' gates:
//! `compile`, `run`, `report --freeze` and `ledger freeze` go on, are
//! refused, or go on by an operator's explicit `--policy-override`, each
//! decision printed. What a policy does to a checked plan is
//! `dpplan_policy::checked` (shared with the Python module); a policy file
//! that cannot be used is an error located in it (rendered as a plan's
//! diagnostics are, DP108 in the policy file's text), exit 2.

use std::path::{Path, PathBuf};

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

/// Prints a gate's decision: `None` to go on, else the exit code (1 for a
/// refusal, 2 for a policy file that cannot be used, printed located in it).
fn print_decision(
    what: &str,
    decided: Result<dpplan_gate::Decision, Box<dpplan_policy::ConfigError>>,
) -> Option<std::process::ExitCode> {
    use crate::out::escape_control as esc;
    use dpplan_gate::Decision;
    match decided {
        Err(e) => {
            err!("{}", dpplan_render::policy_error(&e, false));
            Some(std::process::ExitCode::from(2))
        }
        Ok(Decision::Go { note }) => {
            if let Some(n) = note {
                errln!("{n}");
            }
            None
        }
        Ok(Decision::Overridden { reason, problem }) => {
            errln!(
                "warning: policy override (\"{}\"): {problem}; going on as the operator decided",
                esc(&reason)
            );
            None
        }
        Ok(Decision::Refused { problem, help }) => {
            errln!("error: {what} is refused: {problem}");
            errln!("help: {help}, or, as an explicit decision, pass --policy-override \"why\"");
            Some(std::process::ExitCode::from(1))
        }
    }
}

/// `dpplan run`'s gate ([`dpplan_gate::compiled`]): the executable plan at
/// `file` must have been compiled under the policy in force there, and its
/// embedded source must still pass it. `None`: go on.
pub fn gate_compiled(
    file: &Path,
    plan: &dpplan_plan::ExecutablePlan,
    gate: &GateArgs,
) -> Option<std::process::ExitCode> {
    print_decision(
        &format!("`{}`", file.display()),
        dpplan_gate::compiled(
            file,
            plan,
            gate.config.as_deref(),
            gate.policy_override.as_deref(),
        ),
    )
}

/// `report --freeze` and `ledger freeze`'s gate ([`dpplan_gate::source`]):
/// the plan source at `path` must pass the policy in force there, as
/// `dpplan check` would report it. `None`: go on.
pub fn gate_source(path: &Path, gate: &GateArgs) -> Option<std::process::ExitCode> {
    // reading is the freeze's own error to report
    let Ok(text) = std::fs::read_to_string(path) else {
        return None;
    };
    let shown = path.display().to_string();
    let decided = dpplan_gate::source(
        path,
        &text,
        gate.config.as_deref(),
        gate.policy_override.as_deref(),
    )
    .map(|(decision, failing)| {
        if let (dpplan_gate::Decision::Refused { .. }, Some(analysis)) = (&decision, &failing) {
            let file = dpplan_render::FileResult {
                path: &shown,
                text: &text,
                analysis,
            };
            err!("{}", crate::out::human(&file));
        }
        decision
    });
    print_decision(&format!("freezing a report of `{shown}`"), decided)
}
