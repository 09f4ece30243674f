//! Dispatch by the request's or notification's type: each handler is
//! registered with its lsp-types type (`R::METHOD`, `R::Params`, `R::Result`),
//! so the method name, the params' type and the result's type cannot
//! disagree.
//!
//! [`answer`] runs one request through the table in [`handle`] under
//! `catch_unwind`: params that do not deserialize are answered
//! `InvalidParams` (-32602), a method without a handler `MethodNotFound`
//! (-32601), a panic `InternalError`. [`notification`] does the same for the
//! notifications the loop does not handle itself; an unknown one is ignored.

use std::panic::{catch_unwind, AssertUnwindSafe};

use lsp_server::{ErrorCode, Notification, Request, Response};
use lsp_types as lsp;
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    Notification as LspNotification,
};
use lsp_types::request::{
    CodeActionRequest, CodeActionResolveRequest, Completion, DocumentSymbolRequest, Formatting,
    GotoDefinition, HoverRequest, InlayHintRequest, PrepareRenameRequest, References, Rename,
    Request as LspRequest, SemanticTokensFullRequest,
};
use serde_json::Value;

use super::handlers::{self, TestPanic};
use super::state::{open, Snapshot};
use super::Server;

/// What request handlers need from the server's settings.
#[derive(Clone)]
pub(super) struct Ctx {
    pub(super) docs_base: String,
    pub(super) resolve_edits: bool,
    pub(super) test_methods: bool,
}

/// A request's error answer.
pub(super) struct Failure {
    code: ErrorCode,
    message: String,
}

impl Failure {
    pub(super) fn new(code: ErrorCode, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    pub(super) fn invalid_params(e: impl std::fmt::Display) -> Failure {
        Failure::new(ErrorCode::InvalidParams, format!("invalid params: {e}"))
    }
}

pub(super) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

/// Runs a request's handler and turns its outcome, or its panic, into the
/// response. `target` is the snapshot of the open document the request is
/// about, if any.
pub(super) fn answer(req: Request, ctx: &Ctx, target: Option<&Snapshot>) -> Response {
    let Request { id, method, params } = req;
    let result = catch_unwind(AssertUnwindSafe(|| handle(method, params, ctx, target)));
    match result {
        Ok(Ok(v)) => Response::new_ok(id, v),
        Ok(Err(Failure { code, message })) => Response::new_err(id, code as i32, message),
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

/// The request handlers, by request type.
fn handle(
    method: String,
    params: Value,
    ctx: &Ctx,
    target: Option<&Snapshot>,
) -> Result<Value, Failure> {
    let table = RequestDispatcher::new(method, params, target)
        .on_document::<HoverRequest>(|snap, p| handlers::hover(snap, p, ctx))
        .on_document::<Completion>(handlers::completion)
        .on_document::<GotoDefinition>(handlers::definition)
        .on_document::<References>(handlers::references)
        .on_document::<PrepareRenameRequest>(handlers::prepare_rename)
        .on_document::<Rename>(handlers::rename)
        .on_document::<DocumentSymbolRequest>(handlers::document_symbol)
        .on_document::<SemanticTokensFullRequest>(handlers::semantic_tokens_full)
        .on_document::<InlayHintRequest>(handlers::inlay_hint)
        .on_document::<CodeActionRequest>(|snap, p| handlers::code_action(snap, p, ctx))
        .on::<CodeActionResolveRequest>(|p| handlers::code_action_resolve(target, p))
        .on_document::<Formatting>(handlers::formatting);
    let table = if ctx.test_methods {
        table.on::<TestPanic>(handlers::test_panic)
    } else {
        table
    };
    table.finish()
}

/// The notification handlers the main loop does not run itself (`exit`
/// and `$/cancelRequest` it does), by notification type.
pub(super) fn notification(server: &mut Server, n: Notification) {
    NotificationDispatcher::new(server, n)
        .on::<DidOpenTextDocument>(Server::did_open)
        .on::<DidChangeTextDocument>(Server::did_change)
        .on::<DidCloseTextDocument>(Server::did_close)
        .on::<DidChangeWatchedFiles>(Server::did_change_watched_files);
}

/// A request about one document: where its params name the document, whose
/// snapshot the handler then gets.
pub(super) trait DocumentRequest: LspRequest {
    fn uri(params: &Self::Params) -> &lsp::Uri;
}

macro_rules! document_request {
    ($($request:ty => |$p:ident| $uri:expr;)*) => {
        $(impl DocumentRequest for $request {
            fn uri($p: &Self::Params) -> &lsp::Uri {
                &$uri.uri
            }
        })*
    };
}

document_request! {
    HoverRequest => |p| p.text_document_position_params.text_document;
    Completion => |p| p.text_document_position.text_document;
    GotoDefinition => |p| p.text_document_position_params.text_document;
    References => |p| p.text_document_position.text_document;
    PrepareRenameRequest => |p| p.text_document;
    Rename => |p| p.text_document_position.text_document;
    DocumentSymbolRequest => |p| p.text_document;
    SemanticTokensFullRequest => |p| p.text_document;
    InlayHintRequest => |p| p.text_document;
    CodeActionRequest => |p| p.text_document;
    Formatting => |p| p.text_document;
}

/// Routes one request to the handler registered for its type (after the
/// first match, the others are skipped).
struct RequestDispatcher<'a> {
    method: String,
    /// The params, until a handler takes them.
    params: Option<Value>,
    target: Option<&'a Snapshot>,
    outcome: Option<Result<Value, Failure>>,
}

impl<'a> RequestDispatcher<'a> {
    fn new(method: String, params: Value, target: Option<&'a Snapshot>) -> Self {
        RequestDispatcher {
            method,
            params: Some(params),
            target,
            outcome: None,
        }
    }

    /// The params, typed, if the request is an `R` not handled yet.
    fn params<R: LspRequest>(&mut self) -> Option<Result<R::Params, Failure>> {
        if self.method != R::METHOD {
            return None;
        }
        let params = self.params.take()?;
        Some(serde_json::from_value(params).map_err(Failure::invalid_params))
    }

    /// Handles an `R` with `f`.
    fn on<R: LspRequest>(
        mut self,
        f: impl FnOnce(R::Params) -> Result<R::Result, Failure>,
    ) -> Self {
        if let Some(params) = self.params::<R>() {
            self.outcome = Some(params.and_then(f).and_then(to_json::<R>));
        }
        self
    }

    /// Handles an `R` about an open document with `f`, given that document's
    /// snapshot (a document that is not open is `InvalidParams`).
    fn on_document<R: DocumentRequest>(
        mut self,
        f: impl FnOnce(&Snapshot, R::Params) -> Result<R::Result, Failure>,
    ) -> Self {
        if let Some(params) = self.params::<R>() {
            let target = self.target;
            let outcome = params.and_then(|p| f(open(target, R::uri(&p))?, p));
            self.outcome = Some(outcome.and_then(to_json::<R>));
        }
        self
    }

    /// The handler's outcome, or `MethodNotFound`.
    fn finish(self) -> Result<Value, Failure> {
        let method = self.method;
        self.outcome.unwrap_or_else(|| {
            Err(Failure::new(
                ErrorCode::MethodNotFound,
                format!("unknown method {method}"),
            ))
        })
    }
}

fn to_json<R: LspRequest>(result: R::Result) -> Result<Value, Failure> {
    serde_json::to_value(result).map_err(|e| Failure::new(ErrorCode::InternalError, e.to_string()))
}

/// Routes one notification to the handler registered for its type; params
/// that do not deserialize are logged and ignored.
struct NotificationDispatcher<'a> {
    server: &'a mut Server,
    method: String,
    /// The params, until a handler takes them.
    params: Option<Value>,
}

impl<'a> NotificationDispatcher<'a> {
    fn new(server: &'a mut Server, n: Notification) -> Self {
        NotificationDispatcher {
            server,
            method: n.method,
            params: Some(n.params),
        }
    }

    fn on<N: LspNotification>(mut self, f: fn(&mut Server, N::Params)) -> Self {
        if self.method != N::METHOD {
            return self;
        }
        let Some(params) = self.params.take() else {
            return self;
        };
        match serde_json::from_value(params) {
            Ok(p) => f(self.server, p),
            Err(_) => {
                // "didOpen" for "textDocument/didOpen"
                let name = N::METHOD.rsplit('/').next().unwrap_or(N::METHOD);
                eprintln!("dpplan lsp: bad {name} params");
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ctx(test_methods: bool) -> Ctx {
        Ctx {
            docs_base: String::new(),
            resolve_edits: false,
            test_methods,
        }
    }

    fn error(method: &str, params: Value, ctx: &Ctx) -> (i32, String) {
        let r = answer(Request::new(1.into(), method.into(), params), ctx, None);
        let e = r.response_result.expect_err("an error");
        (e.code, e.message)
    }

    #[test]
    fn typed_errors() {
        let c = ctx(false);
        assert_eq!(
            error("no/such", json!({}), &c),
            (-32601, "unknown method no/such".into())
        );
        let (code, message) = error(HoverRequest::METHOD, json!({ "bogus": 1 }), &c);
        assert_eq!(code, -32602);
        assert!(
            message.starts_with("invalid params: missing field"),
            "{message}"
        );
        let at = json!({ "textDocument": { "uri": "file:///a.dpplan" }, "position": { "line": 0, "character": 0 } });
        assert_eq!(
            error(HoverRequest::METHOD, at, &c),
            (-32602, "the document file:///a.dpplan is not open".into())
        );
        // A lazily resolved action without data needs no document.
        let r = answer(
            Request::new(
                2.into(),
                "codeAction/resolve".into(),
                json!({ "title": "t" }),
            ),
            &c,
            None,
        );
        assert_eq!(r.response_result.ok(), Some(json!({ "title": "t" })));
    }

    #[test]
    fn test_methods_only_when_enabled() {
        assert_eq!(error(TestPanic::METHOD, Value::Null, &ctx(false)).0, -32601);
        assert_eq!(
            error(TestPanic::METHOD, Value::Null, &ctx(true)),
            (-32603, "internal error: test panic requested".into())
        );
    }
}
