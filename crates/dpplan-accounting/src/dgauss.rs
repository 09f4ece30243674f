//! The discrete Gaussian N_Z(0, σ²) (Canonne, Kamath & Steinke 2020): exact privacy
//! profile for an integer shift Δ (their Theorem 7), computed from tail-sum tables.

use crate::conversions::linear_rdp_closed_form_mu;
use crate::roots::{bisect, find_bracket, Bisection, Bracket, End};
use crate::special::{ELEM_ULPS, U};
use std::cmp::Ordering;

/// Largest σ for which the exact (table-based) treatment is used; larger σ fall back to
/// the zCDP bound ρ = Δ²/(2σ²) (CKS 2020, Proposition 5 / Theorem 14).
pub const MAX_EXACT_SIGMA: f64 = 2.0e4;

/// f(y) = e^{−y²/2σ²} for y = 0..=⌈40σ⌉ + 2: beyond ~38.6σ every term underflows
/// to 0, so this covers every representable weight.
fn weights(sigma: f64) -> Vec<f64> {
    let n_max = (40.0 * sigma).ceil() as usize + 2;
    let two_s2 = 2.0 * sigma * sigma;
    (0..=n_max)
        .map(|y| (-((y as f64) * (y as f64)) / two_s2).exp())
        .collect()
}

/// Z = f(0) + 2·Σ_{y≥1} f(y) from the weights of [`weights`], the tail summed
/// from its smallest terms up.
fn normaliser_of(f: &[f64]) -> f64 {
    let tail: f64 = f[1..].iter().rev().sum();
    (f[0] + tail) + tail
}

/// The normaliser Z(σ) = Σ_{y∈ℤ} e^{−y²/2σ²} of the discrete Gaussian
/// N_ℤ(0, σ²), whose mass at y is e^{−y²/2σ²}/Z (Canonne, Kamath & Steinke
/// 2020, Definition 1). Exact up to floating-point summation: the terms past
/// |y| = ⌈40σ⌉ + 2 underflow. Costs O(σ) exponentials; `None` unless
/// 0 < σ ≤ 2·10⁴ (`MAX_EXACT_SIGMA`).
pub fn discrete_gaussian_normaliser(sigma: f64) -> Option<f64> {
    if sigma.is_nan() || sigma <= 0.0 || sigma > MAX_EXACT_SIGMA {
        return None;
    }
    Some(normaliser_of(&weights(sigma)))
}

#[derive(Debug, Clone)]
pub struct DiscreteGaussian {
    pub sigma: f64,
    pub shift: i64,
    /// f(y) = exp(−y²/2σ²) for y = 0..=n_max
    f: Vec<f64>,
    /// s[n] = Σ_{y ≥ n} f(y)  (n = 0..=n_max+1)
    s: Vec<f64>,
    /// c[m] = Σ_{y=0}^{m} f(y)
    c: Vec<f64>,
    /// normaliser Z = Σ_{y∈Z} f(y) ([`discrete_gaussian_normaliser`])
    pub z: f64,
}

impl DiscreteGaussian {
    /// `None` if σ is too large for the exact tables.
    pub fn new(sigma: f64, shift: i64) -> Option<Self> {
        if sigma.is_nan() || sigma <= 0.0 || sigma > MAX_EXACT_SIGMA || shift < 0 {
            return None;
        }
        let f = weights(sigma);
        let n_max = f.len() - 1;
        let mut s = vec![0.0; n_max + 2];
        for n in (0..=n_max).rev() {
            s[n] = s[n + 1] + f[n];
        }
        let mut c = vec![0.0; n_max + 1];
        let mut acc = 0.0;
        for (m, v) in f.iter().enumerate() {
            acc += v;
            c[m] = acc;
        }
        let z = normaliser_of(&f);
        Some(DiscreteGaussian {
            sigma,
            shift,
            f,
            s,
            c,
            z,
        })
    }

    /// unnormalised f(y)
    pub fn weight(&self, y: i64) -> f64 {
        let a = y.unsigned_abs() as usize;
        if a < self.f.len() {
            self.f[a]
        } else {
            0.0
        }
    }

    pub fn n_max(&self) -> i64 {
        (self.f.len() - 1) as i64
    }

    /// unnormalised Σ_{y ≥ n} f(y)
    fn tail_ge(&self, n: i64) -> f64 {
        if n >= 0 {
            let n = n as usize;
            if n < self.s.len() {
                self.s[n]
            } else {
                0.0
            }
        } else {
            let m = (-n) as usize;
            let cm = if m < self.c.len() {
                self.c[m]
            } else {
                self.c[self.c.len() - 1]
            };
            cm + self.s[1]
        }
    }

    /// P[Y > x] for real x.
    pub fn sf(&self, x: f64) -> f64 {
        if x.is_nan() {
            return f64::NAN;
        }
        if x >= self.n_max() as f64 {
            return 0.0;
        }
        if x < -(self.n_max() as f64) {
            return 1.0;
        }
        let n = x.floor() as i64 + 1;
        (self.tail_ge(n) / self.z).min(1.0)
    }

    /// Privacy loss at output y for P = N_Z(0,σ²), Q = N_Z(Δ,σ²).
    pub fn loss(&self, y: i64) -> f64 {
        let d = self.shift as f64;
        (d * d - 2.0 * (y as f64) * d) / (2.0 * self.sigma * self.sigma)
    }

    /// Exact hockey-stick divergence δ(t) = P[Y > tσ²/Δ − Δ/2] − e^t P[Y > tσ²/Δ + Δ/2]
    /// (CKS 2020 Theorem 7), valid for every real t, as a proven upper bound.
    ///
    /// Error terms: the tables hold sums of at most n_max + 2 positive
    /// weights f(y) = exp(−y²/2σ²), each with ≤ 1500u + 2[`ELEM_ULPS`]u
    /// relative error (y² exact, 2σ² and the quotient 2u relative on an
    /// argument ≤ 745, then exp), so every table entry and Z carry
    /// η_t = 1.01(1500 + 2·ELEM_ULPS + n_max + 4)u; a quotient of two of them
    /// 2η_t + u. The thresholds tσ²/Δ ∓ Δ/2 are moved outwards by 4u of their
    /// terms' magnitudes (so rounding cannot cross an integer the wrong way),
    /// P[Y > ·] of the first is raised and of the second lowered by those
    /// factors, e^t lowered by [`ELEM_ULPS`], and the difference taken one
    /// step up. Under cancellation the positive terms f(y) − e^t f(y+Δ) are
    /// summed directly with the same factors, and the weights left after the
    /// sum stops are added in full (their tail sum, raised).
    pub fn delta(&self, t: f64) -> f64 {
        if self.shift == 0 {
            return if t >= 0.0 {
                0.0
            } else {
                (-libm::expm1(t) * (1.0 + 2.0 * ELEM_ULPS * U)).min(1.0)
            };
        }
        let d = self.shift as f64;
        let s2 = self.sigma * self.sigma;
        let eta_t = 1.01 * (1500.0 + 2.0 * ELEM_ULPS + self.n_max() as f64 + 4.0) * U;
        let eta_q = 2.0 * eta_t + 1.01 * U;
        let mid = t * s2 / d;
        let slack = 4.0 * U * (mid.abs() + d / 2.0) + 1e-300;
        let ca = mid - d / 2.0 - slack;
        let cb = mid + d / 2.0 + slack;
        let a = self.sf(ca) * (1.0 + eta_q);
        let et_lo = libm::exp(t) * (1.0 - 2.0 * ELEM_ULPS * U);
        let b = self.sf(cb) * (1.0 - eta_q);
        let v = (a - et_lo * b).next_up();
        if v > 1e-6 * a {
            return v.clamp(0.0, 1.0);
        }
        // severe cancellation: sum the positive terms f(y)(1 − e^{t − L'(y)}) directly,
        // where y ranges over y > ca and the pair term is f(y) − e^t f(y+Δ).
        let y0 = ca.floor() as i64 + 1;
        let grow = 1.0 + eta_t;
        let shrink = 1.0 - eta_t;
        let mut acc = 0.0;
        let mut n = 0.0;
        let mut y = y0;
        let rest = loop {
            let fy = self.weight(y);
            if fy == 0.0 && y > 0 {
                break 0.0;
            }
            let fyd = self.weight(y + self.shift);
            let term = fy * grow - et_lo * fyd * shrink;
            if term > 0.0 {
                acc += term;
                n += 1.0;
            }
            if y > 0 && fy < 1e-18 * acc {
                // what is left is at most Σ_{y' > y} f(y')
                break self.tail_ge(y + 1) * grow;
            }
            y += 1;
            if y > self.n_max() + 1 {
                break 0.0;
            }
        };
        let z_lo = self.z * (1.0 - eta_t);
        let direct =
            ((acc * (1.0 + 1.01 * (n + 4.0) * U) + rest) / z_lo * (1.0 + 2.0 * U)).next_up();
        direct.min(v.max(0.0)).clamp(0.0, 1.0)
    }

    /// Tightest ε ≥ 0 with δ(ε) ≤ delta (upper end of bisection bracket).
    pub fn epsilon(&self, delta: f64) -> f64 {
        if self.delta(0.0) <= delta {
            return 0.0;
        }
        if delta <= 0.0 {
            return f64::INFINITY;
        }
        let mu = self.shift as f64 / self.sigma;
        // upper bracket from the classical RDP bound of the same ρ = μ²/2 (CKS 2020 Prop 5)
        let hi = linear_rdp_closed_form_mu(mu, delta) + 1.0;
        let Bracket::Found { first_held: hi, .. } = find_bracket(
            hi,
            100,
            |x| Some(x * 2.0),
            |t| self.delta(t).partial_cmp(&delta) != Some(Ordering::Greater),
        ) else {
            return f64::INFINITY;
        };
        bisect(
            0.0,
            hi,
            &Bisection::arithmetic(1e-13, 1e-300, End::Upper),
            |t| self.delta(t) <= delta,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normaliser_against_independent_sums() {
        for &sigma in &[0.3, 0.5, 1.0, 2.5, 12.0, 80.0, 1000.0] {
            let z = discrete_gaussian_normaliser(sigma).unwrap();
            // direct sum over y ∈ [−N, N] in the opposite order (largest terms first)
            let n = (60.0 * sigma).ceil() as i64;
            let direct: f64 = (-n..=n)
                .map(|y| (-((y * y) as f64) / (2.0 * sigma * sigma)).exp())
                .sum();
            // (a naive sum of 2N + 1 terms is exact to (2N + 1)·u)
            assert!(
                (z - direct).abs() <= (2 * n + 1) as f64 * f64::EPSILON * direct,
                "σ={sigma}: {z} vs {direct}"
            );
            // Poisson summation: Z = σ√(2π)·Σ_k e^{−2π²σ²k²}
            let pi = std::f64::consts::PI;
            let dual: f64 = (-5..=5i32)
                .map(|k| (-2.0 * pi * pi * sigma * sigma * (k * k) as f64).exp())
                .sum();
            let poisson = sigma * (2.0 * pi).sqrt() * dual;
            assert!(
                (z - poisson).abs() <= 1e-14 * poisson,
                "σ={sigma}: {z} vs {poisson}"
            );
            // the tables use the same normaliser
            assert_eq!(DiscreteGaussian::new(sigma, 1).unwrap().z, z);
        }
        // negative controls: not the continuous normaliser at small σ, and σ matters
        let z = discrete_gaussian_normaliser(0.5).unwrap();
        assert!((z - 0.5 * (2.0 * std::f64::consts::PI).sqrt()).abs() > 1e-3);
        let a = discrete_gaussian_normaliser(12.0).unwrap();
        let b = discrete_gaussian_normaliser(12.0 * (1.0 + 1e-9)).unwrap();
        assert!(b > a);
        assert_eq!(discrete_gaussian_normaliser(0.0), None);
        assert_eq!(discrete_gaussian_normaliser(3e4), None);
    }
}
