/**
 * Core's dependency rules, read from its sources: production code (everything under `src/` but the
 * `testing/` and `conformance/` entry points) imports nothing from `testing/` or `conformance/`, and
 * core imports no other package of this repository (no store, no adapter).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const src = join(import.meta.dirname, "../src");
const sources = (readdirSync(src, { recursive: true }) as string[])
  .filter((f) => f.endsWith(".ts"))
  .map((f) => join(src, f));
const specifiers = (file: string) =>
  [...readFileSync(file, "utf8").matchAll(/(?:import|export)[^;]*?from\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/g)].map(
    (m) => m[1] ?? m[2]!,
  );
const isTestTooling = (file: string) => /^(testing|conformance)\//.test(relative(src, file).replaceAll("\\", "/"));

describe("core's import rules", () => {
  it("finds the sources it checks", () => {
    expect(sources.some((f) => f.endsWith("worker.ts"))).toBe(true);
    expect(sources.some((f) => f.endsWith("testing/memory-store.ts"))).toBe(true);
  });

  it("production code never imports from testing/ or conformance/", () => {
    const offending = sources
      .filter((file) => !isTestTooling(file))
      .flatMap((file) =>
        specifiers(file)
          .filter((s) => /(^|\/)(testing|conformance)(\/|$)/.test(s))
          .map((s) => `${relative(src, file)}: ${s}`),
      );
    expect(offending).toEqual([]);
  });

  it("imports no other package of the repository", () => {
    const offending = sources.flatMap((file) =>
      specifiers(file)
        .filter((s) => s.startsWith("@durable-agents/"))
        .map((s) => `${relative(src, file)}: ${s}`),
    );
    expect(offending).toEqual([]);
  });
});
