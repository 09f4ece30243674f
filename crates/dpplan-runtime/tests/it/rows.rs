//! Language v2 in the CSV engine, on data: a `where` filter decided per row
//! before bounding, bins as categories (both rules for values outside the
//! edges), the cells of several keys, and exact distinct counts — the
//! exact pre-noise aggregates against sums computed here from the same
//! rows, on 1 and on several threads, with bad data (NaN in a filtered
//! column, values outside the edges, an unknown category, empty ids).

use std::collections::{BTreeMap, HashSet};
use std::num::NonZeroUsize;

use dpplan_engine::rng::SecureRng;
use dpplan_engine::{CsvEngine, StatKind};
use dpplan_runtime::{planned_aggregates, RunOptions};

/// The plan's exact aggregates per query (its first part) on `csv`, each
/// query asked for alone; counts in rows (a count's grid 2^k undone).
fn aggregates(src: &str, csv: &str, threads: usize) -> BTreeMap<String, Vec<i128>> {
    let plan = dpplan_compile::compile(src).unwrap_or_else(|e| panic!("{e}"));
    let engine = CsvEngine
        .threads(NonZeroUsize::new(threads).unwrap())
        .block_size(64);
    let mut out = BTreeMap::new();
    let mut rng = SecureRng::from_seed_for_tests(11);
    for r in &plan.body.releases {
        let mut opts = RunOptions::default();
        opts.data.insert("trips".into(), "unused.csv".into());
        opts.queries = vec![r.name.clone()];
        let planned = planned_aggregates(&plan, &opts).unwrap();
        let [(ds, _, stats)] = planned.as_slice() else {
            panic!("one pass for `{}`", r.name)
        };
        let values = engine
            .aggregate_reader(ds, csv.as_bytes(), stats, &mut rng)
            .unwrap_or_else(|e| panic!("{e}"));
        let s = &stats[0];
        let count = !matches!(
            s.kind.unfiltered(),
            StatKind::Sum { .. }
                | StatKind::GroupedSum { .. }
                | StatKind::Cells {
                    column: Some(_),
                    ..
                }
        );
        let v = values[0]
            .iter()
            .map(|&x| if count { x >> -s.grid } else { x })
            .collect();
        out.insert(r.name.clone(), v);
    }
    out
}

const ROW_PLAN: &str = r#"plan "rides" {
  privacy { unit row adjacency add_remove budget epsilon 1000 }
  dataset trips {
    column rider_id : id
    column city : category { "Madrid", "Lisbon" }
    column district : category { "a", "b" }
    column fare : float in [0, 100]
    column length_km : float in [0, 1000]
  }
  query madrid_fares { count(trips where city == "Madrid" and fare > 10) noise laplace scale 1 schedule once }
  query not_cheap_sum { sum(trips.fare where not (fare <= 10 or city in { "Lisbon" })) noise laplace scale 1 schedule once }
  query lengths_drop { histogram(trips by bins(length_km, [0, 1, 2, 5])) noise laplace scale 1 schedule once }
  query lengths_clamp { histogram(trips where city == "Lisbon" by bins(length_km, [0, 1, 2, 5] outside clamp)) noise laplace scale 1 schedule once }
  query cells { histogram(trips by district, city) noise laplace scale 1 schedule once }
  query riders { count(distinct trips.rider_id) noise laplace scale 1 schedule once }
}
"#;

/// (rider, city, district, fare, length): the rows, including bad ones.
fn rows() -> Vec<(String, String, String, String, String)> {
    let mut out = Vec::new();
    let mut x: u64 = 7;
    for i in 0..3000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let city = ["Madrid", "Lisbon", "Paris"][(x >> 33) as usize % 3]; // Paris: unknown
        let district = ["a", "b", "z"][(x >> 40) as usize % 3]; // z: unknown
        let fare = match i % 50 {
            0 => "NaN".to_string(), // invalid: the row is dropped
            1 => String::new(),
            _ => format!("{}", ((x >> 20) % 400) as f64 / 10.0),
        };
        // some below 0 (clamped into [0, 1000] by the column bounds? no:
        // bins read the number as parsed), some past the last edge
        let length = format!("{}", ((x >> 10) % 80) as f64 / 10.0 - 1.0);
        let rider = if i % 97 == 0 {
            String::new()
        } else {
            format!("r{}", (x >> 45) % 400)
        };
        out.push((rider, city.to_string(), district.to_string(), fare, length));
    }
    out
}

fn csv(rows: &[(String, String, String, String, String)]) -> String {
    let mut s = String::from("rider_id,city,district,fare,length_km,started_at\n");
    for (r, c, d, f, l) in rows {
        s.push_str(&format!("{r},{c},{d},{f},{l},2026-03-02T14:05:00Z\n"));
    }
    s
}

#[test]
fn filters_bins_cells_and_distinct_give_the_exact_aggregates() {
    let rows = rows();
    let text = csv(&rows);
    // the independent computation, row by row; invalid_rows drop: a row
    // whose fare or length does not parse is dropped for every statistic
    let valid: Vec<_> = rows
        .iter()
        .filter_map(|(r, c, d, f, l)| {
            let f: f64 = f.parse().ok().filter(|v: &f64| !v.is_nan())?;
            let l: f64 = l.parse().ok()?;
            Some((r.as_str(), c.as_str(), d.as_str(), f, l))
        })
        .collect();
    let madrid = valid
        .iter()
        .filter(|v| v.1 == "Madrid" && v.3 > 10.0)
        .count() as i128;
    let bin = |l: f64, clamp: bool| -> Option<usize> {
        let edges = [0.0, 1.0, 2.0, 5.0];
        if !(0.0..=5.0).contains(&l) {
            return clamp.then_some(if l < 0.0 { 0 } else { 2 });
        }
        Some(edges[1..3].iter().filter(|&&e| e <= l).count())
    };
    let mut drop = vec![0i128; 3];
    let mut clamp = vec![0i128; 3];
    let mut cells = vec![0i128; 4];
    for v in &valid {
        if let Some(b) = bin(v.4, false) {
            drop[b] += 1;
        }
        if v.1 == "Lisbon" {
            clamp[bin(v.4, true).unwrap()] += 1;
        }
        let d = ["a", "b"].iter().position(|x| *x == v.2);
        let c = ["Madrid", "Lisbon"].iter().position(|x| *x == v.1);
        if let (Some(d), Some(c)) = (d, c) {
            cells[d * 2 + c] += 1;
        }
    }
    let riders: HashSet<&str> = valid
        .iter()
        .map(|v| v.0)
        .filter(|r| !r.is_empty())
        .collect();
    // the sum on the grid of its part: read the grid from the plan
    let plan = dpplan_compile::compile(ROW_PLAN).unwrap();
    let k = plan.body.release("not_cheap_sum").unwrap().parts[0].grid_exponent;
    let sum: i128 = valid
        .iter()
        .filter(|v| !(v.3 <= 10.0 || v.1 == "Lisbon"))
        .map(|v| (v.3 * 2f64.powi(-k)).round() as i128)
        .sum();
    for threads in [1, 3] {
        let got = aggregates(ROW_PLAN, &text, threads);
        assert_eq!(got["madrid_fares"], vec![madrid], "{threads}");
        assert_eq!(got["not_cheap_sum"], vec![sum], "{threads}");
        assert_eq!(got["lengths_drop"], drop, "{threads}");
        assert_eq!(got["lengths_clamp"], clamp, "{threads}");
        assert_eq!(got["cells"], cells, "{threads}");
        assert_eq!(got["riders"], vec![riders.len() as i128], "{threads}");
    }
    // the data really has what the test claims to cover
    assert!(
        drop.iter().sum::<i128>() < valid.len() as i128,
        "values outside the edges"
    );
    assert!(valid.iter().any(|v| v.1 == "Paris") && valid.iter().any(|v| v.2 == "z"));
    assert!(valid.len() < rows.len(), "invalid rows dropped");
}

/// Under `invalid_rows clamp` a number that does not parse is imputed (its
/// lower bound, 0) wherever it is read — the filter and the bins read the
/// same parsed value; nothing is dropped. Under `drop` the row leaves.
#[test]
fn under_clamp_filters_and_bins_read_the_imputed_value() {
    let extra = r#"query cheap { count(trips where fare < 5) noise laplace scale 1 schedule once }
  query fare_bins { histogram(trips by bins(fare, [0, 5, 100])) noise laplace scale 1 schedule once }
}
"#;
    let with_extra = format!("{}{extra}", ROW_PLAN.trim_end().trim_end_matches('}'));
    let clamped = with_extra.replace(
        "column length_km : float in [0, 1000]\n",
        "column length_km : float in [0, 1000]\n    invalid_rows clamp\n",
    );
    assert_ne!(clamped, with_extra);
    let rows = rows();
    let text = csv(&rows);
    let invalid = |f: &str| f.parse::<f64>().map_or(true, f64::is_nan);
    // imputed: an invalid fare reads as its lower bound, 0, everywhere
    let fare = |f: &str| {
        if invalid(f) {
            0.0
        } else {
            f.parse::<f64>().unwrap()
        }
    };
    let expect = |keep_invalid: bool| {
        let kept: Vec<f64> = rows
            .iter()
            .filter(|r| keep_invalid || !invalid(&r.3))
            .map(|r| fare(&r.3))
            .collect();
        let cheap = kept.iter().filter(|&&f| f < 5.0).count() as i128;
        let bins = vec![
            cheap,
            kept.iter().filter(|&&f| (5.0..=100.0).contains(&f)).count() as i128,
        ];
        (cheap, bins)
    };
    for (src, keep_invalid) in [(&clamped, true), (&with_extra, false)] {
        let (cheap, bins) = expect(keep_invalid);
        for threads in [1, 3] {
            let got = aggregates(src, &text, threads);
            assert_eq!(got["cheap"], vec![cheap], "{keep_invalid} {threads}");
            assert_eq!(got["fare_bins"], bins, "{keep_invalid} {threads}");
        }
    }
    // the control: the invalid rows are there, and clamp counts them
    assert!(rows.iter().any(|r| invalid(&r.3)));
    assert!(expect(true).0 > expect(false).0);
}

const USER_PLAN: &str = r#"plan "rides" {
  privacy { unit user by rider_id adjacency add_remove budget epsilon 100 }
  dataset trips {
    column rider_id : id
    column city : category { "Madrid", "Lisbon" }
    column fare : float in [0, 100]
    contribution { rows_per_unit 2 groups_per_unit 2 }
  }
  query madrid { count(trips where city == "Madrid") noise laplace scale 1 schedule once }
  query riders { count(distinct trips.rider_id where fare > 10) noise laplace scale 1 schedule once }
}
"#;

/// Under a user-level unit the filter is decided before bounding: a rider
/// with 5 Lisbon rows and 1 Madrid row keeps the Madrid row (bounding
/// first would keep it with probability 2/6); the distinct count is the
/// number of riders with a row passing the filter, whatever their rows.
#[test]
fn under_a_user_unit_the_filter_comes_before_bounding() {
    let mut s = String::from("rider_id,city,fare\n");
    for u in 0..300 {
        for _ in 0..5 {
            s.push_str(&format!("u{u},Lisbon,5\n"));
        }
        s.push_str(&format!(
            "u{u},Madrid,{}\n",
            if u % 3 == 0 { 20 } else { 1 }
        ));
    }
    s.push_str("only_lisbon,Lisbon,50\n");
    for threads in [1, 2] {
        let got = aggregates(USER_PLAN, &s, threads);
        assert_eq!(got["madrid"], vec![300], "{threads}");
        // u0, u3, … (100 riders) and only_lisbon have a fare above 10
        assert_eq!(got["riders"], vec![101], "{threads}");
    }
}

const DRIVERS_PLAN: &str = r#"plan "rides" {
  privacy { unit user by rider_id adjacency add_remove budget epsilon 10000 }
  dataset trips {
    column rider_id : id
    column driver_id : id
    column fare : float in [0, 100]
    contribution { rows_per_unit 2 }
  }
  query drivers { count(distinct trips.driver_id) noise laplace scale 1 schedule once }
  query riders { count(distinct trips.rider_id) noise laplace scale 1 schedule once }
  query fares { sum(trips.fare) noise laplace scale 1 schedule once }
}
"#;

/// Under a user-level unit, a distinct count of another id column counts
/// the ids of the rows each unit keeps (at most rows_per_unit), so one
/// unit moves it by at most rows_per_unit. Built so that the exact count
/// does not depend on which rows the reservoirs keep: riders `loyal…` ride
/// 5 times with one driver each; riders `many…` ride 5 times with 5 new
/// drivers (2 kept); a row without a driver adds no id.
#[test]
fn under_a_user_unit_distinct_ids_of_another_column_are_the_kept_rows_ids() {
    let mut s = String::from("rider_id,driver_id,fare\n");
    for u in 0..200 {
        for _ in 0..5 {
            s.push_str(&format!("loyal{u},d{},10\n", u % 50));
        }
    }
    for u in 0..300 {
        for k in 0..5 {
            s.push_str(&format!("many{u},m{u}-{k},10\n"));
        }
    }
    s.push_str("nodriver,,10\n");
    for threads in [1, 2, 3] {
        let got = aggregates(DRIVERS_PLAN, &s, threads);
        // 50 loyal drivers, then 2 kept of each of the 300 riders' 5
        assert_eq!(got["drivers"], vec![50 + 2 * 300], "{threads}");
        assert_eq!(got["riders"], vec![501], "{threads}");
        // the sum in the same pass still sees 2 kept rows per unit
        let plan = dpplan_compile::compile(DRIVERS_PLAN).unwrap();
        let k = plan.body.release("fares").unwrap().parts[0].grid_exponent;
        let ten = (10.0 * 2f64.powi(-k)).round() as i128;
        assert_eq!(got["fares"], vec![ten * (2 * 500 + 1)], "{threads}");
    }
    // the control: without the bound every driver would count (1,550)
    let unbounded = DRIVERS_PLAN.replace("rows_per_unit 2", "rows_per_unit 5");
    assert_eq!(aggregates(&unbounded, &s, 1)["drivers"], vec![50 + 5 * 300]);
}

const CELLS_PLAN: &str = r#"plan "rides" {
  privacy { unit user by rider_id adjacency add_remove budget epsilon 10000 }
  dataset trips {
    column rider_id : id
    column city : category { "Madrid", "Lisbon", "Porto" }
    column district : category { "a", "b" }
    column fare : float in [0, 100]
    contribution { rows_per_unit 20 groups_per_unit 6 rows_per_group 20 }
  }
  query users_by_city { count(distinct trips.rider_id by city) noise laplace scale 1 schedule once }
  query users_cells { count(distinct trips.rider_id by city, district) noise laplace scale 1 schedule once }
  query users_dear { count(distinct trips.rider_id where fare > 10 by city) noise laplace scale 1 schedule once }
  query rides_by_city { histogram(trips by city) noise laplace scale 1 schedule once }
}
"#;

/// Users per cell in the embedded engine: per cell, the riders with a
/// kept row there, counted once whatever their rows. With bounds loose
/// enough to keep every row, against the count computed here from the
/// rows (unknown categories and invalid fares dropped); with
/// groups_per_unit binding, against what no choice of kept cells can
/// change (the total is units × min(cells touched, groups_per_unit); no
/// cell above its loose count).
#[test]
fn users_per_cell_count_each_unit_once_per_kept_cell() {
    let mut s = String::from("rider_id,city,district,fare\n");
    let (cities, districts) = (["Madrid", "Lisbon", "Porto", "Paris"], ["a", "b"]);
    let mut x: u64 = 3;
    let mut rows = Vec::new();
    for u in 0..400u64 {
        let n = 1 + u % 7;
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let c = cities[(x >> 33) as usize % 4]; // Paris: outside the domain
            let d = districts[(x >> 40) as usize % 2];
            let fare = match (x >> 50) % 9 {
                0 => "NaN".to_string(),
                f => format!("{}", f * 3),
            };
            s.push_str(&format!("u{u},{c},{d},{fare}\n"));
            rows.push((u, c, d, fare));
        }
    }
    // the independent count: the set of (cell, unit) pairs of valid rows
    let valid = || {
        rows.iter()
            .filter(|r| r.3 != "NaN" && r.1 != "Paris")
            .map(|r| {
                let c = cities.iter().position(|x| *x == r.1).unwrap();
                let d = districts.iter().position(|x| *x == r.2).unwrap();
                (r.0, c, d, r.3.parse::<f64>().unwrap())
            })
    };
    let per_cell = |cell: &dyn Fn(usize, usize) -> usize, n: usize, dear: bool| {
        let pairs: HashSet<(usize, u64)> = valid()
            .filter(|v| !dear || v.3 > 10.0)
            .map(|v| (cell(v.1, v.2), v.0))
            .collect();
        let mut out = vec![0i128; n];
        for (c, _) in pairs {
            out[c] += 1;
        }
        out
    };
    let by_city = per_cell(&|c, _| c, 3, false);
    let cells = per_cell(&|c, d| c * 2 + d, 6, false);
    let dear = per_cell(&|c, _| c, 3, true);
    let rides = {
        let mut out = vec![0i128; 3];
        for v in valid() {
            out[v.1] += 1;
        }
        out
    };
    for threads in [1, 3] {
        let got = aggregates(CELLS_PLAN, &s, threads);
        assert_eq!(got["users_by_city"], by_city, "{threads}");
        assert_eq!(got["users_cells"], cells, "{threads}");
        assert_eq!(got["users_dear"], dear, "{threads}");
        // the control: the row histogram counts rides, not riders
        assert_eq!(got["rides_by_city"], rides, "{threads}");
        assert!(rides.iter().sum::<i128>() > by_city.iter().sum::<i128>());
    }
    // groups_per_unit 2 binds: each rider keeps min(its cells, 2) cells
    let tight = CELLS_PLAN.replace("groups_per_unit 6", "groups_per_unit 2");
    let mut touched: BTreeMap<u64, HashSet<usize>> = BTreeMap::new();
    for v in valid() {
        touched.entry(v.0).or_default().insert(v.1 * 2 + v.2);
    }
    let total: i128 = touched.values().map(|t| t.len().min(2) as i128).sum();
    assert!(touched.values().any(|t| t.len() > 2), "the bound binds");
    for threads in [1, 2] {
        let got = aggregates(&tight, &s, threads);
        assert_eq!(got["users_cells"].iter().sum::<i128>(), total, "{threads}");
        assert!(got["users_cells"].iter().zip(&cells).all(|(g, c)| g <= c));
        assert!(got["users_cells"].iter().sum::<i128>() < cells.iter().sum::<i128>());
    }
}
