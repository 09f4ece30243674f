//! Latency of the server on a generated 2,000-line plan, through the whole
//! LSP stack (in-memory connection): diagnostics after an edit, hover and
//! completion. No timed assertions; goals: 20 ms / 5 ms / 5 ms.
//!
//!     CARGO_TARGET_DIR=/work/target-lsp cargo bench -j 1 -p dpplan-lsp

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{json, Value};

/// A plan of about `lines` lines: 20 datasets, then queries mixing counts,
/// sums and histograms, Laplace and Gaussian noise, one-off and periodic
/// schedules.
pub fn generated_plan(lines: usize, budget: f64) -> String {
    let mut out = vec![
        "// generated plan".to_string(),
        "plan \"big\" {".into(),
        "  privacy {".into(),
        "    unit user by uid".into(),
        "    adjacency add_remove".into(),
        format!("    budget epsilon {budget} delta 1e-8"),
        "    accountant best".into(),
        "    population 10000000".into(),
        "  }".into(),
        String::new(),
    ];
    let nds = 20;
    for d in 0..nds {
        out.push(format!("  dataset ds{d} {{"));
        out.push(format!("    source \"data/ds{d}.csv\""));
        out.push("    column uid : id".into());
        out.push("    column cat : category { \"a\", \"b\", \"c\" }".into());
        for c in 0..6 {
            out.push(format!("    column v{c} : float in [0, {}]", 10 * (c + 1)));
        }
        out.extend(
            [
                "    contribution {",
                "      rows_per_unit 5",
                "      groups_per_unit 2",
                "    }",
                "  }",
                "",
            ]
            .map(String::from),
        );
    }
    let mut q = 0;
    while out.len() + 6 < lines {
        let (d, c) = (q % nds, (q / nds) % 6);
        let agg = match q % 3 {
            0 => format!("count(ds{d})"),
            1 => format!("sum(ds{d}.v{c})"),
            _ => format!("sum(ds{d}.v{c} by cat)"),
        };
        let noise = [
            "noise laplace scale 50",
            "noise gaussian sigma 80",
            "noise laplace epsilon 0.1",
        ][q % 3];
        let sched = [
            "schedule once",
            "schedule every 1 day for 30 days",
            "schedule every 1 week for 4 weeks",
        ][q % 3];
        out.extend([
            format!("  query q{q} {{"),
            format!("    {agg}"),
            format!("    {noise}"),
            format!("    {sched}"),
            "  }".into(),
            String::new(),
        ]);
        q += 1;
    }
    out.push("}".into());
    out.join("\n") + "\n"
}

struct Client {
    conn: Connection,
    next: i32,
}

impl Client {
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = RequestId::from(self.next);
        self.next += 1;
        self.conn
            .sender
            .send(Message::Request(Request {
                id: id.clone(),
                method: method.into(),
                params,
            }))
            .unwrap();
        loop {
            match self.conn.receiver.recv().unwrap() {
                Message::Response(r) if r.id == id => return r.response_result.expect("a result"),
                _ => {}
            }
        }
    }
    fn notify(&mut self, method: &str, params: Value) {
        self.conn
            .sender
            .send(Message::Notification(Notification {
                method: method.into(),
                params,
            }))
            .unwrap();
    }
    fn diagnostics(&mut self, uri: &str, version: i64) -> usize {
        loop {
            if let Message::Notification(n) = self.conn.receiver.recv().unwrap() {
                if n.method == "textDocument/publishDiagnostics"
                    && n.params["uri"] == uri
                    && n.params["version"].as_i64() == Some(version)
                {
                    return n.params["diagnostics"].as_array().unwrap().len();
                }
            }
        }
    }
}

fn pos_of(text: &str, offset: usize) -> Value {
    let before = &text[..offset];
    let line = before.matches('\n').count();
    let col = offset - before.rfind('\n').map_or(0, |i| i + 1);
    json!({ "line": line, "character": col })
}

fn bench(c: &mut Criterion) {
    // Within budget (ε ≈ 7,900 of 10,000): the common case while typing.
    let text = generated_plan(2000, 10_000.0);
    assert!(text.lines().count() >= 1990);
    let (server, conn) = Connection::memory();
    std::thread::spawn(move || dpplan_lsp::run(server, dpplan_lsp::ServerOptions::default()));
    let mut client = Client { conn, next: 1 };
    client.request("initialize", json!({ "capabilities": {} }));
    client.notify("initialized", json!({}));
    let uri = "file:///big.dpplan";
    client.notify("textDocument/didOpen", json!({ "textDocument": { "uri": uri, "languageId": "dpplan", "version": 1, "text": text } }));
    client.diagnostics(uri, 1);
    client.diagnostics(uri, 1); // DP009 hints, one per repeated statistic; no error

    // An edit in the middle of the file: `scale 50` ↔ `scale 51`.
    let digit = text.find("noise laplace scale 50").unwrap() + "noise laplace scale 5".len();
    let p = pos_of(&text, digit);
    let p_end = json!({ "line": p["line"], "character": p["character"].as_u64().unwrap() + 1 });
    let mut version = 1i64;
    let mut group = c.benchmark_group("lsp-2000-lines");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    // Every version gets two publishes: what needs no accounting (syntax and
    // semantic diagnostics), then the full set with the budget's.
    group.bench_function("first diagnostics after a change (no accounting)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                version += 1;
                let new = if version % 2 == 0 { "1" } else { "0" };
                let start = std::time::Instant::now();
                client.notify(
                    "textDocument/didChange",
                    json!({ "textDocument": { "uri": uri, "version": version },
                            "contentChanges": [ { "range": { "start": p, "end": p_end }, "text": new } ] }),
                );
                client.diagnostics(uri, version);
                total += start.elapsed();
                // the complete publish, outside the measurement
                client.diagnostics(uri, version);
            }
            total
        })
    });
    group.bench_function("complete diagnostics after a change", |b| {
        b.iter(|| {
            version += 1;
            let new = if version % 2 == 0 { "1" } else { "0" };
            client.notify(
                "textDocument/didChange",
                json!({ "textDocument": { "uri": uri, "version": version },
                        "contentChanges": [ { "range": { "start": p, "end": p_end }, "text": new } ] }),
            );
            client.diagnostics(uri, version);
            client.diagnostics(uri, version)
        })
    });
    // Back to the original text, with its costs computed once.
    version += 1;
    client.notify("textDocument/didChange", json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": [ { "text": text } ] }));
    client.diagnostics(uri, version);
    client.diagnostics(uri, version);
    let name = text.find("query q100 {").unwrap() + "query q1".len();
    let hover_params = json!({ "textDocument": { "uri": uri }, "position": pos_of(&text, name) });
    let first = client.request("textDocument/hover", hover_params.clone());
    assert!(first["contents"]["value"]
        .as_str()
        .unwrap()
        .contains("q100"));
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(3));
    group.bench_function("hover on a query", |b| {
        b.iter(|| client.request("textDocument/hover", hover_params.clone()))
    });
    let dot = text.find("sum(ds7.v").unwrap() + "sum(ds7.".len();
    let completion_params =
        json!({ "textDocument": { "uri": uri }, "position": pos_of(&text, dot) });
    let items = client.request("textDocument/completion", completion_params.clone());
    assert_eq!(items.as_array().unwrap().len(), 7);
    group.bench_function("completion after `ds7.`", |b| {
        b.iter(|| client.request("textDocument/completion", completion_params.clone()))
    });
    // Over budget (DP011 ranks the queries by cost: the costed analysis runs).
    let over = generated_plan(2000, 1000.0);
    let uri2 = "file:///over.dpplan";
    client.notify("textDocument/didOpen", json!({ "textDocument": { "uri": uri2, "languageId": "dpplan", "version": 1, "text": over } }));
    client.diagnostics(uri2, 1);
    client.diagnostics(uri2, 1);
    let mut v2 = 1i64;
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("complete diagnostics after a change, over budget", |b| {
        b.iter(|| {
            v2 += 1;
            let new = if v2 % 2 == 0 { "1" } else { "0" };
            client.notify(
                "textDocument/didChange",
                json!({ "textDocument": { "uri": uri2, "version": v2 },
                        "contentChanges": [ { "range": { "start": p, "end": p_end }, "text": new } ] }),
            );
            client.diagnostics(uri2, v2);
            client.diagnostics(uri2, v2)
        })
    });
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(3));
    let budget = text.find("budget epsilon").unwrap() + 2;
    let budget_params =
        json!({ "textDocument": { "uri": uri }, "position": pos_of(&text, budget) });
    group.bench_function("hover on the budget (cached accountants)", |b| {
        b.iter(|| client.request("textDocument/hover", budget_params.clone()))
    });
    group.bench_function("inlay hints (whole file)", |b| {
        b.iter(|| client.request("textDocument/inlayHint", json!({ "textDocument": { "uri": uri }, "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 2100, "character": 0 } } })))
    });
    group.bench_function("semantic tokens (whole file)", |b| {
        b.iter(|| {
            client.request(
                "textDocument/semanticTokens/full",
                json!({ "textDocument": { "uri": uri } }),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
