//! Language v2 through the whole checker: filters, bins, several keys and
//! distinct, every derived number against an independent formula, with
//! negative controls (drop the filter, raise a bound: the number moves as
//! derived), and each new diagnostic at its place.

use dpplan_diagnostics::Code;

use crate::analyze;
use crate::test_support::report;

fn plan(unit: &str, adjacency: &str, contribution: &str, population: &str, query: &str) -> String {
    format!(
        "plan \"t\" {{\n  privacy {{\n    unit {unit}\n    adjacency {adjacency}\n    budget epsilon 100 delta 1e-6\n    accountant basic\n    {population}\n  }}\n  dataset trips {{\n    column rider_id : id\n    column city : category {{ \"Madrid\", \"Lisbon\", \"Porto\" }}\n    column district : category {{ \"a\", \"b\", \"c\", \"d\" }}\n    column hour : category {{ \"0\", \"1\", \"2\", \"3\", \"4\", \"5\" }}\n    column fare : float in [2, 50]\n    column length_km : float in [0, 100]\n    {contribution}\n  }}\n  query q {{\n    {query}\n    noise laplace scale 10\n    schedule once\n  }}\n}}\n"
    )
}

/// The one part's (L1, L2) and the query's ε alone (basic composition of
/// one release: L1/b).
fn l1_l2_eps(text: &str) -> (f64, f64, f64) {
    let r = report(text);
    let p = &r.queries[0].parts[0];
    (p.l1, p.l2, r.total.map_or(0.0, |t| t.epsilon))
}

/// The codes reported, but the per-person warning of a row unit on data
/// with an id (DP008), which every row-level plan here gets.
fn codes(text: &str) -> Vec<Code> {
    analyze(text)
        .diagnostics
        .iter()
        .map(|d| d.code)
        .filter(|c| *c != Code::WeakUnit)
        .collect()
}

const USER: &str = "contribution { rows_per_unit 6 groups_per_unit 2 rows_per_group 3 }";

#[test]
fn a_filter_makes_a_row_level_replace_count_cost_what_one_row_moves() {
    let filtered = plan(
        "row",
        "replace",
        "",
        "",
        "count(trips where city == \"Madrid\" and fare > 10)",
    );
    let (l1, l2, eps) = l1_l2_eps(&filtered);
    // a replaced row may enter or leave the filter: |Δ| ≤ 1, ε = 1/10
    assert_eq!((l1, l2), (1.0, 1.0));
    assert!((eps - 0.1).abs() < 1e-12, "{eps}");
    let derivation = &report(&filtered).queries[0].parts[0].derivation;
    assert!(
        derivation.iter().any(|s| s.contains("enter or leave")),
        "{derivation:?}"
    );
    // negative control: without the filter, and with every row kept
    // (`invalid_rows clamp`), the count is public (0, no cost)
    let clamp = "invalid_rows clamp";
    let (l1, _, eps) = l1_l2_eps(&plan("row", "replace", clamp, "", "count(trips)"));
    assert_eq!((l1, eps), (0.0, 0.0));
    // but under `invalid_rows drop` (the default) a row with an invalid
    // number is dropped: a filter of its own, sensitivity 1
    let dropped = plan("row", "replace", "", "", "count(trips)");
    let (l1, _, _) = l1_l2_eps(&dropped);
    assert_eq!(l1, 1.0);
    let derivation = &report(&dropped).queries[0].parts[0].derivation;
    assert!(
        derivation.iter().any(|s| s.contains("invalid_rows drop")),
        "{derivation:?}"
    );
    // add/remove: 1 either way
    let (l1, _, _) = l1_l2_eps(&plan(
        "row",
        "add_remove",
        "",
        "",
        "count(trips where fare > 10)",
    ));
    assert_eq!(l1, 1.0);
}

#[test]
fn a_filtered_sum_follows_rows_per_unit_and_the_adjacency() {
    let q = "sum(trips.fare where city in { \"Madrid\", \"Porto\" })";
    // user level, add/remove: c·max(|lo|, |hi|) = 6·50
    let (l1, _, _) = l1_l2_eps(&plan("user by rider_id", "add_remove", USER, "", q));
    assert_eq!(l1, 300.0);
    // negative control: raise rows_per_unit, the sensitivity rises with it
    let more = USER.replace("rows_per_unit 6", "rows_per_unit 9");
    let (l1, _, _) = l1_l2_eps(&plan("user by rider_id", "add_remove", &more, "", q));
    assert_eq!(l1, 450.0);
    // row level, replace: max(hi − lo, max(|lo|, |hi|)) = max(48, 50)
    let (l1, _, _) = l1_l2_eps(&plan("row", "replace", "", "", q));
    assert_eq!(l1, 50.0);
    // negative control: unfiltered, every row kept, it is hi − lo = 48
    let clamp = "invalid_rows clamp";
    let (l1, _, _) = l1_l2_eps(&plan("row", "replace", clamp, "", "sum(trips.fare)"));
    assert_eq!(l1, 48.0);
    // (invalid rows dropped: 50, as with a filter)
    let (l1, _, _) = l1_l2_eps(&plan("row", "replace", "", "", "sum(trips.fare)"));
    assert_eq!(l1, 50.0);
}

/// L1 and L2 of a unit's count vector over a product of keys: at most m
/// cells, at most g rows in each, c in all (packed greedily), computed
/// here from scratch.
fn packed(c: u64, m: u64, g: u64, cells: u64) -> (f64, f64) {
    let (mut left, mut l1, mut sq) = (c, 0u64, 0u64);
    for _ in 0..m.min(cells) {
        let x = left.min(g);
        l1 += x;
        sq += x * x;
        left -= x;
    }
    (l1 as f64, (sq as f64).sqrt())
}

#[test]
fn several_keys_and_bins_are_cells_of_the_product() {
    let q = "histogram(trips by district, hour)";
    let text = plan("user by rider_id", "add_remove", USER, "", q);
    let r = report(&text);
    let spec = r.queries[0].spec.as_ref().unwrap();
    assert_eq!(spec.groups.as_ref().unwrap().len(), 4 * 6);
    assert_eq!(spec.groups.as_ref().unwrap()[7], "b, 1");
    let (l1, l2, _) = l1_l2_eps(&text);
    let (e1, e2) = packed(6, 2, 3, 24);
    assert_eq!(l1, e1);
    assert!((l2 - e2).abs() < 1e-12, "{l2} vs {e2}");
    // negative control: one group more per unit raises both
    let more = USER
        .replace("groups_per_unit 2", "groups_per_unit 3")
        .replace("rows_per_unit 6", "rows_per_unit 9");
    let (l1b, l2b, _) = l1_l2_eps(&plan("user by rider_id", "add_remove", &more, "", q));
    assert_eq!((l1b, l2b), packed(9, 3, 3, 24));
    assert!(l1b > l1 && l2b > l2);
    // bins are categories: a key with 5 bins and a category of 3 cities
    let bins = "histogram(trips by bins(length_km, [0, 1, 2, 5, 10, 20]), city)";
    let r = report(&plan("row", "replace", "", "", bins));
    let spec = r.queries[0].spec.as_ref().unwrap();
    let groups = spec.groups.as_ref().unwrap();
    assert_eq!(groups.len(), 15);
    assert_eq!(groups[0], "[0, 1), Madrid");
    assert_eq!(groups[14], "[10, 20], Porto");
    assert_eq!(r.queries[0].parts[0].l1, 2.0);
    assert_eq!(r.queries[0].parts[0].coords, 2);
}

#[test]
fn a_one_cell_filtered_histogram_under_row_replace_is_not_public() {
    let one = "histogram(trips where fare > 3 by bins(fare, [0, 100]))";
    let (l1, _, _) = l1_l2_eps(&plan("row", "replace", "", "", one));
    assert_eq!(l1, 1.0);
    // without the filter, every row kept: still 1, since a row outside the
    // one bin is dropped (the derivation without drops said 0)
    let one = "histogram(trips by bins(fare, [0, 100]))";
    let (l1, _, _) = l1_l2_eps(&plan("row", "replace", "invalid_rows clamp", "", one));
    assert_eq!(l1, 1.0);
    let row = dpplan_mechanisms::sensitivity::UnitBound {
        user: false,
        rows: 1,
        groups: Some(1),
        rows_per_group: Some(1),
    };
    let adj = dpplan_syntax::ast::Adjacency::Replace;
    assert_eq!(
        dpplan_mechanisms::sensitivity::grouped(row, adj, 1, None).l1,
        0.0
    );
}

#[test]
fn distinct_ids_cost_one_whatever_the_rows_per_unit() {
    let q = "count(distinct trips.rider_id where city == \"Lisbon\")";
    for rows in [1, 6, 1000] {
        let c = USER.replace("rows_per_unit 6", &format!("rows_per_unit {rows}"));
        for adj in ["add_remove", "replace"] {
            let (l1, l2, eps) = l1_l2_eps(&plan("user by rider_id", adj, &c, "", q));
            assert_eq!((l1, l2), (1.0, 1.0), "{rows} {adj}");
            assert!((eps - 0.1).abs() < 1e-12);
        }
    }
    // negative control: the row count of the same unit costs rows_per_unit
    let c = USER.replace("rows_per_unit 6", "rows_per_unit 1000");
    let (l1, _, _) = l1_l2_eps(&plan(
        "user by rider_id",
        "add_remove",
        &c,
        "",
        "count(trips)",
    ));
    assert_eq!(l1, 1000.0);
    // row level: 1 under both adjacencies (the row count is 0 under replace)
    let (l1, _, _) = l1_l2_eps(&plan(
        "row",
        "replace",
        "",
        "",
        "count(distinct trips.rider_id)",
    ));
    assert_eq!(l1, 1.0);
    let clamp = "invalid_rows clamp";
    let (l1, _, _) = l1_l2_eps(&plan("row", "replace", clamp, "", "count(trips)"));
    assert_eq!(l1, 0.0);
}

/// The independent formula: the largest change of the number of distinct
/// ids when one unit of `c` rows (ids from a small universe) is added,
/// removed or replaced, over every data set of up to two other rows.
fn brute_distinct(c: usize, replace: bool) -> usize {
    let ids = 0..(c as u8 + 2);
    let tuples = |n: usize| -> Vec<Vec<u8>> {
        (0..n).fold(vec![vec![]], |acc, _| {
            acc.iter()
                .flat_map(|t| ids.clone().map(move |i| [t.clone(), vec![i]].concat()))
                .collect()
        })
    };
    let distinct = |rows: &[&[u8]]| -> usize {
        let mut all: Vec<u8> = rows.concat();
        all.sort_unstable();
        all.dedup();
        all.len()
    };
    let mut worst = 0;
    for others in (0..=2).flat_map(tuples) {
        for unit in tuples(c) {
            let base = distinct(&[&others]);
            if !replace {
                worst = worst.max(distinct(&[&others, &unit]).abs_diff(base));
                continue;
            }
            for other_unit in tuples(c) {
                let a = distinct(&[&others, &unit]);
                worst = worst.max(a.abs_diff(distinct(&[&others, &other_unit])));
            }
        }
    }
    worst
}

#[test]
fn distinct_ids_of_another_column_cost_rows_per_unit() {
    let q = "count(distinct trips.driver_id)";
    for rows in [1u64, 2, 3, 6, 1000] {
        let c = format!(
            "column driver_id : id\n    {}",
            USER.replace("rows_per_unit 6", &format!("rows_per_unit {rows}"))
        );
        for adj in ["add_remove", "replace"] {
            let text = plan("user by rider_id", adj, &c, "", q);
            let (l1, l2, eps) = l1_l2_eps(&text);
            assert_eq!((l1, l2), (rows as f64, rows as f64), "{rows} {adj}");
            assert!((eps - rows as f64 / 10.0).abs() < 1e-9, "{eps}");
            if rows <= 3 {
                let brute = brute_distinct(rows as usize, adj == "replace");
                assert_eq!(l1, brute as f64, "{rows} {adj}");
            }
            let derivation = &report(&text).queries[0].parts[0].derivation;
            assert!(
                derivation.iter().any(|s| s.contains("not the unit's id")),
                "{derivation:?}"
            );
        }
    }
    // negative control: the unit's own id costs 1 whatever its rows
    let c = format!("column driver_id : id\n    {USER}");
    let keyed = "count(distinct trips.rider_id)";
    let (l1, _, _) = l1_l2_eps(&plan("user by rider_id", "add_remove", &c, "", keyed));
    assert_eq!(l1, 1.0);
    // and one row per unit: the brute force agrees that one row moves it by 1
    assert_eq!(brute_distinct(1, false), 1);
}

#[test]
fn bad_filters_bins_and_distinct_are_located_errors() {
    let p = |q: &str| plan("row", "replace", "", "", q);
    assert_eq!(
        codes(&p("count(trips where city == \"Paris\")")),
        [Code::UnknownCategory]
    );
    assert_eq!(
        codes(&p("count(trips where city in { \"Madrid\", \"Rome\" })")),
        [Code::UnknownCategory]
    );
    assert_eq!(
        codes(&p("count(trips where fare == \"high\")")),
        [Code::TypeMismatch]
    );
    assert_eq!(
        codes(&p("count(trips where city > 3)")),
        [Code::TypeMismatch]
    );
    assert_eq!(
        codes(&p("count(trips where city < \"Madrid\")")),
        [Code::TypeMismatch]
    );
    assert_eq!(
        codes(&p("count(trips where rider_id == \"x\")")),
        [Code::TypeMismatch]
    );
    assert_eq!(
        codes(&p("count(trips where fare > max(trips.fare))")),
        [Code::DataDependent]
    );
    assert_eq!(
        codes(&p("count(trips where fare > length_km)")),
        [Code::Unsupported]
    );
    assert_eq!(codes(&p("count(trips where speed > 3)")), [Code::Undefined]);
    assert_eq!(
        codes(&p("count(trips where fare > inf)")),
        [Code::InvalidParameter]
    );
    assert_eq!(
        codes(&p("histogram(trips by bins(fare, [0, 5, 5, 10]))")),
        [Code::InvalidBins]
    );
    assert_eq!(
        codes(&p("histogram(trips by bins(fare, [1]))")),
        [Code::InvalidBins]
    );
    assert_eq!(
        codes(&p("histogram(trips by bins(fare, [0, nan]))")),
        [Code::InvalidBins]
    );
    assert_eq!(
        codes(&p("histogram(trips by bins(city, [0, 1]))")),
        [Code::TypeMismatch]
    );
    assert_eq!(
        codes(&p("histogram(trips by city, city)")),
        [Code::Duplicate]
    );
    assert_eq!(
        codes(&p("sum(distinct trips.rider_id)")),
        [Code::TypeMismatch]
    );
    assert_eq!(
        codes(&p("count(distinct trips.city)")),
        [Code::TypeMismatch]
    );
    // grouped, it counts units per cell: refused under a row unit
    assert_eq!(
        codes(&p("count(distinct trips.rider_id by city)")),
        [Code::Unsupported]
    );
    // the location: the unknown category itself
    let text = p("count(trips where city == \"Paris\")");
    let a = analyze(&text);
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code == Code::UnknownCategory)
        .unwrap();
    assert_eq!(&text[d.primary.span.start..d.primary.span.end], "\"Paris\"");
    assert!(
        d.help.as_deref().unwrap_or("").contains("\"Madrid\""),
        "{d:?}"
    );
    // numbers in a set on a number column are an `or` of equalities
    let r = report(&p("count(trips where fare in { 10, 20 })"));
    assert_eq!(r.queries[0].parts[0].l1, 1.0);
}

#[test]
fn a_sparse_product_is_warned_against_the_noise() {
    let q = "histogram(trips by district, hour)";
    // population 100 rows over 24 cells: ≈ 4.2 per cell, below b·ln 20 ≈ 30
    let text = plan("row", "add_remove", "", "population 100", q);
    assert_eq!(codes(&text), [Code::SparseCells]);
    let a = analyze(&text);
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code == Code::SparseCells)
        .unwrap();
    assert!(d.message.contains("29.957"), "{}", d.message);
    // negative control: 5·10⁵ rows over 24 cells are far above the noise
    assert!(codes(&plan("row", "add_remove", "", "population 500000", q)).is_empty());
    // no population: only past the fixed threshold of 1,000 cells
    assert!(codes(&plan("row", "add_remove", "", "", q)).is_empty());
}

/// A misspelt column in a filter is DP012 with "did you mean", as in a
/// target or a group key (one check of a column name for all three); a
/// name far from every column gets no suggestion (negative control).
#[test]
fn a_misspelt_filter_column_gets_a_suggestion() {
    let text = plan(
        "user by rider_id",
        "add_remove",
        "contribution {\n      rows_per_unit 5\n    }",
        "",
        "count(trips where ctiy == \"Madrid\")",
    );
    let a = analyze(&text);
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code == Code::Undefined)
        .expect("DP012");
    assert!(
        d.help
            .as_deref()
            .unwrap_or("")
            .contains("did you mean `city`"),
        "{d:#?}"
    );
    let far = text.replace("ctiy", "zzzzzz");
    let a = analyze(&far);
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.code == Code::Undefined)
        .expect("DP012");
    assert!(
        !d.help.as_deref().unwrap_or("").contains("did you mean"),
        "{d:#?}"
    );
}

/// Users per cell, `count(distinct trips.rider_id by …)` under the rider
/// as unit: each rider adds 1 to each of at most groups_per_unit cells,
/// whatever its rows there. Against the independent formula (L1 = m, L2 =
/// √m under add/remove with m = min(groups_per_unit, cells, rows); under
/// replace the supports of the two units are disjoint: min(2m, cells)),
/// with negative controls: the row histogram of the same unit, and a
/// larger groups_per_unit.
#[test]
fn users_per_cell_cost_what_groups_per_unit_allows() {
    let user =
        |adj: &str, contribution: &str, q: &str| plan("user by rider_id", adj, contribution, "", q);
    let q = "count(distinct trips.rider_id by district)";
    // add/remove: m = 2 cells of 4, L1 = 2, L2 = √2, ε = 2/10
    let (l1, l2, eps) = l1_l2_eps(&user("add_remove", USER, q));
    assert_eq!((l1, l2), (2.0, 2f64.sqrt()));
    assert!((eps - 0.2).abs() < 1e-12, "{eps}");
    // replace: 2 + 2 disjoint cells of 4: L1 = 4, L2 = 2
    let (l1, l2, _) = l1_l2_eps(&user("replace", USER, q));
    assert_eq!((l1, l2), (4.0, 2.0));
    // … but 3 cells leave room for 3 only: L1 = 3
    let (l1, _, _) = l1_l2_eps(&user(
        "replace",
        USER,
        "count(distinct trips.rider_id by city)",
    ));
    assert_eq!(l1, 3.0);
    // a product of keys counts cells: 4 × 6 = 24, m = 2 still
    let (l1, _, _) = l1_l2_eps(&user(
        "add_remove",
        USER,
        "count(distinct trips.rider_id by district, hour)",
    ));
    assert_eq!(l1, 2.0);
    // negative control: the row histogram of the same unit counts rows
    // (2 groups × 3 rows per group = 6)
    let (l1, _, _) = l1_l2_eps(&user("add_remove", USER, "histogram(trips by district)"));
    assert_eq!(l1, 6.0);
    // negative control: a looser groups_per_unit moves the claim
    let loose = "contribution { rows_per_unit 6 groups_per_unit 3 rows_per_group 3 }";
    let (l1, _, eps) = l1_l2_eps(&user("add_remove", loose, q));
    assert_eq!(l1, 3.0);
    assert!((eps - 0.3).abs() < 1e-12, "{eps}");
    // the derivation says why the rows do not enter
    let r = report(&user("add_remove", USER, q));
    let part = &r.queries[0].parts[0];
    assert_eq!(
        part.statistic,
        dpplan_vocab::Statistic::GroupedDistinctCount
    );
    assert!(
        part.derivation
            .iter()
            .any(|s| s.contains("counts once in each cell")),
        "{:?}",
        part.derivation
    );
    // refused: another id column grouped, no groups_per_unit, a row unit
    let two_ids = plan(
        "user by rider_id",
        "add_remove",
        USER,
        "",
        "count(distinct trips.rider_id by district)",
    )
    .replace(
        "column rider_id : id\n",
        "column rider_id : id\n    column trip_id : id\n",
    );
    assert!(codes(&two_ids).is_empty(), "{:?}", codes(&two_ids));
    let other = two_ids.replace("distinct trips.rider_id by", "distinct trips.trip_id by");
    assert_eq!(codes(&other), [Code::Unsupported]);
    let no_groups = user("add_remove", "contribution { rows_per_unit 6 }", q);
    assert_eq!(codes(&no_groups), [Code::UnboundedGroups]);
    assert_eq!(
        codes(&plan("row", "replace", "", "", q)),
        [Code::Unsupported]
    );
}
