//! The typed AST. Every node carries the byte span it was parsed from.
//! Values are kept as written (numbers as `f64` with their source span,
//! private-data expressions as [`DataExpr`]) so that the checker, not the
//! parser, decides what is valid and says why.

use dpplan_diagnostics::Span;
use serde::Serialize;

/// The closed sets of names, shared with every later layer.
pub use dpplan_vocab::{
    AccountantChoice, AccuracyMeasure, Adjacency, AggKind, Comparison, InvalidRule, NoiseKind,
};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Span) -> Self {
        Spanned { value, span }
    }
}

pub type Ident = Spanned<String>;
pub type Number = Spanned<f64>;

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Plan {
    /// `None` when the header is missing or broken.
    pub name: Option<Spanned<String>>,
    pub header_span: Option<Span>,
    pub privacy: Vec<Privacy>,
    pub datasets: Vec<Dataset>,
    pub queries: Vec<Query>,
    pub publishes: Vec<Publish>,
    /// Spans of items that did not parse, and of every other syntax error
    /// (text outside any item, an unmatched brace, a second or missing
    /// header); their errors are in the parse result. Not empty means no
    /// guarantee can be claimed.
    pub broken: Vec<Span>,
    /// A `privacy` block was written but did not parse.
    pub privacy_broken: bool,
    /// The names of the items that did not parse but whose keyword and
    /// name could still be read (`dataset visits { …typo… }`): they are
    /// declared, only broken, so the checker does not call a reference to
    /// them undefined (one typo, one error).
    pub broken_names: Vec<BrokenName>,
}

/// A broken item's kind and name ([`Plan::broken_names`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BrokenName {
    pub kind: crate::ItemKind,
    pub name: Ident,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Privacy {
    pub span: Span,
    pub keyword: Span,
    pub units: Vec<Spanned<Unit>>,
    pub adjacencies: Vec<Spanned<Adjacency>>,
    pub budgets: Vec<Budget>,
    pub accountants: Vec<Spanned<AccountantChoice>>,
    pub populations: Vec<Number>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Unit {
    Event,
    Row,
    User { id: Ident },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    pub span: Span,
    pub epsilon: Number,
    pub delta: Option<Number>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dataset {
    pub span: Span,
    pub name: Ident,
    pub sources: Vec<Spanned<String>>,
    pub columns: Vec<Column>,
    pub contributions: Vec<Contribution>,
    pub invalid_rows: Vec<Spanned<InvalidRule>>,
    /// `sample units …` statements (the checker takes one).
    pub samples: Vec<Sample>,
}

/// `sample units 1%`: Poisson sampling of the dataset's units.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sample {
    pub span: Span,
    /// the number as written
    pub rate: Number,
    /// written with `%`: the rate is the number / 100
    pub percent: bool,
}

impl Sample {
    /// The sampling rate q the statement declares.
    pub fn q(&self) -> f64 {
        if self.percent {
            self.rate.value / 100.0
        } else {
            self.rate.value
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    pub span: Span,
    pub name: Ident,
    pub ty: Spanned<ColumnType>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ColumnType {
    Id,
    Category {
        domain: Option<Domain>,
    },
    Int {
        bounds: Option<Bounds>,
    },
    Float {
        bounds: Option<Bounds>,
    },
    /// A UTC timestamp: the column a `window` reads.
    Time,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Domain {
    /// A public list of values.
    List { values: Vec<Spanned<String>> },
    /// A domain read from the data: rejected by the checker.
    FromData { expr: DataExpr },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bounds {
    pub span: Span,
    pub lo: Bound,
    pub hi: Bound,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Bound {
    Public { value: Number },
    FromData { expr: DataExpr },
}

/// An expression over private data (`max(visits.seconds)`, `visits.seconds`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataExpr {
    pub span: Span,
    /// The function name when it is a call.
    pub function: Option<Ident>,
    pub target: Target,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contribution {
    pub span: Span,
    pub rows_per_unit: Vec<Number>,
    pub groups_per_unit: Vec<Number>,
    pub rows_per_group: Vec<Number>,
    /// `windows_per_unit W`: the windows of a windowed query one unit may
    /// appear in over the whole schedule.
    pub windows_per_unit: Vec<Number>,
    /// `rows_per_window R`: the rows of one unit in one window.
    pub rows_per_window: Vec<Number>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Query {
    pub span: Span,
    pub name: Ident,
    pub aggregates: Vec<Aggregate>,
    pub noises: Vec<Noise>,
    pub schedules: Vec<Spanned<Schedule>>,
    /// The statements few queries have (read through [`Query::windows`]
    /// and the like); serialized as fields of the query.
    #[serde(flatten)]
    pub extras: Extras,
}

/// The statements few queries have, boxed together: `None` for a query
/// of an aggregate, a noise and a schedule only. Seven empty lists inline
/// were 168 bytes of every query; at 10⁵ queries, 16 MB of `dpplan
/// check`'s peak (issue 34 item 5).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extras(pub Option<Box<QueryExtras>>);

/// A query's rarer statements ([`Extras`]).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct QueryExtras {
    pub sensitivities: Vec<DeclaredSensitivity>,
    /// `accuracy ci95 <= t` / `accuracy std <= s`.
    pub accuracies: Vec<Accuracy>,
    /// `window <duration>`: each release reads only its own slot's rows.
    pub windows: Vec<Window>,
    /// `release after <duration>`: a windowed query's or a cumulative
    /// count's slot is released this long after its window closes.
    pub release_after: Vec<ReleaseAfter>,
    /// `candidates [c1, …]` / `candidates every <step>`: a quantile's grid.
    pub candidates: Vec<Candidates>,
    /// `postprocess nonnegative, round`: steps on the released values.
    pub postprocess: Vec<Postprocess>,
    /// `mechanism tree|factorization`: a cumulative count's mechanism.
    pub mechanisms: Vec<Spanned<CumulativeMechanism>>,
}

/// The extras of a query that has none.
static NO_EXTRAS: QueryExtras = QueryExtras {
    sensitivities: Vec::new(),
    accuracies: Vec::new(),
    windows: Vec::new(),
    release_after: Vec::new(),
    candidates: Vec::new(),
    postprocess: Vec::new(),
    mechanisms: Vec::new(),
};

impl Extras {
    /// The statements, empty lists when there are none.
    pub fn get(&self) -> &QueryExtras {
        self.0.as_deref().unwrap_or(&NO_EXTRAS)
    }

    /// The statements, to add one (boxed at the first).
    pub fn get_mut(&mut self) -> &mut QueryExtras {
        self.0.get_or_insert_with(Box::default)
    }
}

impl Serialize for Extras {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(s)
    }
}

impl Query {
    /// `sensitivity l1 …` statements.
    pub fn sensitivities(&self) -> &[DeclaredSensitivity] {
        &self.extras.get().sensitivities
    }
    /// `accuracy …` statements.
    pub fn accuracies(&self) -> &[Accuracy] {
        &self.extras.get().accuracies
    }
    /// `window …` statements.
    pub fn windows(&self) -> &[Window] {
        &self.extras.get().windows
    }
    /// `release after …` statements.
    pub fn release_after(&self) -> &[ReleaseAfter] {
        &self.extras.get().release_after
    }
    /// `candidates …` statements.
    pub fn candidates(&self) -> &[Candidates] {
        &self.extras.get().candidates
    }
    /// `postprocess …` statements.
    pub fn postprocess(&self) -> &[Postprocess] {
        &self.extras.get().postprocess
    }
    /// `mechanism …` statements.
    pub fn mechanisms(&self) -> &[Spanned<CumulativeMechanism>] {
        &self.extras.get().mechanisms
    }
}

/// `postprocess step, step, …`: what is done to each released value after
/// its noise, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Postprocess {
    pub span: Span,
    pub steps: Vec<Spanned<PostStep>>,
}

pub use dpplan_vocab::{CumulativeMechanism, PostStep};

/// `window <duration>`: tumbling windows aligned with the schedule's slots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Window {
    pub span: Span,
    pub length: Duration,
}

/// `release after <duration>`: the delay after a window's close at which
/// its slot is released.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReleaseAfter {
    pub span: Span,
    pub delay: Duration,
}

/// `candidates [c1, c2, …]` or `candidates every <step>`: the public grid a
/// quantile is chosen from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidates {
    pub span: Span,
    pub grid: CandidateGrid,
}

/// A quantile's candidate grid as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CandidateGrid {
    /// `[c1, c2, …]`: the candidates themselves.
    List { values: Vec<Number> },
    /// `every <step>`: lo, lo + step, … up to the column's upper bound.
    Every { step: Number },
}

/// `accuracy <measure> <= <value>`: the most noise each released value may
/// carry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accuracy {
    pub span: Span,
    pub measure: Spanned<AccuracyMeasure>,
    pub value: Number,
}

/// `dataset` or `dataset.column`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    pub span: Span,
    pub dataset: Ident,
    pub column: Option<Ident>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Aggregate {
    pub span: Span,
    pub kind: Spanned<AggKind>,
    /// `count(distinct d.col)`: the span of `distinct`.
    pub distinct: Option<Span>,
    /// `cumulative count(d)`: the span of `cumulative` (running totals by
    /// the tree mechanism).
    pub cumulative: Option<Span>,
    pub target: Target,
    /// `where <predicate>`: only the rows it holds for are aggregated.
    pub filter: Option<Box<Predicate>>,
    /// `by k1, k2, …`: the group keys, in order (empty: not grouped).
    pub keys: Vec<GroupKey>,
    /// The extra argument (the quantile's level). This and the two fields
    /// below are boxed: few queries have them, and at 10⁵ queries each
    /// inline byte is 0.1 MB of `dpplan check`'s peak memory.
    pub argument: Option<Box<Number>>,
    /// `quantiles(d.col, [q1, q2, …])`: the levels, with the list's span.
    pub levels: Option<Box<Spanned<Vec<Number>>>>,
    /// `by k keys from data [threshold …]`: the keys seen in the data,
    /// released only above a threshold (partition selection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys_from_data: Option<Box<KeysFromData>>,
    /// `… ) with total`: the histogram's total is released too (a flag, not
    /// a span: the aggregation's span locates it, and an inline span would
    /// cost 24 bytes per query).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub with_total: bool,
}

/// `keys from data [threshold auto | threshold τ]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeysFromData {
    pub span: Span,
    /// `threshold τ` as written; `None`: `threshold auto` or no threshold
    /// clause (the same: τ derived from a share of the budget's δ).
    pub threshold: Option<Number>,
}

/// One key of `by`: a category column, or a numeric column cut into public
/// bins.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GroupKey {
    Column {
        name: Ident,
    },
    /// `bins(col, [e0, e1, …] [outside drop|clamp])`.
    Bins {
        span: Span,
        column: Ident,
        edges: Vec<Number>,
        /// What happens to a value outside [e0, e_last]; `None`: the
        /// default (`drop`).
        outside: Option<Spanned<InvalidRule>>,
    },
}

impl GroupKey {
    /// The column the key reads.
    pub fn column(&self) -> &Ident {
        match self {
            GroupKey::Column { name } => name,
            GroupKey::Bins { column, .. } => column,
        }
    }
    pub fn span(&self) -> Span {
        match self {
            GroupKey::Column { name } => name.span,
            GroupKey::Bins { span, .. } => *span,
        }
    }
}

/// A row predicate of `where`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Predicate {
    /// Every item holds (two or more items).
    And {
        span: Span,
        items: Vec<Predicate>,
    },
    /// Some item holds (two or more items).
    Or {
        span: Span,
        items: Vec<Predicate>,
    },
    Not {
        span: Span,
        inner: Box<Predicate>,
    },
    /// `<left> <cmp> <right>`.
    Compare {
        span: Span,
        left: PredOperand,
        cmp: Spanned<Comparison>,
        right: PredOperand,
    },
    /// `<operand> in { v1, v2, … }`.
    In {
        span: Span,
        operand: PredOperand,
        values: Vec<Literal>,
    },
}

impl Predicate {
    pub fn span(&self) -> Span {
        match self {
            Predicate::And { span, .. }
            | Predicate::Or { span, .. }
            | Predicate::Not { span, .. }
            | Predicate::Compare { span, .. }
            | Predicate::In { span, .. } => *span,
        }
    }
}

/// An operand of a comparison, as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PredOperand {
    /// `col` or `dataset.col`.
    Column {
        span: Span,
        dataset: Option<Ident>,
        column: Ident,
    },
    Literal {
        value: Literal,
    },
    /// A value computed from private data: rejected (DP006).
    Data {
        expr: DataExpr,
    },
}

impl PredOperand {
    pub fn span(&self) -> Span {
        match self {
            PredOperand::Column { span, .. } => *span,
            PredOperand::Literal { value } => value.span(),
            PredOperand::Data { expr } => expr.span,
        }
    }
}

/// A literal of a predicate.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Literal {
    Number { value: Number },
    Str { value: Spanned<String> },
}

impl Literal {
    pub fn span(&self) -> Span {
        match self {
            Literal::Number { value } => value.span,
            Literal::Str { value } => value.span,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Noise {
    pub span: Span,
    pub kind: Spanned<NoiseKind>,
    pub param: NoiseParam,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NoiseParam {
    /// `scale b` (Laplace kinds).
    Scale { value: Number },
    /// `sigma s` (Gaussian kinds).
    Sigma { value: Number },
    /// `epsilon e [delta d]`: the scale is derived from the sensitivity.
    Epsilon {
        epsilon: Number,
        delta: Option<Number>,
    },
    /// `auto [weight w]`: calibrated so that the plan fits its budget.
    Auto { span: Span, weight: Option<Number> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Norm {
    L1,
    L2,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeclaredSensitivity {
    pub span: Span,
    pub items: Vec<(Spanned<Norm>, Number)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeUnit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
}

impl TimeUnit {
    pub fn seconds(self) -> f64 {
        match self {
            TimeUnit::Second => 1.0,
            TimeUnit::Minute => 60.0,
            TimeUnit::Hour => 3600.0,
            TimeUnit::Day => 86_400.0,
            TimeUnit::Week => 604_800.0,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Second => "second",
            TimeUnit::Minute => "minute",
            TimeUnit::Hour => "hour",
            TimeUnit::Day => "day",
            TimeUnit::Week => "week",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Duration {
    pub span: Span,
    pub amount: Number,
    pub unit: TimeUnit,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    Once,
    Times {
        count: Number,
    },
    EveryFor {
        every: Duration,
        window: Duration,
    },
    EveryRange {
        every: Duration,
        from: Spanned<String>,
        until: Spanned<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Publish {
    pub span: Span,
    pub name: Ident,
    pub source: Ident,
    pub condition: Option<Condition>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Condition {
    pub span: Span,
    pub operand: Operand,
    pub cmp: Spanned<Comparison>,
    pub value: Number,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Operand {
    /// A released value (a query or publish name): post-processing.
    Released { name: Ident },
    /// Private data: not allowed.
    Data { expr: DataExpr },
}
