#!/usr/bin/env bash
# The Action's install step: puts `dpplan` on the job's PATH, from the first
# of: INPUT_PACKAGE (a pip requirement for the dpplan wheel, installed in a
# venv whose bin holds the binary), INPUT_BINARY_URL (a released binary), a
# build restored from the Action's cache, or a build from the Action's own
# source (cargo install --locked). Needs RUNNER_TEMP and GITHUB_PATH (set by
# GitHub); GITHUB_ACTION_PATH is the Action's checkout.
set -euo pipefail
root="${RUNNER_TEMP:?}/dpplan"
if [ -n "${INPUT_PACKAGE:-}" ]; then
  python3 -m venv "$root/venv"
  "$root/venv/bin/pip" install --quiet --disable-pip-version-check "$INPUT_PACKAGE"
  bin="$root/venv/bin"
elif [ -n "${INPUT_BINARY_URL:-}" ]; then
  mkdir -p "$root/bin"
  curl --fail --silent --show-error --location --output "$root/bin/dpplan" "$INPUT_BINARY_URL"
  chmod +x "$root/bin/dpplan"
  bin="$root/bin"
elif [ -x "$root/bin/dpplan" ] && "$root/bin/dpplan" --version >/dev/null 2>&1; then
  echo "dpplan restored from the Action's cache"
  bin="$root/bin"
else
  mkdir -p "$root/bin"
  cargo install --locked --quiet --root "$root" --path "${GITHUB_ACTION_PATH:?}/crates/dpplan-cli"
  bin="$root/bin"
fi
"$bin/dpplan" --version
echo "$bin" >> "${GITHUB_PATH:?}"
