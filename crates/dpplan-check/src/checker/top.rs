//! Top-k: `top(d by k, n)` releases the keys of the n cells with the
//! largest counts (rows, or with `distinct d.unit_id` units per cell), in
//! order, without their counts — chosen by the exponential mechanism, one
//! selection per rank, each among the cells not chosen before ("peeling").
//! What it does not support yet (DP014), its n (DP007), and each
//! selection's sensitivity in words.
//!
//! The score of a cell is its count c_j. One unit moves each count by at
//! most Δ = the counts' ℓ∞ sensitivity (rows_per_group, capped by
//! rows_per_unit; 1 for a row unit or for units per cell). The mechanism
//! that picks j with probability ∝ exp(c_j/(2b)) is ε-DP for ε = Δ/b
//! (McSherry & Talwar 2007). Under `add_remove` every count moves the same
//! way (adding a unit only adds rows), and the mechanism may then pick
//! with probability ∝ exp(c_j/b) for the same ε = Δ/b: with Z = Σ exp(c_j/b)
//! the privacy loss of an outcome j is (c_j − c′_j)/b − ln(Z/Z′), where
//! c_j − c′_j ∈ [0, Δ] and ln(Z/Z′) ∈ [0, Δ/b], so it lies in [−ε, ε] and in
//! an interval of width ε whatever the outcome (ε-bounded-range, Durfee &
//! Rogers 2019, as the two-sided form is). Peeling n selections is the
//! one-shot Gumbel top-n (Durfee & Rogers 2019), accounted as n
//! exponential mechanisms: with `epsilon ε` split evenly, ε/n each, so ε
//! pure in all and n·(ε/n)²/8 zCDP.
//!
//! The monotone form relies on an invariant of the engines' bounding: a
//! unit's kept rows are chosen per unit (its own random draw, or on Spark
//! a keyed hash of the unit and the row), so adding a unit never changes
//! which rows another unit keeps — only its own rows are added.

use dpplan_diagnostics::{Code, Diagnostic};
use dpplan_syntax::ast::{self, Adjacency, AggKind};
use dpplan_vocab::Statistic;

use super::query::{Part, Reported};
use super::Checker;
use dpplan_mechanisms::sensitivity::{fmt_num, Derived};

/// A top-k query's k and whether its scores are monotone (add/remove:
/// the runtime then draws with probability ∝ exp(count/b)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopSpec {
    pub k: u64,
    pub monotone: bool,
}

pub(super) fn is_top(kind: AggKind) -> bool {
    kind == AggKind::Top
}

/// DP014: what a top-k does not support in this version.
pub(super) fn supported(c: &mut Checker, q: &ast::Query, agg: &ast::Aggregate) -> bool {
    let unsupported = |what: &str| format!("{what} is not supported in this version");
    let mut problems = Vec::new();
    if let Some(k) = &agg.keys_from_data {
        problems.push((
            k.span,
            Code::Unsupported,
            unsupported("a top-k over keys from the data"),
            "declare the key's public categories (`category { … }`) and rank them; or release the keys from the data with `histogram(… keys from data)`",
        ));
    }
    if let Some(cum) = agg.cumulative {
        problems.push((
            cum,
            Code::Unsupported,
            unsupported("a cumulative top-k"),
            "remove `cumulative`",
        ));
    }
    if let Some(w) = q.windows().first() {
        problems.push((
            w.span,
            Code::Unsupported,
            unsupported("a windowed top-k"),
            "remove the `window`: each release then ranks every row the query reads",
        ));
    }
    if let Some(a) = q.accuracies().first() {
        problems.push((
            a.span,
            Code::Unsupported,
            unsupported("an `accuracy` requirement on a top-k"),
            "remove it: the report states each selection's count error at 95 %",
        ));
    }
    if let Some(p) = q.postprocess().first() {
        problems.push((
            p.span,
            Code::Unsupported,
            "a top-k releases keys ranked 1 to k, not values: there is nothing to post-process"
                .into(),
            "remove the `postprocess` statement",
        ));
    }
    if let Some(cand) = q.candidates().first() {
        problems.push((
            cand.span,
            Code::Unsupported,
            "a top-k ranks the cells of its keys: `candidates` is a quantile's grid".into(),
            "remove `candidates`: the cells of `by` are the candidates",
        ));
    }
    let ok = problems.is_empty();
    for (span, code, msg, help) in problems {
        c.error(Diagnostic::new(code, msg, span).help(help));
    }
    ok
}

/// The most keys a top-k releases: the runtime runs one exponential
/// mechanism over the cells per rank (k·cells big-integer scores).
pub const MAX_K: u64 = 1_000;

/// k: a whole number from 1 to the number of cells, at most [`MAX_K`]
/// (DP007, DP017).
pub(super) fn k(c: &mut Checker, agg: &ast::Aggregate, cells: u64) -> Result<u64, Reported> {
    let Some(n) = &agg.argument else {
        c.error(
            Diagnostic::new(
                Code::TypeMismatch,
                "`top` takes how many keys to release: `top(d by page, 3)`",
                agg.span,
            )
            .help("add the number of keys after the keys, e.g. `top(visits by page, 3)`"),
        );
        return Err(Reported);
    };
    let v = n.value;
    let most = cells.min(MAX_K);
    if !(v >= 1.0 && v.fract() == 0.0 && v <= most as f64) {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!(
                    "a top-k releases a whole number of keys from 1 to {most} ({cells} cells, at most {MAX_K} keys), found {v}"
                ),
                n.span,
            )
            .help(format!(
                "choose k between 1 and {most}; to release every cell's count write `histogram(…)`"
            )),
        );
        return Err(Reported);
    }
    Ok(v as u64)
}

/// The k selections' parts, each with the score's sensitivity Δ: the
/// counts' ℓ∞ sensitivity (`base`, the histogram's or units per cell's
/// derivation).
pub(super) fn derived(
    spec: TopSpec,
    base: &Derived,
    counted: &str,
    adjacency: Adjacency,
) -> Vec<(Statistic, &'static str, Derived)> {
    let delta = base.linf;
    let mut steps = vec![
        format!("the score of a cell is its count of {counted}"),
        format!(
            "{}: one unit moves each count by at most Δ = {} (the counts' ℓ∞ sensitivity)",
            base.steps.first().cloned().unwrap_or_default(),
            fmt_num(delta)
        ),
    ];
    steps.push(match adjacency {
        Adjacency::AddRemove => {
            "add/remove: every count moves the same way, so the mechanism picks a cell with probability ∝ exp(count/b) and is ε-DP and ε-bounded-range for ε = Δ/b (the privacy loss is (c − c′)/b − ln(Z/Z′) with both terms in [0, Δ/b]); each rank chooses among the cells not chosen at an earlier one".to_string()
        }
        Adjacency::Replace => {
            "replace: counts may move both ways, so the mechanism picks a cell with probability ∝ exp(count/(2b)) and is ε-DP and ε-bounded-range for ε = Δ/b; each rank chooses among the cells not chosen at an earlier one".to_string()
        }
    });
    (0..spec.k)
        .map(|_| {
            (
                Statistic::TopK,
                "top",
                Derived {
                    l1: delta,
                    l2: delta,
                    coords: 1,
                    linf: delta,
                    steps: steps.clone(),
                },
            )
        })
        .collect()
}

/// Each selection's part: its rank as its label (`top 2`), the cells it
/// chooses from and whether it draws ∝ exp(count/b).
pub(super) fn label_parts(parts: &mut [Part], spec: TopSpec, cells: u64) {
    for (i, p) in parts.iter_mut().enumerate() {
        p.candidates = (cells as usize).saturating_sub(i);
        p.label = Some(format!("top {}", i + 1));
        p.monotone = spec.monotone;
    }
}

/// A selection's count error: with probability ≥ 1 − β the chosen cell's
/// count is within (2 or 1)·b·ln(m/β) of the best remaining cell's (the
/// exponential mechanism's utility bound, Dwork & Roth 2014 Thm 3.11; the
/// factor 1 for the monotone form, which draws ∝ exp(count/b)), and its
/// root-mean-square bound. `(rms, ci95)`, in counts.
pub fn count_error(scale: f64, candidates: usize, monotone: bool) -> (f64, f64) {
    let (rms, ci) = super::quantile::rank_error(scale, candidates);
    if monotone {
        (rms / 2.0, ci / 2.0)
    } else {
        (rms, ci)
    }
}
