#!/usr/bin/env bash
# docs/tutorial.md, run as a reader runs it: every line of its ```sh blocks,
# in order, in one shell, in a scratch directory beside the repository's
# examples, with the dpplan the wheel installed (DPPLAN_VENV: a venv with
# the wheel, scripts/test-python.sh's). A line ending in `# exit N` must
# exit N, every other line 0; and every figure the prose quotes (a number
# with five or more significant digits, like 3.98538) must be in what the
# commands printed, so the text cannot drift from the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
venv=$(realpath "${DPPLAN_VENV:?set DPPLAN_VENV to a venv with the dpplan wheel installed}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ln -s "$root/examples" "$work/examples"
python3 - "$root/docs/tutorial.md" > "$work/tutorial.sh" <<'PY'
import re, shlex, sys
text = open(sys.argv[1]).read()
out = ["set -uo pipefail"]
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    for line in block.splitlines():
        cmd = line.strip()
        if not cmd or cmd.startswith("#"):
            continue
        m = re.search(r"\s+#\s*exit (\d+)\s*$", cmd)
        want = int(m.group(1)) if m else 0
        cmd = cmd[: m.start()] if m else cmd
        out.append(f"echo {shlex.quote('$ ' + cmd)}")
        out.append(f"{cmd}\nrc=$?")
        out.append(f'[ "$rc" = {want} ] || {{ echo "tutorial: `{cmd}` exited $rc, expected {want}" >&2; exit 1; }}'.replace("`", "\\`"))
print("\n".join(out))
PY
(cd "$work" && PATH="$venv/bin:$PATH" bash "$work/tutorial.sh") > "$work/out.txt" 2>&1 || {
  tail -n 40 "$work/out.txt" >&2
  exit 1
}
python3 - "$root/docs/tutorial.md" "$work/out.txt" <<'PY'
import re, sys
prose = re.sub(r"```.*?```", "", open(sys.argv[1]).read(), flags=re.S)
printed = open(sys.argv[2]).read()
quoted = set(re.findall(r"\b\d+\.\d{4,}\b", prose))
missing = sorted(q for q in quoted if q not in printed)
assert quoted, "the tutorial quotes no figure"
assert not missing, f"the tutorial quotes figures the commands do not print: {missing}"
print(f"tutorial: ok ({printed.count(chr(10) + '$ ') + printed.startswith('$ ')} commands, {len(quoted)} quoted figures found in their output)")
PY
