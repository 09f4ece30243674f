//! The latest `dpplan audit` of the plan, beside its claims
//! (`dpplan report --audit AUDIT.json`): the measured lower bound of every
//! audited release next to the accountant's ε of one release, with the
//! number of runs and the confidence. Plain data read from the audit's
//! JSON (its other fields are ignored).

use dpplan_diagnostics::num;
use serde::{Deserialize, Serialize};

use super::doc::{Block, Text};

/// The audit's JSON format and the versions of it this report reads.
pub const AUDIT_FORMAT: &str = "dpplan-audit";
pub const AUDIT_FORMAT_VERSIONS: [u64; 1] = [1];

/// What an audit found (`verdict` in its JSON; an audit written before
/// the verdict has only `passed`, read as passed or failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditVerdict {
    Passed,
    Failed,
    /// Nothing failed, but D and D′ could not be told apart: not a pass.
    Inconclusive,
}

impl AuditVerdict {
    fn or_passed(v: Option<AuditVerdict>, passed: bool) -> AuditVerdict {
        v.unwrap_or(if passed {
            AuditVerdict::Passed
        } else {
            AuditVerdict::Failed
        })
    }

    /// The word the report's table shows.
    fn word(self) -> &'static str {
        match self {
            AuditVerdict::Passed => "passed",
            AuditVerdict::Failed => "FAILED",
            AuditVerdict::Inconclusive => "inconclusive",
        }
    }
}

/// What the report shows of an audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditSummary {
    /// The executable plan's body hash the audit ran.
    pub plan_sha256: String,
    /// Releases drawn on D and as many on D′, per release.
    pub runs: u64,
    pub confidence: f64,
    pub queries: Vec<AuditRow>,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<AuditVerdict>,
}

/// One audited release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRow {
    pub query: String,
    /// The lower bound on ε the audit measured.
    pub measured_epsilon: f64,
    /// The accountant's ε of one release, at `delta`.
    pub claimed_epsilon: f64,
    pub delta: f64,
    pub passed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<AuditVerdict>,
}

impl AuditRow {
    pub fn verdict(&self) -> AuditVerdict {
        AuditVerdict::or_passed(self.verdict, self.passed)
    }
}

/// Why an audit's JSON is not shown.
#[derive(Debug, Clone, PartialEq)]
pub enum AuditError {
    NotAnAudit,
    Version(u64),
    Json(String),
}

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuditError::NotAnAudit => write!(f, "not an audit (`format` is not `{AUDIT_FORMAT}`)"),
            AuditError::Version(v) => write!(
                f,
                "audit format version {v} is not one this dpplan reads ({AUDIT_FORMAT_VERSIONS:?})"
            ),
            AuditError::Json(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for AuditError {}

impl AuditSummary {
    /// Reads an audit's JSON (`dpplan audit --out FILE`), refusing another
    /// format or version.
    pub fn from_json(text: &str) -> Result<AuditSummary, AuditError> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| AuditError::Json(e.to_string()))?;
        if v.get("format").and_then(|f| f.as_str()) != Some(AUDIT_FORMAT) {
            return Err(AuditError::NotAnAudit);
        }
        let version = v
            .get("format_version")
            .and_then(|f| f.as_u64())
            .unwrap_or(0);
        if !AUDIT_FORMAT_VERSIONS.contains(&version) {
            return Err(AuditError::Version(version));
        }
        let mut a: AuditSummary =
            serde_json::from_value(v).map_err(|e| AuditError::Json(e.to_string()))?;
        // an audit written before the verdict: passed or failed
        a.verdict = Some(a.verdict());
        for q in &mut a.queries {
            q.verdict = Some(q.verdict());
        }
        Ok(a)
    }

    pub fn verdict(&self) -> AuditVerdict {
        AuditVerdict::or_passed(self.verdict, self.passed)
    }
}

/// A measured lower bound, rounded *down* to 4 significant digits (never
/// shown larger than measured).
pub fn down(x: f64) -> String {
    if x <= 0.0 || !x.is_finite() {
        return num(x.max(0.0));
    }
    let mag = x.log10().floor() as i32;
    let decimals = (3 - mag).max(0);
    let f = 10f64.powi(decimals);
    format!("{:.*}", decimals as usize, (x * f).floor() / f)
}

fn percent(c: f64) -> String {
    let s = format!("{:.10}", c * 100.0);
    format!("{} %", s.trim_end_matches('0').trim_end_matches('.'))
}

/// The report's section on the audit.
pub(super) fn blocks(b: &mut Vec<Block>, a: &AuditSummary) {
    use Block::*;
    b.push(Heading(2, "Audit of the executed mechanism".into()));
    let verdict = Text::default();
    let verdict = match a.verdict() {
        AuditVerdict::Passed => {
            verdict.t("No measured bound exceeds its claim and D and D′ behaved alike.")
        }
        AuditVerdict::Failed => verdict.b("The audit failed:").t(
            " a measured bound exceeds its claim, or D and D′ behaved differently. Do not sign off this plan.",
        ),
        AuditVerdict::Inconclusive => verdict.b("The audit is inconclusive:").t(
            " nothing failed, but on some release D and D′ gave the same exact cells, so no test could tell them apart; it shows nothing about those releases (not a pass).",
        ),
    };
    let mut para = Text::code("dpplan audit").t(format!(
        " ran the real release path (the runtime's engine and samplers, no ledger) {} times on a data set D and as many on a neighbour D′ for each release, and turned the best distinguishing test's error rates into a lower bound on ε at {} confidence (Clopper–Pearson). ",
        a.runs,
        percent(a.confidence),
    ));
    para.0.extend(verdict.0);
    b.push(Para(
        para.t(" A measured bound is a ")
            .e("lower")
            .t(" bound: it can expose an implementation that leaks more than claimed, it never proves privacy, and the claim above rests on the accountant, not on the audit (docs/audit.md)."),
    ));
    b.push(Table(
        [
            "release",
            "measured ε ≥",
            "claimed ε (one release)",
            "δ",
            "result",
        ]
        .map(Text::from)
        .to_vec(),
        a.queries
            .iter()
            .map(|q| {
                vec![
                    Text::code(&q.query),
                    down(q.measured_epsilon).into(),
                    num(q.claimed_epsilon).into(),
                    num(q.delta).into(),
                    q.verdict().word().into(),
                ]
            })
            .collect(),
    ));
}
