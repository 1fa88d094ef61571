/** What the demo says a resumed session waits for: an approval, never an attention interrupt (it waits for nobody). */
import type { Interrupt, SessionSnapshot } from "@durable-agents/core";
import { describe, expect, it } from "vitest";
import { describeProgress, type DemoSessionProgress } from "../src/run-terminal-demo.js";

const interrupt = (kind: Interrupt["kind"], toolName: string): Interrupt => ({
  interruptId: kind === "attention" ? "turn-1-attention-c1" : "turn-2-1-1",
  kind,
  turnId: kind === "attention" ? "turn-1" : "turn-2",
  toolCallId: "c1",
  toolName,
  arguments: '{"order_id":"1002"}',
  reason: kind === "attention" ? "the worker stopped" : null,
  idempotencyKey: null,
  turnCancelled: false,
});

function progress(status: SessionSnapshot["status"], pending: Interrupt[]): DemoSessionProgress {
  const snapshot = { status, pendingInterrupts: pending, unappliedDecisions: 0 } as unknown as SessionSnapshot;
  return { sessionId: "s", snapshot, events: [], turns: [{ status: "completed", answer: "a" }], started: ["a"] };
}

describe("describeProgress", () => {
  it("names the pending approval, and passes over an attention interrupt", () => {
    expect(describeProgress(progress("idle", [interrupt("attention", "cancel_order")]), 2)).toBe(
      "continuing with turn 2 of 2",
    );
    expect(
      describeProgress(
        progress("awaiting_approval", [interrupt("attention", "cancel_order"), interrupt("approval", "cancel_order")]),
        2,
      ),
    ).toBe('waiting for your approval of cancel_order {"order_id":"1002"}');
  });
});
