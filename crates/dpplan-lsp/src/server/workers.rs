//! The threads: the analysis of document versions and the request handlers.
//!
//! A document version is analysed on a thread, one per document at a time
//! and at most [`MAX_ANALYSIS_THREADS`] in all: first the diagnostics that
//! need no accounting, then the analysis and the full set. Each is published
//! only while that version is still the document's latest (two publishes per
//! version, ARCHITECTURE.md invariant 9), so a stale result is dropped, and a
//! thread whose version was superseded before its full analysis skips it.
//!
//! A request about an open document runs on a thread with the analysis of
//! its current version, at most [`MAX_REQUEST_THREADS`] at a time, or waits
//! for that analysis ([`DocState::parked`](super::state::DocState::parked)),
//! except formatting and the outline, which read the current text (the
//! outline the analysis too, once it is done).
//! Threads report to the main loop with a [`Done`].

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_channel::{Receiver, Sender};
use line_index::LineIndex;
use lsp_server::{ErrorCode, Message, Request, Response};
use lsp_types as lsp;
use lsp_types::notification::{DidChangeTextDocument, Notification as _};
use lsp_types::request::{
    CodeActionResolveRequest, DocumentSymbolRequest, Formatting, Request as _,
};
use serde_json::Value;

use dpplan_ide::dpplan_check::memo::AccountingCache;
use dpplan_ide::{Context, Document, PolicyCache};

use super::dispatch::{answer, panic_message};
use super::state::Snapshot;
use super::Server;
use crate::convert::{self, Encoding, Lines};

/// Request handlers running on threads at the same time, at most (more wait
/// their turn on the main loop).
const MAX_REQUEST_THREADS: usize = 8;

/// Documents analysed at the same time, at most (more wait their turn, so a
/// slow document holds up no other unless this many are slow).
const MAX_ANALYSIS_THREADS: usize = 4;

/// The stack of analysis and request threads (the main thread's size: the
/// parser and checker recurse over nested blocks).
const THREAD_STACK: usize = 8 * 1024 * 1024;

/// What a thread reports to the main loop.
pub(super) enum Done {
    /// The diagnostics of a generation that need no accounting.
    Early {
        key: String,
        generation: u64,
        diagnostics: Vec<lsp::Diagnostic>,
    },
    /// The analysis of a generation and its full diagnostics.
    Full {
        key: String,
        generation: u64,
        doc: Arc<Document>,
        diagnostics: Vec<lsp::Diagnostic>,
    },
    /// An analysis that ended without a result: it panicked (`failed`), or
    /// its text was superseded.
    Ended {
        key: String,
        generation: u64,
        failed: bool,
    },
    /// The answer of a request handled on a thread.
    Answer(Response),
}

/// One generation's analysis, run on a thread.
struct Analysis {
    key: String,
    generation: u64,
    latest: Arc<AtomicU64>,
    uri: lsp::Uri,
    text: String,
    index: Arc<LineIndex>,
    encoding: Encoding,
    docs_base: String,
    /// The document's file, when its URI names one (for its `dpplan.toml`).
    path: Option<std::path::PathBuf>,
    policies: Arc<PolicyCache>,
    accounting: Arc<AccountingCache>,
}

impl Analysis {
    fn current(&self) -> bool {
        self.latest.load(Ordering::Acquire) == self.generation
    }

    fn run(self, done: &Sender<Done>) {
        // The policy as it is on disk now (re-read when the file changed).
        let policy = catch_unwind(AssertUnwindSafe(|| {
            self.path.as_deref().and_then(|p| self.policies.for_plan(p))
        }))
        .unwrap_or_else(|p| {
            eprintln!(
                "dpplan lsp: reading the policy of {} panicked: {}",
                self.key,
                panic_message(&*p)
            );
            None
        });
        if self.current() {
            // Everything that needs no accounting: syntax, then semantic.
            let early = catch_unwind(AssertUnwindSafe(|| {
                let lines = Lines {
                    text: &self.text,
                    index: &self.index,
                    encoding: self.encoding,
                };
                Document::unaccounted_diagnostics_in(&self.text, policy.as_ref())
                    .iter()
                    .map(|d| convert::to_lsp_diagnostic(d, &lines, &self.uri, &self.docs_base))
                    .collect::<Vec<_>>()
            }));
            match early {
                Ok(diagnostics) => {
                    let _ = done.send(Done::Early {
                        key: self.key.clone(),
                        generation: self.generation,
                        diagnostics,
                    });
                }
                Err(p) => eprintln!(
                    "dpplan lsp: the early diagnostics of {} panicked: {}",
                    self.key,
                    panic_message(&*p)
                ),
            }
        }
        if !self.current() {
            let _ = done.send(Done::Ended {
                key: self.key,
                generation: self.generation,
                failed: false,
            });
            return;
        }
        let Analysis {
            key,
            generation,
            uri,
            text,
            index,
            encoding,
            docs_base,
            accounting,
            ..
        } = self;
        let full = catch_unwind(AssertUnwindSafe(|| {
            let context = Context {
                policy,
                cache: Some(accounting),
            };
            let doc = Arc::new(Document::with_context(text, context));
            let lines = Lines {
                text: doc.text(),
                index: &index,
                encoding,
            };
            let diagnostics: Vec<lsp::Diagnostic> = doc
                .diagnostics()
                .iter()
                .map(|d| convert::to_lsp_diagnostic(d, &lines, &uri, &docs_base))
                .collect();
            (doc, diagnostics)
        }));
        let _ = done.send(match full {
            Ok((doc, diagnostics)) => Done::Full {
                key,
                generation,
                doc,
                diagnostics,
            },
            Err(p) => {
                eprintln!(
                    "dpplan lsp: analysing {key} panicked: {}",
                    panic_message(&*p)
                );
                Done::Ended {
                    key,
                    generation,
                    failed: true,
                }
            }
        });
    }
}

/// Runs `f` on a new thread, or on the caller's if the OS cannot start one
/// (slower, but nothing is lost).
fn spawn(name: &str, f: impl FnOnce() + Send + 'static) {
    let slot = Arc::new(Mutex::new(Some(f)));
    let theirs = Arc::clone(&slot);
    let started = std::thread::Builder::new()
        .name(name.into())
        .stack_size(THREAD_STACK)
        .spawn(move || {
            let f = theirs.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(f) = f {
                f();
            }
        });
    if let Err(e) = started {
        eprintln!("dpplan lsp: cannot start a thread ({e}): working on the main loop");
        let f = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(f) = f {
            f();
        }
    }
}

/// The document a request or notification is about, if any.
fn uri_of(params: &Value) -> Option<&str> {
    params.get("textDocument")?.get("uri")?.as_str()
}

/// The document a request is about, as the client wrote its URI: a
/// `textDocument/…` request's, or the one a lazily resolved code action
/// carries.
fn request_uri(req: &Request) -> Option<String> {
    let uri = if req.method == CodeActionResolveRequest::METHOD {
        req.params.get("data")?.get("uri")?.as_str()
    } else if req.method.starts_with("textDocument/") {
        uri_of(&req.params)
    } else {
        None
    };
    uri.map(str::to_string)
}

/// Whether an edit of the document is waiting in the queue (a request
/// about it would answer about a stale text).
fn newer_edit(queue: &VecDeque<Message>, uri: &str) -> bool {
    queue.iter().any(|m| {
        matches!(m, Message::Notification(n) if n.method == DidChangeTextDocument::METHOD && uri_of(&n.params) == Some(uri))
    })
}

impl Server {
    /// Starts the analysis of every document whose latest version has none
    /// yet (and whose previous analysis is not still running).
    pub(super) fn start_analyses(&mut self) {
        let keys: Vec<String> = self
            .docs
            .iter()
            .filter(|(_, s)| s.dirty && s.running.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            self.start_analysis(&key);
        }
    }

    /// Starts the analysis of a document's latest version on a thread,
    /// unless it is started already, another of its analyses is running or
    /// `MAX_ANALYSIS_THREADS` are (then it starts when one ends).
    fn start_analysis(&mut self, key: &str) {
        let encoding = self.encoding;
        let docs_base = self.docs_base.clone();
        if self.analyses_running >= MAX_ANALYSIS_THREADS {
            return;
        }
        let Some(state) = self.docs.get_mut(key) else {
            return;
        };
        if !state.dirty || state.running.is_some() {
            return;
        }
        self.analyses_running += 1;
        state.dirty = false;
        state.running = Some(state.generation);
        let job = Analysis {
            key: key.to_string(),
            generation: state.generation,
            latest: Arc::clone(&state.latest),
            uri: state.uri.clone(),
            text: state.text.clone(),
            index: Arc::clone(&state.index),
            encoding,
            docs_base,
            path: crate::convert::file_path(&state.uri),
            policies: Arc::clone(&self.policies),
            accounting: Arc::clone(&state.accounting),
        };
        let done = self.done.clone();
        spawn("dpplan-lsp-analysis", move || job.run(&done));
    }

    fn publish(&self, uri: lsp::Uri, version: i32, diagnostics: Vec<lsp::Diagnostic>) {
        self.notify::<lsp::notification::PublishDiagnostics>(lsp::PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: Some(version),
        });
    }

    /// A thread's report. Diagnostics are published only for the document's
    /// current generation: first those that need no accounting, then the
    /// full set (two publishes per version, ARCHITECTURE.md invariant 9).
    pub(super) fn on_done(&mut self, done: Done, queue: &VecDeque<Message>) {
        match done {
            Done::Answer(r) => {
                self.requests_running = self.requests_running.saturating_sub(1);
                self.respond(r);
                if let Some((req, snap)) = self.requests_waiting.pop_front() {
                    self.run_request(req, snap);
                }
            }
            Done::Early {
                key,
                generation,
                diagnostics,
            } => {
                if let Some(s) = self.docs.get(&key) {
                    if s.generation == generation {
                        self.publish(s.uri.clone(), s.version, diagnostics);
                    }
                }
            }
            Done::Full {
                key,
                generation,
                doc,
                diagnostics,
            } => {
                self.analysis_ended(&key, generation);
                let Some(s) = self.docs.get_mut(&key) else {
                    return;
                };
                if s.generation != generation {
                    // Stale: dropped.
                    return;
                }
                s.doc = Some(doc);
                let (uri, version) = (s.uri.clone(), s.version);
                self.publish(uri, version, diagnostics);
                self.release(&key, queue);
            }
            Done::Ended {
                key,
                generation,
                failed,
            } => {
                self.analysis_ended(&key, generation);
                let Some(s) = self.docs.get_mut(&key) else {
                    return;
                };
                if s.generation != generation {
                    return;
                }
                if failed {
                    s.failed = true;
                    self.release(&key, queue);
                } else {
                    // Only a superseded analysis ends without a result;
                    // analyse again rather than leave requests waiting.
                    s.dirty = true;
                    self.start_analysis(&key);
                }
            }
        }
    }

    /// An analysis ended (with a result or not): the documents that
    /// requests wait for are analysed next; the others start when the
    /// queue is empty.
    fn analysis_ended(&mut self, key: &str, generation: u64) {
        self.analyses_running = self.analyses_running.saturating_sub(1);
        if let Some(s) = self.docs.get_mut(key) {
            if s.running == Some(generation) {
                s.running = None;
            }
        }
        let waited: Vec<String> = self
            .docs
            .iter()
            .filter(|(_, s)| !s.parked.is_empty() && s.dirty && s.running.is_none())
            .map(|(k, _)| k.clone())
            .collect();
        for key in waited {
            self.start_analysis(&key);
        }
    }

    /// The analysis of a document's current version is done (or failed):
    /// its waiting requests go on.
    fn release(&mut self, key: &str, queue: &VecDeque<Message>) {
        let Some(s) = self.docs.get_mut(key) else {
            return;
        };
        for req in std::mem::take(&mut s.parked) {
            self.request(req, queue);
        }
    }

    /// The client closed its input: answer what it asked before (requests
    /// waiting for an analysis or running), then stop. Analyses that no
    /// request waits for are abandoned.
    pub(super) fn finish(&mut self, finished: &Receiver<Done>) {
        let empty = VecDeque::new();
        loop {
            let parked: Vec<String> = self
                .docs
                .iter()
                .filter(|(_, s)| !s.parked.is_empty())
                .map(|(k, _)| k.clone())
                .collect();
            for key in &parked {
                self.start_analysis(key);
            }
            let analysing = self.analyses_running > 0;
            let requests = self.requests_running > 0 || !self.requests_waiting.is_empty();
            if !requests && (parked.is_empty() || !analysing) {
                // Nothing left, or nothing that could answer what is left.
                for key in parked {
                    let waiting = self
                        .docs
                        .get_mut(&key)
                        .map(|s| std::mem::take(&mut s.parked))
                        .unwrap_or_default();
                    self.modified(&key, waiting);
                }
                return;
            }
            match finished.recv() {
                Ok(d) => self.on_done(d, &empty),
                Err(_) => return,
            }
        }
    }

    // ------------------------------------------------------------ requests

    /// A request after `initialize`: answered at once when it is about no
    /// open document (or malformed), on a thread with the analysis of its
    /// document's current version, or once that analysis is done (see
    /// [`DocState::parked`](super::state::DocState::parked)). Formatting,
    /// and the outline before the analysis is done, never wait: they run on
    /// the current text alone (the formatter; the syntax tree).
    pub(super) fn request(&mut self, req: Request, queue: &VecDeque<Message>) {
        let raw = request_uri(&req);
        let key = raw
            .as_deref()
            .and_then(|u| lsp::Uri::from_str(u).ok())
            .map(|u| u.as_str().to_string())
            .filter(|k| self.docs.contains_key(k));
        let (Some(raw), Some(key)) = (raw, key) else {
            // Nothing slow: an error, or a request about no document.
            let r = answer(req, &self.ctx(), None);
            self.respond(r);
            return;
        };
        let formatting = req.method == Formatting::METHOD;
        if !formatting && newer_edit(queue, &raw) {
            self.respond_err(
                req.id,
                ErrorCode::ContentModified,
                "the document changed".into(),
            );
            return;
        }
        let encoding = self.encoding;
        let Some(state) = self.docs.get_mut(&key) else {
            return;
        };
        let snapshot = |doc: Option<Arc<Document>>, text: Option<String>| Snapshot {
            key: key.clone(),
            doc,
            text,
            index: Arc::clone(&state.index),
            encoding,
        };
        // Formatting reads the text only; the outline reads the analysis
        // when it is done (for its details) and the text until then.
        let ready = match state.doc.clone() {
            _ if formatting => Some(snapshot(None, Some(state.text.clone()))),
            Some(doc) => Some(snapshot(Some(doc), None)),
            None if req.method == DocumentSymbolRequest::METHOD => {
                Some(snapshot(None, Some(state.text.clone())))
            }
            None => None,
        };
        if let Some(snap) = ready {
            self.run_request(req, snap);
        } else if state.failed {
            self.respond_err(
                req.id,
                ErrorCode::InternalError,
                "internal error: the analysis of this document failed".into(),
            );
        } else {
            state.parked.push(req);
            self.start_analysis(&key);
        }
    }

    /// Handles a request on a thread (or queues it while
    /// `MAX_REQUEST_THREADS` run); the answer comes back as a [`Done`].
    fn run_request(&mut self, req: Request, snap: Snapshot) {
        if self.requests_running >= MAX_REQUEST_THREADS {
            self.requests_waiting.push_back((req, snap));
            return;
        }
        self.requests_running += 1;
        let ctx = self.ctx();
        let done = self.done.clone();
        spawn("dpplan-lsp-request", move || {
            let _ = done.send(Done::Answer(answer(req, &ctx, Some(&snap))));
        });
    }
}
