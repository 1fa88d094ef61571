/**
 * Builds the package when dist is missing or older than a source file (the crash tests' endpoint
 * processes run the built JavaScript; turbo builds it before tests in CI, a bare `vitest run` may
 * not), then starts the one private restate-server of the run.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { restateGlobalSetup } from "../../src/testing/global-setup.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

function ensureBuilt(): void {
  const src = join(root, "src");
  let stale = false;
  for (const file of sources(src)) {
    const output = join(root, "dist", file.slice(src.length).replace(/\.ts$/, ".js"));
    try {
      if (statSync(output).mtimeMs < statSync(file).mtimeMs) stale = true;
    } catch {
      stale = true;
    }
  }
  if (!stale) return;
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
}

export default async function setup(): Promise<() => Promise<void>> {
  ensureBuilt();
  return restateGlobalSetup();
}
