#!/usr/bin/env bash
# Language v2 in the CSV engine (docs/benchmarks.md): user-level bounded
# aggregation with a filter and a two-key histogram against the same plan
# without filter and keys, over 10^7 rows; then a row-level distinct count
# of 10^7 distinct ids in its own process, for its peak memory.
#
#   scripts/bench-language-v2.sh            (DPPLAN_BENCH_ROWS to change)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "load: $(uptime)"
nice -n 10 cargo bench --locked -p dpplan-runtime --bench language_v2
DPPLAN_BENCH_DISTINCT=1 nice -n 10 cargo bench --locked -p dpplan-runtime --bench language_v2
echo "load: $(uptime)"
