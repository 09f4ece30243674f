#!/usr/bin/env bash
# dpplan on a Parquet file against DuckDB on the same file, and against
# dpplan on the same data as CSV, the same cores, in one run.
#
#   scripts/bench-parquet.sh [ROWS...]      (default: 10000000 50000000)
#
# For each size: DuckDB writes the data (USERS users, 1e6 by default; 4
# pages; seconds uniform in [0, 3600]) as a CSV and as a Parquet file
# (DuckDB's defaults: snappy, row groups of 122,880 rows) under
# target/bench-parquet/, then times, best of RUNS (3), with peak RSS from
# /usr/bin/time -v, on 1 and on 2 threads:
#   * dpplan: the full `dpplan run` (release build) of the user-level plan
#     of scripts/bench-vs-duckdb.sh (rows_per_unit 5, groups_per_unit 3;
#     count, sum, histogram) on the Parquet file, and on the CSV;
#   * DuckDB's plain GROUP BY of the Parquet file (no bounding, no noise);
#   * DuckDB's per-user GROUP BY user_id, page (the hash work of the
#     bounding, without the bounding);
#   * DuckDB doing the same contribution bounding in SQL on it.
# DuckDB 2.0.0 from the Python package index in a venv under target/
# (DUCKDB_PYTHON to use another). The files are deleted at the end
# (KEEP_DATA=1 keeps them). Asserts nothing; prints a table for
# docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/bench-parquet
mkdir -p "$OUT"
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(10000000 50000000)
RUNS=${RUNS:-3}
USERS=${USERS:-1000000}

. scripts/bench-duckdb-common.sh
duckdb_python

build_dpplan

compile_visits_plan

cat > "$OUT/gen.py" <<'PY'
import sys, duckdb
rows, users, csv, parquet = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
con = duckdb.connect()
con.execute("SELECT setseed(0.5)")
con.execute(f"""CREATE TABLE v AS SELECT
  'u' || CAST(floor(random() * {users}) AS BIGINT) AS user_id,
  (['home', 'search', 'checkout', 'account'])[1 + CAST(floor(random() * 4) AS INTEGER)] AS page,
  round(random() * 3600, 3) AS seconds
FROM range({rows})""")
con.execute(f"COPY v TO '{csv}' (HEADER, DELIMITER ',')")
con.execute(f"COPY v TO '{parquet}' (FORMAT parquet)")
PY

cat > "$OUT/duck.py" <<'PY'
import sys, duckdb
path, threads, which = sys.argv[1], int(sys.argv[2]), sys.argv[3]
con = duckdb.connect()
con.execute(f"SET threads = {threads}")
src = f"read_parquet('{path}')"
if which == "plain":
    q = f"SELECT page, count(*) AS n, sum(seconds) AS s FROM {src} GROUP BY page"
elif which == "per-user":
    # the hash work of bounding without the bounding: one group per (user, page)
    q = f"SELECT count(*), sum(n), sum(s) FROM (SELECT user_id, page, count(*) AS n, sum(seconds) AS s FROM {src} GROUP BY user_id, page)"
else:
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
printf '| rows | threads | dpplan on Parquet | dpplan on CSV | DuckDB plain GROUP BY (Parquet) | ratio | DuckDB per-user GROUP BY user, page | ratio | DuckDB bounding in SQL (Parquet) | peak RSS dpplan Parquet / CSV / DuckDB plain / per-user / bounding |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for rows in "${SIZES[@]}"; do
  csv=$OUT/visits-$rows.csv
  pq=$OUT/visits-$rows.parquet
  if [ ! -s "$pq" ] || [ ! -s "$csv" ]; then
    echo "generating $rows rows ..." >&2
    "$PY" "$OUT/gen.py" "$rows" "$USERS" "$csv" "$pq"
  fi
  cat "$csv" "$pq" > /dev/null # in the page cache for every contestant
  for threads in 1 2; do
    read -r qt qm < <(best "$OUT/dpplan-run.sh" "$pq" "$threads")
    read -r ct cm < <(best "$OUT/dpplan-run.sh" "$csv" "$threads")
    read -r pt pm < <(best "$PY" "$OUT/duck.py" "$pq" "$threads" plain)
    read -r ut um < <(best "$PY" "$OUT/duck.py" "$pq" "$threads" per-user)
    read -r bt bm < <(RUNS=${SQL_RUNS:-$RUNS} best "$PY" "$OUT/duck.py" "$pq" "$threads" bounded)
    ratio=$(awk "BEGIN {printf \"%.2f\", $qt / $pt}")
    uratio=$(awk "BEGIN {printf \"%.2f\", $qt / $ut}")
    printf '| %s | %s | %.2f s | %.2f s | %.2f s | %s× | %.2f s | %s× | %.2f s | %s / %s / %s / %s / %s MB |\n' \
      "$rows" "$threads" "$qt" "$ct" "$pt" "$ratio" "$ut" "$uratio" "$bt" "$qm" "$cm" "$pm" "$um" "$bm"
  done
  [ "${KEEP_DATA:-0}" = 1 ] || rm -f "$csv" "$pq"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$OUT"/ledger.sqlite* "$OUT/time.txt" "$OUT/stderr.txt" "$OUT/dpplan-run.sh"
