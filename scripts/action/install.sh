#!/usr/bin/env bash
# The Action's install step: puts `dpplan` on the job's PATH, either a
# released binary (INPUT_BINARY_URL) or built from the Action's own source
# (cargo install --locked). Needs RUNNER_TEMP and GITHUB_PATH (set by
# GitHub); GITHUB_ACTION_PATH is the Action's checkout.
set -euo pipefail
root="${RUNNER_TEMP:?}/dpplan"
mkdir -p "$root/bin"
if [ -n "${INPUT_BINARY_URL:-}" ]; then
  curl --fail --silent --show-error --location --output "$root/bin/dpplan" "$INPUT_BINARY_URL"
  chmod +x "$root/bin/dpplan"
else
  cargo install --locked --quiet --root "$root" --path "${GITHUB_ACTION_PATH:?}/crates/dpplan-cli"
fi
"$root/bin/dpplan" --version
echo "$root/bin" >> "${GITHUB_PATH:?}"
