//! Users per cell in daily windows, post-processed, as cron runs it: a
//! run a few minutes after midnight releases the day that has just closed
//! (never the day that has just begun, whose first rows are already in the
//! data); missed days are backfilled in order; a run long after the
//! schedule's end releases the last window and nothing more; the values
//! are each day's riders per city, exactly (σ 0.05, rounded: a noise
//! beyond ±0.5 has probability 10⁻²³), with the
//! mechanism's value kept as `raw_value`; the ledger verifies.

use crate::support::{jan_2026 as unix, text, Scheduled};

const PLAN: &str = r#"plan "riders" {
  privacy {
    unit user by rider
    adjacency add_remove
    budget epsilon 100000 delta 1e-6
  }
  dataset trips {
    source "t.csv"
    column rider : id
    column city : category { "a", "b" }
    column t : time
    contribution {
      rows_per_unit 100
      groups_per_unit 2
      windows_per_unit 10
      rows_per_window 6
    }
  }
  query riders {
    count(distinct trips.rider by city)
    noise gaussian sigma 0.05
    window 1 day
    postprocess nonnegative, round
    schedule every 1 day from 2026-01-01 until 2026-01-06
  }
}
"#;

/// Day d's trips: riders r1..r(d) ride in `a` (r1 three times), rider z
/// in `b` — so day d has d riders in `a` and 1 in `b` — plus a trip in
/// `b` at 00:01 by rider y (in the data of a run at 00:05).
fn rows(day: i64) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    for r in 1..=day {
        let n = if r == 1 { 3 } else { 1 };
        for k in 0..n {
            out.push((unix(day, 10, k), format!("r{r},a")));
        }
    }
    out.push((unix(day, 12, 0), "z,b".to_string()));
    out.push((unix(day, 0, 1), "y,b".to_string()));
    out
}

/// Riders per city on day `day`: (a, b).
fn expected(day: i64) -> (f64, f64) {
    (day as f64, 2.0)
}

/// `dpplan run` at `at`, with the trips as they are then.
fn run_at(s: &Scheduled, at: i64) -> (std::process::Output, serde_json::Value) {
    let mut csv = String::from("rider,city,t\n");
    for d in 1..=5 {
        for (t, row) in rows(d).into_iter().filter(|(t, _)| *t < at) {
            csv.push_str(&format!("{row},{t}\n"));
        }
    }
    std::fs::write(s.dir.join("t.csv"), csv).unwrap();
    s.run_at(at, &[])
}

/// (slot, (riders in a, riders in b), backfilled) of each fresh release;
/// checks each cell's raw value is the mechanism's, near its value.
fn fresh(v: &serde_json::Value) -> Vec<(u64, (f64, f64), bool)> {
    crate::support::fresh_results(v)
        .map(|r| {
            let cells = r["cells"].as_array().unwrap();
            assert_eq!(cells[0]["group"], "a");
            assert_eq!(cells[1]["group"], "b");
            for c in cells {
                let (x, raw) = (
                    c["value"].as_f64().unwrap(),
                    c["raw_value"].as_f64().unwrap(),
                );
                assert!(x.fract() == 0.0 && (x - raw).abs() < 0.5, "{c}");
            }
            (
                r["slot"].as_u64().unwrap(),
                (
                    cells[0]["value"].as_f64().unwrap(),
                    cells[1]["value"].as_f64().unwrap(),
                ),
                r["backfilled"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

#[test]
fn daily_riders_per_city_from_cron_after_missed_days_and_the_end() {
    let s = Scheduled::new(PLAN);
    // 00:05 on day 2: day 1 has closed, day 2 (rider y already rode) has not
    let (o, v) = run_at(&s, unix(2, 0, 5));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(fresh(&v), [(0, expected(1), false)]);
    // no run on days 3 and 4: day 5's run backfills days 2 and 3 in order
    // and releases day 4 on time
    let (o, v) = run_at(&s, unix(5, 0, 5));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        fresh(&v),
        [
            (1, expected(2), true),
            (2, expected(3), true),
            (3, expected(4), false)
        ]
    );
    // long after the schedule's end: the last window (the latest closed
    // one, so not a backfill), then nothing
    let (o, v) = run_at(&s, unix(300, 0, 5));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(fresh(&v), [(4, expected(5), false)]);
    let (o, v) = run_at(&s, unix(301, 0, 5));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(fresh(&v).is_empty(), "{v}");
    s.verify();
}
