/**
 * Builds the package when dist is missing or older than a source file (the worker processes run
 * the built JavaScript; turbo builds it before tests in CI, a bare `vitest run` may not), then
 * starts the one private PostgreSQL of the run (store-postgres's global setup).
 */
import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { postgresGlobalSetup } from "@durable-agents/store-postgres/testing";

const root = fileURLToPath(new URL("../..", import.meta.url));

function ensureBuilt(): void {
  const newestSource = Math.max(...readdirSync(`${root}src`).map((name) => statSync(`${root}src/${name}`).mtimeMs));
  let oldestOutput = Infinity;
  for (const name of readdirSync(`${root}src`).filter((file) => file.endsWith(".ts"))) {
    try {
      oldestOutput = Math.min(oldestOutput, statSync(`${root}dist/${name.replace(/\.ts$/, ".js")}`).mtimeMs);
    } catch {
      oldestOutput = -1;
    }
  }
  if (oldestOutput >= newestSource) return;
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
}

export default async function setup(context: { provide?(key: string, value: unknown): void }) {
  ensureBuilt();
  return postgresGlobalSetup(context);
}
