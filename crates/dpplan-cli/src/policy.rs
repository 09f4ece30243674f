//! The organisation policy (`dpplan.toml`) as `dpplan check` applies it:
//! found for each plan (the nearest one up from it, with the chain it
//! extends, or `--config`), applied (rule levels, the organisation's rules,
//! the inline suppressions it allows) and every budget shared across plans
//! composed over the checked plans and those its `plans` globs name. A
//! policy file that cannot be used is an error located in it (`dpplan
//! check` renders it as it renders a plan's diagnostics, DP108 in the
//! policy file's text), exit 2.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dpplan_check::{analyze, Analysis};
use dpplan_diagnostics::{Code, Severity};
use dpplan_policy::{canonical, ConfigError, Policy, Reader, SharedBudget, SharedResult};

/// The shared budgets checked, with the policy file that declares them.
pub struct Shared {
    pub policy: PathBuf,
    pub result: SharedResult,
    /// Over, but no checked plan keeps a DP107 error for it.
    pub accepted: bool,
}

/// One policy chain and the plans (by index) it governed.
pub struct Chain {
    pub files: Vec<String>,
    pub hash: String,
    pub plans: Vec<usize>,
}

/// What the policies did to a set of plans.
pub struct Applied {
    pub shared: Vec<Shared>,
    pub chains: Vec<Chain>,
}

/// Where a plan is placed to find its policy: a plan read from standard
/// input at its `--stdin-filename`, else in the current directory.
fn place(name: &str) -> &Path {
    if name == "<stdin>" {
        Path::new("plan.dpplan")
    } else {
        Path::new(name)
    }
}

/// Applies the policies to `plans` (name, text, analysis) in place and
/// returns the shared budgets' results and the chains that applied.
/// `explicit`: the `--config` file for every plan (in CI, only a root:
/// [`dpplan_policy::ci_config`]); otherwise each plan's nearest
/// `dpplan.toml` and the chain it extends. The first policy file that
/// cannot be used is the error.
pub fn apply(
    plans: &mut [(String, String, Analysis)],
    explicit: Option<&Path>,
) -> Result<Applied, Box<ConfigError>> {
    let mut policies: BTreeMap<PathBuf, Policy> = BTreeMap::new();
    let mut governed: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    let ci = dpplan_policy::in_ci();
    for (i, (name, _, _)) in plans.iter().enumerate() {
        let at = place(name);
        let file = match explicit {
            Some(f) => f.to_path_buf(),
            None => match dpplan_policy::discover(at) {
                Some(f) => f,
                None => continue,
            },
        };
        if !policies.contains_key(&file) {
            policies.insert(file.clone(), Policy::load(&file).map_err(Box::new)?);
        }
        if ci && explicit.is_some() {
            dpplan_policy::ci_config(&policies[&file], at).map_err(Box::new)?;
        }
        governed.entry(file).or_default().push(i);
    }
    let mut policy_of: Vec<Option<&Policy>> = vec![None; plans.len()];
    let mut chains = Vec::new();
    for (file, members) in &governed {
        let policy = &policies[file];
        for &i in members {
            let (name, _, analysis) = &mut plans[i];
            dpplan_policy::apply(policy, Path::new(name.as_str()), analysis);
            policy_of[i] = Some(policy);
        }
        chains.push(Chain {
            files: policy
                .chain()
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            hash: policy.hash.clone(),
            plans: members.clone(),
        });
    }
    // every budget of every chain once, whichever chains declare it
    let mut budgets: Vec<(PathBuf, SharedBudget)> = Vec::new();
    for p in policy_of.iter().flatten() {
        for b in &p.budgets {
            let key = canonical(&b.policy);
            if !budgets.iter().any(|(k, x)| *k == key && x == b) {
                budgets.push((key, b.clone()));
            }
        }
    }
    let mut shared = Vec::new();
    for (_, b) in &budgets {
        shared.push(one_budget(b, plans, &policy_of));
    }
    Ok(Applied { shared, chains })
}

/// One shared budget: composed over the checked plans and every plan its
/// `plans` globs name (read and checked here, counted, not reported on);
/// its diagnostics added to the checked plans at their policy's levels.
fn one_budget(
    b: &SharedBudget,
    plans: &mut [(String, String, Analysis)],
    policy_of: &[Option<&Policy>],
) -> Shared {
    let checked: Vec<PathBuf> = plans.iter().map(|(n, _, _)| canonical(place(n))).collect();
    let mut named: Vec<(PathBuf, Analysis)> = Vec::new();
    for p in b.named_plans() {
        if checked.contains(&canonical(&p)) {
            continue;
        }
        // an unreadable plan is not one that reads the source
        if let Ok(text) = std::fs::read_to_string(&p) {
            let shown = match p.strip_prefix(std::env::current_dir().unwrap_or_default()) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => p.clone(),
            };
            named.push((shown, analyze(&text)));
        }
    }
    let (result, diags) = {
        let mut readers: Vec<Reader> = plans
            .iter()
            .map(|(n, _, a)| Reader {
                path: Path::new(n.as_str()),
                analysis: a,
                checked: true,
            })
            .collect();
        readers.extend(named.iter().map(|(p, a)| Reader {
            path: p,
            analysis: a,
            checked: false,
        }));
        dpplan_policy::compose(b, &readers)
    };
    let mut pushed = Vec::new();
    for (k, d) in diags {
        let (name, _, analysis) = &mut plans[k];
        pushed.push((k, d.primary.span, d.message.clone()));
        analysis.diagnostics.push(d);
        if let Some(p) = policy_of[k] {
            dpplan_policy::set_levels(
                &p.effective(Path::new(name.as_str())),
                &mut analysis.diagnostics,
            );
        } else {
            dpplan_diagnostics::sort(&mut analysis.diagnostics);
        }
        analysis.apply_allows();
    }
    let result = result.unwrap_or_else(|| SharedResult {
        budget: b.clone(),
        shares: Vec::new(),
        total: Some((0.0, dpplan_accounting::Accountant::Basic)),
        problem: None,
        within: true,
    });
    // accepted: no DP107 of this budget is still an error on a checked plan
    let failing = pushed.iter().any(|(k, span, message)| {
        plans[*k].2.diagnostics.iter().any(|d| {
            d.code == Code::SharedBudget
                && d.severity == Severity::Error
                && d.primary.span == *span
                && d.message == *message
        })
    });
    Shared {
        policy: b.policy.clone(),
        accepted: !result.within && !failing,
        result,
    }
}

/// The shared budgets as the renderers take them (only those some plan
/// reads).
pub fn rendered(shared: &[Shared]) -> Vec<dpplan_render::SharedBudget<'_>> {
    shared
        .iter()
        .filter(|sh| !sh.result.shares.is_empty())
        .map(|sh| dpplan_render::SharedBudget {
            policy: &sh.policy,
            result: &sh.result,
            accepted: sh.accepted,
        })
        .collect()
}

/// The chains as the renderers take them, with the checked plans' names.
pub fn chains<'a>(
    applied: &'a Applied,
    names: &[&'a str],
) -> Vec<dpplan_render::AppliedPolicy<'a>> {
    applied
        .chains
        .iter()
        .map(|c| dpplan_render::AppliedPolicy {
            files: c.files.clone(),
            sha256: &c.hash,
            plans: c.plans.iter().map(|&i| names[i]).collect(),
        })
        .collect()
}

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

/// `path` relative to the directory `from` (both made absolute first):
/// `../dpplan.toml`.
fn relative(from: &Path, path: &Path) -> String {
    let (from, path) = (
        dpplan_policy::normalise(from),
        dpplan_policy::normalise(path),
    );
    let common = from
        .components()
        .zip(path.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = PathBuf::new();
    for _ in from.components().skip(common) {
        out.push("..");
    }
    for c in path.components().skip(common) {
        out.push(c);
    }
    out.display().to_string()
}

/// The record of the policy a plan source at `source` passed, for its
/// executable plan.
pub fn record(policy: &Policy, source: &Path) -> dpplan_plan::PolicyRecord {
    let dir = dpplan_policy::normalise(source)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let chain = policy.chain();
    let root_dir = chain
        .first()
        .and_then(|f| dpplan_policy::normalise(f).parent().map(Path::to_path_buf))
        .unwrap_or_default();
    dpplan_plan::PolicyRecord {
        sha256: policy.hash.clone(),
        files: chain.iter().map(|f| relative(&dir, f)).collect(),
        rules: policy
            .effective(source)
            .checked(!policy.budgets.is_empty())
            .iter()
            .map(|c| c.as_str().to_string())
            .collect(),
        plan: relative(&root_dir, source),
    }
}

/// The policy in force for `at`, or the exit code after its error was
/// printed.
fn in_force(at: &Path, config: Option<&Path>) -> Result<Option<Policy>, std::process::ExitCode> {
    dpplan_policy::in_force(at, config).map_err(|e| {
        err!("{}", dpplan_render::policy_error(&e, false));
        std::process::ExitCode::from(2)
    })
}

/// The plan source `text` (at `path`) under the policy in force, as
/// `dpplan check` reports it (its rules, the suppressions it allows, its
/// shared budgets): the analysis, and whether it fails the policy (an
/// error that is not the checker's, or a shared budget over and not
/// accepted).
pub fn check_source(
    path: &Path,
    text: &str,
    config: Option<&Path>,
) -> Result<(Analysis, bool), Box<ConfigError>> {
    let mut loaded = vec![(path.display().to_string(), text.to_string(), analyze(text))];
    let applied = apply(&mut loaded, config)?;
    let over = rendered(&applied.shared)
        .iter()
        .any(|s| !s.result.within && !s.accepted);
    // Invariant: `loaded` was made with one plan above and `apply` keeps it.
    let (_, _, analysis) = loaded.pop().expect("one plan");
    // the policy's own errors, a suppression it refused, a level it raised
    // to an error; the checker's errors are the compiler's to report
    // (a plan with checker errors is refused for those first)
    let error = |checker: bool| {
        analysis
            .diagnostics
            .iter()
            .any(|d| d.is_error() && d.code.is_checker_error() == checker)
    };
    let failed = !error(true) && (over || error(false));
    Ok((analysis, failed))
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
