#!/usr/bin/env bash
# `dpplan check` at scale: time and peak memory of the whole command.
#
#   scripts/bench-check-scale.sh [QUERIES...]   (default: 1000 10000 100000)
#
# Builds the release `dpplan` and the plan generator
# (crates/dpplan-check/examples/gen-plan.rs, the generators of the check
# bench), writes under $TARGET/bench-check-scale/ one plan of N one-release
# queries of the same statistic per size, one where every query has its own
# noise parameter ("heterogeneous"), and the generated 1 MB plan, and
# runs `dpplan check --format json` (and `--format human`) on each, RUNS
# (default 3) times, keeping the best wall-clock time, its CPU time and peak RSS
# from /usr/bin/time -v, and the size of the output (DPPLAN=path times
# another build of the binary, e.g. the one before a change). Asserts nothing;
# prints a table for docs/benchmarks.md with the load average before.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
OUT=$TARGET/bench-check-scale
mkdir -p "$OUT"
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(1000 10000 100000)
RUNS=${RUNS:-3}
FORMATS=${FORMATS:-json human}

cargo build --release --locked -q -p dpplan-cli -p dpplan-check --bin dpplan --example gen-plan
DPPLAN=${DPPLAN:-$TARGET/release/dpplan}
GEN=$TARGET/release/examples/gen-plan

plans=()
for n in "${SIZES[@]}"; do
  "$GEN" queries "$n" >"$OUT/queries-$n.dpplan"
  "$GEN" heterogeneous "$n" >"$OUT/heterogeneous-$n.dpplan"
  plans+=("$OUT/queries-$n.dpplan" "$OUT/heterogeneous-$n.dpplan")
done
"$GEN" bytes 1048576 >"$OUT/generated-1MB.dpplan"
plans+=("$OUT/generated-1MB.dpplan")

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| plan | bytes | format | best wall | its CPU (user + sys) | peak RSS | output bytes | exit |"
echo "|---|---|---|---|---|---|---|---|"
for p in "${plans[@]}"; do
  for fmt in $FORMATS; do
    best=""
    rss=""
    for _ in $(seq "$RUNS"); do
      set +e
      /usr/bin/time -v -o "$OUT/time.txt" "$DPPLAN" check --format "$fmt" "$p" >"$OUT/out.txt"
      code=$?
      set -e
      wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s}' "$OUT/time.txt")
      kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/time.txt")
      cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$OUT/time.txt")
      if [ -z "$best" ] || awk "BEGIN {exit !($wall < $best)}"; then
        best=$wall
        rss=$kb
        best_cpu=$cpu
      fi
    done
    echo "| $(basename "$p" .dpplan) | $(stat -c %s "$p") | $fmt | ${best} s | ${best_cpu} s | $((rss / 1024)) MB | $(stat -c %s "$OUT/out.txt") | $code |"
  done
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
