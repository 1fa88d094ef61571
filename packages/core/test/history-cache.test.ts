import { describe, expect, it } from "vitest";
import type { HistoryItem } from "../src/index.js";
import { HistoryCache, newSessionHead } from "../src/engine.js";
import { MemoryStore } from "../src/testing/index.js";

const item = (text: string): HistoryItem => ({ item: { text }, display: { role: "user", text } });

/** A session "s1" leased on a memory store, and `append`: a commit under that lease that stores history items. */
async function leasedSession() {
  const store = new MemoryStore();
  const head = newSessionHead("s1", "agent", new Date().toISOString());
  await store.createSession({
    head,
    events: [],
    inbox: { entry: { kind: "message", text: "x", messageId: null }, dedupeKey: null },
  });
  const lease = (await store.acquireLease({ workerId: "w", ttlMs: 5_000, agents: ["agent"] }))!;
  const append = async (version: number, texts: string[], length: number) =>
    store.commit({
      sessionId: "s1",
      fence: lease.fence,
      expectedVersion: version,
      head: { ...head, historyLength: length },
      runnable: false,
      appendHistory: texts.map(item),
      events: [],
    });
  return { store, append };
}

describe("HistoryCache", () => {
  it("reads only the items past the cached prefix, and keeps at most maxItems", async () => {
    const { store, append } = await leasedSession();
    const reads: number[] = [];
    const readHistory = store.readHistory.bind(store);
    store.readHistory = async (sessionId, offset = 0) => {
      reads.push(offset);
      return readHistory(sessionId, offset);
    };
    await append(1, ["a", "b"], 2);
    const cache = new HistoryCache(2);
    expect((await cache.load(store, "s1", 2)).map((h) => h.display.text)).toEqual(["a", "b"]);
    await append(2, ["c"], 3);
    expect((await cache.load(store, "s1", 3)).map((h) => h.display.text)).toEqual(["a", "b", "c"]);
    expect(reads).toEqual([0, 2]);
    // s1 alone is over the limit of 2 items; touching another session pushes it out, so it is read again from the start.
    const other = newSessionHead("s2", "agent", new Date().toISOString());
    await store.createSession({ head: other, events: [] });
    await cache.load(store, "s2", 0);
    await cache.load(store, "s1", 3);
    expect(reads).toEqual([0, 2, 0]);
  });

  it("holds each item once when two loads of a cached prefix cross, and no item past the length asked for", async () => {
    const { store, append } = await leasedSession();
    await append(1, ["a"], 1);
    const cache = new HistoryCache();
    await cache.load(store, "s1", 1);
    await append(2, ["b", "c"], 3);
    // Two loads of the cached prefix ["a"] read at once; the second read answers first.
    const readHistory = store.readHistory.bind(store);
    const delays = [20, 5];
    store.readHistory = async (sessionId, offset = 0) => {
      const read = await readHistory(sessionId, offset);
      await new Promise((resolve) => setTimeout(resolve, delays.shift() ?? 0));
      return read;
    };
    const [one, two] = await Promise.all([cache.load(store, "s1", 3), cache.load(store, "s1", 3)]);
    expect(one).toBe(two);
    expect(one.map((h) => h.display.text)).toEqual(["a", "b", "c"]);
    // The store holds an item the caller's head does not count yet (a commit it has not heard back
    // from): the load stops at the length asked for.
    await append(3, ["d"], 4);
    const fresh = new HistoryCache();
    expect((await fresh.load(store, "s1", 3)).map((h) => h.display.text)).toEqual(["a", "b", "c"]);
  });
});
