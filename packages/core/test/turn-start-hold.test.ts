/**
 * A turn started under a lease the worker kept (`lingerMs`) may hold its start commit for
 * `turnStartHoldMs` while its first model call runs: a call that answers in time takes the start
 * into its own commit (one commit fewer per turn, the same events in the same order); a slower one
 * finds the start committed alone while it runs; a worker that dies while the start is held loses
 * only that start, and the next worker takes the message again from the inbox.
 */
import { describe, expect, it } from "vitest";
import { ConfigurationError, defineSession, LeaseLostError, SessionClient, Worker, type Runner } from "../src/index.js";
import { driveSession, HistoryCache } from "../src/engine.js";
import { crashWorker, MemoryStore, memoryRawReader, ScriptedRunner } from "../src/testing/index.js";
import { stamped, withoutOccurredAt } from "./support/occurred-at.js";
import { RecordingStore } from "./support/recording-store.js";
import { until } from "./support/until.js";

/**
 * The scripted runner, whose model calls for a message containing `slow` wait until `release()`;
 * `entered` counts the model calls that began, and `onEnter` runs as each one begins.
 */
function gatedRunner(onEnter: () => void = () => {}) {
  const scripted = new ScriptedRunner({
    tools: [
      {
        name: "look_up",
        description: "Reads a value.",
        parameters: { key: "string" },
        execute: async (args) => `value of ${String(args.key)}`,
      },
    ],
  });
  let open!: () => void;
  let gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const state = { entered: 0 };
  const runner: Runner = Object.assign(Object.create(scripted) as ScriptedRunner, {
    runModel: async (input: Parameters<ScriptedRunner["runModel"]>[0]) => {
      state.entered += 1;
      onEnter();
      const user = input.history[input.turnStart]?.item as { content?: string } | undefined;
      if (user?.content?.includes("slow")) await gate;
      return scripted.runModel(input);
    },
  });
  return {
    runner,
    state,
    release: () => {
      open();
      gate = Promise.resolve();
    },
  };
}

const TWO_CALLS = 'call look_up {"key":"a"}\nthen\ncall look_up {"key":"b"}';

function setup(turnStartHoldMs: number, runner: Runner, store = new RecordingStore(), modelAttempts = 3) {
  const definition = defineSession({
    name: "echo",
    runner,
    policies: { look_up: { effect: "read" } },
    modelRetry: { maxAttempts: modelAttempts },
  });
  const worker = new Worker({
    store,
    sessions: [definition],
    lingerMs: 10_000,
    leaseTtlMs: 30_000,
    turnStartHoldMs,
  }).start();
  const client = new SessionClient({ store });
  return { store, worker, client, definition, raw: memoryRawReader(store) };
}

/** Runs a first turn (its lease is then kept), then a second one (`message`); what the second one committed. */
async function secondTurn(turnStartHoldMs: number, message: string) {
  const { store, worker, client, raw } = setup(turnStartHoldMs, gatedRunner().runner);
  const { sessionId } = await client.startSession({ agent: "echo", message: TWO_CALLS });
  await client.waitUntilIdle(sessionId);
  const before = store.applied.length;
  const eventsBefore = (await raw.events(sessionId)).length;
  await client.sendMessage(sessionId, message);
  const done = await client.waitUntilIdle(sessionId);
  await worker.stop();
  const events = (await raw.events(sessionId)).slice(eventsBefore).map((e) => ({ type: e.type, data: e.data }));
  return { commits: store.applied.slice(before), events, done, history: await raw.history(sessionId) };
}

describe("Worker turnStartHoldMs", () => {
  it("takes a turn's start into its first model call's commit: one commit fewer, the same events in the same order", async () => {
    const message = 'call look_up {"key":"c"}\nthen\ncall look_up {"key":"d"}';
    const held = await secondTurn(1_000, message);
    const plain = await secondTurn(0, message);
    expect(plain.commits.length).toBe(6);
    expect(held.commits.length).toBe(5);
    expect(withoutOccurredAt(held.events)).toEqual(plain.events);
    // The held start's events say when they happened; nothing else is stamped.
    expect(stamped(held.events)).toEqual(["turn_started", "step_started"]);
    expect(stamped(plain.events)).toEqual([]);
    expect(held.done.turn?.finalText).toBe(plain.done.turn?.finalText);
    expect(held.done.turn?.finalText).toBe("Results: look_up -> value of c | look_up -> value of d");
    expect(held.history).toEqual(plain.history);
    // The first commit of the held turn: the start's events, then the model step's.
    expect(held.commits[0]!.events.map((e) => e.type)).toEqual([
      "turn_started",
      "history_appended",
      "step_started",
      "step_completed",
      "tool_calls_requested",
      "step_started",
    ]);
    // The user item, held, goes first into that commit's history.
    expect(held.commits[0]!.appendHistory?.length).toBe(1);
  });

  it("a first model call that answers with streamed text: its deltas go after the held start, in its commit", async () => {
    const message = "tell me a story of at least twenty characters";
    const held = await secondTurn(1_000, message);
    const plain = await secondTurn(0, message);
    expect(held.commits.length).toBe(plain.commits.length - 1);
    expect(withoutOccurredAt(held.events)).toEqual(plain.events);
    expect(stamped(held.events)).toEqual(["turn_started", "step_started"]);
    expect(held.events.filter((e) => e.type === "text_delta").length).toBeGreaterThan(0);
    expect(held.commits[0]!.events.slice(0, 4).map((e) => e.type)).toEqual([
      "turn_started",
      "history_appended",
      "step_started",
      "text_delta",
    ]);
  });

  it("holds the start too in a new drive under a lease the worker kept (its slot was taken meanwhile)", async () => {
    const commitsOf = async (turnStartHoldMs: number) => {
      const store = new RecordingStore();
      const definition = defineSession({
        name: "echo",
        runner: gatedRunner().runner,
        policies: { look_up: { effect: "read" } },
      });
      // One slot: session b's work takes the slot of a, idle under its kept lease, whose next message
      // is then driven by a new drive under that same lease.
      const worker = new Worker({
        store,
        sessions: [definition],
        concurrency: 1,
        lingerMs: 10_000,
        leaseTtlMs: 30_000,
        turnStartHoldMs,
      }).start();
      const client = new SessionClient({ store });
      const a = (await client.startSession({ agent: "echo", message: TWO_CALLS })).sessionId;
      await client.waitUntilIdle(a);
      const fence = (await memoryRawReader(store).session(a))!.fence;
      const b = (await client.startSession({ agent: "echo", message: TWO_CALLS })).sessionId;
      await client.waitUntilIdle(b);
      const before = store.applied.length;
      await client.sendMessage(a, TWO_CALLS);
      const done = await client.waitUntilIdle(a);
      await worker.stop();
      expect(done.turn?.number).toBe(2);
      // Driven under the kept lease: no claim, the same fence.
      const ofA = store.applied.slice(before).filter((c) => c.sessionId === a);
      expect(ofA.every((c) => c.claim === undefined && c.fence === fence)).toBe(true);
      return ofA.length;
    };
    const plain = await commitsOf(0);
    expect(plain).toBe(6);
    expect(await commitsOf(1_000)).toBe(plain - 1);
  });

  it("commits the start alone once the hold passed, while the first model call still runs", async () => {
    let storedCursorAtEntry: number | null = null;
    const raws: { raw?: ReturnType<typeof memoryRawReader>; sessionId?: string } = {};
    const gated = gatedRunner(() => {
      if (raws.raw && raws.sessionId)
        void raws.raw.session(raws.sessionId).then((s) => {
          storedCursorAtEntry ??= s!.inboxCursor;
        });
    });
    const { store, worker, client, raw } = setup(50, gated.runner);
    const { sessionId } = await client.startSession({ agent: "echo", message: TWO_CALLS });
    await client.waitUntilIdle(sessionId);
    const cursor = (await raw.session(sessionId))!.inboxCursor;
    const before = store.applied.length;
    Object.assign(raws, { raw, sessionId });
    await client.sendMessage(sessionId, `slow\n${TWO_CALLS}`);
    await until(() => gated.state.entered === 4);
    // The model call began before the turn's start was stored ...
    await until(() => storedCursorAtEntry !== null);
    expect(storedCursorAtEntry).toBe(cursor);
    // ... and the start is stored while the call waits: the turn is running, its user item in the history.
    await until(async () => (await raw.session(sessionId))!.inboxCursor === cursor + 1);
    const running = (await raw.session(sessionId))!.head as { status: string; turn: { modelRunning: boolean } };
    expect(running.status).toBe("running");
    expect(running.turn.modelRunning).toBe(true);
    expect(store.applied.length).toBe(before + 1);
    expect(store.applied[before]!.events.map((e) => e.type)).toEqual([
      "turn_started",
      "history_appended",
      "step_started",
    ]);
    gated.release();
    const done = await client.waitUntilIdle(sessionId);
    expect(done.turn?.finalText).toBe("Results: look_up -> value of a | look_up -> value of b");
    expect(store.applied.length).toBe(before + 6);
    await worker.stop();
  });

  it("never holds a commit that carries a step's result: a queued turn starts only once the turn before it is stored", async () => {
    const seen: { types: string[] }[] = [];
    const raws: { raw?: ReturnType<typeof memoryRawReader>; sessionId?: string } = {};
    const gated = gatedRunner(() => {
      // Read at the call's start (the memory reader answers from what is stored right then).
      if (raws.raw && raws.sessionId)
        void raws.raw.events(raws.sessionId).then((events) => seen.push({ types: events.map((e) => e.type) }));
    });
    const { worker, client, raw } = setup(1_000, gated.runner, new RecordingStore(), 1);
    const { sessionId } = await client.startSession({ agent: "echo", message: TWO_CALLS });
    await client.waitUntilIdle(sessionId);
    Object.assign(raws, { raw, sessionId });
    // Turn 2 waits in its model call, which then fails (one attempt: the turn fails, with no delta);
    // turn 3's message is queued meanwhile, so turn 3 starts in the transition that applies that failure.
    await client.sendMessage(sessionId, "slow\nfail model");
    await until(() => gated.state.entered === 4);
    await client.sendMessage(sessionId, "and then a plain answer");
    await until(async () => (await raw.session(sessionId))!.inboxCursor >= 2);
    gated.release();
    const done = await client.waitUntilIdle(sessionId);
    await worker.stop();
    expect(done.turn?.number).toBe(3);
    expect(done.turn?.phase).toBe("completed");
    // Turn 2's failed call and turn 3's: when turn 3's began, turn 2's end was stored.
    expect(gated.state.entered).toBe(5);
    const atTurnThree = seen.at(-1)!.types;
    expect(atTurnThree.filter((type) => type === "turn_failed").length).toBe(1);
    expect(atTurnThree.filter((type) => type === "turn_started").length).toBe(3);
  });

  it("a worker that dies while the start is held: nothing of it was stored, and the next worker runs the turn once", async () => {
    const gated = gatedRunner();
    const store = new RecordingStore();
    const first = setup(1_000, gated.runner, store);
    const { client, raw } = first;
    const { sessionId } = await client.startSession({ agent: "echo", message: TWO_CALLS });
    await client.waitUntilIdle(sessionId);
    const stored = (await raw.session(sessionId))!;
    const historyBefore = (await raw.history(sessionId)).length;
    await client.sendMessage(sessionId, `slow\n${TWO_CALLS}`);
    await until(() => gated.state.entered === 4);
    crashWorker(first.worker);
    const afterCrash = (await raw.session(sessionId))!;
    expect(afterCrash.version).toBe(stored.version);
    expect(afterCrash.inboxCursor).toBe(stored.inboxCursor);
    expect((await raw.history(sessionId)).length).toBe(historyBefore);
    // The dead worker's kept lease runs out; a new worker takes the message from the inbox.
    await store.releaseLease({
      sessionId,
      workerId: first.worker.workerId,
      fence: stored.fence,
      expiresAt: stored.leaseExpiresAt!,
    });
    gated.release();
    const second = new Worker({ store, sessions: [first.definition], lingerMs: 0 }).start();
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
    await second.stop();
    expect(done.turn?.finalText).toBe("Results: look_up -> value of a | look_up -> value of b");
    expect(done.turn?.number).toBe(2);
    const history = await raw.history(sessionId);
    expect(history.filter((h) => (h as { item: { role?: string } }).item.role === "user").length).toBe(2);
    const started = (await raw.events(sessionId)).filter((e) => e.type === "turn_started");
    expect(started.length).toBe(2);
  });

  it("a held start's events say when they happened: before the commit that stored them, by the model call's time", async () => {
    const gated = gatedRunner();
    const { worker, client } = setup(1_000, gated.runner);
    const { sessionId } = await client.startSession({ agent: "echo", message: TWO_CALLS });
    await client.waitUntilIdle(sessionId);
    const eventsBefore = (await client.readEvents(sessionId)).length;
    const sentAt = Date.now();
    await client.sendMessage(sessionId, `slow\n${TWO_CALLS}`);
    // The first turn's three model calls, then the held turn's first: it waits 100 ms.
    await until(() => gated.state.entered === 4);
    await new Promise((resolve) => setTimeout(resolve, 100));
    gated.release();
    await client.waitUntilIdle(sessionId);
    await worker.stop();
    const events = (await client.readEvents(sessionId)).slice(eventsBefore);
    const started = events.find((e) => e.type === "turn_started")!;
    const step = events.find((e) => e.type === "step_started")!;
    const stored = events.find((e) => e.type === "step_completed")!;
    // Stored with the model step's result ...
    expect(started.at).toBe(stored.at);
    expect(step.at).toBe(stored.at);
    // ... but they happened when the message was taken, before the model call.
    const occurred = (e: { data: unknown }) => Date.parse((e.data as { occurredAt: string }).occurredAt);
    expect(occurred(started)).toBe(occurred(step));
    expect(occurred(started)).toBeGreaterThanOrEqual(sentAt);
    expect(Date.parse(stored.at) - occurred(step)).toBeGreaterThanOrEqual(90);
    // The step's end was not held: it carries no occurredAt.
    expect((stored.data as { occurredAt?: string }).occurredAt).toBeUndefined();
  });

  it("a drive whose held start is refused keeps none of its items in the worker's history cache", async () => {
    const gated = gatedRunner();
    const definition = defineSession({ name: "echo", runner: gated.runner, policies: { look_up: { effect: "read" } } });
    let refuse = false;
    class RefusingStore extends MemoryStore {
      override async commit(...args: Parameters<MemoryStore["commit"]>) {
        if (refuse) throw new LeaseLostError(args[0].sessionId, args[0].fence);
        return super.commit(...args);
      }
    }
    const store = new RefusingStore();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "echo", message: TWO_CALLS });
    const lease = (await store.acquireLease({ workerId: "w1", ttlMs: 30_000, agents: ["echo"] }))!;
    const cache = new HistoryCache();
    const drive = driveSession({
      store,
      definition,
      lease,
      signal: new AbortController().signal,
      stopping: () => false,
      historyCache: cache,
      releaseWhenIdle: true,
      leaseTtlMs: 30_000,
      lingerMs: 10_000,
      turnStartHoldMs: 1_000,
    });
    await client.waitUntilIdle(sessionId);
    const length = (await memoryRawReader(store).history(sessionId)).length;
    expect(cache.whole(sessionId, length)).not.toBeNull();
    refuse = true;
    await client.sendMessage(sessionId, `slow\n${TWO_CALLS}`);
    await until(() => gated.state.entered === 4);
    // The held user item is in the drive's history while the call runs ...
    expect(cache.whole(sessionId, length + 1)).not.toBeNull();
    gated.release();
    expect(await drive).toBe("lost");
    // ... and gone once its commit was refused: the cache holds nothing of the session.
    expect(cache.whole(sessionId, length + 1)).toBeNull();
    expect(cache.whole(sessionId, length)).toBeNull();
  });

  it("refuses a hold that is not a number of milliseconds from 0 to a quarter of the lease", () => {
    const store = new MemoryStore();
    const definition = defineSession({ name: "echo", runner: gatedRunner().runner });
    for (const turnStartHoldMs of [-1, Number.NaN, 1_001, 5_000]) {
      expect(() => new Worker({ store, sessions: [definition], turnStartHoldMs, leaseTtlMs: 15_000 })).toThrow(
        ConfigurationError,
      );
    }
    expect(() => new Worker({ store, sessions: [definition], turnStartHoldMs: 400, leaseTtlMs: 1_000 })).toThrow(
      ConfigurationError,
    );
    expect(() => new Worker({ store, sessions: [definition], turnStartHoldMs: 0 })).not.toThrow();
  });
});
