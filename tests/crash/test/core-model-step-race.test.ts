/**
 * Minimal reproduction of a core engine race found by the crash suite (no crash needed).
 *
 * `SessionDriver.loop` (packages/core/src/session-driver.ts) takes the due steps from `this.head`
 * after awaiting `consumeInbox()`. When the RunModel step's task finishes during that await, its
 * result is queued in `completions` and its key leaves `inflight`, but the head still says the
 * RunModel step is due, so the loop launches the same model step a second time. The second call's
 * text deltas are committed after `turn_completed` (events of a turn that has ended), and applying
 * its result throws ("no active turn" / "the turn is not waiting for a model step"), which ends the
 * drive and releases the lease while that drive's tool calls may still run.
 *
 * Here a store with a slow `readInbox` (a real PostgresStore; the subclass only adds latency, as a
 * distant database would) and a model that answers while the engine waits for its inbox make the
 * window certain. Expected: each model step runs once, and no event of a turn follows its end.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineSession, SessionClient, Worker, type InboxItem, type Runner } from "@durable-agents/core";
import { ScriptedRunner, workerDrives } from "@durable-agents/core/testing";
import { migrate, PostgresStore } from "@durable-agents/store-postgres";
import { createTestDatabase, type TestDatabase } from "@durable-agents/store-postgres/testing";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

class SlowInboxStore extends PostgresStore {
  readingInbox = 0;
  override async readInbox(sessionId: string, afterSeq: number): Promise<InboxItem[]> {
    this.readingInbox += 1;
    try {
      await sleep(40);
      return await super.readInbox(sessionId, afterSeq);
    } finally {
      this.readingInbox -= 1;
    }
  }
}

let database: TestDatabase;
let pool: pg.Pool;
beforeAll(async () => {
  database = await createTestDatabase();
  pool = new pg.Pool({ connectionString: database.connectionString, max: 8 });
  pool.on("error", () => {});
  await migrate(pool);
});
afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

interface Harness {
  readonly client: SessionClient;
  readonly modelCalls: Map<string, number>;
  /** The model steps (turn/step) whose answer came while the engine was reading its inbox: the race window. */
  readonly answeredDuringInboxRead: Set<string>;
  readonly errors: unknown[];
  /** Resolves once the worker has ended its drives and holds no session (nothing more can run or commit). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

/** An in-process worker whose model answers while the engine waits for its (slow) inbox read. */
function harness(): Harness {
  const store = new SlowInboxStore({ pool, pollIntervalMs: 500 });
  const scripted = new ScriptedRunner({ tools: [] });
  const modelCalls = new Map<string, number>();
  const answeredDuringInboxRead = new Set<string>();
  const runner: Runner = {
    tools: () => scripted.tools(),
    userItem: (kind, text) => scripted.userItem(kind, text),
    callTool: (input) => scripted.callTool(input),
    async runModel(input) {
      const key = `${input.turnId}/${input.modelStep}`;
      modelCalls.set(key, (modelCalls.get(key) ?? 0) + 1);
      // Answer while the engine is waiting for its inbox (bounded: at most 2 s).
      for (let waited = 0; store.readingInbox === 0 && waited < 2000; waited += 2) await sleep(2);
      if (store.readingInbox > 0) answeredDuringInboxRead.add(key);
      return scripted.runModel(input);
    },
  };
  const definition = defineSession({ name: "race", runner });
  const errors: unknown[] = [];
  const worker = new Worker({
    store,
    sessions: [definition],
    pollIntervalMs: 20,
    onError: (e) => errors.push(e),
  }).start();
  // The client reads through a store of its own, so only the engine's inbox reads are slow.
  const clientStore = new PostgresStore({ pool, pollIntervalMs: 500 });
  return {
    client: new SessionClient({ store: clientStore }),
    modelCalls,
    answeredDuringInboxRead,
    errors,
    async settled() {
      const deadline = Date.now() + 10_000;
      while (!(workerDrives(worker) > 0 && worker.activeSessions === 0)) {
        if (Date.now() > deadline) throw new Error("the worker still holds a session after 10 s");
        await sleep(5);
      }
    },
    async close() {
      await worker.stop({ timeoutMs: 5000 });
      await Promise.all([store.close(), clientStore.close()]);
    },
  };
}

describe("core engine: one model step, one model call", () => {
  it("does not launch a RunModel step again when it finishes while the inbox is read", async () => {
    const { client, modelCalls, answeredDuringInboxRead, errors, settled, close } = harness();
    try {
      const { sessionId } = await client.startSession({
        agent: "race",
        message: "hello there, this is a long enough message",
      });
      const snapshot = await client.waitUntilIdle(sessionId, { timeoutMs: 10_000 });
      expect(snapshot.turn?.finalText).toContain("You said");
      // The drive has ended and the worker holds the session no more: a second model call, had
      // one been launched, has been counted, and its events committed.
      await settled();
      const events = await client.readEvents(sessionId);
      const ended = events.findIndex((e) => e.type === "turn_completed");
      const late = events.slice(ended + 1).filter((e) => "turnId" in e.data && e.data.turnId === "turn-1");
      expect({
        modelCalls: Object.fromEntries(modelCalls),
        eventsAfterTurnEnded: late.map((e) => e.type),
        workerErrors: errors.map((e) => (e as Error).message),
        answeredDuringInboxRead: [...answeredDuringInboxRead],
      }).toEqual({
        modelCalls: { "turn-1/1": 1 },
        eventsAfterTurnEnded: [],
        workerErrors: [],
        // The race window really opened: the model answered while the engine waited for its inbox.
        answeredDuringInboxRead: ["turn-1/1"],
      });
    } finally {
      await close();
    }
  });

  it("answers a queued message with its own reply, not with the previous turn's", async () => {
    const { client, answeredDuringInboxRead, settled, close } = harness();
    try {
      const { sessionId } = await client.startSession({ agent: "race", message: "first message" });
      await client.sendMessage(sessionId, "second message");
      await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle" && s.queuedMessages === 0, {
        timeoutMs: 10_000,
      });
      await settled();
      const answers = (await client.readEvents(sessionId)).flatMap((e) =>
        e.type === "turn_completed" ? [`${e.data.turnId}: ${e.data.text}`] : [],
      );
      expect(answers).toEqual(["turn-1: You said: first message", "turn-2: You said: second message"]);
      expect(answeredDuringInboxRead.size, "model steps answered while the inbox was read").toBeGreaterThan(0);
    } finally {
      await close();
    }
  });
});
