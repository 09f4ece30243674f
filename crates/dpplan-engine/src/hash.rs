//! The keyed hash of unit ids: two multilinear universal hashes over the
//! field 2^61 − 1 under independent secret keys, whose collision bound the
//! privacy argument needs (see [`IdHasher`]).

use crate::rng::SecureRng;

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
pub(super) const KEY_BITS: u32 = 48;

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
#[derive(Clone)]
pub(super) struct IdHasher {
    chunk_keys: [u64; 8],
    chain_key: u64,
    len_key: u64,
    add_key: u64,
}

impl IdHasher {
    pub(super) fn new(rng: &mut SecureRng) -> Self {
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
    pub(super) fn key(&self, id: &[u8]) -> u64 {
        // the top 48 of the 61 bits; 0 (probability 2^−48) marks an empty
        // slot, so it merges with 1
        (self.field(id) >> (61 - KEY_BITS)).max(1)
    }

    /// The id's whole 61-bit hash (the check word).
    #[inline]
    pub(super) fn check(&self, id: &[u8]) -> u64 {
        self.field(id)
    }

    /// The universal hash of the id, in the field 2^61 − 1.
    #[inline]
    pub(super) fn field(&self, id: &[u8]) -> u64 {
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

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

    /// Uniform random bits, `bits` ≤ 128 of them.
    fn random_bits(rng: &mut SecureRng, bits: u32) -> u128 {
        let x = u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64());
        match bits {
            0 => 0,
            b => x >> (128 - b),
        }
    }

    #[test]
    fn mod_p61_is_the_remainder_mod_2_61_minus_1() {
        let p = u128::from(P61);
        let max = (1u128 << 123) - 1; // mod_p61's precondition: x < 2^123
        let mut cases: Vec<u128> = vec![
            0,
            1,
            2,
            p - 1,
            p,
            p + 1,
            1 << 61,
            (1 << 62) - 1,
            1 << 62,
            2 * p - 1,
            2 * p,
            2 * p + 1,
            3 * p,
            u128::from(u64::MAX) - 1,
            u128::from(u64::MAX),
            1 << 64,
            (1 << 64) + 1,
            (p - 1) * (p - 1), // the largest product of two reduced values
            p * p - 1,
            p * p,
            p * p + 1,
            (1 << 120) - 1,
            1 << 120,
            (1 << 121) - 1,
            (1 << 122) - 1,
            1 << 122,
            (1 << 122) + 1,
            max - 1,
            max,
            // the largest sums `field` reduces: a block (8 products of a
            // 56-bit chunk and a key) plus length and constant terms, and a
            // chaining step
            8 * ((1 << 56) - 1) * (p - 1) + ((1 << 56) - 1) * (p - 1) + (p - 1),
            (p - 1) * (p - 1) + (p - 1),
        ];
        // the multiples of p up to 2^123, and their neighbours, at every
        // scale
        let mut rng = SecureRng::from_seed_for_tests(61);
        for bits in 0..=62 {
            for _ in 0..50 {
                let k = random_bits(&mut rng, bits);
                for d in [0, 1, 2] {
                    for x in [(k * p).checked_sub(d), (k * p).checked_add(d)] {
                        cases.extend(x.filter(|&x| x <= max));
                    }
                }
            }
        }
        // random values of every width up to 123 bits
        for _ in 0..200_000 {
            let bits = rng.below_u64(124) as u32;
            cases.push(random_bits(&mut rng, bits));
        }
        for &x in &cases {
            assert!(x <= max);
            assert_eq!(u128::from(mod_p61(x)), x % p, "{x}");
        }
    }

    /// What the hash leaves out in a deliberately weakened variant.
    #[derive(Clone, Copy, PartialEq)]
    enum Weakened {
        /// The hash as documented.
        No,
        /// Reads only the first 56-byte block of an id.
        FirstBlockOnly,
        /// One key for every chunk (Σ c_i·k: the chunks' order is lost).
        OneChunkKey,
        /// No length term (an id and the id with a trailing zero byte have
        /// the same chunks).
        NoLength,
    }

    /// The hash as its documentation defines it, evaluated naively: 7-byte
    /// little-endian chunks read byte by byte, each 56-byte block
    /// Σ c_i·k_i mod p, blocks chained by Horner's rule in the chain key,
    /// then + len·k_len + k_add, every step reduced with `%`. (One block is
    /// the same as the chain from 0: no special case for short ids.)
    fn naive_field(h: &IdHasher, id: &[u8], weakened: Weakened) -> u64 {
        let p = u128::from(P61);
        let chunk_key = |i: usize| match weakened {
            Weakened::OneChunkKey => u128::from(h.chunk_keys[0]),
            _ => u128::from(h.chunk_keys[i]),
        };
        let block = |b: &[u8]| {
            b.chunks(7).enumerate().fold(0u128, |sum, (i, c)| {
                let c = c.iter().rev().fold(0u128, |a, &x| a << 8 | u128::from(x));
                (sum + c * chunk_key(i) % p) % p
            })
        };
        let blocks = match weakened {
            Weakened::FirstBlockOnly => &id[..id.len().min(56)],
            _ => id,
        };
        let body = blocks.chunks(56).fold(0u128, |acc, b| {
            (acc * u128::from(h.chain_key) + block(b)) % p
        });
        let len = match weakened {
            Weakened::NoLength => 0,
            _ => id.len() as u128 * u128::from(h.len_key) % p,
        };
        ((body + len + u128::from(h.add_key)) % p) as u64
    }

    #[test]
    fn the_hash_is_the_polynomial_it_documents() {
        let mut rng = SecureRng::from_seed_for_tests(62);
        let p = P61;
        // random keys, and the extremes: every key p − 1 (the largest
        // unreduced sums), 0, 1
        let mut hashers: Vec<IdHasher> = (0..8).map(|_| IdHasher::new(&mut rng)).collect();
        for k in [p - 1, 0, 1] {
            hashers.push(IdHasher {
                chunk_keys: [k; 8],
                chain_key: k,
                len_key: k,
                add_key: k,
            });
        }
        // lengths at and around every chunk and block boundary, and
        // random ones, with random bytes, all 0xff bytes and all zero bytes
        let mut lengths: Vec<usize> = (0..=130).collect();
        lengths.extend([167, 168, 169, 223, 224, 225, 1000, 4096, 4097]);
        let mut ids: Vec<Vec<u8>> = Vec::new();
        for &n in &lengths {
            ids.push(vec![0xff; n]);
            ids.push(vec![0; n]);
            for _ in 0..20 {
                let mut id = vec![0u8; n];
                rng.fill_bytes(&mut id);
                ids.push(id);
            }
        }
        for _ in 0..3000 {
            let mut id = vec![0u8; rng.below_u64(400) as usize];
            rng.fill_bytes(&mut id);
            ids.push(id);
        }
        for h in &hashers {
            for id in &ids {
                let want = naive_field(h, id, Weakened::No);
                assert_eq!(h.field(id), want, "{} bytes", id.len());
                assert_eq!(h.check(id), want);
                assert_eq!(h.key(id), (want >> (61 - KEY_BITS)).max(1));
            }
        }
    }

    /// Distinct ids, concatenated: structured families that break a weak
    /// hash first, then random ids and sequential user ids.
    struct Ids {
        bytes: Vec<u8>,
        ends: Vec<usize>,
    }

    impl Ids {
        fn push(&mut self, id: &[u8]) {
            self.bytes.extend_from_slice(id);
            self.ends.push(self.bytes.len());
        }

        fn get(&self, i: usize) -> &[u8] {
            let start = if i == 0 { 0 } else { self.ends[i - 1] };
            &self.bytes[start..self.ends[i]]
        }

        fn len(&self) -> usize {
            self.ends.len()
        }
    }

    /// A million distinct ids.
    fn a_million_ids() -> Ids {
        let mut ids = Ids {
            bytes: Vec::with_capacity(16 << 20),
            ends: Vec::with_capacity(1 << 20),
        };
        // 100,000 long ids that differ only in their second block
        let prefix = "x".repeat(70);
        for i in 0..100_000 {
            ids.push(format!("{prefix}{i}").as_bytes());
        }
        // 50,000 pairs of two 7-byte chunks in both orders
        for i in 0..50_000 {
            ids.push(format!("a{i:06}b{i:06}").as_bytes());
            ids.push(format!("b{i:06}a{i:06}").as_bytes());
        }
        // 50,000 pairs of an id and the id with a trailing zero byte
        for i in 0..50_000 {
            ids.push(format!("z{i}").as_bytes());
            ids.push(format!("z{i}\0").as_bytes());
        }
        // 100,000 random ids (bytes 0-255, up to 100 of them after a
        // unique tag)
        let mut rng = SecureRng::from_seed_for_tests(63);
        let mut tail = [0u8; 100];
        for i in 0..100_000 {
            let n = rng.below_u64(101) as usize;
            rng.fill_bytes(&mut tail[..n]);
            ids.push(&[format!("r{i}:").as_bytes(), &tail[..n]].concat());
        }
        // 600,000 sequential user ids
        for i in 0..600_000 {
            ids.push(format!("user-{i}").as_bytes());
        }
        ids
    }

    /// The first two ids that would share a unit of the table, which merges
    /// two ids exactly when both their key and their check agree.
    fn first_merge(ids: &Ids, pair: impl Fn(&[u8]) -> (u64, u64)) -> Option<(usize, usize)> {
        let mut seen: HashMap<(u64, u64), usize> = HashMap::with_capacity(ids.len());
        (0..ids.len()).find_map(|i| seen.insert(pair(ids.get(i)), i).map(|j| (j, i)))
    }

    // The collision test, at a size where a weak hash fails. With n = 10⁶
    // distinct ids there are C(n, 2) ≈ 5·10¹¹ pairs:
    //
    // * the real pair (a 48-bit key and a 61-bit check under independent
    //   keys) merges a given pair with probability about 2^−48 · 2^−61 =
    //   2^−109 (twice that for ids of two blocks), so some pair merges with
    //   probability below 5·10¹¹ · 2 · 2^−109 ≈ 1.6·10⁻²¹;
    // * a 32-bit hash has about C(n, 2)/2^32 ≈ 116 colliding pairs: it
    //   finds none with probability about e^−116 ≈ 4·10⁻⁵¹ (the 2,400 ids
    //   of `unit_keys_are_stable_and_in_range` would not tell: a 32-bit
    //   hash passes there with probability 0.9993);
    // * a hash that reads only the first block, gives every chunk the same
    //   key, or has no length term merges ids of the structured families
    //   with certainty.
    #[test]
    fn no_two_of_a_million_ids_share_a_unit() {
        let ids = a_million_ids();
        let distinct: std::collections::HashSet<&[u8]> =
            (0..ids.len()).map(|i| ids.get(i)).collect();
        assert_eq!((ids.len(), distinct.len()), (1_000_000, 1_000_000));
        let mut rng = SecureRng::from_seed_for_tests(64);
        let (hasher, checker) = (IdHasher::new(&mut rng), IdHasher::new(&mut rng));
        let merge = first_merge(&ids, |id| (hasher.key(id), checker.check(id)));
        assert_eq!(merge.map(|(i, j)| (ids.get(i), ids.get(j))), None);
    }

    /// Negative controls: the same test on weakened hashes must fail.
    #[test]
    fn weakened_hashes_fail_the_collision_test() {
        let ids = a_million_ids();
        let mut rng = SecureRng::from_seed_for_tests(64);
        let (hasher, checker) = (IdHasher::new(&mut rng), IdHasher::new(&mut rng));
        // the real pair truncated to 32 bits
        let merge = first_merge(&ids, |id| {
            let t = (hasher.field(id) ^ checker.field(id)) & 0xffff_ffff;
            (t, t)
        });
        assert!(merge.is_some(), "a 32-bit hash must collide");
        // the pair of naive evaluations, each missing one ingredient
        let (h, c) = (&hasher, &checker);
        let naive_pair = |weakened| {
            move |id: &[u8]| {
                let key = naive_field(h, id, weakened) >> (61 - KEY_BITS);
                (key.max(1), naive_field(c, id, weakened))
            }
        };
        for weakened in [
            Weakened::FirstBlockOnly,
            Weakened::OneChunkKey,
            Weakened::NoLength,
        ] {
            let (i, j) = first_merge(&ids, naive_pair(weakened)).expect("a weak hash must collide");
            assert_ne!(ids.get(i), ids.get(j));
        }
        // unweakened, the naive pair is the real one: no merge among the
        // first 300,000 ids (the structured families and the random ones)
        let first = Ids {
            ends: ids.ends[..300_000].to_vec(),
            bytes: ids.bytes[..ids.ends[299_999]].to_vec(),
        };
        assert_eq!(first_merge(&first, naive_pair(Weakened::No)), None);
    }
}
