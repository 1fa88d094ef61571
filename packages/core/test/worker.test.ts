import { describe, expect, it } from "vitest";
import { defineSession, SessionClient, Worker, type SessionHead } from "../src/index.js";
import { newSessionHead } from "../src/engine.js";
import { crashWorker, MemoryStore, memoryRawReader, ScriptedRunner, workerDrives } from "../src/testing/index.js";

function gatedTool() {
  let running = 0;
  let most = 0;
  const gates: (() => void)[] = [];
  const runner = new ScriptedRunner({
    tools: [
      {
        name: "slow_read",
        description: "Waits until the test lets it finish.",
        parameters: { key: "string" },
        execute: async (args) => {
          running += 1;
          most = Math.max(most, running);
          await new Promise<void>((resolve) => gates.push(resolve));
          running -= 1;
          return `read ${String(args.key)}`;
        },
      },
    ],
  });
  const definition = defineSession({ name: "gated", runner, policies: { slow_read: { effect: "read" } } });
  return { definition, gates, running: () => running, most: () => most };
}

const until = async (check: () => boolean) => {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

describe("Worker", () => {
  it("drives at most `concurrency` sessions at once", async () => {
    const { definition, gates, running, most } = gatedTool();
    const store = new MemoryStore();
    const worker = new Worker({ store, sessions: [definition], concurrency: 2, pollIntervalMs: 20 }).start();
    const client = new SessionClient({ store });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await client.startSession({ agent: "gated", message: `call slow_read {"key":"${i}"}` })).sessionId);
    let released = 0;
    while (released < 5) {
      // Two calls wait at once (the limit), never three.
      await until(() => gates.length >= Math.min(2, 5 - released));
      expect(running()).toBeLessThanOrEqual(2);
      expect(worker.activeSessions).toBeLessThanOrEqual(2);
      gates.shift()!();
      released += 1;
    }
    for (const id of ids) expect((await client.waitUntilIdle(id)).turn?.phase).toBe("completed");
    expect(most()).toBe(2);
    await worker.stop();
  });

  it("stops gracefully: the step in flight finishes and is committed, the lease is handed back", async () => {
    const { definition, gates, running } = gatedTool();
    const store = new MemoryStore();
    const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 20 }).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "gated", message: 'call slow_read {"key":"a"}\nthen\ncall slow_read {"key":"b"}' });
    await until(() => running() === 1);
    const stopping = worker.stop({ timeoutMs: 5_000 });
    gates.shift()!();
    await stopping;
    const record = (await memoryRawReader(store).session(sessionId))!;
    expect(record.leaseOwner).toBeNull();
    const after = await client.snapshot(sessionId);
    expect(after.turn?.calls.map((c) => c.status)).toEqual(["succeeded"]);
    expect(running()).toBe(0);
    // No new step started during the stop; the next worker takes the session over where it was.
    const next = new Worker({ store, sessions: [definition], pollIntervalMs: 20 }).start();
    await until(() => running() === 1);
    gates.shift()!();
    const done = await client.waitUntilIdle(sessionId);
    expect(done.turn?.finalText).toBe("Results: slow_read -> read a | slow_read -> read b");
    await next.stop();
  });

  it("a crashed worker (crashWorker) writes nothing more and keeps its lease until it expires; the next worker recovers", async () => {
    const { definition, gates } = gatedTool();
    const store = new MemoryStore();
    const client = new SessionClient({ store });
    const first = new Worker({ store, sessions: [definition], pollIntervalMs: 20, leaseTtlMs: 300 }).start();
    const { sessionId } = await client.startSession({ agent: "gated", message: 'call slow_read {"key":"a"}' });
    await until(() => gates.length === 1);
    crashWorker(first);
    // The call in flight finishes inside the dead worker: its result is not committed, the lease is not released.
    gates.shift()!();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await memoryRawReader(store).session(sessionId))?.leaseOwner).toBe(first.workerId);
    expect((await client.snapshot(sessionId)).turn?.calls.map((c) => [c.status, c.attempts])).toEqual([["running", 1]]);
    const next = new Worker({ store, sessions: [definition], pollIntervalMs: 20, leaseTtlMs: 300 }).start();
    await until(() => gates.length === 1);
    gates.shift()!();
    const done = await client.waitUntilIdle(sessionId);
    expect(done.turn?.calls.map((c) => [c.status, c.attempts])).toEqual([["succeeded", 2]]);
    expect((await memoryRawReader(store).session(sessionId))?.leaseOwner).toBeNull();
    await next.stop();
    await first.stop({ timeoutMs: 1_000 });
  });

  it("does not retry a session whose drive fails in a loop: it keeps the lease until it expires", async () => {
    const { definition } = gatedTool();
    const store = new MemoryStore();
    const errors: unknown[] = [];
    const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 5, leaseTtlMs: 60_000, onError: (e) => errors.push(e) }).start();
    // A stored head this version cannot read (an unknown schema version).
    const head = { ...newSessionHead("unreadable", "gated", new Date().toISOString()), schemaVersion: 99 } as unknown as SessionHead;
    await store.createSession({ head, events: [], inbox: { entry: { kind: "message", text: "hi", messageId: null }, dedupeKey: null } });
    await until(() => errors.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(errors).toHaveLength(1);
    expect(workerDrives(worker)).toBe(1);
    expect((await memoryRawReader(store).session("unreadable"))?.leaseOwner).toBe(worker.workerId);
    await worker.stop();
  });
});
