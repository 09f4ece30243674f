//! Reading and bounded aggregation behind the [`Engine`] trait.
//!
//! The engine computes **exact** bounded aggregates only (integers in units
//! of each statistic's grid 2^k); noise is never the engine's business.
//! [`CsvEngine`] streams a CSV file once, on one thread, and parses only
//! the fields the statistics need (the unit id, the summed numbers, the
//! grouping categories; other declared numbers are only checked for
//! validity when invalid rows are dropped):
//!
//! * row- and event-level units: every row is a unit; it goes straight into
//!   the accumulators (memory is constant in the number of rows);
//! * user-level units: per unit id a reservoir of at most `rows_per_unit`
//!   rows (Algorithm R, secure random indices) is kept in a flat
//!   open-addressing table keyed by a secret-keyed universal hash of the id
//!   (the ids themselves are never stored) — memory is
//!   O(units × rows_per_unit), never O(rows), and a slot holds only what
//!   the statistics use (each summed number as its offset on the grid in as
//!   few bytes as its public bounds allow, category indexes in 1, 2 or 4
//!   bytes; nothing for a count). Rows go through the table in batches, so
//!   that their cache misses overlap. At the end, grouped statistics keep
//!   at most `groups_per_unit` groups per unit and `rows_per_group` rows per
//!   group, chosen uniformly at random.
//!
//! Error messages name files and declared columns, never a data value, a row
//! number or a count of dropped rows.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use dpplan_plan::Dataset;

use crate::rng::SecureRng;

/// What is aggregated.
#[derive(Debug, Clone, PartialEq)]
pub enum StatKind {
    Count,
    Sum { column: String },
    GroupedCount { by: String },
    GroupedSum { by: String, column: String },
}

/// One exact statistic to compute, in units of 2^grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Statistic {
    pub kind: StatKind,
    pub grid: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    Io(String),
    Schema(String),
    Overflow(String),
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Io(s) | EngineError::Schema(s) | EngineError::Overflow(s) => {
                f.write_str(s)
            }
        }
    }
}

impl std::error::Error for EngineError {}

/// Reading and bounded aggregation. Another engine (SQL, distributed) takes
/// the same request and must apply the same bounding steps.
pub trait Engine {
    /// One vector per statistic: a single value, or one per group of the
    /// public domain, in domain order.
    fn aggregate(
        &self,
        dataset: &Dataset,
        source: &Path,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError>;
}

/// The built-in streaming CSV engine.
#[derive(Debug, Default, Clone, Copy)]
pub struct CsvEngine;

/// A declared numeric column as parsed per row.
#[derive(Clone, Copy)]
struct NumCol {
    index: usize,
    int: bool,
    /// What `invalid_rows clamp` substitutes for an invalid value.
    impute: f64,
}

/// A summed number's grid: scale 2^−k and the public bounds rounded inward
/// onto the grid (integers, |lo|, |hi| ≤ 2^62).
#[derive(Clone, Copy, PartialEq)]
struct Grid {
    scale: f64,
    lo: f64,
    hi: f64,
}

impl Grid {
    /// The number in grid units, rounded half away from zero (as
    /// `f64::round`), then clamped to [lo, hi].
    ///
    /// Computed as round(clamp(x)), which is the same since lo and hi are
    /// integers, and rounded inline: below 2^52 `as i64` truncates exactly
    /// and the remainder is exact; from 2^52 on every f64 is an integer.
    #[inline]
    fn at(&self, v: f64) -> i64 {
        let x = (v * self.scale).clamp(self.lo, self.hi);
        let t = x as i64;
        let rest = x - t as f64;
        if rest >= 0.5 {
            t + 1
        } else if rest <= -0.5 {
            t - 1
        } else {
            t
        }
    }
}

/// Per-statistic pre-computed clamp in grid units.
struct Prepared {
    /// Index into the row's parsed numbers ([`Layout::vals`]).
    value: Option<usize>,
    /// Index into the stored values of user-level bounding
    /// ([`Layout::fields`]).
    field: Option<usize>,
    /// Index into the row's category slots (grouped).
    group: Option<usize>,
    grid: Grid,
    coords: usize,
    count_shift: i32,
}

const OUT: u32 = u32::MAX;

struct Domain {
    values: Vec<Vec<u8>>,
    map: Option<HashMap<Vec<u8>, u32>>,
}

impl Domain {
    fn new(values: &[String]) -> Domain {
        let values: Vec<Vec<u8>> = values.iter().map(|v| v.as_bytes().to_vec()).collect();
        let map = (values.len() > 16).then(|| {
            values
                .iter()
                .enumerate()
                .map(|(i, v)| (v.clone(), i as u32))
                .collect()
        });
        Domain { values, map }
    }
    #[inline]
    fn index(&self, field: &[u8]) -> u32 {
        match &self.map {
            Some(m) => m.get(field).copied().unwrap_or(OUT),
            None => self
                .values
                .iter()
                .position(|v| v.as_slice() == field)
                .map_or(OUT, |i| i as u32),
        }
    }
}

/// Parses a number; `None` for empty, unparsable, NaN, or a fractional int.
#[inline]
fn parse_number(field: Option<&[u8]>, int: bool) -> Option<f64> {
    let f = field?;
    let s = std::str::from_utf8(f).ok()?.trim();
    if s.is_empty() {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    if v.is_nan() || (int && !is_integer(v)) {
        return None;
    }
    Some(v)
}

/// `v.fract() == 0.0` for a non-NaN `v` (infinities included), without an
/// out-of-line `trunc`: every f64 of magnitude ≥ 2^52 is an integer, and
/// below that `as i64` truncates exactly.
#[inline]
fn is_integer(v: f64) -> bool {
    v.abs() >= 4_503_599_627_370_496.0 || (v as i64) as f64 == v
}

/// Exactly `parse_number(field, int).is_some()`, without computing the
/// value in the common case: `[+-]digits[.digits]` always parses to a
/// finite number or an infinity (never NaN), and it is an integer when no
/// fractional digit is non-zero. Anything else (spaces, exponents, `inf`,
/// fractional digits of an int column, which may still round to an
/// integer) takes the full parse.
#[inline]
fn valid_number(field: Option<&[u8]>, int: bool) -> bool {
    let Some(f) = field else {
        return false;
    };
    let body = match f.first() {
        Some(b'+' | b'-') => &f[1..],
        _ => f,
    };
    let (whole, frac) = match body.iter().position(|&c| c == b'.') {
        Some(p) => (&body[..p], &body[p + 1..]),
        None => (body, &body[body.len()..]),
    };
    let simple = whole.len() + frac.len() > 0
        && whole.iter().all(u8::is_ascii_digit)
        && frac.iter().all(u8::is_ascii_digit);
    if simple && (!int || frac.iter().all(|&c| c == b'0')) {
        return true;
    }
    parse_number(field, int).is_some()
}

fn overflow() -> EngineError {
    EngineError::Overflow("a sum overflowed 128 bits".into())
}

struct Accumulators {
    values: Vec<Vec<i128>>,
    counts: Vec<Vec<u64>>,
}

impl Accumulators {
    fn new(prepared: &[Prepared]) -> Self {
        Accumulators {
            values: prepared.iter().map(|p| vec![0i128; p.coords]).collect(),
            counts: prepared.iter().map(|p| vec![0u64; p.coords]).collect(),
        }
    }

    /// Adds one row (numeric values and category indexes) of a row-level
    /// unit.
    #[inline]
    fn add(
        &mut self,
        prepared: &[Prepared],
        nums: &[f64],
        cats: &[u32],
    ) -> Result<(), EngineError> {
        for (i, p) in prepared.iter().enumerate() {
            let slot = match p.group {
                Some(g) => {
                    let c = cats[g];
                    if c == OUT {
                        continue;
                    }
                    c as usize
                }
                None => 0,
            };
            match p.value {
                None => self.counts[i][slot] += 1,
                Some(v) => self.add_value(i, slot, i128::from(p.grid.at(nums[v])))?,
            }
        }
        Ok(())
    }

    #[inline]
    fn add_value(&mut self, stat: usize, slot: usize, x: i128) -> Result<(), EngineError> {
        let acc = &mut self.values[stat][slot];
        *acc = acc.checked_add(x).ok_or_else(overflow)?;
        Ok(())
    }

    fn finish(self, prepared: &[Prepared]) -> Result<Vec<Vec<i128>>, EngineError> {
        let mut out = Vec::with_capacity(prepared.len());
        for (i, p) in prepared.iter().enumerate() {
            if p.value.is_some() {
                out.push(self.values[i].clone());
            } else {
                let mut v = Vec::with_capacity(p.coords);
                for &c in &self.counts[i] {
                    let x = (c as i128)
                        .checked_shl(p.count_shift as u32)
                        .filter(|y| (y >> p.count_shift) == c as i128);
                    v.push(x.ok_or_else(|| {
                        EngineError::Overflow("a count overflowed 128 bits".into())
                    })?);
                }
                out.push(v);
            }
        }
        Ok(out)
    }
}

/// Uniform bounded integers from the [`SecureRng`], exact (Lemire's
/// multiply-and-reject), drawing 32 random bits per draw when the bound
/// fits in 32 bits (every realistic reservoir) from a buffer filled in
/// bulk: half the generator output of [`SecureRng::below_u64`] and no
/// per-draw call into the generator.
struct Draws {
    buf: [u8; 256],
    pos: usize,
}

impl Draws {
    fn new() -> Self {
        Draws {
            buf: [0; 256],
            pos: 256,
        }
    }

    #[inline]
    fn next_u32(&mut self, rng: &mut SecureRng) -> u32 {
        if self.pos == self.buf.len() {
            rng.fill_bytes(&mut self.buf);
            self.pos = 0;
        }
        let b = &self.buf[self.pos..self.pos + 4];
        self.pos += 4;
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    }

    /// Uniform in `0..n` (n ≥ 1).
    #[inline]
    fn below(&mut self, n: u64, rng: &mut SecureRng) -> u64 {
        let Ok(n32) = u32::try_from(n) else {
            return rng.below_u64(n);
        };
        let mut m = u64::from(self.next_u32(rng)) * n;
        if (m as u32) < n32 {
            // reject the 2^32 mod n lowest products: every result then has
            // exactly ⌊2^32 / n⌋ preimages
            let threshold = n32.wrapping_neg() % n32;
            while (m as u32) < threshold {
                m = u64::from(self.next_u32(rng)) * n;
            }
        }
        m >> 32
    }
}

/// Moves a uniformly random selection of min(k, len) elements to the front
/// (partial Fisher–Yates).
fn shuffle_prefix<T>(v: &mut [T], k: usize, draws: &mut Draws, rng: &mut SecureRng) {
    let n = v.len();
    if n <= 1 {
        return;
    }
    for i in 0..k.min(n - 1) {
        let j = i + draws.below((n - i) as u64, rng) as usize;
        v.swap(i, j);
    }
}

/// 2^61 − 1, a Mersenne prime: the field of the unit-id hash.
const P61: u64 = (1 << 61) - 1;
const LOW56: u64 = (1 << 56) - 1;

/// `x mod P61` for `x < 2^123`.
#[inline]
fn mod_p61(x: u128) -> u64 {
    let s = (x as u64 & P61) + (x >> 61) as u64; // < 2^61 + 2^62
    let r = (s & P61) + (s >> 61);
    if r >= P61 {
        r - P61
    } else {
        r
    }
}

/// Bits of the unit key kept in the table's header word.
const KEY_BITS: u32 = 48;

/// Bytes before a slot's reservoir: the header word (key and rows seen)
/// and the check word.
const HDR: usize = 16;

/// The keyed hash of unit ids: a universal hash over the field 2^61 − 1,
/// truncated to [`KEY_BITS`] bits.
///
/// An id is cut into blocks of 56 bytes and each block into 7-byte chunks
/// c_i; a block hashes to Σ c_i·k_i (multilinear), blocks are chained as a
/// polynomial in r, and the length adds len·k_len + k_add. All keys are
/// secret and uniform in the field, drawn from the [`SecureRng`], so for
/// any two distinct ids fixed in advance the field values collide with
/// probability at most (number of blocks)/2^61, and their difference is
/// otherwise uniform: the top 48 bits (the key) agree with probability
/// about 2^−48. There are no key-independent collisions to craft, and
/// nothing of the hash leaves the process.
///
/// A unit is identified by two such hashes under independent keys: the top
/// 48 bits of one in the slot's header (where it is found) and all 61 bits
/// of the other in the slot's check word. Two distinct ids share a slot
/// only if both agree, with probability about 2^−109 per pair: n·2^−109 for
/// a given person among n units (10⁻²⁷ for a million), which no one can
/// raise without the keys. That matters for privacy, not only accuracy:
/// two ids merged into one reservoir are bounded together, and adding one
/// of them can change which rows of the other are kept, so under
/// add/remove a merged unit may move a sum with bounds of both signs by up
/// to k·(hi − lo), more than the declared k·max(|lo|, |hi|). The guarantee
/// therefore rests on collisions being negligible, as it would with a
/// cryptographic hash; this one costs about 4 ns a hash instead of ~19 ns
/// for SipHash-1-3-128, and the ids themselves are never stored.
struct IdHasher {
    chunk_keys: [u64; 8],
    chain_key: u64,
    len_key: u64,
    add_key: u64,
}

impl IdHasher {
    fn new(rng: &mut SecureRng) -> Self {
        let mut key = || rng.below_u64(P61);
        IdHasher {
            chunk_keys: std::array::from_fn(|_| key()),
            chain_key: key(),
            len_key: key(),
            add_key: key(),
        }
    }

    /// Σ c_i·k_i over the 7-byte chunks c_i of a block of ≤ 56 bytes, not
    /// reduced: 8 products of < 2^56 · 2^61, so < 2^120.
    #[inline]
    fn block(&self, b: &[u8]) -> u128 {
        let mut sum: u128 = 0;
        let mut i = 0;
        while b.len() - 7 * i >= 8 {
            let w = &b[7 * i..7 * i + 8];
            let c = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]) & LOW56;
            sum += u128::from(c) * u128::from(self.chunk_keys[i]);
            i += 1;
        }
        let rest = b.len() - 7 * i; // 0..=7 bytes left
        if rest > 0 {
            let c = if b.len() >= 8 {
                // the last 8 bytes, shifted so that only the rest remains
                let w = &b[b.len() - 8..];
                u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
                    >> (8 * (8 - rest))
            } else {
                b.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x))
            };
            sum += u128::from(c) * u128::from(self.chunk_keys[i]);
        }
        sum
    }

    /// The id's table key, in 1..2^48.
    #[inline]
    fn key(&self, id: &[u8]) -> u64 {
        // the top 48 of the 61 bits; 0 (probability 2^−48) marks an empty
        // slot, so it merges with 1
        (self.field(id) >> (61 - KEY_BITS)).max(1)
    }

    /// The id's whole 61-bit hash (the check word).
    #[inline]
    fn check(&self, id: &[u8]) -> u64 {
        self.field(id)
    }

    /// The universal hash of the id, in the field 2^61 − 1.
    #[inline]
    fn field(&self, id: &[u8]) -> u64 {
        let s = if id.len() <= 56 {
            self.block(id)
        } else {
            u128::from(id.chunks(56).fold(0u64, |h, b| {
                mod_p61(
                    u128::from(h) * u128::from(self.chain_key) + u128::from(mod_p61(self.block(b))),
                )
            }))
        };
        // ids are far shorter than 2^56 bytes: the mask changes nothing
        let len = id.len() as u64 & LOW56;
        mod_p61(s + u128::from(len) * u128::from(self.len_key) + u128::from(self.add_key))
    }
}

/// Sentinel of a slot's 16-bit row counter: the exact count is in
/// [`UnitTable::heavy`].
const SATURATED: u64 = 0xffff;

/// The per-unit reservoirs of user-level bounding, in one flat
/// open-addressing table (linear probing on the key's top bits), so that a
/// row costs about one cache miss. Those misses are most of what user-level
/// bounding costs over a plain aggregation, and they grow with the table's
/// size: a slot holds only what the statistics need.
///
/// A slot is `stride` bytes: a little-endian header word `key << 16 |
/// seen` (the unit's key, and the rows seen so far, up to 65 534; beyond,
/// the field is saturated and the exact count kept in `heavy`), the check
/// word (the id's second hash), then the reservoir, `cap` rows of `fields` stored values, each the value's
/// offset from its grid's lower bound in `field_bytes` bytes (the least
/// that hold hi − lo), then `cap` rows of `cats` category indexes in
/// `cat_bytes` bytes each (all ones for "outside the domain"). A count
/// alone needs only the two words: 16 bytes per unit. The table starts on a
/// 64-byte boundary and the stride is a multiple of 8 bytes (a slot may
/// straddle two cache lines; `touch` loads both). The header is 0 in an
/// empty slot. The load stays between 3/8 and 3/4.
struct UnitTable {
    stride: usize,
    /// The byte offset of slot 0 in `data`.
    base: usize,
    /// log2 of the number of slots.
    bits: u32,
    len: usize,
    data: Vec<u8>,
    hasher: IdHasher,
    /// An independent hash of the id, stored whole next to the key.
    checker: IdHasher,
    cap: usize,
    fields: usize,
    field_bytes: usize,
    cats: usize,
    cat_bytes: usize,
    /// Exact row counts of the units whose 16-bit counter saturated, by
    /// (key, check).
    heavy: HashMap<(u64, u64), u64>,
}

/// All ones in the low `bytes` bytes.
#[inline]
fn low_bytes(bytes: usize) -> u64 {
    u64::MAX >> (64 - 8 * bytes)
}

impl UnitTable {
    fn new(
        cap: usize,
        fields: usize,
        field_bytes: usize,
        cats: usize,
        cat_bytes: usize,
        rng: &mut SecureRng,
    ) -> Option<Self> {
        // a slot, and 16 of them, must be addressable
        let row = fields * field_bytes + cats * cat_bytes;
        let stride = cap.checked_mul(row)?.checked_add(HDR + 7)? / 8 * 8;
        stride.checked_mul(16)?.checked_add(72)?;
        // about 256 KB to start with, at least 16 slots
        let bits = (262_144 / stride)
            .next_power_of_two()
            .trailing_zeros()
            .clamp(4, 30);
        // 64 bytes to align slot 0, 8 so that a field of the last slot can
        // be read as a whole word
        let data = vec![0u8; (stride << bits) + 72];
        let base = (64 - data.as_ptr() as usize % 64) % 64;
        Some(UnitTable {
            stride,
            base,
            bits,
            len: 0,
            data,
            hasher: IdHasher::new(rng),
            checker: IdHasher::new(rng),
            cap,
            fields,
            field_bytes,
            cats,
            cat_bytes,
            heavy: HashMap::new(),
        })
    }

    #[inline]
    fn word(&self, at: usize) -> u64 {
        let w = &self.data[at..at + 8];
        u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
    }

    #[inline]
    fn set_word(&mut self, at: usize, v: u64) {
        self.data[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// Writes the low `bytes` bytes of `v` at `at`: plain stores of a
    /// constant size, which do not wait for the line (a read-modify-write
    /// of a whole word would, and could reach into the next line).
    #[inline]
    fn set_bytes(&mut self, at: usize, bytes: usize, v: u64) {
        #[inline(always)]
        fn put<const N: usize>(to: &mut [u8], at: usize, v: u64) {
            let b = v.to_le_bytes();
            let mut w = [0u8; N];
            w.copy_from_slice(&b[..N]);
            to[at..at + N].copy_from_slice(&w);
        }
        match bytes {
            1 => put::<1>(&mut self.data, at, v),
            2 => put::<2>(&mut self.data, at, v),
            3 => put::<3>(&mut self.data, at, v),
            4 => put::<4>(&mut self.data, at, v),
            5 => put::<5>(&mut self.data, at, v),
            6 => put::<6>(&mut self.data, at, v),
            7 => put::<7>(&mut self.data, at, v),
            _ => put::<8>(&mut self.data, at, v),
        }
    }

    /// The index of the home slot of a key: its top bits.
    #[inline]
    fn home(&self, key: u64) -> usize {
        (key >> (KEY_BITS - self.bits)) as usize
    }

    /// Doubles the table in place: the vector is extended (a large one is
    /// remapped by the allocator, not copied, and keeps its pages), then
    /// every unit moves to its new place, from the last slot down. A unit's
    /// new home is twice its old one (plus one bit), so it almost always
    /// lies above its old slot, in the part already rebuilt, and probing
    /// from there only meets units already placed; the few others (home
    /// not above the old slot, or probing past the end) are set aside and
    /// inserted at the end.
    fn grow(&mut self) {
        let stride = self.stride;
        let old_slots = 1usize << self.bits;
        let old_base = self.base;
        let used = old_slots * stride;
        self.bits += 1;
        let bytes = (stride << self.bits) + 72;
        self.data.reserve_exact(bytes - self.data.len());
        self.data.resize(bytes, 0);
        self.base = (64 - self.data.as_ptr() as usize % 64) % 64;
        if self.base != old_base {
            // the allocator moved the vector to another alignment
            self.data.copy_within(old_base..old_base + used, self.base);
            let (lo, hi) = (self.base.min(old_base), self.base.max(old_base));
            if self.base < old_base {
                self.data[lo + used..hi + used].fill(0);
            } else {
                self.data[lo..hi].fill(0);
            }
        }
        let slots = 1usize << self.bits;
        let mut aside: Vec<u8> = Vec::new();
        for i in (0..old_slots).rev() {
            let at = self.base + i * stride;
            let header = self.word(at);
            if header == 0 {
                continue;
            }
            let mut j = self.home(header >> 16);
            let mut placed = false;
            if j > i {
                while j < slots {
                    let to = self.base + j * stride;
                    if self.word(to) == 0 {
                        self.data.copy_within(at..at + stride, to);
                        placed = true;
                        break;
                    }
                    j += 1;
                }
            }
            if !placed {
                aside.extend_from_slice(&self.data[at..at + stride]);
            }
            self.data[at..at + stride].fill(0);
        }
        for unit in aside.chunks_exact(stride) {
            let key = u64::from_le_bytes([
                unit[0], unit[1], unit[2], unit[3], unit[4], unit[5], unit[6], unit[7],
            ]) >> 16;
            let mut j = self.home(key);
            loop {
                let to = self.base + j * stride;
                if self.word(to) == 0 {
                    self.data[to..to + stride].copy_from_slice(unit);
                    break;
                }
                j = (j + 1) & (slots - 1);
            }
        }
    }

    /// Loads the first and the last word of a key's home slot, to bring
    /// its cache lines in (a slot of more than 8 bytes may straddle two).
    #[inline]
    fn touch(&self, key: u64) -> u64 {
        let at = self.base + self.home(key) * self.stride;
        self.word(at) ^ self.word(at + self.stride - 8)
    }

    /// The byte offset of the unit's slot, inserted when new; `None` when
    /// inserting would fill more than 3/4 of the table (then `grow`).
    #[inline]
    fn slot_of(&mut self, key: u64, check: u64) -> Option<usize> {
        let mask = (1usize << self.bits) - 1;
        let mut i = self.home(key);
        loop {
            let at = self.base + i * self.stride;
            let header = self.word(at);
            if header >> 16 == key && self.word(at + 8) == check {
                return Some(at);
            }
            if header == 0 {
                if (self.len + 1) * 4 > 3 << self.bits {
                    return None;
                }
                self.set_word(at, key << 16);
                self.set_word(at + 8, check);
                self.len += 1;
                return Some(at);
            }
            i = (i + 1) & mask;
        }
    }

    /// The slot of a unit, inserted when new, growing the table as needed.
    #[cfg(test)]
    fn slot(&mut self, key: u64) -> usize {
        loop {
            match self.slot_of(key, key.rotate_left(17)) {
                Some(at) => return at,
                None => self.grow(),
            }
        }
    }

    /// Counts one more row of the unit at `at`; returns the rows seen.
    #[inline]
    fn bump(&mut self, at: usize) -> u64 {
        let header = self.word(at);
        let seen = (header & SATURATED) + 1;
        if seen < SATURATED {
            self.set_word(at, header + 1);
            return seen;
        }
        if seen == SATURATED {
            self.set_word(at, header + 1);
            self.heavy.insert((header >> 16, self.word(at + 8)), seen);
            return seen;
        }
        let n = self
            .heavy
            .entry((header >> 16, self.word(at + 8)))
            .or_insert(SATURATED);
        *n += 1;
        *n
    }

    /// The rows seen of the unit at `at`.
    fn seen(&self, at: usize) -> u64 {
        let header = self.word(at);
        match header & SATURATED {
            SATURATED => self
                .heavy
                .get(&(header >> 16, self.word(at + 8)))
                .copied()
                .unwrap_or(SATURATED),
            n => n,
        }
    }

    /// Stores a row in place `row` of the reservoir at `at`.
    #[inline]
    fn put(&mut self, at: usize, row: usize, fields: &[u64], cats: &[u32]) {
        let (fb, cb) = (self.field_bytes, self.cat_bytes);
        let v = at + HDR + row * self.fields * fb;
        for (i, &x) in fields.iter().enumerate() {
            self.set_bytes(v + i * fb, fb, x);
        }
        let c = at + HDR + self.cap * self.fields * fb + row * self.cats * cb;
        for (i, &x) in cats.iter().enumerate() {
            self.set_bytes(c + i * cb, cb, u64::from(x));
        }
    }

    /// Stored value `field` of row `row` of the slot at `at`.
    #[inline]
    fn field(&self, at: usize, row: usize, field: usize) -> u64 {
        let fb = self.field_bytes;
        self.word(at + HDR + (row * self.fields + field) * fb) & low_bytes(fb)
    }

    /// Category `g` of row `row` of the slot at `at`.
    #[inline]
    fn cat(&self, at: usize, row: usize, g: usize) -> u32 {
        let cb = self.cat_bytes;
        let at = at + HDR + self.cap * self.fields * self.field_bytes + (row * self.cats + g) * cb;
        let v = self.word(at) & low_bytes(cb);
        if v == low_bytes(cb) {
            OUT
        } else {
            v as u32
        }
    }
}

/// The schema resolved against a CSV header.
struct Layout {
    id: Option<usize>,
    /// The numbers some statistic sums, parsed.
    vals: Vec<NumCol>,
    /// The other declared numbers, only checked when invalid rows are
    /// dropped (under `clamp` they would be imputed, and nothing reads them).
    checks: Vec<NumCol>,
    /// CSV index and domain of every grouping column used.
    cats: Vec<(usize, Domain)>,
    /// The distinct (number, grid) pairs the sums need: what user-level
    /// bounding stores per kept row.
    fields: Vec<(usize, Grid)>,
    drop_invalid: bool,
}

impl Layout {
    /// Parses the row into `vals`/`cats`; false when the row is dropped.
    #[inline]
    fn parse(&self, rec: &csv::ByteRecord, vals: &mut [f64], cats: &mut [u32]) -> bool {
        if let Some(i) = self.id {
            match rec.get(i) {
                Some(f) if !f.is_empty() => {}
                _ => return false,
            }
        }
        for (slot, c) in self.vals.iter().enumerate() {
            match parse_number(rec.get(c.index), c.int) {
                Some(v) => vals[slot] = v,
                None if self.drop_invalid => return false,
                None => vals[slot] = c.impute,
            }
        }
        for c in &self.checks {
            if !valid_number(rec.get(c.index), c.int) {
                return false;
            }
        }
        for (slot, (index, domain)) in self.cats.iter().enumerate() {
            cats[slot] = rec.get(*index).map_or(OUT, |f| domain.index(f));
        }
        true
    }
}

fn header_index(
    headers: &csv::ByteRecord,
    dataset: &str,
    name: &str,
) -> Result<usize, EngineError> {
    headers
        .iter()
        .position(|h| {
            h == name.as_bytes() || (h.starts_with(b"\xef\xbb\xbf") && &h[3..] == name.as_bytes())
        })
        .ok_or_else(|| {
            EngineError::Schema(format!(
                "column `{name}` of dataset `{dataset}` is missing from the CSV header"
            ))
        })
}

impl CsvEngine {
    fn layout(
        &self,
        dataset: &Dataset,
        headers: &csv::ByteRecord,
        stats: &[Statistic],
    ) -> Result<(Layout, Vec<Prepared>), EngineError> {
        let id = if dataset.bounding.per_unit {
            let name = dataset.bounding.id_column.as_deref().ok_or_else(|| {
                EngineError::Schema(format!("dataset `{}` has no unit id column", dataset.name))
            })?;
            Some(header_index(headers, &dataset.name, name)?)
        } else {
            None
        };
        let mut nums = Vec::new();
        let mut num_names: Vec<&str> = Vec::new();
        for c in &dataset.columns {
            if c.ty == "int" || c.ty == "float" {
                nums.push(NumCol {
                    index: header_index(headers, &dataset.name, &c.name)?,
                    int: c.ty == "int",
                    impute: c.bounds.map_or(0.0, |b| b[0]),
                });
                num_names.push(&c.name);
            } else if c.ty == "category" || c.ty == "id" {
                header_index(headers, &dataset.name, &c.name)?;
            }
        }
        let mut cats: Vec<(usize, Domain)> = Vec::new();
        let mut cat_names: Vec<&str> = Vec::new();
        let mut prepared = Vec::new();
        for s in stats {
            let (value, by) = match &s.kind {
                StatKind::Count => (None, None),
                StatKind::Sum { column } => (Some(column.as_str()), None),
                StatKind::GroupedCount { by } => (None, Some(by.as_str())),
                StatKind::GroupedSum { by, column } => (Some(column.as_str()), Some(by.as_str())),
            };
            let mut coords = 1;
            let group = match by {
                None => None,
                Some(by) => {
                    let col = dataset
                        .columns
                        .iter()
                        .find(|c| c.name == by)
                        .ok_or_else(|| {
                            EngineError::Schema(format!(
                                "dataset `{}` declares no column `{by}`",
                                dataset.name
                            ))
                        })?;
                    let domain = col.domain.as_ref().ok_or_else(|| {
                        EngineError::Schema(format!("column `{by}` has no public domain"))
                    })?;
                    coords = domain.len();
                    Some(match cat_names.iter().position(|n| *n == by) {
                        Some(i) => i,
                        None => {
                            cats.push((
                                header_index(headers, &dataset.name, by)?,
                                Domain::new(domain),
                            ));
                            cat_names.push(by);
                            cats.len() - 1
                        }
                    })
                }
            };
            let grid_scale = 2f64.powi(-s.grid);
            let (value, lo, hi) = match value {
                None => (None, 0.0, 0.0),
                Some(name) => {
                    let slot = num_names.iter().position(|n| *n == name).ok_or_else(|| {
                        EngineError::Schema(format!("column `{name}` is not a declared number"))
                    })?;
                    let b = dataset
                        .columns
                        .iter()
                        .find(|c| c.name == name)
                        .and_then(|c| c.bounds)
                        .ok_or_else(|| {
                            EngineError::Schema(format!("column `{name}` has no public bounds"))
                        })?;
                    // Bounds rounded inward onto the grid: every kept value
                    // lies in [lo, hi], so the declared sensitivity holds.
                    let lo = (b[0] * grid_scale).ceil();
                    let hi = (b[1] * grid_scale).floor();
                    if !(lo.abs() <= 2f64.powi(62) && hi.abs() <= 2f64.powi(62)) || lo > hi {
                        return Err(EngineError::Schema(format!(
                            "column `{name}`: the bounds do not fit the grid 2^{}",
                            s.grid
                        )));
                    }
                    (Some(slot), lo, hi)
                }
            };
            if value.is_none() && s.grid > 0 {
                return Err(EngineError::Schema(
                    "a count needs a grid exponent ≤ 0".into(),
                ));
            }
            prepared.push(Prepared {
                value,
                field: None,
                group,
                grid: Grid {
                    scale: grid_scale,
                    lo,
                    hi,
                },
                coords,
                count_shift: -s.grid,
            });
        }
        // Only the summed numbers are parsed; the others are checked.
        let mut used: Vec<usize> = Vec::new();
        let mut fields: Vec<(usize, Grid)> = Vec::new();
        for p in &mut prepared {
            if let Some(n) = p.value {
                let v = used.iter().position(|&u| u == n).unwrap_or_else(|| {
                    used.push(n);
                    used.len() - 1
                });
                p.value = Some(v);
                let f = (v, p.grid);
                p.field = Some(fields.iter().position(|x| *x == f).unwrap_or_else(|| {
                    fields.push(f);
                    fields.len() - 1
                }));
            }
        }
        let drop_invalid = dataset.invalid_rows != "clamp";
        let vals = used.iter().map(|&n| nums[n]).collect();
        let checks = match drop_invalid {
            true => (0..nums.len())
                .filter(|n| !used.contains(n))
                .map(|n| nums[n])
                .collect(),
            false => Vec::new(),
        };
        Ok((
            Layout {
                id,
                vals,
                checks,
                cats,
                fields,
                drop_invalid,
            },
            prepared,
        ))
    }

    /// Aggregates from any reader (the file variant opens the path).
    pub fn aggregate_reader<R: Read>(
        &self,
        dataset: &Dataset,
        reader: R,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        let io = |e: csv::Error| {
            EngineError::Io(format!(
                "cannot read the CSV of dataset `{}`: {e}",
                dataset.name
            ))
        };
        let mut rdr = csv::ReaderBuilder::new()
            .flexible(true)
            .has_headers(true)
            .from_reader(reader);
        let headers = rdr.byte_headers().map_err(io)?.clone();
        let (layout, prepared) = self.layout(dataset, &headers, stats)?;
        let mut acc = Accumulators::new(&prepared);
        let mut rec = csv::ByteRecord::new();
        let n_vals = layout.vals.len();
        let n_cats = layout.cats.len();
        let Some(id_index) = layout.id else {
            // Row/event-level unit: every valid row is a unit of its own.
            let mut vals = vec![0f64; n_vals];
            let mut cats = vec![0u32; n_cats];
            while rdr.read_byte_record(&mut rec).map_err(io)? {
                if layout.parse(&rec, &mut vals, &mut cats) {
                    acc.add(&prepared, &vals, &cats)?;
                }
            }
            return acc.finish(&prepared);
        };
        let cap = dataset.bounding.rows_per_unit.unwrap_or(1).max(1);
        let too_large = || {
            EngineError::Schema(format!(
                "dataset `{}`: rows_per_unit is too large",
                dataset.name
            ))
        };
        let cap_rows = usize::try_from(cap).map_err(|_| too_large())?;
        let n_fields = layout.fields.len();
        // the least bytes that hold every hi − lo, and every domain index
        // plus the all-ones "outside" marker
        let span = layout
            .fields
            .iter()
            .map(|(_, g)| (g.hi - g.lo) as u64)
            .max();
        let field_bytes = span.map_or(1, |s| (64 - s.leading_zeros() as usize).div_ceil(8).max(1));
        let largest_domain = layout.cats.iter().map(|(_, d)| d.values.len()).max();
        let cat_bytes = match largest_domain.unwrap_or(0) {
            0..=254 => 1,
            255..=65534 => 2,
            _ => 4,
        };
        let mut units = UnitTable::new(cap_rows, n_fields, field_bytes, n_cats, cat_bytes, rng)
            .ok_or_else(too_large)?;
        let mut draws = Draws::new();
        // A row needs a random index only when its values are kept.
        let payload = n_fields + n_cats > 0;
        // Rows are handled in batches: parse and hash a batch, load the
        // home slot of every row in a loop of independent loads (the cache
        // misses overlap instead of stalling one by one), find every row's
        // slot (now cached), then update the reservoirs in row order.
        let mut batch = Batch::new(n_vals, n_cats);
        let mut slots: Vec<usize> = Vec::with_capacity(BATCH);
        let mut fields = vec![0u64; n_fields];
        let mut more = true;
        while more {
            batch.keys.clear();
            batch.checks.clear();
            while batch.keys.len() < BATCH {
                if !rdr.read_byte_record(&mut rec).map_err(io)? {
                    more = false;
                    break;
                }
                let n = batch.keys.len();
                if !layout.parse(
                    &rec,
                    &mut batch.vals[n * n_vals..(n + 1) * n_vals],
                    &mut batch.cats[n * n_cats..(n + 1) * n_cats],
                ) {
                    continue;
                }
                let id = &rec[id_index];
                batch.keys.push(units.hasher.key(id));
                batch.checks.push(units.checker.check(id));
            }
            let mut sink = 0u64;
            for &key in &batch.keys {
                sink = sink.wrapping_add(units.touch(key));
            }
            std::hint::black_box(sink);
            // all slots first, then the updates: a growth (which moves
            // slots) restarts the lookup, finding the units just inserted
            slots.clear();
            while slots.len() < batch.keys.len() {
                let n = slots.len();
                match units.slot_of(batch.keys[n], batch.checks[n]) {
                    Some(at) => slots.push(at),
                    None => {
                        units.grow();
                        slots.clear();
                    }
                }
            }
            for (n, &at) in slots.iter().enumerate() {
                let seen = units.bump(at);
                if !payload {
                    continue;
                }
                // Algorithm R: the n-th row replaces a random kept row with
                // probability cap/n, so the kept rows are a uniform sample.
                let row = if seen <= cap {
                    seen - 1
                } else {
                    let j = draws.below(seen, rng);
                    if j >= cap {
                        continue;
                    }
                    j
                };
                let vals = &batch.vals[n * n_vals..(n + 1) * n_vals];
                for (x, (v, grid)) in fields.iter_mut().zip(&layout.fields) {
                    // in [0, hi − lo]: fits field_bytes
                    // in [0, hi − lo] ⊆ [0, 2^63]: i128, since 2^63 does
                    // not fit an i64 (bounds ±2^62)
                    *x = (i128::from(grid.at(vals[*v])) - i128::from(grid.lo as i64)) as u64;
                }
                units.put(
                    at,
                    row as usize,
                    &fields,
                    &batch.cats[n * n_cats..(n + 1) * n_cats],
                );
            }
        }
        // Per unit: the kept rows feed ungrouped statistics; grouped ones
        // are bounded further per grouping column.
        let mut groups = GroupBounds::new(
            &layout,
            dataset.bounding.groups_per_unit,
            dataset.bounding.rows_per_group,
        );
        let mut sums = vec![0u128; n_fields];
        let mut row_cats: Vec<u32> = Vec::with_capacity(cap_rows.min(1 << 16));
        for i in 0..1usize << units.bits {
            let at = units.base + i * units.stride;
            let header = units.word(at);
            if header == 0 {
                continue;
            }
            let rows = units.seen(at).min(cap) as usize;
            // Ungrouped statistics see every kept row.
            for (f, sum) in sums.iter_mut().enumerate() {
                *sum = (0..rows).map(|r| u128::from(units.field(at, r, f))).sum();
            }
            for (i, p) in prepared.iter().enumerate() {
                match (p.group, p.field) {
                    (Some(_), _) => {}
                    (None, None) => acc.counts[i][0] += rows as u64,
                    (None, Some(f)) => {
                        // rows · lo + Σ (value − lo)
                        let x = (rows as i128)
                            .checked_mul(p.grid.lo as i128)
                            .zip(i128::try_from(sums[f]).ok())
                            .and_then(|(a, b)| a.checked_add(b))
                            .ok_or_else(overflow)?;
                        acc.add_value(i, 0, x)?;
                    }
                }
            }
            // Grouped ones only the rows kept for their grouping column.
            for g in 0..n_cats {
                row_cats.clear();
                row_cats.extend((0..rows).map(|r| units.cat(at, r, g)));
                let kept = groups.select(g, &row_cats, &mut draws, rng);
                for (i, p) in prepared.iter().enumerate() {
                    if p.group != Some(g) {
                        continue;
                    }
                    for r in (0..rows).filter(|&r| kept[r]) {
                        let c = row_cats[r] as usize;
                        match p.field {
                            None => acc.counts[i][c] += 1,
                            Some(f) => {
                                let x = p.grid.lo as i128 + units.field(at, r, f) as i128;
                                acc.add_value(i, c, x)?;
                            }
                        }
                    }
                }
            }
        }
        acc.finish(&prepared)
    }
}

/// Rows per batch of user-level bounding.
const BATCH: usize = 256;

/// Parsed rows awaiting their reservoir update: keys, and per row the
/// summed numbers and category indexes (fixed-size rows, no allocation).
struct Batch {
    keys: Vec<u64>,
    checks: Vec<u64>,
    vals: Vec<f64>,
    cats: Vec<u32>,
}

impl Batch {
    fn new(n_vals: usize, n_cats: usize) -> Self {
        Batch {
            keys: Vec::with_capacity(BATCH),
            checks: Vec::with_capacity(BATCH),
            vals: vec![0.0; BATCH * n_vals],
            cats: vec![OUT; BATCH * n_cats],
        }
    }
}

/// The per-unit group bounding of grouped statistics, with scratch space
/// reused from unit to unit (no allocation per unit).
struct GroupBounds {
    groups_cap: usize,
    per_group_cap: usize,
    /// Per grouping column and category: the unit (counter) that last saw
    /// it, and its index in `distinct`.
    stamp: Vec<Vec<u64>>,
    index: Vec<Vec<u32>>,
    unit: u64,
    /// The unit's distinct categories, their row counts, whether kept.
    distinct: Vec<u32>,
    members: Vec<u32>,
    chosen: Vec<bool>,
    order: Vec<u32>,
    rows: Vec<usize>,
    kept: Vec<bool>,
}

impl GroupBounds {
    fn new(layout: &Layout, groups: Option<u64>, per_group: Option<u64>) -> Self {
        let cap =
            |g: Option<u64>| g.map_or(usize::MAX, |g| usize::try_from(g).unwrap_or(usize::MAX));
        GroupBounds {
            groups_cap: cap(groups),
            per_group_cap: cap(per_group),
            stamp: layout
                .cats
                .iter()
                .map(|(_, d)| vec![0; d.values.len()])
                .collect(),
            index: layout
                .cats
                .iter()
                .map(|(_, d)| vec![0; d.values.len()])
                .collect(),
            unit: 0,
            distinct: Vec::new(),
            members: Vec::new(),
            chosen: Vec::new(),
            order: Vec::new(),
            rows: Vec::new(),
            kept: Vec::new(),
        }
    }

    /// Which of a unit's kept rows grouping column `g` keeps, given their
    /// categories: at most `groups_cap` of the unit's groups (categories in
    /// the domain), chosen uniformly at random, and in each at most
    /// `per_group_cap` rows, chosen uniformly at random. Draws only when a
    /// cap actually binds.
    fn select(
        &mut self,
        g: usize,
        cats: &[u32],
        draws: &mut Draws,
        rng: &mut SecureRng,
    ) -> &[bool] {
        let n = cats.len();
        self.kept.clear();
        self.kept.extend(cats.iter().map(|&c| c != OUT));
        if n <= self.groups_cap && n <= self.per_group_cap {
            return &self.kept; // no cap can bind
        }
        self.unit += 1;
        let (stamp, index) = (&mut self.stamp[g], &mut self.index[g]);
        self.distinct.clear();
        self.members.clear();
        for &c in cats {
            if c == OUT {
                continue;
            }
            let c = c as usize;
            if stamp[c] != self.unit {
                stamp[c] = self.unit;
                index[c] = self.distinct.len() as u32;
                self.distinct.push(c as u32);
                self.members.push(0);
            }
            self.members[index[c] as usize] += 1;
        }
        let groups = self.distinct.len();
        if groups > self.groups_cap {
            // a uniformly random subset of groups_cap of the distinct groups
            self.order.clear();
            self.order.extend(0..groups as u32);
            shuffle_prefix(&mut self.order, self.groups_cap, draws, rng);
            self.chosen.clear();
            self.chosen.resize(groups, false);
            for &d in &self.order[..self.groups_cap] {
                self.chosen[d as usize] = true;
            }
            for (k, &c) in self.kept.iter_mut().zip(cats) {
                *k = *k && self.chosen[index[c as usize] as usize];
            }
        } else {
            self.chosen.clear();
            self.chosen.resize(groups, true);
        }
        // groups with more rows than per_group_cap: keep a random subset
        for d in 0..groups {
            if !self.chosen[d] || self.members[d] as usize <= self.per_group_cap {
                continue;
            }
            let c = self.distinct[d];
            self.rows.clear();
            self.rows.extend((0..n).filter(|&r| cats[r] == c));
            shuffle_prefix(&mut self.rows, self.per_group_cap, draws, rng);
            for &r in &self.rows[self.per_group_cap..] {
                self.kept[r] = false;
            }
        }
        &self.kept
    }
}

impl Engine for CsvEngine {
    fn aggregate(
        &self,
        dataset: &Dataset,
        source: &Path,
        stats: &[Statistic],
        rng: &mut SecureRng,
    ) -> Result<Vec<Vec<i128>>, EngineError> {
        let cannot = |why: String| {
            EngineError::Io(format!(
                "cannot open `{}` for dataset `{}`: {why}",
                source.display(),
                dataset.name
            ))
        };
        if source.is_dir() {
            return Err(cannot("it is a directory, not a CSV file".into()));
        }
        let file = File::open(source).map_err(|e| cannot(e.to_string()))?;
        self.aggregate_reader(dataset, BufReader::with_capacity(1 << 20, file), stats, rng)
    }
}

/// A plain, non-private aggregation of the same file (no bounding, no
/// clamping, no noise): the benchmark's baseline. Returns the row count,
/// the sum of `sum_column` and the histogram of `by` over `domain`.
pub fn plain_aggregate(
    source: &Path,
    sum_column: &str,
    by: &str,
    domain: &[String],
) -> Result<(u64, f64, Vec<u64>), EngineError> {
    let file = File::open(source).map_err(|_| EngineError::Io("cannot open the file".into()))?;
    let io = |_: csv::Error| EngineError::Io("cannot read the CSV".into());
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(BufReader::with_capacity(1 << 20, file));
    let headers = rdr.byte_headers().map_err(io)?.clone();
    let si = header_index(&headers, "bench", sum_column)?;
    let bi = header_index(&headers, "bench", by)?;
    let dom = Domain::new(domain);
    let mut rec = csv::ByteRecord::new();
    let (mut n, mut sum, mut hist) = (0u64, 0f64, vec![0u64; domain.len()]);
    while rdr.read_byte_record(&mut rec).map_err(io)? {
        n += 1;
        if let Some(v) = parse_number(rec.get(si), false) {
            sum += v;
        }
        let g = rec.get(bi).map_or(OUT, |f| dom.index(f));
        if g != OUT {
            hist[g as usize] += 1;
        }
    }
    Ok((n, sum, hist))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_number_agrees_with_parse_number() {
        let cases = [
            "",
            "0",
            "-0",
            "+7",
            "12",
            "12.",
            ".5",
            "-.5",
            ".",
            "-",
            "+",
            "1.0",
            "1.50",
            "2.000",
            " 3",
            "3 ",
            "1e3",
            "1E-2",
            "inf",
            "-inf",
            "NaN",
            "nan",
            "0x10",
            "1..2",
            "1.2.3",
            "abc",
            "9007199254740993.5",
            "99999999999999999999999999.0",
            "12345678901234567890123456789012345678901234567890",
            "1,5",
            "\u{a0}4",
            "٣",
        ];
        for c in cases {
            for int in [false, true] {
                assert_eq!(
                    valid_number(Some(c.as_bytes()), int),
                    parse_number(Some(c.as_bytes()), int).is_some(),
                    "{c:?} int {int}"
                );
            }
        }
        assert!(!valid_number(None, false));
        assert!(!valid_number(Some(b"\xff1"), false));
    }

    #[test]
    fn is_integer_is_fract_zero() {
        for v in [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            2.5,
            -3.0,
            1e15 + 0.5,
            4503599627370495.5,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-300,
        ] {
            assert_eq!(is_integer(v), v.fract() == 0.0 || v.is_infinite(), "{v}");
        }
    }

    #[test]
    fn grid_rounds_like_f64_round_then_clamps() {
        let grids = [
            Grid {
                scale: 1.0,
                lo: -10.0,
                hi: 10.0,
            },
            Grid {
                scale: 2f64.powi(27),
                lo: 0.0,
                hi: (3600.0 * 2f64.powi(27)),
            },
            Grid {
                scale: 0.5,
                lo: -(2f64.powi(62)),
                hi: 2f64.powi(62),
            },
        ];
        let values = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            9.5,
            10.4,
            10.6,
            -10.6,
            1e300,
            -1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            3599.9999999,
            1234.5678,
            4503599627370497.0,
            1e18 + 3.0,
        ];
        for g in grids {
            for v in values {
                let want = (v * g.scale).round().clamp(g.lo, g.hi) as i64;
                assert_eq!(g.at(v), want, "{v} on {}", g.scale);
            }
        }
    }

    #[test]
    fn draws_are_in_range_and_uniform() {
        let mut rng = SecureRng::from_seed_for_tests(7);
        let mut d = Draws::new();
        let mut seen = [0u32; 6];
        for _ in 0..60_000 {
            seen[d.below(6, &mut rng) as usize] += 1;
        }
        // chi-square, 5 df, false alarm 1e-6: critical ≈ 35.9
        let chi: f64 = seen
            .iter()
            .map(|&o| (o as f64 - 10_000.0).powi(2) / 10_000.0)
            .sum();
        assert!(chi < 35.9, "{seen:?}");
        for n in [1, 2, 3 << 30, u32::MAX as u64, 1 << 32, u64::MAX] {
            for _ in 0..100 {
                assert!(d.below(n, &mut rng) < n);
            }
        }
    }

    #[test]
    fn unit_keys_are_stable_and_in_range() {
        let mut rng = SecureRng::from_seed_for_tests(1);
        let h = IdHasher::new(&mut rng);
        let ids: Vec<Vec<u8>> = (0..2000)
            .map(|i| format!("user-{i}").into_bytes())
            .chain([
                b"".to_vec(),
                b"a".to_vec(),
                b"a\0".to_vec(),
                vec![b'x'; 56],
                vec![b'x'; 57],
            ])
            .chain((0..200).map(|i| vec![i as u8; 300]))
            .collect();
        let keys: Vec<u64> = ids.iter().map(|id| h.key(id)).collect();
        for (id, &k) in ids.iter().zip(&keys) {
            assert_eq!(h.key(id), k);
            assert!((1..1 << KEY_BITS).contains(&k));
        }
        let distinct: std::collections::HashSet<u64> = keys.iter().copied().collect();
        assert_eq!(distinct.len(), ids.len());
    }

    #[test]
    fn the_table_finds_every_unit_across_growth() {
        let mut rng = SecureRng::from_seed_for_tests(2);
        let mut t = UnitTable::new(1, 0, 1, 0, 1, &mut rng).unwrap();
        let mut keys: Vec<u64> = (0..50_000u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 16).max(1))
            .collect();
        // a crowd with the same home at the very end (probing wraps) and
        // one at the very start
        keys.extend((0..40).map(|i| (1 << KEY_BITS) - 1 - i));
        keys.extend(1..40);
        let mut rows = std::collections::HashMap::new();
        for (n, &k) in keys.iter().enumerate() {
            let at = t.slot(k);
            t.bump(at);
            *rows.entry(k).or_insert(0u64) += 1;
            if n % 3 == 0 {
                // seen twice
                let at = t.slot(k);
                t.bump(at);
                *rows.entry(k).or_insert(0u64) += 1;
            }
        }
        assert_eq!(t.len, rows.len());
        assert!(t.len * 8 >= 3 << t.bits, "load at least 3/8");
        for (&k, &n) in &rows {
            let at = t.slot(k);
            assert_eq!(t.seen(at), n);
        }
        assert_eq!(t.len, rows.len(), "lookups insert nothing");
    }

    #[test]
    fn ids_sharing_a_key_but_not_a_check_stay_apart() {
        let mut rng = SecureRng::from_seed_for_tests(4);
        let mut t = UnitTable::new(2, 0, 1, 0, 1, &mut rng).unwrap();
        let a = t.slot_of(5, 111).unwrap();
        let b = t.slot_of(5, 222).unwrap();
        assert_ne!(a, b, "a 48-bit key collision must not merge two units");
        assert_eq!(t.slot_of(5, 111), Some(a));
        assert_eq!(t.slot_of(5, 222), Some(b));
        for _ in 0..3 {
            t.bump(a);
        }
        assert_eq!((t.seen(a), t.bump(b)), (3, 1));
        // the hashers under independent keys disagree on the same id
        let (k, c) = (t.hasher.field(b"user-1"), t.checker.field(b"user-1"));
        assert_ne!(k, c);
        assert_eq!(t.checker.check(b"user-1"), c);
    }

    #[test]
    fn row_counts_go_past_the_16_bit_counter() {
        let mut rng = SecureRng::from_seed_for_tests(3);
        let mut t = UnitTable::new(2, 0, 1, 0, 1, &mut rng).unwrap();
        let (a, b) = (t.slot(5), t.slot(1 << 40));
        for n in 1..=70_000u64 {
            assert_eq!(t.bump(a), n);
        }
        assert_eq!(t.bump(b), 1);
        for k in 0..5000 {
            t.slot(k + 10); // grows, moving the saturated unit
        }
        let a = t.slot(5);
        assert_eq!(t.seen(a), 70_000);
        assert_eq!(t.bump(a), 70_001);
    }

    #[test]
    fn stored_values_and_categories_read_back() {
        let mut rng = SecureRng::from_seed_for_tests(4);
        for (fb, cb) in [(1, 1), (3, 1), (5, 2), (8, 4)] {
            let mut t = UnitTable::new(3, 2, fb, 2, cb, &mut rng).unwrap();
            let (a, b) = (t.slot(77), t.slot(78));
            let max = low_bytes(fb);
            for r in 0..3 {
                t.put(a, r, &[max - r as u64, r as u64], &[r as u32, OUT]);
                t.put(b, r, &[0, max], &[OUT, 0]);
            }
            for r in 0..3 {
                assert_eq!(t.field(a, r, 0), max - r as u64);
                assert_eq!(t.field(a, r, 1), r as u64);
                assert_eq!((t.cat(a, r, 0), t.cat(a, r, 1)), (r as u32, OUT));
                assert_eq!((t.field(b, r, 0), t.field(b, r, 1)), (0, max));
                assert_eq!((t.cat(b, r, 0), t.cat(b, r, 1)), (OUT, 0));
            }
        }
    }

    fn dataset(rows_per_unit: u64, extra: &str) -> Dataset {
        let src = format!(
            r#"plan "t" {{
  privacy {{ unit user by uid adjacency add_remove budget epsilon 20 delta 1e-6 }}
  dataset d {{
    column uid : id
    column g : category {{ "a", "b", "c" }}
    column v : float in [-5, 100]
    column w : int in [0, 10]
    contribution {{ rows_per_unit {rows_per_unit} {extra} }}
  }}
  query s {{ sum(d.v) noise laplace scale 100 schedule once }}
}}"#
        );
        let plan = dpplan_plan::compile(&src).unwrap_or_else(|e| panic!("{e}"));
        plan.body.datasets["d"].clone()
    }

    #[test]
    fn a_bound_that_never_binds_gives_the_exact_clamped_aggregates() {
        // many units (the table grows), at most 3 rows each, rows_per_unit 3
        let ds = dataset(3, "groups_per_unit 3");
        let mut csv = String::from("uid,g,v,w\n");
        let (mut count, mut sum, mut hist, mut gsum) = (0i128, 0i128, [0i128; 3], [0i128; 3]);
        let mut x: u64 = 12345;
        for u in 0..20_000u64 {
            for r in 0..(u % 3 + 1) {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = (x >> 40) as f64 / 1000.0 - 8.0; // some below -5, some above 100
                let g = ["a", "b", "c", "zz"][(x >> 20) as usize % 4];
                csv.push_str(&format!("id{u},{g},{v},{}\n", r));
                count += 1;
                let on = (v * 4.0).round().clamp(-20.0, 400.0) as i128;
                sum += on;
                if let Some(i) = ["a", "b", "c"].iter().position(|c| *c == g) {
                    hist[i] += 1;
                    gsum[i] += on;
                }
            }
        }
        let stats = [
            Statistic {
                kind: StatKind::Count,
                grid: 0,
            },
            Statistic {
                kind: StatKind::Sum { column: "v".into() },
                grid: -2,
            },
            Statistic {
                kind: StatKind::GroupedCount { by: "g".into() },
                grid: 0,
            },
            Statistic {
                kind: StatKind::GroupedSum {
                    by: "g".into(),
                    column: "v".into(),
                },
                grid: -2,
            },
        ];
        let mut rng = SecureRng::from_seed_for_tests(5);
        let out = CsvEngine
            .aggregate_reader(&ds, csv.as_bytes(), &stats, &mut rng)
            .unwrap();
        assert_eq!(out[0], vec![count]);
        assert_eq!(out[1], vec![sum]);
        assert_eq!(out[2], hist.to_vec());
        assert_eq!(out[3], gsum.to_vec());
    }

    #[test]
    fn a_heavy_unit_keeps_rows_per_unit_rows() {
        let ds = dataset(3, "");
        let mut csv = String::from("uid,g,v,w\n");
        for i in 0..70_000 {
            csv.push_str(&format!("bot,a,{},1\n", i % 7));
        }
        csv.push_str("other,b,1,1\n");
        let stats = [
            Statistic {
                kind: StatKind::Count,
                grid: 0,
            },
            Statistic {
                kind: StatKind::Sum { column: "v".into() },
                grid: 0,
            },
        ];
        let mut rng = SecureRng::from_seed_for_tests(6);
        let out = CsvEngine
            .aggregate_reader(&ds, csv.as_bytes(), &stats, &mut rng)
            .unwrap();
        assert_eq!(out[0], vec![4]);
        assert!(out[1][0] >= 1 && out[1][0] <= 1 + 3 * 6, "{:?}", out[1]);
    }

    #[test]
    fn unused_numbers_are_checked_only_when_invalid_rows_are_dropped() {
        // `w` is not summed: an invalid `w` drops the row, unless clamping
        let mut csv = String::from("uid,g,v,w\n");
        csv.push_str("u1,a,1,1\nu2,a,1,oops\nu3,a,1,2.5\nu4,a,1,\n");
        let stats = [Statistic {
            kind: StatKind::Count,
            grid: 0,
        }];
        let mut rng = SecureRng::from_seed_for_tests(8);
        let drop = dataset(1, "");
        let out = CsvEngine
            .aggregate_reader(&drop, csv.as_bytes(), &stats, &mut rng)
            .unwrap();
        assert_eq!(out[0], vec![1]);
        let mut clamp = dataset(1, "");
        clamp.invalid_rows = "clamp".into();
        let out = CsvEngine
            .aggregate_reader(&clamp, csv.as_bytes(), &stats, &mut rng)
            .unwrap();
        assert_eq!(out[0], vec![4]);
    }
}
