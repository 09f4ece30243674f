//! `dpplan account` as a reviewer meets it: the reference text's witness
//! table (the classical RDP closed form for k Gaussian releases of σ,
//! Δ = 1, δ = 1e-6) printed by the real binary to the last published digit,
//! next to the tighter accountants' values for the same plan.

use std::path::Path;
use std::process::Output;

/// (k, σ, the published closed-form ε) — the reference text's table.
const WITNESS: [(u64, u32, &str); 4] = [
    (1, 4, "1.345380442439233"),
    (10, 8, "2.1559476703363876"),
    (100, 16, "3.4806386060980823"),
    (1000, 8, "28.590726703363874"),
];

fn plan(k: u64, sigma: u32, accountant: &str) -> String {
    format!(
        r#"plan "witness" {{
  privacy {{
    unit row
    adjacency add_remove
    budget epsilon 100 delta 1e-6
    accountant {accountant}
  }}
  dataset responses {{
    source "responses.csv"
    column answer : int in [0, 1]
  }}
  query yes_count {{
    sum(responses.answer)
    noise gaussian sigma {sigma}
    schedule {k} times
  }}
}}
"#
    )
}

fn account(dir: &Path, source: &str, args: &[&str]) -> Output {
    let path = dir.join("plan.dpplan");
    std::fs::write(&path, source).unwrap();
    crate::support::command()
        .arg("account")
        .arg(&path)
        .args(args)
        .output()
        .expect("run dpplan")
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The row of the table for one accountant: its ε column.
fn row_eps(table: &str, title: &str) -> String {
    let line = table
        .lines()
        .find(|l| l.trim_start().starts_with(title))
        .unwrap_or_else(|| panic!("no row {title} in\n{table}"));
    line.trim_start()[title.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn classical_accountant_prints_the_reference_table_to_the_last_digit() {
    let dir = tempfile::tempdir().unwrap();
    for (k, sigma, want) in WITNESS {
        // named by the plan: the plan's total is the published value
        let table = stdout(&account(
            dir.path(),
            &plan(k, sigma, "classical"),
            &["--all-digits"],
        ));
        assert_eq!(
            row_eps(&table, "classical RDP closed form"),
            want,
            "{table}"
        );
        assert!(
            table.contains(&format!("the plan's total: ε = {want} at δ = 1e-6")),
            "{table}"
        );
        // ... next to the tighter accountants, each strictly below it
        let w: f64 = want.parse().unwrap();
        for tighter in [
            "zCDP",
            "RDP",
            "exact Gaussian (GDP)",
            "privacy-loss distribution",
        ] {
            let e: f64 = row_eps(&table, tighter).parse().unwrap();
            assert!(e < w, "{tighter} {e} ≥ classical {w}\n{table}");
        }
        // the JSON carries the same bits
        let json: serde_json::Value = serde_json::from_str(&stdout(&account(
            dir.path(),
            &plan(k, sigma, "classical"),
            &["--json"],
        )))
        .unwrap();
        assert_eq!(json["best"]["accountant"], "classical");
        assert_eq!(json["best"]["epsilon"].as_f64().unwrap().to_string(), want);

        // under `best` it is listed, never chosen, and the total moves to
        // the tightest accountant
        let table = stdout(&account(
            dir.path(),
            &plan(k, sigma, "best"),
            &["--all-digits"],
        ));
        assert_eq!(row_eps(&table, "classical RDP closed form"), want);
        let best_line = table.lines().find(|l| l.contains("best: ε =")).unwrap();
        assert!(!best_line.contains("classical"), "{best_line}");

        // negative control: one release fewer changes the printed value
        if k > 1 {
            let fewer = stdout(&account(
                dir.path(),
                &plan(k - 1, sigma, "classical"),
                &["--all-digits"],
            ));
            let e: f64 = row_eps(&fewer, "classical RDP closed form")
                .parse()
                .unwrap();
            assert!(e < w, "{e} not below {w}");
        }
    }
}

#[test]
fn the_default_table_rounds_up_to_six_digits() {
    let dir = tempfile::tempdir().unwrap();
    let table = stdout(&account(dir.path(), &plan(1, 4, "classical"), &[]));
    // 1.345380442439233 rounded up at the sixth significant digit
    assert_eq!(row_eps(&table, "classical RDP closed form"), "1.34539");
    let ratio_of_best = table
        .lines()
        .find(|l| l.contains("exact Gaussian (GDP)"))
        .unwrap();
    // the ratios are against the tightest accountant, not the one asked for
    assert!(ratio_of_best.contains("1.0000"), "{table}");
}
