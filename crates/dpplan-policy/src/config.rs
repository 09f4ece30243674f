//! `dpplan.toml`: reading, validating (every error located in the file) and
//! finding it (the nearest one up from a plan wins, as ruff does).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use dpplan_diagnostics::{Code, Severity};
use dpplan_vocab::{AccountantChoice, Adjacency, NoiseKind, UnitKind};
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use toml::Spanned;

/// The file name looked for.
pub const FILE_NAME: &str = "dpplan.toml";

/// What a rule's diagnostics become.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Error,
    Warning,
    /// Shown as a hint (the lowest severity).
    Info,
    /// Not reported.
    Off,
}

impl Level {
    /// How strict a level is: `off` < `info` < `warning` < `error`.
    fn rank(self) -> u8 {
        match self {
            Level::Off => 0,
            Level::Info => 1,
            Level::Warning => 2,
            Level::Error => 3,
        }
    }

    /// The stricter of two levels.
    pub fn stricter(self, other: Level) -> Level {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }

    /// The level a code has when no policy sets it.
    pub fn default_of(code: Code) -> Level {
        match code.default_severity() {
            Severity::Error => Level::Error,
            Severity::Warning => Level::Warning,
            Severity::Hint => Level::Info,
        }
    }

    /// The severity a diagnostic gets; `None` for `off`.
    pub fn severity(self) -> Option<Severity> {
        match self {
            Level::Error => Some(Severity::Error),
            Level::Warning => Some(Severity::Warning),
            Level::Info => Some(Severity::Hint),
            Level::Off => None,
        }
    }
}

/// The organisation's limits on one plan. Every field is optional; an
/// override's limits replace the global ones field by field.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Limits {
    pub max_epsilon: Option<Spanned<f64>>,
    pub max_delta: Option<Spanned<f64>>,
    pub delta_population_exponent: Option<Spanned<f64>>,
    pub require_population: Option<bool>,
    pub allowed_units: Option<Vec<UnitKind>>,
    pub allowed_adjacency: Option<Vec<Adjacency>>,
    pub user_unit_for_id_columns: Option<bool>,
    pub allowed_mechanisms: Option<Vec<NoiseKind>>,
    pub allowed_accountants: Option<Vec<AccountantChoice>>,
    pub max_releases: Option<u64>,
    pub max_plan_releases: Option<u64>,
    pub min_noise_multiplier: Option<Spanned<f64>>,
    pub require_accuracy: Option<bool>,
    /// `max-tpr-at-fpr = { fpr = 0.01, tpr = 0.05 }`: the largest TPR of a
    /// membership test at that false-positive rate (DP109)
    pub max_tpr_at_fpr: Option<TprCap>,
    /// the caps of the policies this one extends at other false-positive
    /// rates ([`Limits::tightest`] keeps every one)
    #[serde(skip)]
    pub inherited_tpr_caps: Vec<TprCap>,
}

/// A cap on attack risk: at false-positive rate `fpr`, no membership test
/// may have a true-positive rate above `tpr`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TprCap {
    pub fpr: Spanned<f64>,
    pub tpr: Spanned<f64>,
}

impl Limits {
    /// Every TPR cap in force: this policy's and the inherited ones.
    pub fn tpr_caps(&self) -> impl Iterator<Item = &TprCap> {
        self.max_tpr_at_fpr.iter().chain(&self.inherited_tpr_caps)
    }
}

/// The stricter caps of two policies: at the same false-positive rate the
/// lower TPR, at different ones both.
fn tighter_caps(a: &Limits, b: &Limits) -> (Option<TprCap>, Vec<TprCap>) {
    let mut all: Vec<TprCap> = a.tpr_caps().chain(b.tpr_caps()).cloned().collect();
    all.sort_by(|x, y| {
        x.fpr
            .get_ref()
            .total_cmp(y.fpr.get_ref())
            .then(x.tpr.get_ref().total_cmp(y.tpr.get_ref()))
    });
    all.dedup_by(|later, kept| later.fpr.get_ref() == kept.fpr.get_ref());
    let first = b
        .max_tpr_at_fpr
        .as_ref()
        .or(a.max_tpr_at_fpr.as_ref())
        .and_then(|c| all.iter().position(|k| k.fpr.get_ref() == c.fpr.get_ref()))
        .map(|i| all.remove(i));
    (first, all)
}

impl Limits {
    /// `self` with every field `over` sets replaced.
    fn merged(&self, over: &Limits) -> Limits {
        macro_rules! pick {
            ($($f:ident),*) => { Limits {
                $($f: over.$f.clone().or_else(|| self.$f.clone()),)*
                inherited_tpr_caps: self.inherited_tpr_caps.clone(),
            } };
        }
        pick!(
            max_epsilon,
            max_delta,
            delta_population_exponent,
            require_population,
            allowed_units,
            allowed_adjacency,
            user_unit_for_id_columns,
            allowed_mechanisms,
            allowed_accountants,
            max_releases,
            max_plan_releases,
            min_noise_multiplier,
            require_accuracy,
            max_tpr_at_fpr
        )
    }
}

/// The smaller of two optional values (keeping the span of the one kept).
fn lower(a: &Option<Spanned<f64>>, b: &Option<Spanned<f64>>) -> Option<Spanned<f64>> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.get_ref() < x.get_ref() { y } else { x }.clone()),
        _ => a.clone().or_else(|| b.clone()),
    }
}

fn higher(a: &Option<Spanned<f64>>, b: &Option<Spanned<f64>>) -> Option<Spanned<f64>> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.get_ref() > x.get_ref() { y } else { x }.clone()),
        _ => a.clone().or_else(|| b.clone()),
    }
}

fn both<T: PartialEq + Clone>(a: &Option<Vec<T>>, b: &Option<Vec<T>>) -> Option<Vec<T>> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.iter().filter(|v| y.contains(v)).cloned().collect()),
        _ => a.clone().or_else(|| b.clone()),
    }
}

fn any_true(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x || y),
        _ => a.or(b),
    }
}

fn least(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        _ => a.or(b),
    }
}

impl Limits {
    /// The limits of a parent policy and of a nested one together: each key
    /// at the stricter of the two (a nested policy can tighten, never
    /// loosen: the smaller ε, δ and release counts, the larger exponent and
    /// noise multiplier, a requirement if either asks for it, the
    /// intersection of the allowed lists).
    pub fn tightest(&self, other: &Limits) -> Limits {
        let (max_tpr_at_fpr, inherited_tpr_caps) = tighter_caps(self, other);
        Limits {
            max_tpr_at_fpr,
            inherited_tpr_caps,
            max_epsilon: lower(&self.max_epsilon, &other.max_epsilon),
            max_delta: lower(&self.max_delta, &other.max_delta),
            delta_population_exponent: higher(
                &self.delta_population_exponent,
                &other.delta_population_exponent,
            ),
            require_population: any_true(self.require_population, other.require_population),
            allowed_units: both(&self.allowed_units, &other.allowed_units),
            allowed_adjacency: both(&self.allowed_adjacency, &other.allowed_adjacency),
            user_unit_for_id_columns: any_true(
                self.user_unit_for_id_columns,
                other.user_unit_for_id_columns,
            ),
            allowed_mechanisms: both(&self.allowed_mechanisms, &other.allowed_mechanisms),
            allowed_accountants: both(&self.allowed_accountants, &other.allowed_accountants),
            max_releases: least(self.max_releases, other.max_releases),
            max_plan_releases: least(self.max_plan_releases, other.max_plan_releases),
            min_noise_multiplier: higher(&self.min_noise_multiplier, &other.min_noise_multiplier),
            require_accuracy: any_true(self.require_accuracy, other.require_accuracy),
        }
    }

    /// The policy codes whose rules these limits switch on.
    pub fn codes(&self) -> Vec<Code> {
        let mut out = Vec::new();
        if self.max_epsilon.is_some() || self.max_delta.is_some() {
            out.push(Code::PolicyBudget);
        }
        if self.delta_population_exponent.is_some() || self.require_population == Some(true) {
            out.push(Code::PolicyDelta);
        }
        if self.allowed_units.is_some()
            || self.allowed_adjacency.is_some()
            || self.user_unit_for_id_columns == Some(true)
        {
            out.push(Code::PolicyUnit);
        }
        if self.allowed_mechanisms.is_some() || self.allowed_accountants.is_some() {
            out.push(Code::PolicyMechanism);
        }
        if self.max_releases.is_some() || self.max_plan_releases.is_some() {
            out.push(Code::PolicyReleases);
        }
        if self.min_noise_multiplier.is_some() {
            out.push(Code::PolicyNoise);
        }
        if self.require_accuracy == Some(true) {
            out.push(Code::PolicyAccuracy);
        }
        if self.tpr_caps().next().is_some() {
            out.push(Code::PolicyAttackRisk);
        }
        out
    }
}

type RawRules = BTreeMap<Spanned<String>, Spanned<Level>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPolicy {
    /// This file does not extend the policies above it.
    #[serde(default)]
    root: bool,
    #[serde(default)]
    rules: RawRules,
    #[serde(default)]
    suppressions: Option<RawSuppressions>,
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    overrides: Vec<RawOverride>,
    #[serde(default)]
    budgets: Vec<RawBudget>,
    #[serde(default)]
    signoff: Option<RawSignoff>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSignoff {
    required: Spanned<u64>,
    #[serde(default)]
    reviewers: Vec<RawReviewer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawReviewer {
    name: Spanned<String>,
    public_key: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawOverride {
    paths: Vec<Spanned<String>>,
    #[serde(default)]
    rules: RawRules,
    #[serde(default)]
    suppressions: Option<RawSuppressions>,
    #[serde(default)]
    limits: Limits,
}

/// `[suppressions]`: the policy codes a plan may suppress inline.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSuppressions {
    allow: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawBudget {
    source: Spanned<String>,
    epsilon: Spanned<f64>,
    #[serde(default)]
    delta: Option<Spanned<f64>>,
    /// Globs (relative to the policy file) of every plan that reads the
    /// source, composed whichever plans are checked.
    #[serde(default)]
    plans: Vec<Spanned<String>>,
    /// The budget ledger every run of a plan reading the source charges
    /// (relative to the policy file).
    #[serde(default)]
    ledger: Option<Spanned<String>>,
    /// `month` or `week`: ε per unit per calendar block.
    #[serde(default)]
    per: Option<Per>,
}

/// The calendar block of a per-block budget (`per = "month"`), UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    Week,
    Month,
}

/// A per-path exception: globs (relative to the policy file's directory)
/// and what they change.
#[derive(Debug, Clone)]
pub struct Override {
    pub globs: GlobSet,
    pub patterns: Vec<String>,
    pub rules: Vec<(Code, Level)>,
    pub limits: Limits,
    /// `suppressions = { allow = [...] }`: replaces the global list.
    pub allow_suppression: Option<Vec<Code>>,
}

/// One data source's budget, shared by every plan that reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedBudget {
    /// As written in the policy file.
    pub source: String,
    /// Resolved against the policy file's directory: the canonical path
    /// where the file exists ([`canonical`]), lexically normalised otherwise.
    pub path: PathBuf,
    pub epsilon: f64,
    pub delta: f64,
    /// The policy file that declares it.
    pub policy: PathBuf,
    /// `plans`: globs, relative to the declaring file's directory, of the
    /// plans that read the source ([`SharedBudget::named_plans`]).
    pub plans: Vec<String>,
    /// The budget ledger `dpplan run` charges each release on the source
    /// to, before its noise is drawn (`ledger = "…"`, resolved against the
    /// policy file's directory); `None`: the budget is checked by `dpplan
    /// check` only.
    pub ledger: Option<PathBuf>,
    /// `per = "month"` (or `week`): ε per unit per calendar block, enforced
    /// by `dpplan run` on the budget ledger (which it requires); `dpplan
    /// check` composes every release as if all lay in one block (sound).
    pub per: Option<Per>,
}

/// A reviewer a policy trusts to sign off frozen reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Reviewer {
    pub name: String,
    /// The ed25519 public key, 64 lower-case hex digits.
    pub public_key: String,
}

/// `[signoff]`: how many of the named reviewers must sign a frozen report
/// of a plan (`dpplan ledger sign`) before `dpplan run` releases anything.
#[derive(Debug, Clone, PartialEq)]
pub struct SignoffPolicy {
    pub required: usize,
    pub reviewers: Vec<Reviewer>,
}

impl SharedBudget {
    /// Every `*.dpplan` file under the declaring policy's directory whose
    /// path relative to it matches one of the `plans` globs, in path order
    /// (hidden directories and `target` skipped).
    pub fn named_plans(&self) -> Vec<PathBuf> {
        let mut b = GlobSetBuilder::new();
        for p in &self.plans {
            // validated when the policy was read
            if let Ok(g) = Glob::new(p) {
                b.add(g);
            }
        }
        let Ok(globs) = b.build() else {
            return Vec::new();
        };
        if self.plans.is_empty() {
            return Vec::new();
        }
        let dir = normalise(&self.policy)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut out = Vec::new();
        walk(&dir, &dir, &globs, &mut out, 0);
        out.sort();
        out
    }
}

fn walk(root: &Path, dir: &Path, globs: &GlobSet, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > 32 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            if !name.starts_with('.') && name != "target" {
                walk(root, &p, globs, out, depth + 1);
            }
        } else if p.extension().is_some_and(|x| x == "dpplan") {
            let rel = p.strip_prefix(root).unwrap_or(&p);
            if globs.is_match(rel) {
                out.push(p);
            }
        }
    }
}

/// A policy, validated: one file, and the policy it extends.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The file it was read from (the nearest one, for a chain).
    pub file: PathBuf,
    /// Its directory: globs and sources are relative to it.
    pub dir: PathBuf,
    /// `root = true`: it extends no policy above it.
    pub root: bool,
    pub rules: Vec<(Code, Level)>,
    pub limits: Limits,
    /// `[suppressions] allow`: the policy codes a plan may suppress inline
    /// (`None`: the key is absent).
    pub allow_suppression: Option<Vec<Code>>,
    pub overrides: Vec<Override>,
    /// Every shared budget of the chain: the parent's first, then this
    /// file's own.
    pub budgets: Vec<SharedBudget>,
    /// This file's own `[signoff]` (the chain's: [`Policy::signoffs`]).
    pub signoff: Option<SignoffPolicy>,
    /// The policy this one extends (the nearest `dpplan.toml` above its
    /// directory), unless it is a root.
    pub parent: Option<Box<Policy>>,
    /// SHA-256 (hex) of the policy: of the file's text for a policy of one
    /// file; for a chain, of the lines `<sha256 of a file's text>\n`, root
    /// first. What an executable plan records as the policy it was
    /// compiled under.
    pub hash: String,
    /// For a chain: the SHA-256 of this file's own text.
    own: Option<String>,
}

/// A policy file that cannot be used, located in its text.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub text: String,
    /// Byte range in `text`, when the problem has a place.
    pub span: Option<Range<usize>>,
    pub message: String,
    pub help: Option<String>,
}

/// What applies to one plan: the rule levels (later entries win), the
/// merged limits and the policy codes a plan may suppress inline.
#[derive(Debug, Clone, Default)]
pub struct Effective {
    pub rules: Vec<(Code, Level)>,
    pub limits: Limits,
    /// The policy codes (DP100–DP109) whose inline suppression the policy
    /// allows (`[suppressions] allow`); every other one is refused.
    pub allow_suppression: Vec<Code>,
}

impl Effective {
    /// What a nested policy's own `child` adds to its parent's `self`: each
    /// rule at the stricter of the two levels (a policy code the parent
    /// leaves at its default cannot be lowered below it), each limit at the
    /// stricter value, and only suppressions both allow.
    fn extended_by(&self, child: &Effective, child_allows: bool) -> Effective {
        let mut rules = self.rules.clone();
        for &(code, level) in &child.rules {
            let floor = self
                .level(code)
                .or_else(|| code.is_policy().then(|| Level::default_of(code)));
            rules.push((code, floor.map_or(level, |f| f.stricter(level))));
        }
        let allow_suppression = if child_allows {
            self.allow_suppression
                .iter()
                .copied()
                .filter(|c| child.allow_suppression.contains(c))
                .collect()
        } else {
            self.allow_suppression.clone()
        };
        Effective {
            rules,
            limits: self.limits.tightest(&child.limits),
            allow_suppression,
        }
    }

    /// The policy codes whose rules ran with a level other than `off`: what
    /// an executable plan records as checked.
    pub fn checked(&self, budgets: bool) -> Vec<Code> {
        let mut codes = self.limits.codes();
        if budgets {
            codes.push(Code::SharedBudget);
        }
        codes.retain(|&c| self.level(c) != Some(Level::Off));
        codes
    }

    /// The level configured for a code, if any.
    pub fn level(&self, code: Code) -> Option<Level> {
        self.rules
            .iter()
            .rev()
            .find(|(c, _)| *c == code)
            .map(|(_, l)| *l)
    }
}

pub use dpplan_vocab::paths::{canonical, normalise};

/// The nearest `dpplan.toml` in the plan's directory or above.
pub fn discover(plan: &Path) -> Option<PathBuf> {
    let plan = normalise(plan);
    above(plan.parent())
}

/// The nearest `dpplan.toml` in `dir` or above.
fn above(mut dir: Option<&Path>) -> Option<PathBuf> {
    while let Some(d) = dir {
        let candidate = d.join(FILE_NAME);
        if candidate.is_file() {
            // shown relative to the current directory where it is below it
            let cwd = std::env::current_dir().unwrap_or_default();
            return Some(match candidate.strip_prefix(&cwd) {
                Ok(rel) => rel.to_path_buf(),
                Err(_) => candidate,
            });
        }
        dir = d.parent();
    }
    None
}

/// SHA-256 of `bytes`, lower-case hex.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether this process runs in CI: the `CI` environment variable set to
/// anything but empty, `0` or `false` (GitHub Actions, GitLab CI, CircleCI,
/// Travis, Buildkite and Azure Pipelines set it to `true`).
pub fn in_ci() -> bool {
    is_ci(std::env::var("CI").ok().as_deref())
}

/// Whether a value of `CI` says CI.
fn is_ci(value: Option<&str>) -> bool {
    value.is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

/// The policy that governs the plan at `plan`: the one named by `explicit`
/// (`--config`) or else the nearest `dpplan.toml` up from the plan
/// ([`discover`]), with the chain it extends ([`Policy::load`]); `None`
/// when there is none. Every command that touches a plan (check, compile,
/// run, report, freeze) finds its policy here. In CI ([`in_ci`]) a
/// `--config` file must be a root ([`ci_config`]).
pub fn in_force(plan: &Path, explicit: Option<&Path>) -> Result<Option<Policy>, ConfigError> {
    in_force_with(plan, explicit, in_ci())
}

/// [`in_force`] with CI said explicitly.
pub fn in_force_with(
    plan: &Path,
    explicit: Option<&Path>,
    ci: bool,
) -> Result<Option<Policy>, ConfigError> {
    let file = match explicit {
        Some(f) => f.to_path_buf(),
        None => match discover(plan) {
            Some(f) => f,
            None => return Ok(None),
        },
    };
    let policy = Policy::load(&file)?;
    if ci && explicit.is_some() {
        ci_config(&policy, plan)?;
    }
    Ok(Some(policy))
}

/// In CI, `--config FILE` may only name a root policy (`root = true`, or
/// no `dpplan.toml` above it), and, for a plan that a `dpplan.toml` above
/// it governs, the root of that plan's own chain: a CI job cannot swap the
/// organisation's policy for another file, nor start below its root.
pub fn ci_config(named: &Policy, plan: &Path) -> Result<(), ConfigError> {
    let refuse = |message: String, help: &str| ConfigError {
        file: named.file.clone(),
        text: String::new(),
        span: None,
        message,
        help: Some(help.to_string()),
    };
    if named.parent.is_some() {
        return Err(refuse(
            format!(
                "in CI (the `CI` environment variable is set), --config must name a root policy; `{}` extends {}",
                named.file.display(),
                named.chain_text()
            ),
            "name the root of the chain (or drop --config: each plan's own chain applies)",
        ));
    }
    if let Some(own) = discover(plan) {
        let own = Policy::load(&own)?;
        let root = own
            .chain()
            .first()
            .map(|p| canonical(p))
            .unwrap_or_default();
        if root != canonical(&named.file) {
            return Err(refuse(
                format!(
                    "in CI (the `CI` environment variable is set), --config `{}` would replace the policy that governs `{}` ({})",
                    named.file.display(),
                    plan.display(),
                    own.chain_text()
                ),
                "drop --config in CI: the plan's own chain applies (docs/policy.md)",
            ));
        }
    }
    Ok(())
}

impl Policy {
    /// Reads and validates a policy from its text.
    pub fn parse(file: &Path, text: &str) -> Result<Policy, ConfigError> {
        let err = |span: Option<Range<usize>>, message: String, help: Option<&str>| ConfigError {
            file: file.to_path_buf(),
            text: text.to_string(),
            span,
            message,
            help: help.map(str::to_string),
        };
        let raw: RawPolicy = toml::from_str(text).map_err(|e| {
            err(
                e.span(),
                e.message().to_string(),
                Some("every key is documented in docs/policy.md"),
            )
        })?;
        let dir = normalise(file)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let rules = rules_of(&raw.rules).map_err(|(s, m, h)| err(Some(s), m, Some(h)))?;
        let allow_suppression = raw
            .suppressions
            .as_ref()
            .map(allowed_codes)
            .transpose()
            .map_err(|(s, m, h)| err(Some(s), m, Some(h)))?;
        check_limits(&raw.limits).map_err(|(s, m)| err(Some(s), m, None))?;
        let mut overrides = Vec::new();
        for o in &raw.overrides {
            let mut b = GlobSetBuilder::new();
            for p in &o.paths {
                let g = Glob::new(p.get_ref()).map_err(|e| {
                    err(
                        Some(p.span()),
                        format!("`{}` is not a glob: {e}", p.get_ref()),
                        None,
                    )
                })?;
                b.add(g);
            }
            let globs = b
                .build()
                .map_err(|e| err(None, format!("the override's globs: {e}"), None))?;
            check_limits(&o.limits).map_err(|(s, m)| err(Some(s), m, None))?;
            overrides.push(Override {
                globs,
                patterns: o.paths.iter().map(|p| p.get_ref().clone()).collect(),
                rules: rules_of(&o.rules).map_err(|(s, m, h)| err(Some(s), m, Some(h)))?,
                limits: o.limits.clone(),
                allow_suppression: o
                    .suppressions
                    .as_ref()
                    .map(allowed_codes)
                    .transpose()
                    .map_err(|(s, m, h)| err(Some(s), m, Some(h)))?,
            });
        }
        let budgets = raw
            .budgets
            .iter()
            .map(|b| shared(file, &dir, b))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|(s, m)| err(Some(s), m, None))?;
        Ok(Policy {
            file: file.to_path_buf(),
            dir,
            root: raw.root,
            rules,
            limits: raw.limits,
            allow_suppression,
            overrides,
            budgets,
            signoff: raw
                .signoff
                .as_ref()
                .map(signoff_of)
                .transpose()
                .map_err(|(s, m, h)| err(Some(s), m, Some(h)))?,
            parent: None,
            hash: sha256_hex(text.as_bytes()),
            own: None,
        })
    }

    /// Reads a policy file and, unless it says `root = true`, the chain of
    /// policies it extends: the nearest `dpplan.toml` above its directory,
    /// and so on up.
    pub fn load(file: &Path) -> Result<Policy, ConfigError> {
        let mut p = Policy::load_one(file)?;
        if !p.root {
            let dir = normalise(file);
            if let Some(up) = above(dir.parent().and_then(Path::parent)) {
                if canonical(&up) != canonical(file) {
                    let parent = Policy::load(&up)?;
                    p.extend(parent);
                }
            }
        }
        Ok(p)
    }

    /// Every `[signoff]` of the chain, with the file that declares it,
    /// nearest first: each one must hold (a nested file cannot lower its
    /// parent's requirement by naming other reviewers).
    pub fn signoffs(&self) -> Vec<(&Path, &SignoffPolicy)> {
        let mut out = Vec::new();
        let mut at = Some(self);
        while let Some(p) = at {
            if let Some(s) = &p.signoff {
                out.push((p.file.as_path(), s));
            }
            at = p.parent.as_deref();
        }
        out
    }

    /// `self` as a nested policy of `parent`: its budgets after the
    /// parent's, its hash over the chain.
    fn extend(&mut self, parent: Policy) {
        let mut budgets = parent.budgets.clone();
        budgets.append(&mut self.budgets);
        self.budgets = budgets;
        let own = self.hash.clone();
        let mut lines = String::new();
        let mut chain: Vec<&Policy> = Vec::new();
        let mut at = Some(&parent);
        while let Some(p) = at {
            chain.push(p);
            at = p.parent.as_deref();
        }
        for p in chain.iter().rev() {
            lines.push_str(&p.own_hash());
            lines.push('\n');
        }
        lines.push_str(&own);
        lines.push('\n');
        self.own = Some(own);
        self.hash = sha256_hex(lines.as_bytes());
        self.parent = Some(Box::new(parent));
    }

    fn load_one(file: &Path) -> Result<Policy, ConfigError> {
        let text = std::fs::read_to_string(file).map_err(|e| ConfigError {
            file: file.to_path_buf(),
            text: String::new(),
            span: None,
            message: format!("cannot read the policy: {e}"),
            help: None,
        })?;
        Policy::parse(file, &text)
    }

    /// The SHA-256 of this file's own text.
    fn own_hash(&self) -> String {
        self.own.clone().unwrap_or_else(|| self.hash.clone())
    }

    /// The files of the chain, root first.
    pub fn chain(&self) -> Vec<PathBuf> {
        let mut out = match &self.parent {
            Some(p) => p.chain(),
            None => Vec::new(),
        };
        out.push(self.file.clone());
        out
    }

    /// The chain in words: `a/dpplan.toml → a/b/dpplan.toml`.
    pub fn chain_text(&self) -> String {
        self.chain()
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" → ")
    }

    /// The rules and limits that apply to the plan at `plan`: the parent's
    /// (for a chain), extended by this file's own ([`Effective`]: a nested
    /// policy only tightens).
    pub fn effective(&self, plan: &Path) -> Effective {
        let own = self.own_effective(plan);
        match &self.parent {
            None => Effective {
                rules: own.rules,
                limits: own.limits,
                allow_suppression: own.allow_suppression.unwrap_or_default(),
            },
            Some(p) => {
                let allows = own.allow_suppression.is_some();
                let child = Effective {
                    rules: own.rules,
                    limits: own.limits,
                    allow_suppression: own.allow_suppression.unwrap_or_default(),
                };
                p.effective(plan).extended_by(&child, allows)
            }
        }
    }

    /// This file's own rules and limits for the plan at `plan` (the global
    /// ones, then every override whose globs match the plan's path relative
    /// to the policy's directory, in file order).
    fn own_effective(&self, plan: &Path) -> Own {
        let plan = normalise(plan);
        let rel = plan.strip_prefix(&self.dir).unwrap_or(&plan);
        let mut e = Own {
            rules: self.rules.clone(),
            limits: self.limits.clone(),
            allow_suppression: self.allow_suppression.clone(),
        };
        for o in &self.overrides {
            if o.globs.is_match(rel) {
                e.rules.extend(o.rules.iter().copied());
                e.limits = e.limits.merged(&o.limits);
                if o.allow_suppression.is_some() {
                    e.allow_suppression = o.allow_suppression.clone();
                }
            }
        }
        e
    }
}

/// One file's own part of an [`Effective`].
struct Own {
    rules: Vec<(Code, Level)>,
    limits: Limits,
    allow_suppression: Option<Vec<Code>>,
}

/// A rule table: keys are codes (`DP009`) or names (`fresh-rerelease`). A
/// checker error cannot be lowered or turned off: it means no sound total
/// can be claimed.
/// A problem in the file: where, what, and how to fix it.
type Located = (Range<usize>, String, &'static str);

/// A diagnostic code or name written in the policy, located when unknown.
fn parse_code(key: &str, span: Range<usize>) -> Result<Code, Located> {
    Code::parse(key).ok_or_else(|| {
        (
            span,
            format!("`{key}` is not a dpplan diagnostic code or name"),
            "`dpplan rule --list` lists every code",
        )
    })
}

fn rules_of(raw: &RawRules) -> Result<Vec<(Code, Level)>, Located> {
    let mut out = Vec::new();
    for (k, v) in raw {
        let key = k.get_ref();
        let code = parse_code(key, k.span())?;
        let level = *v.get_ref();
        if code.is_checker_error() && level != Level::Error {
            return Err((
                v.span(),
                format!(
                    "{} ({}) cannot be lowered: a checker error means the plan's guarantee cannot be claimed soundly",
                    code.as_str(),
                    code.name()
                ),
                "only warnings, hints and the policy's own rules (DP1xx) can be given another level",
            ));
        }
        out.push((code, level));
    }
    Ok(out)
}

/// `[suppressions] allow`: policy codes only.
fn allowed_codes(raw: &RawSuppressions) -> Result<Vec<Code>, Located> {
    let mut out = Vec::new();
    for k in &raw.allow {
        let key = k.get_ref();
        let code = parse_code(key, k.span())?;
        if !code.is_policy() {
            return Err((
                k.span(),
                format!(
                    "{} ({}) is not a policy code: `[suppressions] allow` lists the policy codes (DP100–DP109) a plan may suppress inline",
                    code.as_str(),
                    code.name()
                ),
                "a checker warning is suppressed inline without a policy key; a checker error cannot be",
            ));
        }
        out.push(code);
    }
    Ok(out)
}

/// The policy's own codes (DP100 and up): [`Code::is_policy`].
pub fn is_policy(code: Code) -> bool {
    code.is_policy()
}

fn positive(
    v: &Option<Spanned<f64>>,
    what: &str,
    max: Option<f64>,
) -> Result<(), (Range<usize>, String)> {
    if let Some(v) = v {
        let x = *v.get_ref();
        let ok = x.is_finite() && x > 0.0 && max.is_none_or(|m| x <= m);
        if !ok {
            let range = match max {
                Some(m) => format!("in (0, {m}]"),
                None => "positive and finite".to_string(),
            };
            return Err((v.span(), format!("`{what}` must be {range}, not {x}")));
        }
    }
    Ok(())
}

fn check_limits(l: &Limits) -> Result<(), (Range<usize>, String)> {
    positive(&l.max_epsilon, "max-epsilon", None)?;
    positive(&l.max_delta, "max-delta", Some(1.0))?;
    positive(
        &l.delta_population_exponent,
        "delta-population-exponent",
        None,
    )?;
    positive(&l.min_noise_multiplier, "min-noise-multiplier", None)?;
    if let Some(cap) = &l.max_tpr_at_fpr {
        let fpr = *cap.fpr.get_ref();
        if !dpplan_accounting::FPRS.contains(&fpr) {
            return Err((
                cap.fpr.span(),
                format!("`max-tpr-at-fpr`'s `fpr` must be one the checker states the attack risk at, 0.01 or 0.001, not {fpr}"),
            ));
        }
        let tpr = *cap.tpr.get_ref();
        if !(tpr.is_finite() && tpr >= fpr && tpr < 1.0) {
            return Err((
                cap.tpr.span(),
                format!("`max-tpr-at-fpr`'s `tpr` must lie in [fpr, 1), i.e. [{fpr}, 1), not {tpr} (a test that guesses at random already has TPR = FPR)"),
            ));
        }
    }
    Ok(())
}

/// `[signoff]` validated: every key an ed25519 public key, no key or name
/// twice, at least one signature required and no more than the reviewers.
fn signoff_of(raw: &RawSignoff) -> Result<SignoffPolicy, (Range<usize>, String, &'static str)> {
    const HELP: &str = "a reviewer's key is the 64 hex digits `dpplan ledger keygen` prints (docs/policy.md, sign-off)";
    let mut reviewers: Vec<Reviewer> = Vec::new();
    for r in &raw.reviewers {
        let name = r.name.get_ref().trim();
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err((
                r.name.span(),
                "a reviewer's `name` is one line of text".into(),
                HELP,
            ));
        }
        let key = r.public_key.get_ref().trim().to_ascii_lowercase();
        let bytes: Option<[u8; 32]> = (key.len() == 64 && key.is_ascii())
            .then(|| {
                let mut b = [0u8; 32];
                for (i, o) in b.iter_mut().enumerate() {
                    *o = u8::from_str_radix(&key[2 * i..2 * i + 2], 16).ok()?;
                }
                Some(b)
            })
            .flatten();
        let valid = bytes.is_some_and(|b| ed25519_dalek::VerifyingKey::from_bytes(&b).is_ok());
        if !valid {
            return Err((
                r.public_key.span(),
                format!("`{name}`'s `public-key` is not an ed25519 public key"),
                HELP,
            ));
        }
        if let Some(other) = reviewers
            .iter()
            .find(|o| o.public_key == key || o.name == name)
        {
            return Err((
                r.name.span(),
                format!("`{name}` repeats the reviewer `{}` (a name or a key twice would count one reviewer twice)", other.name),
                HELP,
            ));
        }
        reviewers.push(Reviewer {
            name: name.to_string(),
            public_key: key,
        });
    }
    let required = *raw.required.get_ref();
    if required == 0 || required > reviewers.len() as u64 {
        return Err((
            raw.required.span(),
            format!(
                "`required` must be between 1 and the {} reviewer(s) named, not {required}",
                reviewers.len()
            ),
            HELP,
        ));
    }
    Ok(SignoffPolicy {
        required: required as usize,
        reviewers,
    })
}

fn shared(file: &Path, dir: &Path, b: &RawBudget) -> Result<SharedBudget, (Range<usize>, String)> {
    for p in &b.plans {
        Glob::new(p.get_ref())
            .map_err(|e| (p.span(), format!("`{}` is not a glob: {e}", p.get_ref())))?;
    }
    positive(&Some(b.epsilon.clone()), "epsilon", None)?;
    let delta = match &b.delta {
        Some(d) => {
            let x = *d.get_ref();
            if !(x.is_finite() && (0.0..1.0).contains(&x)) {
                return Err((d.span(), format!("`delta` must be in [0, 1), not {x}")));
            }
            x
        }
        None => 0.0,
    };
    if b.source.get_ref().is_empty() {
        return Err((b.source.span(), "`source` is empty".into()));
    }
    let ledger = match &b.ledger {
        Some(l) if l.get_ref().is_empty() => {
            return Err((l.span(), "`ledger` is empty".into()));
        }
        Some(l) => Some(normalise(&dir.join(l.get_ref()))),
        None => None,
    };
    if b.per.is_some() && ledger.is_none() {
        return Err((
            b.source.span(),
            "a budget `per` calendar block is enforced by `dpplan run` on a budget ledger: give it `ledger = \"…\"`".into(),
        ));
    }
    Ok(SharedBudget {
        source: b.source.get_ref().clone(),
        path: canonical(&dir.join(b.source.get_ref())),
        epsilon: *b.epsilon.get_ref(),
        delta,
        policy: file.to_path_buf(),
        plans: b.plans.iter().map(|p| p.get_ref().clone()).collect(),
        ledger,
        per: b.per,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(dir: &Path, rel: &str, text: &str) -> PathBuf {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dpplan-policy-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A nested policy extends its parent and only tightens; `root = true`
    /// stops the chain; the chain's hash covers every file, and a policy of
    /// one file hashes to its text's SHA-256.
    #[test]
    fn a_chain_tightens_and_hashes_every_file() {
        let d = scratch("chain");
        let root_text = "[limits]\nmax-epsilon = 2\nallowed-units = [\"user\", \"row\"]\n[suppressions]\nallow = [\"DP106\", \"DP104\"]\n[[budgets]]\nsource = \"v.csv\"\nepsilon = 3\n";
        at(&d, "dpplan.toml", root_text);
        let team = at(
            &d,
            "team/dpplan.toml",
            "[limits]\nmax-epsilon = 10\nallowed-units = [\"user\"]\nmin-noise-multiplier = 1\n[rules]\nDP100 = \"off\"\nDP009 = \"off\"\n[suppressions]\nallow = [\"DP106\", \"DP100\"]\n",
        );
        let p = Policy::load(&team).unwrap();
        assert_eq!(p.chain().len(), 2);
        assert_eq!(p.budgets.len(), 1, "the parent's budgets hold below");
        let e = p.effective(&d.join("team/x.dpplan"));
        assert_eq!(*e.limits.max_epsilon.as_ref().unwrap().get_ref(), 2.0);
        assert_eq!(e.limits.allowed_units, Some(vec![UnitKind::User]));
        assert_eq!(
            *e.limits.min_noise_multiplier.as_ref().unwrap().get_ref(),
            1.0
        );
        assert_eq!(
            e.level(Code::PolicyBudget),
            Some(Level::Error),
            "DP100 cannot be turned off below"
        );
        assert_eq!(
            e.level(Code::FreshRerelease),
            Some(Level::Off),
            "a checker hint is the team's"
        );
        assert_eq!(
            e.allow_suppression,
            vec![Code::PolicyAccuracy],
            "both must allow"
        );
        let parent = sha256_hex(root_text.as_bytes());
        assert_eq!(Policy::load(&d.join("dpplan.toml")).unwrap().hash, parent);
        let own = sha256_hex(std::fs::read(&team).unwrap().as_slice());
        assert_eq!(p.hash, sha256_hex(format!("{parent}\n{own}\n").as_bytes()));
        // root = true: a policy of its own
        at(&d, "team/dpplan.toml", "root = true\n");
        let p = Policy::load(&team).unwrap();
        assert_eq!(p.chain(), vec![team.clone()]);
        assert!(p
            .effective(&d.join("team/x.dpplan"))
            .limits
            .max_epsilon
            .is_none());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn suppressions_list_policy_codes_only() {
        let e = Policy::parse(Path::new("p.toml"), "[suppressions]\nallow = [\"DP009\"]\n")
            .unwrap_err();
        assert!(e.message.contains("not a policy code"), "{}", e.message);
        assert!(e.span.is_some());
        let p = Policy::parse(
            Path::new("p.toml"),
            "[suppressions]\nallow = [\"policy-accuracy\"]\n",
        )
        .unwrap();
        assert_eq!(p.allow_suppression, Some(vec![Code::PolicyAccuracy]));
        let e = Policy::parse(
            Path::new("p.toml"),
            "[[budgets]]\nsource = \"v\"\nepsilon = 1\nplans = [\"a/[b\"]\n",
        )
        .unwrap_err();
        assert!(e.message.contains("is not a glob"), "{}", e.message);
    }

    #[test]
    fn canonical_paths_follow_links_where_the_file_exists() {
        let d = scratch("canon");
        let real = at(&d, "data/visits.csv", "x\n");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("visits.csv", d.join("data/alias.csv")).unwrap();
            assert_eq!(canonical(&d.join("data/alias.csv")), canonical(&real));
        }
        assert_eq!(
            canonical(&d.join("data/../data/visits.csv")),
            canonical(&real)
        );
        // lexical where the file does not exist
        assert_eq!(
            canonical(&d.join("no/../none.csv")),
            normalise(&d.join("none.csv"))
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn ci_is_the_ci_variable_set_and_not_false() {
        for (v, ci) in [
            (Some("true"), true),
            (Some("1"), true),
            (Some("yes"), true),
            (Some("FALSE"), false),
            (Some("0"), false),
            (Some(" "), false),
            (None, false),
        ] {
            assert_eq!(is_ci(v), ci, "{v:?}");
        }
    }
}
