import { describe, expect, it } from "vitest";
import {
  InvalidInputError,
  LeaseLostError,
  SessionNotFoundError,
  SessionStateError,
  VersionConflictError,
} from "@durable-agents/core";
import { postgresRawReader } from "../src/testing/index.js";
import { AGENT, created, delta, head, item, newId, useDatabase } from "./helpers.js";

const db = useDatabase();

/** A session of an agent of its own, made runnable with SQL and leased by "w1". */
async function leased(sessionId: string) {
  const store = db.store();
  await store.createSession({ head: head(sessionId), events: [created()] });
  await db.pool.query("UPDATE durable_agents.sessions SET runnable = true, agent = $1 WHERE session_id = $1", [
    sessionId,
  ]);
  const lease = await store.acquireLease({ workerId: "w1", ttlMs: 30_000, agents: [sessionId] });
  expect(lease?.sessionId).toBe(sessionId);
  return { store, lease: lease! };
}

describe("createSession and loadSession", () => {
  it("writes the session row, its events and the first inbox entry in one go", async () => {
    const store = db.store();
    const id = newId();
    const entry = { kind: "message" as const, text: "hello", messageId: "m1" };
    const result = await store.createSession({
      head: head(id),
      events: [created(), { type: "message_queued", data: { text: "hello", position: 1 } }],
      inbox: { entry, dedupeKey: "m1" },
    });
    expect(result).toEqual({ version: 1, lastEventSeq: 2 });

    const raw = postgresRawReader(db.pool);
    const row = await raw.session(id);
    expect(row).toEqual({
      sessionId: id,
      agent: AGENT,
      version: 1,
      fence: 0,
      leaseOwner: null,
      leaseExpiresAt: null,
      runnable: false,
      inboxCursor: 0,
      fingerprint: null,
      definitionWaiting: false,
      head: head(id),
    });
    expect(await raw.events(id)).toEqual([
      { seq: 1, type: "session_created", data: { agent: AGENT } },
      { seq: 2, type: "message_queued", data: { text: "hello", position: 1 } },
    ]);
    expect(await raw.inbox(id)).toEqual([{ seq: 1, dedupeKey: "m1", entry }]);
    expect(await store.loadSession(id)).toEqual({ head: head(id), version: 1, lastEventSeq: 2 });
    // The same dedupe key later is a duplicate of the first entry.
    expect(await store.enqueue(id, entry, "m1")).toEqual({ seq: 1, duplicate: true });
  });

  it("refuses an ID that exists with SessionStateError and changes nothing", async () => {
    const store = db.store();
    const id = newId();
    await store.createSession({ head: head(id), events: [created()] });
    await expect(
      store.createSession({ head: head(id, { turnCount: 9 }), events: [created(), created()] }),
    ).rejects.toSatisfy(SessionStateError.isInstance);
    const loaded = await store.loadSession(id);
    expect(loaded).toEqual({ head: head(id), version: 1, lastEventSeq: 1 });
    expect(await postgresRawReader(db.pool).events(id)).toHaveLength(1);
  });

  it("creates concurrently only once", async () => {
    const store = db.store();
    const id = newId();
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, () => store.createSession({ head: head(id), events: [created()] })),
    );
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    for (const result of results) {
      if (result.status === "rejected") expect(SessionStateError.isInstance(result.reason)).toBe(true);
    }
    expect(await postgresRawReader(db.pool).events(id)).toHaveLength(1);
  });

  it("answers null and empty lists for a session that does not exist", async () => {
    const store = db.store();
    expect(await store.loadSession("nobody")).toBeNull();
    expect(await store.readHistory("nobody")).toEqual([]);
    expect(await store.readEvents("nobody", 0)).toEqual([]);
    expect(await store.readInbox("nobody", 0)).toEqual([]);
  });

  it("rejects malformed input with InvalidInputError and writes nothing", async () => {
    const store = db.store();
    const id = newId();
    await expect(store.createSession({ head: head(id), events: [{ type: "x" } as never] })).rejects.toSatisfy(
      InvalidInputError.isInstance,
    );
    await expect(store.createSession({ head: { ...head(id), agent: "" }, events: [] })).rejects.toSatisfy(
      InvalidInputError.isInstance,
    );
    const long = "x".repeat(1001);
    await expect(store.createSession({ head: head(long), events: [] })).rejects.toSatisfy(InvalidInputError.isInstance);
    expect(await store.loadSession(id)).toBeNull();
    expect(await store.loadSession(long)).toBeNull();
    await expect(store.readHistory(id, -1)).rejects.toSatisfy(InvalidInputError.isInstance);
    await expect(store.readEvents(id, 0, 0)).rejects.toSatisfy(InvalidInputError.isInstance);
    await expect(store.enqueue(id, { kind: "nope" } as never, null)).rejects.toSatisfy(InvalidInputError.isInstance);
  });
});

describe("commit", () => {
  it("stores the head, bumps the version, appends history and events at the next positions", async () => {
    const id = newId();
    const { store, lease } = await leased(id);
    const h2 = head(id, { historyLength: 2, turnCount: 1, status: "running", inboxCursor: 0 });
    const first = await store.commit({
      sessionId: id,
      fence: lease.fence,
      expectedVersion: 1,
      head: h2,
      runnable: true,
      appendHistory: [item("a"), item("b")],
      events: [delta("x"), delta("y")],
    });
    expect(first).toEqual({ version: 2, lastEventSeq: 3 });
    const h3 = head(id, { historyLength: 3, turnCount: 1 });
    const second = await store.commit({
      sessionId: id,
      fence: lease.fence,
      expectedVersion: 2,
      head: h3,
      runnable: false,
      appendHistory: [item("c")],
      events: [delta("z")],
    });
    expect(second).toEqual({ version: 3, lastEventSeq: 4 });

    expect(await store.loadSession(id)).toEqual({ head: h3, version: 3, lastEventSeq: 4 });
    expect(await store.readHistory(id)).toEqual([item("a"), item("b"), item("c")]);
    expect(await store.readHistory(id, 2)).toEqual([item("c")]);
    const rows = await db.pool.query(
      "SELECT position, item->'display'->>'text' AS text FROM durable_agents.history WHERE session_id = $1 ORDER BY position",
      [id],
    );
    expect(rows.rows).toEqual([
      { position: "0", text: "a" },
      { position: "1", text: "b" },
      { position: "2", text: "c" },
    ]);
    const raw = await postgresRawReader(db.pool).session(id);
    expect(raw).toMatchObject({ version: 3, runnable: false, head: h3, leaseOwner: "w1", fence: lease.fence });
    expect(raw?.leaseExpiresAt).toBe(lease.expiresAt);
    expect((await store.readEvents(id, 0)).map((event) => event.seq)).toEqual([1, 2, 3, 4]);
  });

  it("appends events only, leaving the version, when there is no head", async () => {
    const id = newId();
    const { store, lease } = await leased(id);
    const result = await store.commit({ sessionId: id, fence: lease.fence, expectedVersion: 1, events: [delta("q")] });
    expect(result).toEqual({ version: 1, lastEventSeq: 2 });
    const raw = await postgresRawReader(db.pool).session(id);
    expect(raw).toMatchObject({ version: 1, runnable: true, head: head(id) });
    expect(await store.readEvents(id, 1)).toMatchObject([{ seq: 2, type: "text_delta", data: { text: "q" } }]);
  });

  it("refuses a moved version with VersionConflictError and writes nothing", async () => {
    const id = newId();
    const { store, lease } = await leased(id);
    await store.commit({
      sessionId: id,
      fence: lease.fence,
      expectedVersion: 1,
      head: head(id),
      runnable: true,
      events: [],
    });
    const error = await store
      .commit({
        sessionId: id,
        fence: lease.fence,
        expectedVersion: 1,
        head: head(id, { turnCount: 5, historyLength: 1 }),
        runnable: false,
        appendHistory: [item("lost")],
        events: [delta("lost")],
      })
      .catch((caught: unknown) => caught);
    expect(VersionConflictError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ expected: 1, actual: 2 });
    expect(await store.loadSession(id)).toEqual({ head: head(id), version: 2, lastEventSeq: 1 });
    expect(await store.readHistory(id)).toEqual([]);
  });

  it("lets exactly one of two racing commits on the same version through", async () => {
    const id = newId();
    const { store, lease } = await leased(id);
    const attempt = (n: number) =>
      store.commit({
        sessionId: id,
        fence: lease.fence,
        expectedVersion: 1,
        head: head(id, { turnCount: n, historyLength: 1 }),
        runnable: true,
        appendHistory: [item(`from ${n}`)],
        events: [delta(`from ${n}`)],
      });
    const results = await Promise.allSettled([attempt(1), attempt(2), attempt(3)]);
    const won = results.filter((result) => result.status === "fulfilled");
    expect(won).toHaveLength(1);
    const loaded = await store.loadSession(id);
    expect(loaded?.version).toBe(2);
    expect(await store.readHistory(id)).toEqual([item(`from ${loaded?.head.turnCount}`)]);
    expect(await store.readEvents(id, 1)).toHaveLength(1);
  });

  it("refuses a commit without the live lease with LeaseLostError", async () => {
    const store = db.store();
    const id = newId();
    await store.createSession({ head: head(id), events: [] });
    // Never leased (fence 0, no owner).
    await expect(
      store.commit({ sessionId: id, fence: 0, expectedVersion: 1, head: head(id), runnable: false, events: [] }),
    ).rejects.toSatisfy(LeaseLostError.isInstance);
    const other = newId();
    const { lease } = await leased(other);
    // A fence that is not the session's.
    await expect(
      store.commit({ sessionId: other, fence: lease.fence + 1, expectedVersion: 1, events: [delta("x")] }),
    ).rejects.toSatisfy(LeaseLostError.isInstance);
    // Released: the fence matches but nobody holds the lease.
    await store.releaseLease(lease);
    await expect(
      store.commit({ sessionId: other, fence: lease.fence, expectedVersion: 1, events: [delta("x")] }),
    ).rejects.toSatisfy(LeaseLostError.isInstance);
    expect(await store.readEvents(other, 0)).toHaveLength(1);
  });

  it("reports the lease before the version, and a missing session as SessionNotFoundError", async () => {
    const id = newId();
    const { store, lease } = await leased(id);
    await expect(
      store.commit({ sessionId: id, fence: lease.fence + 7, expectedVersion: 42, events: [] }),
    ).rejects.toSatisfy(LeaseLostError.isInstance);
    await expect(store.commit({ sessionId: "ghost", fence: 1, expectedVersion: 1, events: [] })).rejects.toSatisfy(
      SessionNotFoundError.isInstance,
    );
  });

  it("rejects malformed commits with InvalidInputError", async () => {
    const id = newId();
    const { store, lease } = await leased(id);
    const base = { sessionId: id, fence: lease.fence, expectedVersion: 1, events: [] };
    await expect(store.commit({ ...base, head: head(id) })).rejects.toSatisfy(InvalidInputError.isInstance);
    await expect(store.commit({ ...base, head: head("other"), runnable: true })).rejects.toSatisfy(
      InvalidInputError.isInstance,
    );
    await expect(store.commit({ ...base, appendHistory: [item("x")] })).rejects.toSatisfy(InvalidInputError.isInstance);
    expect((await store.loadSession(id))?.version).toBe(1);
  });
});
