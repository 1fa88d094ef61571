import { migrations } from "./migrations.js";
import { schemaName } from "./schema-name.js";

/** The statements that create the schema and its migrations table, before any migration runs. */
export function bootstrapSql(schema: string): string {
  return `CREATE SCHEMA IF NOT EXISTS ${schema};
CREATE TABLE IF NOT EXISTS ${schema}.migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
);`;
}

/** The advisory lock key that serialises migrations of one schema, as SQL. */
export const migrationLockSql = (schema: string): string =>
  `SELECT pg_advisory_xact_lock(hashtext('durable-agents-migrate'), hashtext('${schema}'))`;

/**
 * The whole SQL that `migrate` runs on an empty database, as one script (one transaction), for a
 * reader or a DBA who applies schema changes by hand.
 */
export function migrationSql(options: { schema?: string } = {}): string {
  const schema = schemaName(options.schema);
  const parts = [
    `-- @durable-agents/store-postgres schema "${schema}" (migrations 1..${migrations.length})`,
    "BEGIN;",
    `${migrationLockSql(schema)};`,
    bootstrapSql(schema),
  ];
  for (const migration of migrations) {
    parts.push(`\n-- migration ${migration.version}: ${migration.name}`);
    parts.push(migration.sql(schema).trim());
    parts.push(
      `INSERT INTO ${schema}.migrations (version, name) VALUES (${migration.version}, '${migration.name.replaceAll("'", "''")}');`,
    );
  }
  parts.push("COMMIT;", "");
  return parts.join("\n");
}
