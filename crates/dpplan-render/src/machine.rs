use dpplan_diagnostics::{Code, Diagnostic, LineIndex, Severity};
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use crate::{counts, FileResult};

/// The JSON schema's version (docs/json-output.md). Bumped on any
/// incompatible change.
pub const JSON_SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Position {
    line: usize,
    column: usize,
}

#[derive(Serialize)]
struct Range {
    /// Byte offsets, half-open.
    start_byte: usize,
    end_byte: usize,
    start: Position,
    end: Position,
}

fn range(text: &str, index: &LineIndex, span: dpplan_diagnostics::Span) -> Range {
    let s = index.line_col(text, span.start);
    let e = index.line_col(text, span.end);
    Range {
        start_byte: span.start.min(text.len()),
        end_byte: span.end.min(text.len()),
        start: Position {
            line: s.line,
            column: s.column,
        },
        end: Position {
            line: e.line,
            column: e.column,
        },
    }
}

fn diagnostic_json(text: &str, index: &LineIndex, d: &Diagnostic) -> Value {
    json!({
        "code": d.code.as_str(),
        "name": d.code.name(),
        "severity": d.severity.as_str(),
        "message": d.message,
        "help": d.help,
        "notes": d.notes,
        "range": range(text, index, d.primary.span),
        "label": d.primary.message,
        "related": d.secondary.iter().map(|l| json!({
            "message": l.message,
            "range": range(text, index, l.span),
        })).collect::<Vec<_>>(),
    })
}

/// One value of a file's JSON object: small ones built as a `Value`, the
/// two arrays that grow with the plan (queries, diagnostics) written one
/// element at a time, so that the document is written without ever holding
/// a `Value` tree of the whole plan (at 10⁵ queries that tree was 2 GB, and
/// building it took longer than checking the plan).
enum Field<'a> {
    Value(Value),
    Queries(Option<&'a [dpplan_check::QueryReport]>),
    Diagnostics(&'a FileResult<'a>),
}

impl Serialize for Field<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        // Keys in sorted order, as the whole document's `Value` had them:
        // each query written directly (`query_json`), each diagnostic
        // through a small `Value` of its own.
        match self {
            Field::Value(v) => v.serialize(s),
            Field::Queries(None) => s.serialize_none(),
            Field::Queries(Some(qs)) => {
                let mut seq = s.serialize_seq(Some(qs.len()))?;
                for q in *qs {
                    seq.serialize_element(&crate::query_json::SortedQuery(q))?;
                }
                seq.end()
            }
            Field::Diagnostics(f) => {
                let index = LineIndex::new(f.text);
                let ds = &f.analysis.diagnostics;
                let mut seq = s.serialize_seq(Some(ds.len()))?;
                for d in ds {
                    seq.serialize_element(&diagnostic_json(f.text, &index, d))?;
                }
                seq.end()
            }
        }
    }
}

/// A file's JSON object, keys in sorted order (as `serde_json::Map` keeps
/// them).
fn file_fields<'a>(f: &'a FileResult<'a>) -> BTreeMap<String, Field<'a>> {
    let r = f.analysis.report.as_ref();
    let total = r.and_then(|r| r.total.as_ref());
    let small = json!({
        "path": f.path,
        "plan": r.and_then(|r| r.name.clone()).or_else(|| f.analysis.ast.name.as_ref().map(|n| n.value.clone())),
        "epsilon": total.map(|t| t.epsilon),
        "delta": total.map(|t| t.delta),
        "accountant": total.map(|t| t.accountant),
        "accountant_detail": total.map(|t| t.detail.clone()),
        "accountant_requested": r.map(|r| r.accountant_requested),
        "total_missing": r.and_then(|r| r.total_missing.clone()),
        "budget": r.map(|r| json!({"epsilon": r.budget.epsilon, "delta": r.budget.delta})),
        "within_budget": r.and_then(|r| r.within_budget),
        "unit": r.map(|r| &r.unit),
        "adjacency": r.map(|r| r.adjacency),
        "population": r.and_then(|r| r.population),
        "releases": r.map(|r| r.releases),
        "accountants": r.map(|r| &r.accountants),
        "publishes": r.map(|r| &r.publishes),
    });
    let Value::Object(small) = small else {
        unreachable!("json! of an object literal is an object")
    };
    let mut fields: BTreeMap<String, Field<'a>> = small
        .into_iter()
        .map(|(k, v)| (k, Field::Value(v)))
        .collect();
    fields.insert(
        "queries".into(),
        Field::Queries(r.map(|r| r.queries.as_slice())),
    );
    fields.insert("diagnostics".into(), Field::Diagnostics(f));
    fields
}

/// The whole document: `files` is written file by file, field by field.
struct Document<'a> {
    files: &'a [FileResult<'a>],
}

impl Serialize for Document<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let c = counts(self.files);
        let files: Vec<BTreeMap<String, Field>> = self.files.iter().map(file_fields).collect();
        let mut m = s.serialize_map(Some(4))?;
        // sorted: files, schema_version, summary, tool
        m.serialize_entry("files", &files)?;
        m.serialize_entry("schema_version", &JSON_SCHEMA_VERSION)?;
        m.serialize_entry(
            "summary",
            &json!({
                "files": self.files.len(),
                "errors": c.errors,
                "warnings": c.warnings,
                "hints": c.hints,
                "over_budget": self.files.iter().filter(|f| f.analysis.report.as_ref().and_then(|r| r.within_budget) == Some(false)).count(),
            }),
        )?;
        m.serialize_entry(
            "tool",
            &json!({"name": "dpplan", "version": env!("CARGO_PKG_VERSION")}),
        )?;
        m.end()
    }
}

/// The whole JSON document as a value (the same document as [`json()`]
/// writes; it holds the whole tree in memory).
pub fn json_value(files: &[FileResult]) -> Value {
    serde_json::to_value(Document { files }).unwrap_or_default()
}

/// The JSON output, pretty-printed, ending with a newline; written field by
/// field, without a `Value` of the whole document.
pub fn json(files: &[FileResult]) -> String {
    let mut out = Vec::new();
    // Writing to a `Vec` cannot fail, and serde_json writes UTF-8.
    let _ = write_json(&mut out, files);
    String::from_utf8(out).unwrap_or_default()
}

/// [`json()`] written to `w` as it is produced (the CLI streams it to
/// standard output, so that the document is never held in memory whole).
pub fn write_json<W: std::io::Write>(mut w: W, files: &[FileResult]) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut w, &Document { files })?;
    w.write_all(b"\n")
}

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Hint => "note",
    }
}

fn sarif_region(text: &str, index: &LineIndex, span: dpplan_diagnostics::Span) -> Value {
    let r = range(text, index, span);
    json!({
        "startLine": r.start.line,
        "startColumn": r.start.column,
        "endLine": r.end.line,
        "endColumn": r.end.column,
    })
}

/// SARIF 2.1.0 with one run, every diagnostic code as a rule.
pub fn sarif(files: &[FileResult]) -> String {
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.as_str(),
                "name": c.name(),
                "shortDescription": {"text": c.title()},
                "fullDescription": {"text": format!("{} (see {}).", c.title(), c.doc_path())},
                "defaultConfiguration": {"level": sarif_level(c.default_severity())},
            })
        })
        .collect();
    let mut results = Vec::new();
    for f in files {
        let index = LineIndex::new(f.text);
        let uri = f.path.trim_start_matches("./").replace('\\', "/");
        for d in &f.analysis.diagnostics {
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
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri},
                        "region": sarif_region(f.text, &index, d.primary.span),
                    }
                }],
            });
            if !d.secondary.is_empty() {
                result["relatedLocations"] = Value::Array(
                    d.secondary
                        .iter()
                        .enumerate()
                        .map(|(i, l)| {
                            json!({
                                "id": i,
                                "message": {"text": if l.message.is_empty() { "related".to_string() } else { l.message.clone() }},
                                "physicalLocation": {
                                    "artifactLocation": {"uri": uri},
                                    "region": sarif_region(f.text, &index, l.span),
                                }
                            })
                        })
                        .collect(),
                );
            }
            results.push(result);
        }
    }
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
        }],
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub Actions workflow commands, one per diagnostic.
pub fn github(files: &[FileResult]) -> String {
    let mut out = String::new();
    for f in files {
        let index = LineIndex::new(f.text);
        for d in &f.analysis.diagnostics {
            let r = range(f.text, &index, d.primary.span);
            let command = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Hint => "notice",
            };
            let mut message = d.message.clone();
            if let Some(h) = &d.help {
                message.push_str(&format!("\nhelp: {h}"));
            }
            out.push_str(&format!(
                "::{command} file={},line={},col={},endLine={},endColumn={},title={}::{}\n",
                escape_property(f.path),
                r.start.line,
                r.start.column,
                r.end.line,
                r.end.column,
                escape_property(&format!("{} {}", d.code, d.code.name())),
                escape_data(&message)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_escapes() {
        assert_eq!(escape_data("a%b\nc"), "a%25b%0Ac");
        assert_eq!(escape_property("x:y,z"), "x%3Ay%2Cz");
    }
}
