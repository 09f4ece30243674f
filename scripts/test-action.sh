#!/usr/bin/env bash
# The GitHub Action (action.yml) without a hosted runner: its manifest is
# read and cross-checked (every input it uses is declared, every script it
# runs exists), and each shell step runs with GitHub's environment simulated
# (GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY, an event file; `cargo`
# and the GitHub API replaced by recording stubs).
#
# Environment: DPPLAN_BIN (a built dpplan; required); DPPLAN_WHEEL (the
# dpplan wheel, scripts/build-wheel.sh; required): the `package` input
# installs it for real with pip, and its binary runs the rest of the test.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
py="$root/target/test-deps/precommit-venv/bin/python"   # has PyYAML (pre-commit's dependency)
[ -x "$py" ] || { echo "run scripts/test-deps.sh first" >&2; exit 1; }
bin=$(realpath "${DPPLAN_BIN:?set DPPLAN_BIN to a built dpplan}")
wheel=$(realpath "${DPPLAN_WHEEL:?set DPPLAN_WHEEL to a built dpplan wheel (scripts/build-wheel.sh)}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "action test: $*" >&2; exit 1; }

# 1. the manifest
"$py" - "$root" <<'PY'
import os, re, sys, yaml
root = sys.argv[1]
a = yaml.safe_load(open(os.path.join(root, "action.yml")))
assert a["runs"]["using"] == "composite", "not a composite action"
declared = set(a["inputs"])
text = open(os.path.join(root, "action.yml")).read()
used = set(re.findall(r"inputs\.([A-Za-z0-9_-]+)", text))
assert used <= declared, f"inputs used but not declared: {used - declared}"
assert declared <= used, f"inputs declared but never used: {declared - used}"
ids = {s.get("id") for s in a["runs"]["steps"]}
for name, o in a["outputs"].items():
    step = re.search(r"steps\.([a-z-]+)\.outputs", o["value"]).group(1)
    assert step in ids, f"output {name} reads a missing step {step}"
for s in a["runs"]["steps"]:
    if "run" in s:
        assert s.get("shell") == "bash", f"step {s['name']} has no shell"
        for script in re.findall(r"\$GITHUB_ACTION_PATH/([\w/.-]+)", s["run"]):
            p = os.path.join(root, script)
            assert os.access(p, os.X_OK), f"{script} missing or not executable"
upload = [s for s in a["runs"]["steps"] if "upload-sarif" in s.get("uses", "")]
assert upload and upload[0].get("continue-on-error") is True, "a refused SARIF upload must not fail the job"
cache = [s for s in a["runs"]["steps"] if s.get("uses", "").startswith("actions/cache@")]
assert cache and "steps.key.outputs.key" in cache[0]["with"]["key"], "the build is not cached by its source's key"
for perm in ("security-events: write", "pull-requests: write"):
    assert perm in text, f"the permissions the Action needs are not documented: {perm}"
print("action.yml: ok", file=sys.stderr)
PY

# 2. install: a released binary (file:// stands for https://) ...
export RUNNER_TEMP="$work/runner" GITHUB_ACTION_PATH="$root"
mkdir -p "$RUNNER_TEMP"
export GITHUB_PATH="$work/github_path"
INPUT_BINARY_URL="file://$bin" scripts/action/install.sh > "$work/out"
[ "$(cat "$GITHUB_PATH")" = "$RUNNER_TEMP/dpplan/bin" ] || fail "install did not add its bin to GITHUB_PATH"
"$RUNNER_TEMP/dpplan/bin/dpplan" --version | grep -q '^dpplan ' || fail "the installed binary does not run"
# ... or built from the Action's source (cargo stubbed: it records and installs)
mkdir -p "$work/stub"
cat > "$work/stub/cargo" <<STUB
#!/usr/bin/env bash
echo "\$*" > "$work/cargo-args"
while [ \$# -gt 0 ]; do [ "\$1" = --root ] && r=\$2; shift; done
mkdir -p "\$r/bin" && cp "$bin" "\$r/bin/dpplan"
STUB
chmod +x "$work/stub/cargo"
rm -rf "$RUNNER_TEMP/dpplan"
PATH="$work/stub:$PATH" INPUT_BINARY_URL= scripts/action/install.sh > "$work/out"
grep -qx "install --locked --quiet --root $RUNNER_TEMP/dpplan --path $root/crates/dpplan-cli" "$work/cargo-args" \
  || fail "cargo install called as: $(cat "$work/cargo-args")"
# ... then restored from the Action's cache: no build
rm -f "$work/cargo-args"
PATH="$work/stub:$PATH" INPUT_BINARY_URL= scripts/action/install.sh > "$work/out"
grep -q "restored from the Action's cache" "$work/out" || fail "a cached build was not reused: $(cat "$work/out")"
[ ! -e "$work/cargo-args" ] || fail "a cached build was rebuilt"
# the cache key: the same source gives the same key, a changed source file
# another, and a build directory inside the source changes nothing
keytree="$work/keytree"
mkdir -p "$keytree/crates/a/src" "$keytree/crates/a/target" "$keytree/grammar"
echo '[workspace]' > "$keytree/Cargo.toml"; echo 'version = 3' > "$keytree/Cargo.lock"
echo 'fn f() {}' > "$keytree/crates/a/src/lib.rs"; echo 'g = { "x" }' > "$keytree/grammar/g.pest"
key() { : > "$work/key-out"; GITHUB_ACTION_PATH="$keytree" GITHUB_OUTPUT="$work/key-out" scripts/action/cache-key.sh; cat "$work/key-out"; }
k1=$(key); k2=$(key)
echo junk > "$keytree/crates/a/target/x"; k3=$(key)
echo 'fn g() {}' > "$keytree/crates/a/src/lib.rs"; k4=$(key)
[[ "$k1" =~ ^key=dpplan-Linux-X64-[0-9a-f]{32}$ ]] || fail "cache key: $k1"
[ "$k1" = "$k2" ] && [ "$k1" = "$k3" ] || fail "the cache key moved without a source change"
[ "$k1" != "$k4" ] || fail "the cache key did not move with the source"
# ... or the wheel, installed for real by pip (`package`): the binary it puts
# on PATH runs everything below
rm -rf "$RUNNER_TEMP/dpplan"; : > "$GITHUB_PATH"
start=$(date +%s)
INPUT_PACKAGE="$wheel" scripts/action/install.sh > "$work/out"
echo "action install from the wheel: $(( $(date +%s) - start )) s"
[ "$(cat "$GITHUB_PATH")" = "$RUNNER_TEMP/dpplan/venv/bin" ] || fail "the wheel's bin is not on GITHUB_PATH: $(cat "$GITHUB_PATH")"
"$RUNNER_TEMP/dpplan/venv/bin/dpplan" --version | grep -qx "$("$bin" --version)" || fail "the wheel's binary is not this dpplan"
"$RUNNER_TEMP/dpplan/venv/bin/python" -c 'import dpplan' || fail "the wheel's module does not import"
export PATH="$RUNNER_TEMP/dpplan/venv/bin:$PATH"

# 3. check: a clean set, then one with an error
plans="$work/plans"
mkdir -p "$plans"
cp "$root/examples/census/census.dpplan" "$plans/census.dpplan"
cd "$plans"
export GITHUB_OUTPUT="$work/output" GITHUB_STEP_SUMMARY="$work/summary.md"
: > "$GITHUB_OUTPUT"; : > "$GITHUB_STEP_SUMMARY"
INPUT_PATHS=. INPUT_SARIF_FILE="$work/a.sarif" GITHUB_ACTION_REPOSITORY=acme/dpplan GITHUB_ACTION_REF=v1 \
  "$root/scripts/action/check.sh" > "$work/annotations"
grep -qx "exit-code=0" "$GITHUB_OUTPUT" || fail "clean plans: $(cat "$GITHUB_OUTPUT")"
grep -qx "sarif-file=$work/a.sarif" "$GITHUB_OUTPUT" || fail "no sarif-file output"
# the plan's row: its ε is the JSON output's, rounded up to six digits
dpplan check census.dpplan --format json > "$work/census.json"
"$py" - "$GITHUB_STEP_SUMMARY" "$work/census.json" <<'PY' || { cat "$GITHUB_STEP_SUMMARY"; fail "the job summary lacks the plan's row"; }
import json, re, sys
summary, claim = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))["files"][0]
row = re.search(r"^\| `\./census\.dpplan` \| ([0-9.]+) \| 1e-9 \| [^|]+ \| [^|]+ \| ✅ within budget \|", summary, re.M)
assert row, "no row"
shown, eps = float(row.group(1)), claim["epsilon"]
assert eps <= shown <= eps * (1 + 1e-5), (shown, eps)
PY
[ "$(grep -c '## dpplan check' "$GITHUB_STEP_SUMMARY")" = 1 ] || fail "the summary was written more than once (the SARIF run must not write it)"
"$py" - "$work/a.sarif" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
run = s["runs"][0]
assert run["properties"]["plans"][0]["epsilon"] > 0
assert run["tool"]["driver"]["rules"][1]["helpUri"] == "https://github.com/acme/dpplan/blob/v1/docs/diagnostics.md#dp001"
PY
cp "$root/tests/corpus/dp001-unbounded-contribution.dpplan" "$plans/bad.dpplan"
: > "$GITHUB_OUTPUT"
INPUT_PATHS="census.dpplan bad.dpplan" INPUT_SARIF_FILE="$work/b.sarif" "$root/scripts/action/check.sh" > "$work/annotations"
grep -qx "exit-code=1" "$GITHUB_OUTPUT" || fail "a plan with an error: $(cat "$GITHUB_OUTPUT")"
grep -q "^::error file=bad.dpplan,line=" "$work/annotations" || { cat "$work/annotations"; fail "no error annotation"; }
"$py" -c "import json,sys; r=json.load(open(sys.argv[1]))['runs'][0]['results']; assert any(x['ruleId']=='DP001' for x in r)" "$work/b.sarif" \
  || fail "the SARIF report lacks DP001"
# a plan with a warning passes, unless warnings are denied
cp "$root/tests/corpus/dp008-per-person.dpplan" warn.dpplan
: > "$GITHUB_OUTPUT"
INPUT_PATHS=warn.dpplan "$root/scripts/action/check.sh" > /dev/null
grep -qx "exit-code=0" "$GITHUB_OUTPUT" || fail "a warning failed the check: $(cat "$GITHUB_OUTPUT")"
: > "$GITHUB_OUTPUT"
INPUT_PATHS=warn.dpplan INPUT_DENY_WARNINGS=true "$root/scripts/action/check.sh" > /dev/null
grep -qx "exit-code=1" "$GITHUB_OUTPUT" || fail "deny-warnings did not fail on a warning"

# 4. the pull-request comment: a repository with a base and a PR branch
repo="$work/repo"
mkdir -p "$repo" && cd "$repo"
git init -q -b main . && git config user.email t@example.org && git config user.name t
cp "$root/examples/repeated-release/repeated-release.dpplan" plan.dpplan
cp "$root/examples/census/census.dpplan" old.dpplan
git add -A && git commit -qm base
git checkout -q -b pr
sed -i 's/sigma 8/sigma 4/' plan.dpplan
git rm -q old.dpplan
cp "$root/examples/census/census.dpplan" new.dpplan
git add -A && git commit -qm change
echo '{"pull_request": {"number": 7}}' > "$work/event.json"
cat > "$work/stub/curl" <<STUB
#!/usr/bin/env bash
# records "METHOD URL" and the headers; the payload goes to payload.json
method=GET
while [ \$# -gt 0 ]; do
  case "\$1" in
    -X) method=\$2; shift ;;
    -d) printf '%s' "\$2" > "$work/payload.json"; shift ;;
    -H) echo "header \$2" >> "$work/curl-log"; shift ;;
    -*) ;;
    *) url=\$1 ;;
  esac
  shift
done
echo "\$method \$url" >> "$work/curl-log"
cat "$work/comments.json"
STUB
chmod +x "$work/stub/curl"
echo '[{"id": 5, "body": "a human comment"}]' > "$work/comments.json"
export GITHUB_EVENT_PATH="$work/event.json" GITHUB_REPOSITORY=acme/plans GITHUB_API_URL=http://api.test
PATH="$work/stub:$PATH" INPUT_DIFF_BASE=main GITHUB_TOKEN=secret "$root/scripts/action/diff-comment.sh" > "$work/out"
body="$RUNNER_TEMP/dpplan-diff.md"
grep -qx "POST http://api.test/repos/acme/plans/issues/7/comments" "$work/curl-log" || { cat "$work/curl-log"; fail "no POST of the comment"; }
grep -qx "header Authorization: Bearer secret" "$work/curl-log" || fail "the token was not sent"
"$py" -c "import json,sys; assert json.load(open(sys.argv[1]))['body'] == open(sys.argv[2]).read()" "$work/payload.json" "$body" \
  || fail "the posted body is not the diff"
head -1 "$body" | grep -qx '<!-- dpplan-diff -->' || fail "no marker"
grep -q '^### `plan.dpplan`$' "$body" || { cat "$body"; fail "the changed plan is missing"; }
grep -q '^### `old.dpplan`: removed$' "$body" || fail "the removed plan is missing"
grep -q '^### `new.dpplan`: new plan$' "$body" || fail "the new plan is missing"
# the diff itself: the noise change, from dpplan diff's Markdown
dpplan diff plan.dpplan --git "$(git merge-base main HEAD)" --format md > "$work/expected.md" 2>/dev/null || true
grep -qF "$(head -3 "$work/expected.md" | tail -1)" "$body" || fail "the body lacks dpplan diff's output"
grep -q "σ=8\|sigma 8\|σ = 8" "$body" || { cat "$body"; fail "the body does not show the old noise"; }
# a later push: the comment with the marker is updated, not duplicated
: > "$work/curl-log"
echo '[{"id": 5, "body": "a human comment"}, {"id": 99, "body": "<!-- dpplan-diff -->\nold"}]' > "$work/comments.json"
PATH="$work/stub:$PATH" INPUT_DIFF_BASE=main GITHUB_TOKEN=secret "$root/scripts/action/diff-comment.sh" > "$work/out"
grep -qx "PATCH http://api.test/repos/acme/plans/issues/comments/99" "$work/curl-log" || { cat "$work/curl-log"; fail "no PATCH of the existing comment"; }
! grep -q "^POST" "$work/curl-log" || fail "a second comment was posted"
echo "GitHub Action: ok (manifest, install: binary, cargo, cache, wheel; check, PR comment)"
