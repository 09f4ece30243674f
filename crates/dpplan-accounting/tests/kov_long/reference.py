#!/usr/bin/env python3
"""High-precision reference for crates/dpplan-accounting/tests/it/kov_long.rs.

The exact privacy profile of k-fold randomized response RR_e0 (Kairouz-Oh-
Viswanath 2015 Thm 3.3: the optimal composition of k e0-DP mechanisms):

  delta(eps) = sum_{l : (k-2l) e0 > eps} C(k,l) p^(k-l) q^l (1 - e^(eps-(k-2l) e0)),
  p = e^e0/(1+e^e0), q = 1 - p,

in mpmath at 50 digits, by a method independent of the accountant's (which
walks the weights by their ratio from an anchor, normalises by their window
sum and solves between loss atoms in closed form):

  * k < 10^5: the sum itself, term by term from the largest kept l
    downwards (weights by the ratio recurrence from an exact log-gamma
    anchor), stopped when the rest (bounded geometrically) is 1e-40 of it;
  * k >= 10^5: Euler-Maclaurin summation (mpmath.sumem: the integral by
    quadrature plus endpoint derivative corrections, which fall like
    sigma^-2j, sigma = sqrt(kpq) >= 90 here) of the weights written with
    log-gamma, from 60 standard deviations below the last kept l (or the
    mode) to at most 60 above the mode: of the whole summand when 2 e0 <= 0.01 (it then varies slowly);
    otherwise of the weights alone, the part with e^(eps - L_l), which falls
    by about e^(-2 e0) a step, being summed term by term.
    The two methods agree to 1e-30 or better at k = 10^5 and 10^8, small and
    large e0 (checked by `selfcheck`).

Input (stdin): {"cases": [{"k": "<int>", "l1": "<float>", "b": "<float>",
"eps": ["<float>", ...]}], "selfcheck": bool}; e0 = l1/b exactly (the
plan's Laplace ratio, not the accountant's rounded-up float). Output: one
list of delta(eps) per case, as strings with 20 significant digits.
"""
import json
import sys

import mpmath
from mpmath import mp, mpf

mp.dps = 50


def setup(k, e0):
    q = 1 / (1 + mpmath.exp(e0))
    return mpmath.log(1 - q), mpmath.log(q), mpmath.loggamma(k + 1), q


def last_kept(k, e0, eps):
    lmax = int(mpmath.floor((k * e0 - eps) / (2 * e0)))
    while lmax >= 0 and (k - 2 * lmax) * e0 <= eps:
        lmax -= 1
    return min(lmax, k)


def log_weight(k, lp, lq, lk, l):
    return lk - mpmath.loggamma(l + 1) - mpmath.loggamma(k - l + 1) + (k - l) * lp + l * lq


def direct(k, e0, eps):
    lp, lq, lk, _ = setup(k, e0)
    lmax = last_kept(k, e0, eps)
    if lmax < 0:
        return mpf(0)
    w = mpmath.exp(log_weight(k, lp, lq, lk, lmax))
    er = mpmath.exp(e0)
    total = mpf(0)
    l = lmax
    while True:
        total += w * (1 - mpmath.exp(eps - (k - 2 * l) * e0))
        if l == 0:
            break
        ratio = mpf(l) / (k - l + 1) * er
        if ratio < 1 and w * ratio / (1 - ratio) < total * mpf(10) ** -40:
            break
        w *= ratio
        l -= 1
    return total


def euler_maclaurin(k, e0, eps):
    lp, lq, lk, q = setup(k, e0)
    lmax = last_kept(k, e0, eps)
    if lmax < 0:
        return mpf(0)
    sd = mpmath.sqrt(k * q * (1 - q))
    lo = max(0, int(min(lmax, k * q) - 60 * sd))
    # beyond 60 standard deviations above the mode the weights are below
    # e^-1800 of the total: the quadrature looks where the mass is
    hi = min(lmax, int(k * q + 60 * sd))

    def w(l):
        return mpmath.exp(log_weight(k, lp, lq, lk, l))

    if 2 * e0 <= mpf(1) / 100:
        # the whole summand varies slowly (by e^(2 e0) <= e^0.01 a step)
        return mpmath.sumem(lambda l: w(l) * (1 - mpmath.exp(eps - (k - 2 * l) * e0)), [lo, hi])
    # the weights alone are smooth; the e^(eps - L_l) part falls by about
    # e^(-2 e0) a step below lmax, so it is summed term by term
    a = mpmath.sumem(w, [lo, hi])
    b = mpf(0)
    l = lmax
    while l >= 0:
        t = w(l) * mpmath.exp(eps - (k - 2 * l) * e0)
        b += t
        if t < b * mpf(10) ** -45:
            break
        l -= 1
    return a - b


def profile(k, e0, eps):
    if k < 10**5:
        return direct(k, e0, eps)
    return euler_maclaurin(k, e0, eps)


def main():
    doc = json.load(sys.stdin)
    out = {"cases": []}
    for case in doc["cases"]:
        k = int(case["k"])
        e0 = mpf(float(case["l1"])) / mpf(float(case["b"]))
        out["cases"].append(
            [mpmath.nstr(profile(k, e0, mpf(float(e))), 20) for e in case["eps"]])
    if doc.get("selfcheck"):
        worst = mpf(0)
        for k, e0, eps in [(10**8, mpf(1) / 10000, mpf("4.8865")),
                           (10**8, mpf(2), mpf("152319232")),
                           (10**5, mpf("0.3"), mpf("2300")),
                           (10**5, mpf("0.3"), mpf("2000")),
                           (10**5, mpf("0.01"), mpf("5"))]:
            a = direct(k, e0, eps)
            b = euler_maclaurin(k, e0, eps)
            worst = max(worst, abs(a - b) / a)
        out["selfcheck"] = float(worst)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
