import { afterEach, describe, expect, it, vi } from "vitest";
import { defineSession, SessionHead, StoredStateError, Worker } from "../src/index.js";
import { HeadCache, newSessionHead } from "../src/engine.js";
import { MemoryStore, memoryRawReader, ScriptedRunner } from "../src/testing/index.js";

const headOf = (sessionId: string, turnCount = 0) => ({
  ...newSessionHead(sessionId, "agent", "2026-01-01T00:00:00.000Z"),
  turnCount,
});

/** What a store answers for a head it stored: the same data, as other objects (a JSON round trip). */
const stored = (head: unknown, version: number) => ({
  head: JSON.parse(JSON.stringify(head)) as SessionHead,
  version,
  lastEventSeq: 3,
});

describe("HeadCache", () => {
  afterEach(() => vi.restoreAllMocks());

  it("hands back the committed head when the store answers that version with equal data, and parses anything else", () => {
    const parse = vi.spyOn(SessionHead, "safeParse");
    const cache = new HeadCache();
    const head = headOf("s1", 4);
    cache.remember("s1", head, 7);

    const same = cache.parse(stored(head, 7), "s1", "test");
    expect(same.head).toBe(head);
    expect(same).toEqual({ head, version: 7, lastEventSeq: 3 });
    expect(parse).not.toHaveBeenCalled();

    // another version: parsed (equal data, a new object)
    const newer = cache.parse(stored(head, 8), "s1", "test");
    expect(newer.head).not.toBe(head);
    expect(newer.head).toEqual(head);
    expect(parse).toHaveBeenCalledTimes(1);
  });

  it("parses a head that differs from the committed one at the same version, so a damaged or newer one is refused", () => {
    const cache = new HeadCache();
    const head = headOf("s1", 4);
    cache.remember("s1", head, 7);
    const changed = cache.parse(stored({ ...head, turnCount: 5 }, 7), "s1", "test");
    expect(changed.head.turnCount).toBe(5);

    cache.remember("s1", head, 7);
    let error: unknown;
    try {
      cache.parse(stored({ ...head, schemaVersion: 99 }, 7), "s1", "test");
    } catch (e) {
      error = e;
    }
    expect(StoredStateError.isInstance(error), String(error)).toBe(true);

    cache.remember("s1", head, 7);
    expect(() => cache.parse({ ...stored(head, 7), lastEventSeq: -1 }, "s1", "test")).toThrow(/counts/);
  });

  it("keeps at most maxSessions heads, least recently recorded dropped first", () => {
    const parse = vi.spyOn(SessionHead, "safeParse");
    const cache = new HeadCache(2);
    for (const id of ["a", "b", "c"]) cache.remember(id, headOf(id), 1);
    cache.parse(stored(headOf("a"), 1), "a", "test");
    expect(parse).toHaveBeenCalledTimes(1);
    cache.parse(stored(headOf("b"), 1), "b", "test");
    cache.parse(stored(headOf("c"), 1), "c", "test");
    expect(parse).toHaveBeenCalledTimes(1);
  });

  it("a worker leasing a session again for its next turn does not parse the head it committed", async () => {
    const store = new MemoryStore();
    const runner = new ScriptedRunner({ tools: [] });
    const worker = new Worker({ store, sessions: [defineSession({ name: "agent", runner })], pollIntervalMs: 5 });
    const raw = memoryRawReader(store);
    const idleAfter = async (turns: number) => {
      const deadline = Date.now() + 5_000;
      for (;;) {
        const head = (await raw.session("s1"))?.head as SessionHead | undefined;
        if (head?.turnCount === turns && head.status === "idle" && worker.activeSessions === 0) return;
        if (Date.now() > deadline) throw new Error("timed out");
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    };
    await store.createSession({
      head: newSessionHead("s1", "agent", new Date().toISOString()),
      events: [],
      inbox: { entry: { kind: "message", text: "first", messageId: null }, dedupeKey: null },
    });
    worker.start();
    try {
      await idleAfter(1);
      // The second message goes to the store directly: no client reads (and parses) the head meanwhile.
      const parse = vi.spyOn(SessionHead, "safeParse");
      await store.enqueue("s1", { kind: "message", text: "second", messageId: null }, null);
      await idleAfter(2);
      expect(parse).not.toHaveBeenCalled();
      const events = await raw.events("s1");
      expect(events.filter((e) => e.type === "turn_completed")).toHaveLength(2);
    } finally {
      await worker.stop();
    }
  });
});
