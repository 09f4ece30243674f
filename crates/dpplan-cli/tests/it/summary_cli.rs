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
