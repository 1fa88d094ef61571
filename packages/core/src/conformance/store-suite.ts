/**
 * The store suite: the promises of the store interface, checked through the store's API and
 * through a raw reader that reads what the backend really wrote.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import {
  InvalidInputError,
  LeaseLostError,
  SessionNotFoundError,
  SessionStateError,
  StoredStateError,
  VersionConflictError,
} from "../errors.js";
import { newSessionHead } from "../machine.js";
import { maxSessionIdLength } from "../store-input.js";
import { loadStoredSession } from "../stored-session.js";
import type { EventBody, HistoryItem, SessionHead } from "../schemas.js";
import type { Commit, CommitResult, Lease, SessionStore, StoreNotification } from "../store.js";
import type { StoreHarness, TestApi } from "./types.js";

const agent = "store-suite";
const message = (text: string) => ({ kind: "message" as const, text, messageId: null });
const item = (text: string): HistoryItem => ({
  item: { role: "user", content: text },
  display: { role: "user", text },
});
const noteEvent = (text: string): EventBody => ({ type: "message_queued", data: { text, position: 1 } });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The TTL of the leases (and announcements) the suite lets expire. Some tests make two round trips
 * (an enqueue and then a commit, say) that must land while the lease is still live. The TTL is long
 * enough for that even when a busy CI machine stalls for a second. Every wait for the expiry is
 * derived from this value, so raising it costs time but does not weaken a check.
 */
const LEASE_TTL_MS = 1_500;

const sleepUntil = async (epochMs: number) => {
  while (Date.now() < epochMs) await sleep(Math.max(1, epochMs - Date.now()));
};

/**
 * Counts the calls in flight at once: a race test asserts that its calls really overlapped (more
 * than one was waiting for the store at the same moment), not only what came out of them.
 */
function overlapCounter() {
  let inFlight = 0;
  let most = 0;
  return {
    get most() {
      return most;
    },
    async run<T>(call: () => Promise<T>): Promise<T> {
      inFlight += 1;
      most = Math.max(most, inFlight);
      try {
        return await call();
      } finally {
        inFlight -= 1;
      }
    },
  };
}

/** Calls `attempt` every 20 ms until it answers something other than null (at most 10 s). */
async function eventually<T>(attempt: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await attempt();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error("still null after 10 s");
    await sleep(20);
  }
}

async function create(store: SessionStore, options: { withMessage?: boolean } = {}): Promise<SessionHead> {
  const head = newSessionHead(`s-${randomUUID()}`, agent, new Date().toISOString());
  await store.createSession({
    head,
    events: [{ type: "session_created", data: { agent } }],
    ...(options.withMessage ? { inbox: { entry: message("hello"), dedupeKey: null } } : {}),
  });
  return head;
}

/** A session pinned to `fingerprint` (null: not pinned), with a message waiting unless told otherwise. */
async function createPinned(
  store: SessionStore,
  fingerprint: string | null,
  options: { waiting?: boolean; withMessage?: boolean } = {},
): Promise<SessionHead> {
  const head: SessionHead = {
    ...newSessionHead(`s-${randomUUID()}`, agent, new Date().toISOString()),
    definition:
      fingerprint === null
        ? null
        : {
            fingerprint,
            waiting: options.waiting ? { reason: "unserved", since: Date.now(), error: null } : null,
          },
  };
  await store.createSession({
    head,
    events: [{ type: "session_created", data: { agent } }],
    ...(options.withMessage === false ? {} : { inbox: { entry: message("hello"), dedupeKey: null } }),
  });
  return head;
}

/** Leases until null, releasing nothing: the IDs of every session this request gets. */
async function leaseAll(acquire: () => Promise<Lease | null>): Promise<string[]> {
  const ids: string[] = [];
  for (let lease = await acquire(); lease; lease = await acquire()) ids.push(lease.sessionId);
  return ids.sort();
}

async function lease(store: SessionStore, workerId = "w1", ttlMs = 5_000): Promise<Lease> {
  const granted = await store.acquireLease({ workerId, ttlMs, agents: [agent] });
  assert.ok(granted, "a runnable session is leased");
  return granted;
}

/** Records a store's notifications; `waitFor` resolves once one matches (5 s at most). */
function watchNotifications(store: SessionStore) {
  const seen: StoreNotification[] = [];
  const stop = store.subscribe((n) => seen.push(n));
  const waitFor = async (match: (n: StoreNotification) => boolean, what = "notification") => {
    const deadline = Date.now() + 5_000;
    while (!seen.some(match)) {
      if (Date.now() > deadline) throw new Error(`no ${what}`);
      await sleep(10);
    }
  };
  return { seen, waitFor, stop };
}

export function storeConformance(t: TestApi, makeHarness: () => Promise<StoreHarness>): void {
  const harnesses: StoreHarness[] = [];
  const open = async () => {
    const harness = await makeHarness();
    harnesses.push(harness);
    return harness;
  };
  const cleanup = async () => {
    for (const h of harnesses.splice(0)) {
      await h.store.close();
      await h.cleanup?.();
    }
  };
  t.afterEach?.(cleanup);
  const test = (name: string, body: () => Promise<void>) =>
    t.it(
      name,
      async () => {
        try {
          await body();
        } finally {
          if (!t.afterEach) await cleanup();
        }
      },
      30_000,
    );

  t.describe("store conformance", () => {
    test("createSession writes the head, its events and the first inbox entry; a taken ID is refused", async () => {
      const { store, raw } = await open();
      const head = await create(store, { withMessage: true });
      const row = await raw.session(head.sessionId);
      assert.ok(row);
      assert.equal(row.version, 1);
      assert.equal(row.agent, agent);
      assert.equal(row.fence, 0);
      assert.equal(row.leaseOwner, null);
      assert.deepEqual(row.head, head);
      assert.deepEqual(
        (await raw.events(head.sessionId)).map((e) => [e.seq, e.type]),
        [[1, "session_created"]],
      );
      assert.deepEqual(
        (await raw.inbox(head.sessionId)).map((e) => [e.seq, e.entry]),
        [[1, message("hello")]],
      );
      await assert.rejects(
        store.createSession({
          head: { ...head, turnCount: 9 },
          events: [{ type: "session_created", data: { agent } }],
        }),
        SessionStateError.isInstance,
      );
      assert.deepEqual((await raw.session(head.sessionId))?.head, head, "the refused create changed nothing");
      assert.equal((await raw.events(head.sessionId)).length, 1);
    });

    test("a commit writes head, history and events atomically, under the lease", async () => {
      const { store, raw } = await open();
      const head = await create(store, { withMessage: true });
      const l = await lease(store);
      assert.equal(l.fence, 1);
      const next: SessionHead = { ...head, inboxCursor: 1, historyLength: 2, turnCount: 1 };
      const result = await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 1,
        head: next,
        runnable: true,
        appendHistory: [item("one"), item("two")],
        events: [noteEvent("a"), noteEvent("b")],
      });
      assert.deepEqual(result, { version: 2, lastEventSeq: 3 });
      const row = await raw.session(head.sessionId);
      assert.equal(row?.version, 2);
      assert.equal(row?.runnable, true);
      assert.equal(row?.inboxCursor, 1);
      assert.deepEqual(row?.head, next);
      assert.deepEqual(await raw.history(head.sessionId), [item("one"), item("two")]);
      assert.deepEqual(
        (await raw.events(head.sessionId)).map((e) => e.seq),
        [1, 2, 3],
      );
      assert.deepEqual((await store.loadSession(head.sessionId))?.head, next);
      assert.deepEqual(await store.readHistory(head.sessionId, 1), [item("two")]);
      const more = await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 2,
        head: { ...next, historyLength: 3 },
        runnable: false,
        appendHistory: [item("three")],
        events: [],
      });
      assert.equal(more.version, 3);
      assert.deepEqual((await raw.history(head.sessionId)).length, 3, "history is appended, not rewritten");
    });

    test("a commit of events only keeps the version", async () => {
      const { store, raw } = await open();
      const head = await create(store, { withMessage: true });
      const l = await lease(store);
      const result = await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 1,
        events: [noteEvent("x")],
      });
      assert.deepEqual(result, { version: 1, lastEventSeq: 2 });
      assert.equal((await raw.session(head.sessionId))?.version, 1);
      assert.deepEqual((await raw.session(head.sessionId))?.head, head);
    });

    test("a version conflict is refused and writes nothing", async () => {
      const { store, raw } = await open();
      const head = await create(store, { withMessage: true });
      const l = await lease(store);
      await assert.rejects(
        store.commit({
          sessionId: head.sessionId,
          fence: l.fence,
          expectedVersion: 7,
          head: { ...head, turnCount: 5 },
          runnable: false,
          appendHistory: [item("lost")],
          events: [noteEvent("lost")],
        }),
        VersionConflictError.isInstance,
      );
      const row = await raw.session(head.sessionId);
      assert.equal(row?.version, 1);
      assert.deepEqual(row?.head, head);
      assert.equal((await raw.history(head.sessionId)).length, 0);
      assert.equal((await raw.events(head.sessionId)).length, 1);
    });

    test("only one of many concurrent workers gets the lease", async () => {
      const { store, raw } = await open();
      const head = await create(store, { withMessage: true });
      const overlap = overlapCounter();
      const grants = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          overlap.run(() => store.acquireLease({ workerId: `w${i}`, ttlMs: 5_000, agents: [agent] })),
        ),
      );
      assert.ok(overlap.most > 1, `the calls overlapped (at most ${overlap.most} in flight at once)`);
      const won = grants.filter((g) => g !== null);
      assert.equal(won.length, 1);
      const row = await raw.session(head.sessionId);
      assert.equal(row?.fence, 1);
      assert.equal(row?.leaseOwner, won[0]!.workerId);
      assert.ok((row?.leaseExpiresAt ?? 0) > Date.now());
    });

    test("a session with nothing to do is not leased; other agents' sessions are not leased", async () => {
      const { store } = await open();
      const head = await create(store);
      assert.equal(await store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: [agent] }), null);
      await store.enqueue(head.sessionId, message("go"), null);
      assert.equal(await store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: ["another-agent"] }), null);
      const l = await lease(store);
      await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 1,
        head: { ...head, inboxCursor: 1 },
        runnable: false,
        events: [],
      });
      await store.releaseLease(l);
      assert.equal(
        await store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: [agent] }),
        null,
        "consumed and idle",
      );
    });

    test("an expired lease is taken over, and the stale worker can neither commit nor renew", async () => {
      const { store, raw } = await open();
      const head = await create(store, { withMessage: true });
      const stale = await lease(store, "old", LEASE_TTL_MS);
      assert.equal(
        await store.acquireLease({ workerId: "new", ttlMs: 5_000, agents: [agent] }),
        null,
        "the lease is live",
      );
      // Taken over as soon as it expired: asked again until it is granted, not after a fixed sleep.
      const fresh = await eventually(() => store.acquireLease({ workerId: "new", ttlMs: 5_000, agents: [agent] }));
      assert.ok(Date.now() >= stale.expiresAt, "not granted before the old lease expired");
      assert.equal(fresh.fence, stale.fence + 1);
      await assert.rejects(
        store.commit({
          sessionId: head.sessionId,
          fence: stale.fence,
          expectedVersion: 1,
          head: { ...head, turnCount: 3 },
          runnable: false,
          events: [noteEvent("stale")],
        }),
        LeaseLostError.isInstance,
      );
      assert.equal(await store.renewLease(stale, 5_000), null);
      await store.releaseLease(stale);
      const row = await raw.session(head.sessionId);
      assert.equal(row?.leaseOwner, "new", "a stale release does not drop the new lease");
      assert.equal(row?.version, 1);
      assert.equal((await raw.events(head.sessionId)).length, 1);
      const renewed = await store.renewLease(fresh, 5_000);
      assert.ok(renewed && renewed.expiresAt >= fresh.expiresAt);
      await store.commit({
        sessionId: head.sessionId,
        fence: fresh.fence,
        expectedVersion: 1,
        head: { ...head, inboxCursor: 1 },
        runnable: false,
        events: [],
      });
    });

    test("a commit after the lease expired is refused even when nobody took over", async () => {
      const { store } = await open();
      const head = await create(store, { withMessage: true });
      const l = await lease(store, "w", LEASE_TTL_MS);
      await sleepUntil(l.expiresAt + 50);
      await assert.rejects(
        store.commit({ sessionId: head.sessionId, fence: l.fence, expectedVersion: 1, events: [noteEvent("late")] }),
        LeaseLostError.isInstance,
      );
    });

    test("the inbox keeps order under concurrent writers and refuses duplicates by key", async () => {
      const { store, raw } = await open();
      const head = await create(store);
      const overlap = overlapCounter();
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          overlap.run(() => store.enqueue(head.sessionId, message(`m${i}`), `k${i}`)),
        ),
      );
      assert.ok(overlap.most > 1, `the writers overlapped (at most ${overlap.most} in flight at once)`);
      assert.deepEqual(
        results.map((r) => r.seq).sort((a, b) => a - b),
        Array.from({ length: 12 }, (_, i) => i + 1),
      );
      const again = await store.enqueue(head.sessionId, message("m3 again"), "k3");
      assert.deepEqual(again, { seq: results[3]!.seq, duplicate: true });
      assert.equal((await raw.inbox(head.sessionId)).length, 12, "the duplicate wrote nothing");
      const tail = await store.readInbox(head.sessionId, 6);
      assert.deepEqual(
        tail.map((e) => e.seq),
        [7, 8, 9, 10, 11, 12],
      );
      await assert.rejects(store.enqueue("no-such-session", message("x"), null), SessionNotFoundError.isInstance);
    });

    test("event cursors page through the log in order", async () => {
      const { store } = await open();
      const head = await create(store, { withMessage: true });
      const l = await lease(store);
      for (let i = 0; i < 5; i++) {
        await store.commit({
          sessionId: head.sessionId,
          fence: l.fence,
          expectedVersion: 1,
          events: [noteEvent(`${i}`), noteEvent(`${i}b`)],
        });
      }
      const all = await store.readEvents(head.sessionId, 0);
      assert.deepEqual(
        all.map((e) => e.seq),
        Array.from({ length: 11 }, (_, i) => i + 1),
      );
      const page = await store.readEvents(head.sessionId, 4, 3);
      assert.deepEqual(
        page.map((e) => e.seq),
        [5, 6, 7],
      );
      assert.deepEqual(page[0], all[4]);
      assert.equal(typeof page[0]?.at, "string");
      assert.deepEqual(await store.readEvents(head.sessionId, 11), []);
    });

    test("malformed input is refused with InvalidInputError and changes nothing", async () => {
      const { store, raw } = await open();
      const invalid = InvalidInputError.isInstance;
      const fresh = newSessionHead(`s-${randomUUID()}`, agent, new Date().toISOString());
      await assert.rejects(store.createSession({ head: fresh, events: [{ type: "x" } as never] }), invalid);
      await assert.rejects(store.createSession({ head: { ...fresh, agent: "" }, events: [] }), invalid);
      await assert.rejects(
        store.createSession({ head: fresh, events: [], inbox: { entry: { kind: "nope" } as never, dedupeKey: null } }),
        invalid,
      );
      assert.equal(await raw.session(fresh.sessionId), null, "no refused create wrote a session");

      const head = await create(store, { withMessage: true });
      const l = await lease(store);
      const base = { sessionId: head.sessionId, fence: l.fence, expectedVersion: 1, events: [] };
      await assert.rejects(store.commit({ ...base, head }), invalid, "a head without runnable");
      await assert.rejects(store.commit({ ...base, head: { ...head, sessionId: "another" }, runnable: true }), invalid);
      await assert.rejects(store.commit({ ...base, appendHistory: [item("x")] }), invalid, "history without a head");
      await assert.rejects(store.commit({ ...base, fence: -1 }), invalid);
      await assert.rejects(store.enqueue(head.sessionId, { kind: "nope" } as never, null), invalid);
      await assert.rejects(store.enqueue(head.sessionId, message("x"), ""), invalid);
      await assert.rejects(store.readHistory(head.sessionId, -1), invalid);
      await assert.rejects(store.readEvents(head.sessionId, 0, 0), invalid);
      await assert.rejects(store.readInbox("", 0), invalid);
      await assert.rejects(store.acquireLease({ workerId: "", ttlMs: 1_000, agents: [agent] }), invalid);
      await assert.rejects(store.renewLease(l, 0), invalid);
      const row = await raw.session(head.sessionId);
      assert.equal(row?.version, 1);
      assert.deepEqual(row?.head, head);
      assert.equal((await raw.history(head.sessionId)).length, 0);
      assert.equal((await raw.events(head.sessionId)).length, 1);
      assert.equal((await raw.inbox(head.sessionId)).length, 1);
    });

    test("a commit is refused in a fixed order: no session, then a lost lease, then a moved version", async () => {
      const { store, raw } = await open();
      await assert.rejects(
        store.commit({ sessionId: `s-${randomUUID()}`, fence: 1, expectedVersion: 1, events: [noteEvent("nobody")] }),
        SessionNotFoundError.isInstance,
      );
      const head = await create(store, { withMessage: true });
      const l = await lease(store);
      await assert.rejects(
        store.commit({
          sessionId: head.sessionId,
          fence: l.fence + 1,
          expectedVersion: 9,
          head,
          runnable: false,
          events: [noteEvent("x")],
        }),
        LeaseLostError.isInstance,
        "a wrong fence and a wrong version: the lease is checked first",
      );
      await assert.rejects(
        store.commit({
          sessionId: head.sessionId,
          fence: l.fence,
          expectedVersion: 9,
          head,
          runnable: false,
          events: [noteEvent("x")],
        }),
        VersionConflictError.isInstance,
      );
      assert.equal((await raw.events(head.sessionId)).length, 1, "no refused commit wrote an event");
    });

    test("a lease is renewed only for the worker that holds it", async () => {
      const { store, raw } = await open();
      const head = await create(store, { withMessage: true });
      const l = await lease(store, "holder", 5_000);
      assert.equal(await store.renewLease({ ...l, workerId: "intruder" }, 60_000), null);
      const row = await raw.session(head.sessionId);
      assert.equal(row?.leaseOwner, "holder");
      assert.equal(row?.leaseExpiresAt, l.expiresAt, "the refused renewal did not move the expiry");
      const renewed = await store.renewLease(l, 60_000);
      assert.ok(renewed && renewed.expiresAt > l.expiresAt);
    });

    test("reads of an unknown session find nothing; they do not throw", async () => {
      const { store } = await open();
      const id = `s-${randomUUID()}`;
      assert.equal(await store.loadSession(id), null);
      assert.deepEqual(await store.readHistory(id), []);
      assert.deepEqual(await store.readInbox(id, 0), []);
      assert.deepEqual(await store.readEvents(id, 0), []);
    });

    test(`a session ID is at most ${maxSessionIdLength} characters in every store`, async () => {
      const { store, raw } = await open();
      const long = newSessionHead(`s-${"x".repeat(maxSessionIdLength - 1)}`, agent, new Date().toISOString());
      await assert.rejects(store.createSession({ head: long, events: [] }), InvalidInputError.isInstance);
      assert.equal(await raw.session(long.sessionId), null);
      const longest = newSessionHead(`s-${"x".repeat(maxSessionIdLength - 2)}`, agent, new Date().toISOString());
      await store.createSession({ head: longest, events: [] });
      assert.equal((await store.loadSession(longest.sessionId))?.head.sessionId, longest.sessionId);
    });

    test("a stored head comes back as stored; core's versioned parser refuses an unknown version", async () => {
      const { store, raw } = await open();
      // A head written by a newer release: the store keeps and returns it whole, core refuses to read it.
      const newer = {
        ...newSessionHead(`s-${randomUUID()}`, agent, new Date().toISOString()),
        schemaVersion: 2,
        addedLater: true,
      };
      await store.createSession({ head: newer as unknown as SessionHead, events: [] });
      assert.deepEqual((await raw.session(newer.sessionId))?.head, newer);
      assert.deepEqual((await store.loadSession(newer.sessionId))?.head, newer);
      await assert.rejects(
        loadStoredSession(store, newer.sessionId),
        (error: unknown) =>
          StoredStateError.isInstance(error) && error.reason === "unknown_version" && error.version === 2,
      );
      const current = await create(store);
      assert.deepEqual((await loadStoredSession(store, current.sessionId))?.head, current);
    });

    test("a lease request with fingerprints gets only sessions pinned to them, or not pinned yet", async () => {
      const { store, raw } = await open();
      const a = await createPinned(store, "fp-a");
      const b = await createPinned(store, "fp-b");
      const unpinned = await createPinned(store, null);
      assert.equal((await raw.session(a.sessionId))?.fingerprint, "fp-a");
      assert.equal((await raw.session(unpinned.sessionId))?.fingerprint, null);
      const got = await leaseAll(() =>
        store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: [agent], fingerprints: ["fp-a"] }),
      );
      assert.deepEqual(got, [a.sessionId, unpinned.sessionId].sort(), "never the session pinned to fp-b");
      assert.equal((await raw.session(b.sessionId))?.leaseOwner, null);
      const rest = await leaseAll(() => store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: [agent] }));
      assert.deepEqual(rest, [b.sessionId], "without fingerprints, whatever the pin");
      await assert.rejects(
        store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: [agent], fingerprints: "fp-a" as never }),
        InvalidInputError.isInstance,
      );
      await assert.rejects(
        store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: [agent], fingerprints: [], migrating: [""] }),
        InvalidInputError.isInstance,
      );
    });

    test("a commit moves the pin the store keeps: fingerprint and waiting mark follow the head", async () => {
      const { store, raw } = await open();
      const head = await createPinned(store, null);
      const l = await lease(store);
      const pinned: SessionHead = { ...head, inboxCursor: 1, definition: { fingerprint: "fp-a", waiting: null } };
      await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 1,
        head: pinned,
        runnable: true,
        events: [],
      });
      let row = await raw.session(head.sessionId);
      assert.equal(row?.fingerprint, "fp-a");
      assert.equal(row?.definitionWaiting, false);
      const waiting: SessionHead = {
        ...pinned,
        definition: { fingerprint: "fp-a", waiting: { reason: "unserved", since: 1, error: null } },
      };
      await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 2,
        head: waiting,
        runnable: true,
        events: [],
      });
      row = await raw.session(head.sessionId);
      assert.equal(row?.definitionWaiting, true);
      await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 3,
        head: { ...pinned, definition: { fingerprint: "fp-b", waiting: null } },
        runnable: true,
        events: [],
      });
      row = await raw.session(head.sessionId);
      assert.equal(row?.fingerprint, "fp-b");
      assert.equal(row?.definitionWaiting, false);
      await store.releaseLease(l);
      assert.equal(
        await store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: [agent], fingerprints: ["fp-a"] }),
        null,
        "the session moved to fp-b: a worker of fp-a no longer gets it",
      );
      assert.ok(await store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: [agent], fingerprints: ["fp-b"] }));
    });

    test("announcements: a migrating fingerprint is leased only while no live announcement serves it", async () => {
      const { store } = await open();
      if (!store.announceDefinitions || !store.acquireUnservedLease) {
        assert.equal(store.announceDefinitions, store.acquireUnservedLease, "a store has both or neither");
        return;
      }
      const old = await createPinned(store, "fp-old");
      const request = {
        workerId: "new",
        ttlMs: 5_000,
        agents: [agent],
        fingerprints: ["fp-new"],
        migrating: ["fp-old"],
      };
      await store.announceDefinitions({
        workerId: "old",
        definitions: [{ agent, fingerprint: "fp-old", role: "serves" }],
        ttlMs: LEASE_TTL_MS,
      });
      assert.equal(await store.acquireLease(request), null, "a live worker serves fp-old: it is not migrated away");
      await store.announceDefinitions({
        workerId: "other",
        definitions: [{ agent, fingerprint: "fp-old", role: "migrates" }],
        ttlMs: 60_000,
      });
      await sleep(LEASE_TTL_MS + 50);
      const got = await store.acquireLease(request);
      assert.equal(got?.sessionId, old.sessionId, "the serving announcement expired: the migrating worker gets it");
      await store.releaseLease(got!);
      await store.announceDefinitions({
        workerId: "old",
        definitions: [{ agent, fingerprint: "fp-old", role: "serves" }],
        ttlMs: 60_000,
      });
      assert.equal(await store.acquireLease(request), null);
      await store.announceDefinitions({ workerId: "old", definitions: [], ttlMs: 60_000 });
      assert.equal((await store.acquireLease(request))?.sessionId, old.sessionId, "an empty announcement withdraws");
      await assert.rejects(
        store.announceDefinitions({ workerId: "w", definitions: [{ agent, fingerprint: "f" }] as never, ttlMs: 1_000 }),
        InvalidInputError.isInstance,
      );
      await assert.rejects(
        store.announceDefinitions({ workerId: "", definitions: [], ttlMs: 1_000 }),
        InvalidInputError.isInstance,
      );
    });

    test("an unserved lease: a session with work pinned to a fingerprint nobody announces, not marked waiting", async () => {
      const { store, raw } = await open();
      if (!store.announceDefinitions || !store.acquireUnservedLease) {
        assert.equal(store.announceDefinitions, store.acquireUnservedLease, "a store has both or neither");
        return;
      }
      const orphan = await createPinned(store, "fp-gone");
      await createPinned(store, "fp-gone", { waiting: true });
      await createPinned(store, "fp-gone", { withMessage: false });
      await createPinned(store, "fp-live");
      await createPinned(store, "fp-own");
      await createPinned(store, "fp-mine-to-migrate");
      await createPinned(store, null);
      await store.announceDefinitions({
        workerId: "other",
        definitions: [{ agent, fingerprint: "fp-live", role: "migrates" }],
        ttlMs: 60_000,
      });
      const request = {
        workerId: "w",
        ttlMs: 5_000,
        agents: [agent],
        fingerprints: ["fp-own"],
        migrating: ["fp-mine-to-migrate"],
      };
      const got = await store.acquireUnservedLease(request);
      assert.equal(got?.sessionId, orphan.sessionId);
      assert.equal((await raw.session(orphan.sessionId))?.leaseOwner, "w");
      assert.equal(
        await store.acquireUnservedLease(request),
        null,
        "not one marked waiting, idle, announced, served or migrated by the caller, unpinned, or leased",
      );
      await store.releaseLease(got!);
      await store.announceDefinitions({
        workerId: "revived",
        definitions: [{ agent, fingerprint: "fp-gone", role: "serves" }],
        ttlMs: LEASE_TTL_MS,
      });
      assert.equal(await store.acquireUnservedLease(request), null, "a live worker serves it again");
      await sleep(LEASE_TTL_MS + 50);
      assert.equal(
        (await store.acquireUnservedLease(request))?.sessionId,
        orphan.sessionId,
        "its announcement expired",
      );
    });

    test("a commit that releases the lease writes, then releases it as releaseLease would; a refused one releases nothing", async () => {
      const { store, raw } = await open();
      const head = await create(store, { withMessage: true });
      const l = await lease(store);
      await assert.rejects(
        store.commit({
          sessionId: head.sessionId,
          fence: l.fence,
          expectedVersion: 7,
          head: { ...head, inboxCursor: 1 },
          runnable: false,
          events: [],
          release: true,
        }),
        VersionConflictError.isInstance,
      );
      assert.equal((await raw.session(head.sessionId))?.leaseOwner, "w1", "a refused commit keeps the lease");
      const result = await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 1,
        head: { ...head, inboxCursor: 1 },
        runnable: false,
        events: [noteEvent("last")],
        release: true,
      });
      assert.equal(result.version, 2);
      assert.equal(result.lastEventSeq, 2);
      const row = await raw.session(head.sessionId);
      assert.equal(row?.version, 2);
      assert.deepEqual(row?.head, { ...head, inboxCursor: 1 });
      assert.deepEqual(
        (await raw.events(head.sessionId)).map((e) => e.seq),
        [1, 2],
      );
      if (result.released !== true) {
        // A store without the option: the commit is written and the lease is still held.
        assert.equal(row?.leaseOwner, "w1");
        return;
      }
      assert.equal(row?.leaseOwner, null);
      assert.equal(row?.fence, l.fence, "the fence is kept");
      await assert.rejects(
        store.commit({ sessionId: head.sessionId, fence: l.fence, expectedVersion: 2, events: [noteEvent("after")] }),
        LeaseLostError.isInstance,
        "no commit under a released lease",
      );
      assert.equal(await store.renewLease(l, 5_000), null);
      assert.equal(await store.acquireLease({ workerId: "w2", ttlMs: 5_000, agents: [agent] }), null, "idle");
      await store.enqueue(head.sessionId, message("again"), null);
      const next = await lease(store, "w2");
      assert.equal(next.fence, l.fence + 1);
    });

    test("a commit that releases a session left with work wakes the workers, and the session is leased again", async () => {
      const { store } = await open();
      const head = await create(store, { withMessage: true });
      await store.enqueue(head.sessionId, message("second"), null);
      const l = await lease(store);
      const { waitFor, stop } = watchNotifications(store);
      try {
        const result = await store.commit({
          sessionId: head.sessionId,
          fence: l.fence,
          expectedVersion: 1,
          head: { ...head, inboxCursor: 1 },
          runnable: false,
          events: [],
          release: true,
        });
        if (result.released !== true) return;
        await waitFor((n) => n.kind === "work", "work notification after the release");
        const next = await lease(store, "w2");
        assert.equal(next.sessionId, head.sessionId);
        assert.equal(next.fence, l.fence + 1);
      } finally {
        stop();
      }
    });

    test("a commit that extends the lease keeps it live past its old expiry; a bad TTL is refused and writes nothing", async () => {
      const { store, raw } = await open();
      const head = await create(store, { withMessage: true });
      const l = await lease(store, "w1", LEASE_TTL_MS);
      await assert.rejects(
        store.commit({ sessionId: head.sessionId, fence: l.fence, expectedVersion: 1, events: [], leaseTtlMs: -5 }),
        InvalidInputError.isInstance,
      );
      const before = Date.now();
      const result = await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 1,
        head: { ...head, inboxCursor: 1 },
        runnable: true,
        events: [noteEvent("step")],
        leaseTtlMs: 10_000,
      });
      assert.equal(result.version, 2);
      assert.equal((await raw.events(head.sessionId)).length, 2);
      const row = await raw.session(head.sessionId);
      if (result.leaseExpiresAt === undefined) {
        // A store without the option leaves the expiry as it was.
        assert.equal(row?.leaseExpiresAt, l.expiresAt);
        return;
      }
      assert.ok(result.leaseExpiresAt >= before + 9_000, "extended to about ten seconds from the commit");
      assert.equal(row?.leaseExpiresAt, result.leaseExpiresAt);
      assert.equal(row?.leaseOwner, "w1");
      assert.equal(row?.fence, l.fence, "an extension is no new grant");
      await sleepUntil(l.expiresAt + 50);
      assert.equal(await store.acquireLease({ workerId: "w2", ttlMs: 5_000, agents: [agent] }), null, "still held");
      const after = await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 2,
        events: [noteEvent("events only")],
        leaseTtlMs: 10_000,
      });
      assert.ok((after.leaseExpiresAt ?? 0) >= result.leaseExpiresAt);
      // With release the lease goes; there is nothing left to extend.
      const released = await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 2,
        events: [],
        release: true,
        leaseTtlMs: 10_000,
      });
      if (released.released === true) assert.equal((await raw.session(head.sessionId))?.leaseOwner, null);
    });

    test("acquireLeaseWithSession grants as acquireLease does and answers the session as loadSession would", async () => {
      const { store, raw } = await open();
      if (!store.acquireLeaseWithSession) return; // optional
      assert.equal(await store.acquireLeaseWithSession({ workerId: "w", ttlMs: 5_000, agents: [agent] }), null);
      const head = await createPinned(store, "fp-a");
      assert.equal(
        await store.acquireLeaseWithSession({ workerId: "w", ttlMs: 5_000, agents: [agent], fingerprints: ["fp-b"] }),
        null,
        "pinned to a fingerprint the worker does not serve",
      );
      const got = await store.acquireLeaseWithSession({
        workerId: "w",
        ttlMs: 5_000,
        agents: [agent],
        fingerprints: ["fp-a"],
      });
      assert.ok(got);
      assert.equal(got.lease.sessionId, head.sessionId);
      assert.equal(got.lease.workerId, "w");
      assert.equal(got.lease.fence, 1);
      assert.ok(got.lease.expiresAt > Date.now());
      assert.deepEqual(got.session, await store.loadSession(head.sessionId));
      assert.deepEqual(got.session.head, head);
      assert.equal((await raw.session(head.sessionId))?.leaseOwner, "w");
      assert.equal(
        await store.acquireLeaseWithSession({ workerId: "w2", ttlMs: 5_000, agents: [agent] }),
        null,
        "a leased session is not granted twice",
      );
      // Without fingerprints, as acquireLease: every pin.
      const other = await createPinned(store, "fp-z");
      const any = await store.acquireLeaseWithSession({ workerId: "w3", ttlMs: 5_000, agents: [agent] });
      assert.equal(any?.lease.sessionId, other.sessionId);
      assert.deepEqual(any?.session.head, other);
    });

    test("findWork answers what acquireLease would lease, with its fence, and writes nothing", async () => {
      const { store, raw } = await open();
      if (!store.findWork) return; // optional, with Commit.claim
      const request = { workerId: "w", ttlMs: 5_000, agents: [agent] };
      assert.equal(await store.findWork(request), null, "no session has work");
      await create(store); // no work
      const head = await createPinned(store, "fp-a");
      assert.equal(await store.findWork({ ...request, fingerprints: ["fp-b"] }), null, "pinned elsewhere");
      const before = await raw.session(head.sessionId);
      const found = await store.findWork({ ...request, fingerprints: ["fp-a"] });
      assert.ok(found);
      assert.equal(found.sessionId, head.sessionId);
      assert.equal(found.fence, 0);
      assert.deepEqual(found.session, await store.loadSession(head.sessionId));
      assert.deepEqual(await raw.session(head.sessionId), before, "nothing written");
      assert.equal(await store.findWork({ ...request, skip: [head.sessionId] }), null, "passed over");
      await assert.rejects(
        store.findWork({ ...request, skip: "x" as unknown as string[] }),
        InvalidInputError.isInstance,
      );
      // A session a live lease holds is not found; once the lease is released it is, at its new fence.
      const l = await lease(store, "w2");
      assert.equal(await store.findWork(request), null, "leased");
      await store.releaseLease(l);
      assert.equal((await store.findWork(request))?.fence, l.fence);
    });

    test("a commit with a claim takes a free lease at the fence findWork answered; a second claim is refused and writes nothing", async () => {
      const { store, raw } = await open();
      if (!store.findWork) return; // optional, with Commit.claim
      const head = await create(store, { withMessage: true });
      const found = await store.findWork({ workerId: "w1", ttlMs: 5_000, agents: [agent] });
      assert.ok(found);
      const claim = (workerId: string, over: Partial<Commit> = {}) =>
        store.commit({
          sessionId: head.sessionId,
          fence: found.fence + 1,
          expectedVersion: 1,
          head: { ...head, inboxCursor: 1 },
          runnable: true,
          appendHistory: [item(`from ${workerId}`)],
          events: [noteEvent(`claimed by ${workerId}`)],
          claim: { workerId },
          leaseTtlMs: 10_000,
          ...over,
        });
      await assert.rejects(claim("w1", { leaseTtlMs: undefined }), InvalidInputError.isInstance, "a claim needs a TTL");
      await assert.rejects(claim("w1", { claim: { workerId: "" } }), InvalidInputError.isInstance);
      const before = Date.now();
      const [first, second] = await Promise.allSettled([claim("w1"), claim("w2")]);
      const won = [first, second].filter((r) => r.status === "fulfilled");
      const lost = [first, second].filter((r) => r.status === "rejected");
      assert.equal(won.length, 1, "one claim wins");
      assert.ok(LeaseLostError.isInstance((lost[0] as PromiseRejectedResult).reason), "the other loses its lease");
      const winner = first.status === "fulfilled" ? "w1" : "w2";
      const result = (won[0] as PromiseFulfilledResult<CommitResult>).value;
      assert.equal(result.version, 2);
      assert.ok((result.leaseExpiresAt ?? 0) >= before + 9_000, "for the claim's TTL from the commit");
      const row = await raw.session(head.sessionId);
      assert.equal(row?.leaseOwner, winner);
      assert.equal(row?.fence, found.fence + 1);
      assert.equal(row?.leaseExpiresAt, result.leaseExpiresAt);
      assert.deepEqual(
        (await store.readHistory(head.sessionId)).map((i) => i.display.text),
        [`from ${winner}`],
        "only the winner's write is there",
      );
      assert.equal((await raw.events(head.sessionId)).length, 2);
      // Under the claimed lease the winner commits as with a granted one; nobody else gets it.
      assert.equal(await store.acquireLease({ workerId: "w3", ttlMs: 5_000, agents: [agent] }), null);
      assert.equal(await store.findWork({ workerId: "w3", ttlMs: 5_000, agents: [agent] }), null);
      const next = await store.commit({
        sessionId: head.sessionId,
        fence: found.fence + 1,
        expectedVersion: 2,
        events: [noteEvent("under the claimed lease")],
      });
      assert.equal(next.version, 2);
    });

    test("a claim is refused while a live lease holds the session, at a stale fence, and at a moved version", async () => {
      const { store, raw } = await open();
      if (!store.findWork) return; // optional, with Commit.claim
      const head = await create(store, { withMessage: true });
      const found = await store.findWork({ workerId: "w1", ttlMs: 5_000, agents: [agent] });
      assert.ok(found);
      const claim = (fence: number, expectedVersion = 1) =>
        store.commit({
          sessionId: head.sessionId,
          fence,
          expectedVersion,
          head: { ...head, inboxCursor: 1 },
          runnable: false,
          events: [noteEvent("claim")],
          claim: { workerId: "w1" },
          leaseTtlMs: LEASE_TTL_MS,
        });
      // Another worker was granted the lease after findWork answered: the claim loses.
      const other = await store.acquireLease({ workerId: "w2", ttlMs: LEASE_TTL_MS, agents: [agent] });
      assert.ok(other);
      await assert.rejects(claim(found.fence + 1), LeaseLostError.isInstance);
      // Not even at the fence after the grant's: a live lease holds the session.
      await assert.rejects(claim(other.fence + 1), LeaseLostError.isInstance);
      assert.equal((await raw.session(head.sessionId))?.leaseOwner, "w2", "a claim takes no live lease");
      // Its lease expired: a claim at the fence findWork answered before the grant is stale.
      await sleepUntil(other.expiresAt + 50);
      await assert.rejects(claim(found.fence + 1), LeaseLostError.isInstance);
      const row = await raw.session(head.sessionId);
      assert.equal(row?.version, 1);
      assert.equal(row?.leaseOwner, "w2");
      // At the fence after the expired lease's, the claim takes it; at a moved version it is refused.
      await assert.rejects(claim(other.fence + 1, 7), VersionConflictError.isInstance);
      assert.equal((await raw.session(head.sessionId))?.leaseOwner, "w2", "a refused claim takes nothing");
      const taken = await claim(other.fence + 1);
      assert.equal(taken.version, 2);
      assert.equal((await raw.session(head.sessionId))?.leaseOwner, "w1");
      await assert.rejects(
        store.commit({
          sessionId: "nobody",
          fence: 1,
          expectedVersion: 1,
          events: [],
          claim: { workerId: "w1" },
          leaseTtlMs: 1_000,
        }),
        SessionNotFoundError.isInstance,
      );
    });

    test("subscribers are woken by new inbox entries, events and released work", async () => {
      const { store } = await open();
      const head = await create(store);
      const { seen, waitFor, stop } = watchNotifications(store);
      await store.enqueue(head.sessionId, message("wake"), null);
      await waitFor((n) => n.kind === "inbox" && n.sessionId === head.sessionId);
      await waitFor((n) => n.kind === "work");
      const l = await lease(store);
      seen.length = 0;
      await store.commit({
        sessionId: head.sessionId,
        fence: l.fence,
        expectedVersion: 1,
        head: { ...head, inboxCursor: 1 },
        runnable: true,
        events: [noteEvent("e")],
      });
      await waitFor((n) => n.kind === "events" && n.sessionId === head.sessionId);
      seen.length = 0;
      await store.releaseLease(l);
      await waitFor((n) => n.kind === "work");
      stop();
    });

    test("an entry for a session a live lease holds wakes its holder only (an inbox notice, no work); once the lease lapsed it wakes the workers", async () => {
      const { store } = await open();
      const head = await create(store, { withMessage: true });
      const l = await lease(store, "w1", LEASE_TTL_MS);
      const { seen, waitFor, stop } = watchNotifications(store);
      try {
        await store.enqueue(head.sessionId, message("while leased"), null);
        // A later write's notice: a store's notices arrive in the order of its writes, so a work
        // notice of the entry would have come before it.
        await store.commit({
          sessionId: head.sessionId,
          fence: l.fence,
          expectedVersion: 1,
          events: [noteEvent("marker")],
        });
        await waitFor((n) => n.kind === "events" && n.sessionId === head.sessionId);
        assert.ok(
          seen.some((n) => n.kind === "inbox" && n.sessionId === head.sessionId),
          "the holder hears the entry",
        );
        assert.deepEqual(
          seen.filter((n) => n.kind === "work"),
          [],
          "no other worker may take the session, so none is woken",
        );
        await sleepUntil(l.expiresAt + 50);
        seen.length = 0;
        await store.enqueue(head.sessionId, message("after the lease lapsed"), null);
        await waitFor((n) => n.kind === "work");
        const next = await lease(store, "w2");
        assert.equal(next.sessionId, head.sessionId);
      } finally {
        stop();
      }
    });
  });
}
