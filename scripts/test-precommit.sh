#!/usr/bin/env bash
# The pre-commit hooks (.pre-commit-hooks.yaml) run by pre-commit itself
# (PyPI, pinned; installed by scripts/test-deps.sh) in a throw-away git
# repository, with `pre-commit try-repo` on this checkout (uncommitted
# changes included): a good plan passes, a plan with an error fails with its
# diagnostic, an unformatted plan is rewritten and fails once, then passes.
#
# Environment: DPPLAN_BIN (the dpplan to put on the PATH; required).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
pre_commit="$root/target/test-deps/precommit-venv/bin/pre-commit"
[ -x "$pre_commit" ] || { echo "pre-commit missing: run scripts/test-deps.sh" >&2; exit 1; }
bin=$(realpath "${DPPLAN_BIN:?set DPPLAN_BIN to a built dpplan}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/repo"
ln -s "$bin" "$work/bin/dpplan"
export PATH="$work/bin:$PATH" PRE_COMMIT_HOME="$work/cache"
cd "$work/repo"
git init -q .
dpplan fmt - < "$root/examples/census/census.dpplan" > good.dpplan
cp "$root/tests/corpus/dp001-unbounded-contribution.dpplan" bad.dpplan
sed 's/^  /      /; s/ : / :   /' good.dpplan > messy.dpplan
git add -A
cmp -s messy.dpplan good.dpplan && { echo "pre-commit test: the messy copy is not messy" >&2; exit 1; }
fail() { echo "pre-commit test: $*" >&2; exit 1; }
try() { "$pre_commit" try-repo "$root" "$@" > "$work/out" 2>&1; }

try dpplan-check --files good.dpplan || { cat "$work/out"; fail "a good plan failed dpplan-check"; }
if try dpplan-check --files good.dpplan bad.dpplan; then
  cat "$work/out"; fail "a plan with an error passed dpplan-check"
fi
grep -q "DP001" "$work/out" || { cat "$work/out"; fail "dpplan-check did not show the DP001 diagnostic"; }
grep -q "bad.dpplan" "$work/out" || { cat "$work/out"; fail "dpplan-check did not name the file"; }

try dpplan-fmt --files good.dpplan || { cat "$work/out"; fail "dpplan-fmt changed a formatted plan"; }
if try dpplan-fmt --files messy.dpplan; then
  cat "$work/out"; fail "dpplan-fmt passed an unformatted plan"
fi
cmp -s messy.dpplan good.dpplan || { diff messy.dpplan good.dpplan | head; fail "dpplan-fmt did not rewrite the plan canonically"; }
try dpplan-fmt --files messy.dpplan || { cat "$work/out"; fail "dpplan-fmt failed on its own output"; }
echo "pre-commit hooks: ok (dpplan-check, dpplan-fmt)"
