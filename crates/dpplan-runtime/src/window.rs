//! Windowed releases: the rows of one slot's window, and the units kept in
//! it.
//!
//! A release with a `window` reads, at slot `s`, only the rows whose time
//! column lies in its window [start + s·period, start + (s+1)·period). The
//! rows of the window are selected while the CSV is streamed and handed to
//! the engine's ordinary bounded aggregation (at most `rows_per_window`
//! rows per unit, Algorithm R, and the grouped bounds), so nothing outside
//! the window reaches the aggregate.
//!
//! **Times.** A `time` column holds UTC instants as RFC 3339 / ISO 8601
//! (`2026-03-02T14:05:00Z`, an offset such as `+01:00`, fractions of a
//! second) or whole Unix seconds (`1772460300`). A row whose time does not
//! parse (or is empty) lies in no window: it is dropped under both
//! `invalid_rows` rules (there is no public bound to clamp a time to).
//!
//! **Late rows.** Each window is released once: its slot is charged in the
//! ledger before its noise is drawn and is never drawn again. A row that
//! arrives after its window was released has a time in that window only,
//! so no later slot reads it: it is never released, and never counted.
//!
//! **The horizon bound.** Over the whole schedule a unit is kept in at most
//! `windows_per_unit` windows. The ledger keeps, per query, the windows
//! each unit was kept in, keyed by a keyed hash of its id (SHA-256 of a
//! 32-byte secret key and the id; the key lives in a file next to the
//! ledger, never in it, and the ids are never stored). A unit already at
//! its bound is left out of the window's rows before aggregation; the
//! units kept in this window are recorded in the same SQLite transaction
//! as the release's charge (`Ledger::begin_release_windowed`), which also
//! refuses the release if another run recorded one of them meanwhile.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use dpplan_plan::{Dataset, ExecutablePlan, Release, Window};

use crate::ledger::Ledger;
use crate::{requests, RunError, RunOptions};
use dpplan_engine::rng::SecureRng;
use dpplan_engine::{Engine, EngineError, IoError};

/// A time of a `time` column in Unix seconds: RFC 3339 (ISO 8601 with `Z`
/// or an offset; fractions floored to the second) or whole Unix seconds.
pub fn parse_time(field: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(field).ok()?.trim();
    if s.is_empty() {
        return None;
    }
    if s.bytes().all(|b| b.is_ascii_digit()) || (s.starts_with('-') && s.len() > 1) {
        if let Ok(n) = s.parse::<i64>() {
            return Some(n);
        }
    }
    let t: jiff::Timestamp = s.parse().ok()?;
    Some(t.as_second())
}

/// The window of slot `slot`: [start + slot·period, start + (slot+1)·period).
pub fn bounds(start: i64, period: f64, slot: u64) -> Option<(i64, i64)> {
    if !(period.is_finite() && period >= 1.0 && period.fract() == 0.0) {
        return None;
    }
    let p = period as i64;
    let lo = start.checked_add(p.checked_mul(i64::try_from(slot).ok()?)?)?;
    Some((lo, lo.checked_add(p)?))
}

/// The secret key of the unit hashes of a ledger's window state: 32 bytes
/// in `<ledger>.units-key`, created (owner-only) on first use.
pub struct UnitKey([u8; 32]);

/// The key file of a ledger ([`crate::ledger::units_key_path`]).
pub fn key_path(ledger: &Path) -> PathBuf {
    crate::ledger::units_key_path(ledger)
}

impl UnitKey {
    /// Reads the key next to `ledger`, or creates it when `create` (no
    /// unit was recorded yet); a missing key with recorded units is an
    /// error: a new key would forget every unit's windows.
    pub fn load(ledger: &Path, create: bool, rng: &mut SecureRng) -> Result<UnitKey, RunError> {
        let path = key_path(ledger);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let key: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
                    RunError::Data(format!("`{}` is not a 32-byte key", path.display()))
                })?;
                Ok(UnitKey(key))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                let mut key = [0u8; 32];
                for b in key.iter_mut() {
                    *b = rng.below_u64(256) as u8;
                }
                write_new(&path, &key)?;
                // another run may have created it first: read what is there
                Self::load(ledger, false, rng)
            }
            Err(e) => Err(RunError::Data(format!(
                "cannot read the unit key `{}` of the windowed queries' state: {e}; without it the windows each unit was kept in are lost, so no windowed release is made",
                path.display()
            ))),
        }
    }

    /// Reads the key next to `ledger` (never creates one).
    pub(crate) fn read(ledger: &Path) -> std::io::Result<UnitKey> {
        let bytes = std::fs::read(key_path(ledger))?;
        let key: [u8; 32] = bytes.as_slice().try_into().map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, "not a 32-byte key")
        })?;
        Ok(UnitKey(key))
    }

    /// The key's bytes (a MAC key; never written anywhere else).
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// A key of one process's own, never written: `dpplan audit`, which
    /// keeps no window state.
    pub fn ephemeral(rng: &mut SecureRng) -> UnitKey {
        let mut key = [0u8; 32];
        for b in key.iter_mut() {
            *b = rng.below_u64(256) as u8;
        }
        UnitKey(key)
    }

    /// The keyed hash of a unit id, in hex.
    pub fn hash(&self, id: &[u8]) -> String {
        let mut bytes = Vec::with_capacity(32 + id.len());
        bytes.extend_from_slice(&self.0);
        bytes.extend_from_slice(id);
        dpplan_plan::sha256_hex(&bytes)
    }
}

/// Writes a new file readable by its owner only; an existing file is kept.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    match o.open(path) {
        Ok(mut f) => {
            f.write_all(bytes)
                .and_then(|()| f.sync_all())
                .map_err(|e| io(path, e))?;
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(path, e)),
    }
}

fn io(path: &Path, e: std::io::Error) -> RunError {
    RunError::Engine(EngineError::Io(
        IoError::new(format!("cannot write `{}`", path.display())).with_source(e),
    ))
}

/// The rows of one window, as a CSV (header first), and the keyed hashes
/// of the units they hold (empty for a row- or event-level unit).
pub struct Selected {
    pub csv: Vec<u8>,
    pub units: BTreeSet<String>,
}

/// Streams `reader` and keeps the rows of `r`'s window [lo, hi) whose unit
/// is not in `excluded`.
pub fn select<R: Read>(
    dataset: &Dataset,
    r: &Release,
    reader: R,
    (lo, hi): (i64, i64),
    excluded: &BTreeSet<String>,
    key: Option<&UnitKey>,
) -> Result<Selected, RunError> {
    let w = r
        .window
        .as_ref()
        .ok_or_else(|| RunError::Data(format!("`{}` has no window", r.name)))?;
    let read_err = |e: csv::Error| {
        RunError::Engine(EngineError::Io(
            IoError::new(format!(
                "cannot read the CSV of dataset `{}`: {e}",
                dataset.name
            ))
            .with_source(e),
        ))
    };
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(true)
        .from_reader(reader);
    let header = rdr.byte_headers().map_err(read_err)?.clone();
    let find = |name: &str| -> Result<usize, RunError> {
        header
            .iter()
            .position(|h| h == name.as_bytes())
            .ok_or_else(|| {
                RunError::Engine(EngineError::Schema(format!(
                    "the CSV of dataset `{}` has no column `{name}`",
                    dataset.name
                )))
            })
    };
    let time = find(&w.column)?;
    let id = match (&dataset.bounding.id_column, key) {
        (Some(c), Some(_)) => Some(find(c)?),
        _ => None,
    };
    let mut out = csv::Writer::from_writer(Vec::new());
    let write_err = |e: csv::Error| RunError::Data(format!("cannot buffer the window's rows: {e}"));
    out.write_byte_record(&header).map_err(write_err)?;
    let mut units = BTreeSet::new();
    let mut rec = csv::ByteRecord::new();
    while rdr.read_byte_record(&mut rec).map_err(read_err)? {
        let Some(t) = rec.get(time).and_then(parse_time) else {
            continue;
        };
        if t < lo || t >= hi {
            continue;
        }
        if let (Some(i), Some(k)) = (id, key) {
            let Some(raw) = rec.get(i).filter(|v| !v.is_empty()) else {
                // a missing id: the engine drops the row
                out.write_byte_record(&rec).map_err(write_err)?;
                continue;
            };
            let h = k.hash(raw);
            if excluded.contains(&h) {
                continue;
            }
            units.insert(h);
        }
        out.write_byte_record(&rec).map_err(write_err)?;
    }
    let csv = out
        .into_inner()
        .map_err(|e| RunError::Data(format!("cannot buffer the window's rows: {e}")))?;
    Ok(Selected { csv, units })
}

/// The dataset as the engine bounds one window: at most `rows_per_window`
/// rows per unit (the checker made it at most `rows_per_unit`).
pub fn window_dataset(dataset: &Dataset, r: &Release) -> Dataset {
    let mut d = dataset.clone();
    if let (Some(w), Some(rows)) = (&r.window, d.bounding.rows_per_unit) {
        d.bounding.rows_per_unit = Some(rows.min(w.rows_per_window));
    }
    d
}

/// The units kept in their bound of windows so far (a windowed query's
/// `windows_per_unit`, a tree's W′ slots), kept up to date over a run's
/// slots: read from the ledger once, not once per slot. The ledger's own
/// check in each intent's transaction stays authoritative.
pub(crate) struct Kept {
    bound: u64,
    slots: std::collections::HashMap<String, u64>,
    pub(crate) at_bound: BTreeSet<String>,
}

impl Kept {
    pub(crate) fn read(
        ledger: Option<&Ledger>,
        query: &str,
        bound: u64,
        per_unit: bool,
    ) -> Result<Kept, RunError> {
        let bound = bound.max(1);
        let slots = match ledger {
            Some(l) if per_unit => l.windows_of_units(query)?,
            _ => Default::default(),
        };
        let at_bound = slots
            .iter()
            .filter(|(_, &n)| n >= bound)
            .map(|(u, _)| u.clone())
            .collect();
        Ok(Kept {
            bound,
            slots,
            at_bound,
        })
    }

    /// A slot's units, recorded with its intent.
    pub(crate) fn add(&mut self, units: &BTreeSet<String>) {
        for u in units {
            let n = self.slots.entry(u.clone()).or_default();
            *n += 1;
            if *n >= self.bound {
                self.at_bound.insert(u.clone());
            }
        }
    }
}

/// One slot of a windowed release, aggregated: the exact bounded
/// aggregates of its parts and the keyed hashes of the units kept in it.
pub(crate) struct SlotAggregate {
    pub(crate) slot: u64,
    pub(crate) values: Vec<Vec<i128>>,
    pub(crate) units: BTreeSet<String>,
}

/// Every due slot of a windowed release, in slot order, before anything
/// is charged: the dataset read once and cut into the slots' windows, each
/// window without the units at their bound (those of the ledger, and
/// those this run's earlier slots bring to it), bounded and aggregated by
/// the engine.
pub(crate) fn prepare(
    plan: &ExecutablePlan,
    opts: &RunOptions,
    engine: &dyn Engine,
    (r, slots): (&Release, &[u64]),
    ledger_start: i64,
    ledger: Option<&Ledger>,
    rng: &mut SecureRng,
) -> Result<Vec<SlotAggregate>, RunError> {
    let w = window_of(r)?;
    let ds = dataset_of(plan, r)?;
    let start = r.schedule.start.unwrap_or(ledger_start);
    let rows = read_slots(ds, opts, r, (start, w.seconds), slots)?;
    let key = unit_key(ds, opts, ledger, rng)?;
    let mut kept = Kept::read(ledger, &r.name, w.windows_per_unit, ds.bounding.per_unit)?;
    let mut out = Vec::with_capacity(slots.len());
    for &slot in slots {
        let selected = rows
            .get(&slot)
            .ok_or_else(|| RunError::Data(format!("`{}`: slot {slot} was not read", r.name)))?;
        let (values, units) = aggregate_slot(
            plan,
            engine,
            (r, slot),
            start,
            selected,
            (&kept.at_bound, key.as_ref()),
            rng,
        )?;
        kept.add(&units);
        out.push(SlotAggregate {
            slot,
            values,
            units,
        });
    }
    Ok(out)
}

fn window_of(r: &Release) -> Result<&Window, RunError> {
    r.window
        .as_ref()
        .ok_or_else(|| RunError::Data(format!("`{}` has no window", r.name)))
}

pub(crate) fn dataset_of<'p>(
    plan: &'p ExecutablePlan,
    r: &Release,
) -> Result<&'p Dataset, RunError> {
    plan.body
        .datasets
        .get(&r.dataset)
        .ok_or_else(|| RunError::Data(format!("the plan has no dataset `{}`", r.dataset)))
}

/// The unit key of a dataset with a per-unit bound (created with the
/// first unit recorded); `None` for a row- or event-level unit.
pub(crate) fn unit_key(
    ds: &Dataset,
    opts: &RunOptions,
    ledger: Option<&Ledger>,
    rng: &mut SecureRng,
) -> Result<Option<UnitKey>, RunError> {
    if !ds.bounding.per_unit {
        return Ok(None);
    }
    ledger_key(&opts.ledger, ledger, rng).map(Some)
}

/// The unit key of the ledger at `path` (`ledger`, when it exists): read,
/// or created while no unit and no key fingerprint was recorded. A key
/// the chain recorded is never created anew: that would restart every
/// unit at zero windows.
pub(crate) fn ledger_key(
    path: &Path,
    ledger: Option<&Ledger>,
    rng: &mut SecureRng,
) -> Result<UnitKey, RunError> {
    let create = match ledger {
        Some(l) => l.window_units_recorded()? == 0 && !l.key_recorded()?,
        None => true,
    };
    UnitKey::load(path, create, rng)
}

/// The rows of the slots `wanted` of `r`'s windows (of `period` seconds
/// from `start`), from its dataset's CSV in ONE pass: each slot's rows as a
/// CSV (header first; a slot without rows has the header only). A row
/// whose time does not parse, or lies in no wanted slot, is left out.
pub(crate) fn read_slots(
    ds: &Dataset,
    opts: &RunOptions,
    r: &Release,
    (start, period): (i64, f64),
    wanted: &[u64],
) -> Result<BTreeMap<u64, Vec<u8>>, RunError> {
    let column = r
        .window
        .as_ref()
        .map(|w| &w.column)
        .or(r.cumulative.as_ref().map(|c| &c.column))
        .ok_or_else(|| RunError::Data(format!("`{}` has no window", r.name)))?;
    let mut out = BTreeMap::new();
    if wanted.is_empty() {
        return Ok(out);
    }
    if !(period.is_finite() && period >= 1.0 && period.fract() == 0.0) {
        return Err(RunError::Data(format!(
            "`{}`: a window of {period} s is not a whole number of seconds",
            r.name
        )));
    }
    let period = period as i64;
    let path = requests::source_path(ds, opts)?;
    // a CSV file, or a Parquet / Arrow source as the CSV text of its
    // declared columns (dpplan_engine::open_source)
    let file = dpplan_engine::open_source(ds, &path).map_err(RunError::Engine)?;
    let read_err = |e: csv::Error| {
        RunError::Engine(EngineError::Io(
            IoError::new(format!("cannot read the CSV of dataset `{}`: {e}", ds.name))
                .with_source(e),
        ))
    };
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .has_headers(true)
        .from_reader(file);
    let header = rdr.byte_headers().map_err(read_err)?.clone();
    let time = header
        .iter()
        .position(|h| h == column.as_bytes())
        .ok_or_else(|| {
            RunError::Engine(EngineError::Schema(format!(
                "the CSV of dataset `{}` has no column `{column}`",
                ds.name
            )))
        })?;
    let write_err = |e: csv::Error| RunError::Data(format!("cannot buffer the window's rows: {e}"));
    let wanted: BTreeSet<u64> = wanted.iter().copied().collect();
    let mut writers: BTreeMap<u64, csv::Writer<Vec<u8>>> = BTreeMap::new();
    for &s in &wanted {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_byte_record(&header).map_err(write_err)?;
        writers.insert(s, w);
    }
    let mut rec = csv::ByteRecord::new();
    while rdr.read_byte_record(&mut rec).map_err(read_err)? {
        let Some(t) = rec.get(time).and_then(parse_time) else {
            continue;
        };
        let Some(elapsed) = t.checked_sub(start).filter(|e| *e >= 0) else {
            continue;
        };
        let Ok(slot) = u64::try_from(elapsed / period) else {
            continue;
        };
        if let Some(w) = writers.get_mut(&slot) {
            w.write_byte_record(&rec).map_err(write_err)?;
        }
    }
    for (s, w) in writers {
        let bytes = w
            .into_inner()
            .map_err(|e| RunError::Data(format!("cannot buffer the window's rows: {e}")))?;
        out.insert(s, bytes);
    }
    Ok(out)
}

/// One windowed release's slot: the rows `rows` read for it (its window),
/// without the units of `excluded` (those already at their bound),
/// bounded and aggregated by the engine; the aggregates, and the keyed
/// hashes of the units kept.
pub(crate) fn aggregate_slot(
    plan: &ExecutablePlan,
    engine: &dyn Engine,
    (r, slot): (&Release, u64),
    start: i64,
    rows: &[u8],
    (excluded, key): (&BTreeSet<String>, Option<&UnitKey>),
    rng: &mut SecureRng,
) -> Result<(Vec<Vec<i128>>, BTreeSet<String>), RunError> {
    let w = window_of(r)?;
    let ds = dataset_of(plan, r)?;
    let range = bounds(start, w.seconds, slot).ok_or_else(|| {
        RunError::Data(format!(
            "`{}`: the window of slot {slot} is not a whole number of seconds within the years 1–9999",
            r.name
        ))
    })?;
    let selected = select(ds, r, rows, range, excluded, key)?;
    let stats = r
        .parts
        .iter()
        .map(|p| requests::statistic(r, p))
        .collect::<Result<Vec<_>, _>>()?;
    let values = engine.aggregate_selected(&window_dataset(ds, r), &selected.csv, &stats, rng)?;
    Ok((values, selected.units))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_as_documented() {
        assert_eq!(parse_time(b"2026-03-02T14:05:00Z"), Some(1_772_460_300));
        assert_eq!(
            parse_time(b"2026-03-02T15:05:00+01:00"),
            Some(1_772_460_300)
        );
        assert_eq!(parse_time(b"2026-03-02T14:05:00.999Z"), Some(1_772_460_300));
        assert_eq!(parse_time(b"1772460300"), Some(1_772_460_300));
        assert_eq!(parse_time(b" 1772460300 "), Some(1_772_460_300));
        // not a time: no window holds the row
        for bad in [
            &b""[..],
            b"yesterday",
            b"2026-03-02",
            b"2026-13-02T00:00:00Z",
            b"1.5",
        ] {
            assert_eq!(parse_time(bad), None, "{:?}", std::str::from_utf8(bad));
        }
    }

    #[test]
    fn windows_are_the_slots() {
        assert_eq!(bounds(1000, 3600.0, 0), Some((1000, 4600)));
        assert_eq!(bounds(1000, 3600.0, 2), Some((8200, 11800)));
        assert_eq!(bounds(0, 0.5, 1), None);
        assert_eq!(bounds(i64::MAX - 10, 3600.0, 1), None);
    }
}
