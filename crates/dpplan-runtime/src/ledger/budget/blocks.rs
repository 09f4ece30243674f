//! The calendar blocks of a per-block budget (`per = "month"` or `"week"`,
//! UTC) and the blocks a release's data lie in.

use serde::{Deserialize, Serialize};

/// A calendar block of a per-block budget (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// ISO weeks, Monday 00:00 to Monday 00:00.
    Week,
    /// Calendar months.
    Month,
}

/// 1970-01-01 was a Thursday: Monday 1969-12-29 starts week 0.
const WEEK_ZERO: i64 = -3 * 86_400;

impl Per {
    pub fn name(self) -> &'static str {
        match self {
            Per::Week => "week",
            Per::Month => "month",
        }
    }

    /// The block holding Unix second `t`: months since 1970-01 (year · 12 +
    /// month − 1, less 1970 · 12), or weeks since Monday 1969-12-29.
    pub fn block(self, t: i64) -> i64 {
        match self {
            Per::Week => (t - WEEK_ZERO).div_euclid(7 * 86_400),
            Per::Month => {
                // jiff's calendar; a time beyond its range (±9999 years)
                // falls in its first or last month
                let ts = jiff::Timestamp::from_second(t).unwrap_or(if t < 0 {
                    jiff::Timestamp::MIN
                } else {
                    jiff::Timestamp::MAX
                });
                let d = jiff::tz::Offset::UTC.to_datetime(ts);
                (i64::from(d.year()) - 1970) * 12 + i64::from(d.month()) - 1
            }
        }
    }

    /// A block in words: `2026-02`, or `week of 2026-02-02`.
    pub fn label(self, b: i64) -> String {
        match self {
            Per::Month => {
                let (y, m) = (1970 + b.div_euclid(12), b.rem_euclid(12) + 1);
                format!("{y:04}-{m:02}")
            }
            Per::Week => {
                let monday = WEEK_ZERO + b * 7 * 86_400;
                format!("week of {}", &super::super::unix_rfc3339(monday)[..10])
            }
        }
    }
}

/// What a release reads, in time: the rows of its window [lo, hi), or
/// (a release without a window) every row up to its release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    Window(i64, i64),
    UpTo(i64),
}

/// The blocks a charge counts against: `first..=last`; `first` absent:
/// every block up to `last` (a release without a window).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blocks {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first: Option<i64>,
    pub last: i64,
}

impl Blocks {
    pub fn of(per: Per, reads: Reads) -> Blocks {
        match reads {
            Reads::Window(lo, hi) => Blocks {
                first: Some(per.block(lo)),
                last: per.block(hi.saturating_sub(1).max(lo)),
            },
            Reads::UpTo(t) => Blocks {
                first: None,
                last: per.block(t),
            },
        }
    }
}
