//! Per-document state: the texts the client opened, their versions and line
//! indexes, the analysis of the current text once done, and the requests
//! waiting for it ([`DocState::parked`]); the document notifications
//! (`didOpen`, `didChange`, `didClose`) that change it, and the
//! [`Snapshot`] of one version that a request handler reads.
//!
//! Each text gets a generation, unique in the server: an analysis or an
//! answer is matched to a text by it, so that a result about an older text is
//! dropped (see `workers`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use line_index::LineIndex;
use lsp_server::{ErrorCode, Request, RequestId};
use lsp_types as lsp;

use dpplan_ide::dpplan_check::memo::AccountingCache;
use dpplan_ide::Document;

use super::dispatch::Failure;
use super::Server;
use crate::convert::{Encoding, Lines};

/// What a request handler reads about its document: one version's analysis
/// (or, for formatting and an outline asked before the analysis is done,
/// its text) and line index, owned, so that the handler can run on a thread.
pub(super) struct Snapshot {
    /// The document's key (its URI).
    pub(super) key: String,
    /// The analysis of the current version (`None` for a request answered
    /// from the text alone).
    pub(super) doc: Option<Arc<Document>>,
    /// The text, for a request answered without the analysis (formatting,
    /// the outline before the analysis is done).
    pub(super) text: Option<String>,
    pub(super) index: Arc<LineIndex>,
    pub(super) encoding: Encoding,
}

impl Snapshot {
    pub(super) fn doc(&self) -> Result<&Arc<Document>, Failure> {
        self.doc.as_ref().ok_or_else(|| {
            Failure::new(
                ErrorCode::InternalError,
                "internal error: no analysis for this request",
            )
        })
    }

    pub(super) fn lines(&self) -> Lines<'_> {
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
pub(super) fn open<'a>(
    target: Option<&'a Snapshot>,
    uri: &lsp::Uri,
) -> Result<&'a Snapshot, Failure> {
    match target {
        Some(s) if s.key == uri.as_str() => Ok(s),
        _ => Err(Failure::new(
            ErrorCode::InvalidParams,
            format!("the document {} is not open", uri.as_str()),
        )),
    }
}

pub(super) struct DocState {
    pub(super) uri: lsp::Uri,
    pub(super) version: i32,
    pub(super) text: String,
    pub(super) index: Arc<LineIndex>,
    /// This text's number, unique in the server (clients' versions need not
    /// be): results are matched to texts by it.
    pub(super) generation: u64,
    /// The document's current generation, shared with its analysis threads
    /// (0 once closed): a thread whose text was superseded skips its full
    /// analysis.
    pub(super) latest: Arc<AtomicU64>,
    /// The analysis of this generation, once done.
    pub(super) doc: Option<Arc<Document>>,
    /// The analysis of this generation panicked.
    pub(super) failed: bool,
    /// The analysis of this generation has not started yet.
    pub(super) dirty: bool,
    /// The generation an analysis thread is working on (one at a time).
    pub(super) running: Option<u64>,
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
    pub(super) parked: Vec<Request>,
    /// The accountants' results of this document's versions: an edit that
    /// keeps the releases is not accounted again.
    pub(super) accounting: Arc<AccountingCache>,
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
            accounting: AccountingCache::new(),
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

/// The text after the client's changes, applied in order (each range is in
/// the text left by the changes before it).
fn apply_changes(
    mut text: String,
    index: Arc<LineIndex>,
    changes: Vec<lsp::TextDocumentContentChangeEvent>,
    encoding: Encoding,
) -> String {
    let mut index = index;
    let n = changes.len();
    for (i, change) in changes.into_iter().enumerate() {
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
    text
}

impl Server {
    fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    /// `textDocument/didOpen`: a new text (replacing one of the same URI).
    pub(super) fn did_open(&mut self, p: lsp::DidOpenTextDocumentParams) {
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

    /// `textDocument/didChange`: the text changes; requests waiting for the
    /// old text are answered `ContentModified`.
    pub(super) fn did_change(&mut self, p: lsp::DidChangeTextDocumentParams) {
        let encoding = self.encoding;
        let generation = self.next_generation();
        let key = p.text_document.uri.as_str().to_string();
        let Some(state) = self.docs.get_mut(&key) else {
            eprintln!("dpplan lsp: didChange for a document that is not open");
            return;
        };
        let text = std::mem::take(&mut state.text);
        let index = Arc::clone(&state.index);
        let text = apply_changes(text, index, p.content_changes, encoding);
        state.version = p.text_document.version;
        state.set_text(text, generation);
        let parked = std::mem::take(&mut state.parked);
        self.modified(&key, parked);
    }

    /// `textDocument/didClose`: the document is forgotten and its
    /// diagnostics cleared.
    pub(super) fn did_close(&mut self, p: lsp::DidCloseTextDocumentParams) {
        let key = p.text_document.uri.as_str().to_string();
        if let Some(state) = self.docs.remove(&key) {
            let uri = state.uri.clone();
            self.superseded(&key, state);
            // Clear its diagnostics.
            self.notify::<lsp::notification::PublishDiagnostics>(lsp::PublishDiagnosticsParams {
                uri,
                diagnostics: Vec::new(),
                version: None,
            });
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
    pub(super) fn modified(&mut self, key: &str, parked: Vec<Request>) {
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

    /// `workspace/didChangeWatchedFiles`: a watched file changed; when it
    /// is a policy file (`dpplan.toml`), every open document is analysed
    /// again under the policy as it is now.
    pub(super) fn did_change_watched_files(&mut self, p: lsp::DidChangeWatchedFilesParams) {
        let policy_changed = p.changes.iter().any(|c| {
            crate::convert::file_path(&c.uri).is_some_and(|f| {
                f.file_name()
                    .is_some_and(|n| n == dpplan_ide::POLICY_FILE_NAME)
            })
        });
        if !policy_changed {
            return;
        }
        self.policies.clear();
        let keys: Vec<String> = self.docs.keys().cloned().collect();
        for key in keys {
            let generation = self.next_generation();
            let Some(state) = self.docs.get_mut(&key) else {
                continue;
            };
            let text = std::mem::take(&mut state.text);
            state.set_text(text, generation);
            let parked = std::mem::take(&mut state.parked);
            self.modified(&key, parked);
        }
    }

    /// Answers a waiting request that the client cancelled.
    pub(super) fn cancel(&mut self, id: &RequestId) {
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
}
