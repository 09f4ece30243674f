#!/usr/bin/env bash
# A cumulative count's runtime at 10x a daily year: an hourly tree over a
# year (8,760 slots, 17,511 nodes) on 100,000 rows of 60,000 users.
#
#   scripts/bench-tree.sh [SLOTS]   (default 1440: the first 60 days)
#   MECHANISM=factorization scripts/bench-tree.sh [SLOTS]   (the same count
#   by the square-root factorization: one coordinate per slot)
#
# Builds the release `dpplan`, writes the data and the plan under
# $TARGET/bench-tree/, then times (wall clock and peak memory, GNU time):
#   1. one run that backfills SLOTS slots (a first run SLOTS hours late:
#      each slot re-reads the file, is charged, draws and stores its nodes,
#      updates the exact state, publishes its total);
#   2. the next slot alone (what an on-time hourly run costs at that point);
#   3. ten single-slot runs in a row from there (the steady state).
# Prints the ledger's size too. Asserts nothing; the figures go to
# docs/benchmarks.md with the machine and the load average.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
OUT=$TARGET/bench-tree
SLOTS=${1:-1440}
rm -rf "$OUT"
mkdir -p "$OUT"

cargo build --release --locked -q -p dpplan-cli
MECHANISM=${MECHANISM:-tree}
DPPLAN=${DPPLAN:-$TARGET/release/dpplan}

python3 - "$OUT" "$MECHANISM" <<'PY'
import random, sys
out = sys.argv[1]
mechanism = sys.argv[2]
random.seed(1)
start = 1767225600  # 2026-01-01T00:00:00Z
with open(f"{out}/events.csv", "w") as f:
    f.write("user_id,at\n")
    for _ in range(100_000):
        f.write(f"u{random.randrange(60_000)},{start + random.randrange(365 * 24 * 3600)}\n")
open(f"{out}/hourly.dpplan", "w").write("""plan "hourly" {
  privacy {
    unit user by user_id
    adjacency add_remove
    budget epsilon 5 delta 1e-6
  }
  dataset events {
    source "events.csv"
    column user_id : id
    column at : time
    contribution {
      rows_per_unit 4
    }
  }
  query running {
    cumulative count(events)
    mechanism MECHANISM
    noise gaussian sigma 60
    schedule every 1 hour from 2026-01-01 until 2027-01-01
  }
}
""".replace("MECHANISM", mechanism))
PY
"$DPPLAN" compile "$OUT/hourly.dpplan" -o "$OUT/plan.json" >/dev/null 2>&1

# five minutes after hour n (1-based) of 2026 ends, as RFC 3339: when an
# hourly cron run releases that hour's slot (due once it has closed)
hour_end() { date -u -d "@$((1767225600 + $1 * 3600 + 300))" +%Y-%m-%dT%H:%M:%SZ; }
run() { # $1 = hour; prints "wall s, peak KB, values released"
  local err="$OUT/err.txt"
  /usr/bin/time -f "%e s, %M KB" -o "$OUT/time.txt" "$DPPLAN" run "$OUT/plan.json" \
    --ledger "$OUT/l.sqlite" --data "events=$OUT/events.csv" --at "$(hour_end "$1")" \
    >"$OUT/out.json" 2>"$err" || { cat "$err" >&2; exit 1; }
  echo "$(cat "$OUT/time.txt"), $(grep -c '"slot"' "$OUT/out.json") value(s)"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) core(s); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
echo "backfill of $SLOTS slots in one run: $(run "$SLOTS")"
echo "slot $((SLOTS + 1)) alone: $(run $((SLOTS + 1)))"
t0=$(date +%s.%N)
for i in $(seq 2 11); do run $((SLOTS + i)) >/dev/null; done
echo "10 single-slot runs after it: $(echo "($(date +%s.%N) - $t0) / 10" | bc -l | cut -c1-5) s each"
echo "ledger: $(stat -c %s "$OUT/l.sqlite") bytes; exact state: $(stat -c %s "$OUT/l.sqlite.tree-state") bytes"
