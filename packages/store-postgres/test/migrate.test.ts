import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ConfigurationError } from "@durable-agents/core";
import { decodeHead, PostgresStore, migrate, migrationSql, migrations } from "../src/index.js";
import type { SessionHead } from "@durable-agents/core";
import { delta, head, item, newId, useDatabase } from "./helpers.js";

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
      "event_batches",
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
    expect(await migrate(db.pool, { schema: "legacy" })).toEqual({
      applied: migrations.slice(1).map((m) => m.version),
    });
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

  it("upgrades a schema of version 2 (run state in the head, one row per event): heads, events and history load as they were, and commits go on", async () => {
    const [v1, v2] = [migrations[0]!, migrations[1]!];
    await db.pool.query(`CREATE SCHEMA legacy2;
      CREATE TABLE legacy2.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now());
      ${v1.sql("legacy2")}
      ${v2.sql("legacy2")}
      INSERT INTO legacy2.migrations (version, name) VALUES (1, '${v1.name}'), (2, '${v2.name}');`);
    // A session in a turn, its run state inline in the head, three events and one history item.
    const runState = `old-state-${"z".repeat(2500)}`;
    const old = head("mid", {
      status: "running",
      historyLength: 1,
      turn: { turnId: "turn-1", number: 1, runState, calls: [], steps: [] } as unknown as SessionHead["turn"],
    });
    await db.pool.query(
      `INSERT INTO legacy2.sessions (session_id, agent, head, version, inbox_cursor, last_inbox_seq, last_event_seq, history_length, runnable, fingerprint)
       VALUES ('mid', $1, $2, 4, 1, 1, 3, 1, true, 'fp')`,
      [old.agent, JSON.stringify(old)],
    );
    await db.pool.query(
      `INSERT INTO legacy2.events (session_id, seq, at, type, data) VALUES
        ('mid', 1, '2026-01-01T00:00:01Z', 'session_created', '{"agent":"a"}'),
        ('mid', 2, '2026-01-01T00:00:02Z', 'turn_started', '{"turnId":"turn-1"}'),
        ('mid', 3, '2026-01-01T00:00:02Z', 'text_delta', '{"turnId":"turn-1","text":"hi"}')`,
    );
    await db.pool.query(`INSERT INTO legacy2.history (session_id, position, item) VALUES ('mid', 0, $1)`, [
      JSON.stringify(item("hello")),
    ]);
    await db.pool.query(
      `INSERT INTO legacy2.inbox (session_id, seq, entry) VALUES ('mid', 1, '{"kind":"message","text":"hello","messageId":null}')`,
    );
    expect(await migrate(db.pool, { schema: "legacy2" })).toEqual({
      applied: migrations.slice(2).map((m) => m.version),
    });

    const store = new PostgresStore({ pool: db.pool, schema: "legacy2" });
    expect(await store.loadSession("mid")).toEqual({ head: old, version: 4, lastEventSeq: 3 });
    const events = await store.readEvents("mid", 0);
    expect(events.map((e) => [e.seq, e.at, e.type])).toEqual([
      [1, "2026-01-01T00:00:01.000Z", "session_created"],
      [2, "2026-01-01T00:00:02.000Z", "turn_started"],
      [3, "2026-01-01T00:00:02.000Z", "text_delta"],
    ]);
    expect(events[2]!.data).toEqual({ turnId: "turn-1", text: "hi" });
    expect((await store.readEvents("mid", 1, 1)).map((e) => e.seq)).toEqual([2]);
    expect(await store.readHistory("mid")).toEqual([item("hello")]);
    expect((await store.readInbox("mid", 0)).map((i) => i.seq)).toEqual([1]);

    // A worker takes it over and commits: the events go on from seq 4, the run state moves to its column.
    const lease = (await store.acquireLease({
      workerId: "w",
      ttlMs: 5_000,
      agents: [old.agent],
      fingerprints: ["fp"],
    }))!;
    expect(lease.sessionId).toBe("mid");
    const next = { ...old, historyLength: 2 };
    await store.commit({
      sessionId: "mid",
      fence: lease.fence,
      expectedVersion: 4,
      head: next,
      runnable: true,
      appendHistory: [item("more")],
      events: [delta("a"), delta("b")],
    });
    expect(await store.loadSession("mid")).toEqual({ head: next, version: 5, lastEventSeq: 5 });
    expect((await store.readEvents("mid", 3)).map((e) => [e.seq, (e.data as { text: string }).text])).toEqual([
      [4, "a"],
      [5, "b"],
    ]);
    // The head written by the commit is json (the default), head_z (migration 7) stays empty.
    const row = await db.pool.query("SELECT head, head_z, run_state FROM legacy2.sessions WHERE session_id = 'mid'");
    expect(row.rows[0].head_z).toBeNull();
    expect(row.rows[0].head.turn.runState).toBeNull();
    expect(row.rows[0].run_state).toBe(runState);
    // A store that compresses rewrites it into head_z on its next commit, and the default store reads that.
    const compressing = new PostgresStore({ pool: db.pool, schema: "legacy2", compressHeads: true });
    await compressing.commit({
      sessionId: "mid",
      fence: lease.fence,
      expectedVersion: 5,
      head: next,
      runnable: true,
      events: [],
    });
    const packed = await db.pool.query("SELECT head, head_z FROM legacy2.sessions WHERE session_id = 'mid'");
    expect(packed.rows[0].head).toBeNull();
    expect(decodeHead(packed.rows[0].head_z).turn?.runState).toBeNull();
    expect(await store.loadSession("mid")).toEqual({ head: next, version: 6, lastEventSeq: 5 });
    // The events view lists old and new events one per row; deleting the session deletes its rows.
    const view = await db.pool.query("SELECT seq::int FROM legacy2.events WHERE session_id = 'mid' ORDER BY seq");
    expect(view.rows.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    await db.pool.query("DELETE FROM legacy2.sessions WHERE session_id = 'mid'");
    for (const table of ["history", "event_batches", "inbox"]) {
      const n = await db.pool.query(`SELECT count(*)::int AS n FROM legacy2.${table}`);
      expect(n.rows[0].n, table).toBe(0);
    }
  });

  it("keeps the SQL of every shipped migration as it was (a schema migrated with it must not differ from a new one)", () => {
    const digests = migrations.map((m) => [
      m.version,
      createHash("sha256").update(m.sql("durable_agents")).digest("hex"),
    ]);
    expect(digests).toEqual([
      [1, "43daa1fca3d0f366d27409e88f798a0f018a934660aa0e865b1fd28093a80e9b"],
      [2, "912eb039747f18ac78a6439b6920d42599ee7f522b4fe2ce669815af6bd884eb"],
      [3, "7d50b330a161dbbd40b93a095e726124ab630ec0fadd3f25d46d96349827575f"],
      [4, "acef9fd21fdb19f457d718dc9b35d5008b381433212bbecb1fe117987a5f7cee"],
      [5, "261bac0b1cb3c31a3a871538c5ad29eceb17c6a7291b2c4aaab967c9fea644d8"],
      [6, "16f323e3c8dab6f24ed12d4c31d9a8716170a55f52792a5dcaab72d4955afbf9"],
      [7, "786282e4a99ac783d7aaa4ff3cb4fe780a64179fa3b1110ba165fb1ca5505db3"],
    ]);
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
      "event_batches",
      "events",
      "history",
      "inbox",
      "migrations",
      "sessions",
    ]);
    expect(await migrate(db.pool, { schema: "printed" })).toEqual({ applied: [] });
  });
});
