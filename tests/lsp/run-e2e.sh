#!/usr/bin/env bash
# End-to-end tests of `dpplan lsp` with independent LSP clients:
#   1. pytest-lsp (pygls) from PyPI: diagnostics, hover, completion, formatting;
#   2. Neovim headless from Debian's packages: diagnostics and hover.
# Installs what it needs, builds the binary, runs both. Exit code 0 = pass.
#
# Environment: DPPLAN_BIN (a prebuilt dpplan; built here otherwise),
# CARGO_TARGET_DIR (respected), E2E_VENV (where the Python client goes),
# SKIP_NVIM=1 (skip the Neovim client).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

if [[ -z "${DPPLAN_BIN:-}" ]]; then
  cargo build -q -j "${CARGO_BUILD_JOBS:-1}" -p dpplan-cli
  DPPLAN_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/dpplan"
fi
DPPLAN_BIN=$(realpath "$DPPLAN_BIN")
export DPPLAN_BIN
echo "e2e: using $DPPLAN_BIN"

# 1. pytest-lsp
VENV="${E2E_VENV:-$ROOT/target/e2e-venv}"
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
# pinned, each with what it needs (the versions the tests last passed with);
# installed only when the venv does not already have exactly these
pins=(pytest-lsp==1.0.1 pygls==2.1.1 lsprotocol==2025.0.0 attrs==26.1.0 cattrs==26.2.1
  pytest==9.2.0 pytest-asyncio==1.5.0 pluggy==1.7.0 iniconfig==2.3.1 packaging==26.4
  Pygments==2.21.0 typing_extensions==4.16.0)
if ! "$VENV/bin/python" - "${pins[@]}" <<'PY' 2>/dev/null; then
import importlib.metadata as m, sys
sys.exit(any(m.version(p.split("==")[0]) != p.split("==")[1] for p in sys.argv[1:]))
PY
  "$VENV/bin/pip" install -q --disable-pip-version-check "${pins[@]}"
fi
(cd tests/lsp && "$VENV/bin/python" -m pytest -q -p no:cacheprovider test_e2e.py)
passed=1

# 2. Neovim headless (vim.lsp.start_client works from Neovim 0.7 on)
if [[ "${SKIP_NVIM:-0}" != 1 ]]; then
  if ! command -v nvim >/dev/null; then
    if command -v apt-get >/dev/null; then
      (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq neovim) >/dev/null
    fi
  fi
  if command -v nvim >/dev/null; then
    timeout 120 nvim --headless -u NONE -c "luafile tests/lsp/nvim_e2e.lua"
    # the shipped editors/neovim/dpplan.lua on this Neovim, as a user sets it up
    timeout 120 nvim --headless -u NONE -c "luafile tests/lsp/nvim_setup.lua"
    passed=2
  else
    echo "e2e: neovim could not be installed" >&2
    exit 1
  fi
fi
echo "e2e: $passed passed, 0 failed"
