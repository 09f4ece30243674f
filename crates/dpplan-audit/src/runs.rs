//! The runs: the real release path, `runs` times on D and on D′, on every
//! core, each output scored by every distinguisher and compared, besides
//! its values, with the first.

use dpplan_plan::Release;

use super::distinguish::{Centres, Distinguisher};
#[cfg(feature = "audit-faults")]
use super::{fault, faults};
use super::{AuditOptions, Exact};
use dpplan_engine::rng::SecureRng;
use dpplan_runtime::RunError;

/// The scores of every run, per distinguisher, on D and on D′, and what
/// else differed.
pub(super) struct Runs {
    pub d: Vec<Vec<f64>>,
    pub dp: Vec<Vec<f64>>,
    pub differences: Vec<String>,
}

/// What a user sees of a release besides its values.
#[derive(PartialEq, Debug)]
struct Shape {
    groups: Vec<Option<String>>,
    mechanism: String,
    epsilon: f64,
    delta: f64,
}

fn shape(x: &dpplan_runtime::ReleaseResult) -> Shape {
    Shape {
        groups: x.cells.iter().map(|c| c.group.clone()).collect(),
        mechanism: x.mechanism.clone(),
        epsilon: x.epsilon,
        delta: x.delta,
    }
}

/// One release as `dpplan run` draws it (slot 0, no ledger).
fn one_release(
    noisy: &Release,
    _c: &[f64],
    exact: &Exact,
    _opts: &AuditOptions,
    rng: &mut SecureRng,
) -> Result<dpplan_runtime::ReleaseResult, RunError> {
    #[allow(unused_mut)]
    let mut x =
        super::distinguish::per_candidate(noisy, dpplan_runtime::draw(noisy, 0, exact, rng)?);
    #[cfg(feature = "audit-faults")]
    if let Some(x0) = exact.get(&(noisy.name.clone(), 0)) {
        faults::suppress(&mut x, x0, fault(_opts));
    }
    #[cfg(feature = "audit-faults")]
    if fault(_opts) == Some(faults::Fault::NaiveLaplace) {
        let b = super::distinguish::laplace_scale(noisy).ok_or_else(|| {
            RunError::Data(
                "the naive-Laplace fault needs a Laplace release that is not a mean".into(),
            )
        })?;
        for (cell, &centre) in x.cells.iter_mut().zip(_c) {
            cell.value = faults::naive_laplace(centre, b, rng.next_u64());
        }
    }
    Ok(x)
}

/// The exact aggregates a run on D reads: D's, or under sampling D′'s
/// when the engine's coin leaves the canary out of the sample.
fn exact_on_d<'e>(
    exact: (&'e Exact, &'e Exact),
    sample: Option<u64>,
    _opts: &AuditOptions,
    rng: &mut SecureRng,
) -> &'e Exact {
    #[cfg(feature = "audit-faults")]
    if fault(_opts) == Some(faults::Fault::IgnoredSample) {
        return exact.0;
    }
    match sample {
        Some(t) if !dpplan_engine::sample_coin(t, rng) => exact.1,
        _ => exact.0,
    }
}

#[allow(clippy::too_many_arguments)]
fn worker(
    declared: &Release,
    noisy: &Release,
    c: &Centres,
    exact: (&Exact, &Exact),
    sample: Option<u64>,
    opts: &AuditOptions,
    n: u64,
    reference: &Shape,
    mut rng: SecureRng,
) -> Result<Runs, RunError> {
    let dists = Distinguisher::for_release(declared);
    let cap = n.min(1 << 20) as usize;
    let mut out = Runs {
        d: vec![Vec::with_capacity(cap); dists.len()],
        dp: vec![Vec::with_capacity(cap); dists.len()],
        differences: Vec::new(),
    };
    let mut y = Vec::new();
    for _ in 0..n {
        let d = exact_on_d(exact, sample, opts, &mut rng);
        for (on_d, ex, centre) in [(true, d, &c.d), (false, exact.1, &c.dp)] {
            let x = one_release(noisy, centre, ex, opts, &mut rng)?;
            if out.differences.is_empty() && shape(&x) != *reference {
                out.differences.push(format!(
                    "the published release differs besides its values (cells, labels or mechanism) on {}",
                    if on_d { "D" } else { "D′" }
                ));
            }
            y.clear();
            y.extend(x.cells.iter().map(|c| c.value));
            for (i, d) in dists.iter().enumerate() {
                let s = d.score(declared, c, &y);
                if on_d { &mut out.d[i] } else { &mut out.dp[i] }.push(s);
            }
        }
    }
    Ok(out)
}

/// `opts.runs` releases on D and on D′, on every thread; `sample`, a
/// sampled release's threshold (the canary's coin on each run on D).
pub(super) fn draw(
    declared: &Release,
    noisy: &Release,
    c: &Centres,
    (exact_d, exact_dp): (&Exact, &Exact),
    sample: Option<u64>,
    opts: &AuditOptions,
    rng: &mut SecureRng,
) -> Result<Runs, RunError> {
    let reference = shape(&one_release(noisy, &c.d, exact_d, opts, rng)?);
    let threads = opts
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, 64) as u64;
    let share = |i: u64| opts.runs / threads + u64::from(i < opts.runs % threads);
    let rngs: Vec<SecureRng> = (0..threads).map(|_| rng.fork()).collect();
    let parts: Vec<Result<Runs, RunError>> = std::thread::scope(|s| {
        let handles: Vec<_> = rngs
            .into_iter()
            .enumerate()
            .map(|(i, g)| {
                let reference = &reference;
                s.spawn(move || {
                    worker(
                        declared,
                        noisy,
                        c,
                        (exact_d, exact_dp),
                        sample,
                        opts,
                        share(i as u64),
                        reference,
                        g,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(RunError::Data("an audit thread failed".into())))
            })
            .collect()
    });
    let mut all = Runs {
        d: Vec::new(),
        dp: Vec::new(),
        differences: Vec::new(),
    };
    for p in parts {
        let p = p?;
        if all.d.is_empty() {
            all.d = vec![Vec::new(); p.d.len()];
            all.dp = vec![Vec::new(); p.dp.len()];
        }
        for (a, b) in all.d.iter_mut().zip(p.d) {
            a.extend(b);
        }
        for (a, b) in all.dp.iter_mut().zip(p.dp) {
            a.extend(b);
        }
        if all.differences.is_empty() {
            all.differences.extend(p.differences);
        }
    }
    Ok(all)
}
