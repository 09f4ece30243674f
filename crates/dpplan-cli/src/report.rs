//! `dpplan report`: the reviewer's report of a plan (HTML, Markdown or
//! JSON), from the same analysis as `dpplan check`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result, WrapErr};

use dpplan_check::analyze;
use dpplan_review::report::{self, ReviewError, ReviewOptions};

#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum ReportFormat {
    /// One self-contained HTML file with inline SVG figures.
    Html,
    /// Markdown for a pull-request comment (tables, no figures).
    Md,
    /// JSON (docs/report.schema.json).
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    /// The plan file (not with --frozen).
    #[arg(required_unless_present = "frozen")]
    pub path: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The first run (`YYYY-MM-DD` or `YYYY-MM-DDTHH:MM`, UTC): where `every … for …`,
    /// `N times` and `once` schedules start on the calendar.
    #[arg(long, value_name = "DATE")]
    pub start: Option<String>,
    /// A true count at which to state a mean's accuracy (repeatable;
    /// default 100, 1000, 10000, 100000).
    #[arg(long = "mean-count", value_name = "N")]
    pub mean_count: Vec<f64>,
    /// Freeze the report in the ledger (--ledger): its hash, the exact
    /// accountant inputs, the plan's hash, the dpplan version and source
    /// revision are appended as an entry, and the report is stored.
    #[arg(long, requires = "ledger", conflicts_with = "frozen")]
    pub freeze: bool,
    /// Print the frozen report with this hash (or a unique prefix of 8+
    /// hex digits) from the ledger (--ledger), byte for byte, after
    /// verifying the ledger and re-deriving its claim; its addenda follow.
    #[arg(long, value_name = "HASH", requires = "ledger", conflicts_with_all = ["path", "out", "start", "mean_count"])]
    pub frozen: Option<String>,
    /// The latest `dpplan audit --out AUDIT.json` of this plan: its measured
    /// lower bounds are shown beside the claims, with its runs and confidence.
    #[arg(long, value_name = "AUDIT.json", conflicts_with = "frozen")]
    pub audit: Option<PathBuf>,
    /// The ledger for --freeze and --frozen (created for the plan by
    /// --freeze when it does not exist).
    #[arg(long, value_name = "DB")]
    pub ledger: Option<PathBuf>,
    /// With --freeze: the policy in force and an operator's explicit
    /// override of it.
    #[command(flatten)]
    pub gate: crate::policy::GateArgs,
}

/// What a report is derived from besides its plan and format: the same
/// options give the same bytes (`ledger freeze` re-derives a report with
/// them before it is stored).
#[derive(Clone, Debug, Default)]
pub struct Derivation {
    pub start: Option<String>,
    pub mean_counts: Vec<f64>,
    pub audit: Option<PathBuf>,
}

impl ReportFormat {
    pub fn name(self) -> &'static str {
        match self {
            ReportFormat::Html => "html",
            ReportFormat::Md => "md",
            ReportFormat::Json => "json",
        }
    }

    pub fn from_name(name: &str) -> Option<ReportFormat> {
        [ReportFormat::Html, ReportFormat::Md, ReportFormat::Json]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

/// The report of the plan at `plan_path` (source `text`) in `format`, and
/// whether its negative controls move the claim; `Err(code)` when the plan
/// has errors (printed) and there is nothing to review.
pub fn derive(
    plan_path: &Path,
    text: &str,
    format: ReportFormat,
    d: &Derivation,
) -> Result<std::result::Result<(report::Review, String), ExitCode>> {
    let start = match &d.start {
        Some(s) => Some(dpplan_check::schedule::parse_date(s).ok_or_else(|| {
            miette!(
                help = "write a date as YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)",
                "--start `{s}` is not a valid date"
            )
        })?),
        None => None,
    };
    if let Some(n) = d.mean_counts.iter().find(|n| !(n.is_finite() && **n > 0.0)) {
        return Err(miette!(
            help = "a mean's accuracy is stated at a positive count of rows",
            "--mean-count {n} is not a positive number"
        ));
    }
    let analysis = analyze(text);
    let path = plan_path.display().to_string();
    let mut review = match report::build(
        &analysis,
        &ReviewOptions {
            start,
            mean_counts: d.mean_counts.clone(),
        },
    ) {
        Ok(r) => r,
        Err(ReviewError::PlanHasErrors) => {
            let file = dpplan_render::FileResult {
                path: &path,
                text,
                analysis: &analysis,
            };
            err!("{}", crate::out::human(&file));
            errln!("error: `{path}` has errors: no guarantee is claimed, so there is nothing to review");
            errln!("help: run `dpplan check` and fix the errors first");
            return Ok(Err(ExitCode::from(1)));
        }
        Err(e) => return Err(miette!(help = "run `dpplan check` on it", "`{path}`: {e}")),
    };
    if let Some(a) = &d.audit {
        review.audit = Some(audit_of(a, text)?);
    }
    let body = match format {
        ReportFormat::Html => report::html(&review),
        ReportFormat::Md => report::markdown(&review),
        ReportFormat::Json => {
            let mut s = serde_json::to_string_pretty(&review).into_diagnostic()?;
            s.push('\n');
            s
        }
    };
    Ok(Ok((review, body)))
}

pub fn run(args: Args) -> Result<ExitCode> {
    if let (Some(hash), Some(ledger)) = (&args.frozen, &args.ledger) {
        return crate::freeze::frozen(ledger, hash);
    }
    let Some(plan_path) = args.path.as_deref() else {
        return Err(miette!(
            "a plan file is needed (or --frozen HASH --ledger DB)"
        ));
    };
    if args.freeze {
        if let Some(code) = crate::policy::gate_source(plan_path, &args.gate) {
            return Ok(code);
        }
    }
    let text = crate::check::read_plan(plan_path)?;
    let derivation = Derivation {
        start: args.start.clone(),
        mean_counts: args.mean_count.clone(),
        audit: args.audit.clone(),
    };
    let (review, body) = match derive(plan_path, &text, args.format, &derivation)? {
        Ok(x) => x,
        Err(code) => return Ok(code),
    };
    match &args.out {
        Some(out) => std::fs::write(out, &body)
            .into_diagnostic()
            .wrap_err_with(|| format!("cannot write the report to `{}`", out.display()))?,
        // with --freeze the report goes to the ledger; stdout says what was frozen
        None if args.freeze => {}
        None => out!("{body}"),
    }
    if args.freeze && review.controls_ok {
        if let Some(ledger) = &args.ledger {
            return crate::freeze::freeze_bytes(
                ledger,
                body.into_bytes(),
                args.format.name(),
                plan_path,
                &derivation,
                false,
            );
        }
    }
    if !review.controls_ok {
        for c in review
            .controls
            .iter()
            .filter(|c| !(c.without_moves && c.doubled_moves))
        {
            errln!(
                "error: the negative controls of query `{}` do not move the claim (ε = {}): without its releases ε = {}, with its contribution bound doubled ε = {}",
                c.query,
                dpplan_render::num(review.contract.total.epsilon),
                dpplan_render::num(c.without),
                dpplan_render::num(c.doubled)
            );
        }
        errln!("help: a query whose removal or doubled bound leaves the total unchanged is not accounted as it should be (e.g. a statistic with zero sensitivity released as if noisy); review it before signing off");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The audit in `path`, which must be of this plan's compiled body.
fn audit_of(path: &std::path::Path, source: &str) -> Result<report::AuditSummary> {
    let text = std::fs::read_to_string(path)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read the audit `{}`", path.display()))?;
    let audit = report::AuditSummary::from_json(&text).map_err(|e| {
        miette!(
            help = "pass the JSON that `dpplan audit PLAN.json --out AUDIT.json` wrote",
            "`{}`: {e}",
            path.display()
        )
    })?;
    let body = dpplan_compile::compile(source)
        .map_err(|e| miette!("the plan does not compile, so no audit can be of it: {e}"))?
        .body_sha256;
    if audit.plan_sha256 != body {
        return Err(miette!(
            help = "audit this version of the plan: `dpplan compile` it, then `dpplan audit PLAN.json --out AUDIT.json`",
            "`{}` audits another plan (body sha256 {}), not this one ({body})",
            path.display(),
            audit.plan_sha256
        ));
    }
    Ok(audit)
}
