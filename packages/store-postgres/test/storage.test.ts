import { createHash, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { SessionHead } from "@durable-agents/core";
import { decodeHead, encodeHead } from "../src/index.js";
import { headDictionary1 } from "../src/head-codec.js";
import { created, delta, head, item, leasedSession, newId, useDatabase } from "./helpers.js";

const db = useDatabase();

/** A head in a turn whose run state is `runState` (only the fields this store looks at matter here). */
const inTurn = (sessionId: string, runState: string | null, changes: Partial<SessionHead> = {}): SessionHead =>
  head(sessionId, {
    status: "running",
    turn: { turnId: "turn-1", number: 1, runState, calls: [], steps: [] } as unknown as SessionHead["turn"],
    ...changes,
  });

/** A session with a live lease of worker "w": its fence. */
const leased = (sessionId: string): Promise<number> => leasedSession(db, sessionId);

/** The out-of-line values the sessions table's TOAST table holds (their IDs). */
async function toastValues(): Promise<string[]> {
  const toast = await db.pool.query(
    "SELECT reltoastrelid::regclass::text AS name FROM pg_class WHERE oid = 'durable_agents.sessions'::regclass",
  );
  const rows = await db.pool.query(`SELECT DISTINCT chunk_id::text AS id FROM ${toast.rows[0].name} ORDER BY 1`);
  return rows.rows.map((row) => row.id);
}

describe("what a commit writes", () => {
  it("keeps the run state in its own column, loads the head whole, and does not rewrite a run state that did not change", async () => {
    const store = db.store();
    const id = newId();
    const fence = await leased(id);
    const runState = `state-${"x".repeat(3000)}`;
    const first = inTurn(id, runState);
    await store.commit({ sessionId: id, fence, expectedVersion: 1, head: first, runnable: true, events: [] });
    expect((await store.loadSession(id))?.head).toEqual(first);
    const row = await db.pool.query(
      "SELECT head, head_z, run_state FROM durable_agents.sessions WHERE session_id = $1",
      [id],
    );
    // The default store writes json heads (compressHeads: false), the run state apart.
    expect(row.rows[0].head_z).toBeNull();
    expect(row.rows[0].head.turn.runState).toBeNull();
    expect(row.rows[0].run_state).toBe(runState);
    const stored = await toastValues();

    // A commit with the same run state (another step of the turn) leaves the stored value as it is.
    const second = inTurn(id, runState, { turnCount: 1 });
    await store.commit({ sessionId: id, fence, expectedVersion: 2, head: second, runnable: true, events: [] });
    expect((await store.loadSession(id))?.head).toEqual(second);
    expect(await toastValues()).toEqual(stored);

    // A new run state replaces it; a turn without one, or no turn, clears the column.
    const third = inTurn(id, `${runState}-next`);
    await store.commit({ sessionId: id, fence, expectedVersion: 3, head: third, runnable: true, events: [] });
    expect((await store.loadSession(id))?.head).toEqual(third);
    expect(await toastValues()).not.toEqual(stored);
    const fourth = inTurn(id, null);
    await store.commit({ sessionId: id, fence, expectedVersion: 4, head: fourth, runnable: true, events: [] });
    expect((await store.loadSession(id))?.head).toEqual(fourth);
    const idle = head(id, { turnCount: 1 });
    await store.commit({ sessionId: id, fence, expectedVersion: 5, head: idle, runnable: false, events: [] });
    expect((await store.loadSession(id))?.head).toEqual(idle);
    const cleared = await db.pool.query("SELECT run_state FROM durable_agents.sessions WHERE session_id = $1", [id]);
    expect(cleared.rows[0].run_state).toBeNull();
  });

  it("a long head is kept out of the row, so an update that leaves it as it is (lease, inbox, events) does not copy it", async () => {
    const store = db.store();
    const id = newId();
    const fence = await leased(id);
    // A head that still holds a long turn (the last one of 49 tool calls, say), with a run state.
    const calls = Array.from({ length: 60 }, (_, n) => ({
      toolCallId: `call_${n}_${"y".repeat(40)}`,
      // Random hex: the compressed head still passes 2 KB (hex compresses to about half).
      output: `record ${n} ${randomBytes(48).toString("hex")}`,
    }));
    const long = inTurn(id, `state-${"s".repeat(3000)}`, { turnCount: 1 });
    (long.turn as unknown as { calls: unknown[] }).calls = calls;
    const before = await toastValues();
    await store.commit({ sessionId: id, fence, expectedVersion: 1, head: long, runnable: true, events: [] });
    const values = await toastValues();
    expect(JSON.stringify(long).length).toBeGreaterThan(6_000);
    // The head and the run state are both out of the row: two new TOAST values.
    expect(values.filter((value) => !before.includes(value))).toHaveLength(2);
    await store.commit({ sessionId: id, fence, expectedVersion: 2, events: [delta("x")] });
    await store.enqueue(id, { kind: "message", text: "next", messageId: null }, null);
    expect(await toastValues()).toEqual(values);
    expect((await store.loadSession(id))?.head).toEqual(long);
  });

  it("an events-only commit keeps the run state; a session created in a turn keeps its run state too", async () => {
    const store = db.store();
    const id = newId();
    const runState = "r".repeat(500);
    await store.createSession({ head: inTurn(id, runState), events: [] });
    expect((await store.loadSession(id))?.head).toEqual(inTurn(id, runState));
    await db.pool.query("UPDATE durable_agents.sessions SET runnable = true, agent = $1 WHERE session_id = $1", [id]);
    const lease = (await store.acquireLease({ workerId: "w", ttlMs: 10_000, agents: [id] }))!;
    await store.commit({ sessionId: id, fence: lease.fence, expectedVersion: 1, events: [delta("a")] });
    expect((await store.loadSession(id))?.head).toEqual(inTurn(id, runState));
  });

  it("compressHeads: true writes the head compressed into head_z (json column empty); the default writes json; each store reads the other's rows", async () => {
    const compressing = db.store({ compressHeads: true });
    const plain = db.store();
    const id = newId();
    const fence = await leased(id);
    const calls = Array.from({ length: 2 }, (_, n) => ({
      toolCallId: `call_${n}`,
      status: "succeeded",
      output: randomBytes(32).toString("hex"),
    }));
    const first = inTurn(id, "state", { turnCount: 1 });
    (first.turn as unknown as { calls: unknown[] }).calls = calls;
    await compressing.commit({ sessionId: id, fence, expectedVersion: 1, head: first, runnable: true, events: [] });
    const columns = () =>
      db.pool.query(
        "SELECT head, head_z, octet_length(head_z) AS z FROM durable_agents.sessions WHERE session_id = $1",
        [id],
      );
    let row = (await columns()).rows[0];
    expect(row.head).toBeNull();
    expect(row.head_z[0]).toBe(1);
    const json = JSON.stringify({ ...first, turn: { ...first.turn, runState: null } });
    expect(row.z).toBeLessThan(json.length / 2);
    expect(await plain.loadSession(id)).toEqual({ head: first, version: 2, lastEventSeq: 1 });

    const second = { ...first, turnCount: 2 };
    await plain.commit({ sessionId: id, fence, expectedVersion: 2, head: second, runnable: true, events: [] });
    row = (await columns()).rows[0];
    expect(row.head_z).toBeNull();
    expect(row.head.turnCount).toBe(2);
    expect((await compressing.loadSession(id))?.head).toEqual(second);
    // An events-only commit leaves whichever column holds the head as it is.
    await compressing.commit({ sessionId: id, fence, expectedVersion: 3, events: [delta("x")] });
    expect((await columns()).rows[0].head.turnCount).toBe(2);
    expect((await compressing.loadSession(id))?.head).toEqual(second);
    // The table holds exactly one of the two.
    await expect(
      db.pool.query("UPDATE durable_agents.sessions SET head_z = $2 WHERE session_id = $1", [id, encodeHead("{}")]),
    ).rejects.toThrow(/sessions_one_head/);
    // A new session is created compressed too.
    const other = newId();
    await compressing.createSession({ head: head(other), events: [created()] });
    const created2 = await db.pool.query("SELECT head, head_z FROM durable_agents.sessions WHERE session_id = $1", [
      other,
    ]);
    expect(created2.rows[0].head).toBeNull();
    expect(decodeHead(created2.rows[0].head_z)).toEqual(head(other));
  });

  it("a head_z of an unknown format, or that does not inflate, is a StoredStateError on load", async () => {
    const store = db.store({ compressHeads: true });
    const id = newId();
    await store.createSession({ head: head(id), events: [created()] });
    const stored = (await db.pool.query("SELECT head_z FROM durable_agents.sessions WHERE session_id = $1", [id]))
      .rows[0].head_z as Buffer;
    const newer = Buffer.from(stored);
    newer[0] = 9;
    await db.pool.query("UPDATE durable_agents.sessions SET head_z = $2 WHERE session_id = $1", [id, newer]);
    await expect(store.loadSession(id)).rejects.toMatchObject({
      code: "stored_state",
      reason: "unknown_version",
      version: 9,
    });
    const broken = Buffer.concat([Buffer.from([1]), randomBytes(40)]);
    await db.pool.query("UPDATE durable_agents.sessions SET head_z = $2 WHERE session_id = $1", [id, broken]);
    await expect(store.loadSession(id)).rejects.toMatchObject({ code: "stored_state", reason: "malformed" });
  });

  it("format 1's dictionary is frozen (rows written with it are read back with it)", () => {
    expect(createHash("sha256").update(headDictionary1()).digest("hex")).toBe(
      "31265ce2a60678e78c54ef1a5f41edc02ee088162336e3346d38d7ccbc4967b5",
    );
    const json = JSON.stringify(head("s-1", { turnCount: 3 }));
    expect(decodeHead(encodeHead(json))).toEqual(JSON.parse(json));
  });

  it("writes a commit's events as one row, and reads them one by one across rows, from any seq, at most limit", async () => {
    const store = db.store();
    const id = newId();
    const fence = await leased(id);
    await store.commit({ sessionId: id, fence, expectedVersion: 1, events: [delta("a"), delta("b"), delta("c")] });
    await store.commit({ sessionId: id, fence, expectedVersion: 1, events: [delta("d")] });
    await store.commit({ sessionId: id, fence, expectedVersion: 1, events: [] });
    await store.commit({ sessionId: id, fence, expectedVersion: 1, events: [delta("e"), delta("f")] });
    const batches = await db.pool.query(
      "SELECT last_seq::int, json_array_length(events) AS n FROM durable_agents.event_batches WHERE session_id = $1 ORDER BY last_seq",
      [id],
    );
    expect(batches.rows).toEqual([
      { last_seq: 1, n: 1 },
      { last_seq: 4, n: 3 },
      { last_seq: 5, n: 1 },
      { last_seq: 7, n: 2 },
    ]);
    const text = (events: { data: unknown }[]) => events.map((e) => (e.data as { text?: string }).text ?? "created");
    expect(text(await store.readEvents(id, 0))).toEqual(["created", "a", "b", "c", "d", "e", "f"]);
    expect((await store.readEvents(id, 0)).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(text(await store.readEvents(id, 2))).toEqual(["b", "c", "d", "e", "f"]);
    expect((await store.readEvents(id, 2, 2)).map((e) => e.seq)).toEqual([3, 4]);
    expect((await store.readEvents(id, 1, 1)).map((e) => e.seq)).toEqual([2]);
    expect((await store.readEvents(id, 4, 3)).map((e) => e.seq)).toEqual([5, 6, 7]);
    expect(await store.readEvents(id, 7)).toEqual([]);
    // The batch's events share the commit's time.
    const [b, c] = (await store.readEvents(id, 2, 2)).map((e) => e.at);
    expect(b).toBe(c);
    // The events view has them one per row.
    const rows = await db.pool.query(
      "SELECT seq::int, type, data->>'text' AS text FROM durable_agents.events WHERE session_id = $1 ORDER BY seq",
      [id],
    );
    expect(rows.rows.map((r) => [r.seq, r.text ?? r.type])).toEqual([
      [1, "session_created"],
      [2, "a"],
      [3, "b"],
      [4, "c"],
      [5, "d"],
      [6, "e"],
      [7, "f"],
    ]);
  });

  it("deleting a session deletes its history, events and inbox, and no other session's", async () => {
    const store = db.store();
    const [gone, kept] = [newId(), newId()];
    for (const id of [gone, kept]) {
      const fence = await leased(id);
      await store.commit({
        sessionId: id,
        fence,
        expectedVersion: 1,
        head: head(id, { historyLength: 1 }),
        runnable: false,
        appendHistory: [item("hi")],
        events: [delta("x")],
      });
      await store.enqueue(id, { kind: "message", text: "hello", messageId: null }, null);
    }
    await db.pool.query("DELETE FROM durable_agents.sessions WHERE session_id = $1", [gone]);
    for (const table of ["history", "event_batches", "events", "inbox"]) {
      const count = async (id: string) =>
        (await db.pool.query(`SELECT count(*)::int AS n FROM durable_agents.${table} WHERE session_id = $1`, [id]))
          .rows[0].n;
      expect(await count(gone), table).toBe(0);
      expect(await count(kept), table).toBeGreaterThan(0);
    }
    expect(await store.loadSession(gone)).toBeNull();
    expect(await store.readEvents(gone, 0)).toEqual([]);
    expect(await store.readHistory(gone)).toEqual([]);
  });
});
