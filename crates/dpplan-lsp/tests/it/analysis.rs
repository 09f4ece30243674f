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
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": BIG } }),
    );
    c.notify("textDocument/didChange", json!({ "textDocument": { "uri": BIG, "version": 2 }, "contentChanges": [ { "text": SMALL_PLAN } ] }));
    // Waits for version 2's.
    let fresh = c.send_request(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": BIG } }),
    );
    // Everything above is queued before the server reads anything.
    c.start_server(server);
    assert_eq!(
        c.response(&waiting).error.unwrap().code,
        lsp_server::ErrorCode::ContentModified as i32
    );
    let symbols = c.response(&fresh).result.unwrap();
    assert_eq!(symbols[0]["name"], "small", "{symbols}");
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
        "textDocument/documentSymbol",
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
