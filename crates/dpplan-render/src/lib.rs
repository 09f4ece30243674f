//! Renderers: one per output format, each a pure function from plain data
//! (diagnostics and plan reports) to a `String`. Only the CLI prints.
//!
//! - [`human`]: rustc-style diagnostics (codespan-reporting) and a summary table.
//! - [`json`]: the documented, stable schema of docs/json-output.md.
//! - [`sarif`]: SARIF 2.1.0, as GitHub code scanning accepts it.
//! - [`github`]: GitHub Actions workflow annotations.
#![forbid(unsafe_code)]

mod fit;
mod human;
mod junit;
mod machine;
mod policy;
mod query_array;
mod sarif;
mod shared;
mod table;

pub use fit::{fit_lines, DEFAULT_WIDTH};
pub use human::{
    has_delta, human, human_numbers, human_with, policy_diagnostic, policy_error, summary_table,
    HumanOptions, DELTA_NOTE,
};
pub use junit::{junit, junit_with};
pub use machine::{
    github, github_summary, github_summary_with, json, json_value, write_check_json, write_json,
    write_json_with, write_json_with_policies,
};
pub use policy::{
    applied_policies, github_policies, policies_human, policies_json, policy_of, AppliedPolicy,
};
pub use sarif::{sarif, sarif_with, SarifOptions};
pub use table::{summary_rows, Numbers, ROUNDING_NOTE};

pub use shared::{shared_budgets_human, shared_budgets_json, shared_budgets_of, SharedBudget};

use dpplan_check::Analysis;

/// One checked file, as every renderer takes it.
pub struct FileResult<'a> {
    /// The path as the user gave it (shown and used as the SARIF/GitHub URI).
    pub path: &'a str,
    pub text: &'a str,
    pub analysis: &'a Analysis,
}

/// A check under policies as the renderers take it: each plan's result,
/// its name, the shared budgets some plan reads, the chains that applied.
pub struct Checked<'a> {
    pub names: Vec<&'a str>,
    pub results: Vec<FileResult<'a>>,
    pub shared: Vec<SharedBudget<'a>>,
    pub chains: Vec<AppliedPolicy<'a>>,
}

impl<'a> Checked<'a> {
    /// `plans` (name, text, analysis) after `dpplan_policy::checked::apply`
    /// returned `applied` for them.
    pub fn new(
        plans: &'a [(String, String, Analysis)],
        applied: &'a dpplan_policy::checked::Applied,
    ) -> Checked<'a> {
        let names: Vec<&str> = plans.iter().map(|(n, _, _)| n.as_str()).collect();
        Checked {
            results: plans
                .iter()
                .map(|(path, text, analysis)| FileResult {
                    path,
                    text,
                    analysis,
                })
                .collect(),
            shared: shared_budgets_of(&applied.shared),
            chains: applied_policies(applied, &names),
            names,
        }
    }
}

/// Counts by severity over several files.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub errors: usize,
    pub warnings: usize,
    pub hints: usize,
}

pub fn counts(files: &[FileResult]) -> Counts {
    let mut c = Counts::default();
    for f in files {
        for d in &f.analysis.diagnostics {
            match d.severity {
                dpplan_diagnostics::Severity::Error => c.errors += 1,
                dpplan_diagnostics::Severity::Warning => c.warnings += 1,
                dpplan_diagnostics::Severity::Hint => c.hints += 1,
            }
        }
    }
    c
}

pub use dpplan_diagnostics::num;
