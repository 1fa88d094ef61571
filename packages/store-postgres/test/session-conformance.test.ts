import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, it } from "vitest";
import { sessionConformance } from "@durable-agents/core/conformance";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { PostgresStore, migrate } from "../src/index.js";
import { createTestDatabase, type TestDatabase } from "../src/testing/index.js";

// Core's whole session contract (SessionClient + Worker + the scripted runner) on this store.
let database: TestDatabase;
let pool: pg.Pool;
let schemas = 0;

beforeAll(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.connectionString, max: 20 });
  pool.on("error", () => {});
});
afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

sessionConformance(
  { describe, it, afterEach },
  {
    makeRunner: (tools) => new ScriptedRunner({ tools }),
    makeStore: async () => {
      const schema = `sessions_${++schemas}`;
      await migrate(pool, { schema });
      return {
        store: new PostgresStore({ pool, schema, pollIntervalMs: 1000 }),
        cleanup: async () => {
          await pool.query(`DROP SCHEMA ${schema} CASCADE`);
        },
      };
    },
  },
);
