//! The diff's renderers: terminal text, Markdown for a pull-request
//! comment, JSON. Pure functions to `String`.

use dpplan_diagnostics::num;
use serde_json::Value;

use super::{AccuracyChange, Change, ItemDiff, PartDiff, PlanDiff, QueryDiff, Status};

/// The documented JSON (docs/diff.schema.json).
pub fn json(d: &PlanDiff) -> String {
    serde_json::to_string_pretty(d).unwrap_or_default() + "\n"
}

/// A value as a reviewer reads it.
fn val(v: &Value) -> String {
    match v {
        Value::Null => "—".into(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), num),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(val).collect::<Vec<_>>().join(", ")),
        Value::Object(_) => v.to_string(),
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "—".into(), num)
}

fn signed(x: f64) -> String {
    if x > 0.0 {
        format!("+{}", num(x))
    } else if x < 0.0 {
        format!("−{}", num(-x))
    } else {
        "±0".into()
    }
}

fn marker(s: Status) -> &'static str {
    match s {
        Status::Added => "+",
        Status::Removed => "-",
        Status::Changed => "~",
    }
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Added => "added",
        Status::Removed => "removed",
        Status::Changed => "changed",
    }
}

fn change_text(c: &Change) -> String {
    match (&c.old, &c.new) {
        (Value::Null, n) => format!("{}: {}", c.field, val(n)),
        (o, Value::Null) => format!("{}: {} (gone)", c.field, val(o)),
        (o, n) => format!("{}: {} → {}", c.field, val(o), val(n)),
    }
}

fn header(d: &PlanDiff) -> String {
    let name = |s: &super::Side| {
        s.plan
            .as_deref()
            .map_or_else(|| "(unnamed)".to_string(), |n| format!("\"{n}\""))
    };
    format!(
        "plan {} ({}) → plan {} ({})",
        name(&d.old),
        d.old.label,
        name(&d.new),
        d.new.label
    )
}

fn claim_text(s: &super::Side) -> String {
    let budget = match s.within_budget {
        Some(false) => format!("; OVER its budget ε = {}", num(s.budget.epsilon)),
        _ => format!("; budget ε = {}", num(s.budget.epsilon)),
    };
    match &s.claim {
        Some(t) => format!(
            "ε = {}, δ = {} ({}, requested `{}`){budget}",
            num(t.epsilon),
            num(t.delta),
            t.accountant_name,
            s.accountant_requested
        ),
        None => format!("no claim (no release){budget}"),
    }
}

// ---------------------------------------------------------------------------
// Terminal
// ---------------------------------------------------------------------------

/// Terminal text.
pub fn human(d: &PlanDiff) -> String {
    let mut o = String::new();
    o.push_str(&header(d));
    o.push('\n');
    if d.identical {
        o.push_str(&format!("\n  no change: {}\n", claim_text(&d.new)));
        return o;
    }
    if !d.contract.is_empty() {
        o.push_str(if d.verdict.comparable {
            "\n  ! CONTRACT CHANGED\n"
        } else {
            "\n  ! CONTRACT CHANGED: the two ε bound different things and are not directly comparable\n"
        });
        for c in &d.contract {
            o.push_str(&format!(
                "  !   {}: {} → {} — {}\n",
                c.field,
                val(&c.old),
                val(&c.new),
                c.why
            ));
        }
    }
    if !d.datasets.is_empty() {
        o.push_str("\n  datasets\n");
        for ds in &d.datasets {
            item(&mut o, ds, true);
        }
    }
    if !d.queries.is_empty() || !d.unchanged_queries.is_empty() {
        o.push_str("\n  queries\n");
        for q in &d.queries {
            query_human(&mut o, q, d);
        }
        if !d.unchanged_queries.is_empty() {
            o.push_str(&format!(
                "    unchanged: {}\n",
                d.unchanged_queries.join(", ")
            ));
        }
    }
    if !d.accuracy.is_empty() {
        o.push_str(&format!(
            "\n  accuracy: the noise of one release, per value (! worse by more than ×{})\n",
            num(d.verdict.accuracy_limit)
        ));
        for a in &d.accuracy {
            o.push_str(&format!(
                "    {} {} ({}): {}\n",
                if a.worse { "!" } else { " " },
                a.query,
                a.role,
                accuracy_text(a)
            ));
        }
    }
    if !d.publishes.is_empty() {
        o.push_str("\n  publications (re-publication costs nothing)\n");
        for p in &d.publishes {
            item(&mut o, p, false);
        }
    }
    let g = &d.guarantee;
    o.push_str(&format!(
        "\n  guarantee at δ = {} ({}) under {} ({})\n",
        num(g.delta),
        g.delta_rule,
        g.accountant_name
            .as_deref()
            .unwrap_or("no common accountant"),
        g.accountant_rule
    ));
    if let (Some(a), Some(b), Some(c)) = (g.old_epsilon, g.new_epsilon, g.change) {
        o.push_str(&format!(
            "    ε: {} → {}  ({})\n",
            num(a),
            num(b),
            signed(c)
        ));
    }
    o.push_str("\n    accountant                        old ε         new ε\n");
    for p in &g.accountants {
        o.push_str(&format!(
            "    {:<32}  {:<12}  {}\n",
            p.accountant_name,
            p.old.map_or_else(|| "n/a".into(), num),
            p.new.map_or_else(|| "n/a".into(), num)
        ));
    }
    o.push_str(&format!(
        "\n    own claims: old {}\n                new {}\n",
        claim_text(&d.old),
        claim_text(&d.new)
    ));
    for line in super::attack::lines(d) {
        o.push_str(&format!("    {line}\n"));
    }
    o.push_str(&format!("\n  verdict: {}\n", d.verdict.summary));
    o
}

/// `×r`, or why there is no ratio.
fn times(r: Option<f64>) -> String {
    r.map_or_else(|| "from no noise".into(), |r| format!("×{}", num(r)))
}

/// std and 95 % half-width before → after, with their ratios.
fn accuracy_text(a: &AccuracyChange) -> String {
    format!(
        "std {} → {} ({}), 95 % ± {} → {} ({})",
        opt(a.noise_std.old),
        opt(a.noise_std.new),
        times(a.std_ratio),
        opt(a.ci95_half_width.old),
        opt(a.ci95_half_width.new),
        times(a.ci95_ratio)
    )
}

fn item(o: &mut String, it: &ItemDiff, loud_bounds: bool) {
    o.push_str(&format!(
        "    {} {} ({})\n",
        marker(it.status),
        it.name,
        status_word(it.status)
    ));
    for c in &it.changes {
        let bang = if loud_bounds && super::is_contract_bound(&c.field) {
            "  ! contract"
        } else {
            ""
        };
        o.push_str(&format!("        {}{bang}\n", change_text(c)));
    }
}

fn query_human(o: &mut String, q: &QueryDiff, d: &PlanDiff) {
    o.push_str(&format!(
        "    {} {} ({})\n",
        marker(q.status),
        q.name,
        status_word(q.status)
    ));
    for c in &q.changes {
        o.push_str(&format!("        {}\n", change_text(c)));
    }
    for p in &q.parts {
        part_human(o, p);
    }
    o.push_str(&format!(
        "        ε alone: {} → {}\n",
        opt(q.epsilon_alone.old),
        opt(q.epsilon_alone.new)
    ));
    if let Some(l) = &q.leave_one_in {
        match (l.epsilon, l.change) {
            (Some(e), Some(c)) => o.push_str(&format!(
                "        plan ε with only this change: {} → {}  ({})\n",
                opt(d.guarantee.old_epsilon),
                num(e),
                signed(c)
            )),
            _ => o.push_str(&format!(
                "        plan ε with only this change: no bound ({})\n",
                l.error.as_deref().unwrap_or("")
            )),
        }
    }
}

fn part_human(o: &mut String, p: &PartDiff) {
    let label = if p.status == Status::Changed {
        p.role.clone()
    } else {
        format!("{} ({})", p.role, status_word(p.status))
    };
    for c in &p.changes {
        o.push_str(&format!("        {label}: {}\n", change_text(c)));
    }
    if !p.derivation_removed.is_empty() || !p.derivation_added.is_empty() {
        o.push_str(&format!("        {label}: sensitivity derivation\n"));
        for l in &p.derivation_removed {
            o.push_str(&format!("          - {l}\n"));
        }
        for l in &p.derivation_added {
            o.push_str(&format!("          + {l}\n"));
        }
    }
}

// ---------------------------------------------------------------------------
// Markdown
// ---------------------------------------------------------------------------

/// A table cell: pipes escaped, line breaks removed.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Markdown for a pull-request comment (GitHub-flavoured tables).
pub fn markdown(d: &PlanDiff) -> String {
    let mut o = String::new();
    o.push_str(&format!("### dpplan diff: {}\n\n", cell(&header(d))));
    o.push_str(&format!("**{}**\n\n", cell(&d.verdict.summary)));
    if d.identical {
        return o;
    }
    md_contract(&mut o, d);
    md_guarantee(&mut o, d);
    md_queries(&mut o, d);
    md_accuracy(&mut o, d);
    md_rest(&mut o, d);
    o
}

/// The contract's changes, as a warning.
fn md_contract(o: &mut String, d: &PlanDiff) {
    if !d.contract.is_empty() {
        o.push_str(if d.verdict.comparable {
            "> [!WARNING]\n> **The privacy contract changed.**\n"
        } else {
            "> [!WARNING]\n> **The privacy contract changed: the two ε bound different things and are not directly comparable.**\n"
        });
        for c in &d.contract {
            o.push_str(&format!(
                "> - `{}`: {} → {} — {}\n",
                c.field,
                cell(&val(&c.old)),
                cell(&val(&c.new)),
                cell(&c.why)
            ));
        }
        o.push('\n');
    }
}

/// Every accountant's ε before and after, the claims, the attack risk.
fn md_guarantee(o: &mut String, d: &PlanDiff) {
    let g = &d.guarantee;
    o.push_str(&format!(
        "#### Guarantee at δ = {} under {}\n\n",
        num(g.delta),
        g.accountant_name
            .as_deref()
            .unwrap_or("no common accountant")
    ));
    o.push_str(&format!(
        "δ: {}. Accountant: {}.\n\n",
        cell(&g.delta_rule),
        cell(&g.accountant_rule)
    ));
    o.push_str("| accountant | old ε | new ε | change |\n|---|---:|---:|---:|\n");
    for p in &g.accountants {
        let change = p
            .old
            .zip(p.new)
            .map_or_else(|| "—".into(), |(a, b)| signed(b - a));
        let mark = if Some(p.accountant) == g.accountant {
            " **(compared)**"
        } else {
            ""
        };
        o.push_str(&format!(
            "| {}{mark} | {} | {} | {} |\n",
            p.accountant_name,
            p.old.map_or_else(|| "n/a".into(), num),
            p.new.map_or_else(|| "n/a".into(), num),
            change
        ));
    }
    o.push_str(&format!(
        "\nOwn claims — old: {}; new: {}.\n",
        cell(&claim_text(&d.old)),
        cell(&claim_text(&d.new))
    ));
    for line in super::attack::lines(d) {
        o.push_str(&format!("\n{}.\n", cell(&line)));
    }
}

/// Each query's status and cost, then every field that changed.
fn md_queries(o: &mut String, d: &PlanDiff) {
    if !d.queries.is_empty() {
        o.push_str("\n#### Queries\n\n| query | status | ε alone (old → new) | plan ε with only this change |\n|---|---|---:|---:|\n");
        for q in &d.queries {
            let loi = match &q.leave_one_in {
                Some(l) => match (l.epsilon, l.change) {
                    (Some(e), Some(c)) => format!("{} ({})", num(e), signed(c)),
                    _ => format!("no bound: {}", cell(l.error.as_deref().unwrap_or(""))),
                },
                None => "unchanged releases".into(),
            };
            o.push_str(&format!(
                "| `{}` | {} | {} → {} | {} |\n",
                q.name,
                status_word(q.status),
                opt(q.epsilon_alone.old),
                opt(q.epsilon_alone.new),
                loi
            ));
        }
        o.push_str("\n| query | what | old | new |\n|---|---|---|---|\n");
        for q in &d.queries {
            for c in &q.changes {
                o.push_str(&md_row(&q.name, &c.field, c));
            }
            for p in &q.parts {
                for c in &p.changes {
                    o.push_str(&md_row(&q.name, &format!("{}: {}", p.role, c.field), c));
                }
                for l in &p.derivation_removed {
                    o.push_str(&format!(
                        "| `{}` | {}: derivation | {} | |\n",
                        q.name,
                        p.role,
                        cell(l)
                    ));
                }
                for l in &p.derivation_added {
                    o.push_str(&format!(
                        "| `{}` | {}: derivation | | {} |\n",
                        q.name,
                        p.role,
                        cell(l)
                    ));
                }
            }
        }
    }
}

/// The noise of each changed statistic before and after.
fn md_accuracy(o: &mut String, d: &PlanDiff) {
    if !d.accuracy.is_empty() {
        o.push_str(&format!(
            "\n#### Accuracy (noise of one release, per value; **worse** above ×{})\n\n| query | statistic | noise std (old → new) | ratio | 95 % half-width (old → new) | ratio | |\n|---|---|---:|---:|---:|---:|---|\n",
            num(d.verdict.accuracy_limit)
        ));
        for a in &d.accuracy {
            o.push_str(&format!(
                "| `{}` | {} | {} → {} | {} | {} → {} | {} | {} |\n",
                a.query,
                cell(&a.role),
                opt(a.noise_std.old),
                opt(a.noise_std.new),
                times(a.std_ratio),
                opt(a.ci95_half_width.old),
                opt(a.ci95_half_width.new),
                times(a.ci95_ratio),
                if a.worse { "**worse**" } else { "" }
            ));
        }
    }
}

/// The unchanged queries, the datasets and publications.
fn md_rest(o: &mut String, d: &PlanDiff) {
    if !d.unchanged_queries.is_empty() {
        o.push_str(&format!(
            "\nUnchanged: {}.\n",
            d.unchanged_queries
                .iter()
                .map(|q| format!("`{q}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !d.datasets.is_empty() || !d.publishes.is_empty() {
        o.push_str("\n#### Datasets and publications\n\n| item | status | what | old | new |\n|---|---|---|---|---|\n");
        for it in d.datasets.iter().chain(&d.publishes) {
            for c in &it.changes {
                let field = if super::is_contract_bound(&c.field) {
                    format!("**{}** (contract)", c.field)
                } else {
                    cell(&c.field)
                };
                o.push_str(&format!(
                    "| `{}` | {} | {field} | {} | {} |\n",
                    it.name,
                    status_word(it.status),
                    cell(&val(&c.old)),
                    cell(&val(&c.new))
                ));
            }
        }
    }
}

fn md_row(query: &str, what: &str, c: &Change) -> String {
    format!(
        "| `{query}` | {} | {} | {} |\n",
        cell(what),
        cell(&val(&c.old)),
        cell(&val(&c.new))
    )
}
