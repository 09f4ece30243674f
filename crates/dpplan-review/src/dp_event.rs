//! `dpplan export`: a checked plan's whole accounted schedule as a
//! dp_accounting `DpEvent` tree (dpplan_accounting::dp_event), with what
//! each release became and how faithfully, so that another accountant can
//! compose exactly what dpplan composed.
//!
//! The document (format `dpplan-dp-event`, version 1):
//! * `event`: the tree, a `ComposedDpEvent` of one event per accounted
//!   release of every query, in the checker's order (a `SelfComposedDpEvent`
//!   for a release composed more than once);
//! * `neighboring_relation`: the relation to compose the events under in
//!   dp_accounting (`ADD_OR_REMOVE_ONE`): every event is normalised to a shift
//!   of its sensitivity, which dpplan derived under the plan's own adjacency;
//! * `delta`: the δ dpplan composed the events at, and `selection_delta`:
//!   the δ of the thresholds of keys from the data, added to the total
//!   outside the composition (no DpEvent stands for it);
//! * `epsilon`, `accountant`: dpplan's claim for the tree at `delta`;
//! * `releases`: per release its query, part, count, event class, fidelity
//!   (`exact` or `sound`) and why.

use dpplan_accounting as acct;
use dpplan_accounting::dp_event::{release_event, DpEvent, Fidelity};
use dpplan_check::CheckedPlan;
use serde::Serialize;
use serde_json::{json, Value};

/// The format's name and version (bumped when a field changes).
pub const FORMAT: &str = "dpplan-dp-event";
pub const VERSION: u32 = 1;

/// One accounted release, as exported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportedRelease {
    pub query: String,
    pub part: String,
    pub count: u64,
    pub class_name: String,
    pub fidelity: Fidelity,
    pub why: String,
}

/// The plan's DpEvent tree and its releases; an error when a release's
/// mechanism is invalid (the plan then has errors and claims nothing).
pub fn export(plan: &CheckedPlan) -> Result<(DpEvent, Vec<ExportedRelease>), String> {
    let mut events = Vec::new();
    let mut rows = Vec::new();
    for q in &plan.queries {
        for p in &q.parts {
            let Some(m) = p.accounted else { continue };
            let r = acct::Release {
                sample: q.sampled(),
                mechanism: m,
                count: q.accounted_releases,
            };
            let (e, fidelity, why) =
                release_event(&r).map_err(|e| format!("query `{}` ({}): {e}", q.name, p.role))?;
            let leaf = match &e {
                DpEvent::SelfComposed { event, .. } => event.class_name().to_string(),
                other => other.class_name().to_string(),
            };
            rows.push(ExportedRelease {
                query: q.name.clone(),
                part: p.role.clone(),
                count: r.count,
                class_name: leaf,
                fidelity,
                why: why.to_string(),
            });
            events.push(e);
        }
    }
    Ok((DpEvent::Composed { events }, rows))
}

/// The whole document (see the module's documentation).
pub fn document(plan: &CheckedPlan) -> Result<Value, String> {
    let (event, releases) = export(plan)?;
    let selection_delta: f64 = plan
        .queries
        .iter()
        .filter_map(|q| q.selection.as_ref().map(|s| s.delta))
        .fold(0.0, |a, d| a + d);
    let exact = releases.iter().all(|r| r.fidelity == Fidelity::Exact);
    Ok(json!({
        "format": FORMAT,
        "version": VERSION,
        "plan": plan.name,
        "adjacency": plan.adjacency,
        "neighboring_relation": "ADD_OR_REMOVE_ONE",
        "delta": plan.accounting_delta(),
        "selection_delta": selection_delta,
        "epsilon": plan.total.as_ref().map(|t| t.epsilon),
        "accountant": plan.total.as_ref().map(|t| t.accountant),
        "exact": exact,
        "releases": releases,
        "event": event.to_json(),
    }))
}
