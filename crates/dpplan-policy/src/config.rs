//! `dpplan.toml`: reading, validating (every error located in the file) and
//! finding it (the nearest one up from a plan wins, as ruff does).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

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
}

impl Limits {
    /// `self` with every field `over` sets replaced.
    fn merged(&self, over: &Limits) -> Limits {
        macro_rules! pick {
            ($($f:ident),*) => { Limits { $($f: over.$f.clone().or_else(|| self.$f.clone()),)* } };
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
            require_accuracy
        )
    }
}

type RawRules = BTreeMap<Spanned<String>, Spanned<Level>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPolicy {
    #[serde(default)]
    rules: RawRules,
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
    limits: Limits,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawBudget {
    source: Spanned<String>,
    epsilon: Spanned<f64>,
    #[serde(default)]
    delta: Option<Spanned<f64>>,
}

/// A per-path exception: globs (relative to the policy file's directory)
/// and what they change.
#[derive(Debug, Clone)]
pub struct Override {
    pub globs: GlobSet,
    pub patterns: Vec<String>,
    pub rules: Vec<(Code, Level)>,
    pub limits: Limits,
}

/// One data source's budget, shared by every plan that reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedBudget {
    /// As written in the policy file.
    pub source: String,
    /// Resolved against the policy file's directory, lexically normalised.
    pub path: PathBuf,
    pub epsilon: f64,
    pub delta: f64,
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

/// A policy, validated.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The file it was read from.
    pub file: PathBuf,
    /// Its directory: globs and sources are relative to it.
    pub dir: PathBuf,
    pub rules: Vec<(Code, Level)>,
    pub limits: Limits,
    pub overrides: Vec<Override>,
    pub budgets: Vec<SharedBudget>,
    pub signoff: Option<SignoffPolicy>,
    /// SHA-256 (hex) of the policy's text: what an executable plan records
    /// as the policy it was compiled under.
    pub hash: String,
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

/// What applies to one plan: the rule levels (later entries win) and the
/// merged limits.
#[derive(Debug, Clone, Default)]
pub struct Effective {
    pub rules: Vec<(Code, Level)>,
    pub limits: Limits,
}

impl Effective {
    /// The level configured for a code, if any.
    pub fn level(&self, code: Code) -> Option<Level> {
        self.rules
            .iter()
            .rev()
            .find(|(c, _)| *c == code)
            .map(|(_, l)| *l)
    }
}

/// `path` made absolute (against the current directory) and lexically
/// normalised (`.` and `..` folded), without touching the file system.
pub fn normalise(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The nearest `dpplan.toml` in the plan's directory or above.
pub fn discover(plan: &Path) -> Option<PathBuf> {
    let plan = normalise(plan);
    let mut dir = plan.parent();
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

/// The policy that governs the plan at `plan`: the one named by `explicit`
/// (`--config`) or else the nearest `dpplan.toml` up from the plan
/// ([`discover`]); `None` when there is none. Every command that touches a
/// plan (check, compile, run, report, freeze) finds its policy here.
pub fn in_force(plan: &Path, explicit: Option<&Path>) -> Result<Option<Policy>, ConfigError> {
    let file = match explicit {
        Some(f) => f.to_path_buf(),
        None => match discover(plan) {
            Some(f) => f,
            None => return Ok(None),
        },
    };
    Policy::load(&file).map(Some)
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
            });
        }
        let budgets = raw
            .budgets
            .iter()
            .map(|b| shared(&dir, b))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|(s, m)| err(Some(s), m, None))?;
        Ok(Policy {
            file: file.to_path_buf(),
            dir,
            rules,
            limits: raw.limits,
            overrides,
            budgets,
            signoff: raw
                .signoff
                .as_ref()
                .map(signoff_of)
                .transpose()
                .map_err(|(s, m, h)| err(Some(s), m, Some(h)))?,
            hash: sha256_hex(text.as_bytes()),
        })
    }

    /// Reads a policy file.
    pub fn load(file: &Path) -> Result<Policy, ConfigError> {
        let text = std::fs::read_to_string(file).map_err(|e| ConfigError {
            file: file.to_path_buf(),
            text: String::new(),
            span: None,
            message: format!("cannot read the policy: {e}"),
            help: None,
        })?;
        Policy::parse(file, &text)
    }

    /// The rules and limits that apply to the plan at `plan` (the global
    /// ones, then every override whose globs match the plan's path relative
    /// to the policy's directory, in file order).
    pub fn effective(&self, plan: &Path) -> Effective {
        let plan = normalise(plan);
        let rel = plan.strip_prefix(&self.dir).unwrap_or(&plan);
        let mut e = Effective {
            rules: self.rules.clone(),
            limits: self.limits.clone(),
        };
        for o in &self.overrides {
            if o.globs.is_match(rel) {
                e.rules.extend(o.rules.iter().copied());
                e.limits = e.limits.merged(&o.limits);
            }
        }
        e
    }
}

/// A rule table: keys are codes (`DP009`) or names (`fresh-rerelease`). A
/// checker error cannot be lowered or turned off: it means no sound total
/// can be claimed.
/// A problem in the file: where, what, and how to fix it.
type Located = (Range<usize>, String, &'static str);

fn rules_of(raw: &RawRules) -> Result<Vec<(Code, Level)>, Located> {
    let mut out = Vec::new();
    for (k, v) in raw {
        let key = k.get_ref();
        let code = Code::parse(key).ok_or_else(|| {
            (
                k.span(),
                format!("`{key}` is not a dpplan diagnostic code or name"),
                "`dpplan rule --list` lists every code",
            )
        })?;
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

fn shared(dir: &Path, b: &RawBudget) -> Result<SharedBudget, (Range<usize>, String)> {
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
    Ok(SharedBudget {
        source: b.source.get_ref().clone(),
        path: normalise(&dir.join(b.source.get_ref())),
        epsilon: *b.epsilon.get_ref(),
        delta,
    })
}
