//! The report as a sequence of blocks, written once and rendered by the
//! Markdown and HTML renderers (text as typed spans, [`Text`]: code, strong,
//! emphasis; figures are dropped by Markdown, whose tables carry their
//! numbers).

use dpplan_diagnostics::num;

pub(crate) use super::text::Text;
use super::*;

pub(crate) enum Block {
    Heading(u8, Text),
    Para(Text),
    List(Vec<Text>),
    Table(Vec<Text>, Vec<Vec<Text>>),
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
        Text::plain("Privacy review: ").c(r.plan.as_deref().unwrap_or("(unnamed plan)")),
    ));
    b.push(Para(
        Text::default()
            .b("Claim:")
            .t(format!(
                " the whole schedule ({} fresh releases) is (ε = {}, δ = {})-differentially private for one ",
                c.releases,
                num(c.total.epsilon),
                num(c.total.delta),
            ))
            .c(&c.unit)
            .t(" under ")
            .c(&c.adjacency)
            .t(" adjacency, by ")
            .m(&c.accountant_name)
            .t(format!(
                "; the budget is (ε = {}, δ = {}): {}.",
                num(c.budget.epsilon),
                num(c.budget.delta),
                if c.within_budget { "within budget" } else { "OVER BUDGET" }
            )),
    ));
    if !r.controls_ok {
        b.push(Para(Text::default().b("The negative controls failed:").t(
            " at least one query's removal or doubled bound does not move the claim (see “Negative controls”). Do not sign off this plan.",
        )));
    }

    contract(&mut b, r);
    attack_risk(&mut b, r, figures);
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
    let mut unit = vec![Text::plain("Unit: ")
        .c(&c.unit)
        .t(" — ")
        .m(&c.unit_description)
        .t(".")];
    unit.push(Text::plain("Adjacency: ").c(&c.adjacency).t("."));
    unit.extend(c.protected.iter().map(|s| Text::marked(s)));
    b.push(List(unit));
    b.push(Heading(3, "What is not protected".into()));
    b.push(List(marked(&c.not_protected)));
    b.push(Heading(3, "Contribution bounds".into()));
    b.push(Table(
        vec!["dataset".into(), "bounds".into()],
        c.datasets
            .iter()
            .map(|d| vec![Text::code(&d.name), Text::marked(&d.summary)])
            .collect(),
    ));
    b.push(Heading(3, "Budget and accountants".into()));
    b.push(Para(
        Text::plain(format!(
            "Budget ε = {}, δ = {}. The total ε = {} at δ = {} comes from ",
            num(c.budget.epsilon),
            num(c.budget.delta),
            num(c.total.epsilon),
            num(c.total.delta),
        ))
        .m(&c.accountant_name)
        .t(" (")
        .c(&c.accountant)
        .t(": ")
        .m(&c.accountant_detail)
        .t("). Why this accountant: ")
        .m(&c.accountant_why)
        .t("."),
    ));
    b.push(Table(
        vec!["accountant".into(), "ε".into(), "δ".into(), "how".into()],
        c.accountants
            .iter()
            .map(|a| {
                vec![
                    Text::marked(&a.name),
                    opt(a.epsilon).into(),
                    opt(a.delta).into(),
                    match (&a.detail, &a.error) {
                        (Some(d), _) => Text::marked(d),
                        (None, Some(e)) => Text::marked(e),
                        (None, None) => Text::default(),
                    },
                ]
            })
            .collect(),
    ));
    b.push(Heading(3, "What ε and δ mean".into()));
    b.push(List(marked(&c.delta_meaning)));
    if !c.checker_notes.is_empty() {
        b.push(Heading(3, "What the checker notes".into()));
        b.push(List(marked(&c.checker_notes)));
    }
}

/// Strings of the review's data, each read as [`Text::marked`].
fn marked(items: &[String]) -> Vec<Text> {
    items.iter().map(|s| Text::marked(s)).collect()
}

/// One section per query: what it releases, its sensitivity, its noise and its cost.
fn queries(b: &mut Vec<Block>, r: &Review, figures: bool) {
    use Block::*;
    b.push(Heading(2, "Queries".into()));
    b.push(Para(Text::plain("Calendar: ").m(&r.calendar.note).t(".")));
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
        .map(Text::from)
        .to_vec(),
        r.queries
            .iter()
            .map(|q| {
                vec![
                    Text::code(&q.name),
                    Text::code(&q.aggregation),
                    Text::marked(&q.schedule.text),
                    q.schedule.releases.to_string().into(),
                    Text::marked(&q.schedule.first),
                    Text::marked(&q.schedule.last),
                    opt(q.epsilon_alone).into(),
                    percent(q.share).into(),
                ]
            })
            .collect(),
    ));
    b.push(Para(
        Text::plain("“ε alone” is the query's whole schedule accounted by itself at the budget's δ (the fast accountants' best); the ε of queries do not add up to the total. ")
            .m(&r.share_definition),
    ));
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
    b.push(Heading(3, Text::code(&q.name)));
    let mut items = vec![
        Text::code(&q.aggregation).t(" on ").c(&q.dataset).t("."),
        Text::plain("Schedule: ")
            .m(&q.schedule.text)
            .t(format!(
                " — {} fresh release(s), the first on ",
                q.schedule.releases
            ))
            .m(&q.schedule.first)
            .t(", the last on ")
            .m(&q.schedule.last)
            .t("."),
    ];
    if !q.postprocess.is_empty() {
        let steps: Vec<&str> = q.postprocess.iter().map(|p| p.name()).collect();
        items.push(
            Text::plain("Post-processing: ")
                .c(steps.join(", "))
                .t(" on each released value, after its noise. Free: it reads only the released values, never the data; the ledger keeps each value before it (")
                .c("raw_value")
                .t(")."),
        );
        if let Some(t) = consistency_note(q) {
            items.push(t);
        }
    }
    // a windowed query's (a cumulative count's) releases are one
    // accounted release: no window (no total) has an ε of its own
    let per_release = match &q.one_release {
        Some(why) => {
            items.push(Text::plain("One accounted release: ").m(why).t("."));
            format!("{} for that one release", opt(q.epsilon_per_release))
        }
        None => format!("{} per release", opt(q.epsilon_per_release)),
    };
    items.push(
        Text::plain(format!(
            "ε alone: {per_release}, {} for the whole schedule",
            opt(q.epsilon_alone)
        ))
        .m(&q
            .alone_accountant
            .as_ref()
            .map(|a| format!(" ({a})"))
            .unwrap_or_default())
        .t(format!(
            "; share of the plan's ρ: {} (ρ = {}).",
            percent(q.share),
            num(q.rho)
        )),
    );
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
        .map(Text::from)
        .to_vec(),
        q.parts
            .iter()
            .map(|p| {
                vec![
                    Text::marked(&p.role),
                    Text::marked(&match (p.scale, p.sigma) {
                        (_, Some(s)) => format!("{} σ = {}", p.noise, num(s)),
                        (Some(s), None) => format!("{} b = {}", p.noise, num(s)),
                        _ => p.noise.clone(),
                    }),
                    Text::marked(&p.calibration),
                    num(p.l1).into(),
                    num(p.l2).into(),
                    // a quantile's error is in ranks (rows), a top-k's in
                    // counts, not in the value's units: said so in the cell
                    match selection_unit(p) {
                        Some(unit) => format!("{} {unit} (rms)", num(p.noise_std)),
                        None => num(p.noise_std),
                    }
                    .into(),
                    match selection_unit(p) {
                        Some(unit) => format!("±{} {unit}", num(p.ci95_half_width)),
                        None => format!("±{}", num(p.ci95_half_width)),
                    }
                    .into(),
                ]
            })
            .collect(),
    ));
    b.push(List(part_notes(q)));
    if let Some(m) = &q.mean {
        b.push(Para(
            Text::plain("The mean's own accuracy: ")
                .m(&m.assumption)
                .t("."),
        ));
        b.push(Table(
            ["true count n", "std of the mean", "95 % half-width"]
                .map(Text::from)
                .to_vec(),
            m.points
                .iter()
                .map(|p| {
                    vec![
                        num(p.count).into(),
                        num(p.std).into(),
                        format!("±{}", num(p.ci95_half_width)).into(),
                    ]
                })
                .collect(),
        ));
    }
}

/// `postprocess consistent` on a histogram with its total: the estimator
/// and the noise before and after it (closed form, from the mechanism).
fn consistency_note(q: &QueryReview) -> Option<Text> {
    if !q.postprocess.contains(&dpplan_vocab::PostStep::Consistent) {
        return None;
    }
    let [cells, total] = &q.parts[..] else {
        return None;
    };
    let m = cells.cells.len();
    let (h, t) = dpplan_mechanisms::consistency::after(cells.noise_std, total.noise_std, m);
    let round = if q.postprocess.contains(&dpplan_vocab::PostStep::Round) {
        " Then a controlled rounding makes them whole and keeps the sum: each cell goes to its floor or its ceiling (the units the floors leave to the largest fractional parts), the total to the nearest integer of their sum; each cell moves by less than 1, and the intervals stay where they were, about the estimate before the rounding."
    } else {
        ""
    };
    let figures = format!(
        "the noise std of each cell goes from {} to {}, the total's from {} to {} (closed form, computed from the mechanism, not from the data)",
        num(cells.noise_std),
        num(h),
        num(total.noise_std),
        num(t)
    );
    if q.postprocess.contains(&dpplan_vocab::PostStep::Nonnegative) {
        return Some(Text::plain(format!(
            "Consistent and non-negative: the {m} cells and the total are made to add up by weighted least squares on the released values and their noise variances, with every cell kept at or above 0 (each cell is max(0, h − v_cell·s), one s for all, solved exactly; the published total is the sum of the published cells). Its error, weighted as the estimate weighs it (Σ e²/v_cell + (Σ e)²/v_total), is never more than the unconstrained estimate's, whatever the noise drawn: it is a projection onto a convex set that holds the true cells. The figures published are the unconstrained estimate's: {figures}; the intervals are marked approximate: a cell clipped to 0 has no closed-form error of its own.{round}"
        )));
    }
    Some(Text::plain(format!(
        "Consistent: the {m} cells and the total are made to add up by weighted least squares on the released values and their noise variances (Hay et al. 2010; each cell moves by a·(total − Σ cells), a = v_cell/(m·v_cell + v_total), and the published total is the sum of the published cells). Unbiased; {figures}; the published intervals are ±1.96 std, approximate unless the noise is Gaussian.{round}"
    )))
}

/// What a selection's error is counted in: a quantile's in ranks, a
/// top-k's in counts; `None` for additive noise.
fn selection_unit(p: &super::PartReview) -> Option<&'static str> {
    let selection = dpplan_vocab::NoiseKind::from_name(&p.noise).is_some_and(|k| k.is_selection());
    match (selection, p.statistic.as_str()) {
        (true, "top_k") => Some("counts"),
        (true, _) => Some("ranks"),
        _ => None,
    }
}

/// Why each part is what it is: its derivation in words, the threshold of
/// keys from the data, a quantile's rank error, a top-k's count error,
/// the cells it releases.
fn part_notes(q: &QueryReview) -> Vec<Text> {
    let mut why = Vec::new();
    for p in &q.parts {
        for d in &p.derivation {
            why.push(Text::marked(&p.role).t(": ").m(d));
        }
        if let Some(sel) = &q.selection {
            why.push(
                Text::marked(&p.role)
                    .t(": keys from the data — a key of ")
                    .c(&sel.column)
                    .t(format!(
                        " is released only when its noisy count is above τ = {} ({}); a key only one unit has appears with probability ≤ {} per release; δ = {} over the schedule, part of the plan's δ.",
                        num(sel.threshold),
                        if sel.auto { "threshold auto" } else { "declared" },
                        num(sel.release_probability),
                        num(sel.delta)
                    )),
            );
        }
        if selection_unit(p) == Some("counts") {
            why.push(Text::marked(&format!(
                "{}: no count is released — the key chosen at this rank is one of the cells not chosen at an earlier rank; its count is within {} of the largest count among those cells with probability ≥ 95 % (the noise std and 95 % columns are this count error: root-mean-square ≤ {}, 95 % ≤ {}). Close counts may come out in either order.",
                p.role,
                num(p.ci95_half_width),
                num(p.noise_std),
                num(p.ci95_half_width)
            )));
        } else if selection_unit(p) == Some("ranks") {
            why.push(Text::marked(&format!(
                "{}: no additive noise — the released value is one of the candidates; its rank is within {} rows of the best candidate's with probability ≥ 95 % (the noise std and 95 % columns are this rank error, in rows of the data, not in the value's units: root-mean-square ≤ {}, 95 % ≤ {}). How far that is in the value's units depends on how many rows lie near the quantile, which only the data knows; the released value is never further than the candidate grid allows.",
                p.role,
                num(p.ci95_half_width),
                num(p.noise_std),
                num(p.ci95_half_width)
            )));
        }
        if !p.cells.is_empty() {
            let mut t = Text::marked(&p.role).t(": every cell (");
            for (i, c) in p.cells.iter().enumerate() {
                if i > 0 {
                    t = t.t(", ");
                }
                t = t.c(c);
            }
            why.push(t.t(format!(
                ") is released with noise std {} and 95 % half-width ±{}.",
                num(p.noise_std),
                num(p.ci95_half_width)
            )));
        }
    }
    why
}

/// Why a fraction of the budget is never reached: the plan's whole total
/// stays below it, printed with the digits that show it is below (a total
/// a hair under the budget would otherwise print as the budget itself).
fn never_reached(target: f64, r: &Review) -> String {
    let total = r.contract.total.epsilon;
    let shown = if num(total) == num(target) && total < target {
        format!("{total}")
    } else {
        num(total)
    };
    format!(
        "never: the whole plan spends ε = {shown}, {} of the budget",
        share_of_budget(total, r.cumulative.budget_epsilon)
    )
}

/// `total` as a share of `budget`, with the digits that keep a total
/// below the budget below 100 %.
fn share_of_budget(total: f64, budget: f64) -> String {
    if budget.is_nan() || budget <= 0.0 {
        return "—".into();
    }
    let share = 100.0 * total / budget;
    let mut decimals = 1;
    // never round a share below 100 % up to 100 %
    let rounds_up_to_all = |d: usize| {
        share < 100.0
            && format!("{share:.d$}")
                .parse::<f64>()
                .is_ok_and(|v| v >= 100.0)
    };
    while decimals < 12 && rounds_up_to_all(decimals) {
        decimals += 1;
    }
    format!("{share:.decimals$} %")
}

/// What ε means for an attacker: the best membership test's true-positive
/// rate at each false-positive rate, and the trade-off curve.
fn attack_risk(b: &mut Vec<Block>, r: &Review, figures: bool) {
    use Block::*;
    let Some(t) = &r.tradeoff else {
        return;
    };
    b.push(Heading(2, "Attack risk".into()));
    let at = |fpr: f64| {
        t.points
            .iter()
            .find(|p| p.fpr == fpr)
            .map_or("—".to_string(), |p| dpplan_diagnostics::percent_up(p.tpr))
    };
    let mu = t
        .gdp_mu
        .map(|m| format!(" The plan is μ-GDP with μ = {}.", num(m)))
        .unwrap_or_default();
    b.push(Para(Text::plain(format!(
        "An attacker who wants to tell whether one unit's data is in the input, and may wrongly say so for 1 % of the units that are not, is right about at most {} of the units that are (at a 0.1 % false-positive rate: at most {}). These are upper bounds over every possible test, read from the {} curve of the whole schedule's composition (Dong, Roth and Su's trade-off function; docs/accounting.md, “Attack risk”).{mu}",
        at(0.01),
        at(0.001),
        super::figures::curve_name(&t.curve)
    ))));
    if figures {
        if let Ok(svg) = figures::tradeoff(t) {
            b.push(Figure(svg));
        }
    }
    b.push(Table(
        ["false-positive rate", "true-positive rate at most"]
            .map(Text::from)
            .to_vec(),
        t.points
            .iter()
            .filter(|p| [0.001, 0.01, 0.05, 0.1, 0.25, 0.5].contains(&p.fpr))
            .map(|p| {
                vec![
                    format!("{} %", num(100.0 * p.fpr)).into(),
                    dpplan_diagnostics::percent_up(p.tpr).into(),
                ]
            })
            .collect(),
    ));
}

/// The cumulative ε over the release calendar.
fn calendar(b: &mut Vec<Block>, r: &Review, figures: bool) {
    use Block::*;
    b.push(Heading(2, "Cumulative ε over the calendar".into()));
    b.push(Para(Text::marked(&r.cumulative.note)));
    if figures {
        if let Ok(svg) = figures::cumulative(r) {
            b.push(Figure(svg));
        }
    }
    b.push(Table(
        ["fraction of the budget", "reached on", "ε then"]
            .map(Text::from)
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
                    )
                    .into(),
                    match f.at.as_deref() {
                        Some(at) => Text::marked(at),
                        None => never_reached(f.fraction * r.cumulative.budget_epsilon, r).into(),
                    },
                    opt(f.epsilon).into(),
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
        let mut header = vec![Text::plain("date")];
        header.extend(r.cumulative.curves.iter().map(|c| Text::marked(&c.name)));
        let rows =
            picks
                .iter()
                .map(|&i| {
                    let mut row = vec![Text::plain(timeline::label(
                        r.calendar.first_run_unix,
                        first.points[i].t,
                    ))];
                    row.extend(r.cumulative.curves.iter().map(|c| {
                        Text::plain(c.points.get(i).map_or("—".into(), |p| num(p.epsilon)))
                    }));
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
                    Text::code(&a.query).t(": r"),
                    "std of the average".into(),
                    "ε of r releases".into(),
                ],
                a.points
                    .iter()
                    .map(|p| {
                        vec![
                            p.r.to_string().into(),
                            num(p.std_of_mean).into(),
                            num(p.epsilon).into(),
                        ]
                    })
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
    b.push(Para(Text::marked(&r.controls_definition).t(format!(
        " The plan's total is ε = {}.",
        num(c.total.epsilon)
    ))));
    b.push(Table(
        [
            "query",
            "total without its releases",
            "total with its bound doubled",
            "moves the claim",
        ]
        .map(Text::from)
        .to_vec(),
        r.controls
            .iter()
            .map(|k| {
                vec![
                    Text::code(&k.query),
                    num(k.without).into(),
                    num(k.doubled).into(),
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
