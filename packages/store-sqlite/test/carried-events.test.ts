/**
 * A write's `events` notice, in the process that made it, carries the events it appended, as
 * `readEvents` reads them; a follower that keeps up uses them instead of reading.
 */
import { defineSession, SessionClient, type SessionEvent, Worker } from "@durable-agents/core";
import type { StoreNotification } from "@durable-agents/core/engine";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../src/index.js";
import { tempStoreDir } from "../src/testing/index.js";

const dirs: ReturnType<typeof tempStoreDir>[] = [];
afterEach(() => {
  for (const t of dirs.splice(0)) t.remove();
});

describe("events notices in the writing process", () => {
  it("carry the commit's events as readEvents reads them, and spare a follower its reads", async () => {
    const dir = tempStoreDir();
    dirs.push(dir);
    const store = new SqliteStore({ path: dir.file("carried.db") });
    const notices: StoreNotification[] = [];
    store.subscribe((n) => notices.push(n));
    let reads = 0;
    const readEvents = store.readEvents.bind(store);
    store.readEvents = (...args: Parameters<SqliteStore["readEvents"]>) => {
      reads += 1;
      return readEvents(...args);
    };
    const runner = new ScriptedRunner({ tools: [] });
    const worker = new Worker({ store, sessions: [defineSession({ name: "carried", runner })], pollIntervalMs: 20 });
    worker.start();
    try {
      const client = new SessionClient({ store });
      const { sessionId } = await client.startSession({ agent: "carried" });
      const abort = new AbortController();
      const followed: SessionEvent[] = [];
      const following = (async () => {
        for await (const event of client.followEvents(sessionId, { signal: abort.signal })) {
          followed.push(event);
          if (event.type === "turn_completed") abort.abort();
        }
      })();
      // The follower's first read (from its cursor) is the only one counted out.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const readsBefore = reads;
      await client.sendMessage(sessionId, "say hello");
      await following;
      const all = await readEvents(sessionId, 0, 10_000);
      expect(followed).toEqual(all);
      const carried = notices.flatMap((n) =>
        n.kind === "events" && n.sessionId === sessionId && n.events ? n.events : [],
      );
      expect(carried).toEqual(all.slice(1));
      expect(reads - readsBefore).toBe(0);
    } finally {
      await worker.stop();
      await store.close();
    }
  });
});
