//! `dpplan report` through the real binary: every number it prints equals
//! the one `dpplan check --format json` prints for the same plan; exit
//! codes; `--out`.

use serde_json::Value;

use crate::support::{dpplan_at_root as dpplan, root};

fn examples() -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root().join("examples")).unwrap() {
        let dir = e.unwrap().path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).unwrap() {
                let p = f.unwrap().path();
                if p.extension().is_some_and(|x| x == "dpplan") {
                    out.push(p.strip_prefix(root()).unwrap().display().to_string());
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_number_equals_dpplan_check_json() {
    for path in examples() {
        let check = dpplan(&["check", "--format", "json", &path]);
        let report = dpplan(&["report", "--format", "json", &path]);
        assert!(
            report.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&report.stderr)
        );
        let c: Value = serde_json::from_slice(&check.stdout).unwrap();
        let r: Value = serde_json::from_slice(&report.stdout).unwrap();
        let f = &c["files"][0];
        let k = &r["contract"];
        assert_eq!(k["total"]["epsilon"], f["epsilon"], "{path}");
        assert_eq!(k["total"]["delta"], f["delta"], "{path}");
        assert_eq!(k["accountant"], f["accountant"], "{path}");
        assert_eq!(k["budget"]["epsilon"], f["budget"]["epsilon"], "{path}");
        assert_eq!(k["budget"]["delta"], f["budget"]["delta"], "{path}");
        let accts = f["accountants"].as_array().unwrap();
        assert_eq!(k["accountants"].as_array().unwrap().len(), accts.len());
        for (a, b) in k["accountants"].as_array().unwrap().iter().zip(accts) {
            assert_eq!(a["accountant"], b["accountant"], "{path}");
            assert_eq!(a["epsilon"], b["epsilon"], "{path}");
            assert_eq!(a["delta"], b["delta"], "{path}");
        }
        let cq = f["queries"].as_array().unwrap();
        let rq = r["queries"].as_array().unwrap();
        assert_eq!(cq.len(), rq.len(), "{path}");
        for (a, b) in rq.iter().zip(cq) {
            assert_eq!(a["name"], b["name"]);
            assert_eq!(a["epsilon_alone"], b["total"]["epsilon"], "{path}");
            assert_eq!(
                a["epsilon_per_release"], b["per_release"]["epsilon"],
                "{path}"
            );
            assert_eq!(a["schedule"]["releases"], b["releases"], "{path}");
            let (ap, bp) = (
                a["parts"].as_array().unwrap(),
                b["parts"].as_array().unwrap(),
            );
            assert_eq!(ap.len(), bp.len());
            for (x, y) in ap.iter().zip(bp) {
                for field in [
                    "noise_std",
                    "ci95_half_width",
                    "l1",
                    "l2",
                    "coords",
                    "derivation",
                ] {
                    assert_eq!(x[field], y[field], "{path} {field}");
                }
                assert_eq!(x["scale"], y["mechanism"]["scale"], "{path}");
                assert_eq!(x["sigma"], y["mechanism"]["sigma"], "{path}");
            }
        }
    }
}

#[test]
fn formats_and_out_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.html");
    let o = dpplan(&[
        "report",
        "examples/retail-mixed/retail-mixed.dpplan",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
    let md = dpplan(&["report", "--format", "md", "examples/census/census.dpplan"]);
    assert!(String::from_utf8_lossy(&md.stdout).starts_with("# Privacy review: `census-tables`"));
}

#[test]
fn failing_controls_exit_1_with_a_message() {
    let o = dpplan(&[
        "report",
        "--format",
        "md",
        "crates/dpplan-review/tests/zero-sensitivity.dpplan",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the negative controls of query `people` do not move the claim"),
        "{err}"
    );
    assert!(!err.contains("`ages`"), "{err}");
    // the report is still written, so the reviewer sees why
    assert!(String::from_utf8_lossy(&o.stdout).contains("NO: neither control moves the total"));
}

#[test]
fn bad_input_is_refused_clearly() {
    let o = dpplan(&[
        "report",
        "examples/census/census.dpplan",
        "--start",
        "2026-02-30",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not a valid date"));
    let o = dpplan(&[
        "report",
        "examples/census/census.dpplan",
        "--mean-count",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.dpplan");
    std::fs::write(&bad, "plan \"x\" { privacy { unit row adjacency add_remove budget epsilon 1 } query q { count(nope) noise laplace scale 1 schedule once } }").unwrap();
    let o = dpplan(&["report", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to review"));
}

/// The report's trade-off curve, read from its JSON as a reviewer's tool
/// would: on a Gaussian plan (r releases of σ = 8, Δ = 1: GDP μ = √r/8)
/// every point is Φ(Φ⁻¹(α) + μ) to 1e-9 (statrs' Φ⁻¹ is accurate to about
/// that; the sound direction is tested against 60-digit references in the
/// accounting crate), its 1 % and 0.1 % points are at least
/// `check`'s attack risk, and more releases (a negative control) move it.
#[test]
fn the_reports_tradeoff_json_is_the_gaussian_curve_and_checks_attack_risk() {
    use statrs::distribution::{ContinuousCDF, Normal};
    let phi = Normal::new(0.0, 1.0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let source =
        std::fs::read_to_string(root().join("examples/repeated-release/repeated-release.dpplan"))
            .unwrap();
    let mut curve_at_1pct = Vec::new();
    for r in [10u32, 20] {
        let text = source
            .replace("schedule 10 times", &format!("schedule {r} times"))
            .replace("budget epsilon 2.5", "budget epsilon 5");
        let path = dir.path().join(format!("r{r}.dpplan"));
        std::fs::write(&path, &text).unwrap();
        let p = path.to_str().unwrap();
        let report: Value =
            serde_json::from_slice(&dpplan(&["report", p, "--format", "json"]).stdout).unwrap();
        let check: Value =
            serde_json::from_slice(&dpplan(&["check", p, "--format", "json"]).stdout).unwrap();
        let t = &report["tradeoff"];
        let mu = f64::from(r).sqrt() / 8.0;
        assert_eq!(t["curve"], "gdp");
        assert!((t["gdp_mu"].as_f64().unwrap() - mu).abs() < 1e-12, "{t}");
        let points = t["points"].as_array().unwrap();
        assert!(points.len() >= 20, "{t}");
        for pt in points {
            let (a, tpr) = (pt["fpr"].as_f64().unwrap(), pt["tpr"].as_f64().unwrap());
            let exact = if a <= 0.0 {
                0.0
            } else {
                phi.cdf(phi.inverse_cdf(a) + mu)
            };
            assert!((tpr - exact).abs() < 1e-9, "α {a}: {tpr} vs {exact}");
        }
        for risk in check["files"][0]["attack_risk"]["points"]
            .as_array()
            .unwrap()
        {
            let a = risk["fpr"].as_f64().unwrap();
            let shown = points
                .iter()
                .find(|pt| pt["fpr"].as_f64() == Some(a))
                .unwrap();
            assert!(shown["tpr"].as_f64().unwrap() >= risk["tpr"].as_f64().unwrap());
            if a == 0.01 {
                curve_at_1pct.push(shown["tpr"].as_f64().unwrap());
            }
        }
    }
    // negative control: twice the releases, a larger attack risk
    assert!(
        curve_at_1pct[1] > curve_at_1pct[0] * 1.1,
        "{curve_at_1pct:?}"
    );
}
