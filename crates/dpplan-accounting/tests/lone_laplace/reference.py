#!/usr/bin/env python3
"""60-digit reference for one Laplace release's exact ε(δ)
(crates/dpplan-accounting/src/accountants/pld_laplace.rs,
`lone_laplace_epsilon`; its test: tests/it/lone_laplace.rs).

Reads {"cases": [{"b", "delta", "eps"}]} on stdin (floats as Rust's shortest
round-trip text, so mpf(float(text)) is the very double), writes
{"cases": [{"delta_at", "delta_below"}]}: the hockey-stick divergence
delta(x) = int (p(y) - e^x q(y))_+ dy of P = Lap(0, b), Q = Lap(1, b) (the
sensitivity is 1), at x = eps and at x = eps * (1 - 1e-9), by numerical
quadrature of the densities themselves, split where the integrand changes
form (0, the crossing point, 1): no closed form of the profile is used. The
pair (Q, P) has the same divergence by symmetry (y -> 1 - y), which is
checked on every case too.
"""
import json
import sys

from mpmath import mp, mpf, exp, quad, log, inf

mp.dps = 60


def divergence(b, x, swap=False):
    def p(y):
        return exp(-abs(y) / b) / (2 * b)

    def q(y):
        return exp(-abs(y - 1) / b) / (2 * b)

    if swap:
        p, q = q, p
    ex = exp(x)

    def f(y):
        v = p(y) - ex * q(y)
        return v if v > 0 else mpf(0)

    # where p = e^x q inside [0, 1]: |y - 1| - |y| = x b -> y = (1 - x b)/2
    # (swapped: y = (1 + x b)/2)
    c = (1 + x * b) / 2 if swap else (1 - x * b) / 2
    cuts = sorted({mpf(0), mpf(1), min(max(c, mpf(0)), mpf(1))})
    pts = [-inf] + cuts + [inf]
    return quad(f, pts)


def main():
    doc = json.load(sys.stdin)
    out = []
    for case in doc["cases"]:
        b = mpf(float(case["b"]))
        eps = mpf(float(case["eps"]))
        at = divergence(b, eps)
        at_swapped = divergence(b, eps, swap=True)
        below = divergence(b, eps * (1 - mpf("1e-9")))
        out.append(
            {
                "delta_at": float(at),
                "delta_at_swapped": float(at_swapped),
                "delta_below": float(below),
            }
        )
    json.dump({"cases": out}, sys.stdout)


main()
