#!/usr/bin/env bash
# The test command (README): installs what the tests need, then runs every
# test of the workspace, the language server end to end, and a short seeded
# run of every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
# each phase's end, with the seconds since the start (CI's time budget)
phase() { echo "test.sh: $1 done at ${SECONDS}s" >&2; }
./scripts/test-deps.sh
phase "test dependencies"
# A real Spark for the Spark engine's tests: a standalone master and one
# worker on 127.0.0.1 (stopped on exit); the tests read DPPLAN_SPARK_HOME and
# DPPLAN_SPARK_MASTER, and fail under CI=true without them.
# Its JVMs (each spark-submit's driver and executor) live for a minute or
# two: the C1 compiler alone and the serial collector cut their CPU by
# about half (every_plan_runs_alike_on_both_engines alone: 196 → 146 s on
# the 2-core machine, 2026-12-07); scripts/bench-spark.sh keeps Spark's
# defaults.
mkdir -p target/test-deps/spark-conf
printf '%s\n' \
  'spark.driver.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC' \
  'spark.executor.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC' \
  >target/test-deps/spark-conf/spark-defaults.conf
export SPARK_CONF_DIR="$PWD/target/test-deps/spark-conf"
. scripts/spark-cluster.sh
spark_cluster_start 1 2 2g
cargo test --locked --workspace
spark_cluster_stop
phase "cargo test (with Spark)"
# The CI packages as users meet them: the pre-commit hooks run by
# pre-commit, the GitHub Action's scripts, the VS Code extension's .vsix.
# The Python wheel installed with pip in a fresh venv: the binary on PATH
# and the module, each result equal to the binary's (tests/python); the
# Action's test installs the same wheel.
scripts/test-python.sh
phase "Python wheel"
# docs/tutorial.md run as a reader runs it, with the wheel's dpplan.
DPPLAN_VENV=target/test-deps/wheel-venv scripts/test-tutorial.sh
bin_dir="${CARGO_TARGET_DIR:-target}/debug"
DPPLAN_BIN="$bin_dir/dpplan" scripts/test-precommit.sh
wheel="$(ls "${CARGO_TARGET_DIR:-target}"/wheels/dpplan-*.whl)"
DPPLAN_BIN="$bin_dir/dpplan" DPPLAN_WHEEL="$wheel" scripts/test-action.sh
# The release workflow linted, one version everywhere, the notes, the tags.
DPPLAN_BIN="$bin_dir/dpplan" DPPLAN_WHEEL="$wheel" scripts/test-release.sh
phase "tutorial, pre-commit, Action, release"
scripts/test-vscode.sh
phase "VS Code extension"
# The language server driven by independent clients (pytest-lsp, Neovim).
DPPLAN_BIN="${CARGO_TARGET_DIR:-target}/debug/dpplan" tests/lsp/run-e2e.sh
phase "language server end to end"
# Every fuzz target on a fixed, seeded count of inputs, capped at
# DPPLAN_FUZZ_SECONDS (default 60) each, on the committed seeds and
# reproducers (fuzz/README.md); 0 skips it.
fuzz_seconds="${DPPLAN_FUZZ_SECONDS:-60}"
if [ "$fuzz_seconds" != 0 ]; then
    target_dir="${CARGO_TARGET_DIR:-target}"
    case "$target_dir" in /*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
    DPPLAN_BIN="$target_dir/debug/dpplan" fuzz/run-ci.sh "$fuzz_seconds"
    phase "fuzz"
fi
