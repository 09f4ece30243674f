//! The contract's changes, and the datasets' and publications' diffs:
//! every bound a unit's contribution is held to is part of the contract.

use super::*;

pub(super) fn contract_changes(old: &CheckedPlan, new: &CheckedPlan) -> Vec<ContractChange> {
    let mut out = Vec::new();
    let mut push = |field: &str, o: Value, n: Value, breaks: bool, why: &str| {
        if o != n {
            out.push(ContractChange {
                field: field.into(),
                old: o,
                new: n,
                breaks_comparison: breaks,
                why: why.into(),
            });
        }
    };
    // who is protected and how neighbours differ: the one definition the
    // ledger's upgrade check uses too
    let (oc, nc) = (contract_of(old), contract_of(new));
    for c in oc.guarantee.changes(&nc.guarantee) {
        push(&c.field, json!(c.old), json!(c.new), true, &c.why);
    }
    push(
        "delta",
        json!(old.budget.delta),
        json!(new.budget.delta),
        true,
        "ε is only comparable at the same δ: both plans are compared below at the smaller δ",
    );
    push(
        "budget_epsilon",
        json!(old.budget.epsilon),
        json!(new.budget.epsilon),
        false,
        "the limit the plan must fit changed",
    );
    push(
        "accountant",
        json!(old.accountant_requested),
        json!(new.accountant_requested),
        false,
        "the accountant each plan's own claim uses changed: the comparison below uses one accountant for both",
    );
    push(
        "population",
        json!(old.population),
        json!(new.population),
        false,
        "the declared population (used to judge δ against 1/n) changed",
    );
    // every bound of a dataset (contribution bounds, clamps, domains,
    // horizons): the one `Contract::changes` the ledger's upgrade records
    for c in oc.changes(&nc) {
        if !c.guarantee {
            // a dataset's field as the datasets section shows it (numbers
            // as numbers); a horizon as the contract words it
            let shown = |p: &CheckedPlan, text: &Option<String>| {
                let (name, item) = c
                    .field
                    .strip_prefix("dataset ")
                    .and_then(|f| f.split_once(": "))
                    .unwrap_or_default();
                let field = p
                    .dataset(name)
                    .map(dataset_fields)
                    .and_then(|f| f.into_iter().find(|(k, _)| k == item).map(|(_, v)| v));
                field.unwrap_or_else(|| json!(text))
            };
            push(
                &c.field,
                shown(old, &c.old),
                shown(new, &c.new),
                false,
                &c.why,
            );
        }
    }
    out
}

/// The contract of a checked plan as dpplan-vocab states it: per dataset
/// its contribution bounds, each column's kind, clamp bounds or domain, and
/// the horizon of each windowed query or cumulative count (its time column,
/// windows per unit and rows per window as the checker resolved them).
pub(super) fn contract_of(p: &CheckedPlan) -> dpplan_vocab::contract::Contract {
    use dpplan_vocab::contract::{ColumnContract, Contract, DatasetContract, Horizon};
    let horizon = |q: &QueryReport| {
        let s = q.spec.as_ref()?;
        let (column, windows_per_unit, rows_per_window) = match (&s.window, &s.cumulative) {
            (Some(w), _) => (&w.column, w.windows_per_unit, w.rows_per_window),
            (None, Some(c)) => (&c.column, c.windows_per_unit, c.rows_per_window),
            (None, None) => return None,
        };
        Some((
            q.name.clone(),
            Horizon {
                time_column: column.clone(),
                windows_per_unit,
                rows_per_window,
            },
        ))
    };
    let dataset = |d: &DatasetSpec| DatasetContract {
        rows_per_unit: d.rows_per_unit,
        groups_per_unit: d.groups_per_unit,
        rows_per_group: d.rows_per_group,
        horizons: p
            .queries
            .iter()
            .filter(|q| q.dataset == d.name)
            .filter_map(horizon)
            .collect(),
        columns: d
            .columns
            .iter()
            .map(|c| {
                let contract = ColumnContract {
                    kind: c.kind.name().into(),
                    bounds: c.bounds,
                    domain: c.domain.clone(),
                };
                (c.name.clone(), contract)
            })
            .collect(),
    };
    Contract {
        guarantee: dpplan_vocab::contract::Guarantee {
            unit: p.unit.kind,
            unit_id: p.unit.id.clone(),
            adjacency: p.adjacency,
        },
        datasets: p
            .datasets
            .iter()
            .map(|d| (d.name.clone(), dataset(d)))
            .collect(),
    }
}

/// A dataset field that is part of the contract: how much one unit may
/// contribute (contribution bounds, windows), or a column's kind, clamp
/// bounds or domain.
pub(super) fn is_contract_bound(field: &str) -> bool {
    matches!(
        field,
        "rows_per_unit"
            | "groups_per_unit"
            | "rows_per_group"
            | "windows_per_unit"
            | "rows_per_window"
    ) || (field.starts_with("column ")
        && (field.ends_with(": bounds")
            || field.ends_with(": domain")
            || field.ends_with(": kind")))
}

pub(super) fn dataset_fields(d: &DatasetSpec) -> Vec<(String, Value)> {
    let mut f = vec![
        ("source".to_string(), json!(d.source)),
        ("rows_per_unit".to_string(), json!(d.rows_per_unit)),
        ("groups_per_unit".to_string(), json!(d.groups_per_unit)),
        ("rows_per_group".to_string(), json!(d.rows_per_group)),
        ("windows_per_unit".to_string(), json!(d.windows_per_unit)),
        ("rows_per_window".to_string(), json!(d.rows_per_window)),
        ("invalid_rows".to_string(), json!(d.invalid_rows.name())),
        ("sample".to_string(), json!(d.sample)),
    ];
    for c in &d.columns {
        f.push((format!("column {}: kind", c.name), json!(c.kind.name())));
        f.push((format!("column {}: bounds", c.name), json!(c.bounds)));
        f.push((format!("column {}: domain", c.name), json!(c.domain)));
    }
    f
}

pub(super) fn dataset_diffs(old: &CheckedPlan, new: &CheckedPlan) -> Vec<ItemDiff> {
    let mut out = Vec::new();
    for nd in &new.datasets {
        let od = old.dataset(&nd.name);
        let changes = field_changes(od.map(dataset_fields), Some(dataset_fields(nd)));
        if od.is_none() || !changes.is_empty() {
            out.push(ItemDiff {
                name: nd.name.clone(),
                status: if od.is_some() {
                    Status::Changed
                } else {
                    Status::Added
                },
                changes,
            });
        }
    }
    for od in &old.datasets {
        if new.dataset(&od.name).is_none() {
            out.push(ItemDiff {
                name: od.name.clone(),
                status: Status::Removed,
                changes: field_changes(Some(dataset_fields(od)), None),
            });
        }
    }
    out
}

pub(super) fn publish_diffs(old: &CheckedPlan, new: &CheckedPlan) -> Vec<ItemDiff> {
    let mut out = Vec::new();
    for np in &new.publishes {
        match old.publishes.iter().find(|p| p.name == np.name) {
            Some(op) if op.source == np.source => {}
            Some(op) => out.push(ItemDiff {
                name: np.name.clone(),
                status: Status::Changed,
                changes: vec![Change {
                    field: "source".into(),
                    old: json!(op.source),
                    new: json!(np.source),
                }],
            }),
            None => out.push(ItemDiff {
                name: np.name.clone(),
                status: Status::Added,
                changes: vec![Change {
                    field: "source".into(),
                    old: Value::Null,
                    new: json!(np.source),
                }],
            }),
        }
    }
    for op in &old.publishes {
        if !new.publishes.iter().any(|p| p.name == op.name) {
            out.push(ItemDiff {
                name: op.name.clone(),
                status: Status::Removed,
                changes: vec![Change {
                    field: "source".into(),
                    old: json!(op.source),
                    new: Value::Null,
                }],
            });
        }
    }
    out
}

/// The fields that differ between two field lists (in the new list's
/// order, then the old list's fields the new one lacks); a missing side is
/// `null`.
pub(super) fn field_changes(
    old: Option<Vec<(String, Value)>>,
    new: Option<Vec<(String, Value)>>,
) -> Vec<Change> {
    let old = old.unwrap_or_default();
    let new = new.unwrap_or_default();
    let get = |l: &[(String, Value)], k: &str| {
        l.iter()
            .find(|(f, _)| f == k)
            .map_or(Value::Null, |(_, v)| v.clone())
    };
    let mut out = Vec::new();
    for (k, v) in &new {
        let o = get(&old, k);
        if &o != v {
            out.push(Change {
                field: k.clone(),
                old: o,
                new: v.clone(),
            });
        }
    }
    for (k, v) in &old {
        if !new.iter().any(|(f, _)| f == k) && !v.is_null() {
            out.push(Change {
                field: k.clone(),
                old: v.clone(),
                new: Value::Null,
            });
        }
    }
    out
}
