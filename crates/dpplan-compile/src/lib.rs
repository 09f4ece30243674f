//! # dpplan-compile — the compiler of executable plans
//!
//! `dpplan compile` turns a plan text that checks clean into a
//! [`dpplan_plan::ExecutablePlan`], reading nothing but the checked plan;
//! [`load`] is the only way a plan file reaches the runtime: the format's
//! checks ([`dpplan_plan::parse`]) and that recompiling the embedded source
//! gives exactly the body, so what runs is what was checked.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use dpplan_check::{analyze, Analysis, CheckedPlan, DatasetSpec, PartReport, QueryReport};
use dpplan_plan::*;
use dpplan_vocab::{Adjacency, InvalidRule, Statistic, UnitKind};

/// Why a plan was not compiled.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The plan has errors (render `analysis.diagnostics`).
    #[error("the plan has {} error(s): it is not compiled", .0.diagnostics.iter().filter(|d| d.is_error()).count())]
    Diagnostics(Box<Analysis>),
    /// It checks, but claims no total (it releases nothing).
    #[error("the plan claims no total guarantee ({0}): it is not compiled")]
    NoTotal(String),
    /// A construct the runtime does not execute.
    #[error("the runtime cannot execute this plan: {0}")]
    Unsupported(String),
}

/// Compiles a plan text (the file's name is not recorded).
pub fn compile(text: &str) -> Result<ExecutablePlan, CompileError> {
    let analysis = analyze(text);
    if analysis.has_errors() {
        return Err(CompileError::Diagnostics(Box::new(analysis)));
    }
    let Some(report) = analysis.report.as_ref() else {
        return Err(CompileError::NoTotal("the privacy block is missing".into()));
    };
    let Some(total) = report.total.as_ref() else {
        return Err(CompileError::NoTotal(
            report
                .total_missing
                .clone()
                .unwrap_or_else(|| "no total".into()),
        ));
    };
    if report.within_budget != Some(true) {
        return Err(CompileError::NoTotal(
            "the plan does not fit its budget".into(),
        ));
    }
    let body = build_body(text, report, total)?;
    Ok(ExecutablePlan {
        format: FORMAT.into(),
        format_version: FORMAT_VERSION,
        body_sha256: body_hash(&body),
        body,
        policy: None,
    })
}

fn build_body(
    text: &str,
    plan: &CheckedPlan,
    total: &dpplan_check::TotalReport,
) -> Result<PlanBody, CompileError> {
    let user = plan.unit.kind == UnitKind::User;
    let datasets: BTreeMap<String, Dataset> = plan
        .datasets
        .iter()
        .map(|d| (d.name.clone(), dataset(d, user, plan.unit.id.as_deref())))
        .collect();
    let mut releases = plan
        .queries
        .iter()
        .map(|q| release(q, plan.adjacency))
        .collect::<Result<Vec<_>, _>>()?;
    // a tree's W′ depends on its dataset's per-unit row bound
    for r in &mut releases {
        if let Some(c) = &mut r.cumulative {
            let rows = datasets
                .get(&r.dataset)
                .filter(|d| d.bounding.per_unit)
                .and_then(|d| d.bounding.rows_per_unit);
            c.kept_slots = c.kept_slots_for(rows);
        }
    }
    let publishes = plan
        .publishes
        .iter()
        .map(|p| Publish {
            name: p.name.clone(),
            source: p.source.clone(),
            condition: p.condition.as_ref().map(|c| Condition {
                operand: c.operand.clone(),
                cmp: c.cmp,
                value: c.value,
            }),
        })
        .collect();
    Ok(PlanBody {
        compiler: COMPILER.into(),
        name: plan.name.clone().unwrap_or_default(),
        source: Source {
            sha256: sha256_hex(text.as_bytes()),
            text: text.to_string(),
        },
        privacy: Privacy {
            unit: plan.unit.kind,
            unit_id: plan.unit.id.clone(),
            adjacency: plan.adjacency,
            budget_epsilon: plan.budget.epsilon,
            budget_delta: plan.budget.delta,
            accountant: plan.accountant_requested,
            total: Total {
                epsilon: total.epsilon,
                delta: total.delta,
                accountant: total.accountant,
                detail: total.detail.clone(),
            },
            releases: plan.releases,
        },
        datasets,
        releases,
        publishes,
    })
}

fn dataset(ds: &DatasetSpec, user: bool, unit_id: Option<&str>) -> Dataset {
    let columns = ds
        .columns
        .iter()
        .map(|c| Column {
            name: c.name.clone(),
            ty: c.kind,
            domain: c.domain.clone(),
            bounds: c.bounds,
        })
        .collect();
    let (rows, groups, per_group) = (ds.rows_per_unit, ds.groups_per_unit, ds.rows_per_group);
    let mut steps = Vec::new();
    steps.push(match ds.invalid_rows {
        InvalidRule::Clamp => "a row with an empty or unparsable number or NaN takes the column's public lower bound (0 when unbounded); a row with an empty unit id is dropped".to_string(),
        InvalidRule::Drop => "a row with an empty unit id, or an empty or unparsable number, NaN, or a fractional int is dropped".to_string(),
    });
    if user {
        let id = unit_id.unwrap_or("id");
        steps.push(format!(
            "per `{id}`, at most rows_per_unit = {} rows are kept, chosen uniformly at random (reservoir sampling, secure seed)",
            rows.map_or("?".into(), |r| r.to_string())
        ));
        if let Some(g) = groups {
            steps.push(format!("grouped queries: per `{id}`, at most groups_per_unit = {g} groups are kept, chosen uniformly at random among the unit's kept groups"));
        }
        if let Some(g) = per_group {
            steps.push(format!("grouped queries: per `{id}` and group, at most rows_per_group = {g} rows, chosen uniformly at random"));
        }
    } else {
        steps.push("row/event-level unit: every row is a unit, no per-unit bounding".to_string());
    }
    steps.push("numbers are rounded to the release's grid 2^k and clamped to the public bounds rounded inward onto that grid".to_string());
    steps.push("grouped queries: rows whose category is outside the public domain are dropped; output keys are exactly the public domain".to_string());
    Dataset {
        name: ds.name.clone(),
        source: ds.source.clone(),
        columns,
        invalid_rows: ds.invalid_rows,
        sample: ds.sample,
        bounding: Bounding {
            per_unit: user,
            id_column: if user {
                unit_id.map(str::to_string)
            } else {
                None
            },
            rows_per_unit: if user { rows } else { None },
            groups_per_unit: if user { groups } else { None },
            rows_per_group: if user { per_group } else { None },
            steps,
        },
    }
}

fn release(q: &QueryReport, adjacency: Adjacency) -> Result<Release, CompileError> {
    let unsupported = |why: &str| CompileError::Unsupported(format!("query `{}` {why}", q.name));
    let spec = q
        .spec
        .as_ref()
        .ok_or_else(|| unsupported("has no resolved aggregation and schedule"))?;
    // The checker lists the statistics of a query in this order; any other
    // list is a checker bug, refused rather than compiled.
    let statistics = match spec.distinct {
        true => Some(Statistic::distinct(spec.by.is_some())),
        false => Statistic::of(spec.kind, spec.by.is_some()),
    }
    .ok_or_else(|| unsupported(&format!("(`{}`) is not executable", q.aggregation)))?;
    // a quantile query has one part per level, each a `quantile`
    // a top-k has one part per rank, each a `top_k`
    let expected: Vec<Statistic> = match (&spec.quantile, spec.top.as_deref()) {
        (Some(qs), _) => vec![Statistic::Quantile; qs.levels.len()],
        (None, Some(t)) => vec![Statistic::TopK; t.k as usize],
        // a histogram with its total: the cells, then their total
        (None, None) if spec.total => statistics
            .iter()
            .copied()
            .chain([Statistic::CellsTotal])
            .collect(),
        (None, None) => statistics.to_vec(),
    };
    if !q.parts.iter().map(|p| p.statistic).eq(expected) {
        return Err(unsupported("has parts that do not match its aggregation"));
    }
    let parts = q
        .parts
        .iter()
        .map(|p| part(p, spec.bounds).ok_or_else(|| unsupported("has no resolved noise scale")))
        .collect::<Result<Vec<_>, _>>()?;
    let cost = |c: &Option<dpplan_check::CostReport>| -> Cost {
        match c {
            Some(c) => Cost {
                epsilon: c.epsilon,
                delta: c.delta,
                rho: c.rho,
                accountant: Some(c.accountant),
            },
            None => Cost {
                epsilon: 0.0,
                delta: 0.0,
                rho: Some(0.0),
                accountant: None,
            },
        }
    };
    Ok(Release {
        name: q.name.clone(),
        dataset: spec.dataset.clone(),
        aggregation: Aggregation {
            kind: spec.kind,
            column: spec.column.clone(),
            by: spec.by.clone(),
            bounds: spec.bounds,
            groups: spec.groups.clone(),
            text: q.aggregation.clone(),
            filter: spec.filter.clone(),
            keys: spec.keys.clone(),
            distinct: spec.distinct,
            quantile: spec.quantile.as_ref().map(|qs| QuantileGrid {
                levels: qs.levels.clone(),
                candidates: qs.candidates.clone(),
            }),
            top: spec.top.as_deref().map(|t| TopK {
                k: t.k,
                monotone: t.monotone,
            }),
            total: spec.total,
            selection: spec.selection.as_ref().map(|s| Selection {
                column: s.column.clone(),
                threshold: s.threshold,
                keys_per_unit: s.keys_per_unit,
                rows_per_key: s.rows_per_key,
                release_probability: s.release_probability,
            }),
        },
        schedule: Schedule {
            kind: spec.schedule.kind,
            slots: q.releases,
            every_seconds: spec.schedule.every_seconds,
            start: spec.schedule.start,
            text: q.schedule.clone(),
            release_after_seconds: spec.schedule.release_after_seconds,
        },
        parts,
        cost_per_release: with_threshold(cost(&q.per_release), spec, 1, adjacency),
        cost_total: with_threshold(cost(&q.total), spec, q.releases, adjacency),
        window: spec.window.as_ref().map(|w| Window {
            column: w.column.clone(),
            seconds: w.seconds,
            windows_per_unit: w.windows_per_unit,
            rows_per_window: w.rows_per_window,
        }),
        // The checker accounted a cumulative count as ONE release of its
        // tree's nodes; the field tells the runtime to run the tree (a
        // runtime without it must never run the slots as fresh counts).
        cumulative: spec.cumulative.as_ref().map(|c| Cumulative {
            column: c.column.clone(),
            seconds: c.seconds,
            slots: c.slots,
            levels: c.levels,
            nodes: c.nodes,
            windows_per_unit: c.windows_per_unit,
            rows_per_window: c.rows_per_window,
            // set by `build_body`, which knows the dataset's bounds
            kept_slots: c.windows_per_unit,
            mechanism: c.mechanism,
        }),
        postprocess: q.postprocess().to_vec(),
        sample: q.sampled(),
    })
}

/// A cost with the δ of a selection's threshold over `releases` releases
/// added (the accountants' figures leave it out, docs/accounting.md).
fn with_threshold(
    mut c: Cost,
    spec: &dpplan_check::QuerySpec,
    releases: u64,
    adjacency: Adjacency,
) -> Cost {
    if let Some(s) = &spec.selection {
        let p = s.release_probability * releases.max(1) as f64;
        let replace = adjacency == Adjacency::Replace;
        c.delta += dpplan_accounting::selection::threshold_delta(p, replace).unwrap_or(1.0);
    }
    c
}

/// One statistic of a release: its noise exactly as the checker accounted
/// it, or none for a public statistic; `None` when a noisy part has no
/// accounted mechanism (the checker then reported an error).
fn part(p: &PartReport, bounds: Option<[f64; 2]>) -> Option<Part> {
    let stat = p.statistic;
    Some(match p.mechanism.kind {
        Some(_) => {
            let m = p.accounted?;
            if !(m.scale.is_finite() && m.scale > 0.0) {
                return None;
            }
            Part {
                statistic: stat,
                mechanism: Some(m.kind),
                scale: Some(m.scale),
                l1: m.sensitivity.l1,
                l2: m.sensitivity.l2,
                coords: m.sensitivity.coords,
                linf: m.sensitivity.linf,
                // a quantile's and a top-k's statistics are counts
                grid_exponent: if m.kind.is_discrete()
                    || matches!(stat, Statistic::Quantile | Statistic::TopK)
                {
                    0
                } else {
                    grid_exponent(m.scale, if stat.is_count() { None } else { bounds })
                },
                noise_std: p.noise_std,
                ci95_half_width: p.ci95_half_width,
                derivation: p.derivation.iter().map(|s| s.to_string()).collect(),
            }
        }
        // A zero-sensitivity statistic (e.g. a row count under row-level
        // replace adjacency) is public: no noise, no cost.
        None => Part {
            statistic: stat,
            mechanism: None,
            scale: None,
            l1: 0.0,
            l2: 0.0,
            coords: 1,
            linf: 0.0,
            grid_exponent: if stat.is_count() {
                0
            } else {
                grid_exponent(1.0, bounds)
            },
            noise_std: 0.0,
            ci95_half_width: 0.0,
            derivation: vec!["sensitivity 0: the statistic is public under this adjacency and is released exactly".into()],
        },
    })
}

/// The grid 2^k on which a continuous release's statistic is computed
/// exactly: fine enough that the noise's scale spans at least 2^40 steps, and coarse enough that one clamped value fits
/// in 62 bits (sums over 2^64 rows then fit in an i128). Counts stay on
/// the integers (k ≤ 0).
pub fn grid_exponent(scale: f64, bounds: Option<[f64; 2]>) -> i32 {
    let by_noise = scale.log2().floor() as i32 - 40;
    match bounds {
        None => by_noise.min(0),
        Some([lo, hi]) => {
            let m = lo.abs().max(hi.abs()).max(1.0);
            let by_range = m.log2().ceil() as i32 - 62;
            by_noise.max(by_range)
        }
    }
}

/// Parses and verifies a plan file: the format's checks
/// ([`dpplan_plan::parse`]: format and version, body hash, source hash,
/// compiler version) and that recompiling the embedded source gives
/// exactly this body.
pub fn load(text: &str) -> Result<ExecutablePlan, LoadError> {
    let plan = parse(text)?;
    let again =
        compile(&plan.body.source.text).map_err(|e| LoadError::Recompiled(e.to_string()))?;
    if again.body != plan.body {
        return Err(LoadError::Recompiled("the compiled body differs".into()));
    }
    Ok(plan)
}

#[cfg(test)]
mod tests;
