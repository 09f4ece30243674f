//! The language server's JSON-RPC framing (crates/dpplan-lsp/src/transport.rs)
//! on any client byte stream.
//!
//! The input is everything the client sends, then end of input.
//! `dpplan_lsp::transport::connect` reads it on its reader thread (answering
//! malformed frames itself, through the writer, into a sink); the server
//! side here drains every message that reaches it and answers each request
//! with an error response (through the writer thread). Then it drops the
//! connection and joins the writer.
//!
//! Must not panic (a panic on a transport thread is a crash here: the fuzz
//! driver aborts on any panic, caught or not), hang (`-timeout`) or allocate
//! without bound (`-rss_limit_mb`, `-malloc_limit_mb`).
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use lsp_server::{ErrorCode, Message, Response};

fuzz_target!(|data: &[u8]| {
    let (connection, threads) =
        dpplan_lsp::transport::connect(Cursor::new(data.to_vec()), std::io::sink());
    // Ends when the reader thread reaches the end of the input (or gives up)
    // and drops its sender.
    for msg in &connection.receiver {
        if let Message::Request(req) = msg {
            let resp = Response::new_err(
                req.id,
                ErrorCode::MethodNotFound as i32,
                "fuzz: not served".into(),
            );
            // The writer thread only stops once the connection is dropped.
            connection
                .sender
                .send(Message::Response(resp))
                .expect("the writer thread is alive while the connection is");
        }
    }
    drop(connection);
    threads
        .join_writer()
        .expect("writing to a sink does not fail");
});
