//! What a query reads: its dataset and column (DP012), the public bounds
//! of the aggregated values (DP002, DP017) and its groups (DP004, DP017) —
//! resolved against the declared datasets before any sensitivity is
//! derived (`query.rs`).

use foldhash::HashMap;

use dpplan_diagnostics::{Code, Diagnostic};
use dpplan_syntax::ast::{self, AggKind, ColumnType};

use super::datasets::{ColumnInfo, DatasetInfo};
use super::query::Reported;
use super::recover::suggest_name;
use super::rows::{self, wrong_type, Cells};
use super::Checker;
use dpplan_mechanisms::sensitivity::UnitBound;

/// A query's resolved target: its dataset, the aggregated column and the
/// size of the grouping column's public domain.
pub(super) struct Target<'a> {
    pub(super) info: &'a DatasetInfo<'a>,
    pub(super) column: Option<(&'a ast::Ident, &'a ColumnInfo<'a>)>,
    pub(super) group: Option<u64>,
    pub(super) cells: Option<Cells>,
}

pub(super) fn describe_target(t: &ast::Target) -> String {
    match &t.column {
        Some(col) => format!("{}.{}", t.dataset.value, col.value),
        None => t.dataset.value.clone(),
    }
}

/// The dataset and column the query reads (DP012), and its groups.
pub(super) fn target<'a>(
    c: &mut Checker,
    agg: &'a ast::Aggregate,
    datasets: &'a HashMap<&str, DatasetInfo<'a>>,
) -> Result<Target<'a>, Reported> {
    let Some(info) = datasets.get(agg.target.dataset.value.as_str()) else {
        if c.broken.dataset(&agg.target.dataset.value) {
            // Declared but broken: its syntax error says why, once.
            return Err(Reported);
        }
        c.error(suggest_name(
            Diagnostic::new(
                Code::Undefined,
                format!("there is no dataset `{}`", agg.target.dataset.value),
                agg.target.dataset.span,
            )
            .label("undefined dataset")
            .help(format!(
                "declare `dataset {} {{ … }}` or use one of: {}",
                agg.target.dataset.value,
                names(datasets.keys().copied())
            )),
            &agg.target.dataset.value,
            datasets.keys().copied(),
        ));
        return Err(Reported);
    };
    let column = match &agg.target.column {
        None => None,
        Some(col) => {
            let help = format!("declare it in `{}` or use one of:", info.ds.name.value);
            Some((col, declared_column(c, info, col, &help)?))
        }
    };
    let cells = rows::resolve_keys(c, info, &agg.keys)?;
    Ok(Target {
        info,
        column,
        group: cells.as_ref().map(|k| k.size),
        cells,
    })
}

/// A column of the dataset, or DP012 with `help` followed by the declared
/// columns, and "did you mean" for a near miss: the one check of a column
/// name, for targets, group keys and filters alike.
pub(super) fn declared_column<'i>(
    c: &mut Checker,
    info: &'i DatasetInfo,
    col: &ast::Ident,
    help: &str,
) -> Result<&'i ColumnInfo<'i>, Reported> {
    if let Some(ci) = info.columns.get(col.value.as_str()) {
        return Ok(ci);
    }
    c.error(suggest_name(
        Diagnostic::new(
            Code::Undefined,
            format!(
                "dataset `{}` has no column `{}`",
                info.ds.name.value, col.value
            ),
            col.span,
        )
        .label("undefined column")
        .help(format!("{help} {}", names(info.columns.keys().copied()))),
        &col.value,
        info.columns.keys().copied(),
    ));
    Err(Reported)
}

/// The size of the public domain of the column a query groups by (DP002,
/// DP012, DP017).
pub(super) fn group_domain(
    c: &mut Checker,
    info: &DatasetInfo,
    by: &ast::Ident,
) -> Result<u64, Reported> {
    let ci = declared_column(c, info, by, "group by one of:")?;
    if !matches!(ci.ty, ColumnType::Category { .. }) {
        return Err(wrong_type(
            c,
            by,
            ci,
            format!(
                "`{}` is not a category: groups must come from a public domain",
                by.value
            ),
            "group by a `category { … }` column",
        ));
    }
    match ci.domain {
        Some(d) => Ok(d),
        None => {
            if matches!(ci.ty, ColumnType::Category { domain: None }) {
                c.error(
                    Diagnostic::new(
                        Code::MissingBounds,
                        format!(
                            "`{}` has no public domain: the histogram's keys would come from the data",
                            by.value
                        ),
                        by.span,
                    )
                    .secondary(ci.name_span, "declared without a domain")
                    .help(format!(
                        "list the public values: `column {} : category {{ \"a\", \"b\" }}`",
                        by.value
                    )),
                );
            }
            Err(Reported)
        }
    }
}

/// Which statistic, and the public bounds of its values (DP002, DP017);
/// `None` for a count.
pub(super) fn value_bounds(
    c: &mut Checker,
    agg: &ast::Aggregate,
    target: &Target,
) -> Result<Option<(f64, f64)>, Reported> {
    let info = target.info;
    let kind = agg.kind.value;
    match (kind, target.column) {
        (AggKind::Count, Some((col, _))) => {
            c.error(
                Diagnostic::new(
                    Code::TypeMismatch,
                    format!("`count` counts rows: write `count({})`", info.ds.name.value),
                    col.span,
                )
                .help(format!(
                    "count rows with `count({})`, or sum a column with `sum({}.{})`",
                    info.ds.name.value, info.ds.name.value, col.value
                )),
            );
            Err(Reported)
        }
        (AggKind::Histogram, Some((col, _))) => {
            let ds = &info.ds.name.value;
            let help = match agg.keys.first().map(|k| k.column()) {
                // `histogram(d.g)`: the column is meant as the groups
                None => format!("count rows per value of `{0}` with `histogram({ds} by {0})`", col.value),
                Some(by) => format!(
                    "count rows per group with `histogram({ds} by {0})`, or sum `{1}` per group with `sum({ds}.{1} by {0})`",
                    by.value, col.value
                ),
            };
            c.error(
                Diagnostic::new(
                    Code::TypeMismatch,
                    format!("`histogram` counts rows per group: it takes a dataset, not the column `{}`", col.value),
                    col.span,
                )
                .help(help),
            );
            Err(Reported)
        }
        (AggKind::Top, Some((col, _))) => {
            let ds = &info.ds.name.value;
            c.error(
                Diagnostic::new(
                    Code::TypeMismatch,
                    format!("`top` ranks the cells by their counts: it takes a dataset, not the column `{}`", col.value),
                    col.span,
                )
                .help(format!("rank rows per cell with `top({ds} by …, k)`, or units per cell with `top(distinct {ds}.<unit id> by …, k)`")),
            );
            Err(Reported)
        }
        (AggKind::Count | AggKind::Histogram | AggKind::Top, None) => Ok(None),
        (AggKind::Sum | AggKind::Mean | AggKind::Quantile | AggKind::Quantiles, None) => {
            c.error(
                Diagnostic::new(
                    Code::TypeMismatch,
                    format!(
                        "`{}` needs a numeric column, such as `{}.value`",
                        kind.as_str(),
                        info.ds.name.value
                    ),
                    agg.target.span,
                )
                .help("name the column to aggregate"),
            );
            Err(Reported)
        }
        (_, Some((col, ci))) => match ci.ty {
            ColumnType::Int { bounds } | ColumnType::Float { bounds } => {
                match (ci.bounds, bounds) {
                    (Some(b), _) => Ok(Some(b)),
                    (None, None) => {
                        c.error(
                            Diagnostic::new(
                                Code::MissingBounds,
                                format!("`{}.{}` has no public bounds, so one row can move the {} without limit", info.ds.name.value, col.value, kind.as_str()),
                                col.span,
                            )
                            .label("unbounded column")
                            .secondary(ci.name_span, "declared without bounds")
                            .help(format!("declare public clamp bounds, e.g. `column {} : {} in [0, 100]`", col.value, if matches!(ci.ty, ColumnType::Int { .. }) { "int" } else { "float" })),
                        );
                        Err(Reported)
                    }
                    // Bounds were declared but invalid (reported there).
                    (None, Some(_)) => Err(Reported),
                }
            }
            _ => {
                c.error(
                    Diagnostic::new(
                        Code::TypeMismatch,
                        format!(
                            "`{}` is not numeric: `{}` needs an int or float column",
                            col.value,
                            kind.as_str()
                        ),
                        col.span,
                    )
                    .secondary(ci.name_span, "declared here")
                    .help(format!(
                        "count rows per value with `histogram({} by {})`",
                        info.ds.name.value, col.value
                    )),
                );
                Err(Reported)
            }
        },
    }
}

/// A grouped statistic needs groups, and under a user-level unit a bound on
/// the groups one user touches (DP004, DP017).
pub(super) fn groups(
    c: &mut Checker,
    agg: &ast::Aggregate,
    target: &Target,
    unit: UnitBound,
) -> Result<(), Reported> {
    let info = target.info;
    let grouped_kind =
        matches!(agg.kind.value, AggKind::Histogram | AggKind::Top) || target.group.is_some();
    if grouped_kind {
        if unit.user && unit.groups.is_none() {
            let by_span = agg.keys.first().map_or(agg.span, |k| k.span());
            c.error(
                Diagnostic::new(
                    Code::UnboundedGroups,
                    format!(
                        "a grouped query under a user-level unit needs a groups_per_unit bound on `{}`: without it one user may touch up to {} groups",
                        info.ds.name.value, unit.rows
                    ),
                    by_span,
                )
                .label("groups per user not bounded")
                .help(format!("add `groups_per_unit N` to the contribution block of `{}`", info.ds.name.value)),
            );
            return Err(Reported);
        }
        if target.group.is_none() {
            let kind = agg.kind.value.as_str();
            c.error(
                Diagnostic::new(
                    Code::TypeMismatch,
                    format!("a {kind} needs groups: `{kind}(dataset by column)`"),
                    agg.span,
                )
                .help(format!(
                    "write `{kind}({} by <category column>{})`",
                    info.ds.name.value,
                    if agg.kind.value == AggKind::Top {
                        ", k"
                    } else {
                        ""
                    }
                )),
            );
            return Err(Reported);
        }
    }
    Ok(())
}

/// The user-level unit's id column, if the unit is user-level.
pub(super) fn unit_id<'i>(info: &'i DatasetInfo) -> Option<&'i str> {
    info.bound.filter(|b| b.user).and(info.unit_id.as_deref())
}

/// Names for a help text: sorted, quoted.
fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let mut v: Vec<&str> = it.collect();
    v.sort();
    if v.is_empty() {
        "(none declared)".into()
    } else {
        v.iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
