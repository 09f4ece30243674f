#!/usr/bin/env bash
# dpplan against DuckDB on the same CSV, the same cores, in one run.
#
#   scripts/bench-vs-duckdb.sh [ROWS...]      (default: 10000000 50000000)
#
# For each size: generates the CSV (the generator of
# crates/dpplan-runtime/benches/runtime.rs; 10^6 users, 4 pages) under
# target/bench-duckdb/, then times, best of 3, with peak RSS from
# /usr/bin/time -v, on 1 and on 2 threads:
#   * dpplan: the full `dpplan run` (release build) of the user-level plan
#     below (rows_per_unit 5, groups_per_unit 3; count, sum, histogram):
#     reading the plan, the ledger (a fresh one per run), the engine, the
#     exact noise;
#   * DuckDB's plain GROUP BY of the same file (count, sum, histogram by
#     page: no bounding, no clamping, no noise);
#   * DuckDB doing the same contribution bounding in SQL (random rows per
#     user, random pages per user, clamping).
# DuckDB 2.0.0 comes from the Python package index into a venv under
# target/ (DUCKDB_PYTHON=/path/to/python to use another one). The CSVs are
# deleted at the end (KEEP_DATA=1 keeps them). RUNS (3) runs per figure,
# SQL_RUNS for the slow SQL bounding (default RUNS). Asserts nothing;
# prints a table for docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/bench-duckdb
mkdir -p "$OUT"
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(10000000 50000000)
RUNS=${RUNS:-3}
USERS=${USERS:-1000000}

. scripts/bench-duckdb-common.sh
duckdb_python

build_dpplan

compile_visits_plan

cat > "$OUT/duck.py" <<'PY'
import sys, duckdb
path, threads, which = sys.argv[1], int(sys.argv[2]), sys.argv[3]
con = duckdb.connect()
con.execute(f"SET threads = {threads}")
src = f"read_csv('{path}', header = true, columns = {{'user_id': 'VARCHAR', 'page': 'VARCHAR', 'seconds': 'DOUBLE'}})"
if which == "plain":
    q = f"SELECT page, count(*) AS n, sum(seconds) AS s FROM {src} GROUP BY page"
else:
    # the same bounding as dpplan: 5 random rows per user, then at most 3
    # random pages per user among those kept; values clamped to [0, 3600]
    # (random() in a column first: a window cannot order by it directly)
    q = f"""
    WITH v AS (SELECT user_id, page, least(greatest(seconds, 0), 3600) AS seconds, random() AS r FROM {src}),
    k AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY user_id ORDER BY r) AS rn FROM v) WHERE rn <= 5),
    g AS (SELECT user_id, page FROM (SELECT user_id, page, row_number() OVER (PARTITION BY user_id ORDER BY r) AS gn
          FROM (SELECT user_id, page, random() AS r FROM (SELECT DISTINCT user_id, page FROM k))) WHERE gn <= 3),
    t AS (SELECT count(*) AS n, sum(seconds) AS s FROM k),
    h AS (SELECT k.page, count(*) AS n FROM k JOIN g USING (user_id, page) GROUP BY k.page)
    SELECT * FROM t, h"""
rows = con.execute(q).fetchall()
assert rows, "no result"
PY


write_run_script "$OUT/visits.json"

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| rows | threads | dpplan run | DuckDB plain GROUP BY | ratio | DuckDB bounding in SQL | peak RSS dpplan / DuckDB plain / DuckDB bounding |\n'
printf '|---|---|---|---|---|---|---|\n'
for rows in "${SIZES[@]}"; do
  csv=$OUT/visits-$rows.csv
  if [ ! -s "$csv" ]; then
    echo "generating $rows rows ..." >&2
    DPPLAN_BENCH_ROWS=$rows DPPLAN_BENCH_USERS=$USERS DPPLAN_BENCH_GENERATE=$csv \
      cargo bench --locked -p dpplan-runtime --bench runtime >&2
  fi
  cat "$csv" > /dev/null # in the page cache for every contestant
  for threads in 1 2; do
    read -r dt dm < <(best "$OUT/dpplan-run.sh" "$csv" "$threads")
    read -r pt pm < <(best "$PY" "$OUT/duck.py" "$csv" "$threads" plain)
    read -r bt bm < <(RUNS=${SQL_RUNS:-$RUNS} best "$PY" "$OUT/duck.py" "$csv" "$threads" bounded)
    ratio=$(awk "BEGIN {printf \"%.2f\", $dt / $pt}")
    printf '| %s | %s | %.2f s | %.2f s | %s× | %.2f s | %s / %s / %s MB |\n' \
      "$rows" "$threads" "$dt" "$pt" "$ratio" "$bt" "$dm" "$pm" "$bm"
  done
  [ "${KEEP_DATA:-0}" = 1 ] || rm -f "$csv"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$OUT"/ledger.sqlite* "$OUT/time.txt" "$OUT/stderr.txt" "$OUT/dpplan-run.sh"
