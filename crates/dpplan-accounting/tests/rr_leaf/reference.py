#!/usr/bin/env python3
"""100-digit reference for the PLD accountant's randomized-response leaf
(crates/dpplan-accounting/src/accountants/pld.rs, `rr_mass_up`) and for its
round-up factor (`round_up_factor`).

Reads {"rr": [[eps, up_plus, up_minus, raw_plus, raw_minus], ...],
       "factors": [[ulps, g], ...]} on stdin; every float arrives as Rust's
shortest round-trip repr, so mpf(float(text)) is the very double.

Writes, for each rr case, the relative differences of the four stored masses
to the exact 1/(1 + e^{-eps}) (at +eps) and 1/(1 + e^{eps}) (at -eps), and,
for each factor, g - (1 + 1.01(ulps + 2)2^-53) in units of 2^-53 (exact).
"""
import json
import sys

from mpmath import mp, mpf, exp

mp.dps = 100
U = mpf(2) ** -53


def rel(x, exact):
    return float((mpf(x) - exact) / exact)


def main():
    doc = json.load(sys.stdin)
    rr = []
    for eps, up_p, up_m, raw_p, raw_m in doc["rr"]:
        e = mpf(eps)
        plus = 1 / (1 + exp(-e))
        minus = 1 / (1 + exp(e))
        rr.append({
            "up_plus": rel(up_p, plus),
            "up_minus": rel(up_m, minus),
            "raw_plus": rel(raw_p, plus),
            "raw_minus": rel(raw_m, minus),
        })
    factors = []
    for ulps, g in doc["factors"]:
        want = 1 + mpf("1.01") * (mpf(ulps) + 2) * U
        factors.append(float((mpf(g) - want) / U))
    json.dump({"rr": rr, "factors": factors}, sys.stdout)


main()
