#!/usr/bin/env bash
# The release notes of VERSION: its section of CHANGELOG.md, without its
# heading (the release workflow's notes; scripts/test-release.sh checks it).
set -euo pipefail
version="${1:?usage: scripts/release-notes.sh VERSION}"
cd "$(dirname "$0")/.."
awk -v v="## [$version]" 'index($0, v) == 1 {on = 1; next} /^## \[/ {on = 0} on' CHANGELOG.md
