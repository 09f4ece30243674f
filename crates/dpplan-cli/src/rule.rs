//! `dpplan rule`: a diagnostic code's documentation (docs/diagnostics.md,
//! built into the binary), or the list of every code.

use std::process::ExitCode;

use miette::{miette, Result};

use dpplan_diagnostics::{rule_doc, Code};

#[derive(clap::Args)]
pub struct Args {
    /// A code (`DP009`, `dp009`, `9`) or its name (`fresh-rerelease`).
    #[arg(required_unless_present = "list", conflicts_with = "list")]
    pub code: Option<String>,
    /// List every code with its name, default severity and title.
    #[arg(long)]
    pub list: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn record(code: Code, with_doc: bool) -> serde_json::Value {
    let mut v = serde_json::json!({
        "code": code.as_str(),
        "name": code.name(),
        "severity": code.default_severity().as_str(),
        "title": code.title(),
    });
    if with_doc {
        v["documentation"] = rule_doc(code).unwrap_or_default().into();
    }
    v
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.list {
        if args.json {
            let all: Vec<_> = Code::ALL.iter().map(|&c| record(c, false)).collect();
            outln!("{}", serde_json::to_string_pretty(&all).unwrap_or_default());
        } else {
            let w = Code::ALL.iter().map(|c| c.name().len()).max().unwrap_or(0);
            for &c in Code::ALL {
                outln!(
                    "{}  {:w$}  {:7}  {}",
                    c.as_str(),
                    c.name(),
                    c.default_severity().as_str(),
                    c.title()
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let typed = args.code.unwrap_or_default();
    let code = Code::parse(&typed).ok_or_else(|| {
        miette!(
            help = "`dpplan rule --list` lists every code",
            "`{typed}` is not a dpplan diagnostic code or name"
        )
    })?;
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&record(code, true)).unwrap_or_default()
        );
    } else {
        outln!("{} {}: {}\n", code.as_str(), code.name(), code.title());
        outln!("{}", rule_doc(code).unwrap_or("(not documented)"));
    }
    Ok(ExitCode::SUCCESS)
}
