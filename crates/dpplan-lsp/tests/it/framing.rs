//! Malformed framing over real pipes: each case sends the real `dpplan lsp`
//! a badly framed message followed by ten valid requests, all written before
//! the server answers anything, then ends the input. The server must answer
//! all ten (it resynchronises on the next `Content-Length:` header), answer
//! the bad message with a JSON-RPC error where the protocol allows, and keep
//! its logs and error messages short whatever the input.

use crate::common::process::{frame, notification, request, Output, Server};
use serde_json::{json, Value};

const URI: &str = "file:///framing.dpplan";
const TEXT: &str = "plan \"framing\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 1\n  }\n}\n";

/// The ids of the ten follow-up requests.
const FOLLOW_UP: std::ops::Range<i64> = 100..110;

fn setup() -> Vec<u8> {
    let mut out = request(
        1,
        "initialize",
        json!({ "capabilities": {}, "processId": null, "rootUri": null }),
    );
    out.extend(notification("initialized", json!({})));
    out.extend(notification(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": URI, "languageId": "dpplan", "version": 1, "text": TEXT } }),
    ));
    out
}

fn hover(id: i64) -> Vec<u8> {
    request(
        id,
        "textDocument/hover",
        json!({ "textDocument": { "uri": URI }, "position": { "line": 0, "character": 2 } }),
    )
}

fn follow_ups() -> Vec<u8> {
    FOLLOW_UP.flat_map(hover).collect()
}

/// A request whose framing the cases break.
fn victim_body() -> Vec<u8> {
    json!({ "jsonrpc": "2.0", "id": 50, "method": "textDocument/hover",
            "params": { "textDocument": { "uri": URI }, "position": { "line": 0, "character": 2 } } })
    .to_string()
    .into_bytes()
}

/// Runs one case: `setup`, then `bad`, then `after` (the follow-ups unless a
/// case puts them elsewhere), then end of input.
fn run(bad: &[u8], after: Vec<u8>) -> Output {
    let mut bytes = setup();
    bytes.extend_from_slice(bad);
    bytes.extend(after);
    let mut server = Server::spawn();
    server.write_all_and_close(bytes);
    server.finish()
}

/// How many follow-ups were answered (successfully: hover on an open
/// document does not fail).
fn answered(out: &Output) -> usize {
    FOLLOW_UP
        .filter(|&id| {
            out.response(id)
                .is_some_and(|r| r.get("error").is_none() && r.get("result").is_some())
        })
        .count()
}

/// The checks every case shares.
fn check(case: &str, out: &Output, parse_errors_at_least: usize) {
    let n = answered(out);
    eprintln!(
        "{case}: {n}/10 follow-ups answered, {} parse errors, {} bytes on stderr",
        out.null_id_errors(-32700),
        out.stderr_len
    );
    assert!(
        out.response(1)
            .is_some_and(|r| r["result"]["capabilities"].is_object()),
        "{case}: initialize was answered"
    );
    assert_eq!(n, 10, "{case}: all ten follow-ups answered");
    assert!(
        out.null_id_errors(-32700) >= parse_errors_at_least,
        "{case}: a ParseError with a null id: {:?}",
        out.messages
    );
    // Nothing long is echoed back: every error message is short.
    for m in &out.messages {
        if let Some(msg) = m["error"]["message"].as_str() {
            assert!(
                msg.len() <= 300,
                "{case}: a long error message: {} bytes",
                msg.len()
            );
        }
    }
    assert!(
        out.stderr_len <= 16 * 1024,
        "{case}: {} bytes on stderr, starting {:?}",
        out.stderr_len,
        &out.stderr_head[..out.stderr_head.len().min(300)]
    );
}

#[test]
fn missing_content_length() {
    let mut bad = b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n".to_vec();
    bad.extend(victim_body());
    let out = run(&bad, follow_ups());
    check("missing Content-Length", &out, 1);
}

#[test]
fn negative_content_length() {
    let mut bad = b"Content-Length: -40\r\n\r\n".to_vec();
    bad.extend(victim_body());
    let out = run(&bad, follow_ups());
    check("negative Content-Length", &out, 1);
}

#[test]
fn non_numeric_content_length() {
    let mut bad = b"Content-Length: forty\r\n\r\n".to_vec();
    bad.extend(victim_body());
    let out = run(&bad, follow_ups());
    check("non-numeric Content-Length", &out, 1);
}

#[test]
fn over_limit_content_length() {
    let body = victim_body();
    let mut bad = b"Content-Length: 99999999999999999999999\r\n\r\n".to_vec();
    bad.extend(&body);
    // Just over the 64 MiB limit.
    bad.extend(b"Content-Length: 67108865\r\n\r\n");
    bad.extend(&body);
    let out = run(&bad, follow_ups());
    check("over-limit Content-Length", &out, 2);
}

#[test]
fn duplicated_conflicting_content_length() {
    let body = victim_body();
    // Which one is right? Neither is trusted.
    let mut bad = format!(
        "Content-Length: {}\r\nContent-Length: 10\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bad.extend(&body);
    let out = run(&bad, follow_ups());
    check("duplicated Content-Length", &out, 1);
}

#[test]
fn content_length_too_short() {
    // The rest of the body is read where the next header should be.
    let body = victim_body();
    let mut bad = format!("Content-Length: {}\r\n\r\n", body.len() - 25).into_bytes();
    bad.extend(&body);
    let out = run(&bad, follow_ups());
    check("Content-Length too short", &out, 1);
}

#[test]
fn content_length_too_long() {
    // The body swallows the header and the start of the next message.
    let body = victim_body();
    let mut bad = format!("Content-Length: {}\r\n\r\n", body.len() + 40).into_bytes();
    bad.extend(&body);
    let out = run(&bad, follow_ups());
    check("Content-Length too long", &out, 1);
}

#[test]
fn huge_header_line_without_newline() {
    // 50 MiB without a line end, then the next message right after it.
    let mut bad = b"X-Filler: ".to_vec();
    bad.resize(bad.len() + 50 * 1024 * 1024, b'x');
    let out = run(&bad, follow_ups());
    check("50 MiB header line", &out, 1);
}

#[test]
fn huge_malformed_header_line() {
    // 50 MiB of a line without a colon, then a line end.
    let mut bad = vec![b'y'; 50 * 1024 * 1024];
    bad.extend(b"\r\n\r\n");
    bad.extend(victim_body());
    let out = run(&bad, follow_ups());
    check("50 MiB malformed header line", &out, 1);
}

#[test]
fn huge_content_length_digits() {
    // A Content-Length header line of 20 MiB of digits.
    let mut bad = b"Content-Length: 1".to_vec();
    bad.resize(bad.len() + 20 * 1024 * 1024, b'0');
    bad.extend(b"\r\n\r\n");
    bad.extend(victim_body());
    let out = run(&bad, follow_ups());
    check("20 MiB Content-Length value", &out, 1);
}

#[test]
fn binary_garbage_in_a_header() {
    let body = victim_body();
    let mut bad = format!("Content-Length: {}\r\nX-Junk: ", body.len()).into_bytes();
    bad.extend(b"\xff\xfe\x00\x80\xc3\x28 not utf-8 \x1b[31m\r\n\r\n");
    bad.extend(&body);
    // And a header line that is nothing but binary.
    bad.extend(b"\x00\x01\x02\xfe\xff\r\n\r\n");
    let out = run(&bad, follow_ups());
    check("binary header", &out, 1);
    // The garbage is quoted escaped, if at all.
    assert!(
        !out.stderr_head.contains('\u{1b}'),
        "raw control bytes on stderr"
    );
    for m in &out.messages {
        if let Some(msg) = m["error"]["message"].as_str() {
            assert!(
                !msg.contains('\u{1b}') && !msg.contains('\u{fffd}'),
                "{msg:?}"
            );
        }
    }
}

#[test]
fn json_that_is_not_json_rpc() {
    let mut bad = Vec::new();
    for body in [
        "[1, 2, 3]",
        "\"a string\"",
        "null",
        "{\"jsonrpc\": \"2.0\", \"id\": {\"an\": \"object\"}, \"method\": \"textDocument/hover\"}",
        "{\"jsonrpc\": \"2.0\", \"id\": [1], \"method\": 7}",
    ] {
        bad.extend(frame(body.as_bytes()));
    }
    let out = run(&bad, follow_ups());
    check("JSON that is not JSON-RPC", &out, 0);
    // Each is an invalid request, answered with a null id: an object or an
    // array is no JSON-RPC id and is not echoed.
    let invalid: Vec<&Value> = out
        .messages
        .iter()
        .filter(|m| m["error"]["code"] == json!(-32600))
        .collect();
    assert_eq!(invalid.len(), 5, "{invalid:?}");
    assert!(invalid.iter().all(|m| m["id"].is_null()), "{invalid:?}");
}

#[test]
fn stream_truncated_inside_a_body() {
    // The follow-ups first, then a body cut short by the end of input.
    let mut after = follow_ups();
    after.extend(b"Content-Length: 500\r\n\r\n{\"jsonrpc\": \"2.0\", \"id\": 7, ");
    let out = run(b"", after);
    check("truncated body at EOF", &out, 1);
}

#[test]
fn stream_truncated_inside_a_header() {
    let mut after = follow_ups();
    after.extend(b"Content-Length: 5");
    let out = run(b"", after);
    check("truncated header at EOF", &out, 1);
}

#[test]
fn thousands_of_bad_headers_in_a_row() {
    // Each is answered; the log stays short.
    let bad = b"Content-Length: -1\r\n".repeat(20_000);
    let out = run(&bad, follow_ups());
    check("20,000 bad headers", &out, 20_000);
}
