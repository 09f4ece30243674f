//! The PLD accountant's leaf for the discrete Laplace mechanism with an
//! integer shift a ≥ 1: P(y) = (1 − q)/(1 + q)·q^{|y|} on ℤ, q = e^{−1/b},
//! against the same shifted by a.
//!
//! **The pair.** The loss at y is (|y − a| − |y|)/b: a/b for y ≤ 0
//! (P-mass 1/(1 + q)), (a − 2y)/b for 0 < y < a (P-mass
//! (1 − q)/(1 + q)·q^y each) and −a/b for y ≥ a (P-mass q^a/(1 + q));
//! the masses sum to 1. So the leaf is a + 1 atoms, exact. A shift of 1 is
//! randomized response at ε = 1/b exactly (the caller keeps it as such).
//!
//! **Upper bounds.** Each loss is n/b for an integer n (|n| ≤ a < 2⁵³,
//! exact as a float), divided to nearest and moved one float up: at least
//! the exact loss, whatever its sign (moving mass up keeps the accountant's
//! upper-cumulative order). Each mass is computed from ε₁ = 1/b (to
//! nearest, u relative), q = e^{−ε₁} and q^y = e^{−yε₁} (libm within
//! [`ELEM_ULPS`]; the argument's error y·ε₁·u passes into the result),
//! 1 − q = −expm1(−ε₁) and 1 + q, a product and a division: within
//! (6·ELEM_ULPS + 2y·ε₁ + 12)u relative, so each mass is raised by
//! 1.01·(that + 2)u and one float. Interior atoms past y·ε₁ > 700 are not
//! listed: their mass with the last atom's, at most
//! q^{y₀}/(1 + q) ≤ e^{−700}, is put as e^{−699} on the highest loss of
//! the omitted ones, (a − 2y₀)/b (moving mass up).

use super::GridPld;
use crate::special::{ELEM_ULPS, U};

/// Shifts above this many atoms are declined (the caller keeps randomized
/// response).
const MAX_SHIFT: u64 = 1 << 20;

/// The grid PLD of (DLap(0, b), DLap(a, b)) on the grid 2^e, every atom an
/// upper bound; `None` for a shift beyond [`MAX_SHIFT`] or a bad b.
pub(super) fn dlaplace_leaf(e: i32, a: u64, b: f64) -> Option<GridPld> {
    if a == 0 || a > MAX_SHIFT || !(b > 0.0 && b.is_finite()) {
        return None;
    }
    let eps1 = 1.0 / b;
    let q = libm::exp(-eps1);
    let one_minus_q = -libm::expm1(-eps1);
    let up = |x: f64, y: f64| -> f64 {
        let ulps = 6.0 * ELEM_ULPS + 2.0 * y * eps1 + 12.0;
        (x * (1.0 + 1.01 * (ulps + 2.0) * U)).next_up()
    };
    let loss = |n: i64| (n as f64 / b).next_up();
    let af = a as f64;
    let mut atoms = Vec::with_capacity(a as usize + 1);
    atoms.push((loss(a as i64), up(1.0 / (1.0 + q), 0.0)));
    let mut y = 1u64;
    while y < a {
        let yf = y as f64;
        if yf * eps1 > 700.0 {
            // the rest (interior from y and the last atom): ≤ e^{−700}
            atoms.push((loss(a as i64 - 2 * y as i64), libm::exp(-699.0)));
            return Some(GridPld::from_atoms(e, &atoms, 0.0));
        }
        let m = one_minus_q / (1.0 + q) * libm::exp(-yf * eps1);
        atoms.push((loss(a as i64 - 2 * y as i64), up(m, yf)));
        y += 1;
    }
    let last = if af * eps1 > 700.0 {
        libm::exp(-699.0)
    } else {
        up(libm::exp(-af * eps1) / (1.0 + q), af)
    };
    atoms.push((loss(-(a as i64)), last));
    Some(GridPld::from_atoms(e, &atoms, 0.0))
}
