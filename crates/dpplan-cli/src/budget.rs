//! Shared budget ledgers (docs/policy.md, `[[budgets]]` with `ledger`):
//! `dpplan ledger show|verify|export` of a budget ledger (the budgets
//! `dpplan run` charges are `dpplan_gate::run_requirements`').

use std::path::Path;
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result};

use dpplan_runtime::ledger::budget::BudgetLedger;
use dpplan_runtime::ledger::LedgerError;

fn open(path: &Path) -> Result<BudgetLedger> {
    BudgetLedger::open(path).map_err(|e| miette!("{e}"))
}

/// `dpplan ledger show BUDGET`: the budget, each plan by name with its
/// share, the composed total and what is left.
pub fn show(path: &Path, json: bool) -> Result<ExitCode> {
    let l = open(path)?;
    let s = l.summary().map_err(|e| miette!("{e}"))?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&s).into_diagnostic()?);
        return Ok(ExitCode::SUCCESS);
    }
    use crate::out::escape_control as esc;
    let g = &s.guarantee;
    outln!(
        "budget ledger `{}`: the shared budget of `{}` ({}): ε = {}, δ = {}; unit {}{}, adjacency {}",
        path.display(),
        esc(&s.source),
        esc(&s.source_path),
        s.budget_epsilon,
        s.budget_delta,
        g.unit,
        g.unit_id
            .as_deref()
            .map(|id| format!(" by {}", esc(id)))
            .unwrap_or_default(),
        g.adjacency
    );
    outln!(
        "{:<24}  {:>8}  {:>8}  {:>20}  plan sha256",
        "plan",
        "charges",
        "releases",
        "share ε (alone)"
    );
    for p in &s.plans {
        let share = match (p.epsilon, p.accountant) {
            (Some(e), Some(a)) => format!("{e} {a}"),
            _ => format!("n/a: {}", p.error.as_deref().unwrap_or("")),
        };
        outln!(
            "{:<24}  {:>8}  {:>8}  {:>20}  {}",
            esc(&p.plan),
            p.charges,
            p.releases,
            share,
            p.plan_hashes
                .iter()
                .map(|h| format!("{}…", &h[..16.min(h.len())]))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    if let Some(per) = s.per {
        outln!(
            "ε per {} per {} (UTC), each release counted against every block its data lie in:",
            g.unit,
            per.name()
        );
        for b in &s.blocks {
            outln!("  {:<24}  ε = {} ({})", b.block, b.epsilon, b.accountant);
        }
    }
    outln!(
        "composed{}: ε = {} ({}) at δ = {} of ε = {}; remaining ε = {}",
        if s.per.is_some() {
            " (the largest block)"
        } else {
            ""
        },
        s.total_epsilon,
        s.accountant,
        s.budget_delta,
        s.budget_epsilon,
        s.remaining_epsilon
    );
    outln!(
        "shares: each plan's releases on the source alone; they do not add up to the total (composition is sublinear)"
    );
    outln!("{} entries, latest hash {}", s.entries, s.latest_hash);
    Ok(ExitCode::SUCCESS)
}

/// `dpplan ledger export BUDGET`: every entry, as JSON lines (or CSV),
/// read without verifying it (an inspection shows a damaged ledger too:
/// `ledger verify` says what is wrong).
pub fn export(path: &Path, csv: bool) -> Result<ExitCode> {
    let entries = BudgetLedger::read_entries(path).map_err(|e| miette!("{e}"))?;
    crate::ledger::print_entries(&entries, csv)
}

/// `dpplan ledger verify BUDGET`: as a run verifies it before a charge.
pub fn verify(path: &Path) -> Result<ExitCode> {
    match BudgetLedger::open(path) {
        Ok(l) => {
            let s = l.summary().map_err(|e| miette!("{e}"))?;
            outln!(
                "ok: budget ledger, {} entries, hash chain intact, anchored, latest hash {}",
                s.entries,
                s.latest_hash
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(LedgerError::Damaged { seq, why }) => {
            match seq {
                Some(seq) => errln!("FAILED: entry {seq}: {why}"),
                None => errln!("FAILED: {why}"),
            }
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(miette!("{e}")),
    }
}
