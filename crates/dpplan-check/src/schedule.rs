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
    /// More releases than [`MAX_RELEASES`]; the count, exact where it is
    /// (as text: it may not fit a `u64`).
    TooMany(String),
}

/// A positive duration as an exact fraction of seconds, `num / 10^places`:
/// the amount as written (the shortest decimal that reads back as the
/// parsed number, i.e. the plan's own digits for any amount written with
/// at most 17 significant digits) times the unit's whole seconds. `None`
/// when it does not fit 128 bits.
fn exact_seconds(d: &Duration) -> Option<(u128, u32)> {
    let text = format!("{}", d.amount.value);
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mut num: u128 = 0;
    for c in int.bytes().chain(frac.bytes()) {
        let digit = u128::from(c.checked_sub(b'0').filter(|d| *d <= 9)?);
        num = num.checked_mul(10)?.checked_add(digit)?;
    }
    let unit = d.unit.seconds() as u128;
    Some((num.checked_mul(unit)?, u32::try_from(frac.len()).ok()?))
}

/// A duration of zero or more in whole seconds, decided on the plan's
/// decimals (`1.1 hours` is 3960 s, though 1.1 × 3600 is not 3960 in
/// floating point); `None` when it is negative, not finite or not a whole
/// number of seconds. An amount too long for 128-bit fractions is whole
/// when its floating-point product is (every float from 2⁵³ up is).
pub fn whole_seconds(d: &Duration) -> Option<f64> {
    let a = d.amount.value;
    if !a.is_finite() || a < 0.0 {
        return None;
    }
    if a == 0.0 {
        // `-0` too: no negative zero in a plan
        return Some(0.0);
    }
    match exact_seconds(d) {
        Some((num, places)) => {
            let scale = 10u128.checked_pow(places)?;
            (num % scale == 0).then(|| (num / scale) as f64)
        }
        None => {
            let s = a * d.unit.seconds();
            (s.is_finite() && s.fract() == 0.0).then_some(s)
        }
    }
}

/// Whole seconds in words, in the largest unit that divides them:
/// `2 hours`, `1 day`, `90 seconds`.
pub fn describe_seconds(seconds: f64) -> String {
    const UNITS: [(f64, &str); 5] = [
        (604_800.0, "week"),
        (86_400.0, "day"),
        (3_600.0, "hour"),
        (60.0, "minute"),
        (1.0, "second"),
    ];
    let (n, unit) = UNITS
        .iter()
        .find(|(len, _)| seconds != 0.0 && (seconds / len).fract() == 0.0)
        .map_or((seconds, "second"), |(len, unit)| (seconds / len, *unit));
    let n = dpplan_diagnostics::num(n);
    if n == "1" {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

/// ⌈a / b⌉ for exact fractions a = an / 10^ap, b = bn / 10^bp (bn > 0).
fn ceil_ratio((an, ap): (u128, u32), (bn, bp): (u128, u32)) -> Option<u128> {
    let num = an.checked_mul(10u128.checked_pow(bp)?)?;
    let den = bn.checked_mul(10u128.checked_pow(ap)?)?;
    (den > 0).then(|| num.div_ceil(den))
}

/// The count of an `every` schedule: releases at start, start + d, …
/// strictly before start + w, i.e. ⌈w / d⌉, computed exactly on the
/// plan's decimals. Only durations beyond 128-bit fractions (periods or
/// windows past 10^20 s with many decimals) fall back to floating point,
/// rounded up.
fn every_count(
    every: &Duration,
    window: Option<&Duration>,
    window_secs: i64,
) -> Result<u64, ScheduleError> {
    let e = duration_seconds(every)?;
    let (w, exact_w) = match window {
        Some(w) => (duration_seconds(w)?, exact_seconds(w)),
        None => (
            window_secs as f64,
            u128::try_from(window_secs).ok().map(|w| (w, 0)),
        ),
    };
    let exact = exact_seconds(every)
        .zip(exact_w)
        .and_then(|(e, w)| ceil_ratio(w, e));
    let n = match exact {
        Some(n) => n,
        None => {
            let r = (w / e).ceil();
            if r.is_nan() || r > MAX_RELEASES as f64 {
                return Err(ScheduleError::TooMany(format!("about {r:e}")));
            }
            r as u128
        }
    };
    u64::try_from(n)
        .ok()
        .filter(|&n| n <= MAX_RELEASES)
        .ok_or_else(|| ScheduleError::TooMany(n.to_string()))
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

/// Seconds since 1970-01-01T00:00Z of a `YYYY-MM-DD[THH:MM[:SS]][Z]` date
/// (UTC, proleptic Gregorian calendar); `None` if it is not a valid one.
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
    let (mut hh, mut mm, mut ss) = (0, 0, 0);
    if let Some(t) = time {
        let mut tp = t.split(':');
        hh = tp.next()?.parse().ok()?;
        mm = tp.next()?.parse().ok()?;
        ss = tp.next().map(|x| x.parse().ok()).unwrap_or(Some(0))?;
    }
    unix_seconds(y, [m, d, hh, mm, ss])
}

/// The Gregorian calendar repeats every 400 years, which are exactly
/// 146 097 days.
const CYCLE_SECONDS: i128 = 146_097 * 86_400;

/// Seconds since the Unix epoch of year `y`, `[month, day, hour, minute,
/// second]` in UTC, if that is a valid date and time (jiff's calendar).
/// jiff's dates span the years -9999 to 9999; a year beyond (only a
/// command-line time can be one: a plan's dates have four digits) is moved
/// into it by whole 400-year cycles, so that `dpplan run --at 10000-01-01`
/// is refused for its year, like any time past 9999, not for its format.
fn unix_seconds(y: i64, [m, d, hh, mm, ss]: [i64; 5]) -> Option<i64> {
    let cycles = if (-9999..=9999).contains(&y) {
        0
    } else {
        y.div_euclid(400)
    };
    let small = |v: i64| i8::try_from(v).ok();
    let at = jiff::civil::DateTime::new(
        i16::try_from(y - 400 * cycles).ok()?,
        small(m)?,
        small(d)?,
        small(hh)?,
        small(mm)?,
        small(ss)?,
        0,
    )
    .ok()?;
    let epoch = jiff::civil::DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
    let secs = i128::from(at.duration_since(epoch).as_secs());
    i64::try_from(secs + i128::from(cycles) * CYCLE_SECONDS).ok()
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
                // `{}` prints a whole f64 with all its digits, exactly
                return Err(ScheduleError::TooMany(format!("{v}")));
            }
            (v as u64, format!("{} times", v as u64))
        }
        Schedule::EveryFor { every, window } => {
            let n = every_count(every, Some(window), 0)?;
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
            let n = every_count(every, None, b - a)?;
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
        return Err(ScheduleError::TooMany(n.to_string()));
    }
    Ok((n, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpplan_syntax::ast::{Spanned, TimeUnit};

    /// Independently known Unix times (famous timestamps, other systems'
    /// epochs and limits) and weekdays.
    #[test]
    fn known_dates() {
        for (text, secs) in [
            ("1970-01-01", 0),
            ("1969-12-31T23:59:59Z", -1),
            ("2000-01-01T00:00Z", 946_684_800),
            ("2001-09-09T01:46:40Z", 1_000_000_000),
            ("2009-02-13T23:31:30Z", 1_234_567_890),
            ("2038-01-19T03:14:07Z", i64::from(i32::MAX)),
            ("2024-01-01", 1_704_067_200),
            ("1900-01-01", -2_208_988_800),           // the NTP epoch
            ("1601-01-01", -11_644_473_600),          // the Windows FILETIME epoch
            ("0001-01-01", -62_135_596_800),          // .NET's DateTime.MinValue
            ("9999-12-31T23:59:59", 253_402_300_799), // .NET's DateTime.MaxValue
            ("0000-01-01", -62_167_219_200),          // 719 528 days before 1970
            ("10000-01-01", 253_402_300_800),
        ] {
            assert_eq!(parse_date(text), Some(secs), "{text}");
        }
        // 1970-01-01 was a Thursday
        let weekday = |text| (parse_date(text).unwrap().div_euclid(86_400) + 3).rem_euclid(7);
        for (text, monday_0) in [
            ("0001-01-01", 0),
            ("1582-10-15", 4), // the Gregorian calendar's first day
            ("1900-01-01", 0),
            ("2000-01-01", 5),
            ("2024-02-29", 3),
            ("9999-12-31", 4),
        ] {
            assert_eq!(weekday(text), monday_0, "{text}");
        }
        // leap years: every 4th, not every 100th, every 400th
        for (text, ok) in [
            ("1900-02-29", false),
            ("2000-02-29", true),
            ("2023-02-29", false),
            ("2100-02-29", false),
            ("2400-02-29", true),
            ("2026-04-31", false),
            ("2026-12-31", true),
            ("2026-01-00", false),
        ] {
            assert_eq!(parse_date(text).is_some(), ok, "{text}");
        }
        // times: no 24:00, no leap second, no negative field
        for text in [
            "2026-01-01T24:00",
            "2026-01-01T23:60",
            "2026-01-01T23:59:60",
            "2026-01-02T-1:00",
        ] {
            assert_eq!(parse_date(text), None, "{text}");
        }
    }

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

    /// Years whose seconds do not fit an `i64` are no date (the old
    /// conversion panicked on them in a debug build).
    #[test]
    fn huge_years_are_refused_without_overflow() {
        assert_eq!(parse_date("292277026596-12-04T15:30:07Z"), Some(i64::MAX));
        assert_eq!(parse_date("292277026596-12-04T15:30:08Z"), None);
        assert_eq!(parse_date(&format!("{}-01-01", i64::MAX)), None);
    }

    fn dur(amount: f64, unit: TimeUnit) -> Duration {
        Duration {
            amount: Spanned {
                value: amount,
                span: Default::default(),
            },
            unit,
            span: Default::default(),
        }
    }

    fn count(e: f64, eu: TimeUnit, w: f64, wu: TimeUnit) -> Result<u64, ScheduleError> {
        every_count(&dur(e, eu), Some(&dur(w, wu)), 0)
    }

    #[test]
    fn counts() {
        use TimeUnit::*;
        assert_eq!(count(1.0, Minute, 30.0, Day), Ok(43_200));
        assert_eq!(count(1.0, Day, 365.0, Day), Ok(365));
        assert_eq!(count(1.0, Week, 365.0, Day), Ok(53));
        assert_eq!(count(10.0, Second, 5.0, Second), Ok(1));
        // ⌈w/d⌉ exactly, where a float ratio rounds to the wrong integer
        assert_eq!(
            count(3.0, Second, 3_000_000_001.0, Second),
            Ok(1_000_000_001)
        );
        assert_eq!(
            count(3.0, Second, 3_000_000_000.0, Second),
            Ok(1_000_000_000)
        );
        // decimals as written: 0.7 / 0.1 is 7, not 7.000…1 or 6.999…
        assert_eq!(count(0.1, Second, 0.7, Second), Ok(7));
        assert_eq!(count(0.1, Second, 0.3, Second), Ok(3));
        assert_eq!(count(1.5, Hour, 3.0, Hour), Ok(2));
        assert_eq!(count(1.5, Hour, 3.1, Hour), Ok(3));
        // calendar windows are whole seconds
        assert_eq!(every_count(&dur(1.0, Hour), None, 86_400 + 1), Ok(25));
        // beyond the limit: the exact count, not a saturated one
        assert_eq!(
            count(1.0, Second, 1_000_000_000_001.0, Second),
            Err(ScheduleError::TooMany("1000000000001".into()))
        );
        assert_eq!(
            count(1.0, Second, 1_000_000_000_000.0, Second),
            Ok(MAX_RELEASES)
        );
    }
}
