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

/// A `/*` that is never closed is an error wherever it starts, said once:
/// after the plan (found by the fuzzer: nothing was reported and `fmt`
/// refused the file), between items, before any plan, and inside an item
/// or the header (reported by that item's parse).
#[test]
fn an_unclosed_comment_is_an_error_said_once() {
    let closed = "plan \"x\" {\n  query a { count(v) }\n}\n";
    let unclosed = |p: &Parsed| {
        p.diagnostics
            .iter()
            .filter(|d| {
                d.message.contains("never closed") || d.message.contains("unclosed comment")
            })
            .count()
    };
    for text in [
        format!("{closed}/*// after the plan\n"),
        format!("{closed}/* x"),
        "plan \"x\" {\n  query a { count(v) }\n/* y\n}\n".to_string(),
        "/* plan \"x\" {}".to_string(),
    ] {
        let at = text.find("/*").expect("a comment");
        let p = parse(&text);
        assert_eq!(unclosed(&p), 1, "{text:?}: {:#?}", p.diagnostics);
        let d = p
            .diagnostics
            .iter()
            .find(|d| d.message.contains("never closed"))
            .expect("the scanner's error");
        assert_eq!(d.primary.span, Span::new(at, at + 2), "{text:?}");
        assert!(d.is_error());
        assert!(!p.plan.broken.is_empty(), "{text:?}: no guarantee for it");
    }
    for text in [
        "plan \"x\" {\n  query a { count(v) /* z\n".to_string(),
        "plan \"x\" /* {\n".to_string(),
    ] {
        let p = parse(&text);
        assert!(!p.diagnostics.is_empty(), "{text:?}");
        assert_eq!(unclosed(&p), 1, "{text:?}: {:#?}", p.diagnostics);
    }
    // the control: the same comments closed are not errors
    for text in [
        format!("{closed}/*// after the plan */\n"),
        "plan \"x\" {\n  query a { count(v) }\n/* y */\n}\n".to_string(),
    ] {
        assert!(parse(&text).diagnostics.is_empty(), "{text:?}");
    }
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

/// A plan whose `broken` queries, after the header, are `query q{i} {` lines
/// that never close, then one intact query.
fn many_broken(broken: usize) -> String {
    let mut text = String::from(
        "plan \"x\" {\n  privacy {\n    unit row\n    budget epsilon 1 delta 1e-6\n  }\n",
    );
    for i in 0..broken {
        text.push_str(&format!("  query q{i} {{\n"));
    }
    text.push_str("  query ok {\n    count(d)\n  }\n}\n");
    text
}

fn syntax_errors(p: &Parsed) -> usize {
    p.diagnostics
        .iter()
        .filter(|d| d.code == dpplan_diagnostics::Code::Syntax)
        .count()
}

#[test]
fn syntax_errors_are_capped_with_an_exact_count_of_the_rest() {
    let text = many_broken(MAX_SYNTAX_ERRORS + 150);
    let p = parse(&text);
    assert_eq!(p.diagnostics.len(), MAX_SYNTAX_ERRORS + 1);
    assert_eq!(syntax_errors(&p), MAX_SYNTAX_ERRORS + 1);
    let last = p.diagnostics.last().unwrap();
    assert_eq!(last.message, "150 more syntax errors not shown");
    assert!(last.help.as_deref().unwrap().contains("first 100"));
    // It points at the keyword of the first item not shown.
    let first_hidden = text
        .find(&format!("query q{MAX_SYNTAX_ERRORS} {{"))
        .unwrap();
    assert_eq!(last.primary.span, Span::new(first_hidden, first_hidden + 5));
    // Every broken item is still known to the checker, and the intact one is read.
    assert_eq!(p.plan.broken.len(), MAX_SYNTAX_ERRORS + 150);
    assert_eq!(p.plan.queries.len(), 1);
    assert_eq!(p.plan.queries[0].name.value, "ok");
}

#[test]
fn the_cap_is_exact_at_its_edge() {
    let p = parse(&many_broken(MAX_SYNTAX_ERRORS));
    assert_eq!(p.diagnostics.len(), MAX_SYNTAX_ERRORS);
    assert!(p.diagnostics.iter().all(|d| !d.message.contains("more")));
    let p = parse(&many_broken(MAX_SYNTAX_ERRORS + 1));
    assert_eq!(p.diagnostics.len(), MAX_SYNTAX_ERRORS + 1);
    assert_eq!(
        p.diagnostics.last().unwrap().message,
        "1 more syntax error not shown"
    );
    assert_eq!(p.plan.broken.len(), MAX_SYNTAX_ERRORS + 1);
}

#[test]
fn errors_below_the_cap_are_the_same_as_without_a_cap() {
    // The shown errors of a capped file are exactly those of the same file
    // cut after its last shown item: the cap changes nothing before it.
    let capped = parse(&many_broken(MAX_SYNTAX_ERRORS + 40));
    let uncapped = parse(&many_broken(MAX_SYNTAX_ERRORS));
    assert_eq!(
        capped.diagnostics[..MAX_SYNTAX_ERRORS],
        uncapped.diagnostics[..]
    );
    let d = &uncapped.diagnostics[0];
    assert!(
        d.message
            .starts_with("expected `noise`, `sensitivity`, `schedule`"),
        "{}",
        d.message
    );
    assert!(d
        .help
        .as_deref()
        .unwrap()
        .starts_with("This query could not be read"));
}

#[test]
fn scanner_errors_count_towards_the_cap_in_source_order() {
    // Stray braces before any header: one scanner error each.
    let text = "}\n".repeat(MAX_SYNTAX_ERRORS + 7);
    let p = parse(&text);
    assert_eq!(p.diagnostics.len(), MAX_SYNTAX_ERRORS + 1);
    let last = p.diagnostics.last().unwrap();
    assert_eq!(last.message, "7 more syntax errors not shown");
    let first_hidden = 2 * MAX_SYNTAX_ERRORS;
    assert_eq!(last.primary.span, Span::new(first_hidden, first_hidden + 1));

    // Scanner errors (here a second `plan` header, DP013, and stray braces
    // after the plan's end) and broken items interleave in source order.
    let mut text = many_broken(MAX_SYNTAX_ERRORS + 10);
    for i in [MAX_SYNTAX_ERRORS + 5, 50] {
        let at = text.find(&format!("  query q{i} {{")).unwrap();
        text.insert_str(at, "  plan \"y\" {\n");
    }
    text.push_str("}\n}\n");
    let p = parse(&text);
    assert_eq!(p.diagnostics.len(), MAX_SYNTAX_ERRORS + 1);
    // The scanner's diagnostics come first, as they always did.
    let duplicate = dpplan_diagnostics::Code::Duplicate;
    assert_eq!(p.diagnostics[0].code, duplicate);
    assert!(p.diagnostics[1..].iter().all(|d| d.code != duplicate));
    assert!(p.diagnostics[1..]
        .windows(2)
        .all(|w| w[0].primary.span.start <= w[1].primary.span.start));
    let q98 = text.find("  query q98 {").unwrap();
    let q99 = text.find("  query q99 {").unwrap();
    let last_shown = p.diagnostics[MAX_SYNTAX_ERRORS - 1].primary.span.start;
    assert!(q98 < last_shown && last_shown < q99);
    // Shown: q0 to q98 and the first second header. Not shown: q99 to
    // q109, the other header and the two stray braces.
    assert_eq!(
        p.diagnostics.last().unwrap().message,
        "14 more syntax errors not shown"
    );
    let first_hidden = text.find("  query q99 {").unwrap() + 2;
    assert_eq!(
        p.diagnostics.last().unwrap().primary.span,
        Span::new(first_hidden, first_hidden + 5)
    );
    // every broken item, and every scanner error (two headers, two braces)
    assert_eq!(p.plan.broken.len(), MAX_SYNTAX_ERRORS + 10 + 4);
}

#[test]
fn large_hostile_inputs_never_panic_and_stay_capped() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let alphabet: Vec<char> = "{}()[],.:=\"/*\\ \n\tqueryé€😀0123456789".chars().collect();
    let starts = [
        "query", "dataset", "privacy", "publish", "plan", "x", "}", "\"",
    ];
    for round in 0..5 {
        let mut text = String::from("plan \"x\" {\n");
        for _ in 0..2_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            text.push_str(starts[(seed % starts.len() as u64) as usize]);
            for _ in 0..(seed >> 40) % 30 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                text.push(alphabet[(seed % alphabet.len() as u64) as usize]);
            }
            text.push('\n');
        }
        let p = parse(&text);
        assert!(
            p.diagnostics.len() <= MAX_SYNTAX_ERRORS + 1,
            "round {round}"
        );
        for d in &p.diagnostics {
            assert!(d.primary.span.start <= d.primary.span.end);
            assert!(d.primary.span.end <= text.len());
            assert!(text.is_char_boundary(d.primary.span.start));
            assert!(text.is_char_boundary(d.primary.span.end));
        }
    }
}

#[test]
fn a_lone_carriage_return_ends_a_line_comment_for_the_scanner_too() {
    // Found by the fuzzer (fuzz/regressions/parse_check_fmt/fmt-refuses-*):
    // the grammar ends `//` at a lone `\r` (pest's NEWLINE), the scanner
    // only at `\n`, so `b` was a comment to the checker and code to the
    // formatter's whole-file parse.
    for text in ["// a\rb\nplan \"p\" {}\n", "plan \"p\" { // a\rb\n}\n"] {
        let p = parse(text);
        assert!(
            p.diagnostics.iter().any(|d| d.is_error()),
            "{text:?}: {:#?}",
            p.diagnostics
        );
        assert_eq!(
            <DpplanParser as pest::Parser<Rule>>::parse(Rule::file, text).is_ok(),
            p.diagnostics.iter().all(|d| !d.is_error()),
            "{text:?}: the scanner and the grammar disagree"
        );
    }
    // a `\r\n` line end is still one line end
    let p = parse("// a\r\nplan \"p\" {}\n");
    assert!(
        p.diagnostics.iter().all(|d| !d.is_error()),
        "{:#?}",
        p.diagnostics
    );
}

/// pest may report an error before a comment: "found …" names what comes
/// after the comment, and the diagnostic points there, not at the `/`.
#[test]
fn found_names_the_token_after_a_comment() {
    let head =
        "plan \"p\" {\n  privacy { unit row adjacency replace budget epsilon 1 delta 0 }\n  ";
    for (item, found, at) in [
        ("publish /* c */ }", "found `}`", "}"),
        ("query /* a */ /* b */ }", "found `}`", "}"),
        ("dataset /* two\n lines */ }", "found `}`", "}"),
        ("publish p = /* c */ }", "found `}`", "}"),
        ("publish // c\n}", "found the end of the line", "\n}"),
        ("publish // c\r\n}", "found the end of the line", "\r\n}"),
        (
            "publish /* never closed\n}",
            "found an unclosed comment `/*`",
            "/*",
        ),
        // no comment: as before
        ("publish }", "found `}`", "}"),
        ("publish\n}", "found the end of the line", "\n}"),
    ] {
        let text = format!("{head}{item}\n");
        let p = parse(&text);
        let d = p
            .diagnostics
            .iter()
            .find(|d| d.code == dpplan_diagnostics::Code::Syntax && d.message.contains("found"))
            .unwrap_or_else(|| panic!("{item:?}: {:#?}", p.diagnostics));
        assert!(d.message.ends_with(found), "{item:?}: {}", d.message);
        assert!(!d.message.contains("found `/`"), "{}", d.message);
        let start = head.len() + item.rfind(at).unwrap();
        assert_eq!(d.primary.span.start, start, "{item:?}: {}", d.message);
    }
}

#[test]
fn an_unclosed_string_ends_before_a_crlf_line_break() {
    // The lexer ends an unclosed string at the grammar's NEWLINE, so an
    // item never ends inside a `\r\n`.
    let text = "plan \"p\" {\r\n  publish a = \"b\r\n}\r\n";
    let p = parse(text);
    let publish = p
        .items
        .iter()
        .find(|i| i.kind == ItemKind::Publish)
        .unwrap();
    assert_eq!(
        &text[publish.span.start..publish.span.end],
        "publish a = \"b"
    );
    assert!(p.diagnostics.iter().any(|d| d.is_error()));
}

#[test]
fn a_line_comment_in_the_header_is_read_as_code() {
    // As the scanner always did: a `{` inside a `//` comment on the header's
    // line ends the header, and the header's rule then fails on it.
    let text = "plan \"p\" // {\n}\n";
    let p = parse(text);
    assert_eq!(p.items[0].kind, ItemKind::Header);
    assert_eq!(p.items[0].span, Span::new(0, 13));
    assert!(p.diagnostics.iter().any(|d| d.is_error()));
    // A block comment is skipped, over lines too.
    let p = parse("plan \"p\" /* {\n */ {\n}\n");
    assert_eq!(p.items[0].span, Span::new(0, 19));
    assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
}

#[test]
fn statements_give_the_layout_of_a_well_formed_plan() {
    let statements = statements(SAMPLE).unwrap();
    let of = |kind| statements.iter().filter(move |s| s.kind == kind);
    let text = |s: &Statement| &SAMPLE[s.span.start..s.span.end];
    let header: Vec<_> = of(StatementKind::PlanHeader).collect();
    assert_eq!(header.len(), 1);
    assert_eq!(text(header[0]), "plan \"traffic-dashboard\" {");
    let end: Vec<_> = of(StatementKind::PlanEnd).collect();
    assert_eq!(end.len(), 1);
    assert_eq!(end[0].span.start, SAMPLE.trim_end().len() - 1);
    // privacy, the dataset, its contribution, two queries
    let blocks: Vec<&str> = of(StatementKind::Block)
        .map(|s| text(s).split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        blocks,
        ["privacy", "dataset", "contribution", "query", "query"]
    );
    assert!(of(StatementKind::Block).all(|s| text(s).ends_with('}')));
    // 4 privacy, 4 dataset, 2 contribution, 3 + 3 query statements, 1 publish
    let simple: Vec<&str> = of(StatementKind::Simple)
        .map(|s| text(s).trim_end())
        .collect();
    assert_eq!(simple.len(), 17, "{simple:#?}");
    assert!(simple.contains(&"unit user by user_id"));
    assert!(simple.contains(&"publish dashboard_copy = daily_visits"));
    // in source order, each before what it holds
    assert!(statements
        .windows(2)
        .all(|w| w[0].span.start <= w[1].span.start));
    assert!(crate::statements("plan \"p\" {\n  query q {\n}\n").is_err());
}

#[test]
fn accuracy_requirements_parse_with_their_spans() {
    let text = "plan \"p\" {\n  query q {\n    count(d)\n    accuracy ci95 <= 500\n    accuracy std<=2.5e1\n  }\n}\n";
    parse_strict(text).unwrap();
    let p = parse(text);
    assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
    let q = &p.plan.queries[0];
    assert_eq!(q.accuracies().len(), 2);
    let a = &q.accuracies()[0];
    assert_eq!(a.measure.value, AccuracyMeasure::Ci95);
    assert_eq!(&text[a.measure.span.start..a.measure.span.end], "ci95");
    assert_eq!(a.value.value, 500.0);
    assert_eq!(&text[a.span.start..a.span.end], "accuracy ci95 <= 500");
    assert_eq!(q.accuracies()[1].measure.value, AccuracyMeasure::Std);
    assert_eq!(q.accuracies()[1].value.value, 25.0);
    // only `<=`, and only the two measures
    for bad in ["accuracy ci95 < 500", "accuracy ci90 <= 5", "accuracy <= 5"] {
        let t = text.replace("accuracy ci95 <= 500", bad);
        assert!(parse_strict(&t).is_err(), "{bad}");
        let p = parse(&t);
        assert!(
            p.diagnostics.iter().any(|d| d.message.contains("ci95")
                || d.message.contains("`<=`")
                || d.message.contains("std")),
            "{bad}: {:#?}",
            p.diagnostics
        );
    }
}

/// The one syntax error of `SAMPLE` with `from` replaced by `to`, and what
/// it suggests.
fn typo(from: &str, to: &str) -> (Diagnostic, String) {
    assert!(SAMPLE.contains(from), "{from}");
    let text = SAMPLE.replacen(from, to, 1);
    let p = parse(&text);
    assert_eq!(p.diagnostics.len(), 1, "{to}: {:#?}", p.diagnostics);
    let d = p.diagnostics[0].clone();
    let at = text[d.primary.span.start..d.primary.span.end].to_string();
    (d, at)
}

#[test]
fn a_misspelt_keyword_or_name_of_the_vocabulary_is_suggested() {
    for (from, to, meant) in [
        ("noise laplace", "noise laplce", "laplace"),
        ("noise gaussian", "noise gausian", "gaussian"),
        ("accountant best", "accountant bset", "best"),
        ("adjacency add_remove", "adjacency add_remvoe", "add_remove"),
        ("rows_per_unit 5", "rows_per_unt 5", "rows_per_unit"),
        ("count(visits)", "cuont(visits)", "count"),
        (": float in", ": flaot in", "float"),
        ("schedule every 1 day", "schedul every 1 day", "schedule"),
        ("for 365 days", "for 365 dyas", "days"),
        ("source \"data", "sorce \"data", "source"),
        ("budget epsilon", "budget epsilno", "epsilon"),
        ("  query page_mix", "  qeury page_mix", "query"),
        ("  dataset visits", "  datset visits", "dataset"),
    ] {
        let (d, at) = typo(from, to);
        let typed = to
            .split([' ', '(', ':'])
            .find(|w| at == *w)
            .unwrap_or_else(|| {
                panic!("{to}: the error points at `{at}`: {d:#?}");
            });
        assert_eq!(d.suggestion.as_deref(), Some(meant), "{typed}: {d:#?}");
        let help = d.help.as_deref().unwrap();
        assert!(
            help.starts_with(&format!("did you mean `{meant}`? ")),
            "{help}"
        );
    }
}

#[test]
fn a_word_far_from_every_keyword_allowed_there_gets_no_suggestion() {
    for (from, to) in [
        ("noise laplace", "noise poisson"),
        ("accountant best", "accountant moments"),
        ("rows_per_unit 5", "rows_total 5"),
        // close to a keyword, but not one allowed here (`sum` is an
        // aggregation, not a mechanism)
        ("noise laplace", "noise sum"),
        ("  dataset visits", "  tables visits"),
    ] {
        let (d, _) = typo(from, to);
        assert_eq!(d.suggestion, None, "{to}: {d:#?}");
        assert!(
            !d.help.as_deref().unwrap_or("").contains("did you mean"),
            "{d:#?}"
        );
    }
}

/// A windowed query with `release after 2 hours` and the same plan with a
/// query, a dataset and columns named `release` and `after`.
const DELAYED: &str = "plan \"p\" {\n  dataset trips {\n    column started_at : time\n  }\n  query hourly {\n    count(trips)\n    noise gaussian sigma 40\n    schedule every 1 hour for 7 days\n    window 1 hour\n    release after 2 hours\n  }\n}\n";

#[test]
fn release_after_parses_and_lowers_with_its_spans() {
    parse_strict(DELAYED).unwrap();
    let p = parse(DELAYED);
    assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
    let q = &p.plan.queries[0];
    assert_eq!(q.release_after().len(), 1);
    let r = &q.release_after()[0];
    assert_eq!(&DELAYED[r.span.start..r.span.end], "release after 2 hours");
    assert_eq!(&DELAYED[r.delay.span.start..r.delay.span.end], "2 hours");
    assert_eq!(
        &DELAYED[r.delay.amount.span.start..r.delay.amount.span.end],
        "2"
    );
    assert_eq!(r.delay.amount.value, 2.0);
    assert_eq!(r.delay.unit, TimeUnit::Hour);
    // the window is still the window
    assert_eq!(q.windows().len(), 1);
    // a second statement is kept for the checker (DP013), a negative or
    // fractional amount too (DP007)
    let twice = DELAYED.replace(
        "    release after 2 hours\n",
        "    release after 2 hours\n    release   after\n -1.5 minutes\n",
    );
    let p = parse(&twice);
    assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
    let r = p.plan.queries[0].release_after();
    assert_eq!(r.len(), 2);
    assert_eq!(r[1].delay.amount.value, -1.5);
    assert_eq!(r[1].delay.unit, TimeUnit::Minute);
    // one statement of the layout
    let layout = statements(DELAYED).unwrap();
    assert!(layout.iter().any(
        |s| &DELAYED[s.span.start..s.span.end] == "release after 2 hours"
            && s.kind == StatementKind::Simple
    ));
}

#[test]
fn names_release_and_after_still_parse_where_names_go() {
    let text = "plan \"p\" {\n  dataset release {\n    column after : time\n    column release : category { \"a\" }\n    column x : int in [0, 9]\n  }\n  query release {\n    sum(release.x where release == \"a\" by release)\n    noise laplace scale 4\n    schedule every 1 day for 2 days\n    window 1 day\n    release after 1 day\n  }\n  query after {\n    count(release where after > 3)\n    noise laplace scale 4\n    schedule once\n  }\n  publish after_copy = after\n  publish release_copy = release when release > 1\n}\n";
    parse_strict(text).unwrap();
    let p = parse(text);
    assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
    let names: Vec<&str> = p
        .plan
        .queries
        .iter()
        .map(|q| q.name.value.as_str())
        .collect();
    assert_eq!(names, ["release", "after"]);
    assert_eq!(p.plan.datasets[0].name.value, "release");
    assert_eq!(p.plan.queries[0].release_after().len(), 1);
    assert!(p.plan.queries[1].release_after().is_empty());
    assert_eq!(p.plan.publishes.len(), 2);
}

#[test]
fn a_malformed_release_after_is_one_error_at_its_place() {
    for (bad, at, expected) in [
        ("release after 2", "}", "a time unit"),
        ("release after hours", "hours", "a number"),
        ("release 2 hours", "2 hours", "`after`"),
        ("release after 2 hourz", "hourz", "a time unit"),
        ("release afterwards 2 hours", "afterwards", "`after`"),
    ] {
        let text = DELAYED.replace("release after 2 hours", bad);
        assert!(parse_strict(&text).is_err(), "{bad}");
        let p = parse(&text);
        assert_eq!(p.diagnostics.len(), 1, "{bad}: {:#?}", p.diagnostics);
        let d = &p.diagnostics[0];
        assert_eq!(d.code, dpplan_diagnostics::Code::Syntax);
        assert!(d.message.contains(expected), "{bad}: {}", d.message);
        // at the token that does not fit, within or right after the statement
        let stmt = text.find(bad).unwrap();
        assert!(d.primary.span.start > stmt, "{bad}: {d:#?}");
        assert!(
            text[d.primary.span.start..].starts_with(at),
            "{bad}: points at {:?}",
            &text[d.primary.span.start..d.primary.span.end]
        );
        // the broken query is left out, the plan still parses
        assert!(p.plan.queries.is_empty(), "{bad}");
        assert_eq!(p.plan.broken.len(), 1, "{bad}");
    }
    // a near miss of the keyword is suggested
    let text = DELAYED.replace("release after", "relase after");
    let p = parse(&text);
    assert_eq!(p.diagnostics.len(), 1, "{:#?}", p.diagnostics);
    assert_eq!(p.diagnostics[0].suggestion.as_deref(), Some("release"));
}

#[test]
fn postprocess_parses_and_lowers_with_its_steps() {
    let text = DELAYED.replace(
        "    release after 2 hours\n",
        "    release after 2 hours\n    postprocess nonnegative,round\n",
    );
    parse_strict(&text).unwrap();
    let p = parse(&text);
    assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
    let pp = p.plan.queries[0].postprocess();
    assert_eq!(pp.len(), 1);
    assert_eq!(
        &text[pp[0].span.start..pp[0].span.end],
        "postprocess nonnegative,round"
    );
    let steps: Vec<_> = pp[0].steps.iter().map(|s| s.value).collect();
    assert_eq!(steps, [PostStep::Nonnegative, PostStep::Round]);
    assert_eq!(
        &text[pp[0].steps[1].span.start..pp[0].steps[1].span.end],
        "round"
    );
    // a repeated step and a second statement are kept for the checker (DP013)
    let twice = text.replace(
        "postprocess nonnegative,round\n",
        "postprocess round, round\n    postprocess nonnegative\n",
    );
    let p = parse(&twice);
    assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
    assert_eq!(p.plan.queries[0].postprocess().len(), 2);
    assert_eq!(p.plan.queries[0].postprocess()[0].steps.len(), 2);
    // one statement of the layout
    assert!(statements(&text).unwrap().iter().any(|s| {
        &text[s.span.start..s.span.end] == "postprocess nonnegative,round"
            && s.kind == StatementKind::Simple
    }));
    // an unknown step is one error at its place, naming the steps
    for (bad, at) in [("postprocess clamp", "clamp"), ("postprocess round,", "}")] {
        let text = text.replace("postprocess nonnegative,round", bad);
        assert!(parse_strict(&text).is_err(), "{bad}");
        let p = parse(&text);
        assert_eq!(p.diagnostics.len(), 1, "{bad}: {:#?}", p.diagnostics);
        let d = &p.diagnostics[0];
        assert!(
            d.message.contains("`nonnegative` or `round`"),
            "{bad}: {}",
            d.message
        );
        assert!(
            text[d.primary.span.start..].trim_start().starts_with(at),
            "{bad}: {d:#?}"
        );
    }
}

#[test]
fn mechanism_parses_and_lowers() {
    use crate::ast::CumulativeMechanism;
    let text = DELAYED.replace(
        "    release after 2 hours\n",
        "    release after 2 hours\n    mechanism factorization\n",
    );
    parse_strict(&text).unwrap();
    let p = parse(&text);
    assert!(p.diagnostics.is_empty(), "{:#?}", p.diagnostics);
    let m = p.plan.queries[0].mechanisms();
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].value, CumulativeMechanism::Factorization);
    assert_eq!(
        &text[m[0].span.start..m[0].span.end],
        "mechanism factorization"
    );
    let tree = parse(&text.replace("factorization", "tree"));
    assert_eq!(
        tree.plan.queries[0].mechanisms()[0].value,
        CumulativeMechanism::Tree
    );
    assert!(statements(&text).unwrap().iter().any(|s| {
        &text[s.span.start..s.span.end] == "mechanism factorization"
            && s.kind == StatementKind::Simple
    }));
    // an unknown mechanism is one error at its place, naming both
    let bad = text.replace("mechanism factorization", "mechanism matrix");
    assert!(parse_strict(&bad).is_err());
    let p = parse(&bad);
    assert_eq!(p.diagnostics.len(), 1, "{:#?}", p.diagnostics);
    assert!(
        p.diagnostics[0]
            .message
            .contains("`tree` or `factorization`"),
        "{}",
        p.diagnostics[0].message
    );
}

/// Whitespace is a space, a tab, a line feed or a carriage return, in any
/// run (the grammar matches "\r\n" as "\r" then "\n"): the sample written
/// with CRLF line ends, tabs for its indentation and a lone CR between two
/// statements parses without a diagnostic to the same items as with LF
/// (the same names and values; the spans move with the extra bytes).
/// Negative control: a vertical tab, next to tab and line feed in ASCII but
/// not whitespace, is a syntax error.
#[test]
fn every_kind_of_line_end_and_indentation_is_whitespace() {
    let lf = parse(SAMPLE);
    assert!(lf.diagnostics.is_empty(), "{:#?}", lf.diagnostics);
    let crlf = SAMPLE.replace('\n', "\r\n").replace("    ", "\t");
    let crlf = crlf.replacen("\r\n", "\r", 3);
    let other = parse(&crlf);
    assert!(other.diagnostics.is_empty(), "{:#?}", other.diagnostics);
    let names = |p: &Parsed| -> Vec<String> {
        p.plan
            .queries
            .iter()
            .map(|q| q.name.value.clone())
            .collect()
    };
    assert_eq!(names(&lf), names(&other));
    let statements = |p: &Parsed| -> Vec<(usize, usize, usize)> {
        p.plan
            .queries
            .iter()
            .map(|q| (q.aggregates.len(), q.noises.len(), q.schedules.len()))
            .collect()
    };
    assert_eq!(statements(&lf), statements(&other));
    assert_eq!(lf.plan.datasets.len(), other.plan.datasets.len());
    assert_eq!(lf.plan.privacy.len(), other.plan.privacy.len());
    let vt = SAMPLE.replacen("    ", "\u{b}", 1);
    assert!(
        !parse(&vt).diagnostics.is_empty(),
        "a vertical tab must not be whitespace"
    );
}
