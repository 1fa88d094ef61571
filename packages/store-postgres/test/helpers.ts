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
  store(options?: { pollIntervalMs?: number }): PostgresStore;
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
