//! `dpplan ledger freeze` and `dpplan ledger frozen`: a report kept in the
//! ledger at sign-off, and served back exactly, verified.

use std::path::Path;
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result, WrapErr};

use dpplan_check::{analyze, CheckedPlan};
use dpplan_runtime::ledger::{
    AccountantInputs, AccountedRelease, Budget, Claim, FrozenReport, Genesis, Ledger, LedgerError,
    ReviewerKey,
};

use crate::out::escape_control as esc;
use crate::report::{Derivation, ReportFormat};

/// The derivation's options in words.
fn derivation_text(d: &Derivation) -> String {
    let mut parts = Vec::new();
    parts.push(match &d.start {
        Some(s) => format!("start {}", esc(s)),
        None => "no --start".into(),
    });
    if !d.mean_counts.is_empty() {
        let n: Vec<String> = d.mean_counts.iter().map(|n| n.to_string()).collect();
        parts.push(format!("mean counts {}", n.join(", ")));
    }
    if let Some(a) = &d.audit {
        parts.push(format!("audit `{}`", a.display()));
    }
    parts.join(", ")
}

/// The derivation's options as `dpplan report` flags.
fn derivation_flags(d: &Derivation) -> String {
    let mut s = String::new();
    if let Some(x) = &d.start {
        s.push_str(&format!(" --start {}", esc(x)));
    }
    for n in &d.mean_counts {
        s.push_str(&format!(" --mean-count {n}"));
    }
    if let Some(a) = &d.audit {
        s.push_str(&format!(" --audit {}", a.display()));
    }
    s
}

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
                    sample: q.sampled(),
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
    derivation: &Derivation,
    upgrade: bool,
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
    freeze_bytes(ledger, bytes, &format, plan_path, derivation, upgrade)
}

/// The first line at which `got` and `want` differ (1-based).
fn first_difference(got: &[u8], want: &[u8]) -> usize {
    let at = got
        .iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    1 + got[..at].iter().filter(|b| **b == b'\n').count()
}

/// Freezes `bytes` (a report of `plan_path` in `format`) into the ledger,
/// creating it for the plan when it does not exist; `dpplan report
/// --freeze` and `dpplan ledger freeze` both end here. Only a report that
/// dpplan derives again, byte for byte, from the plan with `derivation` is
/// stored, and only in the ledger of that plan (or, with `upgrade`, of the
/// plan the ledger is to be upgraded to).
pub fn freeze_bytes(
    ledger: &Path,
    bytes: Vec<u8>,
    format: &str,
    plan_path: &Path,
    derivation: &Derivation,
    upgrade: bool,
) -> Result<ExitCode> {
    let start = derivation.start.as_deref();
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
    if let Some(code) = rederived(&bytes, format, plan_path, &text, derivation)? {
        return Ok(code);
    }
    let compiled = dpplan_compile::compile(&text).ok();
    let opened = if ledger.exists() {
        plans_ledger(ledger, compiled.as_ref(), plan_path, upgrade)?
    } else {
        new_ledger(ledger, compiled.as_ref(), plan_path, start)?
    };
    let mut l = match opened {
        Ok(l) => l,
        Err(code) => return Ok(code),
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

/// `None` when `bytes` are, byte for byte, the report dpplan derives from
/// the plan (`text`, at `plan_path`) in `format` with `derivation`, and its
/// negative controls move the claim; otherwise the refusal's exit code.
fn rederived(
    bytes: &[u8],
    format: &str,
    plan_path: &Path,
    text: &str,
    derivation: &Derivation,
) -> Result<Option<ExitCode>> {
    // The report must be the one dpplan derives from this plan: a sign-off
    // of bytes nobody can re-derive signs nothing checkable.
    let Some(kind) = ReportFormat::from_name(format) else {
        return refuse(format!(
            "a report in format `{}` cannot be frozen: only dpplan's own reports (html, md, json) are, since a sign-off stores only a report dpplan derives again from the plan",
            esc(format)
        ))
        .map(Some);
    };
    match crate::report::derive(plan_path, text, kind, derivation)? {
        Err(code) => Ok(Some(code)),
        Ok((review, _)) if !review.controls_ok => refuse(format!(
                "the negative controls of `{}` do not move its claim (`dpplan report {}` says which): it is not frozen",
                plan_path.display(),
                plan_path.display()
            ))
            .map(Some),
        Ok((_, want)) if want.as_bytes() != bytes => refuse(format!(
                "the report is not the one dpplan derives from `{}` ({} report, {}): they differ from line {}; only a report dpplan re-derives byte for byte is frozen (make it with `dpplan report {} --format {}{}`, or pass the options it was made with)",
                plan_path.display(),
                kind.name(),
                derivation_text(derivation),
                first_difference(bytes, want.as_bytes()),
                plan_path.display(),
                kind.name(),
                derivation_flags(derivation)
            ))
            .map(Some),
        Ok(_) => Ok(None),
    }
}

/// The existing ledger at `ledger`, verified, when it runs the plan being
/// frozen (by its compiled body hash), or with `upgrade` any plan; otherwise
/// the refusal's exit code.
fn plans_ledger(
    ledger: &Path,
    compiled: Option<&dpplan_plan::ExecutablePlan>,
    plan_path: &Path,
    upgrade: bool,
) -> Result<std::result::Result<Ledger, ExitCode>> {
    let l = crate::ledger::open(ledger)?;
    // Like a run, never append to a damaged ledger.
    if let Err(e) = l.integrity(None) {
        return refuse(e).map(Err);
    }
    // A sign-off is of the plan the ledger runs, nothing else.
    let runs = l.plan_hash().map_err(|e| miette!("{e}"))?;
    match compiled {
        Some(p) if p.body_sha256 == runs || upgrade => {}
        Some(p) => {
            return refuse(format!(
                "the ledger `{}` runs plan {}, not `{}` (plan {}): only a report of the ledger's own plan is frozen in it (or, with --upgrade, of the plan its next `dpplan run --upgrade` moves it to)",
                ledger.display(),
                runs,
                plan_path.display(),
                p.body_sha256
            ))
            .map(Err)
        }
        None => {
            return refuse(format!(
                "the ledger `{}` runs plan {}, and `{}` does not compile to an executable plan, so it cannot be that plan: only a report of the ledger's own plan is frozen in it",
                ledger.display(),
                runs,
                plan_path.display()
            ))
            .map(Err)
        }
    }
    Ok(Ok(l))
}

/// A new ledger at `ledger` for the compiled plan, as a first run would
/// create it (`start`: the start of `every … for …` schedules); otherwise
/// the refusal's exit code.
fn new_ledger(
    ledger: &Path,
    compiled: Option<&dpplan_plan::ExecutablePlan>,
    plan_path: &Path,
    start: Option<&str>,
) -> Result<std::result::Result<Ledger, ExitCode>> {
    // Creating the ledger records the plan as a first run would; it
    // fixes the start of `every … for …` schedules, so that is asked for
    // when the plan has one.
    let Some(p) = compiled else {
        return refuse(format!(
            "`{}` does not exist and the runtime cannot execute `{}`, so no ledger can be created for it; freeze into an existing ledger",
            ledger.display(),
            plan_path.display()
        ))
        .map(Err);
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
            return Ok(Err(ExitCode::from(1)));
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
            Ok(Ok(l))
        }
        Err(e) => refuse(e).map(Err),
    }
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
    for so in &f.signoffs {
        errln!(
            "signed: by {} (key {}, ledger entry {}, {}): the signature verifies",
            esc(&so.value.reviewer),
            so.value.public_key,
            so.seq,
            so.time
        );
    }
    if f.signoffs.is_empty() {
        errln!("signed: by nobody (`dpplan ledger sign` adds a reviewer's signature)");
    }
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

/// `dpplan ledger sign`: a reviewer's signature of a frozen report.
pub fn sign(ledger: &Path, report: &str, key: &Path, reviewer: &str) -> Result<ExitCode> {
    let pem = std::fs::read_to_string(key)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read the key `{}`", key.display()))?;
    let key = ReviewerKey::from_pem(&pem).map_err(|e| {
        miette!(
            help = "make one with `dpplan ledger keygen --out KEY.pem` or `openssl genpkey -algorithm ed25519 -out KEY.pem`",
            "`{}` is {e}",
            key.display()
        )
    })?;
    let mut l = crate::ledger::open(ledger)?;
    // an entry is signed only in a ledger that verifies
    let signed = l
        .integrity(None)
        .and_then(|_| l.sign(report, &key, reviewer));
    let s = match signed {
        Ok(s) => s,
        Err(e @ LedgerError::Io(_)) => return Err(miette!("{e}")),
        Err(e) => return refuse(e),
    };
    outln!(
        "signed frozen report {} (ledger entry {}) as {} with key {}: sign-off entry {}",
        s.value.report_sha256,
        s.frozen_seq,
        esc(&s.value.reviewer),
        s.value.public_key,
        s.seq
    );
    Ok(ExitCode::SUCCESS)
}

/// `dpplan ledger keygen`: a new reviewer key, its public half printed.
pub fn keygen(out: &Path) -> Result<ExitCode> {
    let key = ReviewerKey::generate().map_err(|e| miette!("{e}"))?;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(out).into_diagnostic().wrap_err_with(|| {
        format!(
            "cannot create `{}` (an existing key is never overwritten)",
            out.display()
        )
    })?;
    use std::io::Write;
    f.write_all(key.to_pem().as_bytes())
        .and_then(|_| f.sync_all())
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot write `{}`", out.display()))?;
    outln!("{}", key.public_hex());
    errln!(
        "wrote the private key `{}` (keep it secret); its public key is above: name it in the policy's [signoff] reviewers, e.g. {{ name = \"…\", public-key = \"{}\" }}",
        out.display(),
        key.public_hex()
    );
    Ok(ExitCode::SUCCESS)
}
