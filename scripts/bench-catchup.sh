#!/usr/bin/env bash
# A catch-up at minute resolution: one run releases every slot of a
# windowed count and of a cumulative count (`every 1 minute`) that closed
# since the schedule began, N slots each, on 2·N rows of 1,000 users (a
# user kept in at most 3 windows, 3 rows in all).
#
#   scripts/bench-catchup.sh [N ...]   (default: 1000 10000)
#
# Builds the release `dpplan`, writes the data and the plan under
# $TARGET/bench-catchup/N/, and times (wall clock and peak memory, GNU
# time) the one run that releases all N slots of both queries, then prints
# the time per slot. A linear catch-up has a constant time per slot.
# DPPLAN_BENCH_DIR=/dev/shm/x puts the ledger and data on tmpfs: the
# run's own work without the disk's fsyncs (each slot makes two durable
# ledger commits and anchor writes, a tree's slot two state writes more).
# Asserts nothing; the figures go to docs/benchmarks.md with the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
cargo build --release --locked -q -p dpplan-cli
DPPLAN=${DPPLAN:-$TARGET/release/dpplan}
[ $# -gt 0 ] || set -- 1000 10000
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) core(s); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for N in "$@"; do
  OUT=${DPPLAN_BENCH_DIR:-$TARGET/bench-catchup}/$N
  rm -rf "$OUT"
  mkdir -p "$OUT"
  python3 - "$OUT" "$N" <<'PY'
import random, sys
out, n = sys.argv[1], int(sys.argv[2])
random.seed(1)
start = 1767225600  # 2026-01-01T00:00:00Z
with open(f"{out}/events.csv", "w") as f:
    f.write("user_id,at\n")
    for _ in range(2 * n):
        f.write(f"u{random.randrange(1000)},{start + random.randrange(n * 60)}\n")
open(f"{out}/minutes.dpplan", "w").write(f"""plan "minutes" {{
  privacy {{
    unit user by user_id
    adjacency add_remove
    budget epsilon 1000 delta 1e-6
  }}
  dataset events {{
    source "events.csv"
    column user_id : id
    column at : time
    contribution {{
      rows_per_unit 3
      windows_per_unit 3
      rows_per_window 1
    }}
  }}
  query per_minute {{
    count(events)
    noise laplace scale 1000
    window 1 minute
    schedule every 1 minute for {n} minutes
  }}
  query running {{
    cumulative count(events)
    noise laplace scale 1000
    schedule every 1 minute for {n} minutes
  }}
}}
""")
PY
  "$DPPLAN" compile "$OUT/minutes.dpplan" -o "$OUT/plan.json" >/dev/null 2>&1
  at=$((1767225600 + N * 60 + 5))
  /usr/bin/time -f "%e %M" -o "$OUT/time.txt" "$DPPLAN" run "$OUT/plan.json" \
    --ledger "$OUT/l.sqlite" --data "events=$OUT/events.csv" \
    --start 2026-01-01 --at "$at" >"$OUT/out.json" 2>"$OUT/err.txt" \
    || { tail -3 "$OUT/err.txt" >&2; exit 1; }
  read -r wall kb <"$OUT/time.txt"
  values=$(grep -c '"slot"' "$OUT/out.json")
  echo "N=$N: $values values in one run: $wall s, peak $((kb / 1024)) MB, $(echo "$wall * 1000 / (2 * $N)" | bc -l | cut -c1-5) ms per slot; ledger $(stat -c %s "$OUT/l.sqlite") bytes"
done
