import type { Pool } from "pg";
import { bootstrapSql, migrationLockSql } from "./migration-sql.js";
import { migrations } from "./migrations.js";
import { schemaName } from "./schema-name.js";

export interface MigrateOptions {
  /** Default `durable_agents`. */
  readonly schema?: string;
}

export interface MigrateResult {
  /** The migration versions this call applied (empty when the schema was up to date). */
  readonly applied: number[];
}

/**
 * Brings the store's tables up to date. Idempotent, and safe to run from many processes at once:
 * all of it runs in one transaction under an advisory lock, and every applied version is recorded
 * in `<schema>.migrations`.
 */
export async function migrate(pool: Pool, options: MigrateOptions = {}): Promise<MigrateResult> {
  const schema = schemaName(options.schema);
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    try {
      await client.query(migrationLockSql(schema));
      await client.query(bootstrapSql(schema));
      const done = await client.query<{ version: number }>(`SELECT version FROM ${schema}.migrations`);
      const recorded = new Set(done.rows.map((row) => row.version));
      const applied: number[] = [];
      for (const migration of migrations) {
        if (recorded.has(migration.version)) continue;
        await client.query(migration.sql(schema));
        await client.query(`INSERT INTO ${schema}.migrations (version, name) VALUES ($1, $2)`, [
          migration.version,
          migration.name,
        ]);
        applied.push(migration.version);
      }
      await client.query("COMMIT");
      return { applied };
    } catch (error) {
      await client.query("ROLLBACK").catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      throw error;
    }
  } finally {
    client.release(broken);
  }
}
