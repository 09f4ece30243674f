//! The `.dpplan` syntax: grammar (grammar/dpplan.pest), typed AST, the
//! lexer and an error-tolerant parser.
//!
//! [`parse`] never fails and never panics: it returns the AST of everything
//! that parsed and one diagnostic per broken top-level item. It first splits
//! the plan into top-level items through the [`lexer`] (strings, comments,
//! braces, line breaks), then parses each item with its own grammar rule, so
//! a plan with three broken queries reports three errors and the rest is
//! still checked.
//!
//! The [`lexer`] is the one reader of the text's tokens: the splitter, the
//! formatter (`dpplan-fmt`) and the editor features (`dpplan-ide`) use it,
//! and its [`lexer::KEYWORDS`] are checked against the grammar. The grammar
//! itself (pest's parser and `Rule`s) stays inside this crate: other crates
//! see the AST, the lexer's tokens and the layout of [`statements`].
#![forbid(unsafe_code)]

pub mod ast;
pub mod lexer;
mod lower;
mod messages;
mod split;
mod statements;

use dpplan_diagnostics::{Code, Diagnostic, Span};
use pest::Parser as _;

pub use split::{ItemKind, RawItem};
pub use statements::{statements, Statement, StatementKind};

pub(crate) use grammar::{DpplanParser, Rule};

mod grammar {
    /// The pest parser generated from the grammar file, the single source of
    /// truth for the syntax.
    #[derive(pest_derive::Parser)]
    #[grammar = "../../grammar/dpplan.pest"]
    pub struct DpplanParser;
}

/// Inputs larger than this are refused before parsing (DP016).
pub const MAX_INPUT_BYTES: usize = 16 * 1024 * 1024;
/// Brace nesting deeper than this is refused (DP016). The grammar itself
/// nests at most three levels.
pub const MAX_NESTING: usize = 32;
/// At most this many syntax diagnostics are reported per file, the first in
/// source order; one more DP000 diagnostic then says how many were left out
/// ("N more syntax errors not shown") and points at the first of them. Every
/// broken item is still recorded in [`ast::Plan::broken`].
pub const MAX_SYNTAX_ERRORS: usize = 100;

/// The result of parsing one text.
#[derive(Debug, Clone)]
pub struct Parsed {
    pub plan: ast::Plan,
    /// Syntax diagnostics (code DP000, DP013, DP015 or DP016): the
    /// scanner's, then the broken items', each in source order; at most
    /// [`MAX_SYNTAX_ERRORS`] (the first in source order), then, if there
    /// were more, one DP000 diagnostic that counts the rest.
    pub diagnostics: Vec<Diagnostic>,
    /// The top-level items as the scanner split them.
    pub items: Vec<RawItem>,
}

/// Parses a plan. Never panics; every problem is a diagnostic.
///
/// Its cost stays near that of parsing intact text however much of the text
/// is broken: each item is parsed once without pest's error detail, and only
/// the broken items whose errors are shown (at most [`MAX_SYNTAX_ERRORS`])
/// are parsed again with detail and turned into messages in words.
pub fn parse(text: &str) -> Parsed {
    if text.len() > MAX_INPUT_BYTES {
        let diagnostic = Diagnostic::new(
            Code::Limit,
            format!(
                "the plan is {} bytes; dpplan reads at most {} bytes",
                text.len(),
                MAX_INPUT_BYTES
            ),
            Span::new(0, 0),
        )
        .help("split the plan into several files");
        return Parsed {
            plan: ast::Plan::default(),
            diagnostics: vec![diagnostic],
            items: Vec::new(),
        };
    }
    let split = split::split(text);
    // The broken items, in source order; their diagnostics are built below,
    // and only for those that are shown.
    let (mut plan, broken) = parse_items(text, &split.items);
    // The scanner's errors (text after the plan, an unmatched brace, a
    // second or a missing header) leave text that no item holds: the plan
    // is broken there too, so that no guarantee is claimed for it.
    plan.broken.extend(
        split
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.primary.span),
    );
    plan.broken.sort_by_key(|s| (s.start, s.end));
    // The item lists grew by doubling; a plan of 10⁵ queries would keep
    // up to 60 % spare room for as long as its analysis lives.
    plan.queries.shrink_to_fit();
    plan.publishes.shrink_to_fit();
    let diagnostics = report(text, split.diagnostics, &broken);
    Parsed {
        plan,
        diagnostics,
        items: split.items,
    }
}

/// Plans with fewer items than this are parsed on the calling thread.
const PARALLEL_ITEMS: usize = 4096;

/// Parses and lowers every item, in source order. The items are
/// independent (the scanner split them), so a large plan is cut into one
/// run of consecutive items per core, each parsed on its own thread, and
/// the partial plans are appended in order: the same plan as one pass.
fn parse_items<'i>(text: &str, items: &'i [RawItem]) -> (ast::Plan, Vec<&'i RawItem>) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    if items.len() < PARALLEL_ITEMS || threads < 2 {
        return parse_run(text, items);
    }
    // Runs of RUN_ITEMS items, taken in turn by every thread (this one
    // too) until none is left: a thread slowed by the machine's other work
    // takes fewer (one run per thread, fixed in advance, waited for the
    // slowest: up to 30 ms at 10⁵ queries).
    const RUN_ITEMS: usize = 1024;
    let runs: Vec<&[RawItem]> = items.chunks(RUN_ITEMS).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(run) = runs.get(i) else {
                return done;
            };
            done.push((i, parse_run(text, run)));
        }
    };
    let mut parsed: Vec<(usize, (ast::Plan, Vec<&RawItem>))> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut all = work();
        for h in helpers {
            all.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        all
    });
    // back in source order
    parsed.sort_by_key(|(i, _)| *i);
    let runs: Vec<(ast::Plan, Vec<&RawItem>)> = parsed.into_iter().map(|(_, r)| r).collect();
    let mut plan = ast::Plan::default();
    plan.queries
        .reserve_exact(runs.iter().map(|(part, _)| part.queries.len()).sum());
    let mut broken = Vec::new();
    for (mut part, mut part_broken) in runs {
        plan.name = plan.name.take().or(part.name);
        plan.header_span = plan.header_span.or(part.header_span);
        plan.privacy.append(&mut part.privacy);
        plan.datasets.append(&mut part.datasets);
        plan.queries.append(&mut part.queries);
        plan.publishes.append(&mut part.publishes);
        plan.broken.append(&mut part.broken);
        plan.privacy_broken |= part.privacy_broken;
        plan.broken_names.append(&mut part.broken_names);
        broken.append(&mut part_broken);
    }
    (plan, broken)
}

/// Parses and lowers a run of consecutive items.
fn parse_run<'i>(text: &str, items: &'i [RawItem]) -> (ast::Plan, Vec<&'i RawItem>) {
    let mut plan = ast::Plan::default();
    // room for every query at once: grown by doubling, the list was copied
    // into fresh memory ~17 times (at 10⁵ queries 27 MB, page by page)
    plan.queries
        .reserve_exact(items.iter().filter(|i| i.kind == ItemKind::Query).count());
    let mut broken = Vec::new();
    let mut at = 0;
    while at < items.len() {
        // consecutive queries, up to QUERY_RUN, in one call of the parser
        // (each call of pest sets up its state and token queue afresh: a
        // tenth of the parse of one-release queries); the rest, and a run
        // the parser does not take whole, one item at a time
        let queries = items[at..]
            .iter()
            .take(QUERY_RUN)
            .take_while(|i| i.kind == ItemKind::Query && !i.too_deep)
            .count();
        let run = &items[at..at + queries.max(1)];
        if queries < 2 || !parse_queries(&mut plan, text, run) {
            for item in run {
                parse_item(&mut plan, &mut broken, text, item);
            }
        }
        at += run.len();
    }
    (plan, broken)
}

/// The most consecutive queries [`parse_run`] gives one call of the
/// parser. A run with a broken query is parsed again item by item, so this
/// bounds what a query being typed (broken at most keystrokes) costs the
/// language server's parse: one extra parse of at most this many queries,
/// not of every query around it; pest's set-up is still shared by 256.
const QUERY_RUN: usize = 256;

/// Parses and lowers one item, or records it as broken.
fn parse_item<'i>(
    plan: &mut ast::Plan,
    broken: &mut Vec<&'i RawItem>,
    text: &str,
    item: &'i RawItem,
) {
    if item.too_deep {
        // its DP016 is the scanner's; a detailed parse would recurse
        plan.broken.push(item.span);
        plan.privacy_broken |= item.kind == ItemKind::Privacy;
        return;
    }
    let parsed = rule_of(item.kind).and_then(|rule| {
        let slice = text.get(item.span.start..item.span.end)?;
        DpplanParser::parse(rule, slice).ok()
    });
    match parsed {
        Some(pairs) => lower::lower_item(plan, item.kind, pairs, item.span.start),
        None => {
            broken.push(item);
            plan.broken.push(item.span);
            plan.privacy_broken |= item.kind == ItemKind::Privacy;
            if let Some(name) = split::item_name(text, item) {
                plan.broken_names.push(ast::BrokenName {
                    kind: item.kind,
                    name,
                });
            }
        }
    }
}

/// Parses consecutive query items in one call of the parser and lowers
/// them, when the run parses and every query's pair spans exactly its
/// item; otherwise adds nothing and returns false (the items are then
/// parsed one by one: a run with a broken query costs its parse twice).
///
/// The pairs are then the ones each item's own parse gives: a query's
/// parse reads nothing past its closing brace (the splitter ends an item
/// at a brace that no string or comment holds, the query rule ends at it,
/// and the grammar's lookaheads read at most two characters: one tried at
/// the brace fails there), so what follows its item, end of input or the
/// next query, cannot change it; a rule that consumed past the brace
/// (a string or comment the splitter does not see) would leave a pair
/// that does not span its item, and the run is refused.
fn parse_queries(plan: &mut ast::Plan, text: &str, items: &[RawItem]) -> bool {
    let (Some(first), Some(last)) = (items.first(), items.last()) else {
        return false;
    };
    let base = first.span.start;
    let Some(slice) = text.get(base..last.span.end) else {
        return false;
    };
    let Ok(pairs) = DpplanParser::parse(Rule::item_queries, slice) else {
        return false;
    };
    let pairs: Vec<_> = pairs.filter(|p| p.as_rule() != Rule::EOI).collect();
    let spans_match = pairs.len() == items.len()
        && pairs.iter().zip(items).all(|(p, i)| {
            let s = p.as_span();
            p.as_rule() == Rule::query
                && base + s.start() == i.span.start
                && base + s.end() == i.span.end
        });
    if !spans_match {
        return false;
    }
    for pair in pairs {
        lower::lower_query(plan, pair, base);
    }
    true
}

/// The grammar rule of an item kind (`None` for an unknown item).
fn rule_of(kind: ItemKind) -> Option<Rule> {
    Some(match kind {
        ItemKind::Header => Rule::item_header,
        ItemKind::Privacy => Rule::item_privacy,
        ItemKind::Dataset => Rule::item_dataset,
        ItemKind::Query => Rule::item_query,
        ItemKind::Publish => Rule::item_publish,
        ItemKind::Unknown => return None,
    })
}

/// A syntax error not yet put in words: the scanner's are ready, a broken
/// item's message needs a second parse with error detail.
enum Problem<'a> {
    Ready(Diagnostic),
    Item(&'a RawItem),
}

impl Problem<'_> {
    fn start(&self) -> usize {
        match self {
            Problem::Ready(d) => d.primary.span.start,
            Problem::Item(item) => item.span.start,
        }
    }
}

/// Picks the first [`MAX_SYNTAX_ERRORS`] problems in source order (the
/// scanner's and the broken items' merged), builds their messages, and
/// counts the rest in one final diagnostic. The shown diagnostics keep the
/// order they always had, the scanner's first, so a file under the cap reads
/// exactly as before the cap existed.
fn report(text: &str, scanned: Vec<Diagnostic>, broken: &[&RawItem]) -> Vec<Diagnostic> {
    let mut scanned = scanned.into_iter().map(Problem::Ready).peekable();
    let mut items = broken.iter().map(|item| Problem::Item(item)).peekable();
    let merged = std::iter::from_fn(|| match (scanned.peek(), items.peek()) {
        (Some(a), Some(b)) if b.start() < a.start() => items.next(),
        (Some(_), _) => scanned.next(),
        (None, _) => items.next(),
    });
    let mut diagnostics = Vec::new();
    let mut item_diagnostics = Vec::new();
    let mut hidden = 0usize;
    let mut first_hidden = None;
    for problem in merged {
        if diagnostics.len() + item_diagnostics.len() < MAX_SYNTAX_ERRORS {
            match problem {
                Problem::Ready(d) => diagnostics.push(d),
                Problem::Item(item) => item_diagnostics.push(item_error(text, item)),
            }
        } else {
            hidden += 1;
            if first_hidden.is_none() {
                first_hidden = Some(match &problem {
                    Problem::Ready(d) => d.primary.span,
                    Problem::Item(item) => messages::first_token(text, item.span),
                });
            }
        }
    }
    diagnostics.append(&mut item_diagnostics);
    if let Some(span) = first_hidden {
        diagnostics.push(messages::more_errors(hidden, span));
    }
    diagnostics
}

/// The diagnostic of one broken item, in words.
fn item_error(text: &str, item: &RawItem) -> Diagnostic {
    let Some(rule) = rule_of(item.kind) else {
        return messages::unknown_item(text, item.span);
    };
    let slice = text.get(item.span.start..item.span.end).unwrap_or("");
    match parse_detailed(rule, slice) {
        Err(err) => messages::from_pest(text, item.span.start, item.kind, &err),
        // Cannot happen (the same parse failed without detail), but say
        // something true rather than nothing.
        Ok(_) => messages::unreadable_item(text, item),
    }
}

/// Serialises the rare re-parses that ask pest for error detail (a global
/// switch in pest).
static DETAIL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Parses a failing item again with pest's error detail on, which records
/// the literal tokens it expected ("expected `,` or `)`"). The detail costs
/// many times a plain parse, so only the broken items whose errors are shown
/// (at most [`MAX_SYNTAX_ERRORS`] per file) go through here.
fn parse_detailed(
    rule: Rule,
    slice: &str,
) -> Result<pest::iterators::Pairs<'_, Rule>, Box<pest::error::Error<Rule>>> {
    let _guard = DETAIL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    pest::set_error_detail(true);
    let result = DpplanParser::parse(rule, slice);
    pest::set_error_detail(false);
    result.map_err(Box::new)
}

/// Parses the whole text with the grammar's `file` rule, with no recovery.
/// Used by tests to confirm that a text is one well-formed plan exactly as
/// the grammar describes it. A text whose filters nest deeper than
/// [`MAX_NESTING`] is refused before pest reads it, as in [`parse`] (pest
/// runs without its stack probe).
pub fn parse_strict(text: &str) -> Result<(), String> {
    if let Some(d) = split::split(text)
        .diagnostics
        .iter()
        .find(|d| d.code == Code::Limit)
    {
        return Err(d.message.clone());
    }
    DpplanParser::parse(Rule::file, text)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod parse_tests;
#[cfg(test)]
mod tests;
