import { describe, expect, it } from "vitest";
import {
  ContractViolationError,
  defineSession,
  type HistoryItem,
  SessionClient,
  type SessionStore,
  Worker,
} from "../src/index.js";
import { driveSession, HistoryCache, type StoreNotification } from "../src/engine.js";
import { MemoryStore, ScriptedRunner } from "../src/testing/index.js";

/**
 * A store whose `method` takes a while, as a database round trip does. `inFlight.get(sessionId)`
 * counts the calls of `method` for that session that have started and not yet returned. Its inbox
 * notices carry no entries, so a drive reads every entry (the read whose races these tests make).
 */
function slowStore(
  store: MemoryStore,
  method: "readInbox" | "commit",
  ms: number,
  inFlight = new Map<string, number>(),
): SessionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property === "subscribe")
        return (listener: (n: StoreNotification) => void) =>
          target.subscribe((n) => listener(n.kind === "inbox" ? { kind: "inbox", sessionId: n.sessionId } : n));
      if (property !== method || typeof value !== "function")
        return typeof value === "function" ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        const first = args[0];
        const sessionId = typeof first === "string" ? first : String((first as { sessionId: string }).sessionId);
        inFlight.set(sessionId, (inFlight.get(sessionId) ?? 0) + 1);
        try {
          await new Promise((resolve) => setTimeout(resolve, ms));
          return await (value as (...a: unknown[]) => unknown).apply(target, args);
        } finally {
          inFlight.set(sessionId, inFlight.get(sessionId)! - 1);
        }
      };
    },
  });
}

describe("the engine", () => {
  it("never launches a step again while its result waits to be applied", async () => {
    const runner = new ScriptedRunner({
      tools: [
        {
          name: "look_up_order",
          description: "Look up.",
          parameters: { order_id: "string" },
          execute: (a) => `order ${String(a.order_id)}`,
        },
      ],
    });
    // Inbox reads in flight per session, and model steps that finished while their session's inbox
    // was being read: the race this test is about (the window must really open, not only the outcome hold).
    const readingInbox = new Map<string, number>();
    let finishedDuringInboxRead = 0;
    // A model that takes a little time, so inbox reads overlap model steps.
    const slowRunner = Object.assign(Object.create(runner) as ScriptedRunner, {
      runModel: async (input: Parameters<ScriptedRunner["runModel"]>[0]) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        const result = await runner.runModel(input);
        if ((readingInbox.get(input.sessionId) ?? 0) > 0) finishedDuringInboxRead += 1;
        return result;
      },
    });
    const definition = defineSession({
      name: "race",
      runner: slowRunner,
      policies: { look_up_order: { effect: "read" } },
    });
    const store = slowStore(new MemoryStore(), "readInbox", 15, readingInbox);
    const errors: unknown[] = [];
    const worker = new Worker({
      store,
      sessions: [definition],
      pollIntervalMs: 20,
      onError: (e) => errors.push(e),
    }).start();
    const client = new SessionClient({ store });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) {
      const { sessionId } = await client.startSession({
        agent: "race",
        message: `call look_up_order {"order_id":"${i}"}`,
      });
      ids.push(sessionId);
    }
    // Messages arrive while model steps run: each wakes the engine, which reads the inbox (slowly).
    for (const [i, id] of ids.entries()) {
      await new Promise((resolve) => setTimeout(resolve, 4));
      await client.sendMessage(id, `second ${i}`);
      await new Promise((resolve) => setTimeout(resolve, 7));
      await client.sendMessage(id, `third ${i}`);
    }
    let modelSteps = 0;
    for (const id of ids) {
      const done = await client.waitUntilIdle(id, { timeoutMs: 10_000 });
      expect(done.turnCount).toBe(3);
      modelSteps += (await client.steps(id)).filter((s) => s.step === "RunModel").length;
    }
    await worker.stop();
    expect(errors).toEqual([]);
    expect(modelSteps).toBe(8 * 4);
    expect(runner.modelCalls).toBe(modelSteps);
    expect(finishedDuringInboxRead, "model steps that finished while their inbox was read").toBeGreaterThan(0);
  });

  const flakyRetry = (failures: number, backoffMs: number) => {
    const runner = new ScriptedRunner({
      tools: [
        {
          name: "flaky",
          description: "Fails a given number of times, then succeeds.",
          parameters: { key: "string" },
          execute: () => {
            if (failures-- > 0) throw new Error("down");
            return "up";
          },
        },
      ],
    });
    return defineSession({
      name: "retry",
      runner,
      policies: { flaky: { effect: "read" } },
      toolBackoff: { initialDelayMs: backoffMs, maxDelayMs: backoffMs },
    });
  };

  /** A flaky read fails twice; with a poll of a minute, the retries must start on their own. */
  const expectRetriesBeforeThePoll = async (store: SessionStore, backoffMs: number) => {
    const worker = new Worker({ store, sessions: [flakyRetry(2, backoffMs)], pollIntervalMs: 60_000 }).start();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "retry", message: 'call flaky {"key":"k"}' });
    const done = await client.waitUntilIdle(sessionId, { timeoutMs: 5_000 });
    await worker.stop();
    expect(done.turn?.calls[0]?.attempts).toBe(3);
    expect(done.turn?.calls[0]?.status).toBe("succeeded");
  };

  it("starts a retry whose backoff ended while the failure was being committed, not at the next poll", async () => {
    // Each commit (20 ms) takes longer than the backoff (5 ms): when the commit of a failed attempt
    // returns, the retry is already due.
    await expectRetriesBeforeThePoll(slowStore(new MemoryStore(), "commit", 20), 5);
  });

  it("starts a retry when its backoff ends, not at the next poll", async () => {
    // Only the backoff timer (50 ms) can start the retries in time.
    await expectRetriesBeforeThePoll(new MemoryStore(), 50);
  });

  it("drops the text of a cancelled turn's model step that finished while the cancellation was read", async () => {
    const readingInbox = new Map<string, number>();
    const store = slowStore(new MemoryStore(), "readInbox", 40, readingInbox);
    const scripted = new ScriptedRunner({ tools: [] });
    let entered = false;
    let release = false;
    let answeredDuringInboxRead = false;
    const waitFor = async (check: () => boolean) => {
      while (!check()) await new Promise((resolve) => setTimeout(resolve, 2));
    };
    const runner = Object.assign(Object.create(scripted) as ScriptedRunner, {
      runModel: async (input: Parameters<ScriptedRunner["runModel"]>[0]) => {
        entered = true;
        // Answer, streaming text, while the engine reads the inbox that holds the cancellation.
        await waitFor(() => release);
        await waitFor(() => (readingInbox.get(input.sessionId) ?? 0) > 0);
        answeredDuringInboxRead = true;
        return scripted.runModel(input);
      },
    });
    const worker = new Worker({ store, sessions: [defineSession({ name: "race", runner })] }).start();
    const client = new SessionClient({ store });
    try {
      const { sessionId } = await client.startSession({
        agent: "race",
        message: "a message with a long answer to stream",
      });
      await waitFor(() => entered);
      await client.cancelTurn(sessionId);
      release = true;
      await client.waitFor(sessionId, (s) => s.turn?.phase === "cancelled", { timeoutMs: 5_000 });
      await worker.stop();
      expect(answeredDuringInboxRead, "the model answered while the engine read its inbox").toBe(true);
      const events = await client.readEvents(sessionId);
      const receipt = events.findIndex((e) => e.type === "turn_cancelled");
      expect(receipt).toBeGreaterThan(0);
      expect(events.some((e) => e.type === "text_delta")).toBe(false);
    } finally {
      await worker.stop();
    }
  });

  /**
   * The history read of a turn's first model step (on a worker whose cache holds none of the
   * session) and a commit that appends history (the turn's cancellation, with its note) cross.
   * - "read sees the commit": the read waits until the commit is stored, then reads; the commit
   *   answers its caller later. The read holds the note that the commit's answer appends. The next
   *   message, sent once the cancellation is seen, goes to the same drive.
   * - "commit answers first": the read reads before the commit is stored and answers after the
   *   commit answered, and before the next turn's own read (sent before the cancellation, the message
   *   is queued, and its turn starts in the cancellation's commit). The read lacks the note and the
   *   next message: the drive must read again for them.
   * Either way the next turn's model must see its own message as the turn's: not the note, not nothing.
   */
  it.each(["read sees the commit", "commit answers first"] as const)(
    "keeps the history of a drive exact when its first history read and a commit cross (%s)",
    async (order) => {
      const inner = new MemoryStore();
      let gate: { open: () => void } | null = null;
      let phase: "off" | "first read" | "later reads" = "off";
      let crossed = 0;
      const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      const store = new Proxy(inner, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver) as unknown;
          if (property === "readHistory")
            return async (...args: Parameters<MemoryStore["readHistory"]>) => {
              if (phase === "off") return target.readHistory(...args);
              if (phase === "later reads") {
                // Reads after the crossing one answer after it.
                await pause(40);
                return target.readHistory(...args);
              }
              phase = "later reads";
              const opened = new Promise<void>((resolve) => {
                gate = { open: resolve };
              });
              const early = order === "commit answers first" ? await target.readHistory(...args) : null;
              await opened;
              crossed += 1;
              if (early) {
                await pause(10);
                return early;
              }
              return target.readHistory(...args);
            };
          if (property === "commit")
            return async (...args: Parameters<MemoryStore["commit"]>) => {
              const result = await target.commit(...args);
              const waiting = gate;
              if (waiting && (args[0].appendHistory?.length ?? 0) > 0) {
                gate = null;
                waiting.open();
                if (order === "read sees the commit") await pause(30);
              }
              return result;
            };
          return typeof value === "function" ? value.bind(target) : value;
        },
      }) as SessionStore;
      const definition = defineSession({ name: "race", runner: new ScriptedRunner({ tools: [] }) });
      const client = new SessionClient({ store });
      const first = new Worker({ store, sessions: [definition], lingerMs: 0 }).start();
      const { sessionId } = await client.startSession({ agent: "race", message: "first" });
      await client.waitUntilIdle(sessionId, { timeoutMs: 5_000 });
      await first.stop();
      // A worker that never drove the session: its first model step reads the history from the store.
      phase = "first read";
      const errors: unknown[] = [];
      const second = new Worker({
        store,
        sessions: [definition],
        lingerMs: 5_000,
        onError: (e) => errors.push(e),
      }).start();
      try {
        await client.sendMessage(sessionId, "second");
        while (gate === null) await pause(2);
        if (order === "commit answers first") await client.sendMessage(sessionId, "third");
        await client.cancelTurn(sessionId);
        await client.waitFor(sessionId, (s) => s.turnCount === 3 || s.turn?.phase === "cancelled", {
          timeoutMs: 5_000,
        });
        if (order === "read sees the commit") await client.sendMessage(sessionId, "third");
        const done = await client.waitFor(sessionId, (s) => s.turnCount === 3 && s.status === "idle", {
          timeoutMs: 5_000,
        });
        expect(crossed, "the history read and the cancellation's commit crossed").toBe(1);
        expect(done.turn?.phase).toBe("completed");
        expect(done.turn?.finalText).toBe("(noted 1 cancelled turn(s)) You said: third");
        expect(errors).toEqual([]);
      } finally {
        await second.stop();
      }
    },
  );
  it("fails the drive, and calls no model, when the history in memory is not as long as the head counts", async () => {
    // A history cache with a bug: it answers one item twice. The drive must not hand that history to
    // the model (its items past the duplicate are off by one, and the turn's message is not where the
    // turn says).
    class DoublingCache extends HistoryCache {
      override async load(...args: Parameters<HistoryCache["load"]>): Promise<HistoryItem[]> {
        const history = await super.load(...args);
        return [history[0]!, ...history];
      }
    }
    const runner = new ScriptedRunner({ tools: [] });
    const definition = defineSession({ name: "race", runner });
    const store = new MemoryStore();
    const client = new SessionClient({ store });
    const { sessionId } = await client.startSession({ agent: "race", message: "hello" });
    const lease = (await store.acquireLease({ workerId: "w1", ttlMs: 30_000, agents: ["race"] }))!;
    const drive = driveSession({
      store,
      definition,
      lease,
      signal: new AbortController().signal,
      stopping: () => false,
      historyCache: new DoublingCache(),
      releaseWhenIdle: true,
      leaseTtlMs: 30_000,
    });
    const error = await drive.then(
      () => null,
      (e: unknown) => e,
    );
    expect(ContractViolationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain(`session "${sessionId}" holds 2 items, its head counts 1`);
    expect(runner.modelCalls).toBe(0);
  });
});
