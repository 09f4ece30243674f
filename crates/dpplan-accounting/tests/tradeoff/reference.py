"""dp_accounting's reading of a plan's trade-off curve.

Input (stdin, JSON): {"plans": [{"laplace": [[eps, count], ...],
"gaussian": [[mu, count], ...]}], "fprs": [...]}.
Output: per plan, per FPR, the TPR bound min over a fine ε grid of
min(1, δ(ε) + e^ε·α, 1 − e^{−ε}(1 − δ(ε) − α)), with δ(ε) from
dp_accounting's PLD (get_delta_for_epsilon) composed with the
pessimistic (connect-the-dots) and the optimistic discretisation.
dp_accounting 0.6.0 (PyPI) has no get_true_positive_rates: the TPR is
derived from its δ(ε) curve here, by the same duality dpplan uses.
"""
import json
import math
import sys

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_mod


def compose(plan, pessimistic):
    total = None
    for eps, count in plan.get("laplace", []):
        p = pld_mod.from_laplace_mechanism(
            1.0 / eps, sensitivity=1.0, value_discretization_interval=1e-4,
            pessimistic_estimate=pessimistic, use_connect_dots=pessimistic)
        p = p.self_compose(count) if count > 1 else p
        total = p if total is None else total.compose(p)
    for mu, count in plan.get("gaussian", []):
        p = pld_mod.from_gaussian_mechanism(
            1.0 / mu, sensitivity=1.0, value_discretization_interval=1e-4,
            pessimistic_estimate=pessimistic, use_connect_dots=pessimistic)
        p = p.self_compose(count) if count > 1 else p
        total = p if total is None else total.compose(p)
    return total


def tpr(pld, fprs):
    eps = np.concatenate([[0.0], np.geomspace(1e-5, 40.0, 6000)])
    deltas = np.array(pld.get_delta_for_epsilon(eps))
    out = []
    for a in fprs:
        first = deltas + np.exp(eps) * a
        second = 1.0 - np.exp(-eps) * (1.0 - deltas - a)
        out.append(float(min(1.0, np.min(np.minimum(first, second)))))
    return out


doc = json.load(sys.stdin)
res = []
for plan in doc["plans"]:
    res.append({
        "pessimistic": tpr(compose(plan, True), doc["fprs"]),
        "optimistic": tpr(compose(plan, False), doc["fprs"]),
    })
json.dump(res, sys.stdout)
