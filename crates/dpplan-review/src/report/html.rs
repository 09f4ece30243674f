//! The report as one self-contained HTML file: inline CSS and SVG, no
//! script, no network, readable without JavaScript, printable.

use super::doc::{blocks, Block};
use super::figures::escape;
use super::Review;

// Each block's text is typed spans (`super::text`), rendered to elements with
// every span escaped.

const CSS: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45;color:#111}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.92rem}th,td{border:1px solid #bbb;padding:.25rem .5rem;text-align:left;vertical-align:top}th{background:#eee}
code{background:#f2f2f2;padding:0 .2rem;border-radius:3px}figure{margin:1rem 0}figure svg{max-width:100%;height:auto}
@media print{body{margin:0;max-width:none}h2{break-before:auto}figure,table{break-inside:avoid}}";

pub fn html(review: &Review) -> String {
    let title = format!(
        "Privacy review: {}",
        review.plan.as_deref().unwrap_or("(unnamed plan)")
    );
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n",
        escape(&title)
    );
    for b in blocks(review, true) {
        match b {
            Block::Heading(level, text) => {
                out.push_str(&format!("<h{level}>{}</h{level}>\n", text.html()))
            }
            Block::Para(text) => out.push_str(&format!("<p>{}</p>\n", text.html())),
            Block::List(items) => {
                if items.is_empty() {
                    continue;
                }
                out.push_str("<ul>\n");
                for i in items {
                    out.push_str(&format!("<li>{}</li>\n", i.html()));
                }
                out.push_str("</ul>\n");
            }
            Block::Table(header, rows) => {
                out.push_str("<table>\n<thead><tr>");
                for h in header {
                    out.push_str(&format!("<th>{}</th>", h.html()));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for r in rows {
                    out.push_str("<tr>");
                    for c in r {
                        out.push_str(&format!("<td>{}</td>", c.html()));
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody>\n</table>\n");
            }
            Block::Figure(svg) => out.push_str(&format!("<figure>\n{svg}\n</figure>\n")),
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}
