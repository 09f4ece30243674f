//! The shift vectors of a multi-coordinate discrete Gaussian, reduced to a
//! finite set of *shapes*.
//!
//! A query with m integer coordinates released with independent
//! N_ℤ(0, σ²) noise on each coordinate; a neighbouring dataset moves the
//! exact answer by an integer vector d. The pair of output distributions is
//! the product over coordinates of the one-dimensional pairs
//! (N_ℤ(0, σ²), N_ℤ(dᵢ, σ²)), so its privacy-loss distribution is the
//! convolution of the one-dimensional ones (Canonne, Kamath & Steinke 2020,
//! Thm 7, for each factor).
//!
//! **What the contribution bounds allow.** The checker bounds every d by
//! ‖d‖₁ ≤ Δ₁, ‖d‖₂ ≤ Δ₂, ‖d‖∞ ≤ Δ∞ (the most one unit can move one
//! coordinate: rows per group, or a clamp times it) and at most `coords`
//! non-zero coordinates. For integer-valued queries (the convention of the
//! one-coordinate case) this is the set of integer vectors with
//! Σ|dᵢ| ≤ A₁ = ⌊Δ₁⌋, max|dᵢ| ≤ A∞ = ⌊Δ∞⌋, Σdᵢ² ≤ R = ⌊Δ₂²⌋, at most G
//! non-zero entries — every neighbouring pair's d lies in it (a superset is
//! sound: the accountant bounds the worst member).
//!
//! **Shapes.** (i) The sign of dᵢ does not matter (y ↦ −y maps
//! N_ℤ(dᵢ, σ²) to N_ℤ(−dᵢ, σ²) and fixes N_ℤ(0, σ²)); (ii) nor does the
//! order of the coordinates; (iii) zero entries contribute nothing. So a
//! shape is a non-increasing sequence a₁ ≥ … ≥ a_k ≥ 1 of |dᵢ|. (iv)
//! **Monotonicity**: raising one entry by one gives a dominating pair.
//! In one dimension the family N_ℤ(t, σ²) has a monotone likelihood ratio
//! (ln P_t/P_0 (y) = (2ty − t²)/2σ² increases in y), so for every t > 0 the
//! most powerful tests of P_0 against P_t are the same randomised threshold
//! tests on y (Neyman–Pearson), and their type-II error P_t[accept]
//! decreases in t (Y + t is stochastically increasing): the trade-off
//! function T(P_0, P_{t+1}) ≤ T(P_0, P_t). By Blackwell's theorem (Dong,
//! Roth & Su 2019, Thm 2.10) the pair for t is then a post-processing of the
//! pair for t + 1, applied to one coordinate it is one for the products, and
//! post-processing only lowers the hockey-stick curve. Hence only the
//! **maximal** shapes matter: those where no entry can be raised by one
//! and no entry 1 appended without leaving the set. A non-maximal shape is
//! below a maximal one coordinate by coordinate (raise the first entry
//! where they differ; the set is closed downwards).
//!
//! [`maximal_shapes`] enumerates them by depth-first search with two
//! prunings that only discard non-maximal shapes (a shape that can still
//! take another entry is extended; a new run of value v < A∞ that can
//! neither reach the ℓ1 bound nor be stopped by the ℓ2 bound could be
//! raised). The search is capped ([`MAX_SHAPES`], [`MAX_NODES`]); beyond
//! the cap the accountant says so and the plan keeps RDP.

/// At most this many maximal shapes are accounted (each costs a few
/// convolutions); more and the PLD declines (RDP is used).
pub(crate) const MAX_SHAPES: usize = 48;
/// At most this many search nodes.
pub(crate) const MAX_NODES: usize = 200_000;
/// Largest integer bound accepted (keeps Σdᵢ² and the grid exact).
const MAX_BOUND: f64 = (1u64 << 40) as f64;

/// The integer bounds on a shift vector (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ShapeBound {
    /// A₁: Σ|dᵢ| ≤ l1
    pub l1: u64,
    /// A∞: max |dᵢ| ≤ linf
    pub linf: u64,
    /// R: Σdᵢ² ≤ l2sq
    pub l2sq: u64,
    /// G: at most `coords` non-zero entries
    pub coords: u64,
}

/// ⌊x⌋ of the real value a float x carries, allowing x to be up to 4
/// roundings (4u relative) above it: ⌈x(1 − 6u)⌉ ≥ ⌊x_true⌋ while an
/// integer x_true below 2⁴⁰ stays itself.
fn floor_of_rounded(x: f64) -> u64 {
    let u = f64::EPSILON / 2.0;
    (x * (1.0 - 6.0 * u)).ceil().max(0.0) as u64
}

impl ShapeBound {
    /// From the float sensitivities: `None` when Δ∞ is not given (0) or a
    /// bound is out of range (the PLD then does not apply).
    pub(crate) fn new(l1: f64, l2: f64, linf: f64, coords: u64) -> Option<Self> {
        let ok = |x: f64| x.is_finite() && x > 0.0 && x <= MAX_BOUND;
        if !(ok(l1) && ok(l2) && ok(linf)) || l2 * l2 > MAX_BOUND {
            return None;
        }
        let a1 = floor_of_rounded(l1);
        let r = floor_of_rounded(l2 * l2);
        let ainf = floor_of_rounded(linf).min(a1).min(isqrt(r));
        if ainf == 0 || coords == 0 {
            return None;
        }
        Some(ShapeBound {
            l1: a1,
            linf: ainf,
            l2sq: r,
            coords: coords.min(a1),
        })
    }

    /// The largest ‖d‖₂ of the set (for the grid's resolution).
    pub(crate) fn l2_max(&self) -> f64 {
        let by_l1 = self.l1 as f64 * self.linf as f64;
        (self.l2sq as f64).min(by_l1).sqrt()
    }
}

fn isqrt(r: u64) -> u64 {
    let mut s = (r as f64).sqrt() as u64;
    while s * s > r {
        s -= 1;
    }
    while (s + 1) * (s + 1) <= r {
        s += 1;
    }
    s
}

/// A shape as runs (value, multiplicity), values decreasing.
pub(crate) type Shape = Vec<(u64, u64)>;

struct Search<'a> {
    b: &'a ShapeBound,
    seq: Vec<u64>,
    out: Vec<Shape>,
    nodes: usize,
}

impl Search<'_> {
    /// Can the sequence take one more entry 1?
    fn can_append(&self, sum: u64, sq: u64) -> bool {
        (self.seq.len() as u64) < self.b.coords && sum < self.b.l1 && sq < self.b.l2sq
    }

    /// Is the finished sequence maximal (no entry can be raised by one)?
    fn maximal(&self, sum: u64, sq: u64) -> bool {
        if self.can_append(sum, sq) {
            return false;
        }
        if sum >= self.b.l1 {
            return true;
        }
        // raising the first entry of a run keeps the order
        self.seq.iter().enumerate().all(|(i, &a)| {
            let first_of_run = i == 0 || self.seq[i - 1] > a;
            !first_of_run || a >= self.b.linf || sq + 2 * a + 1 > self.b.l2sq
        })
    }

    fn go(&mut self, sum: u64, sq: u64) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > MAX_NODES || self.out.len() > MAX_SHAPES {
            return Err(format!(
                "more than {MAX_SHAPES} maximal shift shapes (or {MAX_NODES} search steps)"
            ));
        }
        if !self.can_append(sum, sq) {
            if self.maximal(sum, sq) {
                self.out.push(runs(&self.seq));
            }
            return Ok(());
        }
        let b = *self.b;
        let last = self.seq.last().copied().unwrap_or(b.linf);
        let top = last.min(b.l1 - sum).min(isqrt(b.l2sq - sq));
        let slots_after = b.coords - self.seq.len() as u64 - 1;
        for v in (1..=top).rev() {
            let new_run = v < last || self.seq.is_empty();
            if new_run && v < b.linf {
                // the rest holds at most v each: if Σ cannot reach A₁, the
                // entry must end up blocked by the ℓ2 bound, else it could rise
                let sum_max = sum + v * (slots_after + 1);
                let sq_max = sq + v * v * (slots_after + 1);
                if sum_max < b.l1 && sq_max + 2 * v < b.l2sq {
                    continue;
                }
            }
            self.seq.push(v);
            let r = self.go(sum + v, sq + v * v);
            self.seq.pop();
            r?;
        }
        Ok(())
    }
}

fn runs(seq: &[u64]) -> Shape {
    let mut out: Shape = Vec::new();
    for &a in seq {
        match out.last_mut() {
            Some((v, n)) if *v == a => *n += 1,
            _ => out.push((a, 1)),
        }
    }
    out
}

/// The maximal shapes of the set (module doc), or why not.
pub(crate) fn maximal_shapes(b: &ShapeBound) -> Result<Vec<Shape>, String> {
    // every coordinate full: one shape, whatever the search would visit
    if b.coords.saturating_mul(b.linf) <= b.l1 && b.coords.saturating_mul(b.linf * b.linf) <= b.l2sq
    {
        return Ok(vec![vec![(b.linf, b.coords)]]);
    }
    let mut s = Search {
        b,
        seq: Vec::new(),
        out: Vec::new(),
        nodes: 0,
    };
    s.go(0, 0)?;
    Ok(s.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// every non-increasing sequence in the set, by brute force
    fn brute(b: &ShapeBound) -> Vec<Vec<u64>> {
        fn rec(b: &ShapeBound, seq: &mut Vec<u64>, out: &mut Vec<Vec<u64>>) {
            out.push(seq.clone());
            if seq.len() as u64 == b.coords {
                return;
            }
            let last = seq.last().copied().unwrap_or(b.linf);
            for v in 1..=last {
                seq.push(v);
                let s: u64 = seq.iter().sum();
                let q: u64 = seq.iter().map(|x| x * x).sum();
                if s <= b.l1 && q <= b.l2sq {
                    rec(b, seq, out);
                }
                seq.pop();
            }
        }
        let mut out = vec![];
        rec(b, &mut vec![], &mut out);
        out
    }

    fn below(a: &[u64], b: &[u64]) -> bool {
        a.len() <= b.len() && a.iter().zip(b).all(|(x, y)| x <= y)
    }

    fn flat(s: &Shape) -> Vec<u64> {
        s.iter()
            .flat_map(|&(v, n)| std::iter::repeat_n(v, n as usize))
            .collect()
    }

    #[test]
    fn maximal_shapes_are_exactly_the_undominated_members() {
        for l1 in 1..=9 {
            for linf in 1..=4 {
                for l2sq in [1, 2, 3, 5, 8, 13, 30, 100] {
                    for coords in 1..=5 {
                        let b = ShapeBound {
                            l1,
                            linf,
                            l2sq,
                            coords,
                        };
                        let all = brute(&b);
                        let want: Vec<Vec<u64>> = all
                            .iter()
                            .filter(|s| !s.is_empty())
                            .filter(|s| !all.iter().any(|t| t != *s && below(s, t)))
                            .cloned()
                            .collect();
                        let mut got: Vec<Vec<u64>> =
                            maximal_shapes(&b).unwrap().iter().map(flat).collect();
                        got.sort();
                        let mut want = want;
                        want.sort();
                        assert_eq!(got, want, "{b:?}");
                        // and every member is below one of them
                        for s in &all {
                            assert!(got.iter().any(|t| below(s, t)), "{b:?}: {s:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bounds_from_floats() {
        // √2 squared is 2.0000000000000004: still R = 2
        let b = ShapeBound::new(2.0, 2f64.sqrt(), 1.0, 2).unwrap();
        assert_eq!((b.l1, b.linf, b.l2sq, b.coords), (2, 1, 2, 2));
        assert_eq!(maximal_shapes(&b).unwrap(), vec![vec![(1, 2)]]);
        // a histogram, 10 rows, 4 groups of at most 3: 3,3,3,1
        let b = ShapeBound::new(10.0, 28f64.sqrt(), 3.0, 4).unwrap();
        let s = maximal_shapes(&b).unwrap();
        assert_eq!(s, vec![vec![(3, 3), (1, 1)], vec![(3, 2), (2, 2)]]);
        // full groups: one shape without searching
        let b = ShapeBound::new(2000.0, (20.0f64 * 20.0 * 100.0).sqrt(), 20.0, 100).unwrap();
        assert_eq!(maximal_shapes(&b).unwrap(), vec![vec![(20, 100)]]);
        // no Δ∞: not applicable
        assert_eq!(ShapeBound::new(2.0, 2.0, 0.0, 2), None);
        // too many shapes: said so
        let b = ShapeBound::new(60.0, 60.0, 30.0, 30).unwrap();
        assert!(maximal_shapes(&b).is_err());
    }
}
