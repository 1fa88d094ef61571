import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, it } from "vitest";
import { storeConformance } from "@durable-agents/core/conformance";
import { PostgresStore, migrate } from "../src/index.js";
import { createTestDatabase, postgresRawReader, type TestDatabase } from "../src/testing/index.js";

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

// Every test of the suite gets a schema of its own on this file's database.
storeConformance({ describe, it, afterEach }, async () => {
  const schema = `conformance_${++schemas}`;
  await migrate(pool, { schema });
  return {
    store: new PostgresStore({ pool, schema }),
    raw: postgresRawReader(pool, schema),
    cleanup: async () => {
      await pool.query(`DROP SCHEMA ${schema} CASCADE`);
    },
  };
});
