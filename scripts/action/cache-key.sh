#!/usr/bin/env bash
# The Action's cache key for a dpplan built from its own source: the runner's
# OS and architecture and the SHA-256 of every file cargo builds from
# (Cargo.toml, Cargo.lock, crates/, grammar/), so a new ref of the Action
# builds once and every later run restores the binary in seconds.
set -euo pipefail
cd "${GITHUB_ACTION_PATH:?}"
hash=$(find Cargo.toml Cargo.lock crates grammar -type f -not -path '*/target/*' -print0 \
  | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-32)
echo "key=dpplan-${RUNNER_OS:-Linux}-${RUNNER_ARCH:-X64}-$hash" >> "${GITHUB_OUTPUT:?}"
