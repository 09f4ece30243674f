//! One Laplace release: the exact ε(δ) = ε₀ + 2·ln(1 − δ) that the PLD
//! accountant gives in closed form (`accountants/pld_laplace.rs`,
//! `lone_laplace_epsilon`), and that the per-query figures take
//! (`fast_best`), against a 60-digit quadrature of the hockey-stick
//! divergence of the Laplace pair (`lone_laplace/reference.py`, no closed
//! form used): the printed ε is not below the truth (δ_ref(ε) ≤ δ) and no
//! ε 10⁻⁹ lower would hold (δ_ref > δ). Negative controls: the RDP bound it
//! replaces is above it, two releases do not take the closed form, and
//! nothing but ε₀ is printed at δ = 0. Under CI=true a missing mpmath fails
//! the test.

use dpplan_accounting::*;
use serde_json::{json, Value};

use crate::common;
use crate::kov_long::laplace;

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

#[test]
fn one_laplace_release_is_accounted_exactly() {
    let mut cases = vec![];
    let mut doc = vec![];
    for b in [0.25, 1.0, 10.0, 1e3, 2e5] {
        for delta in [0.1, 1e-3, 1e-6, 1e-10, 1e-15] {
            let eps0 = 1.0 / b;
            if eps0 + 2.0 * (1.0f64 - delta).ln() <= 0.0 {
                continue;
            }
            let fast = fast_best(&laplace(b, 1), delta).unwrap();
            let tight = best(&laplace(b, 1), delta).unwrap();
            assert_eq!(fast.accountant, Accountant::Pld, "b = {b}, δ = {delta}");
            // the total's choice may name an accountant that ties with it
            // (RDP at a huge order, for a large ε₀: within 10⁻¹² relative)
            assert!(
                (tight.epsilon - fast.epsilon).abs() <= 1e-12 * fast.epsilon,
                "b = {b}, δ = {delta}: {} vs {}",
                tight.epsilon,
                fast.epsilon
            );
            assert!(fast.detail.contains("closed form"), "{}", fast.detail);
            // the closed form, evaluated here in another way
            let closed = eps0 + 2.0 * (1.0 - delta).ln();
            assert!(
                ((fast.epsilon - closed) / closed).abs() < 1e-9,
                "b = {b}, δ = {delta}: {} vs {closed}",
                fast.epsilon
            );
            // the RDP bound is sound and looser
            let rdp = epsilon(&laplace(b, 1), delta, Accountant::Rdp).unwrap();
            assert!(rdp.epsilon > fast.epsilon, "b = {b}, δ = {delta}");
            doc.push(json!({"b": format!("{b:?}"), "delta": format!("{delta:?}"), "eps": format!("{:?}", fast.epsilon)}));
            cases.push((b, delta, fast.epsilon));
        }
    }
    assert!(cases.len() >= 20, "{} cases", cases.len());
    let Some(out) = common::reference("lone_laplace/reference.py", &json!({ "cases": doc })) else {
        return;
    };
    for ((b, delta, eps), r) in cases.iter().zip(out["cases"].as_array().unwrap()) {
        let (at, swapped, below) = (
            num(&r["delta_at"]),
            num(&r["delta_at_swapped"]),
            num(&r["delta_below"]),
        );
        // sound: the divergence at the printed ε is within δ (a margin of
        // 10⁻¹³ relative for the conversion of the 60-digit result)
        assert!(
            at <= delta * (1.0 + 1e-13),
            "b = {b}, δ = {delta}, ε = {eps}: δ(ε) = {at}"
        );
        assert!(
            ((at - swapped) / at).abs() < 1e-12,
            "b = {b}: {at} vs {swapped}"
        );
        // tight: 10⁻⁹ below, the release is not (ε, δ)-DP
        assert!(
            below > *delta,
            "b = {b}, δ = {delta}, ε = {eps}: δ(ε(1 − 10⁻⁹)) = {below}"
        );
    }
}

#[test]
fn only_one_laplace_release_takes_the_closed_form() {
    // two releases compose: not the closed form of one
    let two = fast_best(&laplace(10.0, 2), 1e-6).unwrap();
    assert_ne!(two.accountant, Accountant::Pld);
    let one = fast_best(&laplace(10.0, 1), 1e-6).unwrap();
    assert!(two.epsilon > 1.9 * one.epsilon);
    // a Laplace release over several coordinates is not one coordinate
    let hist = vec![Release {
        sample: None,
        mechanism: Mechanism {
            kind: NoiseKind::Laplace,
            scale: 10.0,
            sensitivity: Sensitivity {
                l1: 1.0,
                l2: 1.0,
                coords: 4,
                linf: 0.0,
            },
        },
        count: 1,
    }];
    assert_ne!(fast_best(&hist, 1e-6).unwrap().accountant, Accountant::Pld);
    // δ = 0: pure ε₀
    assert_eq!(best(&laplace(10.0, 1), 0.0).unwrap().epsilon, 0.1);
    // a δ so large that the release is (0, δ)-DP: 1 − e^{−ε₀/2} ≤ δ
    let zero = fast_best(&laplace(10.0, 1), 0.05).unwrap();
    assert_eq!(zero.epsilon, 0.0);
}
