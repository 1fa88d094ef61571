import { basename, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ViteUserConfig } from "vitest/config";

const root = dirname(fileURLToPath(import.meta.url));

/** Test settings every package shares. In CI each package also writes a JSON report that .ci/run adds up. */
export function sharedTestConfig(packageDir: string): NonNullable<ViteUserConfig["test"]> {
  const name = `${basename(dirname(packageDir))}-${basename(packageDir)}`;
  return {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll gives up after 1 s by default: too soon for a real browser on a busy machine.
    expect: { poll: { timeout: 10_000 } },
    reporters: process.env.CI
      ? ["default", ["json", { outputFile: resolve(root, ".vitest-results", `${name}.json`) }]]
      : ["default"],
  };
}
