"""Typed records of dpplan's machine formats.

Each class is one object of a documented JSON document: ``CheckResult`` and
what it holds are docs/json-output.schema.json (``dpplan check --format
json``), field for field, in the schema's names; ``Diff`` is
docs/diff.schema.json's top level. A test holds every class's fields equal
to its schema object's properties. Every record keeps the JSON object it was
read from as ``raw``, so nothing the document says is lost.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


def _build(tp: Any, value: Any) -> Any:
    """``value`` (decoded JSON) as the type ``tp`` (a record, a list, an
    optional, or anything else as is)."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin is typing.Union:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _build(args[0], value) if len(args) == 1 else value
    if origin in (list, List):
        (item,) = typing.get_args(tp) or (Any,)
        return [_build(item, v) for v in value]
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return tp.from_json(value)
    return value


class _Record:
    """A record built from a JSON object by its fields' type hints."""

    raw: Dict[str, Any]

    @classmethod
    def from_json(cls, obj: Dict[str, Any]):
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        kwargs = {}
        for f in dataclasses.fields(cls):
            if f.name == "raw" or f.metadata.get("extra"):
                continue
            kwargs[f.name] = _build(hints[f.name], obj.get(f.name))
        return cls(raw=obj, **kwargs)


def _record(cls):
    """A frozen dataclass whose ``raw`` is kept out of its repr and
    comparisons."""
    cls.__annotations__["raw"] = "Dict[str, Any]"
    cls.raw = field(default_factory=dict, repr=False, compare=False)
    return dataclass(frozen=True)(cls)


@_record
class Position(_Record):
    """A 1-based line and a 1-based column (in characters)."""

    line: int
    column: int


@_record
class Range(_Record):
    """A half-open byte range of the plan's text, with its line and column."""

    start_byte: int
    end_byte: int
    start: Position
    end: Position


@_record
class Diagnostic(_Record):
    """One finding of the checker or the policy: an error, a warning or a
    hint, located in the plan (docs/diagnostics.md lists every code)."""

    code: str
    name: str
    severity: str
    message: str
    help: Optional[str]
    notes: List[str]
    range: Range
    label: str
    related: List[Dict[str, Any]]

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def __str__(self) -> str:
        at = f"{self.range.start.line}:{self.range.start.column}"
        text = f"{at}: {self.severity}[{self.code}]: {self.message}"
        if self.help:
            text += f"\n  help: {self.help}"
        return text


@_record
class Suppressed(Diagnostic):
    """A diagnostic a ``dpplan: allow`` comment suppressed, with its reason
    and the comment's range."""

    reason: Optional[str] = None
    suppressed_by: Optional[Range] = None


@_record
class Mechanism(_Record):
    """A noise: its kind, its scale (Laplace kinds) or σ (Gaussian kinds),
    and whether the plan declared it or the checker calibrated it."""

    kind: str
    scale: Optional[float]
    sigma: Optional[float]
    calibration: str


@_record
class Cost(_Record):
    """A guarantee: ε at δ (ρ for zCDP where it applies), by an accountant."""

    epsilon: Optional[float]
    delta: Optional[float]
    rho: Optional[float]
    accountant: Optional[str]


@_record
class Part(_Record):
    """One noisy part of a query (a mean has a sum and a count), with its
    sensitivity, how it was derived, and its accuracy."""

    role: str
    statistic: str
    mechanism: Mechanism
    l1: Optional[float]
    l2: Optional[float]
    coords: Optional[int]
    derivation: List[str]
    noise_std: Optional[float]
    ci95_half_width: Optional[float]


@_record
class Selection(_Record):
    """Keys from the data: the threshold a key's noisy count must pass."""

    column: str
    threshold: float
    auto: bool
    keys_per_unit: int
    rows_per_key: int
    release_probability: float
    delta: float


@_record
class Accuracy(_Record):
    """An accuracy target the plan requires, and whether it is met."""

    measure: str
    at_most: float
    achieved: Optional[float]
    met: bool


@_record
class Query(_Record):
    """One released query: what, on which dataset, how often, with which
    noise, its sensitivity and its cost."""

    name: str
    dataset: str
    aggregation: str
    schedule: str
    releases: int
    sample: Optional[float]
    mechanism: Optional[Mechanism]
    l1: Optional[float]
    l2: Optional[float]
    parts: List[Part]
    per_release: Optional[Cost]
    total: Optional[Cost]
    accuracy: Optional[Accuracy]
    selection: Optional[Selection]
    postprocess: Optional[List[str]]


@_record
class AccountantResult(_Record):
    """One accountant's ε for the whole plan (or why it has none)."""

    accountant: str
    accountant_name: str
    epsilon: Optional[float]
    delta: Optional[float]
    detail: Optional[str]
    error: Optional[str]


@_record
class PlanResult(_Record):
    """One checked plan: its claim (ε, δ, unit, adjacency, accountant), its
    queries and its diagnostics."""

    path: str
    plan: Optional[str]
    epsilon: Optional[float]
    delta: Optional[float]
    accountant: Optional[str]
    accountant_detail: Optional[str]
    accountant_requested: Optional[str]
    total_missing: Optional[str]
    budget: Optional[Dict[str, float]]
    within_budget: Optional[bool]
    unit: Optional[Dict[str, Any]]
    adjacency: Optional[str]
    population: Optional[float]
    releases: Optional[int]
    accountants: Optional[List[AccountantResult]]
    attack_risk: Optional[Dict[str, Any]]
    queries: Optional[List[Query]]
    publishes: Optional[List[Dict[str, Any]]]
    diagnostics: List[Diagnostic]
    suppressed: Optional[List[Suppressed]]

    @property
    def errors(self) -> List[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]


@_record
class Summary(_Record):
    """How many plans, errors, warnings and hints; plans over budget."""

    files: int
    errors: int
    warnings: int
    hints: int
    over_budget: int


@_record
class CheckResult(_Record):
    """``dpplan check --format json``'s document for one plan."""

    schema_version: int
    tool: Dict[str, str]
    summary: Summary
    files: List[PlanResult]
    shared_budgets: Optional[List[Dict[str, Any]]]
    policies: Optional[List[Dict[str, Any]]]

    @property
    def result(self) -> PlanResult:
        """The checked plan's result."""
        return self.files[0]

    @property
    def ok(self) -> bool:
        """No error, within the budget, as ``dpplan check`` exits 0."""
        r = self.result
        over = any(
            not s.get("within_budget", True) and not s.get("accepted", False)
            for s in (self.shared_budgets or [])
        )
        return not r.errors and r.within_budget is not False and not over

    @property
    def epsilon(self) -> Optional[float]:
        return self.result.epsilon

    @property
    def delta(self) -> Optional[float]:
        return self.result.delta

    @property
    def diagnostics(self) -> List[Diagnostic]:
        return self.result.diagnostics

    @property
    def queries(self) -> List[Query]:
        return self.result.queries or []

    def to_json(self) -> str:
        """The document as ``dpplan check --format json`` prints it."""
        return json.dumps(self.raw, indent=2, ensure_ascii=False)


@_record
class Account(_Record):
    """``dpplan account --json``: every accountant's ε side by side."""

    path: str
    plan: Optional[str]
    budget: Dict[str, float]
    releases: int
    best: Optional[Dict[str, Any]]
    accountants: List[AccountantResult]
    averaging: List[Dict[str, Any]]


@_record
class Diff(_Record):
    """``dpplan diff --format json``: what a change to a plan does to its
    claim, its contract and its accuracy (docs/diff.schema.json)."""

    old: Dict[str, Any]
    new: Dict[str, Any]
    identical: bool
    contract: List[Dict[str, Any]]
    datasets: List[Dict[str, Any]]
    queries: List[Dict[str, Any]]
    unchanged_queries: List[str]
    publishes: List[Dict[str, Any]]
    accuracy: Optional[List[Dict[str, Any]]]
    guarantee: Dict[str, Any]
    verdict: Dict[str, Any]
    #: the same diff in Markdown (``dpplan diff --format md``), not a JSON field
    markdown: str = field(default="", repr=False, compare=False, metadata={"extra": True})

    @property
    def increase(self) -> bool:
        """The new plan spends more (a larger ε at the same δ, or a larger δ)."""
        return bool(self.verdict.get("increase"))

    @property
    def contract_changed(self) -> bool:
        return bool(self.verdict.get("contract_changed"))

    def _repr_markdown_(self) -> str:
        return self.markdown
