//! The row-level parts of an aggregation: its `where` filter (a public
//! predicate on declared columns and literals: DP006, DP007, DP012, DP014,
//! DP017, DP021), its group keys (categories and `bins`, their product:
//! DP012, DP013, DP016, DP017, DP022), `distinct` (DP014, DP017), and the
//! warning on a product of keys whose cells are mostly noise (DP023).

use foldhash::{HashMap, HashMapExt};

use dpplan_diagnostics::{Code, Diagnostic, Span};
use dpplan_syntax::ast::{self, ColumnType, Comparison, Literal, PredOperand, Predicate};
use dpplan_vocab::rows::{Filter, GroupKey};
use dpplan_vocab::{AccuracyMeasure, InvalidRule};

use super::datasets::{ColumnInfo, DatasetInfo};
use super::query::{QueryPlan, Reported};
use super::target::group_domain;
use super::{data_dependent, Checker};
use dpplan_mechanisms::noise;
use dpplan_mechanisms::sensitivity::{fmt_num, UnitBound};

/// The most cells a grouped query may release (DP016).
pub(super) const MAX_CELLS: u64 = 1_000_000;
/// Without a `population`, a grouped query of more cells than this is
/// warned about (DP023).
pub(super) const SPARSE_CELLS_WITHOUT_POPULATION: u64 = 1_000;

/// A grouped query's keys, resolved, and the number of cells.
#[derive(Debug, Clone)]
pub(super) struct Cells {
    pub(super) keys: Vec<GroupKey>,
    pub(super) size: u64,
    /// The `by` clause, for diagnostics.
    pub(super) span: Span,
}

/// The group keys of `by k1, k2, …` against the dataset: each a category
/// with a public domain or public bins over a number; their product has at
/// most [`MAX_CELLS`] cells. `None` when the aggregation is not grouped.
pub(super) fn resolve_keys(
    c: &mut Checker,
    info: &DatasetInfo,
    keys: &[ast::GroupKey],
) -> Result<Option<Cells>, Reported> {
    let (Some(first), Some(last)) = (keys.first(), keys.last()) else {
        return Ok(None);
    };
    let span = first.span().to(last.span());
    let mut seen: HashMap<&str, Span> = HashMap::new();
    let mut out = Vec::with_capacity(keys.len());
    let mut failed = false;
    for k in keys {
        let col = k.column();
        if let Some(prev) = seen.insert(&col.value, col.span) {
            c.error(
                Diagnostic::new(
                    Code::Duplicate,
                    format!("`{}` is a key twice", col.value),
                    col.span,
                )
                .secondary(prev, "first used here")
                .help("group by each column once"),
            );
            failed = true;
            continue;
        }
        match key(c, info, k) {
            Ok(key) => out.push(key),
            Err(Reported) => failed = true,
        }
    }
    if failed {
        return Err(Reported);
    }
    let size = out
        .iter()
        .try_fold(1u64, |acc, k| acc.checked_mul(k.len() as u64))
        .unwrap_or(u64::MAX);
    if size > MAX_CELLS {
        c.error(
            Diagnostic::new(
                Code::Limit,
                format!(
                    "the keys make {size} cells; dpplan releases at most {MAX_CELLS} cells per query"
                ),
                span,
            )
            .help("use fewer keys or coarser bins"),
        );
        return Err(Reported);
    }
    Ok(Some(Cells {
        keys: out,
        size,
        span,
    }))
}

/// One key: a category column with a public domain, or bins.
fn key(c: &mut Checker, info: &DatasetInfo, k: &ast::GroupKey) -> Result<GroupKey, Reported> {
    match k {
        ast::GroupKey::Column { name } => {
            group_domain(c, info, name)?;
            let domain = match info.columns.get(name.value.as_str()).map(|ci| ci.ty) {
                Some(ColumnType::Category {
                    domain: Some(ast::Domain::List { values }),
                }) => values.iter().map(|v| v.value.clone()).collect(),
                _ => return Err(Reported),
            };
            Ok(GroupKey::Category {
                column: name.value.clone(),
                domain,
            })
        }
        ast::GroupKey::Bins {
            column,
            edges,
            outside,
            ..
        } => {
            let ci = declared(c, info, column)?;
            if !matches!(ci.ty, ColumnType::Int { .. } | ColumnType::Float { .. }) {
                return Err(wrong_type(
                    c,
                    column,
                    ci,
                    format!(
                        "`{}` is not numeric: bins cut an int or float column",
                        column.value
                    ),
                    format!("group a category directly: `by {}`", column.value),
                ));
            }
            let edges = bin_edges(c, k.span(), edges)?;
            Ok(GroupKey::Bins {
                column: column.value.clone(),
                edges,
                outside: outside.as_ref().map_or(InvalidRule::Drop, |o| o.value),
            })
        }
    }
}

/// Public edges: at least two, finite, strictly increasing (DP022).
fn bin_edges(c: &mut Checker, span: Span, edges: &[ast::Number]) -> Result<Vec<f64>, Reported> {
    let help = "write at least two finite, strictly increasing edges, e.g. `bins(length_km, [0, 1, 2, 5, 10, 20])`";
    if edges.len() < 2 {
        c.error(
            Diagnostic::new(
                Code::InvalidBins,
                format!(
                    "bins need at least two edges (one bin), found {}",
                    edges.len()
                ),
                span,
            )
            .help(help),
        );
        return Err(Reported);
    }
    for (i, e) in edges.iter().enumerate() {
        let why = if !e.value.is_finite() {
            Some(format!("bin edge {} is not finite", e.value))
        } else if i > 0 && e.value <= edges[i - 1].value {
            Some(format!(
                "bin edges must increase: {} follows {}",
                fmt_num(e.value),
                fmt_num(edges[i - 1].value)
            ))
        } else {
            None
        };
        if let Some(why) = why {
            c.error(
                Diagnostic::new(Code::InvalidBins, why, e.span)
                    .label("not a valid edge")
                    .help(help),
            );
            return Err(Reported);
        }
    }
    Ok(edges.iter().map(|e| e.value).collect())
}

/// A column of the aggregated dataset, or DP012.
fn declared<'i>(
    c: &mut Checker,
    info: &'i DatasetInfo,
    col: &ast::Ident,
) -> Result<&'i ColumnInfo<'i>, Reported> {
    super::target::declared_column(c, info, col, "use one of:")
}

/// The `where` predicate, normalised ([`Filter`]); every problem in it is
/// reported, then `Err`.
pub(super) fn resolve_filter(
    c: &mut Checker,
    info: &DatasetInfo,
    p: &Predicate,
) -> Result<Filter, Reported> {
    match p {
        Predicate::And { items, .. } | Predicate::Or { items, .. } => {
            let resolved: Vec<_> = items.iter().map(|i| resolve_filter(c, info, i)).collect();
            let items = resolved.into_iter().collect::<Result<Vec<_>, _>>()?;
            Ok(if matches!(p, Predicate::And { .. }) {
                Filter::And { items }
            } else {
                Filter::Or { items }
            })
        }
        Predicate::Not { inner, .. } => Ok(Filter::Not {
            inner: Box::new(resolve_filter(c, info, inner)?),
        }),
        Predicate::Compare {
            span,
            left,
            cmp,
            right,
        } => compare(c, info, *span, left, cmp, right),
        Predicate::In {
            span,
            operand,
            values,
        } => member(c, info, *span, operand, values),
    }
}

/// `<column> <cmp> <literal>` (either way round).
fn compare(
    c: &mut Checker,
    info: &DatasetInfo,
    span: Span,
    left: &PredOperand,
    cmp: &ast::Spanned<Comparison>,
    right: &PredOperand,
) -> Result<Filter, Reported> {
    reject_data(c, left)?;
    reject_data(c, right)?;
    let (col, lit, op) = match (left, right) {
        (PredOperand::Column { .. }, PredOperand::Literal { value }) => (left, value, cmp.value),
        (PredOperand::Literal { value }, PredOperand::Column { .. }) => {
            (right, value, flip(cmp.value))
        }
        _ => {
            let what = if matches!(left, PredOperand::Column { .. }) {
                "two columns"
            } else {
                "two literals"
            };
            c.error(
                Diagnostic::new(
                    Code::Unsupported,
                    format!("a filter compares a declared column with a literal, not {what}"),
                    span,
                )
                .help("write e.g. `fare > 10` or `city == \"Madrid\"`"),
            );
            return Err(Reported);
        }
    };
    let (name, ci) = column(c, info, col)?;
    match (ci.ty, lit) {
        (ColumnType::Category { .. }, Literal::Str { value }) => {
            if !matches!(op, Comparison::Eq | Comparison::Ne) {
                c.error(
                    Diagnostic::new(
                        Code::TypeMismatch,
                        format!("`{name}` is a category: it has no order, only `==`, `!=` and `in {{ … }}`"),
                        cmp.span,
                    )
                    .help(format!("write `{name} == \"…\"` or `{name} in {{ \"a\", \"b\" }}`")),
                );
                return Err(Reported);
            }
            in_domain(c, name, ci, std::slice::from_ref(lit))?;
            let is = Filter::In {
                column: name.to_string(),
                values: vec![value.value.clone()],
            };
            Ok(match op {
                Comparison::Ne => Filter::Not {
                    inner: Box::new(is),
                },
                _ => is,
            })
        }
        (ColumnType::Int { .. } | ColumnType::Float { .. }, Literal::Number { value }) => {
            finite(c, value)?;
            Ok(Filter::Compare {
                column: name.to_string(),
                cmp: op,
                value: value.value,
            })
        }
        _ => Err(wrong_literal(c, name, ci, lit)),
    }
}

/// `<column> in { v1, v2, … }`.
fn member(
    c: &mut Checker,
    info: &DatasetInfo,
    span: Span,
    operand: &PredOperand,
    values: &[Literal],
) -> Result<Filter, Reported> {
    reject_data(c, operand)?;
    if let PredOperand::Literal { .. } = operand {
        c.error(
            Diagnostic::new(
                Code::Unsupported,
                "`in { … }` tests a declared column, not a literal",
                span,
            )
            .help("write e.g. `city in { \"Madrid\", \"Lisbon\" }`"),
        );
        return Err(Reported);
    }
    let (name, ci) = column(c, info, operand)?;
    match ci.ty {
        ColumnType::Category { .. } => {
            if let Some(bad) = values.iter().find(|v| !matches!(v, Literal::Str { .. })) {
                return Err(wrong_literal(c, name, ci, bad));
            }
            in_domain(c, name, ci, values)?;
            Ok(Filter::In {
                column: name.to_string(),
                values: values
                    .iter()
                    .filter_map(|v| match v {
                        Literal::Str { value } => Some(value.value.clone()),
                        Literal::Number { .. } => None,
                    })
                    .collect(),
            })
        }
        _ => {
            let mut items = Vec::with_capacity(values.len());
            for v in values {
                match (ci.ty, v) {
                    (
                        ColumnType::Int { .. } | ColumnType::Float { .. },
                        Literal::Number { value },
                    ) => {
                        finite(c, value)?;
                        items.push(Filter::Compare {
                            column: name.to_string(),
                            cmp: Comparison::Eq,
                            value: value.value,
                        });
                    }
                    _ => return Err(wrong_literal(c, name, ci, v)),
                }
            }
            Ok(Filter::Or { items })
        }
    }
}

fn flip(cmp: Comparison) -> Comparison {
    match cmp {
        Comparison::Lt => Comparison::Gt,
        Comparison::Le => Comparison::Ge,
        Comparison::Gt => Comparison::Lt,
        Comparison::Ge => Comparison::Le,
        other => other,
    }
}

/// DP006: an operand computed from private data.
fn reject_data(c: &mut Checker, op: &PredOperand) -> Result<(), Reported> {
    if let PredOperand::Data { expr } = op {
        data_dependent(
            c,
            expr.span,
            "this filter's operand",
            "a filter is a data-dependent branch unless it reads only the row's declared columns and literals: compare with a public number, e.g. `fare > 10`",
        );
        return Err(Reported);
    }
    Ok(())
}

/// The declared column of an operand: of the aggregated dataset (DP012),
/// not an id (DP017).
fn column<'o, 'i>(
    c: &mut Checker,
    info: &'i DatasetInfo,
    op: &'o PredOperand,
) -> Result<(&'o str, &'i ColumnInfo<'i>), Reported> {
    let PredOperand::Column {
        dataset, column, ..
    } = op
    else {
        return Err(Reported);
    };
    if let Some(ds) = dataset {
        if ds.value != info.ds.name.value {
            c.error(
                Diagnostic::new(
                    Code::Undefined,
                    format!(
                        "a filter reads the row it tests: `{}` is not the aggregated dataset `{}`",
                        ds.value, info.ds.name.value
                    ),
                    ds.span,
                )
                .help(format!(
                    "write `{}` or `{}.{}`",
                    column.value, info.ds.name.value, column.value
                )),
            );
            return Err(Reported);
        }
    }
    let ci = declared(c, info, column)?;
    if matches!(ci.ty, ColumnType::Id) {
        return Err(wrong_type(
            c,
            column,
            ci,
            format!(
                "`{}` is an id: ids identify units, they are never compared or aggregated",
                column.value
            ),
            "filter on a category or a number",
        ));
    }
    Ok((&column.value, ci))
}

/// DP007: a number literal must be finite.
fn finite(c: &mut Checker, n: &ast::Number) -> Result<(), Reported> {
    if n.value.is_finite() {
        return Ok(());
    }
    c.error(
        Diagnostic::new(
            Code::InvalidParameter,
            format!("a filter compares with a finite number, found {}", n.value),
            n.span,
        )
        .help("compare with a finite number such as `10`"),
    );
    Err(Reported)
}

/// DP021: category literals must be in the column's public domain.
fn in_domain(
    c: &mut Checker,
    name: &str,
    ci: &ColumnInfo,
    values: &[Literal],
) -> Result<(), Reported> {
    let ColumnType::Category {
        domain: Some(ast::Domain::List { values: domain }),
    } = ci.ty
    else {
        return Ok(()); // no public list: nothing to check against
    };
    let mut ok = true;
    for v in values {
        let Literal::Str { value } = v else { continue };
        if !domain.iter().any(|d| d.value == value.value) {
            let listed: Vec<String> = domain.iter().map(|d| format!("\"{}\"", d.value)).collect();
            c.error(
                Diagnostic::new(
                    Code::UnknownCategory,
                    format!("\"{}\" is not in the public domain of `{name}`: the filter would never hold for it", value.value),
                    value.span,
                )
                .secondary(ci.name_span, "domain declared here")
                .help(format!("use one of {}, or add it to the domain", listed.join(", "))),
            );
            ok = false;
        }
    }
    if ok {
        Ok(())
    } else {
        Err(Reported)
    }
}

/// DP017: a literal of the wrong type for its column.
fn wrong_literal(c: &mut Checker, name: &str, ci: &ColumnInfo, lit: &Literal) -> Reported {
    let (want, example) = match ci.ty {
        ColumnType::Category { .. } => ("a string from its domain", format!("`{name} == \"…\"`")),
        _ => ("a number", format!("`{name} > 10`")),
    };
    c.error(
        Diagnostic::new(
            Code::TypeMismatch,
            format!(
                "`{name}` is compared with {}, but it takes {want}",
                match lit {
                    Literal::Str { .. } => "a string",
                    Literal::Number { .. } => "a number",
                }
            ),
            lit.span(),
        )
        .secondary(ci.name_span, "declared here")
        .help(format!("write e.g. {example}")),
    );
    Reported
}

/// `count(distinct d.col)`: a count of an `id` column, ungrouped, or
/// grouped when it is the user-level unit's id (users per cell) (DP014,
/// DP017). Returns the column.
pub(super) fn check_distinct<'a>(
    c: &mut Checker,
    agg: &'a ast::Aggregate,
    info: &DatasetInfo,
) -> Result<&'a ast::Ident, Reported> {
    let span = agg.distinct.unwrap_or(agg.span);
    let Some(col) = &agg.target.column else {
        c.error(
            Diagnostic::new(
                Code::TypeMismatch,
                "`distinct` counts the distinct values of a column: name it",
                agg.target.span,
            )
            .help(format!(
                "write `count(distinct {}.<id column>)`",
                agg.target.dataset.value
            )),
        );
        return Err(Reported);
    };
    // (`top(distinct d.unit_id by k, n)` ranks the cells by units per cell)
    let ranked = agg.kind.value == ast::AggKind::Top && !agg.keys.is_empty();
    if agg.kind.value != ast::AggKind::Count && !ranked {
        c.error(
            Diagnostic::new(
                Code::TypeMismatch,
                format!(
                    "`distinct` goes with `count`, not `{}`",
                    agg.kind.value.as_str()
                ),
                span,
            )
            .help(format!(
                "write `count(distinct {}.{})`",
                agg.target.dataset.value, col.value
            )),
        );
        return Err(Reported);
    }
    let ci = declared(c, info, col)?;
    if let Some(k) = agg.keys.first() {
        // users per cell: the unit's id only, whose sensitivity follows from
        // groups_per_unit (each unit adds 1 to each cell it keeps a row in)
        let unit_id = info.bound.filter(|b| b.user).and(info.unit_id.as_deref());
        if unit_id != Some(col.value.as_str()) {
            let (message, help) = match unit_id {
                Some(id) => (
                    format!("a grouped distinct count counts the unit's id `{id}` (users per cell); `{}` is another column", col.value),
                    format!("write `count(distinct {}.{id} by …)`, or release one `count(distinct {}.{})` per group with a filter, e.g. `where district == \"Centro\"`", agg.target.dataset.value, agg.target.dataset.value, col.value),
                ),
                None => (
                    format!("a grouped distinct count needs a user-level unit: it counts the units per cell, and `{}` has no unit id", info.ds.name.value),
                    "declare `unit user_id` in the privacy block with a contribution block, or release one `count(distinct …)` per group with a filter".to_string(),
                ),
            };
            c.error(
                Diagnostic::new(Code::Unsupported, message, k.span())
                    .secondary(col.span, "counted here")
                    .help(help),
            );
            return Err(Reported);
        }
    }
    if !matches!(ci.ty, ColumnType::Id) {
        return Err(wrong_type(
            c,
            col,
            ci,
            format!(
                "`{}` is not an id: `distinct` counts the distinct values of an `id` column",
                col.value
            ),
            "count rows per category with `histogram(… by …)`",
        ));
    }
    Ok(col)
}

/// DP017 on a column used as the wrong type: `message` at the column,
/// where it was declared, and `help`.
pub(super) fn wrong_type(
    c: &mut Checker,
    column: &ast::Ident,
    ci: &ColumnInfo,
    message: String,
    help: impl Into<String>,
) -> Reported {
    c.error(
        Diagnostic::new(Code::TypeMismatch, message, column.span)
            .secondary(ci.name_span, "declared here")
            .help(help),
    );
    Reported
}

/// DP023: a grouped query whose average cell (an upper bound on its true
/// count) is below the noise's 95 % half-width — or, without a
/// `population`, more than [`SPARSE_CELLS_WITHOUT_POPULATION`] cells.
pub(super) fn sparse_cells(c: &mut Checker, queries: &[QueryPlan], population: Option<f64>) {
    for q in queries.iter().filter(|q| q.ok) {
        let Some(cells) = &q.cells else { continue };
        let Some(unit) = q.unit else { continue };
        let half = q
            .parts
            .iter()
            .filter(|p| !p.public && p.statistic.is_count())
            .filter_map(|p| Some(noise::measure(p.kind, p.resolved?, AccuracyMeasure::Ci95)))
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
        if let Some(d) = sparse(cells.size, unit, population, half) {
            c.warning(
                Diagnostic::new(Code::SparseCells, d.0, cells.span)
                    .label(format!("{} cells", cells.size))
                    .help(d.1),
            );
        }
    }
}

/// The warning's message and help, when it applies.
fn sparse(
    cells: u64,
    unit: UnitBound,
    population: Option<f64>,
    half: Option<f64>,
) -> Option<(String, String)> {
    match (population, half) {
        (Some(n), Some(h)) => {
            let rows = n * unit.rows as f64;
            let per_cell = rows / cells as f64;
            (per_cell < h).then(|| {
                (
                    format!(
                        "{cells} cells: at most {} rows on average per cell (population {} × {} rows per unit / {cells}), below the noise's 95 % half-width {} — most cells will be pure noise",
                        fmt_num(per_cell),
                        fmt_num(n),
                        unit.rows,
                        fmt_num(h)
                    ),
                    "use fewer keys or coarser bins, or more budget for this query".to_string(),
                )
            })
        }
        (None, _) => (cells > SPARSE_CELLS_WITHOUT_POPULATION).then(|| {
            (
                format!("{cells} cells, more than {SPARSE_CELLS_WITHOUT_POPULATION}: without a `population` the checker cannot tell whether most cells will be pure noise"),
                "declare `population <n>` in the privacy block so the checker can compare the average cell with the noise, or use fewer keys".to_string(),
            )
        }),
        (Some(_), None) => None,
    }
}

/// The keys as written, e.g. `district, bins(length_km, [0, 1, 2])`.
pub(super) fn describe_keys(keys: &[ast::GroupKey]) -> String {
    keys.iter()
        .map(|k| match k {
            ast::GroupKey::Column { name } => name.value.clone(),
            ast::GroupKey::Bins {
                column,
                edges,
                outside,
                ..
            } => format!(
                "bins({}, [{}]{})",
                column.value,
                edges
                    .iter()
                    .map(|e| fmt_num(e.value))
                    .collect::<Vec<_>>()
                    .join(", "),
                outside
                    .as_ref()
                    .map(|o| format!(" outside {}", o.value.as_str()))
                    .unwrap_or_default()
            ),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A predicate as written (parentheses where the nesting needs them).
pub(super) fn describe_predicate(p: &Predicate) -> String {
    let nested = |q: &Predicate| match q {
        Predicate::And { .. } | Predicate::Or { .. } => format!("({})", describe_predicate(q)),
        _ => describe_predicate(q),
    };
    match p {
        Predicate::And { items, .. } => items.iter().map(nested).collect::<Vec<_>>().join(" and "),
        Predicate::Or { items, .. } => items.iter().map(nested).collect::<Vec<_>>().join(" or "),
        Predicate::Not { inner, .. } => format!("not {}", nested(inner)),
        Predicate::Compare {
            left, cmp, right, ..
        } => format!(
            "{} {} {}",
            operand(left),
            cmp.value.as_str(),
            operand(right)
        ),
        Predicate::In {
            operand: o, values, ..
        } => format!(
            "{} in {{ {} }}",
            operand(o),
            values.iter().map(literal).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn operand(o: &PredOperand) -> String {
    match o {
        PredOperand::Column {
            dataset, column, ..
        } => match dataset {
            Some(d) => format!("{}.{}", d.value, column.value),
            None => column.value.clone(),
        },
        PredOperand::Literal { value } => literal(value),
        PredOperand::Data { expr } => match &expr.function {
            Some(f) => format!(
                "{}({})",
                f.value,
                super::target::describe_target(&expr.target)
            ),
            None => super::target::describe_target(&expr.target),
        },
    }
}

fn literal(l: &Literal) -> String {
    match l {
        Literal::Number { value } => fmt_num(value.value),
        Literal::Str { value } => format!("{:?}", value.value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sparse_threshold_is_the_noise_half_width() {
        let row = UnitBound {
            user: false,
            rows: 1,
            groups: None,
            rows_per_group: None,
        };
        // 10⁴ rows over 100 cells = 100 per cell: warned at a half-width above 100 only
        assert!(sparse(100, row, Some(1e4), Some(99.0)).is_none());
        assert!(sparse(100, row, Some(1e4), Some(101.0)).is_some());
        // raise rows per unit: the upper bound rises, the warning goes
        let user = UnitBound {
            user: true,
            rows: 5,
            ..row
        };
        assert!(sparse(100, user, Some(1e4), Some(101.0)).is_none());
        // no population: the fixed threshold
        assert!(sparse(1_000, row, None, Some(1.0)).is_none());
        assert!(sparse(1_001, row, None, Some(1.0)).is_some());
    }
}
