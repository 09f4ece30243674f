"""dp_accounting's own reading of the DpEvent trees `dpplan export` writes
(crates/dpplan-cli/tests/it/dp_event_cli.rs). JSON on stdin: a list of
{"name", "event", "delta"}; JSON on stdout: per tree

* `pld_pessimistic`: dp_accounting's PLDAccountant (ADD_OR_REMOVE_ONE,
  value discretization 1e-4, its pessimistic estimate), or null when a
  leaf is not one the PLD accountant composes (ZCDpEvent);
* `pld_optimistic`: the same tree composed from optimistic PLDs (a lower
  estimate of the true ε; Poisson-sampled Gaussian and Laplace leaves
  included), or null;
* `rdp`: dp_accounting's RdpPrivacyAccountant (its default orders), or
  null when a leaf is not one it composes (DiscreteLaplaceDpEvent);
* `roundtrip`: the tree read with `DpEvent.from_named_tuple` and written
  back with `to_named_tuple()`, as JSON objects, for dpplan to read again.

dp-accounting from PyPI in target/test-deps/dp-accounting-venv
(scripts/test-deps.sh).
"""
import collections
import json
import math
import sys

from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import rdp_privacy_accountant

REL = pld_privacy_accountant.NeighborRel.ADD_OR_REMOVE_ONE
INTERVAL = 1e-4


def to_tuple(obj):
    """A JSON object of a named tuple back into a named tuple."""
    if isinstance(obj, dict) and "class_name" in obj:
        fields = list(obj.keys())
        cls = collections.namedtuple("_" + obj["class_name"], fields)
        return cls(**{k: to_tuple(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return [to_tuple(x) for x in obj]
    return obj


def to_json(nt):
    if hasattr(nt, "_asdict"):
        return {k: to_json(v) for k, v in nt._asdict().items()}
    if isinstance(nt, (list, tuple)):
        return [to_json(x) for x in nt]
    return nt


def leaves(event, count=1):
    """(leaf event, count) of a tree of compositions."""
    if isinstance(event, dp_event.SelfComposedDpEvent):
        yield from leaves(event.event, count * event.count)
    elif isinstance(event, dp_event.ComposedDpEvent):
        for e in event.events:
            yield from leaves(e, count)
    elif isinstance(event, dp_event.NoOpDpEvent):
        return
    else:
        yield event, count


def optimistic(event, delta):
    pld = None
    for leaf, count in leaves(event):
        if isinstance(leaf, dp_event.GaussianDpEvent):
            p = pld_lib.from_gaussian_mechanism(
                standard_deviation=leaf.noise_multiplier / math.sqrt(count),
                value_discretization_interval=INTERVAL,
                pessimistic_estimate=False,
                neighboring_relation=REL,
            )
        elif isinstance(leaf, dp_event.LaplaceDpEvent):
            p = pld_lib.from_laplace_mechanism(
                parameter=leaf.noise_multiplier,
                value_discretization_interval=INTERVAL,
                pessimistic_estimate=False,
            ).self_compose(count)
        elif isinstance(leaf, dp_event.PoissonSampledDpEvent) and isinstance(
            leaf.event, (dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent)
        ):
            # a sampled Gaussian's composition is no Gaussian: composed
            gaussian = isinstance(leaf.event, dp_event.GaussianDpEvent)
            make = pld_lib.from_gaussian_mechanism if gaussian else pld_lib.from_laplace_mechanism
            p = make(
                leaf.event.noise_multiplier,
                value_discretization_interval=INTERVAL,
                pessimistic_estimate=False,
                sampling_prob=leaf.sampling_probability,
                use_connect_dots=False,
                **({"neighboring_relation": REL} if gaussian else {}),
            ).self_compose(count)
        elif isinstance(leaf, dp_event.DiscreteLaplaceDpEvent):
            p = pld_lib.from_discrete_laplace_mechanism(
                parameter=leaf.noise_parameter,
                sensitivity=leaf.sensitivity,
                value_discretization_interval=INTERVAL,
                pessimistic_estimate=False,
            ).self_compose(count)
        else:
            return None
        pld = p if pld is None else pld.compose(p)
    if pld is None:
        return 0.0
    return pld.get_epsilon_for_delta(delta)


def finite(x):
    """JSON has no infinity: dp_accounting's +inf is written "inf"."""
    if x is None or math.isfinite(x):
        return x
    return "inf" if x > 0 else "-inf"


def main():
    out = []
    for case in json.load(sys.stdin):
        event = dp_event.DpEvent.from_named_tuple(to_tuple(case["event"]))
        delta = case["delta"]
        pld = pld_privacy_accountant.PLDAccountant(REL, INTERVAL)
        if pld.supports(event):
            pld.compose(event)
            pess = pld.get_epsilon(delta)
        else:
            pess = None
        rdp = rdp_privacy_accountant.RdpAccountant()
        rdp_eps = None
        if rdp.supports(event):
            rdp.compose(event)
            rdp_eps = rdp.get_epsilon(delta)
        out.append({
            "name": case["name"],
            "pld_pessimistic": finite(pess),
            "pld_optimistic": finite(optimistic(event, delta)) if pess is not None else None,
            "rdp": finite(rdp_eps),
            "roundtrip": to_json(event.to_named_tuple()),
        })
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
