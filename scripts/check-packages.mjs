#!/usr/bin/env node
// Checks every publishable package (each packages/* whose package.json is not private) as it would be
// published: publint (package.json fields, exports, files) on `pnpm pack`'s file list, and
// @arethetypeswrong/cli (type resolution of every export) on `npm pack`'s tarball. Run after `pnpm build`:
// both look at dist/. Offline: both tools pack locally and read nothing from the registry.
//
// The packages are ESM only (`"type": "module"`, only `import` conditions), so attw runs with
// `--profile esm-only`: it still fails on any problem under node16 (from ESM) and bundler resolution, and
// ignores node10 and node16-from-CJS, where an ESM-only package cannot resolve by design.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = (name) => join(root, "node_modules", ".bin", process.platform === "win32" ? `${name}.cmd` : name);

const packages = readdirSync(join(root, "packages"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(root, "packages", entry.name, "package.json")))
  .map((entry) => {
    const dir = join(root, "packages", entry.name);
    return { dir, manifest: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) };
  })
  .filter(({ manifest }) => manifest.private !== true);

const run = (command, args, cwd) =>
  new Promise((resolve) => {
    execFile(
      command,
      args,
      {
        cwd,
        env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
        shell: process.platform === "win32",
        maxBuffer: 16 << 20,
      },
      (error, stdout, stderr) => resolve({ ok: !error, output: `${stdout}${stderr}`.trim() }),
    );
  });

// Tools and bundlers read a dependency's package.json (its version, its metadata): `exports` must allow that.
const exportsPackageJson = async (manifest) =>
  manifest.exports?.["./package.json"] === "./package.json"
    ? { ok: true, output: "" }
    : { ok: false, output: 'exports has no "./package.json": "./package.json"' };

const checks = packages.flatMap(({ dir, manifest }) => [
  { name: manifest.name, tool: "exports", run: () => exportsPackageJson(manifest) },
  { name: manifest.name, tool: "publint", run: () => run(bin("publint"), ["--strict"], dir) },
  {
    name: manifest.name,
    tool: "attw",
    run: () => run(bin("attw"), ["--pack", ".", "--profile", "esm-only", "--format", "ascii"], dir),
  },
]);

const started = Date.now();
const results = await Promise.all(checks.map(async (check) => ({ ...check, ...(await check.run()) })));
let failed = 0;
for (const result of results) {
  if (result.ok) {
    console.log(`ok    ${result.tool} ${result.name}`);
  } else {
    failed += 1;
    console.log(`FAIL  ${result.tool} ${result.name}\n${result.output.replace(/^/gm, "      ")}`);
  }
}
const seconds = ((Date.now() - started) / 1000).toFixed(1);
console.log(`${packages.length} publishable packages, ${failed} failed checks (${seconds}s)`);
if (packages.length === 0 || failed > 0) process.exitCode = 1;
