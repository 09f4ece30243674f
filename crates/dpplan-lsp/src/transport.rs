//! JSON-RPC framing over any byte streams (stdio in production, pipes in
//! tests).
//!
//! lsp-server's own stdio transport ends the connection on the first
//! malformed message; this one answers it instead (JSON-RPC `ParseError` or
//! `InvalidRequest`, with a null id unless the message had a valid one) and
//! keeps reading, so that a client's bad message never takes the server
//! down. After a badly framed message (a missing, negative, non-numeric,
//! conflicting or over-limit Content-Length, a malformed header line, a body
//! that is not JSON because its declared length is wrong) it resynchronises
//! on the next `Content-Length:` header (see `FrameReader`). It holds a
//! bounded amount of input in memory whatever the client sends, and quotes
//! at most 80 escaped characters of bad input. Everything it writes goes to
//! the given writer (stdout), one whole message at a time; logs go to
//! stderr.

use std::io::{self, BufRead, Read, Write};
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

/// The largest body accepted (a bigger declared length is a framing error).
const MAX_BODY: usize = 64 * 1024 * 1024;
/// The longest header line kept in memory; a longer one is malformed and
/// skipped in chunks, never stored. (LSP's two headers are short.)
const MAX_LINE: usize = 4 * 1024;
/// The largest header block (all its lines together).
const MAX_HEADER: usize = 16 * 1024;
/// How much is read from the client at a time.
const CHUNK: usize = 64 * 1024;
/// How much of a bad input is quoted, escaped, in logs and error messages.
const QUOTE: usize = 80;
/// Lines about framing logged to stderr, at most (a stream of junk could
/// make one every few bytes; every error is answered all the same).
const MAX_LOGGED: u32 = 100;
/// Where the stream realigns after a framing error (ASCII case-insensitive).
const MARKER: &[u8] = b"content-length:";

/// One unit of input.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A well-framed body that is JSON.
    Json(serde_json::Value),
    /// A framing error (already resynchronised past): answer a ParseError.
    Bad(String),
    /// The end of input.
    Eof,
}

/// At most [`QUOTE`] characters of `bytes`, escaped (printable ASCII as is,
/// everything else as `\xNN`), quoted, with `…` when cut.
pub(crate) fn quote(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    let mut shown = 0;
    for &b in bytes {
        let piece = match b {
            b'"' => "\\\"".to_string(),
            b'\\' => "\\\\".to_string(),
            b'\r' => "\\r".to_string(),
            b'\n' => "\\n".to_string(),
            b'\t' => "\\t".to_string(),
            0x20..=0x7e => char::from(b).to_string(),
            _ => format!("\\x{b:02x}"),
        };
        if shown + piece.len() > QUOTE {
            out.push_str("\"…");
            return out;
        }
        shown += piece.len();
        out.push_str(&piece);
    }
    out.push('"');
    out
}

/// The first `Content-Length:` (any case) in `hay`.
fn find_marker(hay: &[u8]) -> Option<usize> {
    let last = hay.len().checked_sub(MARKER.len())?;
    (0..=last)
        .find(|&i| (hay[i] | 0x20) == b'c' && hay[i..i + MARKER.len()].eq_ignore_ascii_case(MARKER))
}

/// `tchar` of RFC 9110: what a header name is made of.
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A header line: `Ok(Some(n))` for `Content-Length: n`, `Ok(None)` for any
/// other well-formed header, `Err(why)` for a malformed one.
fn parse_header(line: &[u8]) -> Result<Option<usize>, String> {
    if !line
        .iter()
        .all(|&b| b == b'\t' || (0x20..0x7f).contains(&b))
    {
        return Err(format!(
            "a header line that is not ASCII text: {}",
            quote(line)
        ));
    }
    // A header cannot contain another header: this is the rest of a body
    // running into the next message (a wrong Content-Length).
    if find_marker(line).is_some_and(|i| i > 0) {
        return Err(format!(
            "a header line that runs into the next header: {}",
            quote(line)
        ));
    }
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return Err(format!("a malformed header line: {}", quote(line)));
    };
    let name = &line[..colon];
    if name.is_empty() || !name.iter().all(|&b| is_token(b)) {
        return Err(format!("a malformed header line: {}", quote(line)));
    }
    if !name.eq_ignore_ascii_case(b"content-length") {
        return Ok(None);
    }
    let value = line[colon + 1..].trim_ascii();
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Err(format!("a bad Content-Length: {}", quote(line)));
    }
    // All digits: only an overflow fails to parse.
    match std::str::from_utf8(value)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        Some(n) if n <= MAX_BODY => Ok(Some(n)),
        _ => Err(format!(
            "a Content-Length over the {} MiB limit: {}",
            MAX_BODY >> 20,
            quote(line)
        )),
    }
}

/// Where the next header line ends.
enum Line {
    /// The index of its `\n` in the buffer.
    End(usize),
    /// Longer than [`MAX_LINE`] (its end not read, nor kept).
    TooLong,
    /// The input ended before a line end.
    Eof,
}

/// What a header block gave.
enum Headers {
    Length(usize),
    /// A framing error; `first_line` when it is the block's first line
    /// that is malformed (which may be the rest of a body).
    Bad {
        why: String,
        first_line: bool,
    },
    Eof,
}

/// Reads frames from a byte stream, resynchronising after framing errors.
///
/// Headers are read a bounded line at a time (a line longer than
/// [`MAX_LINE`] is an error, skipped without being stored) and must be ASCII
/// `Name: value` lines with one Content-Length (repeated only with the same
/// value) of at most 64 MiB. After a framing error the reader skips, in
/// bounded chunks, to the next `Content-Length:` (anywhere: a body is not
/// line-terminated, so a header can follow one on the same line) and reads
/// on from there:
///
/// - a bad header line: from just after that line's first byte (a real
///   header further on the same line is found);
/// - no Content-Length: from the end of the header block;
/// - a body that is not JSON: a `Content-Length:` inside it means it
///   swallowed the next message (declared too long): reading resumes there;
///   otherwise the body is dropped, and if the next line is malformed it is
///   the rest of this body (declared too short), skipped without a second
///   report.
///
/// Memory is bounded by the buffer: a declared length is never allocated up
/// front, the buffer grows only with bytes that arrive.
pub(crate) struct FrameReader<R> {
    inner: R,
    /// Bytes read from `inner` are `buf[..end]` (the rest is room).
    buf: Vec<u8>,
    end: usize,
    /// The first unconsumed byte of `buf`.
    pos: usize,
    eof: bool,
    /// Skip to the next `Content-Length:` before reading headers.
    resync: bool,
    /// Lines logged so far.
    logged: u32,
    /// The last body was not JSON and had no header inside: a malformed
    /// line right after it is its rest, not a new error.
    after_bad_body: bool,
}

impl<R: Read> FrameReader<R> {
    pub(crate) fn new(inner: R) -> Self {
        FrameReader {
            inner,
            buf: Vec::new(),
            end: 0,
            pos: 0,
            eof: false,
            resync: false,
            logged: 0,
            after_bad_body: false,
        }
    }

    /// Logs a line about framing to stderr, up to [`MAX_LOGGED`] lines.
    pub(crate) fn log(&mut self, line: &str) {
        if self.logged < MAX_LOGGED {
            eprintln!("dpplan lsp: {line}");
        } else if self.logged == MAX_LOGGED {
            eprintln!("dpplan lsp: further framing errors are not logged");
        }
        self.logged = self.logged.saturating_add(1);
    }

    /// The bytes read and not consumed.
    fn available(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Reads up to `want` more bytes (at least a chunk's room, at most 16);
    /// returns how many came (0 at the end of input). Consumed bytes are
    /// dropped first, so the buffer holds only what is still needed, and it
    /// grows only when what is needed does not fit.
    fn fill(&mut self, want: usize) -> io::Result<usize> {
        if self.eof {
            return Ok(0);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
            // Give back the room of a large body once it is consumed.
            if self.buf.len() > 16 * CHUNK && self.end < CHUNK {
                self.buf.truncate(2 * CHUNK);
                self.buf.shrink_to_fit();
            }
        }
        let room = want.clamp(CHUNK, 16 * CHUNK);
        if self.buf.len() < self.end + room {
            self.buf.resize(self.end + room, 0);
        }
        let n = loop {
            match self.inner.read(&mut self.buf[self.end..self.end + room]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        };
        self.end += n;
        if n == 0 {
            self.eof = true;
        }
        Ok(n)
    }

    /// Skips to the next `Content-Length:`; false at the end of input.
    fn skip_to_marker(&mut self) -> io::Result<bool> {
        let mut skipped: u64 = 0;
        let found = loop {
            if let Some(i) = find_marker(self.available()) {
                self.pos += i;
                skipped += i as u64;
                break true;
            }
            // Keep a tail that may be the start of a marker.
            let keep = MARKER.len() - 1;
            let drop = self.available().len().saturating_sub(keep);
            self.pos += drop;
            skipped += drop as u64;
            if self.fill(CHUNK)? == 0 {
                skipped += self.available().len() as u64;
                self.pos = self.end;
                break false;
            }
        };
        if skipped > 0 {
            self.log(&format!(
                "skipped {skipped} bytes to the next Content-Length header"
            ));
        }
        Ok(found)
    }

    fn line(&mut self) -> io::Result<Line> {
        let mut searched = 0;
        loop {
            if let Some(i) = self.available()[searched..]
                .iter()
                .position(|&b| b == b'\n')
            {
                let end = searched + i;
                return Ok(if end > MAX_LINE {
                    Line::TooLong
                } else {
                    Line::End(self.pos + end)
                });
            }
            searched = self.available().len();
            if searched > MAX_LINE {
                return Ok(Line::TooLong);
            }
            if self.fill(CHUNK)? == 0 {
                return Ok(Line::Eof);
            }
        }
    }

    /// A framing error at the current line: skip from just after its first
    /// byte.
    fn bad_line(&mut self, why: String, first_line: bool) -> Headers {
        self.pos += 1;
        self.resync = true;
        Headers::Bad { why, first_line }
    }

    fn headers(&mut self) -> io::Result<Headers> {
        let mut length: Option<usize> = None;
        let mut seen_header = false;
        let mut size = 0;
        loop {
            let end = match self.line()? {
                Line::Eof => {
                    let rest = self.available();
                    if !seen_header && rest.iter().all(u8::is_ascii_whitespace) {
                        self.pos = self.end;
                        return Ok(Headers::Eof);
                    }
                    let why = format!(
                        "the input ended inside a message's headers: {}",
                        quote(rest)
                    );
                    self.pos = self.end;
                    return Ok(Headers::Bad {
                        why,
                        first_line: false,
                    });
                }
                Line::TooLong => {
                    let why = format!(
                        "a header line longer than {MAX_LINE} bytes: {}",
                        quote(self.available())
                    );
                    return Ok(self.bad_line(why, !seen_header));
                }
                Line::End(end) => end,
            };
            let raw = &self.buf[self.pos..end];
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            if line.is_empty() {
                self.pos = end + 1;
                if !seen_header {
                    // Blank lines between messages.
                    continue;
                }
                return Ok(match length {
                    Some(n) => Headers::Length(n),
                    None => {
                        self.resync = true;
                        Headers::Bad {
                            why: "a message without a Content-Length header".into(),
                            first_line: false,
                        }
                    }
                });
            }
            let first_line = !seen_header;
            seen_header = true;
            size += end + 1 - self.pos;
            if size > MAX_HEADER {
                let why = format!("headers longer than {MAX_HEADER} bytes");
                return Ok(self.bad_line(why, false));
            }
            match parse_header(line) {
                Ok(Some(n)) => match length {
                    Some(m) if m != n => {
                        let why = format!("conflicting Content-Length headers ({m} and {n})");
                        return Ok(self.bad_line(why, false));
                    }
                    _ => length = Some(n),
                },
                Ok(None) => {}
                Err(why) => return Ok(self.bad_line(why, first_line)),
            }
            self.pos = end + 1;
        }
    }

    /// The next frame.
    pub(crate) fn next_frame(&mut self) -> io::Result<Frame> {
        loop {
            if self.resync {
                self.resync = false;
                if !self.skip_to_marker()? {
                    return Ok(Frame::Eof);
                }
            }
            let quiet = std::mem::take(&mut self.after_bad_body);
            let n = match self.headers()? {
                Headers::Eof => return Ok(Frame::Eof),
                // The rest of a body that was declared too short: reported
                // with it already.
                Headers::Bad {
                    first_line: true, ..
                } if quiet => continue,
                Headers::Bad { why, .. } => return Ok(Frame::Bad(why)),
                Headers::Length(n) => n,
            };
            while self.available().len() < n {
                if self.fill(n - self.available().len())? == 0 {
                    let why = format!(
                        "the input ended inside a message body ({} of {n} bytes)",
                        self.available().len()
                    );
                    self.pos = self.end;
                    return Ok(Frame::Bad(why));
                }
            }
            let body = &self.available()[..n];
            return Ok(match serde_json::from_slice(body) {
                Ok(v) => {
                    self.pos += n;
                    Frame::Json(v)
                }
                Err(e) => {
                    // serde_json's messages name a position, never the input.
                    let why = format!("parse error: {e}");
                    match find_marker(body) {
                        Some(i) => self.pos += i,
                        None => {
                            self.pos += n;
                            self.after_bad_body = true;
                        }
                    }
                    Frame::Bad(why)
                }
            });
        }
    }
}

/// The id to answer an invalid message with: its own if it is a valid
/// JSON-RPC id (a number or a string), else null.
fn reply_id(value: &serde_json::Value) -> serde_json::Value {
    match value.get("id") {
        Some(id @ (serde_json::Value::Number(_) | serde_json::Value::String(_))) => id.clone(),
        _ => serde_json::Value::Null,
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
            let mut frames = FrameReader::new(reader);
            loop {
                let frame = match frames.next_frame() {
                    Ok(f) => f,
                    Err(e) => {
                        eprintln!("dpplan lsp: reading the client failed: {e}");
                        break;
                    }
                };
                let value = match frame {
                    Frame::Eof => break,
                    Frame::Bad(why) => {
                        frames.log(&why);
                        // JSON-RPC: a ParseError has a null id.
                        let _ =
                            write_frame(&w, &error_body(&serde_json::Value::Null, -32700, &why));
                        continue;
                    }
                    Frame::Json(v) => v,
                };
                let id = reply_id(&value);
                // JSON-RPC: a notification is a call without an `id` member.
                let notification =
                    value.get("id").is_none() && value.get("method").is_some_and(|m| m.is_string());
                // An `id` that is no JSON-RPC id (an object, an array, a
                // boolean) makes an invalid request, not a notification.
                let bad_id = value
                    .get("id")
                    .is_some_and(|i| !(i.is_number() || i.is_string() || i.is_null()));
                let msg: Option<Message> = if bad_id {
                    None
                } else {
                    serde_json::from_value(value).ok()
                };
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
                        if !notification {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per read.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.data.len().min(self.step).min(out.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn valid(id: i64) -> Vec<u8> {
        frame(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"x\",\"params\":{{}}}}"
        ))
    }

    /// Every frame of `input`, read whole and a few bytes at a time (both
    /// must agree): the ids of the JSON ones, and the errors.
    fn read_all(input: &[u8]) -> (Vec<i64>, Vec<String>) {
        let mut results = Vec::new();
        for step in [usize::MAX, 1, 7, 4096] {
            let mut r = FrameReader::new(Trickle { data: input, step });
            let (mut ids, mut bad) = (Vec::new(), Vec::new());
            loop {
                match r.next_frame().unwrap() {
                    Frame::Json(v) => ids.push(v["id"].as_i64().unwrap_or(-1)),
                    Frame::Bad(why) => bad.push(why),
                    Frame::Eof => break,
                }
            }
            results.push((ids, bad));
        }
        for r in &results[1..] {
            assert_eq!(r.0, results[0].0, "ids differ with the read size");
            assert_eq!(r.1.len(), results[0].1.len(), "{:?}", r.1);
        }
        results.swap_remove(0)
    }

    /// `bad` followed by ten valid frames: all ten come through, after
    /// `errors` framing errors.
    fn recovers(bad: &[u8], errors: usize) {
        let mut input = bad.to_vec();
        for id in 100..110 {
            input.extend(valid(id));
        }
        let (ids, bad) = read_all(&input);
        assert_eq!(ids, (100..110).collect::<Vec<_>>(), "{bad:?}");
        assert_eq!(bad.len(), errors, "{bad:?}");
        for why in bad {
            assert!(why.len() < 200, "{why}");
        }
    }

    const BODY: &str = "{\"jsonrpc\":\"2.0\",\"id\":50,\"method\":\"x\",\"params\":{}}";

    #[test]
    fn well_framed_input() {
        let mut input = b"\r\n".to_vec();
        input.extend(valid(1));
        input.extend(b"content-length: 48\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n");
        input.extend(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\",\"params\":1}");
        // The same length twice is no conflict.
        input.extend(b"Content-Length: 48\r\nContent-Length:48\n\n");
        input.extend(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\",\"params\":1}");
        assert_eq!(read_all(&input), (vec![1, 2, 3], vec![]));
    }

    #[test]
    fn bad_content_lengths() {
        for header in [
            "Content-Type: text/plain\r\n\r\n".to_string(),
            "Content-Length: -5\r\n\r\n".into(),
            "Content-Length: 1e3\r\n\r\n".into(),
            "Content-Length:\r\n\r\n".into(),
            "Content-Length: 99999999999999999999999999\r\n\r\n".into(),
            format!("Content-Length: {}\r\n\r\n", MAX_BODY + 1),
            format!(
                "Content-Length: {}\r\nContent-Length: 3\r\n\r\n",
                BODY.len()
            ),
            format!("Content-Length: {}\r\nnot a header\r\n\r\n", BODY.len()),
            format!("Content-Length: {}\r\nX: \u{e9}\r\n\r\n", BODY.len()),
        ] {
            let mut bad = header.into_bytes();
            bad.extend(BODY.as_bytes());
            recovers(&bad, 1);
        }
    }

    #[test]
    fn wrong_lengths_realign() {
        // Too short: the rest of the body is where a header should be.
        let mut bad = format!("Content-Length: {}\r\n\r\n", BODY.len() - 20).into_bytes();
        bad.extend(BODY.as_bytes());
        recovers(&bad, 1);
        // Too long: the body swallows the next header and more.
        let mut bad = format!("Content-Length: {}\r\n\r\n", BODY.len() + 30).into_bytes();
        bad.extend(BODY.as_bytes());
        recovers(&bad, 1);
        // A body that is not JSON, well framed.
        recovers(&frame("not json"), 1);
        recovers(&frame(""), 1);
    }

    #[test]
    fn long_lines_are_skipped_in_bounded_memory() {
        // A long line without a line end, then the next message.
        let mut bad = b"X-Filler: ".to_vec();
        bad.resize(5 * 1024 * 1024, b'x');
        let mut input = bad.clone();
        input.extend(valid(1));
        let mut r = FrameReader::new(Trickle {
            data: &input,
            step: usize::MAX,
        });
        let Frame::Bad(why) = r.next_frame().unwrap() else {
            panic!("a framing error first");
        };
        assert!(why.len() < 200, "{why}");
        assert!(matches!(r.next_frame().unwrap(), Frame::Json(_)));
        assert!(r.buf.len() < 1024 * 1024, "{}", r.buf.len());
        // With a line end, and a malformed line of binary.
        bad.extend(b"\r\n\r\n");
        recovers(&bad, 1);
        recovers(b"\x00\x01\xfe\xff\r\n\r\n", 1);
    }

    #[test]
    fn a_large_declared_length_is_not_allocated_up_front() {
        let input = format!("Content-Length: {}\r\n\r\n{{\"a\":", MAX_BODY);
        let mut r = FrameReader::new(input.as_bytes());
        let Frame::Bad(why) = r.next_frame().unwrap() else {
            panic!("the input ends inside the body");
        };
        assert!(why.contains("ended inside a message body"), "{why}");
        assert!(r.buf.len() <= 16 * CHUNK + 1024, "{}", r.buf.len());
        assert!(matches!(r.next_frame().unwrap(), Frame::Eof));
    }

    #[test]
    fn truncated_input() {
        let mut input = valid(1);
        input.extend(b"Content-Len");
        assert_eq!(read_all(&input).0, vec![1]);
        assert_eq!(read_all(&input).1.len(), 1);
        // Blank lines at the end are no message.
        let mut input = valid(1);
        input.extend(b"\r\n\r\n");
        assert_eq!(read_all(&input), (vec![1], vec![]));
    }

    #[test]
    fn quotes_are_short_and_escaped() {
        let q = quote(&[0xff; 1000]);
        assert!(q.len() <= QUOTE + 8, "{q}");
        assert!(q.is_ascii() || q.ends_with('…'));
        assert_eq!(quote(b"a\"b\\\r\n\x1b"), "\"a\\\"b\\\\\\r\\n\\x1b\"");
    }
}
