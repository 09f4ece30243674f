"""dpplan from Python: differential-privacy release plans checked, accounted,
reviewed, compared and compiled by the same core as the ``dpplan`` binary
(which this package also installs on PATH).

>>> import dpplan
>>> result = dpplan.check("examples/signups/signups.dpplan")
>>> result.ok, result.epsilon                      # doctest: +SKIP
(True, 1.3693254604151521)
>>> dpplan.report("examples/signups/signups.dpplan")  # shows itself in Jupyter

Every function takes a plan as a path (a ``pathlib.Path``, or a string that
names an existing file) or as its text. A plan that cannot be used raises
:class:`PlanError`, whose ``diagnostics`` are the checker's findings (code,
message, location, help); a policy file that cannot be used raises
:class:`PolicyError`; a plan its policy refuses raises :class:`Refused`.
The policy in force is the one ``dpplan`` applies: the nearest
``dpplan.toml`` up from the plan's path (from the current directory for a
text), or ``config``.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Iterable, List, Optional, Tuple, Union

from . import _dpplan
from ._model import (
    Account,
    AccountantResult,
    Accuracy,
    CheckResult,
    Cost,
    Diagnostic,
    Diff,
    Mechanism,
    Part,
    PlanResult,
    Position,
    Query,
    Range,
    Selection,
    Summary,
    Suppressed,
)

__version__: str = _dpplan.VERSION

__all__ = [
    "Account",
    "AccountantResult",
    "Accuracy",
    "CheckResult",
    "Cost",
    "Diagnostic",
    "Diff",
    "DpplanError",
    "ExecutablePlan",
    "Mechanism",
    "Part",
    "PlanError",
    "PlanResult",
    "PolicyError",
    "Position",
    "Query",
    "Range",
    "Refused",
    "Report",
    "RunError",
    "RunResult",
    "Selection",
    "Summary",
    "Suppressed",
    "account",
    "check",
    "compile",
    "diff",
    "format",
    "report",
    "run",
]

PlanLike = Union[str, "os.PathLike[str]"]


class DpplanError(Exception):
    """Something dpplan cannot use: a plan, a policy or an argument."""

    def __init__(self, message: str, diagnostics: Optional[List[Diagnostic]] = None):
        super().__init__(message)
        self.message = message
        #: the plan's findings, where the error is about a plan's text
        self.diagnostics: List[Diagnostic] = diagnostics or []

    def __str__(self) -> str:
        lines = [self.message]
        shown = [d for d in self.diagnostics if d.is_error] or self.diagnostics
        lines.extend(str(d) for d in shown)
        return "\n".join(lines)


class PlanError(DpplanError, ValueError):
    """The plan has errors: it makes no claim (see ``diagnostics``)."""


class PolicyError(DpplanError):
    """A policy file (``dpplan.toml``) cannot be used; the message locates
    the problem in it."""


class Refused(DpplanError):
    """The plan fails the policy in force, or the runtime cannot execute it."""


class RunError(DpplanError):
    """A run stopped before releasing (a damaged ledger, a budget that
    would be exceeded, data that do not match the plan, …): nothing was
    released that the ledger does not hold."""


def _raise(err: _dpplan.Error) -> None:
    kind, message, payload = err.args
    diagnostics: List[Diagnostic] = []
    if payload:
        doc = json.loads(payload)
        files = doc.get("files") or []
        if files:
            diagnostics = [Diagnostic.from_json(d) for d in files[0].get("diagnostics", [])]
    if kind == "io":
        raise OSError(message) from None
    cls = {"plan": PlanError, "policy": PolicyError, "refused": Refused, "run": RunError}.get(kind)
    if cls is None:
        raise ValueError(message) from None
    raise cls(message, diagnostics) from None


def _source(plan: PlanLike) -> Tuple[str, Optional[str]]:
    """(text, path): a path-like or a string naming an existing file is
    read (as UTF-8); any other string is the plan's text."""
    if isinstance(plan, os.PathLike):
        path = os.fspath(plan)
    elif isinstance(plan, str) and "\n" not in plan and os.path.isfile(plan):
        path = plan
    elif isinstance(plan, str):
        return plan, None
    else:
        raise TypeError(f"a plan is a path or its text, not {type(plan).__name__}")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise OSError(e.errno, f"cannot read `{path}`: {e.strerror}", path) from None
    try:
        return data.decode("utf-8"), path
    except UnicodeDecodeError as e:
        raise PlanError(
            f"`{path}` is not valid UTF-8 (first invalid byte at offset {e.start}): save the plan as UTF-8"
        ) from None


def _config(config: Optional[PlanLike]) -> Optional[str]:
    return None if config is None else os.fspath(config)


def check(plan: PlanLike, *, config: Optional[PlanLike] = None) -> CheckResult:
    """The plan checked under its policy: ``dpplan check --format json``'s
    document as typed records. A plan with errors is returned, not raised:
    its ``diagnostics`` say what is wrong, and ``ok`` is False."""
    text, path = _source(plan)
    try:
        doc, _ = _dpplan.check(text, path, _config(config))
    except _dpplan.Error as e:
        _raise(e)
    return CheckResult.from_json(json.loads(doc))


def account(plan: PlanLike) -> Account:
    """Every accountant's ε for the plan, side by side (``dpplan account
    --json``), and what averaging fresh releases buys."""
    text, path = _source(plan)
    try:
        doc = _dpplan.account(text, path)
    except _dpplan.Error as e:
        _raise(e)
    return Account.from_json(json.loads(doc))


class Report:
    """A reviewer's report (``dpplan report``): HTML, Markdown and JSON,
    derived once. Displays itself in Jupyter."""

    def __init__(self, text: str, path: Optional[str], start: Optional[str], mean_counts: List[float]):
        try:
            html, md, doc, controls_ok = _dpplan.review(text, path, start, mean_counts)
        except _dpplan.Error as e:
            _raise(e)
        #: one self-contained HTML page with inline SVG figures
        self.html: str = html
        #: Markdown for a pull-request comment
        self.markdown: str = md
        #: the JSON document (docs/report.schema.json), as ``--format json`` prints it
        self.json: str = doc
        #: whether removing each query or doubling its bound moves the claim
        #: (``dpplan report`` exits 1 when not: review before signing off)
        self.controls_ok: bool = controls_ok

    @property
    def data(self) -> dict:
        """The report as data (docs/report.schema.json)."""
        return json.loads(self.json)

    def save(self, path: PlanLike) -> None:
        """Writes the report: HTML, or Markdown for a ``.md`` path, or JSON
        for a ``.json`` path."""
        p = os.fspath(path)
        suffix = pathlib.Path(p).suffix
        body = {".md": self.markdown, ".json": self.json}.get(suffix, self.html)
        with open(p, "w", encoding="utf-8") as f:
            f.write(body)

    def _repr_html_(self) -> str:
        return self.html

    def _repr_markdown_(self) -> str:
        return self.markdown


def report(
    plan: PlanLike, *, start: Optional[str] = None, mean_counts: Iterable[float] = ()
) -> Report:
    """The reviewer's report of the plan (``dpplan report``). ``start``: the
    first run (``YYYY-MM-DD[THH:MM]``, UTC) that places the schedule on the
    calendar; ``mean_counts``: the true counts at which a mean's accuracy is
    stated."""
    text, path = _source(plan)
    return Report(text, path, start, [float(n) for n in mean_counts])


def diff(old: PlanLike, new: PlanLike, *, accuracy_ratio: Optional[float] = None) -> Diff:
    """What changing ``old`` into ``new`` does (``dpplan diff``): the claim,
    the contract, the releases, the accuracy. ``accuracy_ratio``: the growth
    of a noise's std beyond which accuracy counts as worse (default 1.1)."""
    old_text, old_path = _source(old)
    new_text, new_path = _source(new)
    names = (old_path or "old", new_path or "new")
    try:
        doc, md = _dpplan.diff(old_text, new_text, names[0], names[1], accuracy_ratio)
    except _dpplan.Error as e:
        _raise(e)
    d = Diff.from_json(json.loads(doc))
    object.__setattr__(d, "markdown", md)
    return d


class ExecutablePlan:
    """A compiled plan (``dpplan compile``): the artefact a reviewer signs
    off and ``dpplan run`` executes."""

    def __init__(self, text: str):
        #: the executable plan's JSON, byte for byte as ``dpplan compile`` writes it
        self.json: str = text
        self.data: dict = json.loads(text)

    @property
    def body_sha256(self) -> str:
        return self.data["body_sha256"]

    @property
    def epsilon(self) -> float:
        return self.data["body"]["privacy"]["total"]["epsilon"]

    @property
    def delta(self) -> float:
        return self.data["body"]["privacy"]["total"]["delta"]

    @property
    def policy(self) -> Optional[dict]:
        """The record of the policy it was compiled under, if any."""
        return self.data.get("policy")

    def save(self, path: PlanLike) -> None:
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(self.json)

    def __repr__(self) -> str:
        return f"<ExecutablePlan sha256 {self.body_sha256[:12]}… ε = {self.epsilon:g} at δ = {self.delta:g}>"


def compile(plan: PlanLike, *, config: Optional[PlanLike] = None) -> ExecutablePlan:  # noqa: A001
    """The executable plan, compiled under the policy in force (recorded in
    it); a plan with errors raises :class:`PlanError`, one its policy
    refuses :class:`Refused`."""
    text, path = _source(plan)
    try:
        out = _dpplan.compile(text, path, _config(config))
    except _dpplan.Error as e:
        _raise(e)
    return ExecutablePlan(out)


def format(plan: PlanLike) -> str:  # noqa: A001
    """The plan in its canonical layout (``dpplan fmt``)."""
    text, _ = _source(plan)
    try:
        return _dpplan.format_text(text)
    except _dpplan.Error as e:
        _raise(e)


class RunResult:
    """What ``dpplan.run`` released: the run's output document (the JSON
    ``dpplan run`` prints), its values, and the gate's notes."""

    def __init__(self, doc: dict, notes: List[str]):
        #: the run's output document, as ``dpplan run`` prints it
        self.raw: dict = doc
        #: the policy the run went through (or the override), as the binary prints them
        self.notes: List[str] = notes

    @property
    def releases(self) -> List[dict]:
        """One record per release (query and slot), its cells inside, as
        the JSON output has them."""
        return self.raw["results"]

    @property
    def values(self) -> List[dict]:
        """One record per released value (a release's cells flattened, as
        ``dpplan run --csv`` writes them): query, slot, origin, group,
        value, noise_std, 95 % interval, ε, δ, ledger entry."""
        out = []
        for r in self.raw["results"]:
            head = {k: v for k, v in r.items() if k != "cells"}
            for c in r.get("cells", []):
                out.append({**head, **c})
        return out

    @property
    def refused(self) -> List[dict]:
        return self.raw.get("refused", [])

    @property
    def skipped(self) -> List[dict]:
        return self.raw.get("skipped", [])

    @property
    def latest_hash(self) -> str:
        """The ledger's latest hash: keep it outside the ledger (a cut-off
        tail is detected against it: ``expect_hash=``)."""
        return self.raw["ledger_latest_hash"]

    def to_pandas(self):
        """The values as a pandas DataFrame (pandas must be installed)."""
        import pandas

        return pandas.DataFrame(self.values)

    def __repr__(self) -> str:
        return f"<RunResult {len(self.values)} value(s), {len(self.refused)} refused; ledger {self.raw['ledger']} at {self.latest_hash[:12]}…>"


def _int_columns(plan_path: str) -> dict:
    """The columns the compiled plan at ``plan_path`` declares ``int``, per
    dataset; empty when it cannot be read (the run then refuses it)."""
    try:
        with open(plan_path, encoding="utf-8") as f:
            datasets = json.load(f)["body"]["datasets"]
        return {
            name: [c["name"] for c in ds["columns"] if c.get("type") == "int"]
            for name, ds in datasets.items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def _whole_floats_as_ints(t, columns):
    """pandas stores an integer column with a missing value as float64 (NaN
    for the missing): each of ``columns`` (declared ``int``) that is a float
    column becomes int64 again, with what the embedded engine drops from an
    ``int`` column of a CSV (NaN, a fractional value) as a null, which it
    drops (or imputes) alike. A column with an infinity (clamped, not
    dropped, under ``invalid_rows clamp``) or a value beyond int64 is left
    as it is, and the run refuses it by name."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name in columns:
        i = t.schema.get_field_index(name)
        if i < 0 or not pa.types.is_floating(t.schema.field(i).type):
            continue
        col = pc.cast(t.column(i), pa.float64())
        if pc.any(pc.is_inf(col)).as_py() or pc.any(pc.greater_equal(pc.abs(col), 2.0**63)).as_py():
            continue
        whole = pc.and_(pc.is_finite(col), pc.equal(pc.floor(col), col))
        ints = pc.cast(pc.if_else(whole, col, pa.scalar(None, pa.float64())), pa.int64())
        t = t.set_column(i, pa.field(name, pa.int64(), nullable=True), ints)
    return t


def _as_arrow_table(name: str, table, int_columns=()):
    """A DataFrame or table as a pyarrow Table, which the native module
    imports through the Arrow C stream interface without copying its rows
    (pandas' Arrow-backed and numeric columns, Polars' and pyarrow's are
    converted without a copy); ``int_columns``: the dataset's columns
    declared ``int`` (``_whole_floats_as_ints``)."""
    try:
        import pyarrow as pa
    except ImportError:
        raise TypeError(
            f"data[{name!r}] is a {type(table).__name__}: DataFrames and tables need pyarrow (pip install pyarrow), or pass a file path"
        ) from None
    if isinstance(table, pa.Table):
        t = table
    elif type(table).__module__.startswith("pandas"):
        t = pa.Table.from_pandas(table, preserve_index=False)
    elif hasattr(table, "to_arrow"):  # Polars
        t = table.to_arrow()
    elif hasattr(table, "__arrow_c_stream__"):
        t = pa.table(table)
    else:
        raise TypeError(
            f"data[{name!r}] is a {type(table).__name__}: give a pandas or Polars DataFrame, a pyarrow Table, or a file path"
        )
    return _whole_floats_as_ints(t, int_columns)


def run(
    plan: PlanLike,
    *,
    ledger: PlanLike,
    data: Optional[dict] = None,
    at=None,
    slot: Optional[int] = None,
    start=None,
    queries: Iterable[str] = (),
    test_clock: bool = False,
    config: Optional[PlanLike] = None,
    policy_override: Optional[str] = None,
    threads: Optional[int] = None,
    expect_hash: Optional[str] = None,
) -> RunResult:
    """Runs the releases of the compiled plan at ``plan`` (a path: the
    policy in force is the one at its place) that are due, as ``dpplan run``
    does, through the same gates, runtime, exact samplers and ledger.

    ``data`` maps a dataset's name to a pandas or Polars DataFrame, a pyarrow
    Table (handed to the embedded engine in memory through the Arrow C
    stream interface, without a copy, and read with the CSV engine's
    semantics) or a file path; a dataset left out is read
    from the plan's ``source``. ``at`` and ``start``: Unix seconds, a
    ``datetime`` or a UTC date string; ``at`` defaults to now."""
    if isinstance(plan, ExecutablePlan):
        raise TypeError(
            "run takes the compiled plan's path, not the object: the policy in force is the one at the plan's place "
            "(save it first: dpplan.compile(...).save('plan.json'))"
        )
    plan_path = os.fspath(plan)
    import datetime

    def when(t):
        if isinstance(t, datetime.datetime):
            if t.tzinfo is None:
                raise ValueError(f"{t!r} has no time zone: give an aware datetime (dpplan speaks UTC)")
            return int(t.timestamp())
        return t

    sources = {}
    ints = None
    for name, value in (data or {}).items():
        if isinstance(value, (str, os.PathLike)):
            sources[name] = os.fspath(value)
        else:
            if ints is None:
                ints = _int_columns(plan_path)
            sources[name] = _as_arrow_table(name, value, ints.get(name, ()))
    try:
        doc, notes = _dpplan.run(
            plan_path,
            sources,
            os.fspath(ledger),
            when(at),
            slot,
            when(start),
            list(queries),
            test_clock,
            _config(config),
            policy_override,
            threads,
            expect_hash,
        )
    except _dpplan.Error as e:
        _raise(e)
    return RunResult(json.loads(doc), notes)
