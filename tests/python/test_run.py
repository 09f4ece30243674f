"""`dpplan.run` on DataFrames: the binary's gates, runtime and ledger, the
embedded engine's semantics; a run from Python and one from the binary on
the same ledger are interchangeable."""

import csv
import datetime
import json
import pathlib
import shutil
import sqlite3
import subprocess

import pandas as pd
import polars as pl
import pyarrow.csv
import pytest

import dpplan

ROOT = pathlib.Path(__file__).resolve().parents[2]
AT = "2026-01-03T00:10Z"
START = "2026-01-01"


def cli(*args, ok=(0,), cwd=None):
    p = subprocess.run(
        [shutil.which("dpplan"), *map(str, args)], capture_output=True, text=True, cwd=cwd
    )
    assert p.returncode in ok, (args, p.returncode, p.stderr)
    return p


@pytest.fixture
def plan(tmp_path):
    """examples/web-analytics, compiled by the binary, in a directory of its
    own (no policy above it)."""
    shutil.copytree(ROOT / "examples/web-analytics", tmp_path / "w")
    cli("compile", tmp_path / "w/web-analytics.dpplan", "-o", tmp_path / "w/plan.json")
    return tmp_path / "w"


def shape(values):
    """What a run released, without the noise: which value, how noisy, at
    what cost (a mean's std is stated at its released, noisy count: left
    out)."""
    return sorted(
        (
            v["query"],
            v["slot"],
            v["origin"],
            v.get("group") or "",
            None if v["aggregation"].startswith("mean(") else v["noise_std"],
            v["epsilon"],
            v["delta"],
        )
        for v in values
    )


def entries(ledger):
    """The ledger's entries without their times, hashes and noisy values."""
    with sqlite3.connect(ledger) as db:
        cols = [r[1] for r in db.execute("PRAGMA table_info(entries)")]
        keep = [c for c in ("seq", "kind", "query", "slot", "epsilon", "delta") if c in cols]
        assert {"kind", "query", "slot"} <= set(keep), cols
        return db.execute(f"SELECT {', '.join(keep)} FROM entries ORDER BY seq").fetchall()


def true_daily_count(csv_path):
    """The count a bounded user contributes: min(rows, rows_per_unit = 5),
    whichever rows are kept."""
    rows = {}
    with open(csv_path) as f:
        for r in csv.DictReader(f):
            rows[r["user_id"]] = rows.get(r["user_id"], 0) + 1
    return sum(min(n, 5) for n in rows.values())


@pytest.mark.parametrize("kind", ["pandas", "polars", "pyarrow"])
def test_a_dataframe_runs_as_its_csv_does(plan, kind):
    visits = plan / "data/visits.csv"
    frame = {
        "pandas": lambda: pd.read_csv(visits),
        # the file's hostile rows (an unknown page, `n/a` and empty
        # seconds, an empty id) read as each library reads them: nulls,
        # which the engine drops as it drops those rows of the CSV
        "polars": lambda: pl.read_csv(visits, null_values=["n/a"]),
        "pyarrow": lambda: pyarrow.csv.read_csv(visits),
    }[kind]()
    got = dpplan.run(plan / "plan.json", data={"visits": frame}, ledger=plan / "py.sqlite", at=AT, start=START)
    by_cli = json.loads(
        cli("run", plan / "plan.json", "--data", f"visits={visits}", "--ledger", plan / "cli.sqlite",
            "--at", AT, "--start", START).stdout
    )
    # the same releases at the same cost, the same ledger entries
    assert shape(got.values) == shape(dpplan.RunResult(by_cli, []).values) and got.values
    assert entries(plan / "py.sqlite") == entries(plan / "cli.sqlite")
    assert got.skipped == by_cli.get("skipped", [])
    # the binary verifies the ledger Python wrote
    cli("ledger", "verify", plan / "py.sqlite")
    # the values are of these data: the daily count lies within 10 noise
    # standard deviations of the bounded true count (Laplace: fails by
    # chance with probability e^(-10·√2) ≈ 7e-7)
    (count,) = [v for v in got.values if v["query"] == "daily_visits"]
    assert abs(count["value"] - true_daily_count(visits)) < 10 * count["noise_std"]
    assert got.to_pandas()["query"].tolist() == [v["query"] for v in got.values]


def test_other_data_give_another_count(plan):
    """The negative control of the test above: the data reach the release.
    Ten copies of every user (new ids) make the bounded count ten times
    the file's, about 37 noise standard deviations away from it."""
    visits = plan / "data/visits.csv"
    frame = pd.read_csv(visits)
    copies = pd.concat([frame.assign(user_id=frame["user_id"] + f"-{k}") for k in range(10)])
    copies.to_csv(plan / "copies.csv", index=False)
    got = dpplan.run(plan / "plan.json", data={"visits": copies}, ledger=plan / "h.sqlite", at=AT, start=START)
    (count,) = [v for v in got.values if v["query"] == "daily_visits"]
    full, tenfold = true_daily_count(visits), true_daily_count(plan / "copies.csv")
    assert abs(tenfold - full) > 20 * count["noise_std"]
    assert abs(count["value"] - tenfold) < 10 * count["noise_std"]


def test_python_and_the_binary_share_one_ledger(plan):
    visits = plan / "data/visits.csv"
    ledger = plan / "shared.sqlite"
    day3 = dpplan.run(plan / "plan.json", data={"visits": pd.read_csv(visits)}, ledger=ledger, at=AT, start=START)
    # the next day by cron, with the binary, on the ledger Python began
    day4 = json.loads(
        cli("run", plan / "plan.json", "--data", f"visits={visits}", "--ledger", ledger,
            "--at", "2026-01-04T00:10Z", "--expect-hash", day3.latest_hash).stdout
    )
    assert [(r["query"], r["slot"]) for r in day4["results"] if r["origin"] == "fresh"] == [("daily_visits", 3)]
    # and back: Python at the same time releases nothing new
    again = dpplan.run(plan / "plan.json", data={"visits": visits}, ledger=ledger, at="2026-01-04T00:10Z",
                       expect_hash=day4["ledger_latest_hash"])
    assert [v for v in again.values if v["origin"] == "fresh"] == []
    cli("ledger", "verify", ledger)


def test_the_policy_gate_is_the_binarys(plan):
    # compiled under no policy, then a policy appears above it: refused, as
    # `dpplan run` refuses it
    (plan / "dpplan.toml").write_text("[limits]\nmax-epsilon = 10\n")
    visits = plan / "data/visits.csv"
    p = cli("run", plan / "plan.json", "--data", f"visits={visits}", "--ledger", plan / "c.sqlite", "--at", AT, ok=(1,))
    assert "compiled under no policy" in p.stderr
    with pytest.raises(dpplan.Refused, match="compiled under no policy"):
        dpplan.run(plan / "plan.json", data={"visits": visits}, ledger=plan / "p.sqlite", at=AT)
    assert not (plan / "p.sqlite").exists()
    # the operator's explicit decision goes on, and says so
    got = dpplan.run(plan / "plan.json", data={"visits": visits}, ledger=plan / "p.sqlite", at=AT,
                     policy_override="migration window, ticket 42")
    assert got.values and any("policy override" in n for n in got.notes)
    # recompiled under the policy: goes on, and the note names it
    cli("compile", plan / "web-analytics.dpplan", "-o", plan / "plan.json")
    ok = dpplan.run(plan / "plan.json", data={"visits": visits}, ledger=plan / "q.sqlite", at=AT)
    assert any(n.startswith("policy: ") for n in ok.notes)


def test_what_a_run_refuses(plan):
    visits = plan / "data/visits.csv"
    with pytest.raises(dpplan.Refused, match="compiled plan"):
        dpplan.run(plan / "web-analytics.dpplan", data={"visits": visits}, ledger=plan / "x.sqlite", at=AT)
    with pytest.raises(TypeError, match="path"):
        dpplan.run(dpplan.compile(plan / "web-analytics.dpplan"), ledger=plan / "x.sqlite")
    with pytest.raises(ValueError, match="no dataset `clicks`"):
        dpplan.run(plan / "plan.json", data={"clicks": visits}, ledger=plan / "x.sqlite", at=AT)
    with pytest.raises(ValueError, match="time zone"):
        dpplan.run(plan / "plan.json", ledger=plan / "x.sqlite", at=datetime.datetime(2026, 1, 3))
    with pytest.raises(ValueError, match="not a time"):
        dpplan.run(plan / "plan.json", ledger=plan / "x.sqlite", at="tomorrow")
    with pytest.raises(TypeError, match="DataFrame"):
        dpplan.run(plan / "plan.json", data={"visits": [1, 2, 3]}, ledger=plan / "x.sqlite", at=AT)
    # a column of the wrong type is refused before anything is charged
    bad = pd.read_csv(visits).assign(seconds=lambda d: d["seconds"].astype(str))
    with pytest.raises(dpplan.RunError, match="seconds"):
        dpplan.run(plan / "plan.json", data={"visits": bad}, ledger=plan / "x.sqlite", at=AT)
    assert not (plan / "x.sqlite").exists()
    # an aware datetime is the same time as its string
    t = datetime.datetime(2026, 1, 3, 0, 10, tzinfo=datetime.timezone.utc)
    got = dpplan.run(plan / "plan.json", ledger=plan / "y.sqlite", at=t, start=START)
    assert [v["slot"] for v in got.values if v["query"] == "daily_visits"] == [2]


def test_a_plans_source_cannot_name_an_in_memory_table(plan, monkeypatch):
    """A plan's author cannot make a run read a table given in memory (to
    this run or to another beside it): a `source` naming one is refused
    before anything is charged, even for a plan run from its own directory."""
    text = (plan / "web-analytics.dpplan").read_text().replace('"data/visits.csv"', '"arrow-memory:1"')
    (plan / "web-analytics.dpplan").write_text(text)
    cli("compile", plan / "web-analytics.dpplan", "-o", plan / "plan.json")
    monkeypatch.chdir(plan)
    with pytest.raises(dpplan.RunError, match="names an in-memory table"):
        dpplan.run("plan.json", ledger="m.sqlite", at=AT, start=START)
    assert not (plan / "m.sqlite").exists()
