#!/usr/bin/env python3
"""120-digit reference for the PLD accountant's Laplace leaf
(crates/dpplan-accounting/src/accountants/pld_laplace.rs, its tests).

Reads {"cases": [...]} on stdin, writes {"cases": [...]} on stdout. Every
float arrives as Rust's shortest round-trip repr, so float(text) is the very
double the leaf stored and mpf(float) is exact.

A case: eps, e (the grid is k*2^e), the density's masses `cells` as
[M_lo, M_hi] per cell starting at grid index k0 (lower end of cell i at
k0 + i, upper end at k0 + i + 1), `moved` (mass moved to `top`, the lowest
grid index >= eps), and the whole leaf `leaf` (masses from index `lo`, plus `inf`).

The exact masses are computed here independently of the leaf's closed form
(which factors the split through the cell's midpoint): for the part [a, b]
of cell [T, T + h] inside [-eps, eps], with f(l) = e^{(l-eps)/2}/4 and
w(l) = (1 - e^{-(l-T)})/(1 - e^{-h}),
  F0 = int_a^b f = (e^{(b-eps)/2} - e^{(a-eps)/2})/2,
  F1 = int_a^b f(l) e^{-(l-T)} dl = e^{T-eps/2}(e^{-a/2} - e^{-b/2})/2,
  M_hi = (F0 - F1)/(1 - e^{-h}),  M_lo = F0 - M_hi
(the antiderivatives checked by mpmath.quad on three cells of every case).
The atoms 1/2 at +eps and e^{-eps}/2 at -eps are split with the exact w.

Per case the answer gives, for each stored quantity X against its exact
value X*: the nearest float of X*, cmp = sign(X - X*) and rel = (X - X*)/X*
(as floats; the signs are exact):
  cells   every M_lo, M_hi
  cells_p the density's total P-mass (stored, moved included) vs the closed
          form (1 - e^{-eps})/2
  cells_q its e^{-l}-weighted mass, closed form also (1 - e^{-eps})/2
  tails   the leaf's upper-cumulative masses sum_{i >= j} p_i + inf
  leaf_p  the leaf's total P-mass vs 1
  leaf_q  the leaf's e^{-l}-weighted mass (+inf carries none) vs 1
"""
import json
import sys

from mpmath import mp, mpf, exp, expm1, floor, log10, quad

mp.dps = 120


def verdict(x, exact):
    d = x - exact
    cmp = 0 if d == 0 else (1 if d > 0 else -1)
    rel = d / exact if exact != 0 else (mpf(0) if d == 0 else mpf(10) ** 300)
    return {"exact": float(exact), "cmp": cmp, "rel": float(max(min(rel, 10**300), -10**300))}


def exact_cells(eps, h, k0, n):
    out = []
    f = lambda l: exp((l - eps) / 2) / 4
    for i in range(n):
        t = (k0 + i) * h
        a, b = max(t, -eps), min(t + h, eps)
        if b <= a:
            out.append((mpf(0), mpf(0)))
            continue
        f0 = (exp((b - eps) / 2) - exp((a - eps) / 2)) / 2
        f1 = exp(t - eps / 2) * (exp(-a / 2) - exp(-b / 2)) / 2
        hi = (f0 - f1) / -expm1(-h)
        out.append((f0 - hi, hi))
    live = [i for i in range(n) if out[i][0] + out[i][1] > 0]
    for i in [live[0], live[len(live) // 2], live[-1]]:
        t = (k0 + i) * h
        a, b = max(t, -eps), min(t + h, eps)
        w = lambda l: -expm1(-(l - t)) / -expm1(-h)
        scale = out[i][0] + out[i][1]  # quad's tolerance is absolute
        q = quad(lambda l: f(l) * w(l) / scale, [a, b])
        assert abs(q - out[i][1] / scale) <= mpf(10) ** -60, (i, q)
    return out


def split(l, m, h, grid):
    k = int(floor(l / h))
    u = l - k * h
    w = -expm1(-u) / -expm1(-h)
    grid[k] = grid.get(k, mpf(0)) + m * (1 - w)
    grid[k + 1] = grid.get(k + 1, mpf(0)) + m * w


def case(c):
    h = mpf(2) ** c["e"]
    # F0 - F1 cancels about 2|log10 h| digits
    mp.dps = 120 + 2 * max(0, int(-log10(h)))
    eps = mpf(c["eps"])
    half_mass = (1 - exp(-eps)) / 2
    exact = {}
    out = {}
    if c.get("cells") is not None:
        cells = [(mpf(a), mpf(b)) for a, b in c["cells"]]
        k0 = c["k0"]
        ex = exact_cells(eps, h, k0, len(cells))
        assert abs(sum(a + b for a, b in ex) - half_mass) <= mpf(10) ** -60
        out["cells"] = [[verdict(v, x) for v, x in zip(pair, xp)] for pair, xp in zip(cells, ex)]
        moved = mpf(c["moved"])
        out["moved_exact"] = float(sum(x for pair, xp in zip(cells, ex)
                                       for v, x in zip(pair, xp) if v == 0))
        p = sum(a + b for a, b in cells) + moved
        q = sum(a * exp(-(k0 + i) * h) + b * exp(-(k0 + i + 1) * h)
                for i, (a, b) in enumerate(cells)) + moved * exp(-c["top"] * h)
        out["cells_p"] = verdict(p, half_mass)
        out["cells_q"] = verdict(q, half_mass)
        for i, (a, b) in enumerate(ex):
            exact[k0 + i] = exact.get(k0 + i, mpf(0)) + a
            exact[k0 + i + 1] = exact.get(k0 + i + 1, mpf(0)) + b
    else:
        # the density exactly, through fine cells of the same grid
        k0 = int(floor(-eps / h))
        n = int(-floor(-eps / h)) - k0 + 1
        for i, (a, b) in enumerate(exact_cells(eps, h, k0, n)):
            exact[k0 + i] = exact.get(k0 + i, mpf(0)) + a
            exact[k0 + i + 1] = exact.get(k0 + i + 1, mpf(0)) + b
    split(eps, mpf(1) / 2, h, exact)
    split(-eps, exp(-eps) / 2, h, exact)
    lo = c["lo"]
    leaf = [mpf(x) for x in c["leaf"]]
    inf = mpf(c["inf"])
    assert all(lo <= k < lo + len(leaf) for k, x in exact.items() if x > 0), "grid range"
    tails = []
    acc, acc_x = inf, mpf(0)
    for i in reversed(range(len(leaf))):
        acc += leaf[i]
        acc_x += exact.get(lo + i, mpf(0))
        tails.append(verdict(acc, acc_x))
    out["tails"] = tails[::-1]
    out["leaf_p"] = verdict(sum(leaf) + inf, mpf(1))
    out["leaf_q"] = verdict(sum(x * exp(-(lo + i) * h) for i, x in enumerate(leaf)), mpf(1))
    return out


def main():
    doc = json.load(sys.stdin)
    json.dump({"cases": [case(c) for c in doc["cases"]]}, sys.stdout)


if __name__ == "__main__":
    main()
