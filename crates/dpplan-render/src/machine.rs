use dpplan_diagnostics::{num, Diagnostic, LineIndex, Severity};
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use crate::{counts, FileResult};

/// The JSON schema's version (docs/json-output.md). Bumped on any
/// incompatible change (2: a query's keys in the checked plan's field order,
/// its own `Serialize`, where 1 had them sorted).
pub const JSON_SCHEMA_VERSION: u32 = 2;

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
    /// `spliced`: a placeholder is written instead, and the array is
    /// rendered on two threads by the writer ([`crate::query_array`]).
    Queries {
        queries: Option<&'a [dpplan_check::QueryReport]>,
        spliced: bool,
    },
    Diagnostics(&'a FileResult<'a>),
}

impl Serialize for Field<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        // Each query is the checked plan's `QueryReport` serialised by its
        // own `Serialize` (its keys in field order); the file's own fields
        // and each diagnostic go through a small `Value` (sorted keys).
        match self {
            Field::Value(v) => v.serialize(s),
            Field::Queries { queries: None, .. } => s.serialize_none(),
            Field::Queries { spliced: true, .. } => crate::query_array::placeholder(s),
            Field::Queries {
                queries: Some(qs), ..
            } => {
                let mut seq = s.serialize_seq(Some(qs.len()))?;
                for q in *qs {
                    seq.serialize_element(q)?;
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
fn file_fields<'a>(f: &'a FileResult<'a>, splice: bool) -> BTreeMap<String, Field<'a>> {
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
    let queries = r.map(|r| r.queries.as_slice());
    fields.insert(
        "queries".into(),
        Field::Queries {
            queries,
            spliced: splice && spliced(queries),
        },
    );
    fields.insert("diagnostics".into(), Field::Diagnostics(f));
    if let Some(risk) = r.and_then(|r| r.attack_risk.as_ref()) {
        fields.insert(
            "attack_risk".into(),
            Field::Value(serde_json::to_value(risk).unwrap_or_default()),
        );
    }
    if !f.analysis.suppressed.is_empty() {
        let index = LineIndex::new(f.text);
        let suppressed: Vec<Value> = f
            .analysis
            .suppressed
            .iter()
            .map(|s| {
                let mut d = diagnostic_json(f.text, &index, &s.diagnostic);
                d["reason"] = s.reason.clone().into();
                d["suppressed_by"] =
                    serde_json::to_value(range(f.text, &index, s.comment)).unwrap_or_default();
                d
            })
            .collect();
        fields.insert("suppressed".into(), Field::Value(Value::Array(suppressed)));
    }
    fields
}

/// The whole document: `files` is written file by file, field by field.
struct Document<'a> {
    files: &'a [FileResult<'a>],
    /// Large queries arrays as placeholders, for a [`Splicer`](crate::query_array::Splicer).
    splice: bool,
    /// `shared_budgets` (a policy's budgets shared across plans), when any.
    shared: Option<&'a Value>,
    /// `policies`: the policy chains applied, when a policy was looked for.
    policies: Option<&'a Value>,
}

impl Serialize for Document<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let c = counts(self.files);
        let files: Vec<BTreeMap<String, Field>> = self
            .files
            .iter()
            .map(|f| file_fields(f, self.splice))
            .collect();
        let mut m = s.serialize_map(Some(
            4 + usize::from(self.shared.is_some()) + usize::from(self.policies.is_some()),
        ))?;
        // sorted: files, policies, schema_version, shared_budgets, summary, tool
        m.serialize_entry("files", &files)?;
        if let Some(policies) = self.policies {
            m.serialize_entry("policies", policies)?;
        }
        m.serialize_entry("schema_version", &JSON_SCHEMA_VERSION)?;
        if let Some(shared) = self.shared {
            m.serialize_entry("shared_budgets", shared)?;
        }
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
    serde_json::to_value(Document {
        files,
        splice: false,
        shared: None,
        policies: None,
    })
    .unwrap_or_default()
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
pub fn write_json<W: std::io::Write>(w: W, files: &[FileResult]) -> std::io::Result<()> {
    write_json_with(w, files, None)
}

/// [`write_json`] with the `shared_budgets` field (docs/json-output.md)
/// when a policy gives one.
pub fn write_json_with<W: std::io::Write>(
    w: W,
    files: &[FileResult],
    shared: Option<&Value>,
) -> std::io::Result<()> {
    write_document(w, files, shared, None, true)
}

/// [`write_json_with`] with the `policies` field: which policy chain
/// governed which plans (docs/json-output.md).
pub fn write_json_with_policies<W: std::io::Write>(
    w: W,
    files: &[FileResult],
    shared: Option<&Value>,
    policies: Option<&Value>,
) -> std::io::Result<()> {
    write_document(w, files, shared, policies, true)
}

/// `dpplan check --format json`'s document for a check under policies:
/// the plans' results, the shared budgets some plan reads and the chains
/// that applied (the binary's and the Python module's one call).
pub fn write_check_json<W: std::io::Write>(
    w: W,
    files: &[FileResult],
    shared: &[crate::SharedBudget],
    chains: &[crate::AppliedPolicy],
) -> std::io::Result<()> {
    let shared_json = (!shared.is_empty()).then(|| crate::shared_budgets_json(shared));
    let policies = crate::policies_json(chains);
    write_document(w, files, shared_json.as_ref(), Some(&policies), true)
}

/// The queries arrays [`write_json_with`] splices in: those of
/// [`PARALLEL_QUERIES`](crate::query_array::PARALLEL_QUERIES) queries or more.
fn spliced(queries: Option<&[dpplan_check::QueryReport]>) -> bool {
    queries.is_some_and(|q| q.len() >= crate::query_array::PARALLEL_QUERIES)
}

/// The document; with `splice`, each large queries array rendered on two
/// threads (the same bytes, `query_array`'s tests check both ways).
pub(crate) fn write_document<W: std::io::Write>(
    w: W,
    files: &[FileResult],
    shared: Option<&Value>,
    policies: Option<&Value>,
    splice: bool,
) -> std::io::Result<()> {
    use std::io::Write as _;
    let arrays = files
        .iter()
        .filter_map(|f| f.analysis.report.as_ref().map(|r| r.queries.as_slice()))
        .filter(|q| splice && spliced(Some(q)));
    // The splicer is also the buffer: the pretty printer writes a few bytes
    // at a time (indentation, keys, punctuation), each a copy into a buffer
    // of a known type, not a call through whatever `W` is (the CLI's is a
    // `dyn Write`).
    let mut w = crate::query_array::Splicer::new(w, arrays);
    serde_json::to_writer_pretty(
        &mut w,
        &Document {
            files,
            splice,
            shared,
            policies,
        },
    )?;
    w.write_all(b"\n")?;
    w.finish().map(drop)
}

pub(crate) fn escape_data(s: &str) -> String {
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

/// Queries shown per plan in the job summary; the rest are counted.
const SUMMARY_QUERIES: usize = 200;

/// A Markdown cell: pipes escaped, line breaks flattened.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The GitHub job summary (`GITHUB_STEP_SUMMARY`) of a check: one row per
/// plan (claimed ε and δ, accountant, budget, verdict, counts), then each
/// plan's query table in a collapsed section (at most 200
/// rows a plan, the rest counted), so the summary stays proportional to
/// what a reviewer reads.
pub fn github_summary(files: &[FileResult]) -> String {
    github_summary_with(files, &[], &[])
}

/// [`github_summary`] with the policy chains that applied and the budgets
/// shared across plans (each with its total, verdict and every plan's
/// share, a plan left out named with its reason).
pub fn github_summary_with(
    files: &[FileResult],
    shared: &[crate::SharedBudget],
    policies: &[crate::AppliedPolicy],
) -> String {
    let mut out = String::from("## dpplan check\n\n");
    for p in policies {
        out.push_str(&format!(
            "Policy: `{}` (sha256 `{}`) for {} plan(s)\n\n",
            md_cell(&p.chain()),
            p.sha256,
            p.plans.len()
        ));
    }
    out.push_str("| plan | ε | δ | accountant | budget | verdict | errors | warnings | hints |\n");
    out.push_str("|---|---|---|---|---|---|---|---|---|\n");
    for f in files {
        let c = counts(std::slice::from_ref(f));
        let r = f.analysis.report.as_ref();
        let total = r.and_then(|r| r.total.as_ref());
        let cell = |v: Option<String>| v.unwrap_or_else(|| "—".into());
        let verdict = match (c.errors, r.and_then(|r| r.within_budget)) {
            (e, _) if e > 0 => "❌ errors",
            (_, Some(false)) => "❌ over budget",
            (_, Some(true)) => "✅ within budget",
            _ => "—",
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {verdict} | {} | {} | {} |\n",
            md_cell(f.path),
            cell(total.map(|t| num(t.epsilon))),
            cell(total.map(|t| num(t.delta))),
            cell(total.map(|t| md_cell(&t.accountant_name))),
            cell(r.map(|r| format!("ε = {}, δ = {}", num(r.budget.epsilon), num(r.budget.delta)))),
            c.errors,
            c.warnings,
            c.hints,
        ));
    }
    for f in files {
        let Some(r) = f.analysis.report.as_ref() else {
            continue;
        };
        let (header, rows) = crate::table::summary_rows(r);
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n<details><summary><code>{}</code>: {} queries, {} releases</summary>\n\n",
            md_cell(f.path).replace('<', "&lt;"),
            r.queries.len(),
            r.releases
        ));
        out.push_str(&format!("| {} |\n", header.join(" | ")));
        out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
        for row in rows.iter().take(SUMMARY_QUERIES) {
            let cells: Vec<String> = row.iter().map(|c| md_cell(c)).collect();
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        if rows.len() > SUMMARY_QUERIES {
            out.push_str(&format!(
                "\n… and {} more rows (`dpplan check {}` shows them all)\n",
                rows.len() - SUMMARY_QUERIES,
                md_cell(f.path)
            ));
        }
        out.push_str("\n</details>\n");
    }
    if !shared.is_empty() {
        out.push_str("\n### Budgets shared across plans\n\n");
        out.push_str("| source | policy | budget | ε composed | verdict | plans (each alone) |\n");
        out.push_str("|---|---|---|---|---|---|\n");
        for sh in shared {
            let r = sh.result;
            let shares: Vec<String> = r
                .shares
                .iter()
                .map(|x| match &x.excluded {
                    Some(e) => format!("`{}` left out: {}", md_cell(&x.path), md_cell(&e.reason)),
                    None => format!(
                        "`{}` ε = {}",
                        md_cell(&x.path),
                        x.epsilon.map_or("—".into(), num)
                    ),
                })
                .collect();
            out.push_str(&format!(
                "| `{}` | `{}` | ε = {}, δ = {} | {} | {} | {} |\n",
                md_cell(&r.budget.source),
                md_cell(&sh.policy.display().to_string()),
                num(r.budget.epsilon),
                num(r.budget.delta),
                r.total
                    .map_or("—".into(), |(e, a)| format!("{} ({a})", num(e))),
                md_cell(&crate::shared::verdict(sh)),
                shares.join("<br>")
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
