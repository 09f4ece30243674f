//! `dpplan export`: the plan's whole accounted schedule as a dp_accounting
//! `DpEvent` tree (JSON), for another accountant to compose exactly what
//! dpplan composed (dpplan_review::dp_event; docs/accounting.md, "DpEvent").

use std::path::PathBuf;
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result, WrapErr};

#[derive(clap::Args)]
pub struct Args {
    /// The plan file.
    pub path: PathBuf,
    /// Write the document here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let analysis =
        match crate::check::clean_plan(&args.path, "nothing is exported until they are fixed")? {
            Ok(analysis) => analysis,
            Err(code) => return Ok(code),
        };
    let path = args.path.display().to_string();
    let report = analysis
        .report
        .as_ref()
        .ok_or_else(|| miette!("`{path}` declares no privacy block"))?;
    let doc = dpplan_review::dp_event::document(report).map_err(|e| miette!("{e}"))?;
    let text = serde_json::to_string_pretty(&doc).into_diagnostic()? + "\n";
    match &args.output {
        Some(out) => std::fs::write(out, text)
            .into_diagnostic()
            .wrap_err_with(|| format!("cannot write `{}`", out.display()))?,
        None => out!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
