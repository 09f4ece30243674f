//! The report as a sequence of blocks, written once and rendered by the
//! Markdown and HTML renderers (text uses `code` spans; figures are
//! dropped by Markdown, whose tables carry their numbers).

use dpplan_diagnostics::num;

use super::*;

pub(crate) enum Block {
    Heading(u8, String),
    Para(String),
    List(Vec<String>),
    Table(Vec<String>, Vec<Vec<String>>),
    /// An inline SVG (HTML only).
    Figure(String),
}

fn opt(x: Option<f64>) -> String {
    x.map_or("—".into(), num)
}

/// The blocks of a review; `figures`: draw the SVG figures.
pub(super) fn blocks(r: &Review, figures: bool) -> Vec<Block> {
    use Block::*;
    let c = &r.contract;
    let mut b = Vec::new();
    b.push(Heading(
        1,
        format!(
            "Privacy review: `{}`",
            r.plan.as_deref().unwrap_or("(unnamed plan)")
        ),
    ));
    b.push(Para(format!(
        "**Claim:** the whole schedule ({} fresh releases) is (ε = {}, δ = {})-differentially private for one `{}` under `{}` adjacency, by {}; the budget is (ε = {}, δ = {}): {}.",
        c.releases,
        num(c.total.epsilon),
        num(c.total.delta),
        c.unit,
        c.adjacency,
        c.accountant_name,
        num(c.budget.epsilon),
        num(c.budget.delta),
        if c.within_budget { "within budget" } else { "OVER BUDGET" }
    )));
    if !r.controls_ok {
        b.push(Para(
            "**The negative controls failed:** at least one query's removal or doubled bound does not move the claim (see “Negative controls”). Do not sign off this plan."
                .into(),
        ));
    }

    contract(&mut b, r);
    queries(&mut b, r, figures);
    calendar(&mut b, r, figures);
    averaging(&mut b, r, figures);
    controls(&mut b, r);
    if let Some(a) = &r.audit {
        super::audit::blocks(&mut b, a);
    }
    b
}

/// The contract: who is protected, what is not, the bounds, the budget and the accountants.
fn contract(b: &mut Vec<Block>, r: &Review) {
    use Block::*;
    let c = &r.contract;
    b.push(Heading(2, "The contract".into()));
    b.push(Heading(3, "Who is protected".into()));
    let mut unit = vec![format!("Unit: `{}` — {}.", c.unit, c.unit_description)];
    unit.push(format!("Adjacency: `{}`.", c.adjacency));
    unit.extend(c.protected.iter().cloned());
    b.push(List(unit));
    b.push(Heading(3, "What is not protected".into()));
    b.push(List(c.not_protected.clone()));
    b.push(Heading(3, "Contribution bounds".into()));
    b.push(Table(
        vec!["dataset".into(), "bounds".into()],
        c.datasets
            .iter()
            .map(|d| vec![format!("`{}`", d.name), d.summary.clone()])
            .collect(),
    ));
    b.push(Heading(3, "Budget and accountants".into()));
    b.push(Para(format!(
        "Budget ε = {}, δ = {}. The total ε = {} at δ = {} comes from {} (`{}`: {}). Why this accountant: {}.",
        num(c.budget.epsilon),
        num(c.budget.delta),
        num(c.total.epsilon),
        num(c.total.delta),
        c.accountant_name,
        c.accountant,
        c.accountant_detail,
        c.accountant_why
    )));
    b.push(Table(
        vec!["accountant".into(), "ε".into(), "δ".into(), "how".into()],
        c.accountants
            .iter()
            .map(|a| {
                vec![
                    a.name.clone(),
                    opt(a.epsilon),
                    opt(a.delta),
                    match (&a.detail, &a.error) {
                        (Some(d), _) => d.clone(),
                        (None, Some(e)) => e.clone(),
                        (None, None) => String::new(),
                    },
                ]
            })
            .collect(),
    ));
    b.push(Heading(3, "What ε and δ mean".into()));
    b.push(List(c.delta_meaning.clone()));
    if !c.checker_notes.is_empty() {
        b.push(Heading(3, "What the checker notes".into()));
        b.push(List(c.checker_notes.clone()));
    }
}

/// One section per query: what it releases, its sensitivity, its noise and its cost.
fn queries(b: &mut Vec<Block>, r: &Review, figures: bool) {
    use Block::*;
    b.push(Heading(2, "Queries".into()));
    b.push(Para(format!("Calendar: {}.", r.calendar.note)));
    b.push(Table(
        [
            "query",
            "aggregation",
            "schedule",
            "releases",
            "first release",
            "last release",
            "ε alone",
            "share",
        ]
        .map(String::from)
        .to_vec(),
        r.queries
            .iter()
            .map(|q| {
                vec![
                    format!("`{}`", q.name),
                    format!("`{}`", q.aggregation),
                    q.schedule.text.clone(),
                    q.schedule.releases.to_string(),
                    q.schedule.first.clone(),
                    q.schedule.last.clone(),
                    opt(q.epsilon_alone),
                    percent(q.share),
                ]
            })
            .collect(),
    ));
    b.push(Para(format!(
        "“ε alone” is the query's whole schedule accounted by itself at the budget's δ (the fast accountants' best); the ε of queries do not add up to the total. {}",
        r.share_definition
    )));
    if figures {
        if let Ok(svg) = figures::shares(r) {
            b.push(Figure(svg));
        }
    }
    for q in &r.queries {
        query_section(b, q);
    }
}

/// One query's section: what and when, its cost, its parts' noise, why
/// (the derivations and what each released value carries), a mean's own
/// accuracy.
fn query_section(b: &mut Vec<Block>, q: &QueryReview) {
    use Block::*;
    b.push(Heading(3, format!("`{}`", q.name)));
    let mut items = vec![
        format!("`{}` on `{}`.", q.aggregation, q.dataset),
        format!(
            "Schedule: {} — {} fresh release(s), the first on {}, the last on {}.",
            q.schedule.text, q.schedule.releases, q.schedule.first, q.schedule.last
        ),
    ];
    // a windowed query's (a cumulative count's) releases are one
    // accounted release: no window (no total) has an ε of its own
    let per_release = match &q.one_release {
        Some(why) => {
            items.push(format!("One accounted release: {why}."));
            format!("{} for that one release", opt(q.epsilon_per_release))
        }
        None => format!("{} per release", opt(q.epsilon_per_release)),
    };
    items.push(format!(
        "ε alone: {per_release}, {} for the whole schedule{}; share of the plan's ρ: {} (ρ = {}).",
        opt(q.epsilon_alone),
        q.alone_accountant
            .as_ref()
            .map(|a| format!(" ({a})"))
            .unwrap_or_default(),
        percent(q.share),
        num(q.rho)
    ));
    b.push(List(items));
    b.push(Table(
        [
            "part",
            "noise",
            "calibration",
            "L1",
            "L2",
            "noise std",
            "95 % half-width",
        ]
        .map(String::from)
        .to_vec(),
        q.parts
            .iter()
            .map(|p| {
                vec![
                    p.role.clone(),
                    match (p.scale, p.sigma) {
                        (_, Some(s)) => format!("{} σ = {}", p.noise, num(s)),
                        (Some(s), None) => format!("{} b = {}", p.noise, num(s)),
                        _ => p.noise.clone(),
                    },
                    p.calibration.clone(),
                    num(p.l1),
                    num(p.l2),
                    num(p.noise_std),
                    format!("±{}", num(p.ci95_half_width)),
                ]
            })
            .collect(),
    ));
    b.push(List(part_notes(q)));
    if let Some(m) = &q.mean {
        b.push(Para(format!("The mean's own accuracy: {}.", m.assumption)));
        b.push(Table(
            ["true count n", "std of the mean", "95 % half-width"]
                .map(String::from)
                .to_vec(),
            m.points
                .iter()
                .map(|p| {
                    vec![
                        num(p.count),
                        num(p.std),
                        format!("±{}", num(p.ci95_half_width)),
                    ]
                })
                .collect(),
        ));
    }
}

/// Why each part is what it is: its derivation in words, the threshold of
/// keys from the data, a quantile's rank error, the cells it releases.
fn part_notes(q: &QueryReview) -> Vec<String> {
    let mut why = Vec::new();
    for p in &q.parts {
        for d in &p.derivation {
            why.push(format!("{}: {d}", p.role));
        }
        if let Some(sel) = &q.selection {
            why.push(format!(
                "{}: keys from the data — a key of `{}` is released only when its noisy count is above τ = {} ({}); a key only one unit has appears with probability ≤ {} per release; δ = {} over the schedule, part of the plan's δ.",
                p.role,
                sel.column,
                num(sel.threshold),
                if sel.auto { "threshold auto" } else { "declared" },
                num(sel.release_probability),
                num(sel.delta)
            ));
        }
        if p.noise == "exponential" {
            why.push(format!(
                "{}: no additive noise — the released value is a candidate; its rank is within {} rows of the best candidate's with probability ≥ 95 % (the noise std and 95 % columns are this rank error: root-mean-square ≤ {}, 95 % ≤ {}).",
                p.role,
                num(p.ci95_half_width),
                num(p.noise_std),
                num(p.ci95_half_width)
            ));
        }
        if !p.cells.is_empty() {
            why.push(format!(
                "{}: every cell ({}) is released with noise std {} and 95 % half-width ±{}.",
                p.role,
                p.cells
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                num(p.noise_std),
                num(p.ci95_half_width)
            ));
        }
    }
    why
}

/// The cumulative ε over the release calendar.
fn calendar(b: &mut Vec<Block>, r: &Review, figures: bool) {
    use Block::*;
    b.push(Heading(2, "Cumulative ε over the calendar".into()));
    b.push(Para(r.cumulative.note.clone()));
    if figures {
        if let Ok(svg) = figures::cumulative(r) {
            b.push(Figure(svg));
        }
    }
    b.push(Table(
        ["fraction of the budget", "reached on", "ε then"]
            .map(String::from)
            .to_vec(),
        r.cumulative
            .fractions
            .iter()
            .map(|f| {
                vec![
                    format!(
                        "{:.0} % (ε = {})",
                        f.fraction * 100.0,
                        num(f.fraction * r.cumulative.budget_epsilon)
                    ),
                    f.at.clone().unwrap_or_else(|| "never".into()),
                    opt(f.epsilon),
                ]
            })
            .collect(),
    ));
    if let Some(first) = r.cumulative.curves.first() {
        let n = first.points.len();
        let picks: Vec<usize> = if n <= 6 {
            (0..n).collect()
        } else {
            (0..6).map(|i| i * (n - 1) / 5).collect()
        };
        let mut header = vec!["date".to_string()];
        header.extend(r.cumulative.curves.iter().map(|c| c.name.clone()));
        let rows = picks
            .iter()
            .map(|&i| {
                let mut row = vec![timeline::label(
                    r.calendar.first_run_unix,
                    first.points[i].t,
                )];
                row.extend(
                    r.cumulative
                        .curves
                        .iter()
                        .map(|c| c.points.get(i).map_or("—".into(), |p| num(p.epsilon))),
                );
                row
            })
            .collect();
        b.push(Table(header, rows));
    }
}

/// Averaging fresh releases, when the plan asks for it: the noise of the average and the ε it costs.
fn averaging(b: &mut Vec<Block>, r: &Review, figures: bool) {
    use Block::*;
    if !r.averaging.is_empty() {
        b.push(Heading(2, "Averaging fresh releases".into()));
        b.push(Para(
            "The average of r fresh releases of a query has noise std σ/√r, and costs the ε of r releases (alone, at the budget's δ, the best accountant)."
                .into(),
        ));
        for a in &r.averaging {
            if figures {
                if let Ok(svg) = figures::averaging(a) {
                    b.push(Figure(svg));
                }
            }
            b.push(Table(
                vec![
                    format!("`{}`: r", a.query),
                    "std of the average".into(),
                    "ε of r releases".into(),
                ],
                a.points
                    .iter()
                    .map(|p| vec![p.r.to_string(), num(p.std_of_mean), num(p.epsilon)])
                    .collect(),
            ));
        }
    }
}

/// The negative controls: each query removed, each bound doubled.
fn controls(b: &mut Vec<Block>, r: &Review) {
    use Block::*;
    let c = &r.contract;
    b.push(Heading(2, "Negative controls".into()));
    b.push(Para(format!(
        "{} The plan's total is ε = {}.",
        r.controls_definition,
        num(c.total.epsilon)
    )));
    b.push(Table(
        [
            "query",
            "total without its releases",
            "total with its bound doubled",
            "moves the claim",
        ]
        .map(String::from)
        .to_vec(),
        r.controls
            .iter()
            .map(|k| {
                vec![
                    format!("`{}`", k.query),
                    num(k.without),
                    num(k.doubled),
                    match (k.without_moves, k.doubled_moves) {
                        (true, true) => "yes".into(),
                        (false, true) => "NO: removing it does not lower the total".into(),
                        (true, false) => "NO: doubling its bound does not raise the total".into(),
                        (false, false) => "NO: neither control moves the total".into(),
                    },
                ]
            })
            .collect(),
    ));
}
