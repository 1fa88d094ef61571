import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionClient } from "@durable-agents/core";
import { PostgresStore, migrate, migrationSql } from "../src/index.js";
import { createTestDatabase, type TestDatabase } from "../src/testing/index.js";

// Everything here runs the package as it is published (dist) in child processes: build it first.
const root = fileURLToPath(new URL("..", import.meta.url));
beforeAll(() => {
  execFileSync(
    process.execPath,
    [fileURLToPath(import.meta.resolve("typescript/bin/tsc")), "-p", "tsconfig.build.json"],
    {
      cwd: root,
      stdio: "pipe",
    },
  );
}, 120_000);

describe("commands", () => {
  it("durable-agents-pg-sql prints the schema's SQL", () => {
    const bin = join(root, "dist/print-sql.js");
    expect(execFileSync(process.execPath, [bin], { encoding: "utf8" })).toBe(migrationSql());
    expect(execFileSync(process.execPath, [bin, "--schema", "cli_schema"], { encoding: "utf8" })).toBe(
      migrationSql({ schema: "cli_schema" }),
    );
    const bad = spawnSync(process.execPath, [bin, "--schema", "No"], { encoding: "utf8" });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/invalid schema name/);
    expect(bad.stdout).toBe("");
  });

  it("durable-agents-with-postgres runs a command against a server of its own and removes it", () => {
    const bin = join(root, "dist/testing/with-postgres.js");
    // The child connects with the URL it was given, reports what it saw, and exits with code 3.
    const probe = `
      const { default: pg } = await import("pg");
      const url = process.env.DURABLE_AGENTS_PG_URL;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client.query("SELECT current_setting('synchronous_commit') AS s");
      await client.end();
      console.log(JSON.stringify({ url, synchronousCommit: rows[0].s }));
      process.exit(3);`;
    const env = { ...process.env };
    delete env.DURABLE_AGENTS_PG_URL;
    const run = spawnSync(process.execPath, [bin, "--", process.execPath, "--input-type=module", "-e", probe], {
      cwd: root,
      encoding: "utf8",
      env,
      timeout: 60_000,
    });
    expect(run.status).toBe(3);
    const seen = JSON.parse(run.stdout.trim()) as { url: string; synchronousCommit: string };
    expect(seen.synchronousCommit).toBe("on");
    expect(seen.url).not.toBe(process.env.DURABLE_AGENTS_PG_URL);
    // The server is gone once the command returned.
    const after = spawnSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { default: pg } = await import("pg"); await new pg.Client({ connectionString: "${seen.url}" }).connect();`,
      ],
      { cwd: root, encoding: "utf8" },
    );
    expect(after.status, `${seen.url} still answers`).not.toBe(0);
  }, 60_000);
});

describe("worker processes sharing one database", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let dir: string;
  const children: ChildProcess[] = [];
  /** What the workers reported through onError: printed, not asserted (the store is not what they report on). */
  const workerErrors: string[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.connectionString, max: 6 });
    pool.on("error", () => {});
    await migrate(pool);
    dir = mkdtempSync(join(tmpdir(), "store-postgres-workers-"));
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    await pool?.end();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("three worker processes drive twelve sessions to the end, each call run once", async () => {
    const executions = join(dir, "executions.log");
    writeFileSync(executions, "");
    const start = () =>
      new Promise<ChildProcess>((resolve, reject) => {
        const child = spawn(process.execPath, [join(root, "test/fixtures/worker-process.mjs")], {
          cwd: root,
          env: { ...process.env, DATABASE_URL: database.connectionString, EXECUTIONS_FILE: executions },
          stdio: ["ignore", "pipe", "pipe"],
        });
        children.push(child);
        child.stderr!.on("data", (chunk: Buffer) => workerErrors.push(chunk.toString()));
        child.once("error", reject);
        child.stdout!.once("data", () => resolve(child));
      });
    const workers = await Promise.all([start(), start(), start()]);

    // The workers are paused while the sessions and both their messages are stored, and resumed
    // together: each then fills its three slots at once, and a slot frees only after a session's two
    // 150 ms calls. Sessions that came one by one could instead all go to two workers that kept
    // winning the race for each new one.
    for (const child of workers) child.kill("SIGSTOP");
    const store = new PostgresStore({ pool });
    const client = new SessionClient({ store });
    const ids: string[] = [];
    for (let n = 0; n < 12; n++) {
      const { sessionId } = await client.startSession({
        agent: "support",
        sessionId: `order-${n}`,
        message: `call look_up_order {"order_id":"${n}"}`,
      });
      await client.sendMessage(sessionId, `call look_up_order {"order_id":"${n}-b"}`, { messageId: `second-${n}` });
      ids.push(sessionId);
    }
    for (const child of workers) child.kill("SIGCONT");
    for (const id of ids) {
      const snapshot = await client.waitFor(
        id,
        (s) => s.status === "idle" && s.turnCount === 2 && s.queuedMessages === 0,
        {
          timeoutMs: 30_000,
        },
      );
      expect(snapshot.turn?.phase).toBe("completed");
      expect(snapshot.turn?.finalText).toContain(`order ${id.slice("order-".length)}-b has shipped`);
    }

    // Every call ran exactly once, and the work was shared: with all 12 sessions there when the
    // workers resumed, two workers hold 6 at most for the length of two calls, so the third takes some.
    const lines = readFileSync(executions, "utf8").trim().split("\n");
    const calls = lines.map((line) => line.split(" ").slice(1, 3).join(" ")).sort();
    const expected = ids.flatMap((id) => [`${id} ${id.slice(6)}`, `${id} ${id.slice(6)}-b`]).sort();
    expect(calls).toEqual(expected);
    const pids = new Set(lines.map((line) => line.split(" ")[0]));
    expect(pids.size).toBe(3);
    // The workers ran side by side: two of them started executions less than the 150 ms an
    // execution lasts apart, so both were running at once.
    const starts = lines.map((line) => {
      const [pid, , , at] = line.split(" ");
      return { pid, at: Number(at) };
    });
    const overlapping = starts.filter((x, i) =>
      starts.some((y, j) => i !== j && y.pid !== x.pid && Math.abs(y.at - x.at) < 150),
    );
    expect(overlapping.length, "executions that overlapped one of another worker").toBeGreaterThan(1);

    // Graceful stops hand every lease back: no session is held any more. (A lease a worker kept for a
    // next message that never came may have expired before the stop; its owner stays in the row.)
    await Promise.all(
      workers.map(
        (child) =>
          new Promise<number | null>((resolve) => {
            child.once("exit", resolve);
            child.kill("SIGTERM");
          }),
      ),
    ).then((codes) => expect(codes).toEqual([0, 0, 0]));
    const leased = await pool.query(
      "SELECT count(*)::int AS n FROM durable_agents.sessions WHERE lease_owner IS NOT NULL AND lease_expires_at > now()",
    );
    expect(leased.rows[0].n).toBe(0);
    await store.close();
    if (workerErrors.length > 0) console.log(`worker processes reported:\n${workerErrors.join("")}`);
  }, 90_000);
});
