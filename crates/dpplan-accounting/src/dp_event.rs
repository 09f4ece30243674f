//! dp_accounting's `DpEvent`, the accounting language of the ecosystem
//! (Google's dp_accounting; asked for by OpenDP and Qrlew users): a tree of
//! mechanisms and their compositions that any accountant can compose.
//!
//! The JSON form is dp_accounting's own `to_named_tuple()`, each named
//! tuple written as an object (`_asdict()`, recursively): `module_name`
//! (`dp_accounting.dp_event`), `class_name` and the event's fields, e.g.
//! `{"module_name": "dp_accounting.dp_event", "class_name":
//! "GaussianDpEvent", "noise_multiplier": 2.0}`; `from_named_tuple` reads
//! it back.
//!
//! [`event_of`] says which event stands for one of dpplan's accounted
//! mechanisms, and how faithfully ([`Fidelity`]): dp_accounting normalises
//! every mechanism to a shift of 1 (a Gaussian's `noise_multiplier` is
//! σ/Δ₂, a Laplace's b/Δ₁), and has no event for a vector of pure-ε noise
//! (the worst shift over several coordinates is not one coordinate's),
//! for the exponential mechanism or for the discrete Gaussian; those are
//! written as the zCDP they satisfy ([`DpEvent::Zcdp`], sound: an upper
//! bound, which only RDP accountants read). [`import`] goes the other way
//! for the events dpplan accounts exactly, and names the rest.

use serde_json::{json, Map, Value};

use crate::{effective, AccountingError, Eff, Mechanism, NoiseKind, Release, Sensitivity};

/// The Python module of dp_accounting's events.
pub const MODULE: &str = "dp_accounting.dp_event";

/// One event of a DpEvent tree (the classes dpplan writes or reads).
#[derive(Debug, Clone, PartialEq)]
pub enum DpEvent {
    /// `NoOpDpEvent`: no privacy loss.
    NoOp,
    /// `NonPrivateDpEvent`: unbounded privacy loss.
    NonPrivate,
    /// `GaussianDpEvent`: σ/Δ₂.
    Gaussian { noise_multiplier: f64 },
    /// `LaplaceDpEvent`: b/Δ₁.
    Laplace { noise_multiplier: f64 },
    /// `DiscreteLaplaceDpEvent`: P(k) ∝ e^{−a|k|} (a = 1/b), an integer
    /// sensitivity.
    DiscreteLaplace {
        noise_parameter: f64,
        sensitivity: u64,
    },
    /// `ZCDpEvent`: (ξ + ρα)-RDP at every order α.
    Zcdp { rho: f64, xi: f64 },
    /// `SelfComposedDpEvent`.
    SelfComposed { event: Box<DpEvent>, count: u64 },
    /// `ComposedDpEvent`.
    Composed { events: Vec<DpEvent> },
    /// `PoissonSampledDpEvent`: the event run on a Poisson sample, each
    /// unit kept with `sampling_probability`.
    PoissonSampled {
        sampling_probability: f64,
        event: Box<DpEvent>,
    },
    /// Any other class (sampling, trees, randomized response, …), kept as
    /// read: dpplan does not account it.
    Other { class_name: String, value: Value },
}

impl DpEvent {
    /// The event's `class_name`.
    pub fn class_name(&self) -> &str {
        match self {
            DpEvent::NoOp => "NoOpDpEvent",
            DpEvent::NonPrivate => "NonPrivateDpEvent",
            DpEvent::Gaussian { .. } => "GaussianDpEvent",
            DpEvent::Laplace { .. } => "LaplaceDpEvent",
            DpEvent::DiscreteLaplace { .. } => "DiscreteLaplaceDpEvent",
            DpEvent::Zcdp { .. } => "ZCDpEvent",
            DpEvent::SelfComposed { .. } => "SelfComposedDpEvent",
            DpEvent::Composed { .. } => "ComposedDpEvent",
            DpEvent::PoissonSampled { .. } => "PoissonSampledDpEvent",
            DpEvent::Other { class_name, .. } => class_name,
        }
    }

    /// The named-tuple JSON of the event.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("module_name".into(), json!(MODULE));
        m.insert("class_name".into(), json!(self.class_name()));
        match self {
            DpEvent::NoOp | DpEvent::NonPrivate => {}
            DpEvent::Gaussian { noise_multiplier } | DpEvent::Laplace { noise_multiplier } => {
                m.insert("noise_multiplier".into(), json!(noise_multiplier));
            }
            DpEvent::DiscreteLaplace {
                noise_parameter,
                sensitivity,
            } => {
                m.insert("noise_parameter".into(), json!(noise_parameter));
                m.insert("sensitivity".into(), json!(sensitivity));
            }
            DpEvent::Zcdp { rho, xi } => {
                m.insert("rho".into(), json!(rho));
                m.insert("xi".into(), json!(xi));
            }
            DpEvent::SelfComposed { event, count } => {
                m.insert("event".into(), event.to_json());
                m.insert("count".into(), json!(count));
            }
            DpEvent::PoissonSampled {
                sampling_probability,
                event,
            } => {
                m.insert("sampling_probability".into(), json!(sampling_probability));
                m.insert("event".into(), event.to_json());
            }
            DpEvent::Composed { events } => {
                m.insert(
                    "events".into(),
                    Value::Array(events.iter().map(DpEvent::to_json).collect()),
                );
            }
            DpEvent::Other { value, .. } => return value.clone(),
        }
        Value::Object(m)
    }

    /// Reads an event's named-tuple JSON; an error names where (`events[2].event`)
    /// and what is wrong. A class dpplan does not know is kept as
    /// [`DpEvent::Other`].
    pub fn from_json(v: &Value) -> Result<DpEvent, String> {
        from_json_at(v, "the event")
    }
}

fn from_json_at(v: &Value, at: &str) -> Result<DpEvent, String> {
    let obj = v.as_object().ok_or_else(|| {
        format!("{at} is not an object with `class_name` (a DpEvent's named tuple)")
    })?;
    let class = obj
        .get("class_name")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{at} has no `class_name`"))?;
    if let Some(module) = obj.get("module_name").and_then(Value::as_str) {
        if !module.starts_with("dp_accounting") {
            return Ok(DpEvent::Other {
                class_name: format!("{module}.{class}"),
                value: v.clone(),
            });
        }
    }
    let num = |field: &str| -> Result<f64, String> {
        obj.get(field)
            .and_then(Value::as_f64)
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("{at} ({class}) has no finite number `{field}`"))
    };
    let count = |field: &str| -> Result<u64, String> {
        let x = obj
            .get(field)
            .ok_or_else(|| format!("{at} ({class}) has no `{field}`"))?;
        x.as_u64()
            .or_else(|| {
                x.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 2f64.powi(63))
                    .map(|f| f as u64)
            })
            .ok_or_else(|| format!("{at} ({class}): `{field}` is not a non-negative integer"))
    };
    Ok(match class {
        "NoOpDpEvent" => DpEvent::NoOp,
        "NonPrivateDpEvent" => DpEvent::NonPrivate,
        "GaussianDpEvent" => DpEvent::Gaussian {
            noise_multiplier: num("noise_multiplier")?,
        },
        "LaplaceDpEvent" => DpEvent::Laplace {
            noise_multiplier: num("noise_multiplier")?,
        },
        "DiscreteLaplaceDpEvent" => DpEvent::DiscreteLaplace {
            noise_parameter: num("noise_parameter")?,
            sensitivity: count("sensitivity")?,
        },
        "ZCDpEvent" => DpEvent::Zcdp {
            rho: num("rho")?,
            xi: if obj.contains_key("xi") {
                num("xi")?
            } else {
                0.0
            },
        },
        "SelfComposedDpEvent" => DpEvent::SelfComposed {
            event: Box::new(from_json_at(
                obj.get("event")
                    .ok_or_else(|| format!("{at} ({class}) has no `event`"))?,
                &format!("{at}.event"),
            )?),
            count: count("count")?,
        },
        "PoissonSampledDpEvent" => DpEvent::PoissonSampled {
            sampling_probability: num("sampling_probability")?,
            event: Box::new(from_json_at(
                obj.get("event")
                    .ok_or_else(|| format!("{at} ({class}) has no `event`"))?,
                &format!("{at}.event"),
            )?),
        },
        "ComposedDpEvent" => {
            let events = obj
                .get("events")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{at} ({class}) has no list `events`"))?;
            DpEvent::Composed {
                events: events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| from_json_at(e, &format!("{at}.events[{i}]")))
                    .collect::<Result<_, _>>()?,
            }
        }
        other => DpEvent::Other {
            class_name: other.to_string(),
            value: v.clone(),
        },
    })
}

/// How an exported event stands for dpplan's accounting of a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    /// The event's privacy-loss distribution is the one dpplan composes.
    Exact,
    /// An upper bound: composing the event gives an ε at least dpplan's.
    Sound,
}

/// The event that stands for one release of `m` (normalised to a shift of
/// 1, every parameter rounded towards more privacy loss), how faithfully,
/// and why.
pub fn event_of(m: &Mechanism) -> Result<(DpEvent, Fidelity, &'static str), AccountingError> {
    let Some(eff) = effective(m)? else {
        return Ok((
            DpEvent::NoOp,
            Fidelity::Exact,
            "no privacy loss (a zero sensitivity)",
        ));
    };
    let zcdp = |rho: f64| DpEvent::Zcdp { rho, xi: 0.0 };
    Ok(match eff {
        // σ/Δ₂ = 1/μ, rounded down (less noise: more loss)
        Eff::Gauss { mu } => (
            DpEvent::Gaussian {
                noise_multiplier: (1.0 / mu).next_down(),
            },
            Fidelity::Exact,
            "a Gaussian's loss depends only on Δ₂/σ, over any number of coordinates",
        ),
        Eff::Laplace {
            eps, scalar: true, ..
        } => (
            DpEvent::Laplace {
                noise_multiplier: (1.0 / eps).next_down(),
            },
            Fidelity::Exact,
            "one coordinate of Laplace noise",
        ),
        Eff::DLaplace { eps, .. }
            if m.sensitivity.coords == 1 && integral(&m.sensitivity).is_some() =>
        {
            let d = integral(&m.sensitivity).unwrap_or(1);
            (
                DpEvent::DiscreteLaplace {
                    // a = ε/Δ, rounded up (less noise: more loss)
                    noise_parameter: (eps / d as f64).next_up(),
                    sensitivity: d,
                },
                Fidelity::Exact,
                "one coordinate of discrete Laplace noise, an integer sensitivity",
            )
        }
        e @ (Eff::Laplace { .. } | Eff::DLaplace { .. } | Eff::Exp { .. } | Eff::Pure { .. }) => (
            zcdp(crate::accountants::eff_rho(&e)),
            Fidelity::Sound,
            match m.kind {
                NoiseKind::Exponential => {
                    "the exponential mechanism: dp_accounting has no event for it; written as the zCDP it satisfies (min(ε·tanh(ε/2), ε²/8)), which only RDP accountants read"
                }
                NoiseKind::PermuteAndFlip => {
                    "permute-and-flip: dp_accounting has no event for it; written as the zCDP any ε-DP mechanism satisfies (ε·tanh(ε/2), Steinke 2024), which only RDP accountants read"
                }
                _ => {
                    "pure-ε noise over several coordinates: dp_accounting has no event for it (its worst shift is not one coordinate's); written as the zCDP it satisfies (ε·tanh(ε/2), Steinke 2024), which only RDP accountants read"
                }
            },
        ),
        // `effective` of a mechanism alone is never sampled
        Eff::SGauss { .. } | Eff::SPure { .. } => {
            return Err(AccountingError::InvalidParameter(
                "a sampled mechanism has no event of its own".into(),
            ))
        }
        e @ Eff::DGauss { .. } => (
            zcdp(crate::accountants::eff_rho(&e)),
            Fidelity::Sound,
            "a discrete Gaussian: dp_accounting has no event for it; written as the zCDP it satisfies (Canonne, Kamath & Steinke 2020), which only RDP accountants read",
        ),
    })
}

/// Δ₁ as an integer ≥ 1, when it is one.
fn integral(s: &Sensitivity) -> Option<u64> {
    (s.l1 >= 1.0 && s.l1.fract() == 0.0 && s.l1 < 2f64.powi(53)).then_some(s.l1 as u64)
}

/// One exported release: its event, composed `count` times.
///
/// A release on a Poisson sample (rate q < 1) is dp_accounting's
/// `PoissonSampledDpEvent` around its Gaussian or Laplace event, which
/// dpplan composes by the same pairs (`accountants/pld_sampled.rs`); any
/// other event is written without its sampling: an upper bound, as
/// sampling never adds loss.
pub fn release_event(r: &Release) -> Result<(DpEvent, Fidelity, &'static str), AccountingError> {
    let (e, f, why) = event_of(&r.mechanism)?;
    let (e, f, why) = match r.sample {
        Some(q) if q < 1.0 && e != DpEvent::NoOp => match e {
            DpEvent::Gaussian { .. } | DpEvent::Laplace { .. } => (
                DpEvent::PoissonSampled {
                    sampling_probability: q,
                    event: Box::new(e),
                },
                f,
                why,
            ),
            e => (
                e,
                Fidelity::Sound,
                "a release on a Poisson sample whose base has no event dp_accounting samples: written without its sampling (an upper bound)",
            ),
        },
        _ => (e, f, why),
    };
    let e = if r.count == 1 || e == DpEvent::NoOp {
        e
    } else {
        DpEvent::SelfComposed {
            event: Box::new(e),
            count: r.count,
        }
    };
    Ok((e, f, why))
}

/// What [`import`] read: the releases dpplan accounts, the events it could
/// not (each with where it is and why), and where the tree has events known
/// only by their zCDP curve.
///
/// The releases are read through [`Imported::all`] only; a caller cannot
/// hand them (a zCDP event's Gaussian stand-in among them) to
/// [`crate::all`]:
///
/// ```compile_fail,E0616
/// use dpplan_accounting::dp_event::{import, DpEvent};
/// let imported = import(&DpEvent::Gaussian { noise_multiplier: 2.0 });
/// let _ = dpplan_accounting::all(&imported.releases, 1e-6);
/// ```
///
/// ```
/// use dpplan_accounting::dp_event::{import, DpEvent};
/// let imported = import(&DpEvent::Gaussian { noise_multiplier: 2.0 });
/// assert_eq!(imported.release_count(), 1);
/// assert!(imported.all(1e-6).iter().all(|(_, r)| r.is_ok()));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported {
    /// Private: a zCDP event's Gaussian stand-in must not reach an
    /// accountant that reads its whole profile, so the releases are read
    /// only through [`Imported::all`].
    releases: Vec<Release>,
    pub unsupported: Vec<String>,
    /// The `ZCDpEvent`s read, each with its place: each stands in
    /// `releases` as a Gaussian whose RDP curve, ρ'α with ρ' ≥ ρ, is the
    /// event's, which only the accountants of [`ZCDP_ACCOUNTANTS`] may read
    /// (the others would use the Gaussian's own privacy profile, which a
    /// mechanism known only as ρ-zCDP need not have).
    pub zcdp: Vec<String>,
}

/// The accountants that read nothing of a Gaussian but its RDP curve ρα
/// (its ρ): they account a ρ-zCDP event exactly as its Gaussian stand-in.
/// The others (basic, advanced, KOV, exact Gaussian, PLD) read the
/// Gaussian's privacy profile, which a mechanism known only as ρ-zCDP need
/// not have (a Laplace mechanism's ρ = ε·tanh(ε/2) cover has heavier
/// tails), so they do not apply to a tree with a `ZCDpEvent`.
pub const ZCDP_ACCOUNTANTS: [crate::Accountant; 3] = [
    crate::Accountant::Classical,
    crate::Accountant::Zcdp,
    crate::Accountant::Rdp,
];

impl Imported {
    /// Whether the tree stands for no release at all.
    pub fn is_empty(&self) -> bool {
        self.releases.is_empty()
    }

    /// How many releases the tree stands for (self-compositions counted).
    pub fn release_count(&self) -> u64 {
        self.releases.iter().map(|r| r.count).sum()
    }

    /// Whether `accountant` may account the imported releases: every
    /// accountant, unless the tree has a `ZCDpEvent`.
    pub fn applies(&self, accountant: crate::Accountant) -> bool {
        self.zcdp.is_empty() || ZCDP_ACCOUNTANTS.contains(&accountant)
    }

    /// Every accountant's bound on the imported releases, in
    /// [`Accountant::ALL`](crate::Accountant::ALL)'s order, as
    /// [`crate::all`] gives them — except that an accountant that does not
    /// apply ([`Imported::applies`]) is not run on a zCDP event's Gaussian
    /// stand-in (it would read a privacy profile the event need not have)
    /// and says so. Read the imported releases through this, not through
    /// [`crate::all`].
    pub fn all(
        &self,
        delta: f64,
    ) -> Vec<(crate::Accountant, Result<crate::Bound, AccountingError>)> {
        if self.zcdp.is_empty() {
            return crate::all(&self.releases, delta);
        }
        crate::Accountant::ALL
            .iter()
            .map(|&a| {
                let r = if self.applies(a) {
                    crate::epsilon(&self.releases, delta, a)
                } else {
                    Err(AccountingError::NotApplicable(format!(
                        "the tree has {} ZCDpEvent(s), known only by their zCDP curve",
                        self.zcdp.len()
                    )))
                };
                (a, r)
            })
            .collect()
    }
}

/// The releases an event tree stands for: Gaussian, Laplace and discrete
/// Laplace events (exactly), zCDP events (by their RDP curve only:
/// [`Imported::zcdp`]), Poisson sampling of one Gaussian or Laplace event,
/// their self-compositions and compositions (a no-op adds nothing).
/// Everything else is named in `unsupported`, and no guarantee may be
/// claimed for the tree while it is not empty.
pub fn import(e: &DpEvent) -> Imported {
    let mut out = Imported::default();
    walk(e, 1, "the event", &mut out);
    out
}

fn walk(e: &DpEvent, times: u64, at: &str, out: &mut Imported) {
    let scalar = |kind: NoiseKind, scale: f64, sens: f64| Release {
        sample: None,
        mechanism: Mechanism {
            kind,
            scale,
            sensitivity: Sensitivity::scalar(sens),
        },
        count: times,
    };
    match e {
        DpEvent::NoOp => {}
        DpEvent::Gaussian { noise_multiplier } if *noise_multiplier > 0.0 => {
            out.releases
                .push(scalar(NoiseKind::Gaussian, *noise_multiplier, 1.0));
        }
        DpEvent::Laplace { noise_multiplier } if *noise_multiplier > 0.0 => {
            out.releases
                .push(scalar(NoiseKind::Laplace, *noise_multiplier, 1.0));
        }
        DpEvent::DiscreteLaplace {
            noise_parameter,
            sensitivity,
        } if *noise_parameter > 0.0 => {
            if *sensitivity > 0 {
                out.releases.push(scalar(
                    NoiseKind::DiscreteLaplace,
                    1.0 / noise_parameter,
                    *sensitivity as f64,
                ));
            }
        }
        DpEvent::SelfComposed { event, count } => match times.checked_mul(*count) {
            Some(n) if n > 0 => walk(event, n, &format!("{at}.event"), out),
            Some(_) => {}
            None => out
                .unsupported
                .push(format!("{at}: a count of {count} × {times} overflows")),
        },
        DpEvent::Composed { events } => {
            for (i, x) in events.iter().enumerate() {
                walk(x, times, &format!("{at}.events[{i}]"), out);
            }
        }
        DpEvent::PoissonSampled {
            sampling_probability: q,
            event,
        } => {
            let inner = import(event);
            let at_inner = format!("{at}.event");
            if !(*q > 0.0 && *q <= 1.0) {
                out.unsupported.push(format!(
                    "{at}: PoissonSampledDpEvent: a sampling probability must lie in (0, 1], got {q}"
                ));
            } else if !inner.unsupported.is_empty() {
                out.unsupported.extend(inner.unsupported);
            } else if !inner.zcdp.is_empty() {
                out.unsupported.push(format!(
                    "{at_inner}: a ZCDpEvent on a Poisson sample: no amplification by sampling is known for a mechanism known only by its zCDP curve"
                ));
            } else if inner
                .releases
                .iter()
                .any(|r| r.count != 1 || r.sample.is_some())
                || inner.releases.len() > 1
            {
                // a sample shared by several events is one mixture, not
                // several sampled events: not accounted here
                out.unsupported.push(format!(
                    "{at_inner}: a PoissonSampledDpEvent around several events (one sample shared by all) is not accounted by dpplan: sample each event on its own"
                ));
            } else {
                for mut r in inner.releases {
                    r.count = times;
                    r.sample = (*q < 1.0).then_some(*q);
                    out.releases.push(r);
                }
            }
        }
        DpEvent::NonPrivate
        | DpEvent::Gaussian { .. }
        | DpEvent::Laplace { .. }
        | DpEvent::DiscreteLaplace { .. } => out.unsupported.push(format!(
            "{at}: {} releases without noise (unbounded privacy loss)",
            e.class_name()
        )),
        DpEvent::Zcdp { rho, xi } => {
            if *xi != 0.0 {
                out.unsupported.push(format!(
                    "{at}: ZCDpEvent with ξ = {xi}: dpplan accounts ρ-zCDP (ξ = 0) only"
                ));
            } else if !(rho.is_finite() && *rho >= 0.0) {
                out.unsupported.push(format!(
                    "{at}: ZCDpEvent: ρ must be a finite number ≥ 0, got {rho}"
                ));
            } else if *rho > 0.0 {
                match zcdp_stand_in(*rho) {
                    Some(sigma) => {
                        out.releases.push(scalar(NoiseKind::Gaussian, sigma, 1.0));
                        out.zcdp.push(format!("{at}: ZCDpEvent(ρ = {rho})"));
                    }
                    None => out.unsupported.push(format!(
                        "{at}: ZCDpEvent: ρ = {rho} is outside what dpplan accounts"
                    )),
                }
            }
        }
        DpEvent::Other { class_name, .. } => out.unsupported.push(format!(
            "{at}: {class_name}: not accounted by dpplan (sampling amplification, trees and randomized response have no accountant here yet)"
        )),
    }
}

/// The σ of a Gaussian of sensitivity 1 whose ρ = 1/(2σ²) is at least
/// `rho`: its RDP curve is at or above the ρ-zCDP event's at every order.
/// √(0.5/ρ) is computed within 1.5 ulp of the exact value, so it is moved
/// down by 2⁻⁵⁰ relative (a 16-ulp margin), and further while the computed
/// ρ is still below.
fn zcdp_stand_in(rho: f64) -> Option<f64> {
    let mut sigma = (0.5 / rho).sqrt() * (1.0 - 2f64.powi(-50));
    if !(sigma.is_finite() && sigma > 0.0) {
        return None;
    }
    while 0.5 / (sigma * sigma) < rho {
        sigma = sigma.next_down();
    }
    (sigma > 0.0).then_some(sigma)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mech(kind: NoiseKind, scale: f64, l1: f64, l2: f64, coords: u64) -> Mechanism {
        Mechanism {
            kind,
            scale,
            sensitivity: Sensitivity {
                l1,
                l2,
                coords,
                linf: 0.0,
            },
        }
    }

    #[test]
    fn each_mechanism_becomes_its_event() {
        let cases = [
            (
                mech(NoiseKind::Gaussian, 6.0, 3.0, 3.0, 1),
                "GaussianDpEvent",
                Fidelity::Exact,
            ),
            (
                mech(NoiseKind::Gaussian, 6.0, 9.0, 3.0, 9),
                "GaussianDpEvent",
                Fidelity::Exact,
            ),
            (
                mech(NoiseKind::Laplace, 10.0, 2.0, 2.0, 1),
                "LaplaceDpEvent",
                Fidelity::Exact,
            ),
            (
                mech(NoiseKind::Laplace, 10.0, 2.0, 1.5, 3),
                "ZCDpEvent",
                Fidelity::Sound,
            ),
            (
                mech(NoiseKind::DiscreteLaplace, 4.0, 2.0, 2.0, 1),
                "DiscreteLaplaceDpEvent",
                Fidelity::Exact,
            ),
            (
                mech(NoiseKind::DiscreteLaplace, 4.0, 2.5, 2.5, 1),
                "ZCDpEvent",
                Fidelity::Sound,
            ),
            (
                mech(NoiseKind::DiscreteGaussian, 4.0, 1.0, 1.0, 1),
                "ZCDpEvent",
                Fidelity::Sound,
            ),
            (
                mech(NoiseKind::Exponential, 4.0, 1.0, 1.0, 1),
                "ZCDpEvent",
                Fidelity::Sound,
            ),
        ];
        for (m, class, fidelity) in cases {
            let (e, f, why) = event_of(&m).unwrap();
            assert_eq!((e.class_name(), f), (class, fidelity), "{m:?}: {why}");
        }
        // normalised to a shift of 1, rounded towards more loss
        let (e, ..) = event_of(&cases[0].0).unwrap();
        assert_eq!(
            e,
            DpEvent::Gaussian {
                noise_multiplier: 2f64.next_down()
            }
        );
        let (e, ..) = event_of(&cases[4].0).unwrap();
        assert_eq!(
            e,
            DpEvent::DiscreteLaplace {
                noise_parameter: 0.25f64.next_up(),
                sensitivity: 2
            }
        );
        // no loss: a no-op
        let zero = mech(NoiseKind::Laplace, 1.0, 0.0, 0.0, 1);
        assert_eq!(event_of(&zero).unwrap().0, DpEvent::NoOp);
    }

    #[test]
    fn json_round_trips_and_names_what_it_cannot_read() {
        let tree = DpEvent::Composed {
            events: vec![
                DpEvent::SelfComposed {
                    event: Box::new(DpEvent::Laplace {
                        noise_multiplier: 3.0,
                    }),
                    count: 7,
                },
                DpEvent::Gaussian {
                    noise_multiplier: 1.5,
                },
                DpEvent::DiscreteLaplace {
                    noise_parameter: 0.5,
                    sensitivity: 2,
                },
                DpEvent::NoOp,
            ],
        };
        assert_eq!(DpEvent::from_json(&tree.to_json()).unwrap(), tree);
        let imported = import(&tree);
        assert!(imported.unsupported.is_empty());
        assert_eq!(imported.releases.len(), 3);
        assert_eq!(imported.releases[0].count, 7);
        // a sampled Gaussian (DP-SGD) is named, with its place
        let sgd: Value = serde_json::from_str(
            r#"{"module_name": "dp_accounting.dp_event", "class_name": "ComposedDpEvent", "events": [
                {"module_name": "dp_accounting.dp_event", "class_name": "PoissonSampledDpEvent", "sampling_probability": 0.01,
                 "event": {"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent", "noise_multiplier": 1.0}}]}"#,
        )
        .unwrap();
        let imported = import(&DpEvent::from_json(&sgd).unwrap());
        assert!(
            imported.unsupported.is_empty(),
            "{:?}",
            imported.unsupported
        );
        assert_eq!(imported.releases.len(), 1);
        assert_eq!(imported.releases[0].sample, Some(0.01));
        assert_eq!(imported.releases[0].mechanism.kind, NoiseKind::Gaussian);
        // and back: the same event (σ/Δ₂ rounded towards more loss)
        let (back, fidelity, _) = release_event(&imported.releases[0]).unwrap();
        assert_eq!(fidelity, Fidelity::Exact);
        assert_eq!(
            back,
            DpEvent::PoissonSampled {
                sampling_probability: 0.01,
                event: Box::new(DpEvent::Gaussian {
                    noise_multiplier: 1.0f64.next_down()
                })
            }
        );
        // one sample shared by several releases is one mixture, not
        // several sampled releases: named, with its place
        let shared = DpEvent::PoissonSampled {
            sampling_probability: 0.01,
            event: Box::new(DpEvent::SelfComposed {
                event: Box::new(DpEvent::Gaussian {
                    noise_multiplier: 1.0,
                }),
                count: 3,
            }),
        };
        let imported = import(&shared);
        assert!(imported.releases.is_empty());
        assert!(imported.unsupported[0]
            .starts_with("the event.event: a PoissonSampledDpEvent around several"));
        // no noise is unbounded loss, never a release without cost
        let bare = import(&DpEvent::Gaussian {
            noise_multiplier: 0.0,
        });
        assert!(bare.releases.is_empty() && bare.unsupported.len() == 1);
        // malformed: the place and the field are named
        let bad: Value = serde_json::from_str(
            r#"{"class_name": "SelfComposedDpEvent", "count": -1, "event": {"class_name": "NoOpDpEvent"}}"#,
        )
        .unwrap();
        let err = DpEvent::from_json(&bad).unwrap_err();
        assert!(err.contains("count"), "{err}");
    }

    /// A `ZCDpEvent` stands in as a Gaussian whose ρ is at least the
    /// event's, read only by the accountants of its RDP curve: the zCDP
    /// accountant then gives exactly the conversion of the summed ρ (the
    /// published OpenDP value at ρ = 1/32 in tests/it/conformance); ξ > 0,
    /// a sampled zCDP event and a bad ρ are named, never accounted.
    #[test]
    fn zcdp_events_are_read_by_their_curve_only() {
        for rho in [1.0 / 32.0, 1e-12, 0.3, 7.0, 1e6] {
            let sigma = zcdp_stand_in(rho).unwrap();
            // exactly: 1/(2σ²) ≥ ρ, by two roundings each way
            assert!(0.5 / (sigma * sigma) >= rho, "{rho}");
            assert!(0.5 / (sigma * sigma) <= rho * (1.0 + 1e-14), "{rho}");
        }
        let tree = DpEvent::Composed {
            events: vec![
                DpEvent::Zcdp {
                    rho: 1.0 / 32.0,
                    xi: 0.0,
                },
                DpEvent::SelfComposed {
                    event: Box::new(DpEvent::Gaussian {
                        noise_multiplier: 4.0,
                    }),
                    count: 10,
                },
            ],
        };
        let imported = import(&tree);
        assert!(imported.unsupported.is_empty());
        assert_eq!(
            imported.zcdp,
            ["the event.events[0]: ZCDpEvent(ρ = 0.03125)"]
        );
        assert!(imported.applies(crate::Accountant::Rdp));
        assert!(!imported.applies(crate::Accountant::Pld));
        assert!(!imported.applies(crate::Accountant::Gdp));
        assert!(!imported.applies(crate::Accountant::Basic));
        // through `all`: the stand-in's PLD is never run, the curve's are
        for (a, r) in imported.all(1e-3) {
            assert_eq!(r.is_ok(), ZCDP_ACCOUNTANTS.contains(&a), "{a:?}: {r:?}");
        }
        let z = crate::epsilon(&imported.releases, 1e-3, crate::Accountant::Zcdp).unwrap();
        let want = crate::zcdp_epsilon_from_rho(1.0 / 32.0 + 10.0 / 32.0, 1e-3);
        assert!(
            z.epsilon >= want && z.epsilon <= want * (1.0 + 1e-12),
            "{z:?} {want}"
        );
        // a tree of Gaussians alone keeps every accountant
        assert!(import(&tree_without_zcdp(&tree)).applies(crate::Accountant::Pld));
        for (bad, why) in [
            (DpEvent::Zcdp { rho: 0.1, xi: 0.01 }, "ξ = 0.01"),
            (
                DpEvent::Zcdp {
                    rho: f64::NAN,
                    xi: 0.0,
                },
                "finite number",
            ),
            (DpEvent::Zcdp { rho: -1.0, xi: 0.0 }, "finite number"),
            (
                DpEvent::PoissonSampled {
                    sampling_probability: 0.1,
                    event: Box::new(DpEvent::Zcdp { rho: 0.1, xi: 0.0 }),
                },
                "no amplification",
            ),
        ] {
            let imported = import(&bad);
            assert!(
                imported.unsupported.len() == 1 && imported.unsupported[0].contains(why),
                "{bad:?}: {:?}",
                imported.unsupported
            );
            assert!(imported.releases.is_empty());
        }
        // ρ = 0: no loss
        let none = import(&DpEvent::Zcdp { rho: 0.0, xi: 0.0 });
        assert!(none.releases.is_empty() && none.unsupported.is_empty());
    }

    fn tree_without_zcdp(tree: &DpEvent) -> DpEvent {
        match tree {
            DpEvent::Composed { events } => DpEvent::Composed {
                events: events
                    .iter()
                    .filter(|e| !matches!(e, DpEvent::Zcdp { .. }))
                    .cloned()
                    .collect(),
            },
            e => e.clone(),
        }
    }
}
