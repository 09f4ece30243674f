//! The semantic checker: from the AST to a checked plan, one pass per
//! module. [`check`] runs them in order: the privacy block ([`privacy`]),
//! the datasets ([`datasets`]), every query ([`query`]), the names,
//! publishes and re-releases across items ([`lints`]), the noise
//! calibration ([`calibration`]), the plan's total, each query's cost and
//! the budget ([`total`]), then the warnings that need the total
//! ([`lints`]: the per-person guarantee, δ next to the population). Every
//! pass reports through [`Checker`], whose `error`, `warning` and `hint`
//! name the severity where a diagnostic is reported.

mod accuracy;
mod calibration;
mod cumulative;
mod datasets;
mod lints;
mod noise;
mod privacy;
mod quantile;
mod query;
mod recover;
mod rows;
mod sample;
mod selection;
mod shape;
mod statistic;
mod target;
mod top;
pub(crate) mod total;
mod window;
mod with_total;

use dpplan_accounting as acct;
use dpplan_diagnostics::{Code, Diagnostic, Severity, Span};
use dpplan_syntax::ast::{self, Adjacency, NoiseKind};
use dpplan_vocab::{ColumnKind, InvalidRule};
use foldhash::HashMap;

use datasets::DatasetInfo;

use crate::report::*;
use dpplan_mechanisms::sensitivity::Derived;

use calibration::{calibrate_auto, calibrate_epsilon_parts};
use datasets::resolve_datasets;
use lints::{check_names, check_publishes, large_delta, per_person_guarantee};
use privacy::{resolve_privacy, unit_report, Privacy};
pub use quantile::{rank_error, QuantileSpec, MAX_CANDIDATES};
use query::{plan_query, QueryPlan};
pub use top::TopSpec;
use total::{account_total, budget, query_reports, releases_of, Account};

/// What the checker computes beyond the diagnostics.
#[derive(Debug, Clone)]
pub struct AnalysisOptions {
    /// Run every accountant on the whole plan (for reports and JSON); when
    /// false only the requested one runs (the language server's fast path).
    pub all_accountants: bool,
    /// Compute each query's cost alone (per-release and whole schedule).
    pub per_query_costs: bool,
    /// Run the accounting at all (the plan's total, the budget check, `auto`
    /// calibration). When false, every diagnostic but those that need a
    /// total (DP011, DP018, DP019's budget conflict) is reported and no guarantee is claimed: the
    /// language server publishes this pass first, within milliseconds.
    pub accounting: bool,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            all_accountants: true,
            per_query_costs: true,
            accounting: true,
        }
    }
}

/// The diagnostics found so far, in the order the passes report them.
struct Checker {
    diags: Vec<Diagnostic>,
    /// The items that did not parse, by name ([`recover`]).
    broken: recover::BrokenNames,
}

impl Checker {
    /// Reports an error: the plan claims no guarantee while it has one.
    fn error(&mut self, diagnostic: Diagnostic) {
        self.report(Severity::Error, diagnostic);
    }

    /// Reports a warning: the guarantee holds, but may not be the one meant.
    fn warning(&mut self, diagnostic: Diagnostic) {
        self.report(Severity::Warning, diagnostic);
    }

    /// Reports a hint: a remark that changes nothing about the plan.
    fn hint(&mut self, diagnostic: Diagnostic) {
        self.report(Severity::Hint, diagnostic);
    }

    /// Hints placed at `at` among the diagnostics so far, where a pass run
    /// on another thread would have pushed them had it run in order.
    fn insert_hints(&mut self, at: usize, hints: Vec<Diagnostic>) {
        let tail = self.diags.split_off(at);
        for d in hints {
            self.hint(d);
        }
        self.diags.extend(tail);
    }

    fn report(&mut self, severity: Severity, diagnostic: Diagnostic) {
        debug_assert_eq!(
            diagnostic.code.default_severity(),
            severity,
            "{} is documented with another severity",
            diagnostic.code
        );
        self.diags.push(diagnostic.severity(severity));
    }
}

/// The accounted mechanism of one part; `count` says the statistic is a
/// count (integer-valued, so every shift vector is an integer vector).
fn mechanism(
    kind: NoiseKind,
    scale: f64,
    d: &Derived,
    sens_mult: f64,
    count: bool,
) -> acct::Mechanism {
    // the shape analysis of several coordinates needs integer shifts:
    // discrete noise's values are integers, a Laplace release's only for a
    // count
    let shapes = match kind {
        NoiseKind::DiscreteGaussian | NoiseKind::DiscreteLaplace => true,
        NoiseKind::Laplace => count,
        _ => false,
    };
    acct::Mechanism {
        kind,
        scale,
        sensitivity: acct::Sensitivity {
            l1: d.l1 * sens_mult,
            l2: d.l2 * sens_mult,
            coords: d.coords,
            // ℓ∞ is recorded where an accountant uses it (discrete noise,
            // or Laplace noise on a count, over several coordinates) and
            // for one unit only (group privacy: not given, the accountants
            // then use the norms alone)
            linf: if shapes && d.coords > 1 && sens_mult == 1.0 {
                d.linf
            } else {
                0.0
            },
        },
    }
}

pub(crate) use crate::memo::fast_best;

fn valid_positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn duplicate<T>(c: &mut Checker, items: &[T], span: impl Fn(&T) -> Span, what: &str) {
    if items.len() > 1 {
        for extra in &items[1..] {
            c.error(
                Diagnostic::new(
                    Code::Duplicate,
                    format!("{what} is declared more than once"),
                    span(extra),
                )
                .label("second declaration")
                .secondary(span(&items[0]), "first declared here")
                .help("keep one declaration"),
            );
        }
    }
}

/// The first of `items`, with DP013 on each later one ([`duplicate`]);
/// `what` is worded only when there is one.
fn declared_once<'a, T>(
    c: &mut Checker,
    items: &'a [T],
    span: impl Fn(&T) -> Span,
    what: impl FnOnce() -> String,
) -> Option<&'a T> {
    if items.len() > 1 {
        duplicate(c, items, span, &what());
    }
    items.first()
}

/// From this many queries on, the independent halves of a pass run on two
/// threads; below it a thread would cost more than it saves.
const PARALLEL_QUERIES: usize = 256;

/// `(a(), b())`, with `b` on a second thread when `parallel`: for two
/// passes that read the same data and share nothing they write but the
/// accounting cache (whose answers are the computed ones), so that the
/// results are the same either way.
fn both<A, B: Send>(parallel: bool, a: impl FnOnce() -> A, b: impl FnOnce() -> B + Send) -> (A, B) {
    if !parallel {
        let x = a();
        return (x, b());
    }
    // the second thread works for the same analysis: same accounting cache
    let cache = crate::memo::current();
    std::thread::scope(|s| {
        let hb = s.spawn(move || crate::memo::in_same_analysis(cache, b));
        let x = a();
        let y = hb
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (x, y)
    })
}

/// Every query planned ([`plan_query`]), in the plan's order. From
/// [`PARALLEL_PLANNING`] queries on, each half of the list is planned on
/// its own thread with its own [`Checker`], and the second half's
/// diagnostics are appended after the first's: the same queries and the
/// same diagnostics in the same order as one pass over the list.
fn plan_queries<'a>(
    c: &mut Checker,
    qs: &'a [ast::Query],
    datasets: &HashMap<&str, DatasetInfo>,
    adjacency: Adjacency,
    delta: f64,
) -> Vec<QueryPlan<'a>> {
    let run = |c: &mut Checker, qs: &'a [ast::Query]| -> Vec<QueryPlan<'a>> {
        qs.iter()
            .filter_map(|q| plan_query(c, q, datasets, adjacency, Some(delta)))
            .collect()
    };
    if qs.len() < PARALLEL_PLANNING {
        return run(c, qs);
    }
    // Each thread plans its half into its half of one list of slots, which
    // becomes the list of plans where it lies (an `Option` of a plan is a
    // plan's size: the collect reuses the slots' memory). Two lists joined
    // into a third touched and copied twice the memory (at 10⁵ queries
    // 40 MB, the serial stretch's page faults).
    let half = qs.len() / 2;
    let (left, right) = qs.split_at(half);
    let fill = |c: &mut Checker, qs: &'a [ast::Query], slots: &mut [Option<QueryPlan<'a>>]| {
        for (q, slot) in qs.iter().zip(slots) {
            *slot = plan_query(c, q, datasets, adjacency, Some(delta));
        }
    };
    let mut slots: Vec<Option<QueryPlan<'a>>> = Vec::with_capacity(qs.len());
    slots.resize_with(qs.len(), || None);
    let (first, second) = slots.split_at_mut(half);
    let mut c2 = Checker {
        diags: Vec::new(),
        broken: c.broken.clone(),
    };
    both(
        true,
        || fill(c, left, first),
        || fill(&mut c2, right, second),
    );
    c.diags.append(&mut c2.diags);
    slots.into_iter().flatten().collect()
}

/// From this many queries on, [`plan_queries`] uses two threads.
pub(crate) const PARALLEL_PLANNING: usize = 2048;

/// Runs the passes in order and assembles the plan's report; the report is
/// `None` when the privacy block is missing or broken.
pub(crate) fn check(
    plan: &ast::Plan,
    options: &AnalysisOptions,
) -> (Option<CheckedPlan>, Vec<Diagnostic>) {
    let mut c = Checker {
        diags: Vec::new(),
        broken: recover::BrokenNames::of(plan),
    };
    let privacy = resolve_privacy(&mut c, plan);
    let datasets = resolve_datasets(&mut c, plan, privacy.as_ref());
    let Some(privacy) = privacy else {
        // Still resolve names in queries so that the editor shows them.
        for q in &plan.queries {
            let _ = plan_query(&mut c, q, &datasets, Adjacency::AddRemove, None);
        }
        check_names(&mut c, plan);
        return (None, c.diags);
    };

    let mut queries = plan_queries(
        &mut c,
        &plan.queries,
        &datasets,
        privacy.adjacency,
        privacy.delta,
    );
    check_names(&mut c, plan);
    check_publishes(&mut c, plan);
    // DP009 (`lints.rs`): the hints on `n times` first, then the
    // statistics released again. Grouping the statistics reads each query's
    // aggregation in the AST (at 10⁵ queries 10⁵ scattered reads, the
    // longest of these passes); a large plan groups them on a second thread
    // while the passes below calibrate the noise, and their hints go where
    // the single pass put them (nothing below reads the hints).
    lints::repeated_schedules(&mut c, &queries);
    let inputs = lints::statistic_inputs(&queries);
    let hints_at = c.diags.len();
    let (noise, groups) = both(
        queries.len() >= PARALLEL_PLANNING,
        || calibrate(&mut c, &mut queries, privacy, options),
        || lints::same_statistic_groups(&inputs),
    );
    drop(inputs);
    c.insert_hints(hints_at, lints::same_statistic_hints(&queries, &groups));
    let Calibrated {
        releases,
        privacy,
        full,
        choice,
        reserve,
        delta_thr,
    } = noise;
    // Any error, any broken item, or any query left out of the accounting
    // (defensively: every such query also has an error) means no claim.
    let has_errors = c.diags.iter().any(|d| d.is_error())
        || !plan.broken.is_empty()
        || queries.len() != plan.queries.len()
        || queries.iter().any(|q| !q.ok);
    // The attack risk is wanted only with a total, which needs these. Of
    // the three jobs (the total, the queries' reports, the attack risk)
    // the first thread to finish its own job computes it: beside the
    // total when the reports are quick, after the total when they are not
    // (so a slow pass never has a third job competing with it). It is
    // dropped when the total is not claimed after all. δ as below: the
    // budget's less the thresholds' reserve.
    let attack_wanted = !has_errors && options.accounting && !releases.is_empty();
    let attack_delta = full.delta - reserve;
    let attack_taken = std::sync::atomic::AtomicBool::new(false);
    let attack_slot = std::sync::Mutex::new(None);
    let attack_job = || {
        if attack_wanted && !attack_taken.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let risk = crate::memo::attack_risk(&releases, attack_delta, delta_thr);
            *attack_slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = risk;
        }
    };
    let (mut account, reports) = both(
        queries.len() >= PARALLEL_QUERIES,
        || {
            let account = account_total(&mut c, &releases, &privacy, choice, options, has_errors);
            attack_job();
            account
        },
        || {
            let reports = query_reports(&mut queries, &privacy, options);
            attack_job();
            reports
        },
    );
    let attack = attack_slot
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(t) = &mut account.total {
        selection::add_to_total(t, delta_thr);
    }
    for a in &mut account.accountants {
        if let Some(d) = &mut a.delta {
            *d += delta_thr;
        }
    }
    let privacy = full;
    if let Some(t) = &account.total {
        let fits = budget(&mut c, t, &reports, &privacy);
        if !fits {
            accuracy::budget_conflict(&mut c, &queries, t, &privacy);
        }
        account.within_budget = Some(fits);
    }
    let accounted = options.accounting && !has_errors && !releases.is_empty();
    per_person_guarantee(&mut c, &datasets, &queries, &privacy, choice, accounted);
    large_delta(&mut c, &privacy);
    let attack = account.total.as_ref().and(attack);
    let mut report = plan_report(plan, &privacy, &queries, account, reports);
    report.attack_risk = attack;
    (Some(report), c.diags)
}

/// The noise of every part set and the releases to account, from
/// [`calibrate`].
struct Calibrated {
    releases: Vec<acct::Release>,
    /// the budget's privacy less the thresholds' reserve (the accountants')
    privacy: Privacy,
    /// the budget's privacy as declared
    full: Privacy,
    /// the accountant the plan names (`None`: the best of them)
    choice: Option<acct::Accountant>,
    /// the share of δ kept for the thresholds of keys from the data
    reserve: f64,
    /// the δ the thresholds cost
    delta_thr: f64,
}

/// The passes that set each part's noise (`epsilon` parts, accuracy
/// targets, `auto` parts, the thresholds of keys from the data) and check
/// it, in this order, then the releases the accountants compose.
fn calibrate(
    c: &mut Checker,
    queries: &mut [QueryPlan],
    privacy: Privacy,
    options: &AnalysisOptions,
) -> Calibrated {
    let choice = privacy.accountant.accountant();
    // keys from the data: part of δ is kept for their thresholds, the
    // accountants get the rest (`selection.rs`)
    let reserve = selection::reserved_delta(queries, privacy.delta);
    let full = privacy.clone();
    let privacy = Privacy {
        delta: privacy.delta - reserve,
        ..privacy
    };
    calibrate_epsilon_parts(c, queries);
    accuracy::calibrate_accuracy(c, queries);
    // Always the precise calibration, so that every front end shows the
    // same noise.
    if options.accounting {
        calibrate_auto(c, queries, &privacy, choice, true);
    }
    let delta_thr = selection::thresholds(c, queries, full.delta, full.adjacency);
    if reserve > 0.0 && options.accounting {
        selection::check_reserve(c, delta_thr, reserve, full.budget_span);
    }
    accuracy::check_accuracy(c, queries);
    rows::sparse_cells(c, queries, privacy.population);
    Calibrated {
        releases: releases_of(queries, &|_| 1.0),
        privacy,
        full,
        choice,
        reserve,
        delta_thr,
    }
}

/// The checked plan's report from the passes' results.
fn plan_report(
    plan: &ast::Plan,
    privacy: &Privacy,
    queries: &[QueryPlan],
    account: Account,
    reports: Vec<QueryReport>,
) -> CheckedPlan {
    let total_releases: u64 = queries.iter().filter(|q| q.ok).map(|q| q.releases).sum();
    CheckedPlan {
        name: plan.name.as_ref().map(|n| n.value.clone()),
        unit: unit_report(&privacy.unit),
        adjacency: privacy.adjacency,
        budget: BudgetReport {
            epsilon: privacy.epsilon,
            delta: privacy.delta,
        },
        accountant_requested: privacy.accountant,
        total: account.total,
        total_missing: account.total_missing,
        accountants: account.accountants,
        within_budget: account.within_budget,
        attack_risk: None,
        population: privacy.population,
        releases: total_releases,
        queries: reports,
        publishes: plan
            .publishes
            .iter()
            .map(|p| PublishReport {
                name: p.name.value.clone(),
                source: p.source.value.clone(),
                epsilon: 0.0,
                condition: p.condition.as_ref().and_then(|c| match &c.operand {
                    ast::Operand::Released { name } => Some(ConditionSpec {
                        operand: name.value.clone(),
                        cmp: c.cmp.value,
                        value: c.value.value,
                    }),
                    // a data-dependent condition is an error (DP006)
                    ast::Operand::Data { .. } => None,
                }),
            })
            .collect(),
        datasets: plan.datasets.iter().map(dataset_spec).collect(),
    }
}

/// A dataset as declared: its columns with their public domains and
/// bounds, its contribution bounds (the first value of each) and its
/// invalid-row rule.
fn dataset_spec(ds: &ast::Dataset) -> DatasetSpec {
    let columns = ds
        .columns
        .iter()
        .map(|c| {
            let (kind, domain, bounds) = match &c.ty.value {
                ast::ColumnType::Id => (ColumnKind::Id, None, None),
                ast::ColumnType::Category { domain } => (
                    ColumnKind::Category,
                    match domain {
                        Some(ast::Domain::List { values }) => {
                            Some(values.iter().map(|v| v.value.clone()).collect())
                        }
                        _ => None,
                    },
                    None,
                ),
                ast::ColumnType::Int { bounds } => (ColumnKind::Int, None, public_bounds(bounds)),
                ast::ColumnType::Float { bounds } => {
                    (ColumnKind::Float, None, public_bounds(bounds))
                }
                ast::ColumnType::Time => (ColumnKind::Time, None, None),
            };
            ColumnSpec {
                name: c.name.value.clone(),
                kind,
                domain,
                bounds,
            }
        })
        .collect();
    let contribution = ds.contributions.first();
    let first = |v: Option<&Vec<ast::Number>>| v.and_then(|v| v.first()).map(|n| n.value as u64);
    DatasetSpec {
        name: ds.name.value.clone(),
        source: ds.sources.first().map(|s| s.value.clone()),
        columns,
        invalid_rows: ds
            .invalid_rows
            .first()
            .map_or(InvalidRule::Drop, |r| r.value),
        rows_per_unit: first(contribution.map(|c| &c.rows_per_unit)),
        groups_per_unit: first(contribution.map(|c| &c.groups_per_unit)),
        rows_per_group: first(contribution.map(|c| &c.rows_per_group)),
        windows_per_unit: first(contribution.map(|c| &c.windows_per_unit)),
        rows_per_window: first(contribution.map(|c| &c.rows_per_window)),
        // its errors (a rate outside (0, 1], replace neighbours, a row
        // unit) are the checker's (`sample.rs`): a plan with one is not
        // compiled
        sample: ds
            .samples
            .first()
            .map(ast::Sample::q)
            .filter(|q| q.is_finite() && *q > 0.0 && *q < 1.0),
    }
}

/// Bounds whose two ends are public literals.
fn public_bounds(b: &Option<ast::Bounds>) -> Option<[f64; 2]> {
    match b.as_ref().map(|b| (&b.lo, &b.hi))? {
        (ast::Bound::Public { value: lo }, ast::Bound::Public { value: hi }) => {
            Some([lo.value, hi.value])
        }
        _ => None,
    }
}

fn data_dependent(c: &mut Checker, span: Span, what: &str, help: &str) {
    c.error(
        Diagnostic::new(
            Code::DataDependent,
            format!("{what} is computed from private data: a data-dependent parameter is not accounted, and it reveals the data by itself"),
            span,
        )
        .label("computed from private data")
        .help(help.to_string()),
    );
}

/// A plan of 10⁵ queries holds 10⁵ of each of these at once (the AST,
/// the plans, the specs and the reports): each byte of an inline slot is
/// 0.1 MB of `dpplan check`'s peak memory (issue 34: under 300 MB at 10⁵
/// queries). The parts few queries have are boxed; these bounds keep a new
/// inline field from undoing that unnoticed (64-bit targets).
#[cfg(all(test, target_pointer_width = "64"))]
mod sizes {
    use std::mem::size_of;

    #[test]
    fn per_query_structures_stay_small() {
        let sizes = [
            ("QueryPlan", size_of::<super::query::QueryPlan>(), 400),
            // (+8: the boxed `top`)
            ("QuerySpec", size_of::<crate::report::QuerySpec>(), 304),
            // (+8: the boxed `postprocess`; +8: the boxed `sample`)
            ("QueryReport", size_of::<crate::report::QueryReport>(), 346),
            // the rare statements boxed together (`ast::Extras`): 296 → 136
            ("ast::Query", size_of::<dpplan_syntax::ast::Query>(), 136),
            // (+8: the `with_total` flag, padded)
            (
                "ast::Aggregate",
                size_of::<dpplan_syntax::ast::Aggregate>(),
                248,
            ),
        ];
        for (name, size, bound) in sizes {
            assert!(
                size <= bound,
                "{name} is {size} bytes, more than {bound}: box a rare field"
            );
        }
    }
}
