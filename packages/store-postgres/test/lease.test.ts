import pg from "pg";
import { describe, expect, it } from "vitest";
import { InvalidInputError, LeaseLostError } from "@durable-agents/core";
import type { Lease } from "@durable-agents/core/engine";
import { PostgresStore } from "../src/index.js";
import { postgresRawReader } from "../src/testing/index.js";
import { created, head, newId, tableBarrier, useDatabase } from "./helpers.js";

const db = useDatabase();

/** Sessions of an agent no other test uses, each with a message waiting in its inbox. */
async function waiting(agent: string, count: number): Promise<string[]> {
  const store = db.store();
  const ids: string[] = [];
  for (let n = 0; n < count; n++) {
    const id = newId(agent);
    await store.createSession({
      head: head(id, { agent }),
      events: [created(agent)],
      inbox: { entry: { kind: "message", text: "go", messageId: null }, dedupeKey: null },
    });
    ids.push(id);
  }
  return ids;
}

const dbNow = async (): Promise<number> =>
  Number((await db.pool.query("SELECT (extract(epoch FROM now()) * 1000)::bigint AS now")).rows[0].now);

describe("acquireLease", () => {
  it("leases only runnable sessions of the given agents, with fence + 1 and a TTL from the database clock", async () => {
    const store = db.store();
    const agent = newId("agent");
    const idle = newId(agent);
    await store.createSession({ head: head(idle, { agent }), events: [] });
    expect(await store.acquireLease({ workerId: "w1", ttlMs: 10_000, agents: [agent] })).toBeNull();

    const [id] = await waiting(agent, 1);
    expect(await store.acquireLease({ workerId: "w1", ttlMs: 10_000, agents: ["someone-else"] })).toBeNull();
    expect(await store.acquireLease({ workerId: "w1", ttlMs: 10_000, agents: [] })).toBeNull();
    const before = await dbNow();
    const lease = await store.acquireLease({ workerId: "w1", ttlMs: 10_000, agents: ["x", agent] });
    const after = await dbNow();
    expect(lease).toMatchObject({ sessionId: id, workerId: "w1", fence: 1 });
    expect(lease!.expiresAt).toBeGreaterThanOrEqual(before + 10_000 - 1);
    expect(lease!.expiresAt).toBeLessThanOrEqual(after + 10_000);
    const raw = await postgresRawReader(db.pool).session(id!);
    expect(raw).toMatchObject({ leaseOwner: "w1", fence: 1, leaseExpiresAt: lease!.expiresAt });
    // Held: nobody else gets it.
    expect(await store.acquireLease({ workerId: "w2", ttlMs: 10_000, agents: [agent] })).toBeNull();
  });

  it("a session whose runnable flag is set is leased even with an empty inbox", async () => {
    const store = db.store();
    const agent = newId("agent");
    const id = newId(agent);
    await store.createSession({ head: head(id, { agent }), events: [] });
    await db.pool.query("UPDATE durable_agents.sessions SET runnable = true WHERE session_id = $1", [id]);
    expect((await store.acquireLease({ workerId: "w1", ttlMs: 10_000, agents: [agent] }))?.sessionId).toBe(id);
  });

  it("gives each session to exactly one of many concurrent callers on separate connections", async () => {
    const agent = newId("agent");
    const ids = await waiting(agent, 5);
    // Separate pools, like separate worker processes.
    const connectionsPerPool = 6;
    const pools = Array.from(
      { length: 4 },
      () => new pg.Pool({ connectionString: poolUrl(), max: connectionsPerPool }),
    );
    // A connection the server closes while its pool ends (the database is dropped after the file) is no test failure.
    for (const pool of pools) pool.on("error", () => {});
    const stores = pools.map((pool) => new PostgresStore({ pool }));
    try {
      // The calls queue behind a lock on the sessions table until every connection of the four pools
      // waits there: they race at the database, not one after another.
      const barrier = await tableBarrier(db.pool, "durable_agents.sessions");
      let calls: Promise<Lease | null>[];
      try {
        calls = Array.from({ length: 40 }, (_, n) =>
          stores[n % stores.length]!.acquireLease({ workerId: `w${n}`, ttlMs: 30_000, agents: [agent] }),
        );
        const queued = await barrier.queued(pools.length * connectionsPerPool);
        expect(queued, "acquireLease statements waiting at the database at once").toBeGreaterThan(1);
      } finally {
        await barrier.release();
      }
      const leases = (await Promise.all(calls)).filter((lease) => lease !== null);
      expect(leases.map((lease) => lease.sessionId).sort()).toEqual([...ids].sort());
      const raw = postgresRawReader(db.pool);
      for (const lease of leases) {
        expect(await raw.session(lease.sessionId)).toMatchObject({ leaseOwner: lease.workerId, fence: 1 });
      }
    } finally {
      await Promise.all(stores.map((store) => store.close()));
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it("lets another worker take an expired lease with a higher fence, and refuses the stale worker", async () => {
    const store = db.store();
    const agent = newId("agent");
    const [id] = await waiting(agent, 1);
    // The lease must still be live at the next round trip on a busy machine; the wait below follows
    // its expiry, so a longer TTL only costs time.
    const stale = (await store.acquireLease({ workerId: "stale", ttlMs: 2_000, agents: [agent] }))!;
    expect(await store.acquireLease({ workerId: "fresh", ttlMs: 10_000, agents: [agent] })).toBeNull();
    while (Date.now() <= stale.expiresAt + 50) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, stale.expiresAt + 51 - Date.now())));
    }
    // Expired but not taken yet: a commit under it is already refused.
    await expect(
      store.commit({ sessionId: id!, fence: stale.fence, expectedVersion: 1, events: [created(agent)] }),
    ).rejects.toSatisfy(LeaseLostError.isInstance);
    expect(await store.renewLease(stale, 10_000)).toBeNull();
    const fresh = await store.acquireLease({ workerId: "fresh", ttlMs: 10_000, agents: [agent] });
    expect(fresh).toMatchObject({ sessionId: id, workerId: "fresh", fence: stale.fence + 1 });
    await expect(
      store.commit({
        sessionId: id!,
        fence: stale.fence,
        expectedVersion: 1,
        head: head(id!, { agent }),
        runnable: false,
        events: [],
      }),
    ).rejects.toSatisfy(LeaseLostError.isInstance);
    // The stale worker's release does not free the fresh worker's lease.
    await store.releaseLease(stale);
    expect(await postgresRawReader(db.pool).session(id!)).toMatchObject({ leaseOwner: "fresh", fence: 2, version: 1 });
    const result = await store.commit({
      sessionId: id!,
      fence: fresh!.fence,
      expectedVersion: 1,
      head: head(id!, { agent, inboxCursor: 1 }),
      runnable: false,
      events: [],
    });
    expect(result.version).toBe(2);
  });

  it("renews a live lease from the database clock, and not a lost one", async () => {
    const store = db.store();
    const agent = newId("agent");
    await waiting(agent, 1);
    // Live through the round trips before the renewal even on a busy machine.
    const lease = (await store.acquireLease({ workerId: "w1", ttlMs: 10_000, agents: [agent] }))!;
    const before = await dbNow();
    const renewed = await store.renewLease(lease, 60_000);
    expect(renewed).toMatchObject({ sessionId: lease.sessionId, workerId: "w1", fence: lease.fence });
    expect(renewed!.expiresAt).toBeGreaterThanOrEqual(before + 60_000 - 1);
    expect((await postgresRawReader(db.pool).session(lease.sessionId))?.leaseExpiresAt).toBe(renewed!.expiresAt);
    expect(await store.renewLease({ ...lease, fence: lease.fence + 1 }, 60_000)).toBeNull();
    expect(await store.renewLease({ ...lease, workerId: "w2" }, 60_000)).toBeNull();
    await expect(store.renewLease(lease, 0)).rejects.toSatisfy(InvalidInputError.isInstance);
    await store.releaseLease(lease);
    expect(await store.renewLease(lease, 60_000)).toBeNull();
  });

  it("release clears owner and expiry, and a still runnable session can be leased again", async () => {
    const store = db.store();
    const agent = newId("agent");
    const [id] = await waiting(agent, 1);
    const lease = (await store.acquireLease({ workerId: "w1", ttlMs: 10_000, agents: [agent] }))!;
    await store.releaseLease(lease);
    expect(await postgresRawReader(db.pool).session(id!)).toMatchObject({
      leaseOwner: null,
      leaseExpiresAt: null,
      fence: 1,
    });
    const again = await store.acquireLease({ workerId: "w2", ttlMs: 10_000, agents: [agent] });
    expect(again).toMatchObject({ sessionId: id, workerId: "w2", fence: 2 });
  });

  it("a commit that moves the inbox cursor to the end and clears runnable takes the session out of the queue", async () => {
    const store = db.store();
    const agent = newId("agent");
    const [id] = await waiting(agent, 1);
    const lease = (await store.acquireLease({ workerId: "w1", ttlMs: 10_000, agents: [agent] }))!;
    await store.commit({
      sessionId: id!,
      fence: lease.fence,
      expectedVersion: 1,
      head: head(id!, { agent, inboxCursor: 1 }),
      runnable: false,
      events: [],
    });
    await store.releaseLease(lease);
    expect(await store.acquireLease({ workerId: "w2", ttlMs: 10_000, agents: [agent] })).toBeNull();
    // A new message makes it runnable again.
    await store.enqueue(id!, { kind: "message", text: "more", messageId: null }, null);
    expect((await store.acquireLease({ workerId: "w2", ttlMs: 10_000, agents: [agent] }))?.sessionId).toBe(id);
  });

  it("uses the partial index of ready sessions", async () => {
    await db.pool.query("ANALYZE durable_agents.sessions");
    const client = await db.pool.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const plan = await client.query(
        `EXPLAIN SELECT session_id FROM durable_agents.sessions
         WHERE agent = ANY($1::text[]) AND (runnable OR last_inbox_seq > inbox_cursor)
           AND (lease_owner IS NULL OR lease_expires_at <= now())`,
        [["a"]],
      );
      expect(plan.rows.map((row) => row["QUERY PLAN"]).join("\n")).toContain("sessions_ready");
    } finally {
      client.release();
    }
  });
});

function poolUrl(): string {
  const options = db.pool.options as { connectionString?: string };
  return options.connectionString!;
}

describe("findWork", () => {
  it("answers at random among the 8 sessions that waited longest, so workers looking at once mostly find different ones", async () => {
    const store = db.store();
    const agent = newId("agent");
    const ids = await waiting(agent, 10);
    // Oldest first: ids[0] waited longest, the last two waited least.
    for (const [n, id] of ids.entries()) {
      await db.pool.query(
        "UPDATE durable_agents.sessions SET touched_at = now() - ($2::int * interval '1 minute'), fingerprint = 'fp-x' WHERE session_id = $1",
        [id, 100 - n],
      );
    }
    // Without fingerprints (the statement) and with (the pinned function).
    for (const fingerprints of [undefined, ["fp-x"]]) {
      const seen = new Set<string>();
      for (let n = 0; n < 60; n++) {
        const found = await store.findWork({
          workerId: "w",
          ttlMs: 5_000,
          agents: [agent],
          ...(fingerprints ? { fingerprints } : {}),
        });
        seen.add(found!.sessionId);
      }
      // 60 draws among 8: every one of them is all but certain to come up at least twice over.
      expect(seen.size, `fingerprints ${fingerprints}`).toBeGreaterThan(4);
      expect([...seen].every((id) => ids.slice(0, 8).includes(id))).toBe(true);
    }
    // Passed over, the two that waited least are answered too.
    const found = await store.findWork({ workerId: "w", ttlMs: 5_000, agents: [agent], skip: ids.slice(0, 8) });
    expect(ids.slice(8)).toContain(found!.sessionId);
  });
});
