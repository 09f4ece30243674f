//! Numbers: parsing and validating a CSV field, and a value's place on a
//! statistic's grid.

/// Powers of ten exactly representable as f64.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `[+-]digits[.digits]` with at most 15 digits in all, as `f64::from_str`
/// computes it: the digits m as an integer (exact: m < 10^15 < 2^53) over
/// 10^k (exact for k ≤ 22), one correctly rounded division — Clinger's fast
/// path, which is also the standard library's, so the result is the same
/// bit for bit. `None` for anything else (the full parse decides).
#[inline]
fn parse_simple(f: &[u8]) -> Option<f64> {
    let (neg, body) = match f.first()? {
        b'-' => (true, &f[1..]),
        b'+' => (false, &f[1..]),
        _ => (false, f),
    };
    let (mut m, mut digits, mut frac, mut dot) = (0u64, 0usize, 0usize, false);
    for &c in body {
        match c {
            b'0'..=b'9' => {
                m = m * 10 + u64::from(c - b'0');
                digits += 1;
                frac += usize::from(dot);
                if digits > 15 {
                    return None;
                }
            }
            b'.' if !dot => dot = true,
            _ => return None,
        }
    }
    // digits before the point, and after it when there is one
    if digits == frac || (dot && frac == 0) {
        return None;
    }
    let v = m as f64 / POW10[frac];
    Some(if neg { -v } else { v })
}

/// Parses a number; `None` for empty, unparsable, NaN, or a fractional int.
#[inline]
pub(super) fn parse_number(field: Option<&[u8]>, int: bool) -> Option<f64> {
    let f = field?;
    if let Some(v) = parse_simple(f) {
        return (!int || is_integer(v)).then_some(v);
    }
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
pub(super) fn is_integer(v: f64) -> bool {
    v.abs() >= 4_503_599_627_370_496.0 || (v as i64) as f64 == v
}

/// Exactly `parse_number(field, int).is_some()`, without computing the
/// value in the common case: `[+-]digits[.digits]` always parses to a
/// finite number or an infinity (never NaN), and it is an integer when no
/// fractional digit is non-zero. Anything else (spaces, exponents, `inf`,
/// fractional digits of an int column, which may still round to an
/// integer) takes the full parse.
#[inline]
pub(super) fn valid_number(field: Option<&[u8]>, int: bool) -> bool {
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

/// A summed number's grid: scale 2^−k and the public bounds rounded inward
/// onto the grid (integers, |lo|, |hi| ≤ 2^62).
#[derive(Clone, Copy, PartialEq)]
pub(super) struct Grid {
    pub(super) scale: f64,
    pub(super) lo: f64,
    pub(super) hi: f64,
}

impl Grid {
    /// The number in grid units, rounded half away from zero (as
    /// `f64::round`), then clamped to [lo, hi].
    ///
    /// Computed as round(clamp(x)), which is the same since lo and hi are
    /// integers, and rounded inline: below 2^52 `as i64` truncates exactly
    /// and the remainder is exact; from 2^52 on every f64 is an integer.
    #[inline]
    pub(super) fn at(&self, v: f64) -> i64 {
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

    /// The fast path gives `f64::from_str`'s value bit for bit, and
    /// declines what it does not cover.
    #[test]
    fn the_simple_decimal_path_is_the_standard_parse() {
        let slow = |s: &str| -> Option<f64> {
            let v: f64 = s.trim().parse().ok()?;
            (!v.is_nan()).then_some(v)
        };
        let mut x: u64 = 7;
        let mut cases: Vec<String> = [
            "0",
            "-0",
            "+0",
            "0.0",
            "-0.0",
            "5.",
            ".5",
            "-.5",
            "+.5",
            "1.",
            "00012",
            "0.1",
            "0.3",
            "123456789012345",
            "1234567890123456",
            "99999999999999.9",
            "0.000000000000001",
            "0.0000000000000001",
            "9007199254740993",
            "+-1",
            "1-",
            "1.2.3",
            "",
            "-",
            ".",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..300_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = (x % 17) as usize + 1;
            let mut s = String::new();
            match (x >> 8) % 3 {
                0 => s.push('-'),
                1 => s.push('+'),
                _ => {}
            }
            let point = (x >> 12) as usize % (digits + 1);
            for i in 0..digits {
                if i == point && !(x >> 20).is_multiple_of(4) {
                    s.push('.');
                }
                s.push(char::from(b'0' + ((x >> (24 + 2 * (i % 16))) % 10) as u8));
            }
            cases.push(s);
        }
        let mut fast = 0;
        for c in &cases {
            if let Some(v) = parse_simple(c.as_bytes()) {
                fast += 1;
                let want = slow(c).unwrap_or_else(|| panic!("{c:?}"));
                assert_eq!(v.to_bits(), want.to_bits(), "{c:?}");
            }
            for int in [false, true] {
                let want = slow(c).filter(|v| !int || v.fract() == 0.0 || v.is_infinite());
                let got = parse_number(Some(c.as_bytes()), int);
                assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{c:?}");
            }
        }
        assert!(fast > 100_000, "the fast path is taken: {fast}");
        for declined in [
            "",
            "-",
            ".",
            "1.2.3",
            "1234567890123456",
            "1e3",
            " 1",
            "5.",
            ".5",
        ] {
            assert_eq!(parse_simple(declined.as_bytes()), None, "{declined:?}");
        }
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
}
