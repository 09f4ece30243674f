//! Analyses off the main loop (in process): a request about a document
//! waits for the analysis of its current version, a newer edit supersedes
//! it, stale results are dropped, and every version that is published is
//! published twice. The tests assert the order and content of messages,
//! never durations.

use crate::common::*;
use serde_json::{json, Value};

const BIG: &str = "file:///big.dpplan";
const SMALL_PLAN: &str = "plan \"small\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 1\n  }\n}\n";

/// Publishes of diagnostics (uri, version, diagnostics) until `uri`'s
/// `version` was published twice.
fn publishes_until(c: &mut Client, uri: &str, version: i64) -> Vec<(String, Option<i64>, Value)> {
    let mut seen: Vec<(String, Option<i64>, Value)> = Vec::new();
    while seen
        .iter()
        .filter(|(u, v, _)| u == uri && *v == Some(version))
        .count()
        < 2
    {
        let p = c.next_diagnostics();
        seen.push((
            p["uri"].as_str().unwrap_or("").to_string(),
            p["version"].as_i64(),
            p["diagnostics"].clone(),
        ));
    }
    seen
}

/// The publishes received and not consumed yet.
fn publishes(c: &Client) -> Vec<(String, Option<i64>)> {
    c.notifications
        .iter()
        .filter(|n| n.method == "textDocument/publishDiagnostics")
        .map(|n| {
            (
                n.params["uri"].as_str().unwrap_or("").to_string(),
                n.params["version"].as_i64(),
            )
        })
        .collect()
}

#[test]
fn a_request_waits_for_the_analysis_and_a_newer_edit_supersedes_it() {
    let (mut c, server) = Client::queued();
    c.send_request("initialize", json!({ "capabilities": {} }));
    c.notify("initialized", json!({}));
    let big = generated_plan(300_000);
    c.notify("textDocument/didOpen", json!({ "textDocument": { "uri": BIG, "languageId": "dpplan", "version": 1, "text": big } }));
    // Waits for version 1's analysis, which the edit below supersedes.
    let waiting = c.send_request(
        "textDocument/semanticTokens/full",
        json!({ "textDocument": { "uri": BIG } }),
    );
    c.notify("textDocument/didChange", json!({ "textDocument": { "uri": BIG, "version": 2 }, "contentChanges": [ { "text": SMALL_PLAN } ] }));
    // Waits for version 2's.
    let fresh = c.send_request(
        "textDocument/semanticTokens/full",
        json!({ "textDocument": { "uri": BIG } }),
    );
    // Everything above is queued before the server reads anything.
    c.start_server(server);
    assert_eq!(
        c.response(&waiting).error.unwrap().code,
        lsp_server::ErrorCode::ContentModified as i32
    );
    // The small plan's tokens (5 numbers each), not the big one's thousands.
    let tokens = c.response(&fresh).result.unwrap();
    let n = tokens["data"].as_array().unwrap().len();
    assert!(n > 0 && n < 200, "{n} numbers: {tokens}");
    let seen = publishes_until(&mut c, BIG, 2);
    assert_eq!(seen.last().unwrap().2, json!([]));
    // Version 1's analysis ended before version 2's started (one at a time
    // per document), and its results were stale: none was published.
    assert!(
        seen.iter().all(|(uri, v, _)| uri != BIG || *v == Some(2)),
        "{seen:?}"
    );
    assert!(c.shutdown());
}

#[test]
fn a_waiting_request_can_be_cancelled_and_shutdown_is_answered_meanwhile() {
    let mut c = Client::utf16();
    // Seconds of analysis.
    let big = generated_plan(2_000_000);
    c.notify("textDocument/didOpen", json!({ "textDocument": { "uri": BIG, "languageId": "dpplan", "version": 1, "text": big } }));
    let waiting = c.send_request(
        "textDocument/semanticTokens/full",
        json!({ "textDocument": { "uri": BIG } }),
    );
    c.notify("$/cancelRequest", json!({ "id": waiting.clone() }));
    assert_eq!(
        c.response(&waiting).error.unwrap().code,
        lsp_server::ErrorCode::RequestCanceled as i32
    );
    let r = c.request("shutdown", Value::Null);
    assert!(r.error.is_none());
    // Both came before the analysis of the big plan was published.
    let full = publishes(&c).iter().filter(|(u, _)| u == BIG).count();
    assert!(full < 2, "{:?}", publishes(&c));
    c.notify("exit", Value::Null);
    assert!(c.server.take().unwrap().join().unwrap());
}

#[test]
fn every_published_version_is_published_twice_in_a_burst_of_edits() {
    let mut c = Client::utf16();
    let text = example("web-analytics");
    assert!(c.open(BIG, &text).is_empty());
    // Edits while analyses run: each may supersede the one before.
    for version in 2..=30 {
        let t = if version % 2 == 0 {
            text.replace("scale 250", "scale 2")
        } else {
            text.clone()
        };
        c.notify("textDocument/didChange", json!({ "textDocument": { "uri": BIG, "version": version }, "contentChanges": [ { "text": t } ] }));
    }
    let seen = publishes_until(&mut c, BIG, 30);
    // The last version's full diagnostics: the even versions are over budget.
    let last = &seen.last().unwrap().2;
    assert!(
        last.as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "DP011"),
        "the last version's diagnostics: {last}"
    );
    // Versions never go back, and each one published is published twice
    // (or once, first, when a newer edit superseded its full analysis).
    let versions: Vec<i64> = seen.iter().filter_map(|(_, v, _)| *v).collect();
    assert!(versions.windows(2).all(|w| w[0] <= w[1]), "{versions:?}");
    for v in 2..=30 {
        let n = versions.iter().filter(|&&x| x == v).count();
        assert!(
            n == 0 || n == 2 || (n == 1 && v < 30),
            "version {v}: {n} publishes"
        );
    }
    assert!(c.shutdown());
}

/// The names of the outline's items under the plan.
fn outline_names(symbols: &Value) -> Vec<String> {
    symbols[0]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn formatting_and_the_outline_do_not_wait_for_the_analysis() {
    let mut c = Client::utf16();
    // Seconds of analysis (a debug build).
    let big = generated_plan(2_000_000);
    let queries = big.matches("\n  query ").count();
    c.notify("textDocument/didOpen", json!({ "textDocument": { "uri": BIG, "languageId": "dpplan", "version": 1, "text": big } }));
    let symbols = c.ok(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": BIG } }),
    );
    let formatted = c.ok(
        "textDocument/formatting",
        json!({ "textDocument": { "uri": BIG }, "options": { "tabSize": 2, "insertSpaces": true } }),
    );
    // Both answered before the full analysis was published (the order of
    // messages, not a duration: the analysis of 2 MB takes far longer than
    // a parse).
    let full = publishes(&c).iter().filter(|(u, _)| u == BIG).count();
    assert!(full < 2, "{:?}", publishes(&c));
    let names = outline_names(&symbols);
    assert_eq!(
        names.len(),
        queries + 2,
        "privacy, the dataset, every query"
    );
    assert_eq!(
        (names[0].as_str(), names[1].as_str()),
        ("privacy", "visits")
    );
    assert!(names.iter().any(|n| n == "q1234"));
    // From the text alone: no query's cost yet.
    assert!(
        symbols[0]["children"][2].get("detail").is_none(),
        "{}",
        symbols[0]["children"][2]
    );
    // The generated plan is laid out canonically already.
    assert_eq!(formatted, json!([]));
    // Once the analysis is done, the outline has the queries' details.
    publishes_until(&mut c, BIG, 1);
    let after = c.ok(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": BIG } }),
    );
    assert_eq!(outline_names(&after), names);
    let detail = after[0]["children"][2]["detail"].as_str().unwrap();
    assert_eq!(detail, "count(visits) · once");
    assert!(c.shutdown());
}

/// The codes of a publish's diagnostics.
fn codes(diagnostics: &Value) -> Vec<String> {
    diagnostics
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn the_first_publish_has_what_needs_no_accounting_and_the_second_adds_the_budget() {
    let mut c = Client::utf16();
    let within = example("web-analytics");
    assert!(c.open(BIG, &within).is_empty());
    // Over budget (DP011, from the accounting), and a query that releases
    // the same statistic afresh (DP009, from the checker alone).
    let copy = "\n  query daily_again {\n    count(visits)\n    noise laplace scale 250\n    schedule once\n  }\n";
    let at = within.find("\n  query page_mix").unwrap();
    let over = format!("{}{copy}{}", &within[..at], &within[at..]).replace("scale 250", "scale 2");
    // What the server must publish first and second, from the library.
    let early = dpplan_ide::Document::unaccounted_diagnostics(&over);
    let early: Vec<String> = early.iter().map(|d| d.code.as_str().to_string()).collect();
    assert!(early.iter().any(|c| c == "DP009"), "{early:?}");
    assert!(!early.iter().any(|c| c == "DP011"), "{early:?}");
    for version in 2..=6 {
        let text = if version % 2 == 0 { &over } else { &within };
        c.notify("textDocument/didChange", json!({ "textDocument": { "uri": BIG, "version": version }, "contentChanges": [ { "text": text } ] }));
        let seen = publishes_until(&mut c, BIG, version);
        // Nothing of an older version after this one's first publish.
        let first = seen
            .iter()
            .position(|(_, v, _)| *v == Some(version))
            .unwrap();
        assert!(
            seen[first..].iter().all(|(_, v, _)| *v == Some(version)),
            "{seen:?}"
        );
        let ours: Vec<&Value> = seen[first..].iter().map(|(_, _, d)| d).collect();
        assert_eq!(ours.len(), 2);
        if version % 2 == 1 {
            assert_eq!((ours[0], ours[1]), (&json!([]), &json!([])));
            continue;
        }
        assert_eq!(
            codes(ours[0]),
            early,
            "the first publish of version {version}"
        );
        let full = codes(ours[1]);
        assert!(full.iter().any(|c| c == "DP011"), "{full:?}");
        // The second is the first plus the accounted ones.
        let mut rest = full.clone();
        for code in &early {
            let i = rest.iter().position(|c| c == code).expect("kept");
            rest.remove(i);
        }
        assert!(
            rest.iter().all(|c| c == "DP011" || c == "DP018"),
            "{rest:?}"
        );
    }
    assert!(c.shutdown());
}
