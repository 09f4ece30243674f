#!/usr/bin/env bash
# The test command (README): installs what the tests need, then runs every
# test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/test-deps.sh
cargo test --locked --workspace
# The language server driven by independent clients (pytest-lsp, Neovim).
DPPLAN_BIN="${CARGO_TARGET_DIR:-target}/debug/dpplan" tests/lsp/run-e2e.sh
