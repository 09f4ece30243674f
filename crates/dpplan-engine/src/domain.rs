//! A public category domain and the lookup of a field's index in it: the
//! innermost step of every grouped or `in { … }`-filtered row.
//!
//! * Values of at most 16 bytes are grouped by length; within a length a
//!   field is one 128-bit key read with two overlapping loads ([`key`]):
//!   up to [`SCAN`] keys are scanned, more are found in an open-addressed
//!   table (one multiply, usually one compare). A field of a length no
//!   value has is rejected at once.
//! * Longer values go through a hash map (FNV) beyond 16 values, a byte
//!   scan below.
//!
//! Not keyed, and it needs not be: every table holds the public domain
//! only, so its layout is fixed before any data is read, and a field from
//! the data costs at most one probe sequence over it, whatever its bytes.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::layout::OUT;

/// Keys of one length up to this many are scanned, more hashed.
const SCAN: usize = 8;

/// The longest value looked up by [`key`].
const SHORT: usize = 16;

pub(super) struct Domain {
    /// Per length 0..=[`SHORT`], the values of that length.
    by_len: Vec<Keys>,
    /// The values longer than [`SHORT`] bytes, if any.
    long: Option<Long>,
}

/// The keys of the values of one length, with their indexes.
enum Keys {
    Scan(Vec<(u128, u32)>),
    Table(KeyTable),
}

impl Keys {
    #[inline]
    fn get(&self, key: u128) -> u32 {
        match self {
            Keys::Scan(v) => v.iter().find(|(k, _)| *k == key).map_or(OUT, |&(_, i)| i),
            Keys::Table(t) => t.get(key),
        }
    }
}

struct Long {
    values: Vec<(Vec<u8>, u32)>,
    map: Option<HashMap<Vec<u8>, u32, BuildHasherDefault<Fnv>>>,
}

impl Domain {
    pub(super) fn new(values: &[String]) -> Domain {
        let mut short: Vec<Vec<(u128, u32)>> = vec![Vec::new(); SHORT + 1];
        let mut long: Vec<(Vec<u8>, u32)> = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let (v, i) = (v.as_bytes(), i as u32);
            match short.get_mut(v.len()) {
                // a repeated value keeps its first index
                Some(keys) if keys.iter().any(|(k, _)| *k == key(v)) => {}
                Some(keys) => keys.push((key(v), i)),
                None if long.iter().any(|(x, _)| x == v) => {}
                None => long.push((v.to_vec(), i)),
            }
        }
        let by_len = short
            .into_iter()
            .map(|keys| match keys.len() <= SCAN {
                true => Keys::Scan(keys),
                false => Keys::Table(KeyTable::new(&keys)),
            })
            .collect();
        let long = (!long.is_empty()).then(|| Long {
            map: (long.len() > 16).then(|| long.iter().cloned().collect()),
            values: long,
        });
        Domain { by_len, long }
    }

    /// The field's index in the domain (the first, should a value repeat),
    /// or [`OUT`].
    #[inline]
    pub(super) fn index(&self, field: &[u8]) -> u32 {
        match self.by_len.get(field.len()) {
            Some(keys) => keys.get(key(field)),
            None => self.long_index(field),
        }
    }

    /// [`Domain::index`] of a field longer than [`SHORT`] bytes: out of
    /// line, so the short path stays small enough to inline.
    #[inline(never)]
    fn long_index(&self, field: &[u8]) -> u32 {
        match &self.long {
            None => OUT,
            Some(Long { map: Some(m), .. }) => m.get(field).copied().unwrap_or(OUT),
            Some(Long { values, .. }) => values
                .iter()
                .find(|(v, _)| v.as_slice() == field)
                .map_or(OUT, |&(_, i)| i),
        }
    }
}

/// A field of at most [`SHORT`] bytes as one integer, read with at most two
/// overlapping loads (no loop, no memcpy). Two fields **of the same
/// length** have equal keys exactly when they are equal: the loads'
/// positions depend on the length only, and together they cover every
/// byte.
#[inline]
fn key(field: &[u8]) -> u128 {
    let len = field.len();
    let u32_at = |at: usize| {
        let b = &field[at..at + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    };
    let u64_at = |at: usize| {
        let b = &field[at..at + 8];
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    };
    match len {
        0 => 0,
        1..=3 => {
            let (a, m, z) = (field[0], field[len / 2], field[len - 1]);
            u128::from(a) | u128::from(m) << 8 | u128::from(z) << 16
        }
        4..=7 => u128::from(u32_at(0)) | u128::from(u32_at(len - 4)) << 32,
        _ => u128::from(u64_at(0)) | u128::from(u64_at(len - 8)) << 64,
    }
}

/// Keys in a power-of-two table at most half full, linear probing; a
/// slot's index is [`OUT`] when empty.
struct KeyTable {
    slots: Vec<(u128, u32)>,
    shift: u32,
}

impl KeyTable {
    /// A table of distinct keys.
    fn new(keys: &[(u128, u32)]) -> Self {
        let size = (2 * keys.len()).next_power_of_two().max(16);
        let mut t = KeyTable {
            slots: vec![(0, OUT); size],
            shift: 64 - size.trailing_zeros(),
        };
        let mask = size - 1;
        for &(k, i) in keys {
            let mut at = t.home(k);
            while t.slots[at].1 != OUT {
                at = (at + 1) & mask;
            }
            t.slots[at] = (k, i);
        }
        t
    }

    #[inline]
    fn home(&self, key: u128) -> usize {
        let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(29);
        (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The key's index, or [`OUT`]: the table always has an empty slot, so
    /// the probe ends.
    #[inline]
    fn get(&self, key: u128) -> u32 {
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            let (k, i) = self.slots[at];
            if i == OUT || k == key {
                return i;
            }
            at = (at + 1) & mask;
        }
    }
}

/// FNV-1a for the lookup of long values: a few ns on a short field where
/// SipHash costs tens (see the module's note on why it needs no key).
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: the first position of the field's bytes.
    fn first(values: &[String], field: &[u8]) -> u32 {
        values
            .iter()
            .position(|v| v.as_bytes() == field)
            .map_or(OUT, |i| i as u32)
    }

    fn domain_of(n: usize, width: usize) -> Vec<String> {
        (0..n).map(|i| format!("{i:0width$}")).collect()
    }

    #[test]
    fn every_representation_agrees_with_a_linear_search() {
        // sizes on both sides of SCAN and of 16, widths on both sides of
        // every load size
        for n in [0, 1, 3, SCAN, SCAN + 1, 16, 17, 24, 120, 1000] {
            for width in [1, 3, 4, 7, 8, 15, 16, 17, 30] {
                let mut values = domain_of(n, width);
                values.push(String::new()); // the empty field is a value too
                let d = Domain::new(&values);
                let probes = values
                    .iter()
                    .map(|v| v.as_bytes().to_vec())
                    .chain(
                        domain_of(n + 5, width + 1)
                            .into_iter()
                            .map(String::into_bytes),
                    )
                    .chain([b"x".to_vec(), vec![0u8], vec![0u8; 15], vec![b'0'; 16]]);
                for p in probes {
                    assert_eq!(d.index(&p), first(&values, &p), "n {n} width {width} {p:?}");
                }
            }
        }
    }

    #[test]
    fn keys_of_one_length_are_equal_only_for_equal_fields() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for len in 0..=SHORT {
            // few distinct bytes, so near misses (one byte apart) are common
            let fields: Vec<Vec<u8>> = (0..300)
                .map(|_| {
                    (0..len)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            [0u8, 1, b'a'][(x % 3) as usize]
                        })
                        .collect()
                })
                .collect();
            for a in &fields {
                for b in &fields {
                    assert_eq!(key(a) == key(b), a == b, "{a:?} {b:?}");
                }
            }
        }
    }

    #[test]
    fn a_field_differing_in_any_one_byte_is_out() {
        for len in 1..=SHORT + 2 {
            let values: Vec<String> = (0..20).map(|i| format!("{i:0len$}")).collect();
            let d = Domain::new(&values);
            for v in &values {
                for at in 0..len {
                    let mut f = v.as_bytes().to_vec();
                    f[at] = b'x';
                    assert_eq!(d.index(&f), OUT, "{f:?}");
                }
            }
        }
    }

    #[test]
    fn a_repeated_value_keeps_its_first_index() {
        let mut values = domain_of(20, 2);
        values.push("07".into());
        assert_eq!(Domain::new(&values).index(b"07"), 7);
        let short = vec!["a".to_string(), "b".into(), "a".into()];
        assert_eq!(Domain::new(&short).index(b"a"), 0);
        let mut long = domain_of(20, 20);
        long.push(long[3].clone());
        assert_eq!(Domain::new(&long).index(long[3].as_bytes()), 3);
    }
}
