#!/usr/bin/env bash
# A short, seeded fuzz run of every target, for CI.
#
#   fuzz/run-ci.sh [SECONDS]        (default 60 seconds per target)
#
# Each target runs a fixed number of inputs (runs_of below, about 25-40 s
# each on a 2-vCPU Xeon) with a fixed -seed, capped at SECONDS: CI fuzzes
# as much as a local run of the same commit, whatever the machine's speed
# (not the same inputs: HashMap orders vary the coverage, fuzz/README.md).
# DPPLAN_FUZZ_EXPLORE=1 drops the fixed count and explores for SECONDS
# per target instead: how new bugs are looked for, not what CI runs.
#
# Builds every target (fuzz/build.sh: stable toolchain, release, coverage
# flags, target dir fuzz/target), regenerates the seed corpus
# (fuzz/seeds.sh), then runs the targets one after the other, each on a
# fresh copy of its seeds plus the committed reproducers of
# fuzz/regressions/<target>/ (a fixed bug stays fixed: they run first), with
# a fixed -seed. Prints one summary line per target; exits non-zero if any
# target crashed, timed out (-timeout=10 s per input), ran out of memory
# (-rss_limit_mb=2048) or did not run. Reproducers go to
# fuzz/artifacts/<target>/; the panic and stack of each are printed.
#
# Needs: rustup's stable toolchain, a C++ compiler (g++) for libFuzzer, a C
# compiler for SQLite (bundled by rusqlite), bash, coreutils, sed, awk.
# Environment: DPPLAN_BIN=path/to/dpplan skips building the CLI for the
# seeds; DPPLAN_FUZZ_TARGETS="a b" runs only those targets.
set -uo pipefail
secs="${1:-60}"
case "$secs" in '' | *[!0-9]*) echo "usage: $0 [SECONDS]" >&2; exit 2 ;; esac
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
read -r -a targets <<<"${DPPLAN_FUZZ_TARGETS:-parse_check_fmt plan_load csv_engine lsp_transport}"

# the lock check refuses a fuzz lock that drifted from the root's (its
# negative control: one version changed)
drift=$(mktemp)
python3 - "$drift" <<'PY'
import re, sys
text = open("Cargo.lock").read()
drifted = re.sub(r'^version = "(\d+)\.', lambda m: f'version = "9{m.group(1)}.', text, count=1, flags=re.M)
assert drifted != text
open(sys.argv[1], "w").write(drifted)
PY
if python3 lock-check.py ../Cargo.lock "$drift" 2>/dev/null; then
  rm -f "$drift"
  echo "fuzz: the lock check accepted a drifted lock" >&2; exit 1
fi
rm -f "$drift"

start=$(date +%s)
bin_dir="$(./build.sh "${targets[@]}" | tail -n 1)" || { echo "fuzz: build failed" >&2; exit 1; }
built=$(date +%s)
./seeds.sh || { echo "fuzz: seeds failed" >&2; exit 1; }
seeded=$(date +%s)

run="$here/target/ci-run"
rm -rf "$run"
mkdir -p "$run"
failed=0
summary=()
# inputs per target in CI (see above)
runs_of() {
    case "$1" in
    parse_check_fmt) echo 12000 ;;
    plan_load) echo 12000 ;;
    csv_engine) echo 40000 ;;
    lsp_transport) echo 120000 ;;
    *) echo 10000 ;;
    esac
}
for t in "${targets[@]}"; do
    corpus="$run/corpus/$t"
    artifacts="$here/artifacts/$t"
    log="$run/$t.log"
    mkdir -p "$corpus" "$artifacts"
    cp "$here/corpus/$t"/* "$corpus"/
    if [ -d "$here/regressions/$t" ]; then
        cp "$here/regressions/$t"/* "$corpus"/ 2>/dev/null || true
    fi
    dict=()
    [ -s "$here/dict/$t.dict" ] && dict=(-dict="$here/dict/$t.dict")
    before="$(ls "$artifacts")"
    # -close_fd_mask=3: the targets' own stdout/stderr (the language
    # server's log lines) are dropped; libFuzzer still reports on stderr.
    runs=()
    [ -z "${DPPLAN_FUZZ_EXPLORE:-}" ] && runs=(-runs="$(runs_of "$t")")
    t0=$(date +%s)
    "$bin_dir/$t" "$corpus" "${dict[@]}" "${runs[@]}" \
        -seed=1 -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -close_fd_mask=3 \
        -artifact_prefix="$artifacts/" >"$log" 2>&1
    rc=$?
    took=$(($(date +%s) - t0))
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    new=()
    while IFS= read -r a; do
        [ -n "$a" ] && new+=("$a")
    done < <(comm -13 <(printf '%s\n' "$before" | LC_ALL=C sort) \
        <(ls "$artifacts" | LC_ALL=C sort) | grep -E '^(crash|timeout|oom|leak)-')
    line="$(printf 'fuzz %-16s %10s executions in %4ss, %d crash(es)/timeout(s)/oom(s), exit %d' \
        "$t" "${execs:-?}" "$took" "${#new[@]}" "$rc")"
    summary+=("$line")
    echo "$line"
    if [ "$rc" -ne 0 ] || [ "${#new[@]}" -gt 0 ] || [ -z "$execs" ]; then
        failed=1
        echo "---- $t: last lines of libFuzzer's log ($log)"
        grep -v '^#[0-9]' "$log" | tail -n 25
        for a in "${new[@]}"; do
            echo "---- $t: reproducing $artifacts/$a"
            RUST_BACKTRACE=1 timeout 60 "$bin_dir/$t" -rss_limit_mb=2048 -timeout=10 \
                "$artifacts/$a" 2>&1 | grep -v '^INFO:' | head -n 60
        done
    fi
done
end=$(date +%s)

echo "==== fuzz summary (build $((built - start)) s, seeds $((seeded - built)) s, runs $((end - seeded)) s)"
printf '%s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
    echo "fuzz: FAILED (reproduce: fuzz/target/<host>/release/<target> fuzz/artifacts/<target>/<file>; see fuzz/README.md)"
    exit 1
fi
echo "fuzz: ok"
