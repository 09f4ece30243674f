//! The privacy block: one unit, adjacency, budget (ε, δ), accountant and
//! population, each declared once and valid (DP007, DP013, DP015).

use dpplan_diagnostics::{Code, Diagnostic, Span};
use dpplan_syntax::ast::{self, AccountantChoice, Adjacency, Unit};
use dpplan_vocab::UnitKind;

use super::{duplicate, valid_positive, Checker};
use crate::report::UnitReport;

#[derive(Clone)]
pub(super) struct Privacy {
    pub(super) unit: Unit,
    pub(super) unit_span: Span,
    pub(super) adjacency: Adjacency,
    pub(super) epsilon: f64,
    pub(super) delta: f64,
    pub(super) budget_span: Span,
    pub(super) accountant: AccountantChoice,
    pub(super) population: Option<f64>,
}

/// The plan's privacy block; `None` when it is missing or any of its
/// required settings is missing or invalid (the plan then has no report).
pub(super) fn resolve_privacy(c: &mut Checker, plan: &ast::Plan) -> Option<Privacy> {
    if plan.privacy.is_empty() {
        if !plan.privacy_broken {
            let span = plan.header_span.unwrap_or_default();
            c.error(
                Diagnostic::new(
                    Code::Missing,
                    "the plan has no `privacy` block",
                    span,
                )
                .label("this plan declares no privacy unit, adjacency or budget")
                .help("add `privacy { unit user by <id> adjacency add_remove budget epsilon 1 delta 1e-6 }`"),
            );
        }
        return None;
    }
    duplicate(c, &plan.privacy, |p| p.keyword, "the `privacy` block");
    let p = &plan.privacy[0];
    duplicate(c, &p.units, |u| u.span, "the privacy unit");
    duplicate(c, &p.adjacencies, |u| u.span, "the adjacency");
    duplicate(c, &p.budgets, |u| u.span, "the budget");
    duplicate(c, &p.accountants, |u| u.span, "the accountant");
    duplicate(c, &p.populations, |u| u.span, "the population");
    let mut ok = true;
    let unit = match p.units.first() {
        Some(u) => Some(u),
        None => {
            c.error(
                Diagnostic::new(
                    Code::Missing,
                    "the privacy block declares no unit",
                    p.keyword,
                )
                .label("who is protected?")
                .help("add `unit user by <id column>` (or `unit row`, `unit event`)"),
            );
            ok = false;
            None
        }
    };
    let adjacency = match p.adjacencies.first() {
        Some(a) => a.value,
        None => {
            c.error(
                Diagnostic::new(
                    Code::Missing,
                    "the privacy block declares no adjacency",
                    p.keyword,
                )
                .label("neighbouring datasets are undefined")
                .help("add `adjacency add_remove` (a unit is added or removed) or `adjacency replace` (a unit's data is replaced)"),
            );
            ok = false;
            Adjacency::AddRemove
        }
    };
    let budget = budget(c, p);
    let population = population(c, p);
    let unit = unit?;
    let (epsilon, delta, budget_span) = budget?;
    if !ok {
        return None;
    }
    Some(Privacy {
        unit: unit.value.clone(),
        unit_span: unit.span,
        adjacency,
        epsilon,
        delta,
        budget_span,
        accountant: p
            .accountants
            .first()
            .map_or(AccountantChoice::Best, |a| a.value),
        population,
    })
}

/// The budget's ε and δ (DP007, DP015); `None` when either is invalid or
/// the budget is missing.
fn budget(c: &mut Checker, p: &ast::Privacy) -> Option<(f64, f64, Span)> {
    let Some(b) = p.budgets.first() else {
        c.error(
            Diagnostic::new(
                Code::Missing,
                "the privacy block declares no budget",
                p.keyword,
            )
            .label("no ceiling for the plan")
            .help("add `budget epsilon <ε> delta <δ>`"),
        );
        return None;
    };
    let mut ok = true;
    let eps = b.epsilon.value;
    if !valid_positive(eps) {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!("the budget's ε must be positive and finite, found {eps}"),
                b.epsilon.span,
            )
            .label("invalid ε")
            .help("write a positive budget such as `budget epsilon 1.0 delta 1e-6`"),
        );
        ok = false;
    }
    // `delta 0` is pure ε-DP, as is no `delta`; δ ≥ 1 promises
    // nothing (every mechanism is (0, 1)-DP).
    let delta = b.delta.as_ref().map_or(0.0, |d| d.value);
    if let Some(d) = &b.delta {
        if !(d.value.is_finite() && d.value >= 0.0 && d.value < 1.0) {
            c.error(
                Diagnostic::new(
                    Code::InvalidParameter,
                    format!("δ must be at least 0 and below 1, found {}", d.value),
                    d.span,
                )
                .label("invalid δ")
                .help("δ bounds the additive slack of (ε, δ)-DP (a δ of 1 promises nothing); choose a value well below 1/population, such as 1e-7, or 0 (or no `delta`) for pure ε-DP"),
            );
            ok = false;
        }
    }
    ok.then_some((eps, delta, b.span))
}

/// The population, when declared and valid (DP007).
fn population(c: &mut Checker, p: &ast::Privacy) -> Option<f64> {
    let n = p.populations.first()?;
    if !n.value.is_finite() || n.value < 1.0 {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!(
                    "the population must be a finite number of at least 1, found {}",
                    n.value
                ),
                n.span,
            )
            .help("give an estimate of the number of protected units, e.g. `population 1000000`"),
        );
        None
    } else {
        Some(n.value)
    }
}

/// Whom the guarantee protects, in words.
pub(super) fn unit_report(unit: &Unit) -> UnitReport {
    match unit {
        Unit::Event => UnitReport {
            kind: UnitKind::Event,
            id: None,
            description: "one event (row); a person with several events is protected only by group privacy".into(),
        },
        Unit::Row => UnitReport {
            kind: UnitKind::Row,
            id: None,
            description: "one row; a person with several rows is protected only by group privacy".into(),
        },
        Unit::User { id } => UnitReport {
            kind: UnitKind::User,
            id: Some(id.value.clone()),
            description: format!("all rows of one user (identified by `{}`), within the declared contribution bounds", id.value),
        },
    }
}
