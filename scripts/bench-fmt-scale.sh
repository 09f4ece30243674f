#!/usr/bin/env bash
# `dpplan fmt` at scale: time and peak memory of formatting N one-line
# queries, beside `dpplan check` of the same file.
#
#   scripts/bench-fmt-scale.sh [QUERIES...]   (default: 10000 40000 100000)
#
# Builds the release `dpplan` and the plan generator
# (crates/dpplan-check/examples/gen-plan.rs) unless DPPLAN and GEN name
# binaries already built (e.g. the debug ones), writes under
# $TARGET/bench-fmt-scale/ one plan per size with every query on one line
# (`query qI { count(visits) noise laplace scale … schedule once }`, so that
# the formatter has every line to lay out), and runs `dpplan fmt -` and
# `dpplan check --format json` on each, keeping the wall-clock time, CPU
# time and peak RSS from /usr/bin/time -v. Asserts nothing; prints a table
# for docs/benchmarks.md with the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
OUT=$TARGET/bench-fmt-scale
mkdir -p "$OUT"
SIZES=("$@")
[ ${#SIZES[@]} -eq 0 ] && SIZES=(10000 40000 100000)

if [ -z "${DPPLAN:-}" ] || [ -z "${GEN:-}" ]; then
  # two builds: `--example` would limit both packages to their examples
  cargo build --release --locked -q -p dpplan-cli
  cargo build --release --locked -q -p dpplan-check --example gen-plan
fi
DPPLAN=${DPPLAN:-$TARGET/release/dpplan}
GEN=${GEN:-$TARGET/release/examples/gen-plan}

measure() { # label, plan, command...
  local label=$1 plan=$2
  shift 2
  set +e
  /usr/bin/time -v -o "$OUT/time.txt" "$@" <"$plan" >"$OUT/out.txt" 2>/dev/null
  local code=$?
  set -e
  local wall kb cpu
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s}' "$OUT/time.txt")
  kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$OUT/time.txt")
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$OUT/time.txt")
  local lines
  lines=$(wc -l <"$plan")
  echo "| $(basename "$plan" .dpplan) | $lines | $label | ${wall} s | ${cpu} s | $((kb / 1024)) MB | $((kb * 1024 / lines)) B | $code |"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| plan | lines | command | wall | CPU (user + sys) | peak RSS | RSS per line | exit |"
echo "|---|---|---|---|---|---|---|---|"
for n in "${SIZES[@]}"; do
  plan=$OUT/one-line-$n.dpplan
  "$GEN" queries "$n" | awk '
    /^  query / { line = $0; inq = 1; next }
    inq { sub(/^ +/, ""); line = line " " $0; if ($0 == "}") { print line; inq = 0 }; next }
    { print }' >"$plan"
  measure "fmt -" "$plan" "$DPPLAN" fmt -
  measure "check --format json" "$plan" "$DPPLAN" check --format json -
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
