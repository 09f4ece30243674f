//! A sampled dataset's step (`sample units q`): the units of the job's
//! Poisson sample, drawn in the statement by HMAC-SHA256 under a secret
//! key the runner binds per job.

use std::fmt::Write;

use dpplan_engine::EngineError;
use dpplan_plan::Dataset;

use super::{schema, Uses};

/// The bound parameter of a sampled statement's threshold ⌊q·2⁶⁰⌋.
pub const SAMPLE_BELOW: &str = "sample_below";
/// The bound parameters of a sampled statement's secret key, drawn per
/// job by the runner (never in `--explain`): the key padded to SHA-256's
/// 64-byte block and XORed with HMAC's inner and outer pads, in hex.
pub const SAMPLE_KEY_INNER: &str = "sample_ikey";
pub const SAMPLE_KEY_OUTER: &str = "sample_okey";

/// HMAC-SHA256 (RFC 2104) of `key` (32 bytes) padded to the 64-byte block
/// and XORed with `pad` (0x36 inner, 0x5c outer), in hex: what the
/// statement binds as [`SAMPLE_KEY_INNER`] and [`SAMPLE_KEY_OUTER`].
pub fn hmac_pad_hex(key: &[u8; 32], pad: u8) -> String {
    let mut out = String::with_capacity(128);
    for i in 0..64 {
        let b = key.get(i).copied().unwrap_or(0) ^ pad;
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// A sampled dataset's threshold on 60 bits: ⌊q·2⁶⁰⌋, so a unit is kept
/// with probability ⌊q·2⁶⁰⌋/2⁶⁰ ≤ q (never above the rate the accountants
/// compose: their bound grows with q); `None` without sampling (or at
/// 100 %). The rate and the unit are checked as the embedded engine checks
/// them ([`dpplan_engine::sample_rate`]); windows and keys from the data,
/// which the checker refuses a sample (DP014), are refused here by name.
pub(super) fn sample_below(ds: &Dataset, uses: &Uses) -> Result<Option<i64>, EngineError> {
    let Some(q) = dpplan_engine::sample_rate(ds)? else {
        return Ok(None);
    };
    if uses.slotted || uses.data_keys.is_some() {
        return Err(schema(format!(
            "dataset `{}` samples its units: a sample is not drawn for windows or keys from the data (the checker refuses them, DP014)",
            ds.name
        )));
    }
    // q·2⁶⁰ is exact (a power of two), its floor below 2⁶⁰ < 2⁶³ for q < 1
    Ok(Some((q * 1_152_921_504_606_846_976.0).floor() as i64))
}

/// Step 2½ of a sampled dataset, `sampled`: the rows of the units in this
/// job's Poisson sample — a unit is in it when the first 60 bits of
/// HMAC-SHA256(key, unit id) are below ⌊q·2⁶⁰⌋: a coin per unit from a
/// pseudorandom function of the unit alone under a secret key drawn per
/// job (so a fresh, independent sample per pass, as the embedded engine
/// draws its coins), before the shuffle by unit (the rows of the other
/// units are never moved).
pub(super) fn sampling(w: &mut String, ds: &Dataset) {
    let pct = dpplan_plan::sample_percent(ds.sample.unwrap_or(1.0));
    let _ = writeln!(
        w,
        "-- sample units {pct} %: HMAC-SHA256 of the unit under the job's secret key, its first 60 bits below :{SAMPLE_BELOW}
         sampled AS (
  SELECT * FROM cells
  WHERE CAST(conv(substr(sha2(concat(unhex(:{SAMPLE_KEY_OUTER}), unhex(sha2(concat(unhex(:{SAMPLE_KEY_INNER}), CAST(u AS BINARY)), 256))), 256), 1, 15), 16, 10) AS BIGINT) < :{SAMPLE_BELOW}
),"
    );
}
