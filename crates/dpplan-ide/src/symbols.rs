//! Names and where they are defined and used: datasets, columns, queries
//! and publishes. Derived from the AST's spans.

use std::collections::HashMap;

use dpplan_diagnostics::Span;
use dpplan_syntax::ast::{
    self, Bound, ColumnType, Domain, Ident, Operand, PredOperand, Predicate, Unit,
};

use crate::{Document, TextEdit};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    Dataset,
    /// A column of one dataset; the privacy unit's id column is one symbol
    /// across every dataset (`unit user by uid` names them all).
    Column,
    Query,
    Publish,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Symbol {
    pub kind: SymbolKind,
    pub name: String,
    /// The dataset of a column (`None` for the unit's id column).
    pub container: Option<String>,
    /// Where it is defined (several when defined twice, or for the id column).
    pub defs: Vec<Span>,
    pub refs: Vec<Span>,
}

#[derive(Default)]
struct Builder {
    symbols: Vec<Symbol>,
    index: HashMap<(SymbolKind, Option<String>, String), usize>,
}

impl Builder {
    fn get(&mut self, kind: SymbolKind, container: Option<&str>, name: &str) -> &mut Symbol {
        let key = (kind, container.map(str::to_string), name.to_string());
        let i = *self.index.entry(key).or_insert_with(|| {
            self.symbols.push(Symbol {
                kind,
                name: name.to_string(),
                container: container.map(str::to_string),
                defs: Vec::new(),
                refs: Vec::new(),
            });
            self.symbols.len() - 1
        });
        &mut self.symbols[i]
    }
    fn has(&self, kind: SymbolKind, container: Option<&str>, name: &str) -> bool {
        self.index
            .contains_key(&(kind, container.map(str::to_string), name.to_string()))
    }
    /// A released name refers to a query, or else to a publish.
    fn released_kind(&self, name: &str) -> SymbolKind {
        if self.has(SymbolKind::Publish, None, name) && !self.has(SymbolKind::Query, None, name) {
            SymbolKind::Publish
        } else {
            SymbolKind::Query
        }
    }
}

pub(crate) fn collect(plan: &ast::Plan) -> Vec<Symbol> {
    let unit_id: Option<&ast::Ident> = plan.privacy.first().and_then(|p| {
        p.units.iter().find_map(|u| match &u.value {
            Unit::User { id } => Some(id),
            _ => None,
        })
    });
    let mut c = Collector {
        b: Builder::default(),
        id_name: unit_id.map(|i| i.value.as_str()),
    };
    if let Some(id) = unit_id {
        c.b.get(SymbolKind::Column, None, &id.value)
            .refs
            .push(id.span);
    }
    c.definitions(plan);
    c.column_type_refs(plan);
    c.query_refs(plan);
    c.publish_refs(plan);
    c.b.symbols
}

/// The symbols of one plan, collected definitions first, then references.
struct Collector<'p> {
    b: Builder,
    /// The privacy unit's id column: one symbol across every dataset.
    id_name: Option<&'p str>,
}

impl Collector<'_> {
    /// The symbol of the column `col` of dataset `ds` (the unit's id
    /// column has no dataset).
    fn column(&mut self, ds: &str, col: &str) -> &mut Symbol {
        let container = (Some(col) != self.id_name).then_some(ds);
        self.b.get(SymbolKind::Column, container, col)
    }

    /// Datasets and their columns, queries, publishes.
    fn definitions(&mut self, plan: &ast::Plan) {
        for ds in &plan.datasets {
            self.b
                .get(SymbolKind::Dataset, None, &ds.name.value)
                .defs
                .push(ds.name.span);
            for col in &ds.columns {
                self.column(&ds.name.value, &col.name.value)
                    .defs
                    .push(col.name.span);
            }
        }
        for q in &plan.queries {
            self.b
                .get(SymbolKind::Query, None, &q.name.value)
                .defs
                .push(q.name.span);
        }
        for p in &plan.publishes {
            let kind = if self.b.has(SymbolKind::Query, None, &p.name.value) {
                SymbolKind::Query
            } else {
                SymbolKind::Publish
            };
            self.b.get(kind, None, &p.name.value).defs.push(p.name.span);
        }
    }

    /// A dataset and column read, `dataset[.column]`.
    fn target(&mut self, t: &ast::Target) {
        self.b
            .get(SymbolKind::Dataset, None, &t.dataset.value)
            .refs
            .push(t.dataset.span);
        if let Some(col) = &t.column {
            self.column(&t.dataset.value, &col.value)
                .refs
                .push(col.span);
        }
    }

    /// What the columns' types read from the data: a category's domain,
    /// a number's bounds.
    fn column_type_refs(&mut self, plan: &ast::Plan) {
        for ds in &plan.datasets {
            for col in &ds.columns {
                let bounds = match &col.ty.value {
                    ColumnType::Int { bounds } | ColumnType::Float { bounds } => bounds.as_ref(),
                    ColumnType::Category {
                        domain: Some(Domain::FromData { expr }),
                    } => {
                        self.target(&expr.target);
                        None
                    }
                    _ => None,
                };
                for bound in bounds.into_iter().flat_map(|bs| [&bs.lo, &bs.hi]) {
                    if let Bound::FromData { expr } = bound {
                        self.target(&expr.target);
                    }
                }
            }
        }
    }

    /// What the aggregations read: their target, keys and filter columns.
    fn query_refs(&mut self, plan: &ast::Plan) {
        for agg in plan.queries.iter().flat_map(|q| &q.aggregates) {
            self.target(&agg.target);
            let mut columns: Vec<&Ident> = agg.keys.iter().map(|k| k.column()).collect();
            if let Some(f) = &agg.filter {
                filter_columns(f, &mut columns);
            }
            for col in columns {
                self.column(&agg.target.dataset.value, &col.value)
                    .refs
                    .push(col.span);
            }
        }
    }

    /// What the publishes release and their conditions read.
    fn publish_refs(&mut self, plan: &ast::Plan) {
        for p in &plan.publishes {
            let k = self.b.released_kind(&p.source.value);
            self.b
                .get(k, None, &p.source.value)
                .refs
                .push(p.source.span);
            if let Some(cond) = &p.condition {
                match &cond.operand {
                    Operand::Released { name } => {
                        let k = self.b.released_kind(&name.value);
                        self.b.get(k, None, &name.value).refs.push(name.span);
                    }
                    Operand::Data { expr } => self.target(&expr.target),
                }
            }
        }
    }
}

/// The columns a filter reads, as written.
fn filter_columns<'a>(p: &'a Predicate, out: &mut Vec<&'a Ident>) {
    let operand = |o: &'a PredOperand, out: &mut Vec<&'a Ident>| {
        if let PredOperand::Column { column, .. } = o {
            out.push(column);
        }
    };
    match p {
        Predicate::And { items, .. } | Predicate::Or { items, .. } => {
            items.iter().for_each(|i| filter_columns(i, out));
        }
        Predicate::Not { inner, .. } => filter_columns(inner, out),
        Predicate::Compare { left, right, .. } => {
            operand(left, out);
            operand(right, out);
        }
        Predicate::In { operand: o, .. } => operand(o, out),
    }
}

pub(crate) fn at(symbols: &[Symbol], offset: usize) -> Option<(&Symbol, Span)> {
    for s in symbols {
        for span in s.defs.iter().chain(&s.refs) {
            if span.contains(offset) {
                return Some((s, *span));
            }
        }
    }
    None
}

pub(crate) fn rename(
    doc: &Document,
    offset: usize,
    new_name: &str,
) -> Result<Vec<TextEdit>, String> {
    let Some((sym, _)) = doc.symbol_at(offset) else {
        return Err("there is no dataset, column, query or publish name here".into());
    };
    if !dpplan_syntax::lexer::is_ident(new_name) {
        return Err(format!("`{new_name}` is not a name: use letters, digits and `_`, starting with a letter or `_`"));
    }
    if dpplan_syntax::lexer::is_keyword(new_name) {
        return Err(format!("`{new_name}` is a keyword"));
    }
    if new_name == sym.name {
        return Ok(Vec::new());
    }
    // Names share a namespace: datasets; queries and publishes; columns of one dataset.
    let clash = doc.symbols.iter().any(|s| {
        s.name == new_name
            && match sym.kind {
                SymbolKind::Dataset => s.kind == SymbolKind::Dataset,
                SymbolKind::Query | SymbolKind::Publish => {
                    matches!(s.kind, SymbolKind::Query | SymbolKind::Publish)
                }
                SymbolKind::Column => {
                    s.kind == SymbolKind::Column
                        && (s.container.is_none()
                            || sym.container.is_none()
                            || s.container == sym.container)
                }
            }
            && !s.defs.is_empty()
    });
    if clash {
        return Err(format!("`{new_name}` is already defined"));
    }
    let mut spans: Vec<Span> = sym.defs.iter().chain(&sym.refs).copied().collect();
    spans.sort();
    spans.dedup();
    Ok(spans
        .into_iter()
        .map(|span| TextEdit {
            span,
            new_text: new_name.to_string(),
        })
        .collect())
}
