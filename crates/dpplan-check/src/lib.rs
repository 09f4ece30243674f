//! The semantic checker: from the AST to a checked plan.
//!
//! [`analyze`] parses a text, resolves names, derives every query's
//! sensitivity from the declared privacy unit, adjacency and contribution
//! bounds, counts the releases of every schedule, calibrates noise given as
//! ε or `auto`, asks the accounting engine for the composed (ε, δ) and
//! checks it against the budget. It never fails: every problem is a
//! [`Diagnostic`], and the plan's total is only claimed when the plan has no
//! error (an incomplete plan has no backed guarantee).
#![forbid(unsafe_code)]

pub mod report;
pub mod schedule;

mod checker;
pub mod memo;
pub mod suppress;

use dpplan_diagnostics::Diagnostic;
use dpplan_syntax::ast;

pub use checker::AnalysisOptions;
pub use checker::{rank_error, QuantileSpec, TopSpec, MAX_CANDIDATES};
/// The vocabulary the checked plan is written in.
pub use dpplan_vocab::{
    Accountant, AccountantChoice, Adjacency, AggKind, ColumnKind, Comparison, InvalidRule,
    NoiseKind, ScheduleKind, Statistic, UnitKind,
};
pub use report::*;

/// Everything known about one plan text.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub ast: ast::Plan,
    /// Syntax errors first, then semantic diagnostics by position.
    pub diagnostics: Vec<Diagnostic>,
    /// The checked plan; `None` when the privacy block is missing or broken.
    pub report: Option<CheckedPlan>,
    /// The `// dpplan: allow` comments of the text ([`suppress`]).
    pub allows: Vec<suppress::Allow>,
    /// The diagnostics they suppressed, with their reasons (not counted).
    pub suppressed: Vec<suppress::Suppressed>,
}

impl Analysis {
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Applies the `allow` comments to the diagnostics as they are now (run
    /// again after diagnostics are added, e.g. a policy's).
    pub fn apply_allows(&mut self) {
        suppress::apply(
            &mut self.allows,
            &mut self.diagnostics,
            &mut self.suppressed,
        );
    }
}

/// Parses and checks a plan with the default options (every accountant).
pub fn analyze(text: &str) -> Analysis {
    analyze_with(text, &AnalysisOptions::default())
}

/// [`analyze_with`], with the accountants' results looked up in `cache`
/// first and remembered there ([`memo`]): for successive versions of one
/// document, whose releases mostly stay the same. The result is the one
/// [`analyze_with`] returns.
pub fn analyze_cached(
    text: &str,
    options: &AnalysisOptions,
    cache: &std::sync::Arc<memo::AccountingCache>,
) -> Analysis {
    let _installed = memo::install(cache);
    analyze_with(text, options)
}

pub fn analyze_with(text: &str, options: &AnalysisOptions) -> Analysis {
    let parsed = dpplan_syntax::parse(text);
    let mut diagnostics = parsed.diagnostics;
    let (report, semantic) = checker::check(&parsed.plan, options);
    diagnostics.extend(semantic);
    let (allows, problems) = suppress::parse(text);
    diagnostics.extend(problems);
    dpplan_diagnostics::sort(&mut diagnostics);
    let mut analysis = Analysis {
        ast: parsed.plan,
        diagnostics,
        report,
        allows,
        suppressed: Vec::new(),
    };
    analysis.apply_allows();
    analysis
}

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod accuracy_tests;
#[cfg(test)]
mod window_tests;

#[cfg(test)]
mod recover_tests;

#[cfg(test)]
mod memo_tests;
#[cfg(test)]
mod rows_tests;

#[cfg(test)]
mod quantile_tests;

#[cfg(test)]
mod top_tests;

#[cfg(test)]
mod cumulative_tests;
#[cfg(test)]
mod sample_tests;
#[cfg(test)]
mod selection_tests;
