use std::collections::HashMap;

use dpplan_accounting as acct;
use dpplan_accounting::roots::{self, find_bracket, Bisection, Bracket, End, Midpoint};
use dpplan_diagnostics::{Code, Diagnostic, Severity, Span};
use dpplan_syntax::ast::{
    self, AccountantChoice, Adjacency, AggKind, ColumnType, NoiseKind, NoiseParam, Unit,
};

use crate::report::*;
use crate::schedule::{self, ScheduleError};
use crate::sensitivity::{self, fmt_num, Derived, UnitBound};

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
    /// total (DP011, DP018) is reported and no guarantee is claimed: the
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

struct Privacy {
    unit: Unit,
    unit_span: Span,
    adjacency: Adjacency,
    epsilon: f64,
    delta: f64,
    budget_span: Span,
    accountant: AccountantChoice,
    population: Option<f64>,
}

struct ColumnInfo<'a> {
    name_span: Span,
    ty: &'a ColumnType,
    /// Public bounds when declared and valid.
    bounds: Option<(f64, f64)>,
    /// Public domain size when declared and valid.
    domain: Option<u64>,
}

struct DatasetInfo<'a> {
    ds: &'a ast::Dataset,
    columns: HashMap<&'a str, ColumnInfo<'a>>,
    /// `None` when a user-level unit has no rows_per_unit (DP001).
    bound: Option<UnitBound>,
    /// rows_per_unit as declared (for the per-person warning under a row unit).
    declared_rows: Option<u64>,
    id_columns: Vec<&'a ast::Column>,
}

/// How a part's noise is set before calibration.
#[derive(Debug, Clone)]
enum Scale {
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
}

#[derive(Debug, Clone)]
struct Part {
    role: &'static str,
    /// Zero sensitivity: the statistic is public under this adjacency; it
    /// needs no noise and is never passed to the accountants.
    public: bool,
    kind: NoiseKind,
    derived: Derived,
    scale: Scale,
    resolved: Option<f64>,
}

struct QueryPlan<'a> {
    q: &'a ast::Query,
    dataset: String,
    aggregation: String,
    schedule: String,
    releases: u64,
    parts: Vec<Part>,
    /// Rows per unit of its dataset (for group privacy statements).
    dataset_name: String,
    ok: bool,
}

struct Checker {
    diags: Vec<Diagnostic>,
}

impl Checker {
    fn error(&mut self, code: Code, span: Span, message: impl Into<String>) -> &mut Diagnostic {
        self.diags.push(Diagnostic::new(code, message, span));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }
}

trait Build {
    fn with_help(&mut self, h: impl Into<String>) -> &mut Self;
    fn with_label(&mut self, l: impl Into<String>) -> &mut Self;
    fn with_secondary(&mut self, span: Span, l: impl Into<String>) -> &mut Self;
}

impl Build for Diagnostic {
    fn with_help(&mut self, h: impl Into<String>) -> &mut Self {
        self.help = Some(h.into());
        self
    }
    fn with_label(&mut self, l: impl Into<String>) -> &mut Self {
        self.primary.message = l.into();
        self
    }
    fn with_secondary(&mut self, span: Span, l: impl Into<String>) -> &mut Self {
        self.secondary.push(dpplan_diagnostics::Label {
            span,
            message: l.into(),
        });
        self
    }
}

fn to_acct_kind(k: NoiseKind) -> acct::NoiseKind {
    match k {
        NoiseKind::Laplace => acct::NoiseKind::Laplace,
        NoiseKind::Gaussian => acct::NoiseKind::Gaussian,
        NoiseKind::DiscreteLaplace => acct::NoiseKind::DiscreteLaplace,
        NoiseKind::DiscreteGaussian => acct::NoiseKind::DiscreteGaussian,
    }
}

fn mechanism(kind: NoiseKind, scale: f64, d: &Derived, sens_mult: f64) -> acct::Mechanism {
    acct::Mechanism {
        kind: to_acct_kind(kind),
        scale,
        sensitivity: acct::Sensitivity {
            l1: d.l1 * sens_mult,
            l2: d.l2 * sens_mult,
            coords: d.coords,
        },
    }
}

fn accountant_of(choice: AccountantChoice) -> Option<acct::Accountant> {
    Some(match choice {
        AccountantChoice::Best => return None,
        AccountantChoice::Basic => acct::Accountant::Basic,
        AccountantChoice::Advanced => acct::Accountant::Advanced,
        AccountantChoice::Zcdp => acct::Accountant::Zcdp,
        AccountantChoice::Rdp => acct::Accountant::Rdp,
        AccountantChoice::Gdp => acct::Accountant::Gdp,
        AccountantChoice::Pld => acct::Accountant::Pld,
    })
}

/// The smallest multiplier t in [lo, hi] that fits (ε falls as the noise
/// grows), by bisection at geometric midpoints until hi/lo < 1 + 10⁻⁹, at
/// most `steps` steps. `hi` must fit; the upper end is returned, so the
/// result fits.
fn bisect(lo: f64, hi: f64, steps: u32, fits: &dyn Fn(f64) -> bool) -> f64 {
    let rule = Bisection {
        rel: 1e-9,
        abs: 0.0,
        max_steps: steps,
        midpoint: Midpoint::Geometric,
        end: End::Upper,
    };
    roots::bisect(lo, hi, &rule, fits)
}

/// Solves for the noise multiplier: first with the fast accountants (or the
/// requested one), then — for `best` when `precise` — refined with every
/// accountant in a narrow bracket. The result always meets the target under
/// the accountant that reports the plan's total, since that accountant's ε is
/// at most the one the search used.
fn solve_multiplier(
    build: &dyn Fn(f64) -> Vec<acct::Release>,
    target: f64,
    delta: f64,
    choice: Option<acct::Accountant>,
    precise: bool,
) -> Option<f64> {
    let fits_fast = |t: f64| -> bool {
        let rs = build(t);
        let r = match choice {
            Some(a) => acct::epsilon(&rs, delta, a),
            None => fast_best(&rs, delta),
        };
        r.is_ok_and(|b| b.epsilon <= target)
    };
    let fits_best = |x: f64| acct::best(&build(x), delta).is_ok_and(|b| b.epsilon <= target);
    match search(&fits_fast, 100) {
        Some(t) if choice.is_some() || !precise => Some(t),
        // The tighter accountants need less noise: look below t.
        Some(t) => {
            let floor = t / 4.0;
            if fits_best(floor) {
                Some(t)
            } else {
                Some(bisect(floor, t, 12, &fits_best))
            }
        }
        // The fast accountants cannot fit the plan at any noise level (the
        // fixed queries alone exceed the budget under them): search with
        // every accountant.
        None if choice.is_none() && precise => search(&fits_best, 30),
        None => None,
    }
}

/// Brackets the smallest fitting multiplier by powers of 4 (up from 1, then
/// down from the first that fits), then bisects.
fn search(fits: &dyn Fn(f64) -> bool, steps: u32) -> Option<f64> {
    let Bracket::Found { first_held: hi, .. } = find_bracket(1.0, 40, |x| Some(x * 4.0), fits)
    else {
        return None;
    };
    match find_bracket(hi / 4.0, 40, |x| Some(x / 4.0), |x| !fits(x)) {
        Bracket::Found {
            last_failed,
            first_held: lo,
        } => Some(bisect(lo, last_failed.unwrap_or(hi), steps, fits)),
        Bracket::Exhausted { last_tried } => Some(last_tried),
    }
}

/// The accountants that are fast for any plan (closed forms and a 1-D
/// optimisation): exact Gaussian, RDP, zCDP, basic. Each is a proven upper
/// bound, so their minimum is too. Used for per-query figures and as the
/// first stage of calibration; the plan's total uses every accountant.
pub(crate) const FAST: [acct::Accountant; 4] = [
    acct::Accountant::Gdp,
    acct::Accountant::Rdp,
    acct::Accountant::Zcdp,
    acct::Accountant::Basic,
];

pub(crate) fn fast_best(
    releases: &[acct::Release],
    delta: f64,
) -> Result<acct::Bound, acct::AccountingError> {
    acct::best_among(releases, delta, &FAST, acct::NoBound::Last)
}

fn valid_positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// A positive whole number, or a DP007 diagnostic.
fn whole(c: &mut Checker, n: &ast::Number, what: &str) -> Option<u64> {
    let v = n.value;
    if !v.is_finite() || v < 1.0 || v.fract() != 0.0 || v > 1e15 {
        c.error(
            Code::InvalidParameter,
            n.span,
            format!("{what} must be a whole number of at least 1, found {v}"),
        )
        .with_label("not a positive whole number")
        .with_help(format!("write {what} as a whole number such as `5`"));
        return None;
    }
    Some(v as u64)
}

fn duplicate<T>(c: &mut Checker, items: &[T], span: impl Fn(&T) -> Span, what: &str) {
    if items.len() > 1 {
        for extra in &items[1..] {
            c.error(
                Code::Duplicate,
                span(extra),
                format!("{what} is declared more than once"),
            )
            .with_label("second declaration")
            .with_secondary(span(&items[0]), "first declared here")
            .with_help("keep one declaration");
        }
    }
}

pub(crate) fn check(
    plan: &ast::Plan,
    options: &AnalysisOptions,
) -> (Option<PlanReport>, Vec<Diagnostic>) {
    let mut c = Checker { diags: Vec::new() };
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

    let mut queries: Vec<QueryPlan> = plan
        .queries
        .iter()
        .filter_map(|q| plan_query(&mut c, q, &datasets, privacy.adjacency, Some(privacy.delta)))
        .collect();
    check_names(&mut c, plan);
    check_publishes(&mut c, plan);
    check_rereleases(&mut c, &queries);

    let choice = accountant_of(privacy.accountant);
    calibrate_epsilon_parts(&mut c, &mut queries);
    // Always the precise calibration, so that every front end shows the
    // same noise.
    if options.accounting {
        calibrate_auto(&mut c, &mut queries, &privacy, choice, true);
    }

    // The plan's releases.
    let releases_of = |qs: &[QueryPlan], mult: &dyn Fn(&QueryPlan) -> f64| -> Vec<acct::Release> {
        qs.iter()
            .filter(|q| q.ok)
            .flat_map(|q| {
                let m = mult(q);
                q.parts.iter().filter(|p| !p.public).filter_map(move |p| {
                    Some(acct::Release {
                        mechanism: mechanism(p.kind, p.resolved?, &p.derived, m),
                        count: q.releases,
                    })
                })
            })
            .collect()
    };
    let releases = releases_of(&queries, &|_| 1.0);
    let total_releases: u64 = queries.iter().filter(|q| q.ok).map(|q| q.releases).sum();

    // Any error, any broken item, or any query left out of the accounting
    // (defensively: every such query also has an error) means no claim.
    let has_errors = c.diags.iter().any(|d| d.is_error())
        || !plan.broken.is_empty()
        || queries.len() != plan.queries.len()
        || queries.iter().any(|q| !q.ok);
    let mut total = None;
    let mut total_missing = None;
    let mut accountants = Vec::new();
    let mut within_budget = None;
    if has_errors {
        total_missing =
            Some("the plan has errors: no guarantee is claimed until they are fixed".to_string());
    } else if !options.accounting {
        total_missing = Some("not accounted in this pass".to_string());
    } else if releases.is_empty() {
        total_missing = Some("the plan releases nothing".to_string());
        within_budget = Some(true);
    } else {
        // Every accountant once (or only the requested one); the total is
        // the requested accountant's bound, or the minimum for `best`.
        let results: Vec<(acct::Accountant, Result<acct::Bound, acct::AccountingError>)> =
            match (choice, options.all_accountants) {
                (_, true) => acct::all(&releases, privacy.delta),
                (Some(a), false) => vec![(a, acct::epsilon(&releases, privacy.delta, a))],
                (None, false) => {
                    let r = acct::best(&releases, privacy.delta);
                    let a = r.as_ref().map_or(acct::Accountant::Basic, |b| b.accountant);
                    vec![(a, r)]
                }
            };
        let chosen: Result<acct::Bound, acct::AccountingError> = match choice {
            Some(a) => results
                .iter()
                .find(|(x, _)| *x == a)
                .map(|(_, r)| r.clone())
                .unwrap_or_else(|| acct::epsilon(&releases, privacy.delta, a)),
            None => acct::best_of(results.iter().map(|(_, r)| r.clone()), acct::NoBound::Last),
        };
        match chosen {
            Ok(b) => {
                total = Some(TotalReport {
                    epsilon: b.epsilon,
                    delta: b.delta,
                    accountant: b.accountant.name().to_string(),
                    accountant_name: b.accountant.to_string(),
                    detail: b.detail.clone(),
                });
            }
            Err(e) => {
                let msg = format!(
                    "the {} accountant cannot bound this plan: {e}",
                    privacy.accountant.as_str()
                );
                c.error(Code::Accounting, privacy.budget_span, msg.clone())
                    .with_label("no bound for this budget")
                    .with_help(
                        "use `accountant best`, which picks the tightest accountant that applies",
                    );
                total_missing = Some(msg);
            }
        }
        if options.all_accountants {
            for (a, r) in results {
                accountants.push(match r {
                    Ok(b) => AccountantReport {
                        accountant: a.name().to_string(),
                        accountant_name: a.to_string(),
                        epsilon: Some(b.epsilon),
                        delta: Some(b.delta),
                        detail: Some(b.detail),
                        error: None,
                    },
                    Err(e) => AccountantReport {
                        accountant: a.name().to_string(),
                        accountant_name: a.to_string(),
                        epsilon: None,
                        delta: None,
                        detail: None,
                        error: Some(e.to_string()),
                    },
                });
            }
        }
    }

    // Per-query costs.
    let mut reports = Vec::new();
    for q in &queries {
        let parts_releases = |count: u64| -> Option<Vec<acct::Release>> {
            q.parts
                .iter()
                .filter(|p| !p.public)
                .map(|p| {
                    Some(acct::Release {
                        mechanism: mechanism(p.kind, p.resolved?, &p.derived, 1.0),
                        count,
                    })
                })
                .collect()
        };
        let cost = |count: u64| -> Option<CostReport> {
            let rs = parts_releases(count)?;
            let b = fast_best(&rs, privacy.delta).ok()?;
            let rho: Option<f64> = rs
                .iter()
                .map(|r| acct::rho(&r.mechanism).map(|x| x * r.count as f64))
                .sum();
            Some(CostReport {
                epsilon: b.epsilon,
                delta: b.delta,
                rho,
                accountant: b.accountant.name().to_string(),
            })
        };
        let (per_release, qtotal) = if q.ok && options.per_query_costs && options.accounting {
            (cost(1), cost(q.releases))
        } else {
            (None, None)
        };
        let parts: Vec<PartReport> = q.parts.iter().map(part_report).collect();
        let first = parts.first().cloned();
        reports.push(QueryReport {
            name: q.q.name.value.clone(),
            span: q.q.span,
            name_span: q.q.name.span,
            dataset: q.dataset.clone(),
            aggregation: q.aggregation.clone(),
            schedule: q.schedule.clone(),
            releases: q.releases,
            mechanism: first
                .as_ref()
                .map(|p| p.mechanism.clone())
                .unwrap_or(MechanismReport {
                    kind: "none".into(),
                    scale: None,
                    sigma: None,
                    calibration: "none".into(),
                }),
            l1: first.as_ref().map_or(f64::NAN, |p| p.l1),
            l2: first.as_ref().map_or(f64::NAN, |p| p.l2),
            parts,
            per_release,
            total: qtotal,
        });
    }

    // Budget.
    if let Some(t) = &total {
        let fits = t.epsilon <= privacy.epsilon * (1.0 + 1e-12);
        within_budget = Some(fits);
        if !fits {
            let mut ranked: Vec<&QueryReport> =
                reports.iter().filter(|r| r.total.is_some()).collect();
            ranked.sort_by(|a, b| {
                let ea = a.total.as_ref().map_or(0.0, |t| t.epsilon);
                let eb = b.total.as_ref().map_or(0.0, |t| t.epsilon);
                eb.total_cmp(&ea)
            });
            let top: Vec<&QueryReport> = ranked.into_iter().take(3).collect();
            let names: Vec<String> = top
                .iter()
                .map(|r| {
                    format!(
                        "`{}` (ε = {} alone over {} releases)",
                        r.name,
                        fmt_num(r.total.as_ref().map_or(0.0, |t| t.epsilon)),
                        r.releases
                    )
                })
                .collect();
            let d = c
                .error(
                    Code::OverBudget,
                    privacy.budget_span,
                    format!(
                        "the plan spends ε = {} at δ = {} ({}) but its budget is ε = {}; the largest costs: {}",
                        fmt_num(t.epsilon),
                        fmt_num(privacy.delta),
                        t.accountant_name,
                        fmt_num(privacy.epsilon),
                        names.join(", ")
                    ),
                )
                .with_label("budget exceeded")
                .with_help("release less often, add more noise (or `noise … auto`), tighten the contribution bounds, or re-publish instead of re-releasing");
            for r in &top {
                d.with_secondary(
                    r.name_span,
                    format!(
                        "ε = {} alone",
                        fmt_num(r.total.as_ref().map_or(0.0, |t| t.epsilon))
                    ),
                );
            }
        }
    }

    // Per-person guarantee of a row- or event-level unit (DP008).
    if !matches!(privacy.unit, Unit::User { .. }) {
        for info in datasets.values() {
            let Some(id_col) = info.id_columns.first() else {
                continue;
            };
            let name = info.ds.name.value.as_str();
            let used = queries.iter().any(|q| q.dataset_name == name);
            let statement = match info.declared_rows {
                Some(k) if options.accounting && !has_errors && !releases.is_empty() => {
                    let scaled = releases_of(&queries, &|q: &QueryPlan| {
                        if q.dataset_name == name {
                            k as f64
                        } else {
                            1.0
                        }
                    });
                    let per_person = match choice {
                        Some(a) => acct::epsilon(&scaled, privacy.delta, a),
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
            let d = c
                .error(
                    Code::WeakUnit,
                    id_col.name.span,
                    format!(
                        "the privacy unit is one {unit_word}, but `{name}` identifies persons by `{}`: {statement}",
                        id_col.name.value
                    ),
                )
                .with_secondary(privacy.unit_span, format!("the guarantee protects one {unit_word}"))
                .with_help(format!(
                    "protect persons with `unit user by {}` and a `contribution {{ rows_per_unit N }}` bound",
                    id_col.name.value
                ));
            d.severity = Severity::Warning;
            if !used {
                d.notes.push(format!("no query reads `{name}` yet"));
            }
        }
    }

    // δ next to the population (DP010).
    if let Some(pop) = privacy.population {
        if pop.is_finite() && pop >= 1.0 && privacy.delta >= 1.0 / pop {
            let d = c
                .error(
                    Code::LargeDelta,
                    privacy.budget_span,
                    format!(
                        "δ = {} is at least 1/population = {}: a mechanism that publishes one random person's data outright satisfies this δ",
                        fmt_num(privacy.delta),
                        fmt_num(1.0 / pop)
                    ),
                )
                .with_help(format!("choose δ well below 1/population, e.g. δ ≤ {}", fmt_num(0.01 / pop)));
            d.severity = Severity::Warning;
        }
    }

    let unit = match &privacy.unit {
        Unit::Event => UnitReport {
            kind: "event".into(),
            id: None,
            description: "one event (row); a person with several events is protected only by group privacy".into(),
        },
        Unit::Row => UnitReport {
            kind: "row".into(),
            id: None,
            description: "one row; a person with several rows is protected only by group privacy".into(),
        },
        Unit::User { id } => UnitReport {
            kind: "user".into(),
            id: Some(id.value.clone()),
            description: format!("all rows of one user (identified by `{}`), within the declared contribution bounds", id.value),
        },
    };
    let report = PlanReport {
        name: plan.name.as_ref().map(|n| n.value.clone()),
        unit,
        adjacency: privacy.adjacency.as_str().into(),
        budget: BudgetReport {
            epsilon: privacy.epsilon,
            delta: privacy.delta,
        },
        accountant_requested: privacy.accountant.as_str().into(),
        total,
        total_missing,
        accountants,
        within_budget,
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
            })
            .collect(),
    };
    (Some(report), c.diags)
}

/// The stable id of a part's statistic (the executable plan keys on it).
fn statistic_of(role: &str) -> &'static str {
    match role {
        "count" => "count",
        "sum" => "sum",
        "histogram" | "grouped count" => "grouped_count",
        _ => "grouped_sum",
    }
}

fn part_report(p: &Part) -> PartReport {
    let statistic = statistic_of(p.role).to_string();
    if p.public {
        return PartReport {
            role: p.role.into(),
            statistic,
            mechanism: MechanismReport {
                kind: "none".into(),
                scale: None,
                sigma: None,
                calibration: "none".into(),
            },
            l1: 0.0,
            l2: 0.0,
            coords: p.derived.coords,
            derivation: p.derived.steps.clone(),
            noise_std: 0.0,
            ci95_half_width: 0.0,
        };
    }
    let scale = p.resolved.unwrap_or(f64::NAN);
    let (std, ci) = crate::noise::spread(p.kind, scale);
    let calibration = match p.scale {
        Scale::Fixed(_) => "declared",
        Scale::FromEpsilon { .. } => "from epsilon",
        Scale::Auto { .. } => "auto",
    };
    PartReport {
        role: p.role.into(),
        statistic,
        mechanism: MechanismReport {
            kind: p.kind.as_str().into(),
            scale: (!p.kind.is_gaussian()).then_some(scale),
            sigma: p.kind.is_gaussian().then_some(scale),
            calibration: calibration.into(),
        },
        l1: p.derived.l1,
        l2: p.derived.l2,
        coords: p.derived.coords,
        derivation: p.derived.steps.clone(),
        noise_std: std,
        ci95_half_width: ci,
    }
}

fn resolve_privacy(c: &mut Checker, plan: &ast::Plan) -> Option<Privacy> {
    if plan.privacy.is_empty() {
        if !plan.privacy_broken {
            let span = plan.header_span.unwrap_or_default();
            c.error(Code::Missing, span, "the plan has no `privacy` block")
                .with_label("this plan declares no privacy unit, adjacency or budget")
                .with_help("add `privacy { unit user by <id> adjacency add_remove budget epsilon 1 delta 1e-6 }`");
        }
        return None;
    }
    duplicate(c, &plan.privacy, |p| p.keyword, "the `privacy` block");
    let p = &plan.privacy[0];
    duplicate(c, &p.units, |u| u.span, "the privacy unit");
    duplicate(c, &p.adjacencies, |u| u.span, "the adjacency");
    duplicate(c, &p.budgets, |u| u.span, "the budget");
    duplicate(c, &p.accountants, |u| u.span, "the accountant");
    duplicate(c, &p.populations, |u| u.span, "the population");
    let mut ok = true;
    let unit = match p.units.first() {
        Some(u) => Some(u),
        None => {
            c.error(
                Code::Missing,
                p.keyword,
                "the privacy block declares no unit",
            )
            .with_label("who is protected?")
            .with_help("add `unit user by <id column>` (or `unit row`, `unit event`)");
            ok = false;
            None
        }
    };
    let adjacency = match p.adjacencies.first() {
        Some(a) => a.value,
        None => {
            c.error(Code::Missing, p.keyword, "the privacy block declares no adjacency")
                .with_label("neighbouring datasets are undefined")
                .with_help("add `adjacency add_remove` (a unit is added or removed) or `adjacency replace` (a unit's data is replaced)");
            ok = false;
            Adjacency::AddRemove
        }
    };
    let (epsilon, delta, budget_span) = match p.budgets.first() {
        Some(b) => {
            let eps = b.epsilon.value;
            if !valid_positive(eps) {
                c.error(
                    Code::InvalidParameter,
                    b.epsilon.span,
                    format!("the budget's ε must be positive and finite, found {eps}"),
                )
                .with_label("invalid ε")
                .with_help("write a positive budget such as `budget epsilon 1.0 delta 1e-6`");
                ok = false;
            }
            // `delta 0` is pure ε-DP, as is no `delta`; δ ≥ 1 promises
            // nothing (every mechanism is (0, 1)-DP).
            let delta = b.delta.as_ref().map_or(0.0, |d| d.value);
            if let Some(d) = &b.delta {
                if !(d.value.is_finite() && d.value >= 0.0 && d.value < 1.0) {
                    c.error(Code::InvalidParameter, d.span, format!("δ must be at least 0 and below 1, found {}", d.value))
                        .with_label("invalid δ")
                        .with_help("δ bounds the additive slack of (ε, δ)-DP (a δ of 1 promises nothing); choose a value well below 1/population, such as 1e-7, or 0 (or no `delta`) for pure ε-DP");
                    ok = false;
                }
            }
            (eps, delta, b.span)
        }
        None => {
            c.error(
                Code::Missing,
                p.keyword,
                "the privacy block declares no budget",
            )
            .with_label("no ceiling for the plan")
            .with_help("add `budget epsilon <ε> delta <δ>`");
            ok = false;
            (f64::NAN, 0.0, p.keyword)
        }
    };
    let population = match p.populations.first() {
        Some(n) => {
            if !n.value.is_finite() || n.value < 1.0 {
                c.error(
                    Code::InvalidParameter,
                    n.span,
                    format!(
                        "the population must be a finite number of at least 1, found {}",
                        n.value
                    ),
                )
                .with_help(
                    "give an estimate of the number of protected units, e.g. `population 1000000`",
                );
                None
            } else {
                Some(n.value)
            }
        }
        None => None,
    };
    let unit = unit?;
    if !ok {
        return None;
    }
    Some(Privacy {
        unit: unit.value.clone(),
        unit_span: unit.span,
        adjacency,
        epsilon,
        delta,
        budget_span,
        accountant: p
            .accountants
            .first()
            .map_or(AccountantChoice::Best, |a| a.value),
        population,
    })
}

fn resolve_datasets<'a>(
    c: &mut Checker,
    plan: &'a ast::Plan,
    privacy: Option<&Privacy>,
) -> HashMap<&'a str, DatasetInfo<'a>> {
    let mut out: HashMap<&'a str, DatasetInfo<'a>> = HashMap::new();
    for ds in &plan.datasets {
        if let Some(prev) = out.get(ds.name.value.as_str()) {
            c.error(
                Code::Duplicate,
                ds.name.span,
                format!("dataset `{}` is declared twice", ds.name.value),
            )
            .with_secondary(prev.ds.name.span, "first declared here")
            .with_help("rename one of the datasets");
            continue;
        }
        duplicate(c, &ds.sources, |s| s.span, "the dataset's source");
        duplicate(c, &ds.contributions, |s| s.span, "the contribution block");
        duplicate(c, &ds.invalid_rows, |s| s.span, "the invalid-row rule");
        let mut columns: HashMap<&str, ColumnInfo> = HashMap::new();
        let mut id_columns = Vec::new();
        for col in &ds.columns {
            if let Some(prev) = columns.get(col.name.value.as_str()) {
                c.error(
                    Code::Duplicate,
                    col.name.span,
                    format!("column `{}` is declared twice", col.name.value),
                )
                .with_secondary(prev.name_span, "first declared here")
                .with_help("remove one of the declarations");
                continue;
            }
            let mut bounds = None;
            let mut domain = None;
            match &col.ty.value {
                ColumnType::Id => id_columns.push(col),
                ColumnType::Int { bounds: b } | ColumnType::Float { bounds: b } => {
                    if let Some(b) = b {
                        bounds = check_bounds(c, b, matches!(col.ty.value, ColumnType::Int { .. }));
                    }
                }
                ColumnType::Category { domain: d } => match d {
                    Some(ast::Domain::List { values }) => {
                        if values.is_empty() {
                            c.error(
                                Code::InvalidParameter,
                                col.ty.span,
                                "a category's public domain cannot be empty",
                            )
                            .with_help("list the public values, e.g. `category { \"a\", \"b\" }`");
                        } else {
                            let mut seen: HashMap<&str, Span> = HashMap::new();
                            for v in values {
                                if let Some(first) = seen.get(v.value.as_str()) {
                                    c.error(
                                        Code::Duplicate,
                                        v.span,
                                        format!("`{}` is listed twice in the domain", v.value),
                                    )
                                    .with_secondary(*first, "first listed here")
                                    .with_help("remove the repeated value");
                                } else {
                                    seen.insert(&v.value, v.span);
                                }
                            }
                            domain = Some(seen.len() as u64);
                        }
                    }
                    Some(ast::Domain::FromData { expr }) => {
                        data_dependent(
                            c,
                            expr.span,
                            "the group domain",
                            "list the public values: `category { \"a\", \"b\" }`",
                        );
                    }
                    None => {}
                },
            }
            columns.insert(
                &col.name.value,
                ColumnInfo {
                    name_span: col.name.span,
                    ty: &col.ty.value,
                    bounds,
                    domain,
                },
            );
        }
        // Contribution bounds.
        let contribution = ds.contributions.first();
        let mut rows = None;
        let mut groups = None;
        let mut per_group = None;
        if let Some(cb) = contribution {
            duplicate(c, &cb.rows_per_unit, |n| n.span, "rows_per_unit");
            duplicate(c, &cb.groups_per_unit, |n| n.span, "groups_per_unit");
            duplicate(c, &cb.rows_per_group, |n| n.span, "rows_per_group");
            rows = cb
                .rows_per_unit
                .first()
                .and_then(|n| whole(c, n, "rows_per_unit"));
            groups = cb
                .groups_per_unit
                .first()
                .and_then(|n| whole(c, n, "groups_per_unit"));
            per_group = cb
                .rows_per_group
                .first()
                .and_then(|n| whole(c, n, "rows_per_group"));
        }
        let bound = match privacy.map(|p| &p.unit) {
            Some(Unit::User { id }) => {
                // The unit's id column must exist and be an id.
                match columns.get(id.value.as_str()) {
                    None => {
                        c.error(
                            Code::Undefined,
                            ds.name.span,
                            format!(
                                "dataset `{}` has no column `{}`, the privacy unit's id",
                                ds.name.value, id.value
                            ),
                        )
                        .with_secondary(id.span, "the unit is identified by this column")
                        .with_help(format!(
                            "declare `column {} : id` in `{}`",
                            id.value, ds.name.value
                        ));
                    }
                    Some(col) if !matches!(col.ty, ColumnType::Id) => {
                        c.error(
                            Code::TypeMismatch,
                            col.name_span,
                            format!(
                                "`{}` identifies the privacy unit, so it must be declared `id`",
                                id.value
                            ),
                        )
                        .with_secondary(id.span, "the unit is identified by this column")
                        .with_help(format!("declare `column {} : id`", id.value));
                    }
                    _ => {}
                }
                match rows {
                    Some(r) => Some(UnitBound {
                        user: true,
                        rows: r,
                        groups,
                        rows_per_group: per_group,
                    }),
                    None => {
                        if contribution.is_none_or(|cb| cb.rows_per_unit.is_empty()) {
                            let span = contribution.map_or(ds.name.span, |cb| cb.span);
                            c.error(
                                Code::UnboundedContribution,
                                span,
                                format!(
                                    "the unit is a user, but `{}` does not bound how many rows a user contributes: one user's rows can move any statistic without limit",
                                    ds.name.value
                                ),
                            )
                            .with_label("no rows_per_unit bound")
                            .with_secondary(privacy.map_or(id.span, |p| p.unit_span), "user-level unit declared here")
                            .with_help(format!(
                                "add `contribution {{ rows_per_unit N }}` to `{}`: the runtime keeps at most N random rows per user",
                                ds.name.value
                            ));
                        }
                        None
                    }
                }
            }
            _ => Some(UnitBound {
                user: false,
                rows: 1,
                groups: Some(1),
                rows_per_group: Some(1),
            }),
        };
        out.insert(
            &ds.name.value,
            DatasetInfo {
                ds,
                columns,
                bound,
                declared_rows: rows,
                id_columns,
            },
        );
    }
    out
}

fn data_dependent(c: &mut Checker, span: Span, what: &str, help: &str) {
    c.error(
        Code::DataDependent,
        span,
        format!("{what} is computed from private data: a data-dependent parameter is not accounted, and it reveals the data by itself"),
    )
    .with_label("computed from private data")
    .with_help(help.to_string());
}

fn check_bounds(c: &mut Checker, b: &ast::Bounds, int: bool) -> Option<(f64, f64)> {
    let mut value = |bound: &ast::Bound| -> Option<f64> {
        match bound {
            ast::Bound::Public { value } => {
                if !value.value.is_finite() {
                    c.error(
                        Code::InvalidParameter,
                        value.span,
                        format!("a public bound must be finite, found {}", value.value),
                    )
                    .with_help("clamp bounds are finite public numbers, e.g. `in [0, 3600]`");
                    return None;
                }
                if int && value.value.fract() != 0.0 {
                    c.error(
                        Code::InvalidParameter,
                        value.span,
                        format!(
                            "an int column's bounds must be whole numbers, found {}",
                            value.value
                        ),
                    )
                    .with_help("round the bound outward, or declare the column `float`");
                    return None;
                }
                Some(value.value)
            }
            ast::Bound::FromData { expr } => {
                data_dependent(
                    c,
                    expr.span,
                    "this clamp bound",
                    "clamp to public bounds fixed in advance, e.g. `in [0, 3600]`",
                );
                None
            }
        }
    };
    let lo = value(&b.lo);
    let hi = value(&b.hi);
    let (lo, hi) = (lo?, hi?);
    if lo >= hi {
        c.error(
            Code::InvalidParameter,
            b.span,
            format!(
                "the lower bound {} must be below the upper bound {}",
                fmt_num(lo),
                fmt_num(hi)
            ),
        )
        .with_help("write the bounds as `in [lo, hi]` with lo < hi");
        return None;
    }
    Some((lo, hi))
}

fn describe_target(t: &ast::Target) -> String {
    match &t.column {
        Some(col) => format!("{}.{}", t.dataset.value, col.value),
        None => t.dataset.value.clone(),
    }
}

fn plan_query<'a>(
    c: &mut Checker,
    q: &'a ast::Query,
    datasets: &HashMap<&str, DatasetInfo>,
    adjacency: Adjacency,
    // `None` when the privacy block is invalid: nothing is said about δ then
    budget_delta: Option<f64>,
) -> Option<QueryPlan<'a>> {
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
        &q.sensitivities,
        |a| a.span,
        &format!("the declared sensitivity of `{}`", q.name.value),
    );
    let mut ok = true;
    let Some(agg) = q.aggregates.first() else {
        c.error(
            Code::Missing,
            q.name.span,
            format!(
                "query `{}` releases nothing: it has no aggregation",
                q.name.value
            ),
        )
        .with_help("add an aggregation such as `count(visits)` or `sum(visits.seconds)`");
        return None;
    };
    let noise = q.noises.first();
    if noise.is_none() {
        c.error(
            Code::Missing,
            q.name.span,
            format!("query `{}` has no noise", q.name.value),
        )
        .with_label("a release without noise is not private")
        .with_help("add `noise laplace epsilon 0.1` or `noise gaussian sigma 10`");
        ok = false;
    }
    let (releases, schedule_text) = match q.schedules.first() {
        None => {
            c.error(
                Code::Missing,
                q.name.span,
                format!("query `{}` has no schedule", q.name.value),
            )
            .with_label("how often is it released?")
            .with_help(
                "add `schedule once`, `schedule 4 times` or `schedule every 1 day for 365 days`",
            );
            ok = false;
            (0, String::new())
        }
        Some(s) => match schedule::releases(&s.value) {
            Ok(v) => v,
            Err(ScheduleError::Invalid(span, msg)) => {
                let span = if span == Span::default() {
                    s.span
                } else {
                    span
                };
                c.error(Code::InvalidParameter, span, msg)
                    .with_label("empty or invalid schedule")
                    .with_help("a schedule makes at least one release: `once`, `N times` with N ≥ 1, or `every <d> for <w>` with positive durations");
                ok = false;
                (0, String::new())
            }
            Err(ScheduleError::TooMany(ref n)) => {
                c.error(
                    Code::Limit,
                    s.span,
                    format!(
                        "the schedule makes {n} releases; dpplan accepts at most {}",
                        schedule::MAX_RELEASES
                    ),
                )
                .with_help("check the durations: this is most likely a typo");
                ok = false;
                (0, String::new())
            }
        },
    };

    let aggregation = format!(
        "{}({}{}{})",
        agg.kind.value.as_str(),
        describe_target(&agg.target),
        agg.by
            .as_ref()
            .map(|b| format!(" by {}", b.value))
            .unwrap_or_default(),
        agg.argument
            .as_ref()
            .map(|a| format!(", {}", a.value))
            .unwrap_or_default()
    );
    let dataset_name = agg.target.dataset.value.clone();
    let mut plan = QueryPlan {
        q,
        dataset: dataset_name.clone(),
        aggregation,
        schedule: schedule_text,
        releases,
        parts: Vec::new(),
        dataset_name,
        ok,
    };

    if agg.kind.value == AggKind::Quantile {
        c.error(
            Code::Unsupported,
            agg.kind.span,
            "quantiles are reserved syntax, not supported in this version",
        )
        .with_help("release a histogram over public bins instead, or wait for quantile support");
        plan.ok = false;
        return Some(plan);
    }

    // Resolve the target.
    let Some(info) = datasets.get(agg.target.dataset.value.as_str()) else {
        c.error(
            Code::Undefined,
            agg.target.dataset.span,
            format!("there is no dataset `{}`", agg.target.dataset.value),
        )
        .with_label("undefined dataset")
        .with_help(format!(
            "declare `dataset {} {{ … }}` or use one of: {}",
            agg.target.dataset.value,
            names(datasets.keys().copied())
        ));
        plan.ok = false;
        return Some(plan);
    };
    let column = match &agg.target.column {
        None => None,
        Some(col) => match info.columns.get(col.value.as_str()) {
            Some(ci) => Some((col, ci)),
            None => {
                c.error(
                    Code::Undefined,
                    col.span,
                    format!(
                        "dataset `{}` has no column `{}`",
                        info.ds.name.value, col.value
                    ),
                )
                .with_label("undefined column")
                .with_help(format!(
                    "declare it in `{}` or use one of: {}",
                    info.ds.name.value,
                    names(info.columns.keys().copied())
                ));
                plan.ok = false;
                return Some(plan);
            }
        },
    };
    let group = match &agg.by {
        None => None,
        Some(by) => match info.columns.get(by.value.as_str()) {
            None => {
                c.error(
                    Code::Undefined,
                    by.span,
                    format!(
                        "dataset `{}` has no column `{}`",
                        info.ds.name.value, by.value
                    ),
                )
                .with_label("undefined column")
                .with_help(format!(
                    "group by one of: {}",
                    names(info.columns.keys().copied())
                ));
                plan.ok = false;
                return Some(plan);
            }
            Some(ci) => {
                if !matches!(ci.ty, ColumnType::Category { .. }) {
                    c.error(
                        Code::TypeMismatch,
                        by.span,
                        format!(
                            "`{}` is not a category: groups must come from a public domain",
                            by.value
                        ),
                    )
                    .with_secondary(ci.name_span, "declared here")
                    .with_help("group by a `category { … }` column");
                    plan.ok = false;
                    return Some(plan);
                }
                match ci.domain {
                    Some(d) => Some(d),
                    None => {
                        if matches!(ci.ty, ColumnType::Category { domain: None }) {
                            c.error(Code::MissingBounds, by.span, format!("`{}` has no public domain: the histogram's keys would come from the data", by.value))
                                .with_secondary(ci.name_span, "declared without a domain")
                                .with_help(format!("list the public values: `column {} : category {{ \"a\", \"b\" }}`", by.value));
                        }
                        plan.ok = false;
                        return Some(plan);
                    }
                }
            }
        },
    };
    let Some(unit) = info.bound else {
        // DP001 was reported on the dataset.
        plan.ok = false;
        return Some(plan);
    };

    // Which statistic, and its value bounds.
    let kind = agg.kind.value;
    let grouped_kind = matches!(kind, AggKind::Histogram) || group.is_some();
    let values: Option<(f64, f64)> = match (kind, column) {
        (AggKind::Count, Some((col, _))) => {
            c.error(
                Code::TypeMismatch,
                col.span,
                format!("`count` counts rows: write `count({})`", info.ds.name.value),
            )
            .with_help(format!(
                "count rows with `count({})`, or sum a column with `sum({}.{})`",
                info.ds.name.value, info.ds.name.value, col.value
            ));
            plan.ok = false;
            return Some(plan);
        }
        (AggKind::Count | AggKind::Histogram | AggKind::Quantile, None) => None,
        (AggKind::Sum | AggKind::Mean, None) => {
            c.error(
                Code::TypeMismatch,
                agg.target.span,
                format!(
                    "`{}` needs a numeric column, such as `{}.value`",
                    kind.as_str(),
                    info.ds.name.value
                ),
            )
            .with_help("name the column to aggregate");
            plan.ok = false;
            return Some(plan);
        }
        (_, Some((col, ci))) => match ci.ty {
            ColumnType::Int { bounds } | ColumnType::Float { bounds } => {
                match (ci.bounds, bounds) {
                    (Some(b), _) => Some(b),
                    (None, None) => {
                        c.error(
                        Code::MissingBounds,
                        col.span,
                        format!("`{}.{}` has no public bounds, so one row can move the {} without limit", info.ds.name.value, col.value, kind.as_str()),
                    )
                    .with_label("unbounded column")
                    .with_secondary(ci.name_span, "declared without bounds")
                    .with_help(format!("declare public clamp bounds, e.g. `column {} : {} in [0, 100]`", col.value, if matches!(ci.ty, ColumnType::Int { .. }) { "int" } else { "float" }));
                        plan.ok = false;
                        return Some(plan);
                    }
                    // Bounds were declared but invalid (reported there).
                    (None, Some(_)) => {
                        plan.ok = false;
                        return Some(plan);
                    }
                }
            }
            _ => {
                c.error(
                    Code::TypeMismatch,
                    col.span,
                    format!(
                        "`{}` is not numeric: `{}` needs an int or float column",
                        col.value,
                        kind.as_str()
                    ),
                )
                .with_secondary(ci.name_span, "declared here")
                .with_help(format!(
                    "count rows per value with `histogram({} by {})`",
                    info.ds.name.value, col.value
                ));
                plan.ok = false;
                return Some(plan);
            }
        },
    };
    let float_values = column.is_some_and(|(_, ci)| matches!(ci.ty, ColumnType::Float { .. }));

    if grouped_kind {
        if unit.user && unit.groups.is_none() {
            let by_span = agg.by.as_ref().map_or(agg.span, |b| b.span);
            c.error(
                Code::UnboundedGroups,
                by_span,
                format!(
                    "a grouped query under a user-level unit needs a groups_per_unit bound on `{}`: without it one user may touch up to {} groups",
                    info.ds.name.value, unit.rows
                ),
            )
            .with_label("groups per user not bounded")
            .with_help(format!("add `groups_per_unit N` to the contribution block of `{}`", info.ds.name.value));
            plan.ok = false;
            return Some(plan);
        }
        if group.is_none() {
            c.error(
                Code::TypeMismatch,
                agg.span,
                "a histogram needs groups: `histogram(dataset by column)`",
            )
            .with_help(format!(
                "write `histogram({} by <category column>)`",
                info.ds.name.value
            ));
            plan.ok = false;
            return Some(plan);
        }
    }

    // Derive the sensitivity of each noisy part.
    let parts_derived: Vec<(&'static str, Derived)> = match (kind, group) {
        (AggKind::Count, None) => vec![("count", sensitivity::count(unit, adjacency))],
        (AggKind::Sum, None) => {
            let (lo, hi) = values.unwrap_or((0.0, 0.0));
            vec![("sum", sensitivity::sum(unit, adjacency, lo, hi))]
        }
        (AggKind::Mean, None) => {
            let (lo, hi) = values.unwrap_or((0.0, 0.0));
            vec![
                ("sum", sensitivity::sum(unit, adjacency, lo, hi)),
                ("count", sensitivity::count(unit, adjacency)),
            ]
        }
        (AggKind::Count | AggKind::Histogram, Some(d)) if values.is_none() => {
            vec![("histogram", sensitivity::grouped(unit, adjacency, d, None))]
        }
        (AggKind::Mean, Some(d)) => vec![
            (
                "grouped sum",
                sensitivity::grouped(unit, adjacency, d, values),
            ),
            (
                "grouped count",
                sensitivity::grouped(unit, adjacency, d, None),
            ),
        ],
        (_, Some(d)) => vec![(
            "grouped sum",
            sensitivity::grouped(unit, adjacency, d, values),
        )],
        (_, None) => vec![],
    };

    // Declared sensitivity (DP003, DP005).
    let mut declared_l1 = None;
    let mut declared_l2 = None;
    if let Some(ds) = q.sensitivities.first() {
        if parts_derived.len() > 1 {
            c.error(Code::Unsupported, ds.span, "a declared sensitivity applies to one statistic, but a mean releases two (a sum and a count)")
                .with_help("remove the declaration (the checker derives both), or release the sum and the count as separate queries");
        } else if let Some((_, d)) = parts_derived.first() {
            for (norm, value) in &ds.items {
                let (derived, name) = match norm.value {
                    ast::Norm::L1 => (d.l1, "l1"),
                    ast::Norm::L2 => (d.l2, "l2"),
                };
                if !value.value.is_finite() || value.value < 0.0 {
                    c.error(Code::InvalidParameter, value.span, format!("a sensitivity must be a finite non-negative number, found {}", value.value))
                        .with_help("declare the sensitivity the derivation supports, or remove the declaration");
                    plan.ok = false;
                    continue;
                }
                if value.value < derived * (1.0 - 1e-12) {
                    c.error(
                        Code::SensitivityTooLow,
                        value.span,
                        format!("declared {name} {}, but {}: {name} = {}", fmt_num(value.value), d.steps.join("; "), fmt_num(derived)),
                    )
                    .with_label(format!("below the derived {name} = {}", fmt_num(derived)))
                    .with_help(format!("declare `sensitivity {name} {}` or remove the declaration and let the checker derive it", fmt_num(derived)));
                    plan.ok = false;
                } else {
                    match norm.value {
                        ast::Norm::L1 => declared_l1 = Some(value.value),
                        ast::Norm::L2 => declared_l2 = Some(value.value),
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
                        Code::WrongNorm,
                        ds.span,
                        format!("{} noise is calibrated to the {name} sensitivity, but the query declares only the other norm", n.kind.value.as_str()),
                    )
                    .with_secondary(n.kind.span, "mechanism chosen here")
                    .with_help(format!("declare `sensitivity {} …`, or remove the declaration", name.to_ascii_lowercase()));
                    plan.ok = false;
                }
            }
        }
    }

    let Some(noise) = noise else {
        return Some(plan);
    };
    let nk = noise.kind.value;
    // Discrete noise needs integer-valued statistics.
    if nk.is_discrete() && float_values {
        c.error(
            Code::TypeMismatch,
            noise.kind.span,
            format!(
                "{} noise needs integer values, but `{}` is a float column",
                nk.as_str(),
                describe_target(&agg.target)
            ),
        )
        .with_help("declare the column `int`, or use `laplace` or `gaussian` noise");
        plan.ok = false;
    }
    if nk.is_discrete() {
        for (_, d) in &parts_derived {
            if d.l1.fract() != 0.0 {
                c.error(
                    Code::TypeMismatch,
                    noise.kind.span,
                    format!(
                        "{} noise needs an integer sensitivity, but L1 = {}",
                        nk.as_str(),
                        fmt_num(d.l1)
                    ),
                )
                .with_help("use integer clamp bounds, or continuous noise");
                plan.ok = false;
                break;
            }
        }
    }
    if nk.is_gaussian() && budget_delta == Some(0.0) {
        c.error(
            Code::InvalidParameter,
            noise.kind.span,
            format!(
                "{} noise needs δ > 0, but the budget is pure ε-DP (δ = 0)",
                nk.as_str()
            ),
        )
        .with_help("add `delta …` to the budget, or use Laplace noise");
        plan.ok = false;
    }
    let n_parts = parts_derived.len().max(1) as f64;
    let scale = match &noise.param {
        NoiseParam::Scale { value } | NoiseParam::Sigma { value } => {
            let is_sigma = matches!(noise.param, NoiseParam::Sigma { .. });
            if is_sigma != nk.is_gaussian() {
                let (want, got) = if nk.is_gaussian() {
                    ("sigma", "scale")
                } else {
                    ("scale", "sigma")
                };
                c.error(
                    Code::InvalidParameter,
                    noise.span,
                    format!("{} noise takes `{want}`, not `{got}`", nk.as_str()),
                )
                .with_help(format!(
                    "write `noise {} {want} {}`",
                    nk.as_str(),
                    fmt_num(value.value)
                ));
                plan.ok = false;
                None
            } else if !valid_positive(value.value) {
                c.error(
                    Code::InvalidParameter,
                    value.span,
                    format!(
                        "the noise {} must be positive and finite, found {}",
                        if is_sigma { "σ" } else { "scale" },
                        value.value
                    ),
                )
                .with_help("a zero or negative noise scale publishes the exact value");
                plan.ok = false;
                None
            } else {
                Some(Scale::Fixed(value.value))
            }
        }
        NoiseParam::Epsilon { epsilon, delta } => {
            let mut good = true;
            if !valid_positive(epsilon.value) {
                c.error(
                    Code::InvalidParameter,
                    epsilon.span,
                    format!("ε must be positive and finite, found {}", epsilon.value),
                )
                .with_help("give the per-release ε, e.g. `noise laplace epsilon 0.1`");
                good = false;
            }
            match (nk.is_gaussian(), delta) {
                (true, None) => {
                    c.error(
                        Code::Missing,
                        epsilon.span,
                        "Gaussian noise given by ε also needs a per-release δ",
                    )
                    .with_help(format!(
                        "write `noise {} epsilon {} delta 1e-7`",
                        nk.as_str(),
                        fmt_num(epsilon.value)
                    ));
                    good = false;
                }
                (true, Some(d)) if !(d.value.is_finite() && d.value > 0.0 && d.value < 1.0) => {
                    c.error(
                        Code::InvalidParameter,
                        d.span,
                        format!("δ must lie strictly between 0 and 1, found {}", d.value),
                    )
                    .with_help("choose a per-release δ such as 1e-7");
                    good = false;
                }
                (false, Some(d)) => {
                    c.error(
                        Code::InvalidParameter,
                        d.span,
                        format!("{} noise is pure ε-DP: it takes no δ", nk.as_str()),
                    )
                    .with_help("remove `delta …`");
                    good = false;
                }
                _ => {}
            }
            if good {
                Some(Scale::FromEpsilon {
                    epsilon: epsilon.value / n_parts,
                    delta: delta.as_ref().map(|d| d.value / n_parts),
                })
            } else {
                plan.ok = false;
                None
            }
        }
        NoiseParam::Auto { weight, .. } => {
            let w = weight.as_ref().map_or(1.0, |w| w.value);
            if !valid_positive(w) {
                let span = weight.as_ref().map_or(noise.span, |w| w.span);
                c.error(Code::InvalidParameter, span, format!("a weight must be positive and finite, found {w}"))
                    .with_help("weights share the budget between `auto` queries: `weight 2` gets twice the share of `weight 1`");
                plan.ok = false;
                None
            } else {
                Some(Scale::Auto { weight: w })
            }
        }
    };
    let Some(scale) = scale else {
        return Some(plan);
    };
    // Apply declared sensitivities (never below the derived ones).
    let first_norm = |d: &Derived| -> f64 {
        if nk.is_gaussian() {
            d.l2
        } else {
            d.l1
        }
    };
    let base = parts_derived
        .first()
        .map(|(_, d)| first_norm(d))
        .unwrap_or(0.0);
    for (i, (role, mut d)) in parts_derived.into_iter().enumerate() {
        if let Some(v) = declared_l1 {
            d.l1 = d.l1.max(v);
            d.steps.push(format!(
                "declared l1 {} is used (≥ the derived bound)",
                fmt_num(v)
            ));
        }
        if let Some(v) = declared_l2 {
            d.l2 = d.l2.max(v);
            d.steps.push(format!(
                "declared l2 {} is used (≥ the derived bound)",
                fmt_num(v)
            ));
        }
        // For a mean, a declared noise scale applies to the sum; the count's
        // noise keeps the same noise-to-sensitivity ratio so both parts cost
        // the same.
        let part_scale = match &scale {
            Scale::Fixed(s) if i > 0 && base > 0.0 => Scale::Fixed(s * first_norm(&d) / base),
            other => other.clone(),
        };
        let resolved = match part_scale {
            Scale::Fixed(s) => Some(s),
            _ => None,
        };
        let public = d.l1 == 0.0 && d.l2 == 0.0;
        plan.parts.push(Part {
            role,
            public,
            kind: nk,
            derived: d,
            scale: part_scale,
            resolved: if public { None } else { resolved },
        });
    }
    Some(plan)
}

fn names<'a>(it: impl Iterator<Item = &'a str>) -> String {
    let mut v: Vec<&str> = it.collect();
    v.sort();
    if v.is_empty() {
        "(none declared)".into()
    } else {
        v.iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn calibrate_epsilon_parts(c: &mut Checker, queries: &mut [QueryPlan]) {
    for q in queries.iter_mut() {
        for p in q.parts.iter_mut().filter(|p| !p.public) {
            let Scale::FromEpsilon { epsilon, delta } = p.scale else {
                continue;
            };
            let sens = if p.kind.is_gaussian() {
                p.derived.l2
            } else {
                p.derived.l1
            };
            let result = match p.kind {
                NoiseKind::Laplace | NoiseKind::DiscreteLaplace => Ok(sens / epsilon),
                NoiseKind::Gaussian => {
                    acct::analytic_gaussian_sigma(sens, epsilon, delta.unwrap_or(0.0))
                }
                NoiseKind::DiscreteGaussian => {
                    let kind = p.kind;
                    let derived = p.derived.clone();
                    let build = move |t: f64| {
                        vec![acct::Release {
                            mechanism: mechanism(kind, t, &derived, 1.0),
                            count: 1,
                        }]
                    };
                    solve_multiplier(&build, epsilon, delta.unwrap_or(0.0), None, false).ok_or_else(
                        || acct::AccountingError::NoSolution("no σ reaches this ε".into()),
                    )
                }
            };
            match result {
                Ok(s) if s.is_finite() && s > 0.0 => p.resolved = Some(s),
                Ok(_) | Err(_) => {
                    let span = q.q.noises.first().map_or(q.q.name.span, |n| n.span);
                    c.error(
                        Code::Accounting,
                        span,
                        format!(
                            "no noise scale gives ε = {} for `{}`",
                            fmt_num(epsilon),
                            q.q.name.value
                        ),
                    )
                    .with_help("check ε and δ");
                    q.ok = false;
                }
            }
        }
    }
}

fn calibrate_auto(
    c: &mut Checker,
    queries: &mut [QueryPlan],
    privacy: &Privacy,
    choice: Option<acct::Accountant>,
    precise: bool,
) {
    let any_auto = queries.iter().any(|q| {
        q.parts
            .iter()
            .any(|p| matches!(p.scale, Scale::Auto { .. }))
    });
    if !any_auto {
        return;
    }
    // Every other part must be resolved for the calibration to mean anything.
    if queries.iter().any(|q| !q.ok) {
        return;
    }
    // scale = t · sensitivity / weight for every auto part.
    let fixed: Vec<acct::Release> = queries
        .iter()
        .flat_map(|q| {
            q.parts.iter().filter(|p| !p.public).filter_map(move |p| {
                Some(acct::Release {
                    mechanism: mechanism(p.kind, p.resolved?, &p.derived, 1.0),
                    count: q.releases,
                })
            })
        })
        .collect();
    let autos: Vec<(NoiseKind, Derived, f64, u64)> = queries
        .iter()
        .flat_map(|q| {
            q.parts
                .iter()
                .filter(|p| !p.public)
                .filter_map(move |p| match p.scale {
                    Scale::Auto { weight } => Some((p.kind, p.derived.clone(), weight, q.releases)),
                    _ => None,
                })
        })
        .collect();
    let unit_scale = |kind: NoiseKind, d: &Derived, w: f64| -> f64 {
        let s = if kind.is_gaussian() { d.l2 } else { d.l1 };
        s / w
    };
    let build = |t: f64| -> Vec<acct::Release> {
        let mut rs = fixed.clone();
        for (kind, d, w, n) in &autos {
            rs.push(acct::Release {
                mechanism: mechanism(*kind, t * unit_scale(*kind, d, *w), d, 1.0),
                count: *n,
            });
        }
        rs
    };
    match solve_multiplier(&build, privacy.epsilon, privacy.delta, choice, precise) {
        Some(t) if t.is_finite() && t > 0.0 => {
            for q in queries.iter_mut() {
                for p in q.parts.iter_mut().filter(|p| !p.public) {
                    if let Scale::Auto { weight } = p.scale {
                        p.resolved = Some(t * unit_scale(p.kind, &p.derived, weight));
                    }
                }
            }
        }
        _ => {
            c.error(Code::OverBudget, privacy.budget_span, "no noise level for the `auto` queries fits the budget: the other queries already spend it")
                .with_help("give the fixed queries more noise or fewer releases, or raise the budget");
            for q in queries.iter_mut() {
                if q.parts
                    .iter()
                    .any(|p| matches!(p.scale, Scale::Auto { .. }))
                {
                    q.ok = false;
                }
            }
        }
    }
}

/// Names defined twice across queries and publishes, and publish sources.
fn check_names(c: &mut Checker, plan: &ast::Plan) {
    let mut seen: HashMap<&str, Span> = HashMap::new();
    let defined = plan
        .queries
        .iter()
        .map(|q| &q.name)
        .chain(plan.publishes.iter().map(|p| &p.name));
    for name in defined {
        if let Some(first) = seen.get(name.value.as_str()) {
            c.error(
                Code::Duplicate,
                name.span,
                format!("`{}` is defined twice", name.value),
            )
            .with_secondary(*first, "first defined here")
            .with_help("give every query and publish a unique name");
        } else {
            seen.insert(&name.value, name.span);
        }
    }
    for p in &plan.publishes {
        if !seen.contains_key(p.source.value.as_str()) {
            c.error(
                Code::Undefined,
                p.source.span,
                format!("there is no query or publish named `{}`", p.source.value),
            )
            .with_label("undefined release")
            .with_help("re-publish an existing query: `publish copy = <query name>`");
        } else if p.source.value == p.name.value {
            c.error(
                Code::Undefined,
                p.source.span,
                format!("`{}` re-publishes itself", p.name.value),
            )
            .with_help("name the query whose released value is re-published");
        }
    }
}

fn check_publishes(c: &mut Checker, plan: &ast::Plan) {
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
                Code::InvalidParameter,
                cond.value.span,
                format!("the threshold must be finite, found {}", cond.value.value),
            )
            .with_help("compare against a finite public number");
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
                if !released.contains(&name.value.as_str()) {
                    c.error(
                        Code::Undefined,
                        name.span,
                        format!("there is no released value `{}`", name.value),
                    )
                    .with_help("a condition may read any released query or publish by name");
                }
            }
        }
    }
}

/// DP009: fresh noise where re-publication would do.
fn check_rereleases(c: &mut Checker, queries: &[QueryPlan]) {
    let mut seen: HashMap<String, &QueryPlan> = HashMap::new();
    for q in queries {
        if let Some(s) = q.q.schedules.first() {
            if let ast::Schedule::Times { .. } = s.value {
                if q.releases > 1 {
                    let sd = q
                        .parts
                        .first()
                        .and_then(|p| match p.scale {
                            Scale::Fixed(x) => Some(crate::noise::spread(p.kind, x).0),
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
                    let d = c
                        .error(
                            Code::FreshRerelease,
                            s.span,
                            format!(
                                "`{}` is released {} times with fresh noise on the same data: averaging r fresh answers cuts the noise's variance to σ²/r{sd} but costs r releases",
                                q.q.name.value, q.releases
                            ),
                        )
                        .with_help("to show the same value again, release it once and re-publish it with `publish copy = <query>` (post-processing, free); to buy accuracy, lower the noise of one release instead");
                    d.severity = Severity::Hint;
                }
            }
        }
        let key = q.aggregation.clone();
        if let Some(first) = seen.get(&key) {
            let d = c
                .error(
                    Code::FreshRerelease,
                    q.q.name.span,
                    format!(
                        "`{}` releases `{}` again with fresh noise, like `{}`: every fresh answer is a new access to the data and is charged",
                        q.q.name.value, q.aggregation, first.q.name.value
                    ),
                )
                .with_secondary(first.q.name.span, "the same statistic is released here")
                .with_help(format!(
                    "re-publish the released value with `publish {} = {}` (free), or keep both on purpose: averaging r fresh answers cuts the noise's variance to σ²/r but costs r releases",
                    q.q.name.value, first.q.name.value
                ));
            d.severity = Severity::Hint;
        } else {
            seen.insert(key, q);
        }
    }
}
