//! A set of plans checked under their policies, as `dpplan check`, the
//! language server's neighbours and the Python module report them: each
//! plan's policy found (the nearest `dpplan.toml` up from it, with the
//! chain it extends, or an explicit file), applied (rule levels, the
//! organisation's rules, the inline suppressions it allows), and every
//! budget shared across plans composed over the checked plans and those
//! its `plans` globs name. Also the record of the policy a plan source
//! passed, for its executable plan. Plain data: nothing here prints.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dpplan_check::{analyze, Analysis};
use dpplan_diagnostics::{Code, Severity};

use crate::{canonical, ConfigError, Policy, Reader, SharedBudget, SharedResult};

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
/// [`crate::ci_config`]); otherwise each plan's nearest
/// `dpplan.toml` and the chain it extends. The first policy file that
/// cannot be used is the error.
pub fn apply(
    plans: &mut [(String, String, Analysis)],
    explicit: Option<&Path>,
) -> Result<Applied, Box<ConfigError>> {
    let mut policies: BTreeMap<PathBuf, Policy> = BTreeMap::new();
    let mut governed: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    let ci = crate::in_ci();
    for (i, (name, _, _)) in plans.iter().enumerate() {
        let at = place(name);
        let file = match explicit {
            Some(f) => f.to_path_buf(),
            None => match crate::discover(at) {
                Some(f) => f,
                None => continue,
            },
        };
        if !policies.contains_key(&file) {
            policies.insert(file.clone(), Policy::load(&file).map_err(Box::new)?);
        }
        if ci && explicit.is_some() {
            crate::ci_config(&policies[&file], at).map_err(Box::new)?;
        }
        governed.entry(file).or_default().push(i);
    }
    let mut policy_of: Vec<Option<&Policy>> = vec![None; plans.len()];
    let mut chains = Vec::new();
    for (file, members) in &governed {
        let policy = &policies[file];
        for &i in members {
            let (name, _, analysis) = &mut plans[i];
            crate::apply(policy, Path::new(name.as_str()), analysis);
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
        crate::compose(b, &readers)
    };
    let mut pushed = Vec::new();
    for (k, d) in diags {
        let (name, _, analysis) = &mut plans[k];
        pushed.push((k, d.primary.span, d.message.clone()));
        analysis.diagnostics.push(d);
        if let Some(p) = policy_of[k] {
            crate::set_levels(
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

/// `path` relative to the directory `from` (both made absolute first):
/// `../dpplan.toml`.
pub fn relative(from: &Path, path: &Path) -> String {
    let (from, path) = (crate::normalise(from), crate::normalise(path));
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
    let dir = crate::normalise(source)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let chain = policy.chain();
    let root_dir = chain
        .first()
        .and_then(|f| crate::normalise(f).parent().map(Path::to_path_buf))
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
    // one plan, as an array: `apply` takes a slice, which cannot change its length
    let mut loaded = [(path.display().to_string(), text.to_string(), analyze(text))];
    let applied = apply(&mut loaded, config)?;
    let over = applied
        .shared
        .iter()
        .any(|s| !s.result.shares.is_empty() && !s.result.within && !s.accepted);
    let [(_, _, analysis)] = loaded;
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
