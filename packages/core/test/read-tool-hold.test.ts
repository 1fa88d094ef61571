/**
 * A model step's result that starts nothing but `read` calls may wait `readToolHoldMs` (0 by default:
 * nothing waits) for the first of their results and go in its commit: a read that answers in time makes one commit fewer (the
 * same events in the same order, the same history); a slower one finds the result committed alone
 * while it runs; a call of any other effect, or one a person must approve, is never run before its
 * start is stored; a worker that dies while the result is held loses the model's answer (the next
 * worker runs the step and its reads again, the read's first run left uncounted) and holds nothing
 * in the drive that recovers the turn.
 */
import { describe, expect, it } from "vitest";
import { ConfigurationError, defineSession, SessionClient, Worker, type ToolEffect } from "../src/index.js";
import { crashWorker, MemoryStore, memoryRawReader, ScriptedRunner } from "../src/testing/index.js";
import { stamped, withoutOccurredAt } from "./support/occurred-at.js";
import { RecordingStore } from "./support/recording-store.js";
import { until } from "./support/until.js";

/**
 * The scripted runner with one tool, `look_up`, whose calls for a key containing `slow` wait until
 * `release()`; `modelCalls` counts the model calls that began, `toolCalls` the tool's.
 */
function gatedRunner() {
  const scripted = new ScriptedRunner({
    tools: [
      {
        name: "look_up",
        description: "Reads a value.",
        parameters: { key: "string" },
        execute: async (args) => {
          counts.toolCalls += 1;
          hooks.onToolEnter();
          if (String(args.key).includes("slow")) await gate;
          return `value of ${String(args.key)}`;
        },
      },
    ],
  });
  const counts = { modelCalls: 0, toolCalls: 0 };
  const hooks = { onToolEnter: () => {} };
  let open!: () => void;
  let gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const runner = Object.assign(Object.create(scripted) as ScriptedRunner, {
    runModel: async (input: Parameters<ScriptedRunner["runModel"]>[0]) => {
      counts.modelCalls += 1;
      return scripted.runModel(input);
    },
  });
  return {
    runner,
    counts,
    hooks,
    release: () => {
      open();
      gate = Promise.resolve();
    },
  };
}

const TWO_CALLS = 'call look_up {"key":"a"}\nthen\ncall look_up {"key":"b"}';

function setup(
  readToolHoldMs: number,
  options: { effect?: ToolEffect; needsApproval?: boolean; store?: RecordingStore; runner?: ScriptedRunner } = {},
) {
  const gated = gatedRunner();
  const store = options.store ?? new RecordingStore();
  const definition = defineSession({
    name: "echo",
    runner: options.runner ?? gated.runner,
    policies: { look_up: { effect: options.effect ?? "read", needsApproval: options.needsApproval ?? false } },
  });
  const worker = new Worker({
    store,
    sessions: [definition],
    lingerMs: 10_000,
    leaseTtlMs: 30_000,
    // The turn's start is committed before its first model call (turnStartHoldMs has its own tests).
    turnStartHoldMs: 0,
    readToolHoldMs,
  }).start();
  const client = new SessionClient({ store });
  return { store, worker, client, definition, gated, raw: memoryRawReader(store) };
}

/** One turn of `message` on a new session; what the worker committed for it. */
async function oneTurn(readToolHoldMs: number, message: string, options: { effect?: ToolEffect } = {}) {
  const { store, worker, client, raw, gated } = setup(readToolHoldMs, options);
  const { sessionId } = await client.startSession({ agent: "echo", message });
  const done = await client.waitUntilIdle(sessionId);
  await worker.stop();
  const events = (await raw.events(sessionId)).map((e) => ({ type: e.type, data: e.data }));
  return { commits: store.applied, events, done, history: await raw.history(sessionId), counts: gated.counts };
}

describe("Worker readToolHoldMs", () => {
  it("takes a model's result that starts only reads into the first read's commit: a commit fewer per read, the same events in the same order", async () => {
    const held = await oneTurn(1_000, TWO_CALLS);
    const plain = await oneTurn(0, TWO_CALLS);
    // A claimed turn of model, read, model, read, model: the claim with the start, then a commit per
    // model result and per read's result.
    expect(plain.commits.length).toBe(6);
    expect(held.commits.length).toBe(4);
    expect(withoutOccurredAt(held.events)).toEqual(plain.events);
    // Each held result's events that time a step say when they happened (stored with the read's result).
    expect(stamped(held.events)).toEqual(["step_completed", "step_started", "step_completed", "step_started"]);
    expect(stamped(plain.events)).toEqual([]);
    expect(held.history).toEqual(plain.history);
    expect(held.done.turn?.finalText).toBe("Results: look_up -> value of a | look_up -> value of b");
    expect(held.done.turn?.finalText).toBe(plain.done.turn?.finalText);
    expect(held.done.turn?.calls.map((c) => [c.status, c.attempts])).toEqual([
      ["succeeded", 1],
      ["succeeded", 1],
    ]);
    // Each model step and each read ran once.
    expect(held.counts).toEqual({ modelCalls: 3, toolCalls: 2 });
    // The second commit: the model's result and the read's start, then the read's result and the next model step's start.
    expect(held.commits[1]!.events.map((e) => e.type)).toEqual([
      "step_completed",
      "tool_calls_requested",
      "step_started",
      "step_completed",
      "tool_call_completed",
      "step_started",
      "step_completed",
      "step_started",
    ]);
  });

  it("holds nothing by default: a Worker made without readToolHoldMs stores each model result before its reads run", async () => {
    const store = new RecordingStore();
    const definition = defineSession({
      name: "echo",
      runner: gatedRunner().runner,
      policies: { look_up: { effect: "read" } },
    });
    const worker = new Worker({ store, sessions: [definition], turnStartHoldMs: 0 }).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "echo", message: TWO_CALLS });
    await client.waitUntilIdle(sessionId);
    await worker.stop();
    const plain = await oneTurn(0, TWO_CALLS);
    expect(store.applied.length).toBe(plain.commits.length);
    expect(store.applied.map((c) => c.events.map((e) => e.type))).toEqual(
      plain.commits.map((c) => c.events.map((e) => e.type)),
    );
  });

  it("never holds a result that starts a call of another effect: it is stored before the call runs", async () => {
    for (const effect of ["idempotent_write", "non_idempotent_write", "unclassified"] as const) {
      const held = await oneTurn(1_000, TWO_CALLS, { effect });
      const plain = await oneTurn(0, TWO_CALLS, { effect });
      expect(held.commits.length).toBe(plain.commits.length);
      expect(held.events).toEqual(plain.events);
    }
  });

  it("never holds a result whose read a person must approve: the interrupt is stored at once", async () => {
    const { store, worker, client } = setup(1_000, { needsApproval: true });
    const { sessionId } = await client.startSession({ agent: "echo", message: 'call look_up {"key":"a"}' });
    const waiting = await client.waitUntilIdle(sessionId);
    expect(waiting.status).toBe("awaiting_approval");
    // The claim with the start, then the model's result with the interrupt: nothing waits.
    expect(store.applied.length).toBe(2);
    await worker.stop();
  });

  it("commits the result alone once the hold passed, while the read still runs", async () => {
    const { store, worker, client, raw, gated } = setup(30);
    const { sessionId } = await client.startSession({
      agent: "echo",
      message: 'call look_up {"key":"slow"}',
    });
    await until(() => gated.counts.toolCalls === 1);
    // The read began before the model's result was stored, which is stored while the read waits.
    await until(async () => {
      const head = (await raw.session(sessionId))!.head as { turn: { calls: { status: string }[] } | null };
      return head.turn?.calls[0]?.status === "running";
    });
    expect(store.applied.at(-1)!.events.map((e) => e.type)).toEqual([
      "step_completed",
      "tool_calls_requested",
      "step_started",
    ]);
    const alone = store.applied.length;
    gated.release();
    const done = await client.waitUntilIdle(sessionId);
    expect(done.turn?.finalText).toBe("Results: look_up -> value of slow");
    // The read's result with the next model step's start, then the model's answer.
    expect(store.applied.length).toBe(alone + 2);
    await worker.stop();
  });

  it("a worker that dies while the result is held: the model's answer is lost; the next worker runs the step again, its read's start stored first", async () => {
    const store = new RecordingStore();
    const first = setup(1_000, { store });
    const { client, raw, gated } = first;
    const { sessionId } = await client.startSession({ agent: "echo", message: 'call look_up {"key":"slow"}' });
    await until(() => gated.counts.toolCalls === 1);
    crashWorker(first.worker);
    // Only the claim with the turn's start was stored: the model step is running, no call requested.
    const stored = (await raw.session(sessionId))!;
    const head = stored.head as { turn: { calls: unknown[]; modelRunning: boolean } };
    expect(store.applied.length).toBe(1);
    expect(head.turn.calls).toEqual([]);
    expect(head.turn.modelRunning).toBe(true);
    // The dead worker's lease runs out; a new worker, with the same hold, recovers the turn.
    await store.releaseLease({
      sessionId,
      workerId: first.worker.workerId,
      fence: stored.fence,
      expiresAt: stored.leaseExpiresAt!,
    });
    // What the store held when the read began again.
    let storedAtEntry: string[] | null = null;
    gated.hooks.onToolEnter = () => {
      storedAtEntry = store.applied.at(-1)!.events.map((e) => e.type);
    };
    const second = new Worker({ store, sessions: [first.definition], lingerMs: 0, readToolHoldMs: 1_000 }).start();
    await until(() => gated.counts.toolCalls === 2);
    // The recovering drive holds nothing: the model's result and the read's start (its first attempt)
    // were stored before the read began, so a read that killed its worker again would be counted.
    expect(storedAtEntry).toEqual(["step_completed", "tool_calls_requested", "step_started"]);
    const now = (await raw.session(sessionId))!.head as { turn: { calls: { status: string; attempts: number }[] } };
    expect(now.turn.calls.map((c) => [c.status, c.attempts])).toEqual([["running", 1]]);
    gated.release();
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    await second.stop();
    await first.worker.stop({ timeoutMs: 1_000 });
    expect(done.turn?.phase).toBe("completed");
    expect(done.turn?.finalText).toBe("Results: look_up -> value of slow");
    // The first model step ran twice (the interrupted call is not an attempt), the read twice.
    expect(done.turn?.steps.filter((s) => s.step === "RunModel").map((s) => s.attempt)).toEqual([1, 1]);
    expect(gated.counts.modelCalls).toBe(3);
    expect(gated.counts.toolCalls).toBe(2);
    expect(done.turn?.calls.map((c) => [c.status, c.attempts])).toEqual([["succeeded", 1]]);
    const types = (await raw.events(sessionId)).map((e) => e.type);
    expect(types.filter((type) => type === "session_recovered").length).toBe(1);
    expect(types.filter((type) => type === "tool_calls_requested").length).toBe(1);
  });

  it("refuses a hold that is not a number of milliseconds from 0 to a quarter of the lease", () => {
    const store = new MemoryStore();
    const definition = defineSession({ name: "echo", runner: gatedRunner().runner });
    for (const readToolHoldMs of [-1, Number.NaN, 1_001, 5_000]) {
      expect(() => new Worker({ store, sessions: [definition], readToolHoldMs, leaseTtlMs: 15_000 })).toThrow(
        ConfigurationError,
      );
    }
    expect(() => new Worker({ store, sessions: [definition], readToolHoldMs: 400, leaseTtlMs: 1_000 })).toThrow(
      ConfigurationError,
    );
    expect(() => new Worker({ store, sessions: [definition], readToolHoldMs: 0 })).not.toThrow();
  });
});
