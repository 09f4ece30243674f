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
//! - requests about an open document (hover, completion, formatting, …), on
//!   the analysis of its current version (some compute more: per-query
//!   costs, noise calibration).
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
//! - [`workers`]: the analysis and request threads, their limits, and the
//!   dropping of stale results;
//! - [`initialize`]: the negotiated settings and the server's capabilities;
//! - [`crate::convert`]: every conversion to and from lsp-types.

mod initialize;
mod state;
mod workers;

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;

use crossbeam_channel::{select, unbounded, Sender};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;
use serde_json::Value;

use dpplan_ide::Span;

use self::state::{open, DocState, Snapshot};
use self::workers::Done;
use crate::convert;
use crate::convert::Encoding;

/// Options of the server (tests turn on the test-only methods).
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Accept `dpplan/testPanic` (panics inside its handler).
    pub test_methods: bool,
}

/// The default base of documentation links: `{base}docs/diagnostics.md#dp001`.
pub const DEFAULT_DOCS_BASE: &str = "https://github.com/dpplan/dpplan/blob/main/";

/// What request handlers need from the server's settings.
#[derive(Clone)]
struct Ctx {
    docs_base: String,
    resolve_edits: bool,
    test_methods: bool,
}

struct Server {
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

    fn handle_notification(&mut self, n: Notification) {
        match n.method.as_str() {
            "textDocument/didOpen" => {
                let Ok(p) = serde_json::from_value::<lsp::DidOpenTextDocumentParams>(n.params)
                else {
                    eprintln!("dpplan lsp: bad didOpen params");
                    return;
                };
                self.did_open(p);
            }
            "textDocument/didChange" => {
                let Ok(p) = serde_json::from_value::<lsp::DidChangeTextDocumentParams>(n.params)
                else {
                    eprintln!("dpplan lsp: bad didChange params");
                    return;
                };
                self.did_change(p);
            }
            "textDocument/didClose" => {
                let Ok(p) = serde_json::from_value::<lsp::DidCloseTextDocumentParams>(n.params)
                else {
                    return;
                };
                self.did_close(p);
            }
            _ => {}
        }
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
