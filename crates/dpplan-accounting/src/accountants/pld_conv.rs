//! Convolution of the PLD accountant's grid masses with a proven per-entry
//! upper bound (the "error budget" of [`super::pld`]).
//!
//! Every grid vector the PLD accountant keeps dominates the masses of a
//! genuine dominating pair in the upper-cumulative order (see `pld.rs`); the
//! steps it applies preserve that order and δ(ε) is monotone in it. A
//! convolution of two stored vectors therefore only has to return, for every
//! output entry k, a number U_k ≥ c_k = Σ_{i+j=k} a_i b_j (entrywise ≥
//! implies the order).
//!
//! * **Direct** (short inputs): c_k is a sum of m ≤ min(|a|, |b|) non-negative
//!   products, computed with relative error ≤ γ_{m+1} (Higham 2002, §3.1);
//!   U_k = ĉ_k·(1 + 1.01(m + 3)u). Products that underflow lose at most
//!   2^−1074 each; that absolute amount is returned for the ∞ atom.
//! * **FFT** (rustfft, power-of-two length n, L = log₂ n): the packed
//!   real-input convolution (z = a + i b, A_k = (Z_k + Z̄_{n−k})/2,
//!   B_k = (Z_k − Z̄_{n−k})/2i, c = F⁻¹(A⊙B)/n) has the per-entry bound
//!   |ĉ_k − c_k| ≤ η = (1+φ)[eζ(α+β) + e²ζ² + √2γ₂(α+eζ)(β+eζ)] + φαβ,
//!   α = ‖a‖₂, β = ‖b‖₂, ζ² = α² + β², φ = (1+η_s)^L − 1, e = φ(1+u) + u.
//!   Derivation: the forward transform errs by ≤ φ‖Z‖₂ = φ√n ζ in ℓ2
//!   (Higham 2002, Thm 24.2, stage error η_s = μ + γ₄(√2 + μ) for twiddles
//!   accurate to μ); unpacking adds ≤ u relative; the products' errors sum
//!   in ℓ1 to ≤ n[eζ(α+β) + e²ζ² + √2γ₂…] by Cauchy–Schwarz and Parseval
//!   (‖A‖₂ = √n α); every output of the inverse transform is a linear form
//!   in P with coefficients of modulus 1, so it errs by ≤ ‖ΔP‖₁ from the
//!   products and by ≤ φ‖P̂‖₁ ≤ φ(n αβ + ‖ΔP‖₁) from its own stages (the same
//!   per-stage analysis, componentwise); dividing by n (exact) gives η.
//!   `b` is first scaled by a power of two (exact) so that α/β ∈ [2^−½, 2^½],
//!   which keeps ζ² ≤ 2.13 αβ. We take η_s = [`FFT_STAGE_ULPS`]·u = 32u:
//!   rustfft's twiddles come from one `sin_cos` of a rounded angle (μ ≲ 8u)
//!   and its radix-4 / hard-coded butterflies are counted as two radix-2
//!   stages each (γ₄(√2 + μ) ≈ 5.7u per stage), so 32u has a margin of 2.
//!   Negative ĉ_k are allowed (U_k = ĉ_k + η ≥ c_k ≥ 0 regardless).
//! * **Exponential tilting** (Keich 2005, "sFFT"): η is absolute, ≈ 10⁻¹⁶ of
//!   the largest entries, so alone it swamps upper-tail masses below that —
//!   exactly the masses a small δ depends on. Tilting commutes with
//!   convolution: with a'_i = a_i e^{c(i − i₀)}, b'_j = b_j e^{c(j − j₀)},
//!   (a'∗b')_k = c_k e^{c(k − i₀ − j₀)}. A second FFT pass on the tilted
//!   inputs bounds the upper tail with *relative* accuracy where it matters:
//!   U^θ_k = (ĉ'_k + η')·e^{−c(k − i₀ − j₀)}, the bound decaying like e^{−ck}.
//!   The final bound is U_k = min(U⁰_k, U^θ_k) (both are upper bounds).
//!   Rounding of the tilt: the factors e^{cm}, |cm| ≤ X, come from
//!   [`exp_ramp`] within R = [`ramp_ulps`]`(X)` ulps (rounded exponent, one
//!   `libm::exp` per block, products by e^{±c}); two input factors, one
//!   output factor and three products: U^θ_k is multiplied by
//!   1 + 1.01(3R + 6)u. Tilted inputs
//!   that would underflow are raised to the least normal number (only ever
//!   upwards). The tilt is chosen by the caller (c = θh with θ = z_τ/s, s
//!   the output's standard deviation, z_τ the normal quantile of the
//!   truncation threshold, so that the tilted mass peaks where the upper
//!   tail is cut); the pass is skipped when the untilted bound's total
//!   n·η already fits in the caller's budget.

use crate::special::{ELEM_ULPS, U};
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

/// Error of one radix-2 FFT stage, in units of u (see the module doc).
pub(crate) const FFT_STAGE_ULPS: f64 = 32.0;
/// Largest |c·m| used in a tilt (keeps every factor finite and normal).
const MAX_TILT_EXP: f64 = 600.0;
/// Inputs at most this long on one side, or this small in product, are
/// convolved directly.
const DIRECT_MIN: usize = 48;
const DIRECT_PRODUCT: u64 = 1 << 15;

/// What the error budget spent, for the accountant's detail string.
#[derive(Debug, Default, Clone)]
pub(crate) struct ConvStats {
    pub direct: usize,
    pub fft: usize,
    pub tilted: usize,
    /// Σ over FFT convolutions of the added round-off mass Σ_k (U_k − ĉ_k)
    pub added_mass: f64,
    /// largest relative rounding factor applied (direct or tilt)
    pub max_rel: f64,
    /// each term of `added_mass` in order, when kept ([`ConvStats::logged`]):
    /// a composition forked onto another thread hands its terms back to be
    /// added in the order one thread would have added them
    pub added_terms: Option<Vec<f64>>,
}

impl ConvStats {
    /// Statistics that keep each added term.
    pub(crate) fn logged() -> Self {
        ConvStats {
            added_terms: Some(Vec::new()),
            ..ConvStats::default()
        }
    }

    fn add_mass(&mut self, m: f64) {
        self.added_mass += m;
        if let Some(t) = &mut self.added_terms {
            t.push(m);
        }
    }

    /// `other`'s work counted after this one's, as if done here in order:
    /// counts added, the largest factor kept, and the added mass summed term
    /// by term (the same float as one thread's running sum).
    pub(crate) fn append(&mut self, other: ConvStats) {
        self.direct += other.direct;
        self.fft += other.fft;
        self.tilted += other.tilted;
        self.max_rel = self.max_rel.max(other.max_rel);
        for m in other.added_terms.unwrap_or_default() {
            self.add_mass(m);
        }
    }
}

pub(crate) struct Convolver {
    planner: FftPlanner<f64>,
    /// rustfft's scratch space, kept between transforms (`process` would
    /// allocate and zero a new one for each; its contents never reach a
    /// result)
    scratch: Vec<Complex<f64>>,
    pub stats: ConvStats,
}

/// 2^k for |k| ≤ 1000, exactly.
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k.clamp(-1000, 1000) + 1023) as u64) << 52)
}

/// ‖x‖₂ rounded up: scaled by the largest entry so no square underflows;
/// relative error ≤ (n/2 + 4)u ≪ 10⁻⁶ for n ≤ 2^23, inflated by 1e-6.
fn norm2(x: &[f64]) -> f64 {
    let m = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if m == 0.0 || !m.is_finite() {
        return m;
    }
    let r = 1.0 / m;
    m * x.iter().map(|v| (v * r) * (v * r)).sum::<f64>().sqrt() * (1.0 + 1e-6)
}

/// The per-entry bound η of the module doc, for length n and norms α, β
/// (rounded up: every operation is positive, inflated by 1e-6 ≫ 40u).
pub(crate) fn fft_entry_bound(n: usize, alpha: f64, beta: f64) -> f64 {
    let l = (n.max(2) as f64).log2().ceil();
    let eta_s = FFT_STAGE_ULPS * U;
    let phi = (1.0 + eta_s).powf(l) - 1.0;
    let e = phi * (1.0 + U) + U;
    let zeta = (alpha * alpha + beta * beta).sqrt();
    let g2 = 2.0 * U / (1.0 - 2.0 * U);
    let prod = std::f64::consts::SQRT_2 * g2 * (alpha + e * zeta) * (beta + e * zeta);
    let eta =
        (1.0 + phi) * (e * zeta * (alpha + beta) + e * e * zeta * zeta + prod) + phi * alpha * beta;
    eta * (1.0 + 1e-6)
}

impl Convolver {
    pub(crate) fn new() -> Self {
        Convolver {
            planner: FftPlanner::new(),
            scratch: Vec::new(),
            stats: ConvStats::default(),
        }
    }

    /// A convolver whose statistics keep each added term, for a composition
    /// forked onto another thread ([`ConvStats::append`]).
    pub(crate) fn logged() -> Self {
        Convolver {
            stats: ConvStats::logged(),
            ..Convolver::new()
        }
    }

    /// Entrywise upper bounds U_k ≥ (a ∗ b)_k, and an absolute amount of
    /// underflow mass the caller adds to the ∞ atom. `tilt` is c ≥ 0 per grid
    /// index; `budget` the added mass below which no tilted pass is needed.
    pub(crate) fn convolve(
        &mut self,
        a: &[f64],
        b: &[f64],
        tilt: f64,
        budget: f64,
    ) -> (Vec<f64>, f64) {
        let n_out = a.len() + b.len() - 1;
        if a.len().min(b.len()) <= DIRECT_MIN
            || (a.len() as u64) * (b.len() as u64) <= DIRECT_PRODUCT
        {
            return self.direct(a, b);
        }
        self.stats.fft += 1;
        let (c0, eta0) = self.fft_pass(a, b, n_out);
        // a non-finite entry (impossible for finite inputs) becomes +∞: sound,
        // and the accountant then reports no finite ε
        let mut out: Vec<f64> = c0
            .iter()
            .map(|&c| match (c + eta0) * (1.0 + 3.0 * U) {
                v if v.is_finite() => v.max(0.0),
                _ => f64::INFINITY,
            })
            .collect();
        let untilted_mass = eta0 * n_out as f64;
        if tilt > 0.0 && untilted_mass > budget {
            self.tilted_pass(a, b, tilt, &mut out);
        }
        let added: f64 = out.iter().zip(&c0).map(|(u, c)| u - c.max(0.0)).sum();
        self.stats.add_mass(added.max(0.0));
        // unscaling by a power of two may round a subnormal: ≤ 2^−1074 each
        (out, n_out as f64 * pow2(-1000) * pow2(-74))
    }

    fn direct(&mut self, a: &[f64], b: &[f64]) -> (Vec<f64>, f64) {
        self.stats.direct += 1;
        let n_out = a.len() + b.len() - 1;
        let mut out = vec![0.0; n_out];
        for (i, &x) in a.iter().enumerate() {
            if x == 0.0 {
                continue;
            }
            for (j, &y) in b.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        let m = a.len().min(b.len()) as f64;
        let grow = 1.0 + 1.01 * (m + 3.0) * U;
        self.stats.max_rel = self.stats.max_rel.max(grow - 1.0);
        for v in out.iter_mut() {
            *v *= grow;
        }
        // each of the m products of an entry may underflow by ≤ 2^−1074
        let floor = n_out as f64 * (m + 1.0) * pow2(-1000) * pow2(-74);
        (out, floor)
    }

    /// Second pass on exponentially tilted inputs; lowers `out` where the
    /// tilted bound is smaller.
    fn tilted_pass(&mut self, a: &[f64], b: &[f64], tilt: f64, out: &mut [f64]) {
        let n_out = out.len();
        let c = tilt.min(MAX_TILT_EXP / n_out as f64);
        if c <= 0.0 || c.is_nan() {
            return;
        }
        self.stats.tilted += 1;
        // exponents c·(i − top) ≤ 0 on the inputs, c·(top_out − k) ≥ 0 back
        let ta = tilt_vec(a, c);
        let tb = tilt_vec(b, c);
        let (ct, eta) = self.fft_pass(&ta.0, &tb.0, n_out);
        let x_max = c * n_out as f64;
        let grow = 1.0 + 1.01 * (3.0 * ramp_ulps(x_max) + 6.0) * U;
        self.stats.max_rel = self.stats.max_rel.max(grow - 1.0);
        // the two normalisations are undone one after the other (each 2^−s is
        // a normal number; their product alone could underflow)
        let (ua, ub) = (pow2(-ta.1), pow2(-tb.1));
        let back = exp_ramp(c, (n_out - 1) as f64, -1.0, n_out);
        for ((k, o), f) in out.iter_mut().enumerate().zip(back) {
            let u = (ct[k] + eta) * grow * f * ua * ub;
            // NaN never replaces a bound (the comparison is false)
            if u < *o {
                *o = u;
            }
        }
    }

    /// The forward or inverse FFT of `x` in place, in the kept scratch.
    fn transform(&mut self, x: &mut [Complex<f64>], forward: bool) {
        let fft = if forward {
            self.planner.plan_fft_forward(x.len())
        } else {
            self.planner.plan_fft_inverse(x.len())
        };
        let need = fft.get_inplace_scratch_len();
        if self.scratch.len() < need {
            self.scratch.resize(need, Complex::new(0.0, 0.0));
        }
        fft.process_with_scratch(x, &mut self.scratch[..need]);
    }

    /// One packed real-input FFT convolution: (ĉ, η) with |ĉ_k − c_k| ≤ η.
    fn fft_pass(&mut self, a: &[f64], b: &[f64], n_out: usize) -> (Vec<f64>, f64) {
        let (alpha, beta) = (norm2(a), norm2(b));
        if alpha == 0.0 || beta == 0.0 {
            return (vec![0.0; n_out], 0.0);
        }
        // balance the norms with an exact power of two on the smaller one
        let k = ((alpha / beta).log2().round() as i32).clamp(-900, 900);
        let (sa, sb) = if k >= 0 {
            (1.0, pow2(k))
        } else {
            (pow2(-k), 1.0)
        };
        let n = n_out.next_power_of_two();
        let mut z: Vec<Complex<f64>> = (0..n)
            .map(|i| {
                Complex::new(
                    a.get(i).map_or(0.0, |x| x * sa),
                    b.get(i).map_or(0.0, |y| y * sb),
                )
            })
            .collect();
        self.transform(&mut z, true);
        let mut prod: Vec<Complex<f64>> = (0..n)
            .map(|k| {
                let zk = z[k];
                let zc = z[(n - k) % n].conj();
                let ak = (zk + zc) * 0.5;
                let bk = (zk - zc) * Complex::new(0.0, -0.5);
                ak * bk
            })
            .collect();
        self.transform(&mut prod, false);
        // 1/n and 1/(sa·sb) are powers of two: exact unless the result is
        // subnormal (≤ 2^−1074 absolute, covered by the last term)
        let unscale = 1.0 / (sa * sb);
        let scale = unscale / n as f64;
        let out: Vec<f64> = prod[..n_out].iter().map(|c| c.re * scale).collect();
        let eta = fft_entry_bound(n, alpha * sa, beta * sb) * unscale + pow2(-1000) * pow2(-73);
        (out, eta)
    }
}

/// a_i·e^{c(i − top)}·2^s with s an exact power-of-two normalisation (the
/// largest tilted entry near 1); positive entries never below the least
/// normal number. Returns the vector and s.
fn tilt_vec(a: &[f64], c: f64) -> (Vec<f64>, i32) {
    let top = (a.len() - 1) as f64;
    let mut best = f64::NEG_INFINITY;
    for (i, &x) in a.iter().enumerate() {
        if x > 0.0 {
            // the binary exponent is enough: s only keeps the numbers normal
            let e2 = ((x.to_bits() >> 52) & 0x7ff) as f64 - 1023.0;
            best = best.max(e2 + c * (i as f64 - top) * std::f64::consts::LOG2_E);
        }
    }
    let s = if best.is_finite() {
        (-best.floor() as i32).clamp(-1000, 1000)
    } else {
        0
    };
    let p = pow2(s);
    let v = a
        .iter()
        .zip(exp_ramp(c, -top, 1.0, a.len()))
        .map(|(&x, f)| {
            if x > 0.0 {
                (x * p * f).max(f64::MIN_POSITIVE)
            } else {
                0.0
            }
        })
        .collect();
    (v, s)
}

/// Block length of [`exp_ramp`].
const RAMP_BLOCK: usize = 32;

/// exp(c·(m₀ + step·j)) for j < len, |c·(m₀ + step·j)| ≤ X: `libm::exp` at
/// the start of every block of [`RAMP_BLOCK`], products by r = exp(c·step)
/// within it. Relative error ≤ [`ramp_ulps`]`(X)`·u: the rounded exponent
/// (X u), one exp, and up to 31 products by r (each its exp and a rounding).
fn exp_ramp(c: f64, m0: f64, step: f64, len: usize) -> Vec<f64> {
    let r = libm::exp(c * step);
    let mut v: Vec<f64> = Vec::with_capacity(len);
    for j in 0..len {
        let f = if j % RAMP_BLOCK == 0 {
            libm::exp(c * (m0 + step * j as f64))
        } else {
            v[j - 1] * r
        };
        v.push(f);
    }
    v
}

fn ramp_ulps(x_max: f64) -> f64 {
    1.01 * (x_max + ELEM_ULPS + (RAMP_BLOCK as f64 - 1.0) * (ELEM_ULPS + 1.0) + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// masses ∝ e^{−x²/2}·(1 + ½ sin 7x) on `n` points over ±`span` standard
    /// deviations (wiggles so that nothing is symmetric by accident)
    fn bumpy(n: usize, span: f64) -> Vec<f64> {
        let v: Vec<f64> = (0..n)
            .map(|i| {
                let x = -span + 2.0 * span * i as f64 / (n - 1) as f64;
                (-0.5 * x * x).exp() * (1.0 + 0.5 * (7.0 * x).sin())
            })
            .collect();
        let s: f64 = v.iter().sum();
        v.into_iter().map(|x| x / s).collect()
    }

    /// direct convolution: non-negative sums, relative error ≤ (m + 1)u
    fn exact(a: &[f64], b: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; a.len() + b.len() - 1];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        out
    }

    #[test]
    fn fft_bounds_hold_entrywise_and_the_tilt_makes_the_tail_relative() {
        let a = bumpy(3000, 12.0);
        let b = bumpy(1700, 11.0);
        let c = exact(&a, &b);
        let rel = (a.len().min(b.len()) as f64 + 2.0) * U;
        let mut conv = Convolver::new();
        // tilt: z ≈ 11 over the output's standard deviation in index units
        let sd = ((3000.0f64 / 24.0).powi(2) + (1700.0f64 / 22.0).powi(2)).sqrt();
        let (up, _) = conv.convolve(&a, &b, 11.0 / sd, 0.0);
        let (flat, _) = conv.convolve(&a, &b, 0.0, 0.0);
        assert_eq!(conv.stats.tilted, 1);
        let mut worst_tail: f64 = 0.0;
        for k in 0..c.len() {
            // never below the exact value (which the direct sum knows to (m+1)u)
            assert!(up[k] >= c[k] * (1.0 - rel), "k = {k}: {} < {}", up[k], c[k]);
            assert!(flat[k] >= c[k] * (1.0 - rel), "k = {k}");
            assert!(up[k] <= flat[k]);
            // upper tail, masses down to 1e-40: the tilted bound is relative
            if k > c.len() * 3 / 4 && c[k] > 1e-40 {
                worst_tail = worst_tail.max(up[k] / c[k] - 1.0);
            }
        }
        assert!(
            worst_tail < 1e-6,
            "tilted tail bound {worst_tail:e} relative"
        );
        // negative control: without the tilt the bound at a 1e-30 entry is
        // absolute (≈ 1e-16 of the peak), far above the entry itself
        let k = (c.len() * 3 / 4..c.len()).find(|&k| c[k] < 1e-30).unwrap();
        assert!(flat[k] > 1e6 * c[k] && up[k] < 2.0 * c[k]);
    }

    #[test]
    fn entry_bound_is_of_the_expected_size_and_grows_with_the_norms() {
        // ≈ 4·32·L·u·αβ for balanced norms (module doc), and linear in each norm
        let e = fft_entry_bound(1 << 14, 0.1, 0.1);
        let model = 4.0 * FFT_STAGE_ULPS * 14.0 * U * 0.01;
        assert!(e > 0.9 * model && e < 1.5 * model, "{e:e} vs {model:e}");
        assert!(fft_entry_bound(1 << 14, 0.2, 0.1) > 1.4 * e);
        assert!(fft_entry_bound(1 << 15, 0.1, 0.1) > e);
    }
}
