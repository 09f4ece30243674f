//! The datasets: unique names and columns, column bounds and category
//! domains that are public and valid, the contribution bounds, and the
//! privacy unit's id column (DP001, DP006, DP007, DP012, DP013, DP017).

use foldhash::{HashMap, HashMapExt};

use dpplan_diagnostics::{Code, Diagnostic, Span};
use dpplan_syntax::ast::{self, ColumnType, Unit};

use super::privacy::Privacy;
use super::{data_dependent, duplicate, Checker};
use dpplan_mechanisms::sensitivity::{fmt_num, UnitBound};

pub(super) struct ColumnInfo<'a> {
    pub(super) name_span: Span,
    pub(super) ty: &'a ColumnType,
    /// Public bounds when declared and valid.
    pub(super) bounds: Option<(f64, f64)>,
    /// Public domain size when declared and valid.
    pub(super) domain: Option<u64>,
}

pub(super) struct DatasetInfo<'a> {
    pub(super) ds: &'a ast::Dataset,
    pub(super) columns: HashMap<&'a str, ColumnInfo<'a>>,
    /// `None` when a user-level unit has no rows_per_unit (DP001).
    pub(super) bound: Option<UnitBound>,
    /// rows_per_unit as declared (for the per-person warning under a row unit).
    pub(super) declared_rows: Option<u64>,
    pub(super) id_columns: Vec<&'a ast::Column>,
    /// `windows_per_unit` and `rows_per_window`, as declared and valid.
    pub(super) windows: super::window::WindowBounds,
    /// The id column of a user-level unit.
    pub(super) unit_id: Option<String>,
    /// `sample units q`: the sampling rate, when valid and below 1.
    pub(super) sample: Option<f64>,
}

/// A positive whole number, or a DP007 diagnostic.
pub(super) fn whole(c: &mut Checker, n: &ast::Number, what: &str) -> Option<u64> {
    let v = n.value;
    if !v.is_finite() || v < 1.0 || v.fract() != 0.0 || v > 1e15 {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!("{what} must be a whole number of at least 1, found {v}"),
                n.span,
            )
            .label("not a positive whole number")
            .help(format!("write {what} as a whole number such as `5`")),
        );
        return None;
    }
    Some(v as u64)
}

/// The contribution bounds as declared and valid.
struct Contribution {
    rows: Option<u64>,
    groups: Option<u64>,
    per_group: Option<u64>,
    windows: super::window::WindowBounds,
}

/// Every dataset by name (a second declaration of a name is DP013 and
/// ignored).
pub(super) fn resolve_datasets<'a>(
    c: &mut Checker,
    plan: &'a ast::Plan,
    privacy: Option<&Privacy>,
) -> HashMap<&'a str, DatasetInfo<'a>> {
    let mut out: HashMap<&'a str, DatasetInfo<'a>> = HashMap::new();
    for ds in &plan.datasets {
        if let Some(prev) = out.get(ds.name.value.as_str()) {
            c.error(
                Diagnostic::new(
                    Code::Duplicate,
                    format!("dataset `{}` is declared twice", ds.name.value),
                    ds.name.span,
                )
                .secondary(prev.ds.name.span, "first declared here")
                .help("rename one of the datasets"),
            );
            continue;
        }
        out.insert(&ds.name.value, dataset(c, ds, privacy));
    }
    out
}

/// One dataset: its settings declared once, its columns, its contribution
/// bounds and what one unit may contribute to it.
fn dataset<'a>(
    c: &mut Checker,
    ds: &'a ast::Dataset,
    privacy: Option<&Privacy>,
) -> DatasetInfo<'a> {
    duplicate(c, &ds.sources, |s| s.span, "the dataset's source");
    duplicate(c, &ds.contributions, |s| s.span, "the contribution block");
    duplicate(c, &ds.invalid_rows, |s| s.span, "the invalid-row rule");
    let sample = super::sample::rate(c, ds, privacy);
    let (columns, id_columns) = columns(c, ds);
    let contribution = contribution(c, ds);
    let bound = match privacy {
        Some(Privacy {
            unit: Unit::User { id },
            unit_span,
            ..
        }) => user_bound(c, ds, &columns, &contribution, id, *unit_span),
        _ => Some(UnitBound {
            user: false,
            rows: 1,
            groups: Some(1),
            rows_per_group: Some(1),
        }),
    };
    DatasetInfo {
        ds,
        columns,
        bound,
        declared_rows: contribution.rows,
        id_columns,
        windows: contribution.windows,
        unit_id: match privacy {
            Some(Privacy {
                unit: Unit::User { id },
                ..
            }) => Some(id.value.clone()),
            _ => None,
        },
        sample,
    }
}

/// The dataset's columns by name (each declared once) with their public
/// bounds and domains, and its id columns.
fn columns<'a>(
    c: &mut Checker,
    ds: &'a ast::Dataset,
) -> (HashMap<&'a str, ColumnInfo<'a>>, Vec<&'a ast::Column>) {
    let mut columns: HashMap<&str, ColumnInfo> = HashMap::new();
    let mut id_columns = Vec::new();
    for col in &ds.columns {
        if let Some(prev) = columns.get(col.name.value.as_str()) {
            c.error(
                Diagnostic::new(
                    Code::Duplicate,
                    format!("column `{}` is declared twice", col.name.value),
                    col.name.span,
                )
                .secondary(prev.name_span, "first declared here")
                .help("remove one of the declarations"),
            );
            continue;
        }
        let mut bounds = None;
        let mut domain = None;
        match &col.ty.value {
            ColumnType::Id => id_columns.push(col),
            ColumnType::Int { bounds: b } | ColumnType::Float { bounds: b } => {
                if let Some(b) = b {
                    bounds = check_bounds(c, b, matches!(col.ty.value, ColumnType::Int { .. }));
                }
            }
            ColumnType::Category { domain: d } => domain = category_domain(c, col, d.as_ref()),
            ColumnType::Time => {}
        }
        columns.insert(
            &col.name.value,
            ColumnInfo {
                name_span: col.name.span,
                ty: &col.ty.value,
                bounds,
                domain,
            },
        );
    }
    (columns, id_columns)
}

/// The size of a category's public domain, each value listed once (DP006,
/// DP007, DP013).
fn category_domain(c: &mut Checker, col: &ast::Column, d: Option<&ast::Domain>) -> Option<u64> {
    match d {
        Some(ast::Domain::List { values }) => {
            if values.is_empty() {
                c.error(
                    Diagnostic::new(
                        Code::InvalidParameter,
                        "a category's public domain cannot be empty",
                        col.ty.span,
                    )
                    .help("list the public values, e.g. `category { \"a\", \"b\" }`"),
                );
                None
            } else {
                let mut seen: HashMap<&str, Span> = HashMap::new();
                for v in values {
                    if let Some(first) = seen.get(v.value.as_str()) {
                        c.error(
                            Diagnostic::new(
                                Code::Duplicate,
                                format!("`{}` is listed twice in the domain", v.value),
                                v.span,
                            )
                            .secondary(*first, "first listed here")
                            .help("remove the repeated value"),
                        );
                    } else {
                        seen.insert(&v.value, v.span);
                    }
                }
                Some(seen.len() as u64)
            }
        }
        Some(ast::Domain::FromData { expr }) => {
            data_dependent(
                c,
                expr.span,
                "the group domain",
                "list the public values: `category { \"a\", \"b\" }`",
            );
            None
        }
        None => None,
    }
}

/// The contribution bounds, each declared once and a positive whole number.
fn contribution(c: &mut Checker, ds: &ast::Dataset) -> Contribution {
    let mut rows = None;
    let mut groups = None;
    let mut per_group = None;
    let mut windows = super::window::WindowBounds::default();
    if let Some(cb) = ds.contributions.first() {
        windows = super::window::window_bounds(c, cb);
        duplicate(c, &cb.rows_per_unit, |n| n.span, "rows_per_unit");
        duplicate(c, &cb.groups_per_unit, |n| n.span, "groups_per_unit");
        duplicate(c, &cb.rows_per_group, |n| n.span, "rows_per_group");
        rows = cb
            .rows_per_unit
            .first()
            .and_then(|n| whole(c, n, "rows_per_unit"));
        groups = cb
            .groups_per_unit
            .first()
            .and_then(|n| whole(c, n, "groups_per_unit"));
        per_group = cb
            .rows_per_group
            .first()
            .and_then(|n| whole(c, n, "rows_per_group"));
    }
    Contribution {
        rows,
        groups,
        per_group,
        windows,
    }
}

/// What one user may contribute under a user-level unit: the unit's id
/// column must be an `id` column of the dataset (DP012, DP017), and the
/// rows per user must be bounded (DP001, `None` then).
fn user_bound(
    c: &mut Checker,
    ds: &ast::Dataset,
    columns: &HashMap<&str, ColumnInfo>,
    bounds: &Contribution,
    id: &ast::Ident,
    unit_span: Span,
) -> Option<UnitBound> {
    // The unit's id column must exist and be an id.
    match columns.get(id.value.as_str()) {
        None => {
            c.error(
                Diagnostic::new(
                    Code::Undefined,
                    format!(
                        "dataset `{}` has no column `{}`, the privacy unit's id",
                        ds.name.value, id.value
                    ),
                    ds.name.span,
                )
                .secondary(id.span, "the unit is identified by this column")
                .help(format!(
                    "declare `column {} : id` in `{}`",
                    id.value, ds.name.value
                )),
            );
        }
        Some(col) if !matches!(col.ty, ColumnType::Id) => {
            c.error(
                Diagnostic::new(
                    Code::TypeMismatch,
                    format!(
                        "`{}` identifies the privacy unit, so it must be declared `id`",
                        id.value
                    ),
                    col.name_span,
                )
                .secondary(id.span, "the unit is identified by this column")
                .help(format!("declare `column {} : id`", id.value)),
            );
        }
        _ => {}
    }
    let contribution = ds.contributions.first();
    match bounds.rows {
        Some(r) => Some(UnitBound {
            user: true,
            rows: r,
            groups: bounds.groups,
            rows_per_group: bounds.per_group,
        }),
        None => {
            if contribution.is_none_or(|cb| cb.rows_per_unit.is_empty()) {
                let span = contribution.map_or(ds.name.span, |cb| cb.span);
                c.error(
                    Diagnostic::new(
                        Code::UnboundedContribution,
                        format!(
                            "the unit is a user, but `{}` does not bound how many rows a user contributes: one user's rows can move any statistic without limit",
                            ds.name.value
                        ),
                        span,
                    )
                    .label("no rows_per_unit bound")
                    .secondary(unit_span, "user-level unit declared here")
                    .help(format!(
                        "add `contribution {{ rows_per_unit N }}` to `{}`: the runtime keeps at most N random rows per user",
                        ds.name.value
                    )),
                );
            }
            None
        }
    }
}

fn check_bounds(c: &mut Checker, b: &ast::Bounds, int: bool) -> Option<(f64, f64)> {
    let mut value = |bound: &ast::Bound| -> Option<f64> {
        match bound {
            ast::Bound::Public { value } => {
                if !value.value.is_finite() {
                    c.error(
                        Diagnostic::new(
                            Code::InvalidParameter,
                            format!("a public bound must be finite, found {}", value.value),
                            value.span,
                        )
                        .help("clamp bounds are finite public numbers, e.g. `in [0, 3600]`"),
                    );
                    return None;
                }
                if int && value.value.fract() != 0.0 {
                    c.error(
                        Diagnostic::new(
                            Code::InvalidParameter,
                            format!(
                                "an int column's bounds must be whole numbers, found {}",
                                value.value
                            ),
                            value.span,
                        )
                        .help("round the bound outward, or declare the column `float`"),
                    );
                    return None;
                }
                Some(value.value)
            }
            ast::Bound::FromData { expr } => {
                data_dependent(
                    c,
                    expr.span,
                    "this clamp bound",
                    "clamp to public bounds fixed in advance, e.g. `in [0, 3600]`",
                );
                None
            }
        }
    };
    let lo = value(&b.lo);
    let hi = value(&b.hi);
    let (lo, hi) = (lo?, hi?);
    if lo >= hi {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!(
                    "the lower bound {} must be below the upper bound {}",
                    fmt_num(lo),
                    fmt_num(hi)
                ),
                b.span,
            )
            .help("write the bounds as `in [lo, hi]` with lo < hi"),
        );
        return None;
    }
    Some((lo, hi))
}
