//! # dpplan-noise — exact noise samplers, with integer arithmetic only
//!
//! There is no floating point anywhere in the sampling path. The
//! exponential mechanism of quantiles is [`exponential`].
//!
//! * `discrete_laplace` and `discrete_gaussian` are Canonne, Kamath &
//!   Steinke 2020 ("The Discrete Gaussian for Differential Privacy",
//!   Algorithms 1–3) on big-integer rationals, added to an integer
//!   statistic.
//! * `laplace` and `gaussian` are the **continuous** mechanisms, sampled
//!   exactly: von Neumann's exponential (Laplace) and Karney's exact normal
//!   algorithm (Karney 2016, "Sampling exactly from the normal
//!   distribution", Algorithm N with Algorithms H and B) decide everything
//!   by comparing lazily generated uniform bit strings ("u-rands"). The
//!   released float is the exact real value x + noise rounded to the
//!   nearest f64, computed with as many random bits as that rounding needs.
//!   Rounding is post-processing, so what runs *is* the continuous
//!   mechanism the accountants analyse (exact Gaussian, RDP, PLD, …), not
//!   an approximation of it, and no output float can reveal the input the
//!   way textbook `x + scale·sample_f64()` does (Mironov 2012).
//!
//! The statistic x itself is exact: an integer in units of the grid 2^k
//! (see the engine), so x·2^k is a dyadic rational known exactly.

use dashu_int::ops::{BitTest, SquareRoot, UnsignedAbs};
use dashu_int::{IBig, UBig};

use dpplan_vocab::NoiseKind;

use dpplan_engine::rng::SecureRng;

pub mod exponential;

/// Bernoulli(num/den) for num ≤ den, den ≥ 1.
fn bernoulli(rng: &mut SecureRng, num: &UBig, den: &UBig) -> bool {
    &rng.below(den) < num
}

/// Bernoulli(exp(−num/den)) for num/den ∈ [0, 1] (Algorithm 1, first case).
fn bernoulli_exp_small(rng: &mut SecureRng, num: &UBig, den: &UBig) -> bool {
    let mut k: u64 = 1;
    loop {
        let d = den * UBig::from(k);
        if !bernoulli(rng, num, &d) {
            break;
        }
        k += 1;
    }
    k % 2 == 1
}

/// Bernoulli(exp(−num/den)) for any num/den ≥ 0 (Algorithm 1).
pub fn bernoulli_exp(rng: &mut SecureRng, num: &UBig, den: &UBig) -> bool {
    if num <= den {
        return bernoulli_exp_small(rng, num, den);
    }
    let whole = num / den;
    let one = UBig::ONE;
    let mut i = UBig::ZERO;
    while i < whole {
        if !bernoulli_exp_small(rng, &one, &one) {
            return false;
        }
        i += UBig::ONE;
    }
    let rem = num % den;
    bernoulli_exp_small(rng, &rem, den)
}

/// Discrete Laplace with scale t/s: P(x) ∝ exp(−|x|·s/t) (Algorithm 2).
pub fn discrete_laplace(rng: &mut SecureRng, t: &UBig, s: &UBig) -> IBig {
    let one = UBig::ONE;
    loop {
        let u = rng.below(t);
        if !bernoulli_exp_small(rng, &u, t) {
            continue;
        }
        let mut v = UBig::ZERO;
        while bernoulli_exp_small(rng, &one, &one) {
            v += UBig::ONE;
        }
        let x = u + t * v;
        let y = x / s;
        let negative = rng.coin();
        if negative && y == UBig::ZERO {
            continue;
        }
        let y = IBig::from(y);
        return if negative { -y } else { y };
    }
}

/// Discrete Gaussian with σ² = a/b: P(x) ∝ exp(−x²/2σ²) (Algorithm 3);
/// `t` = ⌊σ⌋ + 1.
pub fn discrete_gaussian(rng: &mut SecureRng, a: &UBig, b: &UBig, t: &UBig) -> IBig {
    let den = UBig::from(2u8) * a * b * t * t;
    loop {
        let y = discrete_laplace(rng, t, &UBig::ONE);
        // (|y| − σ²/t)² / 2σ² = (|y|·t·b − a)² / (2·a·b·t²)
        let abs = IBig::from((&y).unsigned_abs());
        let diff = abs * IBig::from(t * b) - IBig::from(a.clone());
        let num = diff.unsigned_abs();
        let num = &num * &num;
        if bernoulli_exp(rng, &num, &den) {
            return y;
        }
    }
}

/// A positive finite f64 as m·2^e with m odd (exact).
///
/// Panics on anything else: its one caller, [`Noise::new`], passes only a
/// scale it has checked to be positive and finite.
pub fn dyadic(x: f64) -> (UBig, i32) {
    assert!(
        x.is_finite() && x > 0.0,
        "dyadic of a non-positive or non-finite value"
    );
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (mut m, mut e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp - 1075)
    };
    let tz = m.trailing_zeros();
    m >>= tz;
    e += tz as i32;
    (UBig::from(m), e)
}

/// m·2^e as a fraction num/den of integers.
fn fraction(m: UBig, e: i32) -> (UBig, UBig) {
    if e >= 0 {
        (m << e as usize, UBig::ONE)
    } else {
        (m, UBig::ONE << (-e) as usize)
    }
}

/// The noise of one statistic, ready to sample.
#[derive(Debug, Clone, PartialEq)]
pub enum Noise {
    /// A public statistic (sensitivity 0).
    None,
    /// Discrete Laplace, scale t/s grid units.
    Laplace { t: UBig, s: UBig },
    /// Discrete Gaussian, σ² = a/b grid units², t = ⌊σ⌋ + 1.
    Gaussian { a: UBig, b: UBig, t: UBig },
    /// Continuous Laplace of scale m·2^e (output units), sampled exactly.
    ContinuousLaplace { m: UBig, e: i32 },
    /// Continuous Gaussian of standard deviation m·2^e, sampled exactly.
    ContinuousGaussian { m: UBig, e: i32 },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct NoiseError(pub String);

impl Noise {
    /// `kind` as in the plan; `scale` is b or σ in output units; a discrete
    /// mechanism's statistic is in units of the grid 2^k (k = 0 in compiled
    /// plans: the integers).
    pub fn new(kind: Option<NoiseKind>, scale: Option<f64>, k: i32) -> Result<Noise, NoiseError> {
        let Some(kind) = kind else {
            return Ok(Noise::None);
        };
        let scale = scale
            .filter(|s| s.is_finite() && *s > 0.0)
            .ok_or_else(|| NoiseError("the noise scale must be positive and finite".into()))?;
        if !(-1100..=1100).contains(&k) {
            return Err(NoiseError("the grid exponent is out of range".into()));
        }
        let (m, e) = dyadic(scale);
        match kind {
            NoiseKind::DiscreteLaplace => {
                let (t, s) = fraction(m, e - k);
                Ok(Noise::Laplace { t, s })
            }
            NoiseKind::DiscreteGaussian => {
                let (a, b) = fraction(&m * &m, 2 * (e - k));
                // ⌊σ⌋ = ⌊√(a/b)⌋ = isqrt(⌊a/b⌋)
                let t = isqrt(&(&a / &b)) + UBig::ONE;
                Ok(Noise::Gaussian { a, b, t })
            }
            NoiseKind::Laplace => Ok(Noise::ContinuousLaplace { m, e }),
            NoiseKind::Gaussian => Ok(Noise::ContinuousGaussian { m, e }),
            // selects a candidate ([`exponential`]): it adds nothing
            NoiseKind::Exponential | NoiseKind::PermuteAndFlip => Err(NoiseError(format!(
                "`{kind}` selects a candidate; it is not additive noise"
            ))),
        }
    }

    /// One draw of discrete noise in grid units (zero for `none`); `None`
    /// for the continuous mechanisms, whose noise is only ever drawn by
    /// [`Noise::release`] — never a silent zero.
    pub fn sample_discrete(&self, rng: &mut SecureRng) -> Option<IBig> {
        match self {
            Noise::None => Some(IBig::ZERO),
            Noise::Laplace { t, s } => Some(discrete_laplace(rng, t, s)),
            Noise::Gaussian { a, b, t } => Some(discrete_gaussian(rng, a, b, t)),
            Noise::ContinuousLaplace { .. } | Noise::ContinuousGaussian { .. } => None,
        }
    }

    /// The released value for the exact statistic `x`·2^k: x·2^k plus one
    /// fresh draw of the noise, rounded once to the nearest f64.
    pub fn release(&self, x: i128, k: i32, rng: &mut SecureRng) -> f64 {
        match self {
            Noise::None => round_dyadic(&IBig::from(x), k as i64),
            Noise::Laplace { t, s } => {
                round_dyadic(&(IBig::from(x) + discrete_laplace(rng, t, s)), k as i64)
            }
            Noise::Gaussian { a, b, t } => {
                round_dyadic(&(IBig::from(x) + discrete_gaussian(rng, a, b, t)), k as i64)
            }
            Noise::ContinuousLaplace { m, e } => {
                let (negative, whole, frac) = exact_laplace(rng);
                round_shifted(x, k, m, *e, negative, whole, frac, rng)
            }
            Noise::ContinuousGaussian { m, e } => {
                let (negative, whole, frac) = exact_normal(rng);
                round_shifted(x, k, m, *e, negative, whole, frac, rng)
            }
        }
    }
}

/// A uniform deviate in (0, 1) whose binary digits are drawn only when a
/// comparison needs them ("u-rand", Karney 2016): 64 bits at a time, the
/// first word inline so that most deviates never allocate.
#[derive(Debug, Default)]
pub struct URand {
    first: Option<u64>,
    rest: Vec<u64>,
}

impl URand {
    pub fn new() -> Self {
        URand::default()
    }

    /// Word i (bits 64·i+1 … 64·(i+1) after the binary point), drawn on
    /// first use.
    #[inline]
    fn word(&mut self, i: usize, rng: &mut SecureRng) -> u64 {
        if i == 0 {
            return *self.first.get_or_insert_with(|| rng.next_u64());
        }
        while self.rest.len() < i {
            self.rest.push(rng.next_u64());
        }
        self.rest[i - 1]
    }

    /// How many words have been drawn.
    fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// The drawn words as an integer X: the deviate lies in
    /// [X·2^−64n, (X+1)·2^−64n) for n = `len()`.
    fn prefix(&self) -> UBig {
        let mut x = UBig::ZERO;
        for w in self.first.iter().chain(self.rest.iter()) {
            x = (x << 64) + UBig::from(*w);
        }
        x
    }

    /// Whether self < other, drawing digits of both until they differ
    /// (equality has probability zero).
    #[inline]
    fn less(&mut self, other: &mut URand, rng: &mut SecureRng) -> bool {
        let mut i = 0;
        loop {
            let (a, b) = (self.word(i, rng), other.word(i, rng));
            if a != b {
                return a < b;
            }
            i += 1;
        }
    }
}

/// Bernoulli(exp(−1/2)) (Karney's Algorithm H): the length n of the longest
/// run 1/2 > u₁ > u₂ > … > uₙ of fresh deviates is even with probability
/// exp(−1/2).
fn bernoulli_exp_half(rng: &mut SecureRng) -> bool {
    let mut prev = URand::new();
    // u₁ < 1/2 exactly when its first bit is 0
    if prev.word(0, rng) >> 63 == 1 {
        return true;
    }
    let mut n = 1u64;
    loop {
        let mut u = URand::new();
        if !u.less(&mut prev, rng) {
            return n.is_multiple_of(2);
        }
        n += 1;
        prev = u;
    }
}

/// The current bound of a decreasing run: the deviate x itself or a later one.
enum Run {
    X,
    Z(URand),
}

/// Bernoulli(exp(−x·(2k+x)/(2k+2))) (Karney's Algorithm B): the run
/// x > z₁ > z₂ > … continues while each step also passes a coin of
/// probability (2k+x)/(2k+2); P(run length ≥ j) = (x·q)^j / j!, so the
/// length is even with probability exp(−x·q).
fn bernoulli_b(k: u64, x: &mut URand, rng: &mut SecureRng) -> bool {
    let m = 2 * k + 2;
    let mut y = Run::X;
    let mut n = 0u64;
    loop {
        let mut z = URand::new();
        let below = match &mut y {
            Run::X => z.less(x, rng),
            Run::Z(y) => z.less(y, rng),
        };
        if !below {
            break;
        }
        // C(m): −1 and 0 with probability 1/m each, +1 otherwise; so the
        // step passes with probability (m − 2)/m + x/m = (2k + x)/(2k + 2).
        match rng.below_u64(m) {
            0 => break,
            1 => {
                let mut r = URand::new();
                if !r.less(x, rng) {
                    break;
                }
            }
            _ => {}
        }
        n += 1;
        y = Run::Z(z);
    }
    n.is_multiple_of(2)
}

/// A draw of the standard normal, exactly (Karney's Algorithm N):
/// (negative, k, x) for the value ±(k + x).
pub fn exact_normal(rng: &mut SecureRng) -> (bool, u64, URand) {
    loop {
        // N1: k with probability exp(−k/2)·(1 − exp(−1/2))
        let mut k = 0u64;
        while bernoulli_exp_half(rng) {
            k += 1;
        }
        // N2: accept k with probability exp(−k(k−1)/2)
        let mut accept = true;
        for _ in 0..k.saturating_mul(k.saturating_sub(1)) {
            if !bernoulli_exp_half(rng) {
                accept = false;
                break;
            }
        }
        if !accept {
            continue;
        }
        // N3–N4: x uniform, accepted with probability exp(−x(2k+x)/2),
        // as k + 1 independent trials of Algorithm B
        let mut x = URand::new();
        if (0..=k).all(|_| bernoulli_b(k, &mut x, rng)) {
            // the density of k + x is ∝ exp(−(k+x)²/2); N5: a random sign
            return (rng.coin(), k, x);
        }
    }
}

/// A draw of the standard Laplace (density exp(−|y|)/2), exactly: the
/// integer part of the exponential is geometric, the fractional part x is
/// accepted with probability exp(−x) by von Neumann's decreasing-run test.
pub fn exact_laplace(rng: &mut SecureRng) -> (bool, u64, URand) {
    let mut k = 0u64;
    loop {
        let mut x = URand::new();
        let mut prev = Run::X;
        let mut n = 0u64;
        loop {
            let mut u = URand::new();
            let below = match &mut prev {
                Run::X => u.less(&mut x, rng),
                Run::Z(p) => u.less(p, rng),
            };
            if !below {
                break;
            }
            n += 1;
            prev = Run::Z(u);
        }
        if n.is_multiple_of(2) {
            return (rng.coin(), k, x);
        }
        k += 1;
    }
}

/// x·2^k ± m·2^e·(whole + frac) rounded to the nearest f64: digits of `frac`
/// are drawn until every value it can still take rounds to the same float.
#[allow(clippy::too_many_arguments)]
fn round_shifted(
    x: i128,
    k: i32,
    m: &UBig,
    e: i32,
    negative: bool,
    whole: u64,
    mut frac: URand,
    rng: &mut SecureRng,
) -> f64 {
    loop {
        let n = frac.len().max(1);
        let _ = frac.word(n - 1, rng);
        let bits = 64 * n as i64;
        // common exponent of every term
        let base = (k as i64).min(e as i64 - bits);
        let mu = IBig::from(x) << (k as i64 - base) as usize;
        let scale = IBig::from(m.clone()) << (e as i64 - bits - base) as usize;
        let lo = (IBig::from(whole) << bits as usize) + IBig::from(frac.prefix());
        let hi = &lo + IBig::ONE;
        let (a, b) = if negative {
            (&mu - &scale * &hi, &mu - &scale * &lo)
        } else {
            (&mu + &scale * &lo, &mu + &scale * &hi)
        };
        let (ra, rb) = (round_dyadic(&a, base), round_dyadic(&b, base));
        // rounding is monotone: equal at both ends means equal in between
        // (bitwise, so a bracket across zero keeps the sign of the exact
        // value instead of the sign of one end)
        if ra.to_bits() == rb.to_bits() {
            return ra;
        }
        let _ = frac.word(n, rng);
    }
}

/// n·2^e rounded to the nearest f64, ties to even (±∞ beyond the range).
pub fn round_dyadic(n: &IBig, e: i64) -> f64 {
    let negative = n < &IBig::ZERO;
    let mag: UBig = n.unsigned_abs();
    if mag == UBig::ZERO {
        return 0.0;
    }
    let len = mag.bit_len() as i64;
    // exponent of the leading bit, and of the last bit a float can keep
    let lead = len - 1 + e;
    let last = (lead - 52).max(-1074);
    let shift = last - e;
    let (mut kept, mut exp) = if shift <= 0 {
        (mag, e)
    } else {
        let s = shift as usize;
        let kept = &mag >> s;
        let rem = &mag - (&kept << s);
        let half = UBig::ONE << (s - 1);
        let up = rem > half || (rem == half && kept.bit(0));
        (if up { kept + UBig::ONE } else { kept }, last)
    };
    // `kept` < 2^54 now; normalise so it fits 53 bits exactly
    while kept.bit_len() > 53 {
        // only reached after a carry to 2^53: an even number
        kept >>= 1;
        exp += 1;
    }
    let v = if kept.bit_len() as i64 - 1 + exp > 1023 {
        f64::INFINITY
    } else {
        // `kept` < 2^53 converts exactly; then exact scaling by powers of
        // two: every intermediate is representable because the result is
        let mut v = u64::try_from(&kept).map_or(f64::INFINITY, |k| k as f64);
        let mut rest = exp;
        while rest != 0 {
            let step = rest.clamp(-1000, 1000);
            v *= 2f64.powi(step as i32);
            rest -= step;
        }
        v
    };
    if negative {
        -v
    } else {
        v
    }
}

/// ⌊√n⌋ (dashu's integer square root).
pub fn isqrt(n: &UBig) -> UBig {
    n.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dyadic_is_exact() {
        assert_eq!(dyadic(250.0), (UBig::from(125u8), 1));
        assert_eq!(dyadic(0.5), (UBig::ONE, -1));
        assert_eq!(dyadic(8.0), (UBig::ONE, 3));
        let (m, e) = dyadic(0.1);
        let back = m.to_f64().value() * 2f64.powi(e);
        assert_eq!(back, 0.1);
    }

    #[test]
    fn isqrt_floors() {
        for n in [0u64, 1, 2, 3, 4, 15, 16, 17, 143, 144, 145, 1 << 40] {
            let r: u64 = (&isqrt(&UBig::from(n))).try_into().unwrap();
            assert!(r * r <= n && (r + 1) * (r + 1) > n, "{n} → {r}");
        }
    }

    /// The hand-written ⌊√n⌋ (Newton's method on integers) that dashu's
    /// replaced, kept as the reference.
    fn newton_isqrt(n: &UBig) -> UBig {
        if n < &UBig::from(2u8) {
            return n.clone();
        }
        let mut x = UBig::ONE << n.bit_len().div_ceil(2);
        loop {
            let y = (&x + n / &x) >> 1;
            if y >= x {
                return x;
            }
            x = y;
        }
    }

    #[test]
    fn isqrt_agrees_with_the_former_newton_isqrt() {
        let mut rng = SecureRng::from_seed_for_tests(11);
        let mut cases: Vec<UBig> = Vec::new();
        // 0, 1, 2, powers of two (2^64 among them), and around perfect
        // squares: r², r² ± 1 for small r, r near 2^32, 2^64 and 2^100,
        // and random r of up to 600 bits
        cases.extend((0u32..=2).map(UBig::from));
        cases.extend((0..=300).map(|k| UBig::ONE << k));
        let mut roots: Vec<UBig> = (0u32..2000).map(UBig::from).collect();
        for k in [16, 32, 63, 64, 100, 300] {
            for d in 0u32..4 {
                roots.push((UBig::ONE << k) - UBig::from(d + 1));
                roots.push((UBig::ONE << k) + UBig::from(d));
            }
        }
        for _ in 0..2000 {
            let bits = rng.below_u64(600) + 1;
            roots.push(rng.below(&(UBig::ONE << bits as usize)));
        }
        for r in &roots {
            let sq = r * r;
            if sq > UBig::ZERO {
                cases.push(&sq - UBig::ONE);
            }
            cases.push(sq.clone());
            cases.push(sq + UBig::ONE);
        }
        // random values of up to 1200 bits, and u64::MAX, u128::MAX
        for _ in 0..5000 {
            let bits = rng.below_u64(1200) + 1;
            cases.push(rng.below(&(UBig::ONE << bits as usize)));
        }
        cases.push(UBig::from(u64::MAX));
        cases.push(UBig::from(u128::MAX));
        for n in &cases {
            let r = isqrt(n);
            assert_eq!(r, newton_isqrt(n), "{n}");
            assert!(
                &r * &r <= *n && (&r + UBig::ONE) * (&r + UBig::ONE) > *n,
                "{n} → {r}"
            );
        }
        assert_eq!(isqrt(&(UBig::ONE << 64)), UBig::ONE << 32);
        assert_eq!(
            isqrt(&((UBig::ONE << 64) - UBig::ONE)),
            UBig::from(u32::MAX)
        );
    }

    #[test]
    fn noise_parameters() {
        // discrete Laplace scale 2000 on the integers
        assert_eq!(
            Noise::new(Some(NoiseKind::DiscreteLaplace), Some(2000.0), 0).unwrap(),
            Noise::Laplace {
                t: UBig::from(2000u32),
                s: UBig::ONE
            }
        );
        // discrete Laplace 250 on the grid 2^-3: 2000 grid steps
        assert_eq!(
            Noise::new(Some(NoiseKind::DiscreteLaplace), Some(250.0), -3).unwrap(),
            Noise::Laplace {
                t: UBig::from(2000u32),
                s: UBig::ONE
            }
        );
        // continuous Laplace 250 = 125·2^1, whatever the statistic's grid
        assert_eq!(
            Noise::new(Some(NoiseKind::Laplace), Some(250.0), -3).unwrap(),
            Noise::ContinuousLaplace {
                m: UBig::from(125u8),
                e: 1
            }
        );
        assert_eq!(
            Noise::new(Some(NoiseKind::Gaussian), Some(0.75), -40).unwrap(),
            Noise::ContinuousGaussian {
                m: UBig::from(3u8),
                e: -2
            }
        );
        // Laplace 0.75 on the integers: 3/4
        assert_eq!(
            Noise::new(Some(NoiseKind::DiscreteLaplace), Some(0.75), 0).unwrap(),
            Noise::Laplace {
                t: UBig::from(3u8),
                s: UBig::from(4u8)
            }
        );
        // σ = 12: σ² = 144, t = 13
        assert_eq!(
            Noise::new(Some(NoiseKind::DiscreteGaussian), Some(12.0), 0).unwrap(),
            Noise::Gaussian {
                a: UBig::from(144u8),
                b: UBig::ONE,
                t: UBig::from(13u8)
            }
        );
        // σ = 1.5: σ² = 9/4, t = 2
        assert_eq!(
            Noise::new(Some(NoiseKind::DiscreteGaussian), Some(1.5), 0).unwrap(),
            Noise::Gaussian {
                a: UBig::from(9u8),
                b: UBig::from(4u8),
                t: UBig::from(2u8)
            }
        );
        // a continuous mechanism has no discrete draw: never a silent zero
        let mut r = SecureRng::from_seed_for_tests(5);
        assert!(Noise::new(Some(NoiseKind::Gaussian), Some(1.0), 0)
            .unwrap()
            .sample_discrete(&mut r)
            .is_none());
        assert!(Noise::new(Some(NoiseKind::Laplace), Some(f64::NAN), 0).is_err());
        assert!(Noise::new(Some(NoiseKind::Laplace), Some(0.0), 0).is_err());
        assert_eq!(Noise::new(None, None, 0).unwrap(), Noise::None);
    }

    #[test]
    fn round_dyadic_matches_the_hardware_rounding() {
        // u64 → f64 conversion rounds to nearest, ties to even: an
        // independent reference for every 64-bit integer and power of two
        let mut r = SecureRng::from_seed_for_tests(3);
        for i in 0..20_000 {
            let n = r.next_u64() >> (i % 64);
            let e = (i % 41) as i64 - 20;
            let want = (n as f64) * 2f64.powi(e as i32);
            assert_eq!(round_dyadic(&IBig::from(n), e), want, "{n}·2^{e}");
            assert_eq!(round_dyadic(&-IBig::from(n), e), -want, "-{n}·2^{e}");
        }
        // ties to even: 2^53 + 1 and 2^53 + 3
        let t = 1u64 << 53;
        assert_eq!(round_dyadic(&IBig::from(t + 1), 0), t as f64);
        assert_eq!(round_dyadic(&IBig::from(t + 3), 0), (t + 4) as f64);
        // subnormals, the smallest, and overflow
        assert_eq!(round_dyadic(&IBig::from(3), -1074), 3.0 * f64::from_bits(1));
        assert_eq!(round_dyadic(&IBig::from(1), -1075), 0.0); // tie to even 0
        assert_eq!(round_dyadic(&IBig::from(3), -1075), 2.0 * f64::from_bits(1));
        assert_eq!(round_dyadic(&IBig::from(1), 1023), 2f64.powi(1023));
        assert_eq!(round_dyadic(&IBig::from(1), 1024), f64::INFINITY);
        assert_eq!(round_dyadic(&IBig::from(-1), 1024), f64::NEG_INFINITY);
        assert_eq!(
            round_dyadic(&IBig::from(u64::MAX), 1023 - 63),
            f64::INFINITY
        );
        assert_eq!(
            round_dyadic(
                &IBig::from(f64::MAX.to_bits() & ((1 << 52) - 1) | (1 << 52)),
                971
            ),
            f64::MAX
        );
        // every f64 is its own rounding
        for _ in 0..10_000 {
            let f = f64::from_bits(r.next_u64());
            if !f.is_finite() || f == 0.0 {
                continue;
            }
            let (m, e) = dyadic(f.abs());
            let n = IBig::from(m);
            let n = if f < 0.0 { -n } else { n };
            assert_eq!(round_dyadic(&n, e as i64), f);
        }
    }

    #[test]
    fn discrete_release_rounds_once() {
        let mut r = SecureRng::from_seed_for_tests(1);
        let none = Noise::new(None, None, 0).unwrap();
        assert_eq!(none.release(3, -1, &mut r), 1.5);
        assert_eq!(none.release(-7, 0, &mut r), -7.0);
    }

    #[test]
    fn continuous_release_below_the_resolution_of_a_float() {
        // σ = 2^-80 around 1.0: the exact value is within 2^-60 of 1 with
        // overwhelming probability, and 1.0 is the nearest float to all of it
        let mut r = SecureRng::from_seed_for_tests(2);
        for kind in [NoiseKind::Laplace, NoiseKind::Gaussian] {
            let noise = Noise::new(Some(kind), Some(2f64.powi(-80)), 0).unwrap();
            for _ in 0..1000 {
                assert_eq!(noise.release(1, 0, &mut r), 1.0);
            }
        }
    }
}
