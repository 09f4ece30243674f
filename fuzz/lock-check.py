"""The fuzz workspace's lock against the root's: every package both use is
at the same version (the fuzz targets test what CI tests), and the fuzz
lock adds only what libfuzzer-sys needs.

    python3 fuzz/lock-check.py ROOT/Cargo.lock fuzz/Cargo.lock
"""

import sys
import tomllib


def versions(path):
    with open(path, "rb") as f:
        lock = tomllib.load(f)
    out = {}
    for p in lock.get("package", []):
        out.setdefault(p["name"], set()).add(p["version"])
    return out


root, fuzz = versions(sys.argv[1]), versions(sys.argv[2])
differ = sorted(
    f"{name}: fuzz {', '.join(sorted(v))}, root {', '.join(sorted(root[name]))}"
    for name, v in fuzz.items()
    if name in root and not v <= root[name]
)
if differ:
    print("fuzz/Cargo.lock is not the root's lock:", *differ, sep="\n  ", file=sys.stderr)
    print("help: run DPPLAN_FUZZ_UPDATE_LOCK=1 fuzz/build.sh and commit fuzz/Cargo.lock", file=sys.stderr)
    sys.exit(1)
