//! The report as GitHub-flavoured Markdown (a pull-request comment):
//! headings, lists and tables; figures are omitted, their numbers are in
//! the tables.

use super::doc::{blocks, Block};
use super::Review;

/// A table cell: no line breaks, pipes escaped.
fn cell(s: &str) -> String {
    s.replace('\n', " ").replace('|', "\\|")
}

pub fn markdown(review: &Review) -> String {
    let mut out = String::new();
    for b in blocks(review, false) {
        match b {
            Block::Heading(level, text) => {
                out.push_str(&format!("{} {text}\n\n", "#".repeat(level as usize)))
            }
            Block::Para(text) => out.push_str(&format!("{text}\n\n")),
            Block::List(items) => {
                if items.is_empty() {
                    continue;
                }
                for i in items {
                    out.push_str(&format!("- {i}\n"));
                }
                out.push('\n');
            }
            Block::Table(header, rows) => {
                out.push_str(&format!(
                    "| {} |\n",
                    header
                        .iter()
                        .map(|h| cell(h))
                        .collect::<Vec<_>>()
                        .join(" | ")
                ));
                out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
                for r in rows {
                    out.push_str(&format!(
                        "| {} |\n",
                        r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
                    ));
                }
                out.push('\n');
            }
            Block::Figure(_) => {}
        }
    }
    out.push_str(&format!(
        "<sub>dpplan report, schema {}; figures in the HTML report (`dpplan report --format html`).</sub>\n",
        super::SCHEMA_VERSION
    ));
    out
}
