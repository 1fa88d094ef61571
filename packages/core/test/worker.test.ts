import { describe, expect, it } from "vitest";
import {
  ContractViolationError,
  defineSession,
  ModelStepError,
  SessionClient,
  StoredStateError,
  Worker,
  type Runner,
  type SessionHead,
} from "../src/index.js";
import { newSessionHead } from "../src/engine.js";
import { crashWorker, MemoryStore, memoryRawReader, ScriptedRunner, workerDrives } from "../src/testing/index.js";
import { until } from "./support/until.js";

function gatedTool() {
  let running = 0;
  let most = 0;
  let returned = 0;
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
          returned += 1;
          return `read ${String(args.key)}`;
        },
      },
    ],
  });
  const definition = defineSession({ name: "gated", runner, policies: { slow_read: { effect: "read" } } });
  return { definition, gates, running: () => running, most: () => most, returned: () => returned };
}

/** A memory store that counts the worker's requests for work: each poll of the worker asks once. */
class CountingStore extends MemoryStore {
  leaseRequests = 0;
  override acquireLease(...args: Parameters<MemoryStore["acquireLease"]>): ReturnType<MemoryStore["acquireLease"]> {
    this.leaseRequests += 1;
    return super.acquireLease(...args);
  }
  override findWork(...args: Parameters<MemoryStore["findWork"]>): ReturnType<MemoryStore["findWork"]> {
    this.leaseRequests += 1;
    return super.findWork(...args);
  }
}

/** Resolves once the worker has polled `polls` more times: it went on past where a retry would start. */
const polledAgain = async (store: CountingStore, polls: number) => {
  const target = store.leaseRequests + polls;
  await until(() => store.leaseRequests >= target);
};

/** A worker polling every 5 ms with a long lease, its store counting lease requests, and the errors it reports. */
function failingDriveSetup() {
  const { definition } = gatedTool();
  const store = new CountingStore();
  const errors: unknown[] = [];
  const worker = new Worker({
    store,
    sessions: [definition],
    pollIntervalMs: 5,
    leaseTtlMs: 60_000,
    onError: (e) => errors.push(e),
  }).start();
  return { store, errors, worker };
}

/** A memory store that counts lease renewals. */
class RenewalCountingStore extends MemoryStore {
  renewals = 0;
  override renewLease(...args: Parameters<MemoryStore["renewLease"]>): ReturnType<MemoryStore["renewLease"]> {
    this.renewals += 1;
    return super.renewLease(...args);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("Worker", () => {
  it("renews the lease of a session whose step commits nothing for longer than the lease's TTL", async () => {
    const { definition, gates } = gatedTool();
    const store = new RenewalCountingStore();
    // A renewal every 500 ms: a busy machine that stalls the worker for up to a second still renews in time.
    const ttl = 1_500;
    const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 20, leaseTtlMs: ttl }).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "gated", message: 'call slow_read {"key":"a"}' });
    await until(() => gates.length === 1);
    const started = Date.now();
    const before = store.renewals;
    // Two TTLs with the tool running and nothing committed: only renewals keep the lease.
    await until(() => store.renewals - before >= 4 && Date.now() - started > 2 * ttl, 20_000);
    const row = await memoryRawReader(store).session(sessionId);
    expect(row?.leaseOwner).toBe(worker.workerId);
    expect(row?.fence).toBe(1);
    // The last commit is two TTLs old: the lease is live only because a renewal extended it.
    expect(row?.leaseExpiresAt).toBeGreaterThan(Date.now());
    gates[0]!();
    const snapshot = await client.waitUntilIdle(sessionId);
    expect(snapshot.status).toBe("idle");
    expect((await memoryRawReader(store).session(sessionId))?.fence).toBe(1);
    await worker.stop();
  });

  it("does not renew a lease that the drive's commits keep extending", async () => {
    // A model that streams a long answer: a delta of more than 64 characters every 10 ms, each one
    // committed (and the lease extended) while the step runs for about 400 ms.
    class StreamingRunner extends ScriptedRunner {
      override async runModel(input: Parameters<ScriptedRunner["runModel"]>[0]) {
        for (let i = 0; i < 40; i++) {
          input.emit({ kind: "text", text: `${"x".repeat(70)}${i}` });
          await sleep(10);
        }
        return super.runModel(input);
      }
    }
    /** Notes, at each renewal, how long before it a commit last extended the lease. */
    class GapStore extends RenewalCountingStore {
      extendedAt: number | null = null;
      firstExtension: number | null = null;
      gaps: number[] = [];
      override async commit(...args: Parameters<MemoryStore["commit"]>) {
        const result = await super.commit(...args);
        if (result.leaseExpiresAt !== undefined) {
          this.extendedAt = Date.now();
          this.firstExtension ??= this.extendedAt;
        }
        return result;
      }
      override renewLease(...args: Parameters<MemoryStore["renewLease"]>) {
        if (this.extendedAt !== null) this.gaps.push(Date.now() - this.extendedAt);
        return super.renewLease(...args);
      }
    }
    const runner = new StreamingRunner({ tools: [] });
    const definition = defineSession({ name: "streaming", runner });
    const store = new GapStore();
    const ttl = 600;
    const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 20, leaseTtlMs: ttl }).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "streaming", message: "hello" });
    const snapshot = await client.waitUntilIdle(sessionId);
    expect(snapshot.status).toBe("idle");
    const deltas = (await store.readEvents(sessionId, 0)).filter((e) => e.type === "text_delta");
    expect(deltas.length).toBeGreaterThan(10);
    // The commits that extended the lease spanned more than a renewal period (a third of the TTL): a
    // renewal came due at least once in the step, a few milliseconds after a commit.
    expect(store.extendedAt! - store.firstExtension!).toBeGreaterThan(ttl / 3);
    // A renewal comes only where no commit extended the lease in the last sixth of its TTL (a busy
    // machine that stalls the stream may leave such a gap); one right after a commit is a renewal
    // the worker should have skipped.
    for (const gap of store.gaps) expect(gap).toBeGreaterThanOrEqual(ttl / 6);
    expect(store.renewals).toBe(store.gaps.length);
    expect((await memoryRawReader(store).session(sessionId))?.fence).toBe(1);
    await worker.stop();
  });

  it("drives at most `concurrency` sessions at once", async () => {
    const { definition, gates, running, most } = gatedTool();
    const store = new MemoryStore();
    const worker = new Worker({ store, sessions: [definition], concurrency: 2, pollIntervalMs: 20 }).start();
    const client = new SessionClient({ store });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await client.startSession({ agent: "gated", message: `call slow_read {"key":"${i}"}` })).sessionId);
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
    const { sessionId } = await client.startSession({
      agent: "gated",
      message: 'call slow_read {"key":"a"}\nthen\ncall slow_read {"key":"b"}',
    });
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

  it("stops gracefully while a message arrives during the stop: it waits for the step without spinning", async () => {
    const { definition, gates, running } = gatedTool();
    const store = new MemoryStore();
    const worker = new Worker({ store, sessions: [definition], pollIntervalMs: 20 }).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "gated", message: 'call slow_read {"key":"a"}' });
    await until(() => running() === 1);
    const stopping = worker.stop({ timeoutMs: 5_000 });
    // The inbox notification marks the drive's inbox unread while it is stopping (it reads no inbox then).
    await client.sendMessage(sessionId, "while stopping");
    // Timers still fire: the event loop is not held by a drive loop that never awaits.
    await new Promise((resolve) => setTimeout(resolve, 50));
    gates.shift()!();
    await stopping;
    const after = await client.snapshot(sessionId);
    expect(after.turn?.calls.map((c) => c.status)).toEqual(["succeeded"]);
    expect(after.queuedMessages).toBe(1);
  });

  it("a crashed worker (crashWorker) writes nothing more and keeps its lease until it expires; the next worker recovers", async () => {
    const { definition, gates, returned } = gatedTool();
    const store = new MemoryStore();
    const client = new SessionClient({ store });
    // A lease a busy machine does not lose to a stall while the first worker takes the session; the next
    // worker waits for it to expire.
    const first = new Worker({ store, sessions: [definition], pollIntervalMs: 20, leaseTtlMs: 1_500 }).start();
    const { sessionId } = await client.startSession({ agent: "gated", message: 'call slow_read {"key":"a"}' });
    await until(() => gates.length === 1);
    crashWorker(first);
    // The call in flight finishes inside the dead worker: its result is not committed, the lease is not released.
    gates.shift()!();
    // Past the point where a live worker would commit: the call has returned and the dead worker's drive has ended.
    await until(() => returned() === 1 && workerDrives(first) === 1);
    const kept = (await memoryRawReader(store).session(sessionId))!;
    expect(kept.leaseOwner).toBe(first.workerId);
    expect((await client.snapshot(sessionId)).turn?.calls.map((c) => [c.status, c.attempts])).toEqual([["running", 1]]);
    // Nothing waits for the next worker's lease: a long one, kept long once idle, so that the stop below
    // finds it kept (the drive still waiting, or its lease not expired yet) on a busy machine too.
    const next = new Worker({
      store,
      sessions: [definition],
      pollIntervalMs: 20,
      leaseTtlMs: 30_000,
      lingerMs: 10_000,
    }).start();
    await until(() => gates.length === 1);
    // Taken anew once the dead worker's lease expired: a new fence.
    expect(Date.now()).toBeGreaterThanOrEqual(kept.leaseExpiresAt!);
    expect((await memoryRawReader(store).session(sessionId))?.fence).toBe(kept.fence + 1);
    gates.shift()!();
    const done = await client.waitUntilIdle(sessionId);
    expect(done.turn?.calls.map((c) => [c.status, c.attempts])).toEqual([["succeeded", 2]]);
    // The idle session's lease is kept for its next message (lingerMs) and handed back by the stop.
    expect((await memoryRawReader(store).session(sessionId))?.leaseOwner).toBe(next.workerId);
    await next.stop();
    expect((await memoryRawReader(store).session(sessionId))?.leaseOwner).toBeNull();
    await first.stop({ timeoutMs: 1_000 });
  });

  it("does not retry a session whose drive fails in a loop: it passes it over for the lease's TTL", async () => {
    const { store, errors, worker } = failingDriveSetup();
    // A stored head this version cannot read (an unknown schema version).
    const head = {
      ...newSessionHead("unreadable", "gated", new Date().toISOString()),
      schemaVersion: 99,
    } as unknown as SessionHead;
    await store.createSession({
      head,
      events: [],
      inbox: { entry: { kind: "message", text: "hi", messageId: null }, dedupeKey: null },
    });
    await until(() => errors.length > 0);
    // Forty more polls (at least 200 ms at 5 ms each) in which the session was not driven again.
    await polledAgain(store, 40);
    expect(errors).toHaveLength(1);
    expect(StoredStateError.isInstance(errors[0])).toBe(true);
    expect(errors[0]).toMatchObject({ format: "session_head", reason: "unknown_version", version: 99 });
    expect(workerDrives(worker)).toBe(1);
    // The drive failed before its first commit, which would have taken the lease: none is held.
    expect((await memoryRawReader(store).session("unreadable"))?.leaseOwner).toBeNull();
    await worker.stop();
  });

  it("reports a drive that ends on an unexpected error through onError: a store holding fewer history items than the head counts", async () => {
    const { store, errors, worker } = failingDriveSetup();
    // The head counts three history items the store never got: the model step's history cannot be read.
    const head = { ...newSessionHead("short-history", "gated", new Date().toISOString()), historyLength: 3 };
    await store.createSession({
      head,
      events: [],
      inbox: { entry: { kind: "message", text: "hi", messageId: null }, dedupeKey: null },
    });
    await until(() => errors.length > 0);
    // Twenty more polls (at least 100 ms at 5 ms each) in which no second error came.
    await polledAgain(store, 20);
    expect(errors).toHaveLength(1);
    expect(ContractViolationError.isInstance(errors[0])).toBe(true);
    expect(errors[0]).toMatchObject({
      party: "store",
      message: expect.stringContaining("counts 4 history items, but the store holds 1"),
    });
    expect((await memoryRawReader(store).session("short-history"))?.leaseOwner).toBe(worker.workerId);
    await worker.stop();
  });

  it("fails the turn at once when the runner throws ModelStepError, without retrying the model step", async () => {
    const { definition } = gatedTool();
    let calls = 0;
    const runner: Runner = {
      tools: () => definition.runner.tools(),
      userItem: (kind, text) => definition.runner.userItem(kind, text),
      callTool: (input) => definition.runner.callTool(input),
      runModel: async () => {
        calls += 1;
        throw new ModelStepError("the provider refused the request for good");
      },
    };
    const failing = defineSession({
      name: "gated",
      runner,
      modelRetry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 1 },
    });
    const store = new MemoryStore();
    const errors: unknown[] = [];
    const worker = new Worker({
      store,
      sessions: [failing],
      pollIntervalMs: 5,
      onError: (e) => errors.push(e),
    }).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "gated", message: "hi" });
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 5_000 });
    expect(done.turn?.phase).toBe("failed");
    expect(done.turn?.error).toBe(
      "the model step failed and cannot be retried: the provider refused the request for good",
    );
    expect(calls).toBe(1);
    expect(errors).toEqual([]);
    await worker.stop();
  });
});
