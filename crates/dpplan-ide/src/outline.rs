//! Document symbols: the plan's outline, from the syntax tree and the
//! tokens alone ([`crate::outline_of_text`]: what the editor shows before the
//! analysis is done) or with the checked plan's details (units, budget, each
//! query's aggregation, schedule and ε).

use dpplan_check::CheckedPlan;
use dpplan_syntax::ast;
use dpplan_syntax::lexer::{Lexeme, LexemeKind};

use crate::{OutlineItem, OutlineKind, Span};

/// What the outline is read from: a text, its tokens and syntax tree, and
/// the checked plan once there is one.
pub(crate) struct Source<'a> {
    pub(crate) text: &'a str,
    pub(crate) tokens: &'a [Lexeme],
    pub(crate) plan: &'a ast::Plan,
    pub(crate) report: Option<&'a CheckedPlan>,
}

impl Source<'_> {
    fn trim(&self, span: Span) -> Span {
        crate::trim(self.tokens, span)
    }
}

pub(crate) fn outline(doc: &Source<'_>) -> Vec<OutlineItem> {
    let plan = doc.plan;
    let report = doc.report;
    let mut children = Vec::new();
    for p in &plan.privacy {
        let detail = report.map(|r| {
            format!(
                "{} · ε {} δ {}",
                r.unit.description,
                crate::num(r.budget.epsilon),
                crate::num(r.budget.delta)
            )
        });
        children.push(OutlineItem {
            name: "privacy".into(),
            detail,
            kind: OutlineKind::Privacy,
            span: p.span,
            selection: p.keyword,
            children: Vec::new(),
        });
    }
    for ds in &plan.datasets {
        let columns = ds
            .columns
            .iter()
            .map(|c| OutlineItem {
                name: c.name.value.clone(),
                detail: Some(
                    doc.text[doc.trim(c.ty.span).start..doc.trim(c.ty.span).end]
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" "),
                ),
                kind: OutlineKind::Column,
                span: doc.trim(c.span),
                selection: c.name.span,
                children: Vec::new(),
            })
            .collect();
        children.push(OutlineItem {
            name: ds.name.value.clone(),
            detail: ds.sources.first().map(|s| s.value.clone()),
            kind: OutlineKind::Dataset,
            span: ds.span,
            selection: ds.name.span,
            children: columns,
        });
    }
    // each query's report by its name's position, looked up once per query
    // (a search of the list per query was quadratic on large plans)
    let reports: std::collections::HashMap<usize, _> = report
        .map(|r| r.queries.iter().map(|x| (x.name_span.start, x)).collect())
        .unwrap_or_default();
    for q in &plan.queries {
        let detail = reports
            .get(&q.name.span.start)
            .filter(|x| x.name_span == q.name.span)
            .map(|r| match &r.total {
                Some(t) => format!(
                    "{} · {} · ε {}",
                    r.aggregation,
                    r.schedule,
                    crate::num(t.epsilon)
                ),
                None => format!("{} · {}", r.aggregation, r.schedule),
            });
        children.push(OutlineItem {
            name: q.name.value.clone(),
            detail,
            kind: OutlineKind::Query,
            span: q.span,
            selection: q.name.span,
            children: Vec::new(),
        });
    }
    for p in &plan.publishes {
        children.push(OutlineItem {
            name: p.name.value.clone(),
            detail: Some(format!("= {}", p.source.value)),
            kind: OutlineKind::Publish,
            span: doc.trim(p.span),
            selection: p.name.span,
            children: Vec::new(),
        });
    }
    children.sort_by_key(|c| c.span.start);
    match (&plan.name, plan.header_span) {
        (Some(name), Some(header)) => {
            let end = plan_end(doc)
                .unwrap_or(header.end)
                .max(children.last().map_or(0, |c| c.span.end));
            vec![OutlineItem {
                name: name.value.clone(),
                detail: Some("plan".into()),
                kind: OutlineKind::Plan,
                span: Span::new(header.start, end),
                selection: name.span,
                children,
            }]
        }
        _ => children,
    }
}

/// The end of the plan's closing brace: the last `}` of the text.
fn plan_end(doc: &Source<'_>) -> Option<usize> {
    doc.tokens
        .iter()
        .rev()
        .find(|t| t.kind == LexemeKind::Punct(b'}'))
        .map(|t| t.end)
}
