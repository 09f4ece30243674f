//! A fresh release as published: its cells after the release's
//! `postprocess` steps — a step over the whole release (`consistent`, with
//! `nonnegative` and `round` beside it) and then each value's own — and
//! its mechanism in words. Every fresh release passes here, so every
//! engine, the ledger and `dpplan audit` see the same published values.

use dpplan_plan::Release;
use dpplan_vocab::PostStep;

use crate::{quantile, top, Cell, Origin, ReleaseResult};

/// The parts' mechanisms in words (`laplace b=2 + laplace b=4`); a
/// quantile's with its rank error at 95 %; a sampled release's with its
/// sample (its values and intervals are the sample's: the noise's, not the
/// sampling's error).
fn mechanism_text(r: &Release) -> String {
    let text = mechanism_parts_text(r);
    match r.sample {
        Some(q) => format!(
            "{text}, on a fresh Poisson sample of {} % of the units (a value counts the sample; divided by {q} it estimates all the units, with the sampling's error on top of the interval)",
            dpplan_plan::sample_percent(q)
        ),
        None => text,
    }
}

fn mechanism_parts_text(r: &Release) -> String {
    r.parts
        .iter()
        .map(|p| match (p.mechanism, p.scale) {
            (Some(kind), Some(s)) if kind.is_gaussian() => format!("{kind} σ={s}"),
            (Some(kind), Some(s)) if kind.is_selection() => match &r.aggregation.top {
                Some(t) => top::mechanism_words(kind, s, t.monotone, p.ci95_half_width),
                None => quantile::mechanism_words(kind, s, p.ci95_half_width),
            },
            (Some(kind), Some(s)) => format!("{kind} b={s}"),
            _ => "none (public statistic)".to_string(),
        })
        .collect::<Vec<_>>()
        .join(" + ")
}

/// `postprocess consistent` on a histogram with its total (the last
/// cell): the cells and the total by weighted least squares on the
/// released values alone, with the noise figures after it (closed form,
/// `dpplan_mechanisms::consistency`; the interval ±1.96 std, approximate
/// unless the noise is Gaussian). With `nonnegative` too, the least
/// squares estimate with every cell ≥ 0, and the unconstrained
/// estimate's figures (its weighted error is never larger; the cells'
/// own have no closed form: approximate). With `round`, a controlled
/// rounding of those cells (each to its floor or ceiling, the total the
/// nearest integer of their sum; the intervals are about the true values
/// and stay where they were). The raw values are kept as `raw_value`. Any
/// other release is returned as it is.
fn consistent(r: &Release, mut cells: Vec<Cell>) -> Vec<Cell> {
    use dpplan_mechanisms::consistency;
    if !(r.aggregation.total && r.postprocess.contains(&PostStep::Consistent)) {
        return cells;
    }
    // (the parts checked before the total is taken off: nothing is lost)
    let [cell_part, total_part] = &r.parts[..] else {
        return cells;
    };
    let Some(total) = cells.pop() else {
        return cells;
    };
    let (sh, st) = (cell_part.noise_std, total_part.noise_std);
    let released: Vec<f64> = cells.iter().map(|c| c.value).collect();
    let (values, sum) = if r.postprocess.contains(&PostStep::Nonnegative) {
        consistency::consistent_nonnegative(&released, sh * sh, total.value, st * st)
    } else {
        consistency::consistent(&released, sh * sh, total.value, st * st)
    };
    // `round` too: whole cells that still add up (each cell's own rounding,
    // applied after, then leaves them as they are); the intervals stay
    // about the estimate before it, as a value's own `round` leaves its
    // interval ([`Cell::postprocessed`])
    let (published, published_sum) = if r.postprocess.contains(&PostStep::Round) {
        consistency::controlled_round(&values)
    } else {
        (values.clone(), sum)
    };
    let (after_h, after_t) = consistency::after(sh, st, cells.len());
    let with = |c: Cell, estimate: f64, published: f64, std: f64| Cell {
        raw_value: Some(c.value),
        value: published,
        ..Cell::noisy(c.group, estimate, std, dpplan_mechanisms::Z95 * std)
    };
    let mut out: Vec<Cell> = cells
        .into_iter()
        .zip(values)
        .zip(published)
        .map(|((c, v), p)| with(c, v, p, after_h))
        .collect();
    out.push(with(total, sum, published_sum, after_t));
    out
}

/// One fresh release as published: its cells after the release's
/// `postprocess` steps (every fresh release passes here, so every engine,
/// the ledger and `dpplan audit` see the same published values).
pub(crate) fn fresh_result(
    r: &Release,
    slot: u64,
    cells: Vec<Cell>,
    approximate: bool,
) -> ReleaseResult {
    let cells = consistent(r, cells)
        .into_iter()
        .map(|c| c.postprocessed(&r.postprocess))
        .collect();
    ReleaseResult {
        query: r.name.clone(),
        slot,
        origin: Origin::Fresh,
        republished_from: None,
        aggregation: r.aggregation.text.clone(),
        mechanism: mechanism_text(r),
        epsilon: r.cost_per_release.epsilon,
        delta: r.cost_per_release.delta,
        cells,
        approximate_interval: approximate,
        ledger_seq: None,
        corrections: Vec::new(),
        backfilled: false,
    }
}
