//! `dpplan ledger show|verify|export|correct`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result};

use dpplan_runtime::ledger::{Ledger, LedgerError};

#[derive(clap::Subcommand)]
pub enum Action {
    /// List the entries.
    Show {
        ledger: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Check the hash chain; report the first tampered entry.
    Verify {
        ledger: PathBuf,
        /// A latest hash printed by an earlier run: detects a cut-off tail.
        #[arg(long)]
        expect_hash: Option<String>,
    },
    /// Every entry as JSON lines (or CSV).
    Export {
        ledger: PathBuf,
        #[arg(long)]
        csv: bool,
    },
    /// Append a correction of an entry (the entry itself is never changed).
    Correct {
        ledger: PathBuf,
        /// The entry's sequence number.
        #[arg(long)]
        entry: i64,
        #[arg(long)]
        reason: String,
    },
}

pub fn run(a: Action) -> Result<ExitCode> {
    match a {
        Action::Show { ledger, json } => show(&ledger, json),
        Action::Verify {
            ledger,
            expect_hash,
        } => verify(&ledger, expect_hash.as_deref()),
        Action::Export { ledger, csv } => export(&ledger, csv),
        Action::Correct {
            ledger,
            entry,
            reason,
        } => correct(&ledger, entry, &reason),
    }
}

// A `LedgerError` is turned into a report by its text (`miette!("{e}")`),
// not by `into_diagnostic()`: its text already includes its source's
// (`ledger database error: …`), which the report would print again as a
// cause.
fn open(path: &Path) -> Result<Ledger> {
    Ledger::open(path, None).map_err(|e| miette!("{e}"))
}

pub fn show(path: &Path, json: bool) -> Result<ExitCode> {
    let l = open(path)?;
    warn_if_damaged(&l);
    let entries = l.entries().map_err(|e| miette!("{e}"))?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&entries).into_diagnostic()?
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:>5}  {:<10}  {:<20}  {:>5}  {:>10}  {:>12}  {:>18}  {:<20}  hash",
        "seq",
        "kind",
        "query",
        "slot",
        "ε charged",
        "Σε (basic)",
        "ε so far (plan)",
        "time"
    );
    let mut at_delta = None;
    for e in &entries {
        // an intent records the history composed under the plan's accountant
        let running = match e.running_totals() {
            Some(t) => {
                at_delta = Some(t.at_delta);
                match t.plan.epsilon {
                    Some(eps) => format!("{eps:.4} {}", t.plan.accountant.map_or("", |a| a.name())),
                    None => "n/a".into(),
                }
            }
            None => "-".into(),
        };
        outln!(
            "{:>5}  {:<10}  {:<20}  {:>5}  {:>10.4}  {:>12.4}  {:>18}  {:<20}  {}…",
            e.seq,
            e.kind,
            e.query.as_deref().unwrap_or("-"),
            e.slot.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
            e.epsilon,
            e.total_epsilon,
            running,
            e.time,
            &e.hash[..16.min(e.hash.len())]
        );
    }
    if let Some(d) = at_delta {
        outln!(
            "ε so far: every charged release up to that entry, composed by the plan's accountant at δ = {d}; `--json` lists every accountant"
        );
    }
    if let Some(last) = entries.last() {
        outln!("latest hash {}", last.hash);
    }
    Ok(ExitCode::SUCCESS)
}

/// Verifies the ledger as `dpplan run` does before it charges or serves
/// anything: triggers, chain and invariants, anchor, expected hash.
pub fn verify(path: &Path, expect: Option<&str>) -> Result<ExitCode> {
    use dpplan_runtime::ledger::Anchored;
    let l = open(path)?;
    let v = match l.integrity(expect) {
        Ok(v) => v,
        Err(LedgerError::Damaged { seq, why }) => {
            match seq {
                Some(seq) => errln!("FAILED: entry {seq}: {why}"),
                None => errln!("FAILED: {why}"),
            }
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(miette!("{e}")),
    };
    if let (Some(seq), true) = (v.expected_seq, v.entries > 0) {
        outln!(
            "ok: the expected hash is entry {seq}; {} entries were appended after it",
            v.entries - seq
        );
    }
    let anchor = dpplan_runtime::ledger::head_path(path);
    match v.anchored {
        Anchored::Head { entries, appended } => outln!(
            "ok: anchored: `{}` records entry {entries}{}",
            anchor.display(),
            if appended > 0 {
                format!(" ({appended} appended since: a run ended between a commit and its anchor update)")
            } else {
                String::new()
            }
        ),
        Anchored::Expected { seq } => outln!(
            "ok: the anchor `{}` is missing; the expected hash (entry {seq}) vouches for the tail; the next run re-anchors",
            anchor.display()
        ),
        Anchored::Fresh => outln!("ok: a new ledger: nothing charged yet"),
        Anchored::Legacy => errln!(
            "warning: this ledger was written by an earlier dpplan and keeps no anchor yet: a cut-off tail is detected only with --expect-hash; the next `dpplan run` starts one"
        ),
    }
    outln!(
        "ok: {} entries, hash chain intact, latest hash {}",
        v.entries,
        v.latest_hash
    );
    Ok(ExitCode::SUCCESS)
}

/// Inspection commands still show a damaged ledger (that is when it is
/// looked at most), with the failure on stderr.
fn warn_if_damaged(l: &Ledger) {
    if let Err(e) = l.integrity(None) {
        errln!("warning: {e}");
    }
}

pub fn export(path: &Path, csv: bool) -> Result<ExitCode> {
    let l = open(path)?;
    warn_if_damaged(&l);
    let entries = l.entries().map_err(|e| miette!("{e}"))?;
    if csv {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        for e in &entries {
            w.serialize(e).into_diagnostic()?;
        }
        let bytes = w.into_inner().into_diagnostic()?;
        crate::out::write_bytes(&bytes).into_diagnostic()?;
    } else {
        for e in &entries {
            outln!("{}", serde_json::to_string(e).into_diagnostic()?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn correct(path: &Path, entry: i64, reason: &str) -> Result<ExitCode> {
    let mut l = open(path)?;
    // A correction is appended: like a run, never to a damaged ledger.
    l.integrity(None).map_err(|e| miette!("{e}"))?;
    let e = l.correct(entry, reason).map_err(|e| miette!("{e}"))?;
    outln!(
        "appended correction {} of entry {entry}; latest hash {}",
        e.seq,
        e.hash
    );
    Ok(ExitCode::SUCCESS)
}
