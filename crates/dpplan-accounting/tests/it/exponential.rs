//! The exponential mechanism (a quantile's selection) in every accountant,
//! against the formulas evaluated here independently: ε = Δ/b (basic),
//! ρ = min(ε·tanh(ε/2), ε²/8) (zCDP; Cesar & Rogers 2021 for ε-bounded
//! range), the RDP curve min(RR, α·ε²/8) converted at its best order, the
//! PLD's randomized-response pair (the discrete Laplace's), GDP not
//! applicable. Negative control: the same releases as Laplace (no bounded
//! range) cost more under zCDP and RDP. Permute-and-flip, not bounded
//! range, is charged as any ε-DP mechanism.

use dpplan_accounting::{self as acct, Accountant, Mechanism, NoiseKind, Release, Sensitivity};

fn plan(kind: NoiseKind, eps: f64, count: u64) -> Vec<Release> {
    // Δ = 2, b = Δ/ε: ε exact for these values
    vec![Release {
        sample: None,
        mechanism: Mechanism {
            kind,
            scale: 2.0 / eps,
            sensitivity: Sensitivity::scalar(2.0),
        },
        count,
    }]
}

fn eps_of(r: &[Release], delta: f64, a: Accountant) -> f64 {
    acct::epsilon(r, delta, a)
        .unwrap_or_else(|e| panic!("{a:?}: {e}"))
        .epsilon
}

#[test]
fn basic_composition_adds_the_pure_epsilons() {
    let r = plan(NoiseKind::Exponential, 0.25, 3);
    assert_eq!(eps_of(&r, 0.0, Accountant::Basic), 0.75);
    // negative control: one release more
    assert_eq!(
        eps_of(
            &plan(NoiseKind::Exponential, 0.25, 4),
            0.0,
            Accountant::Basic
        ),
        1.0
    );
}

#[test]
fn zcdp_charges_the_bounded_range_rho() {
    for (eps, k) in [(0.1, 1u64), (0.5, 3), (1.0, 10), (3.0, 2)] {
        let rho = k as f64 * (eps * (eps / 2.0f64).tanh()).min(eps * eps / 8.0);
        assert!(eps * eps / 8.0 < eps * (eps / 2.0f64).tanh());
        let r = plan(NoiseKind::Exponential, eps, k);
        let got = acct::rho_tight(&r[0].mechanism).unwrap() * k as f64;
        assert!((got - rho).abs() <= 1e-12 * rho, "ρ {got} vs {rho}");
        for delta in [1e-5, 1e-9] {
            let z = eps_of(&r, delta, Accountant::Zcdp);
            let want = acct::zcdp_epsilon_from_rho(rho, delta);
            assert!(z >= want && z <= want * (1.0 + 1e-9), "ε {z} vs {want}");
            // Bun–Steinke's closed form is an upper bound
            assert!(z <= rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt() + 1e-12);
            // negative control: as Laplace (no bounded range) it costs more
            let lap = eps_of(&plan(NoiseKind::Laplace, eps, k), delta, Accountant::Zcdp);
            assert!(lap > z * 1.2, "Laplace {lap} vs exponential {z}");
        }
    }
}

#[test]
fn the_bounded_range_rho_is_used_only_where_it_is_smaller() {
    // ε²/8 < ε·tanh(ε/2) below ε ≈ 7.99, above it the pure-DP ρ is smaller
    let cross = (1..2000)
        .map(|i| i as f64 * 0.01)
        .find(|&e| e * e / 8.0 >= e * (e / 2.0).tanh())
        .unwrap();
    assert!((7.95..=8.0).contains(&cross), "{cross}");
    for eps in [0.5, 7.0, 9.0, 20.0] {
        let m = plan(NoiseKind::Exponential, eps, 1)[0].mechanism;
        let want = (eps * (eps / 2.0f64).tanh()).min(eps * eps / 8.0);
        let got = acct::rho_tight(&m).unwrap();
        assert!(
            got >= want && got <= want * (1.0 + 1e-12),
            "ε {eps}: {got} vs {want}"
        );
    }
}

/// The RDP of k releases, from the formulas, at the best of many orders
/// α − 1 from 10⁻⁴ to 10⁷ (Balle et al. 2020, Thm 21), and Σε (order ∞).
fn rdp_reference(eps: f64, k: f64, delta: f64) -> f64 {
    let rr = |a: f64| {
        let am1 = a - 1.0;
        eps - ((-eps).exp().ln_1p() - (-(2.0 * a - 1.0) * eps).exp().ln_1p()) / am1
    };
    let at = |t: f64| {
        let a = 1.0 + 10f64.powf(t);
        let r = k * rr(a).min(a * eps * eps / 8.0);
        r + ((a - 1.0) / a).ln() - (delta.ln() + a.ln()) / (a - 1.0)
    };
    // log10(α − 1) on a grid of step 0.002, then 0.00001 around the best
    let coarse = (0..5500).map(|i| -4.0 + i as f64 * 0.002);
    let best = coarse.min_by(|x, y| at(*x).total_cmp(&at(*y))).unwrap();
    (0..=800)
        .map(|i| best - 0.004 + i as f64 * 0.00001)
        .map(at)
        .fold(k * eps, f64::min)
}

#[test]
fn rdp_uses_the_smaller_curve_at_each_order() {
    for (eps, k) in [(0.2, 5u64), (1.0, 20), (0.05, 1000)] {
        let r = plan(NoiseKind::Exponential, eps, k);
        for delta in [1e-6, 1e-10] {
            let got = eps_of(&r, delta, Accountant::Rdp);
            let want = rdp_reference(eps, k as f64, delta);
            // (the refined grid finds the optimum to far below 10⁻⁹)
            assert!(
                got >= want * (1.0 - 1e-9),
                "RDP {got} below the reference {want}"
            );
            assert!(
                got <= want * (1.0 + 1e-3),
                "RDP {got} far above the reference {want}"
            );
            // negative control: as discrete Laplace (RR curve only)
            let rr = eps_of(
                &plan(NoiseKind::DiscreteLaplace, eps, k),
                delta,
                Accountant::Rdp,
            );
            // (few releases: the best order is large, where the RR curve
            // is the smaller one, and both plans cost the same but for the
            // bounded-range term's rounding allowance)
            assert!(
                rr >= got * (1.0 - 1e-9),
                "RR curve {rr} below the bounded-range one {got}"
            );
            if k >= 20 {
                assert!(
                    rr > got * 1.05,
                    "RR curve {rr} not above the bounded-range one {got}"
                );
            }
        }
    }
}

#[test]
fn pld_treats_it_as_any_pure_mechanism_and_gdp_does_not_apply() {
    for (eps, k) in [(0.3, 4u64), (1.0, 2)] {
        let em = eps_of(&plan(NoiseKind::Exponential, eps, k), 1e-6, Accountant::Pld);
        // discrete Laplace with a shift of 1 is randomized response exactly
        // (the same pair as any ε-DP mechanism's worst case) …
        let mut shift_one = plan(NoiseKind::DiscreteLaplace, eps, k);
        shift_one[0].mechanism.sensitivity = Sensitivity::scalar(1.0);
        shift_one[0].mechanism.scale = 1.0 / eps;
        assert_eq!(em, eps_of(&shift_one, 1e-6, Accountant::Pld));
        // … and with a shift of 2 its exact pair is tighter
        let dl = eps_of(
            &plan(NoiseKind::DiscreteLaplace, eps, k),
            1e-6,
            Accountant::Pld,
        );
        assert!(dl < em, "{dl} vs {em}");
    }
    let r = plan(NoiseKind::Exponential, 0.5, 1);
    assert!(matches!(
        acct::epsilon(&r, 1e-6, Accountant::Gdp),
        Err(acct::AccountingError::NotApplicable(_))
    ));
    // `best` picks the tightest: below basic composition for many releases
    let many = plan(NoiseKind::Exponential, 0.1, 200);
    let best = acct::best(&many, 1e-6).unwrap();
    assert!(
        best.epsilon < 0.5 * eps_of(&many, 1e-6, Accountant::Basic),
        "{best:?}"
    );
}

/// Permute-and-flip: the exponential mechanism's ε = Δ/b, but not bounded
/// range, so any ε-DP mechanism's charges: ρ = ε·tanh(ε/2) in zCDP
/// (evaluated here), the randomized-response pair in the PLD (a discrete
/// Laplace of shift 1, exactly) and the RR curve in the RDP. Negative
/// control: the exponential mechanism at the same ε costs less under zCDP
/// (its ε²/8).
#[test]
fn permute_and_flip_is_charged_as_any_pure_mechanism() {
    for (eps, k) in [(0.2, 1u64), (0.5, 3), (1.0, 10)] {
        let pf = plan(NoiseKind::PermuteAndFlip, eps, k);
        assert_eq!(eps_of(&pf, 0.0, Accountant::Basic), eps * k as f64, "basic");
        let rho = k as f64 * eps * (eps / 2.0f64).tanh();
        let got = acct::rho_tight(&pf[0].mechanism).unwrap() * k as f64;
        assert!(got >= rho && got <= rho * (1.0 + 1e-12), "ρ {got} vs {rho}");
        let z = eps_of(&pf, 1e-6, Accountant::Zcdp);
        let want = acct::zcdp_epsilon_from_rho(rho, 1e-6);
        assert!(z >= want && z <= want * (1.0 + 1e-9), "ε {z} vs {want}");
        let em = eps_of(
            &plan(NoiseKind::Exponential, eps, k),
            1e-6,
            Accountant::Zcdp,
        );
        assert!(em < z, "exponential {em} vs permute-and-flip {z}");
        // the PLD and RDP: randomized response at ε, as a discrete
        // Laplace whose shift is 1
        let mut rr = plan(NoiseKind::DiscreteLaplace, eps, k);
        rr[0].mechanism.sensitivity = Sensitivity::scalar(1.0);
        rr[0].mechanism.scale = 1.0 / eps;
        for a in [Accountant::Pld, Accountant::Rdp] {
            assert_eq!(eps_of(&pf, 1e-6, a), eps_of(&rr, 1e-6, a), "{a:?}");
        }
    }
    assert!(matches!(
        acct::epsilon(
            &plan(NoiseKind::PermuteAndFlip, 0.5, 1),
            1e-6,
            Accountant::Gdp
        ),
        Err(acct::AccountingError::NotApplicable(_))
    ));
}
