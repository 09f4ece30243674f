//! The server: state, main loop and request handlers.
//!
//! The main loop owns the documents and runs nothing slow: it reads the
//! client's messages, keeps the texts, answers `initialize`, `shutdown` and
//! `exit` at once, and hands everything that can take long to threads, which
//! report back to it (a [`Done`]):
//!
//! - the analysis of a document version, one thread per document at a time
//!   (and at most [`MAX_ANALYSIS_THREADS`] in all): first the diagnostics
//!   that need no accounting, then the analysis and the full set. The loop publishes each only while that version is still
//!   the document's latest, so a stale result is dropped, and a thread whose
//!   version was superseded before its full analysis skips it;
//! - requests about an open document (hover, completion, formatting, …), on
//!   the analysis of its current version, at most [`MAX_REQUEST_THREADS`] at
//!   a time (some compute more: per-query costs, noise calibration).
//!
//! So a slow analysis (a large or broken plan) never delays `shutdown`,
//! `exit` or another document's requests. The loop drains every message that
//! has arrived before handling the oldest, so that a `$/cancelRequest` or a
//! newer edit already waiting cancels a request before any work is done, and
//! a burst of edits is analysed once: analyses start when the queue is empty
//! (or when a request needs one). Every handler and analysis runs under
//! `catch_unwind`: a panic answers its request with `InternalError` and the
//! server keeps serving.

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crossbeam_channel::{select, unbounded, Receiver, Sender};
use line_index::LineIndex;
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;
use serde_json::Value;

use dpplan_ide::{Document, Span};

use crate::convert::{self, Encoding, Lines};

/// Options of the server (tests turn on the test-only methods).
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Accept `dpplan/testPanic` (panics inside its handler).
    pub test_methods: bool,
}

/// The default base of documentation links: `{base}docs/diagnostics.md#dp001`.
pub const DEFAULT_DOCS_BASE: &str = "https://github.com/dpplan/dpplan/blob/main/";

/// Request handlers running on threads at the same time, at most (more wait
/// their turn on the main loop).
const MAX_REQUEST_THREADS: usize = 8;

/// Documents analysed at the same time, at most (more wait their turn, so a
/// slow document holds up no other unless this many are slow).
const MAX_ANALYSIS_THREADS: usize = 4;

/// The stack of analysis and request threads (the main thread's size: the
/// parser and checker recurse over nested blocks).
const THREAD_STACK: usize = 8 * 1024 * 1024;

/// What a request handler reads about its document: one version's analysis
/// (or, for formatting, its text) and line index, owned, so that the handler
/// can run on a thread.
struct Snapshot {
    /// The document's key (its URI).
    key: String,
    /// The analysis of the current version (`None` for formatting).
    doc: Option<Arc<Document>>,
    /// The text, for a request that needs no analysis (formatting).
    text: Option<String>,
    index: Arc<LineIndex>,
    encoding: Encoding,
}

impl Snapshot {
    fn doc(&self) -> Result<&Arc<Document>, Failure> {
        self.doc.as_ref().ok_or_else(|| {
            Failure::Error(
                ErrorCode::InternalError,
                "internal error: no analysis for this request".into(),
            )
        })
    }

    fn lines(&self) -> Lines<'_> {
        let text = match (&self.doc, &self.text) {
            (Some(d), _) => d.text(),
            (None, Some(t)) => t.as_str(),
            (None, None) => "",
        };
        Lines {
            text,
            index: &self.index,
            encoding: self.encoding,
        }
    }
}

/// The snapshot of the document a request names, or the error for a
/// document that is not open.
fn open<'a>(target: Option<&'a Snapshot>, uri: &lsp::Uri) -> Result<&'a Snapshot, Failure> {
    match target {
        Some(s) if s.key == uri.as_str() => Ok(s),
        _ => Err(Failure::Error(
            ErrorCode::InvalidParams,
            format!("the document {} is not open", uri.as_str()),
        )),
    }
}

/// What request handlers need from the server's settings.
#[derive(Clone)]
struct Ctx {
    docs_base: String,
    resolve_edits: bool,
    test_methods: bool,
}

struct DocState {
    uri: lsp::Uri,
    version: i32,
    text: String,
    index: Arc<LineIndex>,
    /// This text's number, unique in the server (clients' versions need not
    /// be): results are matched to texts by it.
    generation: u64,
    /// The document's current generation, shared with its analysis threads
    /// (0 once closed): a thread whose text was superseded skips its full
    /// analysis.
    latest: Arc<AtomicU64>,
    /// The analysis of this generation, once done.
    doc: Option<Arc<Document>>,
    /// The analysis of this generation panicked.
    failed: bool,
    /// The analysis of this generation has not started yet.
    dirty: bool,
    /// The generation an analysis thread is working on (one at a time).
    running: Option<u64>,
    /// Requests waiting for the analysis of this generation.
    ///
    /// A request about a document whose current version is still being
    /// analysed waits for that analysis rather than being answered from the
    /// last completed one: that one is of an older text, so its offsets,
    /// ranges and edits would not match the client's text (a rename or a
    /// quick fix would corrupt the document, a hover would describe the
    /// wrong word). Waiting here blocks nothing: other documents' requests,
    /// `shutdown` and `exit` are answered meanwhile. A newer edit answers the
    /// waiting requests with `ContentModified` (as it does queued ones), a
    /// `$/cancelRequest` with `RequestCanceled`.
    parked: Vec<Request>,
}

impl DocState {
    fn new(uri: lsp::Uri, version: i32, text: String, generation: u64) -> DocState {
        let index = Arc::new(LineIndex::new(&text));
        DocState {
            uri,
            version,
            text,
            index,
            generation,
            latest: Arc::new(AtomicU64::new(generation)),
            doc: None,
            failed: false,
            dirty: true,
            running: None,
            parked: Vec::new(),
        }
    }

    fn set_text(&mut self, text: String, generation: u64) {
        self.index = Arc::new(LineIndex::new(&text));
        self.text = text;
        self.generation = generation;
        self.latest.store(generation, Ordering::Release);
        self.doc = None;
        self.failed = false;
        self.dirty = true;
    }
}

/// What a thread reports to the main loop.
enum Done {
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
}

impl Analysis {
    fn current(&self) -> bool {
        self.latest.load(Ordering::Acquire) == self.generation
    }

    fn run(self, done: &Sender<Done>) {
        if self.current() {
            // Everything that needs no accounting: syntax, then semantic.
            let early = catch_unwind(AssertUnwindSafe(|| {
                let lines = Lines {
                    text: &self.text,
                    index: &self.index,
                    encoding: self.encoding,
                };
                Document::unaccounted_diagnostics(&self.text)
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
            ..
        } = self;
        let full = catch_unwind(AssertUnwindSafe(|| {
            let doc = Arc::new(Document::new(text));
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

pub struct Server {
    sender: Sender<Message>,
    options: ServerOptions,
    encoding: Encoding,
    docs_base: String,
    docs: HashMap<String, DocState>,
    shutdown: bool,
    /// The client resolves code actions' edits lazily (`codeAction/resolve`).
    resolve_edits: bool,
    /// The last generation given to a text.
    generation: u64,
    /// Where threads report.
    done: Sender<Done>,
    /// Analyses running on threads.
    analyses_running: usize,
    /// Request handlers running on threads.
    requests_running: usize,
    /// Requests ready to run, waiting for a thread.
    requests_waiting: VecDeque<(Request, Snapshot)>,
}

enum Failure {
    Error(ErrorCode, String),
}

type Handled = Result<Value, Failure>;

fn invalid_params(e: impl std::fmt::Display) -> Failure {
    Failure::Error(ErrorCode::InvalidParams, format!("invalid params: {e}"))
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
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
    let uri = if req.method == "codeAction/resolve" {
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
        matches!(m, Message::Notification(n) if n.method == "textDocument/didChange" && uri_of(&n.params) == Some(uri))
    })
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

/// Runs a request handler and turns its outcome, or its panic, into the
/// response.
fn answer(req: Request, ctx: &Ctx, target: Option<&Snapshot>) -> Response {
    let Request { id, method, params } = req;
    let result = catch_unwind(AssertUnwindSafe(|| {
        handle_request(&method, params, ctx, target)
    }));
    match result {
        Ok(Ok(v)) => Response::new_ok(id, v),
        Ok(Err(Failure::Error(code, message))) => Response::new_err(id, code as i32, message),
        Err(p) => {
            let m = panic_message(&*p);
            eprintln!("dpplan lsp: a request handler panicked: {m}");
            Response::new_err(
                id,
                ErrorCode::InternalError as i32,
                format!("internal error: {m}"),
            )
        }
    }
}

/// Runs the server on a connection until the client says `exit` or goes
/// away. Returns whether `shutdown` came before (the exit code is 0 then).
pub fn run(connection: Connection, options: ServerOptions) -> bool {
    let Connection { sender, receiver } = connection;
    let (done, finished) = unbounded();
    let mut server = Server {
        sender,
        options,
        encoding: Encoding::Utf16,
        docs_base: DEFAULT_DOCS_BASE.to_string(),
        docs: HashMap::new(),
        shutdown: false,
        resolve_edits: false,
        generation: 0,
        done,
        analyses_running: 0,
        requests_running: 0,
        requests_waiting: VecDeque::new(),
    };
    let mut initialized = false;
    let mut queue: VecDeque<Message> = VecDeque::new();
    let mut cancelled: HashSet<RequestId> = HashSet::new();
    loop {
        // What the threads finished first: it may answer waiting requests.
        while let Ok(d) = finished.try_recv() {
            server.on_done(d, &queue);
        }
        if queue.is_empty() {
            if initialized {
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
        for m in &queue {
            if let Message::Notification(n) = m {
                if n.method == "$/cancelRequest" {
                    if let Some(id) = cancel_id(&n.params) {
                        cancelled.insert(id);
                    }
                }
            }
        }
        let Some(msg) = queue.pop_front() else {
            continue;
        };
        match msg {
            Message::Request(req) => {
                if cancelled.remove(&req.id) {
                    server.respond_err(req.id, ErrorCode::RequestCanceled, "cancelled".into());
                    continue;
                }
                if !initialized {
                    if req.method == "initialize" {
                        let result =
                            catch_unwind(AssertUnwindSafe(|| server.initialize(&req.params)));
                        match result {
                            Ok(v) => {
                                server.respond(Response::new_ok(req.id, v));
                                initialized = true;
                            }
                            Err(p) => server.respond_err(
                                req.id,
                                ErrorCode::InternalError,
                                panic_message(&*p),
                            ),
                        }
                    } else {
                        server.respond_err(
                            req.id,
                            ErrorCode::ServerNotInitialized,
                            "the server is not initialized".into(),
                        );
                    }
                    continue;
                }
                if server.shutdown {
                    server.respond_err(
                        req.id,
                        ErrorCode::InvalidRequest,
                        "the server is shutting down".into(),
                    );
                    continue;
                }
                match req.method.as_str() {
                    "shutdown" => {
                        server.shutdown = true;
                        server.respond(Response::new_ok(req.id, ()));
                        continue;
                    }
                    "initialize" => {
                        server.respond_err(
                            req.id,
                            ErrorCode::InvalidRequest,
                            "already initialized".into(),
                        );
                        continue;
                    }
                    _ => {}
                }
                server.request(req, &queue);
            }
            Message::Notification(n) => {
                if n.method == "exit" {
                    return server.shutdown;
                }
                if n.method == "$/cancelRequest" {
                    // Requests before it in the queue were cancelled when
                    // they came up; cancel a waiting one now.
                    if let Some(id) = cancel_id(&n.params) {
                        cancelled.remove(&id);
                        server.cancel(&id);
                    }
                    continue;
                }
                if !initialized {
                    continue;
                }
                let method = n.method.clone();
                if let Err(p) = catch_unwind(AssertUnwindSafe(|| server.handle_notification(n))) {
                    eprintln!(
                        "dpplan lsp: the {method} handler panicked: {}",
                        panic_message(&*p)
                    );
                }
            }
            Message::Response(_) => {}
        }
    }
}

impl Server {
    fn respond(&self, r: Response) {
        let _ = self.sender.send(Message::Response(r));
    }

    fn respond_err(&self, id: RequestId, code: ErrorCode, message: String) {
        self.respond(Response::new_err(id, code as i32, message));
    }

    fn notify<N: lsp::notification::Notification>(&self, params: N::Params) {
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

    fn initialize(&mut self, params: &Value) -> Value {
        let params: lsp::InitializeParams =
            serde_json::from_value(params.clone()).unwrap_or_default();
        let utf8 = params
            .capabilities
            .general
            .as_ref()
            .and_then(|g| g.position_encodings.as_ref())
            .is_some_and(|encs| encs.contains(&lsp::PositionEncodingKind::UTF8));
        self.encoding = if utf8 {
            Encoding::Utf8
        } else {
            Encoding::Utf16
        };
        self.resolve_edits = params
            .capabilities
            .text_document
            .as_ref()
            .and_then(|t| t.code_action.as_ref())
            .and_then(|c| c.resolve_support.as_ref())
            .is_some_and(|r| r.properties.iter().any(|p| p == "edit"));
        let mut full_sync = false;
        if let Some(opts) = &params.initialization_options {
            if let Some(base) = opts.get("docsBaseUrl").and_then(Value::as_str) {
                self.docs_base = base.to_string();
            }
            full_sync = opts.get("sync").and_then(Value::as_str) == Some("full");
        }
        if let Ok(base) = std::env::var("DPPLAN_DOCS_BASE") {
            self.docs_base = base;
        }
        if !self.docs_base.ends_with('/') {
            self.docs_base.push('/');
        }
        let caps = lsp::ServerCapabilities {
            position_encoding: Some(if utf8 {
                lsp::PositionEncodingKind::UTF8
            } else {
                lsp::PositionEncodingKind::UTF16
            }),
            text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
                lsp::TextDocumentSyncOptions {
                    open_close: Some(true),
                    change: Some(if full_sync {
                        lsp::TextDocumentSyncKind::FULL
                    } else {
                        lsp::TextDocumentSyncKind::INCREMENTAL
                    }),
                    ..Default::default()
                },
            )),
            hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
            completion_provider: Some(lsp::CompletionOptions {
                trigger_characters: Some(vec![".".into(), "(".into()]),
                ..Default::default()
            }),
            definition_provider: Some(lsp::OneOf::Left(true)),
            references_provider: Some(lsp::OneOf::Left(true)),
            rename_provider: Some(lsp::OneOf::Right(lsp::RenameOptions {
                prepare_provider: Some(true),
                work_done_progress_options: Default::default(),
            })),
            document_symbol_provider: Some(lsp::OneOf::Left(true)),
            semantic_tokens_provider: Some(
                lsp::SemanticTokensServerCapabilities::SemanticTokensOptions(
                    lsp::SemanticTokensOptions {
                        legend: lsp::SemanticTokensLegend {
                            token_types: convert::TOKEN_TYPES.to_vec(),
                            token_modifiers: vec![lsp::SemanticTokenModifier::DECLARATION],
                        },
                        full: Some(lsp::SemanticTokensFullOptions::Bool(true)),
                        range: Some(false),
                        ..Default::default()
                    },
                ),
            ),
            code_action_provider: Some(lsp::CodeActionProviderCapability::Options(
                lsp::CodeActionOptions {
                    code_action_kinds: Some(vec![lsp::CodeActionKind::QUICKFIX]),
                    resolve_provider: Some(true),
                    ..Default::default()
                },
            )),
            document_formatting_provider: Some(lsp::OneOf::Left(true)),
            inlay_hint_provider: Some(lsp::OneOf::Left(true)),
            ..Default::default()
        };
        serde_json::json!({
            "capabilities": caps,
            "serverInfo": { "name": "dpplan", "version": env!("CARGO_PKG_VERSION") },
        })
    }

    // ------------------------------------------------------------ documents

    fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    fn handle_notification(&mut self, n: Notification) {
        match n.method.as_str() {
            "textDocument/didOpen" => {
                let Ok(p) = serde_json::from_value::<lsp::DidOpenTextDocumentParams>(n.params)
                else {
                    eprintln!("dpplan lsp: bad didOpen params");
                    return;
                };
                let key = p.text_document.uri.as_str().to_string();
                let generation = self.next_generation();
                let state = DocState::new(
                    p.text_document.uri,
                    p.text_document.version,
                    p.text_document.text,
                    generation,
                );
                if let Some(old) = self.docs.insert(key.clone(), state) {
                    self.superseded(&key, old);
                }
            }
            "textDocument/didChange" => {
                let Ok(p) = serde_json::from_value::<lsp::DidChangeTextDocumentParams>(n.params)
                else {
                    eprintln!("dpplan lsp: bad didChange params");
                    return;
                };
                let encoding = self.encoding;
                let generation = self.next_generation();
                let key = p.text_document.uri.as_str().to_string();
                let Some(state) = self.docs.get_mut(&key) else {
                    eprintln!("dpplan lsp: didChange for a document that is not open");
                    return;
                };
                let mut text = std::mem::take(&mut state.text);
                let mut index = Arc::clone(&state.index);
                let n = p.content_changes.len();
                for (i, change) in p.content_changes.into_iter().enumerate() {
                    match change.range {
                        None => text = change.text,
                        Some(range) => {
                            let span = Lines {
                                text: &text,
                                index: &index,
                                encoding,
                            }
                            .span(range);
                            text.replace_range(span.start..span.end, &change.text);
                        }
                    }
                    if i + 1 < n {
                        index = Arc::new(LineIndex::new(&text));
                    }
                }
                state.version = p.text_document.version;
                state.set_text(text, generation);
                let parked = std::mem::take(&mut state.parked);
                self.modified(&key, parked);
            }
            "textDocument/didClose" => {
                let Ok(p) = serde_json::from_value::<lsp::DidCloseTextDocumentParams>(n.params)
                else {
                    return;
                };
                let key = p.text_document.uri.as_str().to_string();
                if let Some(state) = self.docs.remove(&key) {
                    let uri = state.uri.clone();
                    self.superseded(&key, state);
                    // Clear its diagnostics.
                    self.notify::<lsp::notification::PublishDiagnostics>(
                        lsp::PublishDiagnosticsParams {
                            uri,
                            diagnostics: Vec::new(),
                            version: None,
                        },
                    );
                }
            }
            _ => {}
        }
    }

    /// A document state replaced or closed: its analysis is abandoned and
    /// its waiting requests are answered.
    fn superseded(&mut self, key: &str, old: DocState) {
        old.latest.store(0, Ordering::Release);
        self.modified(key, old.parked);
    }

    /// The document changed: requests waiting for it (for its analysis or
    /// for a thread) would answer about an old text.
    fn modified(&mut self, key: &str, parked: Vec<Request>) {
        let (stale, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.requests_waiting)
            .into_iter()
            .partition(|(_, snap)| snap.key == key);
        self.requests_waiting = waiting.into();
        let ids = parked
            .into_iter()
            .map(|r| r.id)
            .chain(stale.into_iter().map(|(r, _)| r.id));
        for id in ids {
            self.respond_err(
                id,
                ErrorCode::ContentModified,
                "the document changed".into(),
            );
        }
    }

    /// Answers a waiting request that the client cancelled.
    fn cancel(&mut self, id: &RequestId) {
        let mut found = false;
        for state in self.docs.values_mut() {
            let before = state.parked.len();
            state.parked.retain(|r| &r.id != id);
            found |= state.parked.len() != before;
        }
        let before = self.requests_waiting.len();
        self.requests_waiting.retain(|(r, _)| &r.id != id);
        found |= self.requests_waiting.len() != before;
        if found {
            self.respond_err(id.clone(), ErrorCode::RequestCanceled, "cancelled".into());
        }
    }

    /// Starts the analysis of every document whose latest version has none
    /// yet (and whose previous analysis is not still running).
    fn start_analyses(&mut self) {
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
    fn on_done(&mut self, done: Done, queue: &VecDeque<Message>) {
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
    fn finish(&mut self, finished: &Receiver<Done>) {
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
    /// [`DocState::parked`]).
    fn request(&mut self, req: Request, queue: &VecDeque<Message>) {
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
        let formatting = req.method == "textDocument/formatting";
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
        let ready = if formatting {
            Some(snapshot(None, Some(state.text.clone())))
        } else {
            state.doc.clone().map(|doc| snapshot(Some(doc), None))
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

fn handle_request(method: &str, params: Value, ctx: &Ctx, target: Option<&Snapshot>) -> Handled {
    macro_rules! params {
        ($t:ty) => {
            serde_json::from_value::<$t>(params).map_err(invalid_params)?
        };
    }
    let docs_base = ctx.docs_base.clone();
    let resolve_edits = ctx.resolve_edits;
    let value = match method {
        "textDocument/hover" => {
            let p = params!(lsp::HoverParams);
            let tdp = p.text_document_position_params;
            let snap = open(target, &tdp.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let offset = lines.offset(tdp.position);
            let hover = doc.hover(offset).map(|h| convert::to_hover(h, &lines));
            serde_json::to_value(hover)
        }
        "textDocument/completion" => {
            let p = params!(lsp::CompletionParams);
            let tdp = p.text_document_position;
            let snap = open(target, &tdp.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let offset = lines.offset(tdp.position);
            let items: Vec<lsp::CompletionItem> = doc
                .completions(offset)
                .into_iter()
                .map(|c| convert::to_completion_item(c, &lines))
                .collect();
            serde_json::to_value(lsp::CompletionResponse::Array(items))
        }
        "textDocument/definition" => {
            let p = params!(lsp::GotoDefinitionParams);
            let tdp = p.text_document_position_params;
            let uri = tdp.text_document.uri.clone();
            let snap = open(target, &tdp.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let def = doc.definition(lines.offset(tdp.position)).map(|span| {
                lsp::GotoDefinitionResponse::Scalar(convert::to_location(&uri, &lines, span))
            });
            serde_json::to_value(def)
        }
        "textDocument/references" => {
            let p = params!(lsp::ReferenceParams);
            let tdp = p.text_document_position;
            let uri = tdp.text_document.uri.clone();
            let snap = open(target, &tdp.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let refs: Vec<lsp::Location> = doc
                .references(lines.offset(tdp.position), p.context.include_declaration)
                .into_iter()
                .map(|span| convert::to_location(&uri, &lines, span))
                .collect();
            serde_json::to_value(refs)
        }
        "textDocument/prepareRename" => {
            let p = params!(lsp::TextDocumentPositionParams);
            let snap = open(target, &p.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let r = doc
                .prepare_rename(lines.offset(p.position))
                .map(|span| lsp::PrepareRenameResponse::Range(lines.range(span)));
            serde_json::to_value(r)
        }
        "textDocument/rename" => {
            let p = params!(lsp::RenameParams);
            let tdp = p.text_document_position;
            let uri = tdp.text_document.uri.clone();
            let snap = open(target, &tdp.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let edits = doc
                .rename(lines.offset(tdp.position), &p.new_name)
                .map_err(|e| Failure::Error(ErrorCode::InvalidRequest, e))?;
            serde_json::to_value(convert::workspace_edit(&uri, &lines, &edits))
        }
        "textDocument/documentSymbol" => {
            let p = params!(lsp::DocumentSymbolParams);
            let snap = open(target, &p.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let symbols: Vec<lsp::DocumentSymbol> = doc
                .outline()
                .iter()
                .map(|o| convert::to_symbol(o, &lines))
                .collect();
            serde_json::to_value(lsp::DocumentSymbolResponse::Nested(symbols))
        }
        "textDocument/semanticTokens/full" => {
            let p = params!(lsp::SemanticTokensParams);
            let snap = open(target, &p.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            serde_json::to_value(lsp::SemanticTokensResult::Tokens(convert::semantic_tokens(
                doc, &lines,
            )))
        }
        "textDocument/inlayHint" => {
            let p = params!(lsp::InlayHintParams);
            let snap = open(target, &p.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let hints: Vec<lsp::InlayHint> = doc
                .inlay_hints(lines.span(p.range))
                .into_iter()
                .map(|h| convert::to_inlay_hint(h, &lines))
                .collect();
            serde_json::to_value(hints)
        }
        "textDocument/codeAction" => {
            let p = params!(lsp::CodeActionParams);
            let uri = p.text_document.uri.clone();
            let snap = open(target, &p.text_document.uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let wanted = p.context.only.as_ref().is_none_or(|only| {
                only.iter()
                    .any(|k| k == &lsp::CodeActionKind::QUICKFIX || k.as_str().is_empty())
            });
            let actions: Vec<lsp::CodeActionOrCommand> = if !wanted {
                Vec::new()
            } else {
                let listed = doc.code_actions(lines.span(p.range));
                listed
                    .iter()
                    .filter_map(|a| {
                        // Expensive edits wait for `codeAction/resolve`
                        // when the client can resolve them.
                        let (a, data) = match &a.resolve {
                            Some(dpplan_ide::Resolve::SolveNoise { query }) if resolve_edits => (
                                a.clone(),
                                Some(
                                    serde_json::json!({ "uri": uri.as_str(), "solveNoise": query }),
                                ),
                            ),
                            _ => (doc.resolve(a)?, None),
                        };
                        Some(lsp::CodeActionOrCommand::CodeAction(
                            convert::to_code_action(&a, &lines, &uri, &docs_base, data),
                        ))
                    })
                    .collect()
            };
            serde_json::to_value(actions)
        }
        "codeAction/resolve" => {
            let mut action = params!(lsp::CodeAction);
            let data = action.data.take().unwrap_or(Value::Null);
            let (Some(uri), Some(query)) = (
                data.get("uri").and_then(Value::as_str),
                data.get("solveNoise").and_then(Value::as_str),
            ) else {
                return serde_json::to_value(action)
                    .map_err(|e| Failure::Error(ErrorCode::InternalError, e.to_string()));
            };
            let uri = lsp::Uri::from_str(uri).map_err(invalid_params)?;
            let snap = open(target, &uri)?;
            let (doc, lines) = (snap.doc()?, snap.lines());
            let unresolved = dpplan_ide::CodeAction {
                title: action.title.clone(),
                diagnostic: None,
                edits: Vec::new(),
                preferred: action.is_preferred.unwrap_or(false),
                resolve: Some(dpplan_ide::Resolve::SolveNoise {
                    query: query.to_string(),
                }),
            };
            match doc.resolve(&unresolved) {
                Some(done) => {
                    action.title = done.title;
                    action.edit = Some(convert::workspace_edit(&uri, &lines, &done.edits));
                }
                None => {
                    action.disabled = Some(lsp::CodeActionDisabled {
                        reason: "no noise level of this query alone makes the plan fit its budget"
                            .into(),
                    });
                }
            }
            serde_json::to_value(action)
        }
        "textDocument/formatting" => {
            let p = params!(lsp::DocumentFormattingParams);
            let snap = open(target, &p.text_document.uri)?;
            let lines = snap.lines();
            let text = lines.text;
            match dpplan_fmt_text(text) {
                Ok(None) => Ok(Value::Array(Vec::new())),
                Ok(Some(out)) => serde_json::to_value(vec![lsp::TextEdit {
                    range: lines.range(Span::new(0, text.len())),
                    new_text: out,
                }]),
                Err(e) => {
                    return Err(Failure::Error(ErrorCode::RequestFailed, e));
                }
            }
        }
        "dpplan/testPanic" if ctx.test_methods => panic!("test panic requested"),
        _ => {
            return Err(Failure::Error(
                ErrorCode::MethodNotFound,
                format!("unknown method {method}"),
            ));
        }
    };
    value.map_err(|e| Failure::Error(ErrorCode::InternalError, e.to_string()))
}

fn dpplan_fmt_text(text: &str) -> Result<Option<String>, String> {
    dpplan_ide::format_text(text).map_err(|e| e.to_string())
}
