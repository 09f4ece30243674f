//! `dpplan run`: run the releases that are due, with the ledger.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use miette::{miette, IntoDiagnostic, Result, WrapErr};

use dpplan_engine::{CsvEngine, Engine};
use dpplan_runtime::{results_csv, RunOptions, RunOutput};
use dpplan_spark::{KeysRequest, Request, SparkEngine, WindowsRequest};

/// `dpplan_gate::parse_time`, as a located CLI error with its help.
pub fn parse_time(s: &str) -> Result<i64> {
    dpplan_gate::parse_time(s).map_err(|e| miette!(help = dpplan_gate::TIME_HELP, "{e}"))
}

#[derive(clap::Args)]
pub struct Args {
    /// The executable plan (from `dpplan compile`).
    pub plan: PathBuf,
    /// A dataset's CSV file: NAME=PATH (repeatable; default: the plan's `source`).
    #[arg(long = "data", value_name = "NAME=PATH")]
    pub data: Vec<String>,
    /// Run this slot (0-based) of every selected release.
    #[arg(long, conflicts_with = "at")]
    pub slot: Option<u64>,
    /// Run what is due at this time (UTC date or Unix seconds; default: now).
    /// A time later than this machine's clock is refused without --test-clock.
    #[arg(long)]
    pub at: Option<String>,
    /// Accept an --at later than this machine's clock (a test clock): without it,
    /// nothing releases the future by accident (a mistyped year would close every window).
    #[arg(long, requires = "at")]
    pub test_clock: bool,
    /// Print what is due at the run's time (released, unpublished, skipped, due now,
    /// to be skipped, next) and stop: reads no data, charges nothing, creates no ledger.
    #[arg(long, conflicts_with_all = ["upgrade", "explain"])]
    pub dry_run: bool,
    /// The ledger (default: PLAN.ledger.sqlite next to the plan).
    #[arg(long)]
    pub ledger: Option<PathBuf>,
    /// Write the results here (.csv for CSV, JSON otherwise) instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Only this release (repeatable).
    #[arg(long = "query", value_name = "NAME")]
    pub queries: Vec<String>,
    /// Move the ledger to this plan: its history plus the new plan must fit the budget.
    #[arg(long)]
    pub upgrade: bool,
    /// With --upgrade: allow the new plan's budget (ε or δ) to be larger than the one in force.
    #[arg(long, requires = "upgrade")]
    pub raise_budget: bool,
    /// The latest hash printed by an earlier run: the ledger must still contain it
    /// (detects a cut-off tail; re-anchors a ledger whose anchor file was lost).
    #[arg(long, value_name = "HASH")]
    pub expect_hash: Option<String>,
    /// Start of `every … for …` schedules, fixed when the ledger is created (default: now).
    #[arg(long)]
    pub start: Option<String>,
    /// Print CSV instead of JSON.
    #[arg(long)]
    pub csv: bool,
    /// The engine that reads the data and computes the exact bounded aggregates:
    /// `csv` (built in, the default) or `spark` (generated Spark SQL run by spark-submit).
    #[arg(long, value_enum, default_value = "csv")]
    pub engine: EngineKind,
    /// With --engine spark: the Spark master URL passed to spark-submit (default: its own configuration).
    #[arg(long, value_name = "URL")]
    pub spark_master: Option<String>,
    /// With --engine spark: the spark-submit program (default: DPPLAN_SPARK_SUBMIT, else $SPARK_HOME/bin/spark-submit, else on the PATH).
    #[arg(long, value_name = "PATH")]
    pub spark_submit: Option<PathBuf>,
    /// With --engine spark: print the generated Spark SQL of every selected release and stop
    /// (reads no data and no ledger, charges nothing; the selection seed is shown as `:seed`).
    #[arg(long)]
    pub explain: bool,
    /// Threads of the CSV engine (default: one per core; 1 reads on one thread).
    #[arg(long, value_name = "N")]
    pub threads: Option<std::num::NonZeroUsize>,
    /// The policy in force and an operator's explicit override of it.
    #[command(flatten)]
    pub gate: crate::policy::GateArgs,
}

/// The engines `dpplan run` can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// The built-in streaming CSV engine.
    Csv,
    /// Spark: generated Spark SQL, submitted with spark-submit.
    Spark,
}

pub fn default_ledger(plan: &Path) -> PathBuf {
    let stem = plan
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plan".into());
    plan.with_file_name(format!("{stem}.ledger.sqlite"))
}

pub fn run(a: Args) -> Result<ExitCode> {
    let text = std::fs::read_to_string(&a.plan)
        .into_diagnostic()
        .wrap_err_with(|| format!("cannot read `{}`", a.plan.display()))?;
    let plan = match dpplan_compile::load(&text) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: `{}` is refused: {e}", a.plan.display());
            if a.plan.extension().is_some_and(|x| x == "dpplan") {
                errln!(
                    "help: `dpplan run` takes the compiled plan, the artefact a reviewer signs off: `dpplan compile {} -o {}` first",
                    a.plan.display(),
                    a.plan.with_extension("json").display()
                );
            }
            return Ok(ExitCode::from(1));
        }
    };
    if let Some(code) = crate::policy::gate_compiled(&a.plan, &plan, &a.gate) {
        return Ok(code);
    }
    let data = data_paths(&plan, &a.data)?;
    // what the policy in force requires of the run (a policy that cannot be
    // used was refused by the gate above, exit 2)
    let (signoff, budgets) = match dpplan_gate::run_requirements(&a.plan, a.gate.config.as_deref())
    {
        Ok(r) => r,
        Err(e) => {
            err!("{}", dpplan_render::policy_error(&e, false));
            return Ok(ExitCode::from(2));
        }
    };
    let opts = RunOptions {
        data,
        base_dir: a.plan.parent().map(Path::to_path_buf),
        slot: a.slot,
        at: a.at.as_deref().map(parse_time).transpose()?,
        queries: a.queries.clone(),
        ledger: a.ledger.clone().unwrap_or_else(|| default_ledger(&a.plan)),
        upgrade: a.upgrade,
        start: a.start.as_deref().map(parse_time).transpose()?,
        expect_hash: a.expect_hash.clone(),
        raise_budget: a.raise_budget,
        test_clock: a.test_clock,
        signoff,
        budgets,
    };
    if a.dry_run {
        return dry_run(&plan, &opts, a.csv);
    }
    if a.engine != EngineKind::Spark && (a.spark_master.is_some() || a.spark_submit.is_some()) {
        return Err(miette!(
            help = "add `--engine spark`, or drop the Spark options",
            "--spark-master and --spark-submit are options of the Spark engine"
        ));
    }
    if a.engine == EngineKind::Spark && a.threads.is_some() {
        return Err(miette!(
            help = "drop `--threads`: Spark's parallelism is its cluster's (executors and cores)",
            "--threads is an option of the built-in CSV engine"
        ));
    }
    let csv = match a.threads {
        Some(n) => CsvEngine.threads(n),
        None => CsvEngine,
    };
    let spark = (a.engine == EngineKind::Spark).then(|| SparkEngine {
        submit: SparkEngine::locate(a.spark_submit.clone()),
        master: a.spark_master.clone(),
        conf: Vec::new(),
    });
    if a.explain {
        return explain(&plan, &opts, spark.is_some());
    }
    let engine: &dyn Engine = match &spark {
        Some(s) => s,
        None => &csv,
    };
    let out = match dpplan_runtime::run(&plan, &opts, engine) {
        Ok(o) => o,
        Err(e) => {
            errln!("error: {e}");
            // IO errors exit 2, like every other IO error of the CLI.
            return Ok(ExitCode::from(if e.is_io() { 2 } else { 1 }));
        }
    };
    // Everything below is reported after the ledger committed: the summary
    // and its latest hash go to stderr whatever happens to stdout.
    let written = write_results(&a, &out);
    report(&out);
    written?;
    Ok(if out.refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--data NAME=PATH` options: each names a dataset of the plan.
pub fn data_paths(
    plan: &dpplan_plan::ExecutablePlan,
    args: &[String],
) -> Result<BTreeMap<String, PathBuf>> {
    let mut data = BTreeMap::new();
    for d in args {
        let (name, path) = d.split_once('=').ok_or_else(|| {
            miette!(
                help = "write --data visits=path/to/visits.csv",
                "`--data {d}` is not NAME=PATH"
            )
        })?;
        dpplan_gate::known_dataset(plan, name).map_err(|e| miette!("{e}"))?;
        data.insert(name.to_string(), PathBuf::from(path));
    }
    Ok(data)
}

/// `--explain`: the generated Spark SQL of every selected release, on
/// stdout; nothing is read, charged or created.
fn explain(plan: &dpplan_plan::ExecutablePlan, opts: &RunOptions, spark: bool) -> Result<ExitCode> {
    if !spark {
        return Err(miette!(
            help = "write `dpplan run --engine spark --explain PLAN`",
            "--explain shows the SQL of the Spark engine: it needs --engine spark"
        ));
    }
    let planned = match dpplan_runtime::planned_aggregates(plan, opts) {
        Ok(p) => p,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let requests: Vec<Request<'_>> = planned
        .iter()
        .map(|(dataset, source, stats)| Request {
            dataset,
            source,
            stats,
        })
        .collect();
    let keys = match dpplan_runtime::planned_keys(plan, opts) {
        Ok(k) => k,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let keys: Vec<KeysRequest<'_>> = keys
        .iter()
        .map(|k| KeysRequest {
            dataset: k.dataset,
            source: &k.source,
            column: k.column,
            filter: k.filter,
        })
        .collect();
    let windows = match dpplan_runtime::planned_windows(plan, opts) {
        Ok(w) => w,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    let windows: Vec<WindowsRequest<'_>> = windows
        .iter()
        .map(|w| WindowsRequest {
            release: w.release,
            dataset: &w.dataset,
            source: &w.source,
            column: w.column,
            period: w.period,
            bound: w.bound,
            stats: &w.stats,
        })
        .collect();
    let text = SparkEngine::explain(&requests).and_then(|t| {
        Ok(t + &SparkEngine::explain_keys(&keys)? + &SparkEngine::explain_windows(&windows)?)
    });
    match text {
        Ok(text) => {
            crate::out::write_bytes(text.as_bytes()).into_diagnostic()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            errln!("error: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// `--dry-run`: the status of the schedule at the run's time, as JSON (or
/// a CSV table) on stdout, and in words on stderr.
fn dry_run(plan: &dpplan_plan::ExecutablePlan, opts: &RunOptions, csv: bool) -> Result<ExitCode> {
    let status = match dpplan_runtime::status(plan, opts) {
        Ok(s) => s,
        Err(e) => {
            errln!("error: {e}");
            return Ok(ExitCode::from(if e.is_io() { 2 } else { 1 }));
        }
    };
    let rendered = if csv {
        status_csv(&status)
    } else {
        let mut s = serde_json::to_string_pretty(&status).into_diagnostic()?;
        s.push('\n');
        s
    };
    crate::out::write_bytes(rendered.as_bytes()).into_diagnostic()?;
    errln!(
        "at {} (schedule start {}{}): nothing was read, charged or written",
        status.at,
        status.schedule_start,
        if status.ledger_exists {
            ""
        } else {
            ", fixed by the first run: no ledger yet"
        }
    );
    for r in &status.releases {
        errln!("{}", status_line(r));
    }
    Ok(ExitCode::SUCCESS)
}

/// Ranges of slots in words: `0–4, 7`.
fn ranges(r: &[[u64; 2]]) -> String {
    r.iter()
        .map(|&[a, b]| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}–{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One release's status in words.
fn status_line(r: &dpplan_runtime::ReleaseStatus) -> String {
    let mut parts = vec![format!("{} of {} released", r.released, r.slots)];
    if !r.unpublished.is_empty() {
        parts.push(format!("unpublished: {}", ranges(&r.unpublished)));
    }
    if r.skipped > 0 {
        parts.push(format!("{} skipped", r.skipped));
    }
    parts.push(if r.due_now.is_empty() {
        "nothing due now".into()
    } else {
        format!("due now: {}", ranges(&r.due_now))
    });
    if !r.would_skip.is_empty() {
        parts.push(format!("would skip: {}", ranges(&r.would_skip)));
    }
    parts.push(match (&r.next_slot, &r.next_due) {
        (Some(s), Some(t)) => format!("next: slot {s} at {t}"),
        (Some(s), None) => format!("next: slot {s}"),
        _ => "no slot left".into(),
    });
    format!("  {} ({}): {}", r.query, r.schedule, parts.join("; "))
}

/// The status as CSV: one line per release.
fn status_csv(status: &dpplan_runtime::Status) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record([
        "query",
        "schedule",
        "timing",
        "slots",
        "released",
        "unpublished",
        "skipped",
        "due_now",
        "would_skip",
        "next_slot",
        "next_due",
    ]);
    for r in &status.releases {
        let _ = w.write_record([
            r.query.clone(),
            r.schedule.clone(),
            r.timing.to_string(),
            r.slots.to_string(),
            r.released.to_string(),
            ranges(&r.unpublished),
            r.skipped.to_string(),
            ranges(&r.due_now),
            ranges(&r.would_skip),
            r.next_slot.map(|s| s.to_string()).unwrap_or_default(),
            r.next_due.clone().unwrap_or_default(),
        ]);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The results, to `--out` or stdout (a closed stdout is not an error).
fn write_results(a: &Args, out: &RunOutput) -> Result<()> {
    let csv = a.csv
        || a.out
            .as_ref()
            .is_some_and(|o| o.extension().is_some_and(|x| x == "csv"));
    let rendered = if csv {
        results_csv(out)
    } else {
        let mut s = serde_json::to_string_pretty(out).into_diagnostic()?;
        s.push('\n');
        s
    };
    match &a.out {
        Some(o) => std::fs::write(o, rendered)
            .into_diagnostic()
            .wrap_err_with(|| format!("cannot write `{}`", o.display())),
        None => crate::out::write_bytes(rendered.as_bytes()).into_diagnostic(),
    }
}

/// Corrections, refusals, the upgrade and the ledger's latest hash, on
/// stderr.
fn report(out: &RunOutput) {
    use crate::out::escape_control as esc;
    for r in &out.results {
        for c in &r.corrections {
            errln!(
                "warning: {} slot {} (ledger entry {}) has a correction (entry {}, {}): {}",
                r.query,
                r.slot,
                c.corrects,
                c.seq,
                esc(&c.time),
                if c.reason.is_empty() {
                    "no reason given".to_string()
                } else {
                    esc(&c.reason)
                }
            );
        }
    }
    for s in &out.skipped {
        let slots = if s.from == s.through {
            format!("slot {}", s.from)
        } else {
            format!("slots {}–{}", s.from, s.through)
        };
        errln!("skipped: {} {slots}: {}", s.query, s.reason);
    }
    let late: Vec<&dpplan_runtime::ReleaseResult> =
        out.results.iter().filter(|r| r.backfilled).collect();
    if !late.is_empty() {
        let mut by_query: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for r in late {
            by_query.entry(&r.query).or_default().push(r.slot);
        }
        for (q, slots) in by_query {
            errln!(
                "backfilled: {q} slot(s) {} (windows that closed before the last run were released now, in order)",
                ranges(&dpplan_runtime::schedule::ranges(slots))
            );
        }
    }
    for r in &out.refused {
        errln!(
            "refused: {}{}: {}",
            r.query,
            r.slot.map(|s| format!(" slot {s}")).unwrap_or_default(),
            r.reason
        );
    }
    if let Some(u) = &out.upgrade {
        let from = match u.from_budget {
            Some(b) => format!("ε = {}, δ = {}", b.epsilon, b.delta),
            None => "not recorded".into(),
        };
        errln!(
            "ledger upgraded from plan {} to plan {}: budget {from} → ε = {}, δ = {}{}; history ({} charged release(s)) plus the new plan: ε = {} at δ = {} ({})",
            u.from_plan,
            out.plan_sha256,
            u.budget_epsilon,
            u.budget_delta.unwrap_or(f64::NAN),
            if u.budget_raised { " (raised with --raise-budget)" } else { "" },
            u.history_releases,
            u.epsilon,
            u.delta,
            u.accountant
        );
    }
    let fresh = out
        .results
        .iter()
        .filter(|r| r.origin == dpplan_runtime::Origin::Fresh)
        .count();
    if let (Some(ended), true) = (&out.schedule_ended, out.results.is_empty()) {
        errln!(
            "the schedule of {} ended on {ended}: nothing left to release",
            esc(&out.plan)
        );
    }
    if out.ledger_entries == 0 {
        if out.schedule_ended.is_none() {
            errln!(
                "released 0 value(s); nothing was charged, so no ledger was created at `{}`",
                out.ledger
            );
        } else {
            errln!(
                "nothing was charged, so no ledger was created at `{}`",
                out.ledger
            );
        }
    } else if out.schedule_ended.is_some() && fresh == 0 {
        errln!(
            "ledger `{}`: {} entries, latest hash {}",
            out.ledger,
            out.ledger_entries,
            out.ledger_latest_hash
        );
    } else {
        errln!(
            "released {} value(s); ledger `{}`: {} entries, latest hash {}",
            fresh,
            out.ledger,
            out.ledger_entries,
            out.ledger_latest_hash
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../examples/{name}/{name}.dpplan"))
    }

    fn args(plan: &Path, ledger: &Path, out: &Path) -> Args {
        Args {
            plan: plan.to_path_buf(),
            data: vec![],
            slot: Some(0),
            at: None,
            test_clock: false,
            dry_run: false,
            ledger: Some(ledger.to_path_buf()),
            out: Some(out.to_path_buf()),
            queries: vec![],
            upgrade: false,
            raise_budget: false,
            expect_hash: None,
            start: None,
            csv: false,
            engine: EngineKind::Csv,
            spark_master: None,
            spark_submit: None,
            explain: false,
            threads: None,
            gate: Default::default(),
        }
    }

    /// A scratch directory removed on drop (no extra dev-dependency).
    struct TempDir(PathBuf);
    impl TempDir {
        fn new(tag: &str) -> Self {
            let mut seed = [0u8; 8];
            getrandom_seed(&mut seed);
            let p = std::env::temp_dir().join(format!(
                "dpplan-{tag}-{}-{}",
                std::process::id(),
                u64::from_le_bytes(seed)
            ));
            std::fs::create_dir_all(&p).unwrap();
            TempDir(p)
        }
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn getrandom_seed(out: &mut [u8; 8]) {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        out.copy_from_slice(&(t as u64).to_le_bytes());
    }

    #[test]
    fn compile_run_verify_through_the_cli() {
        let dir = TempDir::new("cli");
        let plan = dir.path().join("census.json");
        let code = crate::compile::run(crate::compile::Args {
            plan: example("census"),
            out: Some(plan.clone()),
            config: None,
        })
        .unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        // the plan's relative `source` is resolved next to the plan file: copy the data there
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::copy(
            example("census").with_file_name("data/persons.csv"),
            dir.path().join("data/persons.csv"),
        )
        .unwrap();
        let ledger = dir.path().join("l.sqlite");
        let out = dir.path().join("r.csv");
        assert_eq!(run(args(&plan, &ledger, &out)).unwrap(), ExitCode::SUCCESS);
        let csv = std::fs::read_to_string(&out).unwrap();
        assert!(csv.starts_with("query,slot,origin"));
        assert_eq!(csv.lines().count(), 1 + 5 + 4 + 3 + 5);
        assert_eq!(
            crate::ledger::run(crate::ledger::Action::Verify {
                ledger: ledger.clone(),
                expect_hash: None
            })
            .unwrap(),
            ExitCode::SUCCESS
        );
        // the slot again: nothing fresh, exit 0
        assert_eq!(
            run(args(&plan, &ledger, &dir.path().join("r2.json"))).unwrap(),
            ExitCode::SUCCESS
        );
        let j: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("r2.json")).unwrap())
                .unwrap();
        assert!(j["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["origin"] == "ledger"));
        // a hand-edited plan is refused with exit 1
        let edited = std::fs::read_to_string(&plan)
            .unwrap()
            .replace("\"scale\": 12.0", "\"scale\": 1.0");
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, edited).unwrap();
        assert_eq!(
            run(args(&bad, &ledger, &dir.path().join("r3.json"))).unwrap(),
            ExitCode::from(1)
        );
        assert!(!dir.path().join("r3.json").exists());
        // a plan with errors is not compiled
        let broken = dir.path().join("broken.dpplan");
        std::fs::write(
            &broken,
            std::fs::read_to_string(example("census"))
                .unwrap()
                .replace("sigma 12", "sigma -1"),
        )
        .unwrap();
        let code = crate::compile::run(crate::compile::Args {
            plan: broken,
            out: Some(dir.path().join("never.json")),
            config: None,
        })
        .unwrap();
        assert_eq!(code, ExitCode::from(1));
        assert!(!dir.path().join("never.json").exists());
    }

    /// `--threads N`: a positive number of engine threads; the run on 3
    /// threads releases what the run on 1 releases.
    #[test]
    fn threads_option() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            run: Args,
        }
        let parse = |n: &str| Cli::try_parse_from(["dpplan", "p.json", "--threads", n]);
        assert!(parse("0").is_err());
        assert!(parse("x").is_err());
        assert_eq!(parse("3").unwrap().run.threads.map(|n| n.get()), Some(3));
        let dir = TempDir::new("threads");
        let plan = dir.path().join("census.json");
        crate::compile::run(crate::compile::Args {
            plan: example("census"),
            out: Some(plan.clone()),
            config: None,
        })
        .unwrap();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::copy(
            example("census").with_file_name("data/persons.csv"),
            dir.path().join("data/persons.csv"),
        )
        .unwrap();
        let mut lines = Vec::new();
        for threads in [1, 3] {
            let out = dir.path().join(format!("r{threads}.csv"));
            let mut a = args(&plan, &dir.path().join(format!("l{threads}.sqlite")), &out);
            a.threads = std::num::NonZeroUsize::new(threads);
            assert_eq!(run(a).unwrap(), ExitCode::SUCCESS);
            lines.push(std::fs::read_to_string(&out).unwrap().lines().count());
        }
        assert_eq!(lines, [1 + 5 + 4 + 3 + 5; 2]);
    }

    #[test]
    fn times_parse() {
        assert_eq!(parse_time("2026-01-01T00:00Z").unwrap(), 1_767_225_600);
        assert_eq!(parse_time("@1000").unwrap(), 1000);
        assert!(parse_time("yesterday").is_err());
        // a year past 9999 is refused for its year, not its format
        let e = parse_time("10000-01-01").unwrap_err().to_string();
        assert!(
            e.contains("253402300800 is outside the years 1–9999"),
            "{e}"
        );
        // seconds beyond an i64, or a negative field: not a time
        for s in ["999999999999999-01-01", "2026-01-02T-1:00Z"] {
            let e = parse_time(s).unwrap_err().to_string();
            assert_eq!(e, format!("`{s}` is not a time"));
        }
    }
}
