//! One function per request: typed params (and the [`Snapshot`] of the
//! document they name) in, the request's typed result out. They run on
//! request threads, under `catch_unwind` ([`super::dispatch`]), and read
//! nothing but their arguments; the conversions to lsp-types are in
//! [`crate::convert`].
//!
//! The document notifications (`didOpen`, `didChange`, `didClose`) change the
//! server's state and are in [`super::state`].

use std::str::FromStr;

use lsp_server::ErrorCode;
use lsp_types as lsp;
use serde_json::Value;

use dpplan_ide::Span;

use super::dispatch::{Ctx, Failure};
use super::state::{open, Snapshot};
use crate::convert;

/// The hover; when no documentation base is configured (so diagnostics
/// carry no link), it also shows the documentation of the diagnostics under
/// the cursor.
pub(super) fn hover(
    snap: &Snapshot,
    p: lsp::HoverParams,
    ctx: &Ctx,
) -> Result<Option<lsp::Hover>, Failure> {
    let (doc, lines) = (snap.doc()?, snap.lines());
    let offset = lines.offset(p.text_document_position_params.position);
    let h = if ctx.docs_base.is_empty() {
        doc.hover_with_rule_docs(offset)
    } else {
        doc.hover(offset)
    };
    Ok(h.map(|h| convert::to_hover(h, &lines)))
}

pub(super) fn completion(
    snap: &Snapshot,
    p: lsp::CompletionParams,
) -> Result<Option<lsp::CompletionResponse>, Failure> {
    let (doc, lines) = (snap.doc()?, snap.lines());
    let offset = lines.offset(p.text_document_position.position);
    let items: Vec<lsp::CompletionItem> = doc
        .completions(offset)
        .into_iter()
        .map(|c| convert::to_completion_item(c, &lines))
        .collect();
    Ok(Some(lsp::CompletionResponse::Array(items)))
}

pub(super) fn definition(
    snap: &Snapshot,
    p: lsp::GotoDefinitionParams,
) -> Result<Option<lsp::GotoDefinitionResponse>, Failure> {
    let tdp = p.text_document_position_params;
    let (doc, lines) = (snap.doc()?, snap.lines());
    Ok(doc.definition(lines.offset(tdp.position)).map(|span| {
        let location = convert::to_location(&tdp.text_document.uri, &lines, span);
        lsp::GotoDefinitionResponse::Scalar(location)
    }))
}

pub(super) fn references(
    snap: &Snapshot,
    p: lsp::ReferenceParams,
) -> Result<Option<Vec<lsp::Location>>, Failure> {
    let tdp = p.text_document_position;
    let (doc, lines) = (snap.doc()?, snap.lines());
    let refs = doc
        .references(lines.offset(tdp.position), p.context.include_declaration)
        .into_iter()
        .map(|span| convert::to_location(&tdp.text_document.uri, &lines, span))
        .collect();
    Ok(Some(refs))
}

pub(super) fn prepare_rename(
    snap: &Snapshot,
    p: lsp::TextDocumentPositionParams,
) -> Result<Option<lsp::PrepareRenameResponse>, Failure> {
    let (doc, lines) = (snap.doc()?, snap.lines());
    Ok(doc
        .prepare_rename(lines.offset(p.position))
        .map(|span| lsp::PrepareRenameResponse::Range(lines.range(span))))
}

pub(super) fn rename(
    snap: &Snapshot,
    p: lsp::RenameParams,
) -> Result<Option<lsp::WorkspaceEdit>, Failure> {
    let tdp = p.text_document_position;
    let (doc, lines) = (snap.doc()?, snap.lines());
    let edits = doc
        .rename(lines.offset(tdp.position), &p.new_name)
        .map_err(|e| Failure::new(ErrorCode::InvalidRequest, e))?;
    let uri = &tdp.text_document.uri;
    Ok(Some(convert::workspace_edit(uri, &lines, &edits)))
}

/// The outline: from the analysis when it is done (with each query's
/// aggregation, schedule and ε), else from the text's syntax tree alone
/// (names and ranges; the details come with the next request after the
/// analysis), so that a large plan's outline does not wait for its analysis.
pub(super) fn document_symbol(
    snap: &Snapshot,
    _: lsp::DocumentSymbolParams,
) -> Result<Option<lsp::DocumentSymbolResponse>, Failure> {
    let lines = snap.lines();
    let outline = match &snap.doc {
        Some(doc) => doc.outline(),
        None => dpplan_ide::outline_of_text(lines.text),
    };
    let symbols: Vec<lsp::DocumentSymbol> = outline
        .iter()
        .map(|o| convert::to_symbol(o, &lines))
        .collect();
    Ok(Some(lsp::DocumentSymbolResponse::Nested(symbols)))
}

pub(super) fn semantic_tokens_full(
    snap: &Snapshot,
    _: lsp::SemanticTokensParams,
) -> Result<Option<lsp::SemanticTokensResult>, Failure> {
    let (doc, lines) = (snap.doc()?, snap.lines());
    let tokens = convert::semantic_tokens(doc, &lines);
    Ok(Some(lsp::SemanticTokensResult::Tokens(tokens)))
}

pub(super) fn inlay_hint(
    snap: &Snapshot,
    p: lsp::InlayHintParams,
) -> Result<Option<Vec<lsp::InlayHint>>, Failure> {
    let (doc, lines) = (snap.doc()?, snap.lines());
    let hints = doc
        .inlay_hints(lines.span(p.range))
        .into_iter()
        .map(|h| convert::to_inlay_hint(h, &lines))
        .collect();
    Ok(Some(hints))
}

/// Quick fixes in the range. An expensive edit (calibrating a query's noise)
/// waits for `codeAction/resolve` when the client can resolve edits: the
/// action carries `{ "uri", "solveNoise": query }` as its data.
pub(super) fn code_action(
    snap: &Snapshot,
    p: lsp::CodeActionParams,
    ctx: &Ctx,
) -> Result<Option<lsp::CodeActionResponse>, Failure> {
    let uri = &p.text_document.uri;
    let (doc, lines) = (snap.doc()?, snap.lines());
    let wanted = p.context.only.as_ref().is_none_or(|only| {
        only.iter()
            .any(|k| k == &lsp::CodeActionKind::QUICKFIX || k.as_str().is_empty())
    });
    if !wanted {
        return Ok(Some(Vec::new()));
    }
    let actions = doc
        .code_actions(lines.span(p.range))
        .iter()
        .filter_map(|a| {
            let (a, data) = match &a.resolve {
                Some(dpplan_ide::Resolve::SolveNoise { query }) if ctx.resolve_edits => (
                    a.clone(),
                    Some(serde_json::json!({ "uri": uri.as_str(), "solveNoise": query })),
                ),
                _ => (doc.resolve(a)?, None),
            };
            let action = convert::to_code_action(&a, &lines, uri, &ctx.docs_base, data);
            Some(lsp::CodeActionOrCommand::CodeAction(action))
        })
        .collect();
    Ok(Some(actions))
}

/// The edit of a code action sent without one ([`code_action`]); an action
/// without such data comes back unchanged.
pub(super) fn code_action_resolve(
    target: Option<&Snapshot>,
    mut action: lsp::CodeAction,
) -> Result<lsp::CodeAction, Failure> {
    let data = action.data.take().unwrap_or(Value::Null);
    let (Some(uri), Some(query)) = (
        data.get("uri").and_then(Value::as_str),
        data.get("solveNoise").and_then(Value::as_str),
    ) else {
        return Ok(action);
    };
    let uri = lsp::Uri::from_str(uri).map_err(Failure::invalid_params)?;
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
                reason: "no noise level of this query alone makes the plan fit its budget".into(),
            });
        }
    }
    Ok(action)
}

/// The canonical layout as one edit of the whole text (none when it is
/// already canonical); a plan with syntax errors is refused. Reads the text
/// only, not the analysis.
pub(super) fn formatting(
    snap: &Snapshot,
    _: lsp::DocumentFormattingParams,
) -> Result<Option<Vec<lsp::TextEdit>>, Failure> {
    let lines = snap.lines();
    let text = lines.text;
    let formatted = dpplan_ide::format_text(text)
        .map_err(|e| Failure::new(ErrorCode::RequestFailed, e.to_string()))?;
    Ok(Some(match formatted {
        None => Vec::new(),
        Some(out) => vec![lsp::TextEdit {
            range: lines.range(Span::new(0, text.len())),
            new_text: out,
        }],
    }))
}

/// `dpplan/testPanic`, a test-only request ([`crate::ServerOptions`]): its
/// handler panics.
pub(super) enum TestPanic {}

impl lsp::request::Request for TestPanic {
    type Params = Value;
    type Result = ();
    const METHOD: &'static str = "dpplan/testPanic";
}

pub(super) fn test_panic(_: Value) -> Result<(), Failure> {
    panic!("test panic requested")
}
