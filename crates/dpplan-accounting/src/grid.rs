//! The geometric grid {(1+r)^k : k ∈ ℤ} on which plans with many distinct
//! parameters are bucketed. Bucketing is sound only if a parameter is never
//! rounded *down* (every profile here grows with μ, ρ or ε), so the one
//! rounding here, [`GeometricGrid::round_up`], carries its guard.

/// The grid of ratio 1 + r, r > 0.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GeometricGrid {
    /// ln(1 + r)
    ln_step: f64,
}

impl GeometricGrid {
    pub(crate) fn new(ratio: f64) -> Self {
        GeometricGrid {
            ln_step: ratio.ln_1p(),
        }
    }

    /// k = ⌊ln x / ln(1+r)⌋ (x > 0): the cell [point(k), point(k+1)] of x,
    /// up to the round-off of ln and exp.
    pub(crate) fn index_below(&self, x: f64) -> i64 {
        (x.ln() / self.ln_step).floor() as i64
    }

    /// exp(k·ln(1+r)), the k-th grid point as computed (no guard).
    pub(crate) fn point(&self, k: i64) -> f64 {
        (k as f64 * self.ln_step).exp()
    }

    /// The grid point at or above x > 0: (k, v) with k = ⌈ln x / ln(1+r)⌉ and
    /// v = exp(k·ln(1+r))·(1 + 4u(|k| + 1)), u the unit round-off — more than
    /// the round-off of ln x, of k·ln(1+r) and of exp together, so every x
    /// with the same k gets the same v ≥ x — and, as a check that does not
    /// rest on that estimate, never below x itself.
    pub(crate) fn round_up(&self, x: f64) -> (i64, f64) {
        let k = (x.ln() / self.ln_step).ceil() as i64;
        let v = self.point(k) * (1.0 + 4.0 * f64::EPSILON * (k.unsigned_abs() as f64 + 1.0));
        (k, v.max(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_up_never_rounds_down_and_stays_on_the_grid() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for ratio in [1e-3, 1e-2] {
            let g = GeometricGrid::new(ratio);
            for i in 0..200_000 {
                let x = if i % 2 == 0 {
                    (1400.0 * next() - 700.0).exp()
                } else {
                    // exact grid points, where ln/exp round-off matters most
                    g.point((10_000.0 * next()) as i64 - 5_000)
                };
                let (k, v) = g.round_up(x);
                assert!(v >= x, "{x} rounded down to {v}");
                // the a-priori inflation alone already covers x (the max is a check)
                let bare =
                    g.point(k) * (1.0 + 4.0 * f64::EPSILON * (k.unsigned_abs() as f64 + 1.0));
                assert!(bare >= x, "{x}: inflation {bare} too small");
                // at most one grid step (plus the guard) above x
                assert!(v <= x * (1.0 + ratio) * (1.0 + 1e-11), "{x} → {v}");
                // the cell below contains x
                let j = g.index_below(x);
                assert!(g.point(j) <= x * (1.0 + 1e-12) && x <= g.point(j + 1) * (1.0 + 1e-12));
            }
            // negative control: just above a grid point is the next one, not that one
            let (k, v) = g.round_up(g.point(10) * (1.0 + 1e-9));
            assert_eq!(k, 11);
            assert!(v >= g.point(11));
        }
    }
}
