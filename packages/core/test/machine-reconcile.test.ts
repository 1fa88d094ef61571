/** The machine's rules for checks of calls in doubt (`ReconcileCall`) that the session suite cannot reach by timing alone. */
import { describe, expect, it } from "vitest";
import type { HistoryItem, SessionHead } from "../src/index.js";
import { apply, dueSteps, isRunnable, newSessionHead, type MachineConfig, type MachineInput } from "../src/engine.js";

const note = (text: string): HistoryItem => ({ item: { note: text }, display: { role: "note", text } });
const user = (text: string): HistoryItem => ({ item: { user: text }, display: { role: "user", text } });
const usage = { modelCalls: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const reconcile = () => ({ status: "unknown" as const });
const config: MachineConfig = {
  maxModelSteps: 5,
  cancelGraceMs: 1_000,
  failureNote: note,
  modelRetry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 100, factor: 2 },
  toolBackoff: { initialDelayMs: 50, maxDelayMs: 1_000, factor: 2 },
  tools: [{ name: "refund", approval: "never" }],
  policies: { refund: { effect: "non_idempotent_write", needsApproval: false, reconcile } },
};

function step(head: SessionHead, input: MachineInput, now = 1_000) {
  const t = apply(head, input, { config, now });
  expect(t.ignored, input.type).toBeNull();
  return t;
}

/** A turn whose refund call is running (attempt 1), at time 1000. */
function refundRunning(): SessionHead {
  let head = newSessionHead("s", "agent", "2026-12-01T00:00:00.000Z");
  head = step(head, {
    type: "inbox",
    item: { seq: 1, kind: "message", text: "refund", messageId: null },
    userItem: user("refund"),
  }).head;
  const t = step(head, {
    type: "model_completed",
    turnId: "turn-1",
    modelStep: 1,
    attempt: 1,
    result: {
      kind: "tool_calls",
      calls: [{ toolCallId: "c1", name: "refund", arguments: '{"order":"7"}', needsApproval: false }],
      runState: "state",
      usage,
    },
  });
  expect(t.due.steps).toEqual([{ kind: "CallSingleAttemptTool", turnId: "turn-1", toolCallId: "c1", attempt: 1 }]);
  return t.head;
}

const callOf = (head: SessionHead) => head.turn!.calls[0]!;

describe("checks of calls in doubt", () => {
  it("a crash during a check runs it again; a crash during its last attempt leaves the call unknown, with attention", () => {
    let head = refundRunning();
    let t = step(head, { type: "recover", fence: 2 });
    expect(callOf(t.head).status).toBe("reconciling");
    expect(callOf(t.head).unknownReason).toMatch(/stopped before recording its result/);
    expect(t.due.steps).toEqual([{ kind: "ReconcileCall", turnId: "turn-1", toolCallId: "c1", attempt: 1 }]);
    head = t.head;
    for (const attempt of [2, 3]) {
      t = step(head, { type: "recover", fence: attempt + 1 });
      expect(t.due.steps).toEqual([{ kind: "ReconcileCall", turnId: "turn-1", toolCallId: "c1", attempt }]);
      head = t.head;
    }
    // A late answer of an earlier attempt changes nothing.
    const late = apply(
      head,
      {
        type: "reconcile_finished",
        turnId: "turn-1",
        toolCallId: "c1",
        attempt: 1,
        result: { status: "done", output: "x" },
      },
      { config, now: 1_000 },
    );
    expect(late.ignored).toMatch(/runs attempt 3, not 1/);
    t = step(head, { type: "recover", fence: 9 });
    const call = callOf(t.head);
    expect(call.status).toBe("outcome_unknown");
    expect(call.attempts).toBe(1);
    expect(call.message).toMatch(/the worker stopped during the last attempt of its check/);
    expect(t.head.pendingInterrupts).toMatchObject([
      { kind: "attention", interruptId: "turn-1-attention-c1", toolCallId: "c1", idempotencyKey: "s/turn-1/c1" },
    ]);
    expect(t.events.map((e) => e.type)).toContain("attention_required");
    // The turn goes on: its next RunModel started, and the attention blocks nothing.
    expect(t.due.steps).toEqual([{ kind: "RunModel", turnId: "turn-1", modelStep: 2, attempt: 1 }]);
  });

  it("a failed check is retried after the tool backoff", () => {
    let head = step(refundRunning(), { type: "recover", fence: 2 }).head;
    const t = step(head, {
      type: "reconcile_attempt_failed",
      turnId: "turn-1",
      toolCallId: "c1",
      attempt: 1,
      error: "ledger down",
    });
    expect(callOf(t.head).status).toBe("reconcile_pending");
    expect(t.due).toEqual({ steps: [], nextAt: 1_050 });
    expect(isRunnable(t.head)).toBe(true);
    expect(dueSteps(t.head)).toEqual([
      { kind: "ReconcileCall", turnId: "turn-1", toolCallId: "c1", attempt: 2, notBefore: 1_050 },
    ]);
    head = t.head;
    const later = step(head, { type: "tick" }, 1_050);
    expect(later.due.steps).toEqual([{ kind: "ReconcileCall", turnId: "turn-1", toolCallId: "c1", attempt: 2 }]);
  });

  it("a cancelled turn's call past its grace period is checked; a check found not done is cancelled", () => {
    let head = refundRunning();
    head = step(head, {
      type: "inbox",
      item: { seq: 2, kind: "cancel", turnId: "turn-1", reason: null, requestId: null },
    }).head;
    expect(head.turn?.phase).toBe("cancelling");
    // The grace period ends: the call is in doubt, and checked while the turn is being cancelled.
    let t = step(head, { type: "tick" }, 2_000);
    expect(t.head.turn?.phase).toBe("cancelling");
    expect(t.due.steps).toEqual([{ kind: "ReconcileCall", turnId: "turn-1", toolCallId: "c1", attempt: 1 }]);
    expect(t.due.nextAt).toBe(3_000);
    t = step(
      t.head,
      {
        type: "reconcile_finished",
        turnId: "turn-1",
        toolCallId: "c1",
        attempt: 1,
        result: { status: "not_done" },
      },
      2_100,
    );
    expect(t.head.turn?.phase).toBe("cancelled");
    expect(callOf(t.head)).toMatchObject({ status: "cancelled", reconciled: { by: "tool", found: "not_done" } });
    const receipt = t.events.find((e) => e.type === "turn_cancelled");
    expect(receipt?.type === "turn_cancelled" && receipt.data.calls[0]?.status).toBe("cancelled");
    expect(t.head.pendingInterrupts).toEqual([]);
  });

  it("a check that outlives the second grace period of a cancellation leaves the call unknown; its late answer changes nothing", () => {
    let head = refundRunning();
    head = step(head, {
      type: "inbox",
      item: { seq: 2, kind: "cancel", turnId: "turn-1", reason: null, requestId: null },
    }).head;
    head = step(head, { type: "tick" }, 2_000).head;
    const t = step(head, { type: "tick" }, 3_000);
    expect(t.head.turn?.phase).toBe("cancelled");
    expect(callOf(t.head).status).toBe("outcome_unknown");
    expect(callOf(t.head).message).toMatch(/its check had not answered by the end of the cancellation/);
    expect(t.head.pendingInterrupts).toMatchObject([{ kind: "attention", turnCancelled: true }]);
    const late = apply(
      t.head,
      {
        type: "reconcile_finished",
        turnId: "turn-1",
        toolCallId: "c1",
        attempt: 1,
        result: { status: "done", output: "x" },
      },
      { config, now: 3_100 },
    );
    expect(late.ignored).not.toBeNull();
    // Resolved not done, the call of a cancelled turn is not run again: the follow-up turn only tells the model.
    const resolved = step(
      t.head,
      {
        type: "inbox",
        item: { seq: 3, kind: "attention", interruptId: "turn-1-attention-c1", outcome: "not_done", output: null },
      },
      3_200,
    );
    expect(resolved.head.turn?.turnId).toBe("turn-2");
    expect(resolved.head.turn?.followUp).toMatchObject({ rerun: false, outcome: "not_done" });
    expect(resolved.head.turn?.calls).toEqual([]);
    expect(resolved.due.steps).toEqual([{ kind: "RunModel", turnId: "turn-2", modelStep: 1, attempt: 1 }]);
  });
});
