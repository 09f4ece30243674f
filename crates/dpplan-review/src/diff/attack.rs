//! The diff's attack-risk lines: the attacker's best TPR at each
//! false-positive rate, old → new (each side's own claim, read as a
//! membership test's power; docs/accounting.md, "Attack risk").

use super::PlanDiff;
use dpplan_diagnostics::{percent, percent_up};

/// "the attacker's best TPR at 1 % FPR: 3.10 % → 5.80 %", one per rate
/// either side states; `n/a` on a side without a claim. Rounded up.
pub(crate) fn lines(d: &PlanDiff) -> Vec<String> {
    let (old, new) = (d.old.attack_risk.as_ref(), d.new.attack_risk.as_ref());
    let mut fprs: Vec<f64> = old
        .into_iter()
        .chain(new)
        .flat_map(|r| r.points.iter().map(|p| p.fpr))
        .collect();
    let mut seen = Vec::new();
    fprs.retain(|f| {
        let fresh = !seen.contains(f);
        seen.push(*f);
        fresh
    });
    let at = |r: Option<&dpplan_accounting::AttackRisk>, f: f64| {
        r.and_then(|r| r.tpr_at(f))
            .map_or_else(|| "n/a".to_string(), percent_up)
    };
    fprs.into_iter()
        .map(|f| {
            format!(
                "the attacker's best TPR at {} FPR: {} → {}",
                percent(f),
                at(old, f),
                at(new, f)
            )
        })
        .collect()
}
