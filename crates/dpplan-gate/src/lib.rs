//! The organisation policy (`dpplan.toml`, docs/policy.md) where data is
//! touched, as plain data: whether a run of a compiled plan, or a report
//! frozen for sign-off, goes on, is refused, or goes on by an operator's
//! explicit override ([`Decision`]); and what the policy in force requires
//! of a run ([`run_requirements`]: the sign-offs it needs, the shared budget
//! ledgers it charges); and [`compile`], which compiles only a plan that
//! passes the policy, recording it. The binary prints these decisions; another front
//! end (the Python module) raises on a refusal. One implementation, so no
//! front end is a way around the policy. Nothing here prints.

use std::path::{Path, PathBuf};

use dpplan_check::{analyze, Analysis};
use dpplan_plan::ExecutablePlan;
use dpplan_policy::{ConfigError, Policy};
use dpplan_runtime::ledger::budget::{Per, SharedBudget};
use dpplan_runtime::ledger::SignoffRule;

/// A run's time as an operator writes it (`dpplan run --at`, `--start`;
/// `dpplan.run(at=…)`): Unix seconds (a leading `@` allowed), or a UTC date
/// `YYYY-MM-DD[THH:MM[:SS]][Z]`; times outside the years 1–9999 are refused
/// (no schedule arithmetic can overflow on what is accepted). The error
/// says what is wrong; [`TIME_HELP`] says what to write.
pub fn parse_time(s: &str) -> Result<i64, String> {
    let t = match s.trim_start_matches('@').parse::<i64>() {
        Ok(n) => n,
        Err(_) => {
            dpplan_check::schedule::parse_date(s).ok_or_else(|| format!("`{s}` is not a time"))?
        }
    };
    dpplan_runtime::check_time("the time", t).map_err(|e| format!("`{s}`: {e}"))
}

/// A dataset a run's data are given for must be one of the plan's: the
/// error names it and the plan's datasets.
pub fn known_dataset(plan: &ExecutablePlan, name: &str) -> Result<(), String> {
    if plan.body.datasets.contains_key(name) {
        return Ok(());
    }
    Err(format!(
        "the plan has no dataset `{name}` (it has: {})",
        plan.body
            .datasets
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// What a time given to [`parse_time`] should look like.
pub const TIME_HELP: &str = "write a UTC date such as 2026-01-15T06:00Z, or Unix seconds";

/// What compiling a plan source under the policy in force gave.
pub enum Compiled {
    /// The executable plan, recording the policy it passed (if one is in
    /// force).
    Plan(Box<ExecutablePlan>),
    /// The plan fails the policy in force, as `dpplan check` reports it
    /// (its analysis under the policy says where): not compiled.
    FailsPolicy(Box<Analysis>),
    /// The compiler refused it: the plan's own errors, no claim, or a
    /// construct the runtime does not execute.
    Refused(dpplan_compile::CompileError),
}

/// `dpplan compile`'s gate and compilation: the plan source `text` at
/// `path` is compiled only when it passes the policy in force there (or
/// `config`'s), and the executable plan records that policy
/// ([`dpplan_policy::checked::record`]). With the outcome, the policy in
/// force. A policy file that cannot be used is the error.
pub fn compile(
    path: &Path,
    text: &str,
    config: Option<&Path>,
) -> Result<(Compiled, Option<Policy>), Box<ConfigError>> {
    let policy = dpplan_policy::in_force(path, config).map_err(Box::new)?;
    if policy.is_some() {
        let (analysis, failed) = dpplan_policy::checked::check_source(path, text, config)?;
        if failed {
            return Ok((Compiled::FailsPolicy(Box::new(analysis)), policy));
        }
    }
    let compiled = match dpplan_compile::compile(text) {
        Ok(mut plan) => {
            plan.policy = policy
                .as_ref()
                .map(|p| dpplan_policy::checked::record(p, path));
            Compiled::Plan(Box::new(plan))
        }
        Err(e) => Compiled::Refused(e),
    };
    Ok((compiled, policy))
}

/// What a gate decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go on; `note` says under which policy, where there is one to say.
    Go { note: Option<String> },
    /// Refused: why, and what to do instead.
    Refused { problem: String, help: String },
    /// The policy would refuse, and the operator decided to go on.
    Overridden { reason: String, problem: String },
}

impl Decision {
    fn of(problem: String, help: &str, reason: Option<&str>) -> Decision {
        match reason {
            Some(r) => Decision::Overridden {
                reason: r.to_string(),
                problem,
            },
            None => Decision::Refused {
                problem,
                help: help.to_string(),
            },
        }
    }
}

/// The directory of the policy chain's root file: where a policy record's
/// plan path is relative to.
fn root_dir(policy: &Policy) -> PathBuf {
    policy
        .chain()
        .first()
        .and_then(|f| dpplan_policy::normalise(f).parent().map(Path::to_path_buf))
        .unwrap_or_default()
}

/// A run's gate: the executable plan at `file` must have been compiled
/// under the policy in force there (the nearest `dpplan.toml` up from it,
/// or `config`), and its embedded source must still pass it; a plan
/// compiled under no policy or another is refused unless `override_reason`
/// says otherwise. A policy file that cannot be used is the error.
pub fn compiled(
    file: &Path,
    plan: &ExecutablePlan,
    config: Option<&Path>,
    override_reason: Option<&str>,
) -> Result<Decision, Box<ConfigError>> {
    let Some(policy) = dpplan_policy::in_force(file, config).map_err(Box::new)? else {
        return Ok(Decision::Go {
            note: plan.policy.as_ref().map(|r| {
                format!(
                    "note: `{}` was compiled under policy {} (sha256 {}); no policy is in force here",
                    file.display(),
                    r.files.join(" → "),
                    r.sha256
                )
            }),
        });
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
            let at = root_dir(&policy).join(&r.plan);
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
    Ok(match problem {
        Some(p) => Decision::of(
            p,
            "recompile the plan under the policy in force (`dpplan compile PLAN.dpplan -o PLAN.json`)",
            override_reason,
        ),
        None => Decision::Go {
            note: Some(format!(
                "policy: {} (sha256 {}), in force and the one `{}` was compiled under{}",
                policy.chain_text(),
                policy.hash,
                file.display(),
                if override_reason.is_some() {
                    "; --policy-override changes nothing"
                } else {
                    ""
                }
            )),
        },
    })
}

/// A freeze's gate: the plan source `text` at `path` must pass the policy
/// in force there, as `dpplan check` reports it (a report of a plan the
/// policy refuses is no sign-off), unless `override_reason` says
/// otherwise. With the decision, the plan's analysis under the policy when
/// it fails it (what to show). No policy in force: go on, no note.
pub fn source(
    path: &Path,
    text: &str,
    config: Option<&Path>,
    override_reason: Option<&str>,
) -> Result<(Decision, Option<Analysis>), Box<ConfigError>> {
    let Some(policy) = dpplan_policy::in_force(path, config).map_err(Box::new)? else {
        return Ok((Decision::Go { note: None }, None));
    };
    let (analysis, failed) = dpplan_policy::checked::check_source(path, text, config)?;
    if !failed {
        return Ok((
            Decision::Go {
                note: Some(format!(
                    "policy: {} (sha256 {}), in force; `{}` passes it",
                    policy.chain_text(),
                    policy.hash,
                    path.display()
                )),
            },
            None,
        ));
    }
    Ok((
        Decision::of(
            format!(
                "the plan fails the policy in force ({}, sha256 {})",
                policy.chain_text(),
                policy.hash
            ),
            "fix what the policy reports (`dpplan check` shows it), then make and freeze the report again",
            override_reason,
        ),
        Some(analysis),
    ))
}

/// What the policy in force for the plan at `plan` (or `config`) requires
/// of a run: every `[signoff]` of its chain (an override does not lift
/// them), and the shared budgets that keep a budget ledger, which each
/// fresh release on their sources is charged to. None without a policy.
pub fn run_requirements(
    plan: &Path,
    config: Option<&Path>,
) -> Result<(Vec<SignoffRule>, Vec<SharedBudget>), Box<ConfigError>> {
    let Some(p) = dpplan_policy::in_force(plan, config).map_err(Box::new)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let signoffs = p
        .signoffs()
        .into_iter()
        .map(|(file, s)| SignoffRule {
            policy: file.display().to_string(),
            required: s.required,
            reviewers: s
                .reviewers
                .iter()
                .map(|r| (r.name.clone(), r.public_key.clone()))
                .collect(),
        })
        .collect();
    let budgets = p
        .budgets
        .iter()
        .filter_map(|b| {
            b.ledger.as_ref().map(|l| SharedBudget {
                source: b.source.clone(),
                path: b.path.clone(),
                epsilon: b.epsilon,
                delta: b.delta,
                ledger: l.clone(),
                policy: b.policy.clone(),
                per: b.per.map(|p| match p {
                    dpplan_policy::Per::Week => Per::Week,
                    dpplan_policy::Per::Month => Per::Month,
                }),
            })
        })
        .collect();
    Ok((signoffs, budgets))
}
