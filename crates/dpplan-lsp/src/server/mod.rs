//! The server: [`run`] and its main loop.
//!
//! The main loop owns the documents and runs nothing slow: it reads the
//! client's messages, keeps the texts, answers `initialize`, `shutdown` and
//! `exit` at once, and hands everything that can take long to threads, which
//! report back to it:
//!
//! - the analysis of a document version, one thread per document at a time:
//!   first the diagnostics that need no accounting, then the analysis and the
//!   full set. The loop publishes each only while that version is still the
//!   document's latest, so a stale result is dropped, and a thread whose
//!   version was superseded before its full analysis skips it;
//! - requests about an open document (hover, completion, …), on the
//!   analysis of its current version (some compute more: per-query costs,
//!   noise calibration); formatting on its current text, and the outline on
//!   its text until that analysis is done, so neither waits for it.
//!
//! So a slow analysis (a large or broken plan) never delays `shutdown`,
//! `exit` or another document's requests. The loop drains every message that
//! has arrived before handling the oldest, so that a `$/cancelRequest` or a
//! newer edit already waiting cancels a request before any work is done, and
//! a burst of edits is analysed once: analyses start when the queue is empty
//! (or when a request needs one). Every handler and analysis runs under
//! `catch_unwind`: a panic answers its request with `InternalError` and the
//! server keeps serving.
//!
//! Where each piece lives:
//!
//! - [`state`]: per-document state (texts, versions, the analysis of the
//!   current version, requests waiting for it) and the document
//!   notifications that change it; the [`Snapshot`] a handler reads;
//! - [`workers`]: the analysis and request threads, their limits, the
//!   dropping of stale results, and where a request runs (at once, on a
//!   thread, or parked until its document's analysis is done);
//! - [`dispatch`]: from a request's or notification's method to its handler,
//!   by the lsp-types type (`.on::<HoverRequest>(handlers::hover)`), with
//!   `InvalidParams`, `MethodNotFound` and `catch_unwind`;
//! - [`handlers`]: one function per request, typed params and the
//!   document's snapshot in, the typed result out;
//! - [`initialize`]: the negotiated settings and the server's capabilities;
//! - [`crate::convert`]: every conversion to and from lsp-types.

mod dispatch;
mod handlers;
mod initialize;
mod state;
mod workers;

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crossbeam_channel::{select, unbounded, Sender};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{Cancel, Exit, Notification as _};
use lsp_types::request::{Initialize, Request as _, Shutdown};
use serde_json::Value;

use self::dispatch::{panic_message, Ctx};
use self::state::{DocState, Snapshot};
use self::workers::Done;
use crate::convert::Encoding;
use dpplan_ide::PolicyCache;

/// Options of the server (tests turn on the test-only methods).
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Accept `dpplan/testPanic` (panics inside its handler).
    pub test_methods: bool,
}

/// The default base of documentation links (`{base}docs/diagnostics.md#dp001`):
/// none. Where the documentation is published is the user's to say
/// (`docsBaseUrl`, `DPPLAN_DOCS_BASE`); without it diagnostics carry no link
/// and the hover shows the documentation itself.
pub const DEFAULT_DOCS_BASE: &str = "";

struct Server {
    sender: Sender<Message>,
    options: ServerOptions,
    /// `initialize` was answered.
    initialized: bool,
    /// `shutdown` was answered: requests are refused until `exit`.
    shutdown: bool,
    encoding: Encoding,
    docs_base: String,
    /// The client resolves code actions' edits lazily (`codeAction/resolve`).
    resolve_edits: bool,
    /// The open documents, by URI.
    docs: HashMap<String, DocState>,
    /// The last generation given to a text.
    generation: u64,
    /// Requests cancelled while still in the queue.
    cancelled: HashSet<RequestId>,
    /// Where threads report.
    done: Sender<Done>,
    /// Analyses running on threads.
    analyses_running: usize,
    /// Request handlers running on threads.
    requests_running: usize,
    /// Requests ready to run, waiting for a thread.
    requests_waiting: VecDeque<(Request, Snapshot)>,
    /// The policy files (`dpplan.toml`) of the open documents, re-read when
    /// they change.
    policies: Arc<PolicyCache>,
}

/// Runs the server on a connection until the client says `exit` or goes
/// away. Returns whether `shutdown` came before (the exit code is 0 then).
pub fn run(connection: Connection, options: ServerOptions) -> bool {
    let Connection { sender, receiver } = connection;
    let (done, finished) = unbounded();
    let mut server = Server {
        sender,
        options,
        initialized: false,
        shutdown: false,
        encoding: Encoding::Utf16,
        docs_base: DEFAULT_DOCS_BASE.to_string(),
        resolve_edits: false,
        docs: HashMap::new(),
        generation: 0,
        cancelled: HashSet::new(),
        done,
        analyses_running: 0,
        requests_running: 0,
        requests_waiting: VecDeque::new(),
        policies: PolicyCache::new(),
    };
    let mut queue: VecDeque<Message> = VecDeque::new();
    loop {
        // What the threads finished first: it may answer waiting requests.
        while let Ok(d) = finished.try_recv() {
            server.on_done(d, &queue);
        }
        if queue.is_empty() {
            if server.initialized {
                server.start_analyses();
            }
            select! {
                recv(receiver) -> m => match m {
                    Ok(m) => queue.push_back(m),
                    Err(_) => {
                        eprintln!("dpplan lsp: the client went away");
                        server.finish(&finished);
                        return server.shutdown;
                    }
                },
                recv(finished) -> d => {
                    if let Ok(d) = d {
                        server.on_done(d, &queue);
                    }
                    continue;
                }
            }
        }
        while let Ok(m) = receiver.try_recv() {
            queue.push_back(m);
        }
        server.note_cancels(&queue);
        let Some(msg) = queue.pop_front() else {
            continue;
        };
        match msg {
            Message::Request(req) => server.on_request(req, &queue),
            Message::Notification(n) if n.method == Exit::METHOD => return server.shutdown,
            Message::Notification(n) => server.on_notification(n),
            Message::Response(_) => {}
        }
    }
}

/// The id a `$/cancelRequest` names.
fn cancel_id(params: &Value) -> Option<RequestId> {
    let id = params.get("id")?;
    if let Some(i) = id.as_i64() {
        i32::try_from(i).ok().map(RequestId::from)
    } else {
        id.as_str().map(|s| RequestId::from(s.to_string()))
    }
}

impl Server {
    /// Every request a `$/cancelRequest` in the queue names is cancelled
    /// when it comes up, before any work is done.
    fn note_cancels(&mut self, queue: &VecDeque<Message>) {
        for m in queue {
            if let Message::Notification(n) = m {
                if n.method == Cancel::METHOD {
                    if let Some(id) = cancel_id(&n.params) {
                        self.cancelled.insert(id);
                    }
                }
            }
        }
    }

    /// A request: `initialize` and `shutdown` are answered here, the others
    /// handed on (see `workers`) unless cancelled, early or late.
    fn on_request(&mut self, req: Request, queue: &VecDeque<Message>) {
        if self.cancelled.remove(&req.id) {
            self.respond_err(req.id, ErrorCode::RequestCanceled, "cancelled".into());
        } else if !self.initialized {
            if req.method == Initialize::METHOD {
                let result = catch_unwind(AssertUnwindSafe(|| self.initialize(&req.params)));
                match result {
                    Ok(v) => {
                        self.respond(Response::new_ok(req.id, v));
                        self.initialized = true;
                    }
                    Err(p) => {
                        self.respond_err(req.id, ErrorCode::InternalError, panic_message(&*p))
                    }
                }
            } else {
                self.respond_err(
                    req.id,
                    ErrorCode::ServerNotInitialized,
                    "the server is not initialized".into(),
                );
            }
        } else if self.shutdown {
            self.respond_err(
                req.id,
                ErrorCode::InvalidRequest,
                "the server is shutting down".into(),
            );
        } else if req.method == Shutdown::METHOD {
            self.shutdown = true;
            self.respond(Response::new_ok(req.id, ()));
        } else if req.method == Initialize::METHOD {
            self.respond_err(
                req.id,
                ErrorCode::InvalidRequest,
                "already initialized".into(),
            );
        } else {
            self.request(req, queue);
        }
    }

    /// A notification other than `exit`: `$/cancelRequest` is handled here,
    /// the others by their handlers (see `dispatch`) once initialized.
    fn on_notification(&mut self, n: Notification) {
        if n.method == Cancel::METHOD {
            // Requests before it in the queue were cancelled when they came
            // up; cancel a waiting one now.
            if let Some(id) = cancel_id(&n.params) {
                self.cancelled.remove(&id);
                self.cancel(&id);
            }
            return;
        }
        if !self.initialized {
            return;
        }
        let method = n.method.clone();
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| dispatch::notification(self, n))) {
            eprintln!(
                "dpplan lsp: the {method} handler panicked: {}",
                panic_message(&*p)
            );
        }
    }

    fn respond(&self, r: Response) {
        let _ = self.sender.send(Message::Response(r));
    }

    fn respond_err(&self, id: RequestId, code: ErrorCode, message: String) {
        self.respond(Response::new_err(id, code as i32, message));
    }

    fn notify<N: lsp_types::notification::Notification>(&self, params: N::Params) {
        let _ = self.sender.send(Message::Notification(Notification::new(
            N::METHOD.to_string(),
            params,
        )));
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            docs_base: self.docs_base.clone(),
            resolve_edits: self.resolve_edits,
            test_methods: self.options.test_methods,
        }
    }
}
