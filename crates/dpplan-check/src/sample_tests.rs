//! `sample units`: the releases it accounts as sampled, and everything it
//! refuses, each with its reason (negative controls: the same plan
//! unsampled is accepted, and costs more).

use crate::analyze;
use crate::test_support::report;
use dpplan_diagnostics::Code;

fn plan(unit: &str, adjacency: &str, sample: &str, query: &str) -> String {
    format!(
        "plan \"s\" {{\n  privacy {{\n    unit {unit}\n    adjacency {adjacency}\n    budget epsilon 100000 delta 1e-7\n  }}\n  dataset d {{\n    {sample}\n    column uid : id\n    column g : category {{ \"a\", \"b\" }}\n    column t : time\n    column x : float in [0, 10]\n    contribution {{\n      rows_per_unit 4\n      groups_per_unit 2\n      windows_per_unit 3\n    }}\n  }}\n{query}\n}}\n"
    )
}

fn codes(text: &str) -> Vec<Code> {
    analyze(text)
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.code)
        .collect()
}

const COUNT: &str =
    "  query q {\n    count(d)\n    noise gaussian sigma 10\n    schedule every 1 day for 30 days\n  }";

#[test]
fn each_accepted_query_is_accounted_as_sampled_and_costs_less() {
    for (agg, noise) in [
        ("count(d)", "gaussian sigma 10"),
        ("sum(d.x)", "laplace scale 40"),
        ("histogram(d by g)", "gaussian sigma 10"),
        ("count(distinct d.uid)", "gaussian sigma 3"),
        ("count(distinct d.uid by g)", "gaussian sigma 3"),
        ("histogram(d where x > 2 by g)", "laplace scale 10"),
    ] {
        let q = format!(
            "  query q {{\n    {agg}\n    noise {noise}\n    schedule every 1 day for 30 days\n  }}"
        );
        let sampled = report(&plan("user by uid", "add_remove", "sample units 2%", &q));
        assert_eq!(sampled.queries[0].sampled(), Some(0.02), "{agg}");
        let full = report(&plan("user by uid", "add_remove", "", &q));
        assert_eq!(full.queries[0].sampled(), None);
        let (s, f) = (sampled.total.unwrap().epsilon, full.total.unwrap().epsilon);
        assert!(s < f / 3.0, "{agg}: sampled {s} vs {f}");
        // the per-release figure is the amplified one too
        let (sp, fp) = (
            sampled.queries[0].per_release.as_ref().unwrap().epsilon,
            full.queries[0].per_release.as_ref().unwrap().epsilon,
        );
        assert!(sp < fp, "{agg}");
    }
}

#[test]
fn what_a_sample_cannot_run_is_refused_with_its_reason() {
    for (agg, extra) in [
        ("mean(d.x)", ""),
        ("quantile(d.x, 0.5)", "    candidates every 1\n"),
        ("top(d by g, 1)", ""),
        ("histogram(d by g) with total", ""),
        ("histogram(d by g keys from data)", ""),
        ("count(d)", "    window 1 day\n"),
        ("cumulative count(d)", ""),
    ] {
        let noise = if agg.starts_with("quantile") || agg.starts_with("top") {
            "exponential epsilon 0.5"
        } else {
            "laplace scale 10"
        };
        let q = format!(
            "  query q {{\n    {agg}\n    noise {noise}\n{extra}    schedule every 1 day for 30 days\n  }}"
        );
        let got = codes(&plan("user by uid", "add_remove", "sample units 2%", &q));
        assert_eq!(got, [Code::Unsupported], "{agg}");
        let a = analyze(&plan("user by uid", "add_remove", "sample units 2%", &q));
        let msg = &a.diagnostics.iter().find(|d| d.is_error()).unwrap().message;
        assert!(msg.contains("samples 2 % of its units"), "{agg}: {msg}");
        // negative control: unsampled, the same query is accepted
        let plain = codes(&plan("user by uid", "add_remove", "", &q));
        assert!(plain.is_empty(), "{agg}: {plain:?}");
    }
    // replace neighbours, a row unit, a rate outside (0, 1]
    assert_eq!(
        codes(&plan("user by uid", "replace", "sample units 2%", COUNT)),
        [Code::Unsupported]
    );
    assert_eq!(
        codes(&plan("row", "add_remove", "sample units 2%", COUNT)),
        [Code::Unsupported]
    );
    for bad in ["0%", "101%", "1.5", "-0.1", "nan"] {
        assert_eq!(
            codes(&plan(
                "user by uid",
                "add_remove",
                &format!("sample units {bad}"),
                COUNT
            )),
            [Code::InvalidParameter],
            "{bad}"
        );
    }
    // twice declared
    let twice = plan(
        "user by uid",
        "add_remove",
        "sample units 2%\n    sample units 3%",
        COUNT,
    );
    assert_eq!(codes(&twice), [Code::Duplicate]);
    // 100 % is no sampling
    let all = report(&plan(
        "user by uid",
        "add_remove",
        "sample units 100%",
        COUNT,
    ));
    assert_eq!(all.queries[0].sampled(), None);
}
