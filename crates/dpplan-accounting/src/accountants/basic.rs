//! Basic composition (Dwork, McSherry, Nissim & Smith 2006; Dwork & Roth 2014,
//! Thm 3.16): ε and δ add up. Approximate-DP releases share δ evenly and each is
//! charged its tightest single-release ε at its share.

use super::{approx_items, infinite, single_eps};
use crate::{AccountingError, Plan};

pub(super) fn basic(plan: &Plan, delta: f64) -> Result<(f64, String), AccountingError> {
    let pure = plan.pure_sum();
    let approx = approx_items(plan, 1e-3, 1024);
    if approx.is_empty() {
        return Ok((
            pure,
            format!("Σε of {} pure ε-DP releases", plan.total_count()),
        ));
    }
    if delta <= 0.0 {
        return Err(infinite("basic composition"));
    }
    let n: f64 = approx.iter().map(|(_, c)| *c as f64).sum();
    // the shares must not add up past δ: δ/n, one float down unless the
    // exact remainder δ − n·share shows that n·share ≤ δ (n is exact)
    let share = {
        let q = delta / n;
        if (-q).mul_add(n, delta) < 0.0 || q < 1e-290 {
            q.next_down()
        } else {
            q
        }
    };
    let mut terms = vec![(1.0, pure)];
    for (e, c) in &approx {
        terms.push((*c as f64, single_eps(e, share)?));
    }
    let sum = crate::special::sum_up(terms);
    Ok((
        sum,
        format!(
            "Σε; δ split evenly: {:.3e} to each of {} approximate-DP releases",
            share, n
        ),
    ))
}
