//! `dpplan account`: every accountant's (ε, δ) for a plan, side by side,
//! with the ratio of each to the best, and, for re-released queries, what
//! averaging buys next to what it costs.

use std::path::PathBuf;
use std::process::ExitCode;

use miette::{miette, Result};

use dpplan_check::analyze;
use dpplan_render::num;
use dpplan_review::averaging::averaging;

#[derive(clap::Args)]
pub struct Args {
    /// The plan file.
    pub path: PathBuf,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print every ε with all its digits (the shortest decimal that reads
    /// back as the computed bound) instead of six significant digits rounded
    /// up: for comparing with a published table to the last digit.
    #[arg(long)]
    pub all_digits: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let text = crate::check::read_plan(&args.path)?;
    let analysis = analyze(&text);
    let path = args.path.display().to_string();
    if analysis.has_errors() {
        let file = dpplan_render::FileResult {
            path: &path,
            text: &text,
            analysis: &analysis,
        };
        err!("{}", crate::out::human(&file));
        // A plan's own errors exit 1, as in `dpplan check`; 2 is for usage
        // and IO errors.
        errln!("error: `{path}` has errors: no guarantee can be accounted");
        errln!("help: run `dpplan check` and fix the errors first");
        return Ok(ExitCode::from(1));
    }
    let report = analysis
        .report
        .as_ref()
        .ok_or_else(|| miette!("`{path}` declares no privacy block"))?;
    if args.json {
        let doc = serde_json::json!({
            "path": path,
            "plan": report.name,
            "budget": report.budget,
            "releases": report.releases,
            "best": report.total,
            "accountants": report.accountants,
            "averaging": averaging(report),
        });
        outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return Ok(ExitCode::SUCCESS);
    }
    // the tightest accountant's ε (what `best` would give), whatever the
    // plan asks for: the ratios are against it
    let best = report
        .accountants
        .iter()
        .filter(|a| dpplan_accounting::TIGHT.contains(&a.accountant))
        .filter_map(|a| a.epsilon)
        .reduce(f64::min);
    let shown = |e: f64| {
        if args.all_digits {
            format!("{e}")
        } else {
            num(e)
        }
    };
    outln!(
        "plan \"{}\": {} releases, budget ε = {}{}, unit {}, adjacency {}",
        report.name.as_deref().unwrap_or("(unnamed)"),
        report.releases,
        num(report.budget.epsilon),
        if report.budget.delta > 0.0 {
            format!(", δ = {}", num(report.budget.delta))
        } else {
            String::new()
        },
        report.unit.kind,
        report.adjacency
    );
    outln!();
    print_accountants(report, best, &shown)?;
    print_total(report, best, &shown)?;
    print_averaging(report)?;
    Ok(ExitCode::SUCCESS)
}

/// One row per accountant: its ε, its ratio to the tightest, how.
fn print_accountants(
    report: &dpplan_check::CheckedPlan,
    best: Option<f64>,
    shown: &dyn Fn(f64) -> String,
) -> Result<()> {
    let rows: Vec<[String; 4]> = report
        .accountants
        .iter()
        .map(|a| match (a.epsilon, &a.error) {
            (Some(e), _) => [
                a.accountant_name.clone(),
                shown(e),
                best.map(|b| {
                    if b > 0.0 {
                        format!("{:.4}", e / b)
                    } else {
                        "—".into()
                    }
                })
                .unwrap_or_default(),
                a.detail.clone().unwrap_or_default(),
            ],
            (None, err) => [
                a.accountant_name.clone(),
                "—".into(),
                "—".into(),
                // The accounting error's text already says "not applicable: …"
                // when that is the reason; other failures get it once.
                match err.as_deref().unwrap_or_default() {
                    e if e.starts_with("not applicable") => e.to_string(),
                    e => format!("not applicable: {e}"),
                },
            ],
        })
        .collect();
    let header = ["accountant", "ε", "× best", "how"].map(String::from);
    let mut w = header.clone().map(|h| h.chars().count());
    for r in &rows {
        for (wi, c) in w.iter_mut().zip(r.iter()).take(3) {
            *wi = (*wi).max(c.chars().count());
        }
    }
    let pad = |s: &str, n: usize| format!("{s}{}", " ".repeat(n.saturating_sub(s.chars().count())));
    for r in std::iter::once(&header).chain(&rows) {
        outln!(
            "  {}  {}  {}  {}",
            pad(&r[0], w[0]),
            pad(&r[1], w[1]),
            pad(&r[2], w[2]),
            r[3]
        );
    }
    Ok(())
}

/// The plan's total, and the tightest accountant's when the plan asks for
/// another.
fn print_total(
    report: &dpplan_check::CheckedPlan,
    best: Option<f64>,
    shown: &dyn Fn(f64) -> String,
) -> Result<()> {
    let Some(t) = &report.total else {
        return Ok(());
    };
    if report.accountant_requested == dpplan_check::AccountantChoice::Best {
        outln!(
            "\n  best: ε = {} at δ = {} ({})",
            shown(t.epsilon),
            num(t.delta),
            t.accountant_name
        );
        return Ok(());
    }
    outln!(
        "\n  the plan's total: ε = {} at δ = {} ({}, as the plan asks: `accountant {}`){}",
        shown(t.epsilon),
        num(t.delta),
        t.accountant_name,
        report.accountant_requested,
        match best {
            Some(b) if b < t.epsilon => format!("; the tightest accountant gives ε = {}", shown(b)),
            _ => String::new(),
        }
    );
    Ok(())
}

/// For each query released more than once: the std of an average of r
/// fresh releases against its ε.
fn print_averaging(report: &dpplan_check::CheckedPlan) -> Result<()> {
    let avg = averaging(report);
    if avg.is_empty() {
        return Ok(());
    }
    outln!("\n  averaging r fresh releases: the noise's standard deviation falls as σ/√r, the cost grows with r");
    for q in &avg {
        outln!("\n  {} (σ = {} per release)", q.query, num(q.sigma));
        outln!("    {:>8}  {:>14}  {:>12}", "r", "std of mean", "ε alone");
        for p in &q.points {
            outln!(
                "    {:>8}  {:>14}  {:>12}",
                p.r,
                num(p.std_of_mean),
                num(p.epsilon)
            );
        }
    }
    Ok(())
}
