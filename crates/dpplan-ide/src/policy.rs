//! The organisation policy (`dpplan.toml`) of an opened plan, applied as
//! `dpplan check` applies it: the nearest file up from the plan
//! ([`dpplan_policy::discover`]), its rule levels, per-path overrides and
//! rules DP100–DP106 ([`dpplan_policy::apply`]). A file that cannot be used
//! is one DP108 diagnostic on the plan, naming the file and the place in
//! it. Budgets shared across plans (DP107) need every plan of the set and
//! are left to `dpplan check`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use dpplan_check::Analysis;
use dpplan_diagnostics::{Code, Diagnostic, LineIndex, Span};
use dpplan_policy::{ConfigError, Policy};

/// A policy file, read and validated, or why it cannot be used.
pub type Loaded = Result<Arc<Policy>, Arc<ConfigError>>;

/// The policy that governs one plan: the plan's path (for the per-path
/// overrides) and its policy file.
#[derive(Clone)]
pub struct PolicyContext {
    pub plan: PathBuf,
    pub policy: Loaded,
}

impl PolicyContext {
    /// Applies the policy to an analysis of the plan, or adds the DP108
    /// error of a policy file that cannot be used.
    pub fn apply(&self, analysis: &mut Analysis) {
        match &self.policy {
            Ok(policy) => dpplan_policy::apply(policy, &self.plan, analysis),
            Err(e) => {
                let at = analysis.ast.header_span.unwrap_or_default();
                let at = Span::new(at.start, at.start.max(at.end.min(at.start + 4)));
                analysis.diagnostics.push(unusable(e, at));
                dpplan_diagnostics::sort(&mut analysis.diagnostics);
            }
        }
    }

    /// Applies the policy's rule levels to diagnostics alone (the early,
    /// unaccounted ones; the policy's own rules come with the full set).
    pub fn levels(&self, diagnostics: &mut Vec<Diagnostic>) {
        if let Ok(policy) = &self.policy {
            dpplan_policy::set_levels(&policy.effective(&self.plan), diagnostics);
        }
    }
}

/// DP108: the policy file, where in it, and what is wrong.
fn unusable(e: &ConfigError, at: Span) -> Diagnostic {
    let place = e.span.as_ref().map_or(String::new(), |s| {
        let lc = LineIndex::new(&e.text).line_col(&e.text, s.start);
        format!(":{}:{}", lc.line, lc.column)
    });
    Diagnostic::new(
        Code::PolicyFile,
        format!(
            "the policy {}{place} cannot be used: {}",
            e.file.display(),
            e.message
        ),
        at,
    )
    .label("this plan is governed by that policy")
    .help(e.help.clone().unwrap_or_else(|| {
        "fix the policy file (`dpplan check` reports the same error); until then none of its rules are applied".into()
    }))
}

/// What a policy file was when it was read.
#[derive(Clone, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

fn stamp(file: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(file).ok()?;
    Some(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

/// Every file of a chain, with what it was when read.
type Stamps = Vec<(PathBuf, Option<Stamp>)>;

/// Policy files by path, read again when the modification time or length
/// of any file of the chain they extend changes (checked at every
/// analysis: one `stat` per directory up from the plan, and one per file
/// of the chain).
#[derive(Default)]
pub struct PolicyCache {
    /// By the nearest file: what every file of its chain was when read.
    files: Mutex<HashMap<PathBuf, (Stamps, Loaded)>>,
}

impl PolicyCache {
    pub fn new() -> Arc<PolicyCache> {
        Arc::new(PolicyCache::default())
    }

    /// The policy of the plan at `plan`, found as `dpplan check` finds it;
    /// `None` when no `dpplan.toml` is above it.
    pub fn for_plan(&self, plan: &Path) -> Option<PolicyContext> {
        let file = dpplan_policy::discover(plan)?;
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        // valid while no file of the chain it extends changed
        let cached = files
            .get(&file)
            .filter(|(stamps, _)| stamps.iter().all(|(f, s)| stamp(f) == *s))
            .map(|(_, p)| p.clone());
        let policy = match cached {
            Some(p) => p,
            None => {
                let p = Policy::load(&file).map(Arc::new).map_err(Arc::new);
                let chain = match &p {
                    Ok(policy) => policy.chain(),
                    Err(_) => vec![file.clone()],
                };
                let stamps: Stamps = chain.into_iter().map(|f| (f.clone(), stamp(&f))).collect();
                if stamps.iter().all(|(_, s)| s.is_some()) {
                    files.insert(file, (stamps, p.clone()));
                }
                p
            }
        };
        Some(PolicyContext {
            plan: plan.to_path_buf(),
            policy,
        })
    }

    /// Forgets every file (a watched `dpplan.toml` changed).
    pub fn clear(&self) {
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A nested policy's cached chain is read again when its parent
    /// changes (the parent's rules reach the plan below it).
    #[test]
    fn a_change_of_the_parent_is_seen_below() {
        let d = std::env::temp_dir().join(format!("dpplan-ide-chain-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("team")).unwrap();
        std::fs::write(d.join("dpplan.toml"), "[limits]\nmax-epsilon = 2\n").unwrap();
        std::fs::write(d.join("team/dpplan.toml"), "# the team's\n").unwrap();
        let cache = PolicyCache::new();
        let plan = d.join("team/p.dpplan");
        let max = |c: &PolicyCache| {
            let ctx = c.for_plan(&plan).unwrap();
            let p = ctx.policy.as_ref().ok().unwrap().clone();
            p.effective(&plan).limits.max_epsilon.map(|m| *m.get_ref())
        };
        assert_eq!(max(&cache), Some(2.0));
        // another length: seen whatever the clock's resolution
        std::fs::write(d.join("dpplan.toml"), "[limits]\nmax-epsilon = 1.5\n").unwrap();
        assert_eq!(max(&cache), Some(1.5));
        let _ = std::fs::remove_dir_all(&d);
    }
}
