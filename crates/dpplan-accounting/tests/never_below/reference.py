#!/usr/bin/env python3
"""50-digit reference for crates/dpplan-accounting/tests/it/never_below.rs.

Reads a JSON document of cases on stdin and writes one JSON verdict per case
on stdout. Every float arrives as Rust's shortest round-trip repr, so
float(text) is the very double the accountant used and mpf(float) is exact.

For each case, `ref` names a privacy profile delta(eps) known in closed form
(exactly, or as a LOWER bound on the plan's true profile, which is enough to
show an eps is not below the truth):

  gdp  {mu}            exact mu-GDP (Balle-Wang 2018 Thm 8)
  rr   {k, eps0}       exact k-fold randomized response RR_eps0 (Kairouz-Oh-
                       Viswanath 2015: the optimal composition of eps0-DP)
  lap  {k, eps0}       k-fold RR_eps' with eps' = ln(2 e^{eps0/2} - 1): the
                       Laplace output post-processed by the threshold y > D/2,
                       a lower bound on k Laplace releases (post-processing)
  dg   {sigma, shift}  exact discrete Gaussian (Canonne-Kamath-Steinke 2020)

A ref with `only` applies to the accountants named there (rr: the advanced
accountant, which claims the KOV bound; it is not the Laplace mechanism's
exact profile, which lies below it).

A case lists profiles (all must hold: the plan's true delta(eps) is at least
each of them) and the reported eps of each accountant. For each eps the
verdict says whether ref_delta(eps) <= delta (eps is not below the profile's
eps) and, for the checks marked `tight`, the relative gap
(eps - eps_ref)/eps_ref estimated by one Newton step from eps (exact to second
order, and the sign is exact).

Also checks `erfc` samples: [x, libm_erfc(x)] -> error in ulps.
"""
import json
import sys

import mpmath
from mpmath import mp, mpf

mp.dps = 60


def ncdf(x):
    return mpmath.ncdf(x)


def gdp_delta(mu, eps):
    mu = mpf(mu)
    eps = mpf(eps)
    a = -eps / mu + mu / 2
    b = -eps / mu - mu / 2
    return ncdf(a) - mpmath.exp(eps) * ncdf(b)


def gdp_slope(mu, eps):
    mu = mpf(mu)
    eps = mpf(eps)
    b = -eps / mu - mu / 2
    return -mpmath.exp(eps) * ncdf(b)


def rr_delta(k, e0, eps):
    """sum over l with (k-2l)e0 > eps of C(k,l) p^(k-l) q^l (1 - e^(eps-(k-2l)e0))"""
    e0 = mpf(e0)
    eps = mpf(eps)
    p = mpmath.exp(e0) / (1 + mpmath.exp(e0))
    q = 1 - p
    lmax = int(mpmath.floor((k * e0 - eps) / (2 * e0)))
    while lmax >= 0 and (k - 2 * lmax) * e0 <= eps:
        lmax -= 1
    if lmax < 0:
        return mpf(0)
    lmax = min(lmax, k)
    # weight at lmax, then walk down by the ratio w(l-1)/w(l) = l/(k-l+1) * p/q
    logw = (mpmath.loggamma(k + 1) - mpmath.loggamma(lmax + 1) - mpmath.loggamma(k - lmax + 1)
            + (k - lmax) * mpmath.log(p) + lmax * mpmath.log(q))
    w = mpmath.exp(logw)
    total = mpf(0)
    l = lmax
    while l >= 0:
        term = w * (1 - mpmath.exp(eps - (k - 2 * l) * e0))
        total += term
        if l == 0:
            break
        ratio = mpf(l) / (k - l + 1) * p / q
        if ratio < 1 and w * ratio / (1 - ratio) < total * mpf(10) ** -30:
            # the ratio falls as l does, so the rest is below
            # w * ratio/(1-ratio): negligible against the 1e-16 compared
            break
        w = w * ratio
        l -= 1
    return total


def lap_eps_prime(e0):
    e0 = mpf(e0)
    return mpmath.log(2 * mpmath.exp(e0 / 2) - 1)


def dg_delta(sigma, shift, eps):
    sigma = mpf(sigma)
    eps = mpf(eps)
    n = int(mpmath.ceil(45 * sigma)) + shift + 2
    s2 = 2 * sigma * sigma
    z = mpmath.fsum(mpmath.exp(-mpf(y * y) / s2) for y in range(-n, n + 1))
    ee = mpmath.exp(eps)
    tot = mpf(0)
    for y in range(-n, n + 1):
        t = mpmath.exp(-mpf(y * y) / s2) - ee * mpmath.exp(-mpf((y - shift) ** 2) / s2)
        if t > 0:
            tot += t
    return tot / z


def srr_delta(k, e0, q, eps):
    """k-fold randomized response RR_e0 on a Poisson sample at rate q,
    exactly: the larger hockey stick of the two orders of neighbours.
    Remove: P-outcomes with loss a = ln(1-q+q e^e0) (prob (1-q+q e^e0)/(1+e^e0))
    and b = ln(1-q+q e^-e0); add: losses -a (prob 1/(1+e^e0)) and -b."""
    e0, q, eps = mpf(e0), mpf(q), mpf(eps)
    E = mpmath.exp(e0)
    a = mpmath.log(1 - q + q * E)
    b = mpmath.log(1 - q + q / E)
    pa = (1 - q + q * E) / (1 + E)
    orders = [(a, pa, b), (-a, 1 / (1 + E), -b)]
    best = mpf(0)
    for la, p, lb in orders:
        tot = mpf(0)
        for j in range(k + 1):
            loss = j * la + (k - j) * lb
            if loss > eps:
                tot += mpmath.binomial(k, j) * p ** j * (1 - p) ** (k - j) * (1 - mpmath.exp(eps - loss))
        best = max(best, tot)
    return best


def thresholded_eps(ref):
    """the RR that a release thresholded at Δ/2 is: Laplace ln(2e^{e0/2} - 1);
    Gaussian ln(Φ(μ/2)/Φ(-μ/2))"""
    ratio = mpf(float(ref["l1"])) / mpf(float(ref["b"]))
    if ref["kind"] == "srr_lap":
        return lap_eps_prime(ratio)
    return mpmath.log(ncdf(ratio / 2) / ncdf(-ratio / 2))


def plan_mu(ref):
    """mu = sqrt(sum k l2^2/sigma^2) of the plan's floats, exactly"""
    return mpmath.sqrt(mpmath.fsum(int(k) * (mpf(float(l2)) / mpf(float(s))) ** 2
                                   for k, l2, s in ref["terms"]))


def plan_eps0(ref):
    return mpf(float(ref["l1"])) / mpf(float(ref["b"]))


def profile(ref, eps):
    kind = ref["kind"]
    if kind == "gdp":
        return gdp_delta(plan_mu(ref), eps)
    if kind == "rr":
        return rr_delta(int(ref["k"]), plan_eps0(ref), eps)
    if kind == "lap":
        return rr_delta(int(ref["k"]), lap_eps_prime(plan_eps0(ref)), eps)
    if kind == "dg":
        return dg_delta(float(ref["sigma"]), int(ref["shift"]), eps)
    if kind in ("srr_lap", "srr_gauss"):
        return srr_delta(int(ref["k"]), thresholded_eps(ref), float(ref["q"]), eps)
    raise ValueError(kind)


def gap_of(ref, eps, delta, d):
    """(eps - eps_ref)/eps_ref by one Newton step from eps (None when flat)"""
    if eps <= 0:
        return None
    if ref["kind"] == "gdp":
        slope = gdp_slope(plan_mu(ref), eps)
    else:
        h = mpf(eps) * mpf(10) ** -25
        slope = (profile(ref, mpf(eps) + h) - d) / h
    if slope == 0:
        return None
    eps_ref = mpf(eps) + (delta - d) / slope
    return float((mpf(eps) - eps_ref) / eps_ref)


def main():
    doc = json.load(sys.stdin)
    out = {"cases": [], "erfc_ulps": []}
    for case in doc["cases"]:
        delta = mpf(float(case["delta"]))
        checks = sorted(((float(e), name, tight) for name, e, tight in case["checks"]))
        verdicts = {name: {"sound": True, "gap": None} for _, name, _ in checks}
        for ref in case["refs"]:
            # delta(eps) decreases: once one eps (smallest first) is not
            # below this profile's, no larger one is. A ref may apply to
            # some accountants only (`only`: KOV bounds what advanced
            # composition claims, not the Laplace mechanism's truth).
            only = ref.get("only")
            for eps, name, _ in checks:
                if only is not None and name not in only:
                    continue
                if profile(ref, eps) > delta:
                    verdicts[name]["sound"] = False
                else:
                    break
            for eps, name, tight in checks:
                if tight == ref["kind"]:
                    d = profile(ref, eps)
                    if d > delta:
                        verdicts[name]["sound"] = False
                    verdicts[name]["gap"] = gap_of(ref, eps, delta, d)
        out["cases"].append(verdicts)
    for x_s, v_s in doc.get("erfc", []):
        x = mpf(float(x_s))
        v = mpf(float(v_s))
        exact = mpmath.erfc(x)
        ulp = mpf(2) ** (mpmath.floor(mpmath.log(abs(exact), 2)) - 52)
        out["erfc_ulps"].append(float(abs(v - exact) / ulp))
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
