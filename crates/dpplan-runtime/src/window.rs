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
//! **Times.** A `time` column holds UTC instants as RFC 3339 instants
//! (`2026-03-02T14:05:00Z`, an offset such as `+01:00`, fractions of a
//! second) or whole Unix seconds (`1772460300`), by the grammar of
//! [`parse_time`], which the Spark engine's SQL follows exactly. A row
//! whose time does not parse (or is empty) lies in no window: it is
//! dropped under both `invalid_rows` rules (there is no public bound to
//! clamp a time to).
//!
//! **Engines.** An engine that reads the data where it is kept (Spark)
//! selects a window's rows itself ([`Engine::aggregate_windows`]), by the
//! same rule as [`runtime_windows`], which the runtime uses otherwise:
//! the rows of the due slots, in slot order, each unit kept while the
//! windows it was kept in stay below its bound.
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
use dpplan_engine::{
    Engine, EngineError, IoError, Statistic, WindowRequest, WindowSlot, WindowUnits,
};

/// A time of a `time` column in Unix seconds, by dpplan's time grammar
/// (docs/language.md, "Times"), which every engine reads alike (the Spark
/// engine's SQL is generated from the same grammar: `dpplan_spark::sql`),
/// after trimming Unicode white space:
///
/// ```text
/// time    = unix | instant
/// unix    = ["-"] digit+                       (a 64-bit integer)
/// instant = date sep clock offset
/// date    = YYYY "-" MM "-" DD                 (year 0001–9999, a day of the proleptic Gregorian calendar)
/// sep     = "T" | "t" | " "
/// clock   = hh ":" mm [":" ss [("." | ",") digit{1,9}]]   (hh ≤ 23, mm ≤ 59, ss ≤ 60; 60, a leap second, read as 59)
/// offset  = "Z" | "z" | ("+" | "-") hh [[":"] mm]          (hh ≤ 23, mm ≤ 59)
/// ```
///
/// A fraction of a second is floored; anything else is no time.
pub fn parse_time(field: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(field).ok()?.trim().as_bytes();
    if s.is_empty() {
        return None;
    }
    let digits = s.strip_prefix(b"-").unwrap_or(s);
    if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
        return std::str::from_utf8(s).ok()?.parse::<i64>().ok();
    }
    instant(s)
}

/// The `instant` of [`parse_time`]'s grammar.
fn instant(s: &[u8]) -> Option<i64> {
    // a run of exactly `n` ASCII digits at `at`, as a number
    let num = |at: usize, n: usize| -> Option<i64> {
        let d = s.get(at..at + n)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0i64, |a, &b| a * 10 + i64::from(b - b'0')))
    };
    let at = |i: usize, c: u8| s.get(i) == Some(&c);
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if !(at(4, b'-') && at(7, b'-') && matches!(s.get(10), Some(b'T' | b't' | b' '))) {
        return None;
    }
    let (h, mi) = (num(11, 2)?, num(14, 2)?);
    if !at(13, b':') {
        return None;
    }
    let mut i = 16;
    let mut sec = 0;
    if at(i, b':') {
        sec = num(i + 1, 2)?;
        i += 3;
        if matches!(s.get(i), Some(b'.' | b',')) {
            let n = s[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if !(1..=9).contains(&n) {
                return None;
            }
            i += 1 + n;
        }
    }
    let offset = match &s[i..] {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let (oh, om) = match rest.len() {
                2 => (num(i + 1, 2)?, 0),
                4 => (num(i + 1, 2)?, num(i + 3, 2)?),
                5 if rest[2] == b':' => (num(i + 1, 2)?, num(i + 4, 2)?),
                _ => return None,
            };
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if y < 1 || !(1..=12).contains(&mo) || d < 1 || d > month_days[(mo - 1) as usize] {
        return None;
    }
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec.min(59) - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date of year ≥ 1
/// (H. Hinnant's `days_from_civil`; the Spark engine's SQL computes the
/// same sum).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
    range: (i64, i64),
    excluded: &BTreeSet<String>,
    key: Option<&UnitKey>,
) -> Result<Selected, RunError> {
    let w = window_of(r)?;
    select_rows(dataset, &w.column, reader, range, excluded, key)
}

/// [`select`] by the window's time column `column`.
fn select_rows<R: Read>(
    dataset: &Dataset,
    column: &str,
    reader: R,
    (lo, hi): (i64, i64),
    excluded: &BTreeSet<String>,
    key: Option<&UnitKey>,
) -> Result<Selected, RunError> {
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
    let time = find(column)?;
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
#[derive(Clone)]
pub(crate) struct Kept {
    pub(crate) bound: u64,
    pub(crate) slots: std::collections::HashMap<String, u64>,
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

    /// The units of `slots` (windows kept so far) against `bound`.
    pub(crate) fn of(slots: std::collections::HashMap<String, u64>, bound: u64) -> Kept {
        let bound = bound.max(1);
        let at_bound = slots
            .iter()
            .filter(|(_, &n)| n >= bound)
            .map(|(u, _)| u.clone())
            .collect();
        Kept {
            bound,
            slots,
            at_bound,
        }
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
/// is charged: each window without the units at their bound (those of the
/// ledger, and those this run's earlier slots bring to it), bounded and
/// aggregated ([`slots_of`]).
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
    let key = unit_key(ds, opts, ledger, rng)?;
    let kept = Kept::read(ledger, &r.name, w.windows_per_unit, ds.bounding.per_unit)?;
    Ok(slots_of(
        (plan, opts, engine),
        r,
        start,
        slots,
        (&kept, key.as_ref()),
        rng,
    )?
    .into_iter()
    .map(|s| SlotAggregate {
        slot: s.slot,
        values: s.values,
        units: s.units,
    })
    .collect())
}

/// A window's length as whole seconds, as every engine reads rows by it:
/// a length that is not a whole number of seconds (a plan edited by hand:
/// the compiler writes whole ones) is refused, never truncated.
pub(crate) fn period_of(release: &str, seconds: f64) -> Result<i64, RunError> {
    if seconds.is_finite() && seconds >= 1.0 && seconds.fract() == 0.0 && seconds < 2f64.powi(62) {
        Ok(seconds as i64)
    } else {
        Err(RunError::Data(format!(
            "`{release}`: a window of {seconds} s is not a whole number of seconds"
        )))
    }
}

/// The slots `slots` (ascending) of the windowed release `r` (from
/// `start`), each window's rows without the units brought to `kept.bound`
/// windows by `kept` or by an earlier slot, bounded and aggregated: by the
/// engine itself when it selects windows ([`Engine::aggregate_windows`]:
/// the Spark engine, which reads the data where it is kept), else by the
/// runtime ([`runtime_windows`]); the same rule either way. One
/// [`WindowSlot`] per slot asked, in slot order.
pub(crate) fn slots_of(
    (plan, opts, engine): (&ExecutablePlan, &RunOptions, &dyn Engine),
    r: &Release,
    start: i64,
    slots: &[u64],
    (kept, key): (&Kept, Option<&UnitKey>),
    rng: &mut SecureRng,
) -> Result<Vec<WindowSlot>, RunError> {
    let w = window_of(r)?;
    let ds = dataset_of(plan, r)?;
    let period = period_of(&r.name, w.seconds)?;
    if slots.windows(2).any(|p| p[0] >= p[1]) {
        return Err(RunError::Data(format!(
            "`{}`: the due slots are not in order",
            r.name
        )));
    }
    let stats = r
        .parts
        .iter()
        .map(|p| requests::statistic(r, p))
        .collect::<Result<Vec<_>, _>>()?;
    let path = requests::source_path(ds, opts)?;
    let request = WindowRequest {
        release: &r.name,
        column: &w.column,
        start,
        period,
        slots,
        units: key.map(|k| WindowUnits {
            key: k.bytes(),
            kept: &kept.slots,
            bound: kept.bound,
        }),
    };
    let bounded = window_dataset(ds, r);
    match engine.aggregate_windows(&bounded, &path, &request, &stats, rng)? {
        Some(out) => {
            if out.iter().map(|s| s.slot).ne(slots.iter().copied()) {
                return Err(RunError::Data(format!(
                    "`{}`: the engine returned other windows than asked",
                    r.name
                )));
            }
            Ok(out)
        }
        None => runtime_windows(engine, &bounded, &path, &request, &stats, rng),
    }
}

/// The runtime's own selection of the windows of `w` from `source` (read
/// once): per slot in order, the rows whose time lies in it, without the
/// units already kept in `bound` windows (counting `kept` and the slots
/// before), then bounded and aggregated by `engine` as selected rows
/// ([`Engine::aggregate_selected`]). What [`Engine::aggregate_windows`]
/// must equal; public for the tests that compare the engines.
pub fn runtime_windows(
    engine: &dyn Engine,
    dataset: &Dataset,
    source: &Path,
    w: &WindowRequest<'_>,
    stats: &[Statistic],
    rng: &mut SecureRng,
) -> Result<Vec<WindowSlot>, RunError> {
    let rows = read_rows(dataset, source, w.column, (w.start, w.period), w.slots)?;
    let (key, mut kept) = match &w.units {
        Some(u) => {
            let key: [u8; 32] = u
                .key
                .try_into()
                .map_err(|_| RunError::Data("the unit key is not 32 bytes".into()))?;
            (Some(UnitKey(key)), Kept::of(u.kept.clone(), u.bound))
        }
        None => (None, Kept::of(Default::default(), 1)),
    };
    let mut out = Vec::with_capacity(w.slots.len());
    for &slot in w.slots {
        let range = bounds(w.start, w.period as f64, slot).ok_or_else(|| {
            RunError::Data(format!(
                "`{}`: the window of slot {slot} is not within the years 1–9999",
                w.release
            ))
        })?;
        let csv = rows
            .get(&slot)
            .ok_or_else(|| RunError::Data(format!("`{}`: slot {slot} was not read", w.release)))?;
        let selected = select_rows(
            dataset,
            w.column,
            csv.as_slice(),
            range,
            &kept.at_bound,
            key.as_ref(),
        )?;
        let values = engine.aggregate_selected(dataset, &selected.csv, stats, rng)?;
        kept.add(&selected.units);
        out.push(WindowSlot {
            slot,
            values,
            units: selected.units,
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

/// The rows of the slots `wanted` of windows of `period` seconds from
/// `start` by the time column `column`, from the dataset's source at
/// `path` in ONE pass: each slot's rows as a CSV (header first; a slot
/// without rows has the header only). A row whose time does not parse, or
/// lies in no wanted slot, is left out.
fn read_rows(
    ds: &Dataset,
    path: &Path,
    column: &str,
    (start, period): (i64, i64),
    wanted: &[u64],
) -> Result<BTreeMap<u64, Vec<u8>>, RunError> {
    let mut out = BTreeMap::new();
    if wanted.is_empty() {
        return Ok(out);
    }
    if period < 1 {
        return Err(RunError::Data(format!(
            "a window of {period} s is not a whole number of seconds"
        )));
    }
    // a CSV file, or a Parquet / Arrow source as the CSV text of its
    // declared columns (dpplan_engine::open_source)
    let file = dpplan_engine::open_source(ds, path).map_err(RunError::Engine)?;
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
        // the grammar's other forms
        for (text, want) in [
            (&b"2026-03-02t14:05z"[..], 1_772_460_300),
            (b"2026-03-02 14:05:00+00", 1_772_460_300),
            (b"2026-03-02T15:35:00+0130", 1_772_460_300),
            (b"2026-03-02T13:05:00,5-01:00", 1_772_460_300),
            (b"2026-03-02T14:05:00.123456789Z", 1_772_460_300),
            (b"2016-12-31T23:59:60Z", 1_483_228_799),
            (b"1969-12-31T23:59:59.5Z", -1),
            (b"-0", 0),
            (b"-9223372036854775808", i64::MIN),
            (b"0001-01-01T00:00:00Z", -62_135_596_800),
            (b"9999-12-31T23:59:59-23:59", 253_402_387_139),
            (b"2024-02-29T00:00:00Z", 1_709_164_800),
        ] {
            assert_eq!(
                parse_time(text),
                Some(want),
                "{:?}",
                std::str::from_utf8(text)
            );
        }
        // not a time: no window holds the row
        for bad in [
            &b""[..],
            b"yesterday",
            b"2026-03-02",
            b"2026-13-02T00:00:00Z",
            b"1.5",
            b"+5",
            b"-",
            b"9223372036854775808",
            b"2026-03-02T14:05:00",
            b"2026-03-02T14:05:00.Z",
            b"2026-03-02T14:05:00.1234567890Z",
            b"2026-03-02T24:00:00Z",
            b"2026-03-02T14:60:00Z",
            b"2026-03-02T14:05:61Z",
            b"2026-03-02T14:05:00+24:00",
            b"2026-03-02T14:05:00+01:60",
            b"2026-03-02T14:05:00+1",
            b"2026-03-02T14:05:00+01:0",
            b"2026-03-02T14:05:00Z[UTC]",
            b"2025-02-29T00:00:00Z",
            b"2026-04-31T00:00:00Z",
            b"0000-01-01T00:00:00Z",
            b"20260302T140500Z",
            b"2026-03-02T14Z",
            b"2026-03-02_14:05Z",
            "２０２６-03-02T14:05Z".as_bytes(),
        ] {
            assert_eq!(parse_time(bad), None, "{:?}", std::str::from_utf8(bad));
        }
    }

    /// Every instant of the grammar against jiff's calendar: random
    /// dates, clocks, fractions, separators and offsets.
    #[test]
    fn instants_agree_with_jiffs_calendar() {
        let mut rng = SecureRng::from_seed_for_tests(7);
        for _ in 0..20_000 {
            let secs = rng.below_u64(253_402_300_800 + 62_135_596_800) as i64 - 62_135_596_800;
            let off_min = rng.below_u64(2 * 1439 + 1) as i32 - 1439;
            let offset = jiff::tz::Offset::from_seconds(off_min * 60).unwrap();
            let ts = jiff::Timestamp::from_second(secs).unwrap();
            let dt = offset.to_datetime(ts);
            if dt.year() < 1 || dt.year() > 9999 {
                continue;
            }
            let sep = ["T", "t", " "][rng.below_u64(3) as usize];
            let frac = match rng.below_u64(3) {
                0 => String::new(),
                1 => format!(".{}", rng.below_u64(1000)),
                _ => format!(",{:09}", rng.below_u64(1_000_000_000)),
            };
            let (sign, a) = if off_min < 0 {
                ('-', -off_min)
            } else {
                ('+', off_min)
            };
            let off = match rng.below_u64(3) {
                0 if off_min == 0 => "Z".to_string(),
                0 | 1 => format!("{sign}{:02}:{:02}", a / 60, a % 60),
                _ => format!("{sign}{:02}{:02}", a / 60, a % 60),
            };
            let text = format!(
                "{:04}-{:02}-{:02}{sep}{:02}:{:02}:{:02}{frac}{off}",
                dt.year(),
                dt.month(),
                dt.day(),
                dt.hour(),
                dt.minute(),
                dt.second()
            );
            assert_eq!(parse_time(text.as_bytes()), Some(secs), "{text}");
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
