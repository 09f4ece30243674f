//! Hover and inlay hints: the numbers of the analysis, where they apply.

use std::fmt::Write as _;

use dpplan_check::{CheckedPlan, QueryReport};
use dpplan_diagnostics::{percent_up, Code, Span};
use dpplan_syntax::ast::{self, ColumnType};
use dpplan_syntax::ItemKind;

use crate::{keyword_doc, num, unknown, Document, Hover, InlayHint, InlayKind, SymbolKind};

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn percent(part: f64, whole: f64) -> String {
    let p = 100.0 * part / whole;
    if p >= 10.0 {
        format!("{p:.0} %")
    } else if p >= 0.1 {
        format!("{p:.1} %")
    } else {
        format!("{p:.2} %")
    }
}

pub(crate) fn hover(doc: &Document, offset: usize) -> Option<Hover> {
    let plan = doc.ast();
    // The light report (no per-query costs) for everything but queries.
    let report = doc.light_analysis().report.as_ref();
    if let Some((sym, span)) = doc.symbol_at(offset) {
        let md = match sym.kind {
            SymbolKind::Query => query_hover(doc, &sym.name, doc.analysis().report.as_ref()),
            SymbolKind::Publish => publish_hover(doc, &sym.name, report),
            SymbolKind::Dataset => dataset_hover(doc, &sym.name),
            SymbolKind::Column => column_hover(doc, sym.container.as_deref(), &sym.name),
        };
        return md.map(|markdown| Hover { span, markdown });
    }
    let word = doc.word_at(offset);
    if let Some(b) = plan.privacy.first().and_then(|p| p.budgets.first()) {
        let span = doc.trim(b.span);
        if span.contains(offset) {
            let mut md = budget_hover(doc);
            if let Some(kw) = word.and_then(|w| keyword_doc(w.text(&doc.text))) {
                let _ = write!(md, "\n\n---\n\n{kw}");
            }
            return Some(Hover { span, markdown: md });
        }
    }
    let w = word?;
    let text = w.text(&doc.text);
    let markdown = keyword_doc(text)?.to_string();
    Some(Hover {
        span: Span::new(w.start, w.end),
        markdown,
    })
}

/// `base` (the ordinary hover, if any) followed by the documentation of
/// each code (at most three, in order) whose diagnostic's primary span holds
/// `offset`; the span widened to cover those diagnostics' spans.
pub(crate) fn with_rule_docs(doc: &Document, offset: usize, base: Option<Hover>) -> Option<Hover> {
    let mut codes: Vec<(Code, Span)> = Vec::new();
    for d in doc.diagnostics() {
        let s = d.primary.span;
        let holds = s.start <= offset && (offset < s.end || (s.start == s.end && offset == s.end));
        if holds && !codes.iter().any(|(c, _)| *c == d.code) {
            codes.push((d.code, s));
        }
    }
    if codes.is_empty() {
        return base;
    }
    let (mut md, mut span) = match base {
        Some(h) => (h.markdown, h.span),
        None => (String::new(), codes[0].1),
    };
    for (code, s) in codes.iter().take(3) {
        if !md.is_empty() {
            md.push_str("\n\n---\n\n");
        }
        let text = dpplan_diagnostics::rule_doc(*code).unwrap_or_default();
        let _ = write!(
            md,
            "**{} {}** — {}\n\n{text}",
            code.as_str(),
            code.name(),
            code.title()
        );
        span = Span::new(span.start.min(s.start), span.end.max(s.end));
    }
    Some(Hover { span, markdown: md })
}

fn query_hover(doc: &Document, name: &str, report: Option<&CheckedPlan>) -> Option<String> {
    let plan = doc.ast();
    let q = plan.queries.iter().find(|q| q.name.value == name);
    let Some(q) = q else {
        if let Some(md) = unknown::broken_item(doc, ItemKind::Query, name) {
            return Some(md);
        }
        // A name used but defined nowhere.
        return Some(format!(
            "`{name}`: no query or publish of this name is defined"
        ));
    };
    let mut md = String::new();
    let Some(report) = report else {
        let _ = write!(md, "**query `{name}`**\n\nThe plan has no valid privacy block: nothing can be derived yet.\n\n");
        md.push_str(&unknown::unknown_sensitivity(doc, q));
        return Some(md);
    };
    let Some(r) = report
        .queries
        .iter()
        .find(|r| r.name == name && r.name_span == q.name.span)
    else {
        let _ = write!(md, "**query `{name}`**\n\n");
        md.push_str(&unknown::unknown_sensitivity(doc, q));
        return Some(md);
    };
    let _ = writeln!(
        md,
        "**query `{}`** — `{}`, {} ({})\n",
        r.name,
        r.aggregation,
        r.schedule,
        plural(r.releases, "release", "releases")
    );
    let unit = &report.unit;
    let _ = writeln!(
        md,
        "**Privacy unit:** {} · adjacency `{}`\n",
        unit.description, report.adjacency
    );
    if r.parts.is_empty() {
        // Every query without an error has at least one part (a public
        // one when its sensitivity is 0): no parts means an error stopped
        // the derivation, so nothing is known about its noise.
        md.push_str(&unknown::unknown_sensitivity(doc, q));
        return Some(md);
    }
    query_parts(&mut md, r);
    if !r.postprocess().is_empty() {
        let steps: Vec<&str> = r.postprocess().iter().map(|p| p.name()).collect();
        let _ = writeln!(
            md,
            "**Post-processing:** `{}` on each released value, after its noise — free: it reads only the released values (the ledger keeps them as `raw_value`)\n",
            steps.join(", ")
        );
    }
    query_cost(&mut md, r, report);
    if r.total.is_none() {
        let errors = unknown::query_errors(doc, q.span, Some(&r.dataset));
        if !errors.is_empty() {
            let _ = write!(md, "\n{}", unknown::list(doc, &errors));
        }
    }
    Some(md)
}

fn query_parts(md: &mut String, r: &QueryReport) {
    let many = r.parts.len() > 1;
    for p in &r.parts {
        if many {
            let _ = writeln!(md, "**{}**\n", p.role);
        }
        let _ = writeln!(
            md,
            "**Sensitivity:** L1 = {}, L2 = {}{}",
            num(p.l1),
            num(p.l2),
            if p.coords > 1 {
                format!(" over {} coordinates", p.coords)
            } else {
                String::new()
            }
        );
        for step in &p.derivation {
            let _ = writeln!(md, "- {step}");
        }
        let m = &p.mechanism;
        let level = match (m.scale, m.sigma) {
            (Some(b), _) => format!("scale b = {}", num(b)),
            (_, Some(s)) => format!("σ = {}", num(s)),
            _ => "not resolved".into(),
        };
        let _ = writeln!(
            md,
            "\n**Mechanism:** `{}`, {} ({})\n",
            m.kind_name(),
            level,
            m.calibration
        );
        if let Some(sel) = &r.selection {
            selection(md, sel);
        }
        // a selection (a top-k's rank, a quantile's level): its error is
        // a score's, not additive noise
        let selection = match (p.statistic, m.kind) {
            (dpplan_check::Statistic::TopK, _) => Some(format!(
                "**Count error per release:** no count is released; the key chosen at this rank has a count within {} of the largest among the cells not chosen before",
                num(p.ci95_half_width)
            )),
            (_, Some(kind)) if kind.is_selection() => Some(format!(
                "**Rank error per release:** the chosen candidate's rank is within {} rows of the best candidate's",
                num(p.ci95_half_width)
            )),
            _ => None,
        };
        if let Some(error) = selection {
            let _ = writeln!(
                md,
                "{error} with probability ≥ 95 % (root-mean-square ≤ {}); no additive noise\n",
                num(p.noise_std)
            );
            continue;
        }
        let _ = writeln!(
            md,
            "**Noise per release:** standard deviation {}, 95 % of the noise within ±{}\n",
            num(p.noise_std),
            num(p.ci95_half_width)
        );
    }
}

/// Keys from the data: τ and the δ it costs.
fn selection(md: &mut String, sel: &dpplan_check::SelectionSpec) {
    let _ = writeln!(
        md,
        "**Threshold:** keys of `{}` seen in the data are released when their noisy count is above τ = {} ({}); a key only one unit has (≤ k = {} keys, ≤ C = {} rows each) appears with probability ≤ {} per release; δ = {} over the schedule, added to the plan's δ\n",
        sel.column,
        num(sel.threshold),
        if sel.auto { "auto" } else { "declared" },
        sel.keys_per_unit,
        sel.rows_per_key,
        num(sel.release_probability),
        num(sel.delta)
    );
}

fn query_cost(md: &mut String, r: &QueryReport, report: &CheckedPlan) {
    let Some(total) = &r.total else {
        let _ = writeln!(
            md,
            "**Cost:** not available (the query or the plan has errors)."
        );
        return;
    };
    // a windowed query's or a cumulative count's releases are one
    // accounted release: the cost alone is that one release's
    let per = match (&r.per_release, r.one_release()) {
        (Some(_), Some(dpplan_check::OneRelease::Windows)) => {
            " (one release over all its windows)".to_string()
        }
        (Some(_), Some(dpplan_check::OneRelease::Tree)) => {
            " (one release: the whole tree of running totals)".to_string()
        }
        (Some(_), Some(dpplan_check::OneRelease::Factorization)) => {
            " (one release: every running total, by the square-root factorization)".to_string()
        }
        (Some(c), None) => format!(" (ε = {} per release)", num(c.epsilon)),
        (None, _) => String::new(),
    };
    let _ = write!(
        md,
        "**Cost alone:** ε = {} at δ = {} over {}{}",
        num(total.epsilon),
        num(total.delta),
        plural(r.releases, "release", "releases"),
        per
    );
    match &report.total {
        Some(t) if t.epsilon > 0.0 => {
            // the share as the report defines it: of the plan's ρ
            let share = report
                .queries
                .iter()
                .position(|q| q.name == r.name)
                .and_then(|i| report.shares().get(i).copied());
            let _ = write!(
                md,
                " — {}the plan's ε = {} ({}; budget ε = {})",
                share.map_or(String::new(), |s| format!(
                    "{} of the plan's privacy loss (its share of ρ) in ",
                    percent(s, 1.0)
                )),
                num(t.epsilon),
                t.accountant_name,
                num(report.budget.epsilon)
            );
        }
        _ => {
            let _ = write!(
                md,
                " — {} of the budget ε = {}",
                percent(total.epsilon, report.budget.epsilon),
                num(report.budget.epsilon)
            );
            if let Some(why) = &report.total_missing {
                let _ = write!(md, " (no plan total: {why})");
            }
        }
    }
    md.push('\n');
}

fn publish_hover(doc: &Document, name: &str, report: Option<&CheckedPlan>) -> Option<String> {
    let p = doc.ast().publishes.iter().find(|p| p.name.value == name)?;
    let mut md = format!(
        "**publish `{}`** = `{}`\n\nRe-publishes an already released value: post-processing, it costs nothing (ε = 0).",
        p.name.value, p.source.value
    );
    if let Some(c) = &p.condition {
        let _ = write!(
            md,
            "\n\nShown only when the condition holds: `{}`.",
            &doc.text[doc.trim(c.span).start..doc.trim(c.span).end]
        );
    }
    if let Some(pr) = report.and_then(|r| r.publishes.iter().find(|x| x.name == name)) {
        let _ = write!(md, "\n\nε = {}", num(pr.epsilon));
    }
    Some(md)
}

fn dataset_hover(doc: &Document, name: &str) -> Option<String> {
    let plan = doc.ast();
    let Some(ds) = plan.datasets.iter().find(|d| d.name.value == name) else {
        if let Some(md) = unknown::broken_item(doc, ItemKind::Dataset, name) {
            return Some(md);
        }
        return Some(format!("`{name}`: no dataset of this name is defined"));
    };
    let mut md = format!("**dataset `{}`**", ds.name.value);
    if let Some(s) = ds.sources.first() {
        let _ = write!(md, " — `{}`", s.value);
    }
    md.push_str("\n\n");
    for c in &ds.columns {
        let _ = writeln!(md, "- `{}`", column_text(doc, c));
    }
    if let Some(c) = ds.contributions.first() {
        let mut parts = Vec::new();
        for (k, v) in [
            ("rows_per_unit", &c.rows_per_unit),
            ("groups_per_unit", &c.groups_per_unit),
            ("rows_per_group", &c.rows_per_group),
            ("windows_per_unit", &c.windows_per_unit),
            ("rows_per_window", &c.rows_per_window),
        ] {
            if let Some(n) = v.first() {
                parts.push(format!("{k} {}", num(n.value)));
            }
        }
        let _ = write!(
            md,
            "\n**Contribution bounds:** {}",
            if parts.is_empty() {
                "none".to_string()
            } else {
                parts.join(", ")
            }
        );
    }
    let users: Vec<String> = plan
        .queries
        .iter()
        .filter(|q| q.aggregates.iter().any(|a| a.target.dataset.value == name))
        .map(|q| format!("`{}`", q.name.value))
        .collect();
    if !users.is_empty() {
        let _ = write!(md, "\n\n**Queried by:** {}", users.join(", "));
    }
    Some(md)
}

fn column_text(doc: &Document, c: &ast::Column) -> String {
    let span = doc.trim(c.span);
    let raw = &doc.text[span.start..span.end];
    // One line, single spaces, without the `column` keyword.
    let flat: Vec<&str> = raw.split_whitespace().collect();
    let s = flat.join(" ");
    s.strip_prefix("column ").unwrap_or(&s).to_string()
}

fn column_hover(doc: &Document, container: Option<&str>, name: &str) -> Option<String> {
    let plan = doc.ast();
    let mut md = String::new();
    let mut found = false;
    for ds in &plan.datasets {
        if container.is_some_and(|c| c != ds.name.value) {
            continue;
        }
        for c in ds.columns.iter().filter(|c| c.name.value == name) {
            found = true;
            let _ = writeln!(
                md,
                "**column `{}.{}`** — `{}`\n",
                ds.name.value,
                c.name.value,
                column_text(doc, c)
            );
            let what = match &c.ty.value {
                ColumnType::Id => "identifies the privacy unit; never aggregated".to_string(),
                ColumnType::Category {
                    domain: Some(ast::Domain::List { values }),
                } => {
                    format!("a public domain of {} values", values.len())
                }
                ColumnType::Category { .. } => "a category without a public domain".to_string(),
                ColumnType::Int { bounds: Some(_) } | ColumnType::Float { bounds: Some(_) } => {
                    "clamped to its public bounds: one row moves a sum by at most max(|lo|, |hi|)"
                        .to_string()
                }
                ColumnType::Int { bounds: None } | ColumnType::Float { bounds: None } => {
                    "no public bounds: it cannot be summed or averaged (DP002)".to_string()
                }
                ColumnType::Time => {
                    "a UTC timestamp: a query's `window` releases only the rows of its own slot"
                        .to_string()
                }
            };
            let _ = writeln!(md, "{what}\n");
        }
    }
    if container.is_none() {
        let _ = writeln!(md, "The privacy unit's id: `unit user by {name}`.");
        found = true;
    }
    if !found {
        let _ = write!(
            md,
            "`{name}`: no column of this name in `{}`",
            container.unwrap_or("?")
        );
    }
    Some(md.trim_end().to_string())
}

fn budget_hover(doc: &Document) -> String {
    let mut md = String::new();
    let Some(report) = doc.light_analysis().report.as_ref() else {
        return "**budget** — the privacy block has errors: nothing is accounted yet.".into();
    };
    let b = &report.budget;
    let _ = writeln!(
        md,
        "**budget** ε = {}, δ = {} · accountant `{}` · {}\n",
        num(b.epsilon),
        num(b.delta),
        report.accountant_requested,
        plural(report.releases, "release", "releases")
    );
    match (&report.total, report.within_budget) {
        (Some(t), fits) => {
            let _ = writeln!(
                md,
                "**Plan total:** ε = {} at δ = {} ({}) — {}\n",
                num(t.epsilon),
                num(t.delta),
                t.accountant_name,
                if fits == Some(false) {
                    format!("**exceeds the budget** by {}", num(t.epsilon - b.epsilon))
                } else {
                    format!("{} of the budget", percent(t.epsilon, b.epsilon))
                }
            );
        }
        (None, _) => {
            let _ = writeln!(
                md,
                "**Plan total:** {}\n",
                report.total_missing.as_deref().unwrap_or("not available")
            );
        }
    }
    // the claim read as attack risk: the best TPR of a membership test at
    // each false-positive rate, rounded up (dpplan_accounting::tradeoff)
    if let Some(risk) = &report.attack_risk {
        for (i, p) in risk.points.iter().enumerate() {
            let (tpr, fpr) = (percent_up(p.tpr), dpplan_diagnostics::percent(p.fpr));
            let _ = if i == 0 {
                write!(md, "**Attack risk:** at {fpr} false positives, a membership test (is one unit in the data?) reaches at most {tpr} true positives")
            } else {
                write!(md, "; at {fpr}, at most {tpr}")
            };
        }
        if let Some(mu) = risk.gdp_mu {
            let _ = write!(md, " · μ-GDP with μ = {}", num(mu));
        }
        let _ = writeln!(md, "\n");
    }
    if report.total.is_some() {
        if let Some(full) = doc.full_report() {
            if !full.accountants.is_empty() {
                let _ = writeln!(md, "**Every accountant:**\n");
                for a in &full.accountants {
                    match (a.epsilon, &a.error) {
                        (Some(e), _) => {
                            let best = report
                                .total
                                .as_ref()
                                .is_some_and(|t| t.accountant == a.accountant);
                            let _ = writeln!(
                                md,
                                "- {}: ε = {}{}{}",
                                a.accountant_name,
                                num(e),
                                a.delta
                                    .map(|d| format!(" at δ = {}", num(d)))
                                    .unwrap_or_default(),
                                if best { " ← used" } else { "" }
                            );
                        }
                        (None, Some(err)) => {
                            let _ = writeln!(md, "- {}: does not apply ({err})", a.accountant_name);
                        }
                        (None, None) => {
                            let _ = writeln!(md, "- {}: no bound", a.accountant_name);
                        }
                    }
                }
            }
        }
    }
    md.trim_end().to_string()
}

pub(crate) fn inlay_hints(doc: &Document, range: Span) -> Vec<InlayHint> {
    let mut out = Vec::new();
    let Some(report) = doc.analysis().report.as_ref() else {
        return out;
    };
    let in_range = |o: usize| range.start <= o && o <= range.end;
    if let Some(b) = doc.ast().privacy.first().and_then(|p| p.budgets.first()) {
        let at = doc.trim(b.span).end;
        if in_range(at) {
            let (label, tooltip) = match &report.total {
                Some(t) => (
                    format!(
                        "plan: ε {} of {}{}",
                        num(t.epsilon),
                        num(report.budget.epsilon),
                        if report.within_budget == Some(false) {
                            " — over budget"
                        } else {
                            ""
                        }
                    ),
                    Some(format!("{} ({})", t.accountant_name, t.detail)),
                ),
                None => ("plan: no total".to_string(), report.total_missing.clone()),
            };
            out.push(InlayHint {
                offset: at,
                label,
                tooltip,
                kind: InlayKind::PlanTotal,
            });
        }
    }
    for r in &report.queries {
        let at = r.name_span.end;
        if !in_range(at) {
            continue;
        }
        let releases = plural(r.releases, "release", "releases");
        let mut label = match &r.total {
            Some(t) => format!("ε {} · {releases}", num(t.epsilon)),
            None => releases,
        };
        if let Some(tree) = r.spec.as_ref().and_then(|s| s.cumulative.as_ref()) {
            if tree.mechanism.is_tree() {
                label.push_str(&format!(" · one tree of {} nodes", tree.nodes));
            } else {
                label.push_str(&format!(" · factorized, {} coordinates", tree.nodes));
            }
        }
        // keys from the data: the threshold and its δ
        let label = match &r.selection {
            Some(s) => format!("{label} · τ {} · δ {}", num(s.threshold), num(s.delta)),
            None => label,
        };
        let tooltip = r.total.as_ref().map(|t| {
            format!(
                "{} alone: ε = {} at δ = {} ({})",
                r.name,
                num(t.epsilon),
                num(t.delta),
                t.accountant
            )
        });
        out.push(InlayHint {
            offset: at,
            label,
            tooltip,
            kind: InlayKind::QueryCost,
        });
    }
    out.sort_by_key(|h| h.offset);
    out
}
