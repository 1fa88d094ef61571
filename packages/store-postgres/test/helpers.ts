import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import type { EventBody, HistoryItem, SessionHead } from "@durable-agents/core";
import { newSessionHead } from "@durable-agents/core/engine";
import { PostgresStore, migrate } from "../src/index.js";
import { createTestDatabase, type TestDatabase } from "../src/testing/index.js";

export const AGENT = "helper-agent";

export function head(sessionId: string, changes: Partial<SessionHead> = {}): SessionHead {
  return { ...newSessionHead(sessionId, AGENT, "2026-01-01T00:00:00.000Z"), ...changes };
}

export const created = (agent = AGENT): EventBody => ({ type: "session_created", data: { agent } });
export const delta = (text: string): EventBody => ({ type: "text_delta", data: { turnId: "t1", text } });
export const item = (text: string): HistoryItem => ({
  item: { role: "user", content: text },
  display: { role: "user", text },
});

export interface Database {
  readonly pool: pg.Pool;
  readonly schema: string;
  /** A store on the file's database; closed after the file. */
  store(options?: { pollIntervalMs?: number; compressHeads?: boolean; commitsInFlight?: number }): PostgresStore;
}

/** A database of this test file's own, migrated, with a pool; everything is dropped after the file. */
export function useDatabase(schema = "durable_agents"): Database {
  let database: TestDatabase;
  let pool: pg.Pool | undefined;
  const stores: PostgresStore[] = [];
  beforeAll(async () => {
    database = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.connectionString, max: 20 });
    pool.on("error", () => {});
    await migrate(pool, { schema });
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await pool?.end();
    await database?.drop();
  });
  return {
    get pool() {
      if (!pool) throw new Error("the database is not ready before beforeAll");
      return pool;
    },
    schema,
    store(options = {}) {
      const store = new PostgresStore({ pool: this.pool, schema, ...options });
      stores.push(store);
      return store;
    },
  };
}

let counter = 0;
/** A session ID no other test of the file uses. */
export const newId = (prefix = "s"): string => `${prefix}-${process.pid}-${++counter}`;

export interface TableBarrier {
  /** Resolves with how many backends wait behind the barrier once at least `count` do (at most `timeoutMs`). */
  queued(count: number, timeoutMs?: number): Promise<number>;
  /** Lets every waiting statement go at once. */
  release(): Promise<void>;
}

/**
 * A barrier at the database: an EXCLUSIVE lock on `table`, held by a transaction of its own, makes
 * every statement that writes to or locks rows of the table wait (plain reads pass). A race test
 * starts its calls, waits until several of them queue behind the lock (they are then in flight at
 * the database at the same moment), and releases them together.
 */
export async function tableBarrier(pool: pg.Pool, table: string): Promise<TableBarrier> {
  const locker = await pool.connect();
  try {
    await locker.query("BEGIN");
    await locker.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
  } catch (error) {
    locker.release();
    throw error;
  }
  const lockerPid = Number((await locker.query("SELECT pg_backend_pid() AS pid")).rows[0].pid);
  const waiting = async () =>
    Number(
      (
        await pool.query(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND $1 = ANY(pg_blocking_pids(pid))",
          [lockerPid],
        )
      ).rows[0].n,
    );
  let released = false;
  return {
    async queued(count, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const n = await waiting();
        if (n >= count) return n;
        if (Date.now() > deadline) throw new Error(`only ${n} of ${count} statements queued behind the lock`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    async release() {
      if (released) return;
      released = true;
      try {
        await locker.query("COMMIT");
      } finally {
        locker.release();
      }
    },
  };
}

/**
 * A new session whose agent is its own ID (so no other test's lease takes it), runnable, with a live
 * lease of worker "w": its fence.
 */
export async function leasedSession(db: Database, sessionId: string): Promise<number> {
  const store = db.store();
  await store.createSession({ head: head(sessionId), events: [created()] });
  await db.pool.query(`UPDATE ${db.schema}.sessions SET runnable = true, agent = $1 WHERE session_id = $1`, [
    sessionId,
  ]);
  return (await store.acquireLease({ workerId: "w", ttlMs: 10_000, agents: [sessionId] }))!.fence;
}
