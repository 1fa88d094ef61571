import { describe, expect, it } from "vitest";
import {
  apply,
  dueSteps,
  isRunnable,
  newSessionHead,
  outcomesForNextModelStep,
  type HistoryItem,
  type MachineConfig,
  type MachineInput,
  type SessionHead,
} from "../src/index.js";

const note = (text: string): HistoryItem => ({ item: { note: text }, display: { role: "note", text } });
const config: MachineConfig = { maxModelSteps: 5, failureNote: note };
const user = (text: string): HistoryItem => ({ item: { user: text }, display: { role: "user", text } });
const usage = { modelCalls: 1, inputTokens: 10, outputTokens: 2, totalTokens: 12 };

function run(head: SessionHead, ...inputs: MachineInput[]) {
  const events: string[] = [];
  const history: HistoryItem[] = [];
  for (const input of inputs) {
    const t = apply(head, input, config);
    head = t.head;
    events.push(...t.events.map((e) => e.type));
    history.push(...t.appendHistory);
  }
  return { head, events, history };
}

/** Inputs for the model step that is due, whatever it is, for brevity. */
let modelStep = { turnId: "turn-1", modelStep: 1 };
const message = (seq: number, text: string): MachineInput => ({
  type: "inbox",
  item: { seq, kind: "message", text, messageId: null },
  userItem: user(text),
});

const toolCalls = (...calls: [string, "read" | "non_idempotent_write", boolean][]): MachineInput => ({
  type: "model_completed",
  ...modelStep,
  result: {
    kind: "tool_calls",
    calls: calls.map(([id, name]) => ({ toolCallId: id, name, arguments: "{}", needsApproval: false })),
    runState: "state",
    usage,
  },
  calls: calls.map(([id, effect, needsApproval]) => ({ toolCallId: id, name: `tool_${id}`, arguments: "{}", effect, needsApproval })),
});

describe("the session state machine", () => {
  const fresh = () => newSessionHead("s1", "agent", "2026-11-29T00:00:00.000Z");

  it("starts a turn from a message and asks for RunModel", () => {
    const { head, events, history } = run(fresh(), message(1, "hi"));
    expect(head.status).toBe("running");
    expect(head.turn?.turnId).toBe("turn-1");
    expect(head.inboxCursor).toBe(1);
    expect(history).toEqual([user("hi")]);
    expect(events).toEqual(["turn_started", "history_appended", "step_started"]);
    expect(dueSteps(head)).toEqual([{ kind: "RunModel", turnId: "turn-1", modelStep: 1, notBefore: null }]);
    expect(isRunnable(head)).toBe(true);
  });

  it("never changes the head it is given: every transition works on its own copy", () => {
    // A turn with a call waiting for approval, another running, a queued message and usage: every
    // nested part of a head that a transition writes to.
    modelStep = { turnId: "turn-1", modelStep: 1 };
    let head = run(fresh(), message(1, "hi"), toolCalls(["a", "read", false], ["b", "non_idempotent_write", true])).head;
    head = run(head, { type: "calls_started", toolCallIds: ["a"] }, message(2, "later")).head;
    const inputs: MachineInput[] = [
      { type: "call_attempt_failed", toolCallId: "a", error: "down", now: 1_000, retryDelayMs: 10 },
      { type: "call_finished", toolCallId: "a", outcome: { status: "succeeded", output: "ok" } },
      { type: "inbox", item: { seq: 3, kind: "resolution", interruptId: head.pendingInterrupts[0]!.interruptId, approved: false, message: "no" } },
      { type: "recover", fence: 9 },
      { type: "turn_failed", error: "broken" },
    ];
    for (const input of inputs) {
      const before = JSON.stringify(head);
      const t = apply(head, input, config);
      expect(JSON.stringify(head), input.type).toBe(before);
      expect(t.head, input.type).not.toBe(head);
      expect(t.head.turn, input.type).not.toBe(head.turn);
      expect(t.head.queue, input.type).not.toBe(head.queue);
    }
  });

  it("ignores an inbox entry it already applied", () => {
    const once = run(fresh(), message(1, "hi")).head;
    const t = apply(once, message(1, "hi"), config);
    expect(t.head).toEqual(once);
    expect(t.events).toEqual([]);
  });

  it("waits for approval, then runs the approved call; ResumeTurn hands every outcome back", () => {
    let { head } = run(fresh(), message(1, "go"), toolCalls(["a", "read", false], ["b", "non_idempotent_write", true]));
    expect(head.pendingInterrupts.map((i) => i.interruptId)).toEqual(["turn-1-1-2"]);
    expect(dueSteps(head).map((s) => s.kind)).toEqual(["CallTool"]);
    head = run(head, { type: "calls_started", toolCallIds: ["a"] }, {
      type: "call_finished",
      toolCallId: "a",
      outcome: { status: "succeeded", output: "A" },
    }).head;
    expect(head.status).toBe("awaiting_approval");
    expect(isRunnable(head)).toBe(false);
    head = run(head, { type: "inbox", item: { seq: 2, kind: "resolution", interruptId: "turn-1-1-2", approved: false, message: "no" } }).head;
    expect(head.turn?.phase).toBe("model");
    expect(outcomesForNextModelStep(head)).toEqual([
      { toolCallId: "a", name: "tool_a", status: "succeeded", text: "A", output: "A" },
      { toolCallId: "b", name: "tool_b", status: "rejected", text: "no", output: null },
    ]);
    expect(head.turn?.steps.map((s) => `${s.step}:${s.status}`)).toEqual([
      "RunModel:completed",
      "AwaitToolApproval:completed",
      "CallTool:completed",
      "ResumeTurn:completed",
      "RunModel:running",
    ]);
  });

  it("recovers a dead worker's calls by the table: single-attempt unknown, read rerun", () => {
    let { head } = run(fresh(), message(1, "go"), toolCalls(["r", "read", false], ["w", "non_idempotent_write", false]));
    head = run(head, { type: "calls_started", toolCallIds: ["r", "w"] }).head;
    const { head: recovered, events } = run(head, { type: "recover", fence: 2 });
    const calls = recovered.turn!.calls;
    expect(calls.map((c) => [c.toolCallId, c.status, c.attempts])).toEqual([
      ["r", "pending", 1],
      ["w", "outcome_unknown", 1],
    ]);
    expect(events).toContain("session_recovered");
    expect(dueSteps(recovered)).toEqual([{ kind: "CallTool", turnId: "turn-1", toolCallId: "r", notBefore: null }]);
  });

  it("retries a read with backoff and fails it after three attempts", () => {
    let { head } = run(fresh(), message(1, "go"), toolCalls(["r", "read", false]));
    for (let attempt = 1; attempt <= 3; attempt++) {
      head = run(head, { type: "calls_started", toolCallIds: ["r"] }, {
        type: "call_attempt_failed",
        toolCallId: "r",
        error: `down ${attempt}`,
        now: 1_000,
        retryDelayMs: 50,
      }).head;
      if (attempt < 3) expect(dueSteps(head)).toEqual([{ kind: "CallTool", turnId: "turn-1", toolCallId: "r", notBefore: 1_050 }]);
    }
    expect(head.turn?.calls[0]?.status).toBe("failed");
    expect(head.turn?.calls[0]?.message).toBe("all 3 attempts failed; last error: down 3");
    expect(head.turn?.phase).toBe("model");
  });

  it("fails a turn after the model's last attempt, leaves a note, and starts the queued turn", () => {
    let { head } = run(fresh(), message(1, "first"), message(2, "second"));
    expect(head.queue.map((q) => q.text)).toEqual(["second"]);
    const failed = run(
      head,
      ...[1, 2].map((n): MachineInput => ({ type: "model_attempt_failed", turnId: "turn-1", modelStep: 1, error: `boom ${n}`, now: 0, maxAttempts: 2, retryDelayMs: 10 })),
    );
    head = failed.head;
    expect(failed.events).toContain("turn_failed");
    expect(failed.history.map((h) => h.display.role)).toEqual(["note", "user"]);
    expect(failed.history[0]?.display.text).toMatch(/^\[previous turn failed\] The turn for the message "first" failed: the model step failed 2 time\(s\); last error: boom 2\nNo tool call ran in it\.$/);
    expect(head.turn?.turnId).toBe("turn-2");
    expect(head.turnCount).toBe(2);
  });

  it("fails a turn that exceeds its model steps", () => {
    let { head } = run(fresh(), message(1, "loop"));
    for (let i = 1; i <= 5; i++) {
      modelStep = { turnId: "turn-1", modelStep: i };
      head = run(head, toolCalls([`c${i}`, "read", false])).head;
      if (head.turn?.phase !== "tools") break;
      head = run(head, { type: "calls_started", toolCallIds: [`c${i}`] }, { type: "call_finished", toolCallId: `c${i}`, outcome: { status: "succeeded", output: "x" } }).head;
    }
    expect(head.turn?.phase).toBe("failed");
    expect(head.turn?.error).toMatch(/limit of 5 model steps/);
    modelStep = { turnId: "turn-1", modelStep: 1 };
  });

  it("ignores a step result that belongs to another step: late, repeated, or of an earlier turn", () => {
    let { head } = run(fresh(), message(1, "first"), toolCalls(["a", "read", false]));
    head = run(head, { type: "calls_started", toolCallIds: ["a"] }).head;
    // A second result for the model step that already completed changes nothing.
    expect(apply(head, toolCalls(["b", "read", false]), config)).toEqual({ head, events: [], appendHistory: [] });
    head = run(head, { type: "call_finished", toolCallId: "a", outcome: { status: "succeeded", output: "A" } }).head;
    const repeated = apply(head, { type: "call_finished", toolCallId: "a", outcome: { status: "failed", message: "late" } }, config);
    expect(repeated.events).toEqual([]);
    expect(repeated.head).toEqual(head);
    const late = apply(head, { type: "call_attempt_failed", toolCallId: "zzz", error: "x", now: 0, retryDelayMs: 1 }, config);
    expect(late.events).toEqual([]);
    // A model result for turn 1's next step, after turn 1 ended and turn 2 began, is not applied to turn 2.
    const final: MachineInput = {
      type: "model_completed",
      turnId: "turn-1",
      modelStep: 2,
      result: { kind: "final", items: [], text: "done", usage },
    };
    head = run(head, final, message(2, "second")).head;
    expect(head.turn?.turnId).toBe("turn-2");
    const stale = apply(head, final, config);
    expect(stale.events).toEqual([]);
    expect(stale.head.turn?.phase).toBe("model");
  });
});

describe("calls that cannot run", () => {
  it("records a call to an unknown tool as failed without asking for approval, and still waits for the others", () => {
    const head0 = newSessionHead("s1", "agent", "2026-11-29T00:00:00.000Z");
    const { head } = run(head0, message(1, "go"), {
      type: "model_completed",
      turnId: "turn-1",
      modelStep: 1,
      result: { kind: "tool_calls", calls: [], runState: "state", usage },
      calls: [
        { toolCallId: "x", name: "no_such_tool", arguments: "{}", effect: "unclassified", needsApproval: true, invalid: "the agent has no tool named \"no_such_tool\"" },
        { toolCallId: "y", name: "tool_y", arguments: "{}", effect: "read", needsApproval: false },
      ],
    });
    expect(head.pendingInterrupts).toEqual([]);
    expect(head.turn?.calls.map((c) => [c.toolCallId, c.status])).toEqual([["x", "failed"], ["y", "pending"]]);
    expect(head.turn?.phase).toBe("tools");
  });
});
