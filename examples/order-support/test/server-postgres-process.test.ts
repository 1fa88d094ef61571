/**
 * `pnpm serve` with `DATABASE_URL`: the sessions are kept in PostgreSQL (a private server this file
 * starts and stops), so a session created before a SIGKILL of the server is there after the
 * restart, with its token, its answer and its event log, and takes the next message.
 */
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { SessionSnapshot } from "@durable-agents/core";
import {
  createTestDatabase,
  startPostgres,
  type PostgresServer,
  type TestDatabase,
} from "@durable-agents/store-postgres/testing";
import { runToEnd, serverScript, type Child } from "./support/child.js";
import { createSessionOver, startServerChild } from "./support/server-child.js";

let server: PostgresServer;
let database: TestDatabase;
const children: Child[] = [];

beforeAll(async () => {
  server = await startPostgres();
  database = await createTestDatabase(server.connectionString);
});
afterAll(async () => {
  await database?.drop();
  await server?.stop();
});
afterEach(async () => {
  for (const child of children.splice(0)) await child.kill("SIGKILL");
});

const startServer = (env: Record<string, string>) => startServerChild(env, children);

async function waitForTurns(base: string, id: string, token: string, turns: number): Promise<SessionSnapshot> {
  for (;;) {
    const response = await fetch(`${base}/sessions/${id}/snapshot`, { headers: { "x-session-token": token } });
    expect(response.status).toBe(200);
    const snapshot = (await response.json()) as SessionSnapshot;
    if (snapshot.turnCount >= turns && snapshot.status === "idle") return snapshot;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("pnpm serve with DATABASE_URL", () => {
  it("keeps its sessions in PostgreSQL across a SIGKILL of the server", async () => {
    const env = { DATABASE_URL: database.connectionString, ORDER_SUPPORT_SESSION_KEY: "the key of the postgres test" };
    const first = await startServer(env);
    expect(first.child.stdout()).toContain(`store: postgres 127.0.0.1:${server.port}/${database.name})`);
    const { id, token } = await createSessionOver(first.base, "look up order 1001");
    const answered = await waitForTurns(first.base, id, token, 1);
    expect(answered.messages.at(-1)?.text).toContain("Order 1001 for Ada");
    expect((await first.child.kill("SIGKILL")).signal).toBe("SIGKILL");

    // What the first server wrote is in PostgreSQL's tables.
    const pool = new pg.Pool({ connectionString: database.connectionString, max: 1 });
    try {
      const rows = await pool.query<{ session_id: string; events: string }>(
        "SELECT s.session_id, (SELECT count(*) FROM durable_agents.events e WHERE e.session_id = s.session_id) AS events FROM durable_agents.sessions s",
      );
      expect(rows.rows.map((row) => row.session_id)).toEqual([id]);
      expect(Number(rows.rows[0]!.events)).toBe(answered.lastEventSeq);
    } finally {
      await pool.end();
    }

    const second = await startServer(env);
    const sent = await fetch(`${second.base}/sessions/${id}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-token": token },
      body: JSON.stringify({ text: "look up order 1003" }),
    });
    expect(sent.status).toBe(202);
    const later = await waitForTurns(second.base, id, token, 2);
    expect(later.messages.filter((m) => m.role === "user").map((m) => m.text)).toEqual([
      "look up order 1001",
      "look up order 1003",
    ]);
    expect(later.lastEventSeq).toBeGreaterThan(answered.lastEventSeq);
    expect((await second.child.kill("SIGTERM")).code).toBe(0);
  });

  it("stops at start with a message when the database cannot be reached", async () => {
    const unreachable = new URL(database.connectionString);
    unreachable.port = "1";
    const result = await runToEnd(serverScript, [], { PORT: "0", DATABASE_URL: unreachable.toString() });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^DATABASE_URL: the PostgreSQL store could not be opened \(.*\)\n$/);
  });
});
