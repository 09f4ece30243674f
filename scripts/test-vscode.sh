#!/usr/bin/env bash
# The VS Code extension as users install it: `npm ci` from its lock file,
# `vsce package` into a .vsix (target/test-deps/dpplan.vsix), then the
# archive is opened and checked against the manifest: the files the
# manifest names are inside, the runtime dependency is bundled and the
# packaging tool is not, the VSIX identity matches package.json.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out="$root/target/test-deps/dpplan.vsix"
mkdir -p "$(dirname "$out")"
cd editors/vscode
npm ci --no-audit --no-fund --loglevel=error
node --check extension.js
npx --no-install vsce package --out "$out" > /dev/null
python3 - "$out" package.json <<'PY'
import json, sys, zipfile, xml.etree.ElementTree as ET
vsix, manifest = sys.argv[1], json.load(open(sys.argv[2]))
z = zipfile.ZipFile(vsix)
names = set(z.namelist())
def need(path):
    assert "extension/" + path.lstrip("./") in names, f"{path} is not in the .vsix"
assert json.loads(z.read("extension/package.json")) == manifest, "the packaged manifest differs"
need(manifest["main"] if manifest["main"].endswith(".js") else manifest["main"] + ".js")
for lang in manifest["contributes"]["languages"]:
    need(lang["configuration"])
for g in manifest["contributes"]["grammars"]:
    need(g["path"])
    json.loads(z.read("extension/" + g["path"].lstrip("./")))
for dep in manifest["dependencies"]:
    assert f"extension/node_modules/{dep}/package.json" in names, f"runtime dependency {dep} not bundled"
for dep in manifest.get("devDependencies", {}):
    assert not any(n.startswith(f"extension/node_modules/{dep}/") for n in names), f"dev dependency {dep} bundled"
assert "extension/LICENSE.txt" in names or "extension/LICENSE" in names, "no licence"
ns = {"v": "http://schemas.microsoft.com/developer/vsx-schema/2011"}
ident = ET.fromstring(z.read("extension.vsixmanifest")).find("v:Metadata/v:Identity", ns)
assert ident.get("Id") == manifest["name"] and ident.get("Version") == manifest["version"] \
    and ident.get("Publisher") == manifest["publisher"], f"VSIX identity {ident.attrib}"
print(f"VS Code extension: ok ({vsix}, {len(names)} files)")
PY
