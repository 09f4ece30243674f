#!/usr/bin/env bash
# The Python wheel as users install it: built (scripts/build-wheel.sh, from
# the test profile's build unless DPPLAN_WHEEL_PROFILE=release),
# installed with pip into a FRESH venv (target/test-deps/wheel-venv, made
# anew each run), with pytest from the pinned wheelhouse (offline); then
# tests/python run against the installed package and the `dpplan` binary
# pip put on the venv's PATH. Prints the wheel's size and `import dpplan`'s
# time.
set -euo pipefail
cd "$(dirname "$0")/.."
wheel="$(scripts/build-wheel.sh --profile "${DPPLAN_WHEEL_PROFILE:-test}" | tail -n 1)"
venv=target/test-deps/wheel-venv
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-index \
  --find-links target/test-deps/wheelhouse "$wheel" "pytest==9.2.0" \
  "pandas==3.1.1" "pyarrow==26.0.1" "polars==2.1.0"
echo "wheel: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"
"$venv/bin/python" -X importtime -c 'import dpplan' 2>&1 | tail -n 1 | sed 's/^/import dpplan (µs, self | cumulative): /'
PATH="$(pwd)/$venv/bin:$PATH" "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python
echo "python wheel: ok"
