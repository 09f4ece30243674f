#!/usr/bin/env bash
# The release as far as this machine can check it (the Linux build itself is
# scripts/build-wheel.sh, run by scripts/test-python.sh):
#   1. actionlint on every workflow, and a broken copy of the release
#      workflow refused (the linter runs and reads what it is given);
#   2. one version everywhere: the workspace's, the newest CHANGELOG
#      section's, the VS Code extension's, the binary's, the wheel's;
#   3. the release notes are that CHANGELOG section and nothing else;
#   4. each version's tag, where the clone has it, is a commit whose
#      workspace version and CHANGELOG are that version's.
# Environment: DPPLAN_BIN (a built dpplan), DPPLAN_WHEEL (the built wheel).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
linter="$root/target/test-deps/actionlint/package/node.cjs"
[ -f "$linter" ] || { echo "run scripts/test-deps.sh first" >&2; exit 1; }
fail() { echo "release test: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. actionlint
node scripts/actionlint.cjs "$linter" .github/workflows/*.yml || fail "actionlint found problems"
sed 's/needs: \[version, build\]/needs: [version, bulid]/' .github/workflows/release.yml > "$work/broken.yml"
cmp -s .github/workflows/release.yml "$work/broken.yml" && fail "the negative control changed nothing"
if node scripts/actionlint.cjs "$linter" "$work/broken.yml" > "$work/lint.out"; then
  fail "actionlint accepted a job that needs a job that does not exist"
fi
grep -q 'bulid' "$work/lint.out" || fail "actionlint did not name the missing job: $(cat "$work/lint.out")"

# 2. one version
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "the workspace version is '$version'"
newest=$(sed -n 's/^## \[\([0-9][0-9.]*\)\].*/\1/p' CHANGELOG.md | head -n 1)
[ "$newest" = "$version" ] || fail "CHANGELOG.md's newest section is $newest, the workspace is $version"
grep -q '^## \[Unreleased\]' CHANGELOG.md || fail "CHANGELOG.md has no Unreleased section"
vscode=$(node -p 'require("./editors/vscode/package.json").version')
[ "$vscode" = "$version" ] || fail "the VS Code extension is $vscode, the workspace $version"
bin_version=$("${DPPLAN_BIN:?set DPPLAN_BIN}" --version)
[ "$bin_version" = "dpplan $version" ] || fail "the binary says '$bin_version'"
case "$(basename "${DPPLAN_WHEEL:?set DPPLAN_WHEEL}")" in
  "dpplan-$version-"*.whl) ;;
  *) fail "the wheel $(basename "$DPPLAN_WHEEL") is not version $version" ;;
esac

# 3. the release notes
scripts/release-notes.sh "$version" > "$work/notes.md"
[ -s "$work/notes.md" ] || fail "no release notes for $version"
grep -q '^## ' "$work/notes.md" && fail "the notes of $version run into another section"
grep -q "^- \*\*" "$work/notes.md" || fail "the notes of $version list nothing"
scripts/release-notes.sh 9.9.9 > "$work/none.md"
[ ! -s "$work/none.md" ] || fail "a version without a section has notes"

# 4. the tags this clone has
for v in $(sed -n 's/^## \[\([0-9][0-9.]*\)\].*/\1/p' CHANGELOG.md); do
  git rev-parse -q --verify "refs/tags/v$v" >/dev/null || continue
  at=$(git show "v$v:Cargo.toml" | sed -n 's/^version = "\(.*\)"/\1/p' | head -n 1)
  [ "$at" = "$v" ] || fail "the tag v$v is at a workspace of version $at"
  git show "v$v:CHANGELOG.md" | grep -q "^## \[$v\]" || fail "the tag v$v has no CHANGELOG section for $v"
  echo "tag v$v: ok"
done
echo "release: ok (actionlint, version $version everywhere, notes)"
