use codespan_reporting::diagnostic::{
    Diagnostic as CsDiagnostic, Label as CsLabel, LabelStyle, Severity as CsSeverity,
};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, termcolor, Config, Styles, StylesWriter};
use dpplan_check::CheckedPlan;
use dpplan_diagnostics::{Code, Diagnostic, Severity, Span};
use dpplan_policy::ConfigError;

use crate::fit::fit_lines;
use crate::table::{Numbers, ROUNDING_NOTE};
use crate::FileResult;

fn to_codespan(d: &Diagnostic, text_len: usize) -> CsDiagnostic<()> {
    let clamp = |s: dpplan_diagnostics::Span| {
        s.start.min(text_len)..s.end.min(text_len).max(s.start.min(text_len))
    };
    let severity = match d.severity {
        Severity::Error => CsSeverity::Error,
        Severity::Warning => CsSeverity::Warning,
        Severity::Hint => CsSeverity::Help,
    };
    let mut labels = vec![CsLabel::new(LabelStyle::Primary, (), clamp(d.primary.span))
        .with_message(&d.primary.message)];
    labels.extend(
        d.secondary.iter().map(|l| {
            CsLabel::new(LabelStyle::Secondary, (), clamp(l.span)).with_message(&l.message)
        }),
    );
    let mut notes: Vec<String> = d.notes.clone();
    if let Some(h) = &d.help {
        notes.push(format!("help: {h}"));
    }
    CsDiagnostic::new(severity)
        .with_code(d.code.as_str())
        .with_message(&d.message)
        .with_labels(labels)
        .with_notes(notes)
}

/// Renders diagnostics rustc-style (codespan-reporting) against the text
/// they point into: a plan's, or a policy file's.
fn emit(path: &str, text: &str, diagnostics: &[CsDiagnostic<()>], color: bool) -> String {
    let files = SimpleFile::new(path, text);
    let config = Config::default();
    let mut out = String::new();
    // Rendering into memory cannot fail for an in-range span; a failure
    // falls back to the plain message.
    let plain = |d: &CsDiagnostic<()>| {
        format!(
            "{}[{}]: {}\n",
            match d.severity {
                CsSeverity::Error | CsSeverity::Bug => "error",
                CsSeverity::Warning => "warning",
                CsSeverity::Help | CsSeverity::Note => "hint",
            },
            d.code.as_deref().unwrap_or_default(),
            d.message
        )
    };
    if color {
        let mut buffer = termcolor::Buffer::ansi();
        let styles = Styles::default();
        for cs in diagnostics {
            let mut writer = StylesWriter::new(&mut buffer, &styles);
            if term::emit_to_write_style(&mut writer, &config, &files, cs).is_err() {
                out.push_str(&plain(cs));
            }
        }
        out.push_str(&String::from_utf8_lossy(buffer.as_slice()));
    } else {
        for cs in diagnostics {
            match term::emit_into_string(&config, &files, cs) {
                Ok(s) => out.push_str(&s),
                Err(_) => out.push_str(&plain(cs)),
            }
        }
    }
    out
}

/// How much of a plan's summary the terminal shows, and how wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HumanOptions {
    /// Print the accountant's numerical detail (grid, error terms, tails),
    /// which the default summary names in one line instead.
    pub verbose: bool,
    /// Leave out the sentences said once for several plans (what δ means,
    /// how numbers are rounded): the caller prints them once (`dpplan
    /// check` with many files).
    pub no_delta_note: bool,
    /// The widest a line may be (the terminal's width); 0 for no limit.
    /// The table drops columns or becomes blocks, other lines wrap
    /// ([`crate::fit_lines`]).
    pub width: usize,
    /// Every digit of every number (`--all-digits`).
    pub all_digits: bool,
}

/// What δ means, printed once under the plans that have one.
pub const DELTA_NOTE: &str = "δ is the slack of the (ε, δ) guarantee: for every outcome set S, P[M(D) ∈ S] ≤ e^ε·P[M(D′) ∈ S] + δ; it is not the probability that everything leaks.";

/// Renders one file's diagnostics rustc-style, then its summary table.
pub fn human(file: &FileResult, color: bool) -> String {
    human_with(file, color, HumanOptions::default())
}

/// [`human`] with its options: the plan's header first, then its
/// diagnostics after a blank line (so they cannot be read as the previous
/// plan's), then its table and total.
pub fn human_with(file: &FileResult, color: bool, opts: HumanOptions) -> String {
    let numbers = Numbers {
        all_digits: opts.all_digits,
        ..Numbers::default()
    };
    let out = human_numbers(file, color, opts, &numbers);
    let note = if !opts.no_delta_note && numbers.snapped.get() {
        format!("  {ROUNDING_NOTE}\n")
    } else {
        String::new()
    };
    fit_lines(&(out + &note), opts.width)
}

/// [`human_with`] with the caller's [`Numbers`] (which records whether a
/// number was shown as a nearby short decimal), not yet fitted to the
/// width.
pub fn human_numbers(
    file: &FileResult,
    color: bool,
    opts: HumanOptions,
    numbers: &Numbers,
) -> String {
    let diagnostics: Vec<CsDiagnostic<()>> = file
        .analysis
        .diagnostics
        .iter()
        .map(|d| to_codespan(d, file.text.len()))
        .collect();
    let mut out = match &file.analysis.report {
        Some(r) => plan_header(file.path, r),
        None => format!("\nplan file {}\n", file.path),
    };
    if !diagnostics.is_empty() {
        out.push('\n');
        let shown = emit(file.path, file.text, &diagnostics, color);
        // The emitter ends on a blank line; the table below opens with one.
        out.push_str(shown.strip_suffix('\n').unwrap_or(&shown));
    }
    if let Some(report) = &file.analysis.report {
        out.push_str(&summary_body(report, opts, numbers));
    }
    out
}

/// A policy file that cannot be used as a diagnostic (DP108, the code the
/// language server reports it under) located in the policy file's text.
/// Without a place (the file cannot be read) the message names the file.
pub fn policy_diagnostic(e: &ConfigError) -> Diagnostic {
    let (message, span) = match &e.span {
        Some(r) => (e.message.clone(), Span::new(r.start, r.end)),
        None => (
            format!("{}: {}", e.file.display(), e.message),
            Span::new(0, 0),
        ),
    };
    let d = Diagnostic::new(Code::PolicyFile, message, span).label("here");
    match &e.help {
        Some(h) => d.help(h.clone()),
        None => d,
    }
}

/// A policy file that cannot be used, rendered as the plans' diagnostics
/// are (codespan-reporting), against the policy file's text.
pub fn policy_error(e: &ConfigError, color: bool) -> String {
    let mut cs = to_codespan(&policy_diagnostic(e), e.text.len());
    if e.span.is_none() {
        cs.labels.clear();
    }
    emit(&e.file.display().to_string(), &e.text, &[cs], color)
}

/// The per-plan summary: unit, adjacency, bounds, every query's cost and the
/// composed total with the accountant that produced it.
pub fn summary_table(path: &str, r: &CheckedPlan) -> String {
    plan_header(path, r) + &summary_body(r, HumanOptions::default(), &Numbers::default())
}

/// A plan's first lines: its name and file, unit and adjacency.
fn plan_header(path: &str, r: &CheckedPlan) -> String {
    let name = r.name.as_deref().unwrap_or("(unnamed)");
    format!(
        "\nplan \"{name}\" ({path})\n  unit: {} — {}\n  adjacency: {}\n",
        r.unit.kind, r.unit.description, r.adjacency
    )
}

/// The accountant in one line: its name and why it is the one, the
/// numerical detail only when `verbose`.
fn accountant_line(r: &CheckedPlan, t: &dpplan_check::TotalReport, verbose: bool) -> String {
    if verbose {
        return format!(
            "  accountant: {} ({}), requested `{}`\n",
            t.accountant_name, t.detail, r.accountant_requested
        );
    }
    let why = match r.accountant_requested.accountant() {
        Some(_) => "as the plan requests".to_string(),
        None => {
            let applied = r.accountants.iter().filter(|a| a.epsilon.is_some()).count();
            if applied <= 1 {
                "the only one that applies (requested `best`)".to_string()
            } else {
                format!("the tightest of the {applied} that apply (requested `best`)")
            }
        }
    };
    format!("  accountant: {} — {why}\n", t.accountant_name)
}

/// Everything under the header: the query table, the total, the accountant.
fn summary_body(r: &CheckedPlan, opts: HumanOptions, n: &Numbers) -> String {
    let mut out = crate::table::table_text(r, opts.width, n);
    out.push('\n');
    let budget = if r.budget.delta > 0.0 {
        format!(
            "ε = {}, δ = {}",
            n.num(r.budget.epsilon),
            n.num(r.budget.delta)
        )
    } else {
        format!("ε = {} (pure)", n.num(r.budget.epsilon))
    };
    match &r.total {
        Some(t) => {
            let verdict = match r.within_budget {
                Some(true) => "within the budget",
                Some(false) => "OVER the budget",
                None => "the budget",
            };
            let delta = if t.delta > 0.0 {
                format!(", δ = {}", n.num(t.delta))
            } else {
                String::new()
            };
            out.push_str(&format!(
                "  total: ε = {}{delta} over {} releases — {verdict} {budget}\n",
                n.num(t.epsilon),
                r.releases,
            ));
            out.push_str(&accountant_line(r, t, opts.verbose));
        }
        None => {
            out.push_str(&format!(
                "  total: not established — {}  budget {budget}\n",
                r.total_missing.as_deref().unwrap_or("no releases")
            ));
        }
    }
    if !opts.no_delta_note && has_delta(r) {
        out.push_str(&format!("  {DELTA_NOTE}\n"));
    }
    out
}

/// Whether the plan's total has a δ, i.e. whether [`DELTA_NOTE`] concerns it.
pub fn has_delta(r: &CheckedPlan) -> bool {
    r.total.as_ref().is_some_and(|t| t.delta > 0.0)
}
