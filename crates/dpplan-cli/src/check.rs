//! `dpplan check`.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::{miette, Context, IntoDiagnostic, Result};

use dpplan_check::{analyze, Analysis};
use dpplan_diagnostics::Severity;
use dpplan_render::FileResult;

use crate::{ColorChoice, Deny, Format};

/// Every plan file named by `paths` (files as given, directories searched
/// for `*.dpplan`), or an error when there is none.
pub fn plan_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files)?;
    }
    if files.is_empty() {
        return Err(miette!(
            help = "plan files end in `.dpplan`",
            "no plan files found"
        ));
    }
    Ok(files)
}

pub fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let meta = std::fs::metadata(path)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read `{}`", path.display()))?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .into_diagnostic()
            .wrap_err_with(|| format!("cannot list `{}`", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            if e.is_dir() {
                collect(&e, out)?;
            } else if e.extension().is_some_and(|x| x == "dpplan") {
                out.push(e);
            }
        }
    } else {
        out.push(path.to_path_buf());
    }
    Ok(())
}

/// A plan read and analysed for a command that needs it free of errors
/// (`account`, `export`): `Err(exit code 1)` after printing its
/// diagnostics and `consequence` (a plan's own errors exit 1, as in
/// `dpplan check`; 2 is for usage and IO errors).
pub fn clean_plan(
    path: &Path,
    consequence: &str,
) -> Result<std::result::Result<Analysis, ExitCode>> {
    let text = read_plan(path)?;
    let analysis = analyze(&text);
    if analysis.has_errors() {
        let shown = path.display().to_string();
        let file = FileResult {
            path: &shown,
            text: &text,
            analysis: &analysis,
        };
        err!("{}", crate::out::human(&file));
        errln!("error: `{shown}` has errors: {consequence}");
        errln!("help: run `dpplan check` and fix the errors first");
        return Ok(Err(ExitCode::from(1)));
    }
    Ok(Ok(analysis))
}

pub fn read_plan(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read `{}`", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        miette!(
            help = "save the plan as UTF-8",
            "`{}` is not valid UTF-8 (first invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// The plans to check, as (name shown, text): the files named by `paths`
/// and, for `-`, standard input (once), shown as `stdin_filename` or
/// `<stdin>`.
fn plan_texts(paths: &[PathBuf], stdin_filename: Option<&Path>) -> Result<Vec<(String, String)>> {
    let dash = |p: &PathBuf| p.as_os_str() == "-";
    if paths.iter().filter(|p| dash(p)).count() > 1 {
        return Err(miette!(
            help = "name standard input once",
            "`-` (standard input) is given more than once"
        ));
    }
    if stdin_filename.is_some() && !paths.iter().any(dash) {
        return Err(miette!(
            help = "`--stdin-filename` names the plan read from `-`",
            "`--stdin-filename` without `-` among the paths"
        ));
    }
    let files: Vec<PathBuf> = paths.iter().filter(|p| !dash(p)).cloned().collect();
    let mut out = Vec::new();
    if !files.is_empty() || paths.is_empty() {
        for f in plan_files(&files)? {
            let text = read_plan(&f)?;
            out.push((f.display().to_string(), text));
        }
    }
    if paths.iter().any(dash) {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut bytes)
            .into_diagnostic()
            .wrap_err("cannot read standard input")?;
        let name =
            stdin_filename.map_or_else(|| "<stdin>".to_string(), |p| p.display().to_string());
        let text = String::from_utf8(bytes).map_err(|e| {
            miette!(
                help = "send the plan as UTF-8",
                "{name} (standard input) is not valid UTF-8 (first invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            )
        })?;
        out.push((name, text));
    }
    Ok(out)
}

/// How the human format is shown: colour, and the accountant's detail.
#[derive(Clone, Copy)]
pub struct View {
    pub color: ColorChoice,
    /// `--verbose`: the accountant's numerical detail (grid, error terms).
    pub verbose: bool,
    /// The widest a line may be (0: no limit).
    pub width: usize,
    /// `--all-digits`: every digit of every number.
    pub all_digits: bool,
}

pub fn run(
    paths: &[PathBuf],
    stdin_filename: Option<&Path>,
    format: Format,
    deny: Option<Deny>,
    docs_url: Option<&str>,
    config: Option<&Path>,
    view: View,
) -> Result<ExitCode> {
    let color = view.color;
    let mut loaded: Vec<(String, String, Analysis)> = Vec::new();
    for (name, text) in plan_texts(paths, stdin_filename)? {
        let analysis = analyze(&text);
        loaded.push((name, text, analysis));
    }
    let applied = match dpplan_policy::checked::apply(&mut loaded, config) {
        Ok(applied) => applied,
        Err(e) => {
            // Located in the policy file and rendered as a plan's
            // diagnostics are, on standard error in every format (no
            // plan's result is written: none was checked under its policy).
            let color = match color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            };
            err!("{}", dpplan_render::policy_error(&e, color));
            return Ok(ExitCode::from(2));
        }
    };
    let dpplan_render::Checked {
        names,
        results,
        shared,
        chains,
    } = dpplan_render::Checked::new(&loaded, &applied);
    let color = match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    };
    let output = match format {
        Format::Human => human(&results, &shared, &chains, &names, color, view),
        Format::Json => {
            // Streamed: at 10⁵ queries the document is 10⁸ bytes.
            crate::out::write_stream(|w| {
                dpplan_render::write_check_json(w, &results, &shared, &chains)
            })
            .into_diagnostic()?;
            let code = exit_code(&results, &shared, deny);
            // The process ends here: freeing 10⁵ queries' analyses one
            // allocation at a time would only delay the exit.
            std::mem::forget(results);
            std::mem::forget(loaded);
            return Ok(code);
        }
        Format::Sarif => {
            let policies = dpplan_render::policies_json(&chains);
            dpplan_render::sarif_with(
                &results,
                &dpplan_render::SarifOptions {
                    docs_url,
                    policies: Some(&policies),
                },
            )
        }
        Format::Github => {
            dpplan_render::github_policies(&chains) + &dpplan_render::github(&results)
        }
        Format::Junit => dpplan_render::junit_with(&results, deny == Some(Deny::Warnings), &chains),
    };
    crate::out::write_bytes(output.as_bytes()).into_diagnostic()?;
    if format == Format::Github {
        write_job_summary(&dpplan_render::github_summary_with(
            &results, &shared, &chains,
        ))?;
    }
    Ok(exit_code(&results, &shared, deny))
}

/// The human format: each plan's header, diagnostics, table and total;
/// what δ means and how numbers are rounded, once; the counts, the shared
/// budgets and the policies; every line fitted to the width.
fn human(
    results: &[FileResult],
    shared: &[dpplan_render::SharedBudget],
    chains: &[dpplan_render::AppliedPolicy],
    names: &[&str],
    color: bool,
    view: View,
) -> String {
    let mut s = String::new();
    let opts = dpplan_render::HumanOptions {
        verbose: view.verbose,
        no_delta_note: true,
        width: view.width,
        all_digits: view.all_digits,
    };
    let numbers = dpplan_render::Numbers {
        all_digits: view.all_digits,
        ..Default::default()
    };
    for r in results {
        s.push_str(&dpplan_render::human_numbers(r, color, opts, &numbers));
    }
    // What δ means, once for every plan that has one.
    if results.iter().any(|r| {
        r.analysis
            .report
            .as_ref()
            .is_some_and(dpplan_render::has_delta)
    }) {
        s.push_str(&format!("\n{}\n", dpplan_render::DELTA_NOTE));
    }
    if numbers.snapped.get() {
        s.push_str(&format!("{}\n", dpplan_render::ROUNDING_NOTE));
    }
    let c = dpplan_render::counts(results);
    s.push_str(&format!(
        "\nchecked {} plan{}: {} error{}, {} warning{}, {} hint{}{}\n",
        results.len(),
        if results.len() == 1 { "" } else { "s" },
        c.errors,
        if c.errors == 1 { "" } else { "s" },
        c.warnings,
        if c.warnings == 1 { "" } else { "s" },
        c.hints,
        if c.hints == 1 { "" } else { "s" },
        match results
            .iter()
            .map(|r| r.analysis.suppressed.len())
            .sum::<usize>()
        {
            0 => String::new(),
            n => format!(" ({n} suppressed by `dpplan: allow` comments)"),
        }
    ));
    s.push_str(&dpplan_render::shared_budgets_human(shared));
    s.push_str(&dpplan_render::policies_human(chains, names));
    dpplan_render::fit_lines(&s, view.width)
}

/// 1 when a plan has an error (or, with `--deny warnings`, a warning) or
/// is over its budget, or a shared budget is over and not accepted by the
/// policy (its summary then says OVER: the check cannot pass with it).
fn exit_code(
    results: &[FileResult],
    shared: &[dpplan_render::SharedBudget],
    deny: Option<Deny>,
) -> ExitCode {
    let over = shared.iter().any(|s| !s.result.within && !s.accepted);
    let failed = over
        || results.iter().any(|r| {
            r.analysis.diagnostics.iter().any(|d| {
                d.severity == Severity::Error
                    || (deny == Some(Deny::Warnings) && d.severity == Severity::Warning)
            }) || r.analysis.report.as_ref().and_then(|p| p.within_budget) == Some(false)
        });
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// In a GitHub Actions job (`GITHUB_STEP_SUMMARY` set), appends the
/// check's summary in Markdown to the job's summary page.
fn write_job_summary(summary: &str) -> Result<()> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let path = PathBuf::from(path);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot open the job summary `{}`", path.display()))?;
    std::io::Write::write_all(&mut file, summary.as_bytes())
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot write the job summary `{}`", path.display()))
}
