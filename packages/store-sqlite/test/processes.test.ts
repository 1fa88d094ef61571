/**
 * Two processes on one store file: wake-ups cross the process boundary, leases fence one process
 * against the other, and a write waits for the other process's lock (or gives up with a typed
 * error that changed nothing). The second process is a real child process with its own store.
 */
import { LeaseLostError, WaitTimeoutError, type SessionHead } from "@durable-agents/core";
import { newSessionHead, type Lease } from "@durable-agents/core/engine";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/index.js";
import { tempStoreDir } from "../src/testing/index.js";
import { RemoteError, startStoreProcess, type StoreProcess } from "./support/store-process.js";

const agent = "processes";
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function setup(options: { busyTimeoutMs?: number } = {}) {
  const dir = tempStoreDir();
  const path = dir.file();
  const store = new SqliteStore({ path, ...options });
  cleanups.push(
    () => dir.remove(),
    () => store.close(),
  );
  const other = (): StoreProcess => {
    const child = startStoreProcess(path);
    cleanups.push(() => child.stop());
    return child;
  };
  return { store, path, other };
}

async function create(store: SqliteStore, id: string, withMessage = false): Promise<SessionHead> {
  const head = newSessionHead(id, agent, new Date().toISOString());
  await store.createSession({
    head,
    events: [{ type: "session_created", data: { agent } }],
    ...(withMessage ? { inbox: { entry: { kind: "message", text: "hi", messageId: null }, dedupeKey: null } } : {}),
  });
  return head;
}

describe("two processes on one file", () => {
  it("wakes a subscriber in another process for new inbox entries, events and released work", async () => {
    const { store, other } = setup();
    const child = other();
    await child.call("subscribe");
    const head = await create(store, "s-wake");
    await child.notified((n) => n.kind === "events" && n.sessionId === "s-wake");

    await store.enqueue("s-wake", { kind: "message", text: "wake up", messageId: null }, null);
    await child.notified((n) => n.kind === "inbox" && n.sessionId === "s-wake");
    await child.notified((n) => n.kind === "work");

    const lease = (await store.acquireLease({ workerId: "parent", ttlMs: 5_000, agents: [agent] }))!;
    await store.commit({
      sessionId: "s-wake",
      fence: lease.fence,
      expectedVersion: 1,
      head: { ...head, inboxCursor: 1 },
      runnable: true,
      events: [],
    });
    child.notifications.length = 0;
    await store.releaseLease(lease);
    await child.notified((n) => n.kind === "work");
  });

  it("an entry for a session a live lease holds wakes the other process with its inbox notice and no work; once the lease lapsed, with work", async () => {
    const { store, other } = setup();
    const child = other();
    await child.call("subscribe");
    await create(store, "s-held", true);
    // The session's first message, while no lease holds it: work (the notices of one look come in order).
    await child.notified((n) => n.kind === "inbox" && n.sessionId === "s-held");
    await child.notified((n) => n.kind === "work");
    // Long enough for the looks below on a busy machine; the lease then lapses by itself.
    const lease = (await store.acquireLease({ workerId: "parent", ttlMs: 1_500, agents: [agent] }))!;
    child.notifications.length = 0;
    await store.enqueue("s-held", { kind: "message", text: "while held", messageId: null }, null);
    await child.notified((n) => n.kind === "inbox" && n.sessionId === "s-held");
    // A later write, seen by a later look: anything the entry's look said has arrived before it.
    await store.commit({
      sessionId: "s-held",
      fence: lease.fence,
      expectedVersion: 1,
      events: [{ type: "message_queued", data: { text: "marker", position: 1 } }],
    });
    await child.notified((n) => n.kind === "events" && n.sessionId === "s-held");
    expect(child.notifications.filter((n) => n.kind === "work")).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lease.expiresAt - Date.now()) + 50));
    child.notifications.length = 0;
    await store.enqueue("s-held", { kind: "message", text: "after the lease lapsed", messageId: null }, null);
    await child.notified((n) => n.kind === "work");
  });

  it("wakes this process for the other process's writes", async () => {
    const { store, other } = setup();
    await create(store, "s-back", true);
    const seen: string[] = [];
    store.subscribe((n) => seen.push(n.kind === "work" ? "work" : `${n.kind}:${n.sessionId}`));
    const child = other();
    const lease = await child.call<Lease>("acquire", { workerId: "child", ttlMs: 5_000, agents: [agent] });
    await child.call("commit", {
      sessionId: "s-back",
      fence: lease.fence,
      expectedVersion: 1,
      events: [{ type: "message_queued", data: { text: "x", position: 1 } }],
    });
    await expect.poll(() => seen, { timeout: 5_000 }).toContain("events:s-back");
  });

  it("gives each inbox entry to exactly one of two processes leasing the same sessions", async () => {
    const { store, path, other } = setup();
    const ids = Array.from({ length: 30 }, (_, i) => `s-${i}`);
    for (const id of ids) await create(store, id);
    for (const id of ids)
      for (let m = 0; m < 3; m++) await store.enqueue(id, { kind: "message", text: `m${m}`, messageId: null }, null);
    const a = other();
    const b = other();
    // A rendezvous after each one's first entry: both drain at the same moment, and race for the rest.
    const meetA = `${path}.meet-a`;
    const meetB = `${path}.meet-b`;
    type Drained = { taken: string[]; startedAt: number; endedAt: number };
    const [drainedA, drainedB] = await Promise.all([
      a.call<Drained>("drain", { workerId: "a", agent, meet: { mine: meetA, theirs: meetB } }),
      b.call<Drained>("drain", { workerId: "b", agent, meet: { mine: meetB, theirs: meetA } }),
    ]);
    // The race really happened: each process took entries, and each drained while the other did.
    expect(
      {
        takenByA: drainedA.taken.length > 0,
        takenByB: drainedB.taken.length > 0,
        overlapped: drainedA.startedAt <= drainedB.endedAt && drainedB.startedAt <= drainedA.endedAt,
      },
      "both processes took entries, draining at the same time",
    ).toEqual({ takenByA: true, takenByB: true, overlapped: true });
    const all = [...drainedA.taken, ...drainedB.taken].sort();
    const expected = ids.flatMap((id) => [1, 2, 3].map((seq) => `${id}#${seq}`)).sort();
    expect(all).toEqual(expected);
    for (const id of ids) {
      const events = await store.readEvents(id, 0);
      expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
      expect((await store.loadSession(id))?.head.inboxCursor).toBe(3);
    }
  });

  it("refuses the commit of a process whose lease expired and was taken by the other process", async () => {
    const { store, other } = setup();
    const head = await create(store, "s-stale", true);
    const child = other();
    await child.call("readEvents", { sessionId: "s-stale" }); // started and ready
    // Long enough for the child's acquire below to see the lease live on a busy machine.
    const stale = (await store.acquireLease({ workerId: "parent", ttlMs: 2_000, agents: [agent] }))!;
    expect(await child.call("acquire", { workerId: "child", ttlMs: 5_000, agents: [agent] })).toBeNull();
    // Until just past the expiry the lease itself reports, so the next acquire finds it lapsed.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, stale.expiresAt - Date.now()) + 100));
    const fresh = await child.call<Lease>("acquire", { workerId: "child", ttlMs: 5_000, agents: [agent] });
    expect(fresh.fence).toBe(stale.fence + 1);
    await expect(
      store.commit({
        sessionId: "s-stale",
        fence: stale.fence,
        expectedVersion: 1,
        head: { ...head, turnCount: 7 },
        runnable: false,
        events: [{ type: "message_queued", data: { text: "stale", position: 1 } }],
      }),
    ).rejects.toSatisfy(LeaseLostError.isInstance);
    await child.call("commit", {
      sessionId: "s-stale",
      fence: fresh.fence,
      expectedVersion: 1,
      head: { ...head, inboxCursor: 1 },
      runnable: false,
      events: [],
    });
    const stored = await store.loadSession("s-stale");
    expect(stored?.head.turnCount).toBe(0);
    expect(stored?.head.inboxCursor).toBe(1);
    expect((await store.readEvents("s-stale", 0)).length).toBe(1);
  });

  it("waits for the other process's write lock without blocking, and gives up with WaitTimeoutError that changed nothing", async () => {
    const { store, other } = setup({ busyTimeoutMs: 100 });
    await create(store, "s-busy");
    const child = other();
    // Held far longer than the 100 ms the store waits, so the enqueue below meets the lock even
    // when it starts late on a busy machine.
    const held = child.call("holdWriteLock", { ms: 3_000 });
    await child.line("lock");
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    await expect(
      store.enqueue("s-busy", { kind: "message", text: "blocked", messageId: null }, "k1"),
    ).rejects.toSatisfy(WaitTimeoutError.isInstance);
    clearInterval(ticker);
    expect(ticks, "the event loop ran while the store waited").toBeGreaterThan(2);
    await held;
    expect(await store.readInbox("s-busy", 0)).toEqual([]);
    const patient = new SqliteStore({ path: store.path, busyTimeoutMs: 5_000 });
    cleanups.push(() => patient.close());
    const heldAgain = child.call("holdWriteLock", { ms: 200 });
    await child.line("lock");
    expect(await patient.enqueue("s-busy", { kind: "message", text: "waited", messageId: null }, "k1")).toEqual({
      seq: 1,
      duplicate: false,
    });
    await heldAgain;
  });
});

it("lets several processes create and migrate a new file at the same moment", async () => {
  const dir = tempStoreDir();
  cleanups.push(() => dir.remove());
  const path = dir.file("fresh.db");
  const children = Array.from({ length: 4 }, () => startStoreProcess(path));
  cleanups.push(() => Promise.all(children.map((child) => child.stop())).then(() => undefined));
  expect(await Promise.all(children.map((child) => child.call("readEvents", { sessionId: "none" })))).toEqual([
    [],
    [],
    [],
    [],
  ]);
  const store = new SqliteStore({ path });
  cleanups.push(() => store.close());
  await create(store, "s-after");
  expect((await children[0]!.call<unknown[]>("readEvents", { sessionId: "s-after" })).length).toBe(1);
});

describe("stores of one process on one file", () => {
  it("wake each other at once, without waiting for the file watch", async () => {
    const { store, path } = setup();
    const second = new SqliteStore({ path, watchIntervalMs: 60_000 });
    cleanups.push(() => second.close());
    const seen: string[] = [];
    second.subscribe((n) => seen.push(n.kind === "work" ? "work" : `${n.kind}:${n.sessionId}`));
    await create(store, "s-local", true);
    expect(seen).toEqual(["events:s-local", "inbox:s-local", "work"]);
  });
});

it("reports a remote error as RemoteError", async () => {
  const { other } = setup();
  await expect(
    other().call("commit", { sessionId: "none", fence: 1, expectedVersion: 1, events: [] }),
  ).rejects.toBeInstanceOf(RemoteError);
});
