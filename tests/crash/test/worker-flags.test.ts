/**
 * Bad settings for a crash run are refused before anything starts: a worker process's flags, and the
 * driver's options.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { runCrashScenario } from "../src/index.js";
import { workerEntry } from "../src/worker-fleet.js";

const worker = (...args: string[]) =>
  spawnSync(process.execPath, [workerEntry, ...args], { encoding: "utf8", input: "", timeout: 20_000 });

describe("the low-write settings of a crash run", () => {
  it("a worker refuses --compress-heads that is not true or false, and one on SQLite, with status 2", () => {
    const bad = worker("--store", "sqlite", "--sqlite-path", "/nonexistent/x.db", "--compress-heads", "yes");
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain("--compress-heads is true or false, not yes");
    const sqlite = worker("--store", "sqlite", "--sqlite-path", "/nonexistent/x.db", "--compress-heads", "true");
    expect(sqlite.status).toBe(2);
    expect(sqlite.stderr).toContain("--compress-heads is a PostgreSQL store's setting");
    expect(sqlite.stdout).not.toContain("ready");
  });

  it("the driver refuses compressHeads on SQLite before it opens the store", async () => {
    await expect(
      runCrashScenario({
        sqlitePath: "/nonexistent/dir/x.db",
        compressHeads: true,
        sessions: 1,
        workers: 1,
        kills: 0,
        timeoutMs: 5_000,
      }),
    ).rejects.toThrow("compressHeads is a PostgreSQL store's setting");
  });
});
