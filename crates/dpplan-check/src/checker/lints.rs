//! Checks across items: names defined twice and publish references
//! (DP006, DP007, DP012, DP013), fresh re-releases (DP009 hints), the
//! per-person guarantee of a row- or event-level unit (DP008) and δ next to
//! the population (DP010 warnings).

use foldhash::{HashMap, HashMapExt};

use dpplan_accounting as acct;
use dpplan_diagnostics::{Code, Diagnostic, Span};
use dpplan_syntax::ast::{self, Unit};

use super::datasets::DatasetInfo;
use super::privacy::Privacy;
use super::query::{QueryPlan, Scale};
use super::recover::suggest_name;
use super::statistic::Statistic;
use super::total::releases_of;
use super::{data_dependent, fast_best, Checker};
use dpplan_mechanisms::sensitivity::fmt_num;

/// Names defined twice across queries and publishes, and publish sources.
pub(super) fn check_names(c: &mut Checker, plan: &ast::Plan) {
    let mut seen: HashMap<&str, Span> = HashMap::new();
    let defined = plan
        .queries
        .iter()
        .map(|q| &q.name)
        .chain(plan.publishes.iter().map(|p| &p.name));
    for name in defined {
        if let Some(first) = seen.get(name.value.as_str()) {
            c.error(
                Diagnostic::new(
                    Code::Duplicate,
                    format!("`{}` is defined twice", name.value),
                    name.span,
                )
                .secondary(*first, "first defined here")
                .help("give every query and publish a unique name"),
            );
        } else {
            seen.insert(&name.value, name.span);
        }
    }
    for p in &plan.publishes {
        if !seen.contains_key(p.source.value.as_str()) {
            if c.broken.release(&p.source.value) {
                // Declared but broken: its syntax error says why, once.
                continue;
            }
            c.error(suggest_name(
                Diagnostic::new(
                    Code::Undefined,
                    format!("there is no query or publish named `{}`", p.source.value),
                    p.source.span,
                )
                .label("undefined release")
                .help("re-publish an existing query: `publish copy = <query name>`"),
                &p.source.value,
                seen.keys().copied(),
            ));
        } else if p.source.value == p.name.value {
            c.error(
                Diagnostic::new(
                    Code::Undefined,
                    format!("`{}` re-publishes itself", p.name.value),
                    p.source.span,
                )
                .help("name the query whose released value is re-published"),
            );
        }
    }
}

pub(super) fn check_publishes(c: &mut Checker, plan: &ast::Plan) {
    let released: Vec<&str> = plan
        .queries
        .iter()
        .map(|q| q.name.value.as_str())
        .chain(plan.publishes.iter().map(|p| p.name.value.as_str()))
        .collect();
    for p in &plan.publishes {
        let Some(cond) = &p.condition else { continue };
        if !cond.value.value.is_finite() {
            c.error(
                Diagnostic::new(
                    Code::InvalidParameter,
                    format!("the threshold must be finite, found {}", cond.value.value),
                    cond.value.span,
                )
                .help("compare against a finite public number"),
            );
        }
        match &cond.operand {
            ast::Operand::Data { expr } => {
                data_dependent(
                    c,
                    expr.span,
                    "this publish condition",
                    "decide on a released value instead (`when <query> > 100` is post-processing and free), or release the condition's statistic with noise first",
                );
            }
            ast::Operand::Released { name } => {
                if !released.contains(&name.value.as_str()) && !c.broken.release(&name.value) {
                    c.error(suggest_name(
                        Diagnostic::new(
                            Code::Undefined,
                            format!("there is no released value `{}`", name.value),
                            name.span,
                        )
                        .help("a condition may read any released query or publish by name"),
                        &name.value,
                        released.iter().copied(),
                    ));
                }
            }
        }
    }
}

/// At most this many related locations on one aggregated DP009 hint (the
/// first release and the first re-releases); the message counts them all.
pub(crate) const MAX_RELATED: usize = 20;

/// At most this many re-releases are named in an aggregated hint's message.
const NAMED: usize = 3;

/// DP009: fresh noise where re-publication would do: a query released
/// `n times` ([`repeated_schedules`]), and queries that release a statistic
/// already released ([`statistic_inputs`], [`same_statistic_groups`],
/// [`same_statistic_hints`]; `check` runs them, the grouping beside the
/// calibration).
///
/// DP009's hints for queries released `n times` (each query's first noise
/// as it is now: run before the calibration sets the noise of `auto` and
/// `epsilon` parts, as it always ran).
pub(super) fn repeated_schedules(c: &mut Checker, queries: &[QueryPlan]) {
    for q in queries {
        repeated_schedule(c, q);
    }
}

/// What [`same_statistic_groups`] reads of each query: its first
/// aggregation (in the AST, not in the plan) and its window (a windowed
/// release reads only its window's rows: the same aggregation over another
/// window, or over all rows, is another statistic). Taken from the plans
/// so that the grouping can run beside passes that change them.
pub(super) type StatisticInput<'a> = Option<(&'a ast::Aggregate, Option<(String, u64)>)>;

pub(super) fn statistic_inputs<'a>(queries: &[QueryPlan<'a>]) -> Vec<StatisticInput<'a>> {
    queries
        .iter()
        .map(|q| {
            let window = q
                .window
                .as_ref()
                .map(|w| (w.column.clone(), w.seconds.to_bits()));
            let ast: &'a ast::Query = q.q;
            ast.aggregates.first().map(|a| (a, window))
        })
        .collect()
}

/// The queries (their indices) of each statistic released more than once,
/// in the order each statistic first appears, each group in plan order.
pub(super) fn same_statistic_groups(inputs: &[StatisticInput]) -> Vec<Vec<usize>> {
    // Queries by the statistic they release, as written. (Computed here,
    // not kept in each query's plan: this pass alone reads it, and at 10⁵
    // queries the plans live on through the accounting.)
    type Key<'a> = (Statistic<'a>, Option<(&'a str, u64)>);
    let statistics: Vec<Option<Key>> = inputs
        .iter()
        .map(|input| {
            input
                .as_ref()
                .map(|(a, w)| (Statistic::of(a), w.as_ref().map(|(c, s)| (c.as_str(), *s))))
        })
        .collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut index: HashMap<&Key, usize> = HashMap::new();
    for (i, statistic) in statistics.iter().enumerate() {
        let Some(statistic) = statistic else {
            continue;
        };
        match index.get(statistic) {
            Some(&g) => groups[g].push(i),
            None => {
                index.insert(statistic, groups.len());
                groups.push(vec![i]);
            }
        }
    }
    groups.retain(|g| g.len() > 1);
    groups
}

/// One DP009 hint per group of [`same_statistic_groups`].
pub(super) fn same_statistic_hints(
    queries: &[QueryPlan],
    groups: &[Vec<usize>],
) -> Vec<Diagnostic> {
    groups
        .iter()
        .map(|g| {
            let group: Vec<&QueryPlan> = g.iter().map(|&i| &queries[i]).collect();
            same_statistic(&group)
        })
        .collect()
}

/// A query with `schedule n times`, n > 1.
fn repeated_schedule(c: &mut Checker, q: &QueryPlan) {
    let Some(s) = q.q.schedules.first() else {
        return;
    };
    if !matches!(s.value, ast::Schedule::Times { .. }) || q.releases <= 1 {
        return;
    }
    let sd = q
        .parts
        .first()
        .and_then(|p| match p.scale {
            Scale::Fixed(x) if !p.kind.is_selection() => {
                Some(dpplan_mechanisms::noise::spread(p.kind, x).0)
            }
            _ => None,
        })
        .map(|sd| {
            format!(
                " (σ = {} per release, σ/√{} = {} for the average)",
                fmt_num(sd),
                q.releases,
                fmt_num(sd / (q.releases as f64).sqrt())
            )
        })
        .unwrap_or_default();
    c.hint(
        Diagnostic::new(
            Code::FreshRerelease,
            format!(
                "`{}` is released {} times with fresh noise on the same data: averaging r fresh answers cuts the noise's variance to σ²/r{sd} but costs r releases",
                q.q.name.value, q.releases
            ),
            s.span,
        )
        .help("to show the same value again, release it once and re-publish it with `publish copy = <query>` (post-processing, free); to buy accuracy, lower the noise of one release instead"),
    );
}

/// One hint for every query that releases `group[0]`'s statistic again:
/// the first re-release is the primary location, the first release and
/// the next re-releases (at most [`MAX_RELATED`] in all) are related ones,
/// and the message names a few and counts the rest.
fn same_statistic(group: &[&QueryPlan]) -> Diagnostic {
    let (first, again) = (group[0], &group[1..]);
    let name = |q: &QueryPlan| format!("`{}`", q.q.name.value);
    let mut who: Vec<String> = again.iter().take(NAMED).map(|q| name(q)).collect();
    let more = again.len().saturating_sub(NAMED);
    let verb = if again.len() == 1 {
        "releases"
    } else {
        "release"
    };
    if more > 0 {
        who.push(format!("{} more queries", fmt_count(more)));
    }
    let mut d = Diagnostic::new(
        Code::FreshRerelease,
        format!(
            "{} {verb} `{}` again with fresh noise, like `{}`: every fresh answer is a new access to the data and is charged",
            join_and(&who),
            first.aggregation,
            first.q.name.value
        ),
        again[0].q.name.span,
    )
    .secondary(first.q.name.span, "the same statistic is released here");
    for q in again.iter().skip(1).take(MAX_RELATED - 1) {
        d = d.secondary(q.q.name.span, "released again here");
    }
    if again.len() > MAX_RELATED {
        d = d.note(format!(
            "{} re-releases of this statistic in all; the first {} are marked",
            fmt_count(again.len()),
            MAX_RELATED
        ));
    }
    let target = if again.len() == 1 {
        again[0].q.name.value.as_str()
    } else {
        "<query>"
    };
    d.help(format!(
        "re-publish the released value with `publish {target} = {}` (free), or keep both on purpose: averaging r fresh answers cuts the noise's variance to σ²/r but costs r releases",
        first.q.name.value
    ))
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// A count with thousands separators: 99,999.
fn fmt_count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// DP008: a row- or event-level unit on a dataset that identifies persons
/// protects a person only by group privacy; with the plan accounted, the
/// warning states that person's ε.
pub(super) fn per_person_guarantee(
    c: &mut Checker,
    datasets: &HashMap<&str, DatasetInfo>,
    queries: &[QueryPlan],
    privacy: &Privacy,
    choice: Option<acct::Accountant>,
    accounted: bool,
) {
    if matches!(privacy.unit, Unit::User { .. }) {
        return;
    }
    for info in datasets.values() {
        let Some(id_col) = info.id_columns.first() else {
            continue;
        };
        let name = info.ds.name.value.as_str();
        let used = queries.iter().any(|q| q.dataset_name == name);
        // keys from the data: a person's several rows may bring several
        // one-person keys, whose δ group privacy does not bound here; no
        // number is stated then (the statement below without one)
        let keyed = queries
            .iter()
            .any(|q| q.q.aggregates.iter().any(|a| a.keys_from_data.is_some()));
        let statement = match info.declared_rows {
            Some(k) if accounted && !keyed => {
                let scaled = releases_of(queries, &|q: &QueryPlan| {
                    if q.dataset_name == name {
                        k as f64
                    } else {
                        1.0
                    }
                });
                let per_person = match choice {
                    Some(a) => crate::memo::epsilon(&scaled, privacy.delta, a),
                    None => fast_best(&scaled, privacy.delta),
                };
                match per_person {
                    Ok(b) => format!(
                        "a person with at most {k} rows (rows_per_unit, which an event- or row-level unit does not enforce) is protected only at ε = {} (δ = {}; group privacy: every sensitivity on `{name}` × {k}), and a person with more rows less",
                        fmt_num(b.epsilon),
                        fmt_num(privacy.delta)
                    ),
                    Err(_) => format!("a person with up to {k} rows is protected only by group privacy over {k} rows"),
                }
            }
            Some(k) => format!(
                "a person with up to {k} rows is protected only by group privacy over {k} rows"
            ),
            None => "a person's rows are not bounded, so the per-person guarantee is unbounded"
                .to_string(),
        };
        let unit_word = match privacy.unit {
            Unit::Event => "event",
            _ => "row",
        };
        let d = Diagnostic::new(
            Code::WeakUnit,
            format!(
                "the privacy unit is one {unit_word}, but `{name}` identifies persons by `{}`: {statement}",
                id_col.name.value
            ),
            id_col.name.span,
        )
        .secondary(privacy.unit_span, format!("the guarantee protects one {unit_word}"))
        .help(format!(
            "protect persons with `unit user by {}` and a `contribution {{ rows_per_unit N }}` bound",
            id_col.name.value
        ));
        c.warning(if used {
            d
        } else {
            d.note(format!("no query reads `{name}` yet"))
        });
    }
}

/// DP010: δ next to the population.
pub(super) fn large_delta(c: &mut Checker, privacy: &Privacy) {
    if let Some(pop) = privacy.population {
        if pop.is_finite() && pop >= 1.0 && privacy.delta >= 1.0 / pop {
            c.warning(
                Diagnostic::new(
                    Code::LargeDelta,
                    format!(
                        "δ = {} is at least 1/population = {}: a mechanism that publishes one random person's data outright satisfies this δ",
                        fmt_num(privacy.delta),
                        fmt_num(1.0 / pop)
                    ),
                    privacy.budget_span,
                )
                .help(format!("choose δ well below 1/population, e.g. δ ≤ {}", fmt_num(0.01 / pop))),
            );
        }
    }
}
