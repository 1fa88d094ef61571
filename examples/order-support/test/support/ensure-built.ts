/**
 * The process tests run the built JavaScript. This builds the package first when dist is missing
 * or older than a source file (turbo builds it before tests in CI; a bare `vitest run` may not).
 */
import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

export function ensureBuilt(): void {
  const newestSource = Math.max(...readdirSync(`${root}src`).map((name) => statSync(`${root}src/${name}`).mtimeMs));
  let oldestOutput = Infinity;
  for (const output of ["dist/demo.js", "dist/server-main.js"]) {
    try {
      oldestOutput = Math.min(oldestOutput, statSync(`${root}${output}`).mtimeMs);
    } catch {
      oldestOutput = -1;
      break;
    }
  }
  if (oldestOutput >= newestSource) return;
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
}
