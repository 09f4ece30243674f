//! One query of the JSON output, written directly with its keys in sorted
//! order: the same bytes as `serde_json::to_value(query)` printed (a
//! `Value`'s objects are sorted maps), without building that `Value`, which
//! cost a sixth of `dpplan check` at 10⁵ queries. Every field of the
//! report types is listed here; the test below compares both ways on every
//! example, so a field added to the report and not here fails it.

use dpplan_check::{AccuracyReport, CostReport, MechanismReport, PartReport, QueryReport};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// A `QueryReport` as the JSON output writes it.
pub(crate) struct SortedQuery<'a>(pub(crate) &'a QueryReport);

struct Mechanism<'a>(&'a MechanismReport);
struct Part<'a>(&'a PartReport);
struct Cost<'a>(&'a CostReport);
struct Accuracy<'a>(&'a AccuracyReport);
struct Selection<'a>(&'a dpplan_check::SelectionSpec);

impl Serialize for Selection<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("auto", &x.auto)?;
        m.serialize_entry("column", &x.column)?;
        m.serialize_entry("delta", &x.delta)?;
        m.serialize_entry("keys_per_unit", &x.keys_per_unit)?;
        m.serialize_entry("release_probability", &x.release_probability)?;
        m.serialize_entry("rows_per_key", &x.rows_per_key)?;
        m.serialize_entry("threshold", &x.threshold)?;
        m.end()
    }
}

impl Serialize for SortedQuery<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let q = self.0;
        let mut m = s.serialize_map(None)?;
        if let Some(a) = &q.accuracy {
            m.serialize_entry("accuracy", &Accuracy(a))?;
        }
        m.serialize_entry("aggregation", &q.aggregation)?;
        m.serialize_entry("dataset", &q.dataset)?;
        m.serialize_entry("l1", &q.l1)?;
        m.serialize_entry("l2", &q.l2)?;
        m.serialize_entry("mechanism", &Mechanism(&q.mechanism))?;
        m.serialize_entry("name", &q.name)?;
        let parts: Vec<Part> = q.parts.iter().map(Part).collect();
        m.serialize_entry("parts", &parts)?;
        m.serialize_entry("per_release", &q.per_release.as_ref().map(Cost))?;
        m.serialize_entry("releases", &q.releases)?;
        m.serialize_entry("schedule", &q.schedule)?;
        if let Some(sel) = &q.selection {
            // plain data with sorted field names: serde's order is the
            // declared one, so it is written key by key
            m.serialize_entry("selection", &Selection(sel))?;
        }
        m.serialize_entry("total", &q.total.as_ref().map(Cost))?;
        m.end()
    }
}

impl Serialize for Mechanism<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("calibration", &x.calibration)?;
        m.serialize_entry("kind", x.kind_name())?;
        m.serialize_entry("scale", &x.scale)?;
        m.serialize_entry("sigma", &x.sigma)?;
        m.end()
    }
}

impl Serialize for Part<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("ci95_half_width", &p.ci95_half_width)?;
        m.serialize_entry("coords", &p.coords)?;
        m.serialize_entry("derivation", &p.derivation)?;
        m.serialize_entry("l1", &p.l1)?;
        m.serialize_entry("l2", &p.l2)?;
        m.serialize_entry("mechanism", &Mechanism(&p.mechanism))?;
        m.serialize_entry("noise_std", &p.noise_std)?;
        m.serialize_entry("role", &p.role)?;
        m.serialize_entry("statistic", &p.statistic)?;
        m.end()
    }
}

impl Serialize for Cost<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("accountant", &c.accountant)?;
        m.serialize_entry("delta", &c.delta)?;
        m.serialize_entry("epsilon", &c.epsilon)?;
        m.serialize_entry("rho", &c.rho)?;
        m.end()
    }
}

impl Serialize for Accuracy<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("achieved", &a.achieved)?;
        m.serialize_entry("at_most", &a.at_most)?;
        m.serialize_entry("measure", &a.measure)?;
        m.serialize_entry("met", &a.met)?;
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example and corpus plan: each query written directly is the
    /// query's `Value` printed, byte for byte (pretty and compact).
    #[test]
    fn sorted_query_is_the_value_of_the_query() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let mut files = Vec::new();
        for dir in ["examples", "tests/corpus"] {
            collect(&std::path::Path::new(root).join(dir), &mut files);
        }
        let mut queries = 0;
        let mut with_accuracy = 0;
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            let Some(report) = dpplan_check::analyze(&text).report else {
                continue;
            };
            for q in &report.queries {
                let value = serde_json::to_value(q).unwrap();
                assert_eq!(
                    serde_json::to_string_pretty(&SortedQuery(q)).unwrap(),
                    serde_json::to_string_pretty(&value).unwrap(),
                    "{}: {}",
                    f.display(),
                    q.name
                );
                assert_eq!(
                    serde_json::to_string(&SortedQuery(q)).unwrap(),
                    value.to_string()
                );
                queries += 1;
                with_accuracy += usize::from(q.accuracy.is_some());
            }
        }
        assert!(
            queries > 50 && with_accuracy > 0,
            "{queries} {with_accuracy}"
        );
    }

    fn collect(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                collect(&p, out);
            } else if p.extension().is_some_and(|x| x == "dpplan") {
                out.push(p);
            }
        }
    }
}
