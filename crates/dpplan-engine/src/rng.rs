//! Secure randomness: a ChaCha20 stream cipher generator seeded from the
//! operating system (`getrandom`), and unbiased uniform integers by
//! rejection (no modulo bias).

use dashu_int::ops::BitTest;
use dashu_int::UBig;
use rand::rngs::ChaCha20Rng;
use rand::{Rng, SeedableRng};

/// A cryptographically secure generator. Every runtime generator is seeded
/// from the OS; [`SecureRng::from_seed_for_tests`] exists for reproducible
/// statistical tests only.
pub struct SecureRng {
    inner: ChaCha20Rng,
}

/// The operating system gave no randomness (the cause is the `source()`).
#[derive(Debug, thiserror::Error)]
#[error("the operating system's secure random generator is unavailable")]
pub struct RngError(#[source] getrandom::Error);

impl SecureRng {
    /// Seeded with 256 bits from the operating system.
    pub fn from_os() -> Result<Self, RngError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(RngError)?;
        Ok(SecureRng {
            inner: ChaCha20Rng::from_seed(seed),
        })
    }

    /// Deterministic, for tests of the distributions only.
    pub fn from_seed_for_tests(seed: u64) -> Self {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&seed.to_le_bytes());
        SecureRng {
            inner: ChaCha20Rng::from_seed(s),
        }
    }

    /// An independent generator for another thread, seeded with 256 bits
    /// drawn from this one (as secure as this one's stream).
    pub fn fork(&mut self) -> SecureRng {
        let mut seed = [0u8; 32];
        self.inner.fill_bytes(&mut seed);
        SecureRng {
            inner: ChaCha20Rng::from_seed(seed),
        }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        self.inner.fill_bytes(out)
    }

    /// Uniform in `0..n` (n ≥ 1), unbiased (Lemire's method with rejection).
    #[inline]
    pub fn below_u64(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = (self.next_u64() as u128) * (n as u128);
        let mut low = m as u64;
        if low < n {
            let threshold = n.wrapping_neg() % n;
            while low < threshold {
                m = (self.next_u64() as u128) * (n as u128);
                low = m as u64;
            }
        }
        (m >> 64) as u64
    }

    /// Uniform in `0..n` (n ≥ 1) for a big integer: draw bit_len(n) random
    /// bits and reject values ≥ n (fewer than two tries on average).
    pub fn below(&mut self, n: &UBig) -> UBig {
        if let Ok(small) = u64::try_from(n) {
            return UBig::from(self.below_u64(small));
        }
        let bits = n.bit_len();
        let bytes = bits.div_ceil(8);
        let mut buf = vec![0u8; bytes];
        let top_mask: u8 = if bits & 7 == 0 {
            0xff
        } else {
            (1u8 << (bits % 8)) - 1
        };
        loop {
            self.fill_bytes(&mut buf);
            buf[bytes - 1] &= top_mask;
            let x = UBig::from_le_bytes(&buf);
            if &x < n {
                return x;
            }
        }
    }

    /// A fair coin.
    #[inline]
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rng_error_keeps_the_os_error() {
        use std::error::Error;
        let e = RngError(getrandom::Error::UNSUPPORTED);
        assert_eq!(
            e.to_string(),
            "the operating system's secure random generator is unavailable"
        );
        let cause = e.source().unwrap().downcast_ref::<getrandom::Error>();
        assert_eq!(cause, Some(&getrandom::Error::UNSUPPORTED));
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = SecureRng::from_seed_for_tests(1);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[r.below_u64(7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
        let big = UBig::from(3u8) << 100;
        for _ in 0..200 {
            assert!(r.below(&big) < big);
        }
    }

    #[test]
    fn os_seeds_differ() {
        let a = SecureRng::from_os().unwrap().next_u64();
        let b = SecureRng::from_os().unwrap().next_u64();
        assert_ne!(a, b);
    }
}
