//! The documentation of every code, as written in docs/diagnostics.md and
//! embedded at build time: `dpplan rule`, SARIF's rule help and the
//! editor's hover all show the same text, and a test keeps the document and
//! the code table ([`Code`]) in step.

use crate::Code;

/// docs/diagnostics.md, as built into the binary.
pub const DIAGNOSTICS_MD: &str = include_str!("../../../docs/diagnostics.md");

/// A code's section of docs/diagnostics.md: from its `## DPnnn` heading
/// (excluded) to the next `## ` heading, trimmed. `None` when the document
/// has no section for it (a test makes sure every code has one).
pub fn rule_doc(code: Code) -> Option<&'static str> {
    section(DIAGNOSTICS_MD, code.as_str())
}

fn section<'a>(doc: &'a str, heading: &str) -> Option<&'a str> {
    let mut offset = 0;
    let mut start = None;
    for line in doc.split_inclusive('\n') {
        let next = offset + line.len();
        if let Some(title) = line.strip_prefix("## ") {
            if start.is_some() {
                return start.map(|s| doc[s..offset].trim());
            }
            if title.trim() == heading {
                start = Some(next);
            }
        }
        offset = next;
    }
    start.map(|s| doc[s..].trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code has its section, and the section's first line names the
    /// code's kebab-case name and default severity as the code table does.
    #[test]
    fn every_code_is_documented_as_the_table_says() {
        for &code in Code::ALL {
            let doc = rule_doc(code).unwrap_or_else(|| panic!("no section for {}", code.as_str()));
            let severity = code.default_severity().as_str();
            let head = format!("**{}** ({severity}).", code.name());
            assert!(
                doc.starts_with(&head),
                "{}: the section starts {:?}, expected {head:?}",
                code.as_str(),
                doc.lines().next()
            );
            assert!(doc.contains("Fix:"), "{}: no fix", code.as_str());
            // the table row links to the section with the same name
            let row = format!(
                "| [{c}](#{l}) | `{}` |",
                code.name(),
                c = code.as_str(),
                l = code.as_str().to_lowercase()
            );
            assert!(DIAGNOSTICS_MD.contains(&row), "no table row {row}");
        }
    }

    #[test]
    fn a_section_ends_at_the_next_heading() {
        let doc = "# t\n## DP001\none\n\ntwo\n## DP002\nthree\n";
        assert_eq!(section(doc, "DP001"), Some("one\n\ntwo"));
        assert_eq!(section(doc, "DP002"), Some("three"));
        assert_eq!(section(doc, "DP003"), None);
    }
}
