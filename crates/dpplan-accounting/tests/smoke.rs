use dpplan_accounting::*;
fn g(sigma: f64, count: u64) -> Release {
    Release { mechanism: Mechanism { kind: NoiseKind::Gaussian, scale: sigma, sensitivity: Sensitivity::scalar(1.0) }, count }
}
fn l(b: f64, count: u64) -> Release {
    Release { mechanism: Mechanism { kind: NoiseKind::Laplace, scale: b, sensitivity: Sensitivity::scalar(1.0) }, count }
}
#[test]
fn smoke() {
    for plan in [vec![g(4.0, 1)], vec![g(8.0, 1000)], vec![l(10.0, 100)], vec![l(10.0, 100), g(8.0, 10)], vec![l(100.0, 43200)]] {
        let t = std::time::Instant::now();
        for (a, r) in all(&plan, 1e-6) {
            println!("{a}: {:?}", r.map(|b| (b.epsilon, b.detail)));
        }
        println!("--- {:?}", t.elapsed());
    }
}
