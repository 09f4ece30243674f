//! Typos: one typo gives one error (no cascade from a broken dataset or
//! query), and a misspelt name is suggested; with negative controls.

use dpplan_diagnostics::Code;

use crate::analyze;

const RETAIL: &str = include_str!("../../../examples/retail-mixed/retail-mixed.dpplan");

fn edited(from: &str, to: &str) -> String {
    assert!(RETAIL.contains(from), "{from}");
    RETAIL.replacen(from, to, 1)
}

#[test]
fn a_typo_inside_a_dataset_is_one_error_not_one_per_query() {
    for (from, to) in [
        ("rows_per_unit 10", "rows_per_unt 10"),
        (": float in [0, 500]", ": flaot in [0, 500]"),
        ("source \"data", "sorce \"data"),
    ] {
        let a = analyze(&edited(from, to));
        assert_eq!(a.diagnostics.len(), 1, "{to}: {:#?}", a.diagnostics);
        assert_eq!(a.diagnostics[0].code, Code::Syntax);
        assert!(
            a.diagnostics[0].suggestion.is_some(),
            "{:#?}",
            a.diagnostics
        );
        // No claim while the dataset is broken.
        let report = a.report.expect("the privacy block is intact");
        assert!(report.total.is_none());
    }
}

#[test]
fn a_dataset_that_really_does_not_exist_is_still_undefined() {
    // Negative control: the dataset's name is misspelt in its declaration,
    // which parses; the queries read a dataset that is not declared.
    let a = analyze(&edited("dataset orders {", "dataset purchases {"));
    let undefined = a
        .diagnostics
        .iter()
        .filter(|d| d.code == Code::Undefined && d.message.contains("no dataset `orders`"))
        .count();
    assert_eq!(undefined, 4, "{:#?}", a.diagnostics);
    // and a broken dataset of another name does not hide them
    let text = edited("dataset orders {", "dataset purchases {").replacen(
        "rows_per_unit 10",
        "rows_per_unt 10",
        1,
    );
    let a = analyze(&text);
    assert_eq!(
        a.diagnostics
            .iter()
            .filter(|d| d.code == Code::Undefined)
            .count(),
        4,
        "{:#?}",
        a.diagnostics
    );
}

#[test]
fn a_publish_of_a_broken_query_is_not_undefined() {
    let a = analyze(&edited(
        "noise laplace epsilon 0.01",
        "noise laplce epsilon 0.01",
    ));
    assert_eq!(a.diagnostics.len(), 1, "{:#?}", a.diagnostics);
    assert_eq!(a.diagnostics[0].suggestion.as_deref(), Some("laplace"));
    // negative control: a publish of a query that is not there at all
    let a = analyze(&edited("= daily_revenue when", "= daily_revenu when"));
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code == Code::Undefined)
        .expect("undefined release");
    assert_eq!(d.suggestion.as_deref(), Some("daily_revenue"));
}

#[test]
fn misspelt_names_are_suggested_from_the_plans_declarations() {
    for (from, to, meant) in [
        ("count(orders)", "count(order)", "orders"),
        ("sum(orders.amount)", "sum(orders.amuont)", "amount"),
        ("by store)", "by stor)", "store"),
    ] {
        let a = analyze(&edited(from, to));
        let d = a
            .diagnostics
            .iter()
            .find(|d| d.code == Code::Undefined)
            .unwrap_or_else(|| panic!("{to}: {:#?}", a.diagnostics));
        assert_eq!(d.suggestion.as_deref(), Some(meant), "{d:#?}");
        assert!(d
            .help
            .as_deref()
            .unwrap()
            .starts_with(&format!("did you mean `{meant}`? ")));
    }
    // Negative control: a name far from every declared one.
    let a = analyze(&edited("count(orders)", "count(inventory)"));
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code == Code::Undefined)
        .unwrap();
    assert_eq!(d.suggestion, None);
    assert!(!d.help.as_deref().unwrap().contains("did you mean"));
}
