/// Formats a number for people: integers as integers, others with up to six
/// significant digits, rounded *up* so that a printed ε is never below the
/// computed bound by more than floating-point rounding: a value within
/// 10⁻¹² (relative) of a decimal of at most six significant digits is that
/// decimal ([`short_decimal`]: `1.2000000000000002`, the float sum of
/// 0.4 + 0.4 + 0.4, is `1.2`, not `1.20001`). One format everywhere: the
/// terminal, the editor, the report, the diff.
pub fn num(x: f64) -> String {
    match short_decimal(x) {
        Some(d) => up(d),
        None => up(x),
    }
}

/// [`num`] without the snap to a nearby short decimal.
fn up(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{}", x as i64);
    }
    let mag = x.abs().log10().floor() as i32;
    let scientific = !(-4..7).contains(&mag);
    // Exact when the shortest representation is short (declared parameters).
    let shortest = format!("{x:e}");
    let digits = shortest
        .split('e')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_digit())
        .count();
    if digits <= 6 {
        return if scientific { shortest } else { format!("{x}") };
    }
    if !scientific {
        let decimals = (5 - mag).max(0) as usize;
        let f = 10f64.powi(decimals as i32);
        let up = (x * f).ceil() / f;
        let s = format!("{up:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    } else {
        let m = x / 10f64.powi(mag);
        let up = (m * 1e5).ceil() / 1e5;
        let s = format!("{up:.5}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s}e{mag}")
    }
}

/// The decimal of at most six significant digits that `x` is but for
/// floating-point rounding (within 10⁻¹² relative: `7.500000000000001` is
/// `7.5`, `0.30000000000000004` is `0.3`), when there is one and it is not
/// `x` already printed in full by [`num`]; `None` otherwise.
pub fn short_decimal(x: f64) -> Option<f64> {
    if !x.is_finite() || x == 0.0 {
        return None;
    }
    let d: f64 = format!("{x:.5e}").parse().ok()?;
    ((x - d).abs() <= 1e-12 * x.abs()).then_some(d)
}

/// A probability bound as a percentage, rounded **up** at the last digit
/// shown (3 significant digits, at most 3 decimals): a true-positive rate
/// is never printed below its bound. `0.0271828…` is `2.72 %`.
pub fn percent_up(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    let p = x * 100.0;
    let digits = if p >= 10.0 {
        1
    } else if p >= 1.0 {
        2
    } else {
        3
    };
    // k/10^d ≥ 100·x exactly: S = 100·10^d is an exact float and the sign
    // of x·S − k is that of its one rounding by fma
    let s = 100.0 * 10f64.powi(digits);
    let mut k = (x * s).ceil();
    if x.mul_add(s, -k) > 0.0 {
        k += 1.0;
    }
    let up = (k / 10f64.powi(digits)).clamp(0.0, 100.0);
    format!("{up:.*} %", digits as usize)
}

/// A rate as written (a policy's, a test's), as a percentage: `0.001` is
/// `0.1 %`.
pub fn percent(x: f64) -> String {
    format!("{} %", num(x * 100.0))
}

#[cfg(test)]
mod tests {
    use super::num;

    #[test]
    fn numbers_round_up() {
        assert_eq!(num(4.0), "4");
        assert_eq!(num(1e-6), "1e-6");
        assert_eq!(num(1.345380442439233), "1.34539");
        assert_eq!(num(28.590726703363874), "28.5908");
        assert_eq!(num(0.1), "0.1");
        assert_eq!(num(1234567.8), "1234568");
        assert_eq!(num(12345678.9), "1.23457e7");
        assert_eq!(num(f64::INFINITY), "inf");
        assert_eq!(num(2.5e-7), "2.5e-7");
        assert_eq!(num(0.000123), "0.000123");
        // within floating-point rounding of a short decimal: that decimal
        assert_eq!(num(7.500000000000001), "7.5");
        assert_eq!(num(0.4 + 0.4 + 0.4), "1.2");
        assert_eq!(num(12.000000000000004), "12");
        // negative control: a real difference in the 7th digit rounds up
        assert_eq!(num(1.2000001), "1.20001");
    }

    #[test]
    fn short_decimals_are_found_within_rounding_only() {
        use super::short_decimal;
        assert_eq!(short_decimal(7.500000000000001), Some(7.5));
        assert_eq!(short_decimal(0.1 + 0.2), Some(0.3));
        assert_eq!(short_decimal(12.000000000000004), Some(12.0));
        assert_eq!(short_decimal(1.2e-7 * (1.0 + 1e-15)), Some(1.2e-7));
        // negative controls: a real seventh digit, or more than rounding
        assert_eq!(short_decimal(std::f64::consts::SQRT_2), None);
        assert_eq!(short_decimal(7.5000001), None);
        assert_eq!(short_decimal(0.4999999), None);
        assert_eq!(short_decimal(f64::NAN), None);
    }

    #[test]
    fn percentages_round_up() {
        assert_eq!(super::percent_up(0.027_182_818), "2.72 %");
        assert_eq!(super::percent_up(0.25), "25.0 %");
        assert_eq!(super::percent_up(0.000_976_562_5), "0.098 %");
        // the float 0.0025 is above 1/400: its bound shows as 0.251 %
        assert_eq!(super::percent_up(0.0025), "0.251 %");
        assert_eq!(super::percent_up(0.183_593), "18.4 %");
        assert_eq!(super::percent_up(1.0), "100.0 %");
        assert_eq!(super::percent(0.001), "0.1 %");
    }
}
