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

/// Policy files by path, read again when their modification time or
/// length changes (checked at every analysis: one `stat` per directory up
/// from the plan, and one for the file).
#[derive(Default)]
pub struct PolicyCache {
    files: Mutex<HashMap<PathBuf, (Stamp, Loaded)>>,
}

impl PolicyCache {
    pub fn new() -> Arc<PolicyCache> {
        Arc::new(PolicyCache::default())
    }

    /// The policy of the plan at `plan`, found as `dpplan check` finds it;
    /// `None` when no `dpplan.toml` is above it.
    pub fn for_plan(&self, plan: &Path) -> Option<PolicyContext> {
        let file = dpplan_policy::discover(plan)?;
        let now = stamp(&file);
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        let cached = files
            .get(&file)
            .filter(|(s, _)| Some(s) == now.as_ref())
            .map(|(_, p)| p.clone());
        let policy = match cached {
            Some(p) => p,
            None => {
                let p = Policy::load(&file).map(Arc::new).map_err(Arc::new);
                if let Some(s) = now {
                    files.insert(file, (s, p.clone()));
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
