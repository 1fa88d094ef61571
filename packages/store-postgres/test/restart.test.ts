import { existsSync } from "node:fs";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VersionConflictError } from "@durable-agents/core";
import type { Lease, StoreNotification } from "@durable-agents/core/engine";
import { PostgresStore, migrate } from "../src/index.js";
import { postgresRawReader, startPostgres, type PostgresServer } from "../src/testing/index.js";
import { created, delta, head } from "./helpers.js";

// This file restarts PostgreSQL, so it runs a private server instead of the shared one.
let server: PostgresServer;
let pool: pg.Pool;
const poolErrors: Error[] = [];

beforeAll(async () => {
  server = await startPostgres();
  pool = new pg.Pool({ connectionString: server.connectionString, max: 5, connectionTimeoutMillis: 2000 });
  // Idle connections die with the server; the application's pool needs an error listener.
  pool.on("error", (error) => poolErrors.push(error));
  await migrate(pool);
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await server?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Retries a call that fails while the server is away (the errors are thrown, not swallowed). */
async function retry<T>(call: () => Promise<T>, failures: unknown[]): Promise<T> {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      failures.push(error);
      if (failures.length > 500) throw error;
      await sleep(50);
    }
  }
}

describe("after PostgreSQL restarts", () => {
  it("every method works again, nothing is lost or doubled, and the listener LISTENs again", async () => {
    const store = new PostgresStore({ pool, pollIntervalMs: 200 });
    const seen: StoreNotification[] = [];
    store.subscribe((notification) => seen.push(notification));
    await store.listening();

    const id = "restarted";
    await store.createSession({ head: head(id), events: [created()] });
    const inboxFailures: unknown[] = [];
    const commitFailures: unknown[] = [];

    // Writer 1: 60 messages, each retried with its dedupe key until the store answers.
    const messages = (async () => {
      for (let n = 0; n < 60; n++) {
        await retry(
          () => store.enqueue(id, { kind: "message", text: `m${n}`, messageId: `m${n}` }, `m${n}`),
          inboxFailures,
        );
        await sleep(5);
      }
    })();

    // Writer 2: 40 commits under one lease; an ambiguous failure is resolved by reading the version.
    const commits = (async () => {
      // The session is runnable once writer 1's first message is in; until then there is no work.
      let lease: Lease | null = null;
      while (lease === null) {
        lease = await retry(
          () => store.acquireLease({ workerId: "w", ttlMs: 60_000, agents: ["helper-agent"] }),
          commitFailures,
        );
        if (lease === null) await sleep(5);
      }
      expect(lease.sessionId).toBe(id);
      for (let n = 1; n <= 40; n++) {
        const commit = {
          sessionId: id,
          fence: lease.fence,
          expectedVersion: n,
          head: head(id, { turnCount: n }),
          runnable: true,
          events: [delta(`c${n}`)],
        };
        await retry(async () => {
          try {
            await store.commit(commit);
          } catch (error) {
            // The first try may have committed before its answer was lost.
            if (VersionConflictError.isInstance(error) && error.actual === n + 1) return;
            throw error;
          }
        }, commitFailures);
        await sleep(5);
      }
      return lease;
    })();

    await sleep(100);
    await server.restart();
    const [, lease] = await Promise.all([messages, commits]);

    // The restart was felt: some calls failed and were retried.
    expect(inboxFailures.length + commitFailures.length).toBeGreaterThan(0);

    const raw = postgresRawReader(pool);
    const inbox = await raw.inbox(id);
    expect(inbox.map((entry) => entry.seq)).toEqual(Array.from({ length: 60 }, (_, n) => n + 1));
    expect(inbox.map((entry) => entry.dedupeKey)).toEqual(Array.from({ length: 60 }, (_, n) => `m${n}`));
    const events = await raw.events(id);
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 41 }, (_, n) => n + 1));
    expect(events.slice(1).map((event) => (event.data as { text: string }).text)).toEqual(
      Array.from({ length: 40 }, (_, n) => `c${n + 1}`),
    );
    expect(await raw.session(id)).toMatchObject({ version: 41, leaseOwner: "w", fence: lease.fence });

    // Every method answers again.
    expect((await store.loadSession(id))?.version).toBe(41);
    expect(await store.readHistory(id)).toEqual([]);
    expect(await store.readInbox(id, 59)).toHaveLength(1);
    expect(await store.readEvents(id, 40)).toHaveLength(1);
    expect(await store.renewLease(lease, 60_000)).not.toBeNull();
    await store.releaseLease(lease);
    expect(await store.acquireLease({ workerId: "w2", ttlMs: 1000, agents: ["helper-agent"] })).not.toBeNull();

    // The listener came back (with a catch-up wake-up) and hears new writes.
    await expect.poll(() => seen.some((n) => n.kind === "work"), { timeout: 10_000 }).toBe(true);
    await store.listening();
    seen.length = 0;
    await store.createSession({ head: head("after-restart"), events: [created()] });
    await expect
      .poll(() => seen.some((n) => n.kind === "events" && n.sessionId === "after-restart"), { timeout: 10_000 })
      .toBe(true);
    await store.close();
  }, 60_000);

  it("stop() stops the server and removes its folder", async () => {
    const other = await startPostgres();
    const client = new pg.Client({ connectionString: other.connectionString });
    await client.connect();
    client.on("error", () => {});
    expect((await client.query("SHOW synchronous_commit")).rows[0].synchronous_commit).toBe("on");
    await client.end();
    expect(existsSync(other.dir)).toBe(true);
    await other.stop();
    expect(existsSync(other.dir)).toBe(false);
    const late = new pg.Client({ connectionString: other.connectionString, connectionTimeoutMillis: 2000 });
    await expect(late.connect()).rejects.toThrow();
    await other.stop();
  }, 60_000);
});
