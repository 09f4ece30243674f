//! # dpplan-spark — the plan's exact bounded aggregates on Spark
//!
//! [`SparkEngine`] implements dpplan-runtime's [`Engine`] trait: for each
//! dataset it generates one Spark SQL statement ([`sql::generate`]), and a
//! small PySpark driver (`spark/driver.py`, embedded in the binary and
//! written to a private temporary directory per run) submitted with
//! `spark-submit` runs it and returns one exact integer per cell (for a
//! histogram over keys from the data, [`sql::generate_keys`], every key
//! seen with its exact bounded count: the threshold that decides which keys
//! are ever revealed is applied by dpplan, to noisy counts; for a windowed
//! release or a cumulative count, [`sql::generate_windows`], the due
//! windows' rows selected by Spark by the runtime's own rule, each window's
//! aggregates and the units kept in it, which dpplan records in the
//! ledger). Everything
//! that involves privacy loss stays in the dpplan process: the ledger, the
//! charge before the draw, and the exact samplers; Spark never draws noise.
//!
//! The only randomness Spark sees is the per-run secret seed of the
//! user-level selection and, for a sampled dataset (`sample units`), the
//! job's secret HMAC key of its Poisson sample (both drawn from dpplan's
//! `SecureRng`), bound parameters of the statement, never printed.
//!
//! Sources: a dataset's source (or `--data NAME=…`) is either
//! `table:NAME` (a table of Spark's catalog, `db.table`), or a path or URL
//! that Spark reads, its format given by its extension (`.csv`, `.parquet`,
//! `.orc`).
//!
//! Errors name datasets, columns, types and files, never a data value or a
//! count; Spark's own log (which may quote values) is never printed.
#![forbid(unsafe_code)]

pub mod sql;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dpplan_engine::rng::SecureRng;
use std::collections::{BTreeMap, BTreeSet};

use dpplan_engine::{Engine, EngineError, IoError, Statistic, WindowRequest, WindowSlot};
use dpplan_plan::Dataset;
use dpplan_vocab::ColumnKind;
use serde::Serialize;
use serde_json::{json, Value};

pub use sql::{Columns, Query};

/// The PySpark driver, written next to each job.
pub const DRIVER: &str = include_str!("../spark/driver.py");

/// Where a dataset's rows are, for Spark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// `table`, or the file format: `csv`, `parquet`, `orc`.
    pub format: String,
    /// The table's name (quoted parts) or the file's absolute path or URL.
    pub location: String,
}

impl Source {
    /// Reads a source as a plan or `--data` names it: `table:db.events`, or
    /// a path or URL whose extension is `.csv`, `.parquet` or `.orc`.
    pub fn parse(dataset: &str, source: &Path) -> Result<Source, EngineError> {
        let text = source.to_string_lossy();
        if let Some(name) = text.strip_prefix("table:") {
            let parts: Vec<&str> = name.split('.').collect();
            let mut quoted = Vec::new();
            for p in &parts {
                quoted.push(sql::quote(p).map_err(|_| {
                    EngineError::Schema(format!(
                        "the source of dataset `{dataset}` is not a table name: write `table:NAME` or `table:DB.NAME`, each part letters, digits and `_`"
                    ))
                })?);
            }
            return Ok(Source {
                format: "table".into(),
                location: quoted.join("."),
            });
        }
        let lower = text.to_ascii_lowercase();
        let trimmed = lower.trim_end_matches('/');
        let format = ["csv", "parquet", "orc"]
            .into_iter()
            .find(|x| trimmed.ends_with(&format!(".{x}")))
            .ok_or_else(|| {
                EngineError::Schema(format!(
                    "the Spark engine cannot tell the format of the source of dataset `{dataset}` (`{}`): name a file or directory ending in .csv, .parquet or .orc, or a table as `table:NAME`",
                    source.display()
                ))
            })?;
        let location = if text.contains("://") {
            text.into_owned()
        } else {
            std::path::absolute(source)
                .map_err(|e| {
                    EngineError::Io(
                        IoError::new(format!(
                            "cannot resolve `{}` for dataset `{dataset}`: {e}",
                            source.display()
                        ))
                        .with_source(e),
                    )
                })?
                .to_string_lossy()
                .into_owned()
        };
        Ok(Source {
            format: format.into(),
            location,
        })
    }

    /// How the source's columns arrive: strings from a CSV file, typed
    /// otherwise.
    pub fn columns(&self) -> Columns {
        if self.format == "csv" {
            Columns::Text
        } else {
            Columns::Typed
        }
    }
}

/// The `-- source:` line of an explained statement: a path may hold a line
/// break (or any byte): escaped, it stays inside its comment line.
fn source_line(out: &mut String, source: &Source) {
    out.push_str(&format!(
        "-- source: {} `{}`\n",
        source.format,
        dpplan_vocab::rows::escape_bytes(source.location.as_bytes())
    ));
}

/// A statement as `--explain` prints it: its source, its parameters (the
/// seed by name only), the SQL.
fn explained(out: &mut String, source: &Source, q: &Query) {
    source_line(out, source);
    out.push_str("-- parameters: :seed = a secret 64-bit number drawn per run");
    if q.sampled() {
        out.push_str(&format!(
            ", :{} and :{} = a secret 256-bit HMAC key drawn per job, padded (the sample)",
            sql::SAMPLE_KEY_INNER,
            sql::SAMPLE_KEY_OUTER
        ));
    }
    for (k, v) in &q.params {
        out.push_str(&format!(
            ", :{k} = {}",
            serde_json::to_string(v).unwrap_or_default()
        ));
    }
    out.push('\n');
    out.push_str(&q.sql);
    out.push_str(";\n\n");
}

/// One histogram over keys from the data to count.
pub struct KeysRequest<'a> {
    pub dataset: &'a Dataset,
    pub source: &'a Path,
    pub column: &'a str,
    pub filter: Option<&'a dpplan_vocab::rows::Filter>,
}

/// One windowed release (or cumulative count) to explain.
pub struct WindowsRequest<'a> {
    pub release: &'a str,
    /// The dataset as a window bounds it.
    pub dataset: &'a Dataset,
    pub source: &'a Path,
    pub column: &'a str,
    pub period: i64,
    pub bound: Option<u64>,
    pub stats: &'a [Statistic],
}

/// One job's result rows: each cell a decimal integer, a key or null.
type ResultRows = Vec<Vec<Option<String>>>;

/// One windowed release's windows to select and aggregate.
pub struct WindowJob<'a> {
    /// The dataset as a window bounds it.
    pub dataset: &'a Dataset,
    pub source: &'a Path,
    pub window: WindowRequest<'a>,
    pub stats: &'a [Statistic],
}

/// One dataset's aggregates to compute.
pub struct Request<'a> {
    pub dataset: &'a Dataset,
    pub source: &'a Path,
    pub stats: &'a [Statistic],
}

/// The Spark engine: `spark-submit` and its master.
#[derive(Debug, Clone)]
pub struct SparkEngine {
    /// The `spark-submit` program.
    pub submit: PathBuf,
    /// `--master` (default: spark-submit's own, from its configuration).
    pub master: Option<String>,
    /// Extra `--conf KEY=VALUE` settings.
    pub conf: Vec<(String, String)>,
}

/// The name of a type as the plan writes it.
fn declared(ty: ColumnKind) -> &'static str {
    match ty {
        ColumnKind::Id => "id",
        ColumnKind::Category => "category",
        ColumnKind::Int => "int",
        ColumnKind::Float => "float",
        ColumnKind::Time => "time",
    }
}

/// One job of the driver's job file: the source, its declared columns, the
/// statement and its bound parameters (the selection seed drawn here).
fn job(dataset: &Dataset, source: &Source, q: &Query, rng: &mut SecureRng) -> Value {
    let mut args = serde_json::Map::new();
    // the selection seed: secret, fresh per run, an i64 for Spark
    args.insert("seed".into(), json!(rng.next_u64() as i64));
    if q.sampled() {
        // the sample's HMAC key: secret, fresh per job (a pass of its own)
        let key = sample_key(rng);
        args.insert(
            sql::SAMPLE_KEY_INNER.into(),
            json!(sql::hmac_pad_hex(&key, 0x36)),
        );
        args.insert(
            sql::SAMPLE_KEY_OUTER.into(),
            json!(sql::hmac_pad_hex(&key, 0x5c)),
        );
    }
    for (k, v) in &q.params {
        args.insert(k.clone(), serde_json::to_value(v).unwrap_or(Value::Null));
    }
    let columns: Vec<Value> = dataset
        .columns
        .iter()
        .map(|c| json!({"name": c.name, "type": declared(c.ty)}))
        .collect();
    json!({
        "dataset": dataset.name,
        "source": {"kind": if source.format == "table" { "table" } else { "file" },
                   "format": source.format, "location": source.location},
        "columns": columns,
        "sql": q.sql,
        "args": Value::Object(args),
    })
}

/// A sampled job's secret key, drawn from `rng` after the job's selection
/// seed (each job draws its seed, then, when its statement samples the
/// units, this key). Never stored: which units a pass sampled stays
/// unknown to anyone who reads the ledger or the job's files afterwards
/// (the job file is deleted, even on failure).
pub fn sample_key(rng: &mut SecureRng) -> [u8; 32] {
    let mut key = [0u8; 32];
    rng.fill_bytes(&mut key);
    key
}

fn job_failed(message: String) -> EngineError {
    EngineError::Io(IoError::new(message))
}

impl SparkEngine {
    /// `spark-submit` as given (`--spark-submit`), else `DPPLAN_SPARK_SUBMIT`,
    /// else `$SPARK_HOME/bin/spark-submit`, else `spark-submit` on the PATH.
    pub fn locate(explicit: Option<PathBuf>) -> PathBuf {
        if let Some(p) = explicit {
            return p;
        }
        if let Some(p) = std::env::var_os("DPPLAN_SPARK_SUBMIT").filter(|p| !p.is_empty()) {
            return PathBuf::from(p);
        }
        if let Some(h) = std::env::var_os("SPARK_HOME").filter(|p| !p.is_empty()) {
            return Path::new(&h).join("bin").join("spark-submit");
        }
        PathBuf::from("spark-submit")
    }

    /// The generated statement of each request, with its parameters (the
    /// seed as the name `:seed`, never a value), as `--explain` prints it:
    /// deterministic, no Spark needed.
    pub fn explain(requests: &[Request<'_>]) -> Result<String, EngineError> {
        let mut out = String::new();
        for r in requests {
            let source = Source::parse(&r.dataset.name, r.source)?;
            let q = sql::generate(r.dataset, r.stats, source.columns())?;
            explained(&mut out, &source, &q);
        }
        Ok(out)
    }

    /// The statement of each histogram over keys from the data, as
    /// [`SparkEngine::explain`] prints the others.
    pub fn explain_keys(requests: &[KeysRequest<'_>]) -> Result<String, EngineError> {
        let mut out = String::new();
        for r in requests {
            let source = Source::parse(&r.dataset.name, r.source)?;
            let q = sql::generate_keys(r.dataset, r.column, r.filter, source.columns())?;
            explained(&mut out, &source, &q);
        }
        Ok(out)
    }

    /// The statements of each windowed release or cumulative count, as
    /// [`SparkEngine::explain`] prints the others: the selection, the units
    /// kept, the aggregates per window.
    pub fn explain_windows(requests: &[WindowsRequest<'_>]) -> Result<String, EngineError> {
        let mut out = String::new();
        for r in requests {
            let source = Source::parse(&r.dataset.name, r.source)?;
            let q = sql::generate_windows(
                r.dataset,
                r.release,
                r.column,
                r.period,
                r.bound,
                r.stats,
                source.columns(),
            )?;
            source_line(&mut out, &source);
            out.push_str(
                "-- parameters: :start = the first window's start (Unix seconds), :slots = the due windows",
            );
            if r.bound.is_some() {
                out.push_str(
                    "; views: dpplan_unit_key = the ledger's secret unit key, dpplan_window_state = each unit's windows so far (keyed hashes, from the ledger)",
                );
            }
            out.push('\n');
            out.push_str(&q.select);
            out.push_str(";\n\n");
            if !q.units_sql.is_empty() {
                out.push_str(&q.units_sql);
                out.push_str(";\n\n");
            }
            explained(&mut out, &source, &q.aggregate);
        }
        Ok(out)
    }

    /// The windows of every job in one `spark-submit`, as
    /// [`Engine::aggregate_windows`] returns them.
    pub fn windows_many(
        &self,
        jobs: &[WindowJob<'_>],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<WindowSlot>>, EngineError> {
        let mut files = Vec::new();
        let mut queries = Vec::new();
        for j in jobs {
            let src = Source::parse(&j.dataset.name, j.source)?;
            let w = &j.window;
            let q = sql::generate_windows(
                j.dataset,
                w.release,
                w.column,
                w.period,
                w.units.map(|u| u.bound),
                j.stats,
                src.columns(),
            )?;
            files.push(window_job(j.dataset, &src, &q, w, rng)?);
            queries.push(q);
        }
        let (rows, answer) = self.submit_answer(&json!({ "jobs": files }), jobs.len())?;
        let mut out = Vec::with_capacity(jobs.len());
        for (i, (j, q)) in jobs.iter().zip(&queries).enumerate() {
            let w = &j.window;
            let values = q.aggregate.decode_slots(&rows[i], w.slots)?;
            let units = window_units(&answer, i, w.slots, w.units.is_some())?;
            out.push(
                w.slots
                    .iter()
                    .zip(values.into_iter().zip(units))
                    .map(|(&slot, (values, units))| WindowSlot {
                        slot,
                        values,
                        units,
                    })
                    .collect(),
            );
        }
        Ok(out)
    }

    /// Computes the exact bounded aggregates of every request in one
    /// `spark-submit` (one JVM start): every source is opened and its types
    /// checked before any aggregation runs.
    pub fn aggregate_many(
        &self,
        requests: &[Request<'_>],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<Vec<i128>>>, EngineError> {
        let mut jobs = Vec::new();
        let mut queries = Vec::new();
        for r in requests {
            let source = Source::parse(&r.dataset.name, r.source)?;
            let q = sql::generate(r.dataset, r.stats, source.columns())?;
            jobs.push(job(r.dataset, &source, &q, rng));
            queries.push(q);
        }
        let rows = self.submit(&json!({ "jobs": jobs }), requests.len())?;
        queries
            .iter()
            .zip(&rows)
            .map(|(q, rows)| q.decode(rows))
            .collect()
    }

    /// Runs the driver on a job file; the result rows of each job.
    fn submit(&self, job: &Value, n: usize) -> Result<Vec<ResultRows>, EngineError> {
        Ok(self.submit_answer(job, n)?.0)
    }

    /// Runs the driver on a job file; the result rows of each job, and the
    /// driver's whole answer (a windowed job's units are in `units`).
    fn submit_answer(
        &self,
        job: &Value,
        n: usize,
    ) -> Result<(Vec<ResultRows>, Value), EngineError> {
        let io = |what: &str, e: std::io::Error| {
            EngineError::Io(IoError::new(format!("{what}: {e}")).with_source(e))
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix("dpplan-spark-");
        // private: spark-submit's log may quote data values
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let dir = builder
            .tempdir()
            .map_err(|e| io("cannot create a temporary directory for the Spark job", e))?;
        let driver = dir.path().join("driver.py");
        let job_file = dir.path().join("job.json");
        let result = dir.path().join("result.json");
        let log_file = dir.path().join("spark-submit.log");
        let write = |p: &Path, text: &str| {
            std::fs::write(p, text).map_err(|e| io(&format!("cannot write `{}`", p.display()), e))
        };
        write(&driver, DRIVER)?;
        write(&job_file, &job.to_string())?;
        let log = std::fs::File::create(&log_file)
            .map_err(|e| io(&format!("cannot write `{}`", log_file.display()), e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| io(&format!("cannot write `{}`", log_file.display()), e))?;
        let mut cmd = Command::new(&self.submit);
        if let Some(m) = &self.master {
            cmd.arg("--master").arg(m);
        }
        cmd.args(["--deploy-mode", "client", "--name", "dpplan"]);
        cmd.args(["--conf", "spark.ui.showConsoleProgress=false"]);
        for (k, v) in &self.conf {
            cmd.arg("--conf").arg(format!("{k}={v}"));
        }
        cmd.arg(&driver).arg(&job_file).arg(&result);
        cmd.stdin(Stdio::null()).stdout(log).stderr(log2);
        let status = cmd.status().map_err(|e| {
            let hint = "pass --spark-submit PATH, or set DPPLAN_SPARK_SUBMIT or SPARK_HOME";
            EngineError::Io(
                IoError::new(format!(
                    "cannot start `{}`: {e} ({hint})",
                    self.submit.display()
                ))
                .with_source(e),
            )
        })?;
        let answer: Option<Value> = std::fs::read_to_string(&result)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        if let Some(err) = answer.as_ref().and_then(|a| a.get("error")) {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the Spark job failed")
                .to_string();
            return Err(match err.get("kind").and_then(Value::as_str) {
                Some("schema") => EngineError::Schema(message),
                _ => job_failed(message),
            });
        }
        if !status.success() || answer.is_none() {
            // Spark's log may quote data values: kept for the operator in a
            // private directory, never printed. A result written before a
            // failure (counts per key from the data among them) is not kept.
            let _ = std::fs::remove_file(&result);
            // nor is the job file: it holds the run's selection seed, a
            // sample's HMAC key and, for windows, the ledger's unit key
            // (--explain shows its SQL)
            let _ = std::fs::remove_file(&job_file);
            let kept = dir.keep();
            let how = match status.code() {
                Some(c) => format!("exited with status {c}"),
                None => kill_signal(&status),
            };
            return Err(job_failed(format!(
                "spark-submit {how} before returning a result; its log (not printed: it may quote data) is in `{}`",
                kept.join("spark-submit.log").display()
            )));
        }
        let results = answer
            .as_ref()
            .and_then(|a| a.get("results"))
            .and_then(Value::as_array)
            .filter(|r| r.len() == n)
            .ok_or_else(|| job_failed("the Spark driver returned a malformed result".into()))?;
        let mut out = Vec::with_capacity(n);
        for job in results {
            let rows: Vec<Vec<Option<String>>> = serde_json::from_value(job.clone())
                .map_err(|_| job_failed("the Spark driver returned a malformed result".into()))?;
            out.push(rows);
        }
        Ok((out, answer.unwrap_or(Value::Null)))
    }
}

#[cfg(unix)]
fn kill_signal(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status.signal() {
        Some(s) => format!("was killed by signal {s}"),
        None => "failed".into(),
    }
}

#[cfg(not(unix))]
fn kill_signal(_: &std::process::ExitStatus) -> String {
    "failed".into()
}

/// The job of a windowed release: its aggregate statement as any job, and
/// the window's selection with the run's parameters, the unit key and the
/// units' windows so far (the key and the state go to the driver's private
/// job file and into views, never into a statement's text).
fn window_job(
    dataset: &Dataset,
    source: &Source,
    q: &sql::Windowed,
    w: &WindowRequest<'_>,
    rng: &mut SecureRng,
) -> Result<Value, EngineError> {
    let mut j = job(dataset, source, &q.aggregate, rng);
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let (key, state) = match &w.units {
        Some(u) => {
            let mut state: Vec<(&String, &u64)> = u.kept.iter().filter(|(_, &n)| n > 0).collect();
            state.sort();
            (json!(hex(u.key)), json!(state))
        }
        None => (Value::Null, json!([])),
    };
    j["window"] = json!({
        "time": w.column,
        "sql": q.select,
        "args": sql::select_params(w.start, w.slots)?,
        "units_sql": q.units_sql,
        "key": key,
        "state": state,
    });
    Ok(j)
}

/// A windowed job's units: per slot asked, the keyed hashes the driver
/// returned for it.
fn window_units(
    answer: &Value,
    job: usize,
    slots: &[u64],
    per_unit: bool,
) -> Result<Vec<BTreeSet<String>>, EngineError> {
    let bad = || job_failed("the Spark driver returned a malformed result".into());
    let mut by: BTreeMap<u64, BTreeSet<String>> =
        slots.iter().map(|&s| (s, BTreeSet::new())).collect();
    if per_unit {
        let rows = answer
            .get("units")
            .and_then(|u| u.get(job))
            .and_then(Value::as_array)
            .ok_or_else(bad)?;
        for row in rows {
            let slot = row
                .get(0)
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<u64>().ok());
            let hash = row.get(1).and_then(Value::as_str);
            let (Some(slot), Some(hash)) = (slot, hash) else {
                return Err(bad());
            };
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad());
            }
            by.get_mut(&slot)
                .ok_or_else(bad)?
                .insert(hash.to_ascii_lowercase());
        }
    }
    Ok(slots
        .iter()
        .map(|s| by.remove(s).unwrap_or_default())
        .collect())
}

impl Engine for SparkEngine {
    /// A windowed release's due slots, selected and aggregated by Spark
    /// ([`sql::generate_windows`]); the units kept per slot come back for
    /// the ledger.
    fn aggregate_windows(
        &self,
        dataset: &Dataset,
        source: &Path,
        w: &WindowRequest<'_>,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Option<Vec<WindowSlot>>, EngineError> {
        let mut out = self.windows_many(
            &[WindowJob {
                dataset,
                source,
                window: *w,
                stats,
            }],
            rng,
        )?;
        Ok(out.pop())
    }

    /// The exact bounded count per key of `column` (keys from the data),
    /// computed by Spark ([`sql::generate_keys`]); the threshold, and so
    /// which keys are ever revealed, stays in dpplan. The counts of every
    /// key seen travel only through the job's private result file, deleted
    /// with its directory.
    fn aggregate_keys(
        &self,
        dataset: &Dataset,
        source: &Path,
        column: &str,
        filter: Option<&dpplan_vocab::rows::Filter>,
        rng: &mut SecureRng,
    ) -> Result<Vec<(Vec<u8>, i128)>, EngineError> {
        let src = Source::parse(&dataset.name, source)?;
        let q = sql::generate_keys(dataset, column, filter, src.columns())?;
        let jobs = vec![job(dataset, &src, &q, rng)];
        let rows = self.submit(&json!({ "jobs": jobs }), 1)?;
        q.decode_keys(rows.first().map_or(&[][..], Vec::as_slice))
    }

    fn aggregate(
        &self,
        dataset: &Dataset,
        source: &Path,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        let mut out = self.aggregate_many(
            &[Request {
                dataset,
                source,
                stats,
            }],
            rng,
        )?;
        Ok(out.pop().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests;
