/**
 * The soak script as a user runs it (built JavaScript, its own process): a tiny run on the test
 * server, and one on a SQLite file, print the counts and exit 0; a mistyped flag exits non-zero
 * before doing anything.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { POSTGRES_URL_VARIABLE } from "@durable-agents/store-postgres/testing";

const soak = fileURLToPath(new URL("../dist/soak.js", import.meta.url));

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [soak, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the soak did not finish within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe("the soak script", () => {
  it("runs a small soak with a kill and reports every invariant holding", async () => {
    const url = process.env[POSTGRES_URL_VARIABLE]!;
    const { code, output } = await run(
      ["--", "--sessions", "12", "--workers", "2", "--kills", "2", "--minutes", "0.05", "--database-url", url],
      90_000,
    );
    expect(output).toMatch(/sessions 12\/12, turns \d+ completed \+ \d+ failed \+ \d+ cancelled of \d+/);
    expect(output).toMatch(/kills [12] \(/);
    expect(output).toContain("invariants: all hold");
    expect(code).toBe(0);
  }, 100_000);

  it("runs a small soak on one SQLite file and checks the file's integrity", async () => {
    const { code, output } = await run(
      ["--", "--store", "sqlite", "--sessions", "12", "--workers", "2", "--kills", "3", "--minutes", "0.05"],
      90_000,
    );
    expect(output).toMatch(/sessions 12\/12, turns \d+ completed \+ \d+ failed \+ \d+ cancelled of \d+/);
    expect(output).toMatch(/kills [123] \(/);
    expect(output).toContain("invariants: all hold");
    expect(output).toContain("PRAGMA integrity_check: ok");
    expect(code).toBe(0);
  }, 100_000);

  it("refuses a mistyped flag", async () => {
    const { code, output } = await run(["--sesions", "5"], 20_000);
    expect(code).not.toBe(0);
    expect(output).toContain('unknown argument "--sesions"');
  });

  it("refuses a --compress-heads that is not true or false, and one on SQLite", async () => {
    const bad = await run(["--compress-heads", "yes"], 20_000);
    expect(bad.code).not.toBe(0);
    expect(bad.output).toContain("--compress-heads is true or false, not yes");
    const sqlite = await run(["--store", "sqlite", "--compress-heads", "true"], 20_000);
    expect(sqlite.code).not.toBe(0);
    expect(sqlite.output).toContain("--compress-heads is a PostgreSQL store's setting");
  });
});
