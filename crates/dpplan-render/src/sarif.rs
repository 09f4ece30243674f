//! SARIF 2.1.0, as GitHub code scanning accepts it: one run, every
//! diagnostic code as a rule, each diagnostic (and each one suppressed in
//! the source) as a result, each plan's claim in the run's properties.

use dpplan_diagnostics::{Code, Diagnostic, Label, LineIndex, Severity, Span};
use serde_json::{json, Value};

use crate::FileResult;

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Hint => "note",
    }
}

/// What a SARIF document may add beyond the diagnostics.
#[derive(Debug, Clone, Default)]
pub struct SarifOptions<'a> {
    /// Where docs/diagnostics.md is published (e.g. the repository's
    /// `…/blob/main/docs/diagnostics.md`): each rule's `helpUri` is this
    /// plus `#dp009`. `None`: no `helpUri` (never a guessed host); the rule's
    /// help carries the documentation itself.
    pub docs_url: Option<&'a str>,
    /// The policy chains applied (`policies_json`): the run's `policies`
    /// property.
    pub policies: Option<&'a Value>,
}

/// SARIF 2.1.0 with one run, every diagnostic code as a rule.
pub fn sarif(files: &[FileResult]) -> String {
    sarif_with(files, &SarifOptions::default())
}

/// One rule per code: its title, its documentation (docs/diagnostics.md,
/// embedded) as `help.text` and `help.markdown`, and `helpUri` when a
/// documentation base is given.
fn sarif_rules(opts: &SarifOptions) -> Vec<Value> {
    Code::ALL
        .iter()
        .map(|c| {
            let doc = dpplan_diagnostics::rule_doc(*c).unwrap_or_default();
            let mut rule = json!({
                "id": c.as_str(),
                "name": c.name(),
                "shortDescription": {"text": c.title()},
                "fullDescription": {"text": format!("{} (see {}).", c.title(), c.doc_path())},
                "help": {
                    "text": format!("{}: {}\n\n{}", c.as_str(), c.title(), plain_text(doc)),
                    "markdown": format!("**{}**: {}\n\n{doc}", c.as_str(), c.title()),
                },
                "defaultConfiguration": {"level": sarif_level(c.default_severity())},
            });
            if let Some(base) = opts.docs_url {
                rule["helpUri"] = format!(
                    "{}#{}",
                    base.trim_end_matches('#'),
                    c.as_str().to_ascii_lowercase()
                )
                .into();
            }
            rule
        })
        .collect()
}

/// Markdown as plain text: emphasis and code marks dropped, fences removed.
fn plain_text(md: &str) -> String {
    md.lines()
        .filter(|l| !l.starts_with("```"))
        .map(|l| l.replace("**", "").replace('`', ""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A fingerprint of a diagnostic that survives edits elsewhere in the file
/// (lines added above it move its region, not its fingerprint): SHA-256 of
/// its code, the text its primary span covers (whitespace collapsed) and
/// how many earlier diagnostics of the file share both.
fn fingerprints<'d>(text: &str, diagnostics: impl Iterator<Item = &'d Diagnostic>) -> Vec<String> {
    use sha2::{Digest, Sha256};
    let mut seen: std::collections::HashMap<(Code, String), usize> = Default::default();
    diagnostics
        .map(|d| {
            let span = d.primary.span;
            let covered = text
                .get(span.start.min(text.len())..span.end.min(text.len()))
                .unwrap_or("");
            let snippet: String = covered.split_whitespace().collect::<Vec<_>>().join(" ");
            let ordinal = seen.entry((d.code, snippet.clone())).or_insert(0);
            let mut h = Sha256::new();
            h.update(d.code.as_str().as_bytes());
            h.update([0]);
            h.update(snippet.as_bytes());
            h.update([0]);
            h.update(ordinal.to_string().as_bytes());
            *ordinal += 1;
            h.finalize().iter().map(|b| format!("{b:02x}")).collect()
        })
        .collect()
}

/// SARIF 2.1.0 with one run, every diagnostic code as a rule, each plan's
/// claimed (ε, δ) in the run's properties.
pub fn sarif_with(files: &[FileResult], opts: &SarifOptions) -> String {
    let rules = sarif_rules(opts);
    let results: Vec<Value> = files.iter().flat_map(file_results).collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "dpplan",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": match opts.policies {
                Some(p) => json!({"plans": plan_claims(files), "policies": p}),
                None => json!({"plans": plan_claims(files)}),
            },
        }],
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

/// One file's results: its diagnostics, then those suppressed in its text
/// (each with its reason), fingerprinted together in that order.
fn file_results(f: &FileResult) -> Vec<Value> {
    let artifact = Artifact {
        text: f.text,
        index: LineIndex::new(f.text),
        uri: artifact_uri(f.path),
    };
    let all: Vec<(&Diagnostic, Option<&str>)> = f
        .analysis
        .diagnostics
        .iter()
        .map(|d| (d, None))
        .chain(
            f.analysis
                .suppressed
                .iter()
                .map(|s| (&s.diagnostic, Some(s.reason.as_str()))),
        )
        .collect();
    let prints = fingerprints(f.text, all.iter().map(|&(d, _)| d));
    all.iter()
        .zip(prints)
        .map(|(&(d, reason), print)| artifact.result(d, print, reason))
        .collect()
}

/// A file's path as a SARIF artifact's URI: relative, forward slashes.
fn artifact_uri(path: &str) -> String {
    path.trim_start_matches("./").replace('\\', "/")
}

/// The file a result points into.
struct Artifact<'a> {
    text: &'a str,
    index: LineIndex,
    uri: String,
}

impl Artifact<'_> {
    /// One diagnostic as a result; `reason` when it is suppressed in the
    /// source.
    fn result(&self, d: &Diagnostic, print: String, reason: Option<&str>) -> Value {
        let rule_index = Code::ALL.iter().position(|c| *c == d.code).unwrap_or(0);
        let mut text = d.message.clone();
        if let Some(h) = &d.help {
            text.push_str(&format!("\nhelp: {h}"));
        }
        let mut result = json!({
            "ruleId": d.code.as_str(),
            "ruleIndex": rule_index,
            "level": sarif_level(d.severity),
            "message": {"text": text},
            "partialFingerprints": {"dpplan/v1": print},
            "locations": [{
                "physicalLocation": self.location(d.primary.span),
            }],
        });
        if let Some(reason) = reason {
            result["suppressions"] = json!([{"kind": "inSource", "justification": reason}]);
        }
        if !d.secondary.is_empty() {
            result["relatedLocations"] = d
                .secondary
                .iter()
                .enumerate()
                .map(|(i, l)| self.related(i, l))
                .collect();
        }
        result
    }

    /// A secondary label as the `i`th related location.
    fn related(&self, i: usize, l: &Label) -> Value {
        let message = if l.message.is_empty() {
            "related".to_string()
        } else {
            l.message.clone()
        };
        json!({
            "id": i,
            "message": {"text": message},
            "physicalLocation": self.location(l.span),
        })
    }

    /// A span as a physical location: the file and the span's region.
    fn location(&self, span: Span) -> Value {
        json!({
            "artifactLocation": {"uri": self.uri},
            "region": self.region(span),
        })
    }

    /// A span's start and end, lines and columns from 1.
    fn region(&self, span: Span) -> Value {
        let s = self.index.line_col(self.text, span.start);
        let e = self.index.line_col(self.text, span.end);
        json!({
            "startLine": s.line,
            "startColumn": s.column,
            "endLine": e.line,
            "endColumn": e.column,
        })
    }
}

/// Each plan's claim, for the run's properties: the composed (ε, δ), the
/// accountant that gave it and the budget (null where nothing is claimed).
fn plan_claims(files: &[FileResult]) -> Vec<Value> {
    files
        .iter()
        .map(|f| {
            let r = f.analysis.report.as_ref();
            let total = r.and_then(|r| r.total.as_ref());
            json!({
                "path": artifact_uri(f.path),
                "epsilon": total.map(|t| t.epsilon),
                "delta": total.map(|t| t.delta),
                "accountant": total.map(|t| t.accountant.name()),
                "budget": r.map(|r| json!({"epsilon": r.budget.epsilon, "delta": r.budget.delta})),
                "within_budget": r.and_then(|r| r.within_budget),
            })
        })
        .collect()
}
