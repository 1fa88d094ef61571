import { describe, expect, it } from "vitest";
import { ConfigurationError } from "@durable-agents/core";
import { PostgresStore, migrate, migrationSql, migrations } from "../src/index.js";
import { head, newId, useDatabase } from "./helpers.js";

const db = useDatabase("migrated_first");

const tables = async (schema: string) =>
  (
    await db.pool.query(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name",
      [schema],
    )
  ).rows.map((row) => row.table_name);

describe("migrate", () => {
  it("creates the tables once and records every version", async () => {
    expect(await tables("migrated_first")).toEqual([
      "definition_announcements",
      "events",
      "history",
      "inbox",
      "migrations",
      "sessions",
    ]);
    const recorded = await db.pool.query("SELECT version, name FROM migrated_first.migrations ORDER BY version");
    expect(recorded.rows).toEqual(migrations.map(({ version, name }) => ({ version, name })));
    expect(await migrate(db.pool, { schema: "migrated_first" })).toEqual({ applied: [] });
  });

  it("is safe to run from many connections at once", async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => migrate(db.pool, { schema: "raced" })));
    const versions = migrations.map((migration) => migration.version);
    expect(results.filter((result) => result.applied.length > 0)).toEqual([{ applied: versions }]);
    const recorded = await db.pool.query("SELECT count(*)::int AS n FROM raced.migrations");
    expect(recorded.rows[0].n).toBe(migrations.length);
    // The schema works.
    const store = new PostgresStore({ pool: db.pool, schema: "raced" });
    const id = newId();
    await store.createSession({ head: head(id), events: [] });
    expect((await store.loadSession(id))?.version).toBe(1);
  });

  it("upgrades a schema of version 1 (before pinning): its sessions are not pinned and every worker of their agent leases them", async () => {
    // A schema as version 1 of the package left it, with one session that has a message waiting.
    const v1 = migrations[0]!;
    await db.pool.query(`CREATE SCHEMA legacy;
      CREATE TABLE legacy.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
      ${v1.sql("legacy")}
      INSERT INTO legacy.migrations (version, name) VALUES (1, '${v1.name}');`);
    const { definition: _, ...legacy } = head("old");
    await db.pool.query(
      "INSERT INTO legacy.sessions (session_id, agent, head, version, inbox_cursor, last_inbox_seq) VALUES ('old', $1, $2, 1, 0, 1)",
      [legacy.agent, JSON.stringify(legacy)],
    );
    await db.pool.query(
      `INSERT INTO legacy.inbox (session_id, seq, entry) VALUES ('old', 1, '{"kind":"message","text":"hi","messageId":null}')`,
    );
    expect(await migrate(db.pool, { schema: "legacy" })).toEqual({ applied: [2] });
    const row = await db.pool.query(
      "SELECT fingerprint, definition_waiting FROM legacy.sessions WHERE session_id = 'old'",
    );
    expect(row.rows).toEqual([{ fingerprint: "", definition_waiting: false }]);
    const store = new PostgresStore({ pool: db.pool, schema: "legacy" });
    expect((await store.loadSession("old"))?.head).toEqual(legacy);
    const lease = await store.acquireLease({
      workerId: "w",
      ttlMs: 5_000,
      agents: [legacy.agent],
      fingerprints: ["fp-new"],
    });
    expect(lease?.sessionId).toBe("old");
  });

  it("refuses a schema name that is not a plain identifier, creating nothing", async () => {
    for (const schema of ["Bad", "x; DROP TABLE y", "1abc", "a".repeat(51), ""]) {
      await expect(migrate(db.pool, { schema })).rejects.toSatisfy(ConfigurationError.isInstance);
      expect(() => new PostgresStore({ pool: db.pool, schema })).toThrow(/schema name/);
    }
    const found = await db.pool.query("SELECT count(*)::int AS n FROM pg_namespace WHERE nspname ILIKE '%drop%'");
    expect(found.rows[0].n).toBe(0);
  });

  it("prints SQL that builds the same schema, and migrate then finds nothing to do", async () => {
    const sql = migrationSql({ schema: "printed" });
    expect(sql).toContain("CREATE TABLE printed.sessions");
    await db.pool.query(sql);
    expect(await tables("printed")).toEqual([
      "definition_announcements",
      "events",
      "history",
      "inbox",
      "migrations",
      "sessions",
    ]);
    expect(await migrate(db.pool, { schema: "printed" })).toEqual({ applied: [] });
  });
});
