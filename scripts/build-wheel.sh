#!/usr/bin/env bash
# Builds the `dpplan` wheel into target/wheels: the release `dpplan` binary
# in the wheel's data scripts (pip installs it on PATH, as ruff's wheel
# does) and the Python package with its native module (crates/dpplan-python),
# by maturin 1.16.0 (scripts/test-deps.sh installs it). Prints the wheel's
# path last.
#
#   scripts/build-wheel.sh                 the release wheel (what users install)
#   scripts/build-wheel.sh --profile test  the same wheel with the binary `cargo
#                                          test --workspace` builds (already built
#                                          by scripts/test.sh) and the module
#                                          in the `wheel-test` profile (the test
#                                          profile's settings): scripts/test-python.sh
#                                          (the tests check the packaging and the
#                                          API, not the optimiser, and a release
#                                          build costs CI ~7 minutes), with the
#                                          module's test hooks (src/hooks.rs)
set -euo pipefail
profile=release
if [ "${1:-}" = "--profile" ]; then
  profile="${2:?--profile needs a name}"
fi
cd "$(dirname "$0")/.."
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
# MATURIN: another maturin (the release workflow's, pip-installed, pinned)
maturin="${MATURIN:-target/test-deps/maturin-venv/bin/maturin}"
if ! command -v "$maturin" >/dev/null; then
  echo "maturin is not installed: run scripts/test-deps.sh (or set MATURIN)" >&2
  exit 1
fi
if [ "$profile" = test ]; then
  # the binary `cargo test --workspace` builds (scripts/test.sh has just
  # built it: nothing to do then). `cargo build --bin dpplan` would build
  # it again, with the features of the CLI alone rather than the
  # workspace's unified with the tests' (serde, rand, regex, the
  # runtime's test hooks…): every crate again, 3m47s of a cold CI.
  cargo test --locked --workspace --no-run >&2
else
  cargo build --locked --profile "$profile" --bin dpplan
fi
case "$profile" in dev | test) bin_dir=debug ;; *) bin_dir="$profile" ;; esac
data=crates/dpplan-python/wheel-data/scripts
rm -rf crates/dpplan-python/wheel-data
mkdir -p "$data"
# stripped: the symbols are for profiling here, not for users (35 → ~14 MB)
if command -v strip >/dev/null; then
  strip -o "$data/dpplan" "$target_dir/$bin_dir/dpplan"
else
  cp "$target_dir/$bin_dir/dpplan" "$data/dpplan"
fi
out="$target_dir/wheels"
rm -f "$out"/dpplan-*.whl
# `cargo rustc --profile test` would build a test harness, not the module;
# the tests' wheel carries the module's test hooks (src/hooks.rs: raw exact
# aggregates), the release wheel never does
module_profile="$profile"
features=()
if [ "$profile" = test ]; then
  module_profile=wheel-test
  features=(--features test-hooks)
fi
"$maturin" build --locked --profile "$module_profile" "${features[@]}" -m crates/dpplan-python/Cargo.toml --out "$out" >&2
if [ "$profile" != test ] && python3 -c '
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
sys.exit(0 if any(b"_exact_aggregates" in z.read(n) for n in z.namelist() if "/_dpplan" in n) else 1)
' "$out"/dpplan-*.whl; then
  echo "the $profile wheel carries the test hooks (_exact_aggregates): built with --features test-hooks?" >&2
  exit 1
fi
ls "$out"/dpplan-*.whl
