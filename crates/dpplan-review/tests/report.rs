//! `dpplan report` as a library: snapshots of every example's Markdown and
//! JSON, the JSON against docs/report.schema.json, the numbers against the
//! checker and the accounting crate, the shares, the negative controls.

use std::path::{Path, PathBuf};

use dpplan_check::analyze;
use dpplan_review::report::{self, compose, Review, ReviewOptions};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn examples() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root().join("examples")).unwrap() {
        let dir = e.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|x| x == "dpplan") {
                let name = p.file_stem().unwrap().to_string_lossy().into_owned();
                out.push((name, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 5, "the examples are found");
    out
}

fn review(text: &str) -> Review {
    report::build(&analyze(text), &ReviewOptions::default()).expect("a report")
}

#[test]
fn snapshots_of_every_example() {
    for (name, text) in examples() {
        let r = review(&text);
        insta::assert_snapshot!(format!("{name}.md"), report::markdown(&r));
        insta::assert_snapshot!(
            format!("{name}.json"),
            serde_json::to_string_pretty(&r).unwrap()
        );
    }
}

#[test]
fn json_follows_its_schema_and_reads_back() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/report.schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).expect("a valid schema");
    for (name, text) in examples() {
        let r = review(&text);
        let doc = serde_json::to_value(&r).unwrap();
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        // a stored review re-renders to the same report
        let back: Review = serde_json::from_value(doc).unwrap();
        assert_eq!(back, r, "{name}");
        assert_eq!(report::markdown(&back), report::markdown(&r));
    }
    // negative control: the schema refuses a report with a field removed
    let mut doc = serde_json::to_value(review(&examples()[0].1)).unwrap();
    doc["contract"].as_object_mut().unwrap().remove("total");
    assert!(!v.is_valid(&doc));
}

/// The releases the report composes (all of them) give exactly the
/// checker's total, under the plan's own rule.
#[test]
fn composing_every_release_gives_the_checkers_total() {
    for (name, text) in examples() {
        let a = analyze(&text);
        let plan = a.report.as_ref().unwrap();
        let releases: Vec<_> = plan
            .queries
            .iter()
            .flat_map(|q| {
                q.parts.iter().filter_map(|p| {
                    Some(dpplan_accounting::Release {
                        sample: q.sampled(),
                        mechanism: p.accounted?,
                        count: q.accounted_releases,
                    })
                })
            })
            .collect();
        // at the accountants' δ (the budget's, less the thresholds' share
        // for keys from the data)
        let e = compose(
            &releases,
            plan.accounting_delta(),
            plan.accountant_requested,
        )
        .unwrap();
        assert_eq!(e, plan.total.as_ref().unwrap().epsilon, "{name}");
        let r = review(&text);
        // the last point of each curve is that accountant's total
        for c in &r.cumulative.curves {
            let want = r
                .contract
                .accountants
                .iter()
                .find(|x| x.accountant == c.accountant)
                .and_then(|x| x.epsilon)
                .unwrap();
            assert_eq!(
                c.points.last().unwrap().epsilon,
                want,
                "{name} {}",
                c.accountant
            );
            // and curves never go down
            assert!(
                c.points.windows(2).all(|w| w[0].epsilon <= w[1].epsilon),
                "{name}"
            );
        }
    }
}

#[test]
fn shares_add_up_to_one_and_follow_the_noise() {
    for (name, text) in examples() {
        let r = review(&text);
        let sum: f64 = r.queries.iter().map(|q| q.share).sum();
        assert!((sum - 1.0).abs() < 1e-12, "{name}: {sum}");
        // each share is ρ_q / Σρ with ρ from the accounting crate
        let rho: f64 = r.queries.iter().map(|q| q.rho).sum();
        for q in &r.queries {
            assert_eq!(q.share, q.rho / rho);
        }
    }
    // an independent ρ: a Gaussian count, Δ = 1, σ = 8, 10 releases:
    // ρ = 10 · 1/(2·64)
    let text =
        std::fs::read_to_string(root().join("examples/repeated-release/repeated-release.dpplan"))
            .unwrap();
    let r = review(&text);
    assert!((r.queries[0].rho - 10.0 / 128.0).abs() < 1e-15);
    assert_eq!(r.queries[0].share, 1.0);
    // negative control: doubling one query's noise lowers its share
    let web = std::fs::read_to_string(root().join("examples/web-analytics/web-analytics.dpplan"))
        .unwrap();
    let before = review(&web);
    let after = review(&web.replace("noise gaussian sigma 60", "noise gaussian sigma 120"));
    let share = |r: &Review, n: &str| r.queries.iter().find(|q| q.name == n).unwrap().share;
    assert!(share(&after, "page_mix") < share(&before, "page_mix"));
    assert!(share(&after, "daily_visits") > share(&before, "daily_visits"));
}

/// The bound-doubling control against the real checker: the same plan
/// with rows_per_unit doubled in its text, checked again.
#[test]
fn doubling_control_equals_the_checker_on_a_doubled_bound() {
    let plan = |rows: u32| {
        format!(
            r#"plan "t" {{
  privacy {{
    unit user by uid
    adjacency add_remove
    budget epsilon 10 delta 1e-6
    accountant best
  }}
  dataset d {{
    column uid : id
    column x : float in [0, 3]
    contribution {{ rows_per_unit {rows} }}
  }}
  query n {{
    count(d)
    noise gaussian sigma 20
    schedule 12 times
  }}
  query s {{
    sum(d.x)
    noise laplace scale 40
    schedule once
  }}
}}"#
        )
    };
    let r = review(&plan(4));
    let doubled = analyze(&plan(8));
    let doubled_total = doubled.report.unwrap().total.unwrap().epsilon;
    // doubling rows_per_unit doubles both queries' sensitivities: the text
    // control moves both; the report's control doubles one at a time, so
    // doubling both through the report's rule must give the checker's total
    let a = analyze(&plan(4));
    let p = a.report.as_ref().unwrap();
    let releases: Vec<_> = p
        .queries
        .iter()
        .flat_map(|q| {
            q.parts.iter().filter_map(|part| {
                let mut m = part.accounted?;
                m.sensitivity.l1 *= 2.0;
                m.sensitivity.l2 *= 2.0;
                Some(dpplan_accounting::Release {
                    sample: None,
                    mechanism: m,
                    count: q.releases,
                })
            })
        })
        .collect();
    let e = compose(&releases, p.budget.delta, p.accountant_requested).unwrap();
    assert!(
        (e - doubled_total).abs() <= 1e-9 * doubled_total,
        "{e} vs {doubled_total}"
    );
    // and each one-at-a-time control lies between the plan and both doubled
    for c in &r.controls {
        assert!(
            c.doubled > r.contract.total.epsilon && c.doubled < doubled_total,
            "{c:?}"
        );
        assert!(c.without < r.contract.total.epsilon, "{c:?}");
    }
    assert!(r.controls_ok);
}

#[test]
fn a_query_that_cannot_move_the_claim_fails_the_controls() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/zero-sensitivity.dpplan"),
    )
    .unwrap();
    let r = review(&text);
    assert!(!r.controls_ok);
    let people = r.controls.iter().find(|c| c.query == "people").unwrap();
    assert!(!people.without_moves && !people.doubled_moves);
    let ages = r.controls.iter().find(|c| c.query == "ages").unwrap();
    // ε = Δ/b = 120/240, alone; removed: nothing left; doubled: 240/240
    assert_eq!((ages.without, ages.doubled), (0.0, 1.0));
    assert!(report::markdown(&r).contains("The negative controls failed"));
}

#[test]
fn mean_accuracy_by_the_delta_method() {
    let text = std::fs::read_to_string(root().join("examples/web-analytics/web-analytics.dpplan"))
        .unwrap();
    let a = analyze(&text);
    let q = a
        .report
        .as_ref()
        .unwrap()
        .queries
        .iter()
        .find(|q| q.name == "mean_time")
        .unwrap();
    let (s, c) = (q.parts[0].noise_std, q.parts[1].noise_std);
    let r = report::build(
        &a,
        &ReviewOptions {
            start: None,
            mean_counts: vec![5000.0],
        },
    )
    .unwrap();
    let m = r
        .queries
        .iter()
        .find(|q| q.name == "mean_time")
        .unwrap()
        .mean
        .clone()
        .unwrap();
    // Var(S/C) ≈ (σ_S² + m² σ_C²)/n² at the worst mean m = 3600
    let want = (s * s + 3600.0f64.powi(2) * c * c).sqrt() / 5000.0;
    assert_eq!(m.points.len(), 1);
    assert!((m.points[0].std - want).abs() <= 1e-12 * want);
    assert!((m.points[0].ci95_half_width - 1.959963984540054 * want).abs() <= 1e-9 * want);
    // a larger count gives a smaller std (negative control)
    let r2 = report::build(
        &a,
        &ReviewOptions {
            start: None,
            mean_counts: vec![10000.0],
        },
    )
    .unwrap();
    let m2 = r2
        .queries
        .iter()
        .find(|q| q.name == "mean_time")
        .unwrap()
        .mean
        .clone()
        .unwrap();
    assert!(m2.points[0].std < m.points[0].std);
}

#[test]
fn calendar_dates() {
    let text =
        std::fs::read_to_string(root().join("examples/retail-mixed/retail-mixed.dpplan")).unwrap();
    let r = review(&text);
    let q = |n: &str| {
        r.queries
            .iter()
            .find(|q| q.name == n)
            .unwrap()
            .schedule
            .clone()
    };
    // fixed dates: every day from 2026-01-01 until 2026-01-31 (30 releases)
    assert_eq!(
        (
            q("basket_size").first.as_str(),
            q("basket_size").last.as_str()
        ),
        ("2026-01-01", "2026-01-30")
    );
    // every minute for 30 days from the first run: 43 200th at 29 d 23:59
    assert_eq!(q("live_orders").last, "2026-01-30 23:59");
    assert_eq!(q("items_by_store").last, "2026-01-22");
    // --start moves the relative schedules, not the fixed ones
    let start = dpplan_check::schedule::parse_date("2026-03-01").unwrap();
    let r2 = report::build(
        &analyze(&text),
        &ReviewOptions {
            start: Some(start),
            mean_counts: vec![],
        },
    )
    .unwrap();
    let q2 = |n: &str| {
        r2.queries
            .iter()
            .find(|q| q.name == n)
            .unwrap()
            .schedule
            .clone()
    };
    assert_eq!(q2("daily_revenue").first, "2026-03-01");
    assert_eq!(q2("daily_revenue").last, "2026-03-30");
    assert_eq!(q2("basket_size").first, "2026-01-01");
    // without dates: days after the first run
    let web = std::fs::read_to_string(root().join("examples/web-analytics/web-analytics.dpplan"))
        .unwrap();
    let w = review(&web);
    let daily = &w.queries[0].schedule;
    assert_eq!(
        (daily.first.as_str(), daily.last.as_str()),
        ("day 1", "day 365")
    );
    // the fractions are reached in order, each at ε ≥ its target
    let f = &w.cumulative.fractions;
    for pair in f.windows(2) {
        if let (Some(a), Some(b)) = (pair[0].offset_seconds, pair[1].offset_seconds) {
            assert!(a <= b);
        }
    }
    for x in f {
        if let Some(e) = x.epsilon {
            assert!(e >= x.fraction * w.contract.budget.epsilon);
        }
    }
}

#[test]
fn html_is_self_contained() {
    for (name, text) in examples() {
        let h = report::html(&review(&text));
        assert!(h.starts_with("<!DOCTYPE html>"), "{name}");
        assert!(
            !h.contains("http://") && !h.contains("https://"),
            "{name}: a URL"
        );
        assert!(!h.contains("<script"), "{name}: a script");
        assert!(!h.contains("<link"), "{name}: an external stylesheet");
        let svgs = h.matches("<svg").count();
        assert!(svgs >= 2, "{name}: {svgs} figures");
        assert_eq!(
            h.matches("<title>").count(),
            svgs + 1,
            "{name}: a title per figure"
        );
        assert_eq!(
            h.matches("<desc>").count(),
            svgs,
            "{name}: a text alternative per figure"
        );
        assert!(
            h.matches("<polyline").count() + h.matches("<path").count() > 0,
            "{name}: lines drawn"
        );
    }
}

/// A report with an audit (`dpplan report --audit`): the section is
/// rendered with the measured bounds rounded down and the claims, the JSON
/// follows the schema and reads back; an audit of another format or
/// version is refused.
#[test]
fn an_audit_is_shown_beside_the_claims() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/report.schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).expect("a valid schema");
    let mut r = review(&examples()[0].1);
    let audit = serde_json::json!({
        "format": "dpplan-audit", "format_version": 1, "plan": "p", "plan_sha256": "ab",
        "runs": 50000, "confidence": 0.999, "executed": {},
        "queries": [
            {"query": "q1", "measured_epsilon": 0.123456789, "claimed_epsilon": 0.5, "delta": 1e-9, "passed": true, "tests": []},
            {"query": "q2", "measured_epsilon": 1.5, "claimed_epsilon": 1.0, "delta": 0.0, "passed": false},
            {"query": "q3", "measured_epsilon": 0.0, "claimed_epsilon": 1.0, "delta": 0.0, "passed": false, "verdict": "inconclusive"}
        ],
        "passed": false
    });
    r.audit = Some(report::AuditSummary::from_json(&audit.to_string()).unwrap());
    let md = report::markdown(&r);
    assert!(md.contains("## Audit of the executed mechanism"), "{md}");
    assert!(
        md.contains("50000 times") && md.contains("99.9 % confidence"),
        "{md}"
    );
    assert!(
        md.contains("| `q1` | 0.1234 | 0.5 | 1e-9 | passed |"),
        "{md}"
    );
    assert!(md.contains("| `q2` | 1.500 | 1 | 0 | FAILED |"), "{md}");
    assert!(md.contains("| `q3` | 0 | 1 | 0 | inconclusive |"), "{md}");
    assert!(md.contains("**The audit failed:**"), "{md}");
    // an inconclusive audit (nothing failed) is not shown as passed
    let mut inconclusive = audit.clone();
    inconclusive["queries"] = serde_json::json!([audit["queries"][2]]);
    inconclusive["verdict"] = "inconclusive".into();
    let mut ri = review(&examples()[0].1);
    ri.audit = Some(report::AuditSummary::from_json(&inconclusive.to_string()).unwrap());
    let md_i = report::markdown(&ri);
    assert!(md_i.contains("**The audit is inconclusive:**"), "{md_i}");
    assert!(!md_i.contains("No measured bound exceeds"), "{md_i}");
    assert!(report::html(&r).contains("Audit of the executed mechanism"));
    let doc = serde_json::to_value(&r).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(serde_json::from_value::<Review>(doc).unwrap(), r);
    // without an audit the section and the field are absent
    let plain = review(&examples()[0].1);
    assert!(!report::markdown(&plain).contains("Audit of the executed"));
    assert!(serde_json::to_value(&plain).unwrap().get("audit").is_none());
    // another format or version
    let mut other = audit.clone();
    other["format_version"] = 2.into();
    assert_eq!(
        report::AuditSummary::from_json(&other.to_string()),
        Err(report::AuditError::Version(2))
    );
    other["format"] = "dpplan-ledger".into();
    assert_eq!(
        report::AuditSummary::from_json(&other.to_string()),
        Err(report::AuditError::NotAnAudit)
    );
}

/// The report says when each slot of a windowed query or a cumulative
/// count is released: when its window closes, or a `release after` delay
/// later; it says nothing of the kind for a fresh release, and the delay
/// changes no figure of the report.
#[test]
fn the_report_says_when_each_window_is_released() {
    let text =
        std::fs::read_to_string(root().join("examples/ride-sharing/ride-sharing.dpplan")).unwrap();
    let delayed = text.replacen(
        "    window 1 hour\n",
        "    window 1 hour\n    release after 2 hours\n",
        1,
    );
    assert_ne!(delayed, text);
    let one_release = |r: &Review, q: &str| {
        r.queries
            .iter()
            .find(|x| x.name == q)
            .unwrap()
            .one_release
            .clone()
    };
    let (plain, late) = (review(&text), review(&delayed));
    let on_close = one_release(&plain, "hourly_district_trips").unwrap();
    assert!(
        on_close.ends_with("; each window is released when it closes"),
        "{on_close}"
    );
    let after = one_release(&late, "hourly_district_trips").unwrap();
    assert!(
        after.ends_with("; each window is released 2 hours after it closes"),
        "{after}"
    );
    assert!(report::markdown(&late).contains("each window is released 2 hours after it closes"));
    // a fresh release has no window to wait for
    assert_eq!(one_release(&plain, "daily_riders"), None);
    // each window is placed on the calendar when it is released: two hours
    // later, the first one closing an hour after the start
    let schedule = |r: &Review, q: &str| {
        let s = &r.queries.iter().find(|x| x.name == q).unwrap().schedule;
        (s.first_offset_seconds, s.last_offset_seconds)
    };
    let (on_time, delayed_by) = (
        schedule(&plain, "hourly_district_trips"),
        schedule(&late, "hourly_district_trips"),
    );
    assert_eq!(on_time.0, 3600.0);
    assert_eq!(delayed_by.0, on_time.0 + 7200.0);
    assert_eq!(delayed_by.1, on_time.1 + 7200.0);
    // the same figures otherwise (the ε-over-time curve follows the
    // release times)
    let mut same = late.clone();
    for q in &mut same.queries {
        q.one_release = one_release(&plain, &q.name);
        q.schedule = plain
            .queries
            .iter()
            .find(|x| x.name == q.name)
            .unwrap()
            .schedule
            .clone();
    }
    same.cumulative = plain.cumulative.clone();
    assert_eq!(
        serde_json::to_value(&same).unwrap(),
        serde_json::to_value(&plain).unwrap()
    );

    // a cumulative count: each slot's running total
    let signups = std::fs::read_to_string(root().join("examples/signups/signups.dpplan")).unwrap();
    let tree = |text: &str| {
        review(text)
            .queries
            .iter()
            .find_map(|q| q.one_release.clone())
            .unwrap()
    };
    let on_close = tree(&signups);
    assert!(
        on_close.ends_with("; each slot's running total is released when the slot closes"),
        "{on_close}"
    );
    let start = signups.find("cumulative count").unwrap();
    let end = start + signups[start..].find("  }\n").unwrap();
    let delayed = format!(
        "{}    release after 30 minutes\n{}",
        &signups[..end],
        &signups[end..]
    );
    let after = tree(&delayed);
    assert!(
        after.ends_with("; each slot's running total is released 30 minutes after the slot closes"),
        "{after}"
    );
}

/// The polylines of a figure's marks, as pixel points.
fn mark_lines(svg: &str) -> Vec<Vec<(f64, f64)>> {
    let marks = &svg[svg.find("<g class=\"marks\">").expect("a marks group")..];
    let marks = &marks[..marks.find("</g>").unwrap()];
    marks
        .split("<polyline")
        .skip(1)
        .map(|l| {
            let pts = &l[l.find("points=\"").unwrap() + 8..];
            pts[..pts.find('"').unwrap()]
                .split(' ')
                .filter(|p| !p.is_empty())
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

fn plot_area(svg: &str) -> [f64; 4] {
    let v = &svg[svg.find("data-plot=\"").unwrap() + 11..];
    let v: Vec<f64> = v[..v.find('"').unwrap()]
        .split(' ')
        .map(|x| x.parse().unwrap())
        .collect();
    [v[0], v[1], v[2], v[3]]
}

const ONE_OFF: &str = r#"plan "one-off" {
  privacy {
    unit row
    adjacency add_remove
    budget epsilon 2
    accountant basic
  }
  dataset d {
    source "d.csv"
    column x : float in [0, 1]
  }
  query a { count(d) noise laplace epsilon 0.58 schedule 3 times }
}
"#;

/// A one-off plan (all its releases at one moment): every curve rises
/// inside the axes (the old figure drew each as a single point, and the
/// basic curve above the axis' top), the four fractions reached by the
/// same release share one label, and no tick is dated before the first run.
#[test]
fn a_one_off_plans_cumulative_figure_draws_its_curves_inside_the_axes() {
    let r = review(ONE_OFF);
    let svg = report::figures::cumulative(&r).unwrap();
    let [l, t, right, b] = plot_area(&svg);
    let lines = mark_lines(&svg);
    assert!(lines.len() >= 2, "{} lines", lines.len());
    let mut rising = 0;
    for line in &lines {
        assert!(
            line.len() >= 2,
            "a line of one point draws nothing: {line:?}"
        );
        for &(x, y) in line {
            assert!(
                x >= l && x <= right && y >= t && y <= b,
                "({x}, {y}) off the axes"
            );
        }
        let ys: Vec<f64> = line.iter().map(|p| p.1).collect();
        let span = ys.iter().copied().fold(f64::MIN, f64::max)
            - ys.iter().copied().fold(f64::MAX, f64::min);
        if span > 20.0 {
            rising += 1;
        }
    }
    assert!(rising >= 2, "curves rise: {lines:?}");
    // basic composition: 3 · 0.58 = 1.74, drawn whole
    assert!(!svg.contains("↑ basic"), "1.74 fits under the top");
    assert!(svg.contains("basic composition ends at ε = 1.74"), "{svg}");
    assert_eq!(
        svg.matches("25–75 %").count() + svg.matches("25–100 %").count(),
        1
    );
    assert!(!svg.contains("day 0"), "a tick before the first run");
    // negative control: a plan spread over days is no staircase at one x
    let spread = review(&ONE_OFF.replace("schedule 3 times", "schedule every 1 day for 3 days"));
    let svg2 = report::figures::cumulative(&spread).unwrap();
    assert!(spread.cumulative.steps);
    let xs: std::collections::BTreeSet<i64> =
        mark_lines(&svg2)[1].iter().map(|p| p.0 as i64).collect();
    assert!(xs.len() >= 4, "steps on three days: {xs:?}");
}

/// A curve far above the budget is cut at the top and labelled with its
/// value, and said so in the figure's description.
#[test]
fn a_curve_far_above_the_budget_is_cut_and_labelled() {
    let r = review(
        &ONE_OFF
            .replace("schedule 3 times", "schedule 1000 times")
            .replace("epsilon 0.58", "epsilon 0.01")
            .replace("budget epsilon 2", "budget epsilon 2 delta 1e-6")
            .replace("accountant basic", "accountant best"),
    );
    let svg = report::figures::cumulative(&r).unwrap();
    assert!(svg.contains("↑ basic composition reaches ε = 10"), "{svg}");
    assert!(svg.contains("leaves the chart"), "{svg}");
    let [_, t, _, _] = plot_area(&svg);
    for line in mark_lines(&svg) {
        assert!(line.iter().all(|p| p.1 >= t), "{line:?}");
    }
}

/// A budget's fraction that is never reached says what the plan spends,
/// with the digits that show it is below (a total a hair under the budget
/// printed as the budget itself read as a contradiction).
#[test]
fn a_fraction_never_reached_says_what_the_plan_spends() {
    let r = review(&ONE_OFF.replace("budget epsilon 2", "budget epsilon 1.7400001"));
    let md = report::markdown(&r);
    let row = md
        .lines()
        .find(|l| l.starts_with("| 100 %"))
        .expect("the 100 % row");
    assert!(
        row.contains("never: the whole plan spends ε = 1.74,"),
        "{row}"
    );
    assert!(row.contains("99.99999"), "{row}");
    assert!(!row.contains("100.0 %"), "{row}");
}

/// The report's trade-off curve: its 1 % and 0.1 % points are exactly
/// `check`'s `attack_risk` on every example; every point lies on or above
/// the diagonal and rises with the false-positive rate; on a Gaussian-only
/// plan it is Φ(Φ⁻¹(α) + μ) to 1e-9 (statrs, independent of the accounting
/// crate; that it is never below is held against 40-digit mpmath values in
/// dpplan-accounting's tests/it/tradeoff.rs, as statrs' own Φ⁻¹ is only
/// good to about 1e-11 here); more noise, a lower curve (negative control).
#[test]
fn the_tradeoff_curve_is_the_checks_attack_risk_and_the_gaussian_closed_form() {
    use statrs::distribution::{ContinuousCDF, Normal};
    for (name, text) in examples() {
        let a = analyze(&text);
        let r = review(&text);
        let t = r
            .tradeoff
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no trade-off"));
        let risk = a.report.as_ref().unwrap().attack_risk.as_ref().unwrap();
        for fpr in [0.01, 0.001] {
            let p = t.points.iter().find(|p| p.fpr == fpr).unwrap();
            assert_eq!(Some(p.tpr), risk.tpr_at(fpr), "{name} at {fpr}");
        }
        for w in t.points.windows(2) {
            assert!(w[1].tpr >= w[0].tpr, "{name}: {w:?}");
        }
        for p in &t.points {
            assert!(p.tpr >= p.fpr - 1e-12 && p.tpr <= 1.0, "{name}: {p:?}");
        }
    }
    let rr =
        std::fs::read_to_string(root().join("examples/repeated-release/repeated-release.dpplan"))
            .unwrap();
    let t = review(&rr).tradeoff.unwrap();
    let mu = t.gdp_mu.expect("a Gaussian-only plan is μ-GDP");
    let n = Normal::new(0.0, 1.0).unwrap();
    for p in t.points.iter().filter(|p| p.fpr > 0.0 && p.fpr < 1.0) {
        let exact = n.cdf(n.inverse_cdf(p.fpr) + mu);
        assert!((p.tpr - exact).abs() < 1e-9, "{p:?} vs {exact}");
    }
    let noisier = review(&rr.replace("sigma 8", "sigma 16")).tradeoff.unwrap();
    let at = |t: &report::TradeOff| t.points.iter().find(|p| p.fpr == 0.01).unwrap().tpr;
    assert!(at(&noisier) < at(&t), "more noise, a lower curve");
}
