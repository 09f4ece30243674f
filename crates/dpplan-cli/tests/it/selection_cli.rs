//! Histograms over keys from the data through the real binary:
//! `dpplan check` claims the total with the thresholds' δ, `compile` and
//! `run` release only keys above τ (sorted; the one-user keys of the
//! generated data never appear, not in the output nor in the ledger),
//! the ledger charges the claimed ε and verifies, and `dpplan report`
//! states τ and the δ it costs.

use crate::support::{compiled, dpplan, ok, root, text};

#[test]
fn the_site_visits_example_checks_compiles_runs_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let src = root().join("examples/site-visits");
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::copy(
        src.join("data/visits.csv"),
        dir.path().join("data/visits.csv"),
    )
    .unwrap();
    let source = dir.path().join("site-visits.dpplan");
    std::fs::copy(src.join("site-visits.dpplan"), &source).unwrap();
    let source = source.to_str().unwrap();

    let o = dpplan(&["check", source, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let checked: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let file = &checked["files"][0];
    assert_eq!(file["within_budget"], true, "{file}");
    let selections: Vec<&serde_json::Value> = file["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| &q["selection"])
        .collect();
    let thr_delta: f64 = selections
        .iter()
        .map(|s| s["delta"].as_f64().unwrap())
        .sum();
    // half of δ = 1e-7 is kept for the thresholds; they fit in it
    assert!(thr_delta > 0.0 && thr_delta <= 0.5e-7, "{thr_delta}");
    assert!(file["delta"].as_f64().unwrap() <= 1e-7);
    let tau = |i: usize| selections[i]["threshold"].as_f64().unwrap();

    let plan = dir.path().join("plan.json");
    let plan = plan.to_str().unwrap();
    let o = dpplan(&["compile", source, "-o", plan]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let ledger = dir.path().join("ledger.sqlite");
    let ledger_s = ledger.to_str().unwrap();
    let o = dpplan(&["run", plan, "--ledger", ledger_s]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    for secret in ["ZZ-ONLY-ONE-USER", "/secret-only-one-user"] {
        assert!(!stdout.contains(secret), "{secret} revealed");
        assert!(!text(&o.stderr).contains(secret));
        let bytes = std::fs::read(&ledger).unwrap();
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()));
    }
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = out["results"].as_array().unwrap();
    for (i, q) in ["by_country", "by_page"].iter().enumerate() {
        let r = results.iter().find(|r| r["query"] == *q).unwrap();
        let cells = r["cells"].as_array().unwrap();
        let keys: Vec<&str> = cells.iter().map(|c| c["group"].as_str().unwrap()).collect();
        // the most common keys pass (C00 has hundreds of users), sorted
        assert!(keys.len() >= 3, "{q}: {keys:?}");
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        assert!(cells.iter().all(|c| c["value"].as_f64().unwrap() > tau(i)));
    }
    // charged what the checker claims per query, in ε
    let charged: f64 = results.iter().map(|r| r["epsilon"].as_f64().unwrap()).sum();
    let claimed: f64 = file["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["total"]["epsilon"].as_f64().unwrap())
        .sum();
    assert!((charged - claimed).abs() < 1e-9, "{charged} vs {claimed}");
    let o = dpplan(&["ledger", "verify", ledger_s]);
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));

    let o = dpplan(&["report", source]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let md = text(&o.stdout);
    assert!(md.contains("keys from data"), "{md}");
    assert!(md.contains("τ = "), "{md}");
    assert!(md.contains("added to the plan's δ"), "{md}");
}

/// Compiles `plan` (a `.dpplan` text whose dataset reads `data.csv`) next
/// to `csv` in a fresh directory and runs it; the run's output (JSON, or
/// CSV with `--csv` among `extra`).
fn compile_and_run(plan: &str, csv: &[u8], extra: &[&str]) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.csv"), csv).unwrap();
    let compiled = compiled(dir.path(), "p", plan);
    let ledger = dir.path().join("ledger.sqlite");
    let mut args = vec![
        "run",
        compiled.to_str().unwrap(),
        "--ledger",
        ledger.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    dpplan(&args)
}

/// The released cells of the run's only result: (label, value).
fn released(o: &std::process::Output) -> Vec<(String, f64)> {
    ok(o);
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    out["results"][0]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["group"].as_str().unwrap().to_string(),
                c["value"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// A plan over keys from `data.csv`'s `country`, with noise of scale 2e-5
/// (ε = 50,000 over L1 = 1: every released count is its exact count to
/// within 0.01 but with probability e^−500), τ = 5, and `filter`.
fn keys_plan(filter: &str) -> String {
    format!(
        r#"plan "keys" {{
  privacy {{
    unit user by uid
    adjacency add_remove
    budget epsilon 100000 delta 1e-6
  }}
  dataset visits {{
    source "data.csv"
    column uid : id
    column country : category
    column secs : float in [0, 100]
    contribution {{
      rows_per_unit 5
      groups_per_unit 1
      rows_per_group 1
    }}
  }}
  query by_country {{
    histogram(visits {filter} by country keys from data threshold 5)
    noise laplace epsilon 50000
    schedule once
  }}
}}
"#
    )
}

/// A `where` filter on a number beside keys from the data: the run
/// released to the exact counts of the rows that pass it (it panicked,
/// exit 101: the key pass parsed rows with no slot for the filter's
/// number).
#[test]
fn keys_from_data_with_a_filter_on_a_number_release_the_filtered_counts() {
    let mut csv = String::from("uid,country,secs\n");
    // ES: 30 users, 20 of them with a visit over 10 s (two rows each, one
    // short); FR: 15 users over 10 s; DE: 8 users, none over 10 s; IT: 3
    // users over 10 s (below τ); invalid or missing secs are dropped
    for i in 0..30 {
        let secs = if i % 3 == 0 { 5 } else { 20 };
        csv += &format!("es{i},ES,{secs}\nes{i},ES,1\n");
    }
    for i in 0..15 {
        csv += &format!("fr{i},FR,50\n");
    }
    for i in 0..8 {
        csv += &format!("de{i},DE,5\nde{i},DE,abc\nde{i},DE,\n");
    }
    for i in 0..3 {
        csv += &format!("it{i},IT,99\n");
    }
    let cells = released(&compile_and_run(
        &keys_plan("where secs > 10"),
        csv.as_bytes(),
        &[],
    ));
    let labels: Vec<&str> = cells.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(labels, ["ES", "FR"], "{cells:?}");
    for ((_, v), exact) in cells.iter().zip([20.0, 15.0]) {
        assert!((v - exact).abs() < 0.01, "{cells:?}");
    }
    // negative control: without the filter DE (8) passes τ and ES counts 30
    let cells = released(&compile_and_run(&keys_plan(""), csv.as_bytes(), &[]));
    let labels: Vec<&str> = cells.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(labels, ["DE", "ES", "FR"], "{cells:?}");
    assert!((cells[1].1 - 30.0).abs() < 0.01, "{cells:?}");
}

/// Whether `out` holds a control character (C0 but the line feed, DEL, or
/// C1 encoded in UTF-8) or a byte of invalid UTF-8.
fn raw_control(out: &[u8]) -> Option<String> {
    let Ok(s) = std::str::from_utf8(out) else {
        return Some("invalid UTF-8".into());
    };
    s.chars()
        .find(|&c| c.is_control() && c != '\n')
        .map(|c| format!("{c:?}"))
}

/// Keys from the data that are not valid UTF-8 (or hold a control
/// character, or a backslash) are published under distinct, escaped
/// labels: `\xNN` for every byte that is not part of a printable UTF-8
/// character, `\\` for a backslash. Two invalid keys were both published
/// as "�", and an ESC reached the terminal and the CSV raw.
#[test]
fn keys_from_data_get_distinct_escaped_labels() {
    let keys: [(&[u8], &str); 9] = [
        (b"\xff", r"\xff"),
        (b"\xfe", r"\xfe"),
        (br"\xff", r"\\xff"),
        (b"\x1b[2J\x1b[31mRED", r"\x1b[2J\x1b[31mRED"),
        (b"del\x7f", r"del\x7f"),
        ("c1\u{9b}31m".as_bytes(), r"c1\xc2\x9b31m"),
        (b"line\nbreak", r"line\x0abreak"),
        ("España".as_bytes(), "España"),
        (b"ES", "ES"),
    ];
    let mut csv = b"uid,country,secs\n".to_vec();
    for (k, (key, _)) in keys.iter().enumerate() {
        for u in 0..6 {
            csv.extend_from_slice(format!("u{k}-{u},\"").as_bytes());
            csv.extend_from_slice(key);
            csv.extend_from_slice(b"\",50\n");
        }
    }
    let mut expected: Vec<&str> = keys.iter().map(|(_, l)| *l).collect();
    expected.sort_unstable();
    let o = compile_and_run(&keys_plan(""), &csv, &[]);
    assert_eq!(raw_control(&o.stdout), None, "{}", text(&o.stdout));
    assert_eq!(raw_control(&o.stderr), None, "{}", text(&o.stderr));
    let cells = released(&o);
    let labels: Vec<&str> = cells.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(labels, expected);
    assert!(
        cells.iter().all(|(_, v)| (v - 6.0).abs() < 0.01),
        "{cells:?}"
    );
    // the CSV output: the same labels, no control character
    let o = compile_and_run(&keys_plan(""), &csv, &["--csv"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(raw_control(&o.stdout), None, "{}", text(&o.stdout));
    let out = text(&o.stdout);
    for l in &expected {
        assert!(out.contains(&format!(",{l},")), "{l} in {out}");
    }
    assert_eq!(out.lines().count(), 1 + expected.len(), "{out}");
}
