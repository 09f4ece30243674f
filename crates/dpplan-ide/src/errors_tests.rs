//! Plans with errors: the hover never describes an underived number as
//! known, and a misspelt word has a quick fix.

use super::*;

fn retail() -> String {
    std::fs::read_to_string(format!(
        "{}/../../examples/retail-mixed/retail-mixed.dpplan",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn edited(from: &str, to: &str) -> String {
    let text = retail();
    assert!(text.contains(from), "{from}");
    text.replacen(from, to, 1)
}

/// The hover on the name of query `name` in `text`.
fn query_hover(text: &str, name: &str) -> String {
    let doc = Document::new(text.to_string());
    let at = text
        .find(&format!("query {name} {{"))
        .unwrap_or_else(|| panic!("no query {name}"))
        + "query ".len()
        + 1;
    doc.hover(at).expect("a hover").markdown
}

fn claims_nothing_known(md: &str) {
    assert!(!md.contains("Sensitivity:** 0"), "{md}");
    assert!(!md.contains("costs nothing"), "{md}");
    assert!(!md.contains("L1 ="), "{md}");
    assert!(!md.contains("Cost alone"), "{md}");
}

#[test]
fn hover_in_broken_plans_says_what_is_unknown_and_why() {
    for (from, to, query, code, why) in [
        // an unknown dataset
        (
            "count(orders)",
            "count(ordrs)",
            "live_orders",
            "DP012",
            "no dataset `ordrs`",
        ),
        // an unknown column
        (
            "sum(orders.amount)",
            "sum(orders.amout)",
            "daily_revenue",
            "DP012",
            "no column `amout`",
        ),
        // missing bounds
        (
            ": float in [0, 500]",
            ": float",
            "daily_revenue",
            "DP002",
            "amount",
        ),
        // a typo inside the dataset the query reads (a syntax error there)
        (
            "rows_per_unit 10",
            "rows_per_unt 10",
            "live_orders",
            "DP000",
            "rows_per_unt",
        ),
        // no contribution bound under a user-level unit
        (
            "      rows_per_unit 10\n",
            "",
            "live_orders",
            "DP001",
            "orders",
        ),
        // an invalid noise parameter
        ("sigma 1500", "sigma -3", "live_orders", "DP007", "σ"),
    ] {
        let md = query_hover(&edited(from, to), query);
        claims_nothing_known(&md);
        assert!(md.contains("unknown"), "{to}: {md}");
        assert!(md.contains(code), "{to}: {md}");
        assert!(md.contains(why), "{to}: {md}");
    }
}

#[test]
fn hover_on_a_broken_dataset_or_query_says_it_could_not_be_read() {
    let text = edited("rows_per_unit 10", "rows_per_unt 10");
    let doc = Document::new(text.clone());
    // on the dataset's name where a query reads it
    let at = text.find("count(orders)").unwrap() + "count(".len() + 1;
    let md = doc.hover(at).expect("hover").markdown;
    assert!(md.contains("could not be read"), "{md}");
    assert!(md.contains("DP000"), "{md}");
    assert!(!md.contains("no dataset of this name"), "{md}");
    // on a publish's source whose query is broken
    let text = edited("noise laplace epsilon 0.01", "noise laplce epsilon 0.01");
    let doc = Document::new(text.clone());
    let at = text.find("= daily_revenue").unwrap() + 3;
    let md = doc.hover(at).expect("hover").markdown;
    assert!(
        md.contains("**query `daily_revenue`** could not be read"),
        "{md}"
    );
    assert!(
        md.contains("did not") || md.contains("expected a mechanism"),
        "{md}"
    );
}

/// Negative control: a valid zero-sensitivity statistic (a count under
/// row-level replace adjacency, invalid rows clamped: none is dropped) still says so, and a valid query still
/// shows its derivation and cost.
#[test]
fn valid_queries_still_show_their_numbers() {
    let text = "plan \"z\" {\n  privacy {\n    unit row\n    adjacency replace\n    budget epsilon 1\n  }\n  dataset d {\n    column x : int in [0, 1]\n    invalid_rows clamp\n  }\n  query n {\n    count(d)\n    noise laplace scale 1\n    schedule once\n  }\n}\n";
    let md = query_hover(text, "n");
    assert!(md.contains("**Sensitivity:** L1 = 0, L2 = 0"), "{md}");
    assert!(
        md.contains("the count is public under row-level replace adjacency"),
        "{md}"
    );
    assert!(!md.contains("unknown"), "{md}");
    let md = query_hover(&retail(), "live_orders");
    assert!(md.contains("**Sensitivity:** L1 = 10"), "{md}");
    assert!(md.contains("Cost alone"), "{md}");
    assert!(!md.contains("unknown"), "{md}");
}

#[test]
fn a_misspelt_word_has_a_quick_fix() {
    for (from, to, meant) in [
        (
            "noise laplace epsilon",
            "noise laplce epsilon",
            "noise laplace epsilon",
        ),
        ("accountant best", "accountant bset", "accountant best"),
        ("rows_per_unit 10", "rows_per_unt 10", "rows_per_unit 10"),
        ("count(orders)", "count(ordres)", "count(orders)"),
        (
            "sum(orders.amount)",
            "sum(orders.amuont)",
            "sum(orders.amount)",
        ),
    ] {
        let text = edited(from, to);
        let doc = Document::new(text.clone());
        let d = doc
            .diagnostics()
            .iter()
            .find(|d| d.suggestion.is_some())
            .unwrap_or_else(|| panic!("{to}: {:#?}", doc.diagnostics()));
        let fix = doc
            .code_actions_resolved(d.primary.span)
            .into_iter()
            .find(|a| a.title.starts_with("Change to"))
            .unwrap_or_else(|| panic!("{to}: no quick fix"));
        assert!(fix.preferred);
        let fixed = tests_apply(&text, &fix.edits);
        assert!(fixed.contains(meant), "{fixed}");
        assert_eq!(fixed, retail(), "the fix restores the plan");
    }
    // Negative control: a word far from every candidate has no fix.
    let text = edited("noise laplace epsilon", "noise poisson epsilon");
    let doc = Document::new(text);
    let d = &doc.diagnostics()[0];
    assert!(!doc
        .code_actions_resolved(d.primary.span)
        .iter()
        .any(|a| a.title.starts_with("Change to")));
}

fn tests_apply(text: &str, edits: &[TextEdit]) -> String {
    let mut edits = edits.to_vec();
    edits.sort_by_key(|e| std::cmp::Reverse(e.span.start));
    let mut s = text.to_string();
    for e in edits {
        s.replace_range(e.span.start..e.span.end, &e.new_text);
    }
    s
}
