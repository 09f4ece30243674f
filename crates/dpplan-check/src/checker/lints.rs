//! Checks across items: names defined twice and publish references
//! (DP006, DP007, DP012, DP013) and fresh re-releases (DP009).

use std::collections::HashMap;

use dpplan_diagnostics::{Code, Severity, Span};
use dpplan_syntax::ast;

use super::query::{QueryPlan, Scale};
use super::{data_dependent, Build, Checker};
use crate::sensitivity::fmt_num;

/// Names defined twice across queries and publishes, and publish sources.
pub(super) fn check_names(c: &mut Checker, plan: &ast::Plan) {
    let mut seen: HashMap<&str, Span> = HashMap::new();
    let defined = plan
        .queries
        .iter()
        .map(|q| &q.name)
        .chain(plan.publishes.iter().map(|p| &p.name));
    for name in defined {
        if let Some(first) = seen.get(name.value.as_str()) {
            c.error(
                Code::Duplicate,
                name.span,
                format!("`{}` is defined twice", name.value),
            )
            .with_secondary(*first, "first defined here")
            .with_help("give every query and publish a unique name");
        } else {
            seen.insert(&name.value, name.span);
        }
    }
    for p in &plan.publishes {
        if !seen.contains_key(p.source.value.as_str()) {
            c.error(
                Code::Undefined,
                p.source.span,
                format!("there is no query or publish named `{}`", p.source.value),
            )
            .with_label("undefined release")
            .with_help("re-publish an existing query: `publish copy = <query name>`");
        } else if p.source.value == p.name.value {
            c.error(
                Code::Undefined,
                p.source.span,
                format!("`{}` re-publishes itself", p.name.value),
            )
            .with_help("name the query whose released value is re-published");
        }
    }
}

pub(super) fn check_publishes(c: &mut Checker, plan: &ast::Plan) {
    let released: Vec<&str> = plan
        .queries
        .iter()
        .map(|q| q.name.value.as_str())
        .chain(plan.publishes.iter().map(|p| p.name.value.as_str()))
        .collect();
    for p in &plan.publishes {
        let Some(cond) = &p.condition else { continue };
        if !cond.value.value.is_finite() {
            c.error(
                Code::InvalidParameter,
                cond.value.span,
                format!("the threshold must be finite, found {}", cond.value.value),
            )
            .with_help("compare against a finite public number");
        }
        match &cond.operand {
            ast::Operand::Data { expr } => {
                data_dependent(
                    c,
                    expr.span,
                    "this publish condition",
                    "decide on a released value instead (`when <query> > 100` is post-processing and free), or release the condition's statistic with noise first",
                );
            }
            ast::Operand::Released { name } => {
                if !released.contains(&name.value.as_str()) {
                    c.error(
                        Code::Undefined,
                        name.span,
                        format!("there is no released value `{}`", name.value),
                    )
                    .with_help("a condition may read any released query or publish by name");
                }
            }
        }
    }
}

/// DP009: fresh noise where re-publication would do.
pub(super) fn check_rereleases(c: &mut Checker, queries: &[QueryPlan]) {
    let mut seen: HashMap<String, &QueryPlan> = HashMap::new();
    for q in queries {
        if let Some(s) = q.q.schedules.first() {
            if let ast::Schedule::Times { .. } = s.value {
                if q.releases > 1 {
                    let sd = q
                        .parts
                        .first()
                        .and_then(|p| match p.scale {
                            Scale::Fixed(x) => Some(crate::noise::spread(p.kind, x).0),
                            _ => None,
                        })
                        .map(|sd| {
                            format!(
                                " (σ = {} per release, σ/√{} = {} for the average)",
                                fmt_num(sd),
                                q.releases,
                                fmt_num(sd / (q.releases as f64).sqrt())
                            )
                        })
                        .unwrap_or_default();
                    let d = c
                        .error(
                            Code::FreshRerelease,
                            s.span,
                            format!(
                                "`{}` is released {} times with fresh noise on the same data: averaging r fresh answers cuts the noise's variance to σ²/r{sd} but costs r releases",
                                q.q.name.value, q.releases
                            ),
                        )
                        .with_help("to show the same value again, release it once and re-publish it with `publish copy = <query>` (post-processing, free); to buy accuracy, lower the noise of one release instead");
                    d.severity = Severity::Hint;
                }
            }
        }
        let key = q.aggregation.clone();
        if let Some(first) = seen.get(&key) {
            let d = c
                .error(
                    Code::FreshRerelease,
                    q.q.name.span,
                    format!(
                        "`{}` releases `{}` again with fresh noise, like `{}`: every fresh answer is a new access to the data and is charged",
                        q.q.name.value, q.aggregation, first.q.name.value
                    ),
                )
                .with_secondary(first.q.name.span, "the same statistic is released here")
                .with_help(format!(
                    "re-publish the released value with `publish {} = {}` (free), or keep both on purpose: averaging r fresh answers cuts the noise's variance to σ²/r but costs r releases",
                    q.q.name.value, first.q.name.value
                ));
            d.severity = Severity::Hint;
        } else {
            seen.insert(key, q);
        }
    }
}
