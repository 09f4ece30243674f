//! An in-process LSP client over `Connection::memory()`; `process` drives
//! the real `dpplan lsp` binary over OS pipes.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::thread::JoinHandle;
use std::time::Duration;

use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use serde_json::{json, Value};

pub mod process;

pub const TIMEOUT: Duration = Duration::from_secs(120);

pub fn example(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/{name}/{name}.dpplan",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// A valid plan of about `bytes` bytes with thousands of queries (the shape
/// of dpplan-check's benchmark plan): slow to analyse: about a second per megabyte in a debug build.
pub fn generated_plan(bytes: usize) -> String {
    let mut s = String::from(
        "plan \"generated\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 10 delta 1e-6\n    accountant best\n  }\n\n  dataset visits {\n    source \"data/visits.csv\"\n    column uid : id\n    column page : category { \"a\", \"b\", \"c\", \"d\" }\n    column secs : float in [0, 3600]\n    column n : int in [0, 100]\n    contribution {\n      rows_per_unit 5\n      groups_per_unit 2\n    }\n  }\n",
    );
    let mut i = 0;
    while s.len() < bytes {
        let (agg, noise) = match i % 4 {
            0 => (
                "count(visits)",
                format!("laplace scale {}", (10 + i % 97) * 100_000),
            ),
            1 => (
                "sum(visits.secs)",
                format!("gaussian sigma {}", (20000 + i % 89) * 1000),
            ),
            2 => (
                "histogram(visits by page)",
                format!("gaussian sigma {}", (30 + i % 53) * 1000),
            ),
            _ => (
                "sum(visits.n by page)",
                format!("discrete_laplace scale {}", (500 + i % 71) * 1000),
            ),
        };
        let sched = match i % 3 {
            0 => "once".to_string(),
            1 => format!("every 1 day for {} days", 1 + i % 365),
            _ => format!("every 1 hour from 2026-01-01 until 2026-0{}-01", 2 + i % 7),
        };
        s.push_str(&format!(
            "\n  query q{i} {{\n    {agg}\n    noise {noise}\n    schedule {sched}\n  }}\n"
        ));
        i += 1;
    }
    s.push_str("}\n");
    s
}

/// A response, flattened.
#[derive(Debug)]
pub struct Resp {
    pub id: RequestId,
    pub result: Option<Value>,
    pub error: Option<lsp_server::ResponseError>,
}

impl From<Response> for Resp {
    fn from(r: Response) -> Resp {
        match r.response_result {
            Ok(v) => Resp {
                id: r.id,
                result: Some(v),
                error: None,
            },
            Err(e) => Resp {
                id: r.id,
                result: None,
                error: Some(e),
            },
        }
    }
}

pub struct Client {
    pub conn: Connection,
    pub server: Option<JoinHandle<bool>>,
    next_id: i32,
    /// Notifications received and not consumed yet.
    pub notifications: VecDeque<Notification>,
    /// Responses received out of order.
    responses: Vec<Response>,
}

impl Client {
    /// A server thread, not yet initialized.
    pub fn spawn() -> Client {
        let (server, client) = Connection::memory();
        let handle = std::thread::spawn(move || {
            dpplan_lsp::run(server, dpplan_lsp::ServerOptions { test_methods: true })
        });
        Client {
            conn: client,
            server: Some(handle),
            next_id: 1,
            notifications: VecDeque::new(),
            responses: Vec::new(),
        }
    }

    /// A client without a server yet: messages queue until `start_server`.
    pub fn queued() -> (Client, Connection) {
        let (server, client) = Connection::memory();
        (
            Client {
                conn: client,
                server: None,
                next_id: 1,
                notifications: VecDeque::new(),
                responses: Vec::new(),
            },
            server,
        )
    }

    pub fn start_server(&mut self, server: Connection) {
        self.server = Some(std::thread::spawn(move || {
            dpplan_lsp::run(server, dpplan_lsp::ServerOptions { test_methods: true })
        }));
    }

    /// Initialized with the given client capabilities.
    pub fn start(capabilities: Value) -> (Client, Value) {
        let mut c = Client::spawn();
        let r = c.request(
            "initialize",
            json!({ "capabilities": capabilities, "processId": null, "rootUri": null }),
        );
        let result = r.result.expect("initialize result");
        c.notify("initialized", json!({}));
        (c, result)
    }

    pub fn utf16() -> Client {
        Client::start(json!({})).0
    }

    pub fn send_request(&mut self, method: &str, params: Value) -> RequestId {
        let id = RequestId::from(self.next_id);
        self.next_id += 1;
        self.conn
            .sender
            .send(Message::Request(Request {
                id: id.clone(),
                method: method.into(),
                params,
            }))
            .unwrap();
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.conn
            .sender
            .send(Message::Notification(Notification {
                method: method.into(),
                params,
            }))
            .unwrap();
    }

    fn recv(&mut self) -> Message {
        self.conn
            .receiver
            .recv_timeout(TIMEOUT)
            .expect("the server answers")
    }

    pub fn response(&mut self, id: &RequestId) -> Resp {
        if let Some(i) = self.responses.iter().position(|r| &r.id == id) {
            return self.responses.remove(i).into();
        }
        loop {
            match self.recv() {
                Message::Response(r) if &r.id == id => return r.into(),
                Message::Response(r) => self.responses.push(r),
                Message::Notification(n) => self.notifications.push_back(n),
                Message::Request(r) => panic!("unexpected request from the server: {r:?}"),
            }
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Resp {
        let id = self.send_request(method, params);
        self.response(&id)
    }

    /// The result of a request that must succeed.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.request(method, params);
        match (r.result, r.error) {
            (Some(v), None) => v,
            (_, e) => panic!("{method} failed: {e:?}"),
        }
    }

    /// The next `publishDiagnostics` notification.
    pub fn next_diagnostics(&mut self) -> Value {
        loop {
            if let Some(i) = self
                .notifications
                .iter()
                .position(|n| n.method == "textDocument/publishDiagnostics")
            {
                return self.notifications.remove(i).unwrap().params;
            }
            match self.recv() {
                Message::Notification(n) => self.notifications.push_back(n),
                Message::Response(r) => self.responses.push(r),
                Message::Request(r) => panic!("unexpected request from the server: {r:?}"),
            }
        }
    }

    /// The complete diagnostics of a version: the last publish for it (every
    /// version gets two: what needs no accounting first, then everything).
    pub fn diagnostics_for(&mut self, version: i64, _text: &str) -> Vec<Value> {
        let expected = 2;
        let mut seen = 0;
        loop {
            let p = self.next_diagnostics();
            if p["version"].as_i64() == Some(version) {
                seen += 1;
                if seen == expected {
                    return p["diagnostics"].as_array().unwrap().clone();
                }
            }
        }
    }

    pub fn open(&mut self, uri: &str, text: &str) -> Vec<Value> {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "dpplan", "version": 1, "text": text } }),
        );
        self.diagnostics_for(1, text)
    }

    pub fn shutdown(mut self) -> bool {
        let r = self.request("shutdown", Value::Null);
        assert!(r.error.is_none());
        self.notify("exit", Value::Null);
        self.server.take().unwrap().join().unwrap()
    }
}

pub fn pos(line: u32, character: u32) -> Value {
    json!({ "line": line, "character": character })
}

pub fn at(uri: &str, line: u32, character: u32) -> Value {
    json!({ "textDocument": { "uri": uri }, "position": pos(line, character) })
}

/// UTF-16 line/character of a byte offset (computed independently of the server).
pub fn utf16_pos(text: &str, offset: usize) -> (u32, u32) {
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..offset].encode_utf16().count() as u32)
}

pub fn utf8_pos(text: &str, offset: usize) -> (u32, u32) {
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, (offset - line_start) as u32)
}

/// Applies LSP text edits (UTF-16 positions) to a text.
pub fn apply_edits(text: &str, edits: &[Value]) -> String {
    let offset = |p: &Value| -> usize {
        let line = p["line"].as_u64().unwrap() as usize;
        let ch = p["character"].as_u64().unwrap() as usize;
        let mut start = 0;
        for _ in 0..line {
            start += text[start..].find('\n').unwrap() + 1;
        }
        let mut units = 0;
        for (i, c) in text[start..].char_indices() {
            if units >= ch || c == '\n' {
                return start + i;
            }
            units += c.len_utf16();
        }
        text.len()
    };
    let mut spans: Vec<(usize, usize, String)> = edits
        .iter()
        .map(|e| {
            (
                offset(&e["range"]["start"]),
                offset(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    spans.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut s = text.to_string();
    for (a, b, t) in spans {
        s.replace_range(a..b, &t);
    }
    s
}
