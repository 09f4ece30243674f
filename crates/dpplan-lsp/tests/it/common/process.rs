//! The real `dpplan lsp` process over OS pipes, for the transport and
//! responsiveness tests.
//!
//! The binary is `DPPLAN_BIN` if set, otherwise `dpplan` in this test's own
//! target directory (`target/debug/dpplan`, built by `cargo test
//! --workspace`, or by `cargo build -p dpplan-cli` before `cargo test -p
//! dpplan-lsp`). A binary older than this crate's sources is refused: it
//! would test the old server.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

/// How long a test waits for the server before it gives up (a failure, not a
/// measurement: the tests assert the order of messages, never durations).
pub const DEADLINE: Duration = Duration::from_secs(300);

/// The newest modification time of the files under `dir`.
fn newest(dir: &Path) -> Option<(SystemTime, PathBuf)> {
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let candidate = if path.is_dir() {
            newest(&path)
        } else {
            entry.metadata().ok()?.modified().ok().map(|t| (t, path))
        };
        if let Some((t, p)) = candidate {
            if best.as_ref().is_none_or(|(b, _)| t > *b) {
                best = Some((t, p));
            }
        }
    }
    best
}

/// The `dpplan` binary to test.
pub fn dpplan_bin() -> PathBuf {
    let bin = match std::env::var_os("DPPLAN_BIN") {
        Some(p) => PathBuf::from(p),
        None => {
            // target/<profile>/deps/<this test> → target/<profile>/dpplan
            let exe = std::env::current_exe().expect("the test's own path");
            exe.parent()
                .and_then(Path::parent)
                .expect("the test runs from target/<profile>/deps")
                .join(format!("dpplan{}", std::env::consts::EXE_SUFFIX))
        }
    };
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "no dpplan binary at {}: build it first with `cargo build -p dpplan-cli` \
                 (same CARGO_TARGET_DIR), or set DPPLAN_BIN",
                bin.display()
            )
        });
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    if let Some((t, newer)) = newest(&src) {
        assert!(
            t <= built,
            "{} is older than {}: rebuild it with `cargo build -p dpplan-cli`",
            bin.display(),
            newer.display()
        );
    }
    bin
}

/// One framed message.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

pub fn request(id: i64, method: &str, params: Value) -> Vec<u8> {
    frame(
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
            .to_string()
            .as_bytes(),
    )
}

pub fn notification(method: &str, params: Value) -> Vec<u8> {
    frame(
        json!({ "jsonrpc": "2.0", "method": method, "params": params })
            .to_string()
            .as_bytes(),
    )
}

/// Splits the server's output into messages. Anything that is not a frame
/// fails the test: stdout carries only the protocol.
pub fn parse_frames(mut bytes: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let end = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("an unterminated header on stdout: {} bytes", bytes.len()));
        let header = std::str::from_utf8(&bytes[..end]).expect("an ASCII header on stdout");
        let len: usize = header
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .unwrap_or_else(|| panic!("no Content-Length on stdout: {header:?}"))
            .parse()
            .expect("a number");
        let body = &bytes[end + 4..end + 4 + len];
        out.push(serde_json::from_slice(body).expect("JSON on stdout"));
        bytes = &bytes[end + 4 + len..];
    }
    out
}

/// What a finished server wrote.
pub struct Output {
    pub messages: Vec<Value>,
    pub stderr_len: usize,
    /// The first 64 KiB of stderr.
    pub stderr_head: String,
    pub status: ExitStatus,
}

impl Output {
    /// The response to a request.
    pub fn response(&self, id: i64) -> Option<&Value> {
        self.messages
            .iter()
            .find(|m| m.get("method").is_none() && m["id"] == json!(id))
    }

    /// The errors with a null id and this code.
    pub fn null_id_errors(&self, code: i64) -> usize {
        self.messages
            .iter()
            .filter(|m| m["id"].is_null() && m["error"]["code"] == json!(code))
            .count()
    }
}

/// A running `dpplan lsp`.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    writer: Option<JoinHandle<()>>,
    /// Every message from stdout, as it arrives (the raw bytes are kept too).
    messages: mpsc::Receiver<Value>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<(usize, Vec<u8>)>>,
    /// Messages taken by `next` (kept for `finish`).
    seen: Vec<Value>,
}

impl Server {
    pub fn spawn() -> Server {
        let mut child = Command::new(dpplan_bin())
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dpplan lsp");
        let mut out = child.stdout.take().expect("stdout");
        let mut err = child.stderr.take().expect("stderr");
        let (tx, messages) = mpsc::channel();
        // Read both pipes all along: a server blocked on a full pipe would
        // stop reading its input.
        let stdout = std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = vec![0u8; 64 * 1024];
            let mut parsed = 0;
            loop {
                let n = match out.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                all.extend_from_slice(&buf[..n]);
                // Deliver every complete frame.
                loop {
                    let rest = &all[parsed..];
                    let Some(end) = rest.windows(4).position(|w| w == b"\r\n\r\n") else {
                        break;
                    };
                    let header = String::from_utf8_lossy(&rest[..end]);
                    let Some(len) = header
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .and_then(|v| v.parse::<usize>().ok())
                    else {
                        break;
                    };
                    if rest.len() < end + 4 + len {
                        break;
                    }
                    if let Ok(v) = serde_json::from_slice(&rest[end + 4..end + 4 + len]) {
                        let _ = tx.send(v);
                    }
                    parsed += end + 4 + len;
                }
            }
            all
        });
        let stderr = std::thread::spawn(move || {
            let mut head = Vec::new();
            let mut total = 0;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match err.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                total += n;
                let room = (64 * 1024usize).saturating_sub(head.len());
                head.extend_from_slice(&buf[..n.min(room)]);
            }
            (total, head)
        });
        Server {
            stdin: child.stdin.take(),
            child,
            writer: None,
            messages,
            stdout: Some(stdout),
            stderr: Some(stderr),
            seen: Vec::new(),
        }
    }

    /// Writes now (small messages; the server reads them as they come).
    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(bytes).expect("write to the server");
        stdin.flush().expect("flush");
    }

    /// Writes `bytes` on a thread, then closes stdin (the server sees end of
    /// input after them). A server that stops reading makes the write fail,
    /// not hang the test.
    pub fn write_all_and_close(&mut self, bytes: Vec<u8>) {
        let mut stdin = self.stdin.take().expect("stdin still open");
        self.writer = Some(std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
            let _ = stdin.flush();
        }));
    }

    /// The next message from the server (panics after `DEADLINE`).
    pub fn next(&mut self) -> Value {
        let m = self
            .messages
            .recv_timeout(DEADLINE)
            .expect("a message from the server");
        self.seen.push(m.clone());
        m
    }

    /// Messages up to and including the response to `id`.
    pub fn until_response(&mut self, id: i64) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let m = self.next();
            let done = m.get("method").is_none() && m["id"] == json!(id);
            out.push(m);
            if done {
                return out;
            }
        }
    }

    /// Waits for the process to end (killing it after `DEADLINE`), then
    /// returns everything it wrote.
    pub fn finish(mut self) -> Output {
        drop(self.stdin.take());
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait for the server") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit after its input ended");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        let stdout = self
            .stdout
            .take()
            .expect("stdout")
            .join()
            .expect("stdout reader");
        let (stderr_len, head) = self
            .stderr
            .take()
            .expect("stderr")
            .join()
            .expect("stderr reader");
        Output {
            messages: parse_frames(&stdout),
            stderr_len,
            stderr_head: String::from_utf8_lossy(&head).into_owned(),
            status,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // A failed test must not leave the process behind.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
