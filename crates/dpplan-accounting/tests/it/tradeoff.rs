//! Attack risk (`dpplan_accounting::tradeoff`): the best TPR of a
//! membership test at a false-positive rate, against the closed form
//! Φ(Φ⁻¹(α) + μ) on Gaussian plans (statrs' independent normal), the
//! Laplace mechanism's exact trade-off curve, and Google's dp_accounting
//! on mixed plans; never below the truth.

use crate::common::dp_accounting_reference;
use dpplan_accounting::{attack_risk, CurveSource, Mechanism, NoiseKind, Release, Sensitivity};
use serde_json::json;
use statrs::distribution::{ContinuousCDF, Normal};

fn release(kind: NoiseKind, scale: f64, count: u64) -> Release {
    Release {
        sample: None,
        mechanism: Mechanism {
            kind,
            scale,
            sensitivity: Sensitivity::scalar(1.0),
        },
        count,
    }
}

const FPRS: [f64; 5] = [0.01, 0.001, 1e-6, 0.1, 0.5];

#[test]
fn gaussian_plans_agree_with_the_closed_form_to_1e_9_and_never_below() {
    let n = Normal::new(0.0, 1.0).unwrap();
    for (sigmas, counts) in [
        (vec![1.0], vec![1]),
        (vec![4.0, 9.5], vec![3, 10]),
        (vec![0.7, 30.0, 2.0], vec![1, 1000, 2]),
        (vec![50.0], vec![100_000]),
    ] {
        let plan: Vec<Release> = sigmas
            .iter()
            .zip(&counts)
            .map(|(&s, &c)| release(NoiseKind::Gaussian, s, c))
            .collect();
        let mu: f64 = sigmas
            .iter()
            .zip(&counts)
            .map(|(&s, &c)| c as f64 / (s * s))
            .sum::<f64>()
            .sqrt();
        let r = attack_risk(&plan, 1e-6, 0.0, &FPRS).unwrap();
        assert_eq!(r.curve, CurveSource::Gdp);
        let got_mu = r.gdp_mu.unwrap();
        assert!(
            got_mu >= mu && got_mu - mu < 1e-12 * mu.max(1.0),
            "{got_mu} vs {mu}"
        );
        for p in &r.points {
            let exact = n.cdf(n.inverse_cdf(p.fpr) + mu);
            assert!(
                (p.tpr - exact).abs() <= 1e-9,
                "σ {sigmas:?}: TPR at {} is {} vs closed form {exact}",
                p.fpr,
                p.tpr
            );
            // sound direction, up to statrs' own error (its Φ⁻¹ is off by
            // up to ~5e-11 relative here; the 40-digit check is below)
            assert!(p.tpr >= exact * (1.0 - 1e-9), "{} below {exact}", p.tpr);
        }
    }
}

#[test]
fn never_below_the_40_digit_value() {
    // mpmath, 40 digits: Φ(Φ⁻¹(0.01) + 1) = 0.0923622480736939358531…,
    // Φ(Φ⁻¹(0.001) + 0.5) = 0.00479555920914217391…
    let one = attack_risk(&[release(NoiseKind::Gaussian, 1.0, 1)], 1e-6, 0.0, &[0.01]).unwrap();
    let t = one.points[0].tpr;
    assert!(
        t >= 0.092_362_248_073_693_94 && t - 0.092_362_248_073_693_94 < 1e-14,
        "{t}"
    );
    let four = attack_risk(
        &[release(NoiseKind::Gaussian, 8.0, 16)],
        1e-6,
        0.0,
        &[0.001],
    )
    .unwrap();
    let t = four.points[0].tpr;
    assert!(
        t >= 0.004_795_559_209_142_174 && t - 0.004_795_559_209_142_174 < 1e-15,
        "{t}"
    );
}

#[test]
fn the_tpr_moves_with_the_plan() {
    // negative control: more noise, smaller TPR; more releases, larger
    let at = |plan: &[Release]| attack_risk(plan, 1e-6, 0.0, &[0.01]).unwrap().points[0].tpr;
    let base = at(&[release(NoiseKind::Gaussian, 4.0, 1)]);
    assert!(at(&[release(NoiseKind::Gaussian, 8.0, 1)]) < base);
    assert!(at(&[release(NoiseKind::Gaussian, 4.0, 4)]) > base);
    let lap = at(&[release(NoiseKind::Laplace, 2.0, 1)]);
    assert!(at(&[release(NoiseKind::Laplace, 1.0, 1)]) > lap);
    // the thresholds' δ adds to every line
    let plus = attack_risk(&[release(NoiseKind::Laplace, 2.0, 1)], 1e-6, 1e-3, &[0.01]).unwrap();
    assert!(plus.points[0].tpr >= lap + 1e-3);
}

#[test]
fn one_laplace_release_is_its_exact_curve_from_above() {
    // Laplace(1/ε): 1 − f(α) = e^ε·α for α < e^{−ε}/2 (Dong, Roth & Su
    // 2019, the Laplace trade-off function)
    for eps in [0.1f64, 0.5, 1.0, 2.0] {
        let r = attack_risk(
            &[release(NoiseKind::Laplace, 1.0 / eps, 1)],
            0.0,
            0.0,
            &[0.01, 0.001],
        )
        .unwrap();
        assert_eq!(r.curve, CurveSource::Pld);
        for p in &r.points {
            let exact = eps.exp() * p.fpr;
            assert!(p.tpr >= exact, "ε {eps}: {} below {exact}", p.tpr);
            assert!(
                p.tpr - exact < 1e-4 * exact,
                "ε {eps}: {} far above {exact}",
                p.tpr
            );
        }
    }
}

#[test]
fn mixed_plans_are_within_dp_accountings_pld() {
    // (Laplace ε, count), (Gaussian μ = 1/σ, count)
    type Parts = Vec<(f64, u64)>;
    let plans: Vec<(Parts, Parts)> = vec![
        (vec![(0.5, 4)], vec![(0.5, 3)]),
        (vec![(0.1, 50)], vec![(0.2, 20)]),
        (vec![(1.0, 1), (0.2, 10)], vec![(1.0, 1)]),
        (vec![(0.05, 200)], vec![(0.1, 100)]),
    ];
    let fprs = [0.01, 0.001];
    let doc = json!({
        "plans": plans.iter().map(|(l, g)| json!({"laplace": l, "gaussian": g})).collect::<Vec<_>>(),
        "fprs": fprs,
    });
    let Some(reference) = dp_accounting_reference("tradeoff/reference.py", &doc) else {
        return;
    };
    for (i, (l, g)) in plans.iter().enumerate() {
        let mut rel: Vec<Release> = l
            .iter()
            .map(|&(e, c)| release(NoiseKind::Laplace, 1.0 / e, c))
            .collect();
        rel.extend(
            g.iter()
                .map(|&(mu, c)| release(NoiseKind::Gaussian, 1.0 / mu, c)),
        );
        let r = attack_risk(&rel, 1e-6, 0.0, &fprs).unwrap();
        assert_eq!(r.curve, CurveSource::Pld);
        for (j, p) in r.points.iter().enumerate() {
            let opt = reference[i]["optimistic"][j].as_f64().unwrap();
            let pess = reference[i]["pessimistic"][j].as_f64().unwrap();
            eprintln!(
                "plan {i} α {}: dpplan {} dp_accounting [{opt}, {pess}]",
                p.fpr, p.tpr
            );
            assert!(
                p.tpr >= opt - 1e-6,
                "plan {i}: {} below the optimistic {opt}",
                p.tpr
            );
            assert!(
                p.tpr <= pess * (1.0 + 1e-3),
                "plan {i}: {} far above {pess}",
                p.tpr
            );
        }
    }
}

#[test]
fn bad_rates_are_errors() {
    let plan = [release(NoiseKind::Gaussian, 1.0, 1)];
    assert!(attack_risk(&plan, 1e-6, 0.0, &[1.5]).is_err());
    assert!(attack_risk(&plan, 1e-6, 0.0, &[f64::NAN]).is_err());
    // nothing released: the test is a coin
    let r = attack_risk(&[], 1e-6, 0.0, &[0.01]).unwrap();
    assert_eq!(r.curve, CurveSource::None);
    assert!(r.points[0].tpr >= 0.01 && r.points[0].tpr < 0.0100001);
}
