//! The statistic a query releases, as a typed key with the spans dropped:
//! two queries release the same statistic (DP009) when their aggregations
//! are written alike — the same kind, target, filter, keys and arguments.

use dpplan_syntax::ast::{self, Literal, PredOperand, Predicate};
use dpplan_vocab::{AggKind, Comparison, InvalidRule};

/// An aggregation as written, spans dropped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Statistic<'a> {
    cumulative: bool,
    kind: AggKind,
    distinct: bool,
    target: Target<'a>,
    filter: Option<Filter<'a>>,
    keys: Vec<Key<'a>>,
    /// `keys from data`, with its `threshold τ` (`None`: derived).
    keys_from_data: Option<Option<Num>>,
    /// A quantile's level.
    argument: Option<Num>,
    /// `quantiles`' levels.
    levels: Option<Vec<Num>>,
}

impl<'a> Statistic<'a> {
    pub(super) fn of(agg: &'a ast::Aggregate) -> Self {
        // Every field named: a field added to the AST must be placed in
        // the key (or dropped here on purpose), never left out silently —
        // two queries differing only there would be reported as one.
        let ast::Aggregate {
            span: _,
            kind,
            distinct,
            cumulative,
            target,
            filter,
            keys,
            argument,
            levels,
            keys_from_data,
            // dropped on purpose: `with total` releases the same cells again
            // (and their total besides), a re-release DP009 should see
            with_total: _,
        } = agg;
        Statistic {
            cumulative: cumulative.is_some(),
            kind: kind.value,
            distinct: distinct.is_some(),
            target: Target::of(target),
            filter: filter.as_deref().map(Filter::of),
            keys: keys.iter().map(Key::of).collect(),
            keys_from_data: keys_from_data
                .as_ref()
                .map(|k| k.threshold.as_ref().map(Num::of)),
            argument: argument.as_deref().map(Num::of),
            levels: levels
                .as_ref()
                .map(|l| l.value.iter().map(Num::of).collect()),
        }
    }
}

/// A number by its value (−0 and 0 alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Num(u64);

impl Num {
    fn of(x: &ast::Number) -> Self {
        Num((x.value + 0.0).to_bits())
    }
}

/// `dataset` or `dataset.column`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Target<'a> {
    dataset: &'a str,
    column: Option<&'a str>,
}

impl<'a> Target<'a> {
    fn of(t: &'a ast::Target) -> Self {
        Target {
            dataset: &t.dataset.value,
            column: t.column.as_ref().map(|c| c.value.as_str()),
        }
    }
}

/// A `where` predicate as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Filter<'a> {
    And(Vec<Filter<'a>>),
    Or(Vec<Filter<'a>>),
    Not(Box<Filter<'a>>),
    Compare(Operand<'a>, Comparison, Operand<'a>),
    In(Operand<'a>, Vec<Value<'a>>),
}

impl<'a> Filter<'a> {
    fn of(p: &'a Predicate) -> Self {
        match p {
            Predicate::And { items, .. } => Filter::And(items.iter().map(Filter::of).collect()),
            Predicate::Or { items, .. } => Filter::Or(items.iter().map(Filter::of).collect()),
            Predicate::Not { inner, .. } => Filter::Not(Box::new(Filter::of(inner))),
            Predicate::Compare {
                left, cmp, right, ..
            } => Filter::Compare(Operand::of(left), cmp.value, Operand::of(right)),
            Predicate::In {
                operand, values, ..
            } => Filter::In(Operand::of(operand), values.iter().map(Value::of).collect()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Operand<'a> {
    Column {
        dataset: Option<&'a str>,
        column: &'a str,
    },
    Literal(Value<'a>),
    Data {
        function: Option<&'a str>,
        target: Target<'a>,
    },
}

impl<'a> Operand<'a> {
    fn of(o: &'a PredOperand) -> Self {
        match o {
            PredOperand::Column {
                dataset, column, ..
            } => Operand::Column {
                dataset: dataset.as_ref().map(|d| d.value.as_str()),
                column: &column.value,
            },
            PredOperand::Literal { value } => Operand::Literal(Value::of(value)),
            PredOperand::Data { expr } => Operand::Data {
                function: expr.function.as_ref().map(|f| f.value.as_str()),
                target: Target::of(&expr.target),
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Value<'a> {
    Number(Num),
    Str(&'a str),
}

impl<'a> Value<'a> {
    fn of(l: &'a Literal) -> Self {
        match l {
            Literal::Number { value } => Value::Number(Num::of(value)),
            Literal::Str { value } => Value::Str(&value.value),
        }
    }
}

/// A group key: a column, or `bins(column, [edges] [outside rule])`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key<'a> {
    Column(&'a str),
    Bins {
        column: &'a str,
        edges: Vec<Num>,
        outside: Option<InvalidRule>,
    },
}

impl<'a> Key<'a> {
    fn of(k: &'a ast::GroupKey) -> Self {
        match k {
            ast::GroupKey::Column { name } => Key::Column(&name.value),
            ast::GroupKey::Bins {
                column,
                edges,
                outside,
                ..
            } => Key::Bins {
                column: &column.value,
                edges: edges.iter().map(Num::of).collect(),
                outside: outside.as_ref().map(|o| o.value),
            },
        }
    }
}
