//! Query by query: the fields and parts that differ between two versions.

use super::*;
use std::sync::Arc;

pub(super) fn query_fields(q: &QueryReport) -> Vec<(String, Value)> {
    let mut f = vec![
        ("dataset".to_string(), json!(q.dataset)),
        ("aggregation".to_string(), json!(q.aggregation)),
    ];
    if let Some(s) = &q.spec {
        f.push(("column".into(), json!(s.column)));
        f.push(("by".into(), json!(s.by)));
        f.push(("bounds".into(), json!(s.bounds)));
        f.push(("groups".into(), json!(s.groups)));
    }
    f.push(("schedule".into(), json!(q.schedule)));
    // `release after`: when each slot is released, not what it costs
    // (null, the same on both sides, when neither plan states one)
    if let Some(s) = &q.spec {
        let delay = s.schedule.release_after_seconds;
        f.push((
            "release_after".into(),
            json!(delay.map(dpplan_check::schedule::describe_seconds)),
        ));
    }
    // `postprocess`: free, but what the reader sees (empty on both sides
    // when neither plan states it)
    if q.spec.is_some() {
        let steps: Vec<&str> = q.postprocess().iter().map(|p| p.name()).collect();
        let steps = if steps.is_empty() {
            Value::Null
        } else {
            json!(steps)
        };
        f.push(("postprocess".into(), steps));
    }
    // a cumulative count's mechanism (`tree` or `factorization`; null,
    // the same on both sides, for any other query)
    if let Some(s) = &q.spec {
        let m = s.cumulative.as_ref().map(|c| c.mechanism.name());
        f.push(("cumulative_mechanism".into(), json!(m)));
    }
    f.push(("releases".into(), json!(q.releases)));
    f
}

pub(super) fn part_fields(p: &PartReport) -> Vec<(String, Value)> {
    vec![
        ("noise".into(), json!(p.mechanism.kind_name())),
        ("scale".into(), json!(p.mechanism.scale)),
        ("sigma".into(), json!(p.mechanism.sigma)),
        ("calibration".into(), json!(p.mechanism.calibration)),
        ("l1".into(), json!(p.l1)),
        ("l2".into(), json!(p.l2)),
        ("coords".into(), json!(p.coords)),
        ("noise_std".into(), json!(p.noise_std)),
        ("ci95_half_width".into(), json!(p.ci95_half_width)),
    ]
}

pub(super) fn part_diff(o: Option<&PartReport>, n: Option<&PartReport>) -> Option<PartDiff> {
    let (role, status) = match (o, n) {
        (Some(_), Some(n)) => (n.role.clone(), Status::Changed),
        (None, Some(n)) => (n.role.clone(), Status::Added),
        (Some(o), None) => (o.role.clone(), Status::Removed),
        (None, None) => return None,
    };
    let changes = field_changes(o.map(part_fields), n.map(part_fields));
    let od: &[Arc<str>] = o.map_or(&[], |p| &p.derivation);
    let nd: &[Arc<str>] = n.map_or(&[], |p| &p.derivation);
    let only_in = |a: &[Arc<str>], b: &[Arc<str>]| -> Vec<String> {
        a.iter()
            .filter(|l| !b.contains(l))
            .map(|l| l.to_string())
            .collect()
    };
    let derivation_removed = only_in(od, nd);
    let derivation_added = only_in(nd, od);
    if status == Status::Changed
        && changes.is_empty()
        && derivation_removed.is_empty()
        && derivation_added.is_empty()
    {
        return None;
    }
    Some(PartDiff {
        role,
        status,
        changes,
        derivation_removed,
        derivation_added,
    })
}

/// The difference of two versions of a query; `None` when they are the same.
pub(super) fn query_diff(o: Option<&QueryReport>, n: Option<&QueryReport>) -> Option<QueryDiff> {
    let (name, status) = match (o, n) {
        (Some(_), Some(n)) => (n.name.clone(), Status::Changed),
        (None, Some(n)) => (n.name.clone(), Status::Added),
        (Some(o), None) => (o.name.clone(), Status::Removed),
        (None, None) => return None,
    };
    let changes = field_changes(o.map(query_fields), n.map(query_fields));
    let empty: &[PartReport] = &[];
    let op = o.map_or(empty, |q| &q.parts);
    let np = n.map_or(empty, |q| &q.parts);
    let mut parts = Vec::new();
    for p in np {
        parts.extend(part_diff(op.iter().find(|x| x.role == p.role), Some(p)));
    }
    for p in op {
        if !np.iter().any(|x| x.role == p.role) {
            parts.extend(part_diff(Some(p), None));
        }
    }
    let epsilon_alone = Pair {
        old: o.and_then(|q| q.total.as_ref()).map(|t| t.epsilon),
        new: n.and_then(|q| q.total.as_ref()).map(|t| t.epsilon),
    };
    if status == Status::Changed
        && changes.is_empty()
        && parts.is_empty()
        && epsilon_alone.old == epsilon_alone.new
        && releases_of(o) == releases_of(n)
    {
        return None;
    }
    Some(QueryDiff {
        name,
        status,
        changes,
        parts,
        epsilon_alone,
        leave_one_in: None,
    })
}
