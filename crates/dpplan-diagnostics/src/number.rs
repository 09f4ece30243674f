/// Formats a number for people: integers as integers, others with up to six
/// significant digits, rounded *up* so that a printed ε is never below the
/// computed bound.
pub fn num(x: f64) -> String {
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
    }
}
