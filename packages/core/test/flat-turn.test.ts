/**
 * A turn's engine work does not grow with the history: the same turn (model, tool, model, tool,
 * model) on a session of 10 and of 1,000 history items reads no history from the store (the worker's
 * cache holds it), only its message and its events, and hands the model the whole history each time.
 */
import { describe, expect, it } from "vitest";
import { defineSession, SessionClient, Worker, type HistoryItem } from "../src/index.js";
import type { RunModelInput } from "../src/engine.js";
import { MemoryStore, ScriptedRunner } from "../src/testing/index.js";

/** What the store handed out, by method: calls, and the items (history, inbox, events) they returned. */
class ReadCountingStore extends MemoryStore {
  counts = new Map<string, { calls: number; items: number }>();
  private count(method: string, items: number): void {
    const c = this.counts.get(method) ?? { calls: 0, items: 0 };
    c.calls += 1;
    c.items += items;
    this.counts.set(method, c);
  }
  override async readHistory(sessionId: string, offset?: number): Promise<HistoryItem[]> {
    const read = await super.readHistory(sessionId, offset);
    this.count("readHistory", read.length);
    return read;
  }
  override async loadSession(...args: Parameters<MemoryStore["loadSession"]>) {
    const session = await super.loadSession(...args);
    this.count("loadSession", session ? 1 : 0);
    return session;
  }
  override async readInbox(...args: Parameters<MemoryStore["readInbox"]>) {
    const read = await super.readInbox(...args);
    this.count("readInbox", read.length);
    return read;
  }
  override async readEvents(...args: Parameters<MemoryStore["readEvents"]>) {
    const read = await super.readEvents(...args);
    this.count("readEvents", read.length);
    return read;
  }
}

const until = async (check: () => boolean) => {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
};

describe("a turn at 10 and at 1,000 history items", () => {
  it("reads no history from the store, and hands the model the whole history at every step", async () => {
    const store = new ReadCountingStore();
    const seen: number[] = [];
    const scripted = new ScriptedRunner({
      tools: [
        {
          name: "look_up",
          description: "Looks a key up.",
          parameters: { key: "string" },
          execute: ({ key }) => `record ${String(key)}`,
        },
      ],
    });
    const runner = {
      tools: () => scripted.tools(),
      describe: () => scripted.describe(),
      userItem: scripted.userItem.bind(scripted),
      callTool: scripted.callTool.bind(scripted),
      runModel: (input: RunModelInput) => {
        seen.push(input.history.length);
        return scripted.runModel(input);
      },
    };
    const definition = defineSession({ name: "flat", runner, policies: { look_up: { effect: "read" } } });
    const worker = new Worker({ store, sessions: [definition] }).start();
    const client = new SessionClient({ store, agents: ["flat"] });
    const call = (key: string) => `call look_up {"key":"${key}"}`;
    try {
      // Fill turns of one response with k calls (the scripted framework's k + 3 items: the message,
      // one item with the calls, their results, the answer), then the measured turn's own script, so
      // both measured turns start from heads of the same size.
      const turnScript = (tag: string) => `${call(`${tag}-a`)}\nthen\n${call(`${tag}-b`)}`;
      const fill = async (sessionId: string, items: number) => {
        await client.startSession({ agent: "flat", sessionId });
        let left = items - 6;
        for (let turn = 0; left > 0; turn++) {
          const calls = Math.min(49, left - 3);
          await client.sendMessage(sessionId, Array.from({ length: calls }, (_, c) => call(`${turn}-${c}`)).join("\n"));
          await client.waitUntilIdle(sessionId);
          left -= calls + 3;
        }
        await client.sendMessage(sessionId, turnScript("last"));
        await client.waitUntilIdle(sessionId);
        expect((await store.loadSession(sessionId))!.head.historyLength).toBe(items);
      };
      const measured = async (sessionId: string) => {
        const after = (await store.loadSession(sessionId))!.lastEventSeq;
        const start = (await store.loadSession(sessionId))!.head.historyLength;
        store.counts = new Map();
        seen.length = 0;
        await client.sendMessage(sessionId, turnScript("measured"));
        // Followed as a UI would (waitUntilIdle would read the history for the snapshot it returns).
        for await (const event of client.followEvents(sessionId, { after })) if (event.type === "turn_completed") break;
        await until(() => worker.activeSessions === 0);
        const counts = Object.fromEntries([...store.counts].map(([method, c]) => [method, { ...c }]));
        const events = await store.readEvents(sessionId, after);
        return { counts, models: seen.map((n) => n - start), events: events.map((e) => e.type) };
      };
      await fill("small", 10);
      await fill("large", 1000);
      // Both sessions are in the worker's history cache now (they were driven); a turn reads no history.
      const small = await measured("small");
      const large = await measured("large");
      expect(small.counts["readHistory"]).toBeUndefined();
      expect(large.counts["readHistory"]).toBeUndefined();
      // How often the worker leases and loads the session depends on timing (a notification that
      // comes during a drive); what the turn reads does not depend on the history. Its message is
      // read once, or not at all when the drive that kept the lease takes it from its notice.
      expect(large.counts["readInbox"]?.items ?? 0).toBeLessThanOrEqual(1);
      expect(small.counts["readInbox"]?.items ?? 0).toBeLessThanOrEqual(1);
      // The follower reads each event at most once (the store's notices carry most of them).
      expect(large.counts["readEvents"]?.items ?? 0).toBeLessThanOrEqual(large.events.length);
      expect(small.counts["readEvents"]?.items ?? 0).toBeLessThanOrEqual(small.events.length);
      expect(large.events).toEqual(small.events);
      // Every model step got the whole stored history with the turn's message (a turn's own items are
      // stored when it ends; until then its run state carries them).
      expect(small.models).toEqual([1, 1, 1]);
      expect(large.models).toEqual([1, 1, 1]);
    } finally {
      await worker.stop();
    }
  }, 60_000);
});
