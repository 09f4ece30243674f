//! The plan's total: the composed (ε, δ) under every accountant (DP018),
//! each query's cost alone, and the budget check (DP011).

use foldhash::{HashMap, HashSet};
use std::sync::Arc;

use dpplan_accounting as acct;
use dpplan_diagnostics::{Code, Diagnostic};

use super::privacy::Privacy;
use super::query::{Part, QueryPlan, Scale};
use super::{fast_best, AnalysisOptions, Checker};
use crate::report::*;
use dpplan_mechanisms::sensitivity::fmt_num;

/// The plan's total and every accountant's figure, or why there is none.
pub(super) struct Account {
    pub(super) total: Option<TotalReport>,
    pub(super) total_missing: Option<String>,
    pub(super) accountants: Vec<AccountantReport>,
    pub(super) within_budget: Option<bool>,
}

/// The plan's releases: every noisy part of every query without an error,
/// its sensitivity multiplied by `mult(query)` (group privacy).
pub(super) fn releases_of(
    qs: &[QueryPlan],
    mult: &dyn Fn(&QueryPlan) -> f64,
) -> Vec<acct::Release> {
    qs.iter()
        .filter(|q| q.ok)
        .flat_map(|q| {
            let m = mult(q);
            // group privacy: each member of a group is sampled on its own,
            // so the group is not one q-coin; its claim forgoes the
            // amplification (sound: sampling never adds loss)
            let sample = if m == 1.0 { q.sample } else { None };
            q.parts.iter().filter(|p| !p.public).filter_map(move |p| {
                Some(acct::Release {
                    sample,
                    mechanism: p.accounted(m)?,
                    count: q.accounted_releases(),
                })
            })
        })
        .collect()
}

/// The composed (ε, δ) of the plan's releases (DP018), claimed only when
/// the plan has no error.
pub(super) fn account_total(
    c: &mut Checker,
    releases: &[acct::Release],
    privacy: &Privacy,
    choice: Option<acct::Accountant>,
    options: &AnalysisOptions,
    has_errors: bool,
) -> Account {
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
                (_, true) => crate::memo::all(releases, privacy.delta),
                (Some(a), false) => vec![(a, crate::memo::epsilon(releases, privacy.delta, a))],
                (None, false) => {
                    let r = crate::memo::best(releases, privacy.delta);
                    let a = r.as_ref().map_or(acct::Accountant::Basic, |b| b.accountant);
                    vec![(a, r)]
                }
            };
        let chosen: Result<acct::Bound, acct::AccountingError> = match choice {
            Some(a) => results
                .iter()
                .find(|(x, _)| *x == a)
                .map(|(_, r)| r.clone())
                .unwrap_or_else(|| crate::memo::epsilon(releases, privacy.delta, a)),
            None => acct::best_of(results.iter().map(|(_, r)| r.clone())),
        };
        match chosen {
            Ok(b) => {
                total = Some(TotalReport {
                    epsilon: b.epsilon,
                    delta: b.delta,
                    accountant: b.accountant,
                    accountant_name: b.accountant.to_string(),
                    detail: b.detail.clone(),
                });
            }
            Err(e) => {
                let msg = format!(
                    "the {} accountant cannot bound this plan: {e}",
                    privacy.accountant.as_str()
                );
                c.error(
                    Diagnostic::new(
                        Code::Accounting,
                        msg.clone(),
                        privacy.budget_span,
                    )
                    .label("no bound for this budget")
                    .help("use `accountant best`, which picks the tightest accountant that applies"),
                );
                total_missing = Some(msg);
            }
        }
        if options.all_accountants {
            accountants = results.into_iter().map(accountant_report).collect();
        }
    }
    Account {
        total,
        total_missing,
        accountants,
        within_budget,
    }
}

/// One accountant's figure for the plan, or why it has none.
fn accountant_report(
    (a, r): (acct::Accountant, Result<acct::Bound, acct::AccountingError>),
) -> AccountantReport {
    match r {
        Ok(b) => AccountantReport {
            accountant: a,
            accountant_name: a.to_string(),
            epsilon: Some(b.epsilon),
            delta: Some(b.delta),
            detail: Some(b.detail),
            error: None,
        },
        Err(e) => AccountantReport {
            accountant: a,
            accountant_name: a.to_string(),
            epsilon: None,
            delta: None,
            detail: None,
            error: Some(e.to_string()),
        },
    }
}

/// Every query's report, with its cost alone when asked for.
///
/// The reports take the plans' texts (dataset, aggregation, schedule,
/// resolved spec, derivation steps) instead of copying them: no later pass
/// reads them from the plans, and at 10⁵ queries the copies were tens of
/// megabytes.
pub(super) fn query_reports(
    queries: &mut [QueryPlan],
    privacy: &Privacy,
    options: &AnalysisOptions,
) -> Vec<QueryReport> {
    let mut costs = Costs::default();
    let mut sentences = Sentences::default();
    if options.per_query_costs && options.accounting && queries.len() >= PARALLEL_COSTS {
        costs.fill_in_parallel(queries, privacy.delta);
    }
    queries
        .iter_mut()
        .map(|q| query_report(q, privacy, options, &mut costs, &mut sentences))
        .collect()
}

/// The derivations' sentences, one copy of each: the queries that derive
/// their bounds alike (every count of one dataset) say the same sentences,
/// and at 10⁵ queries the copies were 10⁵ allocations of ~100 bytes.
#[derive(Default)]
struct Sentences(HashSet<Arc<str>>);

impl Sentences {
    fn share(&mut self, steps: Vec<String>) -> Vec<Arc<str>> {
        steps.into_iter().map(|s| self.one(s)).collect()
    }

    fn one(&mut self, s: String) -> Arc<str> {
        if let Some(one) = self.0.get(s.as_str()) {
            return one.clone();
        }
        let one: Arc<str> = s.into();
        self.0.insert(one.clone());
        one
    }
}

/// A query's cost alone depends on nothing but its releases (mechanisms
/// and count) and the budget's δ: each distinct set of releases is
/// accounted once, however many queries share it (10⁵ one-release queries
/// with a dozen distinct noises: a dozen accountings, not 2·10⁵).
#[derive(Default)]
struct Costs(HashMap<CostsKey, Option<CostReport>>);

/// The key of a set of releases in [`Costs`]: every release's exact bits,
/// a lone release (most queries) held inline rather than in an allocation
/// of its own (10⁵ distinct one-release queries: 10⁵ allocations fewer for
/// as long as the reports are assembled). Built by [`costs_key`] alone, so
/// one set of releases always has one form.
#[derive(PartialEq, Eq, Hash)]
enum CostsKey {
    One([u64; 8]),
    Many(Box<[[u64; 8]]>),
}

fn costs_key(releases: &[acct::Release]) -> CostsKey {
    match releases {
        [one] => CostsKey::One(release_key(one)),
        _ => CostsKey::Many(releases.iter().map(release_key).collect()),
    }
}

/// From this many queries on, [`query_reports`] computes the distinct
/// costs alone on two threads ([`Costs::fill_in_parallel`]) before the
/// reports are assembled in the plan's order.
pub(crate) const PARALLEL_COSTS: usize = 2048;

impl Costs {
    /// Computes every cost `query_report` will ask for, each distinct set
    /// of releases once, half of them on a second thread: each cost depends
    /// on its releases and δ alone, so the reports are the same as when
    /// they are computed one after the other (a plan of 10⁵ one-release
    /// queries whose noises all differ has 10⁵ of them).
    fn fill_in_parallel(&mut self, queries: &[QueryPlan], delta: f64) {
        // each distinct set once: its key goes into the map at once (its
        // place, filled below), its releases onto one flat list to compute
        // (set i is `flat[ends[i - 1]..ends[i]]`: no allocation per set)
        let mut flat: Vec<acct::Release> = vec![];
        let mut ends: Vec<usize> = vec![];
        for q in queries.iter().filter(|q| q.ok) {
            for count in [1, q.accounted_releases()] {
                let Some(rs) = query_releases(q, count) else {
                    continue;
                };
                if let std::collections::hash_map::Entry::Vacant(place) =
                    self.0.entry(costs_key(&rs))
                {
                    place.insert(None);
                    flat.extend_from_slice(&rs);
                    ends.push(flat.len());
                }
            }
        }
        let set = |i: usize| {
            let start = if i == 0 { 0 } else { ends[i - 1] };
            &flat[start..ends[i]]
        };
        let half = ends.len() / 2;
        let alone = |sets: std::ops::Range<usize>| -> Vec<Option<CostReport>> {
            sets.map(|i| cost_alone(set(i), delta)).collect()
        };
        let (a, b) = super::both(true, || alone(0..half), || alone(half..ends.len()));
        for (i, cost) in a.into_iter().chain(b).enumerate() {
            *self.0.entry(costs_key(set(i))).or_insert(None) = cost;
        }
    }

    /// The cost of `releases` alone at δ, computed on first use.
    fn of(&mut self, releases: &[acct::Release], delta: f64) -> Option<CostReport> {
        self.0
            .entry(costs_key(releases))
            .or_insert_with(|| cost_alone(releases, delta))
            .clone()
    }
}

/// The exact bits of a release, every field of its mechanism (ℓ∞
/// included: it sets a discrete Gaussian's shift shapes): equal keys,
/// equal releases.
fn release_key(r: &acct::Release) -> [u64; 8] {
    // destructured without `..`: a new field is a compile error here,
    // never a silently shared cache entry
    let acct::Release {
        mechanism,
        count,
        sample,
    } = r;
    let acct::Mechanism {
        kind,
        scale,
        sensitivity,
    } = mechanism;
    let acct::Sensitivity {
        l1,
        l2,
        coords,
        linf,
    } = sensitivity;
    [
        *kind as u64,
        scale.to_bits(),
        l1.to_bits(),
        l2.to_bits(),
        *coords,
        linf.to_bits(),
        *count,
        // NaN bits for None: never equal to a rate's bits
        sample.map_or(u64::MAX, f64::to_bits),
    ]
}

/// The fast accountants' (ε, δ) and the zCDP ρ of `releases` alone.
fn cost_alone(rs: &[acct::Release], delta: f64) -> Option<CostReport> {
    let b = fast_best(rs, delta).ok()?;
    let rho: Option<f64> = rs
        .iter()
        .map(|r| acct::rho(&r.mechanism).map(|x| x * r.count as f64))
        .sum();
    Some(CostReport {
        epsilon: b.epsilon,
        delta: b.delta,
        rho,
        accountant: b.accountant,
    })
}

/// The releases of `q`'s accounted parts, `count` times each: what its
/// cost alone is computed from.
fn query_releases(q: &QueryPlan, count: u64) -> Option<Vec<acct::Release>> {
    q.parts
        .iter()
        .filter(|p| !p.public)
        .map(|p| {
            Some(acct::Release {
                sample: q.sample,
                mechanism: p.accounted(1.0)?,
                count,
            })
        })
        .collect()
}

fn query_report(
    q: &mut QueryPlan,
    privacy: &Privacy,
    options: &AnalysisOptions,
    costs: &mut Costs,
    sentences: &mut Sentences,
) -> QueryReport {
    let mut cost =
        |count: u64| -> Option<CostReport> { costs.of(&query_releases(q, count)?, privacy.delta) };
    let (per_release, qtotal) = if q.ok && options.per_query_costs && options.accounting {
        (cost(1), cost(q.accounted_releases()))
    } else {
        (None, None)
    };
    let accuracy = q.accuracy.map(|a| {
        let achieved = super::accuracy::achieved(q, a.measure);
        AccuracyReport {
            measure: a.measure,
            at_most: a.at_most,
            achieved,
            met: achieved.map(|x| x <= a.at_most),
        }
    });
    let mut parts: Vec<PartReport> = q
        .parts
        .iter_mut()
        .map(|p| part_report(p, sentences))
        .collect();
    if q.ok && options.accounting {
        for (report, p) in parts.iter_mut().zip(&q.parts) {
            let mut more: Vec<String> = super::window::comparison(q, p, privacy.delta)
                .into_iter()
                .collect();
            more.extend(super::cumulative::comparison(q, p, privacy.delta));
            report.derivation.extend(sentences.share(more));
        }
    }
    let first = parts.first();
    QueryReport {
        name: q.q.name.value.clone(),
        span: q.q.span,
        name_span: q.q.name.span,
        dataset: std::mem::take(&mut q.dataset),
        aggregation: std::mem::take(&mut q.aggregation),
        schedule: std::mem::take(&mut q.schedule),
        releases: q.releases,
        accounted_releases: q.accounted_releases(),
        sample: q.sample.map(Box::new),
        mechanism: first
            .map(|p| p.mechanism.clone())
            .unwrap_or(MechanismReport {
                kind: None,
                scale: None,
                sigma: None,
                calibration: Calibration::None,
            }),
        l1: first.map_or(f64::NAN, |p| p.l1),
        l2: first.map_or(f64::NAN, |p| p.l2),
        parts,
        per_release,
        total: qtotal,
        selection: q.spec.as_ref().and_then(|s| s.selection.clone()),
        postprocess: q.spec.as_ref().and_then(|s| s.postprocess.clone()),
        spec: q.spec.take(),
        accuracy: accuracy.map(Box::new),
    }
}

/// Whether the total fits the budget; DP011 with the largest costs when it
/// does not.
pub(super) fn budget(
    c: &mut Checker,
    t: &TotalReport,
    reports: &[QueryReport],
    privacy: &Privacy,
) -> bool {
    let fits = t.epsilon <= privacy.epsilon * (1.0 + 1e-12);
    if !fits {
        let mut ranked: Vec<&QueryReport> = reports.iter().filter(|r| r.total.is_some()).collect();
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
        let mut d = Diagnostic::new(
            Code::OverBudget,
            format!(
                "the plan spends ε = {} at δ = {} ({}) but its budget is ε = {}; the largest costs: {}",
                fmt_num(t.epsilon),
                fmt_num(privacy.delta),
                t.accountant_name,
                fmt_num(privacy.epsilon),
                names.join(", ")
            ),
            privacy.budget_span,
        )
        .label("budget exceeded")
        .help("release less often, add more noise (or `noise … auto`), tighten the contribution bounds, or re-publish instead of re-releasing");
        for r in &top {
            d = d.secondary(
                r.name_span,
                format!(
                    "ε = {} alone",
                    fmt_num(r.total.as_ref().map_or(0.0, |t| t.epsilon))
                ),
            );
        }
        c.error(d);
    }
    fits
}

fn part_report(p: &mut Part, sentences: &mut Sentences) -> PartReport {
    let statistic = p.statistic;
    if p.public {
        return PartReport {
            role: p.label.clone().unwrap_or_else(|| p.role.into()),
            statistic,
            mechanism: MechanismReport {
                kind: None,
                scale: None,
                sigma: None,
                calibration: Calibration::None,
            },
            l1: 0.0,
            l2: 0.0,
            coords: p.derived.coords,
            derivation: sentences.share(std::mem::take(&mut p.derived.steps)),
            noise_std: 0.0,
            ci95_half_width: 0.0,
            accounted: None,
        };
    }
    let scale = p.resolved.unwrap_or(f64::NAN);
    let (std, ci) = match (p.kind, p.tree_slots) {
        // a quantile's: its rank error (RMS bound, 95 % bound)
        // (the same for permute-and-flip: each candidate is chosen with
        // at most the probability it is kept, exp(−gap/(2b)), the tail
        // bound these rest on)
        (kind, _) if kind.is_selection() && p.statistic == dpplan_vocab::Statistic::TopK => {
            super::top::count_error(scale, p.candidates, p.monotone)
        }
        (kind, _) if kind.is_selection() => super::quantile::rank_error(scale, p.candidates),
        // a running total's: the worst slot's (tree.rs, factorization.rs)
        (_, Some((slots, dpplan_vocab::CumulativeMechanism::Factorization))) => {
            let sd = dpplan_mechanisms::factorization::spread(scale, slots).1;
            (sd, dpplan_mechanisms::Z95 * sd)
        }
        (kind, Some((slots, _))) => {
            dpplan_mechanisms::tree::worst_spread(scale, slots, kind.is_gaussian())
        }
        (kind, None) => dpplan_mechanisms::noise::spread(kind, scale),
    };
    let calibration = match p.scale {
        Scale::Fixed(_) => Calibration::Declared,
        Scale::FromEpsilon { .. } => Calibration::FromEpsilon,
        Scale::Auto { .. } => Calibration::Auto,
        Scale::FromAccuracy => Calibration::Accuracy,
    };
    PartReport {
        role: p.label.clone().unwrap_or_else(|| p.role.into()),
        statistic,
        mechanism: MechanismReport {
            kind: Some(p.kind),
            scale: (!p.kind.is_gaussian()).then_some(scale),
            sigma: p.kind.is_gaussian().then_some(scale),
            calibration,
        },
        l1: p.derived.l1,
        l2: p.derived.l2,
        coords: p.derived.coords,
        derivation: sentences.share(std::mem::take(&mut p.derived.steps)),
        noise_std: std,
        ci95_half_width: ci,
        // exactly what `releases_of` gives the accountants for one release
        accounted: p.accounted(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two releases that differ in any one field never share a cached
    /// cost; ℓ∞ (a discrete Gaussian's shift shapes) included.
    #[test]
    fn release_keys_differ_in_every_field() {
        let base = acct::Release {
            sample: None,
            mechanism: acct::Mechanism {
                kind: dpplan_vocab::NoiseKind::DiscreteGaussian,
                scale: 3.0,
                sensitivity: acct::Sensitivity {
                    l1: 4.0,
                    l2: 2.0,
                    coords: 4,
                    linf: 1.0,
                },
            },
            count: 1,
        };
        let variants: Vec<acct::Release> = vec![
            acct::Release { count: 2, ..base },
            acct::Release {
                sample: Some(0.5),
                ..base
            },
            acct::Release {
                mechanism: acct::Mechanism {
                    kind: dpplan_vocab::NoiseKind::Gaussian,
                    ..base.mechanism
                },
                ..base
            },
            acct::Release {
                mechanism: acct::Mechanism {
                    scale: 3.5,
                    ..base.mechanism
                },
                ..base
            },
        ]
        .into_iter()
        .chain(
            [
                acct::Sensitivity {
                    l1: 5.0,
                    ..base.mechanism.sensitivity
                },
                acct::Sensitivity {
                    l2: 2.5,
                    ..base.mechanism.sensitivity
                },
                acct::Sensitivity {
                    coords: 5,
                    ..base.mechanism.sensitivity
                },
                acct::Sensitivity {
                    linf: 2.0,
                    ..base.mechanism.sensitivity
                },
            ]
            .map(|sensitivity| acct::Release {
                mechanism: acct::Mechanism {
                    sensitivity,
                    ..base.mechanism
                },
                ..base
            }),
        )
        .collect();
        assert_eq!(release_key(&base), release_key(&base.clone()));
        for v in &variants {
            assert_ne!(release_key(&base), release_key(v), "{v:?}");
        }
    }
}
