//! `dpplan account`: every accountant's (ε, δ) for a plan, side by side,
//! with the ratio of each to the best, and, for re-released queries, what
//! averaging buys next to what it costs.

use std::path::PathBuf;
use std::process::ExitCode;

use miette::{miette, Result};

use dpplan_render::num;
use dpplan_review::averaging::averaging;

#[derive(clap::Args)]
pub struct Args {
    /// The plan file.
    #[arg(required_unless_present = "dp_event", conflicts_with = "dp_event")]
    pub path: Option<PathBuf>,
    /// Account a dp_accounting DpEvent tree instead of a plan (its
    /// `to_named_tuple()` JSON, or the document `dpplan export` writes): a
    /// second opinion on another tool's claim.
    #[arg(long, value_name = "FILE", requires = "delta")]
    pub dp_event: Option<PathBuf>,
    /// The δ to account a DpEvent tree at (with `--dp-event`).
    #[arg(long, value_name = "DELTA")]
    pub delta: Option<f64>,
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
    if let Some(file) = &args.dp_event {
        return dp_event(file, args.delta.unwrap_or(0.0), &args);
    }
    let plan = args.path.as_ref().ok_or_else(|| {
        miette!("name a plan file, or a DpEvent tree with `--dp-event FILE --delta D`")
    })?;
    let analysis = match crate::check::clean_plan(plan, "no guarantee can be accounted")? {
        Ok(analysis) => analysis,
        Err(code) => return Ok(code),
    };
    let path = plan.display().to_string();
    let report = analysis
        .report
        .as_ref()
        .ok_or_else(|| miette!("`{path}` declares no privacy block"))?;
    if args.json {
        let doc = dpplan_review::averaging::account_document(&path, report);
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

/// `--dp-event FILE --delta D`: every accountant's ε for a DpEvent tree
/// written by any tool, the tightest, or the events dpplan cannot account
/// (then no ε is printed: a total without them would understate).
fn dp_event(file: &std::path::Path, delta: f64, args: &Args) -> Result<ExitCode> {
    use dpplan_accounting::dp_event::{import, DpEvent};
    use miette::{IntoDiagnostic, WrapErr};
    if !(0.0..1.0).contains(&delta) {
        return Err(miette!(
            help = "δ is the probability bound of the (ε, δ) claim: a number in [0, 1), e.g. 1e-6",
            "`--delta {delta}` is not in [0, 1)"
        ));
    }
    let text = std::fs::read_to_string(file)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read `{}`", file.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        miette!(
            help = "write the tree as dp_accounting's `to_named_tuple()` turned into JSON objects, or pass the document `dpplan export` writes",
            "`{}` is not JSON: {e}",
            file.display()
        )
    })?;
    // the document `dpplan export` writes carries the tree in `event`
    let tree = match value.get("format").and_then(|f| f.as_str()) {
        Some(dpplan_review::dp_event::FORMAT) => value
            .get("event")
            .ok_or_else(|| miette!("`{}` has no `event`", file.display()))?,
        _ => &value,
    };
    let event = DpEvent::from_json(tree).map_err(|e| {
        miette!(
            help = "each event is an object with `class_name` and its fields, as dp_accounting's `to_named_tuple()` gives them",
            "`{}`: {e}",
            file.display()
        )
    })?;
    let imported = import(&event);
    let path = file.display().to_string();
    if !imported.unsupported.is_empty() {
        if args.json {
            let doc = serde_json::json!({
                "path": path,
                "delta": delta,
                "accounted": false,
                "unsupported": imported.unsupported,
            });
            outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        } else {
            errln!("error: `{path}`: dpplan cannot account every event of this tree, so it claims no ε (a total without them would understate the privacy loss):");
            for u in &imported.unsupported {
                errln!("  - {u}");
            }
            errln!("help: dpplan accounts Gaussian, Laplace and discrete Laplace events, one Gaussian or Laplace event on a Poisson sample, ρ-zCDP events (by their curve) and their compositions");
        }
        return Ok(ExitCode::from(1));
    }
    let results = if imported.is_empty() {
        Vec::new()
    } else {
        // a zCDP event's stand-in is read only by the accountants of its curve
        imported.all(delta)
    };
    let best = dpplan_accounting::best_of(
        results
            .iter()
            .filter(|(a, _)| dpplan_accounting::TIGHT.contains(a))
            .map(|(_, r)| r.clone()),
    )
    .ok();
    let shown = |e: f64| {
        if args.all_digits {
            format!("{e}")
        } else {
            num(e)
        }
    };
    if args.json {
        let accountants: Vec<serde_json::Value> = results
            .iter()
            .map(|(a, r)| match r {
                Ok(b) => {
                    serde_json::json!({"accountant": a, "epsilon": b.epsilon, "detail": b.detail})
                }
                Err(e) => {
                    serde_json::json!({"accountant": a, "epsilon": null, "error": e.to_string()})
                }
            })
            .collect();
        let doc = serde_json::json!({
            "path": path,
            "delta": delta,
            "accounted": true,
            "releases": imported.release_count(),
            "zcdp_events": imported.zcdp,
            "best": best.as_ref().map(|b| serde_json::json!({"accountant": b.accountant, "epsilon": b.epsilon})),
            "accountants": accountants,
        });
        outln!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "DpEvent tree `{path}`: {} release(s), δ = {}",
        imported.release_count(),
        num(delta)
    );
    if results.is_empty() {
        outln!("\n  no privacy loss: every event is a no-op (ε = 0)");
        return Ok(ExitCode::SUCCESS);
    }
    if !imported.zcdp.is_empty() {
        outln!(
            "\n  {} ZCDpEvent(s), known only by their zCDP curve: only the accountants that read an RDP curve apply (zCDP, RDP, the classical closed form)",
            imported.zcdp.len()
        );
        for z in &imported.zcdp {
            outln!("    - {z}");
        }
    }
    outln!();
    for (a, r) in &results {
        match r {
            Ok(b) => outln!("  {:<28}  {}", a.title(), shown(b.epsilon)),
            Err(e) => outln!("  {:<28}  —  {e}", a.title()),
        }
    }
    if let Some(b) = best {
        outln!(
            "\n  best: ε = {} at δ = {} ({})",
            shown(b.epsilon),
            num(delta),
            b.accountant.title()
        );
    }
    Ok(ExitCode::SUCCESS)
}
