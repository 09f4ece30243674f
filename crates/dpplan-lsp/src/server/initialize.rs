//! `initialize`: the settings the client negotiates (position encoding,
//! lazily resolved code-action edits, the documentation links' base, full or
//! incremental sync) and the server's capabilities.

use lsp_types as lsp;
use serde_json::Value;

use super::Server;
use crate::convert::{self, Encoding};

impl Server {
    /// Answers `initialize` (the main loop calls it, under `catch_unwind`).
    pub(super) fn initialize(&mut self, params: &Value) -> Value {
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
        if !self.docs_base.is_empty() && !self.docs_base.ends_with('/') {
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
}
