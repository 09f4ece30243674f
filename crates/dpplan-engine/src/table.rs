//! The unit table: the per-unit reservoirs of user-level bounding in one
//! flat open-addressing table (slots, lookup, in-place growth, the stored
//! rows).

use std::collections::HashMap;

use super::hash::{IdHasher, KEY_BITS};
use super::layout::OUT;

/// Bytes before a slot's reservoir: the header word (key and rows seen)
/// and the check word.
const HDR: usize = 16;

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
pub(super) struct UnitTable {
    stride: usize,
    /// The byte offset of slot 0 in `data`.
    base: usize,
    /// log2 of the number of slots.
    bits: u32,
    len: usize,
    data: Vec<u8>,
    pub(super) hasher: IdHasher,
    /// An independent hash of the id, stored whole next to the key.
    pub(super) checker: IdHasher,
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
    pub(super) fn new(
        cap: usize,
        fields: usize,
        field_bytes: usize,
        cats: usize,
        cat_bytes: usize,
        (hasher, checker): (IdHasher, IdHasher),
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
            hasher,
            checker,
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

    /// Loads the home slot of every key, in a loop of independent loads:
    /// the cache misses overlap instead of stalling one by one.
    #[inline]
    pub(super) fn prefetch(&self, keys: &[u64]) {
        let mut sink = 0u64;
        for &key in keys {
            sink = sink.wrapping_add(self.touch(key));
        }
        std::hint::black_box(sink);
    }

    /// The slot of every (key, check) pair into `slots`, inserting new
    /// units. All slots first, then the updates: a growth (which moves
    /// slots) restarts the lookup, finding the units just inserted.
    #[inline]
    pub(super) fn locate(&mut self, keys: &[u64], checks: &[u64], slots: &mut Vec<usize>) {
        slots.clear();
        while slots.len() < keys.len() {
            let n = slots.len();
            match self.slot_of(keys[n], checks[n]) {
                Some(at) => slots.push(at),
                None => {
                    self.grow();
                    slots.clear();
                }
            }
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
    pub(super) fn bump(&mut self, at: usize) -> u64 {
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
    pub(super) fn seen(&self, at: usize) -> u64 {
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

    /// The byte offsets of the occupied slots (one per unit), in slot
    /// order.
    #[inline]
    pub(super) fn units(&self) -> impl Iterator<Item = usize> + '_ {
        (0..1usize << self.bits)
            .map(|i| self.base + i * self.stride)
            .filter(|&at| self.word(at) != 0)
    }

    /// Stores a row in place `row` of the reservoir at `at`.
    #[inline]
    pub(super) fn put(&mut self, at: usize, row: usize, fields: &[u64], cats: &[u32]) {
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
    pub(super) fn field(&self, at: usize, row: usize, field: usize) -> u64 {
        let fb = self.field_bytes;
        self.word(at + HDR + (row * self.fields + field) * fb) & low_bytes(fb)
    }

    /// Category `g` of row `row` of the slot at `at`.
    #[inline]
    pub(super) fn cat(&self, at: usize, row: usize, g: usize) -> u32 {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SecureRng;

    /// A table's two hashers, drawn from `rng`.
    fn hashers(rng: &mut SecureRng) -> (IdHasher, IdHasher) {
        (IdHasher::new(rng), IdHasher::new(rng))
    }

    #[test]
    fn the_table_finds_every_unit_across_growth() {
        let mut rng = SecureRng::from_seed_for_tests(2);
        let mut t = UnitTable::new(1, 0, 1, 0, 1, hashers(&mut rng)).unwrap();
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
        let mut t = UnitTable::new(2, 0, 1, 0, 1, hashers(&mut rng)).unwrap();
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
        let mut t = UnitTable::new(2, 0, 1, 0, 1, hashers(&mut rng)).unwrap();
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
            let mut t = UnitTable::new(3, 2, fb, 2, cb, hashers(&mut rng)).unwrap();
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
}
