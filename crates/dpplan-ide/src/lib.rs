//! Editor features for `.dpplan` plans, as plain data.
//!
//! Everything is in byte offsets into the document's text and in plain
//! structs: no protocol type appears here (the `dpplan-lsp` crate converts to
//! LSP, UTF-16 positions included). Tests call this crate directly.
//!
//! A [`Document`] analyses its text once, with the same core as `dpplan
//! check` ([`dpplan_check::analyze_with`]), and answers every question from
//! that cached analysis. The expensive run of every accountant happens only
//! when the budget is hovered, once per text.
#![forbid(unsafe_code)]

mod actions;
mod complete;
mod docs;
mod hover;
mod outline;
mod policy;
mod symbols;
mod tokens;
mod unknown;

use std::sync::{Arc, OnceLock};

use dpplan_check::memo::AccountingCache;
use dpplan_check::{Analysis, AnalysisOptions, CheckedPlan};
use dpplan_syntax::lexer::{self, Lexeme};

pub use docs::keyword_doc;
pub use dpplan_check;
pub use dpplan_diagnostics::{Code, Diagnostic, Label, Severity, Span};
pub use dpplan_policy::FILE_NAME as POLICY_FILE_NAME;
pub use policy::{PolicyCache, PolicyContext};
pub use symbols::{Symbol, SymbolKind};

/// A replacement of `span` by `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    pub span: Span,
    pub new_text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Hover {
    /// The range the hover is about.
    pub span: Span,
    /// Markdown.
    pub markdown: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlayKind {
    /// A query's cost.
    QueryCost,
    /// The plan's total against its budget.
    PlanTotal,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InlayHint {
    /// Where the hint is shown (after this byte offset).
    pub offset: usize,
    pub label: String,
    pub tooltip: Option<String>,
    pub kind: InlayKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    Keyword,
    Dataset,
    Column,
    Query,
    Publish,
    Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompletionItem {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: Option<String>,
    pub documentation: Option<String>,
    /// What to insert when it differs from the label (e.g. `count(`).
    pub insert_text: Option<String>,
    /// The text the item replaces (the word typed so far).
    pub replace: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutlineKind {
    Plan,
    Privacy,
    Dataset,
    Column,
    Query,
    Publish,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutlineItem {
    pub name: String,
    pub detail: Option<String>,
    pub kind: OutlineKind,
    /// The whole item.
    pub span: Span,
    /// Its name.
    pub selection: Span,
    pub children: Vec<OutlineItem>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SemanticKind {
    Keyword,
    String,
    Number,
    Comment,
    Operator,
    Dataset,
    Column,
    Query,
    Publish,
}

impl SemanticKind {
    pub const ALL: &'static [SemanticKind] = &[
        SemanticKind::Keyword,
        SemanticKind::String,
        SemanticKind::Number,
        SemanticKind::Comment,
        SemanticKind::Operator,
        SemanticKind::Dataset,
        SemanticKind::Column,
        SemanticKind::Query,
        SemanticKind::Publish,
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SemanticToken {
    pub span: Span,
    pub kind: SemanticKind,
    /// The token defines its name.
    pub declaration: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CodeAction {
    pub title: String,
    /// The diagnostic the action fixes (one of [`Document::diagnostics`]).
    pub diagnostic: Option<Diagnostic>,
    pub edits: Vec<TextEdit>,
    /// The fix an editor may apply without asking which.
    pub preferred: bool,
    /// Set when `edits` are computed on demand by [`Document::resolve`]
    /// (they are expensive: the checker calibrates noise).
    pub resolve: Option<Resolve>,
}

/// What an unresolved code action will compute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolve {
    /// Set the query's noise to the solved value that fits the budget.
    SolveNoise { query: String },
}

/// What a document is analysed with besides its text.
#[derive(Clone, Default)]
pub struct Context {
    /// The organisation policy that governs it (`dpplan.toml`).
    pub policy: Option<PolicyContext>,
    /// The accountants' results of the document's earlier versions: an
    /// edit that keeps the releases does not account them again.
    pub cache: Option<Arc<AccountingCache>>,
}

impl Context {
    /// The analysis of `text` with `options`, the cache and the policy.
    fn analyze(&self, text: &str, options: &AnalysisOptions) -> Analysis {
        let mut a = match &self.cache {
            Some(cache) => dpplan_check::analyze_cached(text, options, cache),
            None => dpplan_check::analyze_with(text, options),
        };
        if let Some(p) = &self.policy {
            p.apply(&mut a);
        }
        a
    }
}

/// One text and everything known about it.
pub struct Document {
    context: Context,
    text: String,
    /// The analysis without per-query costs: the diagnostics (identical to
    /// the costed analysis' unless the plan is over budget, whose message
    /// ranks the queries by cost), the AST and the plan's report.
    light: Analysis,
    /// The analysis with per-query costs (hover, inlay hints): computed on
    /// first use, or at once when the plan is over budget.
    costed: OnceLock<Analysis>,
    tokens: Vec<Lexeme>,
    symbols: Vec<Symbol>,
    /// The report with every accountant: computed on the first budget hover.
    full_report: OnceLock<Option<CheckedPlan>>,
}

/// The options of the analysis behind hover and inlay hints: per-query
/// costs, but only the requested accountant.
pub fn fast_options() -> AnalysisOptions {
    AnalysisOptions {
        all_accountants: false,
        per_query_costs: true,
        accounting: true,
    }
}

/// The options of the per-keystroke analysis: neither every accountant nor
/// per-query costs (the most expensive part on large plans).
pub fn light_options() -> AnalysisOptions {
    AnalysisOptions {
        all_accountants: false,
        per_query_costs: false,
        accounting: true,
    }
}

impl Document {
    pub fn new(text: impl Into<String>) -> Document {
        Document::with_context(text, Context::default())
    }

    /// The document analysed under a policy and with an accounting cache.
    pub fn with_context(text: impl Into<String>, context: Context) -> Document {
        let text = text.into();
        let light = context.analyze(&text, &light_options());
        let tokens = lexer::tokenize(&text);
        let symbols = symbols::collect(&light.ast);
        let doc = Document {
            context,
            text,
            light,
            costed: OnceLock::new(),
            tokens,
            symbols,
            full_report: OnceLock::new(),
        };
        // DP011's message names the costliest queries: it needs the costs.
        if doc
            .light
            .diagnostics
            .iter()
            .any(|d| d.code == Code::OverBudget)
        {
            doc.analysis();
        }
        doc
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The analysis with per-query costs (computed on first use).
    pub fn analysis(&self) -> &Analysis {
        self.costed
            .get_or_init(|| self.context.analyze(&self.text, &fast_options()))
    }

    /// The analysis without per-query costs (always there).
    pub fn light_analysis(&self) -> &Analysis {
        &self.light
    }

    /// The AST (every node with its byte span).
    pub fn ast(&self) -> &dpplan_syntax::ast::Plan {
        &self.light.ast
    }

    /// Whether the per-query costs were computed already.
    pub fn has_costs(&self) -> bool {
        self.costed.get().is_some()
    }

    /// Syntax diagnostics first, then semantic ones by position: exactly
    /// what `dpplan check` reports.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self.costed.get() {
            Some(a) => &a.diagnostics,
            None => &self.light.diagnostics,
        }
    }

    /// The syntax diagnostics of a text alone (cheap: no checking), for
    /// publishing them before the semantic ones.
    pub fn syntax_diagnostics(text: &str) -> Vec<Diagnostic> {
        dpplan_syntax::parse(text).diagnostics
    }

    /// Every diagnostic that needs no accounting (all but DP011 and DP018),
    /// in milliseconds even on large plans: the server publishes these first
    /// and the full set when the accounting is done.
    pub fn unaccounted_diagnostics(text: &str) -> Vec<Diagnostic> {
        Document::unaccounted_diagnostics_in(text, None)
    }

    /// [`Document::unaccounted_diagnostics`] at the levels `policy` sets
    /// (its own rules, which read the total, come with the full set; a
    /// policy file that cannot be used is reported at once).
    pub fn unaccounted_diagnostics_in(
        text: &str,
        policy: Option<&PolicyContext>,
    ) -> Vec<Diagnostic> {
        let options = AnalysisOptions {
            all_accountants: false,
            per_query_costs: false,
            accounting: false,
        };
        let mut a = dpplan_check::analyze_with(text, &options);
        match policy {
            Some(p) if p.policy.is_err() => p.apply(&mut a),
            Some(p) => p.levels(&mut a.diagnostics),
            None => {}
        }
        a.diagnostics
    }

    /// The report computed with every accountant (cached).
    pub fn full_report(&self) -> Option<&CheckedPlan> {
        self.full_report
            .get_or_init(|| {
                self.context
                    .analyze(
                        &self.text,
                        &AnalysisOptions {
                            all_accountants: true,
                            per_query_costs: false,
                            accounting: true,
                        },
                    )
                    .report
            })
            .as_ref()
    }

    pub fn symbols(&self) -> &[Symbol] {
        &self.symbols
    }

    /// The text's tokens as the formatter and the editor see them
    /// ([`dpplan_syntax::lexer::tokenize`]).
    pub fn tokens(&self) -> &[Lexeme] {
        &self.tokens
    }

    /// The word token (identifier, keyword, number, path) at an offset; a
    /// cursor just after a word is on it.
    pub(crate) fn word_at(&self, offset: usize) -> Option<&Lexeme> {
        let i = self.tokens.partition_point(|t| t.end < offset);
        self.tokens[i..]
            .iter()
            .take(2)
            .find(|t| t.is_word() && t.start <= offset && offset <= t.end)
    }

    /// The span without trailing whitespace and comments (pest spans of rules
    /// ending in an optional part may include them).
    pub(crate) fn trim(&self, span: Span) -> Span {
        trim(&self.tokens, span)
    }

    pub fn hover(&self, offset: usize) -> Option<Hover> {
        hover::hover(self, offset)
    }

    /// The hover at the offset with, below it, the documentation
    /// (docs/diagnostics.md, built in) of every code whose diagnostic's
    /// primary span holds the offset: what an editor shows when it has no
    /// link to the documentation.
    pub fn hover_with_rule_docs(&self, offset: usize) -> Option<Hover> {
        hover::with_rule_docs(self, offset, self.hover(offset))
    }

    pub fn inlay_hints(&self, range: Span) -> Vec<InlayHint> {
        hover::inlay_hints(self, range)
    }

    pub fn completions(&self, offset: usize) -> Vec<CompletionItem> {
        complete::completions(self, offset)
    }

    /// The symbol whose definition or a use is at the offset.
    pub fn symbol_at(&self, offset: usize) -> Option<(&Symbol, Span)> {
        symbols::at(&self.symbols, offset)
    }

    /// Where the name at the offset is defined.
    pub fn definition(&self, offset: usize) -> Option<Span> {
        let (s, _) = self.symbol_at(offset)?;
        s.defs.first().copied()
    }

    /// Every occurrence of the name at the offset.
    pub fn references(&self, offset: usize, include_declaration: bool) -> Vec<Span> {
        let Some((s, _)) = self.symbol_at(offset) else {
            return Vec::new();
        };
        let mut out: Vec<Span> = s.refs.clone();
        if include_declaration {
            out.extend(s.defs.iter().copied());
        }
        out.sort();
        out.dedup();
        out
    }

    /// The range a rename at the offset would change.
    pub fn prepare_rename(&self, offset: usize) -> Option<Span> {
        self.symbol_at(offset).map(|(_, span)| span)
    }

    /// The edits that rename the symbol at the offset, or why not.
    pub fn rename(&self, offset: usize, new_name: &str) -> Result<Vec<TextEdit>, String> {
        symbols::rename(self, offset, new_name)
    }

    /// The outline, with the checked plan's details (the unit and budget,
    /// each query's aggregation, schedule and ε).
    pub fn outline(&self) -> Vec<OutlineItem> {
        outline::outline(&outline::Source {
            text: &self.text,
            tokens: &self.tokens,
            plan: self.ast(),
            report: self.light.report.as_ref(),
        })
    }

    pub fn semantic_tokens(&self) -> Vec<SemanticToken> {
        tokens::semantic_tokens(self)
    }

    /// Fixes for the diagnostics whose primary span meets `range`.
    pub fn code_actions(&self, range: Span) -> Vec<CodeAction> {
        actions::code_actions(self, range)
    }

    /// Computes the edits of an unresolved action: `None` when there is no
    /// fix after all (the action should then be dropped).
    pub fn resolve(&self, action: &CodeAction) -> Option<CodeAction> {
        match &action.resolve {
            None => Some(action.clone()),
            Some(Resolve::SolveNoise { query }) => {
                let (title, edit) = actions::solve_noise(self, query)?;
                Some(CodeAction {
                    title,
                    edits: vec![edit],
                    resolve: None,
                    ..action.clone()
                })
            }
        }
    }

    /// Every code action with its edits computed.
    pub fn code_actions_resolved(&self, range: Span) -> Vec<CodeAction> {
        self.code_actions(range)
            .iter()
            .filter_map(|a| self.resolve(a))
            .collect()
    }

    /// The whole text in its canonical layout, or `None` when it is already
    /// formatted; an error when it cannot be formatted (syntax errors).
    pub fn format(&self) -> Result<Option<String>, dpplan_fmt::FormatError> {
        format_text(&self.text)
    }

    /// The start of the line holding `offset`, and its indentation.
    pub(crate) fn line_indent(&self, offset: usize) -> (usize, &str) {
        let start = self.text[..offset.min(self.text.len())]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let rest = &self.text[start..];
        let n = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        (start, &rest[..n])
    }
}

/// The text in its canonical layout, or `None` when it is already
/// formatted (no analysis needed).
pub fn format_text(text: &str) -> Result<Option<String>, dpplan_fmt::FormatError> {
    let out = dpplan_fmt::format(text)?;
    Ok((out != text).then_some(out))
}

/// The outline of a text from its syntax tree alone: what
/// [`Document::outline`] shows, without the details that need the checked
/// plan (the privacy block's and the queries'). It costs a parse, not an
/// analysis: the editor's outline of a large plan before its analysis is
/// done.
pub fn outline_of_text(text: &str) -> Vec<OutlineItem> {
    let tokens = lexer::tokenize(text);
    let parsed = dpplan_syntax::parse(text);
    outline::outline(&outline::Source {
        text,
        tokens: &tokens,
        plan: &parsed.plan,
        report: None,
    })
}

/// `span` without trailing whitespace and comments (pest spans of rules
/// ending in an optional part may include them), by the text's `tokens`.
fn trim(tokens: &[Lexeme], span: Span) -> Span {
    let i = tokens.partition_point(|t| t.start < span.start);
    let end = tokens[i..]
        .iter()
        .take_while(|t| t.end <= span.end)
        .filter(|t| !t.is_comment())
        .last()
        .map_or(span.end, |t| t.end);
    Span::new(span.start, end.max(span.start))
}

/// Formats a number for people, rounded up (as `dpplan check` prints ε).
pub fn num(x: f64) -> String {
    dpplan_diagnostics::num(x)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod errors_tests;

#[cfg(test)]
mod fix_tests;
