//! A `where` filter in the statement: its checks, the columns its leaves
//! read, and the predicate on step 1's columns.

use std::collections::BTreeMap;

use dpplan_engine::EngineError;
use dpplan_plan::Dataset;
use dpplan_vocab::rows::Filter;
use dpplan_vocab::{ColumnKind, Comparison};

use super::{column, double, quote, schema, Param};

/// Every column of a filter is declared, a comparison's a number and an
/// `in` set's a category with a public domain (what the checker
/// guarantees; an executable plan edited by hand is refused here).
pub(super) fn check_filter(ds: &Dataset, f: &Filter) -> Result<(), EngineError> {
    for name in f.columns() {
        column(ds, name)?;
        quote(name)?;
    }
    match f {
        Filter::And { items } | Filter::Or { items } => {
            items.iter().try_for_each(|i| check_filter(ds, i))
        }
        Filter::Not { inner } => check_filter(ds, inner),
        Filter::Compare {
            column: c, value, ..
        } => {
            if !matches!(column(ds, c)?.ty, ColumnKind::Int | ColumnKind::Float) {
                return Err(schema(format!(
                    "column `{c}` is compared with a number but is not a declared number"
                )));
            }
            if value.is_nan() {
                return Err(schema(format!("column `{c}` is compared with NaN")));
            }
            Ok(())
        }
        Filter::In { .. } => Ok(()),
    }
}

/// The filter's columns read by its comparisons (`compared`) or by its
/// `in` sets (`!compared`), added to `out` in order of first use.
pub(super) fn leaf_columns(f: &Filter, compared: bool, out: &mut Vec<String>) {
    let column = match f {
        Filter::And { items } | Filter::Or { items } => {
            items.iter().for_each(|i| leaf_columns(i, compared, out));
            return;
        }
        Filter::Not { inner } => return leaf_columns(inner, compared, out),
        Filter::Compare { column, .. } if compared => column,
        Filter::In { column, .. } if !compared => column,
        Filter::Compare { .. } | Filter::In { .. } => return,
    };
    if !out.contains(column) {
        out.push(column.clone());
    }
}

/// The filter as a predicate on step 1's columns: a comparison reads the
/// valid (or imputed) number `n{i}` before it is clamped, as the embedded
/// engine's; an `in` set is false for a null or empty field (never NULL,
/// so that `not` stays two-valued). The sets are bound parameters
/// (`:fv0`…).
pub(super) fn predicate(
    f: &Filter,
    numbers: &[&dpplan_plan::Column],
    ins: &[String],
    params: &mut BTreeMap<String, Param>,
) -> String {
    let all = |items: &[Filter], op: &str, params: &mut BTreeMap<String, Param>| {
        let parts: Vec<String> = items
            .iter()
            .map(|i| predicate(i, numbers, ins, params))
            .collect();
        match parts.is_empty() {
            // an empty `and` holds, an empty `or` does not
            true if op == "AND" => "TRUE".to_string(),
            true => "FALSE".to_string(),
            false => format!("({})", parts.join(&format!(" {op} "))),
        }
    };
    match f {
        Filter::And { items } => all(items, "AND", params),
        Filter::Or { items } => all(items, "OR", params),
        Filter::Not { inner } => format!("(NOT {})", predicate(inner, numbers, ins, params)),
        Filter::Compare { column, cmp, value } => {
            let i = numbers.iter().position(|c| c.name == *column).unwrap_or(0);
            let op = match cmp {
                Comparison::Lt => "<",
                Comparison::Le => "<=",
                Comparison::Gt => ">",
                Comparison::Ge => ">=",
                Comparison::Eq => "=",
                Comparison::Ne => "<>",
            };
            format!("(n{i} {op} {})", double(*value))
        }
        Filter::In { column, values } => {
            let m = ins.iter().position(|c| c == column).unwrap_or(0);
            let name = format!(
                "fv{}",
                params.keys().filter(|k| k.starts_with("fv")).count()
            );
            let p = format!("coalesce(array_contains(:{name}, w{m}), FALSE)");
            params.insert(name, Param::Strings(values.clone()));
            p
        }
    }
}
