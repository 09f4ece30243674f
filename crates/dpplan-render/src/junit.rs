//! JUnit XML, for CI systems that show test reports (GitLab, Jenkins,
//! Azure Pipelines, CircleCI): one `<testsuite>` per plan; in it one test
//! case for the plan's budget (fails when the plan is over budget or its
//! total cannot be claimed) and one per diagnostic, named by its code and
//! line. Errors fail; warnings fail when they are denied (`--deny
//! warnings`), as they fail `dpplan check`; other diagnostics pass and are
//! kept in `<system-out>`.

use dpplan_diagnostics::{num, LineIndex, Severity};

use crate::FileResult;

/// XML text and attribute escaping; characters XML 1.0 cannot carry at all
/// (controls other than tab and line breaks) become U+FFFD.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

struct Case {
    name: String,
    failure: Option<(String, String, String)>,
    out: Option<String>,
}

fn cases(f: &FileResult, deny_warnings: bool) -> Vec<Case> {
    let index = LineIndex::new(f.text);
    let mut cases = Vec::new();
    let report = f.analysis.report.as_ref();
    let budget = match report.and_then(|r| r.total.as_ref().map(|t| (r, t))) {
        Some((r, t)) => {
            let claim = format!(
                "ε = {}, δ = {} ({}); budget ε = {}, δ = {}",
                num(t.epsilon),
                num(t.delta),
                t.accountant_name,
                num(r.budget.epsilon),
                num(r.budget.delta)
            );
            if r.within_budget == Some(false) {
                Case {
                    name: "budget".into(),
                    failure: Some(("DP011".into(), "over budget".into(), claim)),
                    out: None,
                }
            } else {
                Case {
                    name: "budget".into(),
                    failure: None,
                    out: Some(claim),
                }
            }
        }
        None => Case {
            name: "budget".into(),
            failure: Some((
                "unclaimed".into(),
                "no total is claimed".into(),
                report
                    .and_then(|r| r.total_missing.clone())
                    .unwrap_or_else(|| "the plan has no privacy block".into()),
            )),
            out: None,
        },
    };
    cases.push(budget);
    for d in &f.analysis.diagnostics {
        let at = index.line_col(f.text, d.primary.span.start);
        let name = format!("{} {} (line {})", d.code.as_str(), d.code.name(), at.line);
        let mut body = format!("{}:{}:{}: {}", f.path, at.line, at.column, d.message);
        if let Some(h) = &d.help {
            body.push_str(&format!("\nhelp: {h}"));
        }
        let fails =
            d.severity == Severity::Error || (deny_warnings && d.severity == Severity::Warning);
        cases.push(if fails {
            Case {
                name,
                failure: Some((d.code.as_str().into(), d.message.clone(), body)),
                out: None,
            }
        } else {
            Case {
                name,
                failure: None,
                out: Some(format!("{}: {body}", d.severity.as_str())),
            }
        });
    }
    cases
}

/// The JUnit XML report of a check.
pub fn junit(files: &[FileResult], deny_warnings: bool) -> String {
    junit_with(files, deny_warnings, &[])
}

/// [`junit`] with each suite's policy chain as a `dpplan.policy` property
/// (and its hash as `dpplan.policy.sha256`).
pub fn junit_with(
    files: &[FileResult],
    deny_warnings: bool,
    policies: &[crate::AppliedPolicy],
) -> String {
    let mut suites = String::new();
    let (mut total, mut failed) = (0, 0);
    for f in files {
        let cases = cases(f, deny_warnings);
        let failures = cases.iter().filter(|c| c.failure.is_some()).count();
        total += cases.len();
        failed += failures;
        suites.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">\n",
            esc(f.path),
            cases.len()
        ));
        if let Some(p) = crate::policy_of(policies, f.path) {
            suites.push_str(&format!(
                "    <properties>\n      <property name=\"dpplan.policy\" value=\"{}\"/>\n      <property name=\"dpplan.policy.sha256\" value=\"{}\"/>\n    </properties>\n",
                esc(&p.chain()),
                esc(p.sha256)
            ));
        }
        for c in &cases {
            suites.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\"",
                esc(f.path),
                esc(&c.name)
            ));
            if c.failure.is_none() && c.out.is_none() {
                suites.push_str("/>\n");
                continue;
            }
            suites.push_str(">\n");
            if let Some((kind, message, body)) = &c.failure {
                suites.push_str(&format!(
                    "      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                    esc(kind),
                    esc(message),
                    esc(body)
                ));
            }
            if let Some(out) = &c.out {
                suites.push_str(&format!("      <system-out>{}</system-out>\n", esc(out)));
            }
            suites.push_str("    </testcase>\n");
        }
        suites.push_str("  </testsuite>\n");
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"dpplan check\" tests=\"{total}\" failures=\"{failed}\" errors=\"0\">\n{suites}</testsuites>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::esc;

    #[test]
    fn escapes_markup_and_characters_xml_cannot_carry() {
        assert_eq!(esc("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
        assert_eq!(esc("x\u{1}y\tz\n"), "x\u{FFFD}y\tz\n");
    }
}
