#!/usr/bin/env bash
# `dpplan audit` speed: releases per minute on every shipped example.
#
#   scripts/bench-audit.sh [RUNS]   (default 200000 runs on D and on D′ per release)
#
# Builds the release `dpplan`, compiles each example under
# $TARGET/bench-audit/, and runs `dpplan audit --runs RUNS --format json` on
# it (THREADS, default: every core), printing per release the releases per
# minute the audit measured around its draw loop (noise + post-processing:
# the engine runs once per data set and is not in that figure), and per
# example the wall-clock time of the whole command. Asserts nothing; prints
# a table for docs/benchmarks.md with the load average before.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
OUT=$TARGET/bench-audit
mkdir -p "$OUT"
RUNS=${1:-200000}
THREADS=${THREADS:-$(nproc)}

cargo build --release --locked -q -p dpplan-cli
DPPLAN=${DPPLAN:-$TARGET/release/dpplan}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $THREADS thread(s); $RUNS runs on D and on D′ per release"
echo
echo "| example | release | mechanism | releases per minute | measured ε ≥ | claimed ε |"
echo "|---|---|---|---|---|---|"
walls=()
for dir in examples/*/; do
  name=$(basename "$dir")
  plan="$OUT/$name.json"
  "$DPPLAN" compile "$dir$name.dpplan" -o "$plan" >/dev/null 2>&1
  start=$(date +%s.%N)
  # the plan's relative source, resolved against the example's directory
  data=$(python3 - "$plan" "$dir" <<'PY'
import json, sys
body = json.load(open(sys.argv[1]))["body"]
print(" ".join(f"--data={n}={sys.argv[2]}{d['source']}" for n, d in body["datasets"].items()))
PY
)
  # shellcheck disable=SC2086
  "$DPPLAN" audit "$plan" $data --runs "$RUNS" --threads "$THREADS" --format json >"$OUT/$name.audit.json" 2>"$OUT/$name.err" \
    || { echo "audit of $name failed:"; cat "$OUT/$name.err"; }
  end=$(date +%s.%N)
  walls+=("$name $(python3 -c "print(f'{$end - $start:.1f}')") s")
  python3 - "$OUT/$name.audit.json" "$plan" "$name" <<'PY'
import json, sys
audit = json.load(open(sys.argv[1]))
plan = json.load(open(sys.argv[2]))
mech = {r["name"]: " + ".join(p["mechanism"] for p in r["parts"]) for r in plan["body"]["releases"]}
for q in audit["queries"]:
    print(f"| {sys.argv[3]} | `{q['query']}` | {mech[q['query']]} | {q['releases_per_minute']:,.0f} "
          f"| {q['measured_epsilon']:.4f} | {q['claimed_epsilon']:.4f} |")
PY
done
echo
echo "wall-clock time of each whole \`dpplan audit\` (compile not included):"
printf '  %s\n' "${walls[@]}"
