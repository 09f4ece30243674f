//! `dpplan diff` through the real binary: snapshots of every format on
//! pairs made from the examples, the JSON against docs/diff.schema.json,
//! every number against `dpplan check --format json` of each side, exit
//! codes with negative controls, and `--git` against a real repository.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{dpplan_in, root};

fn example(name: &str) -> String {
    std::fs::read_to_string(root().join(format!("examples/{name}/{name}.dpplan"))).unwrap()
}

/// `text` with `from` replaced once (it must occur).
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "`{from}` not in the plan");
    text.replacen(from, to, 1)
}

/// `text` without the item that starts with `start` (up to its closing brace).
fn without(text: &str, start: &str) -> String {
    let s = text.find(start).expect("item");
    let e = s + text[s..].find("\n  }\n").expect("end of item") + 5;
    format!("{}{}", &text[..s], &text[e..])
}

/// An old and a new plan written into a fresh directory.
struct Pair {
    dir: tempfile::TempDir,
}

fn pair(old: &str, new: &str) -> Pair {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old.dpplan"), old).unwrap();
    std::fs::write(dir.path().join("new.dpplan"), new).unwrap();
    Pair { dir }
}

impl Pair {
    fn diff(&self, extra: &[&str]) -> Output {
        let mut args = vec!["diff", "old.dpplan", "new.dpplan"];
        args.extend_from_slice(extra);
        dpplan_in(self.dir.path(), &args)
    }
    fn json(&self) -> Value {
        let o = self.diff(&["--format", "json"]);
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&o.stderr));
        })
    }
    fn check(&self, which: &str) -> Value {
        let o = dpplan_in(self.dir.path(), &["check", "--format", "json", which]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["files"][0].clone()
    }
}

fn out(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The pairs the snapshots and the number checks run on.
fn pairs() -> Vec<(&'static str, String, String)> {
    let census = example("census");
    let rr = example("repeated-release");
    let web = example("web-analytics");
    let retail = example("retail-mixed");
    vec![
        (
            "query_removed",
            census.clone(),
            without(&census, "  query by_tenure"),
        ),
        (
            "noise_doubled",
            rr.clone(),
            edit(&rr, "gaussian sigma 8", "gaussian sigma 16"),
        ),
        (
            "bound_doubled",
            web.clone(),
            edit(&web, "rows_per_unit 5 ", "rows_per_unit 10 "),
        ),
        (
            "unit_changed",
            rr.clone(),
            edit(
                &edit(&rr, "unit row ", "unit event "),
                "delta 1e-6",
                "delta 1e-7",
            ),
        ),
        (
            "schedule_and_query_added",
            retail.clone(),
            edit(
                &edit(&retail, "for 4 weeks", "for 8 weeks"),
                "  publish revenue_report",
                "  query store_mix {\n    histogram(orders by store)\n    noise laplace scale 400\n    schedule once\n  }\n\n  publish revenue_report",
            ),
        ),
    ]
}

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("docs/diff.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("a valid schema")
}

#[test]
fn snapshots_of_every_format() {
    for (name, old, new) in pairs() {
        let p = pair(&old, &new);
        let human = p.diff(&[]);
        assert!(human.status.code().is_some(), "{name}");
        insta::assert_snapshot!(format!("human__{name}"), out(&human));
        insta::assert_snapshot!(format!("md__{name}"), out(&p.diff(&["--format", "md"])));
        let json = p.diff(&["--format", "json"]);
        insta::assert_snapshot!(format!("json__{name}"), out(&json));
    }
}

#[test]
fn the_json_matches_its_schema() {
    let v = schema();
    let rr = example("repeated-release");
    let mut all = pairs();
    all.push(("identical", rr.clone(), rr.clone()));
    for (name, old, new) in all {
        let doc = pair(&old, &new).json();
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
    // the schema is strict enough to fail: a missing field is refused
    let mut doc = pair(&rr, &rr).json();
    doc.as_object_mut().unwrap().remove("guarantee");
    assert!(!v.is_valid(&doc));
}

fn f(v: &Value) -> Option<f64> {
    v.as_f64()
}

#[test]
fn every_number_equals_dpplan_check_of_each_side() {
    for (name, old, new) in pairs() {
        let p = pair(&old, &new);
        let d = p.json();
        for (side, file) in [("old", "old.dpplan"), ("new", "new.dpplan")] {
            let c = p.check(file);
            // the plan's own claim
            assert_eq!(d[side]["claim"]["epsilon"], c["epsilon"], "{name} {side}");
            assert_eq!(d[side]["claim"]["delta"], c["delta"], "{name} {side}");
            assert_eq!(
                d[side]["claim"]["accountant"], c["accountant"],
                "{name} {side}"
            );
            assert_eq!(d[side]["budget"], c["budget"], "{name} {side}");
            assert_eq!(d[side]["releases"], c["releases"], "{name} {side}");
            // every accountant, when both sides share δ (otherwise both are
            // recomputed at the smaller δ: see below)
            if d["guarantee"]["recomputed"] == Value::Bool(false) {
                for a in c["accountants"].as_array().unwrap() {
                    let pairs = d["guarantee"]["accountants"].as_array().unwrap();
                    let mine = pairs
                        .iter()
                        .find(|x| x["accountant"] == a["accountant"])
                        .unwrap();
                    assert_eq!(
                        mine[side], a["epsilon"],
                        "{name} {side} {}",
                        a["accountant"]
                    );
                }
                let chosen = d["guarantee"]["accountant"].clone();
                let own = c["accountants"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|a| a["accountant"] == chosen)
                    .unwrap_or_else(|| panic!("{name} {side}: {chosen} in {c:#}"));
                assert_eq!(d["guarantee"][format!("{side}_epsilon")], own["epsilon"]);
            }
            // each changed query: its ε alone, and every changed part field
            for q in d["queries"].as_array().unwrap() {
                let cq = c["queries"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["name"] == q["name"]);
                match cq {
                    Some(cq) => {
                        assert_eq!(q["epsilon_alone"][side], cq["total"]["epsilon"], "{name}");
                        for part in q["parts"].as_array().unwrap() {
                            let Some(cp) = cq["parts"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .find(|x| x["role"] == part["role"])
                            else {
                                continue;
                            };
                            for ch in part["changes"].as_array().unwrap() {
                                let field = ch["field"].as_str().unwrap();
                                let theirs = match field {
                                    "noise" => cp["mechanism"]["kind"].clone(),
                                    "scale" | "sigma" | "calibration" => {
                                        cp["mechanism"][field].clone()
                                    }
                                    _ => cp[field].clone(),
                                };
                                assert_eq!(ch[side], theirs, "{name} {side} {field}");
                            }
                        }
                    }
                    None => assert!(q["epsilon_alone"][side].is_null(), "{name}"),
                }
            }
        }
        // the change is the difference of the two
        let g = &d["guarantee"];
        if let (Some(o), Some(n)) = (f(&g["old_epsilon"]), f(&g["new_epsilon"])) {
            assert_eq!(f(&g["change"]), Some(n - o), "{name}");
        }
    }
}

#[test]
fn a_delta_change_is_compared_at_the_smaller_delta() {
    let rr = example("repeated-release");
    let p = pair(&rr, &edit(&rr, "delta 1e-6", "delta 1e-7"));
    let d = p.json();
    assert_eq!(d["guarantee"]["recomputed"], Value::Bool(true));
    assert_eq!(f(&d["guarantee"]["delta"]), Some(1e-7));
    // same releases at the same δ: the same ε; the old side at 1e-7 is
    // larger than its own claim at 1e-6
    assert_eq!(d["guarantee"]["change"], serde_json::json!(0.0));
    let own = f(&p.check("old.dpplan")["epsilon"]).unwrap();
    assert!(f(&d["guarantee"]["old_epsilon"]).unwrap() > own);
    // and it equals the new plan's own claim, made at 1e-7 with the same releases
    assert_eq!(
        d["guarantee"]["new_epsilon"],
        p.check("new.dpplan")["epsilon"]
    );
    let c = d["contract"].as_array().unwrap();
    assert!(c
        .iter()
        .any(|x| x["field"] == "delta" && x["breaks_comparison"] == Value::Bool(true)));
}

#[test]
fn exit_codes_with_fail_on() {
    let rr = example("repeated-release");
    let web = example("web-analytics");
    // identical plans: an empty diff and exit 0
    let same = pair(&rr, &rr);
    let o = same.diff(&["--fail-on", "increase,contract"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(out(&o).contains("no change"));
    let d = same.json();
    assert_eq!(d["identical"], Value::Bool(true));
    assert!(d["queries"].as_array().unwrap().is_empty());
    // more noise lowers ε: not an increase
    let p = pair(&rr, &edit(&rr, "sigma 8", "sigma 16"));
    assert_eq!(p.diff(&["--fail-on", "increase"]).status.code(), Some(0));
    assert_eq!(p.diff(&["--fail-on", "contract"]).status.code(), Some(0));
    // without --fail-on an increase does not fail by itself
    let p = pair(&rr, &edit(&rr, "sigma 8", "sigma 7"));
    assert_eq!(p.diff(&[]).status.code(), Some(0));
    let o = p.diff(&["--fail-on", "increase"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("--fail-on increase"), "{}", err(&o));
    // a doubled contribution bound raises ε: fails both ways; the new plan
    // is over budget, so it exits 1 even without --fail-on
    let p = pair(&web, &edit(&web, "rows_per_unit 5 ", "rows_per_unit 10 "));
    let o = p.diff(&[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("exceeds its budget"));
    assert!(out(&o).contains("OVER its budget"));
    // a budget raise: a contract change, not an increase
    let p = pair(&rr, &edit(&rr, "epsilon 2.5", "epsilon 3"));
    assert_eq!(p.diff(&["--fail-on", "increase"]).status.code(), Some(0));
    assert_eq!(p.diff(&["--fail-on", "contract"]).status.code(), Some(1));
}

#[test]
fn a_side_with_errors_is_reported_and_nothing_is_compared() {
    let census = example("census");
    let broken = edit(&census, "sigma 12", "sigma -1");
    for (old, new, which) in [(&census, &broken, "new"), (&broken, &census, "old")] {
        let o = pair(old, new).diff(&["--format", "json"]);
        assert_eq!(o.status.code(), Some(1));
        assert!(out(&o).is_empty(), "no diff is printed");
        let e = err(&o);
        assert!(e.contains(&format!("the {which} plan")), "{e}");
        assert!(e.contains("error["), "the diagnostics are rendered: {e}");
    }
    // `noise … auto` that fits no budget: DP011 without a claim, not compared
    let retail = example("retail-mixed");
    let o = pair(&retail, &edit(&retail, "sigma 1500", "sigma 150")).diff(&[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(out(&o).is_empty());
    assert!(err(&o).contains("makes no claim"), "{}", err(&o));
    // IO: a missing file is exit 2
    let p = pair(&census, &census);
    let o = dpplan_in(p.dir.path(), &["diff", "old.dpplan", "nope.dpplan"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("nope.dpplan"));
    // usage: one plan without --git
    let o = dpplan_in(p.dir.path(), &["diff", "old.dpplan"]);
    assert_eq!(o.status.code(), Some(2));
}

/// git, which these tests need: a missing git fails them with a message.
fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args([
            "-c",
            "user.name=dpplan test",
            "-c",
            "user.email=test@example.org",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("this test needs git (`git {}`): {e}", args.join(" ")));
    assert!(o.status.success(), "git {}: {}", args.join(" "), err(&o));
}

#[test]
fn git_compares_a_plan_with_its_committed_version() {
    let rr = example("repeated-release");
    let repo = tempfile::tempdir().unwrap();
    let sub = repo.path().join("plans");
    std::fs::create_dir(&sub).unwrap();
    git(repo.path(), &["init", "-q"]);
    std::fs::write(sub.join("p.dpplan"), &rr).unwrap();
    git(repo.path(), &["add", "."]);
    git(repo.path(), &["commit", "-q", "-m", "first"]);
    std::fs::write(sub.join("p.dpplan"), edit(&rr, "sigma 8", "sigma 7")).unwrap();
    // from the repository root, from the plan's directory and from elsewhere
    for (cwd, path) in [
        (repo.path().to_path_buf(), "plans/p.dpplan".to_string()),
        (sub.clone(), "p.dpplan".to_string()),
        (
            std::env::temp_dir(),
            sub.join("p.dpplan").display().to_string(),
        ),
    ] {
        let o = dpplan_in(&cwd, &["diff", &path, "--git", "HEAD", "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", err(&o));
        let d: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(d["old"]["label"], "HEAD:plans/p.dpplan");
        assert_eq!(d["queries"][0]["name"], "yes_count");
        assert_eq!(d["verdict"]["increase"], Value::Bool(true));
    }
    // the same answer as two files
    let two = pair(&rr, &edit(&rr, "sigma 8", "sigma 7")).json();
    let o = dpplan_in(
        repo.path(),
        &[
            "diff",
            "plans/p.dpplan",
            "--git",
            "HEAD",
            "--format",
            "json",
        ],
    );
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["guarantee"], two["guarantee"]);
    assert_eq!(d["queries"], two["queries"]);
    // a ref that does not exist
    let o = dpplan_in(
        repo.path(),
        &["diff", "plans/p.dpplan", "--git", "nosuchref"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("git cannot show `nosuchref:plans/p.dpplan`"),
        "{}",
        err(&o)
    );
    // a file that is not in the commit
    std::fs::write(sub.join("new.dpplan"), &rr).unwrap();
    let o = dpplan_in(repo.path(), &["diff", "plans/new.dpplan", "--git", "HEAD"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("HEAD:plans/new.dpplan"), "{}", err(&o));
    // a ref that looks like an option is refused, not passed to git
    let o = dpplan_in(repo.path(), &["diff", "plans/p.dpplan", "--git=--output=x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!repo.path().join("x").exists());
    // outside a repository
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("p.dpplan"), &rr).unwrap();
    let o = dpplan_in(outside.path(), &["diff", "p.dpplan", "--git", "HEAD"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("not in a git repository"), "{}", err(&o));
    // git missing
    let o = crate::support::command()
        .args(["diff", "plans/p.dpplan", "--git", "HEAD"])
        .current_dir(repo.path())
        .env("PATH", "")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("git is not installed"), "{}", err(&o));
}

/// The attack-risk line: each side's TPR exactly `attack_risk` of `dpplan
/// check`, rounded up in the text; more noise, a smaller TPR (negative
/// control).
#[test]
fn the_diff_states_the_attackers_best_tpr_old_to_new() {
    let old = example("repeated-release");
    let new = edit(&old, "noise gaussian sigma 8", "noise gaussian sigma 4");
    let p = pair(&old, &new);
    let d = p.json();
    for (side, file) in [("old", "old.dpplan"), ("new", "new.dpplan")] {
        assert_eq!(
            d[side]["attack_risk"],
            p.check(file)["attack_risk"],
            "{side}"
        );
    }
    let tpr = |side: &str| d[side]["attack_risk"]["points"][0]["tpr"].as_f64().unwrap();
    assert!(tpr("new") > tpr("old"), "less noise, a larger TPR");
    let text = out(&p.diff(&[]));
    let line = format!(
        "the attacker's best TPR at 1 % FPR: {} → {}",
        dpplan_diagnostics::percent_up(tpr("old")),
        dpplan_diagnostics::percent_up(tpr("new"))
    );
    assert!(text.contains(&line), "{line}\n{text}");
}

/// The issue's example: with `auto` noise, `2 times` and a clamp loosened
/// from [0, 200000] to [0, 500000] leave ε at the budget ("spends less" or
/// "the same") while the sum's σ nearly triples. The diff shows each
/// statistic's noise std and 95 % half-width before → after with the ratio
/// (the checker's own figures of each side), fails `--fail-on accuracy` and
/// `--fail-on contract` (a clamp is a bound of the contract); negative
/// controls: the ratio under a looser limit, and a change that improves
/// accuracy, pass.
#[test]
fn a_noisier_plan_fails_on_accuracy_and_a_loosened_clamp_on_contract() {
    let old = r#"plan "fares" {
  privacy {
    unit user by rider_id
    adjacency add_remove
    budget epsilon 1 delta 1e-6
    accountant best
  }
  dataset trips {
    source "trips.csv"
    column rider_id : id
    column fare : float in [0, 200000]
    contribution {
      rows_per_unit 10
    }
  }
  query total_fares {
    sum(trips.fare)
    noise gaussian auto
    schedule once
  }
  query rides {
    count(trips)
    noise gaussian auto
    schedule once
  }
}
"#;
    let new = edit(
        &edit(old, "[0, 200000]", "[0, 500000]"),
        "schedule once",
        "schedule 2 times",
    );
    let p = pair(old, &new);
    let d = p.json();
    assert_eq!(d["verdict"]["increase"], Value::Bool(false));
    assert_eq!(d["verdict"]["accuracy_worse"], Value::Bool(true));
    assert_eq!(d["verdict"]["accuracy_limit"], 1.1);
    let sum = d["accuracy"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["query"] == "total_fares")
        .unwrap();
    // the figures are `dpplan check`'s of each side
    let std_of = |which: &str| {
        p.check(which)["queries"][0]["parts"][0]["noise_std"]
            .as_f64()
            .unwrap()
    };
    let (o, n) = (std_of("old.dpplan"), std_of("new.dpplan"));
    assert_eq!(sum["noise_std"]["old"].as_f64(), Some(o));
    assert_eq!(sum["noise_std"]["new"].as_f64(), Some(n));
    assert_eq!(sum["std_ratio"].as_f64(), Some(n / o));
    assert!(n / o > 2.5 && n / o < 3.6, "{}", n / o);
    let human = out(&p.diff(&[]));
    let line = human
        .lines()
        .find(|l| l.contains("total_fares (sum): std"))
        .unwrap_or_else(|| panic!("{human}"));
    assert!(line.trim_start().starts_with('!'), "{line}");
    assert!(
        line.contains(&format!("(×{})", dpplan_diagnostics::num(n / o))),
        "{line}"
    );
    assert!(human.contains("accuracy is WORSE: total_fares"), "{human}");
    // fails on accuracy (default ×1.1 and an explicit ratio) and on contract
    for f in ["accuracy", "accuracy=2.5", "contract", "increase,accuracy"] {
        let o = p.diff(&["--fail-on", f]);
        assert_eq!(o.status.code(), Some(1), "{f}: {}", err(&o));
    }
    let o = p.diff(&["--fail-on", "accuracy"]);
    assert!(
        err(&o)
            .contains("--fail-on accuracy: the noise grew by more than ×1.1 for total_fares (sum)"),
        "{}",
        err(&o)
    );
    let o = p.diff(&["--fail-on", "contract"]);
    assert!(
        err(&o).contains("dataset trips: column fare: bounds"),
        "{}",
        err(&o)
    );
    // negative controls: a limit above the ratio passes; `increase` passes
    // (ε stays at the budget)
    for f in ["accuracy=4", "increase"] {
        let o = p.diff(&["--fail-on", f]);
        assert_eq!(o.status.code(), Some(0), "{f}: {}", err(&o));
    }
    // a change that improves accuracy (a tighter clamp) passes accuracy,
    // and is still a contract change
    let better = pair(old, &edit(old, "[0, 200000]", "[0, 100000]"));
    assert_eq!(
        better.diff(&["--fail-on", "accuracy"]).status.code(),
        Some(0)
    );
    assert_eq!(
        better.diff(&["--fail-on", "contract"]).status.code(),
        Some(1)
    );
    // a bad ratio is a usage error with the accepted forms
    let o = p.diff(&["--fail-on", "accuracy=0.5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("not a ratio of at least 1"), "{}", err(&o));
}

/// More noise on a fixed-noise plan lowers ε but doubles σ: `--fail-on
/// increase` passes, `--fail-on accuracy` fails (×2), and less noise passes.
#[test]
fn more_noise_is_an_accuracy_regression_not_an_increase() {
    let rr = example("repeated-release");
    let p = pair(&rr, &edit(&rr, "sigma 8", "sigma 16"));
    assert_eq!(p.diff(&["--fail-on", "increase"]).status.code(), Some(0));
    let o = p.diff(&["--fail-on", "accuracy"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).contains("×2"), "{}", err(&o));
    let d = p.json();
    assert_eq!(d["accuracy"][0]["std_ratio"], 2.0);
    let q = pair(&rr, &edit(&rr, "sigma 8", "sigma 7"));
    assert_eq!(q.diff(&["--fail-on", "accuracy"]).status.code(), Some(0));
}
