#!/usr/bin/env bash
# Builds the fuzz targets on the STABLE toolchain: libFuzzer (from
# libfuzzer-sys, compiled by the `cc` crate with g++) plus LLVM's
# SanitizerCoverage instrumentation asked for through RUSTFLAGS, which is
# what `cargo fuzz` does on nightly minus `-Zsanitizer=address`.
#
#   fuzz/build.sh [TARGET...]     (default: every target)
#
# Binaries: fuzz/target/<host>/release/<target>. Prints nothing else on
# stdout but the binaries' directory (last line).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

export CARGO_TARGET_DIR="$here/target"
host="$(rustc -vV | sed -n 's/^host: //p')"

# - sancov-module with inline 8-bit counters + PC table: libFuzzer's coverage
#   feedback; trace-compares: CMP operands for libFuzzer's value profile and
#   its dictionary of compared values; level 4 = edges incl. critical ones.
# - --cfg fuzzing: the conventional cfg of fuzz builds.
# - force-frame-pointers: usable stacks from libFuzzer's crash report.
# Debug assertions and overflow checks come from the [profile.release] of
# fuzz/Cargo.toml.
# Passing --target makes RUSTFLAGS apply to the target crates only, not to
# build scripts and proc macros (pest_derive, serde_derive), which would
# otherwise fail to link without libFuzzer's coverage callbacks.
export RUSTFLAGS="${DPPLAN_FUZZ_EXTRA_RUSTFLAGS:-} \
-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cforce-frame-pointers=yes \
--cfg fuzzing"
# Ignore a RUSTC_WRAPPER/encoded flags from the environment so that the
# build is the same everywhere.
unset CARGO_ENCODED_RUSTFLAGS RUSTC_WORKSPACE_WRAPPER

# The same dependency versions as the root workspace (what CI tests), from
# fuzz/Cargo.lock, committed: the root's lock file plus libfuzzer-sys and
# what it needs, so a build neither updates the crates index nor picks a
# version of its own (--locked). DPPLAN_FUZZ_UPDATE_LOCK=1 makes it again
# from the root's lock (after the root's lock changes); lock-check.py
# refuses a fuzz lock whose versions differ from the root's.
if [ "${DPPLAN_FUZZ_UPDATE_LOCK:-0}" = 1 ]; then
  cp "$here/../Cargo.lock" "$here/Cargo.lock"
  cargo metadata --format-version 1 --manifest-path "$here/Cargo.toml" >/dev/null
fi
python3 "$here/lock-check.py" "$here/../Cargo.lock" "$here/Cargo.lock" >&2 || exit 1

bins=()
for t in "$@"; do bins+=(--bin "$t"); done
[ ${#bins[@]} -gt 0 ] || bins=(--bins)

cargo build --locked --release --target "$host" "${bins[@]}" >&2
echo "$CARGO_TARGET_DIR/$host/release"
