//! Identical Laplace releases up to 10¹²: the advanced accountant's exact
//! optimal composition (`accountants/kov.rs`, Kairouz–Oh–Viswanath Thm 3.3)
//! against an independent 50-digit reference (`kov_long/reference.py`:
//! mpmath, the sum term by term below 10⁷ releases, Euler–Maclaurin
//! summation above), for k from 1 to 10¹², several ε₀ and δ from 10⁻³ to
//! 10⁻¹²: ε is not below the exact value (δ_ref(ε) ≤ δ) and within 0.1 % of
//! it (δ_ref(ε/1.001) > δ). Under CI=true a missing Python/mpmath fails the
//! test; elsewhere it says it skipped. `scripts/test-deps.sh` installs the
//! pinned mpmath in `target/test-deps/mpmath-venv`.

use dpplan_accounting::*;
use serde_json::{json, Value};

use crate::common;

/// `count` releases of a count (sensitivity 1) with Laplace noise of
/// scale `b` (also the single-release tests' plan: `lone_laplace.rs`).
pub(crate) fn laplace(b: f64, count: u64) -> Vec<Release> {
    vec![Release {
        sample: None,
        mechanism: Mechanism {
            kind: NoiseKind::Laplace,
            scale: b,
            sensitivity: Sensitivity::scalar(1.0),
        },
        count,
    }]
}

fn advanced(b: f64, k: u64, delta: f64) -> Bound {
    epsilon(&laplace(b, k), delta, Accountant::Advanced).unwrap()
}

fn f(x: f64) -> String {
    format!("{x:?}")
}

/// The mpmath reference on `doc` ([`common::reference`]).
fn reference(doc: &Value) -> Option<Value> {
    common::reference("kov_long/reference.py", doc)
}

fn num(v: &Value) -> f64 {
    v.as_str().unwrap().parse().unwrap()
}

struct Case {
    k: u64,
    b: f64,
    delta: f64,
    eps: f64,
}

fn cases() -> Vec<Case> {
    let ks: [u64; 10] = [
        1,
        2,
        7,
        100,
        10_000,
        1_000_000,
        100_000_000,
        10_000_000_000,
        123_456_789_012,
        1_000_000_000_000,
    ];
    let mut out = vec![];
    for &k in &ks {
        // a large, a moderate and a "long schedule" ε₀ (3/√k)
        let mut e0s = vec![2.0, 0.3, 3.0 / (k as f64).sqrt()];
        e0s.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
        for e0 in e0s {
            let b = 1.0 / e0;
            for delta in [1e-3, 1e-6, 1e-9, 1e-12] {
                let bound = advanced(b, k, delta);
                assert!(
                    bound.detail.starts_with("KOV optimal composition"),
                    "k = {k}, ε₀ = {e0}, δ = {delta}: {}",
                    bound.detail
                );
                out.push(Case {
                    k,
                    b,
                    delta,
                    eps: bound.epsilon,
                });
            }
        }
    }
    out
}

#[test]
fn exact_composition_to_1e12_releases_is_never_below_and_within_a_tenth_of_a_percent() {
    let cases = cases();
    let docs: Vec<Value> = cases
        .iter()
        .map(|c| {
            json!({"k": c.k.to_string(), "l1": f(1.0), "b": f(c.b),
                   "eps": [f(c.eps), f(c.eps / 1.001), f(c.eps * (1.0 - 1e-7))]})
        })
        .collect();
    let Some(out) = reference(&json!({"cases": docs, "selfcheck": true})) else {
        return;
    };
    // the reference's two methods agree where both run (k = 10⁸)
    let agree = out["selfcheck"].as_f64().unwrap();
    assert!(agree < 1e-30, "reference methods disagree by {agree:e}");
    let mut bad = vec![];
    let mut tight_1e7 = 0;
    for (c, v) in cases.iter().zip(out["cases"].as_array().unwrap()) {
        let (at, at_tenth, at_1e7) = (num(&v[0]), num(&v[1]), num(&v[2]));
        if at > c.delta {
            bad.push(format!(
                "k = {}, b = {}, δ = {}: ε = {} below the exact value (δ_ref = {at:e})",
                c.k, c.b, c.delta, c.eps
            ));
        }
        if c.eps > 0.0 && at_tenth <= c.delta {
            bad.push(format!(
                "k = {}, b = {}, δ = {}: ε = {} more than 0.1 % above the exact value",
                c.k, c.b, c.delta, c.eps
            ));
        }
        if at_1e7 > c.delta {
            tight_1e7 += 1;
        }
    }
    eprintln!(
        "{} cases; within 1e-7 of the exact value: {tight_1e7}",
        cases.len()
    );
    assert!(cases.len() >= 100);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The case: 10⁸ releases of ε₀ = 10⁻⁴ (Laplace b = 10⁴, Δ₁ = 1) at
/// δ = 10⁻⁶, true value given as [4.88641, 4.88655] (RDP gave 5.2214). The
/// 50-digit direct sum puts it at 4.8865540 (δ(4.88655) = 1.000019·10⁻⁶,
/// δ(4.8865535) = 1.0000024·10⁻⁶): the interval's upper end is 4·10⁻⁶ low,
/// and the bound lands just above it.
#[test]
fn hundred_million_releases_land_in_the_published_interval() {
    let b = advanced(1e4, 100_000_000, 1e-6);
    let e = b.epsilon;
    eprintln!("10⁸ × 10⁻⁴-DP at δ = 1e-6: ε = {e} ({})", b.detail);
    assert!((4.88641..=4.88656).contains(&e), "ε = {e}");
    let rdp = epsilon(&laplace(1e4, 100_000_000), 1e-6, Accountant::Rdp)
        .unwrap()
        .epsilon;
    assert!(e < rdp / 1.06, "exact {e} vs RDP {rdp}");
}

/// Negative controls: one release fewer, or a smaller ε₀, lowers ε — and the
/// lower value is caught below the reference for the original plan, so the
/// soundness check above can fail.
#[test]
fn one_release_fewer_or_a_smaller_eps0_lowers_epsilon_and_is_caught() {
    let mut docs = vec![];
    // (k, b, δ, releases dropped for the "caught" check: at 10¹² one
    // release moves ε by ~10⁻¹² relative, below the bound's own slack)
    for (k, b, delta, drop) in [
        (100_000_000u64, 1e4, 1e-6, 1),
        (1_000_000_000_000, 1e6, 1e-9, 1_000_000),
        (10_000, 0.5, 1e-3, 1),
    ] {
        let e = advanced(b, k, delta).epsilon;
        assert!(advanced(b, k - 1, delta).epsilon < e, "k − 1 not below");
        let fewer = advanced(b, k - drop, delta).epsilon;
        let smaller = advanced(b * 1.0001, k, delta).epsilon;
        assert!(fewer < e, "k − {drop}: {fewer} vs {e}");
        assert!(smaller < e, "ε₀ smaller: {smaller} vs {e}");
        docs.push(json!({"k": k.to_string(), "l1": f(1.0), "b": f(b),
                         "eps": [f(fewer), f(smaller)], "delta": delta}));
    }
    let Some(out) = reference(&json!({"cases": docs})) else {
        return;
    };
    for (d, v) in docs.iter().zip(out["cases"].as_array().unwrap()) {
        let delta = d["delta"].as_f64().unwrap();
        for (what, x) in ["fewer releases", "smaller ε₀"]
            .iter()
            .zip(v.as_array().unwrap())
        {
            assert!(
                num(x) > delta,
                "{what} for {d}: not caught below the reference ({})",
                num(x)
            );
        }
    }
}

/// The exact method is for identical releases only: two groups of different
/// ε₀ are not claimed as KOV, and a Gaussian in the plan leaves the
/// heterogeneous theorems in charge (PLD and RDP are the tight accountants
/// there); both stay above the exact KOV value of the first group alone,
/// the optimal composition of a subset of their releases.
#[test]
fn mixed_plans_are_not_claimed_as_the_exact_composition() {
    let mut plan = laplace(1e4, 1_000_000);
    plan.extend(laplace(2e4, 1_000_000));
    let b = epsilon(&plan, 1e-6, Accountant::Advanced).unwrap();
    assert!(!b.detail.starts_with("KOV"), "{}", b.detail);
    let one = advanced(1e4, 1_000_000, 1e-6).epsilon;
    assert!(b.epsilon > one, "{} vs {one}", b.epsilon);
    let mut with_gauss = laplace(1e4, 1_000_000);
    with_gauss.push(Release {
        sample: None,
        mechanism: Mechanism {
            kind: NoiseKind::Gaussian,
            scale: 100.0,
            sensitivity: Sensitivity::scalar(1.0),
        },
        count: 10,
    });
    let g = epsilon(&with_gauss, 1e-6, Accountant::Advanced).unwrap();
    assert!(!g.detail.starts_with("KOV"), "{}", g.detail);
    assert!(g.epsilon > one, "{} vs {one}", g.epsilon);
}

/// Closed forms without the reference: one release (δ(ε) = p(1 − e^{ε−ε₀}),
/// p = e^ε₀/(1+e^ε₀), so ε = ε₀ + ln(1 − δ/p)), δ = 0 (k·ε₀) and a δ above
/// the total variation distance (0).
#[test]
fn one_release_and_the_extreme_deltas_match_their_closed_forms() {
    for (e0, delta) in [(1.0f64, 1e-3), (0.1, 1e-6), (3.0, 0.5), (1e-6, 1e-9)] {
        let p = e0.exp() / (1.0 + e0.exp());
        let exact = (e0 + (-delta / p).ln_1p()).max(0.0);
        let e = advanced(1.0 / e0, 1, delta).epsilon;
        assert!(
            e >= exact && e <= exact * (1.0 + 1e-12) + 1e-300,
            "ε₀ = {e0}, δ = {delta}: {e} vs {exact}"
        );
    }
    let pure = advanced(1e4, 1_000_000_000_000, 0.0).epsilon;
    assert_eq!(pure, 1e8);
    // two releases of ε₀ = 1: total variation (δ at ε = 0) is p² − q² = tanh(1/2)
    let tv = (0.5f64).tanh();
    assert_eq!(advanced(1.0, 2, tv * 1.000001).epsilon, 0.0);
    assert!(advanced(1.0, 2, tv * 0.999999).epsilon > 0.0);
}
