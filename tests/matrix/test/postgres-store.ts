import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import { PostgresStore, migrate } from "@durable-agents/store-postgres";
import { createTestDatabase, type TestDatabase } from "@durable-agents/store-postgres/testing";

/** A `makeStore` for core's session suite: a fresh schema of this file's own database per test. */
export function postgresStores(prefix: string) {
  let database: TestDatabase;
  let pool: pg.Pool;
  let count = 0;
  beforeAll(async () => {
    database = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.connectionString, max: 20 });
    pool.on("error", () => {});
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });
  return async () => {
    const schema = `${prefix}_${++count}`;
    await migrate(pool, { schema });
    return {
      store: new PostgresStore({ pool, schema, pollIntervalMs: 1000 }),
      cleanup: async () => {
        await pool.query(`DROP SCHEMA ${schema} CASCADE`);
      },
    };
  };
}
