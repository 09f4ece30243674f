//! Accounting benchmarks (criterion). Run:
//! `CARGO_TARGET_DIR=/work/target-acct cargo bench -p dpplan-accounting -j 1`
use criterion::{criterion_group, criterion_main, Criterion};
use dpplan_accounting::*;
use std::hint::black_box;
use std::time::Duration;

fn rel(kind: NoiseKind, scale: f64, count: u64) -> Release {
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

/// 100,000 distinct Gaussian releases (σ from 50 to 150)
fn hetero_gauss() -> Vec<Release> {
    (0..100_000)
        .map(|i| rel(NoiseKind::Gaussian, 50.0 + i as f64 * 1e-3, 1))
        .collect()
}

/// 100,000 distinct releases: half Laplace (b from 200 to 1200), half Gaussian
fn hetero_mixed() -> Vec<Release> {
    (0..100_000)
        .map(|i| {
            if i % 2 == 0 {
                rel(NoiseKind::Laplace, 200.0 + i as f64 * 1e-2, 1)
            } else {
                rel(NoiseKind::Gaussian, 50.0 + i as f64 * 1e-3, 1)
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let g = hetero_gauss();
    let m = hetero_mixed();
    // a release every minute for 30 days
    let minute_lap = vec![rel(NoiseKind::Laplace, 100.0, 43_200)];
    let minute_gauss = vec![rel(NoiseKind::Gaussian, 200.0, 43_200)];
    let minute_lap_b3000 = vec![Release {
        sample: None,
        mechanism: Mechanism {
            kind: NoiseKind::Laplace,
            scale: 3000.0,
            sensitivity: Sensitivity {
                l1: 10.0,
                l2: 10.0,
                coords: 1,
                linf: 0.0,
            },
        },
        count: 43_200,
    }];
    let mut grp = c.benchmark_group("accounting");
    grp.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    grp.bench_function("gdp_100k_hetero_gauss", |b| {
        b.iter(|| epsilon(black_box(&g), 1e-6, Accountant::Gdp))
    });
    grp.bench_function("rdp_100k_hetero_gauss", |b| {
        b.iter(|| epsilon(black_box(&g), 1e-6, Accountant::Rdp))
    });
    grp.bench_function("rdp_100k_hetero_mixed", |b| {
        b.iter(|| epsilon(black_box(&m), 1e-6, Accountant::Rdp))
    });
    grp.bench_function("pld_100k_hetero_mixed", |b| {
        b.iter(|| epsilon(black_box(&m), 1e-6, Accountant::Pld))
    });
    grp.bench_function("pld_43200_identical_laplace", |b| {
        b.iter(|| epsilon(black_box(&minute_lap), 1e-6, Accountant::Pld))
    });
    grp.bench_function(
        "PLD, 43,200 identical Laplace (b = 3000, Δ = 10, δ = 1e-7)",
        |b| b.iter(|| epsilon(black_box(&minute_lap_b3000), 1e-7, Accountant::Pld)),
    );
    // the exact optimal composition (KOV) of long identical Laplace
    // schedules, ε₀ = 10⁻⁴·√(10⁸/k) (ε ≈ 4.9 at δ = 1e-6 for each k)
    let month_kov = vec![rel(NoiseKind::Laplace, 100.0, 43_200)];
    grp.bench_function("advanced_kov_43200_identical_laplace", |b| {
        b.iter(|| epsilon(black_box(&month_kov), 1e-6, Accountant::Advanced))
    });
    for (name, k, scale) in [
        ("advanced_kov_1e6_identical_laplace", 1_000_000u64, 1e3),
        ("advanced_kov_1e8_identical_laplace", 100_000_000, 1e4),
        ("advanced_kov_1e10_identical_laplace", 10_000_000_000, 1e5),
        (
            "advanced_kov_1e12_identical_laplace",
            1_000_000_000_000,
            1e6,
        ),
    ] {
        let plan = vec![rel(NoiseKind::Laplace, scale, k)];
        grp.bench_function(name, |b| {
            b.iter(|| epsilon(black_box(&plan), 1e-6, Accountant::Advanced))
        });
    }
    grp.bench_function("best_43200_identical_laplace", |b| {
        b.iter(|| best(black_box(&minute_lap), 1e-6))
    });
    grp.bench_function("best_43200_identical_gauss", |b| {
        b.iter(|| best(black_box(&minute_gauss), 1e-6))
    });
    grp.bench_function("best_100k_hetero_mixed", |b| {
        b.iter(|| best(black_box(&m), 1e-6))
    });
    grp.finish();
    // print the values once, for the report
    for (name, plan) in [
        ("hetero_gauss", &g),
        ("hetero_mixed", &m),
        ("minute_laplace", &minute_lap),
    ] {
        for (a, r) in all(plan, 1e-6) {
            println!("{name:>16} {a:<36} {:?}", r.map(|b| b.epsilon));
        }
    }
}

/// A discrete Gaussian histogram (σ, shift bounds l1, l2², l∞, coordinates)
/// released `count` times, with one Laplace count (b = 2).
fn dgauss_histogram(sigma: f64, b: (f64, f64, f64, u64), count: u64) -> Vec<Release> {
    vec![
        Release {
            sample: None,
            mechanism: Mechanism {
                kind: NoiseKind::DiscreteGaussian,
                scale: sigma,
                sensitivity: Sensitivity {
                    l1: b.0,
                    l2: b.1.sqrt(),
                    coords: b.3,
                    linf: b.2,
                },
            },
            count,
        },
        rel(NoiseKind::Laplace, 2.0, 1),
    ]
}

/// PLD over discrete Gaussian histograms (the max-over-shapes pair).
fn bench_dgauss(c: &mut Criterion) {
    // row-level replace: shape (1, 1), σ = 12, 52 weekly releases
    let one = dgauss_histogram(12.0, (2.0, 2.0, 1.0, 2), 52);
    // 10 rows in ≤ 4 groups of ≤ 3: shapes (3,3,3,1), (3,3,2,2), σ = 8
    let two = dgauss_histogram(8.0, (10.0, 28.0, 3.0, 4), 12);
    // 7 rows in ≤ 5 groups of ≤ 3: six maximal shapes, σ = 20
    let six = dgauss_histogram(20.0, (7.0, 19.0, 3.0, 5), 30);
    let mut grp = c.benchmark_group("pld_dgauss");
    grp.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3));
    for (name, plan) in [
        ("pld_dgauss_1_shape_52x", &one),
        ("pld_dgauss_2_shapes_12x", &two),
        ("pld_dgauss_6_shapes_30x", &six),
    ] {
        grp.bench_function(name, |b| {
            b.iter(|| epsilon(black_box(plan), 1e-6, Accountant::Pld))
        });
        grp.bench_function(format!("{name}_best"), |b| {
            b.iter(|| best(black_box(plan), 1e-6))
        });
    }
    grp.finish();
    for (name, plan) in [("1 shape", &one), ("2 shapes", &two), ("6 shapes", &six)] {
        for a in [Accountant::Pld, Accountant::Rdp] {
            println!(
                "{name:>10} {a:<30} {:?}",
                epsilon(plan, 1e-6, a).map(|b| b.epsilon)
            );
        }
    }
}

/// Attack risk (the TPR at 1 % and 0.1 % FPR) beside the PLD's ε on 10⁴
/// distinct releases (half Laplace, half Gaussian: the PLD's curve) and on
/// 10⁴ distinct Gaussians (μ-GDP's closed form).
fn bench_attack_risk(c: &mut Criterion) {
    let mixed: Vec<Release> = (0..10_000)
        .map(|i| {
            if i % 2 == 0 {
                rel(NoiseKind::Laplace, 200.0 + i as f64 * 1e-1, 1)
            } else {
                rel(NoiseKind::Gaussian, 50.0 + i as f64 * 1e-2, 1)
            }
        })
        .collect();
    let gauss: Vec<Release> = (0..10_000)
        .map(|i| rel(NoiseKind::Gaussian, 50.0 + i as f64 * 1e-2, 1))
        .collect();
    let mut grp = c.benchmark_group("attack_risk");
    grp.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3));
    grp.bench_function("pld epsilon, 10^4 mixed", |b| {
        b.iter(|| epsilon(black_box(&mixed), 1e-6, Accountant::Pld))
    });
    grp.bench_function("attack risk, 10^4 mixed", |b| {
        b.iter(|| attack_risk(black_box(&mixed), 1e-6, 0.0, &FPRS))
    });
    grp.bench_function("attack risk, 10^4 Gaussian", |b| {
        b.iter(|| attack_risk(black_box(&gauss), 1e-6, 0.0, &FPRS))
    });
    grp.finish();
}

/// A count over several coordinates with Laplace noise (b, l1, l2, l∞,
/// coordinates), one release.
fn laplace_counts(b: f64, s: (f64, f64, f64, u64)) -> Release {
    Release {
        sample: None,
        mechanism: Mechanism {
            kind: NoiseKind::Laplace,
            scale: b,
            sensitivity: Sensitivity {
                l1: s.0,
                l2: s.1,
                coords: s.3,
                linf: s.2,
            },
        },
        count: 1,
    }
}

/// Issue 34 items 1 and 2: the Laplace shift shapes (examples/signups' two
/// trees: 10 shapes of up to 18 coordinates) against the same plan as
/// randomized response (ℓ∞ not given); and the binomial leaf of a huge
/// pure group (the plan composed twice, the smaller ε kept).
fn bench_issue34(c: &mut Criterion) {
    let gauss_tree = rel(NoiseKind::Gaussian, 40.0 / 6.0, 1);
    let signups = vec![laplace_counts(18.0, (18.0, 6.0, 2.0, 724)), gauss_tree];
    let mut as_rr = signups.clone();
    as_rr[0].mechanism.sensitivity.linf = 0.0;
    let huge = vec![
        rel(NoiseKind::Laplace, 1e4, 100_000_000),
        rel(NoiseKind::Gaussian, 4.0, 1),
    ];
    let grid_only = vec![
        rel(NoiseKind::Laplace, 1e4, 60_000),
        rel(NoiseKind::Gaussian, 4.0, 1),
    ];
    let both = vec![
        rel(NoiseKind::Laplace, 1e4, 70_000),
        rel(NoiseKind::Gaussian, 4.0, 1),
    ];
    let mut grp = c.benchmark_group("issue34");
    grp.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3));
    for (name, plan) in [
        ("signups_shapes", &signups),
        ("signups_as_rr", &as_rr),
        ("laplace_1e8_gauss_binomial", &huge),
        ("laplace_60000_gauss_grid_only", &grid_only),
        ("laplace_70000_gauss_both_ways", &both),
    ] {
        grp.bench_function(name, |b| {
            b.iter(|| epsilon(black_box(plan), 1e-6, Accountant::Pld))
        });
        println!(
            "{name:>32} {:?}",
            epsilon(plan, 1e-6, Accountant::Pld).map(|b| b.epsilon)
        );
    }
    grp.finish();
}

criterion_group!(
    benches,
    bench,
    bench_dgauss,
    bench_attack_risk,
    bench_issue34
);
criterion_main!(benches);
