#!/usr/bin/env bash
# The Action's pull-request step: `dpplan diff --git BASE --format md` for
# every plan the pull request adds or changes (and a line for each removed
# one), posted as one comment, updated in place on later pushes (found by
# its marker). Inputs: INPUT_DIFF_BASE, GITHUB_TOKEN; GitHub's
# GITHUB_EVENT_PATH (the pull request's number), GITHUB_REPOSITORY,
# GITHUB_API_URL, RUNNER_TEMP. The body is kept in
# $RUNNER_TEMP/dpplan-diff.md.
set -euo pipefail
base="${INPUT_DIFF_BASE:?}"
# what the pull request changed: since its merge base with BASE
since=$(git merge-base "$base" HEAD)
marker='<!-- dpplan-diff -->'
body="${RUNNER_TEMP:?}/dpplan-diff.md"
{
  echo "$marker"
  echo "## What this pull request does to its privacy plans"
  echo
} > "$body"
changed=0
while IFS=$'\t' read -r status path; do
  changed=1
  case "$status" in
    D)
      echo "### \`$path\`: removed" >> "$body"
      echo >> "$body"
      ;;
    A)
      echo "### \`$path\`: new plan" >> "$body"
      echo >> "$body"
      echo '```' >> "$body"
      dpplan check "$path" --color never >> "$body" 2>&1 || true
      echo '```' >> "$body"
      echo >> "$body"
      ;;
    *)
      echo "### \`$path\`" >> "$body"
      echo >> "$body"
      dpplan diff "$path" --git "$since" --format md >> "$body" 2>&1 || true
      echo >> "$body"
      ;;
  esac
done < <(git diff --name-status --no-renames "$since" HEAD -- '*.dpplan')
if [ "$changed" = 0 ]; then
  echo "No \`.dpplan\` plan changed." >> "$body"
fi
pr=$(jq -r '.pull_request.number // empty' "${GITHUB_EVENT_PATH:?}")
if [ -z "$pr" ] || [ -z "${GITHUB_TOKEN:-}" ]; then
  echo "no pull request or no token: the comment is in $body"
  exit 0
fi
api="${GITHUB_API_URL:-https://api.github.com}/repos/${GITHUB_REPOSITORY:?}"
auth=(-H "Authorization: Bearer $GITHUB_TOKEN" -H "Accept: application/vnd.github+json")
payload=$(jq -n --rawfile b "$body" '{body: $b}')
existing=$(curl --fail --silent --show-error "${auth[@]}" "$api/issues/$pr/comments?per_page=100" \
  | jq -r --arg m "$marker" '[.[] | select(.body | startswith($m))][0].id // empty')
if [ -n "$existing" ]; then
  curl --fail --silent --show-error "${auth[@]}" -X PATCH -d "$payload" "$api/issues/comments/$existing" > /dev/null
  echo "updated the plan-diff comment $existing on #$pr"
else
  curl --fail --silent --show-error "${auth[@]}" -X POST -d "$payload" "$api/issues/$pr/comments" > /dev/null
  echo "posted the plan diff on #$pr"
fi
