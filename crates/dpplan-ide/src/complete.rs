//! Completion: keywords that fit where the cursor is, and dataset, column
//! and query names. The context comes from the token stream (so it works
//! while the statement being typed does not parse yet) and the names from
//! the last analysis.

use dpplan_diagnostics::Span;
use dpplan_syntax::ast::{self, ColumnType};
use dpplan_syntax::lexer::{Lexeme, LexemeKind};
use dpplan_vocab::{
    AccountantChoice, AccuracyMeasure, Adjacency, AggKind, ColumnKind, InvalidRule, NoiseKind,
    UnitKind, Vocabulary,
};

use crate::{keyword_doc, CompletionItem, CompletionKind, Document};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    TopLevel,
    Plan,
    Privacy,
    Dataset,
    Contribution,
    Query,
    Domain,
    Other,
}

fn block_of(tokens: &[Lexeme], open: usize, text: &str) -> Block {
    // The header words before the `{`.
    let mut j = open;
    while j > 0 {
        j -= 1;
        let t = &tokens[j];
        if t.is_comment() {
            continue;
        }
        match t.kind {
            LexemeKind::Word { .. } => match t.text(text) {
                "category" if j + 1 == open => return Block::Domain,
                "plan" => return Block::Plan,
                "privacy" => return Block::Privacy,
                "dataset" => return Block::Dataset,
                "query" => return Block::Query,
                "contribution" => return Block::Contribution,
                _ => {}
            },
            LexemeKind::Str => {}
            _ => return Block::Other,
        }
        if open - j > 3 {
            break;
        }
    }
    Block::Other
}

fn first_sentence(doc: &str) -> String {
    let d = doc.split(" — ").nth(1).unwrap_or(doc);
    d.split(". ")
        .next()
        .unwrap_or(d)
        .trim_end_matches('.')
        .to_string()
}

/// Where the cursor is, read once from the tokens before it: the text a
/// completion replaces, the block it is in and the statement typed so far.
struct Site<'t> {
    /// The part of the word being typed that a completion replaces.
    replace: Span,
    /// `trips.` typed before the cursor's word: the dataset named.
    dotted: Option<&'t str>,
    /// The innermost block around the cursor.
    block: Block,
    /// The statement typed so far on the cursor's line, word by word.
    stmt: Vec<&'t str>,
}

impl<'t> Site<'t> {
    /// The site at `offset`, or `None` inside a comment or a string
    /// (nothing to complete there).
    fn at(text: &'t str, tokens: &[Lexeme], offset: usize) -> Option<Site<'t>> {
        let (replace, dotted, end) = word_at(text, tokens, offset)?;
        let before: Vec<usize> = (0..end.min(tokens.len()))
            .filter(|&i| !tokens[i].is_comment() && tokens[i].end <= replace.start)
            .collect();
        let block = enclosing_block(text, tokens, &before);
        let stmt = statement(text, tokens, &before, replace, block);
        Some(Site {
            replace,
            dotted,
            block,
            stmt,
        })
    }
}

/// The word being typed at `offset`: the span a completion replaces, the
/// dataset before a `.` in it, and the end of the tokens to read before it.
fn word_at<'t>(
    text: &'t str,
    tokens: &[Lexeme],
    offset: usize,
) -> Option<(Span, Option<&'t str>, usize)> {
    let n_before = tokens.partition_point(|t| t.end < offset);
    let Some(t) = tokens.get(n_before) else {
        return Some((Span::new(offset, offset), None, n_before));
    };
    if t.start < offset && offset <= t.end && t.is_word() {
        let typed = &text[t.start..offset];
        Some(match typed.rfind('.') {
            Some(dot) => (
                Span::new(t.start + dot + 1, offset),
                Some(&typed[..dot]),
                n_before,
            ),
            None => (Span::new(t.start, offset), None, n_before),
        })
    } else if t.start < offset && (t.is_comment() || (t.kind == LexemeKind::Str && offset < t.end))
    {
        None
    } else if t.end <= offset {
        Some((Span::new(offset, offset), None, n_before + 1))
    } else {
        Some((Span::new(offset, offset), None, n_before))
    }
}

/// The innermost block the tokens `before` leave open.
fn enclosing_block(text: &str, tokens: &[Lexeme], before: &[usize]) -> Block {
    let mut stack: Vec<Block> = Vec::new();
    for &i in before {
        match tokens[i].kind {
            LexemeKind::Punct(b'{') => stack.push(block_of(tokens, i, text)),
            LexemeKind::Punct(b'}') => {
                stack.pop();
            }
            _ => {}
        }
    }
    stack.last().copied().unwrap_or(Block::TopLevel)
}

/// The words of the statement typed so far on the cursor's line (empty at
/// the start of a line).
fn statement<'t>(
    text: &'t str,
    tokens: &[Lexeme],
    before: &[usize],
    replace: Span,
    block: Block,
) -> Vec<&'t str> {
    let last_end = before.last().map_or(0, |&i| tokens[i].end);
    if before.is_empty() || text[last_end..replace.start].contains('\n') {
        return Vec::new();
    }
    let mut stmt = Vec::new();
    for &i in before.iter().rev() {
        let t = &tokens[i];
        if matches!(t.kind, LexemeKind::Punct(b'{' | b'}')) && block != Block::Domain {
            break;
        }
        stmt.push(t.text(text));
        if t.newlines_before > 0 {
            break;
        }
    }
    stmt.reverse();
    stmt
}

pub(crate) fn completions(doc: &Document, offset: usize) -> Vec<CompletionItem> {
    let text = doc.text();
    let Some(site) = Site::at(text, doc.tokens(), offset.min(text.len())) else {
        return Vec::new();
    };
    let items = Items {
        doc,
        replace: site.replace,
    };
    let mut out = Vec::new();
    // `dataset.col`
    if let Some(ds) = site.dotted {
        items.columns(&mut out, Some(ds), &|t| !matches!(t, ColumnType::Id));
        return out;
    }
    let stmt = &site.stmt[..];
    match site.block {
        Block::TopLevel => {
            if stmt.is_empty() {
                items.kw(&mut out, &["plan"]);
            }
        }
        Block::Plan => plan_items(&items, &mut out, stmt),
        Block::Privacy => privacy_items(&items, &mut out, stmt),
        Block::Dataset => dataset_items(&items, &mut out, stmt),
        Block::Contribution => {
            if stmt.is_empty() {
                items.kw(
                    &mut out,
                    &[
                        "rows_per_unit",
                        "groups_per_unit",
                        "rows_per_group",
                        "windows_per_unit",
                        "rows_per_window",
                    ],
                );
            }
        }
        Block::Query => query_items(&items, &mut out, stmt),
        Block::Domain | Block::Other => {}
    }
    out
}

fn is_number(w: &str) -> bool {
    w.starts_with(|c: char| c.is_ascii_digit())
}

/// What can be typed in the plan's block, after `stmt` on the line.
fn plan_items(items: &Items, out: &mut Vec<CompletionItem>, stmt: &[&str]) {
    match (stmt.first().copied(), stmt.len(), stmt.last().copied()) {
        (None, ..) => items.kw(out, &["privacy", "dataset", "query", "publish"]),
        (Some("publish"), _, Some("=")) => items.released(out),
        (Some("publish"), 4, _) => items.kw(out, &["when"]),
        (Some("publish"), _, Some("when")) => items.released(out),
        _ => {}
    }
}

/// What can be typed in a `privacy` block, after `stmt` on the line.
fn privacy_items(items: &Items, out: &mut Vec<CompletionItem>, stmt: &[&str]) {
    let kw = |out: &mut Vec<CompletionItem>, words: &[&str]| items.kw(out, words);
    match (stmt.first().copied(), stmt.last().copied()) {
        (None, _) => kw(
            out,
            &["unit", "adjacency", "budget", "accountant", "population"],
        ),
        (Some("unit"), Some("unit")) => kw(out, &names::<UnitKind>()),
        (Some("unit"), Some("user")) => kw(out, &["by"]),
        (Some("unit"), Some("by")) => items.columns(out, None, &|t| matches!(t, ColumnType::Id)),
        (Some("adjacency"), Some("adjacency")) => kw(out, &names::<Adjacency>()),
        (Some("accountant"), Some("accountant")) => kw(out, &names::<AccountantChoice>()),
        (Some("budget"), Some("budget")) => kw(out, &["epsilon"]),
        (Some("budget"), Some(w)) if is_number(w) && stmt.len() == 3 => kw(out, &["delta"]),
        _ => {}
    }
}

/// What can be typed in a `dataset` block, after `stmt` on the line.
fn dataset_items(items: &Items, out: &mut Vec<CompletionItem>, stmt: &[&str]) {
    let kw = |out: &mut Vec<CompletionItem>, words: &[&str]| items.kw(out, words);
    match (stmt.first().copied(), stmt.last().copied()) {
        (None, _) => kw(
            out,
            &["source", "column", "contribution", "invalid_rows", "sample"],
        ),
        (Some("sample"), Some("sample")) => kw(out, &["units"]),
        (Some("column"), Some(":")) => kw(out, &names::<ColumnKind>()),
        (Some("column"), Some("int" | "float")) => kw(out, &["in"]),
        (Some("invalid_rows"), Some("invalid_rows")) => kw(out, &names::<InvalidRule>()),
        _ => {}
    }
}

/// The time units a duration ends with.
const TIME_UNITS: &[&str] = &[
    "second", "minute", "hour", "day", "week", "seconds", "minutes", "hours", "days", "weeks",
];

/// What can be typed in a query's block, after `stmt` on the line.
fn query_items(items: &Items, out: &mut Vec<CompletionItem>, stmt: &[&str]) {
    if stmt.is_empty() {
        query_statements(items, out);
    } else if !aggregation_items(items, out, stmt) {
        setting_items(items, out, stmt);
    }
}

/// The statements a query's line starts with.
fn query_statements(items: &Items, out: &mut Vec<CompletionItem>) {
    for agg in AggKind::ALL.iter().map(|k| k.name()) {
        items.kw(out, &[agg]);
        if let Some(i) = out.last_mut() {
            i.insert_text = Some(format!("{agg}("));
        }
    }
    items.kw(
        out,
        &[
            "noise",
            "schedule",
            "sensitivity",
            "accuracy",
            "window",
            "release",
            "candidates",
            "cumulative",
            "postprocess",
            "mechanism",
        ],
    );
    // `release after `: the statement is two keywords
    if let Some(i) = out.iter_mut().find(|i| i.label == "release") {
        i.insert_text = Some("release after ".into());
    }
}

/// Inside an aggregation, `count(trips where … by …)`: its dataset, its
/// filter's columns and words, its group keys. False where `stmt` is at none
/// of them.
fn aggregation_items(items: &Items, out: &mut Vec<CompletionItem>, stmt: &[&str]) -> bool {
    let kw = |out: &mut Vec<CompletionItem>, words: &[&str]| items.kw(out, words);
    let columns = |out: &mut Vec<CompletionItem>, want: &dyn Fn(&ColumnType) -> bool| {
        items.columns(out, aggregated_dataset(stmt), want)
    };
    let (Some(first), Some(last)) = (stmt.first().copied(), stmt.last().copied()) else {
        return false;
    };
    match (first, last) {
        (agg, "(") if stmt.len() == 2 => {
            items.datasets(out);
            if agg == "count" {
                kw(out, &["distinct"]);
            }
        }
        (_, "distinct") => items.datasets(out),
        (_, "by" | ",") if stmt.len() >= 3 && stmt.contains(&"by") => {
            columns(out, &|t| matches!(t, ColumnType::Category { .. }));
            kw(out, &["bins"]);
            if let Some(i) = out.last_mut() {
                i.insert_text = Some("bins(".into());
            }
        }
        (_, "bins") | (_, "(") if stmt.iter().rev().nth(1) == Some(&"bins") => {
            columns(out, &|t| {
                matches!(t, ColumnType::Int { .. } | ColumnType::Float { .. })
            });
        }
        (_, "]") if stmt.contains(&"bins") => kw(out, &["outside"]),
        (_, "outside") => kw(out, &names::<InvalidRule>()),
        (_, "where" | "and" | "or" | "not" | "(") if stmt.len() >= 4 && stmt.contains(&"where") => {
            columns(out, &|t| !matches!(t, ColumnType::Id));
            kw(out, &["not"]);
        }
        ("count" | "sum" | "mean" | "histogram", w)
            if stmt.get(1) == Some(&"(")
                && aggregated_dataset(stmt) == Some(w.split('.').next().unwrap_or(w)) =>
        {
            kw(out, &["where", "by"]);
        }
        (_, w)
            if stmt.contains(&"where")
                && !stmt.contains(&"by")
                && (is_number(w) || w.starts_with('"') || w == "}") =>
        {
            kw(out, &["and", "or", "by"]);
        }
        _ => return false,
    }
    true
}

/// A query's settings: `noise`, `candidates`, `accuracy`, `schedule`,
/// `release after`, `window`, `sensitivity`, `postprocess`, `mechanism`.
fn setting_items(items: &Items, out: &mut Vec<CompletionItem>, stmt: &[&str]) {
    let kw = |out: &mut Vec<CompletionItem>, words: &[&str]| items.kw(out, words);
    match (stmt.first().copied(), stmt.last().copied()) {
        (Some("noise"), Some("noise")) => kw(out, &noise_kinds(items)),
        (Some("candidates"), Some("candidates")) => kw(out, &["every"]),
        (Some("mechanism"), Some("mechanism")) => {
            kw(out, &names::<dpplan_vocab::CumulativeMechanism>())
        }
        // `postprocess nonnegative, round`: a step after the keyword or a
        // comma (a word already listed is not offered again); `consistent`
        // only after `… with total`, which it needs
        (Some("postprocess"), Some(w)) if w == "postprocess" || w == "," => {
            let total = releases_total(items.doc, items.replace.start);
            let left: Vec<&str> = dpplan_vocab::PostStep::ALL
                .iter()
                .filter(|p| total || **p != dpplan_vocab::PostStep::Consistent)
                .map(|p| p.name())
                .filter(|n| !stmt.contains(n))
                .collect();
            kw(out, &left)
        }
        // a Gaussian kind takes σ, every other kind a scale b
        (Some("noise"), Some(k)) if NoiseKind::from_name(k).is_some() => {
            let gaussian = NoiseKind::from_name(k).is_some_and(|k| k.is_gaussian());
            kw(
                out,
                &[if gaussian { "sigma" } else { "scale" }, "epsilon", "auto"],
            )
        }
        (Some("noise"), Some(w)) if is_number(w) && stmt.get(2) == Some(&"epsilon") => {
            kw(out, &["delta"])
        }
        (Some("noise"), Some("auto")) => kw(out, &["weight"]),
        (Some("accuracy"), Some("accuracy")) => kw(out, &names::<AccuracyMeasure>()),
        (Some("schedule"), Some("schedule")) => kw(out, &["once", "every"]),
        (Some("schedule"), Some(w)) if w.len() >= 10 && w.contains('-') => kw(out, &["until"]),
        (Some("release"), Some("release")) => kw(out, &["after"]),
        // `window 2 ` and `release after 2 `: a duration's unit
        (Some("window"), Some(w)) if is_number(w) && stmt.len() == 2 => kw(out, TIME_UNITS),
        (Some("release"), Some(w)) if is_number(w) && stmt[..] == ["release", "after", w] => {
            kw(out, TIME_UNITS)
        }
        (Some("schedule"), Some(w)) if is_number(w) && stmt.len() == 2 => kw(out, &["times"]),
        (Some("schedule"), Some(w)) if is_number(w) => kw(out, TIME_UNITS),
        (Some("schedule"), Some(w))
            if stmt.len() == 4 && w.chars().all(|c| c.is_ascii_alphabetic()) =>
        {
            kw(out, &["for", "from"])
        }
        (Some("sensitivity"), _) => kw(out, &["l1", "l2"]),
        _ => {}
    }
}

/// The noise kinds that type-check for the query at the cursor, as the
/// checker decides (DP017, DP007): a quantile or a top-k only a selection
/// (`exponential`, `permute_and_flip`), any other statistic additive noise
/// but not a selection; discrete noise only on
/// integer values (not a float column's sum or mean); Gaussian noise only
/// under a budget with δ > 0. Every kind when the query's statistic is not
/// known yet.
fn noise_kinds(items: &Items) -> Vec<&'static str> {
    let plan = items.plan();
    let Some((kind, target)) = aggregation_before(items.doc, items.replace.start) else {
        return names::<NoiseKind>();
    };
    if matches!(kind, AggKind::Quantile | AggKind::Quantiles | AggKind::Top) {
        return vec![
            NoiseKind::Exponential.name(),
            NoiseKind::PermuteAndFlip.name(),
        ];
    }
    let float_values = target.split_once('.').is_some_and(|(dataset, col)| {
        plan.datasets
            .iter()
            .filter(|ds| ds.name.value == dataset)
            .flat_map(|ds| &ds.columns)
            .any(|c| c.name.value == col && matches!(c.ty.value, ColumnType::Float { .. }))
    });
    let pure = plan
        .privacy
        .iter()
        .flat_map(|p| &p.budgets)
        .any(|b| b.delta.as_ref().is_none_or(|d| d.value == 0.0));
    <NoiseKind as Vocabulary>::ALL
        .iter()
        .filter(|k| !k.is_selection())
        .filter(|k| !(float_values && k.is_discrete()))
        .filter(|k| !(pure && k.is_gaussian()))
        .map(|k| k.name())
        .collect()
}

/// The aggregation of the query block around `at`, read from the tokens
/// (the statement being typed does not parse yet): its kind and its target
/// as written (`d` or `d.col`).
/// Whether the query at `at` releases its histogram's total (`with
/// total` between its `query` word and `at`).
fn releases_total(doc: &Document, at: usize) -> bool {
    let text = doc.text();
    let tokens = doc.tokens();
    let end = tokens.partition_point(|t| t.start < at);
    let words: Vec<&str> = tokens[..end]
        .iter()
        .filter(|t| !t.is_comment())
        .map(|t| t.text(text))
        .collect();
    let start = words.iter().rposition(|w| *w == "query").unwrap_or(0);
    words[start..].windows(2).any(|w| w == ["with", "total"])
}

fn aggregation_before(doc: &Document, at: usize) -> Option<(AggKind, &str)> {
    let text = doc.text();
    let tokens = doc.tokens();
    let end = tokens.partition_point(|t| t.start < at);
    let words = |range: std::ops::Range<usize>| {
        tokens[range]
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_comment())
            .map(|(i, t)| (i, t.text(text)))
            .collect::<Vec<_>>()
    };
    // the block's header: the last `query` word before the cursor
    let start = words(0..end)
        .into_iter()
        .rev()
        .find(|(_, w)| *w == "query")
        .map(|(i, _)| i)?;
    let body = words(start..end);
    body.windows(3).find_map(|w| {
        let kind = AggKind::ALL.iter().find(|k| k.name() == w[0].1)?;
        if w[1].1 != "(" {
            return None;
        }
        let target = if w[2].1 == "distinct" {
            body.get(body.iter().position(|x| x.0 == w[2].0)? + 1)?.1
        } else {
            w[2].1
        };
        Some((*kind, target))
    })
}

/// The names and keywords a completion offers, each replacing `replace`.
struct Items<'a> {
    doc: &'a Document,
    replace: Span,
}

impl Items<'_> {
    fn plan(&self) -> &ast::Plan {
        self.doc.ast()
    }
    fn kw(&self, out: &mut Vec<CompletionItem>, words: &[&str]) {
        for w in words {
            out.push(CompletionItem {
                label: (*w).to_string(),
                kind: CompletionKind::Keyword,
                detail: keyword_doc(w).map(first_sentence),
                documentation: keyword_doc(w).map(str::to_string),
                insert_text: None,
                replace: self.replace,
            });
        }
    }
    /// The queries and publications, what a `publish` can release.
    fn released(&self, out: &mut Vec<CompletionItem>) {
        let plan = self.plan();
        let report = self.doc.light_analysis().report.as_ref();
        for q in &plan.queries {
            let detail = report
                .and_then(|r| r.queries.iter().find(|x| x.name == q.name.value))
                .map(|r| format!("query: {}, {}", r.aggregation, r.schedule))
                .unwrap_or_else(|| "query".into());
            out.push(CompletionItem {
                label: q.name.value.clone(),
                kind: CompletionKind::Query,
                detail: Some(detail),
                documentation: None,
                insert_text: None,
                replace: self.replace,
            });
        }
        for p in &plan.publishes {
            out.push(CompletionItem {
                label: p.name.value.clone(),
                kind: CompletionKind::Publish,
                detail: Some(format!("publish = {}", p.source.value)),
                documentation: None,
                insert_text: None,
                replace: self.replace,
            });
        }
    }
    fn datasets(&self, out: &mut Vec<CompletionItem>) {
        for ds in &self.plan().datasets {
            out.push(CompletionItem {
                label: ds.name.value.clone(),
                kind: CompletionKind::Dataset,
                detail: Some(format!("dataset ({} columns)", ds.columns.len())),
                documentation: None,
                insert_text: None,
                replace: self.replace,
            });
        }
    }
    fn columns(
        &self,
        out: &mut Vec<CompletionItem>,
        dataset: Option<&str>,
        want: &dyn Fn(&ColumnType) -> bool,
    ) {
        for ds in &self.plan().datasets {
            if dataset.is_some_and(|d| d != ds.name.value) {
                continue;
            }
            for c in &ds.columns {
                if !want(&c.ty.value)
                    || out.iter().any(|i: &CompletionItem| {
                        i.label == c.name.value && i.kind == CompletionKind::Column
                    })
                {
                    continue;
                }
                let ty = match &c.ty.value {
                    ColumnType::Id => "id",
                    ColumnType::Category { .. } => "category",
                    ColumnType::Int { .. } => "int",
                    ColumnType::Float { .. } => "float",
                    ColumnType::Time => "time",
                };
                out.push(CompletionItem {
                    label: c.name.value.clone(),
                    kind: CompletionKind::Column,
                    detail: Some(format!("{}.{} : {ty}", ds.name.value, c.name.value)),
                    documentation: None,
                    insert_text: None,
                    replace: self.replace,
                });
            }
        }
    }
}

/// The dataset an aggregation reads, from the words typed so far:
/// `count ( [distinct] trips[.col] …`.
fn aggregated_dataset<'a>(stmt: &[&'a str]) -> Option<&'a str> {
    let at = if stmt.get(2) == Some(&"distinct") {
        3
    } else {
        2
    };
    stmt.get(at).map(|w| w.split('.').next().unwrap_or(w))
}

/// The names of a vocabulary, in its order.
fn names<T: Vocabulary>() -> Vec<&'static str> {
    <T as Vocabulary>::ALL
        .iter()
        .map(|v| Vocabulary::name(*v))
        .collect()
}
