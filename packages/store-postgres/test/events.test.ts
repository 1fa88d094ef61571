import { describe, expect, it } from "vitest";
import { created, delta, head, newId, useDatabase } from "./helpers.js";

const db = useDatabase();

describe("readEvents", () => {
  it("reads from a cursor, in order, at most limit, with the database time as ISO string", async () => {
    const store = db.store();
    const id = newId();
    const before = Date.now();
    await store.createSession({ head: head(id), events: [created(), delta("a"), delta("b")] });
    await db.pool.query("UPDATE durable_agents.sessions SET runnable = true, agent = $1 WHERE session_id = $1", [id]);
    const lease = (await store.acquireLease({ workerId: "w", ttlMs: 10_000, agents: [id] }))!;
    for (const text of ["c", "d", "e"]) {
      await store.commit({ sessionId: id, fence: lease.fence, expectedVersion: 1, events: [delta(text)] });
    }
    const all = await store.readEvents(id, 0);
    expect(all.map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(all[0]).toMatchObject({ seq: 1, type: "session_created", data: { agent: "helper-agent" } });
    expect(all.slice(1).map((event) => (event.data as { text: string }).text)).toEqual(["a", "b", "c", "d", "e"]);
    for (const event of all) {
      expect(event.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      // The two clocks are on the same machine here.
      expect(Math.abs(Date.parse(event.at) - before)).toBeLessThan(60_000);
    }
    expect((await store.readEvents(id, 2, 2)).map((event) => event.seq)).toEqual([3, 4]);
    expect((await store.readEvents(id, 4)).map((event) => event.seq)).toEqual([5, 6]);
    expect(await store.readEvents(id, 6)).toEqual([]);
    const rows = await db.pool.query(
      "SELECT seq::int, type FROM durable_agents.events WHERE session_id = $1 ORDER BY seq",
      [id],
    );
    expect(rows.rows.map((row) => row.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(rows.rows[0].type).toBe("session_created");
  });
});
