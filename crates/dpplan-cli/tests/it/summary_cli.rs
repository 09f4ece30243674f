//! `dpplan check`'s terminal summary as a newcomer reads it: the accountant
//! by name with why (its numerical detail behind `--verbose`), what δ means
//! said once, a plan's diagnostics under its own header, and `account`'s
//! text saying "not applicable" once.

use crate::support::{dpplan_at_root, text};

fn check(args: &[&str]) -> String {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    text(&dpplan_at_root(&all).stdout)
}

const DELTA: &str = "δ is the slack of the (ε, δ) guarantee";

#[test]
fn the_accountant_is_named_with_why_and_its_detail_is_verbose() {
    let plain = check(&["examples"]);
    let verbose = check(&["examples", "--verbose"]);
    // The PLD detail's numerical internals only with --verbose.
    assert!(!plain.contains("Higham"), "{plain}");
    assert!(!plain.contains("mass at ∞"), "{plain}");
    assert!(verbose.contains("Higham"), "{verbose}");
    for line in plain.lines().filter(|l| l.contains("accountant:")) {
        assert!(
            line.contains("that apply") || line.contains("requests"),
            "{line}"
        );
        assert!(line.chars().count() <= 140, "{line}");
    }
    // Every plan's accountant line names the JSON's accountant of its total.
    let json: serde_json::Value =
        serde_json::from_str(&check(&["examples", "--format", "json"])).unwrap();
    let names: Vec<String> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["accountant"].is_null())
        .map(|f| {
            let a = f["accountant"].as_str().unwrap();
            f["accountants"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["accountant"] == a)
                .unwrap()["accountant_name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let shown: Vec<&str> = plain
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("accountant: "))
        .map(|l| l.split(" — ").next().unwrap())
        .collect();
    assert_eq!(shown, names);
}

#[test]
fn delta_is_explained_once_and_only_where_there_is_one() {
    let all = check(&["examples"]);
    assert_eq!(all.matches(DELTA).count(), 1, "{all}");
    assert_eq!(check(&["examples", "--verbose"]).matches(DELTA).count(), 1);
    // negative control: a pure-ε plan has no δ to explain
    let pure = check(&["examples/app-events/app-events.dpplan"]);
    assert!(pure.contains("ε = 1 over 2 releases"), "{pure}");
    assert_eq!(pure.matches(DELTA).count(), 0, "{pure}");
}

#[test]
fn a_plans_diagnostics_follow_its_own_header() {
    let all = check(&["examples"]);
    let header = all.find("plan \"app-events\"").unwrap();
    let warning = all.find("warning[DP008]").unwrap();
    let previous = all.find("plan \"accuracy-targets\"").unwrap();
    assert!(previous < header && header < warning, "{all}");
    assert!(all[..warning].ends_with("\n\n"), "{all}");
}

#[test]
fn account_says_not_applicable_once() {
    let out = text(&dpplan_at_root(&["account", "examples/app-events/app-events.dpplan"]).stdout);
    assert!(
        out.contains("not applicable: exact Gaussian accounting"),
        "{out}"
    );
    assert!(!out.contains("not applicable: not applicable"), "{out}");
}

/// Display width in columns (every character the summary prints is one
/// column wide: box drawing, Greek, sub- and superscripts).
fn columns(line: &str) -> usize {
    line.chars().count()
}

#[test]
fn check_examples_at_100_columns_has_no_wider_line() {
    let fitted = check(&["examples", "--width", "100"]);
    let wide: Vec<&str> = fitted.lines().filter(|l| columns(l) > 100).collect();
    assert!(wide.is_empty(), "{wide:#?}");
    insta::assert_snapshot!("check_examples_width_100", fitted);
    // COLUMNS is the width when --width is not given
    let by_env = dpplan_at_root_env(&["check", "examples"], &[("COLUMNS", "100")]);
    assert_eq!(by_env, fitted);
    // at 60 columns too, and nothing is lost: every query is still named
    let narrow = check(&["examples", "--width", "60"]);
    assert!(narrow.lines().all(|l| columns(l) <= 60), "{narrow}");
    for name in ["daily_trips", "hourly_district_trips", "fare_quantiles"] {
        assert!(narrow.contains(&format!("{name} — ")), "{name}: {narrow}");
    }
    // negative control: without a limit the same summary is wider
    let unlimited = check(&["examples", "--width", "0"]);
    assert!(unlimited.lines().any(|l| columns(l) > 100));
    assert!(unlimited.contains("  L1  ") && !fitted.contains("L1, L2 left out to fit 0"));
}

fn dpplan_at_root_env(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_dpplan"));
    cmd.args(args)
        .current_dir(crate::support::root())
        .env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    text(&cmd.output().unwrap().stdout)
}

/// A printed number stands for `x`: within the six significant digits it
/// shows, and never below `x` by more than floating-point rounding.
fn stands_for(printed: &str, x: f64) -> bool {
    let Ok(p) = printed.trim().parse::<f64>() else {
        return false;
    };
    (p - x).abs() <= 1e-5 * x.abs() && p >= x * (1.0 - 1e-12)
}

/// The ε of a cost cell: `0.5`, `ε=0.5 δ=1e-7` or `0.81 (all windows)`.
fn cell_epsilon(cell: &str) -> &str {
    let cell = cell.strip_prefix("ε=").unwrap_or(cell);
    cell.split(' ').next().unwrap()
}

#[test]
fn every_number_in_the_summary_is_the_jsons() {
    // the comparison itself: a value a digit off does not stand for x
    assert!(stands_for("0.5", 0.5) && stands_for("1.2", 1.2000000000000002));
    assert!(!stands_for("0.499999", 0.5) && !stands_for("0.6", 0.5));
    let human = check(&["examples", "--width", "0"]);
    let json: serde_json::Value =
        serde_json::from_str(&check(&["examples", "--format", "json"])).unwrap();
    let mut compared = 0;
    for f in json["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        let block = human
            .split("\nplan \"")
            .find(|b| b.contains(&format!("({path})")))
            .unwrap_or_else(|| panic!("{path} not in {human}"));
        // the total line
        let total = block
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("total: ε = "))
            .unwrap();
        let eps = total.split([',', ' ']).next().unwrap();
        assert!(
            stands_for(eps, f["epsilon"].as_f64().unwrap()),
            "{path}: {total}"
        );
        compared += 1;
        // the table: rows between the rule and the first blank line
        let rows: Vec<Vec<&str>> = block
            .lines()
            .skip_while(|l| !l.trim_start().starts_with('─'))
            .skip(1)
            .take_while(|l| !l.trim().is_empty() && !l.trim_start().starts_with('('))
            .map(|l| {
                let cells: Vec<&str> = l[2..]
                    .split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect();
                if l[2..].starts_with(' ') {
                    // a further part of the query above: no name, no count
                    [vec![""; 2], cells].concat()
                } else {
                    cells
                }
            })
            .collect();
        let mut rows = rows.iter().peekable();
        for q in f["queries"].as_array().unwrap() {
            let row = rows.next().unwrap();
            assert_eq!(row[0], q["name"].as_str().unwrap(), "{path}");
            assert_eq!(row[1], q["releases"].to_string(), "{path}");
            for (k, part) in q["parts"].as_array().unwrap().iter().enumerate() {
                let cells = if k == 0 { row } else { rows.next().unwrap() };
                for (i, field) in [
                    (3, "l1"),
                    (4, "l2"),
                    (5, "noise_std"),
                    (6, "ci95_half_width"),
                ] {
                    let x = part[field].as_f64().unwrap();
                    assert!(
                        stands_for(cells[i].trim(), x),
                        "{path} {}: {field} {} for {x}",
                        row[0],
                        cells[i]
                    );
                    compared += 1;
                }
            }
            for (i, field) in [(7, "per_release"), (8, "total")] {
                let x = q[field]["epsilon"].as_f64().unwrap();
                assert!(
                    stands_for(cell_epsilon(row[i]), x),
                    "{path} {}: {field} {} for {x}",
                    row[0],
                    row[i]
                );
                compared += 1;
            }
        }
    }
    assert!(compared > 100, "{compared}");
}

/// A plan with a fixed Laplace count (ε = 1/b·… alone) and an `auto` sum,
/// under a pure budget `eps`.
fn auto_plan(eps: &str) -> String {
    format!(
        r#"plan "auto-fit" {{
  privacy {{
    unit row
    adjacency add_remove
    budget epsilon {eps}
    accountant basic
  }}
  dataset responses {{
    source "data/responses.csv"
    column answer : int in [0, 1]
  }}
  query fixed_count {{
    count(responses)
    noise laplace scale 2
    schedule 3 times
  }}
  query answers {{
    sum(responses.answer)
    noise laplace auto
    schedule once
  }}
}}
"#
    )
}

fn check_text(text: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auto.dpplan");
    std::fs::write(&path, text).unwrap();
    let o = crate::support::dpplan_in(dir.path(), &["check", "auto.dpplan"]);
    (o.status.success(), text_of(&o))
}

fn text_of(o: &std::process::Output) -> String {
    text(&o.stdout) + &text(&o.stderr)
}

#[test]
fn auto_that_cannot_fit_names_its_queries_what_the_others_spend_and_the_budget_that_fits() {
    // the fixed count spends 3 × 1/2 = 1.5 alone (basic composition)
    let (ok, out) = check_text(&auto_plan("1"));
    assert!(!ok, "{out}");
    assert!(
        out.contains("no noise level for the `auto` queries (`answers`)"),
        "{out}"
    );
    assert!(
        out.contains("the other queries alone spend ε = 1.5"),
        "{out}"
    );
    assert!(out.contains("the budget must be above ε = 1.5"), "{out}");
    // at the figure it names: still no fit; just above it: a fit
    let (ok, out) = check_text(&auto_plan("1.5"));
    assert!(
        !ok && out.contains("the budget must be above ε = 1.5"),
        "{out}"
    );
    let (ok, out) = check_text(&auto_plan("1.51"));
    assert!(ok, "{out}");
    assert!(!out.contains("no noise level"), "{out}");
}

#[test]
fn values_off_a_short_decimal_by_rounding_are_shown_as_it_and_all_digits_keeps_them() {
    let plan = "examples/trip-fares/trip-fares.dpplan";
    let short = check(&[plan, "--width", "0"]);
    let all = check(&[plan, "--width", "0", "--all-digits"]);
    // b = 3 / (1.2 / 3 · …) is 7.500000000000001 as a float
    assert!(
        short.contains("b=7.5 (from ε)") && !short.contains("7.50001"),
        "{short}"
    );
    assert!(all.contains("b=7.500000000000001"), "{all}");
    // the rounding is said once, and not where every digit is printed
    assert_eq!(
        short.matches("floating-point rounding").count(),
        1,
        "{short}"
    );
    assert_eq!(all.matches("floating-point rounding").count(), 0, "{all}");
    // negative control: a plan with no such value says nothing of it
    let plain = check(&["examples/app-events/app-events.dpplan", "--width", "0"]);
    assert!(!plain.contains("floating-point rounding"), "{plain}");
}
