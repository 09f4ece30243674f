//! The real `dpplan lsp` stays responsive while a slow analysis runs: a
//! large plan is analysed off the main loop, and requests about another
//! document, and `shutdown`, are answered before that analysis publishes its
//! full diagnostics. The test asserts the order of messages, not durations.

use crate::common;
use crate::common::process::{notification, request, Server};
use serde_json::{json, Value};

const SMALL: &str = "file:///small.dpplan";
const BIG: &str = "file:///big.dpplan";

fn open(uri: &str, text: &str) -> Vec<u8> {
    notification(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "dpplan", "version": 1, "text": text } }),
    )
}

fn publishes_for<'a>(messages: &'a [Value], uri: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == json!(uri)
        })
        .collect()
}

#[test]
fn requests_and_shutdown_are_answered_while_a_large_plan_is_analysed() {
    let mut s = Server::spawn();
    s.write(&request(1, "initialize", json!({ "capabilities": {} })));
    s.until_response(1);
    s.write(&notification("initialized", json!({})));

    // A small document, analysed and published (twice) before the big one.
    s.write(&open(SMALL, &common::example("census")));
    let mut seen = Vec::new();
    while publishes_for(&seen, SMALL).len() < 2 {
        seen.push(s.next());
    }

    // The big plan: its analysis takes seconds.
    let big = common::generated_plan(2_000_000);
    s.write(&open(BIG, &big));
    // Give the server time to read it and start analysing (a delay, not an
    // assertion: the order below holds however long it takes).
    std::thread::sleep(std::time::Duration::from_millis(300));

    // Requests about the small document, one about the big one (it waits for
    // the big plan's analysis), then shutdown.
    s.write(&request(
        2,
        "textDocument/hover",
        json!({ "textDocument": { "uri": SMALL }, "position": { "line": 20, "character": 10 } }),
    ));
    s.write(&request(
        3,
        "textDocument/completion",
        json!({ "textDocument": { "uri": SMALL }, "position": { "line": 22, "character": 4 } }),
    ));
    s.write(&request(
        4,
        "textDocument/semanticTokens/full",
        json!({ "textDocument": { "uri": BIG } }),
    ));
    s.write(&request(5, "shutdown", Value::Null));
    let mut after = Vec::new();
    let answered = |msgs: &[Value], id: i64| {
        msgs.iter()
            .any(|m| m.get("method").is_none() && m["id"] == json!(id))
    };
    while ![2, 3, 5].iter().all(|&id| answered(&after, id)) {
        after.push(s.next());
    }
    let big_publishes = publishes_for(&after, BIG);
    eprintln!(
        "before the answers: {} publishes of the big plan; messages: {:?}",
        big_publishes.len(),
        after
            .iter()
            .map(|m| m.get("method").cloned().unwrap_or_else(|| m["id"].clone()))
            .collect::<Vec<_>>()
    );
    assert!(
        big_publishes.len() < 2,
        "the big plan's full diagnostics were published before the small document's requests and shutdown were answered"
    );
    for id in [2, 3, 5] {
        let r = after
            .iter()
            .find(|m| m.get("method").is_none() && m["id"] == json!(id))
            .expect("answered");
        assert!(r.get("error").is_none(), "{r}");
    }
    // `exit` is obeyed at once, with the analysis still running.
    s.write(&notification("exit", Value::Null));
    let out = s.finish();
    assert!(out.status.success(), "exit after shutdown is clean");
}
