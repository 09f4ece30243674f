"""`dpplan.run` on a pandas DataFrame held in memory, against the same rows
as an Arrow IPC file and against writing that file first (what `dpplan.run`
did before frames were handed over in memory). Asserts nothing; prints the
times (best of RUNS) and the peak RSS.

    python scripts/bench-python-frames.py [ROWS]      (default 10,000,000)

Run it with the Python of a venv where the wheel is installed
(scripts/build-wheel.sh, then pip install target/wheels/dpplan-*.whl with
pandas, pyarrow and numpy); `dpplan` must be on PATH (the wheel puts it
there). The plan is examples/web-analytics, with ROWS/10 users."""

import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.ipc

import dpplan

ROOT = pathlib.Path(__file__).resolve().parents[1]
ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
RUNS = int(os.environ.get("RUNS", "2"))


def main():
    with tempfile.TemporaryDirectory(prefix="dpplan-bench-") as tmp:
        tmp = pathlib.Path(tmp)
        shutil.copytree(ROOT / "examples/web-analytics", tmp / "w")
        plan = tmp / "w/plan.json"
        subprocess.run(["dpplan", "compile", tmp / "w/web-analytics.dpplan", "-o", plan], check=True,
                       capture_output=True)
        rng = np.random.default_rng(1)
        users = np.char.add("u", rng.integers(0, max(ROWS // 10, 1), ROWS).astype(str))
        pages = np.array(["home", "pricing", "docs", "blog"])[rng.integers(0, 4, ROWS)]
        df = pd.DataFrame({"user_id": users, "page": pages, "seconds": rng.uniform(0, 600, ROWS)})
        n = 0

        def run(data):
            nonlocal n
            n += 1
            t = time.perf_counter()
            dpplan.run(plan, data={"visits": data}, ledger=tmp / f"l{n}.sqlite", at="2026-01-03T00:10Z",
                       start="2026-01-01")
            return time.perf_counter() - t

        def write_ipc(path):
            t = time.perf_counter()
            table = pa.Table.from_pandas(df, preserve_index=False)
            with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
                w.write_table(table)
            return time.perf_counter() - t

        memory, on_file, write_then_run = [], [], []
        for k in range(RUNS):
            memory.append(run(df))
            path = tmp / f"v{k}.arrow"
            written = write_ipc(path)
            ran = run(str(path))
            on_file.append(ran)
            write_then_run.append(written + ran)
            path.unlink()
        print(f"rows: {ROWS:,}, users: {max(ROWS // 10, 1):,}, best of {RUNS}")
        print(f"dpplan.run on the frame (in memory): {min(memory):.2f} s")
        print(f"dpplan.run on an Arrow IPC file:     {min(on_file):.2f} s")
        print(f"writing that file, then the run:     {min(write_then_run):.2f} s")
        print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")


if __name__ == "__main__":
    main()
