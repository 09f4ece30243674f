use super::*;

fn plans() -> Vec<(String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut out = Vec::new();
    for dir in ["examples", "tests/corpus", "tests/lsp/fixtures"] {
        let mut stack = vec![std::path::PathBuf::from(root).join(dir)];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "dpplan") {
                    out.push((
                        p.display().to_string(),
                        std::fs::read_to_string(&p).unwrap(),
                    ));
                }
            }
        }
    }
    assert!(out.len() >= 6, "examples and corpus found");
    out
}

#[test]
fn idempotent_and_meaning_preserving_on_every_plan() {
    for (path, text) in plans() {
        match format(&text) {
            Ok(once) => {
                let twice =
                    format(&once).unwrap_or_else(|e| panic!("{path}: second pass failed: {e}"));
                assert_eq!(once, twice, "{path}: formatting twice changed the text");
                assert_eq!(
                    meaning(&parse(&text).plan),
                    meaning(&parse(&once).plan),
                    "{path}"
                );
                // Every comment survives.
                let comments = |s: &str| -> Vec<String> {
                    lexer::tokenize(s)
                        .iter()
                        .filter(|t| t.is_comment())
                        .map(|t| t.text(s).trim_end().to_string())
                        .collect()
                };
                assert_eq!(comments(&text), comments(&once), "{path}: comments");
            }
            Err(FormatError::Syntax(_)) => {
                assert!(
                    !parse(&text).diagnostics.is_empty(),
                    "{path}: refused a file without syntax errors"
                );
            }
            Err(e) => panic!("{path}: {e}"),
        }
    }
}

#[test]
fn every_shipped_example_is_formatted() {
    // `dpplan fmt --check examples/` passes: the examples show the layout
    // the formatter writes (the release-plan tests read them as they are).
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut checked = 0;
    for (path, text) in plans()
        .into_iter()
        .filter(|(p, _)| p.starts_with(root) || p.contains("/examples/"))
    {
        let out = format(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(
            out == text,
            "{path} is not formatted: run `dpplan fmt {path}`"
        );
        checked += 1;
    }
    assert!(checked >= 6, "{checked} examples found");
    // Negative control: an example with its old hand alignment is not.
    let census = plans()
        .into_iter()
        .find(|(p, _)| p.ends_with("census.dpplan"))
        .unwrap()
        .1;
    let aligned = census.replacen("column region :", "column region   :", 1);
    assert_ne!(format(&aligned).unwrap(), aligned);
}

#[test]
fn canonical_layout() {
    let messy = "// head\nplan   \"p\"   {\nprivacy { unit user by uid adjacency add_remove\n\n\n budget epsilon 1 delta 1e-6 }\n  dataset d { column uid : id column x : int in [ 0 , 10 ] contribution { rows_per_unit 3 } }\n query q { sum( d.x ) noise laplace /* inline */ scale 10 // why\n schedule every 1 day for 7 days\n // trailing note\n }\npublish c = q when q>=3\n}\n";
    let out = format(messy).unwrap();
    let want = "// head
plan \"p\" {
  privacy {
    unit user by uid
    adjacency add_remove

    budget epsilon 1 delta 1e-6
  }
  dataset d {
    column uid : id
    column x : int in [0, 10]
    contribution {
      rows_per_unit 3
    }
  }
  query q {
    sum(d.x)
    noise laplace /* inline */ scale 10 // why
    schedule every 1 day for 7 days
    // trailing note
  }
  publish c = q when q >= 3
}
";
    assert_eq!(out, want);
    assert_eq!(format(&out).unwrap(), out);
}

#[test]
fn comment_inside_a_statement_forces_a_continuation_line() {
    let text = "plan \"p\" {\n  query q {\n    noise laplace // the scale:\n    scale 10\n  }\n}\n";
    let out = format(text).unwrap();
    assert_eq!(
        out,
        "plan \"p\" {\n  query q {\n    noise laplace // the scale:\n      scale 10\n  }\n}\n"
    );
    assert_eq!(format(&out).unwrap(), out);
}

#[test]
fn crlf_is_kept() {
    let text = "plan \"p\" {\r\n privacy { unit row }\r\n}\r\n";
    let out = format(text).unwrap();
    assert_eq!(
        out,
        "plan \"p\" {\r\n  privacy {\r\n    unit row\r\n  }\r\n}\r\n"
    );
}

#[test]
fn unicode_in_strings_and_comments() {
    let text =
        "plan \"données 😀\" { // 日本語\n dataset d { column c : category { \"é\",\"漢字\" } } }";
    let out = format(text).unwrap();
    assert_eq!(out, "plan \"données 😀\" { // 日本語\n  dataset d {\n    column c : category { \"é\", \"漢字\" }\n  }\n}\n");
}

#[test]
fn syntax_errors_leave_the_text_unchanged() {
    let text = "plan \"p\" {\n  query q {\n    count(d\n  }\n}\n";
    assert!(matches!(format(text), Err(FormatError::Syntax(_))));
    assert!(matches!(format(""), Err(FormatError::Syntax(_))));
    assert!(matches!(
        format("plan \"p\" {\n"),
        Err(FormatError::Syntax(_))
    ));
}

/// Language v2: filters (with a parenthesised group after `and`), bins,
/// several keys and `distinct` keep their meaning and reach a fixed point;
/// a call keeps its `(` on its name, a group after `and`/`or`/`not`/`where`
/// gets a space.
#[test]
fn filters_bins_keys_and_distinct() {
    let text = "plan \"t\" {\n  privacy { unit row adjacency replace budget epsilon 10 }\n  dataset trips {\n    column city : category { \"Madrid\", \"Lisbon\" }\n    column fare : float in [0, 100]\n    column length_km : float\n    column rider_id : id\n  }\n  query a { count(trips where city == \"Madrid\" and(fare > 10 or not(city in {\"Lisbon\"}))) noise laplace scale 1 schedule once }\n  query b { histogram(trips where fare <= 3 by bins( length_km , [0, 1, 2.5, 5] outside clamp ), city) noise laplace scale 1 schedule once }\n  query c { count(distinct trips.rider_id) noise laplace scale 1 schedule once }\n}\n";
    let out = format(text).unwrap();
    assert!(
        out.contains("    count(trips where city == \"Madrid\" and (fare > 10 or not (city in { \"Lisbon\" })))\n"),
        "{out}"
    );
    assert!(
        out.contains("    histogram(trips where fare <= 3 by bins(length_km, [0, 1, 2.5, 5] outside clamp), city)\n"),
        "{out}"
    );
    assert!(
        out.contains("    count(distinct trips.rider_id)\n"),
        "{out}"
    );
    assert_eq!(format(&out).unwrap(), out);
}

/// `cumulative count(…)` is one statement: it stays on one line (its
/// aggregation is not a statement of its own).
#[test]
fn a_cumulative_count_is_one_statement() {
    let messy = "plan \"p\" {\nquery q { cumulative   count( d ) noise laplace scale 10\n schedule every 1 day for 7 days }\n}\n";
    let want = "plan \"p\" {\n  query q {\n    cumulative count(d)\n    noise laplace scale 10\n    schedule every 1 day for 7 days\n  }\n}\n";
    assert_eq!(format(messy).unwrap(), want);
    assert_eq!(format(want).unwrap(), want);
}

/// `release after <duration>` is one statement on its own line, kept as
/// written (no unit is rewritten), and formatting it again changes nothing;
/// a query named `release` keeps its name.
#[test]
fn release_after_is_one_statement() {
    let messy = "plan \"p\" {\nquery release { count( d ) noise laplace scale 10\n schedule every 1 hour for 7 days window 1 hour release\n   after   90  minutes }\n}\n";
    let want = "plan \"p\" {\n  query release {\n    count(d)\n    noise laplace scale 10\n    schedule every 1 hour for 7 days\n    window 1 hour\n    release after 90 minutes\n  }\n}\n";
    assert_eq!(format(messy).unwrap(), want);
    assert_eq!(format(want).unwrap(), want);
}

/// `same_meaning` (item by item, what `format` checks) agrees with the whole
/// plan's `meaning` on every plan and its formatted text, and tells a change
/// of any item apart (negative controls: a number, a name, a dropped item).
#[test]
fn same_meaning_is_meaning_item_by_item() {
    for (path, text) in plans() {
        let Ok(once) = format(&text) else { continue };
        let (a, b) = (parse(&text).plan, parse(&once).plan);
        assert!(same_meaning(&a, &b), "{path}");
        assert_eq!(meaning(&a) == meaning(&b), same_meaning(&a, &b), "{path}");
        let mut changed = b.clone();
        if let Some(q) = changed.queries.first_mut() {
            q.name.value.push('x');
            assert!(!same_meaning(&a, &changed), "{path}: a renamed query");
        }
        let mut changed = b.clone();
        if changed.datasets.pop().is_some() {
            assert!(!same_meaning(&a, &changed), "{path}: a dropped dataset");
        }
        let mut changed = b.clone();
        if let Some(p) = changed
            .privacy
            .first_mut()
            .and_then(|p| p.budgets.first_mut())
        {
            p.epsilon.value *= 2.0;
            assert!(!same_meaning(&a, &changed), "{path}: another budget");
        }
    }
}
