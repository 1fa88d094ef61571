import { connect, createServer, type AddressInfo, type Socket } from "node:net";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { ConfigurationError } from "@durable-agents/core";
import type { StoreNotification } from "@durable-agents/core/engine";
import { PostgresStore } from "../src/index.js";
import { created, delta, head, newId, useDatabase } from "./helpers.js";

const db = useDatabase();

/** Collects notifications and waits for one that matches. */
function recorder() {
  const seen: StoreNotification[] = [];
  const waiters: { match: (n: StoreNotification) => boolean; resolve: () => void }[] = [];
  const listener = (notification: StoreNotification) => {
    seen.push(notification);
    for (const waiter of [...waiters]) {
      if (waiter.match(notification)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };
  const waitFor = (match: (n: StoreNotification) => boolean, ms = 5000) =>
    new Promise<void>((resolve, reject) => {
      if (seen.some(match)) return resolve();
      const timer = setTimeout(() => reject(new Error(`no matching notification; saw ${JSON.stringify(seen)}`)), ms);
      waiters.push({
        match,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  return { seen, listener, waitFor };
}

/**
 * A positive signal for a negative check: writes a session of its own (one `events` notification)
 * and waits until `waitFor` saw it. PostgreSQL delivers notifications in commit order, so anything a
 * write committed before it would have notified has arrived by then. Answers the sentinel's ID.
 */
async function sentinel(
  writer: PostgresStore,
  waitFor: (match: (n: StoreNotification) => boolean) => Promise<void>,
): Promise<string> {
  const id = newId("sentinel");
  await writer.createSession({ head: head(id), events: [created()] });
  await waitFor((n) => n.kind === "events" && n.sessionId === id);
  return id;
}

/**
 * A writer, a reader subscribed to its notices (another store, as another process has) and a new
 * session the writer created. `leasable`: the session's agent is its ID, so a lease request for
 * agents `[id]` takes it and no other test's.
 */
async function watchedSession(options: { leasable?: boolean } = {}) {
  const writer = db.store();
  const reader = db.store();
  const watch = recorder();
  reader.subscribe(watch.listener);
  await reader.listening();
  const id = newId();
  await writer.createSession({ head: head(id), events: [created()] });
  if (options.leasable)
    await db.pool.query("UPDATE durable_agents.sessions SET agent = $1 WHERE session_id = $1", [id]);
  return { writer, reader, id, ...watch };
}

/** The notifications in `seen` other than the sentinel's. */
const besides = (seen: StoreNotification[], sentinelId: string) =>
  seen.filter((n) => !(n.kind === "events" && n.sessionId === sentinelId));

describe("subscribe", () => {
  it("wakes subscribers of another store (another process) on enqueue, events and release", async () => {
    const writer = db.store();
    const reader = db.store();
    const { seen, listener, waitFor } = recorder();
    const unsubscribe = reader.subscribe(listener);
    await reader.listening();

    const id = newId();
    await writer.createSession({ head: head(id), events: [created()] });
    await waitFor((n) => n.kind === "events" && n.sessionId === id);

    seen.length = 0;
    await writer.enqueue(id, { kind: "message", text: "hi", messageId: null }, "k");
    await waitFor((n) => n.kind === "inbox" && n.sessionId === id);
    await waitFor((n) => n.kind === "work");

    // A duplicate writes nothing and wakes nobody.
    seen.length = 0;
    expect((await writer.enqueue(id, { kind: "message", text: "hi", messageId: null }, "k")).duplicate).toBe(true);
    expect(besides(seen, await sentinel(writer, waitFor))).toEqual([]);

    await db.pool.query("UPDATE durable_agents.sessions SET agent = $1 WHERE session_id = $1", [id]);
    const lease = (await writer.acquireLease({ workerId: "w", ttlMs: 10_000, agents: [id] }))!;
    seen.length = 0;
    await writer.commit({ sessionId: id, fence: lease.fence, expectedVersion: 1, events: [delta("x")] });
    await waitFor((n) => n.kind === "events" && n.sessionId === id);
    // Still runnable (the message is past the cursor): the release asks for a worker.
    seen.length = 0;
    await writer.releaseLease(lease);
    await waitFor((n) => n.kind === "work");

    // A commit of a head only (no events) and a release of an idle session wake nobody.
    const again = (await writer.acquireLease({ workerId: "w", ttlMs: 10_000, agents: [id] }))!;
    seen.length = 0;
    await writer.commit({
      sessionId: id,
      fence: again.fence,
      expectedVersion: 1,
      head: head(id, { inboxCursor: 1 }),
      runnable: false,
      events: [],
    });
    await writer.releaseLease(again);
    expect(besides(seen, await sentinel(writer, waitFor))).toEqual([]);

    // Another subscriber of the reader stays on to see the sentinel (and the enqueue's wake-ups).
    seen.length = 0;
    const watch = recorder();
    reader.subscribe(watch.listener);
    unsubscribe();
    await writer.enqueue(id, { kind: "message", text: "after", messageId: null }, null);
    await sentinel(writer, watch.waitFor);
    expect(watch.seen).toContainEqual({
      kind: "inbox",
      sessionId: id,
      entries: [{ seq: 2, kind: "message", text: "after", messageId: null }],
    });
    expect(seen).toEqual([]);
  });

  it("carries an enqueued entry in its notice, as readInbox reads it; an entry too long names the session only", async () => {
    const { writer, id, seen, waitFor } = await watchedSession();
    const ofSession = (n: StoreNotification) => n.kind === "inbox" && n.sessionId === id;
    const odd = 'quote " backslash \\ newline \n ünïcode ✓';
    const entries = [
      { kind: "message", text: odd, messageId: "m-1" },
      { kind: "resolution", interruptId: "i-1", approved: false, message: "no" },
      { kind: "cancel", turnId: "turn-1", reason: null, requestId: null },
    ] as const;
    for (const [i, entry] of entries.entries()) {
      seen.length = 0;
      await writer.enqueue(id, entry, null);
      await waitFor(ofSession);
      const notice = seen.find(ofSession) as Extract<StoreNotification, { kind: "inbox" }>;
      expect(notice.entries).toEqual(await writer.readInbox(id, i));
      expect(notice.entries!.map((e) => e.seq)).toEqual([i + 1]);
    }
    // A duplicate writes nothing and carries nothing.
    seen.length = 0;
    expect((await writer.enqueue(id, { kind: "message", text: "once", messageId: null }, "k")).duplicate).toBe(false);
    expect((await writer.enqueue(id, { kind: "message", text: "once", messageId: null }, "k")).duplicate).toBe(true);
    await sentinel(writer, waitFor);
    expect(seen.filter(ofSession)).toHaveLength(1);
    // An entry whose notice would pass PostgreSQL's 8000-byte limit: the notice names the session.
    seen.length = 0;
    await writer.enqueue(id, { kind: "message", text: "x".repeat(8000), messageId: null }, null);
    await waitFor(ofSession);
    expect(seen.filter(ofSession)).toEqual([{ kind: "inbox", sessionId: id }]);
    expect((await writer.readInbox(id, 4)).map((e) => e.seq)).toEqual([5]);
  });

  it("says work after an enqueue only for a session no live lease holds", async () => {
    const { writer, id, seen, waitFor } = await watchedSession({ leasable: true });
    const message = (text: string) => ({ kind: "message", text, messageId: null }) as const;

    // Nobody holds it: a worker may take it.
    seen.length = 0;
    await writer.enqueue(id, message("free"), null);
    await waitFor((n) => n.kind === "work");

    // Held: its holder hears the inbox notice; no other worker could take it. The lease must outlast
    // the enqueue and the sentinel's round trips on a busy machine; then it lapses by itself.
    const lease = (await writer.acquireLease({ workerId: "w", ttlMs: 1_500, agents: [id] }))!;
    seen.length = 0;
    await writer.enqueue(id, message("held"), null);
    await sentinel(writer, waitFor);
    expect(seen.filter((n) => n.kind === "inbox" && n.sessionId === id)).toHaveLength(1);
    expect(seen.filter((n) => n.kind === "work")).toEqual([]);

    // Its lease expired: work again.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lease.expiresAt - Date.now()) + 50));
    seen.length = 0;
    await writer.enqueue(id, message("expired"), null);
    await waitFor((n) => n.kind === "work");
    expect((await writer.readInbox(id, 0)).map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it("carries a commit's events in its notice, as readEvents reads them; a batch too long names the session only", async () => {
    const { writer, reader, id, seen, waitFor } = await watchedSession({ leasable: true });
    await writer.enqueue(id, { kind: "message", text: "hi", messageId: null }, null);
    const lease = (await writer.acquireLease({ workerId: "w", ttlMs: 10_000, agents: [id] }))!;
    await waitFor((n) => n.kind === "events" && n.sessionId === id);
    const ofSession = (n: StoreNotification) => n.kind === "events" && n.sessionId === id;

    // Two events in one commit, with text that JSON must escape: the notice has both, seqs 2 and 3.
    const odd = 'quote " backslash \\ newline \n ünïcode ✓';
    seen.length = 0;
    await writer.commit({ sessionId: id, fence: lease.fence, expectedVersion: 1, events: [delta(odd), delta("b")] });
    await waitFor(ofSession);
    const carried = seen.find(ofSession) as Extract<StoreNotification, { kind: "events" }>;
    expect(carried.events).toEqual(await writer.readEvents(id, 1));
    expect(carried.events!.map((e) => e.seq)).toEqual([2, 3]);
    expect((carried.events![0]!.data as { text: string }).text).toBe(odd);

    // A batch whose notice would pass PostgreSQL's 8000-byte limit: the notice names the session.
    seen.length = 0;
    await writer.commit({
      sessionId: id,
      fence: lease.fence,
      expectedVersion: 1,
      events: [delta("x".repeat(8000))],
    });
    await waitFor(ofSession);
    expect(seen.filter(ofSession)).toEqual([{ kind: "events", sessionId: id }]);
    expect((await writer.readEvents(id, 3)).map((e) => e.seq)).toEqual([4]);

    // A writer whose connection has another DateStyle and TimeZone: the carried time is the same.
    const otherPool = new pg.Pool({ connectionString: db.pool.options.connectionString as string, max: 3 });
    otherPool.on("connect", (c) => void c.query("SET DateStyle = 'German'; SET TimeZone = 'Asia/Kolkata'"));
    const oddWriter = new PostgresStore({ pool: otherPool, schema: "durable_agents" });
    try {
      seen.length = 0;
      await oddWriter.commit({ sessionId: id, fence: lease.fence, expectedVersion: 1, events: [delta("tz")] });
      await waitFor(ofSession);
      const fromOdd = seen.find(ofSession) as Extract<StoreNotification, { kind: "events" }>;
      expect(fromOdd.events).toEqual(await writer.readEvents(id, 4));
    } finally {
      await oddWriter.close();
      await otherPool.end();
    }

    // A follower on the reader gets every event either way, in order.
    const { SessionClient } = await import("@durable-agents/core");
    const client = new SessionClient({ store: reader, agents: [id] });
    const abort = new AbortController();
    const followed: number[] = [];
    const following = (async () => {
      for await (const event of client.followEvents(id, { after: 0, signal: abort.signal })) {
        followed.push(event.seq);
        if (event.seq === 6) abort.abort();
      }
    })();
    await writer.commit({ sessionId: id, fence: lease.fence, expectedVersion: 1, events: [delta("last")] });
    await following;
    expect(followed).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("reads an entry notice it can read; one it cannot names the session only, or is ignored", async () => {
    const { parsePayload } = await import("../src/notification-listener.js");
    expect(parsePayload("entry:{not json")).toBeNull();
    expect(parsePayload('entry:{"s" : 5, "q" : 1, "e" : {}}')).toBeNull();
    expect(parsePayload('entry:{"s" : "a", "q" : 1.5, "e" : {"kind" : "message"}}')).toEqual({
      kind: "inbox",
      sessionId: "a",
    });
    expect(parsePayload('entry:{"s" : "a", "q" : 0, "e" : {"kind" : "message"}}')).toEqual({
      kind: "inbox",
      sessionId: "a",
    });
    expect(parsePayload('entry:{"s" : "a", "q" : 2, "e" : null}')).toEqual({ kind: "inbox", sessionId: "a" });
    expect(parsePayload("inbox:a:b")).toEqual({ kind: "inbox", sessionId: "a:b" });
    expect(
      parsePayload('entry:{"s" : "a:b", "q" : 3, "e" : {"kind" : "message", "text" : "hi", "messageId" : null}}'),
    ).toEqual({
      kind: "inbox",
      sessionId: "a:b",
      entries: [{ seq: 3, kind: "message", text: "hi", messageId: null }],
    });
  });

  it("ignores a batch notice it cannot read", async () => {
    const { parsePayload } = await import("../src/notification-listener.js");
    expect(parsePayload("batch:{not json")).toBeNull();
    expect(parsePayload('batch:{"s" : 5, "l" : 1, "a" : "x", "e" : []}')).toBeNull();
    expect(parsePayload('batch:{"s" : "a", "l" : 1.5, "a" : "x", "e" : []}')).toBeNull();
    expect(parsePayload("events:abc")).toEqual({ kind: "events", sessionId: "abc" });
    // A time it cannot read: the notice names the session, and the follower reads.
    expect(parsePayload('batch:{"s" : "a", "l" : 1, "a" : "01.12.2026 22:07:58 UTC", "e" : []}')).toEqual({
      kind: "events",
      sessionId: "a",
    });
    expect(
      parsePayload(
        'batch:{"s" : "a", "l" : 2, "a" : "2026-12-01 22:07:58.291+00", "e" : [{"type" : "x", "data" : 1}]}',
      ),
    ).toEqual({
      kind: "events",
      sessionId: "a",
      events: [{ seq: 2, at: "2026-12-01T22:07:58.291Z", type: "x", data: 1 }],
    });
  });

  it("delivers to every subscriber, and a throwing subscriber does not stop the others", async () => {
    const store = db.store();
    const first = recorder();
    const second = recorder();
    store.subscribe(() => {
      throw new Error("subscriber bug");
    });
    store.subscribe(first.listener);
    store.subscribe(second.listener);
    await store.listening();
    const id = newId();
    await store.createSession({ head: head(id), events: [created()] });
    await first.waitFor((n) => n.kind === "events" && n.sessionId === id);
    await second.waitFor((n) => n.kind === "events" && n.sessionId === id);
  });

  it("refuses to subscribe on a pool of one connection, which the LISTEN connection would take", async () => {
    const url = (db.pool.options as { connectionString: string }).connectionString;
    const single = new pg.Pool({ connectionString: url, max: 1 });
    try {
      const store = new PostgresStore({ pool: single });
      expect(() => store.subscribe(() => {})).toThrow(expect.toSatisfy(ConfigurationError.isInstance));
      // The store still answers.
      expect(await store.loadSession("none")).toBeNull();
      await store.close();
    } finally {
      await single.end();
    }
  });

  it("takes one connection from the pool for LISTEN and closes it on close()", async () => {
    const store = db.store();
    store.subscribe(() => {});
    await store.listening();
    const listening = async () =>
      Number(
        (
          await db.pool.query(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'durable_agents_listener'",
          )
        ).rows[0].n,
      );
    const before = await listening();
    expect(before).toBeGreaterThanOrEqual(1);
    await store.close();
    await expect.poll(listening, { timeout: 5000 }).toBe(before - 1);
  });

  it("reconnects the LISTEN connection after it is terminated, and sends a work wake-up", async () => {
    const store = db.store({ pollIntervalMs: 200 });
    const { seen, listener, waitFor } = recorder();
    store.subscribe(listener);
    await store.listening();
    const pid = async () =>
      (
        await db.pool.query(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'durable_agents_listener'",
        )
      ).rows.map((row) => row.pid as number);
    const before = await pid();
    expect(before.length).toBeGreaterThanOrEqual(1);
    expect(seen).toEqual([]);
    await db.pool.query("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", [before]);
    await waitFor((n) => n.kind === "work");
    await store.listening();
    expect((await pid()).some((p) => before.includes(p))).toBe(false);
    seen.length = 0;
    const id = newId();
    await db.store().createSession({ head: head(id), events: [created()] });
    await waitFor((n) => n.kind === "events" && n.sessionId === id);
  });

  it("drops a LISTEN connection that stops answering (no error, no close) and opens a new one", async () => {
    // A TCP proxy in front of PostgreSQL that can freeze the connections it carries, as a dead
    // network does: nothing is closed, nothing answers.
    const target = new URL((db.pool.options as { connectionString: string }).connectionString);
    const carried: { client: Socket; server: Socket }[] = [];
    const proxy = createServer((client) => {
      const server = connect(Number(target.port), target.hostname);
      client.pipe(server);
      server.pipe(client);
      client.on("error", () => {});
      server.on("error", () => {});
      carried.push({ client, server });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const url = new URL(target);
    url.port = String((proxy.address() as AddressInfo).port);
    const proxied = new pg.Pool({ connectionString: url.toString(), max: 3 });
    proxied.on("error", () => {});
    try {
      const store = new PostgresStore({ pool: proxied, pollIntervalMs: 200 });
      const { seen, listener, waitFor } = recorder();
      store.subscribe(listener);
      await store.listening();
      for (const { client, server } of carried) {
        client.unpipe(server);
        server.unpipe(client);
        client.pause();
        server.pause();
      }
      const frozen = carried.length;
      // Two heartbeats later the silence counts as a broken connection; the new one says "work".
      await waitFor((n) => n.kind === "work", 5000);
      await store.listening();
      expect(carried.length).toBeGreaterThan(frozen);
      seen.length = 0;
      const id = newId();
      await db.store().createSession({ head: head(id), events: [created()] });
      await waitFor((n) => n.kind === "events" && n.sessionId === id);
      await store.close();
    } finally {
      for (const { client, server } of carried) {
        client.destroy();
        server.destroy();
      }
      await proxied.end();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});
