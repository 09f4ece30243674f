//! `dpplan ledger show|verify|export|correct|freeze|sign|keygen|frozen`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result};

use dpplan_runtime::ledger::{remaining_budget, Entry, EntryKind, Ledger, LedgerError, Remaining};
use serde::Serialize;

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
    /// Append a correction of an entry, or an addendum to a frozen report
    /// (the entry itself is never changed).
    Correct {
        ledger: PathBuf,
        /// The entry's sequence number.
        #[arg(long, required_unless_present = "report", conflicts_with = "report")]
        entry: Option<i64>,
        /// A frozen report's hash (or a prefix of at least 8 hex digits): the
        /// reason is appended as an addendum to it.
        #[arg(long, value_name = "HASH")]
        report: Option<String>,
        #[arg(long)]
        reason: String,
    },
    /// Freeze a report of a plan in the ledger: its bytes, its hash and the
    /// exact accountant inputs of the plan's claim (creates the ledger for
    /// the plan when it does not exist).
    Freeze {
        #[arg(long)]
        ledger: PathBuf,
        /// The report file; its bytes are stored exactly.
        #[arg(long)]
        report: PathBuf,
        /// The plan source (.dpplan) the report is of.
        #[arg(long)]
        plan: PathBuf,
        /// What the report is (default: the file's extension).
        #[arg(long)]
        format: Option<String>,
        /// The report's `--start` (the calendar it shows), and when freezing
        /// creates the ledger, the start of `every … for …` schedules, as a
        /// first run would fix it.
        #[arg(long)]
        start: Option<String>,
        /// The report's `--mean-count` options (repeatable), to derive it again.
        #[arg(long = "mean-count", value_name = "N")]
        mean_count: Vec<f64>,
        /// The report's `--audit` file, to derive it again.
        #[arg(long, value_name = "AUDIT.json")]
        audit: Option<PathBuf>,
        /// The plan is not the one the ledger runs but the one its next
        /// `dpplan run --upgrade` moves it to (so that it can be signed off
        /// before that run).
        #[arg(long)]
        upgrade: bool,
        /// The policy in force and an operator's explicit override of it.
        #[command(flatten)]
        gate: crate::policy::GateArgs,
    },
    /// Sign a frozen report as a reviewer (ed25519): the signature names the
    /// ledger, the report's entry and hash, the plan and the reviewer, and is
    /// appended as a `signoff` entry.
    Sign {
        #[arg(long)]
        ledger: PathBuf,
        /// The frozen report's hash (or a prefix of at least 8 hex digits).
        #[arg(long, value_name = "HASH")]
        report: String,
        /// The reviewer's private key, PKCS#8 PEM (`dpplan ledger keygen`, or
        /// `openssl genpkey -algorithm ed25519`).
        #[arg(long, value_name = "KEY.pem")]
        key: PathBuf,
        /// The reviewer's name, as the policy's `[signoff]` names them.
        #[arg(long)]
        reviewer: String,
    },
    /// Make a reviewer's signing key (PKCS#8 PEM, readable by its owner only)
    /// and print its public key, for the policy's `[signoff]` reviewers.
    Keygen {
        /// Where to write the private key (never overwritten).
        #[arg(long, value_name = "KEY.pem")]
        out: PathBuf,
    },
    /// Print a frozen report exactly as frozen, then its addenda, after
    /// verifying the ledger, the report's hash, its claim and its sign-offs.
    Frozen {
        /// The report's hash (or a prefix of at least 8 hex digits).
        hash: String,
        #[arg(long)]
        ledger: PathBuf,
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
            report,
            reason,
        } => correct(&ledger, entry, report.as_deref(), &reason),
        Action::Freeze {
            ledger,
            report,
            plan,
            format,
            start,
            mean_count,
            audit,
            upgrade,
            gate,
        } => match crate::policy::gate_source(&plan, &gate) {
            Some(code) => Ok(code),
            None => crate::freeze::freeze(
                &ledger,
                &report,
                &plan,
                format,
                &crate::report::Derivation {
                    start,
                    mean_counts: mean_count,
                    audit,
                },
                upgrade,
            ),
        },
        Action::Frozen { hash, ledger } => crate::freeze::frozen(&ledger, &hash),
        Action::Sign {
            ledger,
            report,
            key,
            reviewer,
        } => crate::freeze::sign(&ledger, &report, &key, &reviewer),
        Action::Keygen { out } => crate::freeze::keygen(&out),
    }
}

// A `LedgerError` is turned into a report by its text (`miette!("{e}")`),
// not by `into_diagnostic()`: its text already includes its source's
// (`ledger database error: …`), which the report would print again as a
// cause.
pub(crate) fn open(path: &Path) -> Result<Ledger> {
    Ledger::open(path, None).map_err(|e| miette!("{e}"))
}

pub fn show(path: &Path, json: bool) -> Result<ExitCode> {
    if dpplan_runtime::ledger::budget::BudgetLedger::is_budget_ledger(path) {
        return crate::budget::show(path, json);
    }
    let l = open(path)?;
    warn_if_damaged(&l);
    let entries = l.entries().map_err(|e| miette!("{e}"))?;
    let remaining = remaining_budget(&entries);
    if json {
        let shown: Vec<Shown> = entries
            .iter()
            .zip(&remaining)
            .map(|(entry, r)| Shown {
                entry,
                budget_remaining: r.clone(),
                precharged_schedule: precharged(entry),
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&shown).into_diagnostic()?
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{:>5}  {:<13}  {:<20}  {:>5}  {:>10}  {:>12}  {:>18}  {:>12}  {:<20}  hash",
        "seq",
        "kind",
        "query",
        "slot",
        "ε charged",
        "Σε (basic)",
        "ε so far (plan)",
        "ε remaining",
        "time"
    );
    let mut at_delta = None;
    let mut any_precharged = false;
    for (e, left) in entries.iter().zip(&remaining) {
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
        let pre = precharged(e);
        any_precharged |= pre;
        let left = match left {
            Some(r) if pre => format!("{:.4}*", r.epsilon),
            Some(r) => format!("{:.4}", r.epsilon),
            None if e.kind == EntryKind::Intent => "n/a".into(),
            None => "-".into(),
        };
        outln!(
            "{:>5}  {:<13}  {:<20}  {:>5}  {:>10.4}  {:>12.4}  {:>18}  {:>12}  {:<20}  {}…",
            e.seq,
            e.kind,
            e.query.as_deref().unwrap_or("-"),
            e.slot.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
            e.epsilon,
            e.total_epsilon,
            running,
            left,
            e.time,
            &e.hash[..16.min(e.hash.len())]
        );
    }
    if let Some(d) = at_delta {
        outln!(
            "ε so far: every charged release up to that entry, composed by the plan's accountant at δ = {d}; `--json` lists every accountant"
        );
        outln!(
            "ε remaining: the ε of the budget in force at that entry minus ε so far (under the plan's accountant, the one its claim is made with; another accountant composes the same releases to another ε, so what is left differs by accountant: a looser one leaves less); n/a where the budget or the plan accountant's figure was not recorded"
        );
    }
    if any_precharged {
        outln!(
            "*: pre-charged for the whole window schedule: a windowed query's (or a cumulative count's) releases are one release over disjoint windows, charged in full at its first window; its later windows charge nothing"
        );
    }
    if let Some(last) = entries.last() {
        outln!("latest hash {}", last.hash);
    }
    Ok(ExitCode::SUCCESS)
}

/// An intent that charges a windowed query's or a cumulative count's whole
/// schedule at once: one that recorded window state (its unit key's
/// fingerprint) and charged a positive ε.
fn precharged(e: &Entry) -> bool {
    e.epsilon > 0.0
        && e.intent_value()
            .is_some_and(|v| v.units_key_sha256.is_some())
}

/// Verifies the ledger as `dpplan run` does before it charges or serves
/// anything: triggers, chain and invariants, anchor, expected hash.
pub fn verify(path: &Path, expect: Option<&str>) -> Result<ExitCode> {
    use dpplan_runtime::ledger::Anchored;
    if dpplan_runtime::ledger::budget::BudgetLedger::is_budget_ledger(path) && expect.is_none() {
        return crate::budget::verify(path);
    }
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
    if dpplan_runtime::ledger::budget::BudgetLedger::is_budget_ledger(path) {
        return crate::budget::export(path, csv);
    }
    let l = open(path)?;
    warn_if_damaged(&l);
    let entries = l.entries().map_err(|e| miette!("{e}"))?;
    print_entries(&entries, csv)
}

/// Entries as JSON lines, or CSV with a header (a plan's ledger or a budget
/// ledger alike).
pub(crate) fn print_entries<T: Serialize>(entries: &[T], csv: bool) -> Result<ExitCode> {
    if csv {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        for e in entries {
            w.serialize(e).into_diagnostic()?;
        }
        let bytes = w.into_inner().into_diagnostic()?;
        crate::out::write_bytes(&bytes).into_diagnostic()?;
    } else {
        for e in entries {
            outln!("{}", serde_json::to_string(e).into_diagnostic()?);
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn correct(
    path: &Path,
    entry: Option<i64>,
    report: Option<&str>,
    reason: &str,
) -> Result<ExitCode> {
    let mut l = open(path)?;
    // A correction is appended: like a run, never to a damaged ledger.
    l.integrity(None).map_err(|e| miette!("{e}"))?;
    let (entry, what) = match (entry, report) {
        (Some(seq), _) => {
            let target = l.entry(seq).map_err(|e| miette!("{e}"))?;
            let what = match target {
                Some(t) if t.kind == EntryKind::FrozenReport => "addendum",
                _ => "correction",
            };
            (seq, what)
        }
        (None, Some(hash)) => {
            let f = l.frozen(hash).map_err(|e| miette!("{e}"))?;
            (f.entry.seq, "addendum")
        }
        // Invariant: clap requires one of the two.
        (None, None) => return Err(miette!("give --entry or --report")),
    };
    let e = l.correct(entry, reason).map_err(|e| miette!("{e}"))?;
    outln!(
        "appended {what} {} of entry {entry}; latest hash {}",
        e.seq,
        e.hash
    );
    Ok(ExitCode::SUCCESS)
}

/// An entry as `ledger show --json` prints it: its fields exactly as
/// `ledger export` writes them, and for an intent the budget left after it.
#[derive(Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    entry: &'a Entry,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_remaining: Option<Remaining>,
    /// The intent charged a windowed query's (or a cumulative count's)
    /// whole schedule at its first window; absent otherwise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    precharged_schedule: bool,
}
