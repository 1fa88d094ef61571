import { describe, expect, it } from "vitest";
import {
  ConfigurationError,
  LeaseLostError,
  SessionNotFoundError,
  VersionConflictError,
  type SessionHead,
} from "@durable-agents/core";
import type { StoreNotification } from "@durable-agents/core/engine";
import { PostgresStore } from "../src/index.js";
import { delta, head, item, leasedSession, newId, useDatabase } from "./helpers.js";

const db = useDatabase();

/** A session with a live lease of worker "w" (its agent is its own ID, so no other test's lease takes it): its fence. */
const leased = (sessionId: string): Promise<number> => leasedSession(db, sessionId);

/** A store whose statements are counted by name (each of the store's statements is a named one). */
function countingStore(options: { commitsInFlight?: number } = {}): {
  store: PostgresStore;
  statements: string[];
} {
  const statements: string[] = [];
  const pool = db.pool;
  const query = (config: { name?: string }, ...rest: unknown[]) => {
    statements.push((config.name ?? "").replace(/^durable_agents_durable_agents_/, ""));
    return (pool.query as (...args: unknown[]) => unknown).call(pool, config, ...rest);
  };
  // The pool itself for everything else (connect, options), so its own state stays in one object.
  const counted = new Proxy(pool, {
    get: (target, name) => {
      if (name === "query") return query;
      const value = Reflect.get(target, name, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const store = new PostgresStore({ pool: counted, ...options });
  return { store, statements };
}

const running = (sessionId: string, n: number): SessionHead => head(sessionId, { status: "running", historyLength: n });

describe("group commit", () => {
  it("commits made while one is out go together as one statement, each applied with its own history, events and version", async () => {
    const ids = Array.from({ length: 12 }, () => newId("g"));
    const fences = await Promise.all(ids.map(leased));
    const { store, statements } = countingStore({ commitsInFlight: 1 });
    const seen: StoreNotification[] = [];
    const stop = store.subscribe((n) => seen.push(n));
    await store.listening();
    const results = await Promise.all(
      ids.map((id, i) =>
        store.commit({
          sessionId: id,
          fence: fences[i]!,
          expectedVersion: 1,
          head: running(id, 2),
          runnable: i % 2 === 0,
          appendHistory: [item(`${id} a`), item(`${id} b`)],
          events: [delta(`${id} x`), delta(`${id} y`)],
          ...(i === 0 ? { release: true } : { leaseTtlMs: 5000 }),
        }),
      ),
    );
    // The first went alone, the other 11 waited for it and went as one statement.
    expect(statements.filter((s) => s === "commit")).toHaveLength(1);
    expect(statements.filter((s) => s === "commitGroup")).toHaveLength(1);
    for (const [i, id] of ids.entries()) {
      expect(results[i]).toMatchObject({ version: 2, lastEventSeq: 3 });
      if (i === 0) expect(results[i]!.released).toBe(true);
      else expect(results[i]!.leaseExpiresAt).toBeGreaterThan(Date.now());
      const loaded = await store.loadSession(id);
      expect(loaded).toMatchObject({ version: 2, lastEventSeq: 3, head: { status: "running", historyLength: 2 } });
      expect((await store.readHistory(id)).map((h) => h.display)).toEqual([
        { role: "user", text: `${id} a` },
        { role: "user", text: `${id} b` },
      ]);
      expect((await store.readEvents(id, 1)).map((e) => [e.seq, e.data])).toEqual([
        [2, { turnId: "t1", text: `${id} x` }],
        [3, { turnId: "t1", text: `${id} y` }],
      ]);
    }
    const row = await db.pool.query("SELECT runnable, lease_owner FROM durable_agents.sessions WHERE session_id = $1", [
      ids[0],
    ]);
    expect(row.rows[0]).toEqual({ runnable: true, lease_owner: null });
    // Every session's events reached a subscriber, carried by the notice.
    await expect.poll(() => new Set(seen.flatMap((n) => (n.kind === "events" ? [n.sessionId] : []))).size).toBe(12);
    for (const n of seen) if (n.kind === "events") expect(n.events?.map((e) => e.seq)).toEqual([2, 3]);
    stop();
    await store.close();
  });

  it("in a group, a moved version, a lost lease and an unknown session are refused with their own errors; the rest is applied", async () => {
    const ids = Array.from({ length: 5 }, () => newId("r"));
    const fences = await Promise.all(ids.map(leased));
    const { store, statements } = countingStore({ commitsInFlight: 1 });
    const commit = (id: string, fence: number, expectedVersion: number) =>
      store.commit({
        sessionId: id,
        fence,
        expectedVersion,
        head: running(id, 0),
        runnable: true,
        events: [delta("z")],
      });
    const settled = await Promise.allSettled([
      commit(ids[0]!, fences[0]!, 1), // alone: the others wait for it
      commit(ids[1]!, fences[1]!, 1),
      commit(ids[2]!, fences[2]!, 7),
      commit(ids[3]!, fences[3]! + 1, 1),
      commit("no-such-session", 1, 1),
      commit(ids[4]!, fences[4]!, 1),
    ]);
    expect(statements.filter((s) => s === "commitGroup")).toHaveLength(1);
    expect(settled.map((s) => s.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "rejected",
      "rejected",
      "fulfilled",
    ]);
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(VersionConflictError);
    expect((settled[3] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    expect((settled[4] as PromiseRejectedResult).reason).toBeInstanceOf(SessionNotFoundError);
    // The refused ones changed nothing.
    for (const i of [2, 3]) expect(await store.loadSession(ids[i]!)).toMatchObject({ version: 1, lastEventSeq: 1 });
    for (const i of [0, 1, 4]) expect(await store.loadSession(ids[i]!)).toMatchObject({ version: 2, lastEventSeq: 2 });
    await store.close();
  });

  it("a group PostgreSQL refuses as a whole is rolled back and each commit goes again alone, for its own answer", async () => {
    const ids = Array.from({ length: 4 }, () => newId("p"));
    const fences = await Promise.all(ids.map(leased));
    const poisoned = ids[2]!;
    // A trigger that refuses one session's history: the group statement fails as a whole.
    await db.pool.query(`
CREATE OR REPLACE FUNCTION durable_agents.refuse_poisoned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.session_id = '${poisoned}' THEN RAISE EXCEPTION 'poisoned history'; END IF; RETURN NEW; END $$;
CREATE TRIGGER refuse_poisoned BEFORE INSERT ON durable_agents.history FOR EACH ROW EXECUTE FUNCTION durable_agents.refuse_poisoned();`);
    try {
      const { store, statements } = countingStore({ commitsInFlight: 1 });
      const settled = await Promise.allSettled(
        ids.map((id, i) =>
          store.commit({
            sessionId: id,
            fence: fences[i]!,
            expectedVersion: 1,
            head: running(id, 1),
            runnable: true,
            appendHistory: [item("h")],
            events: [delta("e")],
          }),
        ),
      );
      expect(statements).toEqual(["commit", "commitGroup", "commit", "commit", "commit"]);
      expect(settled.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
      expect(String((settled[2] as PromiseRejectedResult).reason)).toMatch(/poisoned history/);
      for (const [i, id] of ids.entries()) {
        const stored = await store.loadSession(id);
        expect(stored?.version).toBe(i === 2 ? 1 : 2);
        expect(await store.readHistory(id)).toHaveLength(i === 2 ? 0 : 1);
      }
      await store.close();
    } finally {
      await db.pool.query("DROP TRIGGER refuse_poisoned ON durable_agents.history");
    }
  });

  it("a commit in a group writes what the same commit alone writes (every column of the row, history, events)", async () => {
    // The same five commits, in the same order, once each alone and once grouped (after a first
    // commit that goes alone, so the five wait and go together): the rows must match column by column.
    const variants = [
      (id: string) => ({
        head: running(id, 1),
        runnable: true,
        appendHistory: [item(`${id} h`)],
        events: [delta("a")],
      }),
      (id: string) => ({
        head: head(id, {
          status: "running",
          definition: { fingerprint: "fp-1", waiting: null },
          turn: {
            turnId: "turn-1",
            number: 1,
            runState: "x".repeat(40),
            calls: [],
            steps: [],
          } as unknown as SessionHead["turn"],
        }),
        runnable: false,
        events: [delta("b"), delta("c")],
        leaseTtlMs: 7000,
      }),
      (_id: string) => ({ events: [delta("events only")] }),
      (id: string) => ({ head: running(id, 0), runnable: true, events: [], release: true }),
      (id: string) => ({ head: head(id, { inboxCursor: 3 }), runnable: false, events: [delta("d")], release: true }),
    ];
    const rowsOf = async (ids: string[]) => {
      const out = [];
      for (const id of ids) {
        const row = await db.pool.query(
          `SELECT head::text, head_z, run_state, version, fence, lease_owner, lease_expires_at IS NULL AS no_expiry,
             runnable, inbox_cursor, last_inbox_seq, last_event_seq, history_length, fingerprint, definition_waiting
           FROM durable_agents.sessions WHERE session_id = $1`,
          [id],
        );
        const history = await db.pool.query(
          "SELECT position, item::text FROM durable_agents.history WHERE session_id = $1 ORDER BY position",
          [id],
        );
        const events = await db.pool.query(
          "SELECT last_seq, events::text FROM durable_agents.event_batches WHERE session_id = $1 ORDER BY last_seq",
          [id],
        );
        // The texts name their own session: compare them with the ID taken out.
        out.push(
          JSON.parse(
            JSON.stringify({ row: row.rows[0], history: history.rows, events: events.rows }).replaceAll(id, "ID"),
          ),
        );
      }
      return out;
    };
    const run = async (inFlight: number, prefix: string) => {
      const first = newId(prefix);
      const ids = variants.map(() => newId(prefix));
      const fences = await Promise.all([first, ...ids].map(leased));
      const { store, statements } = countingStore({ commitsInFlight: inFlight });
      await Promise.all([
        store.commit({ sessionId: first, fence: fences[0]!, expectedVersion: 1, events: [delta("first")] }),
        ...ids.map((id, i) =>
          store.commit({ sessionId: id, fence: fences[i + 1]!, expectedVersion: 1, ...variants[i]!(id) }),
        ),
      ]);
      await store.close();
      return { rows: await rowsOf(ids), statements };
    };
    const alone = await run(Number.POSITIVE_INFINITY, "eqa");
    const grouped = await run(1, "eqg");
    expect(alone.statements).toEqual(["commit", "commit", "commit", "commit", "commit", "commit"]);
    expect(grouped.statements).toEqual(["commit", "commitGroup"]);
    expect(grouped.rows).toEqual(alone.rows);
    // and the commits did write something (the comparison is not of empty rows)
    expect(alone.rows.map((r) => r.row.version)).toEqual(["2", "2", "1", "2", "2"]);
    expect(alone.rows.map((r) => r.row.lease_owner)).toEqual(["w", "w", "w", null, null]);
  });

  it("a lone commit goes at once as the commit statement; commitsInFlight: Infinity never groups", async () => {
    const ids = Array.from({ length: 6 }, () => newId("l"));
    const fences = await Promise.all(ids.map(leased));
    const lone = countingStore();
    await lone.store.commit({ sessionId: ids[0]!, fence: fences[0]!, expectedVersion: 1, events: [delta("a")] });
    expect(lone.statements).toEqual(["commit"]);
    const apart = countingStore({ commitsInFlight: Number.POSITIVE_INFINITY });
    await Promise.all(
      ids
        .slice(1)
        .map((id, i) =>
          apart.store.commit({ sessionId: id, fence: fences[i + 1]!, expectedVersion: 1, events: [delta("b")] }),
        ),
    );
    expect(apart.statements).toEqual(["commit", "commit", "commit", "commit", "commit"]);
    await lone.store.close();
    await apart.store.close();
  });

  it("two commits of one session never share a group", async () => {
    const [a, b] = [newId("d"), newId("d")];
    const [fa, fb] = await Promise.all([leased(a), leased(b)]);
    const { store, statements } = countingStore({ commitsInFlight: 1 });
    // Events-only commits (no version check moves): a's second waits for a group of its own.
    const done = await Promise.all([
      store.commit({ sessionId: b, fence: fb, expectedVersion: 1, events: [delta("b1")] }),
      store.commit({ sessionId: a, fence: fa, expectedVersion: 1, events: [delta("a1")] }),
      store.commit({ sessionId: a, fence: fa, expectedVersion: 1, events: [delta("a2")] }),
    ]);
    expect(done.map((r) => r.lastEventSeq)).toEqual([2, 2, 3]);
    expect(statements).toEqual(["commit", "commit", "commit"]);
    expect((await store.readEvents(a, 1)).map((e) => (e.data as { text: string }).text)).toEqual(["a1", "a2"]);
    await store.close();
  });

  it("commitsInFlight must be a whole number of at least 1, or Infinity", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, "2"]) {
      expect(() => new PostgresStore({ pool: db.pool, commitsInFlight: bad as number })).toThrow(ConfigurationError);
    }
  });
});
