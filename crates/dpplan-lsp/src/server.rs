//! The server: state, main loop and request handlers.
//!
//! One thread, no async runtime. The loop drains every message that has
//! arrived before handling the oldest, so that a `$/cancelRequest` or a newer
//! edit already waiting cancels a request before any work is done, and a
//! burst of edits is analysed once. Diagnostics are published when the queue
//! is empty: syntax errors first (cheap), then the full analysis. Every
//! handler runs under `catch_unwind`: a panic answers its request with
//! `InternalError` and the server keeps serving.

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::str::FromStr;
use std::sync::Arc;

use line_index::LineIndex;
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types as lsp;
use serde_json::Value;

use dpplan_ide::{Document, Severity, Span};

use crate::convert::{Encoding, Lines};

/// Options of the server (tests turn on the test-only methods).
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Accept `dpplan/testPanic` (panics inside its handler).
    pub test_methods: bool,
}

/// The default base of documentation links: `{base}docs/diagnostics.md#dp001`.
pub const DEFAULT_DOCS_BASE: &str = "https://github.com/dpplan/dpplan/blob/main/";

pub const TOKEN_TYPES: &[lsp::SemanticTokenType] = &[
    lsp::SemanticTokenType::KEYWORD,
    lsp::SemanticTokenType::STRING,
    lsp::SemanticTokenType::NUMBER,
    lsp::SemanticTokenType::COMMENT,
    lsp::SemanticTokenType::OPERATOR,
    lsp::SemanticTokenType::NAMESPACE,
    lsp::SemanticTokenType::PROPERTY,
    lsp::SemanticTokenType::FUNCTION,
    lsp::SemanticTokenType::VARIABLE,
];

fn token_type(kind: dpplan_ide::SemanticKind) -> u32 {
    use dpplan_ide::SemanticKind::*;
    match kind {
        Keyword => 0,
        String => 1,
        Number => 2,
        Comment => 3,
        Operator => 4,
        Dataset => 5,
        Column => 6,
        Query => 7,
        Publish => 8,
    }
}

/// What a request handler reads: one version's analysis and line index.
struct Snapshot {
    doc: Arc<Document>,
    index: Arc<LineIndex>,
    encoding: Encoding,
}

impl Snapshot {
    fn lines(&self) -> Lines<'_> {
        Lines {
            text: self.doc.text(),
            index: &self.index,
            encoding: self.encoding,
        }
    }
}

struct DocState {
    uri: lsp::Uri,
    version: i32,
    text: String,
    index: Arc<LineIndex>,
    /// The analysis of this version, once computed.
    doc: Option<Arc<Document>>,
    /// Edited since its diagnostics were last published.
    dirty: bool,
}

impl DocState {
    fn new(uri: lsp::Uri, version: i32, text: String) -> DocState {
        let index = Arc::new(LineIndex::new(&text));
        DocState {
            uri,
            version,
            text,
            index,
            doc: None,
            dirty: true,
        }
    }

    fn analysis(&mut self) -> Arc<Document> {
        if let Some(d) = &self.doc {
            return Arc::clone(d);
        }
        let d = Arc::new(Document::new(self.text.clone()));
        self.doc = Some(Arc::clone(&d));
        d
    }

    fn set_text(&mut self, text: String) {
        self.index = Arc::new(LineIndex::new(&text));
        self.text = text;
        self.doc = None;
        self.dirty = true;
    }
}

pub struct Server {
    sender: crossbeam_channel::Sender<Message>,
    options: ServerOptions,
    encoding: Encoding,
    docs_base: String,
    docs: HashMap<String, DocState>,
    shutdown: bool,
    /// The client resolves code actions' edits lazily (`codeAction/resolve`).
    resolve_edits: bool,
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

/// Runs the server on a connection until the client says `exit` or goes
/// away. Returns whether `shutdown` came before (the exit code is 0 then).
pub fn run(connection: Connection, options: ServerOptions) -> bool {
    let Connection { sender, receiver } = connection;
    let mut server = Server {
        sender,
        options,
        encoding: Encoding::Utf16,
        docs_base: DEFAULT_DOCS_BASE.to_string(),
        docs: HashMap::new(),
        shutdown: false,
        resolve_edits: false,
    };
    let mut initialized = false;
    let mut queue: VecDeque<Message> = VecDeque::new();
    let mut cancelled: HashSet<RequestId> = HashSet::new();
    loop {
        if queue.is_empty() {
            if initialized {
                server.publish_pending();
            }
            match receiver.recv() {
                Ok(m) => queue.push_back(m),
                Err(_) => {
                    eprintln!("dpplan lsp: the client went away");
                    return server.shutdown;
                }
            }
        }
        while let Ok(m) = receiver.try_recv() {
            queue.push_back(m);
        }
        for m in &queue {
            if let Message::Notification(n) = m {
                if n.method == "$/cancelRequest" {
                    if let Some(id) = n.params.get("id") {
                        if let Some(i) = id.as_i64() {
                            cancelled.insert(RequestId::from(i as i32));
                        } else if let Some(s) = id.as_str() {
                            cancelled.insert(RequestId::from(s.to_string()));
                        }
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
                // A request on a document with a newer edit already waiting
                // would answer about a stale text.
                if let Some(uri) = uri_of(&req.params) {
                    let newer = queue.iter().any(|m| {
                        matches!(m, Message::Notification(n) if n.method == "textDocument/didChange" && uri_of(&n.params) == Some(uri))
                    });
                    if newer && req.method != "textDocument/formatting" {
                        server.respond_err(
                            req.id,
                            ErrorCode::ContentModified,
                            "the document changed".into(),
                        );
                        continue;
                    }
                }
                let id = req.id.clone();
                let result = catch_unwind(AssertUnwindSafe(|| server.handle_request(req)));
                match result {
                    Ok(Ok(v)) => server.respond(Response::new_ok(id, v)),
                    Ok(Err(Failure::Error(code, message))) => server.respond_err(id, code, message),
                    Err(p) => {
                        let m = panic_message(&*p);
                        eprintln!("dpplan lsp: a request handler panicked: {m}");
                        server.respond_err(
                            id,
                            ErrorCode::InternalError,
                            format!("internal error: {m}"),
                        );
                    }
                }
            }
            Message::Notification(n) => {
                if n.method == "exit" {
                    return server.shutdown;
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
                            token_types: TOKEN_TYPES.to_vec(),
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

    fn handle_notification(&mut self, n: Notification) {
        match n.method.as_str() {
            "textDocument/didOpen" => {
                let Ok(p) = serde_json::from_value::<lsp::DidOpenTextDocumentParams>(n.params)
                else {
                    eprintln!("dpplan lsp: bad didOpen params");
                    return;
                };
                let key = p.text_document.uri.as_str().to_string();
                self.docs.insert(
                    key,
                    DocState::new(
                        p.text_document.uri,
                        p.text_document.version,
                        p.text_document.text,
                    ),
                );
            }
            "textDocument/didChange" => {
                let Ok(p) = serde_json::from_value::<lsp::DidChangeTextDocumentParams>(n.params)
                else {
                    eprintln!("dpplan lsp: bad didChange params");
                    return;
                };
                let encoding = self.encoding;
                let Some(state) = self.docs.get_mut(p.text_document.uri.as_str()) else {
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
                state.set_text(text);
            }
            "textDocument/didClose" => {
                let Ok(p) = serde_json::from_value::<lsp::DidCloseTextDocumentParams>(n.params)
                else {
                    return;
                };
                if let Some(state) = self.docs.remove(p.text_document.uri.as_str()) {
                    // Clear its diagnostics.
                    self.notify::<lsp::notification::PublishDiagnostics>(
                        lsp::PublishDiagnosticsParams {
                            uri: state.uri,
                            diagnostics: Vec::new(),
                            version: None,
                        },
                    );
                }
            }
            _ => {}
        }
    }

    /// Publishes the diagnostics of every document whose latest version was
    /// not published yet: first every diagnostic that needs no accounting
    /// (syntax errors first), then the full set with the budget's.
    fn publish_pending(&mut self) {
        let keys: Vec<String> = self
            .docs
            .iter()
            .filter(|(_, s)| s.dirty)
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            let encoding = self.encoding;
            let docs_base = self.docs_base.clone();
            let Some(state) = self.docs.get_mut(&key) else {
                continue;
            };
            // First everything that needs no accounting (syntax and semantic
            // errors, in milliseconds), published at once; then the full set.
            {
                let early = catch_unwind(AssertUnwindSafe(|| {
                    let lines = Lines {
                        text: &state.text,
                        index: &state.index,
                        encoding,
                    };
                    Document::unaccounted_diagnostics(&state.text)
                        .iter()
                        .map(|d| to_lsp_diagnostic(d, &lines, &state.uri, &docs_base))
                        .collect::<Vec<_>>()
                }));
                if let Ok(diagnostics) = early {
                    let params = lsp::PublishDiagnosticsParams {
                        uri: state.uri.clone(),
                        diagnostics,
                        version: Some(state.version),
                    };
                    self.notify::<lsp::notification::PublishDiagnostics>(params);
                }
            }
            let Some(state) = self.docs.get_mut(&key) else {
                continue;
            };
            let Ok(doc) = catch_unwind(AssertUnwindSafe(|| state.analysis())) else {
                eprintln!("dpplan lsp: analysing {key} panicked");
                state.dirty = false;
                continue;
            };
            let uri = state.uri.clone();
            let version = state.version;
            let lines = Lines {
                text: doc.text(),
                index: &state.index,
                encoding,
            };
            let diagnostics = doc
                .diagnostics()
                .iter()
                .map(|d| to_lsp_diagnostic(d, &lines, &uri, &docs_base))
                .collect();
            state.dirty = false;
            self.notify::<lsp::notification::PublishDiagnostics>(lsp::PublishDiagnosticsParams {
                uri,
                diagnostics,
                version: Some(version),
            });
        }
    }

    // ------------------------------------------------------------ requests

    /// The document's analysis and line index, owned, for a request.
    fn snapshot(&mut self, uri: &lsp::Uri) -> Result<Snapshot, Failure> {
        let (state, encoding) = self.state(uri)?;
        Ok(Snapshot {
            doc: state.analysis(),
            index: Arc::clone(&state.index),
            encoding,
        })
    }

    fn state(&mut self, uri: &lsp::Uri) -> Result<(&mut DocState, Encoding), Failure> {
        let enc = self.encoding;
        match self.docs.get_mut(uri.as_str()) {
            Some(s) => Ok((s, enc)),
            None => Err(Failure::Error(
                ErrorCode::InvalidParams,
                format!("the document {} is not open", uri.as_str()),
            )),
        }
    }

    fn handle_request(&mut self, req: Request) -> Handled {
        let Request { method, params, .. } = req;
        macro_rules! params {
            ($t:ty) => {
                serde_json::from_value::<$t>(params).map_err(invalid_params)?
            };
        }
        let docs_base = self.docs_base.clone();
        let resolve_edits = self.resolve_edits;
        let value = match method.as_str() {
            "textDocument/hover" => {
                let p = params!(lsp::HoverParams);
                let tdp = p.text_document_position_params;
                let snap = self.snapshot(&tdp.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
                let offset = lines.offset(tdp.position);
                let hover = doc.hover(offset).map(|h| lsp::Hover {
                    contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                        kind: lsp::MarkupKind::Markdown,
                        value: h.markdown,
                    }),
                    range: Some(lines.range(h.span)),
                });
                serde_json::to_value(hover)
            }
            "textDocument/completion" => {
                let p = params!(lsp::CompletionParams);
                let tdp = p.text_document_position;
                let snap = self.snapshot(&tdp.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
                let offset = lines.offset(tdp.position);
                let items: Vec<lsp::CompletionItem> = doc
                    .completions(offset)
                    .into_iter()
                    .map(|c| {
                        use dpplan_ide::CompletionKind as K;
                        let kind = match c.kind {
                            K::Keyword => lsp::CompletionItemKind::KEYWORD,
                            K::Dataset => lsp::CompletionItemKind::MODULE,
                            K::Column => lsp::CompletionItemKind::FIELD,
                            K::Query => lsp::CompletionItemKind::FUNCTION,
                            K::Publish => lsp::CompletionItemKind::VARIABLE,
                            K::Value => lsp::CompletionItemKind::VALUE,
                        };
                        let new_text = c.insert_text.clone().unwrap_or_else(|| c.label.clone());
                        lsp::CompletionItem {
                            label: c.label,
                            kind: Some(kind),
                            detail: c.detail,
                            documentation: c.documentation.map(|d| {
                                lsp::Documentation::MarkupContent(lsp::MarkupContent {
                                    kind: lsp::MarkupKind::Markdown,
                                    value: d,
                                })
                            }),
                            text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
                                range: lines.range(c.replace),
                                new_text,
                            })),
                            ..Default::default()
                        }
                    })
                    .collect();
                serde_json::to_value(lsp::CompletionResponse::Array(items))
            }
            "textDocument/definition" => {
                let p = params!(lsp::GotoDefinitionParams);
                let tdp = p.text_document_position_params;
                let uri = tdp.text_document.uri.clone();
                let snap = self.snapshot(&tdp.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
                let def = doc.definition(lines.offset(tdp.position)).map(|span| {
                    lsp::GotoDefinitionResponse::Scalar(lsp::Location {
                        uri: uri.clone(),
                        range: lines.range(span),
                    })
                });
                serde_json::to_value(def)
            }
            "textDocument/references" => {
                let p = params!(lsp::ReferenceParams);
                let tdp = p.text_document_position;
                let uri = tdp.text_document.uri.clone();
                let snap = self.snapshot(&tdp.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
                let refs: Vec<lsp::Location> = doc
                    .references(lines.offset(tdp.position), p.context.include_declaration)
                    .into_iter()
                    .map(|span| lsp::Location {
                        uri: uri.clone(),
                        range: lines.range(span),
                    })
                    .collect();
                serde_json::to_value(refs)
            }
            "textDocument/prepareRename" => {
                let p = params!(lsp::TextDocumentPositionParams);
                let snap = self.snapshot(&p.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
                let r = doc
                    .prepare_rename(lines.offset(p.position))
                    .map(|span| lsp::PrepareRenameResponse::Range(lines.range(span)));
                serde_json::to_value(r)
            }
            "textDocument/rename" => {
                let p = params!(lsp::RenameParams);
                let tdp = p.text_document_position;
                let uri = tdp.text_document.uri.clone();
                let snap = self.snapshot(&tdp.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
                let edits = doc
                    .rename(lines.offset(tdp.position), &p.new_name)
                    .map_err(|e| Failure::Error(ErrorCode::InvalidRequest, e))?;
                serde_json::to_value(workspace_edit(&uri, &lines, &edits))
            }
            "textDocument/documentSymbol" => {
                let p = params!(lsp::DocumentSymbolParams);
                let snap = self.snapshot(&p.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
                let symbols: Vec<lsp::DocumentSymbol> =
                    doc.outline().iter().map(|o| to_symbol(o, &lines)).collect();
                serde_json::to_value(lsp::DocumentSymbolResponse::Nested(symbols))
            }
            "textDocument/semanticTokens/full" => {
                let p = params!(lsp::SemanticTokensParams);
                let snap = self.snapshot(&p.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
                serde_json::to_value(lsp::SemanticTokensResult::Tokens(semantic_tokens(
                    doc, &lines,
                )))
            }
            "textDocument/inlayHint" => {
                let p = params!(lsp::InlayHintParams);
                let snap = self.snapshot(&p.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
                let hints: Vec<lsp::InlayHint> = doc
                    .inlay_hints(lines.span(p.range))
                    .into_iter()
                    .map(|h| lsp::InlayHint {
                        position: lines.position(h.offset),
                        label: lsp::InlayHintLabel::String(h.label),
                        kind: None,
                        text_edits: None,
                        tooltip: h.tooltip.map(lsp::InlayHintTooltip::String),
                        padding_left: Some(true),
                        padding_right: None,
                        data: None,
                    })
                    .collect();
                serde_json::to_value(hints)
            }
            "textDocument/codeAction" => {
                let p = params!(lsp::CodeActionParams);
                let uri = p.text_document.uri.clone();
                let snap = self.snapshot(&p.text_document.uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
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
                                    Some(serde_json::json!({ "uri": uri.as_str(), "solveNoise": query })),
                                ),
                                _ => (doc.resolve(a)?, None),
                            };
                            Some(lsp::CodeActionOrCommand::CodeAction(to_code_action(&a, &lines, &uri, &docs_base, data)))
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
                let snap = self.snapshot(&uri)?;
                let (doc, lines) = (&snap.doc, snap.lines());
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
                        action.edit = Some(workspace_edit(&uri, &lines, &done.edits));
                    }
                    None => {
                        action.disabled = Some(lsp::CodeActionDisabled {
                            reason:
                                "no noise level of this query alone makes the plan fit its budget"
                                    .into(),
                        });
                    }
                }
                serde_json::to_value(action)
            }
            "textDocument/formatting" => {
                let p = params!(lsp::DocumentFormattingParams);
                let (state, enc) = self.state(&p.text_document.uri)?;
                let text = state.text.clone();
                let lines = Lines {
                    text: &text,
                    index: &state.index,
                    encoding: enc,
                };
                match dpplan_fmt_text(&text) {
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
            "dpplan/testPanic" if self.options.test_methods => panic!("test panic requested"),
            _ => {
                return Err(Failure::Error(
                    ErrorCode::MethodNotFound,
                    format!("unknown method {method}"),
                ));
            }
        };
        value.map_err(|e| Failure::Error(ErrorCode::InternalError, e.to_string()))
    }
}

fn dpplan_fmt_text(text: &str) -> Result<Option<String>, String> {
    dpplan_ide::format_text(text).map_err(|e| e.to_string())
}

fn to_code_action(
    a: &dpplan_ide::CodeAction,
    lines: &Lines<'_>,
    uri: &lsp::Uri,
    docs_base: &str,
    data: Option<Value>,
) -> lsp::CodeAction {
    lsp::CodeAction {
        title: a.title.clone(),
        kind: Some(lsp::CodeActionKind::QUICKFIX),
        diagnostics: a
            .diagnostic
            .as_ref()
            .map(|d| vec![to_lsp_diagnostic(d, lines, uri, docs_base)]),
        edit: data.is_none().then(|| workspace_edit(uri, lines, &a.edits)),
        command: None,
        is_preferred: Some(a.preferred),
        disabled: None,
        data,
    }
}

// lsp-types keys `WorkspaceEdit::changes` by `Uri`, which clippy thinks mutable.
#[allow(clippy::mutable_key_type)]
fn workspace_edit(
    uri: &lsp::Uri,
    lines: &Lines<'_>,
    edits: &[dpplan_ide::TextEdit],
) -> lsp::WorkspaceEdit {
    let edits: Vec<lsp::TextEdit> = edits
        .iter()
        .map(|e| lsp::TextEdit {
            range: lines.range(e.span),
            new_text: e.new_text.clone(),
        })
        .collect();
    let mut changes = HashMap::new();
    changes.insert(uri.clone(), edits);
    lsp::WorkspaceEdit {
        changes: Some(changes),
        ..Default::default()
    }
}

#[allow(deprecated)]
fn to_symbol(o: &dpplan_ide::OutlineItem, lines: &Lines<'_>) -> lsp::DocumentSymbol {
    use dpplan_ide::OutlineKind as K;
    let kind = match o.kind {
        K::Plan => lsp::SymbolKind::FILE,
        K::Privacy => lsp::SymbolKind::NAMESPACE,
        K::Dataset => lsp::SymbolKind::STRUCT,
        K::Column => lsp::SymbolKind::FIELD,
        K::Query => lsp::SymbolKind::FUNCTION,
        K::Publish => lsp::SymbolKind::VARIABLE,
    };
    let range = lines.range(o.span);
    let mut selection = lines.range(o.selection);
    if selection.start < range.start || selection.end > range.end {
        selection = range;
    }
    lsp::DocumentSymbol {
        name: o.name.clone(),
        detail: o.detail.clone(),
        kind,
        tags: None,
        deprecated: None,
        range,
        selection_range: selection,
        children: (!o.children.is_empty())
            .then(|| o.children.iter().map(|c| to_symbol(c, lines)).collect()),
    }
}

fn semantic_tokens(doc: &Document, lines: &Lines<'_>) -> lsp::SemanticTokens {
    let text = doc.text();
    let mut data = Vec::new();
    let (mut prev_line, mut prev_start) = (0u32, 0u32);
    for t in doc.semantic_tokens() {
        // A token may span lines (a block comment): one token per line.
        let mut start = t.span.start;
        while start < t.span.end {
            let line_end = text[start..t.span.end]
                .find(['\n', '\r'])
                .map_or(t.span.end, |i| start + i);
            if line_end > start {
                let pos = lines.position(start);
                let length = lines.width(start, line_end);
                let delta_line = pos.line - prev_line;
                let delta_start = if delta_line == 0 {
                    pos.character - prev_start
                } else {
                    pos.character
                };
                data.push(lsp::SemanticToken {
                    delta_line,
                    delta_start,
                    length,
                    token_type: token_type(t.kind),
                    token_modifiers_bitset: u32::from(t.declaration),
                });
                prev_line = pos.line;
                prev_start = pos.character;
            }
            start = line_end;
            while start < t.span.end && matches!(text.as_bytes()[start], b'\n' | b'\r') {
                start += 1;
            }
        }
    }
    lsp::SemanticTokens {
        result_id: None,
        data,
    }
}

pub(crate) fn doc_url(base: &str, code: dpplan_ide::Code) -> Option<lsp::Uri> {
    lsp::Uri::from_str(&format!("{base}{}", code.doc_path())).ok()
}

pub(crate) fn to_lsp_diagnostic(
    d: &dpplan_ide::Diagnostic,
    lines: &Lines<'_>,
    uri: &lsp::Uri,
    docs_base: &str,
) -> lsp::Diagnostic {
    let severity = match d.severity {
        Severity::Error => lsp::DiagnosticSeverity::ERROR,
        Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        Severity::Hint => lsp::DiagnosticSeverity::HINT,
    };
    let mut message = d.message.clone();
    if let Some(h) = &d.help {
        message.push_str("\nhelp: ");
        message.push_str(h);
    }
    for n in &d.notes {
        message.push_str("\nnote: ");
        message.push_str(n);
    }
    let related: Vec<lsp::DiagnosticRelatedInformation> = d
        .secondary
        .iter()
        .map(|l| lsp::DiagnosticRelatedInformation {
            location: lsp::Location {
                uri: uri.clone(),
                range: lines.range(l.span),
            },
            message: if l.message.is_empty() {
                "related".into()
            } else {
                l.message.clone()
            },
        })
        .collect();
    lsp::Diagnostic {
        range: lines.range(d.primary.span),
        severity: Some(severity),
        code: Some(lsp::NumberOrString::String(d.code.as_str().to_string())),
        code_description: doc_url(docs_base, d.code).map(|href| lsp::CodeDescription { href }),
        source: Some("dpplan".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: None,
        data: None,
    }
}
