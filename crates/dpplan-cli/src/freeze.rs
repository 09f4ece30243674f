//! `dpplan ledger freeze` and `dpplan ledger frozen`: a report kept in the
//! ledger at sign-off, and served back exactly, verified.

use std::path::Path;
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result, WrapErr};

use dpplan_check::{analyze, CheckedPlan};
use dpplan_runtime::ledger::{
    AccountantInputs, AccountedRelease, Budget, Claim, FrozenReport, Genesis, Ledger, LedgerError,
};

use crate::out::escape_control as esc;

/// The exact inputs of a checked plan's claim: every part the accountants
/// composed (`part.accounted`), with its query's release count, the
/// budget's δ, the accountant requested and the claimed total. `None` when
/// the plan claims no total.
pub fn accountant_inputs(plan: &CheckedPlan) -> Option<AccountantInputs> {
    let total = plan.total.as_ref()?;
    let mechanisms = plan
        .queries
        .iter()
        .flat_map(|q| {
            q.parts.iter().filter_map(move |p| {
                let m = p.accounted?;
                Some(AccountedRelease {
                    query: q.name.clone(),
                    kind: m.kind,
                    scale: m.scale,
                    l1: m.sensitivity.l1,
                    l2: m.sensitivity.l2,
                    coords: m.sensitivity.coords,
                    linf: m.sensitivity.linf,
                    releases: q.releases,
                })
            })
        })
        .collect();
    Some(AccountantInputs {
        mechanisms,
        delta: plan.budget.delta,
        accountant: plan.accountant_requested,
        claim: Claim {
            epsilon: total.epsilon,
            delta: total.delta,
            accountant: total.accountant,
        },
    })
}

/// Refusals exit 1 with the message; a `LedgerError` is reported by its text.
fn refuse(msg: impl std::fmt::Display) -> Result<ExitCode> {
    errln!("error: {msg}");
    Ok(ExitCode::from(1))
}

pub fn freeze(
    ledger: &Path,
    report: &Path,
    plan_path: &Path,
    format: Option<String>,
    start: Option<&str>,
) -> Result<ExitCode> {
    let bytes = std::fs::read(report)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read `{}`", report.display()))?;
    let format = format.unwrap_or_else(|| {
        report
            .extension()
            .map(|x| x.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_else(|| "unknown".into())
    });
    freeze_bytes(ledger, bytes, &format, plan_path, start)
}

/// Freezes `bytes` (a report of `plan_path` in `format`) into the ledger,
/// creating it for the plan when it does not exist; `dpplan report
/// --freeze` and `dpplan ledger freeze` both end here.
pub fn freeze_bytes(
    ledger: &Path,
    bytes: Vec<u8>,
    format: &str,
    plan_path: &Path,
    start: Option<&str>,
) -> Result<ExitCode> {
    let text = crate::check::read_plan(plan_path)?;
    let analysis = analyze(&text);
    if analysis.has_errors() {
        return refuse(format!(
            "`{}` has errors: it claims nothing, so there is nothing to freeze (`dpplan check {}`)",
            plan_path.display(),
            plan_path.display()
        ));
    }
    let Some(checked) = analysis.report.as_ref() else {
        return refuse(format!("`{}` has no privacy block", plan_path.display()));
    };
    let Some(inputs) = accountant_inputs(checked) else {
        return refuse(format!(
            "`{}` claims no total ({}): there is nothing to freeze",
            plan_path.display(),
            checked.total_missing.as_deref().unwrap_or("no release")
        ));
    };
    let compiled = dpplan_compile::compile(&text).ok();
    let mut l = if ledger.exists() {
        let l = crate::ledger::open(ledger)?;
        // Like a run, never append to a damaged ledger.
        if let Err(e) = l.integrity(None) {
            return refuse(e);
        }
        l
    } else {
        // Creating the ledger records the plan as a first run would; it
        // fixes the start of `every … for …` schedules, so that is asked for
        // when the plan has one.
        let Some(p) = compiled.as_ref() else {
            return refuse(format!(
                "`{}` does not exist and the runtime cannot execute `{}`, so no ledger can be created for it; freeze into an existing ledger",
                ledger.display(),
                plan_path.display()
            ));
        };
        let floating = p.body.releases.iter().find(|r| {
            r.schedule.kind == dpplan_check::ScheduleKind::Every && r.schedule.start.is_none()
        });
        let schedule_start = match (start, floating) {
            (Some(s), _) => crate::run::parse_time(s)?,
            (None, None) => dpplan_runtime::ledger::now_unix(),
            (None, Some(r)) => {
                errln!(
                    "error: `{}` does not exist: freezing creates it, which fixes the start of `{}`'s schedule ({}) as a first run would",
                    ledger.display(),
                    r.name,
                    esc(&r.schedule.text)
                );
                errln!("help: pass --start with the schedule's first day, e.g. --start 2026-03-01, or freeze after the first `dpplan run`");
                return Ok(ExitCode::from(1));
            }
        };
        let genesis = Genesis {
            plan_hash: &p.body_sha256,
            budget: Budget {
                epsilon: p.body.privacy.budget_epsilon,
                delta: p.body.privacy.budget_delta,
            },
            schedule_start,
            contract: p.body.contract(),
        };
        match Ledger::open(ledger, Some(genesis)) {
            Ok(l) => {
                errln!(
                    "created the ledger `{}` for plan {}",
                    ledger.display(),
                    p.body_sha256
                );
                l
            }
            Err(e) => return refuse(e),
        }
    };
    let frozen = l.freeze(FrozenReport {
        bytes,
        format: format.to_string(),
        plan_name: checked.name.clone(),
        plan_source_sha256: dpplan_plan::sha256_hex(text.as_bytes()),
        plan_sha256: compiled.map(|p| p.body_sha256),
        inputs,
    });
    let f = match frozen {
        Ok(f) => f,
        Err(e @ LedgerError::Io(_)) => return Err(miette!("{e}")),
        Err(e) => return refuse(e),
    };
    let c = &f.value.inputs.claim;
    outln!(
        "froze report {} ({} bytes, {}) of `{}` as ledger entry {}: claim ε = {} at δ = {} ({}), {} accounted mechanism(s); latest hash {}",
        f.value.report_sha256,
        f.value.size,
        esc(&f.value.format),
        plan_path.display(),
        f.entry.seq,
        c.epsilon,
        c.delta,
        c.accountant.name(),
        f.value.inputs.mechanisms.len(),
        f.entry.hash
    );
    Ok(ExitCode::SUCCESS)
}

pub fn frozen(ledger: &Path, hash: &str) -> Result<ExitCode> {
    let l = crate::ledger::open(ledger)?;
    // The whole ledger first (chain, triggers, anchor, every frozen report):
    // an entry is trusted only in a ledger that verifies.
    let f = match l.integrity(None).and_then(|_| l.frozen(hash)) {
        Ok(f) => f,
        Err(e @ LedgerError::Io(_)) => return Err(miette!("{e}")),
        Err(e) => return refuse(e),
    };
    let v = &f.value;
    let c = &v.inputs.claim;
    errln!(
        "verified: frozen report {} (ledger entry {}, {}) of plan {} (source sha256 {}), frozen by {} (revision {}): its bytes hash to its entry's hash, and its claim ε = {} at δ = {} ({}) re-derives from its {} accounted mechanism(s){}",
        v.report_sha256,
        f.entry.seq,
        f.entry.time,
        esc(v.plan_name.as_deref().unwrap_or("(unnamed)")),
        v.plan_source_sha256,
        esc(&v.dpplan_version),
        esc(&v.source_revision),
        c.epsilon,
        c.delta,
        c.accountant.name(),
        v.inputs.mechanisms.len(),
        match f.addenda.len() {
            0 => String::new(),
            n => format!("; {n} addendum(s) follow it"),
        }
    );
    crate::out::write_bytes(&f.bytes).into_diagnostic()?;
    if f.addenda.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    if !f.bytes.ends_with(b"\n") {
        outln!();
    }
    // After the original, in the report's own format; the original bytes
    // above are printed unchanged (their hash is the frozen one).
    for a in &f.addenda {
        let head = format!(
            "Addendum (ledger entry {}, {}), appended after the report was frozen; the report above is unchanged",
            a.seq, a.time
        );
        match v.format.as_str() {
            "html" => outln!(
                "<section class=\"addendum\"><h2>{}</h2><p>{}</p></section>",
                dpplan_review::report::figures::escape(&head),
                dpplan_review::report::figures::escape(&a.text)
            ),
            "md" => outln!("\n---\n\n**{}**\n\n{}", esc(&head), esc(&a.text)),
            _ => outln!("\n---\n{}:\n{}", esc(&head), esc(&a.text)),
        }
    }
    Ok(ExitCode::SUCCESS)
}
