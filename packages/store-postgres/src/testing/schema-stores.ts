import pg from "pg";
import { migrate } from "../migrate.js";
import { PostgresStore } from "../postgres-store.js";
import { postgresRawReader } from "./postgres-raw-reader.js";
import { createTestDatabase, type TestDatabase } from "./test-database.js";

export interface SchemaStores {
  readonly pool: pg.Pool;
  /** A migrated schema of its own with a store on it, a raw reader, and a cleanup that drops it. */
  next(): Promise<{ store: PostgresStore; raw: ReturnType<typeof postgresRawReader>; cleanup: () => Promise<void> }>;
  /** Ends the pool and drops the database. */
  close(): Promise<void>;
}

/**
 * For suites that want a fresh store per test: one database of its own on the test server, one
 * pool, and a new schema for each `next()`.
 */
export async function openSchemaStores(
  prefix: string,
  options: { pollIntervalMs?: number } = {},
): Promise<SchemaStores> {
  const database: TestDatabase = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: database.connectionString, max: 20 });
  pool.on("error", () => {});
  let count = 0;
  return {
    pool,
    async next() {
      const schema = `${prefix}_${++count}`;
      await migrate(pool, { schema });
      return {
        store: new PostgresStore({
          pool,
          schema,
          ...(options.pollIntervalMs ? { pollIntervalMs: options.pollIntervalMs } : {}),
        }),
        raw: postgresRawReader(pool, schema),
        cleanup: async () => {
          await pool.query(`DROP SCHEMA ${schema} CASCADE`);
        },
      };
    },
    async close() {
      await pool.end();
      await database.drop();
    },
  };
}
