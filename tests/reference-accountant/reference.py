#!/usr/bin/env python3
"""Independent reference values for dpplan-accounting, computed with Google's
`dp-accounting` package (PyPI). Prints JSON on stdout; see README.md.

Usage:  python reference.py > expected.json
"""
import json
import sys
from importlib import metadata

import dp_accounting
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
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


def main():
    out = {
        "generator": "tests/reference-accountant/reference.py",
        "command": "python reference.py > expected.json",
        "python": sys.version.split()[0],
        "packages": {p: metadata.version(p) for p in ["dp-accounting", "numpy", "scipy"]},
        "notes": "rdp: dp_accounting RdpAccountant over a fixed order grid (its conversion); "
        "pld: PLDAccountant (pessimistic estimate) at value_discretization_interval 1e-4",
        "plans": [],
    }
    for plan in PLANS:
        entry = dict(plan)
        entry["rdp_epsilon"] = rdp_eps(plan)
        entry["pld_epsilon"] = pld_eps(plan, 1e-4)
        out["plans"].append(entry)
        print(plan["name"], entry["rdp_epsilon"], entry["pld_epsilon"], file=sys.stderr)
    json.dump(out, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
