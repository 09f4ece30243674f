//! Every feature of the server, in process, over `Connection::memory()`.

use crate::common::*;
use serde_json::{json, Value};

const URI: &str = "file:///work/plan.dpplan";

fn codes(diags: &[Value]) -> Vec<String> {
    diags
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn negotiates_the_position_encoding() {
    let (c, init) =
        Client::start(json!({ "general": { "positionEncodings": ["utf-8", "utf-16"] } }));
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    assert!(c.shutdown());
    let (c, init) = Client::start(json!({ "general": { "positionEncodings": ["utf-16"] } }));
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-16");
    assert!(c.shutdown());
    let (c, init) = Client::start(json!({}));
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-16");
    assert_eq!(init["capabilities"]["textDocumentSync"]["change"], 2);
    assert!(c.shutdown());
}

#[test]
fn diagnostics_have_codes_links_related_spans_and_severities() {
    let mut c = Client::utf16();
    // DP001: the contribution bound removed.
    let text = example("web-analytics").replace(
        "    contribution {\n      rows_per_unit 5 // at most 5 random visits per user are kept\n      groups_per_unit 3 // touching at most 3 pages\n    }\n",
        "",
    );
    let diags = c.open(URI, &text);
    let expected: Vec<String> = dpplan_ide::dpplan_check::analyze(&text)
        .diagnostics
        .iter()
        .map(|d| d.code.as_str().to_string())
        .collect();
    assert_eq!(
        codes(&diags),
        expected,
        "the same diagnostics as `dpplan check`"
    );
    let dp001 = diags.iter().find(|d| d["code"] == "DP001").unwrap();
    assert_eq!(dp001["severity"], 1);
    assert_eq!(dp001["source"], "dpplan");
    // no documentation base configured: no link is made up ...
    assert!(dp001.get("codeDescription").is_none(), "{dp001}");
    // ... and the hover on the flagged span shows the code's documentation
    let start = &dp001["range"]["start"];
    let h = c.ok(
        "textDocument/hover",
        at(
            URI,
            start["line"].as_u64().unwrap() as u32,
            start["character"].as_u64().unwrap() as u32 + 1,
        ),
    );
    let md = h["contents"]["value"].as_str().unwrap();
    assert!(md.contains("**DP001 unbounded-contribution**"), "{md}");
    assert!(md.contains(dpplan_diagnostics_doc("DP001")), "{md}");
    let related = dp001["relatedInformation"].as_array().unwrap();
    assert_eq!(related[0]["message"], "user-level unit declared here");
    let (l, ch) = utf16_pos(&text, text.find("unit user by user_id").unwrap());
    assert_eq!(related[0]["location"]["range"]["start"], pos(l, ch));
    assert!(dp001["message"]
        .as_str()
        .unwrap()
        .contains("\nhelp: add `contribution"));
    // DP009 is a hint.
    let text = example("repeated-release");
    c.notify("textDocument/didOpen", json!({ "textDocument": { "uri": "file:///r.dpplan", "languageId": "dpplan", "version": 1, "text": text } }));
    let p = c.next_diagnostics();
    assert_eq!(p["uri"], "file:///r.dpplan");
    let dp009 = p["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "DP009")
        .cloned()
        .unwrap();
    assert_eq!(
        dp009["severity"], 4,
        "Severity::Hint → DiagnosticSeverity::HINT"
    );
    assert!(c.shutdown());
}

#[test]
fn docs_base_is_configurable() {
    let mut c = Client::spawn();
    c.ok(
        "initialize",
        json!({ "capabilities": {}, "initializationOptions": { "docsBaseUrl": "file:///opt/dpplan" } }),
    );
    c.notify("initialized", json!({}));
    let diags = c.open(URI, "plan \"p\" {\n}\n");
    assert_eq!(
        diags[0]["codeDescription"]["href"],
        "file:///opt/dpplan/docs/diagnostics.md#dp015"
    );
    // with a link, the hover does not repeat the documentation
    let h = c.ok("textDocument/hover", at(URI, 0, 1));
    assert!(!h.to_string().contains("missing-declaration"), "{h}");
    assert!(c.shutdown());
}

#[test]
fn syntax_errors_are_published_first() {
    let mut c = Client::utf16();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/corpus/dp000-syntax.dpplan"
    ))
    .unwrap();
    c.notify("textDocument/didOpen", json!({ "textDocument": { "uri": URI, "languageId": "dpplan", "version": 1, "text": text } }));
    let first = c.next_diagnostics();
    let first = codes(first["diagnostics"].as_array().unwrap());
    // syntax errors lead, and the semantic ones that need no accounting
    // come in the same first publish
    let n_syntax = first.iter().take_while(|c| *c == "DP000").count();
    assert!(
        n_syntax == 3 && first[n_syntax..].iter().all(|c| c != "DP000"),
        "{first:?}"
    );
    assert!(first.contains(&"DP012".to_string()), "{first:?}");
    let second = c.next_diagnostics();
    let second = codes(second["diagnostics"].as_array().unwrap());
    assert!(second.contains(&"DP012".to_string()), "{second:?}");
    let n = first.len();
    assert_eq!(&second[..n], &first[..], "syntax errors first");
    assert!(c.shutdown());
}

#[test]
fn incremental_and_full_changes() {
    let mut c = Client::utf16();
    let text = example("web-analytics");
    assert!(c.open(URI, &text).is_empty());
    // Incremental: `scale 250` → `scale 2` puts the plan over budget.
    let off = text.find("scale 250").unwrap() + "scale 2".len();
    let (l, ch) = utf16_pos(&text, off);
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 2 },
                "contentChanges": [ { "range": { "start": pos(l, ch), "end": pos(l, ch + 2) }, "text": "" } ] }),
    );
    let edited = text.replace("scale 250", "scale 2");
    let diags = c.diagnostics_for(2, &edited);
    assert!(codes(&diags).contains(&"DP011".to_string()), "{diags:?}");
    // Two changes in one notification, applied in order.
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 3 },
                "contentChanges": [
                    { "range": { "start": pos(l, ch), "end": pos(l, ch) }, "text": "5" },
                    { "range": { "start": pos(l, ch + 1), "end": pos(l, ch + 1) }, "text": "0" } ] }),
    );
    assert!(c.diagnostics_for(3, &text).is_empty());
    // Full sync: the whole text.
    c.notify(
        "textDocument/didChange",
        json!({ "textDocument": { "uri": URI, "version": 4 }, "contentChanges": [ { "text": "plan \"x\" {\n}\n" } ] }),
    );
    assert_eq!(
        codes(&c.diagnostics_for(4, "plan \"x\" {\n}\n")),
        vec!["DP015"]
    );
    // Closing clears them.
    c.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": URI } }),
    );
    let p = c.next_diagnostics();
    assert!(p["diagnostics"].as_array().unwrap().is_empty());
    assert!(c.shutdown());
}

/// web-analytics with CRLF line endings and a comment of emoji and CJK on
/// the query's own line, before its name.
fn unicode_text() -> String {
    example("web-analytics")
        .replace(
            "  query daily_visits {",
            "  /* 日本語 😀 𝄞 */ query daily_visits {",
        )
        .replace('\n', "\r\n")
}

#[test]
fn hover_in_utf16_with_emoji_cjk_and_crlf() {
    let mut c = Client::utf16();
    let text = unicode_text();
    assert!(c.open(URI, &text).is_empty());
    let name = text.find("daily_visits {").unwrap();
    let (l, ch) = utf16_pos(&text, name);
    let h = c.ok("textDocument/hover", at(URI, l, ch + 3));
    let md = h["contents"]["value"].as_str().unwrap();
    assert!(md.contains("**query `daily_visits`**"), "{md}");
    assert!(md.contains("365 releases"), "{md}");
    assert!(md.contains("L1 = 5"), "{md}");
    assert!(
        md.contains("% of the plan's privacy loss (its share of ρ)"),
        "{md}"
    );
    assert_eq!(h["range"]["start"], pos(l, ch));
    assert_eq!(h["range"]["end"], pos(l, ch + 12));
    // Budget hover: every accountant.
    let b = text.find("budget epsilon").unwrap();
    let (l, ch) = utf16_pos(&text, b);
    let h = c.ok("textDocument/hover", at(URI, l, ch + 1));
    assert!(h["contents"]["value"]
        .as_str()
        .unwrap()
        .contains("**Every accountant:**"));
    // A keyword.
    let k = text.find("schedule once").unwrap();
    let (l, ch) = utf16_pos(&text, k);
    let h = c.ok("textDocument/hover", at(URI, l, ch + 2));
    assert!(h["contents"]["value"]
        .as_str()
        .unwrap()
        .starts_with("`schedule once"));
    // Nothing on a string: null.
    let s = text.find("data/visits").unwrap();
    let (l, ch) = utf16_pos(&text, s);
    assert_eq!(c.ok("textDocument/hover", at(URI, l, ch)), Value::Null);
    assert!(c.shutdown());
}

#[test]
fn hover_in_utf8() {
    let (mut c, _) = Client::start(json!({ "general": { "positionEncodings": ["utf-8"] } }));
    let text = unicode_text();
    assert!(c.open(URI, &text).is_empty());
    let name = text.find("daily_visits {").unwrap();
    let (l, ch) = utf8_pos(&text, name);
    let h = c.ok("textDocument/hover", at(URI, l, ch + 1));
    assert_eq!(h["range"]["start"], pos(l, ch));
    assert!(c.shutdown());
}

#[test]
fn inlay_hints_and_outline() {
    let mut c = Client::utf16();
    let text = unicode_text();
    c.open(URI, &text);
    let hints = c.ok(
        "textDocument/inlayHint",
        json!({ "textDocument": { "uri": URI }, "range": { "start": pos(0, 0), "end": pos(999, 0) } }),
    );
    let hints = hints.as_array().unwrap();
    let name_end = text.find("daily_visits {").unwrap() + "daily_visits".len();
    let (l, ch) = utf16_pos(&text, name_end);
    let h = hints
        .iter()
        .find(|h| h["position"] == pos(l, ch))
        .expect("a hint after the query's name");
    assert!(
        h["label"].as_str().unwrap().ends_with("· 365 releases"),
        "{h}"
    );
    assert!(hints
        .iter()
        .any(|h| h["label"].as_str().unwrap().starts_with("plan: ε ")));
    let symbols = c.ok(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": URI } }),
    );
    let plan = &symbols[0];
    assert_eq!(plan["name"], "web-analytics");
    let names: Vec<&str> = plan["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec![
            "privacy",
            "visits",
            "daily_visits",
            "page_mix",
            "mean_time",
            "dashboard_copy"
        ]
    );
    let (l, ch) = utf16_pos(&text, text.find("daily_visits {").unwrap());
    assert_eq!(plan["children"][2]["selectionRange"]["start"], pos(l, ch));
    assert!(c.shutdown());
}

#[test]
fn completion_definition_references_rename() {
    let mut c = Client::utf16();
    let text = unicode_text().replace("    mean(visits.seconds)", "    mean(visits.se)");
    c.open(URI, &text);
    let off = text.find("visits.se)").unwrap() + "visits.se".len();
    let (l, ch) = utf16_pos(&text, off);
    let items = c.ok(
        "textDocument/completion",
        json!({ "textDocument": { "uri": URI }, "position": pos(l, ch) }),
    );
    let labels: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, vec!["page", "seconds"]);
    let edit = &items[1]["textEdit"];
    assert_eq!(edit["range"]["start"], pos(l, ch - 2));
    assert_eq!(edit["newText"], "seconds");

    let text = unicode_text();
    c.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [ { "text": text } ] }));
    let use_at = text.find("= daily_visits").unwrap() + 2;
    let (l, ch) = utf16_pos(&text, use_at);
    let def = c.ok("textDocument/definition", at(URI, l, ch + 1));
    let (dl, dch) = utf16_pos(&text, text.find("daily_visits {").unwrap());
    assert_eq!(def["range"]["start"], pos(dl, dch));
    assert_eq!(def["uri"], URI);
    let refs = c.ok(
        "textDocument/references",
        json!({ "textDocument": { "uri": URI }, "position": pos(l, ch), "context": { "includeDeclaration": true } }),
    );
    assert_eq!(refs.as_array().unwrap().len(), 2);
    let prep = c.ok("textDocument/prepareRename", at(URI, dl, dch + 2));
    assert_eq!(prep["start"], pos(dl, dch));
    let edit = c.ok(
        "textDocument/rename",
        json!({ "textDocument": { "uri": URI }, "position": pos(dl, dch + 2), "newName": "visits_per_day" }),
    );
    let edits = edit["changes"][URI].as_array().unwrap();
    assert_eq!(edits.len(), 2);
    let renamed = apply_edits(&text, edits);
    assert!(renamed.contains("*/ query visits_per_day {") && renamed.contains("= visits_per_day"));
    // An invalid name is refused with an error, and the server goes on.
    let r = c.request(
        "textDocument/rename",
        json!({ "textDocument": { "uri": URI }, "position": pos(dl, dch + 2), "newName": "page_mix" }),
    );
    assert!(r.error.is_some());
    assert!(c.shutdown());
}

#[test]
fn semantic_tokens_decode_to_the_right_words() {
    let mut c = Client::utf16();
    let text = unicode_text();
    c.open(URI, &text);
    let r = c.ok(
        "textDocument/semanticTokens/full",
        json!({ "textDocument": { "uri": URI } }),
    );
    let data: Vec<u64> = r["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(data.len() % 5, 0);
    let lines: Vec<&str> = text.split('\n').collect();
    let (mut line, mut col) = (0u64, 0u64);
    let mut found = Vec::new();
    for t in data.chunks(5) {
        if t[0] > 0 {
            line += t[0];
            col = t[1];
        } else {
            col += t[1];
        }
        let utf16: Vec<u16> = lines[line as usize].encode_utf16().collect();
        let word = String::from_utf16(&utf16[col as usize..(col + t[2]) as usize]).unwrap();
        found.push((
            word,
            dpplan_lsp::TOKEN_TYPES[t[3] as usize].as_str().to_string(),
            t[4],
        ));
    }
    let has =
        |w: &str, ty: &str, m: u64| found.iter().any(|(a, b, c)| a == w && b == ty && *c == m);
    assert!(has("/* 日本語 😀 𝄞 */", "comment", 0), "{found:?}");
    assert!(has("daily_visits", "function", 1));
    assert!(has("query", "keyword", 0));
    assert!(has("visits", "namespace", 1));
    assert!(has("seconds", "property", 0));
    assert!(has("\"data/visits.csv\"", "string", 0));
    assert!(has("365", "number", 0));
    assert!(c.shutdown());
}

#[test]
fn code_actions_fix_checker_errors() {
    let mut c = Client::utf16();
    let text = example("web-analytics")
        .replace("float in [0, 3600]", "float")
        .replace('\n', "\r\n");
    let diags = c.open(URI, &text);
    let dp002 = diags.iter().find(|d| d["code"] == "DP002").unwrap().clone();
    let actions = c.ok(
        "textDocument/codeAction",
        json!({ "textDocument": { "uri": URI }, "range": dp002["range"], "context": { "diagnostics": [dp002] } }),
    );
    let a = &actions[0];
    assert_eq!(a["kind"], "quickfix");
    assert_eq!(a["diagnostics"][0]["code"], "DP002");
    let fixed = apply_edits(&text, a["edit"]["changes"][URI].as_array().unwrap());
    assert!(fixed.contains("column seconds : float in [0, 100]\r\n"));
    c.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [ { "text": fixed } ] }));
    assert!(!codes(&c.diagnostics_for(2, &fixed)).contains(&"DP002".to_string()));
    assert!(c.shutdown());
}

const OVER_BUDGET: &str = "plan \"p\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 1\n  }\n  dataset d {\n    column x : int in [0, 1]\n  }\n  query small {\n    count(d)\n    noise laplace scale 0.5\n    schedule every 1 day for 4 days\n  }\n}\n";

#[test]
fn code_actions_calibrate_noise_eagerly_or_on_resolve() {
    for resolve in [false, true] {
        let caps = if resolve {
            json!({ "textDocument": { "codeAction": { "resolveSupport": { "properties": ["edit"] } } } })
        } else {
            json!({})
        };
        let (mut c, init) = Client::start(caps);
        assert_eq!(
            init["capabilities"]["codeActionProvider"]["resolveProvider"],
            true
        );
        let diags = c.open(URI, OVER_BUDGET);
        let dp011 = diags.iter().find(|d| d["code"] == "DP011").unwrap().clone();
        let actions = c.ok(
            "textDocument/codeAction",
            json!({ "textDocument": { "uri": URI }, "range": dp011["range"], "context": { "diagnostics": [dp011] } }),
        );
        let actions = actions.as_array().unwrap();
        let auto = actions
            .iter()
            .find(|a| a["title"].as_str().unwrap().contains("(`auto`)"))
            .unwrap();
        assert_eq!(
            apply_edits(
                OVER_BUDGET,
                auto["edit"]["changes"][URI].as_array().unwrap()
            ),
            OVER_BUDGET.replace("laplace scale 0.5", "laplace auto")
        );
        let mut solved = actions
            .iter()
            .find(|a| a["isPreferred"] == true)
            .unwrap()
            .clone();
        if resolve {
            assert!(solved.get("edit").is_none() && solved.get("data").is_some());
            solved = c.ok("codeAction/resolve", solved);
        }
        assert_eq!(
            solved["title"],
            "Set `small`'s noise to `scale 4` so that the plan fits its budget"
        );
        let fixed = apply_edits(
            OVER_BUDGET,
            solved["edit"]["changes"][URI].as_array().unwrap(),
        );
        let after = dpplan_ide::dpplan_check::analyze(&fixed);
        assert!(!after.has_errors(), "{:?}", after.diagnostics);
        assert!(c.shutdown());
    }
}

#[test]
fn formatting() {
    let mut c = Client::utf16();
    let text = "plan \"p\" {\r\n privacy { unit row // who\r\n adjacency add_remove budget epsilon 1 }\r\n}";
    c.open(URI, text);
    let edits = c.ok("textDocument/formatting", json!({ "textDocument": { "uri": URI }, "options": { "tabSize": 2, "insertSpaces": true } }));
    let out = apply_edits(text, edits.as_array().unwrap());
    assert_eq!(out, "plan \"p\" {\r\n  privacy {\r\n    unit row // who\r\n    adjacency add_remove\r\n    budget epsilon 1\r\n  }\r\n}\r\n");
    c.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [ { "text": out } ] }));
    let edits = c.ok("textDocument/formatting", json!({ "textDocument": { "uri": URI }, "options": { "tabSize": 2, "insertSpaces": true } }));
    assert_eq!(edits, json!([]));
    // A file with syntax errors is not formatted: an error, the text unchanged.
    c.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 3 }, "contentChanges": [ { "text": "plan \"p\" {\n query q {\n" } ] }));
    let r = c.request("textDocument/formatting", json!({ "textDocument": { "uri": URI }, "options": { "tabSize": 2, "insertSpaces": true } }));
    assert!(r.error.unwrap().message.contains("syntax errors"));
    assert!(c.shutdown());
}

#[test]
fn a_panic_answers_internal_error_and_the_server_goes_on() {
    let mut c = Client::utf16();
    let r = c.request("dpplan/testPanic", json!({}));
    assert_eq!(
        r.error.unwrap().code,
        lsp_server::ErrorCode::InternalError as i32
    );
    let text = example("census");
    assert!(c.open(URI, &text).is_empty());
    let r = c.ok(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": URI } }),
    );
    assert_eq!(r[0]["name"], "census-tables");
    assert!(c.shutdown());
}

#[test]
fn cancelled_and_stale_requests() {
    let (mut c, server) = Client::queued();
    c.send_request("initialize", json!({ "capabilities": {} }));
    c.notify("initialized", json!({}));
    let text = example("census");
    c.notify("textDocument/didOpen", json!({ "textDocument": { "uri": URI, "languageId": "dpplan", "version": 1, "text": text } }));
    let hover = c.send_request("textDocument/hover", at(URI, 5, 5));
    c.notify("$/cancelRequest", json!({ "id": 2 }));
    // A request followed by an edit of its document is stale.
    let stale = c.send_request(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": URI } }),
    );
    c.notify("textDocument/didChange", json!({ "textDocument": { "uri": URI, "version": 2 }, "contentChanges": [ { "text": text } ] }));
    let fresh = c.send_request(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": URI } }),
    );
    // Everything above is queued before the server reads anything.
    c.start_server(server);
    assert_eq!(
        c.response(&hover).error.unwrap().code,
        lsp_server::ErrorCode::RequestCanceled as i32
    );
    assert_eq!(
        c.response(&stale).error.unwrap().code,
        lsp_server::ErrorCode::ContentModified as i32
    );
    assert!(c.response(&fresh).result.is_some());
    assert!(c.shutdown());
}

#[test]
fn errors_for_unknown_methods_closed_documents_and_before_initialize() {
    let mut c = Client::spawn();
    let r = c.request("textDocument/hover", at(URI, 0, 0));
    assert_eq!(
        r.error.unwrap().code,
        lsp_server::ErrorCode::ServerNotInitialized as i32
    );
    c.ok("initialize", json!({ "capabilities": {} }));
    c.notify("initialized", json!({}));
    let r = c.request("dpplan/noSuchMethod", json!({}));
    assert_eq!(
        r.error.unwrap().code,
        lsp_server::ErrorCode::MethodNotFound as i32
    );
    let r = c.request("textDocument/hover", at("file:///closed.dpplan", 0, 0));
    assert_eq!(
        r.error.unwrap().code,
        lsp_server::ErrorCode::InvalidParams as i32
    );
    let r = c.request("textDocument/hover", json!({ "bogus": true }));
    assert_eq!(
        r.error.unwrap().code,
        lsp_server::ErrorCode::InvalidParams as i32
    );
    // Notifications about closed documents are ignored.
    c.notify("textDocument/didChange", json!({ "textDocument": { "uri": "file:///closed.dpplan", "version": 2 }, "contentChanges": [ { "text": "x" } ] }));
    c.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": "file:///closed.dpplan" } }),
    );
    c.notify(
        "workspace/didChangeConfiguration",
        json!({ "settings": {} }),
    );
    assert!(c.open(URI, &example("census")).is_empty());
    // After shutdown, requests are refused until exit.
    let r = c.request("shutdown", Value::Null);
    assert!(r.error.is_none());
    let r = c.request("textDocument/hover", at(URI, 0, 0));
    assert_eq!(
        r.error.unwrap().code,
        lsp_server::ErrorCode::InvalidRequest as i32
    );
    c.notify("exit", Value::Null);
    assert!(
        c.server.take().unwrap().join().unwrap(),
        "exit after shutdown is clean"
    );
}

#[test]
fn exit_without_shutdown_is_not_clean() {
    let mut c = Client::utf16();
    c.notify("exit", Value::Null);
    assert!(!c.server.take().unwrap().join().unwrap());
}

/// A code's section of docs/diagnostics.md, read from the file (not from
/// the server's embedded copy).
fn dpplan_diagnostics_doc(code: &str) -> &'static str {
    let doc: &'static str = Box::leak(
        std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/diagnostics.md"
        ))
        .unwrap()
        .into_boxed_str(),
    );
    let head = format!("## {code}\n");
    let start = doc.find(&head).unwrap() + head.len();
    let end = doc[start..].find("\n## ").map_or(doc.len(), |e| start + e);
    doc[start..end].trim()
}

/// End to end: every quick fix the server offers on the corpus files that
/// have fixes, applied as the editor would (UTF-16 edits) and opened again,
/// leaves less of what it claims to fix and no error code more often.
#[test]
fn every_offered_fix_fixes_through_the_server() {
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/");
    let count = |ds: &[Value], code: &str, errors: bool| {
        ds.iter()
            .filter(|d| d["code"] == code && (!errors || d["severity"] == 1))
            // one DP009 hint marks each re-release (its related locations
            // after the first release)
            .map(|d| match d["relatedInformation"].as_array() {
                Some(r) if code == "DP009" => r.len().max(1),
                _ => 1,
            })
            .sum::<usize>()
    };
    let mut c = Client::utf16();
    let mut applied = 0;
    let files = [
        "dp000-misspelt",
        "dp001-unbounded-contribution",
        "dp002-missing-bounds",
        "dp009-repeated-statistic",
        "dp011-over-budget",
    ];
    for (n, name) in files.iter().enumerate() {
        let text = std::fs::read_to_string(format!("{corpus}{name}.dpplan")).unwrap();
        let uri = format!("file:///work/{name}.dpplan");
        let before = c.open(&uri, &text);
        for d in &before {
            let actions = c.ok(
                "textDocument/codeAction",
                json!({ "textDocument": { "uri": uri }, "range": d["range"], "context": { "diagnostics": [d] } }),
            );
            for (k, a) in actions.as_array().unwrap().iter().enumerate() {
                let claimed = a["diagnostics"][0]["code"].as_str().unwrap().to_string();
                let edits = a["edit"]["changes"][&uri].as_array().unwrap();
                let fixed = apply_edits(&text, edits);
                let after = c.open(&format!("file:///work/fixed-{n}-{k}.dpplan"), &fixed);
                assert!(
                    count(&after, &claimed, false) < count(&before, &claimed, false),
                    "{name}: {} leaves {claimed}",
                    a["title"]
                );
                for e in after.iter().filter(|e| e["severity"] == 1) {
                    let code = e["code"].as_str().unwrap();
                    assert!(
                        count(&after, code, true) <= count(&before, code, true),
                        "{name}: {} adds {code}",
                        a["title"]
                    );
                }
                applied += 1;
            }
        }
    }
    assert!(applied >= files.len(), "only {applied} fixes applied");
    assert!(c.shutdown());
}

/// The constructs of mechanisms v3 over the protocol: a top-k's hover
/// gives each rank's count error and its noise completion only the
/// exponential mechanism; a post-processed query's hover says its steps
/// are free, and the `postprocess` keyword completes in a query.
#[test]
fn top_k_and_postprocess_over_the_protocol() {
    let mut c = Client::utf16();
    let text = example("news-sections");
    assert!(c.open(URI, &text).is_empty());
    let (l, ch) = utf16_pos(&text, text.find("top_sections_weekly {").unwrap());
    let h = c.ok("textDocument/hover", at(URI, l, ch + 2));
    let md = h["contents"]["value"].as_str().unwrap();
    assert!(
        md.contains("**top 3**") && md.contains("Count error per release"),
        "{md}"
    );
    let (l, ch) = utf16_pos(&text, text.find("exponential epsilon 0.3").unwrap());
    let items = c.ok("textDocument/completion", at(URI, l, ch));
    let labels: Vec<&str> = items
        .as_array()
        .or_else(|| items["items"].as_array())
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["exponential", "permute_and_flip"], "{items}");

    let uri = "file:///work/ride.dpplan";
    let ride = example("ride-sharing");
    assert!(c.open(uri, &ride).is_empty());
    let (l, ch) = utf16_pos(&ride, ride.find("daily_riders_by_city {").unwrap());
    let h = c.ok("textDocument/hover", at(uri, l, ch + 2));
    let md = h["contents"]["value"].as_str().unwrap();
    assert!(md.contains("nonnegative, round"), "{md}");
    assert!(md.to_lowercase().contains("post-processing"), "{md}");
    assert!(c.shutdown());
}
