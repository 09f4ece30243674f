//! Completion: keywords that fit where the cursor is, and dataset, column
//! and query names. The context comes from the token stream (so it works
//! while the statement being typed does not parse yet) and the names from
//! the last analysis.

use dpplan_diagnostics::Span;
use dpplan_syntax::ast::{self, ColumnType};
use dpplan_syntax::lexer::{Lexeme, LexemeKind};
use dpplan_vocab::{
    AccountantChoice, AccuracyMeasure, Adjacency, ColumnKind, InvalidRule, NoiseKind, UnitKind,
    Vocabulary,
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

pub(crate) fn completions(doc: &Document, offset: usize) -> Vec<CompletionItem> {
    let text = doc.text();
    let offset = offset.min(text.len());
    let tokens = doc.tokens();
    // The word being typed.
    let mut replace = Span::new(offset, offset);
    let mut dotted: Option<String> = None;
    let n_before = tokens.partition_point(|t| t.end < offset);
    let mut end = n_before;
    if let Some(t) = tokens.get(n_before) {
        if t.start < offset && offset <= t.end && t.is_word() {
            let typed = &text[t.start..offset];
            if let Some(dot) = typed.rfind('.') {
                dotted = Some(typed[..dot].to_string());
                replace = Span::new(t.start + dot + 1, offset);
            } else {
                replace = Span::new(t.start, offset);
            }
        } else if t.start < offset
            && (t.is_comment() || (t.kind == LexemeKind::Str && offset < t.end))
        {
            // Inside a comment or a string: nothing to complete.
            return Vec::new();
        } else if t.end <= offset {
            end = n_before + 1;
        }
    }
    let before: Vec<usize> = (0..end.min(tokens.len()))
        .filter(|&i| !tokens[i].is_comment() && tokens[i].end <= replace.start)
        .collect();
    // The enclosing block.
    let mut stack: Vec<Block> = Vec::new();
    for &i in &before {
        match tokens[i].kind {
            LexemeKind::Punct(b'{') => stack.push(block_of(tokens, i, text)),
            LexemeKind::Punct(b'}') => {
                stack.pop();
            }
            _ => {}
        }
    }
    let block = stack.last().copied().unwrap_or(Block::TopLevel);
    // The statement typed so far on the cursor's line.
    let last_end = before.last().map_or(0, |&i| tokens[i].end);
    let new_line = text[last_end..replace.start].contains('\n') || before.is_empty();
    let mut stmt: Vec<&str> = Vec::new();
    if !new_line {
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
    }

    let mut out = Vec::new();
    let plan = doc.ast();
    let items = Items { plan, replace };
    let kw = |out: &mut Vec<CompletionItem>, words: &[&str]| items.kw(out, words);
    let columns =
        |out: &mut Vec<CompletionItem>,
         dataset: Option<&str>,
         want: &dyn Fn(&ColumnType) -> bool| items.columns(out, dataset, want);
    let released = |out: &mut Vec<CompletionItem>| {
        let report = doc.light_analysis().report.as_ref();
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
                replace,
            });
        }
        for p in &plan.publishes {
            out.push(CompletionItem {
                label: p.name.value.clone(),
                kind: CompletionKind::Publish,
                detail: Some(format!("publish = {}", p.source.value)),
                documentation: None,
                insert_text: None,
                replace,
            });
        }
    };

    // `dataset.col`
    if let Some(ds) = dotted {
        columns(&mut out, Some(&ds), &|t| !matches!(t, ColumnType::Id));
        return out;
    }
    let last = stmt.last().copied();
    let is_number = |w: &str| w.starts_with(|c: char| c.is_ascii_digit());
    match block {
        Block::TopLevel => {
            if stmt.is_empty() {
                kw(&mut out, &["plan"]);
            }
        }
        Block::Plan => match (stmt.first().copied(), stmt.len(), last) {
            (None, ..) => kw(&mut out, &["privacy", "dataset", "query", "publish"]),
            (Some("publish"), _, Some("=")) => released(&mut out),
            (Some("publish"), 4, _) => kw(&mut out, &["when"]),
            (Some("publish"), _, Some("when")) => released(&mut out),
            _ => {}
        },
        Block::Privacy => match (stmt.first().copied(), last) {
            (None, _) => kw(
                &mut out,
                &["unit", "adjacency", "budget", "accountant", "population"],
            ),
            (Some("unit"), Some("unit")) => kw(&mut out, &names::<UnitKind>()),
            (Some("unit"), Some("user")) => kw(&mut out, &["by"]),
            (Some("unit"), Some("by")) => columns(&mut out, None, &|t| matches!(t, ColumnType::Id)),
            (Some("adjacency"), Some("adjacency")) => kw(&mut out, &names::<Adjacency>()),
            (Some("accountant"), Some("accountant")) => kw(&mut out, &names::<AccountantChoice>()),
            (Some("budget"), Some("budget")) => kw(&mut out, &["epsilon"]),
            (Some("budget"), Some(w)) if is_number(w) && stmt.len() == 3 => {
                kw(&mut out, &["delta"])
            }
            _ => {}
        },
        Block::Dataset => match (stmt.first().copied(), last) {
            (None, _) => kw(
                &mut out,
                &["source", "column", "contribution", "invalid_rows"],
            ),
            (Some("column"), Some(":")) => kw(&mut out, &names::<ColumnKind>()),
            (Some("column"), Some("int" | "float")) => kw(&mut out, &["in"]),
            (Some("invalid_rows"), Some("invalid_rows")) => kw(&mut out, &names::<InvalidRule>()),
            _ => {}
        },
        Block::Contribution => {
            if stmt.is_empty() {
                kw(
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
        Block::Query => query_items(&items, &mut out, &stmt),
        Block::Domain | Block::Other => {}
    }
    out
}

/// The time units a duration ends with.
const TIME_UNITS: &[&str] = &[
    "second", "minute", "hour", "day", "week", "seconds", "minutes", "hours", "days", "weeks",
];

/// What can be typed in a query's block, after `stmt` on the line.
fn query_items(items: &Items, out: &mut Vec<CompletionItem>, stmt: &[&str]) {
    let kw = |out: &mut Vec<CompletionItem>, words: &[&str]| items.kw(out, words);
    let datasets = |out: &mut Vec<CompletionItem>| items.datasets(out);
    let columns =
        |out: &mut Vec<CompletionItem>,
         dataset: Option<&str>,
         want: &dyn Fn(&ColumnType) -> bool| items.columns(out, dataset, want);
    let is_number = |w: &str| w.starts_with(|c: char| c.is_ascii_digit());
    let last = stmt.last().copied();
    match (stmt.first().copied(), last) {
        (None, _) => {
            for agg in ["count", "sum", "mean", "histogram", "quantile", "quantiles"] {
                kw(out, &[agg]);
                if let Some(i) = out.last_mut() {
                    i.insert_text = Some(format!("{agg}("));
                }
            }
            kw(
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
                ],
            );
            // `release after `: the statement is two keywords
            if let Some(i) = out.iter_mut().find(|i| i.label == "release") {
                i.insert_text = Some("release after ".into());
            }
        }
        (Some(agg), Some("(")) if stmt.len() == 2 => {
            datasets(out);
            if agg == "count" {
                kw(out, &["distinct"]);
            }
        }
        (Some(_), Some("distinct")) => datasets(out),
        (Some(_), Some("by" | ",")) if stmt.len() >= 3 && stmt.contains(&"by") => {
            let ds = aggregated_dataset(stmt);
            columns(out, ds, &|t| matches!(t, ColumnType::Category { .. }));
            kw(out, &["bins"]);
            if let Some(i) = out.last_mut() {
                i.insert_text = Some("bins(".into());
            }
        }
        (Some(_), Some("bins")) | (Some(_), Some("("))
            if stmt.iter().rev().nth(1) == Some(&"bins") =>
        {
            let ds = aggregated_dataset(stmt);
            columns(out, ds, &|t| {
                matches!(t, ColumnType::Int { .. } | ColumnType::Float { .. })
            });
        }
        (Some(_), Some("]")) if stmt.contains(&"bins") => kw(out, &["outside"]),
        (Some(_), Some("outside")) => kw(out, &names::<InvalidRule>()),
        (Some(_), Some("where" | "and" | "or" | "not" | "("))
            if stmt.len() >= 4 && stmt.contains(&"where") =>
        {
            let ds = aggregated_dataset(stmt);
            columns(out, ds, &|t| !matches!(t, ColumnType::Id));
            kw(out, &["not"]);
        }
        (Some("count" | "sum" | "mean" | "histogram"), Some(w))
            if stmt.get(1) == Some(&"(")
                && aggregated_dataset(stmt) == Some(w.split('.').next().unwrap_or(w)) =>
        {
            kw(out, &["where", "by"]);
        }
        (Some(_), Some(w))
            if stmt.contains(&"where")
                && !stmt.contains(&"by")
                && (is_number(w) || w.starts_with('"') || w == "}") =>
        {
            kw(out, &["and", "or", "by"]);
        }
        (Some("noise"), Some("noise")) => kw(out, &names::<NoiseKind>()),
        (Some("candidates"), Some("candidates")) => kw(out, &["every"]),
        (Some("noise"), Some("laplace" | "discrete_laplace" | "exponential")) => {
            kw(out, &["scale", "epsilon", "auto"])
        }
        (Some("noise"), Some("gaussian" | "discrete_gaussian")) => {
            kw(out, &["sigma", "epsilon", "auto"])
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

/// The names and keywords a completion offers, each replacing `replace`.
struct Items<'a> {
    plan: &'a ast::Plan,
    replace: Span,
}

impl Items<'_> {
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
    fn datasets(&self, out: &mut Vec<CompletionItem>) {
        for ds in &self.plan.datasets {
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
        for ds in &self.plan.datasets {
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
