//! `dpplan._dpplan`: the native core of the Python package `dpplan`
//! (crates/dpplan-python/python/dpplan). The same library calls as the
//! `dpplan` binary's commands, on texts: each function takes a plan's text
//! (and the path it was read from, for its policy and its name) and returns
//! the document the command's machine format writes (`check --format
//! json`, `account --json`, `report`, `diff --format json`, `compile`),
//! which the Python layer turns into typed objects. A plan that cannot be
//! used raises `_dpplan.Error(kind, message, payload)`: `kind` is `"plan"`
//! (the payload is `check --format json`'s document, with the plan's
//! diagnostics), `"policy"` (a policy file that cannot be used, rendered
//! located in it) or `"refused"` (a plan that fails its policy, or that
//! the runtime cannot execute; payload as for `"plan"` where there is one).
//!
//! The analysis runs with the GIL released. Nothing here prints.

use std::collections::BTreeMap;
use std::path::Path;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

use dpplan_check::{analyze, Analysis};
use dpplan_compile::CompileError;
use dpplan_render::FileResult;
use dpplan_review::report::{self, ReviewError, ReviewOptions};

create_exception!(
    _dpplan,
    Error,
    PyException,
    "A plan, a policy or an argument dpplan cannot use: args (kind, message, payload)."
);

/// What a call failed with, before it becomes a Python exception.
struct Failure {
    kind: &'static str,
    message: String,
    payload: Option<String>,
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        Error::new_err((f.kind, f.message, f.payload))
    }
}

fn argument(message: String) -> Failure {
    Failure {
        kind: "argument",
        message,
        payload: None,
    }
}

/// The name a plan is shown and placed under: its path, else `<string>`
/// (placed in the current directory to find its policy, as `dpplan check
/// -` places standard input).
fn shown(path: Option<&str>) -> String {
    path.map_or_else(|| "<string>".to_string(), str::to_string)
}

/// `check --format json`'s document for one plan under its policy.
fn check_document(
    name: &str,
    text: &str,
    analysis: Analysis,
    config: Option<&Path>,
) -> Result<(String, bool), Failure> {
    let mut loaded = vec![(name.to_string(), text.to_string(), analysis)];
    let applied = dpplan_policy::checked::apply(&mut loaded, config).map_err(|e| Failure {
        kind: "policy",
        message: dpplan_render::policy_error(&e, false),
        payload: None,
    })?;
    let checked = dpplan_render::Checked::new(&loaded, &applied);
    let mut out = Vec::new();
    dpplan_render::write_check_json(&mut out, &checked.results, &checked.shared, &checked.chains)
        .map_err(|e| argument(format!("cannot write the JSON document: {e}")))?;
    let has_errors = loaded[0].2.has_errors();
    let doc = String::from_utf8(out)
        .map_err(|e| argument(format!("the JSON document is not UTF-8: {e}")))?;
    Ok((doc, has_errors))
}

/// A plan with errors: `kind "plan"`, its `check --format json` document
/// as the payload (its diagnostics; no policy applied).
fn plan_errors(name: &str, text: &str, analysis: &Analysis, consequence: &str) -> Failure {
    let file = FileResult {
        path: name,
        text,
        analysis,
    };
    let errors = analysis.diagnostics.iter().filter(|d| d.is_error()).count();
    Failure {
        kind: "plan",
        message: format!(
            "`{name}` has {errors} error{}: {consequence}",
            if errors == 1 { "" } else { "s" }
        ),
        payload: Some(dpplan_render::json(&[file])),
    }
}

/// The document of `dpplan check --format json PATH` (the policy in force
/// at `path` applied, or `config`'s), and whether the plan has errors.
#[pyfunction]
#[pyo3(signature = (text, path=None, config=None))]
fn check(
    py: Python<'_>,
    text: String,
    path: Option<String>,
    config: Option<String>,
) -> PyResult<(String, bool)> {
    py.detach(move || {
        let name = shown(path.as_deref());
        let analysis = analyze(&text);
        Ok(check_document(
            &name,
            &text,
            analysis,
            config.as_deref().map(Path::new),
        )?)
    })
}

/// The document of `dpplan account --json PATH`.
#[pyfunction]
#[pyo3(signature = (text, path=None))]
fn account(py: Python<'_>, text: String, path: Option<String>) -> PyResult<String> {
    py.detach(move || {
        let name = shown(path.as_deref());
        let analysis = analyze(&text);
        if analysis.has_errors() {
            return Err(
                plan_errors(&name, &text, &analysis, "no guarantee can be accounted").into(),
            );
        }
        let report = analysis.report.as_ref().ok_or_else(|| Failure {
            kind: "plan",
            message: format!("`{name}` declares no privacy block"),
            payload: None,
        })?;
        let doc = dpplan_review::averaging::account_document(&name, report);
        serde_json::to_string_pretty(&doc)
            .map_err(|e| argument(format!("cannot write the JSON document: {e}")).into())
    })
}

/// The reviewer's report (`dpplan report`) in its three formats from one
/// derivation: (HTML, Markdown, JSON, whether its negative controls move
/// the claim).
#[pyfunction]
#[pyo3(signature = (text, path=None, start=None, mean_counts=Vec::new()))]
fn review(
    py: Python<'_>,
    text: String,
    path: Option<String>,
    start: Option<String>,
    mean_counts: Vec<f64>,
) -> PyResult<(String, String, String, bool)> {
    py.detach(move || {
        let name = shown(path.as_deref());
        let start = match &start {
            Some(s) => Some(dpplan_check::schedule::parse_date(s).ok_or_else(|| {
                argument(format!(
                    "start `{s}` is not a valid date: write YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)"
                ))
            })?),
            None => None,
        };
        if let Some(n) = mean_counts.iter().find(|n| !(n.is_finite() && **n > 0.0)) {
            return Err(argument(format!(
                "mean count {n} is not a positive number: a mean's accuracy is stated at a positive count of rows"
            ))
            .into());
        }
        let analysis = analyze(&text);
        let review = match report::build(&analysis, &ReviewOptions { start, mean_counts }) {
            Ok(r) => r,
            Err(ReviewError::PlanHasErrors) => {
                return Err(plan_errors(
                    &name,
                    &text,
                    &analysis,
                    "no guarantee is claimed, so there is nothing to review",
                )
                .into())
            }
            Err(e) => {
                return Err(Failure {
                    kind: "plan",
                    message: format!("`{name}`: {e}"),
                    payload: None,
                }
                .into())
            }
        };
        let mut json = serde_json::to_string_pretty(&review)
            .map_err(|e| argument(format!("cannot write the JSON report: {e}")))?;
        json.push('\n');
        Ok((
            report::html(&review),
            report::markdown(&review),
            json,
            review.controls_ok,
        ))
    })
}

/// `dpplan diff OLD NEW` from one analysis of each plan, in the formats
/// `--format json` and `--format md` write: (JSON, Markdown).
#[pyfunction]
#[pyo3(signature = (old, new, old_name="old".to_string(), new_name="new".to_string(), accuracy_ratio=None))]
fn diff(
    py: Python<'_>,
    old: String,
    new: String,
    old_name: String,
    new_name: String,
    accuracy_ratio: Option<f64>,
) -> PyResult<(String, String)> {
    py.detach(move || {
        if let Some(r) = accuracy_ratio.filter(|r| !(r.is_finite() && *r >= 1.0)) {
            return Err(argument(format!(
                "accuracy ratio {r} is not a ratio of at least 1 (1.5: a noise std or 95 % half-width that grows by more than 50 %)"
            ))
            .into());
        }
        let old_a = analyze(&old);
        let new_a = analyze(&new);
        for (text, a, label, which) in [
            (&old, &old_a, &old_name, "old"),
            (&new, &new_a, &new_name, "new"),
        ] {
            if dpplan_review::diff::comparable(a).is_none() {
                return Err(if a.has_errors() {
                    plan_errors(
                        label,
                        text,
                        a,
                        &format!("the {which} plan makes no claim, so nothing is compared"),
                    )
                } else {
                    Failure {
                        kind: "plan",
                        message: format!(
                            "the {which} plan `{label}` declares no privacy block: there is no guarantee to compare"
                        ),
                        payload: None,
                    }
                }
                .into());
            }
        }
        let (Some(o), Some(n)) = (
            dpplan_review::diff::comparable(&old_a),
            dpplan_review::diff::comparable(&new_a),
        ) else {
            return Err(argument("a plan declares no privacy block".to_string()).into());
        };
        let limit = accuracy_ratio.unwrap_or(dpplan_review::diff::DEFAULT_ACCURACY_RATIO);
        let d = dpplan_review::diff::diff_with_limit(&old_name, o, &new_name, n, limit);
        Ok((
            dpplan_review::diff::json(&d),
            dpplan_review::diff::markdown(&d),
        ))
    })
}

/// `dpplan compile PATH`: the executable plan's JSON, compiled under the
/// policy in force at `path` (or `config`'s) and recording it; a plan that
/// fails its policy, as `dpplan check` reports it, is refused.
#[pyfunction]
#[pyo3(signature = (text, path=None, config=None))]
fn compile(
    py: Python<'_>,
    text: String,
    path: Option<String>,
    config: Option<String>,
) -> PyResult<String> {
    py.detach(move || {
        let name = shown(path.as_deref());
        let placed = Path::new(if path.is_some() {
            name.as_str()
        } else {
            "plan.dpplan"
        });
        let config = config.as_deref().map(Path::new);
        let (compiled, policy) =
            dpplan_gate::compile(placed, &text, config).map_err(|e| Failure {
                kind: "policy",
                message: dpplan_render::policy_error(&e, false),
                payload: None,
            })?;
        match compiled {
            dpplan_gate::Compiled::Plan(plan) => Ok(dpplan_plan::to_json(&plan)),
            dpplan_gate::Compiled::FailsPolicy(analysis) => {
                let file = FileResult {
                    path: &name,
                    text: &text,
                    analysis: &analysis,
                };
                Err(Failure {
                    kind: "refused",
                    message: format!(
                        "`{name}` fails the policy in force ({}): not compiled",
                        policy
                            .as_ref()
                            .map(|p| format!("{}, sha256 {}", p.chain_text(), p.hash))
                            .unwrap_or_default()
                    ),
                    payload: Some(dpplan_render::json(&[file])),
                }
                .into())
            }
            dpplan_gate::Compiled::Refused(CompileError::Diagnostics(analysis)) => {
                Err(plan_errors(&name, &text, &analysis, "not compiled").into())
            }
            dpplan_gate::Compiled::Refused(e) => Err(Failure {
                kind: "refused",
                message: format!("`{name}`: {e}"),
                payload: None,
            }
            .into()),
        }
    })
}

/// A time given to `run`, read as `dpplan run --at` reads it
/// (`dpplan_gate::parse_time`).
fn run_time(what: &str, t: Option<RunTime>) -> Result<Option<i64>, Failure> {
    let seconds = match t {
        None => return Ok(None),
        Some(RunTime::Seconds(n)) => n.to_string(),
        Some(RunTime::Text(s)) => s,
    };
    dpplan_gate::parse_time(&seconds)
        .map(Some)
        .map_err(|e| argument(format!("{what}: {e}: {}", dpplan_gate::TIME_HELP)))
}

/// A time as Python gives it: an int (Unix seconds) or a string.
#[derive(FromPyObject)]
enum RunTime {
    Seconds(i64),
    Text(String),
}

/// `dpplan run PLAN.json --data NAME=PATH… --ledger LEDGER`: the releases
/// that are due, through the same gates as the binary (`dpplan-gate`: the
/// policy in force at the plan's place, the sign-offs it requires, the
/// shared budget ledgers it charges) and the same runtime and embedded
/// engine. `data` maps a dataset to a file path (a `str`) or to a table
/// with `__arrow_c_stream__`, read in memory (`frames`). Returns the run's
/// JSON output and the gate's notes (the policy it ran under, an
/// override), which the binary prints on stderr.
#[pyfunction]
#[pyo3(signature = (plan, data, ledger, at=None, slot=None, start=None, queries=Vec::new(), test_clock=false, config=None, policy_override=None, threads=None, expect_hash=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    plan: String,
    data: BTreeMap<String, Bound<'_, PyAny>>,
    ledger: String,
    at: Option<RunTime>,
    slot: Option<u64>,
    start: Option<RunTime>,
    queries: Vec<String>,
    test_clock: bool,
    config: Option<String>,
    policy_override: Option<String>,
    threads: Option<usize>,
    expect_hash: Option<String>,
) -> PyResult<(String, Vec<String>)> {
    // the frames become in-memory sources for the run's duration (`held`)
    let (data, held) = frames::sources(data)?;
    py.detach(move || {
        let _held = held;
        let path = Path::new(&plan);
        let text = std::fs::read_to_string(path).map_err(|e| Failure {
            kind: "io",
            message: format!("cannot read `{plan}`: {e}"),
            payload: None,
        })?;
        let compiled = dpplan_compile::load(&text).map_err(|e| Failure {
            kind: "refused",
            message: format!(
                "`{plan}` is refused: {e}{}",
                if path.extension().is_some_and(|x| x == "dpplan") {
                    " (a run takes the compiled plan, the artefact a reviewer signs off: dpplan.compile(...).save(...) first)"
                } else {
                    ""
                }
            ),
            payload: None,
        })?;
        let config = config.as_deref().map(Path::new);
        let policy_error = |e: Box<dpplan_policy::ConfigError>| Failure {
            kind: "policy",
            message: dpplan_render::policy_error(&e, false),
            payload: None,
        };
        let mut notes = Vec::new();
        match dpplan_gate::compiled(path, &compiled, config, policy_override.as_deref())
            .map_err(policy_error)?
        {
            dpplan_gate::Decision::Go { note } => notes.extend(note),
            dpplan_gate::Decision::Overridden { reason, problem } => notes.push(format!(
                "warning: policy override (\"{reason}\"): {problem}; going on as the operator decided"
            )),
            dpplan_gate::Decision::Refused { problem, help } => {
                return Err(Failure {
                    kind: "refused",
                    message: format!(
                        "`{plan}` is refused: {problem}\nhelp: {help}, or, as an explicit decision, pass policy_override=\"why\""
                    ),
                    payload: None,
                }
                .into())
            }
        }
        for name in data.keys() {
            dpplan_gate::known_dataset(&compiled, name).map_err(argument)?;
        }
        let (signoff, budgets) =
            dpplan_gate::run_requirements(path, config).map_err(policy_error)?;
        let opts = dpplan_runtime::RunOptions {
            data,
            base_dir: path.parent().map(Path::to_path_buf),
            slot,
            at: run_time("at", at)?,
            queries,
            ledger: std::path::PathBuf::from(ledger),
            upgrade: false,
            start: run_time("start", start)?,
            expect_hash,
            raise_budget: false,
            test_clock,
            signoff,
            budgets,
        };
        let engine = match threads.and_then(std::num::NonZeroUsize::new) {
            Some(n) => dpplan_engine::CsvEngine.threads(n),
            None => dpplan_engine::CsvEngine,
        };
        let out = dpplan_runtime::run(&compiled, &opts, &engine).map_err(|e| Failure {
            kind: if e.is_io() { "io" } else { "run" },
            message: e.to_string(),
            payload: None,
        })?;
        let json = serde_json::to_string(&out)
            .map_err(|e| argument(format!("cannot write the run's output: {e}")))?;
        Ok((json, notes))
    })
}

/// The canonical layout of a plan (`dpplan fmt`), or an error when the
/// text does not parse.
#[pyfunction]
fn format_text(py: Python<'_>, text: String) -> PyResult<String> {
    py.detach(move || {
        dpplan_fmt::format(&text).map_err(|e| {
            Failure {
                kind: "plan",
                message: format!("the plan is not formatted: {e}"),
                payload: None,
            }
            .into()
        })
    })
}

mod frames;
#[cfg(feature = "test-hooks")]
mod hooks;

/// The native core of the `dpplan` Python package.
#[pymodule]
mod _dpplan {
    #[pymodule_export]
    use super::{account, check, compile, diff, format_text, review, run, Error};

    #[cfg(feature = "test-hooks")]
    #[pymodule_export]
    use super::hooks::_exact_aggregates;

    #[pymodule_export]
    const VERSION: &str = env!("CARGO_PKG_VERSION");
}
