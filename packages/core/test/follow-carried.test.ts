/**
 * `followEvents` and a store whose notices carry the events they read (`StoreNotification.events`):
 * the follower uses them without reading, and reads whenever a notice carries none, leaves a gap,
 * or does not reach its cursor; no event is lost or yielded twice either way.
 */
import { describe, expect, it } from "vitest";
import { defineSession, SessionClient, type SessionEvent, Worker } from "../src/index.js";
import type { StoreNotification } from "../src/engine.js";
import { MemoryStore, ScriptedRunner } from "../src/testing/index.js";

type Carry = "all" | "none" | "gap" | "stale";

/**
 * A memory store that, for each events notice, reads the events past what it last saw and sends them
 * with the notice (`carry: "all"`), or sends the notice bare, or drops the first event of each batch
 * (a gap), or sends only events the follower already has.
 */
class CarryingStore extends MemoryStore {
  reads = 0;
  private seen = new Map<string, number>();
  constructor(private readonly carry: Carry) {
    super();
  }
  override async readEvents(sessionId: string, afterSeq: number, limit?: number): Promise<SessionEvent[]> {
    this.reads += 1;
    return super.readEvents(sessionId, afterSeq, limit);
  }
  override subscribe(listener: (n: StoreNotification) => void): () => void {
    return super.subscribe((n) => {
      if (n.kind !== "events") return listener(n);
      // The memory store's own notices carry their events: "none" takes them away.
      if (this.carry === "none") return listener({ kind: "events", sessionId: n.sessionId });
      void (async () => {
        const after = this.seen.get(n.sessionId) ?? 0;
        const events = await super.readEvents(n.sessionId, after, 10_000);
        if (events.length > 0) this.seen.set(n.sessionId, events[events.length - 1]!.seq);
        const carried =
          this.carry === "gap"
            ? events.slice(1)
            : this.carry === "stale"
              ? events.filter((e) => e.seq <= after)
              : events;
        listener({ kind: "events", sessionId: n.sessionId, events: carried });
      })();
    });
  }
}

async function followTwoTurns(carry: Carry) {
  const store = new CarryingStore(carry);
  const runner = new ScriptedRunner({ tools: [] });
  const definition = defineSession({ name: "carry", runner });
  const client = new SessionClient({ store });
  const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 20 });
  worker.start();
  try {
    const { sessionId } = await client.startSession({ agent: "carry" });
    const abort = new AbortController();
    const seen: SessionEvent[] = [];
    let completed = 0;
    const following = (async () => {
      for await (const event of client.followEvents(sessionId, { signal: abort.signal })) {
        seen.push(event);
        if (event.type === "turn_completed" && ++completed === 2) abort.abort();
      }
    })();
    // Reads before the turns start (the follower's first read) are not the ones counted below.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const readsBefore = store.reads;
    await client.sendMessage(sessionId, "say one");
    await client.waitUntilIdle(sessionId);
    await client.sendMessage(sessionId, "say two");
    await following;
    const all = await store.readEvents(sessionId, 0, 10_000);
    return { seen, all, followerReads: store.reads - readsBefore - 1 };
  } finally {
    await worker.stop();
  }
}

describe("followEvents with notices that carry events", () => {
  it("uses carried events without reading, and yields every event once, in order", async () => {
    const { seen, all } = await followTwoTurns("all");
    expect(seen.map((e) => e.seq)).toEqual(all.filter((e) => e.seq <= seen.at(-1)!.seq).map((e) => e.seq));
    expect(seen.filter((e) => e.type === "turn_completed")).toHaveLength(2);
  });

  it("reads less with carried events than with bare notices", async () => {
    const carried = await followTwoTurns("all");
    const bare = await followTwoTurns("none");
    expect(bare.seen.map((e) => e.type)).toEqual(carried.seen.map((e) => e.type));
    // waitUntilIdle reads no events; with bare notices, each notice makes the follower read.
    expect(carried.followerReads).toBeLessThan(bare.followerReads);
  });

  it("reads when a notice leaves a gap or brings nothing new, and loses nothing", async () => {
    for (const carry of ["gap", "stale"] as const) {
      const { seen, all } = await followTwoTurns(carry);
      const last = seen.at(-1)!.seq;
      expect(seen.map((e) => e.seq)).toEqual(all.filter((e) => e.seq <= last).map((e) => e.seq));
      expect(new Set(seen.map((e) => e.seq)).size).toBe(seen.length);
    }
  });

  it("gets the memory store's own notices with the commit's events, as readEvents reads them", async () => {
    const store = new MemoryStore();
    const notices: StoreNotification[] = [];
    store.subscribe((n) => notices.push(n));
    const runner = new ScriptedRunner({ tools: [] });
    const worker = new Worker({ store, sessions: [defineSession({ name: "own", runner })], pollIntervalMs: 20 });
    worker.start();
    try {
      const client = new SessionClient({ store });
      const { sessionId } = await client.startSession({ agent: "own" });
      await client.sendMessage(sessionId, "say hello");
      await client.waitUntilIdle(sessionId);
      const carried = notices.flatMap((n) =>
        n.kind === "events" && n.sessionId === sessionId && n.events ? n.events : [],
      );
      const all = await store.readEvents(sessionId, 0, 10_000);
      // Every event after the session's creation came with the notice of the commit that wrote it.
      expect(carried).toEqual(all.slice(1));
      expect(carried.map((e) => e.seq)).toEqual(all.slice(1).map((e) => e.seq));
      expect(all.length).toBeGreaterThan(3);
    } finally {
      await worker.stop();
    }
  });
});
