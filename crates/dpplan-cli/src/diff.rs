//! `dpplan diff OLD NEW` and `dpplan diff PLAN --git REF`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use miette::{miette, IntoDiagnostic, Result};

use dpplan_check::analyze;

#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum DiffFormat {
    Human,
    Md,
    Json,
}

/// What `--fail-on` acts on.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum FailOn {
    /// The new plan spends more: a larger ε (same accountant, same δ) or a larger δ.
    Increase,
    /// The contract changed: unit, adjacency, δ, budget, accountant,
    /// population, or any bound of a dataset (contribution bounds, clamps,
    /// domains, horizons).
    Contract,
    /// A statistic's noise std or 95 % half-width grew by more than this
    /// ratio (`accuracy` alone: [`dpplan_review::diff::DEFAULT_ACCURACY_RATIO`]).
    Accuracy(f64),
}

/// `increase`, `contract`, `accuracy` or `accuracy=RATIO` (RATIO ≥ 1).
fn parse_fail_on(s: &str) -> std::result::Result<FailOn, String> {
    match s.split_once('=') {
        None if s == "increase" => Ok(FailOn::Increase),
        None if s == "contract" => Ok(FailOn::Contract),
        None if s == "accuracy" => Ok(FailOn::Accuracy(
            dpplan_review::diff::DEFAULT_ACCURACY_RATIO,
        )),
        Some(("accuracy", r)) => match r.trim().parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 1.0 => Ok(FailOn::Accuracy(x)),
            _ => Err(format!(
                "`{r}` is not a ratio of at least 1 (e.g. `accuracy=1.5`: fail when a noise std or 95 % half-width grows by more than 50 %)"
            )),
        },
        _ => Err(format!(
            "`{s}` is not one of `increase`, `contract`, `accuracy`, `accuracy=RATIO`"
        )),
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The old plan; with `--git`, the plan (compared with its version at REF).
    #[arg(value_name = "OLD")]
    pub first: PathBuf,
    /// The new plan (not with `--git`).
    #[arg(value_name = "NEW", required_unless_present = "git")]
    pub second: Option<PathBuf>,
    /// Compare OLD with its version at this git ref (read with `git show REF:path`).
    #[arg(long, value_name = "REF", conflicts_with = "second")]
    pub git: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Human)]
    pub format: DiffFormat,
    /// Exit 1 when this holds (repeat or separate with commas for several):
    /// `increase`, `contract`, `accuracy[=RATIO]` (a noise std or 95 %
    /// half-width grows by more than RATIO, default 1.1).
    #[arg(long, value_name = "WHAT", value_parser = parse_fail_on, value_delimiter = ',')]
    pub fail_on: Vec<FailOn>,
}

/// One version of a plan: where it came from and its text.
struct Version {
    label: String,
    text: String,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let (old, new) = match (&args.second, &args.git) {
        (Some(second), None) => (read(&args.first)?, read(second)?),
        (None, Some(reference)) => (git_version(&args.first, reference)?, read(&args.first)?),
        _ => return Err(miette!("give two plans, or one plan and `--git REF`")),
    };
    let old_a = analyze(&old.text);
    let new_a = analyze(&new.text);
    // A side with an error other than the budget's makes no claim: its
    // diagnostics are shown and nothing is compared. A side over its budget
    // is compared (the diff shows why) and still fails, as in `dpplan check`.
    let mut failed = false;
    let mut blocked = false;
    for (v, a, which) in [(&old, &old_a, "old"), (&new, &new_a, "new")] {
        if a.has_errors() {
            failed = true;
            if dpplan_review::diff::comparable(a).is_none() {
                blocked = true;
                let file = dpplan_render::FileResult {
                    path: &v.label,
                    text: &v.text,
                    analysis: a,
                };
                err!("{}", crate::out::human(&file));
                errln!(
                    "error: the {which} plan `{}` has errors: it makes no claim, so nothing is compared",
                    v.label
                );
            } else {
                errln!(
                    "error: the {which} plan `{}` exceeds its budget (DP011; `dpplan check` shows where); compared anyway",
                    v.label
                );
            }
        }
    }
    if blocked {
        errln!("help: run `dpplan check` on it and fix the errors first");
        return Ok(ExitCode::from(1));
    }
    let (Some(o), Some(n)) = (
        dpplan_review::diff::comparable(&old_a),
        dpplan_review::diff::comparable(&new_a),
    ) else {
        return Err(miette!(
            help = "a plan needs a `privacy {{ … }}` block to make a claim",
            "a plan declares no privacy block: there is no guarantee to compare"
        ));
    };
    // the limit accuracy is judged at: the smallest `accuracy=RATIO` given
    let limit = args
        .fail_on
        .iter()
        .filter_map(|f| match f {
            FailOn::Accuracy(r) => Some(*r),
            _ => None,
        })
        .fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.min(r))))
        .unwrap_or(dpplan_review::diff::DEFAULT_ACCURACY_RATIO);
    let d = dpplan_review::diff::diff_with_limit(&old.label, o, &new.label, n, limit);
    let text = match args.format {
        DiffFormat::Human => dpplan_review::diff::human(&d),
        DiffFormat::Md => dpplan_review::diff::markdown(&d),
        DiffFormat::Json => dpplan_review::diff::json(&d),
    };
    crate::out::write_bytes(text.as_bytes()).into_diagnostic()?;
    for f in &args.fail_on {
        match f {
            FailOn::Increase if d.verdict.increase => {
                failed = true;
                errln!("error: --fail-on increase: {}", d.verdict.summary);
            }
            FailOn::Contract if d.verdict.contract_changed => {
                failed = true;
                let fields: Vec<&str> = d.contract.iter().map(|c| c.field.as_str()).collect();
                errln!(
                    "error: --fail-on contract: the privacy contract changed ({})",
                    fields.join("; ")
                );
            }
            FailOn::Accuracy(r) => {
                let worse: Vec<String> = d
                    .accuracy
                    .iter()
                    .filter(|a| a.ratio().is_none_or(|x| x > *r) && a.worse)
                    .map(|a| {
                        format!(
                            "{} ({}) {}",
                            a.query,
                            a.role,
                            a.ratio().map_or_else(
                                || "from no noise".to_string(),
                                |x| format!("×{}", dpplan_diagnostics::num(x))
                            )
                        )
                    })
                    .collect();
                if !worse.is_empty() {
                    failed = true;
                    errln!(
                        "error: --fail-on accuracy: the noise grew by more than ×{} for {}",
                        dpplan_diagnostics::num(*r),
                        worse.join(", ")
                    );
                }
            }
            _ => {}
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn read(path: &Path) -> Result<Version> {
    Ok(Version {
        label: path.display().to_string(),
        text: crate::check::read_plan(path)?,
    })
}

/// Runs git with arguments (never through a shell) in `dir`.
fn git(dir: &Path, args: &[&str]) -> Result<std::process::Output> {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                miette!(
                    help = "install git, or compare two files: `dpplan diff OLD NEW`",
                    "`--git` needs git, and git is not installed (not found on PATH)"
                )
            } else {
                miette!("cannot run git: {e}")
            }
        })
}

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).trim().to_string()
}

/// The plan's text at `reference`: `git show REF:<path from the repository root>`.
fn git_version(plan: &Path, reference: &str) -> Result<Version> {
    // the plan itself must exist: `--git` compares the working file with
    // its committed version
    let meta = std::fs::metadata(plan)
        .into_diagnostic()
        .map_err(|e| miette!("cannot read `{}`: {e}", plan.display()))?;
    if !meta.is_file() {
        return Err(miette!("`{}` is not a file", plan.display()));
    }
    let dir = match plan.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file = plan
        .file_name()
        .ok_or_else(|| miette!("`{}` names no file", plan.display()))?
        .to_string_lossy()
        .to_string();
    let prefix = git(&dir, &["rev-parse", "--show-prefix"])?;
    if !prefix.status.success() {
        return Err(miette!(
            help = "`--git` compares a plan inside a git repository with a committed version; outside one, use `dpplan diff OLD NEW`",
            "`{}` is not in a git repository: {}",
            plan.display(),
            stderr_of(&prefix)
        ));
    }
    let rel = format!("{}{file}", String::from_utf8_lossy(&prefix.stdout).trim());
    if reference.starts_with('-') {
        return Err(miette!("`{reference}` is not a git ref"));
    }
    let spec = format!("{reference}:{rel}");
    let shown = git(&dir, &["show", "--no-textconv", &spec, "--"])?;
    if !shown.status.success() {
        return Err(miette!(
            help = format!(
                "check the ref with `git rev-parse {reference}`; `git log --oneline -- {rel}` lists the commits that have the file"
            ),
            "git cannot show `{spec}`: {}",
            stderr_of(&shown)
        ));
    }
    let text = String::from_utf8(shown.stdout).map_err(|e| {
        miette!(
            help = "save the plan as UTF-8",
            "`{spec}` is not valid UTF-8 (first invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    Ok(Version { label: spec, text })
}
