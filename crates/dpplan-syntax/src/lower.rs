//! Lowers pest pairs into the typed AST. The grammar guarantees the shape of
//! every pair reached here, but the lowering still never panics: a missing
//! child only drops the statement it belongs to.

use dpplan_diagnostics::Span;
use pest::iterators::{Pair, Pairs};

use crate::ast::*;
use crate::{ItemKind, Rule};

struct Ctx {
    base: usize,
}

impl Ctx {
    fn span(&self, p: &Pair<Rule>) -> Span {
        let s = p.as_span();
        Span::new(self.base + s.start(), self.base + s.end())
    }
    fn ident(&self, p: &Pair<Rule>) -> Ident {
        Spanned::new(p.as_str().to_string(), self.span(p))
    }
    fn number(&self, p: &Pair<Rule>) -> Number {
        Spanned::new(parse_number(p.as_str()), self.span(p))
    }
    fn string(&self, p: &Pair<Rule>) -> Spanned<String> {
        let inner = p
            .clone()
            .into_inner()
            .next()
            .map(|i| i.as_str())
            .unwrap_or("");
        Spanned::new(unescape(inner), self.span(p))
    }
}

/// Parses a number literal as written; `NaN`, `inf` and overflowing literals
/// become NaN/±∞ for the checker to reject.
pub fn parse_number(s: &str) -> f64 {
    let cleaned: String = s.chars().filter(|&c| c != '_').collect();
    let lower = cleaned.to_ascii_lowercase();
    let (sign, body) = match lower.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, lower.strip_prefix('+').unwrap_or(&lower)),
    };
    match body {
        "nan" => f64::NAN,
        "inf" | "infinity" => sign * f64::INFINITY,
        _ => body.parse::<f64>().map(|v| sign * v).unwrap_or(f64::NAN),
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn children<'i>(p: Pair<'i, Rule>) -> impl Iterator<Item = Pair<'i, Rule>> {
    p.into_inner()
}

fn first<'i>(p: &Pair<'i, Rule>, rule: Rule) -> Option<Pair<'i, Rule>> {
    p.clone().into_inner().find(|c| c.as_rule() == rule)
}

/// The first child of each of N rules, found in one pass over a pair's
/// children (what N calls of [`first`] find, each a pass of its own).
struct FirstOf<'i, const N: usize> {
    rules: [Rule; N],
    found: [Option<Pair<'i, Rule>>; N],
}

impl<'i, const N: usize> FirstOf<'i, N> {
    fn new(rules: [Rule; N]) -> Self {
        FirstOf {
            rules,
            found: std::array::from_fn(|_| None),
        }
    }

    fn scan(&mut self, p: &Pair<'i, Rule>) {
        for c in p.clone().into_inner() {
            let rule = c.as_rule();
            if let Some(i) = self.rules.iter().position(|&r| r == rule) {
                if self.found[i].is_none() {
                    self.found[i] = Some(c);
                }
            }
        }
    }
}

fn all<'i>(p: &Pair<'i, Rule>, rule: Rule) -> Vec<Pair<'i, Rule>> {
    p.clone()
        .into_inner()
        .filter(|c| c.as_rule() == rule)
        .collect()
}

pub(crate) fn lower_item(plan: &mut Plan, kind: ItemKind, mut pairs: Pairs<Rule>, base: usize) {
    let cx = Ctx { base };
    let Some(pair) = pairs.next() else { return };
    match kind {
        ItemKind::Header => {
            plan.header_span = Some(cx.span(&pair));
            plan.name = first(&pair, Rule::string).map(|s| cx.string(&s));
        }
        ItemKind::Privacy => plan.privacy.push(privacy(&cx, pair)),
        ItemKind::Dataset => {
            if let Some(d) = dataset(&cx, pair) {
                plan.datasets.push(d)
            }
        }
        ItemKind::Query => lower_query(plan, pair, base),
        ItemKind::Publish => {
            if let Some(p) = publish(&cx, pair) {
                plan.publishes.push(p)
            }
        }
        ItemKind::Unknown => {}
    }
}

/// One query's pair lowered into `plan` (`base`: the offset of the text
/// it was parsed from, its item's or its run of queries').
pub(crate) fn lower_query(plan: &mut Plan, pair: Pair<Rule>, base: usize) {
    if let Some(q) = query(&Ctx { base }, pair) {
        plan.queries.push(q)
    }
}

fn privacy(cx: &Ctx, pair: Pair<Rule>) -> Privacy {
    let mut out = Privacy {
        span: cx.span(&pair),
        keyword: first(&pair, Rule::kw_privacy)
            .map(|k| cx.span(&k))
            .unwrap_or_default(),
        units: vec![],
        adjacencies: vec![],
        budgets: vec![],
        accountants: vec![],
        populations: vec![],
    };
    for stmt in children(pair) {
        let span = cx.span(&stmt);
        match stmt.as_rule() {
            Rule::unit_stmt => {
                let unit = if let Some(u) = first(&stmt, Rule::unit_user) {
                    first(&u, Rule::ident).map(|id| Unit::User { id: cx.ident(&id) })
                } else if first(&stmt, Rule::unit_event).is_some() {
                    Some(Unit::Event)
                } else if first(&stmt, Rule::unit_row).is_some() {
                    Some(Unit::Row)
                } else {
                    None
                };
                if let Some(unit) = unit {
                    out.units.push(Spanned::new(unit, span));
                }
            }
            Rule::adjacency_stmt => {
                if let Some(a) = first(&stmt, Rule::adjacency) {
                    let adj = if a.as_str() == "replace" {
                        Adjacency::Replace
                    } else {
                        Adjacency::AddRemove
                    };
                    out.adjacencies.push(Spanned::new(adj, cx.span(&a)));
                }
            }
            Rule::budget_stmt => {
                let numbers = all(&stmt, Rule::number);
                if let Some(eps) = numbers.first() {
                    out.budgets.push(Budget {
                        span,
                        epsilon: cx.number(eps),
                        delta: numbers.get(1).map(|d| cx.number(d)),
                    });
                }
            }
            Rule::accountant_stmt => {
                if let Some(a) = first(&stmt, Rule::accountant) {
                    // The grammar admits exactly the vocabulary's names.
                    let Some(choice) = AccountantChoice::from_name(a.as_str()) else {
                        continue;
                    };
                    out.accountants.push(Spanned::new(choice, cx.span(&a)));
                }
            }
            Rule::population_stmt => {
                if let Some(n) = first(&stmt, Rule::number) {
                    out.populations.push(cx.number(&n));
                }
            }
            _ => {}
        }
    }
    out
}

fn data_expr(cx: &Ctx, pair: Pair<Rule>) -> Option<DataExpr> {
    // pair is data_expr, data_call or path
    let span = cx.span(&pair);
    match pair.as_rule() {
        Rule::data_expr => pair.into_inner().next().and_then(|p| data_expr(cx, p)),
        Rule::data_call => {
            let mut inner = pair.clone().into_inner();
            let function = inner.next().map(|f| cx.ident(&f));
            let target = inner.next().and_then(|t| target(cx, t))?;
            Some(DataExpr {
                span,
                function,
                target,
            })
        }
        Rule::path => Some(DataExpr {
            span,
            function: None,
            target: target(cx, pair)?,
        }),
        _ => None,
    }
}

fn target(cx: &Ctx, pair: Pair<Rule>) -> Option<Target> {
    let span = cx.span(&pair);
    match pair.as_rule() {
        Rule::agg_target => pair.into_inner().next().and_then(|p| target(cx, p)),
        Rule::path => {
            let mut idents = pair.into_inner();
            let dataset = cx.ident(&idents.next()?);
            let column = idents.next().map(|c| cx.ident(&c));
            Some(Target {
                span,
                dataset,
                column,
            })
        }
        Rule::ident => Some(Target {
            span,
            dataset: cx.ident(&pair),
            column: None,
        }),
        _ => None,
    }
}

fn dataset(cx: &Ctx, pair: Pair<Rule>) -> Option<Dataset> {
    let mut out = Dataset {
        span: cx.span(&pair),
        name: cx.ident(&first(&pair, Rule::ident)?),
        sources: vec![],
        columns: vec![],
        contributions: vec![],
        invalid_rows: vec![],
        samples: vec![],
    };
    for stmt in children(pair) {
        let span = cx.span(&stmt);
        match stmt.as_rule() {
            Rule::source_stmt => {
                if let Some(s) = first(&stmt, Rule::string) {
                    out.sources.push(cx.string(&s));
                }
            }
            Rule::column_stmt => out.columns.extend(column(cx, &stmt, span)),
            Rule::contribution => out.contributions.push(contribution(cx, &stmt, span)),
            Rule::invalid_stmt => {
                if let Some(r) = first(&stmt, Rule::invalid_rule) {
                    let rule = if r.as_str() == "clamp" {
                        InvalidRule::Clamp
                    } else {
                        InvalidRule::Drop
                    };
                    out.invalid_rows.push(Spanned::new(rule, span));
                }
            }
            Rule::sample_stmt => {
                if let Some(n) = first(&stmt, Rule::number) {
                    out.samples.push(Sample {
                        span,
                        rate: cx.number(&n),
                        percent: first(&stmt, Rule::percent).is_some(),
                    });
                }
            }
            _ => {}
        }
    }
    Some(out)
}

/// `column <name> : <type>`; `None` when a part did not parse.
fn column(cx: &Ctx, stmt: &Pair<Rule>, span: Span) -> Option<Column> {
    let name = first(stmt, Rule::ident)?;
    let ty_pair = stmt.clone().into_inner().find(|c| {
        matches!(
            c.as_rule(),
            Rule::type_id
                | Rule::type_category
                | Rule::type_int
                | Rule::type_float
                | Rule::type_time
        )
    })?;
    let ty = match ty_pair.as_rule() {
        Rule::type_id => ColumnType::Id,
        Rule::type_category => ColumnType::Category {
            domain: domain(cx, &ty_pair),
        },
        Rule::type_time => ColumnType::Time,
        Rule::type_int => ColumnType::Int {
            bounds: bounds(cx, &ty_pair),
        },
        _ => ColumnType::Float {
            bounds: bounds(cx, &ty_pair),
        },
    };
    Some(Column {
        span,
        name: cx.ident(&name),
        ty: Spanned::new(ty, cx.span(&ty_pair)),
    })
}

/// A category's `{ "a", "b", … }` or `from <data expression>`.
fn domain(cx: &Ctx, ty: &Pair<Rule>) -> Option<Domain> {
    if let Some(list) = first(ty, Rule::domain_list) {
        return Some(Domain::List {
            values: all(&list, Rule::string)
                .iter()
                .map(|s| cx.string(s))
                .collect(),
        });
    }
    let e = first(ty, Rule::domain_expr)?;
    first(&e, Rule::data_expr)
        .and_then(|d| data_expr(cx, d))
        .map(|expr| Domain::FromData { expr })
}

/// A number column's `in [lo, hi]` (public numbers or data expressions).
fn bounds(cx: &Ctx, ty: &Pair<Rule>) -> Option<Bounds> {
    let b = first(ty, Rule::bounds)?;
    let mut bs = all(&b, Rule::bound).into_iter().map(|bp| {
        let inner = bp.into_inner().next()?;
        Some(match inner.as_rule() {
            Rule::number => Bound::Public {
                value: cx.number(&inner),
            },
            _ => Bound::FromData {
                expr: data_expr(cx, inner)?,
            },
        })
    });
    let lo = bs.next()??;
    let hi = bs.next()??;
    Some(Bounds {
        span: cx.span(&b),
        lo,
        hi,
    })
}

/// `contribution { rows_per_unit <n> … }`, each key's values in order.
fn contribution(cx: &Ctx, stmt: &Pair<Rule>, span: Span) -> Contribution {
    let mut c = Contribution {
        span,
        rows_per_unit: vec![],
        groups_per_unit: vec![],
        rows_per_group: vec![],
        windows_per_unit: vec![],
        rows_per_window: vec![],
    };
    for item in all(stmt, Rule::contribution_stmt) {
        let (Some(key), Some(n)) = (
            first(&item, Rule::contribution_key),
            first(&item, Rule::number),
        ) else {
            continue;
        };
        let value = Spanned::new(parse_number(n.as_str()), cx.span(&item));
        match key.as_str() {
            "rows_per_unit" => c.rows_per_unit.push(value),
            "groups_per_unit" => c.groups_per_unit.push(value),
            "windows_per_unit" => c.windows_per_unit.push(value),
            "rows_per_window" => c.rows_per_window.push(value),
            _ => c.rows_per_group.push(value),
        }
    }
    c
}

fn duration(cx: &Ctx, pair: &Pair<Rule>) -> Option<Duration> {
    let amount = cx.number(&first(pair, Rule::number)?);
    let unit = match first(pair, Rule::time_unit)?.as_str().trim_end_matches('s') {
        "second" => TimeUnit::Second,
        "minute" => TimeUnit::Minute,
        "hour" => TimeUnit::Hour,
        "day" => TimeUnit::Day,
        _ => TimeUnit::Week,
    };
    Some(Duration {
        span: cx.span(pair),
        amount,
        unit,
    })
}

fn query(cx: &Ctx, pair: Pair<Rule>) -> Option<Query> {
    let mut out = Query {
        span: cx.span(&pair),
        name: cx.ident(&first(&pair, Rule::ident)?),
        aggregates: vec![],
        noises: vec![],
        schedules: vec![],
        extras: Extras::default(),
    };
    for stmt in children(pair) {
        let span = cx.span(&stmt);
        match stmt.as_rule() {
            Rule::aggregate => out.aggregates.extend(aggregate(cx, &stmt, span, None)),
            Rule::cumulative_aggregate => {
                let cumulative = first(&stmt, Rule::agg_cumulative).map(|c| cx.span(&c));
                if let Some(inner) = first(&stmt, Rule::aggregate) {
                    out.aggregates
                        .extend(aggregate(cx, &inner, span, cumulative));
                }
            }
            Rule::noise_stmt => out.noises.extend(noise(cx, &stmt, span)),
            Rule::sensitivity_stmt => out
                .extras
                .get_mut()
                .sensitivities
                .push(declared_sensitivity(cx, &stmt, span)),
            Rule::schedule_stmt => {
                if let Some(sched) = schedule(cx, &stmt) {
                    out.schedules.push(Spanned::new(sched, span));
                }
            }
            Rule::window_stmt => {
                if let Some(length) = first(&stmt, Rule::duration).and_then(|d| duration(cx, &d)) {
                    out.extras.get_mut().windows.push(Window { span, length });
                }
            }
            Rule::release_stmt => {
                if let Some(delay) = first(&stmt, Rule::duration).and_then(|d| duration(cx, &d)) {
                    out.extras
                        .get_mut()
                        .release_after
                        .push(ReleaseAfter { span, delay });
                }
            }
            Rule::candidates_stmt => {
                if let Some(c) = candidates(cx, &stmt, span) {
                    out.extras.get_mut().candidates.push(c);
                }
            }
            Rule::postprocess_stmt => {
                let steps = stmt
                    .clone()
                    .into_inner()
                    .filter(|p| p.as_rule() == Rule::postprocess_step)
                    .filter_map(|p| {
                        let step = PostStep::from_name(p.as_str())?;
                        Some(Spanned::new(step, cx.span(&p)))
                    })
                    .collect();
                out.extras
                    .get_mut()
                    .postprocess
                    .push(Postprocess { span, steps });
            }
            Rule::mechanism_stmt => {
                if let Some(kind) = stmt
                    .clone()
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::mechanism_kind)
                    .and_then(|p| CumulativeMechanism::from_name(p.as_str()))
                {
                    out.extras
                        .get_mut()
                        .mechanisms
                        .push(Spanned::new(kind, span));
                }
            }
            Rule::accuracy_stmt => {
                if let Some(a) = accuracy(cx, &stmt, span) {
                    out.extras.get_mut().accuracies.push(a);
                }
            }
            _ => {}
        }
    }
    // A statement kind usually appears once: without this, each list keeps
    // the capacity of 4 of its first push (1.8 KB per query in all).
    out.aggregates.shrink_to_fit();
    out.noises.shrink_to_fit();
    out.schedules.shrink_to_fit();
    if let Some(x) = &mut out.extras.0 {
        x.sensitivities.shrink_to_fit();
        x.accuracies.shrink_to_fit();
        x.windows.shrink_to_fit();
        x.release_after.shrink_to_fit();
    }
    Some(out)
}

/// `noise <kind> (scale | sigma | epsilon | auto) …`; `None` when a part
/// did not parse (the parser reported it).
fn noise(cx: &Ctx, stmt: &Pair<Rule>, span: Span) -> Option<Noise> {
    let mut of = FirstOf::<5>::new([
        Rule::noise_kind,
        Rule::noise_scale,
        Rule::noise_sigma,
        Rule::noise_epsilon,
        Rule::noise_auto,
    ]);
    of.scan(stmt);
    let [kind, scale, sigma, epsilon, auto] = of.found;
    let k = kind?;
    let kind = NoiseKind::from_name(k.as_str())?;
    let param = if let Some(p) = scale {
        NoiseParam::Scale {
            value: cx.number(&first(&p, Rule::number)?),
        }
    } else if let Some(p) = sigma {
        NoiseParam::Sigma {
            value: cx.number(&first(&p, Rule::number)?),
        }
    } else if let Some(p) = epsilon {
        let nums = all(&p, Rule::number);
        NoiseParam::Epsilon {
            epsilon: cx.number(nums.first()?),
            delta: nums.get(1).map(|d| cx.number(d)),
        }
    } else if let Some(p) = auto {
        NoiseParam::Auto {
            span: cx.span(&p),
            weight: first(&p, Rule::number).map(|n| cx.number(&n)),
        }
    } else {
        return None;
    };
    Some(Noise {
        span,
        kind: Spanned::new(kind, cx.span(&k)),
        param,
    })
}

/// `sensitivity l1 <x> [l2 <y>]`.
fn declared_sensitivity(cx: &Ctx, stmt: &Pair<Rule>, span: Span) -> DeclaredSensitivity {
    let items = all(stmt, Rule::sensitivity_item)
        .into_iter()
        .filter_map(|it| {
            let n = first(&it, Rule::norm)?;
            let v = first(&it, Rule::number)?;
            let norm = if n.as_str() == "l2" {
                Norm::L2
            } else {
                Norm::L1
            };
            Some((Spanned::new(norm, cx.span(&n)), cx.number(&v)))
        })
        .collect();
    DeclaredSensitivity { span, items }
}

/// `schedule once | <n> times | every <d> (for <d> | from … until …)`.
fn schedule(cx: &Ctx, stmt: &Pair<Rule>) -> Option<Schedule> {
    if first(stmt, Rule::sched_once).is_some() {
        return Some(Schedule::Once);
    }
    if let Some(t) = first(stmt, Rule::sched_times) {
        return Some(Schedule::Times {
            count: cx.number(&first(&t, Rule::number)?),
        });
    }
    let e = first(stmt, Rule::sched_every)?;
    let every = duration(cx, &first(&e, Rule::duration)?)?;
    if let Some(f) = first(&e, Rule::sched_for) {
        return Some(Schedule::EveryFor {
            every,
            window: duration(cx, &first(&f, Rule::duration)?)?,
        });
    }
    let r = first(&e, Rule::sched_range)?;
    let dates = all(&r, Rule::date);
    let d = |p: &Pair<Rule>| Spanned::new(p.as_str().to_string(), cx.span(p));
    Some(Schedule::EveryRange {
        every,
        from: d(dates.first()?),
        until: d(dates.get(1)?),
    })
}

/// `candidates [c1, c2, …] | candidates every <step>`.
fn candidates(cx: &Ctx, stmt: &Pair<Rule>, span: Span) -> Option<Candidates> {
    let grid = if let Some(l) = first(stmt, Rule::candidate_list) {
        CandidateGrid::List {
            values: all(&l, Rule::number).iter().map(|n| cx.number(n)).collect(),
        }
    } else {
        let e = first(stmt, Rule::candidate_step)?;
        CandidateGrid::Every {
            step: cx.number(&first(&e, Rule::number)?),
        }
    };
    Some(Candidates { span, grid })
}

/// `accuracy <measure> <= <x>`.
fn accuracy(cx: &Ctx, stmt: &Pair<Rule>, span: Span) -> Option<Accuracy> {
    let m = first(stmt, Rule::accuracy_measure)?;
    // The grammar admits exactly the vocabulary's names.
    let measure = AccuracyMeasure::from_name(m.as_str())?;
    let n = first(stmt, Rule::number)?;
    Some(Accuracy {
        span,
        measure: Spanned::new(measure, cx.span(&m)),
        value: cx.number(&n),
    })
}

/// The keys of `by k1, k2, …`.
fn group_keys(cx: &Ctx, pair: Pair<Rule>) -> Vec<GroupKey> {
    children(pair)
        .filter_map(|k| match k.as_rule() {
            Rule::ident => Some(GroupKey::Column { name: cx.ident(&k) }),
            Rule::bins_key => Some(GroupKey::Bins {
                span: cx.span(&k),
                column: cx.ident(&first(&k, Rule::ident)?),
                edges: all(&k, Rule::number).iter().map(|n| cx.number(n)).collect(),
                outside: first(&k, Rule::bins_outside)
                    .and_then(|o| first(&o, Rule::invalid_rule))
                    .and_then(|r| {
                        Some(Spanned::new(
                            InvalidRule::from_name(r.as_str())?,
                            cx.span(&r),
                        ))
                    }),
            }),
            _ => None,
        })
        .collect()
}

/// A predicate (`pred_or`, `pred_and`, `pred_not` or an atom); a level with
/// one item is that item.
fn predicate(cx: &Ctx, pair: Pair<Rule>) -> Option<Predicate> {
    let span = cx.span(&pair);
    match pair.as_rule() {
        Rule::pred_or | Rule::pred_and => {
            let or = pair.as_rule() == Rule::pred_or;
            let mut items: Vec<Predicate> = children(pair)
                .filter(|c| !matches!(c.as_rule(), Rule::kw_or | Rule::kw_and))
                .map(|c| predicate(cx, c))
                .collect::<Option<_>>()?;
            if items.len() == 1 {
                return items.pop();
            }
            Some(if or {
                Predicate::Or { span, items }
            } else {
                Predicate::And { span, items }
            })
        }
        Rule::pred_not => {
            let mut inner = pair.into_inner();
            let head = inner.next()?;
            if head.as_rule() == Rule::kw_not {
                let rest = predicate(cx, inner.next()?)?;
                Some(Predicate::Not {
                    span,
                    inner: Box::new(rest),
                })
            } else {
                predicate(cx, head)
            }
        }
        Rule::pred_group => predicate(cx, first(&pair, Rule::pred_or)?),
        Rule::pred_cmp => {
            let ops = all(&pair, Rule::pred_operand);
            Some(Predicate::Compare {
                span,
                left: pred_operand(cx, ops.first()?.clone())?,
                cmp: first(&pair, Rule::cmp).and_then(|p| {
                    Some(Spanned::new(
                        Comparison::from_name(p.as_str())?,
                        cx.span(&p),
                    ))
                })?,
                right: pred_operand(cx, ops.get(1)?.clone())?,
            })
        }
        Rule::pred_in => Some(Predicate::In {
            span,
            operand: pred_operand(cx, first(&pair, Rule::pred_operand)?)?,
            values: all(&pair, Rule::pred_literal)
                .into_iter()
                .map(|l| literal(cx, l))
                .collect::<Option<_>>()?,
        }),
        _ => None,
    }
}

fn pred_operand(cx: &Ctx, pair: Pair<Rule>) -> Option<PredOperand> {
    let inner = pair.into_inner().next()?;
    match inner.as_rule() {
        Rule::data_call => Some(PredOperand::Data {
            expr: data_expr(cx, inner)?,
        }),
        Rule::pred_literal => Some(PredOperand::Literal {
            value: literal(cx, inner)?,
        }),
        Rule::path | Rule::ident => {
            let t = target(cx, inner)?;
            Some(match t.column {
                Some(column) => PredOperand::Column {
                    span: t.span,
                    dataset: Some(t.dataset),
                    column,
                },
                None => PredOperand::Column {
                    span: t.span,
                    dataset: None,
                    column: t.dataset,
                },
            })
        }
        _ => None,
    }
}

fn literal(cx: &Ctx, pair: Pair<Rule>) -> Option<Literal> {
    let inner = pair.into_inner().next()?;
    match inner.as_rule() {
        Rule::string => Some(Literal::Str {
            value: cx.string(&inner),
        }),
        Rule::number => Some(Literal::Number {
            value: cx.number(&inner),
        }),
        _ => None,
    }
}

fn publish(cx: &Ctx, pair: Pair<Rule>) -> Option<Publish> {
    let idents = all(&pair, Rule::ident);
    let condition = first(&pair, Rule::publish_cond).and_then(|c| {
        let op = first(&c, Rule::operand)?.into_inner().next()?;
        let operand = match op.as_rule() {
            Rule::ident => Operand::Released {
                name: cx.ident(&op),
            },
            _ => Operand::Data {
                expr: data_expr(cx, op)?,
            },
        };
        Some(Condition {
            span: cx.span(&c),
            operand,
            cmp: first(&c, Rule::cmp).and_then(|p| {
                Some(Spanned::new(
                    Comparison::from_name(p.as_str())?,
                    cx.span(&p),
                ))
            })?,
            value: cx.number(&first(&c, Rule::number)?),
        })
    });
    Some(Publish {
        span: cx.span(&pair),
        name: cx.ident(idents.first()?),
        source: cx.ident(idents.get(1)?),
        condition,
    })
}

/// One aggregation (`cumulative` when `cumulative` is its keyword's span).
fn aggregate(
    cx: &Ctx,
    stmt: &Pair<Rule>,
    span: Span,
    cumulative: Option<Span>,
) -> Option<Aggregate> {
    // the first child of each rule, in one pass over the children (an
    // aggregation has up to nine kinds of them)
    let mut of = FirstOf::<9>::new([
        Rule::agg_kind,
        Rule::agg_target,
        Rule::agg_distinct,
        Rule::filter,
        Rule::group_keys,
        Rule::number,
        Rule::level_list,
        Rule::keys_from_data,
        Rule::with_total,
    ]);
    of.scan(stmt);
    let [kind, target_pair, distinct, filter, keys, number, levels, keys_from_data, with_total] =
        of.found;
    let k = kind?;
    let kind = AggKind::from_name(k.as_str())?;
    let t = target_pair.and_then(|t| target(cx, t))?;
    Some(Aggregate {
        span,
        kind: Spanned::new(kind, cx.span(&k)),
        distinct: distinct.map(|d| cx.span(&d)),
        cumulative,
        target: t,
        filter: filter
            .and_then(|f| f.into_inner().find(|c| c.as_rule() == Rule::pred_or))
            .and_then(|p| predicate(cx, p))
            .map(Box::new),
        keys: keys.map(|g| group_keys(cx, g)).unwrap_or_default(),
        argument: number.map(|n| Box::new(cx.number(&n))),
        levels: levels.map(|l| {
            let values = all(&l, Rule::number).iter().map(|n| cx.number(n)).collect();
            Box::new(Spanned::new(values, cx.span(&l)))
        }),
        keys_from_data: keys_from_data.map(|k| {
            Box::new(KeysFromData {
                span: cx.span(&k),
                threshold: first(&k, Rule::threshold_clause)
                    .and_then(|t| first(&t, Rule::number))
                    .map(|n| cx.number(&n)),
            })
        }),
        with_total: with_total.is_some(),
    })
}
