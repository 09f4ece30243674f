//! Exact noise samplers (Canonne, Kamath & Steinke 2020, "The Discrete
//! Gaussian for Differential Privacy", Algorithms 1–3), with big-integer
//! rational arithmetic only: there is no floating point anywhere in the
//! sampling path.
//!
//! Continuous mechanisms of a plan (`laplace`, `gaussian`) are executed as
//! the discrete mechanism on the grid 2^k·ℤ: the exact statistic, in units of
//! 2^k, gets discrete noise of scale `scale / 2^k`, and the sum is rounded to
//! the nearest f64 once, as post-processing. See docs/executable-plan.md.

use dashu_int::ops::{BitTest, UnsignedAbs};
use dashu_int::{IBig, UBig};

use crate::rng::SecureRng;

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

/// The noise of one statistic, ready to sample, in grid units.
#[derive(Debug, Clone, PartialEq)]
pub enum Noise {
    /// A public statistic (sensitivity 0).
    None,
    /// Discrete Laplace, scale t/s grid units.
    Laplace { t: UBig, s: UBig },
    /// Discrete Gaussian, σ² = a/b grid units², t = ⌊σ⌋ + 1.
    Gaussian { a: UBig, b: UBig, t: UBig },
}

#[derive(Debug, Clone, PartialEq)]
pub struct NoiseError(pub String);

impl std::fmt::Display for NoiseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoiseError {}

impl Noise {
    /// `kind` as in the plan; `scale` is b or σ in output units; the noise
    /// is drawn on the grid 2^k.
    pub fn new(kind: &str, scale: Option<f64>, k: i32) -> Result<Noise, NoiseError> {
        if kind == "none" {
            return Ok(Noise::None);
        }
        let scale = scale
            .filter(|s| s.is_finite() && *s > 0.0)
            .ok_or_else(|| NoiseError("the noise scale must be positive and finite".into()))?;
        if !(-1100..=1100).contains(&k) {
            return Err(NoiseError("the grid exponent is out of range".into()));
        }
        let (m, e) = dyadic(scale);
        match kind {
            "laplace" | "discrete_laplace" => {
                let (t, s) = fraction(m, e - k);
                Ok(Noise::Laplace { t, s })
            }
            "gaussian" | "discrete_gaussian" => {
                let (a, b) = fraction(&m * &m, 2 * (e - k));
                // ⌊σ⌋ = ⌊√(a/b)⌋ = isqrt(⌊a/b⌋)
                let t = isqrt(&(&a / &b)) + UBig::ONE;
                Ok(Noise::Gaussian { a, b, t })
            }
            other => Err(NoiseError(format!("unknown mechanism `{other}`"))),
        }
    }

    pub fn sample(&self, rng: &mut SecureRng) -> IBig {
        match self {
            Noise::None => IBig::ZERO,
            Noise::Laplace { t, s } => discrete_laplace(rng, t, s),
            Noise::Gaussian { a, b, t } => discrete_gaussian(rng, a, b, t),
        }
    }
}

/// ⌊√n⌋ by Newton's method on integers.
pub fn isqrt(n: &UBig) -> UBig {
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

/// (x + noise)·2^k rounded once to the nearest f64.
pub fn to_output(v: &IBig, k: i32) -> f64 {
    let f = v.to_f64().value();
    f * 2f64.powi(k)
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

    #[test]
    fn noise_parameters() {
        // discrete Laplace scale 2000 on the integers
        assert_eq!(
            Noise::new("discrete_laplace", Some(2000.0), 0).unwrap(),
            Noise::Laplace {
                t: UBig::from(2000u32),
                s: UBig::ONE
            }
        );
        // Laplace 250 on the grid 2^-3: 2000 grid steps
        assert_eq!(
            Noise::new("laplace", Some(250.0), -3).unwrap(),
            Noise::Laplace {
                t: UBig::from(2000u32),
                s: UBig::ONE
            }
        );
        // Laplace 0.75 on the integers: 3/4
        assert_eq!(
            Noise::new("discrete_laplace", Some(0.75), 0).unwrap(),
            Noise::Laplace {
                t: UBig::from(3u8),
                s: UBig::from(4u8)
            }
        );
        // σ = 12: σ² = 144, t = 13
        assert_eq!(
            Noise::new("discrete_gaussian", Some(12.0), 0).unwrap(),
            Noise::Gaussian {
                a: UBig::from(144u8),
                b: UBig::ONE,
                t: UBig::from(13u8)
            }
        );
        // σ = 1.5: σ² = 9/4, t = 2
        assert_eq!(
            Noise::new("discrete_gaussian", Some(1.5), 0).unwrap(),
            Noise::Gaussian {
                a: UBig::from(9u8),
                b: UBig::from(4u8),
                t: UBig::from(2u8)
            }
        );
        assert!(Noise::new("laplace", Some(f64::NAN), 0).is_err());
        assert!(Noise::new("laplace", Some(0.0), 0).is_err());
        assert_eq!(Noise::new("none", None, 0).unwrap(), Noise::None);
    }

    #[test]
    fn to_output_rounds_once() {
        assert_eq!(to_output(&IBig::from(3), -1), 1.5);
        assert_eq!(to_output(&IBig::from(-7), 0), -7.0);
    }
}
