import pg from "pg";
import { describe, expect, it } from "vitest";
import { SessionNotFoundError, type EnqueueResult, type InboxEntry } from "@durable-agents/core";
import { PostgresStore } from "../src/index.js";
import { postgresRawReader } from "../src/testing/index.js";
import { head, newId, tableBarrier, useDatabase } from "./helpers.js";

const db = useDatabase();
const message = (text: string): InboxEntry => ({ kind: "message", text, messageId: null });

describe("inbox", () => {
  it("appends in order with seqs 1..n and reads after a cursor", async () => {
    const store = db.store();
    const id = newId();
    await store.createSession({ head: head(id), events: [] });
    const resolution: InboxEntry = { kind: "resolution", interruptId: "i1", approved: false, message: "no" };
    expect(await store.enqueue(id, message("one"), null)).toEqual({ seq: 1, duplicate: false });
    expect(await store.enqueue(id, resolution, "i1")).toEqual({ seq: 2, duplicate: false });
    expect(await store.enqueue(id, message("three"), "k3")).toEqual({ seq: 3, duplicate: false });
    expect(await store.readInbox(id, 0)).toEqual([
      { seq: 1, ...message("one") },
      { seq: 2, ...resolution },
      { seq: 3, ...message("three") },
    ]);
    expect(await store.readInbox(id, 2)).toEqual([{ seq: 3, ...message("three") }]);
    expect(await store.readInbox(id, 3)).toEqual([]);
    expect(await postgresRawReader(db.pool).inbox(id)).toEqual([
      { seq: 1, dedupeKey: null, entry: message("one") },
      { seq: 2, dedupeKey: "i1", entry: resolution },
      { seq: 3, dedupeKey: "k3", entry: message("three") },
    ]);
  });

  it("answers a known dedupe key with the first seq and writes nothing", async () => {
    const store = db.store();
    const id = newId();
    await store.createSession({ head: head(id), events: [] });
    await store.enqueue(id, message("a"), "key-a");
    await store.enqueue(id, message("b"), null);
    expect(await store.enqueue(id, message("a again"), "key-a")).toEqual({ seq: 1, duplicate: true });
    expect(await store.enqueue(id, message("c"), null)).toEqual({ seq: 3, duplicate: false });
    const raw = await postgresRawReader(db.pool).inbox(id);
    expect(raw.map((row) => row.entry)).toEqual([message("a"), message("b"), message("c")]);
    // Dedupe keys are per session.
    const other = newId();
    await store.createSession({ head: head(other), events: [] });
    expect(await store.enqueue(other, message("a"), "key-a")).toEqual({ seq: 1, duplicate: false });
  });

  it("refuses a missing session with SessionNotFoundError", async () => {
    const store = db.store();
    await expect(store.enqueue("missing", message("x"), "k")).rejects.toSatisfy(SessionNotFoundError.isInstance);
    const rows = await db.pool.query(
      "SELECT count(*)::int AS n FROM durable_agents.inbox WHERE session_id = 'missing'",
    );
    expect(rows.rows[0].n).toBe(0);
  });

  it("gives concurrent enqueues from many connections distinct, gap-free seqs, and one entry per dedupe key", async () => {
    const id = newId();
    await db.store().createSession({ head: head(id), events: [] });
    const url = (db.pool.options as { connectionString: string }).connectionString;
    const connectionsPerPool = 5;
    const pools = Array.from({ length: 3 }, () => new pg.Pool({ connectionString: url, max: connectionsPerPool }));
    // A connection the server closes while its pool ends (the database is dropped after the file) is no test failure.
    for (const pool of pools) pool.on("error", () => {});
    const stores = pools.map((pool) => new PostgresStore({ pool }));
    try {
      // The enqueues queue behind a lock on the sessions table until every connection of the three
      // pools waits there: they race at the database, not one after another.
      const barrier = await tableBarrier(db.pool, "durable_agents.sessions");
      let calls: Promise<EnqueueResult>[];
      try {
        // 30 distinct messages, and each of 5 keys sent 4 times at once.
        calls = [
          ...Array.from({ length: 30 }, (_, n) => stores[n % 3]!.enqueue(id, message(`m${n}`), null)),
          ...Array.from({ length: 20 }, (_, n) => stores[n % 3]!.enqueue(id, message(`k${n % 5}`), `key-${n % 5}`)),
        ];
        const queued = await barrier.queued(pools.length * connectionsPerPool);
        expect(queued, "enqueue statements waiting at the database at once").toBeGreaterThan(1);
      } finally {
        await barrier.release();
      }
      const results = await Promise.all(calls);
      const fresh = results.filter((result) => !result.duplicate).map((result) => result.seq);
      expect(fresh.sort((a, b) => a - b)).toEqual(Array.from({ length: 35 }, (_, n) => n + 1));
      const byKey = new Map<string, Set<number>>();
      results.slice(30).forEach((result, n) => {
        const key = `key-${n % 5}`;
        byKey.set(key, (byKey.get(key) ?? new Set()).add(result.seq));
      });
      for (const seqs of byKey.values()) expect(seqs.size).toBe(1);
      expect(results.slice(30).filter((result) => result.duplicate)).toHaveLength(15);
      const rows = await postgresRawReader(db.pool).inbox(id);
      expect(rows.map((row) => row.seq)).toEqual(Array.from({ length: 35 }, (_, n) => n + 1));
      expect((await db.store().readInbox(id, 0)).map((entry) => entry.seq)).toEqual(rows.map((row) => row.seq));
    } finally {
      await Promise.all(stores.map((store) => store.close()));
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });
});

describe("inbox notices and a worker", () => {
  it("drives each message of a session it holds from the message's notice, with no inbox read", async () => {
    const { defineSession, SessionClient, Worker } = await import("@durable-agents/core");
    const { ScriptedRunner } = await import("@durable-agents/core/testing");
    // The worker's own store counts its inbox reads; the client's checks read through another one.
    const workerStore = db.store();
    let reads = 0;
    const readInbox = workerStore.readInbox.bind(workerStore);
    workerStore.readInbox = (...args) => {
      reads += 1;
      return readInbox(...args);
    };
    const agent = newId("carry");
    const definition = defineSession({ name: agent, runner: new ScriptedRunner({ tools: [] }) });
    const worker = new Worker({
      store: workerStore,
      sessions: [definition],
      lingerMs: 20_000,
      leaseTtlMs: 60_000,
      pollIntervalMs: 30_000,
    }).start();
    try {
      const client = new SessionClient({ store: db.store() });
      const { sessionId } = await client.startSession({ agent, message: "say one" });
      await client.waitUntilIdle(sessionId);
      const before = reads;
      for (const text of ["say two", "say three", "say four"]) {
        await client.sendMessage(sessionId, text);
        await client.waitUntilIdle(sessionId);
      }
      expect(reads - before).toBe(0);
      const user = (await client.snapshot(sessionId)).messages.filter((item) => item.role === "user");
      expect(user.map((item) => item.text)).toEqual(["say one", "say two", "say three", "say four"]);
    } finally {
      await worker.stop();
    }
  });
});
