//! Robustness over a real byte stream (OS pipes and the server's own
//! framing): malformed JSON-RPC, unknown methods, requests for closed
//! documents and hundreds of random edits. The server answers every request
//! and exits only when asked.

use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common;

struct Wire {
    to_server: std::io::PipeWriter,
    from_server: BufReader<std::io::PipeReader>,
    server: std::thread::JoinHandle<std::io::Result<bool>>,
    next_id: i64,
    /// Notifications seen while waiting for responses.
    notifications: Vec<Value>,
}

impl Wire {
    fn start() -> Wire {
        let (server_in, to_server) = std::io::pipe().unwrap();
        let (from_server, server_out) = std::io::pipe().unwrap();
        let server = std::thread::spawn(move || {
            dpplan_lsp::run_io(
                BufReader::new(server_in),
                server_out,
                dpplan_lsp::ServerOptions::default(),
            )
        });
        Wire {
            to_server,
            from_server: BufReader::new(from_server),
            server,
            next_id: 1,
            notifications: Vec::new(),
        }
    }

    fn raw(&mut self, bytes: &[u8]) {
        self.to_server.write_all(bytes).unwrap();
        self.to_server.flush().unwrap();
    }

    fn frame(&mut self, body: &str) {
        let msg = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.raw(msg.as_bytes());
    }

    fn read(&mut self) -> Value {
        let mut len = None;
        loop {
            let mut line = String::new();
            let n = self.from_server.read_line(&mut line).unwrap();
            assert!(n > 0, "the server closed its output");
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some(v) = l.strip_prefix("Content-Length: ") {
                len = Some(v.parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0; len.expect("Content-Length")];
        self.from_server.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    /// The next response (notifications are kept aside).
    fn response(&mut self) -> Value {
        loop {
            let v = self.read();
            if v.get("method").is_some() {
                self.notifications.push(v);
            } else {
                return v;
            }
        }
    }

    fn send(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.frame(
            &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string(),
        );
        id
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        let r = self.response();
        assert_eq!(r["id"], id, "{r}");
        r
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.frame(&json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string());
    }
}

#[test]
fn malformed_messages_are_answered_and_the_server_goes_on() {
    let mut w = Wire::start();
    // Broken JSON: a ParseError with a null id.
    w.frame("{\"jsonrpc\": \"2.0\", \"id\": 1, ");
    let r = w.response();
    assert_eq!(r["error"]["code"], -32700);
    assert_eq!(r["id"], Value::Null);
    // A header without Content-Length.
    w.raw(b"Content-Type: application/json\r\n\r\n");
    assert_eq!(w.response()["error"]["code"], -32700);
    // Valid JSON that is no JSON-RPC message.
    w.frame("[1, 2, 3]");
    assert_eq!(w.response()["error"]["code"], -32600);
    w.frame("{\"jsonrpc\": \"2.0\", \"id\": 77, \"method\": 5}");
    let r = w.response();
    assert_eq!(
        (r["id"].clone(), r["error"]["code"].clone()),
        (json!(77), json!(-32600))
    );
    // Not UTF-8.
    w.raw(b"Content-Length: 4\r\n\r\n\xff\xfe\xfd\xfc");
    assert_eq!(w.response()["error"]["code"], -32700);
    // Still serving: initialize works.
    let r = w.request("initialize", json!({ "capabilities": {} }));
    assert!(r["result"]["capabilities"]["hoverProvider"]
        .as_bool()
        .unwrap());
    w.notify("initialized", json!({}));
    let r = w.request("no/such/method", json!({}));
    assert_eq!(r["error"]["code"], -32601);
    let r = w.request("textDocument/hover", json!({ "textDocument": { "uri": "file:///nope.dpplan" }, "position": { "line": 0, "character": 0 } }));
    assert_eq!(r["error"]["code"], -32602);
    // A response from the client to nothing, and an unknown notification: ignored.
    w.frame("{\"jsonrpc\": \"2.0\", \"id\": 999, \"result\": null}");
    w.notify("$/unknownNotification", json!({}));
    let r = w.request("shutdown", Value::Null);
    assert_eq!(r["result"], Value::Null);
    w.notify("exit", Value::Null);
    assert!(w.server.join().unwrap().unwrap(), "a clean exit");
}

/// A small deterministic random generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Byte offset ↔ UTF-16 position, written independently of the server.
fn position(text: &str, offset: usize) -> Value {
    let (l, c) = common::utf16_pos(text, offset);
    json!({ "line": l, "character": c })
}

#[test]
fn hundreds_of_random_edits() {
    let mut w = Wire::start();
    w.request("initialize", json!({ "capabilities": {} }));
    w.notify("initialized", json!({}));
    let uri = "file:///random.dpplan";
    // A small plan keeps each analysis cheap in unoptimised test builds.
    let mut text = String::from(
        "plan \"r\" {\r\n  privacy {\r\n    unit row\r\n    adjacency add_remove\r\n    budget epsilon 1\r\n  }\r\n  dataset d { // 日本\r\n    column x : int in [0, 10]\r\n  }\r\n  query q {\r\n    sum(d.x)\r\n    noise laplace scale 50\r\n    schedule once\r\n  }\r\n}\r\n",
    );
    w.notify("textDocument/didOpen", json!({ "textDocument": { "uri": uri, "languageId": "dpplan", "version": 1, "text": text } }));
    let pieces = [
        "", "x", "é", "😀", "漢", "\r\n", "\n", "{", "}", "query", " ", "\"", "//", "count(d)",
        "0.5", "𝄞",
    ];
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let started = Instant::now();
    let mut answered = 0;
    let mut last_version = 1;
    for version in 2..=400 {
        // A random range on character boundaries, replaced by a random piece.
        let chars: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        let a = chars[rng.below(chars.len())];
        let b = chars[(chars.partition_point(|&i| i < a) + rng.below(4)).min(chars.len() - 1)];
        let piece = pieces[rng.below(pieces.len())];
        // Never split a CRLF (clients do not).
        let splits_crlf = |o: usize| {
            o > 0
                && o < text.len()
                && text.as_bytes()[o - 1] == b'\r'
                && text.as_bytes()[o] == b'\n'
        };
        if splits_crlf(a) || splits_crlf(b) {
            continue;
        }
        let range = json!({ "start": position(&text, a), "end": position(&text, b) });
        text.replace_range(a..b, piece);
        last_version = version;
        w.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [ { "range": range, "text": piece } ] }),
        );
        if version % 5 == 0 {
            let at = chars[rng.below(chars.len())].min(text.len());
            let at = (0..=at).rev().find(|&i| text.is_char_boundary(i)).unwrap();
            let method = [
                "textDocument/hover",
                "textDocument/completion",
                "textDocument/documentSymbol",
                "textDocument/semanticTokens/full",
                "textDocument/inlayHint",
                "textDocument/codeAction",
                "textDocument/formatting",
            ][rng.below(7)];
            let p = position(&text, at);
            let params = json!({
                "textDocument": { "uri": uri }, "position": p,
                "range": { "start": p, "end": p },
                "context": { "diagnostics": [] },
                "options": { "tabSize": 2, "insertSpaces": true },
            });
            let r = w.request(method, params);
            // Every request is answered: a result, or an error that is not a crash.
            if let Some(e) = r.get("error") {
                assert_ne!(e["code"], -32603, "{method} crashed: {r}");
            }
            answered += 1;
        }
    }
    assert!(answered >= 70);
    // The server's copy of the text is the client's: its final diagnostics
    // are those of the client's text.
    let r = w.request(
        "textDocument/documentSymbol",
        json!({ "textDocument": { "uri": uri } }),
    );
    assert!(r.get("result").is_some());
    let deadline = Instant::now() + Duration::from_secs(60);
    let expected = dpplan_ide::Document::new(text.clone()).diagnostics().len();
    loop {
        let last = w
            .notifications
            .iter()
            .rev()
            .find(|n| n["method"] == "textDocument/publishDiagnostics")
            .map(|n| {
                (
                    n["params"]["version"].as_i64(),
                    n["params"]["diagnostics"].as_array().unwrap().len(),
                )
            });
        if let Some((Some(v), n)) = last {
            if v == last_version && n == expected {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "final diagnostics never matched: {last:?}, expected {expected}"
        );
        // Wait for more output.
        let v = w.read();
        w.notifications.push(v);
    }
    eprintln!(
        "{answered} requests during 400 edits in {:?}",
        started.elapsed()
    );
    w.request("shutdown", Value::Null);
    w.notify("exit", Value::Null);
    assert!(w.server.join().unwrap().unwrap());
}

#[test]
fn the_server_exits_only_when_asked() {
    let mut w = Wire::start();
    w.request("initialize", json!({ "capabilities": {} }));
    w.notify("initialized", json!({}));
    w.frame("garbage that is not json");
    let _ = w.response();
    std::thread::sleep(Duration::from_millis(200));
    assert!(!w.server.is_finished(), "still running after garbage");
    w.notify("exit", Value::Null);
    // `exit` without `shutdown`: stops, and says it was not clean.
    assert!(!w.server.join().unwrap().unwrap());
}
