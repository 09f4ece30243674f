//! A query's noise: whether its kind suits the statistic and the budget
//! (DP007, DP017), and its scale — declared, from a per-release ε, or
//! `auto` (DP003, DP005, DP007).

use dpplan_diagnostics::{Code, Diagnostic};
use dpplan_syntax::ast::{self, NoiseParam};
use dpplan_vocab::Statistic;

use super::query::{Reported, Scale};
use super::target::describe_target;
use super::{valid_positive, Checker};
use dpplan_mechanisms::sensitivity::{fmt_num, Derived};

/// Whether the noise kind suits the statistic and the budget: discrete
/// noise needs integer values and sensitivities, Gaussian noise a δ > 0
/// (DP007, DP017).
pub(super) fn noise_kind(
    c: &mut Checker,
    agg: &ast::Aggregate,
    noise: &ast::Noise,
    float_values: bool,
    parts_derived: &[(Statistic, &'static str, Derived)],
    budget_delta: Option<f64>,
) -> bool {
    let mut ok = true;
    let nk = noise.kind.value;
    // Discrete noise needs integer-valued statistics.
    if nk.is_discrete() && float_values {
        c.error(
            Diagnostic::new(
                Code::TypeMismatch,
                format!(
                    "{} noise needs integer values, but `{}` is a float column",
                    nk.as_str(),
                    describe_target(&agg.target)
                ),
                noise.kind.span,
            )
            .help("declare the column `int`, or use `laplace` or `gaussian` noise"),
        );
        ok = false;
    }
    if nk.is_discrete() {
        for (_, _, d) in parts_derived {
            if d.l1.fract() != 0.0 {
                c.error(
                    Diagnostic::new(
                        Code::TypeMismatch,
                        format!(
                            "{} noise needs an integer sensitivity, but L1 = {}",
                            nk.as_str(),
                            fmt_num(d.l1)
                        ),
                        noise.kind.span,
                    )
                    .help("use integer clamp bounds, or continuous noise"),
                );
                ok = false;
                break;
            }
        }
    }
    if nk.is_gaussian() && budget_delta == Some(0.0) {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!(
                    "{} noise needs δ > 0, but the budget is pure ε-DP (δ = 0)",
                    nk.as_str()
                ),
                noise.kind.span,
            )
            .help("add `delta …` to the budget, or use Laplace noise"),
        );
        ok = false;
    }
    ok
}

/// How the noise is set: a declared scale or σ, a per-release ε shared by
/// the parts, or `auto` (DP007, DP015).
pub(super) fn noise_scale(
    c: &mut Checker,
    noise: &ast::Noise,
    n_parts: usize,
) -> Result<Scale, Reported> {
    let n_parts = n_parts.max(1) as f64;
    match &noise.param {
        NoiseParam::Scale { value } | NoiseParam::Sigma { value } => {
            let is_sigma = matches!(noise.param, NoiseParam::Sigma { .. });
            declared_scale(c, noise, value, is_sigma)
        }
        NoiseParam::Epsilon { epsilon, delta } => {
            epsilon_scale(c, noise, epsilon, delta.as_ref(), n_parts)
        }
        NoiseParam::Auto { weight, .. } => auto_scale(c, noise, weight.as_ref()),
    }
}

/// `noise <kind> scale <b>` or `sigma <σ>`.
fn declared_scale(
    c: &mut Checker,
    noise: &ast::Noise,
    value: &ast::Number,
    is_sigma: bool,
) -> Result<Scale, Reported> {
    let nk = noise.kind.value;
    if is_sigma != nk.is_gaussian() {
        let (want, got) = if nk.is_gaussian() {
            ("sigma", "scale")
        } else {
            ("scale", "sigma")
        };
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!("{} noise takes `{want}`, not `{got}`", nk.as_str()),
                noise.span,
            )
            .help(format!(
                "write `noise {} {want} {}`",
                nk.as_str(),
                fmt_num(value.value)
            )),
        );
        Err(Reported)
    } else if !valid_positive(value.value) {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!(
                    "the noise {} must be positive and finite, found {}",
                    if is_sigma { "σ" } else { "scale" },
                    value.value
                ),
                value.span,
            )
            .help("a zero or negative noise scale publishes the exact value"),
        );
        Err(Reported)
    } else {
        Ok(Scale::Fixed(value.value))
    }
}

/// `noise <kind> epsilon <ε> [delta <δ>]`, shared equally by the parts.
fn epsilon_scale(
    c: &mut Checker,
    noise: &ast::Noise,
    epsilon: &ast::Number,
    delta: Option<&ast::Number>,
    n_parts: f64,
) -> Result<Scale, Reported> {
    let nk = noise.kind.value;
    let mut good = true;
    if !valid_positive(epsilon.value) {
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!("ε must be positive and finite, found {}", epsilon.value),
                epsilon.span,
            )
            .help("give the per-release ε, e.g. `noise laplace epsilon 0.1`"),
        );
        good = false;
    }
    match (nk.is_gaussian(), delta) {
        (true, None) => {
            c.error(
                Diagnostic::new(
                    Code::Missing,
                    "Gaussian noise given by ε also needs a per-release δ",
                    epsilon.span,
                )
                .help(format!(
                    "write `noise {} epsilon {} delta 1e-7`",
                    nk.as_str(),
                    fmt_num(epsilon.value)
                )),
            );
            good = false;
        }
        (true, Some(d)) if !(d.value.is_finite() && d.value > 0.0 && d.value < 1.0) => {
            c.error(
                Diagnostic::new(
                    Code::InvalidParameter,
                    format!("δ must lie strictly between 0 and 1, found {}", d.value),
                    d.span,
                )
                .help("choose a per-release δ such as 1e-7"),
            );
            good = false;
        }
        (false, Some(d)) => {
            c.error(
                Diagnostic::new(
                    Code::InvalidParameter,
                    format!("{} noise is pure ε-DP: it takes no δ", nk.as_str()),
                    d.span,
                )
                .help("remove `delta …`"),
            );
            good = false;
        }
        _ => {}
    }
    if good {
        Ok(Scale::FromEpsilon {
            epsilon: epsilon.value / n_parts,
            delta: delta.map(|d| d.value / n_parts),
        })
    } else {
        Err(Reported)
    }
}

/// `noise <kind> auto [weight <w>]`.
fn auto_scale(
    c: &mut Checker,
    noise: &ast::Noise,
    weight: Option<&ast::Number>,
) -> Result<Scale, Reported> {
    let w = weight.map_or(1.0, |w| w.value);
    if !valid_positive(w) {
        let span = weight.map_or(noise.span, |w| w.span);
        c.error(
            Diagnostic::new(
                Code::InvalidParameter,
                format!("a weight must be positive and finite, found {w}"),
                span,
            )
            .help("weights share the budget between `auto` queries: `weight 2` gets twice the share of `weight 1`"),
        );
        Err(Reported)
    } else {
        Ok(Scale::Auto { weight: w })
    }
}
