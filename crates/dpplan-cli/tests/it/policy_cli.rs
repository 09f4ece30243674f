//! Organisation policies (`dpplan.toml`) as a CI job meets them: the real
//! binary on the fixtures in tests/policy/.
//!
//! - tests/policy/org/: one plan per rule (and a near miss that breaks
//!   none), each annotated with the diagnostics it must get
//!   (`// error[DP100]` on the line where the diagnostic starts), under a
//!   policy that sets every limit, two rule levels and a per-path override;
//! - tests/policy/shared/: three plans that each fit their own budget and
//!   together exceed the budget their data source shares;
//! - tests/policy/errors/: policy files that cannot be used, each located.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::{dpplan_at_root as dpplan, root};

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)))
}

/// (line, "severity[CODE]") of every diagnostic of the first file.
fn found(v: &serde_json::Value) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = v["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap(),
                format!(
                    "{}[{}]",
                    d["severity"].as_str().unwrap(),
                    d["code"].as_str().unwrap()
                ),
            )
        })
        .collect();
    out.sort();
    out
}

/// The annotations of a fixture: `// error[DP100] warning[DP008]` at the
/// end of a line.
fn expected(text: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for word in line.split_whitespace() {
            let is_annotation = ["error[DP", "warning[DP", "hint[DP"]
                .iter()
                .any(|p| word.starts_with(p));
            if is_annotation && word.ends_with(']') {
                out.push((i as u64 + 1, word.to_string()));
            }
        }
    }
    out.sort();
    out
}

fn fixtures(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            fixtures(&p, out);
        } else if p.extension().is_some_and(|x| x == "dpplan") {
            out.push(p);
        }
    }
}

#[test]
fn every_organisation_rule_triggers_and_its_near_miss_does_not() {
    let mut files = Vec::new();
    fixtures(&root().join("tests/policy/org"), &mut files);
    files.sort();
    assert!(files.len() >= 15, "{files:?}");
    let mut codes_seen = std::collections::BTreeSet::new();
    for f in &files {
        let rel = f
            .strip_prefix(root())
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let o = dpplan(&["check", &rel, "--format", "json"]);
        let got = found(&json(&o));
        let want = expected(&std::fs::read_to_string(f).unwrap());
        assert_eq!(got, want, "{rel}");
        let fails = want.iter().any(|(_, w)| w.starts_with("error["));
        assert_eq!(o.status.code(), Some(if fails { 1 } else { 0 }), "{rel}");
        codes_seen.extend(want.into_iter().map(|(_, w)| w));
    }
    // every policy rule is exercised, at its level
    for code in [
        "DP100", "DP101", "DP102", "DP103", "DP104", "DP105", "DP106", "DP109",
    ] {
        assert!(
            codes_seen.iter().any(|c| c.contains(code)),
            "no fixture triggers {code}: {codes_seen:?}"
        );
    }
}

/// The same plans under an empty policy: the policy's rules are gone and
/// the rule levels are the defaults again (negative controls).
#[test]
fn without_the_policy_nothing_of_it_remains() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.toml");
    std::fs::write(&empty, "").unwrap();
    let e = empty.to_str().unwrap();
    for f in [
        "dp100-epsilon",
        "dp103-mechanism",
        "dp105-noise",
        "dp106-accuracy",
    ] {
        let v = json(&dpplan(&[
            "check",
            &format!("tests/policy/org/{f}.dpplan"),
            "--format",
            "json",
            "--config",
            e,
        ]));
        assert!(found(&v).is_empty(), "{f}: {:?}", found(&v));
    }
    // DP009 (turned off by the policy) is a hint by default
    let v = json(&dpplan(&[
        "check",
        "tests/policy/org/dp009-off.dpplan",
        "--format",
        "json",
        "--config",
        e,
    ]));
    assert!(
        found(&v).iter().any(|(_, c)| c == "hint[DP009]"),
        "{:?}",
        found(&v)
    );
    // DP010 (raised to an error by the policy) is a warning by default
    let v = json(&dpplan(&[
        "check",
        "tests/policy/org/dp101-delta.dpplan",
        "--format",
        "json",
        "--config",
        e,
    ]));
    assert_eq!(found(&v), vec![(6, "warning[DP010]".to_string())]);
}

/// The override applies by path: the research plan, moved out of
/// experiments/, is held to the global limits again.
#[test]
fn overrides_apply_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let org = root().join("tests/policy/org");
    std::fs::copy(org.join("dpplan.toml"), dir.path().join("dpplan.toml")).unwrap();
    std::fs::copy(
        org.join("experiments/research.dpplan"),
        dir.path().join("research.dpplan"),
    )
    .unwrap();
    let plan = dir.path().join("research.dpplan");
    let v = json(&dpplan(&[
        "check",
        plan.to_str().unwrap(),
        "--format",
        "json",
    ]));
    let got = found(&v);
    assert!(got.contains(&(6, "error[DP100]".to_string())), "{got:?}");
    assert!(got.contains(&(20, "error[DP106]".to_string())), "{got:?}");
}

fn shared_of(v: &serde_json::Value) -> &serde_json::Value {
    &v["shared_budgets"][0]
}

#[test]
fn a_shared_budget_composes_every_plan_reading_its_source() {
    let o = dpplan(&["check", "tests/policy/shared", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    let s = shared_of(&v);
    assert_eq!(s["source"], "data/visits.csv");
    assert_eq!(s["within_budget"], false);
    // three Gaussian counts (Δ₂ = 1, σ = 3) compose to μ = √3/3 exactly
    // (Dong–Roth–Su); each alone is μ = 1/3
    let total = s["epsilon"].as_f64().unwrap();
    let exact = dpplan_accounting::gdp_epsilon(3f64.sqrt() / 3.0, 1e-8);
    assert!((total / exact - 1.0).abs() < 1e-9, "{total} vs {exact}");
    let shares = s["shares"].as_array().unwrap();
    assert_eq!(shares.len(), 3, "the plan on another source is not counted");
    let alone = dpplan_accounting::gdp_epsilon(1.0 / 3.0, 1e-8);
    for sh in shares {
        let e = sh["epsilon"].as_f64().unwrap();
        assert!((e / alone - 1.0).abs() < 1e-9, "{sh}");
        assert!(e < 3.0, "each fits alone");
    }
    // DP107 on the dataset of each plan that reads the source, naming the shares
    for (i, f) in v["files"].as_array().unwrap().iter().enumerate() {
        let d107: Vec<&serde_json::Value> = f["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["code"] == "DP107")
            .collect();
        if i < 3 {
            assert_eq!(d107.len(), 1, "{f}");
            assert_eq!(d107[0]["range"]["start"]["line"], 11);
            let m = d107[0]["message"].as_str().unwrap();
            assert!(
                m.contains("tests/policy/shared/a.dpplan ε = 1.75429"),
                "{m}"
            );
            assert!(m.contains("compose to ε = 3.16256"), "{m}");
        } else {
            assert!(d107.is_empty(), "team d reads another table: {f}");
        }
    }
    // the document, shared budgets included, follows the documented schema
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/json-output.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let mut broken = v.clone();
    broken["shared_budgets"][0]["within_budget"] = serde_json::json!("no");
    assert!(!validator.is_valid(&broken));
    // the human output names the total and each share
    let o = dpplan(&["check", "tests/policy/shared"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("shared budget `data/visits.csv`"), "{out}");
    assert!(out.contains(": OVER"), "{out}");
}

#[test]
fn a_shared_budget_that_fits_and_its_negative_controls() {
    // two of the three plans fit together (negative control: one plan fewer)
    let o = dpplan(&[
        "check",
        "tests/policy/shared/a.dpplan",
        "tests/policy/shared/b.dpplan",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = json(&o);
    assert_eq!(shared_of(&v)["within_budget"], true);
    let two = dpplan_accounting::gdp_epsilon(2f64.sqrt() / 3.0, 1e-8);
    let e = shared_of(&v)["epsilon"].as_f64().unwrap();
    assert!((e / two - 1.0).abs() < 1e-9, "{e} vs {two}");
    // all three under a larger shared budget
    let o = dpplan(&[
        "check",
        "tests/policy/shared",
        "--config",
        "tests/policy/shared/fits.toml",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(shared_of(&json(&o))["within_budget"], true);
}

#[test]
fn a_policy_file_that_cannot_be_used_is_located() {
    let cases = [
        ("unknown-key", "4:1", "unknown field `max-epsiolon`"),
        ("wrong-type", "3:15", "invalid type: string \"two\""),
        (
            "lower-error",
            "4:9",
            "DP001 (unbounded-contribution) cannot be lowered",
        ),
        (
            "unknown-code",
            "3:1",
            "`DP999` is not a dpplan diagnostic code",
        ),
        ("bad-glob", "3:25", "`a/[b` is not a glob"),
        ("bad-unit", "3:17", "unknown variant `person`"),
        ("negative", "3:13", "`max-delta` must be in (0, 1]"),
        ("syntax", "2:8", "unclosed table"),
    ];
    for (name, at, message) in cases {
        let file = format!("tests/policy/errors/{name}.toml");
        let o = dpplan(&[
            "check",
            "tests/policy/org/near-miss.dpplan",
            "--config",
            &file,
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        // rendered as a plan's diagnostics are: DP108, located in the file
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error[DP108]: "), "{name}: {err}");
        assert!(err.contains(&format!("┌─ {file}:{at}\n")), "{name}: {err}");
        assert!(err.contains(message), "{name}: {err}");
        assert!(o.stdout.is_empty(), "{name}: no plan's result is written");
        // and the same on standard error in the machine formats, whose
        // output would otherwise claim a check under no policy
        for format in ["json", "sarif", "github"] {
            let m = dpplan(&[
                "check",
                "tests/policy/org/near-miss.dpplan",
                "--config",
                &file,
                "--format",
                format,
            ]);
            assert_eq!(m.status.code(), Some(2), "{name} {format}");
            assert!(m.stdout.is_empty(), "{name} {format}");
            assert_eq!(m.stderr, o.stderr, "{name} {format}");
        }
    }
}

/// The text of a fixture of tests/policy/shared/.
fn shared_plan(name: &str) -> String {
    std::fs::read_to_string(root().join(format!("tests/policy/shared/{name}.dpplan"))).unwrap()
}

/// Writes `files` (relative path, text) under `dir`.
fn write_all(dir: &Path, files: &[(&str, &str)]) {
    for (rel, text) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// `dpplan ARGS…` in `dir`, with `env` set (and `CI` removed unless set).
fn dpplan_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = crate::support::command();
    c.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("CI")
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The DP107 messages of every file of a JSON output.
fn dp107(v: &serde_json::Value) -> Vec<(String, String, String)> {
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| {
            f["diagnostics"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["code"] == "DP107")
                .map(move |d| {
                    (
                        f["path"].as_str().unwrap().to_string(),
                        d["message"].as_str().unwrap().to_string(),
                        d["help"].as_str().unwrap_or_default().to_string(),
                    )
                })
        })
        .collect()
}

/// One plan that cannot be composed (another unit, or checker errors)
/// does not switch the shared budget off for the others: it is left out
/// and reported once, on itself, with its own reason and the help for that
/// cause; the others are still composed and compared. (Before: "not
/// composed: the plans protect different units", on every plan, with a
/// help about spending less.)
#[test]
fn one_plan_that_cannot_be_composed_is_left_out_alone() {
    let dir = tempfile::tempdir().unwrap();
    let rows = shared_plan("b").replace("unit user by user_id", "unit row");
    let broken = shared_plan("c").replace("sigma 3", "sigma -1");
    write_all(
        dir.path(),
        &[
            (
                "dpplan.toml",
                &std::fs::read_to_string(root().join("tests/policy/shared/dpplan.toml")).unwrap(),
            ),
            ("a.dpplan", &shared_plan("a")),
            ("b.dpplan", &rows),
            ("c.dpplan", &broken),
            ("e.dpplan", &shared_plan("c").replace("team-c", "team-e")),
        ],
    );
    let o = dpplan_env(dir.path(), &["check", ".", "--format", "json"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = json(&o);
    let s = shared_of(&v);
    // a and e (user-level) are composed: two Gaussian counts, μ = √2/3
    let two = dpplan_accounting::gdp_epsilon(2f64.sqrt() / 3.0, 1e-8);
    let e = s["epsilon"]
        .as_f64()
        .expect("the others are still composed");
    assert!((e / two - 1.0).abs() < 1e-9, "{e} vs {two}: {s}");
    assert_eq!(s["within_budget"], true, "{s}");
    let excluded: Vec<&str> = s["shares"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["excluded"].as_str())
        .collect();
    assert_eq!(excluded.len(), 2, "{s}");
    // reported once each, on the plan itself, with its own reason and help
    let d = dp107(&v);
    assert_eq!(d.len(), 2, "{d:?}");
    let on = |p: &str| {
        d.iter()
            .filter(|(f, _, _)| f.ends_with(p))
            .collect::<Vec<_>>()
    };
    let b = on("b.dpplan");
    assert_eq!(b.len(), 1, "{d:?}");
    assert!(b[0].1.contains("protects the unit `row`"), "{d:?}");
    assert!(b[0].2.contains("`unit user …`"), "{d:?}");
    let c = on("c.dpplan");
    assert_eq!(c.len(), 1, "{d:?}");
    assert!(c[0].1.contains("has errors"), "{d:?}");
    assert!(c[0].2.contains("fix its errors"), "{d:?}");
    assert!(
        on("a.dpplan").is_empty() && on("e.dpplan").is_empty(),
        "{d:?}"
    );
    // negative control: with the row-level plan user-level again, and the
    // broken one fixed, four plans are composed and exceed ε = 3
    std::fs::write(dir.path().join("b.dpplan"), shared_plan("b")).unwrap();
    std::fs::write(dir.path().join("c.dpplan"), shared_plan("c")).unwrap();
    let v = json(&dpplan_env(
        dir.path(),
        &["check", ".", "--format", "json"],
        &[],
    ));
    assert_eq!(shared_of(&v)["within_budget"], false);
    assert_eq!(dp107(&v).len(), 4);
}

/// The policy text with max-epsilon 2 that the suppression tests use.
const STRICT: &str = "[limits]\nmax-epsilon = 2\n\n[[budgets]]\nsource = \"data/visits.csv\"\nepsilon = 3\ndelta = 1e-8\n";

/// `// dpplan: allow DP100 reason "x"` (or DP107 on the dataset line) no
/// longer switches the organisation's rule off: refused (DP020, an error)
/// unless the policy's `[suppressions] allow` lists the code. And the
/// shared budget's line never says OVER while the check exits 0. (Before:
/// exit 0, the summary saying OVER.)
#[test]
fn an_inline_allow_of_a_policy_code_needs_the_policy_key() {
    let dir = tempfile::tempdir().unwrap();
    let allow100 = shared_plan("a").replace(
        "    budget epsilon 2.5",
        "    // dpplan: allow DP100 reason \"x\"\n    budget epsilon 2.5",
    );
    write_all(
        dir.path(),
        &[("dpplan.toml", STRICT), ("a.dpplan", &allow100)],
    );
    let o = dpplan_env(dir.path(), &["check", "a.dpplan", "--format", "json"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let got = found(&json(&o));
    assert!(got.contains(&(8, "error[DP100]".to_string())), "{got:?}");
    assert!(got.contains(&(7, "error[DP020]".to_string())), "{got:?}");
    let msg = json(&o)["files"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "DP020")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("`[suppressions] allow`"), "{msg}");
    // the key allows it: suppressed, exit 0
    write_all(
        dir.path(),
        &[(
            "dpplan.toml",
            &format!("[suppressions]\nallow = [\"DP100\"]\n{STRICT}"),
        )],
    );
    let o = dpplan_env(dir.path(), &["check", "a.dpplan", "--format", "json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(found(&json(&o)).is_empty());
    // DP107 on the dataset lines of three plans over their shared budget
    let dir = tempfile::tempdir().unwrap();
    let allow107 = |n: &str| {
        shared_plan(n).replace(
            "  dataset visits {",
            "  // dpplan: allow DP107 reason \"x\"\n  dataset visits {",
        )
    };
    let relaxed = STRICT.replace("max-epsilon = 2", "max-epsilon = 3");
    write_all(
        dir.path(),
        &[
            ("dpplan.toml", &relaxed),
            ("a.dpplan", &allow107("a")),
            ("b.dpplan", &allow107("b")),
            ("c.dpplan", &allow107("c")),
        ],
    );
    let o = dpplan_env(dir.path(), &["check", "."], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains(": OVER"), "{}", stdout(&o));
    assert!(stdout(&o).contains("is refused"), "{}", stdout(&o));
    // allowed by the policy: exit 0, and the verdict is not OVER
    write_all(
        dir.path(),
        &[(
            "dpplan.toml",
            &format!("[suppressions]\nallow = [\"DP107\"]\n{relaxed}"),
        )],
    );
    let o = dpplan_env(dir.path(), &["check", "."], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(!stdout(&o).contains("OVER"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("over, accepted by the policy"),
        "{}",
        stdout(&o)
    );
    // a nested policy cannot allow what its parent does not
    write_all(
        dir.path(),
        &[
            ("dpplan.toml", &relaxed),
            ("team/dpplan.toml", "[suppressions]\nallow = [\"DP107\"]\n"),
            (
                "team/a.dpplan",
                &allow107("a").replace("data/visits.csv", "../data/visits.csv"),
            ),
        ],
    );
    let o = dpplan_env(
        dir.path(),
        &["check", "team/a.dpplan", "--format", "json"],
        &[],
    );
    let got = found(&json(&o));
    assert!(got.contains(&(11, "error[DP020]".to_string())), "{got:?}");
}

/// A nested `dpplan.toml` extends its parent unless it says `root = true`:
/// a comment-only one no longer turns off the organisation's rules below
/// it, nor takes its plans out of the root's `[[budgets]]`; it can only
/// tighten. Every output names the chain that applied.
#[test]
fn a_nested_policy_extends_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let sub = |n: &str| shared_plan(n).replace("\"data/visits.csv\"", "\"../data/visits.csv\"");
    write_all(
        dir.path(),
        &[
            ("dpplan.toml", STRICT),
            ("growth/dpplan.toml", "# the growth team's policy\n"),
            (
                "a.dpplan",
                &shared_plan("a").replace("epsilon 2.5", "epsilon 2"),
            ),
            (
                "b.dpplan",
                &shared_plan("b").replace("epsilon 2.5", "epsilon 2"),
            ),
            ("growth/c.dpplan", &sub("c")),
        ],
    );
    let all = [
        "check", "a.dpplan", "b.dpplan", "growth", "--format", "json",
    ];
    let o = dpplan_env(dir.path(), &all, &[]);
    assert_eq!(o.status.code(), Some(1));
    let v = json(&o);
    // the root's max-epsilon reaches growth/c.dpplan (ε = 2.5 > 2)
    let c = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "growth/c.dpplan")
        .unwrap();
    assert!(
        c["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "DP100"),
        "{c}"
    );
    // and the root's budget composes all three plans (over ε = 3)
    let s = shared_of(&v);
    assert_eq!(s["shares"].as_array().unwrap().len(), 3, "{s}");
    assert_eq!(s["within_budget"], false, "{s}");
    assert_eq!(v["shared_budgets"].as_array().unwrap().len(), 1);
    // the chain that applied
    let policies = v["policies"].as_array().unwrap();
    let chain = policies
        .iter()
        .find(|p| {
            p["plans"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x == "growth/c.dpplan")
        })
        .unwrap();
    assert_eq!(
        chain["files"],
        serde_json::json!(["dpplan.toml", "growth/dpplan.toml"])
    );
    let human = stdout(&dpplan_env(dir.path(), &all[..4], &[]));
    assert!(
        human.contains("policy: dpplan.toml → growth/dpplan.toml (sha256 "),
        "{human}"
    );
    let sarif: serde_json::Value = serde_json::from_slice(
        &dpplan_env(dir.path(), &["check", "growth", "--format", "sarif"], &[]).stdout,
    )
    .unwrap();
    assert_eq!(
        sarif["runs"][0]["properties"]["policies"][0]["files"],
        serde_json::json!(["dpplan.toml", "growth/dpplan.toml"])
    );
    let junit = stdout(&dpplan_env(
        dir.path(),
        &["check", "growth", "--format", "junit"],
        &[],
    ));
    assert!(
        junit.contains(
            "<property name=\"dpplan.policy\" value=\"dpplan.toml → growth/dpplan.toml\"/>"
        ),
        "{junit}"
    );
    // a nested file cannot loosen: neither a larger ε nor DP100 off
    std::fs::write(
        dir.path().join("growth/dpplan.toml"),
        "[limits]\nmax-epsilon = 10\n[rules]\nDP100 = \"off\"\n",
    )
    .unwrap();
    let got = found(&json(&dpplan_env(
        dir.path(),
        &["check", "growth/c.dpplan", "--format", "json"],
        &[],
    )));
    assert!(got.contains(&(7, "error[DP100]".to_string())), "{got:?}");
    // negative control: `root = true` is a policy of its own
    std::fs::write(dir.path().join("growth/dpplan.toml"), "root = true\n").unwrap();
    let o = dpplan_env(
        dir.path(),
        &["check", "growth/c.dpplan", "--format", "json"],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let v = json(&o);
    assert_eq!(
        v["policies"][0]["files"],
        serde_json::json!(["growth/dpplan.toml"])
    );
}

/// In CI (`CI` set, as GitHub Actions sets it), `--config` may only name a
/// root policy, the root of the chain that governs the plan: a job cannot
/// swap the organisation's policy for an empty file. Outside CI it can
/// (negative control), and says which policy applied.
#[test]
fn in_ci_only_the_root_may_be_named_by_config() {
    let dir = tempfile::tempdir().unwrap();
    write_all(
        dir.path(),
        &[
            ("dpplan.toml", STRICT),
            ("empty.toml", ""),
            ("team/dpplan.toml", "# nested\n"),
            ("a.dpplan", &shared_plan("a")),
        ],
    );
    let args = ["check", "a.dpplan", "--config", "empty.toml"];
    let o = dpplan_env(dir.path(), &args, &[("CI", "true")]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("would replace the policy that governs"),
        "{}",
        stderr(&o)
    );
    let o = dpplan_env(
        dir.path(),
        &["check", "a.dpplan", "--config", "team/dpplan.toml"],
        &[("CI", "true")],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("must name a root policy"),
        "{}",
        stderr(&o)
    );
    // the root itself is fine in CI
    let o = dpplan_env(
        dir.path(),
        &["check", "a.dpplan", "--config", "dpplan.toml"],
        &[("CI", "true")],
    );
    assert_eq!(o.status.code(), Some(1), "DP100: {}", stdout(&o));
    // outside CI (and with CI=false) --config is the operator's choice
    for env in [&[][..], &[("CI", "false")][..]] {
        let o = dpplan_env(dir.path(), &args, env);
        assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
        assert!(
            stdout(&o).contains("policy: empty.toml (sha256 "),
            "{}",
            stdout(&o)
        );
    }
}

/// Sources are compared by canonical path: a symbolic link to a source is
/// the same source (before: `alias.csv` escaped the shared budget).
#[cfg(unix)]
#[test]
fn a_symlinked_source_is_the_same_source() {
    let dir = tempfile::tempdir().unwrap();
    write_all(
        dir.path(),
        &[
            (
                "dpplan.toml",
                &std::fs::read_to_string(root().join("tests/policy/shared/dpplan.toml")).unwrap(),
            ),
            ("data/visits.csv", "user_id\n1\n"),
            ("a.dpplan", &shared_plan("a")),
            ("b.dpplan", &shared_plan("b")),
            (
                "c.dpplan",
                &shared_plan("c").replace("data/visits.csv", "data/alias.csv"),
            ),
        ],
    );
    std::os::unix::fs::symlink("visits.csv", dir.path().join("data/alias.csv")).unwrap();
    let o = dpplan_env(dir.path(), &["check", ".", "--format", "json"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let s = shared_of(&json(&o)).clone();
    assert_eq!(s["shares"].as_array().unwrap().len(), 3, "{s}");
    assert_eq!(s["within_budget"], false);
    // negative control: another file is another source
    std::fs::remove_file(dir.path().join("data/alias.csv")).unwrap();
    std::fs::write(dir.path().join("data/alias.csv"), "user_id\n1\n").unwrap();
    let o = dpplan_env(dir.path(), &["check", ".", "--format", "json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// `dpplan check FILE` composes a shared budget with every plan the
/// policy's `plans` globs name for that source, not with the checked file
/// alone (a pre-commit hook on one changed file saw it within).
#[test]
fn checking_one_file_composes_every_plan_the_budget_names() {
    let dir = tempfile::tempdir().unwrap();
    let at = |n: &str| shared_plan(n).replace("\"data/visits.csv\"", "\"../../data/visits.csv\"");
    let policy = "[[budgets]]\nsource = \"data/visits.csv\"\nepsilon = 3\ndelta = 1e-8\nplans = [\"plans/**/*.dpplan\"]\n";
    write_all(
        dir.path(),
        &[
            ("dpplan.toml", policy),
            ("plans/growth/growth.dpplan", &at("a")),
            ("plans/ads/ads.dpplan", &at("b")),
            ("plans/search/search.dpplan", &at("c")),
            ("plans/orders/orders.dpplan", &shared_plan("d")),
        ],
    );
    let o = dpplan_env(
        dir.path(),
        &["check", "plans/growth/growth.dpplan", "--format", "json"],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let v = json(&o);
    let s = shared_of(&v);
    let shares = s["shares"].as_array().unwrap();
    assert_eq!(shares.len(), 3, "{s}");
    assert_eq!(shares.iter().filter(|x| x["checked"] == true).count(), 1);
    assert_eq!(s["within_budget"], false);
    assert_eq!(dp107(&v).len(), 1, "reported on the checked file only");
    // negative control: without the glob the file alone fits
    std::fs::write(
        dir.path().join("dpplan.toml"),
        policy.replace("plans = [\"plans/**/*.dpplan\"]\n", ""),
    )
    .unwrap();
    let o = dpplan_env(dir.path(), &["check", "plans/growth/growth.dpplan"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
}

/// The GitHub job summary shows the shared budgets (and the policy).
#[test]
fn the_job_summary_shows_the_shared_budgets() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.md");
    let o = dpplan_env(
        &root(),
        &["check", "tests/policy/shared", "--format", "github"],
        &[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())],
    );
    assert_eq!(o.status.code(), Some(1));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.contains("### Budgets shared across plans"), "{md}");
    assert!(md.contains("| `data/visits.csv` |"), "{md}");
    assert!(md.contains(": OVER |"), "{md}");
    assert!(
        md.contains("`tests/policy/shared/a.dpplan` ε = 1.75429"),
        "{md}"
    );
    assert!(
        md.contains("Policy: `tests/policy/shared/dpplan.toml`"),
        "{md}"
    );
    assert!(
        stdout(&o).contains("::notice title=dpplan policy::"),
        "{}",
        stdout(&o)
    );
}

/// A plan and its data for `compile`/`run`: team a's count under STRICT
/// (ε = 2.5 > max-epsilon 2: fails DP100) or with ε = 2 (passes).
fn policed(dir: &Path, epsilon: &str) {
    write_all(
        dir,
        &[
            ("dpplan.toml", STRICT),
            ("data/visits.csv", "user_id\n1\n2\n3\n"),
            (
                "a.dpplan",
                &shared_plan("a").replace("epsilon 2.5", &format!("epsilon {epsilon}")),
            ),
        ],
    );
}

/// `compile` refuses a plan that fails the policy in force (before: it
/// compiled a plan failing DP100), and records the policy it passed.
#[test]
fn compile_refuses_a_plan_the_policy_refuses_and_records_the_one_it_passed() {
    let dir = tempfile::tempdir().unwrap();
    policed(dir.path(), "2.5");
    let o = dpplan_env(dir.path(), &["compile", "a.dpplan", "-o", "a.json"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("error[DP100]"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("fails the policy in force (dpplan.toml, sha256 "),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("a.json").exists());
    // a checker error is the compiler's own refusal, not the policy's
    std::fs::write(
        dir.path().join("a.dpplan"),
        shared_plan("a")
            .replace("epsilon 2.5", "epsilon 2")
            .replace("sigma 3", "sigma -1"),
    )
    .unwrap();
    let o = dpplan_env(dir.path(), &["compile", "a.dpplan", "-o", "a.json"], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("has errors: not compiled"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("fails the policy"), "{}", stderr(&o));
    policed(dir.path(), "2");
    let o = dpplan_env(dir.path(), &["compile", "a.dpplan", "-o", "a.json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("a.json")).unwrap()).unwrap();
    assert_eq!(plan["format_version"], dpplan_plan::FORMAT_VERSION);
    let sha = dpplan_plan::sha256_hex(STRICT.as_bytes());
    assert_eq!(plan["policy"]["sha256"], sha);
    assert_eq!(plan["policy"]["files"], serde_json::json!(["dpplan.toml"]));
    assert_eq!(
        plan["policy"]["rules"],
        serde_json::json!(["DP100", "DP107"])
    );
    assert_eq!(plan["policy"]["plan"], "a.dpplan");
}

/// `run` refuses a plan compiled under no policy or another one when a
/// policy is in force, unless the operator says so (`--policy-override`),
/// which is printed; `report --freeze` and `ledger freeze` refuse a plan
/// that fails the policy in force. (Before: all accepted.)
#[test]
fn run_and_freeze_refuse_a_plan_outside_the_policy_in_force() {
    let dir = tempfile::tempdir().unwrap();
    policed(dir.path(), "2.5");
    // compiled where no policy is in force, then brought under one
    std::fs::rename(
        dir.path().join("dpplan.toml"),
        dir.path().join("later.toml"),
    )
    .unwrap();
    let o = dpplan_env(dir.path(), &["compile", "a.dpplan", "-o", "a.json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::rename(
        dir.path().join("later.toml"),
        dir.path().join("dpplan.toml"),
    )
    .unwrap();
    let run = [
        "run", "a.json", "--ledger", "a.sqlite", "--slot", "0", "--out", "r.json",
    ];
    let o = dpplan_env(dir.path(), &run, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("compiled under no policy"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("a.sqlite").exists(), "nothing charged");
    assert!(!dir.path().join("r.json").exists(), "nothing released");
    // the operator's explicit decision, printed
    let mut over = run.to_vec();
    over.extend(["--policy-override", "incident 42: approved by the DPO"]);
    let o = dpplan_env(dir.path(), &over, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: policy override (\"incident 42: approved by the DPO\")"),
        "{}",
        stderr(&o)
    );
    // compiled under the policy in force: runs; under an older text of it: refused
    policed(dir.path(), "2");
    let o = dpplan_env(dir.path(), &["compile", "a.dpplan", "-o", "b.json"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let runb = [
        "run", "b.json", "--ledger", "b.sqlite", "--slot", "0", "--out", "rb.json",
    ];
    let o = dpplan_env(dir.path(), &runb, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("policy: dpplan.toml (sha256 "),
        "the run names the policy: {}",
        stderr(&o)
    );
    std::fs::write(
        dir.path().join("dpplan.toml"),
        STRICT.replace("max-epsilon = 2", "max-epsilon = 2.2"),
    )
    .unwrap();
    let o = dpplan_env(
        dir.path(),
        &[
            "run", "b.json", "--ledger", "c.sqlite", "--slot", "0", "--out", "rc.json",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("it was compiled under policy dpplan.toml (sha256 "),
        "{}",
        stderr(&o)
    );
    // report --freeze and ledger freeze: a plan failing DP100 is no sign-off
    policed(dir.path(), "2.5");
    std::fs::write(dir.path().join("r.md"), "# a report\n").unwrap();
    let o = dpplan_env(
        dir.path(),
        &[
            "report", "a.dpplan", "--format", "md", "--freeze", "--ledger", "f.sqlite",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("freezing a report of `a.dpplan` is refused"),
        "{}",
        stderr(&o)
    );
    let o = dpplan_env(
        dir.path(),
        &[
            "ledger", "freeze", "--ledger", "f.sqlite", "--report", "r.md", "--plan", "a.dpplan",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("error[DP100]"), "{}", stderr(&o));
    assert!(!dir.path().join("f.sqlite").exists());
}
