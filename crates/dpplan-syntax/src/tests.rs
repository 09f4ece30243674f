use super::*;
use crate::ast::*;

const SAMPLE: &str = r#"plan "traffic-dashboard" {
  privacy {
    unit user by user_id            // event | row | user by <id column>
    adjacency add_remove
    budget epsilon 4.0 delta 1e-6
    accountant best
  }

  dataset visits {
    source "data/visits.csv"
    column user_id : id
    column page    : category { "home", "search", "checkout" }
    column seconds : float in [0, 3600]
    contribution {
      rows_per_unit 5
      groups_per_unit 3
    }
  }

  query daily_visits {
    count(visits)
    noise laplace scale 50
    schedule every 1 day for 365 days
  }

  /* a block
     comment */
  query page_mix {
    histogram(visits by page)
    noise gaussian sigma 30
    schedule every 1 week from 2026-01-01 until 2027-01-01
  }

  publish dashboard_copy = daily_visits
}
"#;

#[test]
fn sample_parses_strictly_and_tolerantly() {
    parse_strict(SAMPLE).unwrap();
    let p = parse(SAMPLE);
    assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
    let plan = p.plan;
    assert_eq!(plan.name.as_ref().unwrap().value, "traffic-dashboard");
    assert_eq!(plan.privacy.len(), 1);
    assert_eq!(plan.datasets[0].columns.len(), 3);
    assert_eq!(plan.queries.len(), 2);
    assert_eq!(plan.publishes.len(), 1);
    let q = &plan.queries[0];
    assert_eq!(&SAMPLE[q.name.span.start..q.name.span.end], "daily_visits");
    assert!(matches!(q.schedules[0].value, Schedule::EveryFor { .. }));
    let budget = &plan.privacy[0].budgets[0];
    assert_eq!(budget.epsilon.value, 4.0);
    assert_eq!(budget.delta.as_ref().unwrap().value, 1e-6);
    assert_eq!(
        &SAMPLE[budget.epsilon.span.start..budget.epsilon.span.end],
        "4.0"
    );
}

#[test]
fn three_broken_queries_give_three_errors_and_the_rest_survives() {
    let text = SAMPLE.replace(
        "  publish dashboard_copy",
        "  query a {\n    count(visits\n    schedule once\n  }\n  query b {\n    noise laplace scale\n  }\n  query c {\n    schedule every 1 for 3 days\n  }\n  publish dashboard_copy",
    );
    let p = parse(&text);
    let syntax: Vec<_> = p
        .diagnostics
        .iter()
        .filter(|d| d.code == dpplan_diagnostics::Code::Syntax)
        .collect();
    assert_eq!(syntax.len(), 3, "{syntax:#?}");
    assert!(
        syntax[2].message.contains("a time unit"),
        "{}",
        syntax[2].message
    );
    assert_eq!(p.plan.queries.len(), 2);
    assert_eq!(p.plan.publishes.len(), 1);
    assert_eq!(p.plan.broken.len(), 3);
}

#[test]
fn unclosed_item_does_not_swallow_the_next() {
    let text = "plan \"x\" {\n  query a {\n    count(v)\n  query b {\n    count(v)\n    schedule once\n  }\n}\n";
    let p = parse(text);
    assert_eq!(p.diagnostics.len(), 1, "{:#?}", p.diagnostics);
    assert_eq!(p.plan.queries.len(), 1);
    assert_eq!(p.plan.queries[0].name.value, "b");
}

#[test]
fn keywords_need_word_boundaries() {
    let text = "plan \"x\" {\n  privacy {\n    unit users by id\n  }\n}\n";
    let p = parse(text);
    assert_eq!(p.diagnostics.len(), 1);
    assert!(
        p.diagnostics[0].message.contains("`user`"),
        "{}",
        p.diagnostics[0].message
    );
}

#[test]
fn numbers_keep_nan_and_infinity_for_the_checker() {
    use crate::lower::parse_number;
    assert!(parse_number("NaN").is_nan());
    assert_eq!(parse_number("-inf"), f64::NEG_INFINITY);
    assert_eq!(parse_number("1e999"), f64::INFINITY);
    assert_eq!(parse_number("1_000"), 1000.0);
    assert_eq!(parse_number("2.5e-3"), 0.0025);
}

#[test]
fn missing_header_and_trailing_text() {
    let p = parse("query a { count(v) }\n");
    assert!(p
        .diagnostics
        .iter()
        .any(|d| d.code == dpplan_diagnostics::Code::Missing));
    assert_eq!(p.plan.queries.len(), 1);
    let p = parse("plan \"x\" {\n}\nquery a { count(v) }\n");
    assert!(p
        .diagnostics
        .iter()
        .any(|d| d.message.contains("after the end of the plan")));
    let p = parse("");
    assert_eq!(p.diagnostics.len(), 1);
    let p = parse("plan \"x\" {\n  query a { count(v) }\n");
    assert!(p
        .diagnostics
        .iter()
        .any(|d| d.message.contains("not closed")));
}

#[test]
fn never_panics_on_hostile_input() {
    let mut seed = 0x2545F4914F6CDD1Du64;
    let alphabet: Vec<char> =
        "plan\"{}()[],.:=<>/*\n \tqueryprivacydatasetpublish0123456789eé€😀\r\\"
            .chars()
            .collect();
    for _ in 0..3000 {
        let len = (seed % 120) as usize;
        let mut s = String::new();
        for _ in 0..len {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            s.push(alphabet[(seed % alphabet.len() as u64) as usize]);
        }
        let p = parse(&s);
        for d in &p.diagnostics {
            assert!(d.primary.span.end <= s.len() && d.primary.span.start <= d.primary.span.end);
        }
        // Cutting the sample anywhere must not panic either.
        let cut = (seed as usize) % SAMPLE.len();
        if SAMPLE.is_char_boundary(cut) {
            let _ = parse(&SAMPLE[..cut]);
        }
    }
    let deep = format!("plan \"x\" {{ query a {}", "{".repeat(10_000));
    let p = parse(&deep);
    assert!(p
        .diagnostics
        .iter()
        .any(|d| d.code == dpplan_diagnostics::Code::Limit));
}
