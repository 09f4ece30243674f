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
}
