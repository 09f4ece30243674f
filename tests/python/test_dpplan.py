"""The `dpplan` wheel as a user meets it (scripts/test-python.sh installs it
in a fresh venv): the binary pip put on PATH, and the Python module, whose
every result must be the binary's own on the same plan."""

import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import dpplan
from dpplan import _model

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted(ROOT.glob("examples/*/*.dpplan"))
SCHEMA = json.loads((ROOT / "docs/json-output.schema.json").read_text())
DIFF_SCHEMA = json.loads((ROOT / "docs/diff.schema.json").read_text())


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    # plans are named as the CLI is given them: relative to the repository
    monkeypatch.chdir(ROOT)


def cli(*args, ok=(0,), stdin=None):
    """The installed `dpplan` binary (the one on this venv's PATH)."""
    binary = shutil.which("dpplan")
    assert binary is not None, "pip did not put `dpplan` on PATH"
    assert pathlib.Path(binary).parent == pathlib.Path(sys.executable).parent
    p = subprocess.run(
        [binary, *args], input=stdin, capture_output=True, text=True, cwd=ROOT
    )
    assert p.returncode in ok, (args, p.returncode, p.stderr)
    return p


def rel(path):
    return str(path.relative_to(ROOT))


def test_the_binary_is_on_path_and_is_the_modules_version():
    out = cli("--version").stdout.split()
    assert out == ["dpplan", dpplan.__version__]
    # `python -m dpplan` runs the same binary
    p = subprocess.run(
        [sys.executable, "-m", "dpplan", "--version"], capture_output=True, text=True
    )
    assert p.returncode == 0 and p.stdout.split() == out


def test_examples_are_shipped_and_found():
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("plan", EXAMPLES, ids=lambda p: p.parent.name)
def test_check_is_the_clis_document(plan):
    expected = json.loads(cli("check", "--format", "json", rel(plan)).stdout)
    result = dpplan.check(rel(plan))
    assert result.raw == expected
    assert result.ok
    assert result.epsilon == expected["files"][0]["epsilon"]
    # typed all the way down
    q = result.queries[0]
    assert isinstance(q, dpplan.Query)
    assert isinstance(q.parts[0], dpplan.Part)
    assert isinstance(q.parts[0].mechanism, dpplan.Mechanism)
    assert q.parts[0].l2 == expected["files"][0]["queries"][0]["parts"][0]["l2"]
    # the same plan given as its text and as a pathlib.Path
    assert dpplan.check(plan).result.epsilon == result.epsilon
    as_text = dpplan.check(plan.read_text())
    assert as_text.result.path == "<string>"
    assert as_text.result.epsilon == result.epsilon


@pytest.mark.parametrize("plan", EXAMPLES, ids=lambda p: p.parent.name)
def test_account_is_the_clis_document(plan):
    expected = json.loads(cli("account", "--json", rel(plan)).stdout)
    got = dpplan.account(rel(plan))
    assert got.raw == expected
    assert all(isinstance(a, dpplan.AccountantResult) for a in got.accountants)


@pytest.mark.parametrize("plan", EXAMPLES, ids=lambda p: p.parent.name)
def test_compile_is_the_clis_executable_plan(plan):
    expected = cli("compile", rel(plan)).stdout
    got = dpplan.compile(rel(plan))
    assert got.json.rstrip("\n") == expected.rstrip("\n")
    assert got.body_sha256 == json.loads(expected)["body_sha256"]
    assert got.policy is None


# the report's negative controls re-account the plan once per query: the
# examples whose report takes well under a second
REPORTED = [ROOT / f"examples/{n}/{n}.dpplan" for n in ("signups", "site-visits", "trip-fares")]


@pytest.mark.parametrize("plan", REPORTED, ids=lambda p: p.parent.name)
def test_report_is_the_clis_report(plan):
    r = dpplan.report(rel(plan), start="2026-01-01", mean_counts=[500])
    for fmt, body in (("html", r.html), ("md", r.markdown), ("json", r.json)):
        expected = cli(
            "report", "--format", fmt, "--start", "2026-01-01", "--mean-count", "500", rel(plan)
        ).stdout
        assert body.rstrip("\n") == expected.rstrip("\n"), fmt
    assert r.controls_ok
    # the options reach the report: another start moves its calendar
    assert dpplan.report(rel(plan), start="2027-03-01").json != r.json


def test_the_report_displays_itself_in_a_notebook(tmp_path):
    plan = ROOT / "examples/signups/signups.dpplan"
    r = dpplan.report(plan)
    html = r._repr_html_()
    assert html.lstrip().lower().startswith("<!doctype html>")
    eps = dpplan.check(plan).epsilon
    # the claim a reviewer reads is in the page, and the figures are inline SVG
    assert "<svg" in html
    assert r.data["contract"]["total"]["epsilon"] == eps
    assert r._repr_markdown_() == r.markdown
    r.save(tmp_path / "r.md")
    assert (tmp_path / "r.md").read_text() == r.markdown


def test_diff_is_the_clis_document(tmp_path):
    old = tmp_path / "old.dpplan"
    new = tmp_path / "new.dpplan"
    text = (ROOT / "examples/signups/signups.dpplan").read_text()
    old.write_text(text)
    noisier = text.replace("sigma 40", "sigma 20", 1)
    assert noisier != text
    new.write_text(noisier)
    expected = json.loads(cli("diff", str(old), str(new), "--format", "json").stdout)
    d = dpplan.diff(old, new)
    assert d.raw == expected
    # less noise spends more: the verdict says so (the negative control:
    # the same plan twice changes nothing)
    assert d.increase and not dpplan.diff(old, old).increase
    assert dpplan.diff(old, old).identical
    md = cli("diff", str(old), str(new), "--format", "md").stdout
    assert d._repr_markdown_().rstrip("\n") == md.rstrip("\n")


def test_format_is_the_clis_layout():
    messy = "plan \"p\" {\nprivacy {\n    unit event\n  adjacency add_remove\n budget epsilon 1 delta 0\n}\n}\n"
    expected = cli("fmt", "-", stdin=messy).stdout
    assert dpplan.format(messy) == expected
    assert dpplan.format(expected) == expected


BROKEN = 'plan "broken" {\n  privacy {\n    unit user by\n  }\n}\n'


def test_a_plan_with_errors_is_a_result_for_check_and_an_exception_elsewhere():
    r = dpplan.check(BROKEN)
    assert not r.ok
    assert r.diagnostics and r.diagnostics[0].is_error
    for call in (dpplan.compile, dpplan.account, dpplan.report):
        with pytest.raises(dpplan.PlanError) as e:
            call(BROKEN)
        d = e.value.diagnostics[0]
        # the same diagnostic as `dpplan check`, located in the text
        assert d == r.diagnostics[0]
        assert d.code.startswith("DP") and d.range.start.line >= 1
        assert d.code in str(e.value)
    with pytest.raises(dpplan.PlanError):
        dpplan.diff(BROKEN, ROOT / "examples/signups/signups.dpplan")
    with pytest.raises(dpplan.PlanError):
        dpplan.format("plan {")


def test_bad_arguments_are_clear_errors():
    plan = ROOT / "examples/signups/signups.dpplan"
    with pytest.raises(ValueError, match="not a valid date"):
        dpplan.report(plan, start="yesterday")
    with pytest.raises(ValueError, match="positive"):
        dpplan.report(plan, mean_counts=[float("nan")])
    with pytest.raises(ValueError, match="at least 1"):
        dpplan.diff(plan, plan, accuracy_ratio=0.5)
    with pytest.raises(TypeError):
        dpplan.check(42)
    with pytest.raises(OSError, match="cannot read"):
        dpplan.check(pathlib.Path("no/such/plan.dpplan"))
    with pytest.raises(dpplan.PlanError, match="UTF-8"):
        bad = ROOT / "target" / "not-utf8.dpplan"
        bad.write_bytes(b"plan \"x\" { \xff }")
        try:
            dpplan.check(bad)
        finally:
            bad.unlink()


def test_the_policy_in_force_is_applied_as_the_cli_applies_it(tmp_path):
    org = ROOT / "tests/policy/org"
    plan = org / "dp100-epsilon.dpplan"
    # check: the policy's findings are in the document, as the CLI's
    expected = json.loads(cli("check", "--format", "json", rel(plan), ok=(1,)).stdout)
    got = dpplan.check(rel(plan))
    assert got.raw == expected
    assert "DP100" in [d.code for d in got.diagnostics]
    assert got.raw["policies"] and not got.ok
    # compile: refused by the policy, as `dpplan compile` refuses it
    cli("compile", rel(plan), ok=(1,))
    with pytest.raises(dpplan.Refused) as e:
        dpplan.compile(rel(plan))
    assert "fails the policy" in e.value.message
    assert "DP100" in [d.code for d in e.value.diagnostics]
    # a plan the policy accepts is compiled with the record of the policy
    near = org / "near-miss.dpplan"
    expected = cli("compile", rel(near)).stdout
    compiled = dpplan.compile(rel(near))
    assert compiled.json.rstrip("\n") == expected.rstrip("\n")
    assert compiled.policy is not None and compiled.policy["sha256"]
    # the same plan with no policy above it records none (the negative control)
    lone = tmp_path / "near-miss.dpplan"
    lone.write_text(near.read_text())
    assert dpplan.compile(lone).policy is None


def test_a_policy_file_that_cannot_be_used_is_a_policy_error(tmp_path):
    (tmp_path / "dpplan.toml").write_text("[limits]\nmax-epsilon = -1\n")
    plan = tmp_path / "p.dpplan"
    plan.write_text((ROOT / "examples/signups/signups.dpplan").read_text())
    cli("check", str(plan), ok=(2,))
    with pytest.raises(dpplan.PolicyError) as e:
        dpplan.check(plan)
    assert "dpplan.toml" in str(e.value)
    with pytest.raises(dpplan.PolicyError):
        dpplan.compile(plan)


def schema_props(schema, name):
    """The properties of a schema object, with those of the objects it
    extends (`allOf` of `$ref`s)."""
    d = schema["$defs"][name]
    props = set(d.get("properties", {}))
    for part in d.get("allOf", []):
        ref = part.get("$ref")
        if ref:
            props |= schema_props(schema, ref.rsplit("/", 1)[1])
        props |= set(part.get("properties", {}))
    return props


def fields(cls):
    return {
        f.name
        for f in dataclasses.fields(cls)
        if f.name != "raw" and not f.metadata.get("extra")
    }


@pytest.mark.parametrize(
    "cls, definition",
    [
        (_model.Position, "position"),
        (_model.Range, "range"),
        (_model.Diagnostic, "diagnostic"),
        (_model.Suppressed, "suppressed"),
        (_model.Mechanism, "mechanism"),
        (_model.Cost, "cost"),
        (_model.Part, "part"),
        (_model.Selection, "selection"),
        (_model.Accuracy, "accuracy"),
        (_model.Query, "query"),
        (_model.AccountantResult, "accountant"),
        (_model.PlanResult, "file"),
    ],
)
def test_every_record_has_its_schema_objects_fields(cls, definition):
    assert fields(cls) == schema_props(SCHEMA, definition)


def test_the_top_level_records_have_their_schemas_fields():
    assert fields(_model.CheckResult) == set(SCHEMA["properties"])
    assert fields(_model.Summary) == set(SCHEMA["properties"]["summary"]["properties"])
    assert fields(_model.Diff) == set(DIFF_SCHEMA["properties"])
