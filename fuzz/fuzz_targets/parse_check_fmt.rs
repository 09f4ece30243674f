//! Any text through the whole front end, as `dpplan check` and `dpplan fmt`
//! take it.
//!
//! * `dpplan_syntax::parse` and `dpplan_check::analyze` never panic
//!   (ARCHITECTURE.md, invariant 1), and rendering their diagnostics as the
//!   CLI does (terminal and JSON) never panics either (every span is inside
//!   the text).
//! * No claim without a proof (invariant 3): a plan with an error has no
//!   total (except DP011, over budget, which is computed from the total and
//!   reported with it).
//! * The formatter's own contract (crates/dpplan-fmt, and its test
//!   `idempotent_and_meaning_preserving_on_every_plan`): it refuses with
//!   `Syntax` only a text with syntax errors; it never returns
//!   `MeaningChanged` (its docs call that a formatter bug); when it accepts a
//!   text, the result parses without errors to the same AST spans aside
//!   (`dpplan_fmt::meaning`), keeps every comment, and formatting it again
//!   changes nothing.
#![no_main]

use dpplan_fmt::{format, meaning, FormatError};
use dpplan_syntax::lexer;
use libfuzzer_sys::fuzz_target;

/// The text of every comment. The formatter writes every line break in the
/// file's own line ending (docs: "the file's line endings (LF or CRLF)
/// kept"), those inside a block comment too, so a comment is compared with
/// its line breaks as LF: a lone LF in a CRLF file's block comment becoming
/// CRLF is that normalisation, not a lost comment.
fn comments(s: &str) -> Vec<String> {
    lexer::tokenize(s)
        .iter()
        .filter(|t| t.is_comment())
        .map(|t| t.text(s).trim_end().replace("\r\n", "\n"))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    // The CLI refuses a file that is not UTF-8; the editor only sends text.
    // Lossy decoding keeps every mutation useful.
    let text = String::from_utf8_lossy(data);
    let text: &str = &text;

    let parsed = dpplan_syntax::parse(text);
    let analysis = dpplan_check::analyze(text);
    // The errors computed *from* the total report the composed ε with them:
    // DP011 (over budget) and, on a plan over its budget, DP019's conflict
    // between accuracy requirements and the budget (it names the smallest
    // budget that meets them). Any other error means no claim.
    let over_budget = analysis
        .report
        .as_ref()
        .is_some_and(|r| r.within_budget == Some(false));
    let blocking: Vec<&str> = analysis
        .diagnostics
        .iter()
        .filter(|d| d.is_error() && d.code.as_str() != "DP011")
        .filter(|d| !(over_budget && d.code.as_str() == "DP019"))
        .map(|d| d.code.as_str())
        .collect();
    if !blocking.is_empty() {
        if let Some(report) = &analysis.report {
            assert!(
                report.total.is_none(),
                "a plan with errors {blocking:?} claims a total: {:?}",
                report.total
            );
        }
    }
    let file = dpplan_render::FileResult {
        path: "fuzz.dpplan",
        text,
        analysis: &analysis,
    };
    let _ = dpplan_render::human(&file, false);
    let _ = dpplan_render::json(std::slice::from_ref(&file));

    match format(text) {
        Ok(once) => {
            assert!(
                parsed.diagnostics.is_empty(),
                "formatted a text with syntax errors"
            );
            let after = dpplan_syntax::parse(&once);
            assert!(
                after.diagnostics.is_empty(),
                "the formatted text has syntax errors: {:?}\n--- formatted:\n{once}",
                after.diagnostics
            );
            assert_eq!(
                meaning(&parsed.plan),
                meaning(&after.plan),
                "formatting changed the AST\n--- formatted:\n{once}"
            );
            assert_eq!(comments(text), comments(&once), "formatting lost a comment");
            match format(&once) {
                Ok(twice) => assert_eq!(once, twice, "formatting is not idempotent"),
                Err(e) => panic!("the formatted text is refused: {e}\n--- formatted:\n{once}"),
            }
        }
        Err(FormatError::Syntax(msgs)) => {
            assert!(
                !parsed.diagnostics.is_empty(),
                "fmt refused a text without syntax errors: {msgs:?}"
            );
        }
        Err(FormatError::MeaningChanged) => {
            panic!("fmt: formatting would change the plan's meaning (a formatter bug)")
        }
    }
});
