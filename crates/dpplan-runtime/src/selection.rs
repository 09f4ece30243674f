//! Releases of a histogram over keys taken from the data (partition
//! selection, docs/executable-plan.md): the engine's exact bounded count
//! of every key seen, one fresh draw of the part's noise per key with the
//! exact samplers, and only the keys whose noisy count is strictly above
//! the threshold, sorted by key.
//!
//! What is never revealed: a key whose noisy count did not pass. The keys
//! seen live only in memory between the engine's pass and the draw; they
//! are not in the release's output, its ledger entry (the published cells
//! only), an error message or a log line (this module prints nothing and
//! its errors name the query, never a key). Every key seen gets exactly one
//! draw, so the work — and the run's time — grows with the number of keys
//! seen in the data; that number is what the documented mechanism's
//! running time depends on (docs/executable-plan.md, "Timing").

use std::collections::BTreeMap;

use dpplan_plan::{ExecutablePlan, Release, Selection};

use crate::{requests, Cell, RunError, RunOptions};
use dpplan_engine::rng::SecureRng;
use dpplan_engine::Engine;
use dpplan_noise::Noise;

/// The exact bounded count of every key seen, per release name.
pub(crate) type Keyed = BTreeMap<String, Vec<(Vec<u8>, i128)>>;

/// The counts per key of every release of `releases` with a selection,
/// one engine pass each.
pub(crate) fn aggregate<'p>(
    plan: &'p ExecutablePlan,
    opts: &RunOptions,
    engine: &dyn Engine,
    releases: impl IntoIterator<Item = &'p Release>,
    rng: &mut SecureRng,
) -> Result<Keyed, RunError> {
    let mut out = Keyed::new();
    for r in releases {
        let Some(k) = requests::keys_request(plan, opts, r)? else {
            continue;
        };
        let counts = engine.aggregate_keys(k.dataset, &k.source, k.column, k.filter, rng)?;
        out.insert(r.name.clone(), counts);
    }
    Ok(out)
}

/// The published cells of one release: every key's count plus one fresh
/// draw of the noise, kept when above the threshold, labelled by
/// [`dpplan_vocab::rows::escape_bytes`] (distinct keys, distinct labels; no
/// control character) and sorted by label.
pub(crate) fn draw(
    r: &Release,
    sel: &Selection,
    keyed: &Keyed,
    rng: &mut SecureRng,
) -> Result<Vec<Cell>, RunError> {
    let p = r
        .parts
        .first()
        .ok_or_else(|| RunError::Data(format!("`{}` has no noisy part", r.name)))?;
    let noise = Noise::new(p.mechanism, p.scale, p.grid_exponent).map_err(RunError::Noise)?;
    let counts = keyed
        .get(&r.name)
        .ok_or_else(|| RunError::Data(format!("no counts per key for `{}`", r.name)))?;
    // a count c in units of 2^k (k ≤ 0 for a count)
    let shift = u32::try_from(-p.grid_exponent.min(0)).unwrap_or(u32::MAX);
    let overflow = || RunError::Data(format!("a count of `{}` overflows its grid", r.name));
    let mut kept = Vec::new();
    for (key, c) in counts {
        let x = c.checked_mul(1i128.checked_shl(shift).ok_or_else(overflow)?);
        let v = noise.release(x.ok_or_else(overflow)?, p.grid_exponent, rng);
        // v > τ implies exact count + noise ≥ τ (rounding to nearest is
        // monotone and τ is a float): the bound the checker charged
        if v > sel.threshold {
            kept.push((dpplan_vocab::rows::escape_bytes(key), v));
        }
    }
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(kept
        .into_iter()
        .map(|(key, v)| Cell::noisy(Some(key), v, p.noise_std, p.ci95_half_width))
        .collect())
}
