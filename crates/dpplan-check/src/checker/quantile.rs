//! Quantiles: `quantile(d.col, q)` and `quantiles(d.col, [q1, …])`, each
//! chosen from a public candidate grid by the exponential mechanism — the
//! levels (DP007), the grid (DP030), the mechanism (DP017), what is not
//! supported yet (DP014), and the score's sensitivity in words.
//!
//! The score of candidate c at level q on a data set of n (bounded) rows is
//! u(c) = −|#{x < c} − q·n|; the mechanism picks c with probability
//! ∝ exp(u(c)/(2b)), which is ε-DP with ε = Δ/b for Δ the score's
//! sensitivity (and ε-bounded-range, see dpplan-accounting).

use dpplan_diagnostics::{Code, Diagnostic};
use dpplan_syntax::ast::{self, Adjacency, AggKind, CandidateGrid};
use dpplan_vocab::Statistic;

use super::query::{Part, Reported};
use super::Checker;
use dpplan_mechanisms::sensitivity::{fmt_num, Derived, UnitBound};

/// The most candidates a grid may have: the runtime's sampler keeps one
/// big-integer score per candidate.
pub const MAX_CANDIDATES: usize = 100_000;

/// A quantile query's levels and candidate grid, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantileSpec {
    pub levels: Vec<f64>,
    pub candidates: Vec<f64>,
}

pub(super) fn is_quantile(kind: AggKind) -> bool {
    matches!(kind, AggKind::Quantile | AggKind::Quantiles)
}

/// DP014: what quantiles do not support yet (groups, `distinct`, an
/// `accuracy` requirement).
pub(super) fn supported(c: &mut Checker, q: &ast::Query, agg: &ast::Aggregate) -> bool {
    let unsupported = |what: &str| format!("{what} is not supported in this version");
    let mut problems = Vec::new();
    if let Some(k) = agg.keys.first() {
        problems.push((
            k.span(),
            unsupported("a grouped quantile (`by`)"),
            "release one quantile query per group, each with a `where` filter",
        ));
    }
    if let Some(d) = agg.distinct {
        problems.push((
            d,
            unsupported("`distinct` in a quantile"),
            "remove `distinct`",
        ));
    }
    if let Some(a) = q.accuracies().first() {
        problems.push((
            a.span,
            unsupported("an `accuracy` requirement on a quantile"),
            "remove it: the report states the rank error at 95 %",
        ));
    }
    let ok = problems.is_empty();
    for (span, msg, help) in problems {
        c.error(Diagnostic::new(Code::Unsupported, msg, span).help(help));
    }
    ok
}

/// The levels: one number for `quantile`, a list for `quantiles`, each
/// strictly between 0 and 1 (DP007, DP017).
pub(super) fn levels(c: &mut Checker, agg: &ast::Aggregate) -> Result<Vec<f64>, Reported> {
    let numbers: Vec<&ast::Number> = match (agg.kind.value, &agg.argument, &agg.levels) {
        (AggKind::Quantile, Some(n), None) => vec![n],
        (AggKind::Quantiles, None, Some(l)) if !l.value.is_empty() => l.value.iter().collect(),
        (kind, _, _) => {
            let (msg, help) = if kind == AggKind::Quantile {
                (
                    "`quantile` takes one level: `quantile(d.col, 0.5)`",
                    "for several levels write `quantiles(d.col, [0.25, 0.5, 0.9])`",
                )
            } else {
                (
                    "`quantiles` takes a list of levels: `quantiles(d.col, [0.25, 0.5, 0.9])`",
                    "for one level write `quantile(d.col, 0.5)`",
                )
            };
            c.error(Diagnostic::new(Code::TypeMismatch, msg, agg.span).help(help));
            return Err(Reported);
        }
    };
    let mut ok = true;
    for n in &numbers {
        if !(n.value > 0.0 && n.value < 1.0) {
            c.error(
                Diagnostic::new(
                    Code::InvalidParameter,
                    format!(
                        "a quantile's level must lie strictly between 0 and 1, found {}",
                        n.value
                    ),
                    n.span,
                )
                .help("the median is `0.5`, the 90th percentile `0.9`"),
            );
            ok = false;
        }
    }
    ok.then(|| numbers.iter().map(|n| n.value).collect())
        .ok_or(Reported)
}

/// The candidate grid (DP030): declared, or `every <step>` from the
/// column's lower bound up to its upper bound; finite, strictly
/// increasing, inside the bounds, at most [`MAX_CANDIDATES`].
pub(super) fn candidates(
    c: &mut Checker,
    q: &ast::Query,
    bounds: (f64, f64),
) -> Result<Vec<f64>, Reported> {
    let Some(decl) = q.candidates().first() else {
        c.error(
            Diagnostic::new(
                Code::InvalidCandidates,
                format!("quantile `{}` has no candidate grid", q.name.value),
                q.name.span,
            )
            .label("the released value is chosen from public candidates")
            .help(format!(
                "add `candidates every <step>` (from {} to {}) or `candidates [c1, c2, …]`",
                fmt_num(bounds.0),
                fmt_num(bounds.1)
            )),
        );
        return Err(Reported);
    };
    let grid = match &decl.grid {
        CandidateGrid::List { values } => values.iter().map(|v| v.value).collect(),
        CandidateGrid::Every { step } => stepped(c, decl, step, bounds)?,
    };
    check_grid(c, decl, &grid, bounds)?;
    Ok(grid)
}

/// lo, lo + step, lo + 2·step, … ≤ hi (each computed as lo + i·step).
fn stepped(
    c: &mut Checker,
    decl: &ast::Candidates,
    step: &ast::Number,
    (lo, hi): (f64, f64),
) -> Result<Vec<f64>, Reported> {
    let count = ((hi - lo) / step.value).floor() + 1.0;
    // (a NaN count, from a NaN or infinite step, is no grid)
    let fits = (1.0..=MAX_CANDIDATES as f64).contains(&count);
    if !(step.value > 0.0 && step.value.is_finite() && fits) {
        c.error(
            Diagnostic::new(
                Code::InvalidCandidates,
                format!(
                    "the step {} does not give a grid of 1 to {MAX_CANDIDATES} candidates on [{}, {}]",
                    step.value,
                    fmt_num(lo),
                    fmt_num(hi)
                ),
                step.span,
            )
            .secondary(decl.span, "candidate grid declared here")
            .help("use a positive step no smaller than (hi − lo)/100000"),
        );
        return Err(Reported);
    }
    Ok((0..count as usize)
        .map(|i| lo + i as f64 * step.value)
        .filter(|&x| x <= hi)
        .collect())
}

fn check_grid(
    c: &mut Checker,
    decl: &ast::Candidates,
    grid: &[f64],
    (lo, hi): (f64, f64),
) -> Result<(), Reported> {
    let problem = if grid.is_empty() {
        Some("a candidate grid needs at least one candidate".to_string())
    } else if grid.len() > MAX_CANDIDATES {
        Some(format!(
            "{} candidates: at most {MAX_CANDIDATES} are allowed",
            grid.len()
        ))
    } else if grid.iter().any(|x| !x.is_finite()) {
        Some("candidates must be finite numbers".into())
    } else if grid.windows(2).any(|w| w[0] >= w[1]) {
        Some("candidates must be strictly increasing".into())
    } else if grid.iter().any(|&x| x < lo || x > hi) {
        Some(format!(
            "candidates must lie within the column's public bounds [{}, {}]",
            fmt_num(lo),
            fmt_num(hi)
        ))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(msg) => {
            c.error(
                Diagnostic::new(Code::InvalidCandidates, msg, decl.span)
                    .help("list finite, strictly increasing candidates inside the bounds, or write `candidates every <step>`"),
            );
            Err(Reported)
        }
    }
}

/// DP017: a quantile or a top-k is released by a selection (the
/// exponential mechanism or permute-and-flip), and a selection releases
/// only those.
pub(super) fn mechanism_fits(c: &mut Checker, agg: &ast::Aggregate, noise: &ast::Noise) -> bool {
    let exp = noise.kind.value.is_selection();
    let quantile = is_quantile(agg.kind.value);
    let selection = quantile || agg.kind.value == AggKind::Top;
    if exp == selection {
        return true;
    }
    let (msg, help) = if selection {
        let what = if quantile {
            "a quantile is chosen from its candidates"
        } else {
            "a top-k's keys are chosen"
        };
        (
            format!(
                "{what} by the exponential mechanism or permute-and-flip, not by {} noise",
                noise.kind.value.as_str()
            ),
            "write `noise exponential epsilon …` or `noise permute_and_flip epsilon …`".to_string(),
        )
    } else {
        (
            format!(
                "`{}` selects a quantile or a top-k's keys; `{}` needs additive noise",
                noise.kind.value.as_str(),
                agg.kind.value.as_str()
            ),
            "use `laplace`, `gaussian`, `discrete_laplace` or `discrete_gaussian` noise"
                .to_string(),
        )
    };
    c.error(Diagnostic::new(Code::TypeMismatch, msg, noise.kind.span).help(help));
    false
}

/// A selection by permute-and-flip (`noise permute_and_flip`): each
/// part's last step, the mechanism's (the exponential mechanism's, last in
/// [`derived`] and `top::derived`), in permute-and-flip's words. The
/// sensitivity and ε = Δ/b are the same; what differs is that
/// permute-and-flip is not ε-bounded-range, so the accountants charge it
/// as any ε-DP mechanism (`top_tests.rs` checks both by enumeration).
pub(super) fn permute_and_flip_steps(
    derived: &mut [(Statistic, &'static str, Derived)],
    monotone: bool,
) {
    let keep = if monotone {
        "every score moves the same way, so permute-and-flip keeps a candidate with probability exp(−(best − score)/b)"
    } else {
        "permute-and-flip keeps a candidate with probability exp(−(best − score)/(2b))"
    };
    for (_, _, d) in derived.iter_mut() {
        if let Some(last) = d.steps.last_mut() {
            *last = format!(
                "{keep}, visiting the candidates in a uniformly random order and choosing the first it keeps (McKenna & Sheldon 2020; report-noisy-max with exponential noise, Ding et al. 2021): ε-DP for ε = Δ/b per selection, never less likely than the exponential mechanism to choose the best, but not ε-bounded-range, so every accountant charges it as any ε-DP mechanism"
            );
        }
    }
}

/// max(q, 1 − q), rounded up.
fn larger_side(q: f64) -> f64 {
    if q >= 0.5 {
        q
    } else {
        // d = fl(1 − q) ∈ [½, 1]: 1 − d is exact (Sterbenz), and so is
        // (1 − d) − q = (1 − q) − d, both terms within a factor 2 of q
        let d = 1.0 - q;
        if (1.0 - d) - q > 0.0 {
            d.next_up()
        } else {
            d
        }
    }
}

/// a·b rounded up.
fn mul_up(a: f64, b: f64) -> f64 {
    let p = a * b;
    if a.mul_add(b, -p) > 0.0 {
        p.next_up()
    } else {
        p
    }
}

/// The sensitivity Δ of the score u(c) = −|#{x < c} − q·n| at level `q`,
/// derived in words: the exponential mechanism is ε-DP with ε = Δ/b.
pub fn sensitivity(u: UnitBound, adj: Adjacency, q: f64) -> Derived {
    let r = u.rows as f64;
    let who = if u.user {
        format!("a unit (at most rows_per_unit = {} rows)", u.rows)
    } else {
        "one row".into()
    };
    let score = format!(
        "the score of a candidate c at level {} is −|#{{x < c}} − {}·n| (n the number of bounded rows)",
        fmt_num(q),
        fmt_num(q)
    );
    let (delta, step) = match adj {
        Adjacency::AddRemove => {
            let side = larger_side(q);
            let d = mul_up(r, side);
            (
                d,
                format!(
                    "adding or removing {who} moves n by its k ≤ {r} rows and #{{x < c}} by j ∈ [0, k], so #{{x < c}} − {q}·n moves by j − {q}·k ∈ [−{q}·k, (1 − {q})·k]: at most {r}·max({q}, 1 − {q}) = {}; |·| is 1-Lipschitz: Δ = {}",
                    fmt_num(d),
                    fmt_num(d),
                    r = fmt_num(r),
                    q = fmt_num(q)
                ),
            )
        }
        Adjacency::Replace => (
            r,
            format!(
                "replacing {who} by another: each row that leaves moves #{{x < c}} − {q}·n by a value in [−(1 − {q}), {q}], each row that enters by one in [−{q}, 1 − {q}], at most {} rows each way, so by at most {}: Δ = {}",
                fmt_num(r),
                fmt_num(r),
                fmt_num(r),
                q = fmt_num(q)
            ),
        ),
    };
    Derived {
        l1: delta,
        l2: delta,
        coords: 1,
        linf: delta,
        steps: vec![
            score,
            step,
            "the exponential mechanism chooses c with probability ∝ exp(score(c)/(2b)): ε = Δ/b per release (and ε-bounded-range)".into(),
        ],
    }
}

/// The chosen candidate's rank error at 95 %: with probability ≥ 1 − β
/// the chosen score is within 2b·ln(m/β) of the best candidate's (the
/// exponential mechanism's utility bound, Dwork & Roth 2014 Thm 3.11, with
/// 2Δ/ε = 2b); and an upper bound on the root-mean-square rank error,
/// 2b·√((ln m + 1)² + 1) (from the same tail bound). `(rms, ci95)`.
/// One part per level, each with its score's sensitivity.
pub(super) fn derived(
    spec: &QuantileSpec,
    unit: UnitBound,
    adjacency: Adjacency,
) -> Vec<(Statistic, &'static str, Derived)> {
    spec.levels
        .iter()
        .map(|&l| {
            (
                Statistic::Quantile,
                "quantile",
                sensitivity(unit, adjacency, l),
            )
        })
        .collect()
}

/// Each level's part carries the grid's size and its level as its label
/// (`quantile 0.25`: how the report and the diff tell them apart).
pub(super) fn label_parts(parts: &mut [Part], spec: &QuantileSpec) {
    for (p, level) in parts.iter_mut().zip(&spec.levels) {
        p.candidates = spec.candidates.len();
        p.label = Some(format!("quantile {level}"));
    }
}

pub fn rank_error(scale: f64, candidates: usize) -> (f64, f64) {
    let ln_m = (candidates.max(1) as f64).ln();
    let ci = 2.0 * scale * (ln_m + 20f64.ln());
    let rms = 2.0 * scale * ((ln_m + 1.0).powi(2) + 1.0).sqrt();
    (rms, ci)
}
