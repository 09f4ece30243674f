//! Shared budget ledgers (docs/policy.md, `[[budgets]]` with `ledger`):
//! the budgets `dpplan run` charges, from the policy in force for the
//! plan, and `dpplan ledger show|verify` of a budget ledger.

use std::path::Path;
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result};

use dpplan_runtime::ledger::budget::{BudgetLedger, Per, SharedBudget};
use dpplan_runtime::ledger::LedgerError;

/// The shared budgets with a budget ledger of the policy in force for the
/// plan at `plan` (`--config`, or the nearest `dpplan.toml` up from it,
/// with its chain); none without a policy. A policy that cannot be used is an error located in it.
pub fn in_force(plan: &Path, config: Option<&Path>) -> Result<Vec<SharedBudget>> {
    let policy = match dpplan_policy::in_force(plan, config) {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(Vec::new()),
        Err(e) => {
            err!("{}", dpplan_render::policy_error(&e, false));
            return Err(miette!(
                help = "fix the policy: a run never goes on without the budgets it shares",
                "the policy `{}` in force for `{}` cannot be used",
                e.file.display(),
                plan.display()
            ));
        }
    };
    Ok(policy
        .budgets
        .iter()
        .filter_map(|b| {
            b.ledger.as_ref().map(|l| SharedBudget {
                source: b.source.clone(),
                path: b.path.clone(),
                epsilon: b.epsilon,
                delta: b.delta,
                ledger: l.clone(),
                policy: b.policy.clone(),
                per: b.per.map(|p| match p {
                    dpplan_policy::Per::Week => Per::Week,
                    dpplan_policy::Per::Month => Per::Month,
                }),
            })
        })
        .collect())
}

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
