//! # dpplan-vocab — the words every layer shares
//!
//! The closed sets of names a plan is made of — noise kinds, accountants,
//! privacy units, adjacencies, aggregations, statistics — defined once.
//! The syntax tree, the checker's checked plan, the accounting math, the
//! executable plan, the runtime and the ledger all use these enums, so a
//! kind cannot be misspelt between two layers and a `match` over one is
//! checked for exhaustiveness by the compiler.
//!
//! Every enum serialises to the snake_case name a plan writes
//! (`discrete_gaussian`, `add_remove`, `grouped_sum`, …): the JSON outputs,
//! the executable plan and the ledger hold exactly these strings, and
//! reading any other string is an error. [`Vocabulary::ALL`] lists them, in
//! declaration order, and `name()`/`from_name()` convert both ways.
//!
//! This crate depends on nothing but serde, so the accounting crate can use
//! it without learning syntax.
#![forbid(unsafe_code)]

use std::fmt;

pub mod contract;
pub mod paths;
pub mod rows;

/// A closed set of names, each serialised as its snake_case name.
pub trait Vocabulary: Copy + Sized + 'static {
    /// Every member, in declaration order.
    const ALL: &'static [Self];
    /// The name a plan writes and every format stores.
    fn name(self) -> &'static str;
    /// The member of that name; `None` for any other string.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == name)
    }
}

/// Defines an enum of the vocabulary: its names, `Display` (the name),
/// and serde as that name.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $ty:ident { $($(#[$vmeta:meta])* $variant:ident => $name:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $ty {
            $($(#[$vmeta])* $variant,)+
        }

        impl Vocabulary for $ty {
            const ALL: &'static [Self] = &$ty::ALL;
            fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }
        }

        impl $ty {
            /// Every member, in declaration order.
            pub const ALL: [$ty; [$($name,)+].len()] = [$($ty::$variant,)+];
            /// The name a plan writes and every format stores.
            pub fn name(self) -> &'static str {
                Vocabulary::name(self)
            }
            /// Same as [`Self::name`].
            pub fn as_str(self) -> &'static str {
                Vocabulary::name(self)
            }
            /// The member of that name; `None` for any other string.
            pub fn from_name(name: &str) -> Option<$ty> {
                <$ty as Vocabulary>::from_name(name)
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                $ty::from_name(&name).ok_or_else(|| {
                    serde::de::Error::unknown_variant(&name, &[$($name,)+])
                })
            }
        }
    };
}

vocabulary! {
    /// The noise distribution of a mechanism.
    NoiseKind {
        /// Laplace, density ∝ exp(−|x|/b): pure ε-DP.
        Laplace => "laplace",
        /// Gaussian with standard deviation σ: (ε, δ)-DP.
        Gaussian => "gaussian",
        /// Two-sided geometric on the integers: pure ε-DP.
        DiscreteLaplace => "discrete_laplace",
        /// Discrete Gaussian on the integers (Canonne–Kamath–Steinke).
        DiscreteGaussian => "discrete_gaussian",
        /// The exponential mechanism over a public candidate grid: with
        /// scale b, candidate c is chosen with probability ∝
        /// exp(score(c)/(2b)); pure ε-DP with ε = Δ/b, and ε-bounded-range.
        Exponential => "exponential",
        /// Permute-and-flip over the same candidates and scores
        /// (McKenna & Sheldon 2020): the candidates in a uniformly random
        /// order, each kept with probability exp(−(best − score)/(2b)),
        /// the first kept chosen; pure ε-DP with ε = Δ/b, never less
        /// likely to choose the best than the exponential mechanism, but
        /// not ε-bounded-range.
        PermuteAndFlip => "permute_and_flip",
    }
}

impl NoiseKind {
    /// The Gaussian kinds (parameter σ, ℓ2 sensitivity).
    pub fn is_gaussian(self) -> bool {
        matches!(self, NoiseKind::Gaussian | NoiseKind::DiscreteGaussian)
    }
    /// The selection mechanisms (a candidate chosen by its score, no
    /// additive noise): the exponential mechanism and permute-and-flip.
    pub fn is_selection(self) -> bool {
        matches!(self, NoiseKind::Exponential | NoiseKind::PermuteAndFlip)
    }
    /// The kinds that draw integers (the statistic is on the integers).
    pub fn is_discrete(self) -> bool {
        matches!(
            self,
            NoiseKind::DiscreteLaplace | NoiseKind::DiscreteGaussian
        )
    }
}

vocabulary! {
    /// An accounting method: how the releases of a schedule are composed
    /// into one (ε, δ).
    Accountant {
        /// Basic composition: ε and δ add up.
        Basic => "basic",
        /// Advanced composition (Dwork–Rothblum–Vadhan, Kairouz–Oh–Viswanath).
        Advanced => "advanced",
        /// The classical RDP closed form a + 2√(a ln(1/δ)) (textbooks, the
        /// reference text's table); never tighter than zCDP or RDP.
        Classical => "classical",
        /// Zero-concentrated DP (Bun–Steinke).
        Zcdp => "zcdp",
        /// Rényi DP (Mironov), converted to (ε, δ) at the end.
        Rdp => "rdp",
        /// The exact Gaussian trade-off (Dong–Roth–Su; Balle–Wang).
        Gdp => "gdp",
        /// Privacy-loss distributions composed numerically.
        Pld => "pld",
    }
}

impl Accountant {
    /// The long name a report prints ("exact Gaussian (GDP)").
    pub fn title(self) -> &'static str {
        match self {
            Accountant::Basic => "basic composition",
            Accountant::Advanced => "advanced composition (DRV / KOV)",
            Accountant::Classical => "classical RDP closed form",
            Accountant::Zcdp => "zCDP",
            Accountant::Rdp => "RDP",
            Accountant::Gdp => "exact Gaussian (GDP)",
            Accountant::Pld => "privacy-loss distribution",
        }
    }
}

vocabulary! {
    /// The accountant a plan asks for: one of them, or the tightest.
    AccountantChoice {
        /// The tightest bound of every accountant that applies.
        Best => "best",
        Basic => "basic",
        Advanced => "advanced",
        Classical => "classical",
        Zcdp => "zcdp",
        Rdp => "rdp",
        Gdp => "gdp",
        Pld => "pld",
    }
}

impl AccountantChoice {
    /// The one accountant asked for; `None` for `best`.
    pub fn accountant(self) -> Option<Accountant> {
        Some(match self {
            AccountantChoice::Best => return None,
            AccountantChoice::Basic => Accountant::Basic,
            AccountantChoice::Advanced => Accountant::Advanced,
            AccountantChoice::Classical => Accountant::Classical,
            AccountantChoice::Zcdp => Accountant::Zcdp,
            AccountantChoice::Rdp => Accountant::Rdp,
            AccountantChoice::Gdp => Accountant::Gdp,
            AccountantChoice::Pld => Accountant::Pld,
        })
    }
}

impl From<Accountant> for AccountantChoice {
    fn from(a: Accountant) -> Self {
        match a {
            Accountant::Basic => AccountantChoice::Basic,
            Accountant::Advanced => AccountantChoice::Advanced,
            Accountant::Classical => AccountantChoice::Classical,
            Accountant::Zcdp => AccountantChoice::Zcdp,
            Accountant::Rdp => AccountantChoice::Rdp,
            Accountant::Gdp => AccountantChoice::Gdp,
            Accountant::Pld => AccountantChoice::Pld,
        }
    }
}

vocabulary! {
    /// Who is protected: the privacy unit.
    UnitKind {
        /// Every row of one user (bounded by the contribution bounds).
        User => "user",
        /// One row.
        Row => "row",
        /// One event (a row of an event log).
        Event => "event",
    }
}

vocabulary! {
    /// Which datasets are neighbours.
    Adjacency {
        /// One unit added or removed (unbounded DP).
        AddRemove => "add_remove",
        /// One unit's data replaced (bounded DP).
        Replace => "replace",
    }
}

vocabulary! {
    /// What the runtime does with a row whose number does not parse.
    InvalidRule {
        /// The row is dropped.
        Drop => "drop",
        /// The value takes the column's public lower bound.
        Clamp => "clamp",
    }
}

vocabulary! {
    /// The type of a declared column.
    ColumnKind {
        /// The unit's identifier.
        Id => "id",
        /// A category with a public domain.
        Category => "category",
        /// An integer.
        Int => "int",
        /// A real number.
        Float => "float",
        /// A UTC timestamp (ISO 8601 or unix seconds).
        Time => "time",
    }
}

vocabulary! {
    /// A query's aggregation, as written.
    AggKind {
        Count => "count",
        Sum => "sum",
        Mean => "mean",
        Histogram => "histogram",
        Quantile => "quantile",
        Quantiles => "quantiles",
        Top => "top",
    }
}

vocabulary! {
    /// One noisy statistic the runtime computes exactly and releases: a
    /// query is one (count, sum, histogram) or two (a mean is a sum and a
    /// count) of them.
    Statistic {
        /// The number of (bounded) rows.
        Count => "count",
        /// The sum of a clamped column.
        Sum => "sum",
        /// One count per group of the public domain.
        GroupedCount => "grouped_count",
        /// One sum per group of the public domain.
        GroupedSum => "grouped_sum",
        /// The number of distinct values of a column (`count(distinct d.c)`).
        DistinctCount => "distinct_count",
        /// The number of units with a kept row in each cell
        /// (`count(distinct d.unit_id by k)`: users per cell, under a
        /// user-level unit).
        GroupedDistinctCount => "grouped_distinct_count",
        /// One quantile of a clamped column, chosen from a public grid by
        /// the exponential mechanism (`quantile`, one per level of
        /// `quantiles`).
        Quantile => "quantile",
        /// One selection of a top-k (`top(d by k, 3)`): the key of the
        /// i-th largest count among the cells not chosen before, by the
        /// exponential mechanism (k selections, one part each).
        TopK => "top_k",
        /// The total of a histogram's cells (`histogram(…) with total`):
        /// the number of rows the histogram keeps.
        CellsTotal => "cells_total",
    }
}

impl Statistic {
    /// The statistics that release an aggregation, in the order the
    /// executable plan lists them (a mean: the sum, then the count);
    /// `None` for a combination that releases nothing (an ungrouped
    /// histogram, a grouped quantile). A quantile's statistic is listed
    /// once; `quantiles` releases one per level.
    pub fn of(kind: AggKind, grouped: bool) -> Option<&'static [Statistic]> {
        use Statistic::*;
        Some(match (kind, grouped) {
            (AggKind::Count, false) => &[Count],
            (AggKind::Sum, false) => &[Sum],
            (AggKind::Mean, false) => &[Sum, Count],
            (AggKind::Count | AggKind::Histogram, true) => &[GroupedCount],
            (AggKind::Sum, true) => &[GroupedSum],
            (AggKind::Mean, true) => &[GroupedSum, GroupedCount],
            (AggKind::Quantile | AggKind::Quantiles, false) => &[Quantile],
            (AggKind::Top, true) => &[TopK],
            (AggKind::Histogram | AggKind::Top, false)
            | (AggKind::Quantile | AggKind::Quantiles, true) => return None,
        })
    }
    /// The statistics of `count(distinct d.c)`: one distinct count.
    pub const DISTINCT: &'static [Statistic] = &[Statistic::DistinctCount];
    /// The statistics of `count(distinct d.unit_id by k)`: one count of
    /// units per cell.
    pub const GROUPED_DISTINCT: &'static [Statistic] = &[Statistic::GroupedDistinctCount];
    /// The statistics of `count(distinct …)`, grouped or not.
    pub fn distinct(grouped: bool) -> &'static [Statistic] {
        match grouped {
            true => Self::GROUPED_DISTINCT,
            false => Self::DISTINCT,
        }
    }
    /// A count (of rows or of distinct values: an integer), as opposed to
    /// a sum of values.
    pub fn is_count(self) -> bool {
        matches!(
            self,
            Statistic::Count
                | Statistic::GroupedCount
                | Statistic::DistinctCount
                | Statistic::GroupedDistinctCount
                | Statistic::CellsTotal
        )
    }
    /// One value per group.
    pub fn is_grouped(self) -> bool {
        matches!(
            self,
            Statistic::GroupedCount | Statistic::GroupedSum | Statistic::GroupedDistinctCount
        )
    }
}

vocabulary! {
    /// A post-processing step on a released value (`postprocess …`): a
    /// function of the released value alone, so it costs nothing.
    PostStep {
        /// max(x, 0): a count or any statistic known to be non-negative.
        Nonnegative => "nonnegative",
        /// The nearest integer (ties to even).
        Round => "round",
        /// A histogram's cells and its total made to add up, by weighted
        /// least squares on the released values (`histogram(…) with
        /// total`): a step over the whole release, not one value
        /// (`dpplan_mechanisms::consistency`).
        Consistent => "consistent",
    }
}

impl PostStep {
    /// The step applied to one value.
    pub fn apply(self, x: f64) -> f64 {
        let y = match self {
            PostStep::Nonnegative => x.max(0.0),
            PostStep::Round => x.round_ties_even(),
            // applied to the release as a whole, before the others
            PostStep::Consistent => x,
        };
        // −0 (from rounding −0.4) reads as 0
        if y == 0.0 {
            0.0
        } else {
            y
        }
    }

    /// The steps applied in order (a released value to a published one).
    pub fn apply_all(steps: &[PostStep], x: f64) -> f64 {
        steps.iter().fold(x, |x, s| s.apply(x))
    }
}

vocabulary! {
    /// How a cumulative count's running totals are released
    /// (`mechanism …`, docs/language.md "Continual counting").
    #[derive(Default)]
    CumulativeMechanism {
        /// The binary tree mechanism with Honaker's estimator (the default).
        #[default]
        Tree => "tree",
        /// The square-root factorization of the prefix-sum matrix
        /// (`dpplan_mechanisms::factorization`), Gaussian noise only.
        Factorization => "factorization",
    }
}

impl CumulativeMechanism {
    /// The default: `tree`.
    pub fn is_tree(&self) -> bool {
        *self == CumulativeMechanism::Tree
    }
}

vocabulary! {
    /// The shape of a release schedule.
    ScheduleKind {
        /// One release.
        Once => "once",
        /// `N times`.
        Times => "times",
        /// `every P for D` or `every P from A until B`.
        Every => "every",
    }
}

vocabulary! {
    /// The comparison of a `publish … when` condition.
    Comparison {
        Lt => "<",
        Le => "<=",
        Gt => ">",
        Ge => ">=",
        Eq => "==",
        Ne => "!=",
    }
}

vocabulary! {
    /// What an `accuracy` requirement bounds, for each value a query
    /// releases: the noise's standard deviation or the half-width of its
    /// central 95 % interval.
    AccuracyMeasure {
        /// The half-width t of the central 95 % interval: P(|noise| ≤ t) ≥ 0.95.
        Ci95 => "ci95",
        /// The noise's standard deviation.
        Std => "std",
    }
}

impl AccuracyMeasure {
    /// In words, for messages: "95 % interval half-width", "standard deviation".
    pub fn title(self) -> &'static str {
        match self {
            AccuracyMeasure::Ci95 => "95 % interval half-width",
            AccuracyMeasure::Std => "standard deviation",
        }
    }
}

macro_rules! display_by_name {
    ($($ty:ident),+) => {
        $(impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        })+
    };
}

display_by_name!(
    NoiseKind,
    AccountantChoice,
    UnitKind,
    Adjacency,
    InvalidRule,
    ColumnKind,
    AggKind,
    Statistic,
    ScheduleKind,
    Comparison,
    AccuracyMeasure
);

/// An accountant displays as its long name ([`Accountant::title`]).
impl fmt::Display for Accountant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.title())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T>()
    where
        T: Vocabulary + fmt::Debug + PartialEq + serde::Serialize + serde::de::DeserializeOwned,
    {
        let mut names = std::collections::BTreeSet::new();
        for &v in T::ALL {
            assert!(names.insert(v.name()), "{} twice", v.name());
            assert_eq!(T::from_name(v.name()), Some(v));
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.name()));
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), v);
        }
        assert_eq!(T::from_name("no_such_name"), None);
        let err = serde_json::from_str::<T>("\"no_such_name\"").unwrap_err();
        assert!(err.to_string().contains("unknown variant"), "{err}");
    }

    #[test]
    fn every_name_round_trips_and_nothing_else_reads() {
        round_trip::<NoiseKind>();
        round_trip::<Accountant>();
        round_trip::<AccountantChoice>();
        round_trip::<UnitKind>();
        round_trip::<Adjacency>();
        round_trip::<InvalidRule>();
        round_trip::<ColumnKind>();
        round_trip::<AggKind>();
        round_trip::<Statistic>();
        round_trip::<ScheduleKind>();
        round_trip::<Comparison>();
        round_trip::<AccuracyMeasure>();
    }

    #[test]
    fn choices_are_the_accountants_and_best() {
        assert_eq!(AccountantChoice::ALL.len(), Accountant::ALL.len() + 1);
        for a in Accountant::ALL {
            let c = AccountantChoice::from(a);
            assert_eq!(c.name(), a.name());
            assert_eq!(c.accountant(), Some(a));
        }
        assert_eq!(AccountantChoice::Best.accountant(), None);
    }

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Part {
        #[serde(with = "or_none")]
        mechanism: Option<NoiseKind>,
    }

    #[test]
    fn or_none_writes_none_and_reads_only_names() {
        for m in [None, Some(NoiseKind::DiscreteGaussian)] {
            let json = serde_json::to_string(&Part { mechanism: m }).unwrap();
            assert_eq!(serde_json::from_str::<Part>(&json).unwrap().mechanism, m);
        }
        assert_eq!(
            serde_json::to_string(&Part { mechanism: None }).unwrap(),
            r#"{"mechanism":"none"}"#
        );
        let err = serde_json::from_str::<Part>(r#"{"mechanism":"cauchy"}"#).unwrap_err();
        assert!(err.to_string().contains("`none`"), "{err}");
    }

    #[test]
    fn post_steps_are_functions_of_the_value() {
        use PostStep::*;
        assert_eq!(Nonnegative.apply(-37.9), 0.0);
        assert_eq!(Nonnegative.apply(12.5), 12.5);
        assert_eq!(Round.apply(2.5), 2.0);
        assert_eq!(Round.apply(3.5), 4.0);
        assert_eq!(Round.apply(-0.4).to_bits(), 0f64.to_bits());
        assert_eq!(PostStep::apply_all(&[Nonnegative, Round], -37.9), 0.0);
        assert_eq!(PostStep::apply_all(&[Nonnegative, Round], 41.6), 42.0);
        assert_eq!(PostStep::apply_all(&[], -1.5), -1.5);
    }

    #[test]
    fn statistics_of_each_aggregation() {
        assert_eq!(
            Statistic::of(AggKind::Mean, false),
            Some(&[Statistic::Sum, Statistic::Count][..])
        );
        assert_eq!(
            Statistic::of(AggKind::Histogram, true),
            Some(&[Statistic::GroupedCount][..])
        );
        assert_eq!(Statistic::of(AggKind::Quantile, true), None);
        assert_eq!(
            Statistic::of(AggKind::Quantiles, false),
            Some(&[Statistic::Quantile][..])
        );
        assert_eq!(Statistic::of(AggKind::Histogram, false), None);
        for k in AggKind::ALL {
            for grouped in [false, true] {
                for s in Statistic::of(k, grouped).unwrap_or(&[]) {
                    // (a top-k's part is one selection over the grouped
                    // counts: one key per part, not a value per group)
                    let want = grouped && *s != Statistic::TopK;
                    assert_eq!(s.is_grouped(), want, "{k} {s}");
                }
            }
        }
        // `count(distinct …)`: one distinct count, grouped or not
        for grouped in [false, true] {
            let [s] = Statistic::distinct(grouped) else {
                panic!("one statistic")
            };
            assert_eq!((s.is_grouped(), s.is_count()), (grouped, true));
        }
        assert_eq!(
            Statistic::GroupedDistinctCount.as_str(),
            "grouped_distinct_count"
        );
    }
}

/// `skip_serializing_if` of an f64 field that is absent when 0 (a
/// mechanism's ℓ∞ sensitivity, not given): one helper for the accounting
/// crate's mechanism and the records made of it (the executable plan's
/// part, the ledger's records).
pub fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Serde for an `Option` of a vocabulary: `None` is the string `"none"`
/// (`#[serde(with = "dpplan_vocab::or_none")]`). The executable plan's
/// mechanism of a public statistic and the accountant of a free release are
/// written so.
pub mod or_none {
    use super::Vocabulary;

    /// The string for `None`.
    pub const NONE: &str = "none";

    pub fn serialize<T: Vocabulary, S: serde::Serializer>(
        v: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        super::option_serialize(v, NONE, s)
    }

    pub fn deserialize<'de, T: Vocabulary, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        super::option_deserialize(d, NONE)
    }
}

/// Serde for an `Option` of a vocabulary: `None` is the empty string
/// (`#[serde(with = "dpplan_vocab::or_empty")]`), as the ledger's running
/// totals write an accountant that produced no bound.
pub mod or_empty {
    use super::Vocabulary;

    pub fn serialize<T: Vocabulary, S: serde::Serializer>(
        v: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        super::option_serialize(v, "", s)
    }

    pub fn deserialize<'de, T: Vocabulary, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        super::option_deserialize(d, "")
    }
}

fn option_serialize<T: Vocabulary, S: serde::Serializer>(
    v: &Option<T>,
    none: &'static str,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(v.map_or(none, Vocabulary::name))
}

fn option_deserialize<'de, T: Vocabulary, D: serde::Deserializer<'de>>(
    d: D,
    none: &str,
) -> Result<Option<T>, D::Error> {
    let name = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
    if name == none {
        return Ok(None);
    }
    T::from_name(&name).map(Some).ok_or_else(|| {
        let expected: Vec<String> = T::ALL
            .iter()
            .map(|v| v.name())
            .chain([none])
            .map(|n| format!("`{n}`"))
            .collect();
        serde::de::Error::custom(format_args!(
            "unknown variant `{name}`, expected one of {}",
            expected.join(", ")
        ))
    })
}
