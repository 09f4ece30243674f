//! Release schedules: how many fresh releases a schedule makes.

use dpplan_syntax::ast::{Duration, Schedule};

/// Schedules longer than this many releases are refused (DP016): the
/// accounting is exact for any count, but a plan that releases more than a
/// trillion times is a typo.
pub const MAX_RELEASES: u64 = 1_000_000_000_000;

#[derive(Debug, Clone, PartialEq)]
pub enum ScheduleError {
    /// A value is out of range; the message says which, at which span.
    Invalid(dpplan_diagnostics::Span, String),
    TooMany(u64),
}

fn duration_seconds(d: &Duration) -> Result<f64, ScheduleError> {
    let a = d.amount.value;
    if !a.is_finite() || a <= 0.0 {
        return Err(ScheduleError::Invalid(
            d.span,
            format!(
                "a duration must be positive and finite, found {}",
                d.amount.value
            ),
        ));
    }
    Ok(a * d.unit.seconds())
}

/// Seconds since 1970-01-01T00:00Z of a `YYYY-MM-DD[THH:MM[:SS]][Z]` date.
pub fn parse_date(s: &str) -> Option<i64> {
    let s = s.trim_end_matches('Z');
    let (date, time) = match s.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let d: i64 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    let mut secs = days_from_civil(y, m, d) * 86_400;
    if let Some(t) = time {
        let mut tp = t.split(':');
        let hh: i64 = tp.next()?.parse().ok()?;
        let mm: i64 = tp.next()?.parse().ok()?;
        let ss: i64 = tp.next().map(|x| x.parse().ok()).unwrap_or(Some(0))?;
        if hh > 23 || mm > 59 || ss > 59 {
            return None;
        }
        secs += hh * 3600 + mm * 60 + ss;
    }
    Some(secs)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(y) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 in the proleptic Gregorian calendar (the
/// well-known era-based conversion).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Releases at `start, start + every, …` strictly before `start + window`.
fn every_count(every: f64, window: f64) -> u64 {
    let n = (window / every).ceil();
    // Guard against float noise: 30 days / 1 minute is exactly 43200.
    let rounded = (window / every).round();
    if ((window / every) - rounded).abs() < 1e-9 * rounded.max(1.0) {
        rounded as u64
    } else {
        n as u64
    }
}

/// The number of fresh releases a schedule makes, and a description.
pub fn releases(s: &Schedule) -> Result<(u64, String), ScheduleError> {
    let (n, text) = match s {
        Schedule::Once => (1, "once".to_string()),
        Schedule::Times { count } => {
            let v = count.value;
            if !v.is_finite() || v < 1.0 || v.fract() != 0.0 {
                return Err(ScheduleError::Invalid(
                    count.span,
                    format!("a release count must be a whole number of at least 1, found {v}"),
                ));
            }
            if v > MAX_RELEASES as f64 {
                return Err(ScheduleError::TooMany(u64::MAX));
            }
            (v as u64, format!("{} times", v as u64))
        }
        Schedule::EveryFor { every, window } => {
            let e = duration_seconds(every)?;
            let w = duration_seconds(window)?;
            let n = every_count(e, w);
            (
                n,
                format!(
                    "every {} {}{} for {} {}{}",
                    every.amount.value,
                    every.unit.name(),
                    if every.amount.value == 1.0 { "" } else { "s" },
                    window.amount.value,
                    window.unit.name(),
                    if window.amount.value == 1.0 { "" } else { "s" }
                ),
            )
        }
        Schedule::EveryRange { every, from, until } => {
            let e = duration_seconds(every)?;
            let a = parse_date(&from.value).ok_or_else(|| {
                ScheduleError::Invalid(
                    from.span,
                    format!("`{}` is not a valid calendar date", from.value),
                )
            })?;
            let b = parse_date(&until.value).ok_or_else(|| {
                ScheduleError::Invalid(
                    until.span,
                    format!("`{}` is not a valid calendar date", until.value),
                )
            })?;
            if b <= a {
                return Err(ScheduleError::Invalid(
                    until.span,
                    format!(
                        "the schedule ends ({}) before it starts ({})",
                        until.value, from.value
                    ),
                ));
            }
            let n = every_count(e, (b - a) as f64);
            (
                n,
                format!(
                    "every {} {}{} from {} until {}",
                    every.amount.value,
                    every.unit.name(),
                    if every.amount.value == 1.0 { "" } else { "s" },
                    from.value,
                    until.value
                ),
            )
        }
    };
    if n == 0 {
        return Err(ScheduleError::Invalid(
            dpplan_diagnostics::Span::default(),
            "the schedule makes no release".into(),
        ));
    }
    if n > MAX_RELEASES {
        return Err(ScheduleError::TooMany(n));
    }
    Ok((n, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2000-03-01"), Some(951_868_800));
        assert_eq!(parse_date("2026-01-01T06:30"), Some(1_767_249_000));
        assert_eq!(parse_date("2025-02-29"), None);
        assert!(parse_date("2024-02-29").is_some());
        assert_eq!(parse_date("2026-13-01"), None);
        assert_eq!(
            parse_date("2027-01-01").unwrap() - parse_date("2026-01-01").unwrap(),
            365 * 86_400
        );
    }

    #[test]
    fn counts() {
        assert_eq!(every_count(60.0, 30.0 * 86_400.0), 43_200);
        assert_eq!(every_count(86_400.0, 365.0 * 86_400.0), 365);
        assert_eq!(every_count(7.0 * 86_400.0, 365.0 * 86_400.0), 53);
        assert_eq!(every_count(10.0, 5.0), 1);
    }
}
