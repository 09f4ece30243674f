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

pub mod checked;
mod config;
mod rules;
mod shared;

use std::path::Path;

use dpplan_check::Analysis;
use dpplan_diagnostics::{Code, Diagnostic, Severity};

pub use config::{
    canonical, ci_config, discover, in_ci, in_force, in_force_with, is_policy, normalise,
    ConfigError, Effective, Level, Limits, Per, Policy, Reviewer, SharedBudget, SignoffPolicy,
    FILE_NAME,
};
pub use shared::{compose, shared_budgets, Exclusion, Reader, Share, SharedResult};

/// Adds the policy's diagnostics for the plan at `plan_path` to its
/// analysis, then gives every diagnostic the level the policy sets for its
/// code there (removing those set to `off`). The order stays the one every
/// renderer shows (syntax first, then by position).
pub fn apply(policy: &Policy, plan_path: &Path, analysis: &mut Analysis) {
    let e = policy.effective(plan_path);
    let source = policy.chain_text();
    let extra = rules::check(analysis, &e, &source);
    analysis.diagnostics.extend(extra);
    refuse_suppressions(&e, &source, analysis);
    set_levels(&e, &mut analysis.diagnostics);
    // the policy's diagnostics may be suppressed inline, where it allows
    analysis.apply_allows();
}

/// Takes every policy code (DP100–DP109) the policy does not allow out of
/// the plan's `dpplan: allow` comments, each refused with an error (DP020)
/// on the comment that names the key which would allow it: a plan cannot
/// switch the organisation's rules off from below.
pub fn refuse_suppressions(e: &Effective, source: &str, analysis: &mut Analysis) {
    let mut refused = Vec::new();
    for a in &mut analysis.allows {
        let (keep, drop): (Vec<Code>, Vec<Code>) = a
            .codes
            .iter()
            .partition(|c| !c.is_policy() || e.allow_suppression.contains(c));
        if drop.is_empty() {
            continue;
        }
        a.codes = keep;
        for c in drop {
            let mut d = Diagnostic::new(
                Code::Suppression,
                format!(
                    "`allow {}` is refused: {} ({}) is a policy rule, and the policy ({source}) does not allow suppressing it inline (its `[suppressions] allow` key does not list it)",
                    c.as_str(),
                    c.as_str(),
                    c.name()
                ),
                a.comment,
            )
            .label("not allowed by the policy")
            .help(format!(
                "fix what {} reports, or have the policy's owners allow it in the root policy: `[suppressions] allow = [\"{}\"]` (or `suppressions = {{ allow = [\"{}\"] }}` in an `[[overrides]]` for this path)",
                c.as_str(),
                c.as_str(),
                c.as_str()
            ));
            d.severity = Severity::Error;
            refused.push(d);
        }
    }
    if refused.is_empty() {
        return;
    }
    // an allow left with no code applies to nothing: its earlier "unused"
    // warning goes with it
    let gone: Vec<_> = analysis
        .allows
        .iter()
        .filter(|a| a.codes.is_empty())
        .map(|a| a.comment)
        .collect();
    analysis.allows.retain(|a| !a.codes.is_empty());
    analysis.diagnostics.retain(|d| {
        !(d.code == Code::Suppression
            && gone.contains(&d.primary.span)
            && d.message.contains("suppresses nothing"))
    });
    analysis.diagnostics.extend(refused);
    dpplan_diagnostics::sort(&mut analysis.diagnostics);
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
