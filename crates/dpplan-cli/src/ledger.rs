//! `dpplan ledger show|verify|export|correct`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::{miette, Result};

use dpplan_runtime::ledger::Ledger;

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

fn open(path: &Path) -> Result<Ledger> {
    Ledger::open(path, None).map_err(|e| miette!("{e}"))
}

pub fn show(path: &Path, json: bool) -> Result<ExitCode> {
    let l = open(path)?;
    let entries = l.entries().map_err(|e| miette!("{e}"))?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&entries).map_err(|e| miette!("{e}"))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:>5}  {:<10}  {:<20}  {:>5}  {:>10}  {:>12}  {:>18}  {:<20}  hash",
        "seq", "kind", "query", "slot", "ε charged", "Σε (basic)", "ε so far (plan)", "time"
    );
    let mut at_delta = None;
    for e in &entries {
        // an intent records the history composed under the plan's accountant
        let running = match e.running_totals() {
            Some(t) => {
                at_delta = Some(t.at_delta);
                match t.plan.epsilon {
                    Some(eps) => format!("{eps:.4} {}", t.plan.accountant),
                    None => "n/a".into(),
                }
            }
            None => "-".into(),
        };
        println!(
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
        println!(
            "ε so far: every charged release up to that entry, composed by the plan's accountant at δ = {d}; `--json` lists every accountant"
        );
    }
    if let Some(last) = entries.last() {
        println!("latest hash {}", last.hash);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn verify(path: &Path, expect: Option<&str>) -> Result<ExitCode> {
    let l = open(path)?;
    let v = l.verify().map_err(|e| miette!("{e}"))?;
    if let Some((seq, why)) = &v.first_bad {
        eprintln!("TAMPERED: entry {seq}: {why}");
        return Ok(ExitCode::from(1));
    }
    if let Some(h) = expect {
        let entries = l.entries().map_err(|e| miette!("{e}"))?;
        match entries.iter().position(|e| e.hash == h) {
            None => {
                eprintln!("MISMATCH: no entry has the expected hash {h}: the ledger was rewritten or is not the one expected");
                return Ok(ExitCode::from(1));
            }
            Some(i) if i + 1 < entries.len() => {
                println!(
                    "ok: the expected hash is entry {}; {} entries were appended after it",
                    entries[i].seq,
                    entries.len() - i - 1
                );
            }
            Some(_) => {}
        }
    }
    println!(
        "ok: {} entries, hash chain intact, latest hash {}",
        v.entries, v.latest_hash
    );
    Ok(ExitCode::SUCCESS)
}

pub fn export(path: &Path, csv: bool) -> Result<ExitCode> {
    let l = open(path)?;
    let entries = l.entries().map_err(|e| miette!("{e}"))?;
    if csv {
        let mut w = ::csv::Writer::from_writer(std::io::stdout());
        for e in &entries {
            w.serialize(e).map_err(|e| miette!("{e}"))?;
        }
        w.flush().map_err(|e| miette!("{e}"))?;
    } else {
        for e in &entries {
            println!("{}", serde_json::to_string(e).map_err(|e| miette!("{e}"))?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn correct(path: &Path, entry: i64, reason: &str) -> Result<ExitCode> {
    let mut l = open(path)?;
    let e = l.correct(entry, reason).map_err(|e| miette!("{e}"))?;
    println!(
        "appended correction {} of entry {entry}; latest hash {}",
        e.seq, e.hash
    );
    Ok(ExitCode::SUCCESS)
}
