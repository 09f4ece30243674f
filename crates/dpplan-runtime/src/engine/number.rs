//! Numbers: parsing and validating a CSV field, and a value's place on a
//! statistic's grid.

/// Parses a number; `None` for empty, unparsable, NaN, or a fractional int.
#[inline]
pub(super) fn parse_number(field: Option<&[u8]>, int: bool) -> Option<f64> {
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
