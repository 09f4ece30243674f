//! The semantic checker: from the AST to a checked plan, one pass per
//! module. [`check`] runs them in order: the privacy block ([`privacy`]),
//! the datasets ([`datasets`]), every query ([`query`]), the checks across
//! items ([`lints`]), the noise calibration ([`calibration`]) and the plan's
//! total against its budget ([`total`]).

mod calibration;
mod datasets;
mod lints;
mod privacy;
mod query;
mod total;

use dpplan_accounting as acct;
use dpplan_diagnostics::{Code, Diagnostic, Severity, Span};
use dpplan_syntax::ast::{self, AccountantChoice, Adjacency, NoiseKind, Unit};

use crate::report::*;
use crate::sensitivity::{fmt_num, Derived};

use calibration::{calibrate_auto, calibrate_epsilon_parts};
use datasets::resolve_datasets;
use lints::{check_names, check_publishes, check_rereleases};
use privacy::resolve_privacy;
use query::{plan_query, QueryPlan};
use total::part_report;

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

fn data_dependent(c: &mut Checker, span: Span, what: &str, help: &str) {
    c.error(
        Code::DataDependent,
        span,
        format!("{what} is computed from private data: a data-dependent parameter is not accounted, and it reveals the data by itself"),
    )
    .with_label("computed from private data")
    .with_help(help.to_string());
}
