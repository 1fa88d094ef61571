/**
 * Migration 5: the pinned lease grant runs through a function whose query PostgreSQL plans once per
 * connection (as a statement it was planned anew on every call). The grant itself is the lease
 * suite's; this checks the function is the one the store calls, with its plan setting.
 */
import { describe, expect, it } from "vitest";
import { created, head, newId, useDatabase } from "./helpers.js";

const db = useDatabase();

describe("the pinned lease grant", () => {
  it("is the function with a generic plan, and grants through it", async () => {
    const config = await db.pool.query(
      `SELECT p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = 'durable_agents' AND p.proname = 'acquire_lease_pinned'`,
    );
    expect(config.rows).toEqual([{ proconfig: ["plan_cache_mode=force_generic_plan"] }]);
    const store = db.store();
    const id = newId("pinned");
    await store.createSession({ head: head(id, { agent: id }), events: [created(id)] });
    await store.enqueue(id, { kind: "message", text: "hi", messageId: null }, null);
    const got = await store.acquireLeaseWithSession({
      workerId: "w",
      ttlMs: 10_000,
      agents: [id],
      fingerprints: ["fp1-other"],
      migrating: [],
    });
    expect(got?.lease.sessionId).toBe(id);
    expect(got?.session.version).toBe(1);
    // A second worker finds nothing to take: the lease is held.
    expect(
      await store.acquireLease({ workerId: "w2", ttlMs: 10_000, agents: [id], fingerprints: ["fp1-other"] }),
    ).toBeNull();
    // The store's pinned grants go through the function: without it they fail (this file's own database).
    await db.pool.query("DROP FUNCTION durable_agents.acquire_lease_pinned");
    await expect(
      store.acquireLease({ workerId: "w2", ttlMs: 10_000, agents: [id], fingerprints: ["fp1-other"] }),
    ).rejects.toThrow(/acquire_lease_pinned/);
  });
});
