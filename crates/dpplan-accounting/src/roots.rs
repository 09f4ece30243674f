//! Root finding on a monotone predicate: the one bracket search and the one
//! bisection behind every search in dpplan (ε of a privacy profile, σ of a
//! calibration, the noise multiplier of `noise … auto`), and
//! [`profile_root`], Brent's search for the same answer where each
//! evaluation is dear (the PLD accountant's ε).
//!
//! # Contract
//! `holds` is a *monotone* predicate on the search interval: there is a
//! threshold t with `holds(x)` false for x below t and true above it (which
//! side t itself falls on does not matter). A search for "the smallest x that
//! meets a bound" asks `holds = meets the bound`; a search for "the largest x
//! that meets a bound" asks `holds = violates the bound` and keeps the *lower*
//! end. Write the predicate so that a NaN answer counts on the unsafe side
//! (e.g. "violates" as `δ(x).partial_cmp(&target).is_none_or(Ordering::is_gt)`,
//! not `δ(x) > target`).
//!
//! [`bisect`] never evaluates `holds` at the ends of the bracket it is given:
//! the caller vouches that `holds(hi)` is true (or accepts `hi` as a fallback)
//! and that `holds(lo)` is false (or `lo` is the edge of the domain). Every
//! step keeps that invariant, so the returned end is sound by construction:
//! [`End::Upper`] returns a point where `holds` was seen (or vouched) true,
//! [`End::Lower`] one where it was seen (or vouched) false.

use std::convert::Infallible;

/// Where a bisection step tries next, and how the bracket's size is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Midpoint {
    /// (lo + hi)/2; the bracket is small once hi − lo ≤ `rel`·|hi| or
    /// hi − lo ≤ `abs`.
    Arithmetic,
    /// √(lo·hi), for 0 < lo < hi that may span orders of magnitude (noise
    /// multipliers); the bracket is small once hi/lo < 1 + `rel` (`abs` is
    /// not used).
    Geometric,
}

/// Which end of the final bracket a bisection returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// `hi`, where the predicate holds: for "smallest x that meets the bound"
    /// (an ε that is an upper bound on the true one, a σ or multiplier that
    /// is large enough).
    Upper,
    /// `lo`, where the predicate fails: for "largest x that meets the bound"
    /// with the predicate "violates the bound" (a μ that is never overstated).
    Lower,
}

/// A bisection's stopping rule and answer: `max_steps` halvings at most,
/// fewer once the bracket is small (see [`Midpoint`]) or has no float left
/// strictly inside.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bisection {
    pub rel: f64,
    pub abs: f64,
    pub max_steps: u32,
    pub midpoint: Midpoint,
    pub end: End,
}

impl Bisection {
    /// Arithmetic midpoints, relative tolerance `rel` and absolute `abs`,
    /// at most 300 steps (more than any bracket of floats needs), keeping `end`.
    pub const fn arithmetic(rel: f64, abs: f64, end: End) -> Bisection {
        Bisection {
            rel,
            abs,
            max_steps: 300,
            midpoint: Midpoint::Arithmetic,
            end,
        }
    }
}

/// Bisection of [lo, hi] on the monotone predicate `holds` (see the module's
/// contract), returning the end of the final bracket that `rule.end` names.
pub fn bisect(lo: f64, hi: f64, rule: &Bisection, mut holds: impl FnMut(f64) -> bool) -> f64 {
    match try_bisect(lo, hi, rule, |x| Ok::<bool, Infallible>(holds(x))) {
        Ok(x) => x,
        Err(never) => match never {},
    }
}

/// [`bisect`]'s answer, evaluating `holds` only strictly inside `known`
/// = (a, b), a bracket of the threshold already seen: `holds(a)` false and
/// `holds(b)` true. A midpoint at or below a is taken as failing and one
/// at or above b as holding, which is what a monotone predicate answers
/// there, so the steps, and the end returned, are [`bisect`]'s; only the
/// evaluations outside (a, b) are saved (a bracket of width 2w·x around x
/// leaves about log₂(2w/`rule.rel`) of them).
///
/// The end returned keeps [`bisect`]'s guarantee in the weak form a
/// monotone bound gives: [`End::Upper`] returns a point where `holds` was
/// seen true, or one at or above b, where it was; [`End::Lower`] likewise
/// below a.
pub fn bisect_known(
    lo: f64,
    hi: f64,
    rule: &Bisection,
    (a, b): (f64, f64),
    mut holds: impl FnMut(f64) -> bool,
) -> f64 {
    bisect(lo, hi, rule, |x| {
        if x <= a {
            false
        } else if x >= b {
            true
        } else {
            holds(x)
        }
    })
}

/// [`bisect`] with a predicate that may fail; its first error ends the search.
pub fn try_bisect<E>(
    mut lo: f64,
    mut hi: f64,
    rule: &Bisection,
    mut holds: impl FnMut(f64) -> Result<bool, E>,
) -> Result<f64, E> {
    for _ in 0..rule.max_steps {
        let (small, mid) = match rule.midpoint {
            Midpoint::Arithmetic => (
                hi - lo <= rule.rel * hi.abs() || hi - lo <= rule.abs,
                0.5 * (lo + hi),
            ),
            Midpoint::Geometric => (hi / lo < 1.0 + rule.rel, (lo * hi).sqrt()),
        };
        if small || mid <= lo || mid >= hi {
            break;
        }
        if holds(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(match rule.end {
        End::Upper => hi,
        End::Lower => lo,
    })
}

/// The least ε in (`lo`, `hi`] at which the upper bound `delta_of` on a
/// privacy profile falls to `target`, to the tolerance of `rule` (its
/// `rel`, `abs` and `max_steps`; the upper end is returned whatever
/// `rule.end` says): what [`bisect`] finds with the predicate
/// `delta_of(ε) ≤ target`, in far fewer evaluations of `delta_of`.
///
/// `d_lo` and `d_hi` are `delta_of` at the ends (evaluated or vouched for,
/// as [`bisect`]'s ends: `d_lo > target ≥ d_hi`). The search is Brent's
/// (`zeroin`: inverse quadratic interpolation and secant steps, each kept
/// inside the bracket and shrinking, else a bisection step) on
/// g(ε) = (δ(ε) − target)/(δ(ε) + target) = tanh(ln(δ(ε)/target)/2): near
/// the root it is half the log ratio (smooth and nearly quadratic in ε
/// for a profile's Gaussian part), and it stays finite where δ falls to 0
/// (at a pure plan's largest loss, where δ is linear in e^ε) or is NaN
/// (counted as 1: above the target).
///
/// Soundness does not rest on any of this: the bracket always has an end
/// where `delta_of ≤ target` was evaluated (or vouched for), a NaN counting
/// as above the target, and that end is returned.
pub fn profile_root(
    (lo, d_lo): (f64, f64),
    (hi, d_hi): (f64, f64),
    target: f64,
    rule: &Bisection,
    mut delta_of: impl FnMut(f64) -> f64,
) -> f64 {
    // g = (δ − target)/(δ + target) = tanh(ln(δ/target)/2), in [−1, 1]:
    // ≤ 0 exactly where δ ≤ target (a NaN δ: 1, above)
    let g = |d: f64| {
        if d == target {
            0.0
        } else if d < target {
            ((d - target) / (d + target)).max(-1.0)
        } else if d.is_finite() {
            ((d - target) / (d + target)).min(1.0)
        } else {
            1.0
        }
    };
    // Brent's zeroin (Brent 1973, ch. 4): b is the best point, [b, c] the
    // bracket, a the previous b
    let (mut a, mut fa) = (lo, g(d_lo));
    let (mut b, mut fb) = (hi, g(d_hi));
    let (mut c, mut fc) = (a, fa);
    let (mut d, mut e) = (b - a, b - a);
    for _ in 0..rule.max_steps {
        if (fb > 0.0) == (fc > 0.0) {
            (c, fc) = (a, fa);
            d = b - a;
            e = d;
        }
        if fc.abs() < fb.abs() {
            (a, fa) = (b, fb);
            (b, fb) = (c, fc);
            (c, fc) = (a, fa);
        }
        let tol1 = 0.5 * (rule.rel * b.abs()).max(rule.abs);
        let xm = 0.5 * (c - b);
        if xm.abs() <= tol1 {
            break;
        }
        // δ = target exactly at b: a root for Brent, but the least ε is
        // asked (δ may equal the target on a stretch, as δ = 0 beyond a
        // pure plan's largest loss at δ = 0): bisect towards it
        if fb != 0.0 && e.abs() >= tol1 && fa.abs() > fb.abs() {
            let s = fb / fa;
            let (mut p, mut q) = if a == c {
                (2.0 * xm * s, 1.0 - s)
            } else {
                let (q, r) = (fa / fc, fb / fc);
                (
                    s * (2.0 * xm * q * (q - r) - (b - a) * (r - 1.0)),
                    (q - 1.0) * (r - 1.0) * (s - 1.0),
                )
            };
            if p > 0.0 {
                q = -q;
            } else {
                p = -p;
            }
            let e_old = e;
            e = d;
            if p.is_finite()
                && q.is_finite()
                && 2.0 * p < 3.0 * xm * q - (tol1 * q).abs()
                && p < (0.5 * e_old * q).abs()
            {
                d = p / q;
            } else {
                d = xm;
                e = d;
            }
        } else {
            d = xm;
            e = d;
        }
        (a, fa) = (b, fb);
        let next = if d.abs() > tol1 {
            b + d
        } else {
            b + tol1.copysign(xm)
        };
        // a step that rounds onto an end of the bracket: nothing is left
        if next == b || next == c {
            break;
        }
        b = next;
        fb = g(delta_of(b));
    }
    // the end of the bracket [b, c] that holds
    if fb <= 0.0 {
        b
    } else {
        c
    }
}

/// Where a bracket search ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bracket {
    /// `holds(first_held)`; `last_failed` is the point tried just before it
    /// (`None` when the start held), so [last_failed, first_held] brackets
    /// the threshold.
    Found {
        last_failed: Option<f64>,
        first_held: f64,
    },
    /// `holds` failed at every point tried; `last_tried` is the last of them.
    Exhausted { last_tried: f64 },
}

/// Walks x₀, step(x₀), step²(x₀), … — at most `max_steps` steps, so at most
/// `max_steps + 1` points, and none once `step` returns `None` (it left the
/// domain) — until the monotone predicate `holds` is true. Growing steps
/// (x ↦ 2x) find an upper end for [`bisect`]; shrinking steps (x ↦ x/2) with
/// the negated predicate find a lower one.
pub fn try_find_bracket<E>(
    start: f64,
    max_steps: u32,
    step: impl Fn(f64) -> Option<f64>,
    mut holds: impl FnMut(f64) -> Result<bool, E>,
) -> Result<Bracket, E> {
    let mut last_failed = None;
    let mut x = start;
    let mut steps = 0;
    loop {
        if holds(x)? {
            return Ok(Bracket::Found {
                last_failed,
                first_held: x,
            });
        }
        if steps == max_steps {
            return Ok(Bracket::Exhausted { last_tried: x });
        }
        let Some(next) = step(x) else {
            return Ok(Bracket::Exhausted { last_tried: x });
        };
        last_failed = Some(x);
        x = next;
        steps += 1;
    }
}

/// [`try_find_bracket`] with a predicate that cannot fail.
pub fn find_bracket(
    start: f64,
    max_steps: u32,
    step: impl Fn(f64) -> Option<f64>,
    mut holds: impl FnMut(f64) -> bool,
) -> Bracket {
    match try_find_bracket(start, max_steps, step, |x| Ok::<bool, Infallible>(holds(x))) {
        Ok(b) => b,
        Err(never) => match never {},
    }
}

impl Bracket {
    /// The point where the predicate held, or else the last point tried
    /// (the bracket's upper end whether or not it was found).
    pub fn upper(self) -> f64 {
        match self {
            Bracket::Found { first_held, .. } => first_held,
            Bracket::Exhausted { last_tried } => last_tried,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPPER: Bisection = Bisection::arithmetic(1e-14, 0.0, End::Upper);
    const LOWER: Bisection = Bisection::arithmetic(1e-14, 0.0, End::Lower);

    #[test]
    fn upper_end_holds_and_is_tight() {
        // √2 as the smallest x with x² ≥ 2
        let x = bisect(0.0, 2.0, &UPPER, |x| x * x >= 2.0);
        assert!(x * x >= 2.0, "the upper end must satisfy the predicate");
        assert!(x - std::f64::consts::SQRT_2 <= 2e-14 * x);
        // negative control: the lower end does not satisfy it
        let y = bisect(0.0, 2.0, &LOWER, |x| x * x >= 2.0);
        assert!(y * y < 2.0 && y < x);
        assert!(x - y <= 1e-14 * x);
    }

    #[test]
    fn lower_end_of_a_violation_predicate_is_the_largest_safe_point() {
        // largest μ with e^μ ≤ 10: predicate "violates" = e^μ > 10
        let mu = bisect(0.0, 8.0, &LOWER, |m| m.exp() > 10.0);
        assert!(mu.exp() <= 10.0);
        assert!((mu - 10f64.ln()).abs() <= 1e-13);
        // the upper end violates
        let over = bisect(0.0, 8.0, &UPPER, |m| m.exp() > 10.0);
        assert!(over.exp() > 10.0);
    }

    #[test]
    fn ends_are_never_evaluated() {
        let mut seen = vec![];
        let _ = bisect(1.0, 3.0, &UPPER, |x| {
            seen.push(x);
            x >= 2.5
        });
        assert!(!seen.is_empty() && seen.iter().all(|&x| x > 1.0 && x < 3.0));
    }

    #[test]
    fn tolerances_and_step_cap() {
        // absolute tolerance stops early
        let x = bisect(
            0.0,
            1.0,
            &Bisection::arithmetic(0.0, 0.25, End::Upper),
            |x| x >= 0.3,
        );
        assert_eq!(x, 0.5);
        // step cap: 3 halvings of [0, 8] towards 1.0 leave [1, 2]
        let rule = Bisection {
            max_steps: 3,
            ..Bisection::arithmetic(0.0, 0.0, End::Upper)
        };
        assert_eq!(bisect(0.0, 8.0, &rule, |x| x >= 1.0), 1.0);
        let rule = Bisection {
            end: End::Lower,
            ..rule
        };
        assert_eq!(bisect(0.0, 8.0, &rule, |x| x > 1.0), 1.0);
        // geometric midpoints: ratio tolerance
        let rule = Bisection {
            rel: 1e-9,
            abs: 0.0,
            max_steps: 100,
            midpoint: Midpoint::Geometric,
            end: End::Upper,
        };
        let x = bisect(1e-3, 1e3, &rule, |x| x >= 7.0);
        assert!(x >= 7.0 && x / 7.0 < 1.0 + 1e-9);
        // an error ends the search
        let r: Result<f64, &str> = try_bisect(0.0, 1.0, &UPPER, |x| {
            if x > 0.3 {
                Err("stop")
            } else {
                Ok(x >= 0.9)
            }
        });
        assert_eq!(r, Err("stop"));
    }

    /// The secant search finds what the bisection finds (the least ε with
    /// δ(ε) ≤ target, within the same tolerance, the returned end holding)
    /// on privacy profiles of both kinds — smooth (a Gaussian's) and
    /// piecewise linear in e^ε (a distribution on a grid) — in half the
    /// evaluations or fewer from the accountant's bracket (a fifth, on the
    /// smooth ones), never more from a far one; and on functions that are
    /// not profiles (a staircase, NaN on a stretch) it still ends within
    /// the tolerance, holding (its bisection steps).
    #[test]
    fn the_profile_root_is_the_bisections_in_fewer_steps() {
        let rule = Bisection::arithmetic(1e-12, 1e-14, End::Upper);
        // the Gaussian's profile at μ (Balle and Wang), and a grid PLD's
        let gauss = |mu: f64| {
            move |e: f64| {
                let phi = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
                phi(-e / mu + mu / 2.0) - e.exp() * phi(-e / mu - mu / 2.0)
            }
        };
        let grid = |e: f64| {
            (0..400)
                .map(|k| {
                    let l = -2.0 + 0.01 * f64::from(k);
                    let p = (-(l - 1.0) * (l - 1.0)).exp() / 177.0;
                    if e < l {
                        p * -libm::expm1(e - l)
                    } else {
                        0.0
                    }
                })
                .sum::<f64>()
        };
        type Profile = Box<dyn Fn(f64) -> f64>;
        // each with the accountant's bracket (`epsilon_at`: the grid's
        // largest loss and step, plus a Gaussian's ε, doubled until it
        // holds; here 1.2 times the root, plus 1) and a far one
        let cases: Vec<(Profile, f64, Option<f64>)> = vec![
            (Box::new(gauss(1.0)), 1e-6, None),
            (Box::new(gauss(0.05)), 1e-10, None),
            (Box::new(gauss(6.0)), 1e-3, None),
            (Box::new(grid), 1e-7, Some(1.99 + 0.01)),
            (Box::new(grid), 1e-2, Some(1.99 + 0.01)),
        ];
        for (k, (f, target, grid_hi)) in cases.iter().enumerate() {
            for far in [false, true] {
                let rough = bisect(
                    0.0,
                    60.0,
                    &Bisection::arithmetic(0.0, 0.01, End::Upper),
                    |e| f(e) <= *target,
                );
                let hi = match (far, grid_hi) {
                    (true, _) => 60.0,
                    (false, Some(h)) => *h,
                    (false, None) => 1.0 + rough * 1.2,
                };
                let mut n_bisect = 0;
                let want = bisect(0.0, hi, &rule, |e| {
                    n_bisect += 1;
                    f(e) <= *target
                });
                let mut n = 0;
                let got = profile_root((0.0, f(0.0)), (hi, f(hi)), *target, &rule, |e| {
                    n += 1;
                    f(e)
                });
                eprintln!("case {k}, far {far}: {n} evaluations, bisection {n_bisect}");
                assert!(f(got) <= *target, "case {k}: {got} does not hold");
                assert!(
                    (got - want).abs() <= 2e-12 * want,
                    "case {k}: {got} vs {want}"
                );
                // and tight: a point 10⁻⁹ below does not hold (negative control)
                assert!(f(got * (1.0 - 1e-9)) > *target, "case {k}");
                if far {
                    assert!(
                        n <= n_bisect,
                        "case {k}: {n} evaluations, bisection {n_bisect}"
                    );
                } else {
                    assert!(
                        2 * n <= n_bisect,
                        "case {k}: {n} evaluations, bisection {n_bisect}"
                    );
                }
            }
        }
        // not profiles: a staircase and a NaN stretch end within the tolerance
        let stairs = |e: f64| 1.0 - (e * 4.0).floor() / 40.0;
        let got = profile_root((0.0, 1.0), (10.0, 0.0), 0.5, &rule, stairs);
        assert!(stairs(got) <= 0.5 && (got - 5.0).abs() <= 1e-11, "{got}");
        // δ = 0 at δ's target 0 (a pure plan at δ = 0): the least such ε
        // (the largest loss), not any point of the stretch
        let want = bisect(0.0, 5.0, &rule, |e| grid(e) <= 0.0);
        let got = profile_root((0.0, grid(0.0)), (5.0, 0.0), 0.0, &rule, grid);
        assert!(
            grid(got) <= 0.0 && (got - want).abs() <= 1e-11 && (got - 1.99).abs() < 1e-11,
            "{got} vs {want}"
        );
        let nan = |e: f64| {
            if (1.0..2.0).contains(&e) {
                f64::NAN
            } else {
                (-e).exp()
            }
        };
        let got = profile_root((0.0, 1.0), (10.0, nan(10.0)), 0.01, &rule, nan);
        assert!(
            nan(got) <= 0.01 && (got - 100f64.ln()).abs() <= 1e-11,
            "{got}"
        );
    }

    #[test]
    fn brackets() {
        let up = find_bracket(1.0, 10, |x| Some(2.0 * x), |x| x >= 100.0);
        assert_eq!(
            up,
            Bracket::Found {
                last_failed: Some(64.0),
                first_held: 128.0
            }
        );
        assert_eq!(
            find_bracket(1.0, 3, |x| Some(2.0 * x), |x| x >= 100.0),
            Bracket::Exhausted { last_tried: 8.0 }
        );
        assert_eq!(
            find_bracket(1.0, 3, |x| Some(2.0 * x), |x| x >= 0.5),
            Bracket::Found {
                last_failed: None,
                first_held: 1.0
            }
        );
        // a step that leaves the domain ends the walk without evaluating outside it
        let mut seen = vec![];
        let b = find_bracket(
            1.0,
            100,
            |x| (x > 0.2).then_some(x / 2.0),
            |x| {
                seen.push(x);
                false
            },
        );
        assert_eq!(b, Bracket::Exhausted { last_tried: 0.125 });
        assert_eq!(seen, vec![1.0, 0.5, 0.25, 0.125]);
    }
}
