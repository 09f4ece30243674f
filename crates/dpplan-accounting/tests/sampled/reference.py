"""dp_accounting's reading of plans of Poisson-sampled releases.

Input (stdin, JSON): {"plans": [[{"kind": "gaussian" | "laplace",
"noise_multiplier": σ/Δ or b/Δ, "q": q, "count": k}, ...]], "deltas": [...]}.
Output: per plan, per δ: ε of dp_accounting's PLD with the pessimistic
(connect-the-dots) and the optimistic discretisation (value interval 1e-4,
add/remove neighbours, the max over both orders as dp_accounting composes
them), and of its RDP accountant (PoissonSampledDpEvent, its default orders).
dp_accounting 0.6.0 from PyPI (scripts/test-deps.sh).
"""
import json
import logging
import sys

from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld_mod
from dp_accounting.rdp import rdp_privacy_accountant


def compose(plan, pessimistic):
    total = None
    for r in plan:
        make = (pld_mod.from_gaussian_mechanism if r["kind"] == "gaussian"
                else pld_mod.from_laplace_mechanism)
        p = make(r["noise_multiplier"], sensitivity=1.0,
                 value_discretization_interval=1e-4,
                 pessimistic_estimate=pessimistic,
                 sampling_prob=r["q"], use_connect_dots=pessimistic)
        p = p.self_compose(r["count"]) if r["count"] > 1 else p
        total = p if total is None else total.compose(p)
    return total


def rdp(plan, deltas):
    if any(r["kind"] != "gaussian" for r in plan):
        return None  # dp_accounting's RDP samples Gaussians only
    acc = rdp_privacy_accountant.RdpAccountant()
    for r in plan:
        ev = (dp_event.GaussianDpEvent(r["noise_multiplier"]) if r["kind"] == "gaussian"
              else dp_event.LaplaceDpEvent(r["noise_multiplier"]))
        if r["q"] < 1.0:
            ev = dp_event.PoissonSampledDpEvent(r["q"], ev)
        acc.compose(ev, r["count"])
    return [acc.get_epsilon(d) for d in deltas]


logging.disable(logging.WARNING)  # its fractional orders warn on stderr
doc = json.load(sys.stdin)
out = []
for plan in doc["plans"]:
    pess = compose(plan, True)
    opt = compose(plan, False)
    out.append({
        "pessimistic": [pess.get_epsilon_for_delta(d) for d in doc["deltas"]],
        "optimistic": [opt.get_epsilon_for_delta(d) for d in doc["deltas"]],
        "rdp": rdp(plan, doc["deltas"]),
    })
json.dump(out, sys.stdout)
