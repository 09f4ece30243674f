//! One query: its aggregation and schedule, the sensitivity derived for
//! each noisy part (and a declared one checked against it), and its noise
//! (DP003, DP005, DP007, DP013–DP017); what it reads — its target, value
//! bounds and groups — is resolved in `target.rs`.

use foldhash::HashMap;

use dpplan_diagnostics::{Code, Diagnostic, Span};
use dpplan_syntax::ast::{self, AccuracyMeasure, Adjacency, AggKind, ColumnType, NoiseKind};
use dpplan_vocab::{PostStep, ScheduleKind, Statistic};

use super::datasets::DatasetInfo;
use super::noise::{noise_kind, noise_scale};
use super::rows::{self, Cells};
use super::shape::{derive_parts, drops_rows, Shape};
use super::target::{describe_target, groups, target, unit_id, value_bounds};
use super::{duplicate, valid_positive, Checker};
use crate::report::{QuerySpec, ScheduleSpec};
use crate::schedule::{self, ScheduleError};
use dpplan_mechanisms::sensitivity::{fmt_num, Derived, UnitBound};

/// How a part's noise is set before calibration.
#[derive(Debug, Clone)]
pub(super) enum Scale {
    Fixed(f64),
    /// Calibrated from a per-release ε (and δ).
    FromEpsilon {
        epsilon: f64,
        delta: Option<f64>,
    },
    /// Calibrated with the other `auto` parts so that the plan fits.
    Auto {
        weight: f64,
    },
    /// `auto` with an `accuracy` requirement: the largest scale that meets
    /// it, whatever the budget.
    FromAccuracy,
}

/// A query's `accuracy <measure> <= <value>`, validated.
#[derive(Debug, Clone, Copy)]
pub(super) struct Accuracy {
    pub(super) measure: AccuracyMeasure,
    pub(super) at_most: f64,
    /// The whole statement.
    pub(super) span: Span,
}

#[derive(Debug, Clone)]
pub(super) struct Part {
    pub(super) statistic: Statistic,
    pub(super) role: &'static str,
    /// Zero sensitivity: the statistic is public under this adjacency; it
    /// needs no noise and is never passed to the accountants.
    pub(super) public: bool,
    pub(super) kind: NoiseKind,
    pub(super) derived: Derived,
    pub(super) scale: Scale,
    pub(super) resolved: Option<f64>,
    /// A windowed query's per-release sensitivity, composed over the whole
    /// data (for the side-by-side figure); `derived` is the horizon's.
    pub(super) without_window: Option<Box<Derived>>,
    /// The number of candidates of a quantile or of one selection of a
    /// top-k (0 for the other statistics).
    pub(super) candidates: usize,
    /// A top-k's selection under add/remove: it draws ∝ exp(count/b),
    /// which halves its count error (`top::count_error`).
    pub(super) monotone: bool,
    /// A cumulative count's slots: its spread is the worst running
    /// total's, not one node's.
    pub(super) tree_slots: Option<(u64, dpplan_vocab::CumulativeMechanism)>,
    /// A quantile's role with its level (`quantile 0.25`): the parts of
    /// `quantiles` are told apart by it (report, diff).
    pub(super) label: Option<String>,
}

impl Part {
    /// The mechanism the accountants see at the resolved scale, its
    /// sensitivity times `sens_mult` (group privacy); `None` before the
    /// scale is resolved.
    pub(super) fn accounted(&self, sens_mult: f64) -> Option<dpplan_accounting::Mechanism> {
        let scale = self.resolved?;
        Some(super::mechanism(
            self.kind,
            scale,
            &self.derived,
            sens_mult,
            self.statistic.is_count(),
        ))
    }
}

pub(super) struct QueryPlan<'a> {
    pub(super) q: &'a ast::Query,
    pub(super) dataset: String,
    pub(super) aggregation: String,
    pub(super) schedule: String,
    pub(super) releases: u64,
    pub(super) parts: Vec<Part>,
    /// The name of its dataset as written (for group privacy statements):
    /// borrowed from the plan, as `dataset` is taken by the report.
    pub(super) dataset_name: &'a str,
    pub(super) ok: bool,
    /// The aggregation and schedule, resolved; `None` when either has an
    /// error.
    pub(super) spec: Option<Box<QuerySpec>>,
    /// The `accuracy` requirement, when it has one.
    pub(super) accuracy: Option<Accuracy>,
    /// The cells of a grouped query (its keys' product).
    pub(super) cells: Option<Box<Cells>>,
    /// What one unit may contribute to its dataset.
    pub(super) unit: Option<UnitBound>,
    /// The query's `window`, resolved: its releases are one vector release.
    /// (This and the other rare parts are boxed: at 10⁵ queries each
    /// inline slot costs its size times 10⁵ bytes.)
    pub(super) window: Option<Box<super::window::Window>>,
    /// A `cumulative` count's tree: its nodes are one vector release.
    pub(super) cumulative: Option<Box<super::cumulative::Cumulative>>,
    /// Its dataset's sampling rate: each release runs on a fresh Poisson
    /// sample of the units (`sample.rs`).
    pub(super) sample: Option<f64>,
}

impl QueryPlan<'_> {
    /// How many times the accountants compose each part: once for a
    /// windowed query (its releases are one release over disjoint
    /// windows, with the horizon's sensitivity), else once per release.
    pub(super) fn accounted_releases(&self) -> u64 {
        if self.window.is_some() || self.cumulative.is_some() {
            1
        } else {
            self.releases
        }
    }
}

/// An error was reported that leaves the query out of the accounting.
pub(super) struct Reported;

/// Declared sensitivities that passed the check against the derived ones.
#[derive(Default)]
pub(super) struct Declared {
    l1: Option<f64>,
    l2: Option<f64>,
}

/// Checks one query and plans its noisy parts; `None` when it has no
/// aggregation (it releases nothing). A query with an error is returned
/// with `ok` false and is left out of the accounting.
pub(super) fn plan_query<'a>(
    c: &mut Checker,
    q: &'a ast::Query,
    datasets: &HashMap<&str, DatasetInfo>,
    adjacency: Adjacency,
    // `None` when the privacy block is invalid: nothing is said about δ then
    budget_delta: Option<f64>,
) -> Option<QueryPlan<'a>> {
    duplicates(c, q);
    let steps = postprocess(c, q);
    let steps_ok = super::with_total::check_steps(c, q, &steps);
    let agg = aggregation(c, q)?;
    let noise = q.noises.first();
    let mut ok = has_noise(c, q, noise) && steps_ok;
    let (releases, schedule_text, schedule_spec) = match schedule(c, q) {
        Ok(v) => v,
        Err(Reported) => {
            ok = false;
            (0, String::new(), None)
        }
    };
    let release_after = super::window::release_after(c, q).unwrap_or_else(|Reported| {
        ok = false;
        None
    });
    let schedule_spec = schedule_spec.map(|s| ScheduleSpec {
        release_after_seconds: release_after,
        ..s
    });
    let dataset_name = agg.target.dataset.value.as_str();
    let accuracy = accuracy(c, q);
    if !q.accuracies().is_empty() && accuracy.is_none() {
        ok = false;
    }
    let mut plan = QueryPlan {
        q,
        dataset: dataset_name.to_string(),
        aggregation: describe_aggregation(agg),
        schedule: schedule_text,
        releases,
        parts: Vec::new(),
        dataset_name,
        ok,
        spec: None,
        accuracy,
        window: None,
        cumulative: None,
        cells: None,
        unit: None,
        sample: None,
    };
    if let Some(info) = datasets.get(dataset_name) {
        if !super::sample::query_supported(c, q, agg, info) {
            plan.ok = false;
            return Some(plan);
        }
        plan.sample = info.sample;
    }
    let top = super::top::is_top(agg.kind.value);
    if agg.keys_from_data.is_some() && (top || agg.with_total) {
        // a top-k or a total over keys from the data: refused, each
        // `supported` saying why (DP014)
        if top {
            super::top::supported(c, q, agg);
        }
        super::with_total::supported(c, q, agg);
        plan.ok = false;
        return Some(plan);
    }
    if agg.keys_from_data.is_some() {
        // keys taken from the data: partition selection (`selection.rs`)
        let parts = super::selection::plan_parts(
            c,
            &mut plan,
            agg,
            noise,
            datasets,
            adjacency,
            budget_delta,
        );
        match parts {
            Ok(spec) => plan.spec = schedule_spec.map(|s| Box::new(spec(s))),
            Err(Reported) => plan.ok = false,
        }
        with_postprocess(&mut plan, steps);
        return Some(plan);
    }
    match plan_parts(c, &mut plan, agg, noise, datasets, adjacency, budget_delta) {
        Ok(spec) => plan.spec = schedule_spec.map(|s| Box::new(spec(s))),
        Err(Reported) => plan.ok = false,
    }
    with_postprocess(&mut plan, steps);
    Some(plan)
}

/// The query's `postprocess` steps on its resolved spec (every kind of
/// query: keys from the data too).
fn with_postprocess(plan: &mut QueryPlan, steps: Vec<PostStep>) {
    if let Some(spec) = &mut plan.spec {
        spec.postprocess = (!steps.is_empty()).then(|| Box::new(steps));
    }
}

/// The `postprocess` steps in order, each once, from one statement
/// (DP013 on a second statement or a repeated step). Any step may follow
/// any release: it reads only the released value.
fn postprocess(c: &mut Checker, q: &ast::Query) -> Vec<PostStep> {
    let Some(stmt) = super::declared_once(
        c,
        q.postprocess(),
        |p| p.span,
        || format!("the post-processing of `{}`", q.name.value),
    ) else {
        return Vec::new();
    };
    let mut out: Vec<PostStep> = Vec::new();
    for (i, step) in stmt.steps.iter().enumerate() {
        if let Some(first) = stmt.steps[..i].iter().find(|s| s.value == step.value) {
            c.error(
                Diagnostic::new(
                    Code::Duplicate,
                    format!(
                        "`{}` is listed twice in the post-processing of `{}`",
                        step.value.name(),
                        q.name.value
                    ),
                    step.span,
                )
                .secondary(first.span, "first listed here")
                .help("list each step once"),
            );
            continue;
        }
        out.push(step.value);
    }
    out
}

/// The steps from the aggregation to the noisy parts; each step that
/// reports an error which leaves nothing to account stops here. Returns
/// the query's spec, to be completed with its schedule.
fn plan_parts(
    c: &mut Checker,
    plan: &mut QueryPlan,
    agg: &ast::Aggregate,
    noise: Option<&ast::Noise>,
    datasets: &HashMap<&str, DatasetInfo>,
    adjacency: Adjacency,
    budget_delta: Option<f64>,
) -> Result<impl FnOnce(ScheduleSpec) -> QuerySpec, Reported> {
    let quantile = super::quantile::is_quantile(agg.kind.value);
    if quantile && !super::quantile::supported(c, plan.q, agg) {
        return Err(Reported);
    }
    let top = super::top::is_top(agg.kind.value);
    if top && !super::top::supported(c, plan.q, agg) {
        return Err(Reported);
    }
    if !super::with_total::supported(c, plan.q, agg) {
        return Err(Reported);
    }
    if agg.cumulative.is_some() {
        super::cumulative::shape(c, plan.q, agg)?;
    } else {
        super::cumulative::stray_mechanism(c, plan.q, agg);
    }
    let target = target(c, agg, datasets)?;
    // DP001 was reported on the dataset.
    let unit = target.info.bound.ok_or(Reported)?;
    let filter = agg
        .filter
        .as_ref()
        .map(|p| rows::resolve_filter(c, target.info, p))
        .transpose()?;
    let distinct = match agg.distinct {
        None => None,
        Some(_) => Some(rows::check_distinct(c, agg, target.info)?),
    };
    let values = match distinct {
        None => value_bounds(c, agg, &target)?,
        Some(_) => None,
    };
    groups(c, agg, &target, unit)?;
    let quantile_spec = match (quantile, values) {
        (true, Some(bounds)) => Some(super::quantile::QuantileSpec {
            levels: super::quantile::levels(c, agg)?,
            candidates: super::quantile::candidates(c, plan.q, bounds)?,
        }),
        _ => None,
    };
    let top_spec = match (top, target.group) {
        (true, Some(cells)) => Some(super::top::TopSpec {
            k: super::top::k(c, agg, cells)?,
            monotone: adjacency == Adjacency::AddRemove,
        }),
        _ => None,
    };
    let shape = Shape {
        group: target.group,
        values,
        drops: drops_rows(target.info, filter.is_some(), target.group, adjacency),
        distinct: distinct.map(|col| unit_id(target.info) == Some(col.value.as_str())),
    };
    let with_total = agg.with_total;
    let derived = derive_parts(
        agg.kind.value,
        &shape,
        (unit, adjacency),
        (quantile_spec.as_ref(), top_spec, with_total),
    )?;
    plan.unit = Some(unit);
    plan.cells = target.cells.clone().map(Box::new);
    let window = super::window::resolve(
        c,
        plan.q,
        target.info,
        unit,
        (plan.releases, quantile_spec.is_some()),
    )?;
    let tree =
        super::cumulative::resolve(c, plan.q, agg, target.info, unit, plan.releases, adjacency)?;
    let (mut derived, unwindowed) = match &tree {
        Some(t) => super::cumulative::tree_parts(t, derived, unit, adjacency),
        None => super::window::horizon(
            window.as_ref(),
            derived,
            (agg.kind.value, unit, adjacency),
            &shape,
        ),
    };
    let declared = declared_sensitivity(c, plan, noise, &derived);
    // DP015 was reported when the query has no noise.
    let noise = noise.ok_or(Reported)?;
    let float_values = target
        .column
        .is_some_and(|(_, ci)| matches!(ci.ty, ColumnType::Float { .. }));
    if !super::quantile::mechanism_fits(c, agg, noise) {
        return Err(Reported);
    }
    if noise.kind.value == NoiseKind::PermuteAndFlip {
        super::quantile::permute_and_flip_steps(&mut derived, top_spec.is_some_and(|s| s.monotone));
    }
    // a quantile's values are only compared with its candidates
    let float_values = float_values && !quantile;
    if !noise_kind(c, agg, noise, float_values, &derived, budget_delta) {
        plan.ok = false;
    }
    let mut scale = noise_scale(c, noise, derived.len())?;
    if plan.accuracy.is_some() && matches!(scale, Scale::Auto { .. }) {
        // `auto` with a requirement: the noise follows from the requirement.
        scale = Scale::FromAccuracy;
    }
    plan.parts = parts(noise.kind.value, &scale, derived, &declared);
    for (p, d) in plan.parts.iter_mut().zip(unwindowed.into_iter().flatten()) {
        p.without_window = Some(Box::new(d));
    }
    let window_spec = window.as_ref().map(super::window::Window::spec);
    plan.window = window.map(Box::new);
    let cumulative_spec = tree.as_ref().map(super::cumulative::Cumulative::spec);
    for p in &mut plan.parts {
        p.tree_slots = cumulative_spec.as_ref().map(|t| (t.slots, t.mechanism));
    }
    plan.cumulative = tree.map(Box::new);
    if let Some(spec) = &quantile_spec {
        super::quantile::label_parts(&mut plan.parts, spec);
    }
    if let (Some(spec), Some(cells)) = (top_spec, target.group) {
        super::top::label_parts(&mut plan.parts, spec, cells);
    }
    let (kind, dataset) = (agg.kind.value, target.info.ds.name.value.clone());
    let column = target.column.map(|(col, _)| col.value.clone());
    let keys = target.cells.map(|k| k.keys).unwrap_or_default();
    let by = (!keys.is_empty()).then(|| rows::describe_keys(&agg.keys));
    let groups = (!keys.is_empty()).then(|| dpplan_vocab::rows::cell_labels(&keys));
    // `quantiles`: one output per level, labelled by the level
    let groups = match (&quantile_spec, kind) {
        (Some(spec), AggKind::Quantiles) => {
            Some(spec.levels.iter().map(|l| l.to_string()).collect())
        }
        _ => groups,
    };
    let distinct = distinct.is_some();
    Ok(move |schedule| QuerySpec {
        kind,
        dataset,
        column,
        by,
        bounds: values.map(|(lo, hi)| [lo, hi]),
        groups,
        schedule,
        window: window_spec.map(Box::new),
        filter,
        keys,
        distinct,
        quantile: quantile_spec.map(Box::new),
        top: top_spec.map(Box::new),
        total: with_total,
        cumulative: cumulative_spec.map(Box::new),
        selection: None,
        postprocess: None,
    })
}

/// DP013: the aggregation, noise, schedule or sensitivity declared twice.
fn duplicates(c: &mut Checker, q: &ast::Query) {
    duplicate(
        c,
        &q.aggregates,
        |a| a.span,
        &format!("the aggregation of `{}`", q.name.value),
    );
    duplicate(
        c,
        &q.noises,
        |a| a.span,
        &format!("the noise of `{}`", q.name.value),
    );
    duplicate(
        c,
        &q.schedules,
        |a| a.span,
        &format!("the schedule of `{}`", q.name.value),
    );
    duplicate(
        c,
        q.accuracies(),
        |a| a.span,
        &format!("the accuracy requirement of `{}`", q.name.value),
    );
    duplicate(
        c,
        q.sensitivities(),
        |a| a.span,
        &format!("the declared sensitivity of `{}`", q.name.value),
    );
}

/// The query's `accuracy` requirement: a positive finite bound (DP007).
fn accuracy(c: &mut Checker, q: &ast::Query) -> Option<Accuracy> {
    let a = q.accuracies().first()?;
    if !valid_positive(a.value.value) {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!(
                    "an accuracy requirement must be a positive finite number, found {}",
                    a.value.value
                ),
                a.value.span,
            )
            .help(format!(
                "bound the {} of each released value, e.g. `accuracy {} <= 500`",
                a.measure.value.title(),
                a.measure.value
            )),
        );
        return None;
    }
    Some(Accuracy {
        measure: a.measure.value,
        at_most: a.value.value,
        span: a.span,
    })
}

/// The query's aggregation, or DP015.
fn aggregation<'a>(c: &mut Checker, q: &'a ast::Query) -> Option<&'a ast::Aggregate> {
    let agg = q.aggregates.first();
    if agg.is_none() {
        c.error(
            Diagnostic::new(
                Code::Missing,
                format!(
                    "query `{}` releases nothing: it has no aggregation",
                    q.name.value
                ),
                q.name.span,
            )
            .help("add an aggregation such as `count(visits)` or `sum(visits.seconds)`"),
        );
    }
    agg
}

/// Whether the query declares noise; DP015 when it does not.
fn has_noise(c: &mut Checker, q: &ast::Query, noise: Option<&ast::Noise>) -> bool {
    if noise.is_none() {
        c.error(
            Diagnostic::new(
                Code::Missing,
                format!("query `{}` has no noise", q.name.value),
                q.name.span,
            )
            .label("a release without noise is not private")
            .help("add `noise laplace epsilon 0.1` or `noise gaussian sigma 10`"),
        );
        return false;
    }
    true
}

/// The number of releases, the schedule in words and resolved (DP007,
/// DP015, DP016).
fn schedule(
    c: &mut Checker,
    q: &ast::Query,
) -> Result<(u64, String, Option<ScheduleSpec>), Reported> {
    match q.schedules.first() {
        None => {
            c.error(
                Diagnostic::new(
                    Code::Missing,
                    format!("query `{}` has no schedule", q.name.value),
                    q.name.span,
                )
                .label("how often is it released?")
                .help("add `schedule once`, `schedule 4 times` or `schedule every 1 day for 365 days`"),
            );
            Err(Reported)
        }
        Some(s) => match schedule::releases(&s.value) {
            Ok((n, text)) => Ok((n, text, Some(schedule_spec(&s.value)))),
            Err(ScheduleError::Invalid(span, msg)) => {
                let span = if span == Span::default() {
                    s.span
                } else {
                    span
                };
                c.error(
                    Diagnostic::new(
                        Code::InvalidParameter,
                        msg,
                        span,
                    )
                    .label("empty or invalid schedule")
                    .help("a schedule makes at least one release: `once`, `N times` with N ≥ 1, or `every <d> for <w>` with positive durations"),
                );
                Err(Reported)
            }
            Err(ScheduleError::TooMany(ref n)) => {
                c.error(
                    Diagnostic::new(
                        Code::Limit,
                        format!(
                            "the schedule makes {n} releases; dpplan accepts at most {}",
                            schedule::MAX_RELEASES
                        ),
                        s.span,
                    )
                    .help("check the durations: this is most likely a typo"),
                );
                Err(Reported)
            }
        },
    }
}

/// A schedule's kind, period and start, as the runtime needs them.
fn schedule_spec(s: &ast::Schedule) -> ScheduleSpec {
    let (kind, every_seconds, start) = match s {
        ast::Schedule::Once => (ScheduleKind::Once, None, None),
        ast::Schedule::Times { .. } => (ScheduleKind::Times, None, None),
        ast::Schedule::EveryFor { every, .. } => (
            ScheduleKind::Every,
            Some(every.amount.value * every.unit.seconds()),
            None,
        ),
        ast::Schedule::EveryRange { every, from, .. } => (
            ScheduleKind::Every,
            Some(every.amount.value * every.unit.seconds()),
            schedule::parse_date(&from.value),
        ),
    };
    ScheduleSpec {
        kind,
        every_seconds,
        start,
        // set by `plan_query`, with its checks
        release_after_seconds: None,
    }
}

/// The aggregation in words, e.g. `sum(visits.seconds by region)`.
fn describe_aggregation(agg: &ast::Aggregate) -> String {
    format!(
        "{}{}({}{}{}{}{}){}",
        if agg.cumulative.is_some() {
            "cumulative "
        } else {
            ""
        },
        agg.kind.value.as_str(),
        if agg.distinct.is_some() {
            "distinct "
        } else {
            ""
        },
        describe_target(&agg.target),
        agg.filter
            .as_ref()
            .map(|p| format!(" where {}", rows::describe_predicate(p)))
            .unwrap_or_default(),
        if agg.keys.is_empty() {
            String::new()
        } else {
            format!(
                " by {}{}",
                rows::describe_keys(&agg.keys),
                super::selection::describe_keys_from_data(agg)
            )
        },
        agg.argument
            .as_ref()
            .map(|a| format!(", {}", a.value))
            .or_else(|| agg.levels.as_ref().map(|l| {
                let v: Vec<String> = l.value.iter().map(|n| n.value.to_string()).collect();
                format!(", [{}]", v.join(", "))
            }))
            .unwrap_or_default(),
        if agg.with_total { " with total" } else { "" }
    )
}

/// A declared sensitivity against the derived one (DP003, DP005, DP007,
/// DP014): the declarations that may be used.
pub(super) fn declared_sensitivity(
    c: &mut Checker,
    plan: &mut QueryPlan,
    noise: Option<&ast::Noise>,
    parts_derived: &[(Statistic, &'static str, Derived)],
) -> Declared {
    let mut declared = Declared::default();
    let Some(ds) = plan.q.sensitivities().first() else {
        return declared;
    };
    if parts_derived.len() > 1 {
        c.error(
            Diagnostic::new(
                Code::Unsupported,
                if parts_derived.iter().all(|(s, _, _)| *s == Statistic::Quantile) {
                    "a declared sensitivity applies to one statistic, but `quantiles` releases one per level"
                } else {
                    "a declared sensitivity applies to one statistic, but a mean releases two (a sum and a count)"
                },
                ds.span,
            )
            .help("remove the declaration (the checker derives each), or release the statistics as separate queries"),
        );
    } else if let Some((_, _, d)) = parts_derived.first() {
        for (norm, value) in &ds.items {
            let (derived, name) = match norm.value {
                ast::Norm::L1 => (d.l1, "l1"),
                ast::Norm::L2 => (d.l2, "l2"),
            };
            if !value.value.is_finite() || value.value < 0.0 {
                c.error(
                    Diagnostic::new(
                        Code::InvalidParameter,
                        format!(
                            "a sensitivity must be a finite non-negative number, found {}",
                            value.value
                        ),
                        value.span,
                    )
                    .help("declare the sensitivity the derivation supports, or remove the declaration"),
                );
                plan.ok = false;
                continue;
            }
            if value.value < derived * (1.0 - 1e-12) {
                c.error(
                    Diagnostic::new(
                        Code::SensitivityTooLow,
                        format!("declared {name} {}, but {}: {name} = {}", fmt_num(value.value), d.steps.join("; "), fmt_num(derived)),
                        value.span,
                    )
                    .label(format!("below the derived {name} = {}", fmt_num(derived)))
                    .help(format!("declare `sensitivity {name} {}` or remove the declaration and let the checker derive it", fmt_num(derived))),
                );
                plan.ok = false;
            } else {
                match norm.value {
                    ast::Norm::L1 => declared.l1 = Some(value.value),
                    ast::Norm::L2 => declared.l2 = Some(value.value),
                }
            }
        }
        if let Some(n) = noise {
            let has = |nm: ast::Norm| ds.items.iter().any(|(x, _)| x.value == nm);
            let (needed, name) = if n.kind.value.is_gaussian() {
                (ast::Norm::L2, "L2")
            } else {
                (ast::Norm::L1, "L1")
            };
            if !ds.items.is_empty() && !has(needed) {
                c.error(
                    Diagnostic::new(
                        Code::WrongNorm,
                        format!("{} noise is calibrated to the {name} sensitivity, but the query declares only the other norm", n.kind.value.as_str()),
                        ds.span,
                    )
                    .secondary(n.kind.span, "mechanism chosen here")
                    .help(format!("declare `sensitivity {} …`, or remove the declaration", name.to_ascii_lowercase())),
                );
                plan.ok = false;
            }
        }
    }
    declared
}

/// The noisy parts: each derived sensitivity raised to a declared one
/// (never below the derived), with its noise.
pub(super) fn parts(
    nk: NoiseKind,
    scale: &Scale,
    parts_derived: Vec<(Statistic, &'static str, Derived)>,
    declared: &Declared,
) -> Vec<Part> {
    let first_norm = |d: &Derived| -> f64 {
        if nk.is_gaussian() {
            d.l2
        } else {
            d.l1
        }
    };
    let base = parts_derived
        .first()
        .map(|(_, _, d)| first_norm(d))
        .unwrap_or(0.0);
    // exact capacity: a query has one or two parts, and a plan may have 10⁵
    let mut parts = Vec::with_capacity(parts_derived.len());
    for (i, (statistic, role, mut d)) in parts_derived.into_iter().enumerate() {
        if declared.l1.is_some_and(|v| v > d.l1) || declared.l2.is_some_and(|v| v > d.l2) {
            // a declared sensitivity above the derived one: the shape is not known
            d.linf = 0.0;
        }
        if let Some(v) = declared.l1 {
            d.l1 = d.l1.max(v);
            d.steps.push(format!(
                "declared l1 {} is used (≥ the derived bound)",
                fmt_num(v)
            ));
        }
        if let Some(v) = declared.l2 {
            d.l2 = d.l2.max(v);
            d.steps.push(format!(
                "declared l2 {} is used (≥ the derived bound)",
                fmt_num(v)
            ));
        }
        // For a mean, a declared noise scale applies to the sum; the count's
        // noise keeps the same noise-to-sensitivity ratio so both parts cost
        // the same.
        let part_scale = match scale {
            Scale::Fixed(s) if i > 0 && base > 0.0 => Scale::Fixed(s * first_norm(&d) / base),
            other => other.clone(),
        };
        let resolved = match part_scale {
            Scale::Fixed(s) => Some(s),
            _ => None,
        };
        let public = d.l1 == 0.0 && d.l2 == 0.0;
        parts.push(Part {
            statistic,
            role,
            public,
            kind: nk,
            derived: d,
            scale: part_scale,
            resolved: if public { None } else { resolved },
            without_window: None,
            tree_slots: None,
            candidates: 0,
            monotone: false,
            label: None,
        });
    }
    parts
}
