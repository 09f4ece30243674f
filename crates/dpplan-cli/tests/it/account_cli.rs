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

/// One Laplace release through `dpplan check --format json`, as a reviewer
/// reads its cost alone: the exact ε₀ + 2·ln(1 − δ) (the privacy-loss
/// distribution in closed form), computed here from the plan's numbers;
/// RDP's bound, which the figure was before, is above it; a second release
/// composes (its cost is not the closed form of one), and at δ = 0 the
/// figure is ε₀.
#[test]
fn one_laplace_release_costs_its_exact_epsilon_in_check() {
    let dir = tempfile::tempdir().unwrap();
    let source = |times: &str, delta: &str| {
        format!(
            "plan \"one\" {{\n  privacy {{\n    unit row\n    adjacency add_remove\n    budget epsilon 10 delta {delta}\n  }}\n  dataset responses {{\n    source \"responses.csv\"\n    column answer : int in [0, 1]\n  }}\n  query yes_count {{\n    count(responses)\n    noise laplace scale 4\n    schedule {times}\n  }}\n}}\n"
        )
    };
    let per_release = |text: String| -> serde_json::Value {
        let path = dir.path().join("one.dpplan");
        std::fs::write(&path, text).unwrap();
        let o = crate::support::dpplan(&["check", "--format", "json", path.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        doc["files"][0]["queries"][0]["total"].clone()
    };
    let once = per_release(source("once", "1e-6"));
    let exact = 0.25 + 2.0 * (1.0f64 - 1e-6).ln();
    let eps = once["epsilon"].as_f64().unwrap();
    assert_eq!(once["accountant"], "pld", "{once}");
    assert!(eps >= exact && eps - exact < 1e-15, "{eps} vs {exact}");
    let rdp = dpplan_accounting::epsilon(
        &[dpplan_accounting::Release {
            sample: None,
            mechanism: dpplan_accounting::Mechanism {
                kind: dpplan_accounting::NoiseKind::Laplace,
                scale: 4.0,
                sensitivity: dpplan_accounting::Sensitivity::scalar(1.0),
            },
            count: 1,
        }],
        1e-6,
        dpplan_accounting::Accountant::Rdp,
    )
    .unwrap();
    assert!(rdp.epsilon > eps);
    let twice = per_release(source("2 times", "1e-6"));
    assert_ne!(twice["accountant"], "pld", "{twice}");
    assert!(twice["epsilon"].as_f64().unwrap() > 1.9 * eps);
    let pure = per_release(source("once", "0"));
    assert_eq!(pure["epsilon"].as_f64().unwrap(), 0.25);
}
