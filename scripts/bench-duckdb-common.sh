# What scripts/bench-vs-duckdb.sh and scripts/bench-parquet.sh share;
# sourced with OUT (the work directory) and ROOT (the checkout) set.
#
# duckdb_python: DuckDB 2.0.0 from the Python package index in a venv
#   under $OUT (DUCKDB_PYTHON=/path/to/python to use another); sets PY.
# build_dpplan: the release `dpplan`; sets DPPLAN.
# compile_visits_plan: the user-level plan both time (rows_per_unit 5,
#   groups_per_unit 3; count, sum, histogram) as $OUT/visits.json.
# best CMD...: "seconds peak_MB" of the fastest of $RUNS runs of CMD.
# write_run_script PLAN_JSON: $OUT/dpplan-run.sh DATA THREADS, one
#   `dpplan run` of the plan on a fresh ledger.

duckdb_python() {
  PY=${DUCKDB_PYTHON:-}
  if [ -z "$PY" ]; then
    if [ ! -x "$OUT/venv/bin/python" ]; then
      python3 -m venv "$OUT/venv"
      "$OUT/venv/bin/pip" install --quiet duckdb==2.0.0
    fi
    PY=$OUT/venv/bin/python
  fi
  "$PY" -c 'import duckdb; assert duckdb.__version__ == "2.0.0", duckdb.__version__'
}

build_dpplan() {
  echo "building dpplan (release) ..." >&2
  cargo build --release --locked -p dpplan-cli >&2
  DPPLAN=${CARGO_TARGET_DIR:-$ROOT/target}/release/dpplan
}

compile_visits_plan() {
  cat > "$OUT/visits.dpplan" <<'PLAN'
plan "bench" {
  privacy { unit user by user_id adjacency add_remove budget epsilon 10 delta 1e-6 }
  dataset visits {
    column user_id : id
    column page    : category { "home", "search", "checkout", "account" }
    column seconds : float in [0, 3600]
    source "visits.csv"
    contribution { rows_per_unit 5 groups_per_unit 3 }
  }
  query c { count(visits) noise laplace scale 10 schedule once }
  query s { sum(visits.seconds) noise laplace scale 10000 schedule once }
  query h { histogram(visits by page) noise gaussian sigma 20 schedule once }
}
PLAN
  "$DPPLAN" compile "$OUT/visits.dpplan" -o "$OUT/visits.json" >&2
}

best() {
  local best_t="" best_m=""
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -v -o "$OUT/time.txt" "$@" > /dev/null 2> "$OUT/stderr.txt" || { cat "$OUT/stderr.txt" >&2; exit 1; }
    local t m
    t=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s}' "$OUT/time.txt")
    m=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$OUT/time.txt")
    if [ -z "$best_t" ] || awk "BEGIN {exit !($t < $best_t)}"; then best_t=$t; best_m=$m; fi
  done
  echo "$best_t $best_m"
}

write_run_script() {
  cat > "$OUT/dpplan-run.sh" <<RUN
#!/usr/bin/env bash
set -e
rm -f "$OUT"/ledger.sqlite*
exec "$DPPLAN" run "$1" --data "visits=\$1" --ledger "$OUT/ledger.sqlite" --slot 0 --threads "\$2"
RUN
  chmod +x "$OUT/dpplan-run.sh"
}
