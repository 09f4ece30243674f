//! Language v2 in the parser: filters (precedence, parentheses, `in`),
//! several keys and `bins` with their `outside` rule, `distinct`; and the
//! limit on nested parentheses (a filter recurses on them): a DP016 and a
//! broken item, never a stack overflow.

use dpplan_diagnostics::Code;
use dpplan_syntax::ast::{GroupKey, InvalidRule, Literal, PredOperand, Predicate};
use dpplan_syntax::parse;

fn plan(aggregation: &str) -> String {
    format!(
        "plan \"p\" {{\n  privacy {{ unit row adjacency replace budget epsilon 1 }}\n  query q {{\n    {aggregation}\n    noise laplace scale 1\n    schedule once\n  }}\n}}\n"
    )
}

#[test]
fn and_binds_tighter_than_or_and_not_tighter_than_and() {
    let p = parse(&plan(
        "count(t where not a == \"x\" and b > 1 or c in { \"u\", \"v\" })",
    ));
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    let agg = &p.plan.queries[0].aggregates[0];
    let Some(Predicate::Or { items, .. }) = agg.filter.as_deref() else {
        panic!("{:?}", agg.filter)
    };
    let Predicate::And { items: and, .. } = &items[0] else {
        panic!("{:?}", items[0])
    };
    assert!(matches!(and[0], Predicate::Not { .. }));
    let Predicate::Compare { right, .. } = &and[1] else {
        panic!()
    };
    assert!(matches!(
        right,
        PredOperand::Literal {
            value: Literal::Number { .. }
        }
    ));
    let Predicate::In { values, .. } = &items[1] else {
        panic!()
    };
    assert_eq!(values.len(), 2);
    // parentheses regroup
    let p = parse(&plan("count(t where a == \"x\" and (b > 1 or b < 0))"));
    let Some(Predicate::And { items, .. }) = p.plan.queries[0].aggregates[0].filter.as_deref()
    else {
        panic!()
    };
    assert!(matches!(items[1], Predicate::Or { .. }));
}

#[test]
fn keys_bins_and_distinct() {
    let p = parse(&plan(
        "histogram(t where x >= 2 by d, bins(len, [0, 1, 2.5] outside clamp), bins(y, [1, 2]))",
    ));
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    let agg = &p.plan.queries[0].aggregates[0];
    assert_eq!(agg.keys.len(), 3);
    assert!(matches!(&agg.keys[0], GroupKey::Column { name } if name.value == "d"));
    let GroupKey::Bins { edges, outside, .. } = &agg.keys[1] else {
        panic!()
    };
    assert_eq!(
        edges.iter().map(|e| e.value).collect::<Vec<_>>(),
        [0.0, 1.0, 2.5]
    );
    assert_eq!(outside.as_ref().unwrap().value, InvalidRule::Clamp);
    assert!(matches!(&agg.keys[2], GroupKey::Bins { outside: None, .. }));
    assert!(agg.argument.is_none());
    let p = parse(&plan("count(distinct t.rider_id where x > 1)"));
    let agg = &p.plan.queries[0].aggregates[0];
    assert!(agg.distinct.is_some() && agg.filter.is_some());
    assert_eq!(agg.target.column.as_ref().unwrap().value, "rider_id");
    // a quantile's argument still follows the keys
    let p = parse(&plan("quantile(t.x by d, 0.5)"));
    let agg = &p.plan.queries[0].aggregates[0];
    assert_eq!(
        (agg.keys.len(), agg.argument.as_ref().unwrap().value),
        (1, 0.5)
    );
}

#[test]
fn deep_parentheses_are_a_limit_not_a_crash() {
    let deep = format!(
        "count(t where {}a > 1{})",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    let p = parse(&plan(&deep));
    assert!(
        p.diagnostics.iter().any(|d| d.code == Code::Limit),
        "{:?}",
        p.diagnostics
    );
    assert!(!p.plan.broken.is_empty(), "the item is broken");
    assert!(p.plan.queries.is_empty());
    // 32 levels are fine
    let ok = format!("count(t where {}a > 1{})", "(".repeat(30), ")".repeat(30));
    let p = parse(&plan(&ok));
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
}

/// pest runs without its stack probe (ARCHITECTURE.md): the grammar's other
/// recursion, `pred_not = not ~ pred_not`, is bounded by the scanner with
/// the parentheses (a run of `not`s, those before a parenthesis held until
/// it closes). Each deep case is a DP016 and a broken item, never a stack
/// overflow; the deepest accepted filter parses (and lowers: the lowering
/// recurses on the same nesting) on a thread with the parser threads'
/// default stack.
#[test]
fn runs_of_not_are_a_limit_not_a_crash() {
    for deep in [
        format!("count(t where {}a > 1)", "not ".repeat(100_000)),
        format!(
            "count(t where {}a > 1{})",
            "not (".repeat(50_000),
            ")".repeat(50_000)
        ),
        // the aggregation's parenthesis, 15 `not (` and two `not`s: 33 levels
        format!(
            "count(t where {}not not a > 1{})",
            "not (".repeat(15),
            ")".repeat(15)
        ),
    ] {
        let p = parse(&plan(&deep));
        assert!(
            p.diagnostics
                .iter()
                .any(|d| d.code == Code::Limit && d.message.contains("`not`")),
            "{:?}",
            p.diagnostics
        );
        assert!(!p.plan.broken.is_empty() && p.plan.queries.is_empty());
        assert!(dpplan_syntax::parse_strict(&plan(&deep)).is_err());
    }
    // 32 levels: the aggregation's parenthesis, 15 `not (`, one `not`
    let deepest = format!(
        "count(t where {}not a > 1{})",
        "not (".repeat(15),
        ")".repeat(15)
    );
    let p = std::thread::spawn(move || parse(&plan(&deepest)))
        .join()
        .expect("no overflow");
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    let mut filter = p.plan.queries[0].aggregates[0].filter.as_deref();
    let mut nots = 0;
    while let Some(Predicate::Not { inner, .. }) = filter {
        nots += 1;
        filter = Some(inner);
    }
    assert_eq!(nots, 16);
    assert!(matches!(filter, Some(Predicate::Compare { .. })));
    // many `not`s side by side are not nested
    let wide = format!("count(t where {}a > 1)", "not a > 1 and ".repeat(200));
    let p = parse(&plan(&wide));
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
}
