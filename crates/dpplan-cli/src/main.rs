//! `dpplan`: the command line. The only crate that prints.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// jemalloc, not the system's malloc, where it builds: at 10⁵ queries
/// glibc's malloc held up to a quarter of `dpplan check`'s peak RSS in
/// freed holes (its mmap threshold rises with each large block freed, so
/// later large buffers come from the heap and stay mapped); jemalloc's
/// size classes and page purging keep the RSS near the live data, and it
/// is faster on this load (docs/benchmarks.md, issue 34 step 9).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[macro_use]
mod out;
mod account;
mod audit;
mod budget;
mod check;
mod compile;
mod diff;
mod export;
mod fmt;
mod freeze;
mod ledger;
mod lsp;
mod policy;
mod report;
mod rule;
mod run;

#[derive(Parser)]
#[command(
    name = "dpplan",
    version,
    about = "Check, account and run differential-privacy release plans"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum Format {
    Human,
    Json,
    Sarif,
    Github,
    /// JUnit XML, for CI systems that show test reports.
    Junit,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum Deny {
    Warnings,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Check plans: syntax, sensitivity against the privacy unit, schedule and budget.
    Check {
        /// Plan files, directories searched for *.dpplan files, or `-` for standard input.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The name a plan read from standard input (`-`) is reported under
        /// (editors and pre-commit hooks pass the file's path).
        #[arg(long, value_name = "PATH")]
        stdin_filename: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Treat warnings as errors.
        #[arg(long, value_enum)]
        deny: Option<Deny>,
        /// Where docs/diagnostics.md is published: SARIF rules link to it
        /// (`helpUri`, this URL plus `#dp009`). Without it no link is made
        /// up; the rules carry the documentation text itself.
        #[arg(long, value_name = "URL")]
        docs_url: Option<String>,
        /// The policy file for every plan (default: each plan's nearest
        /// `dpplan.toml`, in its directory or above; docs/policy.md).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Colour for the human format.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
        /// Print each accountant's numerical detail (grid, error terms,
        /// tails) instead of its name and why it was chosen.
        #[arg(long)]
        verbose: bool,
        /// The widest a line of the human format may be (0: no limit).
        /// Default: `COLUMNS`, else the terminal's width, else 100.
        #[arg(long, value_name = "N")]
        width: Option<usize>,
        /// Print every digit of every number (the shortest form that reads
        /// back to the same float), not six significant digits.
        #[arg(long)]
        all_digits: bool,
    },
    /// Every accountant's (ε, δ) for a plan (or a dp_accounting DpEvent tree, `--dp-event`), with the ratio of each to the best.
    Account(account::Args),
    /// The plan's whole accounted schedule as a dp_accounting DpEvent tree (JSON), for another accountant.
    Export(export::Args),
    /// A reviewer's report of a plan: the contract in words, every query's noise and accuracy, figures, negative controls.
    Report(report::Args),
    /// Rewrite plans in the canonical layout (comments kept, meaning unchanged).
    Fmt {
        /// Plan files, directories searched for *.dpplan files, or `-` for stdin to stdout.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Change nothing; exit 1 when a file is not formatted.
        #[arg(long)]
        check: bool,
    },
    /// Run the language server over stdin/stdout (for editors).
    Lsp,
    /// Compile a plan that checks clean into an executable plan (JSON).
    Compile(compile::Args),
    /// Run the releases that are due on real data, charging the ledger.
    Run(run::Args),
    /// Compare two versions of a plan: per-query changes, contract changes, and (ε, δ) before and after under one accountant.
    Diff(diff::Args),
    /// A diagnostic code's documentation (`dpplan rule DP009`), or every code (`--list`).
    Rule(rule::Args),
    /// Measure a lower bound on ε from many runs of the real release path on neighbouring data (no ledger).
    Audit(audit::Args),
    /// Inspect, verify, export or correct a ledger; freeze a report in it.
    #[command(subcommand)]
    Ledger(ledger::Action),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check {
            paths,
            stdin_filename,
            format,
            deny,
            docs_url,
            config,
            color,
            verbose,
            width,
            all_digits,
        } => check::run(
            &paths,
            stdin_filename.as_deref(),
            format,
            deny,
            docs_url.as_deref(),
            config.as_deref(),
            check::View {
                color,
                verbose,
                width: out::width(width),
                all_digits,
            },
        ),
        Command::Account(a) => account::run(a),
        Command::Export(a) => export::run(a),
        Command::Report(a) => report::run(a),
        Command::Fmt { paths, check } => fmt::run(&paths, check),
        Command::Lsp => lsp::run(),
        Command::Compile(a) => compile::run(a),
        Command::Run(a) => run::run(a),
        Command::Audit(a) => audit::run(a),
        Command::Ledger(a) => ledger::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Rule(a) => rule::run(a),
    };
    match result {
        Ok(code) => code,
        Err(report) => {
            errln!("{}", error_text(&report));
            ExitCode::from(2)
        }
    }
}

/// An error that is not about a plan's text (those are diagnostics): its
/// message, each cause under it, and the help line when there is one.
fn error_text(report: &miette::Report) -> String {
    let mut s = format!("error: {report}");
    for cause in report.chain().skip(1) {
        s.push_str(&format!("\n  caused by: {cause}"));
    }
    if let Some(help) = report.help() {
        s.push_str(&format!("\n  help: {help}"));
    }
    s
}
