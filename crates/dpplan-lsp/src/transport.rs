//! JSON-RPC framing over any byte streams (stdio in production, pipes in
//! tests).
//!
//! lsp-server's own stdio transport ends the connection on the first
//! malformed message; this one answers it instead (JSON-RPC `ParseError` or
//! `InvalidRequest`) and keeps reading, so that a client's bad message never
//! takes the server down. Everything it writes goes to the given writer
//! (stdout), one whole message at a time; logs go to stderr.

use std::io::{self, BufRead, Write};
use std::sync::{Arc, Mutex};
use std::thread;

use crossbeam_channel::{unbounded, Receiver, Sender};
use lsp_server::{Connection, Message};

/// The transport's threads. Joining the writer makes sure every message the
/// server sent was written before the process exits.
pub struct Threads {
    writer: thread::JoinHandle<io::Result<()>>,
}

impl Threads {
    pub fn join_writer(self) -> io::Result<()> {
        self.writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the writer thread panicked")))
    }
}

fn write_frame(w: &Mutex<Box<dyn Write + Send>>, body: &str) -> io::Result<()> {
    let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
    write!(w, "Content-Length: {}\r\n\r\n", body.len())?;
    w.write_all(body.as_bytes())?;
    w.flush()
}

fn error_body(id: &serde_json::Value, code: i32, message: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    })
    .to_string()
}

enum Frame {
    Body(Vec<u8>),
    /// Headers without a usable Content-Length.
    BadHeader(String),
    Eof,
}

/// Reads one frame. Header lines end in `\r\n` (a bare `\n` is accepted).
fn read_frame(r: &mut dyn BufRead) -> io::Result<Frame> {
    let mut length: Option<usize> = None;
    let mut bad: Option<String> = None;
    let mut line = String::new();
    let mut saw_header = false;
    loop {
        line.clear();
        let n = r.read_line(&mut line)?;
        if n == 0 {
            return Ok(Frame::Eof);
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if !saw_header {
                // Stray blank lines between messages.
                continue;
            }
            break;
        }
        saw_header = true;
        match l.split_once(':') {
            Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(n) if n <= 64 * 1024 * 1024 => length = Some(n),
                    _ => bad = Some(format!("bad Content-Length: {l:?}")),
                }
            }
            Some(_) => {}
            None => bad = Some(format!("malformed header line: {l:?}")),
        }
    }
    match (length, bad) {
        (Some(n), None) => {
            let mut body = vec![0; n];
            r.read_exact(&mut body)?;
            Ok(Frame::Body(body))
        }
        (_, Some(why)) => Ok(Frame::BadHeader(why)),
        (None, None) => Ok(Frame::BadHeader("no Content-Length header".into())),
    }
}

/// A connection over a reader and a writer.
pub fn connect(
    reader: impl BufRead + Send + 'static,
    writer: impl Write + Send + 'static,
) -> (Connection, Threads) {
    let writer: Arc<Mutex<Box<dyn Write + Send>>> = Arc::new(Mutex::new(Box::new(writer)));
    let (to_server, server_in): (Sender<Message>, Receiver<Message>) = unbounded();
    let (server_out, from_server): (Sender<Message>, Receiver<Message>) = unbounded();

    let w = Arc::clone(&writer);
    let writer_thread = thread::Builder::new()
        .name("dpplan-lsp-writer".into())
        .spawn(move || {
            for msg in from_server {
                let mut buf = Vec::new();
                msg.write(&mut buf)?;
                let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
                w.write_all(&buf)?;
                w.flush()?;
            }
            Ok(())
        })
        // Only fails when the OS cannot create a thread at start-up, before
        // any editor message is read; lsp-server's own stdio does the same.
        .expect("spawn the writer thread");

    let w = writer;
    thread::Builder::new()
        .name("dpplan-lsp-reader".into())
        .spawn(move || {
            let mut reader = reader;
            loop {
                let frame = match read_frame(&mut reader) {
                    Ok(f) => f,
                    Err(e) => {
                        eprintln!("dpplan lsp: reading the client failed: {e}");
                        break;
                    }
                };
                let body = match frame {
                    Frame::Eof => break,
                    Frame::BadHeader(why) => {
                        eprintln!("dpplan lsp: {why}");
                        let _ =
                            write_frame(&w, &error_body(&serde_json::Value::Null, -32700, &why));
                        continue;
                    }
                    Frame::Body(b) => b,
                };
                let value: serde_json::Value = match serde_json::from_slice(&body) {
                    Ok(v) => v,
                    Err(e) => {
                        let why = format!("parse error: {e}");
                        eprintln!("dpplan lsp: {why}");
                        let _ =
                            write_frame(&w, &error_body(&serde_json::Value::Null, -32700, &why));
                        continue;
                    }
                };
                let id = value.get("id").cloned().unwrap_or(serde_json::Value::Null);
                let has_method = value.get("method").is_some_and(|m| m.is_string());
                let msg: Option<Message> = serde_json::from_value(value).ok();
                match msg {
                    Some(m) => {
                        if to_server.send(m).is_err() {
                            break;
                        }
                    }
                    None => {
                        let why =
                            "invalid request: not a JSON-RPC request, response or notification";
                        eprintln!("dpplan lsp: {why}");
                        // Answer what looks like a request; a broken
                        // notification gets no answer (JSON-RPC).
                        if !id.is_null() || !has_method {
                            let _ = write_frame(&w, &error_body(&id, -32600, why));
                        }
                    }
                }
            }
            // Dropping `to_server` tells the server that the client is gone.
        })
        // As above: an OS failure at start-up, not an editor message.
        .expect("spawn the reader thread");

    (
        Connection {
            sender: server_out,
            receiver: server_in,
        },
        Threads {
            writer: writer_thread,
        },
    )
}
