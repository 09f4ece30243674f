//! Typos through the server: one error for a typo inside a dataset (no
//! cascade), "did you mean" as a quick fix, and a hover that says what is
//! unknown instead of a number.

use crate::common::*;
use serde_json::json;

const URI: &str = "file:///typos.dpplan";

#[test]
fn a_typo_is_one_error_with_a_quick_fix_and_an_honest_hover() {
    let good = example("retail-mixed");
    let text = good.replacen("rows_per_unit 10", "rows_per_unt 10", 1);
    let mut c = Client::utf16();
    let diags = c.open(URI, &text);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    let d = diags[0].clone();
    assert_eq!(d["code"], "DP000");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `rows_per_unit`?"),
        "{d:#?}"
    );

    // The hover on a query reading the broken dataset claims no number.
    let offset = text.find("query live_orders").unwrap() + "query ".len() + 2;
    let (line, character) = utf16_pos(&text, offset);
    let hover = c.ok("textDocument/hover", at(URI, line, character));
    let md = hover["contents"]["value"].as_str().unwrap();
    assert!(md.contains("**Sensitivity:** unknown"), "{md}");
    assert!(md.contains("DP000"), "{md}");
    assert!(!md.contains("costs nothing"), "{md}");

    // The quick fix restores the plan.
    let actions = c.ok(
        "textDocument/codeAction",
        json!({ "textDocument": { "uri": URI }, "range": d["range"], "context": { "diagnostics": [d] } }),
    );
    let fix = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Change to `rows_per_unit`")
        .unwrap_or_else(|| panic!("{actions:#?}"));
    assert_eq!(fix["kind"], "quickfix");
    assert_eq!(fix["isPreferred"], true);
    let fixed = apply_edits(&text, fix["edit"]["changes"][URI].as_array().unwrap());
    assert_eq!(fixed, good);
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [{ "text": fixed }] }),
    );
    assert!(c.diagnostics_for(2, &good).is_empty());
    assert!(c.shutdown());
}
