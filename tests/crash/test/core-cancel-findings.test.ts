/**
 * Regression tests for three core issues with cancellations that the crash suites found (no crash
 * needed; an in-process worker on core's testing MemoryStore). Each test sets the situation up,
 * checks that it really arose, and then checks what core now does:
 *
 * 1. Text deltas of a cancelled turn are not committed after its `turn_cancelled` receipt, even
 *    when its model step finished while the engine was reading the inbox that held the cancellation.
 * 2. A decision for an interrupt of a cancelled turn, sent once a later turn has started, is
 *    refused with SessionStateError (it belongs to a cancelled turn), not InterruptNotFoundError.
 * 3. A second decision, sent while the first is still in the inbox ahead of a cancellation, is a
 *    duplicate (DuplicateResolutionError), not "its call will never run".
 */
import { describe, expect, it } from "vitest";
import {
  defineSession,
  DuplicateResolutionError,
  InterruptNotFoundError,
  SessionClient,
  SessionStateError,
  Worker,
  type InboxItem,
  type Runner,
  type SessionEvent,
} from "@durable-agents/core";
import { MemoryStore, ScriptedRunner, type ConformanceTool } from "@durable-agents/core/testing";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
    await sleep(2);
  }
}

/** A memory store whose inbox reads take 40 ms (as a distant database's would). */
class SlowInboxStore extends MemoryStore {
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

const payTool: ConformanceTool = {
  name: "pay",
  description: "a payment (single attempt, needs approval)",
  parameters: { key: "string" },
  needsApproval: true,
  execute: async (args) => `paid ${String(args.key)}`,
};

function approvalAgent(store: MemoryStore) {
  const runner = new ScriptedRunner({ tools: [payTool] });
  const definition = defineSession({
    name: "findings",
    runner,
    policies: { pay: { effect: "non_idempotent_write" } },
  });
  return { definition, client: new SessionClient({ store }) };
}

describe("cancellations: regressions of issues the crash suites found", () => {
  it("issue 1: drops the text of a model step that finished while the engine read the cancellation", async () => {
    const store = new SlowInboxStore();
    const scripted = new ScriptedRunner({ tools: [] });
    let entered = false;
    let release = false;
    let answeredDuringInboxRead = false;
    const runner: Runner = {
      tools: () => scripted.tools(),
      userItem: (kind, text) => scripted.userItem(kind, text),
      callTool: (input) => scripted.callTool(input),
      async runModel(input) {
        entered = true;
        // Answer (with streamed text) once the engine reads the inbox that holds the cancellation.
        await until("the test releases the model", () => release);
        await until("the engine reads its inbox", () => store.readingInbox > 0);
        answeredDuringInboxRead = true;
        return scripted.runModel(input);
      },
    };
    const worker = new Worker({ store, sessions: [defineSession({ name: "findings", runner })] }).start();
    const client = new SessionClient({ store });
    try {
      const { sessionId } = await client.startSession({ agent: "findings", message: "a message with a long answer" });
      await until("the model call starts", () => entered);
      const cancel = await client.cancelTurn(sessionId, { requestId: "c1" });
      release = true;
      const snapshot = await client.waitFor(sessionId, (s) => s.turn?.phase === "cancelled", { timeoutMs: 5000 });
      expect(snapshot.turn?.turnId).toBe(cancel.turnId);
      await worker.stop();
      const events: SessionEvent[] = await client.readEvents(sessionId);
      const receipt = events.findIndex((e) => e.type === "turn_cancelled");
      expect(answeredDuringInboxRead, "the model answered while the engine read its inbox").toBe(true);
      expect(receipt).toBeGreaterThan(0);
      const late = events.slice(receipt + 1).filter((e) => "turnId" in e.data && e.data.turnId === cancel.turnId);
      expect(late.map((e) => e.type)).toEqual([]);
    } finally {
      await worker.stop();
    }
  });

  it("issue 2: refuses a late decision of a cancelled turn as such, also once a later turn started", async () => {
    const store = new MemoryStore();
    const { definition, client } = approvalAgent(store);
    const worker = new Worker({ store, sessions: [definition] }).start();
    try {
      const { sessionId } = await client.startSession({ agent: "findings", message: 'call pay {"key":"x"}' });
      const waiting = await client.waitFor(sessionId, (s) => s.status === "awaiting_approval", { timeoutMs: 5000 });
      const interruptId = waiting.pendingInterrupts[0]!.interruptId;
      await client.sendMessage(sessionId, "the next message"); // queued: it starts turn-2 at the cancellation
      await client.cancelTurn(sessionId, { requestId: "c1" });
      await client.waitFor(sessionId, (s) => s.turnCount === 2 && s.status === "idle", { timeoutMs: 5000 });
      const error = await client.approve(sessionId, interruptId).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error, "the late approval is refused").not.toBeNull();
      expect(SessionStateError.isInstance(error), `refused with ${(error as Error).name}`).toBe(true);
      expect(InterruptNotFoundError.isInstance(error)).toBe(false);
    } finally {
      await worker.stop();
    }
  });

  it("issue 3: refuses a second decision as a duplicate when the first one is queued before the cancellation", async () => {
    const store = new MemoryStore();
    const { definition, client } = approvalAgent(store);
    let worker = new Worker({ store, sessions: [definition] }).start();
    try {
      const { sessionId } = await client.startSession({ agent: "findings", message: 'call pay {"key":"x"}' });
      const waiting = await client.waitFor(sessionId, (s) => s.status === "awaiting_approval", { timeoutMs: 5000 });
      const interruptId = waiting.pendingInterrupts[0]!.interruptId;
      // No worker for a moment: the decision and then the cancellation wait in the inbox, in that order.
      await worker.stop();
      await client.approve(sessionId, interruptId);
      await client.cancelTurn(sessionId, { requestId: "c1" });
      const second = await client.approve(sessionId, interruptId).then(
        () => null,
        (e: unknown) => e,
      );
      worker = new Worker({ store, sessions: [definition] }).start();
      await client.waitFor(sessionId, (s) => s.turn?.phase === "cancelled", { timeoutMs: 5000 });
      // The first decision was applied before the cancellation (the call ran, or was cancelled before it started).
      const events = await client.readEvents(sessionId);
      expect(events.some((e) => e.type === "turn_cancelled")).toBe(true);
      expect(DuplicateResolutionError.isInstance(second), `refused with ${(second as Error | null)?.name}`).toBe(true);
    } finally {
      await worker.stop();
    }
  });
});
