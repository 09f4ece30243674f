//! Which policy applied: the chain of `dpplan.toml` files that governed
//! each checked plan and its hash, in every output format of `dpplan
//! check` (docs/policy.md).

use serde_json::{json, Value};

/// One policy chain and the plans it governed.
pub struct AppliedPolicy<'a> {
    /// The files of the chain, root first, as shown.
    pub files: Vec<String>,
    /// The policy's hash (`Policy.hash`: the file's SHA-256, or the
    /// chain's).
    pub sha256: &'a str,
    /// The paths of the plans it governed, as given.
    pub plans: Vec<&'a str>,
}

impl AppliedPolicy<'_> {
    /// The chain in words: `dpplan.toml → team/dpplan.toml`.
    pub fn chain(&self) -> String {
        self.files.join(" → ")
    }
}

/// The policy that governed the plan at `path`, if any.
pub fn policy_of<'a, 'b>(
    policies: &'a [AppliedPolicy<'b>],
    path: &str,
) -> Option<&'a AppliedPolicy<'b>> {
    policies.iter().find(|p| p.plans.contains(&path))
}

/// One line per policy chain (and one for the plans under none), after the
/// human format's summary.
pub fn policies_human(policies: &[AppliedPolicy], checked: &[&str]) -> String {
    let mut s = String::new();
    for p in policies {
        s.push_str(&format!(
            "policy: {} (sha256 {}) for {} plan{}\n",
            p.chain(),
            p.sha256,
            p.plans.len(),
            if p.plans.len() == 1 { "" } else { "s" }
        ));
    }
    let none: Vec<&str> = checked
        .iter()
        .copied()
        .filter(|c| policy_of(policies, c).is_none())
        .collect();
    if !none.is_empty() {
        s.push_str(&format!(
            "policy: none (no dpplan.toml above {})\n",
            none.join(", ")
        ));
    }
    s
}

/// The `policies` field of `--format json` (docs/json-output.md), and the
/// SARIF run's `policies` property.
pub fn policies_json(policies: &[AppliedPolicy]) -> Value {
    Value::Array(
        policies
            .iter()
            .map(|p| {
                json!({
                    "files": p.files,
                    "sha256": p.sha256,
                    "plans": p.plans,
                })
            })
            .collect(),
    )
}

/// A GitHub Actions notice per policy chain: which policy the check
/// applied, shown on the run's page.
pub fn github_policies(policies: &[AppliedPolicy]) -> String {
    policies
        .iter()
        .map(|p| {
            format!(
                "::notice title=dpplan policy::{} (sha256 {}) for {}\n",
                crate::machine::escape_data(&p.chain()),
                p.sha256,
                crate::machine::escape_data(&p.plans.join(", "))
            )
        })
        .collect()
}

/// The chains of `applied` as the renderers take them, with the checked
/// plans' names (by index, as `dpplan_policy::checked::apply` took them).
pub fn applied_policies<'a>(
    applied: &'a dpplan_policy::checked::Applied,
    names: &[&'a str],
) -> Vec<AppliedPolicy<'a>> {
    applied
        .chains
        .iter()
        .map(|c| AppliedPolicy {
            files: c.files.clone(),
            sha256: &c.hash,
            plans: c.plans.iter().map(|&i| names[i]).collect(),
        })
        .collect()
}
