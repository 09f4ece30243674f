//! `dpplan audit`: measures a lower bound on what the executed release
//! path leaks, next to the accountant's claim (docs/audit.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result, WrapErr};

use dpplan_audit::{AuditOptions, AuditReport, QueryAudit, Verdict};

/// The exit code of an audit that is inconclusive: nothing failed, but on
/// some release D and D′ could not be told apart (0 passed, 1 failed or
/// refused, 2 usage and IO errors).
pub const INCONCLUSIVE: u8 = 3;

#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum AuditFormat {
    /// A summary for people.
    Human,
    /// The audit as JSON (versioned; `dpplan report --audit` reads it).
    Json,
}

#[derive(clap::Args)]
#[command(
    after_help = "Exit codes: 0 passed (no measured lower bound above its claim, D and D′ behave alike, and the tests could tell them apart); 1 failed (a bound above its claim, a data-dependent branch), or the plan refused or the audit unable to run; 2 usage and IO errors; 3 inconclusive (nothing failed, but on some release D and D′ give the same exact cells, so no test could tell them apart). docs/audit.md"
)]
pub struct Args {
    /// The executable plan (from `dpplan compile`).
    pub plan: PathBuf,
    /// A dataset's CSV file: NAME=PATH (repeatable; default: the plan's `source`).
    #[arg(long = "data", value_name = "NAME=PATH")]
    pub data: Vec<String>,
    /// Only this release (repeatable; default: every release).
    #[arg(long = "query", value_name = "NAME")]
    pub queries: Vec<String>,
    /// Releases drawn on D and as many on D′, per audited release.
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub runs: u64,
    /// Joint confidence of each release's measured lower bound.
    #[arg(long, default_value_t = 0.95, value_name = "P")]
    pub confidence: f64,
    /// Threads drawing the runs (default: one per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<std::num::NonZeroUsize>,
    /// Output format on standard output.
    #[arg(long, value_enum, default_value_t = AuditFormat::Human)]
    pub format: AuditFormat,
    /// Also write the audit as JSON to this file (for `dpplan report --audit`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

fn load(path: &Path) -> Result<std::result::Result<dpplan_plan::ExecutablePlan, ExitCode>> {
    let text = std::fs::read_to_string(path)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read `{}`", path.display()))?;
    Ok(dpplan_compile::load(&text).map_err(|e| {
        errln!("error: `{}` is refused: {e}", path.display());
        if path.extension().is_some_and(|x| x == "dpplan") {
            errln!(
                "help: `dpplan audit` takes the compiled plan: `dpplan compile {} -o {}` first",
                path.display(),
                path.with_extension("json").display()
            );
        }
        ExitCode::from(1)
    }))
}

pub fn run(a: Args) -> Result<ExitCode> {
    if !(a.confidence > 0.0 && a.confidence < 1.0) {
        return Err(miette!(
            help = "write e.g. --confidence 0.95",
            "--confidence {} is not strictly between 0 and 1",
            a.confidence
        ));
    }
    let max = dpplan_audit::MAX_RUNS;
    if !(2..=max).contains(&a.runs) {
        return Err(miette!(
            help = "write e.g. --runs 100000",
            "--runs {}: an audit takes from 2 to {max} runs on each data set",
            a.runs
        ));
    }
    let plan = match load(&a.plan)? {
        Ok(p) => p,
        Err(code) => return Ok(code),
    };
    let opts = AuditOptions {
        data: crate::run::data_paths(&plan, &a.data)?,
        base_dir: a.plan.parent().map(Path::to_path_buf),
        queries: a.queries.clone(),
        runs: a.runs,
        confidence: a.confidence,
        threads: a.threads.map(|n| n.get()),
        ..AuditOptions::default()
    };
    let report = match dpplan_audit::audit(&plan, &opts) {
        Ok(r) => r,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(if e.is_io() { 2 } else { 1 }));
        }
    };
    let mut json = serde_json::to_string_pretty(&report).into_diagnostic()?;
    json.push('\n');
    if let Some(o) = &a.out {
        std::fs::write(o, &json)
            .into_diagnostic()
            .wrap_err_with(|| format!("cannot write `{}`", o.display()))?;
    }
    let shown = match a.format {
        AuditFormat::Json => json,
        AuditFormat::Human => human(&report),
    };
    crate::out::write_bytes(shown.as_bytes()).into_diagnostic()?;
    Ok(match report.verdict {
        Verdict::Passed => ExitCode::SUCCESS,
        Verdict::Failed => ExitCode::from(1),
        Verdict::Inconclusive => ExitCode::from(INCONCLUSIVE),
    })
}

/// `x` rounded down (`up` false) or up to 3 significant digits: a measured
/// lower bound is never printed larger, a claim never smaller.
pub fn sig3(x: f64, up: bool) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let mag = x.abs().log10().floor() as i32;
    let scale = 10f64.powi(2 - mag);
    let r = if up {
        (x * scale).ceil() / scale
    } else {
        (x * scale).floor() / scale
    };
    let decimals = (2 - mag).max(0) as usize;
    format!("{r:.decimals$}")
}

fn percent(c: f64) -> String {
    let p = c * 100.0;
    let s = format!("{p:.10}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} %")
}

fn human(r: &AuditReport) -> String {
    let mut s = format!(
        "audit of `{}` ({} releases on D and {} on D′ per query, confidence {})\n",
        r.plan,
        r.runs,
        r.runs,
        percent(r.confidence)
    );
    s += &format!("  executed once:     {}\n", r.executed.once.join("; "));
    s += &format!("  executed each run: {}\n", r.executed.every_run.join("; "));
    s += &format!("  never executed:    {}\n", r.executed.never.join("; "));
    for q in &r.queries {
        s += &query(q, r.confidence);
    }
    s += match r.verdict {
        Verdict::Passed => "passed: no measured lower bound above its claim, and D and D′ behave alike (a lower bound, not a proof of privacy)\n",
        Verdict::Failed => "FAILED: a measured lower bound above its claim, or a data-dependent branch\n",
        Verdict::Inconclusive => "INCONCLUSIVE: nothing failed, but on some release D and D′ give the same exact cells, so no test could tell them apart: the audit shows nothing about it (not a pass)\n",
    };
    s
}

fn query(q: &QueryAudit, confidence: f64) -> String {
    let mut s = format!(
        "\n{} {}: measured ε ≥ {} ({}), claimed ε = {} at δ = {:e}\n",
        match q.verdict {
            Verdict::Passed => "ok  ",
            Verdict::Failed => "FAIL",
            Verdict::Inconclusive => "INCONCLUSIVE",
        },
        q.query,
        sig3(q.measured_epsilon, false),
        percent(confidence),
        sig3(q.claimed_epsilon, true),
        q.delta
    );
    s += &format!("  neighbours: {}\n", q.neighbours);
    for t in &q.tests {
        s += &format!(
            "  {}: ε ≥ {} (false positives {}/{}, false negatives {}/{})\n",
            t.distinguisher.name(),
            sig3(t.epsilon_lower_bound, false),
            t.false_positives,
            t.evaluated,
            t.false_negatives,
            t.evaluated
        );
    }
    if q.behaviour_differences.is_empty() {
        s += "  D and D′ behave alike: errors, cells and their labels, mechanism\n";
    }
    for d in &q.behaviour_differences {
        s += &format!("  data-dependent branch: {d}\n");
    }
    for n in &q.notes {
        s += &format!("  note: {n}\n");
    }
    s += &format!("  {:.0} releases per minute\n", q.releases_per_minute);
    s
}
