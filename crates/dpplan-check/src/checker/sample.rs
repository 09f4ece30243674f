//! `sample units 1%`: Poisson sampling of a dataset's units. Every release
//! that reads the dataset runs on a fresh sample (each unit kept with
//! probability q, independently, by the runtime's secure random source)
//! and the accountants compose the amplified mechanism
//! (dpplan-accounting's `sampled.rs`, docs/accounting.md).
//!
//! What is refused, each with its reason (DP014 unless said):
//! * a rate outside (0, 1] (DP007);
//! * replace neighbours: amplification is accounted for add/remove
//!   neighbours only (dp_accounting's Poisson sampling has the same
//!   relation);
//! * a row- or event-level unit: the engine samples the units of a
//!   user-level unit (all of a unit's rows kept or dropped together);
//! * a query whose parts share one run of the data — a mean (its sum and
//!   count), quantiles, a top-k, a histogram with its total, keys from the
//!   data (counts and thresholds) — or whose noise spans slots (a window,
//!   a cumulative count): one sample shared by several parts is one
//!   sampled mechanism of their composition, which is not the product of
//!   sampled parts the accountants compose;
//! * a distinct count of an id column other than the unit's.

use super::datasets::DatasetInfo;
use super::privacy::Privacy;
use super::Checker;
use dpplan_diagnostics::{Code, Diagnostic, Span};
use dpplan_mechanisms::sensitivity::fmt_num;
use dpplan_syntax::ast;
use dpplan_syntax::ast::{Adjacency, AggKind, Unit};

/// The dataset's sampling rate q, when its one `sample units` statement is
/// valid for the plan's unit and adjacency; its errors reported.
pub(super) fn rate(c: &mut Checker, ds: &ast::Dataset, privacy: Option<&Privacy>) -> Option<f64> {
    super::duplicate(c, &ds.samples, |s| s.span, "the dataset's sampling");
    let s = ds.samples.first()?;
    let q = s.q();
    if !(q.is_finite() && q > 0.0 && q <= 1.0) {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!(
                    "a sampling rate must lie in (0, 1] (0 % to 100 %), found {}",
                    if s.percent {
                        format!("{} %", s.rate.value)
                    } else {
                        s.rate.value.to_string()
                    }
                ),
                s.rate.span,
            )
            .help("write a share of the units, e.g. `sample units 1%` or `sample units 0.01`"),
        );
        return None;
    }
    let privacy = privacy?;
    let refused = if privacy.adjacency != Adjacency::AddRemove {
        Some((
            "the plan's neighbours replace a unit: sampling amplification is accounted for add/remove neighbours only",
            "use `adjacency add_remove`, or drop `sample units` (dp_accounting's Poisson sampling has the same restriction)",
        ))
    } else if !matches!(privacy.unit, Unit::User { .. }) {
        Some((
            "the privacy unit is a row or an event: the engine samples the units of a user-level unit only (all of a unit's rows kept or dropped together)",
            "declare `unit user by <id column>`, or drop `sample units`",
        ))
    } else {
        None
    };
    if let Some((why, help)) = refused {
        c.error(
            Diagnostic::new(
                Code::Unsupported,
                format!("dataset `{}` samples its units, but {why}", ds.name.value),
                s.span,
            )
            .secondary(privacy.unit_span, "the privacy unit")
            .help(help),
        );
        return None;
    }
    if q == 1.0 {
        return None;
    }
    Some(q)
}

/// Whether query `q` may read its sampled dataset; DP014 on the construct
/// that may not.
pub(super) fn query_supported(
    c: &mut Checker,
    q: &ast::Query,
    agg: &ast::Aggregate,
    info: &DatasetInfo,
) -> bool {
    let Some(rate) = info.sample else {
        return true;
    };
    let kind = agg.kind.value;
    let why: Option<(&str, Span)> = if !q.windows().is_empty() {
        Some((
            "a windowed query keeps noise and units across slots",
            q.windows()[0].span,
        ))
    } else if agg.cumulative.is_some() {
        Some(("a cumulative count's tree noise spans slots", agg.kind.span))
    } else if agg.keys_from_data.is_some() {
        Some((
            "keys from the data release counts and pass thresholds on one run of the data",
            agg.kind.span,
        ))
    } else if kind == AggKind::Mean {
        Some((
            "a mean releases a sum and a count of one run of the data",
            agg.kind.span,
        ))
    } else if super::quantile::is_quantile(kind) || super::top::is_top(kind) {
        Some(("its selections read one run of the data", agg.kind.span))
    } else if agg.with_total {
        Some((
            "a histogram and its total are released from one run of the data",
            agg.kind.span,
        ))
    } else if let (Some(_), Some(unit)) = (agg.distinct, info.unit_id.as_deref()) {
        (agg.target.column.as_ref().map(|c| c.value.as_str()) != Some(unit)).then_some((
            "a distinct count of an id column other than the unit's is not one unit's change",
            agg.target.span,
        ))
    } else {
        None
    };
    let Some((why, span)) = why else {
        return true;
    };
    c.error(
        Diagnostic::new(
            Code::Unsupported,
            format!(
                "`{}` reads `{}`, which samples {} of its units: {why}, and one sample shared by several parts is one sampled mechanism of their composition, which the accountants do not compose yet",
                q.name.value,
                info.ds.name.value,
                percent(rate)
            ),
            span,
        )
        .help("sampling runs counts, sums, histograms over public keys, distinct units and users per cell; read an unsampled dataset for this query"),
    );
    false
}

/// q as a percentage, e.g. `1 %`.
pub(crate) fn percent(q: f64) -> String {
    format!("{} %", fmt_num(q * 100.0))
}
