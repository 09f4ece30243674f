//! Windowed queries: the whole schedule accounted as one vector release
//! over disjoint windows, against independent formulas (the vector's L2
//! computed here, then the exact Gaussian mechanism's curve or ε = L1/b),
//! with negative controls (more windows per unit: ε rises; no window: the
//! whole-data composition of the same schedule).

use crate::analyze;
use crate::test_support::{codes, gdp_epsilon, report, total};
use dpplan_diagnostics::Code;

const TRIPS: &str = "  dataset trips {\n    column rider_id : id\n    column started_at : time\n    column district : category { \"n\", \"s\", \"e\", \"w\" }\n    column fare : float in [0, 100]\n    contribution {\n      rows_per_unit 20\n      groups_per_unit 2\n      windows_per_unit 30\n      rows_per_window 4\n    }\n  }";

fn plan(unit: &str, accountant: &str, dataset: &str, query: &str) -> String {
    format!(
        "plan \"w\" {{\n  privacy {{\n    unit {unit}\n    adjacency add_remove\n    budget epsilon 1000 delta 1e-6\n    accountant {accountant}\n  }}\n{dataset}\n{query}\n}}\n"
    )
}

fn query(agg: &str, noise: &str, window: &str) -> String {
    format!("  query hourly {{\n    {agg}\n    noise {noise}\n    schedule every 1 hour for 7 days\n    {window}\n  }}")
}

#[test]
fn a_windowed_gaussian_count_is_one_release_of_l2_r_sqrt_w() {
    let text = plan(
        "user by rider_id",
        "gdp",
        TRIPS,
        &query("count(trips)", "gaussian sigma 40", "window 1 hour"),
    );
    let r = report(&text);
    let q = &r.queries[0];
    assert_eq!(q.releases, 168);
    // what later phases (review, diff, shared budgets) compose
    assert_eq!(q.accounted_releases, 1);
    // the vector: W = 30 windows of r = 4 rows
    let l2 = 4.0 * 30f64.sqrt();
    assert!((q.l2 - l2).abs() < 1e-12, "{}", q.l2);
    assert_eq!(q.l1, 120.0);
    let eps = r.total.as_ref().unwrap().epsilon;
    let want = gdp_epsilon(l2 / 40.0, 1e-6);
    assert!(eps >= want * (1.0 - 1e-9), "{eps} < {want}");
    assert!(eps <= want * (1.0 + 1e-6), "{eps} vs {want}");
    // the same figure under PLD (within its discretisation)
    let pld = total(&text.replace("accountant gdp", "accountant pld"));
    assert!(pld >= want * (1.0 - 1e-9) && pld <= want * 1.01, "{pld}");

    // negative control: one more window per unit, ε rises
    let more = total(&text.replace("windows_per_unit 30", "windows_per_unit 31"));
    let want_more = gdp_epsilon(4.0 * 31f64.sqrt() / 40.0, 1e-6);
    assert!(more > eps);
    assert!(
        (more - want_more).abs() <= want_more * 1e-6,
        "{more} {want_more}"
    );

    // negative control: without the window, the 168 releases each read the
    // whole data (c = rows_per_unit = 20): μ = √168 · 20 / 40
    let whole = total(&text.replace("window 1 hour", ""));
    let want_whole = gdp_epsilon(168f64.sqrt() * 20.0 / 40.0, 1e-6);
    assert!(
        (whole - want_whole).abs() <= want_whole * 1e-6,
        "{whole} {want_whole}"
    );
    assert!(whole > 10.0 * eps);
}

#[test]
fn the_derivation_shows_the_epsilon_with_and_without_the_window() {
    let text = plan(
        "user by rider_id",
        "gdp",
        TRIPS,
        &query("count(trips)", "gaussian sigma 40", "window 1 hour"),
    );
    let r = report(&text);
    let steps = &r.queries[0].parts[0].derivation;
    let line = steps
        .iter()
        .find(|s| s.starts_with("without the window"))
        .unwrap_or_else(|| panic!("{steps:#?}"));

    let number_after = |key: &str| -> f64 {
        let at = line.find(key).unwrap() + key.len();
        let tail = &line[at..];
        let end = tail.find([' ', ';', ')']).unwrap_or(tail.len());
        tail[..end].parse().unwrap()
    };
    let before = number_after("compose to ε = ");
    let after = number_after("L2 = 21.909: ε = ");
    // the figures equal the independent curves (6 significant digits)
    let want_before = gdp_epsilon(168f64.sqrt() * 20.0 / 40.0, 1e-6);
    let want_after = gdp_epsilon(4.0 * 30f64.sqrt() / 40.0, 1e-6);
    assert!((before - want_before).abs() <= want_before * 1e-5, "{line}");
    assert!((after - want_after).abs() <= want_after * 1e-5, "{line}");
    // and the "without" figure is what the plan costs without the window
    let whole = total(&text.replace("window 1 hour", ""));
    assert!((before - whole).abs() <= whole * 1e-5, "{before} {whole}");
}

#[test]
fn laplace_windows_cost_w_r_over_b_once() {
    let text = plan(
        "user by rider_id",
        "basic",
        TRIPS,
        &query("count(trips)", "laplace scale 200", "window 1 hour"),
    );
    // L1 = W·r = 120; one release: ε = 120 / 200
    assert!((total(&text) - 0.6).abs() < 1e-12);
    let more = total(&text.replace("rows_per_window 4", "rows_per_window 5"));
    assert!((more - 0.75).abs() < 1e-12);
    // without the window: 168 releases of 20/200
    let whole = total(&text.replace("window 1 hour", ""));
    assert!((whole - 16.8).abs() < 1e-9, "{whole}");
}

#[test]
fn a_windowed_sum_and_histogram_follow_the_cells() {
    // sum: W = 30 coordinates of r = 4 rows clamped to 100
    let s = report(&plan(
        "user by rider_id",
        "basic",
        TRIPS,
        &query("sum(trips.fare)", "laplace scale 1000", "window 1 hour"),
    ));
    assert_eq!(s.queries[0].l1, 30.0 * 4.0 * 100.0);
    // histogram: 30 windows × 2 groups = 60 cells, at most 4 rows in a
    // cell (min(rows_per_group = rows_per_unit, r)) and 120 rows in all:
    // 30 cells of 4 → L2 = 4·√30
    let h = report(&plan(
        "user by rider_id",
        "basic",
        TRIPS,
        &query(
            "histogram(trips by district)",
            "gaussian sigma 50",
            "window 1 hour",
        ),
    ));
    assert_eq!(h.queries[0].l1, 120.0);
    assert!((h.queries[0].l2 - 4.0 * 30f64.sqrt()).abs() < 1e-12);
    // with rows_per_group 1: 60 cells of 1 row: L2 = √60
    let h1 = report(&plan(
        "user by rider_id",
        "basic",
        &TRIPS.replace(
            "groups_per_unit 2",
            "groups_per_unit 2\n      rows_per_group 1",
        ),
        &query(
            "histogram(trips by district)",
            "gaussian sigma 50",
            "window 1 hour",
        ),
    ));
    assert!((h1.queries[0].l2 - 60f64.sqrt()).abs() < 1e-12);
}

#[test]
fn a_row_lies_in_one_window_so_the_schedule_costs_one_release() {
    let ds = "  dataset trips {\n    column started_at : time\n  }";
    let text = plan(
        "row",
        "basic",
        ds,
        &query("count(trips)", "laplace scale 2", "window 1 hour"),
    );
    assert!((total(&text) - 0.5).abs() < 1e-12);
    assert!((total(&text.replace("window 1 hour", "")) - 84.0).abs() < 1e-9);
}

/// Row-level `replace`: a replaced row may move to another window (L1 = 2
/// over 168 slots) or, with a single slot, leave the horizon (its time in
/// no slot) — L1 = 1, where a one-cell count that ignored it would say 0.
/// A filter changes neither figure (the move between windows dominates).
#[test]
fn under_row_level_replace_a_row_can_leave_the_horizon() {
    let ds =
        "  dataset trips {\n    column started_at : time\n    column fare : float in [0, 100]\n  }";
    let one = |agg: &str, schedule: &str| {
        let text = plan(
            "row",
            "basic",
            ds,
            &format!("  query hourly {{\n    {agg}\n    noise laplace scale 2\n    schedule {schedule}\n    window 1 hour\n  }}"),
        )
        .replace("adjacency add_remove", "adjacency replace");
        report(&text).queries[0].l1
    };
    assert_eq!(one("count(trips)", "every 1 hour for 7 days"), 2.0);
    assert_eq!(one("count(trips)", "every 1 hour for 1 hour"), 1.0);
    assert_eq!(
        one("count(trips where fare > 10)", "every 1 hour for 1 hour"),
        1.0
    );
    assert_eq!(
        one("count(trips where fare > 10)", "every 1 hour for 7 days"),
        2.0
    );
}

#[test]
fn the_window_rules_are_errors_with_dp024() {
    let q = |window: &str, schedule: &str| {
        format!("  query hourly {{\n    count(trips)\n    noise gaussian sigma 40\n    schedule {schedule}\n    {window}\n  }}")
    };
    let every = "every 1 hour for 7 days";
    let two_times = TRIPS.replace(
        "column started_at : time\n",
        "column started_at : time\n    column ended_at : time\n",
    );
    let no_time = TRIPS.replace("column started_at : time\n", "");
    let no_w = TRIPS.replace("windows_per_unit 30\n", "");
    let w0 = TRIPS.replace("windows_per_unit 30", "windows_per_unit 0");
    // (what, dataset, window, schedule, the codes)
    let cases: [(&str, &str, &str, &str, &[Code]); 8] = [
        (
            "not the period",
            TRIPS,
            "window 2 hours",
            every,
            &[Code::Window],
        ),
        // near miss: the same length in other units
        (
            "the period in minutes",
            TRIPS,
            "window 60 minutes",
            every,
            &[],
        ),
        ("no period", TRIPS, "window 1 hour", "once", &[Code::Window]),
        (
            "no time column",
            &no_time,
            "window 1 hour",
            every,
            &[Code::Window],
        ),
        (
            "two time columns",
            &two_times,
            "window 1 hour",
            every,
            &[Code::Window],
        ),
        (
            "no windows_per_unit under a user unit",
            &no_w,
            "window 1 hour",
            every,
            &[Code::Window],
        ),
        (
            "an invalid windows_per_unit is DP007 only",
            &w0,
            "window 1 hour",
            every,
            &[Code::InvalidParameter],
        ),
        (
            "a second window is DP013",
            TRIPS,
            "window 1 hour\n    window 1 hour",
            every,
            &[Code::Duplicate],
        ),
    ];
    for (what, dataset, window, schedule, want) in cases {
        let text = plan("user by rider_id", "best", dataset, &q(window, schedule));
        assert_eq!(codes(&text), want, "{what}");
    }
}

/// A quantile's releases are not counts or sums: a window on one is
/// refused (DP014), and the same quantile without it checks clean.
#[test]
fn a_windowed_quantile_is_refused() {
    let q = |window: &str| {
        format!("  query hourly {{\n    quantile(trips.fare, 0.5)\n    candidates every 10\n    noise exponential auto\n    schedule every 1 hour for 7 days\n    {window}\n  }}")
    };
    let with = plan("user by rider_id", "best", TRIPS, &q("window 1 hour"));
    assert_eq!(codes(&with), vec![Code::Unsupported], "{with}");
    let without = plan("user by rider_id", "best", TRIPS, &q(""));
    assert!(
        codes(&without).is_empty(),
        "{:?}",
        analyze(&without).diagnostics
    );
}

#[test]
fn windows_per_unit_equal_to_the_slots_gains_nothing_on_rows() {
    // W = N and r = rows_per_unit: the horizon vector's L2 is r·√N, the
    // whole-data composition's μ is √N·c: the same number
    let text = plan(
        "user by rider_id",
        "gdp",
        &TRIPS
            .replace("windows_per_unit 30", "windows_per_unit 168")
            .replace("rows_per_window 4", "rows_per_window 20"),
        &query("count(trips)", "gaussian sigma 40", "window 1 hour"),
    );
    let with = total(&text);
    let without = total(&text.replace("window 1 hour", ""));
    assert!((with - without).abs() <= without * 1e-9, "{with} {without}");
}

#[test]
fn a_windowed_discrete_gaussian_records_its_shape() {
    let r = report(&plan(
        "user by rider_id",
        "best",
        TRIPS,
        &query(
            "count(trips)",
            "discrete_gaussian sigma 40",
            "window 1 hour",
        ),
    ));
    let m = r.queries[0].parts[0].accounted.expect("accounted");
    assert_eq!(m.sensitivity.coords, 30);
    assert_eq!(m.sensitivity.linf, 4.0);
}

/// A user-level plan of one hourly Gaussian count ending with `tail` (its
/// window and delay statements).
fn hourly_count(tail: &str) -> String {
    plan(
        "user by rider_id",
        "best",
        TRIPS,
        &query("count(trips)", "gaussian sigma 40", tail),
    )
}

/// A user-level plan of one daily cumulative count with `noise`, ending
/// with `tail`.
fn running_count(noise: &str, tail: &str) -> String {
    plan(
        "user by rider_id",
        "best",
        TRIPS,
        &format!("  query running {{\n    cumulative count(trips)\n    noise {noise}\n    schedule every 1 day for 30 days\n{tail}  }}"),
    )
}

/// The resolved delay of the first query.
fn delay(text: &str) -> Option<f64> {
    let r = report(text);
    r.queries[0]
        .spec
        .as_ref()
        .expect("a spec")
        .schedule
        .release_after_seconds
}

/// The one diagnostic of `text`, its code and the text it points at.
fn refusal(text: &str) -> (Code, String, String) {
    let a = analyze(text);
    assert_eq!(a.diagnostics.len(), 1, "{:#?}", a.diagnostics);
    let d = &a.diagnostics[0];
    let span = d.primary.span;
    (
        d.code,
        text[span.start..span.end].to_string(),
        d.message.clone(),
    )
}

#[test]
fn release_after_is_in_the_schedule_in_whole_seconds() {
    let windowed = |after: &str| hourly_count(&format!("window 1 hour\n    {after}"));
    assert_eq!(delay(&windowed("")), None);
    assert_eq!(delay(&windowed("release after 2 hours")), Some(7200.0));
    assert_eq!(delay(&windowed("release after 0 seconds")), Some(0.0));
    // on the plan's decimals: 1.1 × 3600 is 3960.0000000000005 in floats
    assert_eq!(delay(&windowed("release after 1.1 hours")), Some(3960.0));
    assert_eq!(delay(&windowed("release after 1.5 minutes")), Some(90.0));
    assert_eq!(delay(&windowed("release after 1e3 seconds")), Some(1000.0));
    // `-0` is zero, not a negative zero
    let zero = delay(&windowed("release after -0 days")).unwrap();
    assert!(zero == 0.0 && zero.is_sign_positive());
    // a cumulative count takes one too
    let cumulative = running_count("gaussian sigma 40", "    release after 6 hours\n");
    assert_eq!(delay(&cumulative), Some(21_600.0));
}

/// A delay moves when a slot is released, not what it costs: the checked
/// plan (every accountant, every query's cost and derivation) is the same
/// with and without it but for the delay itself, for a window and a tree.
#[test]
fn release_after_changes_no_epsilon() {
    for text in [
        hourly_count("window 1 hour"),
        running_count("laplace scale 40", ""),
    ] {
        let delayed = text.replacen(
            "    schedule every",
            "    release after 2 hours\n    schedule every",
            1,
        );
        let (a, b) = (report(&text), report(&delayed));
        // the delay taken out, and the query's span (the text is longer)
        let without_delay = |mut r: crate::CheckedPlan| {
            r.queries[0].span = Default::default();
            let spec = r.queries[0].spec.as_mut().expect("a spec");
            let delay = spec.schedule.release_after_seconds.take();
            (r, delay)
        };
        let (a, _) = without_delay(a);
        let (b, delay) = without_delay(b);
        assert_eq!(delay, Some(7200.0));
        assert_eq!(a.total, b.total);
        assert_eq!(a, b);
        assert!(a.total.as_ref().unwrap().epsilon > 0.0);
        // the control: the same comparison sees a change of the noise
        let (louder, _) = without_delay(report(&delayed.replace("40", "80")));
        assert_ne!(louder.total, b.total);
        assert_ne!(louder, b);
    }
}

#[test]
fn release_after_is_refused_where_it_means_nothing_or_is_not_whole_seconds() {
    let with = |window: &str, after: &str| hourly_count(&format!("{window}\n    {after}"));
    // no window, no tree: DP024 at the statement
    let (code, at, message) = refusal(&with("", "release after 2 hours"));
    assert_eq!(code, Code::Window);
    assert_eq!(at, "release after 2 hours");
    assert!(
        message.contains("has neither a `window` nor a `cumulative` count"),
        "{message}"
    );
    // twice: DP013 at the second
    let (code, at, _) = refusal(&with(
        "window 1 hour",
        "release after 2 hours\n    release after 3 hours",
    ));
    assert_eq!(code, Code::Duplicate);
    assert_eq!(at, "release after 3 hours");
    // negative, not finite: DP007 at the amount
    for (after, amount, says) in [
        ("release after -1 hours", "-1", "cannot be negative"),
        ("release after NaN hours", "NaN", "must be finite"),
        ("release after inf seconds", "inf", "must be finite"),
        ("release after 1e999 seconds", "1e999", "must be finite"),
    ] {
        let (code, at, message) = refusal(&with("window 1 hour", after));
        assert_eq!(code, Code::InvalidParameter, "{after}");
        assert_eq!(at, amount, "{after}");
        assert!(message.contains(says), "{after}: {message}");
    }
    // not a whole number of seconds: DP007 at the duration
    for (after, duration) in [
        ("release after 0.5 seconds", "0.5 seconds"),
        ("release after 0.001 minutes", "0.001 minutes"),
        ("release after 1e-300 weeks", "1e-300 weeks"),
    ] {
        let (code, at, message) = refusal(&with("window 1 hour", after));
        assert_eq!(code, Code::InvalidParameter, "{after}");
        assert_eq!(at, duration, "{after}");
        assert!(message.contains("a whole number of seconds"), "{message}");
    }
    // the query with an error is left out of the accounting
    let a = analyze(&with("", "release after 2 hours"));
    assert!(a.has_errors());
}

#[test]
fn a_delay_is_described_in_its_largest_whole_unit() {
    use crate::schedule::describe_seconds;
    for (seconds, words) in [
        (7200.0, "2 hours"),
        (3600.0, "1 hour"),
        (1800.0, "30 minutes"),
        (90.0, "90 seconds"),
        (1.0, "1 second"),
        (0.0, "0 seconds"),
        (1_209_600.0, "2 weeks"),
        (172_800.0, "2 days"),
    ] {
        assert_eq!(describe_seconds(seconds), words);
    }
}
