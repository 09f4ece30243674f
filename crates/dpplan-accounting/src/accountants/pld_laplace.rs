//! The PLD accountant's leaf for the one-dimensional Laplace mechanism:
//! exact connect-the-dots masses of its privacy-loss distribution, each
//! rounded up, with no quadrature.
//!
//! **The pair.** With ε = Δ/b, P = Lap(0, b) and Q = Lap(Δ, b), the loss
//! L = ln(dP/dQ)(Y), Y ~ P, has an atom ½ at +ε (Y ≤ 0), an atom ½e^{−ε} at
//! −ε (Y ≥ Δ) and the density f(l) = ¼e^{(l−ε)/2} on (−ε, ε) (0 < Y < Δ,
//! l = ε − 2Y/b). Its total P-mass is 1, and so is its e^{−l}-weighted mass
//! (the Q-mass): ½e^{−ε} + ½ + ½(1 − e^{−ε}); the density alone carries
//! ½(1 − e^{−ε}) of each.
//!
//! **The split.** Connect-the-dots ([`GridPld::from_atoms`]) sends a unit
//! mass at l ∈ [T, T + h] (T = kh) to T + h with weight
//! w(u) = (1 − e^{−u})/(1 − e^{−h}), u = l − T, and to T with 1 − w(u). For
//! the density, on the part [a, b] = [T, T + h] ∩ [−ε, ε] of a cell
//! (d = b − a, s = a − T, r = T + h − b, so s + d + r = h), the two grid
//! masses are integrals of exponentials:
//!
//! * the cell's mass c = ∫_a^b f = ½e^{(b−ε)/2}(1 − e^{−d/2});
//! * its e^{−u}-moment: ∫_a^b f(l)e^{−(l−T)} dl = c·e^{−(s + d/2)}, because
//!   ∫_0^d e^{t/2}e^{−t} dt / ∫_0^d e^{t/2} dt = (1 − e^{−d/2})/(e^{d/2} − 1)
//!   = e^{−d/2};
//! * w is affine in e^{−u}, so the split of the density is the split of one
//!   atom of mass c at the cell's midpoint m = s + d/2:
//!   M_hi = c·(1 − e^{−m})/(1 − e^{−h}) at T + h and
//!   M_lo = c·e^{−m}(1 − e^{−(h−m)})/(1 − e^{−h}) at T (h − m = r + d/2),
//!   their sum c (as 1 − w(m) = (e^{−m} − e^{−h})/(1 − e^{−h})).
//!
//! Every factor is 1 − e^{−x} = −expm1(−x) of a non-negative argument or
//! e^{−x} ≤ 1: no subtraction of close numbers, no overflow (e^{(b−ε)/2} ≤ 1
//! however large ε or h are). Summed over a cell, these are the exact
//! connect-the-dots masses of the density: no approximation error is left,
//! only the rounding below.
//!
//! **Which direction.** The accountant's invariant (docs/accounting.md, "The
//! PLD's grid") is the upper-cumulative order: for every threshold t the
//! stored mass at losses ≥ t is at least the exact one. Entrywise upper
//! bounds imply it, so both M_hi and M_lo are rounded *up*. (For an atom,
//! `from_atoms` needs less: m·w at T + h rounded up, and the two parts'
//! sum not below m — 1 − ŵ alone may be below 1 − w, which the order
//! allows.)
//!
//! **Rounding** (u = 2⁻⁵³; `libm` calls within [`ELEM_ULPS`] ulps = 2·ELEM_ULPS
//! u each). T = kh, T + h, a = max(T, −ε), b = min(T + h, ε) are exact
//! (h a power of two); d, s, r, ε − b are single subtractions (≤ u each),
//! m and h − m sums of two of them (≤ 2.01u); the halvings are exact (the
//! arguments are normal: for ε ≥ [`TINY_EPS`] every non-zero d is at least
//! min(ε, ulp(ε), h) ≥ 2⁻⁹⁵², as `from_atoms` keeps h ≥ 2ε/2²¹). 1 − e^{−x} has condition x/(eˣ − 1) ≤ 1, so an
//! argument's relative error passes through at most unchanged; e^{−x} turns
//! it into x times as much. Hence, relative to the exact mass,
//! M_hi ≤ (1.01x + 1 + 2.01 + 3 + 8·ELEM_ULPS)u and
//! M_lo ≤ (1.01x + 1 + 2.03m + 2.01 + 4 + 10·ELEM_ULPS)u (x = (ε − b)/2 < ε,
//! m ≤ h; three and four products/quotients), both within
//! [`cell_ulps`] = 1.01·min(ε, 709) + 2.03·min(h, 709) + 10·ELEM_ULPS + 8,
//! and each mass is multiplied by 1 + 1.01(that + 2)u (the + 2: the
//! factor's own rounding and the product's). A mass computed below 2⁻¹⁰²¹
//! may have lost relative accuracy to underflow (every factor is ≤ 1, so an
//! intermediate that underflowed keeps the result below that); its exact
//! value is then below 2⁻¹⁰²⁰, and that bound is stored instead at the
//! lowest grid point ≥ ε (moving mass up keeps the order; at its
//! own loss it would add up to 2⁻¹⁰²⁰e^{ε} to the e^{−l}-weighted mass).
//! The ½e^{−ε} atom is rounded the same way. A grid point sums up to four
//! such upper bounds (≤ 3.01u), covered by one more factor.
//!
//! Degenerate parameters: for ε < [`TINY_EPS`] the density's mass
//! (≤ ε/2) is put as mass ε at the loss +ε (moving mass up keeps the
//! order); for ε > 10²⁹⁰ (the grid's limit for a finite loss) or NaN all
//! mass goes to +∞.

use super::{h_of, GridPld};
use crate::special::{ELEM_ULPS, U};

/// Below this ε the density is moved to +ε as one atom (see the module doc).
const TINY_EPS: f64 = 1e-270;
/// Above this ε the whole leaf is put at +∞ (`from_atoms`' limit).
const HUGE_EPS: f64 = 1e290;
/// Computed masses below this may carry underflow (2⁻¹⁰²¹).
const UNDERFLOW: f64 = 2.0 * f64::MIN_POSITIVE;
/// An upper bound of any mass computed below [`UNDERFLOW`] (2⁻¹⁰²⁰).
const FLOOR: f64 = 4.0 * f64::MIN_POSITIVE;

/// The exact ε at δ of ONE release of the one-dimensional Laplace
/// mechanism with ε₀ = Δ/b, as an enclosure `(lower, upper)` of the true
/// value (both ≥ 0), for an `eps0` rounded up from Δ/b by at most one ulp.
///
/// **The profile.** For the pair of the module doc (P = Lap(0, b),
/// Q = Lap(Δ, b)), the loss exceeds ε ∈ [0, ε₀) exactly on Y < y* =
/// (Δ − εb)/2, so δ(ε) = P(Y < y*) − e^ε·Q(Y < y*) = (1 − ½e^{−y*/b}) −
/// e^ε·½e^{(y*−Δ)/b}; both exponents equal (ε − ε₀)/2, hence
/// δ(ε) = 1 − e^{(ε−ε₀)/2} (Balle, Barthe and Gaboardi 2018, the Laplace
/// mechanism's privacy profile), and by the symmetry of the Laplace density
/// the pair (Q, P) has the same profile. It increases with ε₀, so the
/// largest shift Δ is the worst neighbouring pair under add/remove and
/// replace alike. Solved for ε: ε(δ) = max(0, ε₀ + 2·ln(1 − δ)), the
/// smallest ε at which the release is (ε, δ)-DP: no sound accountant prints
/// less.
///
/// **Rounding.** `log1p(−δ)` is within [`ELEM_ULPS`] ulps (−δ is exact);
/// the doubling is exact, the sum one rounding (u of its magnitude, at most
/// ε₀ + 2|ln(1 − δ)|); the true ε₀ lies in [eps0·(1 − 2u), eps0]. Each
/// end widens by these, one float further.
pub(crate) fn lone_laplace_epsilon(eps0: f64, delta: f64) -> (f64, f64) {
    let l = libm::log1p(-delta);
    let two_l = 2.0 * l;
    let v = eps0 + two_l;
    let err_l = 2.0 * ELEM_ULPS * U * two_l.abs() * 1.01;
    let err_sum = U * (eps0 + two_l.abs());
    let upper = (v + err_l + err_sum).next_up().max(0.0);
    let lower = (v - err_l - err_sum - 2.0 * U * eps0).next_down().max(0.0);
    (lower, upper)
}

/// The PLD leaf of one Laplace release with ε = Δ/b on the grid 2^e (or the
/// coarser one `from_atoms` picks): both atoms split by connect-the-dots,
/// the density's connect-the-dots masses in closed form (module doc), every
/// mass an upper bound of its exact value.
pub(super) fn laplace_leaf(e: i32, eps: f64) -> GridPld {
    if eps.is_nan() || eps > HUGE_EPS {
        return GridPld {
            e: e.clamp(-1000, 1000),
            lo: 0,
            p: vec![0.0],
            inf: 1.0,
        };
    }
    if eps < TINY_EPS {
        let [high, low] = atom_pair(eps);
        return GridPld::from_atoms(e, &[high, (eps, eps), low], 0.0);
    }
    let atoms = GridPld::from_atoms(e, &atom_pair(eps), 0.0);
    let cells = density_masses(atoms.e, eps);
    sum_up(atoms, &cells)
}

/// The atoms ½ at +ε and ½e^{−ε} at −ε, the second rounded up (one libm
/// call, the halving exact above the underflow limit) or, below that, moved
/// to +ε as [`FLOOR`].
fn atom_pair(eps: f64) -> [(f64, f64); 2] {
    match mass_up(0.5 * libm::exp(-eps), 2.0 * ELEM_ULPS) {
        Some(m) => [(eps, 0.5), (-eps, m)],
        None => [(eps, 0.5), (eps, FLOOR)],
    }
}

/// The density's connect-the-dots masses, unsummed.
#[derive(Debug, Clone)]
struct Cells {
    /// grid index of the lower end of `m[0]`'s cell
    k0: i64,
    /// (M_lo, M_hi) per cell, each rounded up: the lower end of cell i is
    /// at index k0 + i, its upper end at k0 + i + 1 (0 where moved)
    m: Vec<(f64, f64)>,
    /// the masses that underflowed ([`FLOOR`] each), moved up to the upper
    /// end of the last cell (the lowest grid point ≥ ε)
    moved: f64,
}

/// The connect-the-dots masses of the density ¼e^{(l−ε)/2} on (−ε, ε) on the
/// grid 2^e, each rounded up (module doc).
fn density_masses(e: i32, eps: f64) -> Cells {
    let h = h_of(e);
    // ±1 also when ε/h underflows (every cell of (−ε, ε) is then [−h, 0] or [0, h])
    let k0 = ((-eps / h).floor() as i64).min(-1);
    let k1 = ((eps / h).ceil() as i64).max(1);
    let g_h = -libm::expm1(-h);
    let ulps = cell_ulps(eps, h);
    let mut moved = 0u64;
    let mut up = |raw: f64| {
        mass_up(raw, ulps).unwrap_or_else(|| {
            moved += 1;
            0.0
        })
    };
    let m = (k0..k1)
        .map(|k| {
            let t = k as f64 * h;
            let (a, b) = (t.max(-eps), (t + h).min(eps));
            if b <= a {
                return (0.0, 0.0);
            }
            let (lo, hi) = cell_masses(eps, h, g_h, t, a, b);
            (up(lo), up(hi))
        })
        .collect();
    Cells {
        k0,
        m,
        moved: moved as f64 * FLOOR,
    }
}

/// Nearest-value (M_lo, M_hi) of the cell [t, t + h] cut to [a, b] (module
/// doc); g_h = 1 − e^{−h}.
fn cell_masses(eps: f64, h: f64, g_h: f64, t: f64, a: f64, b: f64) -> (f64, f64) {
    let d = b - a;
    let (s, r) = (a - t, t + h - b);
    let half = 0.5 * d;
    let (m, h_m) = (s + half, r + half);
    let c = 0.5 * libm::exp(-(0.5 * (eps - b))) * -libm::expm1(-half);
    let w_hi = -libm::expm1(-m) / g_h;
    let w_lo = libm::exp(-m) * -libm::expm1(-h_m) / g_h;
    (c * w_lo, c * w_hi)
}

/// The relative error bound, in u, of every mass [`cell_masses`] returns
/// above [`UNDERFLOW`] (module doc).
fn cell_ulps(eps: f64, h: f64) -> f64 {
    1.01 * eps.min(709.0) + 2.03 * h.min(709.0) + 10.0 * ELEM_ULPS + 8.0
}

/// An upper bound of a positive quantity computed as `raw` to within `ulps`·u
/// relative; `None` below [`UNDERFLOW`], where relative accuracy may be lost
/// (the exact value is then below [`FLOOR`], module doc).
fn mass_up(raw: f64, ulps: f64) -> Option<f64> {
    (raw >= UNDERFLOW).then_some(raw * (1.0 + 1.01 * (ulps + 2.0) * U))
}

/// The atoms' grid plus the density's masses (the moved ones at the lowest
/// point ≥ ε), every point a sum of at most four upper bounds
/// (≤ 3.01u relative), rounded up.
fn sum_up(atoms: GridPld, cells: &Cells) -> GridPld {
    let lo = cells.k0;
    let first = atoms.lo.min(lo);
    let last = (atoms.lo + atoms.p.len() as i64).max(lo + cells.m.len() as i64 + 1);
    let mut p = vec![0.0; (last - first) as usize];
    let off = (atoms.lo - first) as usize;
    for (i, &x) in atoms.p.iter().enumerate() {
        p[off + i] += x;
    }
    let off = (lo - first) as usize;
    for (i, &(m_lo, m_hi)) in cells.m.iter().enumerate() {
        p[off + i] += m_lo;
        p[off + i + 1] += m_hi;
    }
    // the upper end of the last cell, k1 = ⌈ε/h⌉: the lowest point ≥ ε
    p[off + cells.m.len()] += cells.moved;
    // a sum with a subnormal result is exact, and the product then rounds to
    // at least the sum
    let g = 1.0 + 1.01 * (3.01 + 2.0) * U;
    for x in p.iter_mut() {
        *x *= g;
    }
    GridPld {
        e: atoms.e,
        lo: first,
        p,
        inf: atoms.inf,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// (ε, grid exponent): cells aligned with ±ε (1, 2⁻⁹), cut by ±ε (1.3,
    /// ln 3, 0.1, 12.34), ε below one cell (0.3 and 0.7 in h = ½ and 1, 0.01
    /// in h = 8), large ε (40; 800, where the lower masses underflow), small
    /// ε (10⁻⁹) and one below [`TINY_EPS`] (moved to +ε whole).
    fn cases() -> Vec<(f64, i32)> {
        vec![
            (1.0, -9),
            (1.3, -8),
            (3f64.ln(), -8),
            (0.1, -12),
            (0.3, -1),
            (0.7, 0),
            (0.01, 3),
            (12.34, -6),
            (40.0, -3),
            (800.0, 2),
            (1e-9, -38),
            (1e-280, -940),
        ]
    }

    /// One case for the reference: the leaf and, unless ε is tiny, the
    /// density's masses (`cells`, from `density`) on the leaf's grid.
    fn doc(eps: f64, e: i32, density: impl Fn(i32, f64) -> Cells) -> Value {
        let leaf = laplace_leaf(e, eps);
        let mut d = json!({
            "eps": eps, "e": leaf.e, "lo": leaf.lo, "leaf": leaf.p, "inf": leaf.inf,
        });
        if eps >= TINY_EPS {
            let c = density(leaf.e, eps);
            let leaf = sum_up(GridPld::from_atoms(e, &atom_pair(eps), 0.0), &c);
            d["leaf"] = json!(leaf.p);
            d["lo"] = json!(leaf.lo);
            d["cells"] = json!(c.m.iter().map(|&(a, b)| [a, b]).collect::<Vec<_>>());
            d["k0"] = json!(c.k0);
            d["moved"] = json!(c.moved);
            d["top"] = json!(c.k0 + c.m.len() as i64);
            // masses that underflowed were moved up to a loss ≥ ε: the P-side
            // order is kept, the e^{−l}-weighted mass is not
            d["q_kept"] = json!(c.moved == 0.0 && atom_pair(eps)[1].0 < 0.0);
        }
        d
    }

    /// The bounds the leaf promises, in u: every density mass within
    /// 2.02·[`cell_ulps`] + 4 above its exact value; the leaf's tails also
    /// within `from_atoms`' allowance for the atoms and the sums' factor.
    fn tolerances(eps: f64, e: i32) -> (f64, f64) {
        let h = h_of(e);
        let cells = 2.02 * cell_ulps(eps, h) + 4.0;
        let atoms = 2.02 * (2.0 * ELEM_ULPS + h.min(750.0) + 12.0) + 4.0;
        (cells * U, (cells.max(atoms) + 11.0) * U)
    }

    /// Ok(largest relative excess of the density's masses, of the leaf's
    /// tails) or the first broken promise.
    fn judge(case: &Value, r: &Value) -> Result<(f64, f64), String> {
        let eps = case["eps"].as_f64().unwrap();
        let e = case["e"].as_i64().unwrap() as i32;
        let (tol_c, tol_l) = tolerances(eps, e);
        let ok = |v: &Value, tol: f64, what: &str| -> Result<f64, String> {
            let (cmp, rel) = (v["cmp"].as_i64().unwrap(), v["rel"].as_f64().unwrap());
            if cmp < 0 || rel > tol {
                return Err(format!(
                    "ε = {eps}, 2^{e}: {what}: {v} (tolerance {tol:.2e})"
                ));
            }
            Ok(rel)
        };
        let mut worst_c: f64 = 0.0;
        if let Some(cells) = case["cells"].as_array() {
            let moved = case["moved"].as_f64().unwrap();
            for (i, (pair, vs)) in cells.iter().zip(r["cells"].as_array().unwrap()).enumerate() {
                for (j, v) in vs.as_array().unwrap().iter().enumerate() {
                    let value = pair[j].as_f64().unwrap();
                    let moved_ok = value == 0.0 && v["exact"].as_f64().unwrap() < UNDERFLOW;
                    if !(moved_ok && moved > 0.0) {
                        worst_c = worst_c.max(ok(v, tol_c, &format!("cell {i} end {j}"))?);
                    }
                }
            }
            if moved < r["moved_exact"].as_f64().unwrap() {
                return Err(format!(
                    "ε = {eps}: moved mass {moved} below the exact {}",
                    r["moved_exact"]
                ));
            }
            ok(&r["cells_p"], tol_c, "the density's P-mass")?;
            if case["q_kept"] == json!(true) {
                ok(&r["cells_q"], tol_c, "the density's e^{−l}-weighted mass")?;
            }
        }
        let mut worst_l: f64 = 0.0;
        for (j, v) in r["tails"].as_array().unwrap().iter().enumerate() {
            worst_l = worst_l.max(ok(v, tol_l, &format!("leaf tail from point {j}"))?);
        }
        ok(&r["leaf_p"], tol_l, "the leaf's P-mass")?;
        // the atoms' lower parts m(1 − ŵ) are not entrywise bounds (1 − ŵ
        // loses ŵ's absolute error, ≤ (2·ELEM_ULPS + 2 + h)u, see
        // `from_atoms`), and a mass at T weighs e^{−T} ≤ e^{h}e^{−l} in the
        // e^{−l}-weighted total, whose atoms carry ≤ 1
        let h = h_of(e).min(700.0);
        let tol_q = tol_l + 2.02 * h.exp() * (2.0 * ELEM_ULPS + 2.0 + h) * U;
        let q = r["leaf_q"]["rel"].as_f64().unwrap();
        if case["q_kept"] != json!(false) && q.abs() > tol_q {
            return Err(format!(
                "ε = {eps}: the leaf's e^{{−l}}-weighted mass off by {q:.2e}"
            ));
        }
        Ok((worst_c, worst_l))
    }

    fn run(docs: Vec<Value>) -> Option<Vec<Result<(f64, f64), String>>> {
        let out = super::super::common::reference(
            "laplace_leaf/reference.py",
            &json!({ "cases": docs }),
        )?;
        let res = out["cases"].as_array().unwrap();
        Some(docs.iter().zip(res).map(|(c, r)| judge(c, r)).collect())
    }

    #[test]
    fn every_mass_is_an_upper_bound_within_a_few_ulps_of_the_exact_integral() {
        let docs: Vec<Value> = cases()
            .into_iter()
            .map(|(eps, e)| doc(eps, e, density_masses))
            .collect();
        for (eps, e) in cases().into_iter().filter(|c| c.0 >= TINY_EPS) {
            let leaf = laplace_leaf(e, eps);
            let atoms = GridPld::from_atoms(e, &atom_pair(eps), 0.0);
            let again = sum_up(atoms, &density_masses(leaf.e, eps));
            assert_eq!((leaf.lo, &leaf.p), (again.lo, &again.p), "ε = {eps}");
        }
        let Some(verdicts) = run(docs) else { return };
        for ((eps, e), v) in cases().into_iter().zip(verdicts) {
            let (c, l) = v.unwrap_or_else(|m| panic!("{m}"));
            eprintln!(
                "ε = {eps:e}, 2^{e}: density masses ≤ {:.1}u, leaf tails ≤ {:.1}u above exact",
                c / U,
                l / U
            );
        }
    }

    /// A leaf that rounds down by the margin the real one rounds up by, and
    /// one whose density has lost its ½ (¼e^{(l−ε)/2} → ½e^{(l−ε)/2}): each
    /// is caught on every case that has a density.
    #[test]
    fn wrong_leaves_are_caught() {
        let down = |e: i32, eps: f64| {
            let mut c = density_masses(e, eps);
            let g = 1.0 + 1.01 * (cell_ulps(eps, h_of(e)) + 2.0) * U;
            for m in c.m.iter_mut() {
                *m = (m.0 / (g * g), m.1 / (g * g));
            }
            c
        };
        let double = |e: i32, eps: f64| {
            let mut c = density_masses(e, eps);
            for m in c.m.iter_mut() {
                *m = (2.0 * m.0, 2.0 * m.1);
            }
            c
        };
        let live: Vec<(f64, i32)> = cases().into_iter().filter(|c| c.0 >= TINY_EPS).collect();
        let mut docs: Vec<Value> = live.iter().map(|&(eps, e)| doc(eps, e, down)).collect();
        docs.extend(live.iter().map(|&(eps, e)| doc(eps, e, double)));
        let Some(verdicts) = run(docs) else { return };
        for (i, v) in verdicts.into_iter().enumerate() {
            match v {
                Err(m) => eprintln!("wrong leaf {i} caught: {m}"),
                Ok(_) => panic!("wrong leaf {i} passed"),
            }
        }
    }

    #[test]
    fn degenerate_parameters_stay_sound() {
        for eps in [1e300, f64::NAN] {
            let g = laplace_leaf(-3, eps);
            assert_eq!((g.inf, g.mass()), (1.0, 0.0));
        }
        // tiny ε: the density is moved whole to +ε, total mass ≥ 1
        let g = laplace_leaf(-1000, 1e-290);
        assert!(g.mass() >= 1.0 && g.mass() < 1.0 + 1e-12, "{}", g.mass());
    }
}
