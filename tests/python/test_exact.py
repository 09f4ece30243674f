"""A DataFrame given to `dpplan.run` and the same data as CSV give
byte-identical exact aggregates, on every shipped example and for pandas,
Polars and pyarrow: the frame goes through `dpplan.run`'s own conversion
(`dpplan._as_arrow_table`), is handed to the native module in memory
(the Arrow C stream interface) and the embedded engine reads it as a run
does.
The aggregates come from the tests' wheel only (`_dpplan._exact_aggregates`,
the `test-hooks` feature: raw private values, never in a released wheel)."""

import pathlib
import shutil
import subprocess

import pandas as pd
import polars as pl
import pyarrow.csv
import pytest

import dpplan
from dpplan import _dpplan

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent for p in ROOT.glob("examples/*/*.dpplan") if (p.parent / "data").is_dir())
# what pandas reads as missing by default, for Polars, which reads only ""
NA = ["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
      "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"]
READERS = {
    "pandas": lambda p: pd.read_csv(p),
    "polars": lambda p: pl.read_csv(p, null_values=NA, infer_schema_length=None),
    "pyarrow": lambda p: pyarrow.csv.read_csv(p),
}


def exact(plan, data, seed=7):
    """The plan's exact aggregates per request, without the source's path."""
    return [(ds, values) for ds, _source, values in _dpplan._exact_aggregates(str(plan), data, seed)]


def sources(plan):
    """Each dataset's source file, as the plan names it."""
    return {ds: pathlib.Path(source) for ds, source, _ in _dpplan._exact_aggregates(str(plan), {}, 7)}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Every example with data, compiled by the binary."""
    out = {}
    for d in EXAMPLES:
        dst = tmp_path_factory.mktemp(d.name) / d.name
        shutil.copytree(d, dst)
        subprocess.run([shutil.which("dpplan"), "compile", dst / f"{d.name}.dpplan", "-o", dst / "plan.json"],
                       check=True, capture_output=True)
        out[d.name] = dst
    return out


def test_every_example_is_here(compiled):
    assert len(compiled) >= 12, sorted(compiled)


@pytest.mark.parametrize("kind", sorted(READERS))
@pytest.mark.parametrize("example", [d.name for d in EXAMPLES])
def test_a_frame_gives_the_csvs_exact_aggregates(compiled, example, kind, tmp_path):
    d = compiled[example]
    want = exact(d / "plan.json", {})
    assert want, f"{example}: nothing to compare"
    compared = 0
    for ds, source in sorted(sources(d / "plan.json").items()):
        assert source.suffix == ".csv" and source.exists(), source
        frame = READERS[kind](source)
        ints = dpplan._int_columns(str(d / "plan.json")).get(ds, ())
        arrow = dpplan._as_arrow_table(ds, frame, ints)
        got = exact(d / "plan.json", {ds: arrow})
        assert got == want, f"{example}/{ds} from {kind}"
        compared += sum(len(v) for name, v in got if name == ds)
    assert compared > 0


def test_pandas_ints_with_a_missing_value_are_ints_again(compiled, tmp_path):
    """pandas reads an int column with a gap as float64: `dpplan.run` makes
    it int64 again, NaN and a fractional value as nulls (dropped from an
    int column of a CSV alike); an infinity (which `invalid_rows clamp`
    clamps) leaves the column a float, refused by name."""
    d = compiled["accuracy-targets"]
    frame = pd.read_csv(d / "data/trips.csv")
    assert frame["km"].dtype == "float64" and frame["km"].isna().any()
    ints = dpplan._int_columns(str(d / "plan.json"))["trips"]
    assert ints == ["km"]
    arrow = dpplan._as_arrow_table("trips", frame, ints)
    assert exact(d / "plan.json", {"trips": arrow}) == exact(d / "plan.json", {})
    # a fractional km is dropped as from the CSV
    (tmp_path / "csv").mkdir()
    frac = frame.copy()
    frac.loc[frac.index[:5], "km"] = 2.5
    frac.to_csv(tmp_path / "csv/trips.csv", index=False)
    arrow = dpplan._as_arrow_table("trips", frac, ints)
    assert exact(d / "plan.json", {"trips": arrow}) == exact(d / "plan.json", {"trips": str(tmp_path / "csv/trips.csv")})
    assert exact(d / "plan.json", {"trips": arrow}) != exact(d / "plan.json", {})
    # an infinity: left a float, and refused naming the column
    inf = frame.copy()
    inf.loc[inf.index[0], "km"] = float("inf")
    arrow = dpplan._as_arrow_table("trips", inf, ints)
    with pytest.raises(_dpplan.Error, match="column `km`.*Float64"):
        exact(d / "plan.json", {"trips": arrow})


def test_other_rows_give_other_aggregates(compiled, tmp_path):
    """The negative control: a frame with one more visit is not the CSV."""
    d = compiled["web-analytics"]
    frame = pd.read_csv(d / "data/visits.csv")
    more = pd.concat([frame, pd.DataFrame([{"user_id": "u-new", "page": "home", "seconds": 5.0}])])
    arrow = dpplan._as_arrow_table("visits", more)
    assert exact(d / "plan.json", {"visits": arrow}) != exact(d / "plan.json", {})


def test_the_hook_is_not_in_the_package():
    """The raw aggregates are reachable only through the native module of
    the tests' wheel, never re-exported by `dpplan`."""
    assert not any("exact" in name for name in dir(dpplan))


def test_an_arrow_stream_is_read_in_memory(compiled):
    """Any object with `__arrow_c_stream__` is a table; one whose method
    gives no Arrow stream capsule is refused with a TypeError naming the
    dataset, and nothing is read."""
    d = compiled["web-analytics"]
    table = pyarrow.csv.read_csv(d / "data/visits.csv")

    class Stream:
        def __arrow_c_stream__(self, requested_schema=None):
            return table.__arrow_c_stream__(requested_schema)

    assert exact(d / "plan.json", {"visits": Stream()}) == exact(d / "plan.json", {})

    class NotAStream:
        def __arrow_c_stream__(self, requested_schema=None):
            return table.schema.__arrow_c_schema__()

    with pytest.raises(TypeError, match="data\\[\"visits\"\\].*capsule"):
        exact(d / "plan.json", {"visits": NotAStream()})
    with pytest.raises(TypeError, match="data\\[\"visits\"\\]"):
        exact(d / "plan.json", {"visits": 42})
