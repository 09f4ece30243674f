#!/usr/bin/env bash
# The Action's check step: workflow annotations on stdout and the job
# summary (`--format github`), the SARIF report, and the exit code as a step
# output (the Action's last step fails the job with it, after the SARIF
# upload). Inputs: INPUT_PATHS, INPUT_DENY_WARNINGS, INPUT_SARIF_FILE;
# GITHUB_OUTPUT, GITHUB_STEP_SUMMARY (set by GitHub); GITHUB_SERVER_URL,
# GITHUB_ACTION_REPOSITORY and GITHUB_ACTION_REF name where this Action's
# documentation is published, for the rules' links.
set -uo pipefail
read -r -a paths <<< "${INPUT_PATHS:-.}"
args=()
if [ "${INPUT_DENY_WARNINGS:-false}" = true ]; then
  args+=(--deny warnings)
fi
docs=()
if [ -n "${GITHUB_ACTION_REPOSITORY:-}" ] && [ -n "${GITHUB_ACTION_REF:-}" ]; then
  docs=(--docs-url "${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_ACTION_REPOSITORY/blob/$GITHUB_ACTION_REF/docs/diagnostics.md")
fi
dpplan check "${paths[@]}" --format github "${args[@]}"
code=$?
sarif="${INPUT_SARIF_FILE:-dpplan.sarif}"
if GITHUB_STEP_SUMMARY= dpplan check "${paths[@]}" --format sarif "${docs[@]}" > "$sarif"; then :; fi
if [ -s "$sarif" ]; then
  echo "sarif-file=$sarif" >> "${GITHUB_OUTPUT:?}"
fi
echo "exit-code=$code" >> "$GITHUB_OUTPUT"
exit 0
