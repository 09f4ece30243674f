//! What a privacy claim is about: the contract of a plan.
//!
//! A claim "ε, δ" means nothing without **who** is protected (the unit and
//! the column that identifies it) and **how** neighbouring datasets differ
//! (the adjacency): that is the [`Guarantee`]. Two claims about different
//! guarantees bound different things and cannot be composed or compared.
//! Around it, a plan's datasets state how much one unit may contribute
//! (contribution bounds, clamps, domains, the time column of its windows):
//! the rest of the [`Contract`]. Those are parameters of the mechanisms —
//! each release is accounted under its own — so releases under different
//! bounds but the same guarantee still compose.
//!
//! One home for both: `dpplan diff` names a guarantee change with
//! [`Guarantee::changes`], and the ledger records the contract in force
//! and refuses an upgrade whose guarantee differs with the same function.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Adjacency, UnitKind};

/// Who is protected, and how neighbouring datasets differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guarantee {
    pub unit: UnitKind,
    /// The column that identifies a user (`unit user by <column>`).
    pub unit_id: Option<String>,
    pub adjacency: Adjacency,
}

/// One item of a contract that differs between two plans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractChange {
    /// `unit`, `unit_id`, `adjacency`, or `dataset <name>: <item>`.
    pub field: String,
    /// The values as a plan writes them (`None`: not declared).
    pub old: Option<String>,
    pub new: Option<String>,
    /// A change of the guarantee: the two claims bound different things.
    pub guarantee: bool,
    /// What the change means, in words.
    pub why: String,
}

impl Guarantee {
    /// The items of the guarantee that differ from `new`'s, in a fixed
    /// order (unit, unit id, adjacency).
    pub fn changes(&self, new: &Guarantee) -> Vec<ContractChange> {
        let mut out = Vec::new();
        let mut push = |field: &str, old: Option<String>, new: Option<String>, why: &str| {
            if old != new {
                out.push(ContractChange {
                    field: field.into(),
                    old,
                    new,
                    guarantee: true,
                    why: why.into(),
                });
            }
        };
        push(
            "unit",
            Some(self.unit.name().into()),
            Some(new.unit.name().into()),
            "what one protected unit is changed (a row, an event or a whole user): the two ε protect different things",
        );
        push(
            "unit_id",
            self.unit_id.clone(),
            new.unit_id.clone(),
            "the column that identifies a user changed: the protected unit is a different one",
        );
        push(
            "adjacency",
            Some(self.adjacency.name().into()),
            Some(new.adjacency.name().into()),
            "the neighbouring datasets changed (add/remove one unit, or replace one): the same ε means a different guarantee",
        );
        out
    }
}

/// A plan's contract: its guarantee, and per dataset what one unit may
/// contribute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    pub guarantee: Guarantee,
    pub datasets: BTreeMap<String, DatasetContract>,
}

/// What one unit may contribute to a dataset, as the plan states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetContract {
    pub rows_per_unit: Option<u64>,
    pub groups_per_unit: Option<u64>,
    pub rows_per_group: Option<u64>,
    /// Per windowed query or cumulative count on this dataset: its time
    /// column, the windows a unit is kept in and its rows in each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub horizons: BTreeMap<String, Horizon>,
    /// Per column: its kind and its clamp bounds or domain.
    pub columns: BTreeMap<String, ColumnContract>,
}

/// A windowed query's (or a tree's) horizon bounds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Horizon {
    pub time_column: String,
    pub windows_per_unit: u64,
    pub rows_per_window: u64,
}

/// A column's kind and its public bounds or domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnContract {
    pub kind: String,
    pub bounds: Option<[f64; 2]>,
    pub domain: Option<Vec<String>>,
}

fn text<T: std::fmt::Debug>(x: &Option<T>) -> Option<String> {
    x.as_ref()
        .map(|v| format!("{v:?}").trim_matches('"').to_string())
}

impl Contract {
    /// Every item that differs from `new`'s: the guarantee's first
    /// ([`Guarantee::changes`]), then each dataset's bounds, horizons and
    /// columns, by name.
    pub fn changes(&self, new: &Contract) -> Vec<ContractChange> {
        let mut out = self.guarantee.changes(&new.guarantee);
        let names: std::collections::BTreeSet<&String> =
            self.datasets.keys().chain(new.datasets.keys()).collect();
        for name in names {
            let (o, n) = (self.datasets.get(name), new.datasets.get(name));
            let mut push = |item: String, old: Option<String>, new: Option<String>| {
                if old != new {
                    let what = if item.starts_with("horizon of ") {
                        "a windowed query's horizon (its windows per unit, rows per window) changed"
                    } else if item.ends_with(": bounds") {
                        "a column's clamp bounds changed"
                    } else if item.ends_with(": domain") {
                        "a category's domain changed"
                    } else if item.ends_with(": kind") {
                        "a column's kind changed"
                    } else {
                        "a contribution bound changed"
                    };
                    out.push(ContractChange {
                        field: format!("dataset {name}: {item}"),
                        old,
                        new,
                        guarantee: false,
                        why: format!("{what}: each release is accounted under its own bounds, with the same unit and adjacency"),
                    });
                }
            };
            let fields = |d: Option<&DatasetContract>| -> BTreeMap<String, Option<String>> {
                let mut f = BTreeMap::new();
                let Some(d) = d else { return f };
                f.insert("rows_per_unit".into(), text(&d.rows_per_unit));
                f.insert("groups_per_unit".into(), text(&d.groups_per_unit));
                f.insert("rows_per_group".into(), text(&d.rows_per_group));
                for (q, h) in &d.horizons {
                    f.insert(
                        format!("horizon of {q}"),
                        Some(format!(
                            "time column {}, windows_per_unit {}, rows_per_window {}",
                            h.time_column, h.windows_per_unit, h.rows_per_window
                        )),
                    );
                }
                for (c, col) in &d.columns {
                    f.insert(format!("column {c}: kind"), Some(col.kind.clone()));
                    f.insert(format!("column {c}: bounds"), text(&col.bounds));
                    f.insert(format!("column {c}: domain"), text(&col.domain));
                }
                f
            };
            let (fo, fnew) = (fields(o), fields(n));
            let items: std::collections::BTreeSet<&String> = fo.keys().chain(fnew.keys()).collect();
            for item in items {
                push(
                    item.clone(),
                    fo.get(item).cloned().flatten(),
                    fnew.get(item).cloned().flatten(),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(unit: UnitKind, id: Option<&str>, adjacency: Adjacency) -> Guarantee {
        Guarantee {
            unit,
            unit_id: id.map(String::from),
            adjacency,
        }
    }

    #[test]
    fn each_guarantee_item_is_named_once() {
        let base = g(UnitKind::User, Some("uid"), Adjacency::AddRemove);
        assert!(base.changes(&base).is_empty());
        let fields = |n: &Guarantee| -> Vec<String> {
            base.changes(n).into_iter().map(|c| c.field).collect()
        };
        assert_eq!(
            fields(&g(UnitKind::User, Some("email"), Adjacency::AddRemove)),
            ["unit_id"]
        );
        assert_eq!(
            fields(&g(UnitKind::Row, None, Adjacency::AddRemove)),
            ["unit", "unit_id"]
        );
        assert_eq!(
            fields(&g(UnitKind::User, Some("uid"), Adjacency::Replace)),
            ["adjacency"]
        );
        assert!(base
            .changes(&g(UnitKind::Row, None, Adjacency::Replace))
            .iter()
            .all(|c| c.guarantee));
    }

    #[test]
    fn a_dataset_bound_is_named_and_is_not_the_guarantee() {
        let d = DatasetContract {
            rows_per_unit: Some(5),
            groups_per_unit: None,
            rows_per_group: None,
            horizons: BTreeMap::new(),
            columns: BTreeMap::from([(
                "fare".to_string(),
                ColumnContract {
                    kind: "float".into(),
                    bounds: Some([0.0, 100.0]),
                    domain: None,
                },
            )]),
        };
        let c = Contract {
            guarantee: g(UnitKind::User, Some("uid"), Adjacency::AddRemove),
            datasets: BTreeMap::from([("trips".to_string(), d.clone())]),
        };
        assert!(c.changes(&c).is_empty());
        let mut n = c.clone();
        let t = n.datasets.get_mut("trips").unwrap();
        t.rows_per_unit = Some(6);
        t.columns.get_mut("fare").unwrap().bounds = Some([0.0, 50.0]);
        let ch = c.changes(&n);
        let fields: Vec<&str> = ch.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "dataset trips: column fare: bounds",
                "dataset trips: rows_per_unit"
            ]
        );
        assert!(ch.iter().all(|c| !c.guarantee));
        assert_eq!(ch[1].old.as_deref(), Some("5"));
        assert_eq!(ch[1].new.as_deref(), Some("6"));
        assert!(ch[0].why.starts_with("a column's clamp bounds changed"));
        assert!(ch[1].why.starts_with("a contribution bound changed"));
    }
}
