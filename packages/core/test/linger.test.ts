/**
 * The worker keeps an idle session's lease for its next message (`lingerMs`): a message that comes
 * in time is driven under the same lease, one that comes later is taken once the lease has expired,
 * and a stop or a full worker gives the kept lease up at once.
 */
import { describe, expect, it } from "vitest";
import { ConfigurationError, defineSession, SessionClient, Worker } from "../src/index.js";
import { crashWorker, MemoryStore, memoryRawReader, ScriptedRunner, workerDrives } from "../src/testing/index.js";
import { until } from "./support/until.js";

/** A memory store that counts what the worker asks of it around leases. */
class CountingStore extends MemoryStore {
  /** Leases taken: granted (`acquireLease`) or claimed in a commit (`Commit.claim`). */
  grants = 0;
  releases = 0;
  renewals = 0;
  commits = 0;
  /** `findWork` calls: the worker's looks for a session to take. */
  looks = 0;
  override findWork(...args: Parameters<MemoryStore["findWork"]>) {
    this.looks += 1;
    return super.findWork(...args);
  }
  override async acquireLease(...args: Parameters<MemoryStore["acquireLease"]>) {
    const lease = await super.acquireLease(...args);
    if (lease) this.grants += 1;
    return lease;
  }
  override releaseLease(...args: Parameters<MemoryStore["releaseLease"]>) {
    this.releases += 1;
    return super.releaseLease(...args);
  }
  override renewLease(...args: Parameters<MemoryStore["renewLease"]>) {
    this.renewals += 1;
    return super.renewLease(...args);
  }
  override async commit(...args: Parameters<MemoryStore["commit"]>) {
    this.commits += 1;
    const result = await super.commit(...args);
    if (args[0].claim) this.grants += 1;
    return result;
  }
}

/** Calls of `hold` wait here until a test lets them go. */
const holds: (() => void)[] = [];

const definition = defineSession({
  name: "echo",
  runner: new ScriptedRunner({
    tools: [
      {
        name: "look_up",
        description: "Reads a value.",
        parameters: { key: "string" },
        execute: async (args) => `value of ${String(args.key)}`,
      },
      {
        name: "hold",
        description: "Reads a value once let go.",
        parameters: { key: "string" },
        execute: async (args) => {
          await new Promise<void>((resolve) => holds.push(resolve));
          return `held ${String(args.key)}`;
        },
      },
    ],
  }),
  policies: { look_up: { effect: "read" }, hold: { effect: "read" } },
});

function setup(options: { lingerMs?: number; leaseTtlMs?: number; pollIntervalMs?: number; concurrency?: number }) {
  const store = new CountingStore();
  const worker = new Worker({ store, sessions: [definition], ...options }).start();
  const client = new SessionClient({ store });
  return { store, worker, client, raw: memoryRawReader(store) };
}

describe("Worker lingerMs", () => {
  it("drives a message that comes while the lease is kept under the same lease: no grant, no release, no renewal", async () => {
    const { store, worker, client, raw } = setup({ lingerMs: 10_000, leaseTtlMs: 30_000 });
    const { sessionId } = await client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    await client.waitUntilIdle(sessionId);
    const first = (await raw.session(sessionId))!;
    expect(first.leaseOwner).toBe(worker.workerId);
    // The idle commit set the lease to lingerMs from then, not to the lease's TTL.
    expect(first.leaseExpiresAt! - Date.now()).toBeLessThanOrEqual(10_000);
    expect(first.leaseExpiresAt! - Date.now()).toBeGreaterThan(5_000);
    for (const key of ["b", "c", "d"]) {
      await client.sendMessage(sessionId, `call look_up {"key":"${key}"}`);
      const done = await client.waitUntilIdle(sessionId);
      expect(done.turn?.finalText).toBe(`Results: look_up -> value of ${key}`);
    }
    const after = (await raw.session(sessionId))!;
    expect(after.fence).toBe(first.fence);
    expect(after.leaseOwner).toBe(worker.workerId);
    expect([store.grants, store.releases, store.renewals]).toEqual([1, 0, 0]);
    // One drive went through the four turns: none has ended yet.
    expect(workerDrives(worker)).toBe(0);
    const commits = store.commits;
    await worker.stop();
    // The stop handed the kept lease back at once (the test would time out waiting for lingerMs).
    expect((await raw.session(sessionId))?.leaseOwner).toBeNull();
    expect([store.releases, store.commits]).toEqual([1, commits]);
  });

  it("lets the lease lapse with nothing written, and takes a message that came later once it has expired", async () => {
    // The poll is far longer than the test: only the timer at the lease's expiry can take the message.
    // The lease outlives the drive's wait by a quarter of lingerMs (500 ms): time for a busy machine to
    // see the drive end and read the lease before it expires. A renewal comes due while the lease is
    // kept (every second): the worker must not make it.
    const { store, worker, client, raw } = setup({ lingerMs: 2_000, leaseTtlMs: 3_000, pollIntervalMs: 60_000 });
    const { sessionId } = await client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    await client.waitUntilIdle(sessionId);
    // The drive stops waiting after three quarters of lingerMs; the lease is still the worker's.
    await until(() => workerDrives(worker) === 1);
    const kept = (await raw.session(sessionId))!;
    expect(kept.leaseOwner).toBe(worker.workerId);
    expect(kept.leaseExpiresAt).toBeGreaterThan(Date.now());
    const commits = store.commits;
    expect([store.releases, store.renewals]).toEqual([0, 0]);
    await until(() => Date.now() > kept.leaseExpiresAt!);
    // Nothing was written for the lease to lapse.
    expect([store.commits, store.releases, store.renewals]).toEqual([commits, 0, 0]);
    await client.sendMessage(sessionId, 'call look_up {"key":"late"}');
    const done = await client.waitUntilIdle(sessionId);
    expect(done.turn?.finalText).toBe("Results: look_up -> value of late");
    // Taken after the kept lease expired: a new grant, a new fence.
    expect(store.grants).toBe(2);
    expect((await raw.session(sessionId))!.fence).toBe(kept.fence + 1);
    expect(Date.now()).toBeGreaterThanOrEqual(kept.leaseExpiresAt!);
    await worker.stop();
  });

  it("drives a message that comes after the drive stopped waiting, while the lease is still kept, under that lease at once", async () => {
    // The poll is far longer than the test: only the kept lease can take the message before it expires.
    // The lease outlives the drive's wait by a quarter of lingerMs (500 ms): time for a busy machine to
    // see the drive end and send the message.
    const { store, worker, client, raw } = setup({ lingerMs: 2_000, leaseTtlMs: 30_000, pollIntervalMs: 60_000 });
    const { sessionId } = await client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    await client.waitUntilIdle(sessionId);
    // The drive stops waiting at three quarters of lingerMs; the lease has a quarter left.
    await until(() => workerDrives(worker) === 1);
    const before = (await raw.session(sessionId))!;
    expect(before.leaseOwner).toBe(worker.workerId);
    expect(before.leaseExpiresAt! - Date.now()).toBeGreaterThan(25);
    await client.sendMessage(sessionId, 'call look_up {"key":"kept"}');
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 4_000 });
    expect(done.turn?.finalText).toBe("Results: look_up -> value of kept");
    // Under the same lease (its commits extend it): no new grant, the same fence. A kept lease that
    // expired first would have been refused, and the session claimed anew (a second grant, a new fence).
    expect(store.grants).toBe(1);
    const after = (await raw.session(sessionId))!;
    expect(after.fence).toBe(before.fence);
    expect(after.leaseOwner).toBe(worker.workerId);
    await worker.stop();
  });

  it("a kept lease that expired (by the store's clock) before the drive's first commit: the session is taken anew", async () => {
    // The store's clock runs ahead of the worker's by `skew`: the worker thinks its kept lease has
    // time left when the store has let it expire.
    let skew = 0;
    const store = new CountingStore({ now: () => Date.now() + skew });
    const worker = new Worker({
      store,
      sessions: [definition],
      lingerMs: 400,
      leaseTtlMs: 30_000,
      pollIntervalMs: 60_000,
    }).start();
    const client = new SessionClient({ store });
    const raw = memoryRawReader(store);
    const { sessionId } = await client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    await client.waitUntilIdle(sessionId);
    await until(() => workerDrives(worker) === 1);
    const before = (await raw.session(sessionId))!;
    expect(before.leaseOwner).toBe(worker.workerId);
    skew = 1_000;
    await client.sendMessage(sessionId, 'call look_up {"key":"expired"}');
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 4_000 });
    expect(done.turn?.finalText).toBe("Results: look_up -> value of expired");
    // The drive under the kept lease was refused (it had written nothing); a new claim took the session.
    expect(store.grants).toBe(2);
    expect((await raw.session(sessionId))!.fence).toBe(before.fence + 1);
    expect(workerDrives(worker)).toBeGreaterThanOrEqual(2);
    await worker.stop();
  });

  it("a graceful stop hands back a kept lease whose drive stopped waiting already", async () => {
    const { store, worker, client, raw } = setup({ lingerMs: 2_000, leaseTtlMs: 10_000 });
    const { sessionId } = await client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    await client.waitUntilIdle(sessionId);
    await until(() => workerDrives(worker) === 1);
    expect((await raw.session(sessionId))?.leaseOwner).toBe(worker.workerId);
    await worker.stop();
    expect((await raw.session(sessionId))?.leaseOwner).toBeNull();
    expect(store.releases).toBe(1);
  });

  it("a worker that dies holds its idle sessions for lingerMs at most; the next worker takes them", async () => {
    const first = setup({ lingerMs: 400, leaseTtlMs: 10_000 });
    const { sessionId } = await first.client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    await first.client.waitUntilIdle(sessionId);
    const kept = (await first.raw.session(sessionId))!;
    crashWorker(first.worker);
    const next = new Worker({ store: first.store, sessions: [definition], pollIntervalMs: 20 }).start();
    await first.client.sendMessage(sessionId, 'call look_up {"key":"b"}');
    const done = await first.client.waitUntilIdle(sessionId);
    expect(done.turn?.finalText).toBe("Results: look_up -> value of b");
    const row = (await first.raw.session(sessionId))!;
    expect(row.fence).toBe(kept.fence + 1);
    expect(row.leaseOwner).toBe(next.workerId);
    expect(Date.now()).toBeGreaterThanOrEqual(kept.leaseExpiresAt!);
    await next.stop();
  });

  it("at its concurrency limit, gives a kept lease's slot to a session with work, and still drives the first one's next message at once", async () => {
    const { store, worker, client, raw } = setup({ lingerMs: 20_000, leaseTtlMs: 30_000, concurrency: 1 });
    const a = await client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    await client.waitUntilIdle(a.sessionId);
    // a is idle, its lease kept: it holds no slot.
    expect((await raw.session(a.sessionId))?.leaseOwner).toBe(worker.workerId);
    await until(() => worker.activeSessions === 0);
    const b = await client.startSession({ agent: "echo", message: 'call look_up {"key":"b"}' });
    // Long before a's lingerMs.
    const done = await client.waitUntilIdle(b.sessionId, { timeoutMs: 4_000 });
    expect(done.turn?.finalText).toBe("Results: look_up -> value of b");
    // a's lease was not released (that would be a write): it is kept until it expires.
    const kept = (await raw.session(a.sessionId))!;
    expect(kept.leaseOwner).toBe(worker.workerId);
    expect(store.releases).toBe(0);
    // A message for a is driven under that kept lease (b's slot is taken back), long before it expires.
    await client.sendMessage(a.sessionId, 'call look_up {"key":"a2"}');
    const next = await client.waitUntilIdle(a.sessionId, { timeoutMs: 4_000 });
    expect(next.turn?.finalText).toBe("Results: look_up -> value of a2");
    const after = (await raw.session(a.sessionId))!;
    expect([after.fence, after.leaseOwner, store.releases]).toEqual([kept.fence, worker.workerId, 0]);
    await worker.stop();
  });

  it("a full worker whose drives idle under kept leases does not look for work at each turn's end; a new session still wakes it", async () => {
    // The poll is far off: what is driven here is woken by notices.
    const { store, worker, client } = setup({
      lingerMs: 20_000,
      leaseTtlMs: 30_000,
      concurrency: 1,
      pollIntervalMs: 10_000,
    });
    const a = await client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    await client.waitUntilIdle(a.sessionId);
    await until(() => worker.activeSessions === 0);
    const looks = store.looks;
    for (const key of ["a2", "a3"]) {
      await client.sendMessage(a.sessionId, `call look_up {"key":"${key}"}`);
      const done = await client.waitUntilIdle(a.sessionId);
      expect(done.turn?.finalText).toBe(`Results: look_up -> value of ${key}`);
    }
    await until(() => worker.activeSessions === 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Each message went to the idle drive under its kept lease; nothing else has work, so the worker
    // looked for none (it did at each turn's end while its one slot held a kept lease).
    expect(store.looks).toBe(looks);
    const b = await client.startSession({ agent: "echo", message: 'call look_up {"key":"b"}' });
    const done = await client.waitUntilIdle(b.sessionId, { timeoutMs: 4_000 });
    expect(done.turn?.finalText).toBe("Results: look_up -> value of b");
    expect(store.looks).toBeGreaterThan(looks);
    await worker.stop();
  });

  it("a worker waiting at its concurrency limit takes a waiting session as soon as its drive goes idle, not at its next poll", async () => {
    const { worker, client } = setup({ lingerMs: 20_000, leaseTtlMs: 30_000, concurrency: 1, pollIntervalMs: 10_000 });
    holds.length = 0;
    const a = await client.startSession({ agent: "echo", message: 'call hold {"key":"a"}' });
    await until(() => holds.length === 1);
    // The worker's one slot is busy: b waits for it.
    const b = await client.startSession({ agent: "echo", message: 'call look_up {"key":"b"}' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const waited = await client.snapshot(b.sessionId);
    expect(waited.turn).toBeNull();
    const started = Date.now();
    holds[0]!();
    expect((await client.waitUntilIdle(a.sessionId)).turn?.finalText).toBe("Results: hold -> held a");
    const done = await client.waitUntilIdle(b.sessionId, { timeoutMs: 4_000 });
    expect(done.turn?.finalText).toBe("Results: look_up -> value of b");
    expect(Date.now() - started).toBeLessThan(4_000);
    await worker.stop();
  });

  it("lingerMs 0 releases the lease in the turn's last commit", async () => {
    const { store, worker, client, raw } = setup({ lingerMs: 0 });
    const { sessionId } = await client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    await client.waitUntilIdle(sessionId);
    await until(() => workerDrives(worker) === 1);
    expect((await raw.session(sessionId))?.leaseOwner).toBeNull();
    expect(store.releases).toBe(0);
    await worker.stop();
  });

  it("refuses a lingerMs that is not a time from 0 to the lease's TTL", () => {
    const store = new MemoryStore();
    for (const lingerMs of [-1, Number.NaN, Number.POSITIVE_INFINITY, 20_000]) {
      expect(() => new Worker({ store, sessions: [definition], leaseTtlMs: 15_000, lingerMs })).toThrow(
        ConfigurationError,
      );
    }
  });
});
