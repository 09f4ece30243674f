//! Organisation policies for plans: `dpplan.toml` (docs/policy.md).
//!
//! A policy sets the level of any rule (globally and per path glob), adds
//! the organisation's own rules (DP100–DP106: the largest ε and δ, δ next
//! to the population, allowed units, adjacency, mechanisms and accountants,
//! release counts, a noise floor, required accuracy targets) and gives data
//! sources budgets shared by every plan that reads them (DP107).
//!
//! Plain data in, plain data out: [`Policy::parse`] validates a file's text
//! (every error located in it), [`apply`] adds a plan's policy diagnostics
//! and sets every diagnostic's level, [`shared_budgets`] composes the plans
//! that read one source. Nothing here prints.

mod config;
mod rules;
mod shared;

use std::path::Path;

use dpplan_check::Analysis;

pub use config::{
    discover, in_force, is_policy, normalise, ConfigError, Effective, Level, Limits, Policy,
    Reviewer, SharedBudget, SignoffPolicy, FILE_NAME,
};
pub use shared::{shared_budgets, Share, SharedResult};

/// Adds the policy's diagnostics for the plan at `plan_path` to its
/// analysis, then gives every diagnostic the level the policy sets for its
/// code there (removing those set to `off`). The order stays the one every
/// renderer shows (syntax first, then by position).
pub fn apply(policy: &Policy, plan_path: &Path, analysis: &mut Analysis) {
    let e = policy.effective(plan_path);
    let source = policy.file.display().to_string();
    let extra = rules::check(analysis, &e, &source);
    analysis.diagnostics.extend(extra);
    set_levels(&e, &mut analysis.diagnostics);
    // the policy's diagnostics may be suppressed inline too
    analysis.apply_allows();
}

/// The levels of `e` applied to `diagnostics` (those set to `off` removed).
pub fn set_levels(e: &Effective, diagnostics: &mut Vec<dpplan_diagnostics::Diagnostic>) {
    diagnostics.retain_mut(|d| match e.level(d.code) {
        None => true,
        Some(l) => match l.severity() {
            None => false,
            Some(s) => {
                d.severity = s;
                true
            }
        },
    });
    dpplan_diagnostics::sort(diagnostics);
}
