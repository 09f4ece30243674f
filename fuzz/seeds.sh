#!/usr/bin/env bash
# (Re)generates the seed corpus and dictionaries from the project's own
# files. Deterministic; needs only bash, coreutils, sed and awk.
#
#   fuzz/seeds.sh
#
# Writes fuzz/corpus/<target>/gen-* (git-ignored: always regenerated, so
# never stale) next to the committed hand-made seeds fuzz/corpus/<target>/seed-*,
# and fuzz/dict/<target>.dict (git-ignored).
#
# The executable plans come from `dpplan compile`: the binary in $DPPLAN_BIN
# if set (e.g. target/debug/dpplan of a build that already happened),
# otherwise dpplan-cli is built (debug, plain flags) into fuzz/target/host.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
corpus="$here/corpus"
dict="$here/dict"

targets=(parse_check_fmt plan_load csv_engine lsp_transport)
for t in "${targets[@]}"; do
    mkdir -p "$corpus/$t"
    rm -f "$corpus/$t"/gen-*
done
mkdir -p "$dict"

# A file's path relative to the root, as a seed name: examples/census/census.dpplan
# → examples-census-census.dpplan
name_of() { local p="${1#"$root"/}"; echo "${p//\//-}"; }

plans=()
while IFS= read -r f; do plans+=("$f"); done < <(
    find "$root/examples" "$root/tests/corpus" "$root/tests/lsp/fixtures" \
        -name '*.dpplan' -type f 2>/dev/null | LC_ALL=C sort
)
examples=()
while IFS= read -r f; do examples+=("$f"); done < <(
    find "$root/examples" -name '*.dpplan' -type f | LC_ALL=C sort
)

# --- parse_check_fmt: every plan text -------------------------------------
for f in "${plans[@]}"; do
    cp "$f" "$corpus/parse_check_fmt/gen-$(name_of "$f")"
done

# --- plan_load: each example compiled, and every plan as a source --------
dpplan="${DPPLAN_BIN:-}"
if [ -z "$dpplan" ]; then
    echo "seeds: building dpplan-cli (debug) for \`dpplan compile\`" >&2
    (
        unset RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
        CARGO_TARGET_DIR="$here/target/host" \
            cargo build --quiet --manifest-path "$root/Cargo.toml" -p dpplan-cli
    )
    dpplan="$here/target/host/debug/dpplan"
fi
for f in "${plans[@]}"; do
    n="$(name_of "$f")"
    cp "$f" "$corpus/plan_load/gen-src-$n"
    # tests/corpus holds plans with errors on purpose: those do not compile.
    "$dpplan" compile "$f" -o "$corpus/plan_load/gen-plan-${n%.dpplan}.json" \
        >/dev/null 2>&1 || rm -f "$corpus/plan_load/gen-plan-${n%.dpplan}.json"
done
if ! ls "$corpus/plan_load"/gen-plan-*.json >/dev/null 2>&1; then
    echo "seeds: no example compiled with $dpplan" >&2
    exit 1
fi

# --- csv_engine: the first 40 lines of each example's CSV, once per ------
# configuration (the target's first byte picks one of its compiled example
# datasets, modulo their number: 0..4 today)
for f in $(find "$root/examples" -name '*.csv' -type f | LC_ALL=C sort); do
    n="$(name_of "$f")"
    for pick in 0 1 2 3 4; do
        {
            printf "\\x0$pick"
            head -n 40 "$f"
        } >"$corpus/csv_engine/gen-$pick-$n"
    done
done

# --- lsp_transport: frames ------------------------------------------------
# One framed message: Content-Length in bytes.
frame() {
    local body="$1" LC_ALL=C
    printf 'Content-Length: %d\r\n\r\n%s' "${#body}" "$body"
}
# A file's text as a JSON string (no surrounding quotes).
json_text() {
    LC_ALL=C awk 'BEGIN { ORS = "" } {
        gsub(/\\/, "\\\\"); gsub(/"/, "\\\""); gsub(/\t/, "\\t"); gsub(/\r/, "\\r");
        print $0 "\\n"
    }' "$1"
}
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"general":{"positionEncodings":["utf-8","utf-16"]}}}}'
initialized='{"jsonrpc":"2.0","method":"initialized","params":{}}'
shutdown='{"jsonrpc":"2.0","id":99,"method":"shutdown"}'
exit_='{"jsonrpc":"2.0","method":"exit"}'
for f in "${examples[@]}" "$root"/tests/lsp/fixtures/*.dpplan; do
    [ -f "$f" ] || continue
    n="$(name_of "$f")"
    uri="file:///w/$(basename "$f")"
    open="{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didOpen\",\"params\":{\"textDocument\":{\"uri\":\"$uri\",\"languageId\":\"dpplan\",\"version\":1,\"text\":\"$(json_text "$f")\"}}}"
    hover="{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"textDocument/hover\",\"params\":{\"textDocument\":{\"uri\":\"$uri\"},\"position\":{\"line\":3,\"character\":5}}}"
    change="{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":{\"textDocument\":{\"uri\":\"$uri\",\"version\":2},\"contentChanges\":[{\"range\":{\"start\":{\"line\":0,\"character\":0},\"end\":{\"line\":0,\"character\":0}},\"text\":\"// x\\n\"}]}}"
    {
        frame "$init"
        frame "$initialized"
        frame "$open"
        frame "$hover"
        frame "$change"
        frame "$shutdown"
        frame "$exit_"
    } >"$corpus/lsp_transport/gen-session-${n%.dpplan}"
done

# --- dictionaries -----------------------------------------------------------
# libFuzzer sees integer comparisons (trace-compares) but, without a
# sanitizer runtime, not memcmp: keywords come from a dictionary.
kw_dict() {
    # The grammar's word literals (keywords, units, accountant names).
    grep -o '"[A-Za-z_][A-Za-z_0-9]*"' "$root/grammar/dpplan.pest" | LC_ALL=C sort -u
    printf '%s\n' '"//"' '"/*"' '"*/"' '"{"' '"}"' '"\x0d\x0a"' '"1e-6"' '"NaN"' '"inf"'
}
kw_dict >"$dict/parse_check_fmt.dict"
{
    kw_dict
    # The executable plan's field names and fixed values.
    for f in "$corpus/plan_load"/gen-plan-*.json; do
        grep -o '"[A-Za-z_][A-Za-z_0-9]*":' "$f" | sed 's/:$//'
    done | LC_ALL=C sort -u
    printf '%s\n' '"dpplan-executable-plan"' '"dpplan 0.1.0"'
} >"$dict/plan_load.dict"
{
    for f in $(find "$root/examples" -name '*.csv' -type f | LC_ALL=C sort); do
        head -n 1 "$f" | tr ',' '\n' | sed 's/.*/"&"/'
    done
    grep -ho 'category *{[^}]*}' "${examples[@]}" | grep -o '"[^"]*"'
    printf '%s\n' '"NaN"' '"inf"' '"-inf"' '"1e308"' '"4611686018427387904"' '"\x0d\x0a"' '"\x22"'
} | LC_ALL=C sort -u >"$dict/csv_engine.dict"
printf '%s\n' '"Content-Length: "' '"Content-Type: "' '"\x0d\x0a\x0d\x0a"' '"\x0d\x0a"' \
    '"jsonrpc"' '"2.0"' '"method"' '"params"' '"result"' '"error"' '"id"' \
    '"initialize"' '"initialized"' '"shutdown"' '"exit"' '"textDocument/didOpen"' \
    '"textDocument/didChange"' '"textDocument/hover"' '"$/cancelRequest"' \
    '"null"' '"true"' '"[]"' '"{}"' >"$dict/lsp_transport.dict"

for t in "${targets[@]}"; do
    echo "seeds: $t: $(ls "$corpus/$t" | wc -l) seeds, $(du -sk "$corpus/$t" | cut -f1) KiB" >&2
done
