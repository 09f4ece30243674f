//! The report as GitHub-flavoured Markdown (a pull-request comment):
//! headings, lists and tables; figures are omitted, their numbers are in
//! the tables.

use super::doc::{blocks, Block};
use super::text::Text;
use super::Review;

/// A table cell: no line breaks, pipes escaped.
fn cell(t: &Text) -> String {
    t.markdown().replace('\n', " ").replace('|', "\\|")
}

pub fn markdown(review: &Review) -> String {
    let mut out = String::new();
    for b in blocks(review, false) {
        match b {
            Block::Heading(level, text) => out.push_str(&format!(
                "{} {}\n\n",
                "#".repeat(level as usize),
                text.markdown()
            )),
            Block::Para(text) => out.push_str(&format!("{}\n\n", text.markdown())),
            Block::List(items) => {
                if items.is_empty() {
                    continue;
                }
                for i in items {
                    out.push_str(&format!("- {}\n", i.markdown()));
                }
                out.push('\n');
            }
            Block::Table(header, rows) => {
                out.push_str(&format!(
                    "| {} |\n",
                    header.iter().map(cell).collect::<Vec<_>>().join(" | ")
                ));
                out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
                for r in rows {
                    out.push_str(&format!(
                        "| {} |\n",
                        r.iter().map(cell).collect::<Vec<_>>().join(" | ")
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
