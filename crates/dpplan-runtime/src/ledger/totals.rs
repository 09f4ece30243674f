//! What an intent records besides its charge: the exact mechanism that was
//! charged, and the whole history composed under every accountant.

use dpplan_accounting as acct;
use dpplan_plan::Release;
use dpplan_vocab::{Accountant, AccountantChoice, NoiseKind, Statistic};
use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use super::LedgerError;

/// The mechanism record of an intent: what was charged, exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MechanismRecord {
    pub aggregation: String,
    pub parts: Vec<PartRecord>,
    /// A windowed release: every intent of one query with this record is
    /// a window of ONE vector release, composed once (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<dpplan_plan::Window>,
    /// A cumulative count: every intent of one query with this record is
    /// a slot of ONE release of its tree's nodes, composed once (absent
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cumulative: Option<dpplan_plan::Cumulative>,
    /// The release ran on a Poisson sample of the units at this rate
    /// (`sample units`): its parts are composed as sampled mechanisms.
    /// Absent otherwise, so every record written before it existed reads
    /// (and hashes) as it did; a binary that predates it ignores it and
    /// composes the parts unsampled — a larger, still sound, total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<f64>,
}

/// A charged mechanism and the Poisson sampling rate it ran at.
pub type Accounted = (acct::Mechanism, Option<f64>);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartRecord {
    pub statistic: Statistic,
    /// `None` (written `none`) for a public statistic.
    #[serde(with = "dpplan_vocab::or_none")]
    pub mechanism: Option<NoiseKind>,
    pub scale: Option<f64>,
    pub grid_exponent: i32,
    pub l1: f64,
    pub l2: f64,
    pub coords: u64,
    /// ℓ∞ sensitivity of a discrete Gaussian over several coordinates
    /// (absent in records written before it was recorded: not given)
    #[serde(default, skip_serializing_if = "dpplan_vocab::is_zero")]
    pub linf: f64,
}

impl MechanismRecord {
    pub fn of(r: &Release) -> Self {
        MechanismRecord {
            aggregation: r.aggregation.text.clone(),
            parts: r
                .parts
                .iter()
                .map(|p| PartRecord {
                    statistic: p.statistic,
                    mechanism: p.mechanism,
                    scale: p.scale,
                    grid_exponent: p.grid_exponent,
                    l1: p.l1,
                    l2: p.l2,
                    coords: p.coords,
                    linf: p.linf,
                })
                .collect(),
            window: r.window.clone(),
            cumulative: r.cumulative.clone(),
            sample: r.sample,
        }
    }

    pub fn accounting(&self) -> Vec<Accounted> {
        self.parts
            .iter()
            .filter_map(|p| {
                dpplan_plan::accounted(
                    p.mechanism,
                    p.scale,
                    acct::Sensitivity {
                        l1: p.l1,
                        l2: p.l2,
                        coords: p.coords,
                        linf: p.linf,
                    },
                )
                .map(|m| (m, self.sample))
            })
            .collect()
    }
}

/// Every charged intent up to entry `through` as the accounting crate's
/// releases (identical mechanisms counted together), and how many
/// intents: every intent read and grouped afresh.
pub(super) fn history_through(
    conn: &Connection,
    through: i64,
) -> Result<(Vec<acct::Release>, u64), LedgerError> {
    let mut stmt = conn.prepare(
        "SELECT mechanism, COUNT(*), MIN(seq) FROM entries WHERE kind = 'intent' AND seq <= ?1 GROUP BY mechanism, query ORDER BY MIN(seq)",
    )?;
    let rows = stmt
        .query_map([through], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let mut releases = Vec::new();
    let mut n = 0;
    for (mechanism, count, seq) in rows {
        let rec: MechanismRecord = serde_json::from_str(mechanism.as_deref().unwrap_or(""))
            .map_err(|_| {
                LedgerError::Corrupt(format!("entry {seq} has an unreadable mechanism"))
            })?;
        // the windows of one query's vector release are one release, and
        // the slots of one cumulative count's tree too
        let composed = if rec.window.is_some() || rec.cumulative.is_some() {
            1
        } else {
            count as u64
        };
        for m in rec.accounting() {
            add_release(&mut releases, m, composed);
        }
        n += count as u64;
    }
    Ok((releases, n))
}

/// The history composed as of entry `through`, and how many intents: the
/// composed history the last intent up to it stored (ledger format 6),
/// read from that one intent; composed afresh from every intent
/// ([`history_through`]) when that intent stored none (written before
/// format 6, or there is none).
pub(super) fn composed_history(
    conn: &Connection,
    through: i64,
) -> Result<(Vec<acct::Release>, u64), LedgerError> {
    let last = super::store::read_entries(
        conn,
        "SELECT * FROM entries WHERE kind = 'intent' AND seq <= ?1 ORDER BY seq DESC LIMIT 1",
        [through],
    )?;
    let Some(e) = last.into_iter().next() else {
        return Ok((Vec::new(), 0));
    };
    match e.intent_value() {
        Some(super::IntentValue {
            composed: Some(c),
            running_totals,
            ..
        }) => Ok((c, running_totals.releases)),
        _ => history_through(conn, through),
    }
}

/// The composed history after an intent of `record`: `before` with the
/// intent's mechanisms added once each, or unchanged for a later window of
/// a vector release (or slot of a tree) already charged.
pub(super) fn after_intent(
    before: &[acct::Release],
    record: &MechanismRecord,
    charged_before: bool,
) -> Vec<acct::Release> {
    let mut out = before.to_vec();
    if !charged_before {
        for m in record.accounting() {
            add_release(&mut out, m, 1);
        }
    }
    out
}

pub(super) fn add_release(releases: &mut Vec<acct::Release>, m: Accounted, count: u64) {
    let (m, sample) = m;
    if let Some(r) = releases
        .iter_mut()
        .find(|r| r.mechanism == m && r.sample == sample)
    {
        r.count += count;
    } else {
        releases.push(acct::Release {
            sample,
            mechanism: m,
            count,
        });
    }
}

/// The accountant a plan names (`best` takes the tightest).
pub(super) fn plan_bound(
    releases: &[acct::Release],
    accountant: AccountantChoice,
    delta: f64,
) -> Result<acct::Bound, acct::AccountingError> {
    match accountant.accountant() {
        Some(a) => acct::epsilon(releases, delta, a),
        None => acct::best(releases, delta),
    }
}

/// What an intent records besides its own charge: the ledger's whole
/// history including this release, composed under every accountant at the
/// plan's δ, and under the plan's own accountant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunningTotals {
    /// Charged releases so far, this one included.
    pub releases: u64,
    /// The δ at which every ε below is stated.
    pub at_delta: f64,
    /// The plan's accountant (`best` = the tightest) and its result.
    pub plan_accountant: AccountantChoice,
    pub plan: TotalOf,
    pub accountants: Vec<TotalOf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TotalOf {
    /// The accountant that produced the bound (written `""` when the plan's
    /// `best` produced none).
    #[serde(with = "dpplan_vocab::or_empty")]
    pub accountant: Option<Accountant>,
    pub epsilon: Option<f64>,
    pub delta: Option<f64>,
    /// Why there is no bound (e.g. an accountant that does not apply).
    pub error: Option<String>,
}

fn total_of(a: Option<acct::Accountant>, r: Result<acct::Bound, acct::AccountingError>) -> TotalOf {
    match r {
        Ok(b) => TotalOf {
            accountant: Some(b.accountant),
            epsilon: Some(b.epsilon),
            delta: Some(b.delta),
            error: None,
        },
        Err(e) => TotalOf {
            accountant: a,
            epsilon: None,
            delta: None,
            error: Some(e.to_string()),
        },
    }
}

pub(super) fn running_totals(
    releases: &[acct::Release],
    n: u64,
    body: &dpplan_plan::PlanBody,
) -> RunningTotals {
    let privacy = &body.privacy;
    // keys from the data: the mechanisms at the budget's δ less the
    // thresholds' reserve, which is added back (the checker keeps the
    // thresholds' δ within it)
    let reserve = threshold_reserve(body);
    let delta = privacy.budget_delta - reserve;
    let with_reserve = |mut t: TotalOf| {
        t.delta = t.delta.map(|d| d + reserve);
        t
    };
    let all = acct::all(releases, delta);
    RunningTotals {
        releases: n,
        at_delta: privacy.budget_delta,
        plan_accountant: privacy.accountant,
        plan: with_reserve(total_of(None, plan_of_all(&all, privacy.accountant))),
        accountants: all
            .into_iter()
            .map(|(a, r)| with_reserve(total_of(Some(a), r)))
            .collect(),
    }
}

/// The plan's accountant's bound read from every accountant's
/// ([`acct::all`]) instead of composing again: [`plan_bound`]'s result
/// exactly (the same evaluations of the same releases; `best` chooses
/// among them in [`acct::TIGHT`]'s order, as [`acct::best`] does), at
/// half the cost of an intent (the PLD accountant runs once, not twice).
pub(super) fn plan_of_all(
    all: &[(Accountant, Result<acct::Bound, acct::AccountingError>)],
    accountant: AccountantChoice,
) -> Result<acct::Bound, acct::AccountingError> {
    let of = |a: Accountant| {
        all.iter()
            .find(|(x, _)| *x == a)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| {
                Err(acct::AccountingError::NotApplicable(format!(
                    "{a} produced no result"
                )))
            })
    };
    match accountant.accountant() {
        Some(a) => of(a),
        None => acct::best_of(acct::TIGHT.iter().map(|&a| of(a))),
    }
}

/// The part of the budget's δ a plan with keys from the data keeps for
/// its thresholds ([`acct::selection::RESERVED_SHARE`]); 0 otherwise.
pub(super) fn threshold_reserve(body: &dpplan_plan::PlanBody) -> f64 {
    let keyed = body
        .releases
        .iter()
        .any(|r| r.aggregation.selection.is_some());
    if keyed {
        body.privacy.budget_delta * acct::selection::RESERVED_SHARE
    } else {
        0.0
    }
}

/// An upgrade to or from a plan with keys from the data is refused: the
/// thresholds' δ of the history and of the new plan are not composed
/// across plans yet (docs/executable-plan.md).
pub(super) fn keyed_upgrade(
    conn: &Connection,
    plan: &dpplan_plan::ExecutablePlan,
) -> Result<(), LedgerError> {
    let charged: i64 = conn.query_row(
        "SELECT COUNT(*) FROM entries WHERE kind = 'intent' AND mechanism LIKE '% keys from data%'",
        [],
        |r| r.get(0),
    )?;
    if charged > 0 || threshold_reserve(&plan.body) > 0.0 {
        return Err(LedgerError::OverBudget(
            "a ledger cannot be upgraded to or from a plan with keys from the data yet: the thresholds' δ is not composed across plans; start a new ledger".into(),
        ));
    }
    Ok(())
}
