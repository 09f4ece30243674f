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

pub fn run(
    paths: &[PathBuf],
    format: Format,
    deny: Option<Deny>,
    color: ColorChoice,
) -> Result<ExitCode> {
    let files = plan_files(paths)?;
    let mut loaded: Vec<(String, String, Analysis)> = Vec::new();
    for f in &files {
        let text = read_plan(f)?;
        let analysis = analyze(&text);
        loaded.push((f.display().to_string(), text, analysis));
    }
    let results: Vec<FileResult> = loaded
        .iter()
        .map(|(path, text, analysis)| FileResult {
            path,
            text,
            analysis,
        })
        .collect();
    let color = match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    };
    let output = match format {
        Format::Human => {
            let mut s = String::new();
            for r in &results {
                s.push_str(&dpplan_render::human(r, color));
            }
            let c = dpplan_render::counts(&results);
            s.push_str(&format!(
                "\nchecked {} plan{}: {} error{}, {} warning{}, {} hint{}\n",
                results.len(),
                if results.len() == 1 { "" } else { "s" },
                c.errors,
                if c.errors == 1 { "" } else { "s" },
                c.warnings,
                if c.warnings == 1 { "" } else { "s" },
                c.hints,
                if c.hints == 1 { "" } else { "s" },
            ));
            s
        }
        Format::Json => {
            // Streamed: at 10⁵ queries the document is 10⁸ bytes.
            crate::out::write_stream(|w| dpplan_render::write_json(w, &results))
                .into_diagnostic()?;
            return Ok(exit_code(&results, deny));
        }
        Format::Sarif => dpplan_render::sarif(&results),
        Format::Github => dpplan_render::github(&results),
    };
    crate::out::write_bytes(output.as_bytes()).into_diagnostic()?;
    Ok(exit_code(&results, deny))
}

/// 1 when a plan has an error (or, with `--deny warnings`, a warning) or
/// is over its budget.
fn exit_code(results: &[FileResult], deny: Option<Deny>) -> ExitCode {
    let failed = results.iter().any(|r| {
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
