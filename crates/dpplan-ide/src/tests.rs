use super::*;

fn example(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/{name}/{name}.dpplan",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Every `examples/**/*.dpplan`, sorted.
pub(crate) fn every_example() -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "dpplan") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples"),
        &mut out,
    );
    out.sort();
    out
}

fn at(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in text"))
}

fn apply(text: &str, edits: &[TextEdit]) -> String {
    actions::apply(text, edits)
}

#[test]
fn hover_on_a_query_shows_its_derivation_and_cost() {
    let text = example("web-analytics");
    let doc = Document::new(text.clone());
    let h = doc.hover(at(&text, "daily_visits {") + 3).expect("hover");
    let md = &h.markdown;
    assert!(md.contains("**query `daily_visits`**"), "{md}");
    assert!(
        md.contains("every 1 day for 365 days (365 releases)"),
        "{md}"
    );
    assert!(md.contains("Sensitivity:** L1 = 5"), "{md}");
    assert!(md.contains("scale b = 250"), "{md}");
    assert!(md.contains("standard deviation 353.554"), "{md}");
    // the share is the report's: of the plan's ρ, not a ratio of ε
    let plan = doc.analysis().report.as_ref().expect("report");
    let i = plan
        .queries
        .iter()
        .position(|q| q.name == "daily_visits")
        .unwrap();
    let share = plan.shares()[i];
    assert!(share > 0.0 && share < 1.0);
    let shown = format!(
        "{:.0} % of the plan's privacy loss (its share of ρ)",
        100.0 * share
    );
    assert!(md.contains(&shown), "{shown} in {md}");
    // negative control: the ε ratio, which the hover once showed, differs
    let eps_ratio =
        plan.queries[i].total.as_ref().unwrap().epsilon / plan.total.as_ref().unwrap().epsilon;
    assert_ne!(
        format!("{:.0}", 100.0 * eps_ratio),
        format!("{:.0}", 100.0 * share)
    );
    assert!(md.contains("adjacency `add_remove`"), "{md}");
    // the span is the name
    assert_eq!(&text[h.span.start..h.span.end], "daily_visits");
    // a reference hovers the same
    let r = doc.hover(at(&text, "= daily_visits") + 4).unwrap();
    assert!(r.markdown.contains("**query `daily_visits`**"));
}

#[test]
fn hover_on_the_budget_lists_every_accountant() {
    let text = example("web-analytics");
    let doc = Document::new(text.clone());
    let h = doc.hover(at(&text, "budget epsilon") + 2).unwrap();
    assert!(
        h.markdown.contains("**Every accountant:**"),
        "{}",
        h.markdown
    );
    assert!(h.markdown.contains("← used"), "{}", h.markdown);
    assert!(h.markdown.contains("Plan total:"), "{}", h.markdown);
    // and the keyword documentation of `budget`
    assert!(h.markdown.contains("the most the whole plan may spend"));
}

#[test]
fn hover_on_the_budget_states_the_attack_risk_of_the_json() {
    let text = example("web-analytics");
    let doc = Document::new(text.clone());
    let h = doc.hover(at(&text, "budget epsilon") + 2).unwrap();
    let risk = doc
        .light_analysis()
        .report
        .as_ref()
        .and_then(|r| r.attack_risk.clone())
        .expect("a claimed plan has an attack risk");
    for p in &risk.points {
        let shown = dpplan_diagnostics::percent_up(p.tpr);
        assert!(h.markdown.contains(&shown), "{shown}: {}", h.markdown);
    }
    assert!(
        h.markdown.contains("at 1 % false positives"),
        "{}",
        h.markdown
    );
    // negative control: twice the noise, a smaller TPR
    let quieter = text
        .replace("noise laplace scale 250", "noise laplace scale 500")
        .replace("noise gaussian sigma 60", "noise gaussian sigma 120");
    let q = Document::new(quieter);
    let r2 = q
        .light_analysis()
        .report
        .as_ref()
        .and_then(|r| r.attack_risk.clone())
        .unwrap();
    assert!(r2.points[0].tpr < risk.points[0].tpr);
}

#[test]
fn hover_on_keywords_datasets_and_columns() {
    let text = example("web-analytics");
    let doc = Document::new(text.clone());
    let h = doc.hover(at(&text, "adjacency add_remove") + 1).unwrap();
    assert!(h.markdown.starts_with("`adjacency"), "{}", h.markdown);
    let h = doc.hover(at(&text, "visits.seconds") + 2).unwrap();
    assert!(
        h.markdown.contains("**dataset `visits`**"),
        "{}",
        h.markdown
    );
    let h = doc.hover(at(&text, "visits.seconds") + 9).unwrap();
    assert!(
        h.markdown
            .contains("**column `visits.seconds`** — `seconds : float in [0, 3600]`"),
        "{}",
        h.markdown
    );
    assert!(doc.hover(at(&text, "\"data/visits.csv\"") + 3).is_none());
}

#[test]
fn inlay_hints_show_costs_and_the_total() {
    let text = example("web-analytics");
    let doc = Document::new(text.clone());
    let hints = doc.inlay_hints(Span::new(0, text.len()));
    let labels: Vec<&str> = hints.iter().map(|h| h.label.as_str()).collect();
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("plan: ε ") && l.contains(" of 4")),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .any(|l| l.starts_with("ε ") && l.ends_with("· 365 releases")),
        "{labels:?}"
    );
    assert!(
        labels.iter().any(|l| l.ends_with("· 1 release")),
        "{labels:?}"
    );
    let budget = hints
        .iter()
        .find(|h| h.kind == InlayKind::PlanTotal)
        .unwrap();
    assert_eq!(&text[budget.offset - 10..budget.offset], "delta 1e-8");
}

/// Completion after `noise ` offers only the kinds that type-check for the
/// query's statistic: each offered kind is written into the plan and
/// checked (no DP017/DP007 error), and each kind left out fails to check.
#[test]
fn noise_completion_offers_only_what_type_checks() {
    let plan = |budget: &str, stat: &str, noise: &str| {
        format!("plan \"p\" {{\n  privacy {{\n    unit row\n    adjacency add_remove\n    budget {budget}\n  }}\n  dataset d {{\n    column f : float in [0, 10]\n    column i : int in [0, 10]\n  }}\n  query q {{\n    {stat}\n    noise {noise}\n    schedule once\n  }}\n}}\n")
    };
    let kinds = |budget: &str, stat: &str| -> Vec<String> {
        let text = plan(budget, stat, "CURSOR");
        let off = at(&text, "CURSOR");
        let doc = Document::new(text.replace("CURSOR", ""));
        doc.completions(off).into_iter().map(|c| c.label).collect()
    };
    let all = [
        "laplace",
        "gaussian",
        "discrete_laplace",
        "discrete_gaussian",
        "exponential",
        "permute_and_flip",
    ];
    let cases = [
        (
            "epsilon 1 delta 1e-6",
            "sum(d.f)",
            vec!["laplace", "gaussian"],
        ),
        (
            "epsilon 1 delta 1e-6",
            "mean(d.f)",
            vec!["laplace", "gaussian"],
        ),
        (
            "epsilon 1 delta 1e-6",
            "sum(d.i)",
            vec![
                "laplace",
                "gaussian",
                "discrete_laplace",
                "discrete_gaussian",
            ],
        ),
        ("epsilon 1", "count(d)", vec!["laplace", "discrete_laplace"]),
        (
            "epsilon 1 delta 1e-6",
            "quantile(d.f, 0.5)\n    candidates every 1",
            vec!["exponential", "permute_and_flip"],
        ),
    ];
    for (budget, stat, want) in cases {
        assert_eq!(kinds(budget, stat), want, "{stat} under {budget}");
        for k in all {
            let param = if k.contains("gaussian") {
                "sigma 100"
            } else {
                "scale 100"
            };
            let param = if k == "exponential" {
                "epsilon 0.5"
            } else {
                param
            };
            let text = plan(budget, stat, &format!("{k} {param}"));
            let doc = Document::new(text);
            assert_eq!(
                doc.light_analysis().has_errors(),
                !want.contains(&k),
                "{stat} under {budget} with {k}: {:?}",
                doc.diagnostics()
            );
        }
    }
}

#[test]
fn completion_in_context() {
    let base = "plan \"p\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 1 delta 1e-6\n  }\n  dataset visits {\n    column uid : id\n    column page : category { \"a\" }\n    column secs : float in [0, 10]\n    contribution { rows_per_unit 2 groups_per_unit 1 }\n  }\n  query q {\n    CURSOR\n  }\n}\n";
    let labels = |line: &str| -> Vec<String> {
        let text = base.replace("CURSOR", line);
        let doc = Document::new(text.clone());
        let off = at(base, "CURSOR") + line.len();
        doc.completions(off).into_iter().map(|c| c.label).collect()
    };
    let l = labels("");
    assert!(
        l.contains(&"count".to_string()) && l.contains(&"noise".to_string()),
        "{l:?}"
    );
    assert_eq!(labels("sum("), vec!["visits"]);
    assert_eq!(labels("sum(visits."), vec!["page", "secs"]);
    assert_eq!(labels("sum(visits.se"), vec!["page", "secs"]);
    assert_eq!(labels("histogram(visits by "), vec!["page", "bins"]);
    assert_eq!(
        labels("noise "),
        vec![
            "laplace",
            "gaussian",
            "discrete_laplace",
            "discrete_gaussian",
            "exponential",
            "permute_and_flip"
        ]
    );
    assert_eq!(labels("noise gaussian "), vec!["sigma", "epsilon", "auto"]);
    assert_eq!(
        labels("noise permute_and_flip "),
        vec!["scale", "epsilon", "auto"]
    );
    assert_eq!(labels("schedule "), vec!["once", "every"]);
    assert!(l.contains(&"accuracy".to_string()), "{l:?}");
    assert_eq!(labels("accuracy "), vec!["ci95", "std"]);
    assert!(labels("schedule every 1 ").contains(&"day".to_string()));
    // the replaced range is the word typed so far
    let text = base.replace("CURSOR", "noi");
    let doc = Document::new(text.clone());
    let items = doc.completions(at(&text, "noi") + 3);
    let noise = items.iter().find(|i| i.label == "noise").unwrap();
    assert_eq!(&text[noise.replace.start..noise.replace.end], "noi");
    // publish names
    let text = base.replace(
        "CURSOR",
        "count(visits)\n    noise laplace scale 1\n    schedule once",
    ) + "";
    let text = text.replace("  }\n}\n", "  }\n  publish p = \n}\n");
    let doc = Document::new(text.clone());
    let l: Vec<String> = doc
        .completions(at(&text, "publish p = ") + 12)
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert_eq!(l, vec!["q"]);
}

/// Language v2: `distinct`, `where` and its columns, several keys, `bins`
/// and its numeric columns, `outside` and its rules; hover on the new
/// keywords states what they do and the default for values outside bins.
#[test]
fn completion_and_hover_of_filters_bins_keys_and_distinct() {
    let base = "plan \"p\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 1 delta 1e-6\n  }\n  dataset visits {\n    column uid : id\n    column page : category { \"a\" }\n    column hour : category { \"0\", \"1\" }\n    column secs : float in [0, 10]\n    contribution { rows_per_unit 2 groups_per_unit 1 }\n  }\n  query q {\n    CURSOR\n  }\n}\n";
    let labels = |line: &str| -> Vec<String> {
        let text = base.replace("CURSOR", line);
        let doc = Document::new(text.clone());
        let off = at(base, "CURSOR") + line.len();
        doc.completions(off).into_iter().map(|c| c.label).collect()
    };
    assert_eq!(labels("count("), vec!["visits", "distinct"]);
    // `postprocess`: the steps, each offered once
    assert_eq!(labels("postprocess "), vec!["nonnegative", "round"]);
    assert_eq!(labels("postprocess round, "), vec!["nonnegative"]);
    // `mechanism`: a cumulative count's two
    assert_eq!(labels("mechanism "), vec!["tree", "factorization"]);
    // `consistent` only for a histogram with its total
    assert_eq!(
        labels("histogram(visits by page) with total\n    postprocess "),
        vec!["nonnegative", "round", "consistent"]
    );
    let text = base.replace(
        "CURSOR",
        "count(distinct visits.uid by page)\n    noise laplace scale 2\n    schedule once\n    postprocess nonnegative, round",
    );
    let doc = Document::new(text.clone());
    let h = doc.hover(at(&text, "query q") + 6).expect("hover");
    assert!(
        h.markdown
            .contains("**Post-processing:** `nonnegative, round`"),
        "{}",
        h.markdown
    );
    for word in [
        "postprocess",
        "nonnegative",
        "round",
        "consistent",
        "with",
        "total",
    ] {
        assert!(crate::docs::keyword_doc(word).is_some(), "{word}");
    }
    assert_eq!(labels("sum("), vec!["visits"]);
    assert_eq!(labels("count(distinct "), vec!["visits"]);
    assert_eq!(labels("count(visits "), vec!["where", "by"]);
    let mut cols = labels("count(visits where ");
    cols.sort();
    assert_eq!(cols, vec!["hour", "not", "page", "secs"]);
    let mut cols = labels("count(visits where secs > 3 and ");
    cols.sort();
    assert_eq!(cols, vec!["hour", "not", "page", "secs"]);
    assert_eq!(
        labels("count(visits where secs > 3 "),
        vec!["and", "or", "by"]
    );
    let mut keys = labels("histogram(visits by page, ");
    keys.sort();
    assert_eq!(keys, vec!["bins", "hour", "page"]);
    assert_eq!(labels("histogram(visits by bins("), vec!["secs"]);
    assert_eq!(
        labels("histogram(visits by bins(secs, [0, 1] "),
        vec!["outside"]
    );
    assert_eq!(
        labels("histogram(visits by bins(secs, [0, 1] outside "),
        vec!["drop", "clamp"]
    );
    // hover on the keywords
    let text = base.replace(
        "CURSOR",
        "histogram(visits where page == \"a\" by bins(secs, [0, 1, 5]), hour)\n    noise laplace scale 1\n    schedule once",
    );
    let doc = Document::new(text.clone());
    let h = doc.hover(at(&text, "bins(") + 1).expect("hover on bins");
    assert!(
        h.markdown.contains("`outside drop`, the default"),
        "{}",
        h.markdown
    );
    let h = doc.hover(at(&text, "where") + 1).expect("hover on where");
    assert!(h.markdown.contains("before bounding"), "{}", h.markdown);
    // the query's hover shows the cells' derivation
    let h = doc
        .hover(at(&text, "query q") + 6)
        .expect("hover on the query");
    assert!(h.markdown.contains("where page == \"a\""), "{}", h.markdown);
}

#[test]
fn definition_references_and_rename() {
    let text = example("web-analytics");
    let doc = Document::new(text.clone());
    let def = doc.definition(at(&text, "= daily_visits") + 3).unwrap();
    assert_eq!(def.start, at(&text, "daily_visits {"));
    let refs = doc.references(at(&text, "dataset visits") + 9, true);
    assert_eq!(refs.len(), 4, "{refs:?}"); // the definition and three uses
    let edits = doc.rename(at(&text, "dataset visits") + 9, "hits").unwrap();
    let renamed = apply(&text, &edits);
    assert!(renamed.contains("dataset hits {") && renamed.contains("mean(hits.seconds)"));
    assert!(!Document::new(renamed).analysis().has_errors());
    // the unit's id column is renamed everywhere it is the id
    let edits = doc.rename(at(&text, "by user_id") + 4, "uid").unwrap();
    let renamed = apply(&text, &edits);
    assert!(renamed.contains("unit user by uid") && renamed.contains("column uid : id"));
    assert!(!Document::new(renamed).analysis().has_errors());
    assert!(doc.rename(at(&text, "dataset visits") + 9, "9x").is_err());
    assert!(doc.rename(at(&text, "daily_visits {"), "page_mix").is_err());
    assert!(doc.rename(at(&text, "daily_visits {"), "query").is_err());
}

#[test]
fn outline_and_semantic_tokens() {
    let text = example("retail-mixed");
    let doc = Document::new(text.clone());
    let outline = doc.outline();
    assert_eq!(outline.len(), 1);
    let plan = &outline[0];
    assert_eq!(plan.name, "retail-mixed");
    let names: Vec<&str> = plan.children.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "privacy",
            "orders",
            "live_orders",
            "daily_revenue",
            "items_by_store",
            "basket_size",
            "revenue_report"
        ]
    );
    assert_eq!(plan.children[1].children.len(), 4);
    let toks = doc.semantic_tokens();
    let kind_of = |needle: &str| {
        toks.iter()
            .find(|t| t.span.start == at(&text, needle))
            .map(|t| (t.kind, t.declaration))
    };
    assert_eq!(kind_of("plan \""), Some((SemanticKind::Keyword, false)));
    assert_eq!(kind_of("orders {"), Some((SemanticKind::Dataset, true)));
    assert_eq!(kind_of("// A retail"), Some((SemanticKind::Comment, false)));
    assert_eq!(
        kind_of("\"data/orders.csv\""),
        Some((SemanticKind::String, false))
    );
    let amount = at(&text, "orders.amount") + 7;
    assert!(toks
        .iter()
        .any(|t| t.span.start == amount && t.kind == SemanticKind::Column));
    // sorted, no overlap
    assert!(toks.windows(2).all(|w| w[0].span.end <= w[1].span.start));
}

/// The outline without the details that need the checked plan (the
/// privacy block's and the queries').
fn without_checked_details(items: &[OutlineItem]) -> Vec<OutlineItem> {
    items
        .iter()
        .map(|i| OutlineItem {
            detail: match i.kind {
                OutlineKind::Privacy | OutlineKind::Query => None,
                _ => i.detail.clone(),
            },
            children: without_checked_details(&i.children),
            ..i.clone()
        })
        .collect()
}

#[test]
fn the_outline_of_a_text_is_the_documents_without_the_checked_details() {
    let mut with_details = 0;
    for path in every_example() {
        let text = std::fs::read_to_string(&path).unwrap();
        let full = Document::new(text.clone()).outline();
        let quick = outline_of_text(&text);
        assert_eq!(quick, without_checked_details(&full), "{}", path.display());
        // the checked details exist, so the comparison above drops something
        if quick != full {
            with_details += 1;
        }
    }
    assert_eq!(with_details, every_example().len(), "examples with details");
    // A broken plan: the parse's recovered items, as the document shows them.
    let broken = example("census").replacen("noise", "nosie", 1);
    assert_eq!(
        outline_of_text(&broken),
        without_checked_details(&Document::new(broken.clone()).outline())
    );
}

fn fix(text: &str, code: Code, pick: usize) -> String {
    let doc = Document::new(text.to_string());
    let d = doc
        .diagnostics()
        .iter()
        .find(|d| d.code == code)
        .unwrap_or_else(|| panic!("no {code}: {:?}", doc.diagnostics()));
    let actions: Vec<CodeAction> = doc
        .code_actions_resolved(d.primary.span)
        .into_iter()
        .filter(|a| a.diagnostic.as_ref().is_some_and(|x| x.code == code))
        .collect();
    assert!(actions.len() > pick, "{actions:?}");
    apply(text, &actions[pick].edits)
}

#[test]
fn code_action_dp001_adds_a_contribution_bound() {
    let block = "    contribution {\n      rows_per_unit 5 // at most 5 random visits per user are kept\n      groups_per_unit 3 // touching at most 3 pages\n    }\n";
    // negative control: without the whole block, bounding the rows alone
    // reveals the missing `groups_per_unit` (a new error): not offered
    let text = example("web-analytics").replace(block, "");
    let doc = Document::new(text.clone());
    let d = doc
        .diagnostics()
        .iter()
        .find(|d| d.code == Code::UnboundedContribution)
        .unwrap();
    assert!(!actions::candidates(&doc, d.primary.span).is_empty());
    assert!(doc.code_actions(d.primary.span).is_empty());
    let text = example("web-analytics").replace(
        "      rows_per_unit 5 // at most 5 random visits per user are kept\n",
        "",
    );
    // 10 rows would spend more than the budget (the example's bound is 5):
    // the fix offered is the 1 row that fits
    let fixed = fix(&text, Code::UnboundedContribution, 0);
    assert!(
        fixed.contains("    contribution {\n      rows_per_unit 1\n      groups_per_unit 3"),
        "{fixed}"
    );
    let doc = Document::new(fixed);
    assert!(!doc
        .diagnostics()
        .iter()
        .any(|d| d.code == Code::UnboundedContribution));
}

#[test]
fn code_action_dp002_declares_bounds() {
    let text = example("web-analytics").replace("float in [0, 3600]", "float");
    let fixed = fix(&text, Code::MissingBounds, 0);
    assert!(
        fixed.contains("column seconds : float in [0, 100]"),
        "{fixed}"
    );
    assert!(!Document::new(fixed)
        .diagnostics()
        .iter()
        .any(|d| d.code == Code::MissingBounds));
}

#[test]
fn code_action_dp011_calibrates_the_noise() {
    // Pure ε-DP keeps the calibration cheap (the `best` accountant over a
    // long Gaussian schedule is slow in unoptimised test builds).
    let text = "plan \"p\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 1\n  }\n  dataset d {\n    column x : int in [0, 1]\n  }\n  query small {\n    count(d)\n    noise laplace scale 0.5\n    schedule every 1 day for 4 days\n  }\n  query other {\n    sum(d.x)\n    noise laplace scale 20\n    schedule once\n  }\n}\n";
    let doc = Document::new(text);
    let d = doc
        .diagnostics()
        .iter()
        .find(|d| d.code == Code::OverBudget)
        .expect("over budget");
    let listed = doc.code_actions(d.primary.span);
    assert!(
        listed
            .iter()
            .any(|a| a.resolve.is_some() && a.edits.is_empty()),
        "the solved value is computed on resolve"
    );
    let actions = doc.code_actions_resolved(d.primary.span);
    let titles: Vec<&str> = actions.iter().map(|a| a.title.as_str()).collect();
    assert!(
        titles
            .iter()
            .any(|t| t.contains("`small`") && t.contains("`auto`")),
        "{titles:?}"
    );
    // 4 releases at L1 = 1, plus 1/20 for `other`: 4/b + 0.05 = 1.
    assert!(
        titles.contains(&"Set `small`'s noise to `scale 4.21053` so that the plan fits its budget"),
        "{titles:?}"
    );
    // `other` alone cannot fit: no solved value is offered for it.
    assert!(
        !titles.iter().any(|t| t.starts_with("Set `other`")),
        "{titles:?}"
    );
    // (`auto` on `other` is offered unverified: checking it would cost a
    // calibration per listing; the checker then says it cannot fit.)
    for a in actions.iter().filter(|a| a.title.contains("`small`")) {
        let fixed = apply(text, &a.edits);
        let after = Document::new(fixed.clone());
        assert!(
            !after.analysis().has_errors(),
            "{}: {:?}",
            a.title,
            after.diagnostics()
        );
        assert_eq!(
            after.analysis().report.as_ref().unwrap().within_budget,
            Some(true),
            "{}",
            a.title
        );
    }
}

#[test]
fn code_action_dp009_republishes() {
    let text = example("repeated-release");
    let fixed = fix(&text, Code::FreshRerelease, 0);
    assert!(fixed.contains("schedule once"), "{fixed}");
    assert!(
        fixed.contains("\n  publish yes_count_copy = yes_count\n"),
        "{fixed}"
    );
    let doc = Document::new(fixed);
    assert!(!doc.analysis().has_errors(), "{:?}", doc.diagnostics());
    assert!(!doc
        .diagnostics()
        .iter()
        .any(|d| d.code == Code::FreshRerelease));
    // the same statistic released twice
    let text = example("web-analytics").replace(
        "  // Re-publishing",
        "  query visits_again {\n    count(visits)\n    noise laplace scale 250\n    schedule every 1 day for 365 days\n  }\n\n  // Re-publishing",
    );
    let fixed = fix(&text, Code::FreshRerelease, 0);
    assert!(
        fixed.contains("  publish visits_again = daily_visits\n"),
        "{fixed}"
    );
    assert!(!Document::new(fixed).analysis().has_errors());
}

/// Four queries of one statistic: one DP009 hint, whose fix is offered at
/// each re-release it marks (primary and related), not at the first
/// release.
#[test]
fn code_action_dp009_at_every_marked_rerelease() {
    let queries: String = (0..4)
        .map(|i| format!("  query q{i} {{\n    count(d)\n    noise laplace scale 100\n    schedule once\n  }}\n"))
        .collect();
    let text = format!("plan \"p\" {{\n  privacy {{\n    unit row\n    adjacency add_remove\n    budget epsilon 1\n  }}\n  dataset d {{\n    column x : int in [0, 1]\n  }}\n{queries}}}\n");
    let doc = Document::new(text.clone());
    let hints: Vec<_> = doc
        .diagnostics()
        .iter()
        .filter(|d| d.code == Code::FreshRerelease)
        .collect();
    assert_eq!(hints.len(), 1, "{hints:?}");
    for (name, first) in [("q1", "q0"), ("q2", "q0"), ("q3", "q0")] {
        let span = Span::new(
            at(&text, &format!("query {name} ")) + 6,
            at(&text, &format!("query {name} ")) + 8,
        );
        let actions = doc.code_actions_resolved(span);
        let a = actions
            .iter()
            .find(|a| {
                a.diagnostic
                    .as_ref()
                    .is_some_and(|d| d.code == Code::FreshRerelease)
            })
            .unwrap_or_else(|| panic!("no fix at {name}: {actions:?}"));
        let fixed = apply(&text, &a.edits);
        assert!(
            fixed.contains(&format!("  publish {name} = {first}\n")),
            "{fixed}"
        );
        assert!(!Document::new(fixed).analysis().has_errors());
    }
    // negative control: the first release is not a re-release
    let span = Span::new(at(&text, "query q0 ") + 6, at(&text, "query q0 ") + 8);
    assert!(!doc.code_actions_resolved(span).iter().any(|a| a
        .diagnostic
        .as_ref()
        .is_some_and(|d| d.code == Code::FreshRerelease)));
}

#[test]
fn diagnostics_match_the_cli() {
    let plans = every_example();
    // every shipped example (10 when this was written): a walk finding fewer is broken
    assert!(plans.len() >= 10, "{plans:?}");
    for path in plans {
        let name = path.display();
        let text = std::fs::read_to_string(&path).unwrap();
        let doc = Document::new(text.clone());
        let cli = dpplan_check::analyze(&text);
        assert_eq!(doc.diagnostics(), &cli.diagnostics[..], "{name}");
        let (a, b) = (
            doc.analysis().report.as_ref().unwrap(),
            cli.report.as_ref().unwrap(),
        );
        assert_eq!(a.total, b.total, "{name}");
        assert_eq!(a.queries, b.queries, "{name}");
    }
}

#[test]
fn light_diagnostics_are_the_full_ones() {
    let over =
        example("web-analytics").replace("noise laplace scale 250", "noise laplace scale 25");
    let broken = example("retail-mixed").replace("rows_per_unit 10", "");
    for text in [
        over,
        broken,
        example("retail-mixed"),
        example("repeated-release"),
    ] {
        let doc = Document::new(text.clone());
        assert_eq!(
            doc.diagnostics(),
            &dpplan_check::analyze(&text).diagnostics[..]
        );
        // and a keyword hover does not compute the costs
        let doc = Document::new(text.clone());
        let _ = doc.hover(text.find("privacy").unwrap());
        let over_budget = doc.diagnostics().iter().any(|d| d.code == Code::OverBudget);
        assert_eq!(doc.has_costs(), over_budget);
    }
}

#[test]
fn windows_complete_and_hover() {
    let text = "plan \"p\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 10 delta 1e-6\n  }\n  dataset trips {\n    column uid : id\n    column started_at : time\n    contribution {\n      rows_per_unit 20\n      windows_per_unit 30\n      rows_per_window 2\n    }\n  }\n  query hourly {\n    count(trips)\n    noise gaussian sigma 40\n    schedule every 1 hour for 7 days\n    window 1 hour\n  }\n}\n";
    let doc = Document::new(text.to_string());
    let labels = |before: &str, typed: &str| -> Vec<String> {
        let with = text.replacen(before, &format!("{typed}{before}"), 1);
        let doc = Document::new(with.clone());
        let off = at(&with, before);
        doc.completions(off).into_iter().map(|c| c.label).collect()
    };
    // `window` among a query's statements, its units after the amount
    assert!(labels("count(trips)", "").contains(&"window".to_string()));
    assert!(labels("count(trips)", "window 2 ").contains(&"hours".to_string()));
    // the horizon bounds among the contribution keys, `time` among the types
    let keys = labels("rows_per_unit 20", "");
    assert!(keys.contains(&"windows_per_unit".to_string()), "{keys:?}");
    assert!(keys.contains(&"rows_per_window".to_string()), "{keys:?}");
    // hover: the keyword, the time column and the dataset's bounds
    let h = doc.hover(at(text, "window 1 hour") + 2).expect("hover");
    assert!(h.markdown.contains("ONE release"), "{}", h.markdown);
    let h = doc
        .hover(at(text, "windows_per_unit 30") + 2)
        .expect("hover");
    assert!(h.markdown.contains("at most W windows"), "{}", h.markdown);
    let h = doc.hover(at(text, "started_at") + 2).expect("hover");
    assert!(h.markdown.contains("UTC timestamp"), "{}", h.markdown);
    let h = doc.hover(at(text, "trips {") + 1).expect("hover");
    assert!(h.markdown.contains("windows_per_unit 30"), "{}", h.markdown);
    // the query's cost: one release over all its windows, not per window
    let h = doc.hover(at(text, "hourly {") + 2).expect("hover");
    assert!(
        h.markdown
            .contains("over 168 releases (one release over all its windows)"),
        "{}",
        h.markdown
    );
    assert!(!h.markdown.contains("per release)"), "{}", h.markdown);
    // the control: the same query without its window costs per release
    let plain = Document::new(text.replace("    window 1 hour\n", ""));
    let h = plain.hover(at(text, "hourly {") + 2).expect("hover");
    assert!(h.markdown.contains("per release)"), "{}", h.markdown);
}

/// `release after <duration>`: offered among a query's statements (as
/// both words), `after` after `release`, the time units after the amount;
/// both words hover the statement's doc; the plan checks clean.
#[test]
fn release_after_completes_and_hovers() {
    let text = "plan \"p\" {\n  privacy {\n    unit row\n    adjacency add_remove\n    budget epsilon 10 delta 1e-6\n  }\n  dataset trips {\n    column started_at : time\n  }\n  query hourly {\n    count(trips)\n    noise gaussian sigma 40\n    schedule every 1 hour for 7 days\n    window 1 hour\n    release after 2 hours\n  }\n}\n";
    let doc = Document::new(text.to_string());
    assert!(doc.diagnostics().is_empty(), "{:?}", doc.diagnostics());
    let items = |before: &str, typed: &str| {
        let with = text.replacen(before, &format!("{typed}{before}"), 1);
        let doc = Document::new(with.clone());
        doc.completions(at(&with, before))
    };
    let labels = |before: &str, typed: &str| -> Vec<String> {
        items(before, typed).into_iter().map(|c| c.label).collect()
    };
    let offered = items("count(trips)", "");
    let release = offered
        .iter()
        .find(|c| c.label == "release")
        .expect("`release` offered in a query");
    assert_eq!(release.insert_text.as_deref(), Some("release after "));
    assert!(
        release
            .detail
            .as_deref()
            .unwrap_or("")
            .contains("slot s is released"),
        "{release:?}"
    );
    assert_eq!(labels("count(trips)", "release "), ["after"]);
    let units = labels("count(trips)", "release after 2 ");
    assert!(units.contains(&"hours".to_string()), "{units:?}");
    assert!(units.contains(&"minute".to_string()), "{units:?}");
    // negative controls: nothing after `release after` but a number, and
    // `release` is not offered outside a query
    assert!(labels("count(trips)", "release after ").is_empty());
    let top = labels("  query hourly", "");
    assert!(!top.contains(&"release".to_string()), "{top:?}");
    for word in ["release after 2", "after 2 hours"] {
        let h = doc.hover(at(text, word) + 1).expect(word);
        assert!(
            h.markdown.contains("`release after <duration>`")
                && h.markdown.contains("never counted"),
            "{word}: {}",
            h.markdown
        );
    }
}

/// A cumulative count: the keyword's hover, the query's hover (the tree,
/// the comparison with fresh releases, each slot's error), the inlay hint
/// (one tree of 724 nodes for a daily year), the completion.
#[test]
fn hover_and_hints_on_a_cumulative_count() {
    let text = "plan \"p\" {\n  privacy {\n    unit user by uid\n    adjacency add_remove\n    budget epsilon 10 delta 1e-6\n  }\n  dataset signups {\n    column uid : id\n    column signed_up_at : time\n    contribution {\n      rows_per_unit 2\n    }\n  }\n  query running {\n    cumulative count(signups)\n    noise gaussian sigma 40\n    schedule every 1 day for 365 days\n  }\n}\n";
    let doc = Document::new(text.to_string());
    assert!(doc.diagnostics().is_empty(), "{:?}", doc.diagnostics());
    let h = doc.hover(at(text, "cumulative") + 2).expect("hover");
    assert!(
        h.markdown.contains("binary tree mechanism"),
        "{}",
        h.markdown
    );
    let h = doc.hover(at(text, "running {") + 2).expect("hover");
    let md = &h.markdown;
    assert!(md.contains("724 dyadic nodes"), "{md}");
    assert!(md.contains("as fresh releases: 365 running totals"), "{md}");
    assert!(md.contains("at slot 255"), "{md}");
    assert!(
        md.contains("(one release: the whole tree of running totals)")
            && !md.contains("per release)"),
        "{md}"
    );
    let hints = doc.inlay_hints(dpplan_diagnostics::Span::new(0, text.len()));
    let q = hints
        .iter()
        .find(|h| h.kind == InlayKind::QueryCost)
        .expect("a query hint");
    assert!(
        q.label.contains("365 releases · one tree of 724 nodes"),
        "{}",
        q.label
    );
    // negative control: without `cumulative`, no tree
    let fresh = Document::new(text.replace("cumulative count", "count"));
    let hints = fresh.inlay_hints(dpplan_diagnostics::Span::new(0, text.len()));
    assert!(hints.iter().all(|h| !h.label.contains("tree")));
    let labels: Vec<String> = doc
        .completions(at(text, "cumulative count"))
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert!(labels.contains(&"cumulative".to_string()), "{labels:?}");

    // `mechanism factorization`: the hover, the hint and the keyword's docs
    let text = text.replace(
        "    noise gaussian sigma 40
",
        "    mechanism factorization
    noise gaussian sigma 40
",
    );
    let doc = Document::new(text.clone());
    assert!(doc.diagnostics().is_empty(), "{:?}", doc.diagnostics());
    let md = doc
        .hover(at(&text, "running {") + 2)
        .expect("hover")
        .markdown;
    assert!(
        md.contains("every running total, by the square-root factorization"),
        "{md}"
    );
    assert!(md.contains("the binary tree at the same privacy"), "{md}");
    let hints = doc.inlay_hints(dpplan_diagnostics::Span::new(0, text.len()));
    assert!(
        hints.iter().any(|h| h
            .label
            .contains("365 releases · factorized, 365 coordinates")),
        "{hints:?}"
    );
    let h = doc.hover(at(&text, "factorization") + 2).expect("hover");
    assert!(
        h.markdown.contains("square-root factorization"),
        "{}",
        h.markdown
    );
}

/// A quantile query: its hover gives each level's sensitivity, the
/// exponential mechanism and the rank error (not additive noise); its inlay
/// hint its cost; the keywords have hover docs.
#[test]
fn hover_and_hints_on_a_quantile_query() {
    let text = example("trip-fares");
    let doc = Document::new(text.clone());
    let h = doc.hover(at(&text, "fare_quantiles {") + 3).expect("hover");
    let md = &h.markdown;
    assert!(md.contains("**quantile 0.9**"), "{md}");
    assert!(md.contains("Sensitivity:** L1 = 3.6"), "{md}");
    assert!(md.contains("`exponential`, scale b = 9"), "{md}");
    assert!(
        md.contains("Rank error per release:** the chosen candidate's rank is within 105.95 rows"),
        "{md}"
    );
    assert!(!md.contains("Noise per release"), "{md}");
    let hints = doc.inlay_hints(Span::new(0, text.len()));
    assert!(
        hints.iter().any(|h| h.label == "ε 0.5 · 1 release"),
        "{hints:?}"
    );
    assert!(
        hints.iter().any(|h| h.label == "plan: ε 1.7 of 2"),
        "{hints:?}"
    );
    for (word, needle) in [
        ("candidates", "candidates every"),
        ("exponential", "exponential epsilon"),
        ("quantiles", "quantiles(trips"),
    ] {
        let k = doc.hover(at(&text, needle) + 1).expect(word);
        assert!(k.markdown.contains(word), "{word}: {}", k.markdown);
    }
    // negative control: a Laplace query's hover keeps the noise line
    let web = example("web-analytics");
    let w = Document::new(web.clone())
        .hover(at(&web, "daily_visits {") + 3)
        .unwrap();
    assert!(w.markdown.contains("Noise per release") && !w.markdown.contains("Rank error"));
}

/// A top-k: each rank's sensitivity and count error in the hover (not
/// additive noise, not a rank error), the keyword's docs, and only the
/// exponential mechanism offered for its noise.
#[test]
fn hover_and_completion_on_a_top_k() {
    let text = example("news-sections");
    let doc = Document::new(text.clone());
    let h = doc
        .hover(at(&text, "top_sections_weekly {") + 3)
        .expect("hover");
    let md = &h.markdown;
    assert!(md.contains("**top 3**"), "{md}");
    assert!(md.contains("Sensitivity:** L1 = 4"), "{md}");
    assert!(md.contains("`exponential`, scale b = 40"), "{md}");
    assert!(
        md.contains("Count error per release:** no count is released; the key chosen at this rank has a count within 219.226"),
        "{md}"
    );
    assert!(
        !md.contains("Noise per release") && !md.contains("Rank error"),
        "{md}"
    );
    let k = doc.hover(at(&text, "top(reads") + 1).expect("keyword");
    assert!(
        k.markdown.contains("the k cells with the largest counts"),
        "{}",
        k.markdown
    );
    // the noise kinds offered after a top-k: only the exponential mechanism
    let cursor = at(&text, "exponential epsilon 0.3");
    let labels: Vec<String> = doc
        .completions(cursor)
        .into_iter()
        .map(|c| c.label)
        .collect();
    assert_eq!(labels, ["exponential", "permute_and_flip"], "{labels:?}");
}

#[test]
fn keys_from_data_show_their_threshold_and_delta() {
    let text = example("site-visits");
    let doc = Document::new(text.clone());
    let h = doc.hover(at(&text, "by_country {") + 3).expect("hover");
    let md = &h.markdown;
    assert!(md.contains("**Threshold:**"), "{md}");
    assert!(md.contains("τ = 71.02 (auto)"), "{md}");
    assert!(md.contains("added to the plan's δ"), "{md}");
    let h = doc.hover(at(&text, "by_page {") + 3).expect("hover");
    assert!(h.markdown.contains("τ = 130 (declared)"), "{}", h.markdown);
    let hints = doc.inlay_hints(Span::new(0, text.len()));
    let labels: Vec<&str> = hints.iter().map(|h| h.label.as_str()).collect();
    assert!(
        labels.iter().any(|l| l.contains("τ 71.02 · δ 2.49848e-8")),
        "{labels:?}"
    );
    // the keyword docs
    assert!(crate::docs::keyword_doc("threshold").is_some());
    assert!(crate::docs::keyword_doc("keys").is_some());
}
