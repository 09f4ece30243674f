//! Histograms over keys taken from the data (`histogram(d by col keys from
//! data [threshold auto | threshold τ])`): partition selection by
//! thresholding (Wilson et al. 2020; docs/accounting.md, "Partition
//! selection").
//!
//! The keys are the values of one category column seen in the data. Each
//! key's count gets the query's noise, composed by the accountants as a
//! histogram over every possible key (a key a unit does not touch moves by
//! 0), and a key is released only when its noisy count is above τ. A key
//! that only one unit brings (at most k = groups_per_unit keys, with at most
//! C = rows_per_group rows each) then appears with a small probability P;
//! the plan's δ pays for it: the accountants run at half the budget's δ and
//! the thresholds' δ (P/(1 − P), add/remove) is added to their total.
//! `threshold auto` derives τ so that every such query's δ fits its even
//! share of that reserved half.

use foldhash::HashMap;

use dpplan_accounting::selection;
use dpplan_diagnostics::{Code, Diagnostic, Span};
use dpplan_syntax::ast::{self, Adjacency, AggKind, ColumnType, NoiseKind};

use super::datasets::DatasetInfo;
use super::query::{parts, QueryPlan, Reported, Scale};
use super::shape::{derive_sensitivities, drops_rows, Shape};
use super::target::{declared_column, target};
use super::{rows, Checker};
use crate::report::{QuerySpec, ScheduleSpec, SelectionSpec, TotalReport};
use dpplan_mechanisms::sensitivity::{fmt_num, UnitBound};

use selection::RESERVED_SHARE;

/// The parts of a histogram over keys from the data (DP031 where it does
/// not apply); its spec, to be completed with the schedule. τ is set
/// after the calibration ([`thresholds`]).
pub(super) fn plan_parts(
    c: &mut Checker,
    plan: &mut QueryPlan,
    agg: &ast::Aggregate,
    noise: Option<&ast::Noise>,
    datasets: &HashMap<&str, DatasetInfo>,
    adjacency: Adjacency,
    budget_delta: Option<f64>,
) -> Result<impl FnOnce(ScheduleSpec) -> QuerySpec, Reported> {
    let keys_span = agg.keys_from_data.as_ref().map_or(agg.span, |k| k.span);
    let plain = ast::Aggregate {
        keys: Vec::new(),
        keys_from_data: None,
        ..agg.clone()
    };
    let t = target(c, &plain, datasets)?;
    let info = t.info;
    let column = key_column(c, agg, info, keys_span)?;
    applies(c, plan.q, agg, noise, keys_span, budget_delta)?;
    let unit = info.bound.ok_or(Reported)?;
    bounded(c, info, unit, agg.keys[0].span())?;
    let filter = agg
        .filter
        .as_ref()
        .map(|p| rows::resolve_filter(c, info, p))
        .transpose()?;
    let shape = Shape {
        group: Some(u64::MAX),
        values: None,
        drops: drops_rows(info, filter.is_some(), Some(u64::MAX), adjacency),
        distinct: None,
    };
    let mut derived = derive_sensitivities(AggKind::Histogram, &shape, unit, adjacency);
    for (_, _, d) in &mut derived {
        d.steps.insert(
            0,
            "keys from the data: any value may be a key, so no public domain caps the groups"
                .into(),
        );
    }
    let declared = super::query::declared_sensitivity(c, plan, noise, &derived);
    let noise = noise.ok_or(Reported)?;
    if !super::noise::noise_kind(c, agg, noise, false, &derived, budget_delta) {
        plan.ok = false;
    }
    let mut scale = super::noise::noise_scale(c, noise, derived.len())?;
    if plan.accuracy.is_some() && matches!(scale, Scale::Auto { .. }) {
        scale = Scale::FromAccuracy;
    }
    plan.parts = parts(noise.kind.value, &scale, derived, &declared);
    plan.unit = Some(unit);
    let (keys_per_unit, rows_per_key) = per_unit(unit);
    let declared_tau = agg
        .keys_from_data
        .as_ref()
        .and_then(|k| k.threshold.as_ref())
        .map(|t| (t.value, t.span));
    if let Some((value, span)) = declared_tau {
        if !value.is_finite() || value < rows_per_key as f64 {
            c.error(
                Diagnostic::new(
                    Code::ThresholdTooLow,
                    format!(
                        "a threshold must be finite and at least the most rows one unit has in a key ({rows_per_key}), found {value}"
                    ),
                    span,
                )
                .help("write `threshold auto`, or a larger threshold"),
            );
            return Err(Reported);
        }
    }
    let dataset = info.ds.name.value.clone();
    let by = column.clone();
    Ok(move |schedule| QuerySpec {
        kind: AggKind::Histogram,
        dataset,
        column: None,
        by: Some(by),
        bounds: None,
        groups: None,
        schedule,
        window: None,
        filter,
        keys: Vec::new(),
        distinct: false,
        quantile: None,
        top: None,
        total: false,
        cumulative: None,
        selection: Some(Box::new(SelectionSpec {
            column,
            threshold: declared_tau.map_or(f64::NAN, |t| t.0),
            auto: declared_tau.is_none(),
            keys_per_unit,
            rows_per_key,
            release_probability: f64::NAN,
            delta: f64::NAN,
        })),
        postprocess: None,
    })
}

/// ` keys from data [threshold τ]` as written, or nothing.
pub(super) fn describe_keys_from_data(agg: &ast::Aggregate) -> String {
    match &agg.keys_from_data {
        None => String::new(),
        Some(k) => match &k.threshold {
            None => " keys from data".into(),
            Some(t) => format!(" keys from data threshold {}", fmt_num(t.value)),
        },
    }
}

/// k and C: the most keys one unit touches and its most rows in one key
/// (one row, one key for a row- or event-level unit).
fn per_unit(u: UnitBound) -> (u64, u64) {
    if !u.user {
        return (1, 1);
    }
    let k = u.groups.unwrap_or(1).min(u.rows).max(1);
    let g = u.rows_per_group.unwrap_or(u.rows).min(u.rows).max(1);
    (k, g)
}

/// The one key: a declared category column (DP012, DP031).
fn key_column(
    c: &mut Checker,
    agg: &ast::Aggregate,
    info: &DatasetInfo,
    span: Span,
) -> Result<String, Reported> {
    let [ast::GroupKey::Column { name }] = agg.keys.as_slice() else {
        c.error(
            Diagnostic::new(
                Code::KeysFromData,
                "keys from the data are the values of one category column: `by <column> keys from data`",
                agg.keys.first().map_or(span, |k| k.span()),
            )
            .help("group by one category column, or list the public values and drop `keys from data`"),
        );
        return Err(Reported);
    };
    let ci = declared_column(c, info, name, "group by one of:")?;
    if !matches!(ci.ty, ColumnType::Category { .. }) {
        c.error(
            Diagnostic::new(
                Code::KeysFromData,
                format!(
                    "`{}` is not a category: keys from the data are category values",
                    name.value
                ),
                name.span,
            )
            .secondary(ci.name_span, "declared here")
            .help("group by a `category` column, or cut a number into public `bins(…)`"),
        );
        return Err(Reported);
    }
    Ok(name.value.clone())
}

/// DP031: keys from the data only for a histogram with additive noise,
/// without a window, under a budget with δ > 0.
fn applies(
    c: &mut Checker,
    q: &ast::Query,
    agg: &ast::Aggregate,
    noise: Option<&ast::Noise>,
    span: Span,
    budget_delta: Option<f64>,
) -> Result<(), Reported> {
    let refuse = |c: &mut Checker, msg: &str, at: Span, help: &str| {
        c.error(
            Diagnostic::new(Code::KeysFromData, msg.to_string(), at)
                .label("keys from the data")
                .help(help.to_string()),
        );
        Err(Reported)
    };
    if agg.kind.value != AggKind::Histogram || agg.distinct.is_some() {
        return refuse(
            c,
            "keys from the data apply to a histogram (a count per key)",
            span,
            "write `histogram(<dataset> by <column> keys from data)`",
        );
    }
    if let Some(w) = q.windows().first() {
        return refuse(
            c,
            "a windowed histogram over keys from the data is not supported",
            w.span,
            "remove the window, or list the public values of the key",
        );
    }
    if noise.is_some_and(|n| n.kind.value.is_selection()) {
        return refuse(
            c,
            "keys from the data need additive noise on each count",
            span,
            "use `noise laplace …`, `gaussian`, `discrete_laplace` or `discrete_gaussian`",
        );
    }
    if budget_delta == Some(0.0) {
        return refuse(
            c,
            "keys from the data cost a δ (a key only one unit has may pass the threshold), but the budget's δ is 0",
            span,
            "add a δ to the budget: `budget epsilon … delta 1e-8`",
        );
    }
    Ok(())
}

/// DP004 for a user-level unit without groups_per_unit: with keys from
/// the data, a unit could bring any number of keys.
fn bounded(c: &mut Checker, info: &DatasetInfo, unit: UnitBound, at: Span) -> Result<(), Reported> {
    if unit.user && unit.groups.is_none() {
        c.error(
            Diagnostic::new(
                Code::UnboundedGroups,
                format!(
                    "keys from the data under a user-level unit need a groups_per_unit bound on `{}`: without it one user may bring up to {} keys",
                    info.ds.name.value, unit.rows
                ),
                at,
            )
            .label("keys per user not bounded")
            .help(format!(
                "add `groups_per_unit N` to the contribution block of `{}`",
                info.ds.name.value
            )),
        );
        return Err(Reported);
    }
    Ok(())
}

/// Whether the plan has a histogram over keys from the data: then
/// [`RESERVED_SHARE`] of its δ is kept for the thresholds.
pub(super) fn reserved_delta(queries: &[QueryPlan], delta: f64) -> f64 {
    let any = queries
        .iter()
        .any(|q| q.q.aggregates.iter().any(|a| a.keys_from_data.is_some()));
    if any {
        delta * RESERVED_SHARE
    } else {
        0.0
    }
}

/// Sets every selection's τ (derived for `auto`) and δ once the noise is
/// known, with the steps in words; returns the thresholds' δ for the
/// plan's total (DP032 when a declared τ costs more than the reserve).
pub(super) fn thresholds(
    c: &mut Checker,
    queries: &mut [QueryPlan],
    delta: f64,
    adjacency: Adjacency,
) -> f64 {
    let reserve = reserved_delta(queries, delta);
    let n = queries
        .iter()
        .filter(|q| q.spec.as_ref().is_some_and(|s| s.selection.is_some()))
        .count()
        .max(1) as f64;
    let replace = adjacency == Adjacency::Replace;
    let mut total_p = 0.0;
    for q in queries.iter_mut().filter(|q| q.ok) {
        if let Some(p) = threshold(c, q, (reserve / n, reserve), replace) {
            total_p += p;
        }
    }
    if total_p == 0.0 {
        return 0.0;
    }
    selection::threshold_delta(total_p, replace).unwrap_or(f64::INFINITY)
}

/// One query's τ and δ; returns its total pass probability over its
/// releases (`None`: not a selection, or its noise did not resolve).
fn threshold(
    c: &mut Checker,
    q: &mut QueryPlan,
    (share, reserve): (f64, f64),
    replace: bool,
) -> Option<f64> {
    let releases = q.releases.max(1);
    let part = q.parts.first_mut()?;
    let scale = part.resolved?;
    let kind = part.kind;
    let sel = q.spec.as_mut()?.selection.as_mut()?;
    let (k, rows) = (sel.keys_per_unit, sel.rows_per_key as f64);
    let mut steps = Vec::new();
    if sel.auto {
        // P₁ per release such that the plan's thresholds fit the reserve
        // ρ: with P = Σ R·P₁ ≤ ρ/(m(1 + ρ)), δ ≤ m·P/(1 − P) ≤ ρ (m = 2
        // under replace); 10⁻⁶ below it for the rounding of the sums
        let m = if replace { 2.0 } else { 1.0 };
        let target = share / (m * releases as f64 * (1.0 + reserve)) * (1.0 - 1e-6);
        match selection::threshold_for(kind, scale, k, rows, target) {
            Some(tau) => sel.threshold = tau,
            None => {
                c.error(
                    Diagnostic::new(
                        Code::ThresholdTooLow,
                        format!(
                            "no threshold keeps the chance that one release reveals a key only one unit has below {} with this noise",
                            fmt_num(target)
                        ),
                        q.q.name.span,
                    )
                    .help("use more noise or a larger δ"),
                );
                q.ok = false;
                return None;
            }
        }
        steps.push(format!(
            "threshold auto: δ share {} over {} release(s) gives at most {} per release",
            fmt_num(share),
            releases,
            fmt_num(target)
        ));
    }
    let p1 = selection::release_probability(kind, scale, sel.threshold, k, rows);
    let p = p1 * releases as f64;
    sel.release_probability = p1;
    sel.delta = selection::threshold_delta(p, replace).unwrap_or(f64::INFINITY);
    // a NaN δ counts as over the share
    let over =
        sel.delta.partial_cmp(&share) != Some(std::cmp::Ordering::Less) && sel.delta != share;
    if !sel.auto && over {
        let span = threshold_span(q.q).unwrap_or(q.q.name.span);
        c.error(
            Diagnostic::new(
                Code::ThresholdTooLow,
                format!(
                    "threshold {} lets a key only one unit has through with probability {} per release: δ = {} over {} release(s), above this query's share {} of the budget's δ",
                    fmt_num(sel.threshold),
                    fmt_num(p1),
                    fmt_num(sel.delta),
                    releases,
                    fmt_num(share)
                ),
                span,
            )
            .label("threshold too low")
            .help("raise the threshold, or write `threshold auto`"),
        );
        q.ok = false;
    }
    steps.push(describe(kind, scale, sel, replace));
    part.derived.steps.extend(steps);
    Some(p)
}

/// The threshold's derivation in words.
fn describe(kind: NoiseKind, scale: f64, sel: &SelectionSpec, replace: bool) -> String {
    let (k, cmax, tau) = (sel.keys_per_unit, sel.rows_per_key, sel.threshold);
    let tail = match kind {
        NoiseKind::Laplace => format!("½·exp(−(τ − C)/b) with b = {}", fmt_num(scale)),
        NoiseKind::Gaussian => format!("Φ(−(τ − C)/σ) with σ = {}", fmt_num(scale)),
        NoiseKind::DiscreteLaplace => format!(
            "exp(−m/b)/(1 + exp(−1/b)), m = ⌊τ − C⌋ + 1, b = {}",
            fmt_num(scale)
        ),
        _ => format!("Φ(−(m − 1)/σ), m = ⌊τ − C⌋ + 1, σ = {}", fmt_num(scale)),
    };
    format!(
        "keys from the data: a key is released only if its noisy count is above τ = {}; a key only one unit brings has a count of at most C = {} and passes with probability at most {}; one unit brings at most k = {} such keys, so one release reveals one with probability at most 1 − (1 − p)^k = {}; δ = {} = {} over the releases (Wilson et al. 2020), added to the plan's δ",
        fmt_num(tau),
        cmax,
        tail,
        k,
        fmt_num(sel.release_probability),
        if replace { "P + P/(1 − P)" } else { "P/(1 − P)" },
        fmt_num(sel.delta),
    )
}

fn threshold_span(q: &ast::Query) -> Option<Span> {
    q.aggregates.iter().find_map(|a| {
        a.keys_from_data
            .as_ref()?
            .threshold
            .as_ref()
            .map(|t| t.span)
    })
}

/// DP032 when the plan's thresholds cost more δ than is reserved for them.
pub(super) fn check_reserve(c: &mut Checker, delta_thr: f64, reserve: f64, budget: Span) -> bool {
    // a declared threshold over its share was reported on the query
    let reported = c.diags.iter().any(|d| d.code == Code::ThresholdTooLow);
    if delta_thr <= reserve || reported {
        return delta_thr <= reserve;
    }
    c.error(
        Diagnostic::new(
            Code::ThresholdTooLow,
            format!(
                "the thresholds of keys from the data cost δ = {} together, above the {} of the budget's δ kept for them",
                fmt_num(delta_thr),
                fmt_num(reserve)
            ),
            budget,
        )
        .help("raise the declared thresholds, write `threshold auto`, or raise the budget's δ"),
    );
    false
}

/// Adds the thresholds' δ to the total the accountants gave at the
/// reduced δ, and says so in its detail.
pub(super) fn add_to_total(total: &mut TotalReport, delta_thr: f64) {
    if delta_thr > 0.0 {
        total.delta += delta_thr;
        total.detail = format!(
            "{}; + δ = {} for the thresholds of keys from the data",
            total.detail,
            fmt_num(delta_thr)
        );
    }
}
