#!/usr/bin/env python3
"""Independent reference values for dpplan-accounting, computed with Google's
`dp-accounting` package (PyPI). Prints JSON on stdout; see README.md.

Usage:  python reference.py > expected.json
"""
import json
import math
import sys
from importlib import metadata

import dp_accounting
import numpy as np
from scipy.special import log_ndtr
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution
from dp_accounting.rdp import rdp_privacy_accountant

# Each plan: list of [kind, scale, sensitivity(l1=l2, scalar), count]; kinds: gaussian | laplace
PLANS = [
    {"name": "gauss_single", "delta": 1e-6, "releases": [["gaussian", 4.0, 1.0, 1]]},
    {"name": "gauss_10x8", "delta": 1e-6, "releases": [["gaussian", 8.0, 1.0, 10]]},
    {"name": "gauss_1000x8", "delta": 1e-6, "releases": [["gaussian", 8.0, 1.0, 1000]]},
    {"name": "gauss_mixed", "delta": 1e-5, "releases": [["gaussian", 2.0, 1.0, 3], ["gaussian", 10.0, 2.0, 50]]},
    {"name": "laplace_100x0.1", "delta": 1e-6, "releases": [["laplace", 10.0, 1.0, 100]]},
    {"name": "laplace_single_1", "delta": 1e-5, "releases": [["laplace", 1.0, 1.0, 1]]},
    {"name": "laplace_hetero", "delta": 1e-5, "releases": [["laplace", 5.0, 1.0, 20], ["laplace", 20.0, 1.0, 200]]},
    {"name": "mixed", "delta": 1e-6, "releases": [["laplace", 10.0, 1.0, 100], ["gaussian", 8.0, 1.0, 10]]},
    {"name": "mixed_2", "delta": 1e-5, "releases": [["laplace", 2.0, 1.0, 5], ["gaussian", 3.0, 1.0, 20]]},
]

# Mixed Laplace + Gaussian plans at small δ (issue 13, "PLD at small δ"): for each
# plan and each δ, the pessimistic PLD (the tightness target, ours must be ≤ 1.001×)
# and the optimistic PLD (a lower bound of the true ε: ours must not be below it).
SMALL_DELTA_PLANS = [
    {"name": "mixed", "releases": [["laplace", 10.0, 1.0, 100], ["gaussian", 8.0, 1.0, 10]]},
    {"name": "mixed_2", "releases": [["laplace", 2.0, 1.0, 5], ["gaussian", 3.0, 1.0, 20]]},
    {"name": "laplace_heavy", "releases": [["laplace", 20.0, 1.0, 1000], ["gaussian", 30.0, 1.0, 3]]},
    {"name": "hetero", "releases": [["laplace", 5.0, 1.0, 20], ["laplace", 50.0, 1.0, 300],
                                    ["gaussian", 4.0, 1.0, 2], ["gaussian", 20.0, 1.0, 40]]},
]
SMALL_DELTAS = [1e-3, 1e-6, 1e-9, 1e-12, 1e-15]

ORDERS = [1 + x / 100.0 for x in range(1, 100)] + [2 + x / 10.0 for x in range(0, 300)] + list(range(32, 1025))


def event(kind, scale, sens):
    if kind == "gaussian":
        return dp_event.GaussianDpEvent(noise_multiplier=scale / sens)
    if kind == "laplace":
        return dp_event.LaplaceDpEvent(noise_multiplier=scale / sens)
    raise ValueError(kind)


def rdp_eps(plan):
    acc = rdp_privacy_accountant.RdpAccountant(orders=ORDERS)
    for kind, scale, sens, count in plan["releases"]:
        acc.compose(event(kind, scale, sens), count)
    return acc.get_epsilon(plan["delta"])


def pld_eps(plan, interval):
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    for kind, scale, sens, count in plan["releases"]:
        acc.compose(event(kind, scale, sens), count)
    return acc.get_epsilon(plan["delta"])


def pld_direct(plan, interval, pessimistic, truncation):
    """The PLDAccountant's composition written out (it has neither an optimistic
    switch nor a tail-truncation setting: its compositions truncate 1e-15 of mass,
    which puts δ = 1e-15 out of its reach)."""
    total = None
    for kind, scale, sens, count in plan["releases"]:
        if kind == "gaussian":
            part = privacy_loss_distribution.from_gaussian_mechanism(
                standard_deviation=scale / sens / math.sqrt(count), pessimistic_estimate=pessimistic,
                value_discretization_interval=interval, use_connect_dots=pessimistic)
        else:
            part = privacy_loss_distribution.from_laplace_mechanism(
                parameter=scale / sens, pessimistic_estimate=pessimistic,
                value_discretization_interval=interval,
                use_connect_dots=pessimistic).self_compose(count, tail_mass_truncation=truncation)
        total = part if total is None else total.compose(part, tail_mass_truncation=truncation)
    return total


SMALL_TRUNCATION = 1e-21

# --- independent sandwich, no FFT -------------------------------------------------
# The true ε of Laplace^k ⊗ … ⊗ Gaussian(μ) lies in [lower, upper]: each Laplace
# leaf's P-loss distribution (atoms ±ε₀ on the grid exactly, continuous part of
# density ¼e^{(l−ε₀)/2} on (−ε₀, ε₀)) is discretised on the grid DIRECT_H by moving
# every cell's mass to its upper end (a stochastically larger loss: δ(ε) =
# E[(1 − e^{ε−L})_+] can only grow) or to its lower end (can only shrink); the
# leaves are composed by *direct* convolution (np.convolve: sums of non-negative
# terms, relative error ≤ n·u, no FFT) and the Gaussian part exactly,
# δ(ε) = Σ_j p_j δ_μ(ε − l_j), δ_μ from log_ndtr (relative accuracy in the tails).
DIRECT_H = 5e-4


def laplace_leaf(eps0, up):
    m = int(round(eps0 / DIRECT_H))
    assert abs(m * DIRECT_H - eps0) < 1e-12, "ε₀ must be a multiple of DIRECT_H"
    p = np.zeros(2 * m + 1)  # index j ↔ loss (j − m)·h
    p[2 * m] += 0.5
    p[0] += 0.5 * math.exp(-eps0)
    lo = (np.arange(2 * m) - m) * DIRECT_H
    cell = 0.5 * (np.exp((lo + DIRECT_H - eps0) / 2) - np.exp((lo - eps0) / 2))
    p[1:] += cell if up else 0
    p[:-1] += 0 if up else cell
    return p, -m


def power(p, n):
    res, base = None, p
    while n:
        if n & 1:
            res = base if res is None else np.convolve(res, base)
        n >>= 1
        if n:
            base = np.convolve(base, base)
    return res


def direct_pld(plan, up):
    p, lo, mu2 = np.ones(1), 0, 0.0
    for kind, scale, sens, count in plan["releases"]:
        if kind == "gaussian":
            mu2 += count * (sens / scale) ** 2
        else:
            leaf, llo = laplace_leaf(sens / scale, up)
            p = np.convolve(p, power(leaf, count))
            lo += llo * count
    return p, lo, math.sqrt(mu2)


def direct_eps(p, lo, mu, delta):
    l = (np.arange(len(p)) + lo) * DIRECT_H

    def delta_of(eps):
        t = eps - l
        if mu == 0:
            return float(np.sum(p * np.where(t < 0, -np.expm1(np.minimum(t, 0)), 0.0)))
        a, b = -t / mu + mu / 2, -t / mu - mu / 2
        la, lb = log_ndtr(a), t + log_ndtr(b)
        return float(np.sum(p * np.exp(la) * -np.expm1(np.minimum(lb - la, 0.0))))

    a, b = 0.0, 400.0
    for _ in range(64):
        c = 0.5 * (a + b)
        if delta_of(c) <= delta:
            b = c
        else:
            a = c
    return b


def small_delta(plan):
    default = pld_direct(plan, 1e-4, True, 1e-15)
    pess = pld_direct(plan, 1e-4, True, SMALL_TRUNCATION)
    opt = pld_direct(plan, 1e-4, False, SMALL_TRUNCATION)
    lower = direct_pld(plan, False)
    upper = direct_pld(plan, True)
    rows = []
    def finite(x):  # JSON has no infinity: dp_accounting's +∞ is written "inf"
        return x if math.isfinite(x) else "inf"

    for d in SMALL_DELTAS:
        rows.append({"delta": d,
                     "pld_pessimistic_default": finite(default.get_epsilon_for_delta(d)),
                     "pld_pessimistic": finite(pess.get_epsilon_for_delta(d)),
                     "pld_optimistic": finite(opt.get_epsilon_for_delta(d)),
                     "direct_lower": direct_eps(*lower, d),
                     "direct_upper": direct_eps(*upper, d)})
        print(plan["name"], rows[-1], file=sys.stderr)
    entry = dict(plan)
    entry["values"] = rows
    return entry


def main():
    out = {
        "generator": "tests/reference-accountant/reference.py",
        "command": "python reference.py > expected.json",
        "python": sys.version.split()[0],
        "packages": {p: metadata.version(p) for p in ["dp-accounting", "numpy", "scipy"]},
        "notes": "rdp: dp_accounting RdpAccountant over a fixed order grid (its conversion); "
        "pld: PLDAccountant (pessimistic estimate) at value_discretization_interval 1e-4; "
        "small_delta: dp_accounting PLDs (interval 1e-4) composed as PLDAccountant does, "
        "evaluated at each δ: pld_pessimistic_default with its default tail truncation 1e-15 "
        "(inf at δ = 1e-15), pld_pessimistic and pld_optimistic (Privacy Buckets, a lower "
        "estimate) with tail_mass_truncation 1e-21; direct_lower / direct_upper: the "
        "independent sandwich without FFT (direct_pld, grid 5e-4), a proven lower and upper "
        "bound on the true ε",
        "plans": [],
        "small_delta": [],
    }
    for plan in PLANS:
        entry = dict(plan)
        entry["rdp_epsilon"] = rdp_eps(plan)
        entry["pld_epsilon"] = pld_eps(plan, 1e-4)
        out["plans"].append(entry)
        print(plan["name"], entry["rdp_epsilon"], entry["pld_epsilon"], file=sys.stderr)
    for plan in SMALL_DELTA_PLANS:
        out["small_delta"].append(small_delta(plan))
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
