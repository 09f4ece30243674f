//! Deliberately broken mechanisms, compiled only with the `audit-faults`
//! feature, which no shipped build enables (the runtime's own tests turn it
//! on through a dev-dependency): they prove that the audit can fail.

use dpplan_plan::{Dataset, Release};

use dpplan_engine::EngineError;

/// A fault injected into the release path the audit runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The textbook floating-point Laplace (inverse CDF on a 53-bit float
    /// uniform) instead of the exact sampler: Mironov 2012's weakness.
    NaiveLaplace,
    /// The value clamp skipped for one unit (the canary's numbers are
    /// summed as they are).
    SkippedClamp,
    /// The sensitivity off by a factor of two: a unit moves the statistic
    /// twice as far as the derived sensitivity the noise was calibrated to.
    SensitivityOffByTwo,
    /// A Gaussian whose σ is silently halved.
    HalvedSigma,
    /// A grouped release that leaves out its empty cells: the number of
    /// published cells depends on the data.
    SuppressEmptyCells,
    /// A number past its bounds refused with an error instead of clamped:
    /// an error that depends on the data.
    RefuseOutOfRange,
    /// A sampled release whose sample keeps every unit: the base
    /// mechanism's loss under the amplified claim.
    IgnoredSample,
}

/// The dataset the engine reads under `fault`: with a skipped clamp,
/// every number's bounds widened past the canary's values.
pub fn dataset(ds: &Dataset, fault: Option<Fault>) -> Dataset {
    let mut ds = ds.clone();
    if fault == Some(Fault::SkippedClamp) {
        for c in &mut ds.columns {
            if let Some([lo, hi]) = c.bounds {
                let w = (hi - lo).abs().max(1.0);
                c.bounds = Some([lo - 4000.0 * w, hi + 4000.0 * w]);
            }
        }
    }
    ds
}

/// The release whose noise is drawn under `fault`: with a halved σ,
/// every Gaussian part's σ halved.
pub fn release(r: &Release, fault: Option<Fault>) -> Release {
    let mut r = r.clone();
    if fault == Some(Fault::HalvedSigma) {
        for p in &mut r.parts {
            if p.mechanism.is_some_and(|k| k.is_gaussian()) {
                p.scale = p.scale.map(|s| s / 2.0);
            }
        }
    }
    r
}

/// D's exact aggregates under `fault`: with the sensitivity off by two,
/// D′ + 2·(D − D′).
pub fn exact_d(d: Vec<Vec<i128>>, dp: &[Vec<i128>], fault: Option<Fault>) -> Vec<Vec<i128>> {
    if fault != Some(Fault::SensitivityOffByTwo) {
        return d;
    }
    d.iter()
        .zip(dp)
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| y + 2 * (x - y)).collect())
        .collect()
}

/// One draw of the textbook floating-point Laplace mechanism
/// (Mironov 2012's target): u uniform on the 2⁻⁵³ grid of [0, 1),
/// v = u − ½, x − b·sgn(v)·ln(1 − 2|v|). Test use only.
pub fn naive_laplace(x: f64, b: f64, next_u64: u64) -> f64 {
    // u = k·2⁻⁵³, v = u − ½ = (k − 2⁵²)·2⁻⁵³
    let k = next_u64 >> 11;
    let half = 1u64 << 52;
    let (m, negative) = if k >= half {
        (k - half, false)
    } else {
        (half - k, true)
    };
    x + super::distinguish::naive_noise(m, negative, b)
}

/// With `RefuseOutOfRange`: the error a runtime that refuses numbers past
/// their bounds would give on `data`, if any.
pub fn refusal(ds: &Dataset, data: &[u8], fault: Option<Fault>) -> Option<EngineError> {
    if fault != Some(Fault::RefuseOutOfRange) {
        return None;
    }
    let mut rd = csv::ReaderBuilder::new().flexible(true).from_reader(data);
    let header = rd.byte_headers().ok()?.clone();
    let bounded: Vec<(usize, &str, [f64; 2])> = ds
        .columns
        .iter()
        .filter_map(|c| {
            let i = header.iter().position(|h| h == c.name.as_bytes())?;
            Some((i, c.name.as_str(), c.bounds?))
        })
        .collect();
    for rec in rd.byte_records().map_while(Result::ok) {
        for &(i, name, [lo, hi]) in &bounded {
            let v = std::str::from_utf8(rec.get(i).unwrap_or_default())
                .ok()
                .and_then(|t| t.trim().parse::<f64>().ok());
            if v.is_some_and(|v| v < lo || v > hi) {
                return Some(EngineError::Schema(format!(
                    "a value of column `{name}` is outside its bounds"
                )));
            }
        }
    }
    None
}

/// With `SuppressEmptyCells`: the cells whose exact count or sum is 0
/// left out of the published release.
pub fn suppress(x: &mut dpplan_runtime::ReleaseResult, exact: &[i128], fault: Option<Fault>) {
    if fault != Some(Fault::SuppressEmptyCells) {
        return;
    }
    let mut i = 0;
    x.cells.retain(|_| {
        let keep = exact.get(i).is_none_or(|&v| v != 0);
        i += 1;
        keep
    });
}
