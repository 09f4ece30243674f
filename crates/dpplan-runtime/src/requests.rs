//! What a run asks its engine for: per dataset, the dataset, where its
//! data is, and the exact statistic of every part of the releases asked,
//! with the (release, part) each answer belongs to. One grouping serves
//! the run (`aggregates`) and `dpplan run --explain`
//! ([`planned_aggregates`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dpplan_plan::{Dataset, ExecutablePlan, Release};
use dpplan_vocab::rows::GroupKey;
use dpplan_vocab::Statistic as Stat;

use crate::{RunError, RunOptions};
use dpplan_engine::rng::SecureRng;
use dpplan_engine::{Engine, StatKind, Statistic};

/// One dataset's request to an engine: the dataset, its source, the
/// statistics.
pub type Planned<'p> = (&'p Dataset, PathBuf, Vec<Statistic>);

/// One request and, per statistic, the (release, part) it answers.
struct Request<'p> {
    planned: Planned<'p>,
    index: Vec<(String, usize)>,
}

/// The requests of `releases`, one per dataset, in dataset order.
fn requests<'p>(
    plan: &'p ExecutablePlan,
    opts: &RunOptions,
    releases: impl IntoIterator<Item = &'p Release>,
) -> Result<Vec<Request<'p>>, RunError> {
    // one pass per dataset and filter: a filter is decided before bounding,
    // so differently filtered statistics are bounded on different rows; on
    // a sampled dataset one pass per release, each on a fresh sample of
    // the units (the engine's coins: one sample per pass)
    let mut by_dataset: BTreeMap<(&str, String, &str), Vec<&Release>> = BTreeMap::new();
    // keys from the data are counted apart (`crate::selection`)
    for r in releases
        .into_iter()
        .filter(|r| r.aggregation.selection.is_none())
    {
        let filter = r.aggregation.filter.as_ref().map_or_else(String::new, |f| {
            serde_json::to_string(f).unwrap_or_default()
        });
        let sampled = plan
            .body
            .datasets
            .get(&r.dataset)
            .is_some_and(|d| d.sample.is_some());
        let own = if sampled { r.name.as_str() } else { "" };
        by_dataset
            .entry((r.dataset.as_str(), filter, own))
            .or_default()
            .push(r);
    }
    let mut out = Vec::with_capacity(by_dataset.len());
    for ((ds_name, _, _), rels) in by_dataset {
        let ds = plan
            .body
            .datasets
            .get(ds_name)
            .ok_or_else(|| RunError::Data(format!("the plan has no dataset `{ds_name}`")))?;
        let path = source_path(ds, opts)?;
        let mut stats = Vec::new();
        let mut index = Vec::new();
        for r in rels {
            for (pi, p) in r.parts.iter().enumerate() {
                stats.push(statistic(r, p)?);
                index.push((r.name.clone(), pi));
            }
        }
        out.push(Request {
            planned: (ds, path, stats),
            index,
        });
    }
    Ok(out)
}

/// The exact bounded aggregate of every part of every fresh release, keyed
/// by (release, part): one engine pass per dataset.
pub(crate) fn aggregates<'p>(
    plan: &'p ExecutablePlan,
    opts: &RunOptions,
    engine: &dyn Engine,
    fresh: impl IntoIterator<Item = &'p Release>,
    rng: &mut SecureRng,
) -> Result<BTreeMap<(String, usize), Vec<i128>>, RunError> {
    let mut exact = BTreeMap::new();
    for Request {
        planned: (ds, path, stats),
        index,
    } in requests(plan, opts, fresh)?
    {
        let values = engine.aggregate(ds, &path, &stats, rng)?;
        exact.extend(index.into_iter().zip(values));
    }
    Ok(exact)
}

/// What an engine is asked for every selected release of the plan (all of
/// them with no `--query`), whether due or not, per dataset: the dataset,
/// its source and the statistics, in the order a run asks for them. Reads
/// no ledger and no data (`dpplan run --explain`).
pub fn planned_aggregates<'p>(
    plan: &'p ExecutablePlan,
    opts: &RunOptions,
) -> Result<Vec<Planned<'p>>, RunError> {
    let selected = plan
        .body
        .releases
        .iter()
        .filter(|r| opts.queries.is_empty() || opts.queries.contains(&r.name));
    // windows and trees have statements of their own (`planned_windows`)
    let selected = selected.filter(|r| r.window.is_none() && r.cumulative.is_none());
    Ok(requests(plan, opts, selected)?
        .into_iter()
        .map(|r| r.planned)
        .collect())
}

/// What an engine that selects windows itself is asked for a windowed
/// release or a cumulative count (`Engine::aggregate_windows`), but its
/// run's values (the first window's start, the due slots, the units'
/// state): `dpplan run --explain`. Reads no ledger and no data.
pub struct PlannedWindow<'p> {
    pub release: &'p str,
    /// The dataset as a window bounds it (`rows_per_window` rows per unit).
    pub dataset: Dataset,
    pub source: PathBuf,
    pub column: &'p str,
    /// Seconds per window.
    pub period: i64,
    /// Windows per unit, under a per-unit bound.
    pub bound: Option<u64>,
    pub stats: Vec<Statistic>,
}

/// The [`PlannedWindow`] of every selected windowed release and
/// cumulative count (all of them with no `--query`), whether due or not.
pub fn planned_windows<'p>(
    plan: &'p ExecutablePlan,
    opts: &RunOptions,
) -> Result<Vec<PlannedWindow<'p>>, RunError> {
    let mut out = Vec::new();
    for r in plan
        .body
        .releases
        .iter()
        .filter(|r| opts.queries.is_empty() || opts.queries.contains(&r.name))
    {
        let (column, w) = match (&r.window, &r.cumulative) {
            (Some(w), _) => (&w.column, w.clone()),
            (None, Some(c)) => (&c.column, c.slot_window()),
            (None, None) => continue,
        };
        let windowed = Release {
            window: Some(w.clone()),
            ..r.clone()
        };
        let ds = crate::window::dataset_of(plan, r)?;
        out.push(PlannedWindow {
            release: &r.name,
            dataset: crate::window::window_dataset(ds, &windowed),
            source: source_path(ds, opts)?,
            column,
            period: crate::window::period_of(&r.name, w.seconds)?,
            bound: ds.bounding.per_unit.then_some(w.windows_per_unit.max(1)),
            stats: release_statistics(r)?,
        });
    }
    Ok(out)
}

/// What an engine is asked for every selected histogram over keys from
/// the data (all of them with no `--query`), whether due or not: the
/// release's name, its dataset and source, the key column and the filter
/// (`dpplan run --explain`; a run asks the same, `crate::selection`).
/// Reads no ledger and no data.
pub fn planned_keys<'p>(
    plan: &'p ExecutablePlan,
    opts: &RunOptions,
) -> Result<Vec<PlannedKeys<'p>>, RunError> {
    plan.body
        .releases
        .iter()
        .filter(|r| opts.queries.is_empty() || opts.queries.contains(&r.name))
        .filter_map(|r| keys_request(plan, opts, r).transpose())
        .collect()
}

/// What a run asks an engine for release `r` when it is a histogram over
/// keys from the data; `None` for any other release.
pub(crate) fn keys_request<'p>(
    plan: &'p ExecutablePlan,
    opts: &RunOptions,
    r: &'p Release,
) -> Result<Option<PlannedKeys<'p>>, RunError> {
    let Some(sel) = &r.aggregation.selection else {
        return Ok(None);
    };
    let ds = plan
        .body
        .datasets
        .get(&r.dataset)
        .ok_or_else(|| RunError::Data(format!("the plan has no dataset `{}`", r.dataset)))?;
    Ok(Some(PlannedKeys {
        release: &r.name,
        dataset: ds,
        source: source_path(ds, opts)?,
        column: &sel.column,
        filter: r.aggregation.filter.as_ref(),
    }))
}

/// One histogram over keys from the data, as an engine is asked for it.
pub struct PlannedKeys<'p> {
    pub release: &'p str,
    pub dataset: &'p Dataset,
    pub source: PathBuf,
    pub column: &'p str,
    pub filter: Option<&'p dpplan_vocab::rows::Filter>,
}

/// The statistic of every part of `r`, in part order (what a run asks the
/// engine for this release; `dpplan audit` asks the same).
pub fn release_statistics(r: &Release) -> Result<Vec<Statistic>, RunError> {
    if r.aggregation.top.is_some() || r.aggregation.total {
        // a top-k's ranks all read the same counts per cell, and so does a
        // histogram's total: asked once (part 0's; `top::draw` and `draw`
        // read only it)
        let first = r
            .parts
            .first()
            .ok_or_else(|| RunError::Data(format!("`{}` has no statistic", r.name)))?;
        return Ok(vec![statistic(r, first)?]);
    }
    r.parts.iter().map(|p| statistic(r, p)).collect()
}

pub(crate) fn statistic(r: &Release, p: &dpplan_plan::Part) -> Result<Statistic, RunError> {
    let col = || {
        r.aggregation
            .column
            .clone()
            .ok_or_else(|| RunError::Data(format!("`{}` sums no column", r.name)))
    };
    let by = || {
        r.aggregation
            .by
            .clone()
            .ok_or_else(|| RunError::Data(format!("`{}` groups by no column", r.name)))
    };
    let keys = &r.aggregation.keys;
    // one category key: the grouping every engine knows
    let single = matches!(keys.as_slice(), [GroupKey::Category { .. }]);
    let kind = match p.statistic {
        Stat::Count => StatKind::Count,
        Stat::Sum => StatKind::Sum { column: col()? },
        // a histogram's total: the runtime sums the same counts per cell
        Stat::GroupedCount | Stat::GroupedSum | Stat::CellsTotal if !keys.is_empty() && !single => {
            StatKind::Cells {
                keys: keys.clone(),
                column: (p.statistic == Stat::GroupedSum).then(col).transpose()?,
            }
        }
        Stat::CellsTotal if keys.is_empty() => {
            return Err(RunError::Data(format!(
                "`{}` totals cells but has no group keys",
                r.name
            )))
        }
        Stat::GroupedCount | Stat::CellsTotal => StatKind::GroupedCount {
            by: single_key(keys).map_or_else(by, Ok)?,
        },
        Stat::GroupedSum => StatKind::GroupedSum {
            by: single_key(keys).map_or_else(by, Ok)?,
            column: col()?,
        },
        Stat::DistinctCount => StatKind::Distinct { column: col()? },
        Stat::GroupedDistinctCount if keys.is_empty() => {
            return Err(RunError::Data(format!(
                "`{}` counts units per cell but has no group keys",
                r.name
            )))
        }
        Stat::GroupedDistinctCount => StatKind::UnitsPerCell { keys: keys.clone() },
        // a top-k's scores: every part reads the same counts per cell
        Stat::TopK if keys.is_empty() => {
            return Err(RunError::Data(format!(
                "`{}` ranks cells but has no group keys",
                r.name
            )))
        }
        Stat::TopK if r.aggregation.distinct => StatKind::UnitsPerCell { keys: keys.clone() },
        Stat::TopK if single => StatKind::GroupedCount {
            by: single_key(keys).map_or_else(by, Ok)?,
        },
        Stat::TopK => StatKind::Cells {
            keys: keys.clone(),
            column: None,
        },
        // the rows per bin of the candidate grid (`quantile::grid_key`)
        Stat::Quantile => {
            let grid = r
                .aggregation
                .quantile
                .as_ref()
                .filter(|g| !g.candidates.is_empty());
            let grid = grid.ok_or_else(|| {
                RunError::Data(format!("`{}` has no quantile candidates", r.name))
            })?;
            StatKind::Cells {
                keys: vec![crate::quantile::grid_key(&col()?, &grid.candidates)],
                column: None,
            }
        }
    };
    let kind = match &r.aggregation.filter {
        None => kind,
        Some(f) => StatKind::Where {
            filter: f.clone(),
            of: Box::new(kind),
        },
    };
    Ok(Statistic {
        kind,
        grid: p.grid_exponent,
    })
}

/// The column of a grouping by one category key.
fn single_key(keys: &[GroupKey]) -> Option<String> {
    match keys {
        [GroupKey::Category { column, .. }] => Some(column.clone()),
        _ => None,
    }
}

pub fn source_path(ds: &Dataset, opts: &RunOptions) -> Result<PathBuf, RunError> {
    if let Some(p) = opts.data.get(&ds.name) {
        return Ok(p.clone());
    }
    match &ds.source {
        // an in-memory table is handed over by the caller for its own run
        // (`dpplan.run`'s frames, through `data`), never named by a plan:
        // a plan run beside another (the same Python process) would read
        // the other run's data
        Some(s) if s.starts_with(dpplan_engine::memory::PREFIX) => Err(RunError::Data(format!(
            "dataset `{}`: its source `{s}` names an in-memory table; a plan's source is a file, a directory, a URL or a `table:`, and an in-memory table is given to a run as its data (`dpplan.run(data={{\"{}\": frame}})`)",
            ds.name, ds.name
        ))),
        // a Spark table (`table:db.events`) or a URL is not under the plan's directory
        Some(s) if s.starts_with("table:") || s.contains("://") => Ok(PathBuf::from(s)),
        Some(s) => Ok(opts.base_dir.as_deref().unwrap_or(Path::new(".")).join(s)),
        None => Err(RunError::Data(format!(
            "no data for dataset `{}`: pass --data {}=PATH",
            ds.name, ds.name
        ))),
    }
}
