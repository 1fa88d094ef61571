import { describe, expect, it } from "vitest";
import type { HistoryItem, SessionHead, ToolEffect } from "../src/index.js";
import {
  apply,
  applyAll,
  dueSteps,
  isRunnable,
  newSessionHead,
  outcomesForNextModelStep,
  type MachineConfig,
  type MachineInput,
  type Transition,
} from "../src/engine.js";

const note = (text: string): HistoryItem => ({ item: { note: text }, display: { role: "note", text } });
const user = (text: string): HistoryItem => ({ item: { user: text }, display: { role: "user", text } });
const usage = { modelCalls: 1, inputTokens: 10, outputTokens: 2, totalTokens: 12 };

const toolEffects: Record<string, ToolEffect> = {
  a: "read",
  b: "non_idempotent_write",
  r: "read",
  w: "non_idempotent_write",
  y: "read",
};
for (let i = 1; i <= 5; i++) toolEffects[`c${i}`] = "read";
const config: MachineConfig = {
  maxModelSteps: 5,
  cancelGraceMs: 1_000,
  failureNote: note,
  modelRetry: { maxAttempts: 2, initialDelayMs: 10, maxDelayMs: 1_000, factor: 2 },
  toolBackoff: { initialDelayMs: 50, maxDelayMs: 1_000, factor: 2 },
  tools: Object.keys(toolEffects).map((id) => ({ name: `tool_${id}`, approval: "never" as const })),
  // `w` is a single-attempt write that needs no approval; `b` keeps its effect's default (approval).
  policies: Object.fromEntries(
    Object.entries(toolEffects).map(([id, effect]) => [
      `tool_${id}`,
      id === "w" ? { effect, needsApproval: false } : { effect },
    ]),
  ),
};
const NOW = 1_000;
const at = (now: number, startSteps = true) => ({ config, now, startSteps });

function run(head: SessionHead, ...inputs: MachineInput[]) {
  return runAt(NOW, head, ...inputs);
}

function runAt(now: number, head: SessionHead, ...inputs: MachineInput[]) {
  const events: string[] = [];
  const history: HistoryItem[] = [];
  let last: Transition | null = null;
  for (const input of inputs) {
    last = apply(head, input, at(now));
    expect(last.ignored, `${input.type} fits the state`).toBeNull();
    head = last.head;
    events.push(...last.events.map((e) => e.type));
    history.push(...last.appendHistory);
  }
  return { head, events, history, due: last!.due };
}

const message = (seq: number, text: string): MachineInput => ({
  type: "inbox",
  item: { seq, kind: "message", text, messageId: null },
  userItem: user(text),
});

/** The model's answer for `modelStep` of turn 1 (attempt 1), asking for tools `tool_<id>`. */
const toolCalls = (modelStep: number, ...ids: string[]): MachineInput => ({
  type: "model_completed",
  turnId: "turn-1",
  modelStep,
  attempt: 1,
  result: {
    kind: "tool_calls",
    calls: ids.map((id) => ({ toolCallId: id, name: `tool_${id}`, arguments: "{}", needsApproval: false })),
    runState: "state",
    usage,
  },
});
const finished = (toolCallId: string, output: string, attempt = 1): MachineInput => ({
  type: "call_finished",
  turnId: "turn-1",
  toolCallId,
  attempt,
  outcome: { status: "succeeded", output },
});
const attemptFailed = (toolCallId: string, error: string, attempt: number): MachineInput => ({
  type: "call_attempt_failed",
  turnId: "turn-1",
  toolCallId,
  attempt,
  error,
});

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

const fresh = () => newSessionHead("s1", "agent", "2026-11-29T00:00:00.000Z");

describe("the session state machine", () => {
  it("applyAll of a drive's recovery and its inbox entries is the same as applying them one by one", () => {
    const ended = run(fresh(), message(1, "hi"), {
      type: "model_completed",
      turnId: "turn-1",
      modelStep: 1,
      attempt: 1,
      result: { kind: "final", items: [], text: "x", usage },
    }).head;
    expect(ended.turn?.phase).toBe("completed");
    // idle heads (the recovery changes nothing), a stale status (it derives the status again), a running turn
    const heads = [fresh(), ended, { ...ended, status: "running" as const }, run(fresh(), message(1, "hi")).head];
    for (const head of heads) {
      const inputs: MachineInput[] = [{ type: "recover", fence: 4 }, message(head.inboxCursor + 1, "next")];
      const first = apply(head, inputs[0]!, at(NOW, false));
      const second = apply(first.head, inputs[1]!, at(NOW));
      const all = applyAll(head, inputs, at(NOW));
      expect(all.head).toEqual(second.head);
      expect(all.events).toEqual([...first.events, ...second.events]);
      expect(all.appendHistory).toEqual([...first.appendHistory, ...second.appendHistory]);
      expect(all.due).toEqual(second.due);
      expect(all.ignored).toBeNull();
    }
  });

  it("starts a turn from a message and starts its RunModel step", () => {
    const { head, events, history, due } = run(fresh(), message(1, "hi"));
    expect(head.status).toBe("running");
    expect(head.turn?.turnId).toBe("turn-1");
    expect(head.inboxCursor).toBe(1);
    expect(history).toEqual([user("hi")]);
    expect(events).toEqual(["turn_started", "history_appended", "step_started"]);
    expect(due).toEqual({ steps: [{ kind: "RunModel", turnId: "turn-1", modelStep: 1, attempt: 1 }], nextAt: null });
    expect(head.turn?.modelRunning).toBe(true);
    // Started: not due again until its result or a recovery.
    expect(dueSteps(head)).toEqual([]);
    expect(isRunnable(head)).toBe(true);
    const again = apply(head, { type: "tick" }, at(NOW + 60_000));
    expect(again.due.steps).toEqual([]);
    expect(again.changed).toBe(false);
  });

  it("starts nothing while an engine stops; what is ready stays due for the next drive", () => {
    const t = apply(fresh(), message(1, "hi"), at(NOW, false));
    expect(t.ignored).toBeNull();
    expect(t.changed).toBe(true);
    expect(t.due).toEqual({ steps: [], nextAt: NOW });
    expect(t.head.turn?.modelRunning).toBe(false);
    expect(dueSteps(t.head)).toEqual([
      { kind: "RunModel", turnId: "turn-1", modelStep: 1, attempt: 1, notBefore: null },
    ]);
    // A result for the step nobody started is not applied.
    const early = apply(
      t.head,
      {
        type: "model_completed",
        turnId: "turn-1",
        modelStep: 1,
        attempt: 1,
        result: { kind: "final", items: [], text: "x", usage },
      },
      at(NOW),
    );
    expect(early.ignored).toMatch(/not started/);
    const next = apply(t.head, { type: "tick" }, at(NOW + 1));
    expect(next.due.steps).toEqual([{ kind: "RunModel", turnId: "turn-1", modelStep: 1, attempt: 1 }]);
  });

  it("never changes the head it is given: every transition works on its own copy", () => {
    // A turn with a call waiting for approval, another running, a queued message and usage: every
    // nested part of a head that a transition writes to. The head is frozen: a write would throw.
    let head = run(fresh(), message(1, "hi"), toolCalls(1, "a", "b")).head;
    head = deepFreeze(run(head, message(2, "later")).head);
    const inputs: MachineInput[] = [
      attemptFailed("a", "down", 1),
      finished("a", "ok"),
      {
        type: "inbox",
        item: {
          seq: 3,
          kind: "resolution",
          interruptId: head.pendingInterrupts[0]!.interruptId,
          approved: false,
          message: "no",
        },
      },
      {
        type: "inbox",
        item: {
          seq: 3,
          kind: "resolution",
          interruptId: head.pendingInterrupts[0]!.interruptId,
          approved: true,
          message: null,
        },
      },
      { type: "recover", fence: 9 },
      { type: "tick" },
    ];
    for (const input of inputs) {
      const before = JSON.stringify(head);
      const t = apply(head, input, at(NOW));
      expect(t.ignored, input.type).toBeNull();
      expect(t.changed, input.type).toBe(input.type !== "tick");
      expect(JSON.stringify(head), input.type).toBe(before);
      if (input.type === "tick") continue;
      expect(t.head, input.type).not.toBe(head);
      expect(t.head.turn, input.type).not.toBe(head.turn);
      expect(t.head.queue, input.type).not.toBe(head.queue);
    }
  });

  it("ignores an inbox entry it already applied", () => {
    const once = run(fresh(), message(1, "hi")).head;
    const t = apply(once, message(1, "hi"), at(NOW));
    expect(t.head).toEqual(once);
    expect(t.events).toEqual([]);
    expect(t.appendHistory).toEqual([]);
    expect(t.changed).toBe(false);
    expect(t.ignored).toMatch(/inbox entry 1 is at or before the cursor 1/);
    expect(t.due.steps).toEqual([]);
  });

  it("waits for approval, then runs the approved call; ResumeTurn hands every outcome back", () => {
    let { head, due } = run(fresh(), message(1, "go"), toolCalls(1, "a", "b"));
    expect(head.pendingInterrupts.map((i) => i.interruptId)).toEqual(["turn-1-1-2"]);
    // The read starts in the transition that planned it; the write waits for its approval.
    expect(due.steps).toEqual([{ kind: "CallTool", turnId: "turn-1", toolCallId: "a", attempt: 1 }]);
    expect(head.turn?.calls.map((c) => [c.toolCallId, c.status, c.attempts])).toEqual([
      ["a", "running", 1],
      ["b", "awaiting_approval", 0],
    ]);
    head = run(head, finished("a", "A")).head;
    expect(head.status).toBe("awaiting_approval");
    expect(isRunnable(head)).toBe(false);
    const rejected = run(head, {
      type: "inbox",
      item: { seq: 2, kind: "resolution", interruptId: "turn-1-1-2", approved: false, message: "no" },
    });
    head = rejected.head;
    expect(head.turn?.phase).toBe("model");
    expect(rejected.due.steps).toEqual([{ kind: "RunModel", turnId: "turn-1", modelStep: 2, attempt: 1 }]);
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

  it("starts an approved single-attempt call once, in the transition that applies the approval", () => {
    let { head } = run(fresh(), message(1, "go"), toolCalls(1, "b"));
    const approved = run(head, {
      type: "inbox",
      item: { seq: 2, kind: "resolution", interruptId: "turn-1-1-1", approved: true, message: null },
    });
    head = approved.head;
    expect(approved.due.steps).toEqual([
      { kind: "CallSingleAttemptTool", turnId: "turn-1", toolCallId: "b", attempt: 1 },
    ]);
    expect(approved.events).toEqual(["interrupt_resolved", "step_completed", "step_started"]);
    // Nothing starts it again: not a tick, not a repeated decision.
    expect(apply(head, { type: "tick" }, at(NOW + 60_000)).due.steps).toEqual([]);
    const repeated = apply(
      head,
      { type: "inbox", item: { seq: 2, kind: "resolution", interruptId: "turn-1-1-1", approved: true, message: null } },
      at(NOW),
    );
    expect(repeated.ignored).not.toBeNull();
  });

  it("recovers a dead worker's calls by the table: single-attempt unknown, read started again", () => {
    const started = run(fresh(), message(1, "go"), toolCalls(1, "r", "w"));
    expect(started.due.steps.map((s) => s.kind === "RunModel" || [s.toolCallId, s.attempt])).toEqual([
      ["r", 1],
      ["w", 1],
    ]);
    const held = apply(started.head, { type: "recover", fence: 2 }, at(NOW, false));
    expect(held.head.turn!.calls.map((c) => [c.toolCallId, c.status, c.attempts])).toEqual([
      ["r", "pending", 1],
      ["w", "outcome_unknown", 1],
    ]);
    expect(held.events.map((e) => e.type)).toContain("session_recovered");
    expect(dueSteps(held.head)).toEqual([
      { kind: "CallTool", turnId: "turn-1", toolCallId: "r", attempt: 2, notBefore: null },
    ]);
    const { head: recovered, events, due } = run(started.head, { type: "recover", fence: 2 });
    expect(recovered.turn!.calls.map((c) => [c.toolCallId, c.status, c.attempts])).toEqual([
      ["r", "running", 2],
      ["w", "outcome_unknown", 1],
    ]);
    expect(events).toContain("session_recovered");
    expect(due.steps).toEqual([{ kind: "CallTool", turnId: "turn-1", toolCallId: "r", attempt: 2 }]);
    // The dead worker's late result for attempt 1 is not applied to attempt 2.
    expect(apply(recovered, finished("r", "late"), at(NOW)).ignored).toMatch(/runs attempt 2, not 1/);
  });

  it("recovers a RunModel step in flight: started again, without counting an attempt", () => {
    const { head } = run(fresh(), message(1, "go"));
    const t = apply(head, { type: "recover", fence: 2 }, at(NOW));
    expect(t.ignored).toBeNull();
    expect(t.due.steps).toEqual([{ kind: "RunModel", turnId: "turn-1", modelStep: 1, attempt: 1 }]);
    expect(t.head.turn?.modelAttempts).toBe(0);
    // The event says the call in flight is void, so a reader drops what it streamed.
    expect(t.events).toEqual([{ type: "session_recovered", data: { fence: 2, calls: [], modelStep: 1 } }]);
  });

  it("retries a read after the config's backoff, started by a tick, and fails it after three attempts", () => {
    let { head } = run(fresh(), message(1, "go"), toolCalls(1, "r"));
    let now = NOW;
    const delays = [50, 100];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const failed = runAt(now, head, attemptFailed("r", `down ${attempt}`, attempt));
      head = failed.head;
      if (attempt === 3) break;
      const retryAt = now + delays[attempt - 1]!;
      expect(failed.due).toEqual({ steps: [], nextAt: retryAt });
      expect(dueSteps(head)).toEqual([
        { kind: "CallTool", turnId: "turn-1", toolCallId: "r", attempt: attempt + 1, notBefore: retryAt },
      ]);
      const early = apply(head, { type: "tick" }, at(retryAt - 1));
      expect(early.changed).toBe(false);
      expect(early.due).toEqual({ steps: [], nextAt: retryAt });
      const tick = apply(head, { type: "tick" }, at(retryAt));
      expect(tick.due).toEqual({
        steps: [{ kind: "CallTool", turnId: "turn-1", toolCallId: "r", attempt: attempt + 1 }],
        nextAt: null,
      });
      head = tick.head;
      now = retryAt;
    }
    expect(head.turn?.calls[0]?.status).toBe("failed");
    expect(head.turn?.calls[0]?.attempts).toBe(3);
    expect(head.turn?.calls[0]?.message).toBe("all 3 attempts failed; last error: down 3");
    expect(head.turn?.phase).toBe("model");
  });

  it("fails a turn after the model's last attempt (from the config), leaves a note, and starts the queued turn", () => {
    let { head } = run(fresh(), message(1, "first"), message(2, "second"));
    expect(head.queue.map((q) => q.text)).toEqual(["second"]);
    const first = run(head, {
      type: "model_attempt_failed",
      turnId: "turn-1",
      modelStep: 1,
      attempt: 1,
      error: "boom 1",
    });
    expect(first.due).toEqual({ steps: [], nextAt: NOW + 10 });
    const retry = apply(first.head, { type: "tick" }, at(NOW + 10));
    expect(retry.due.steps).toEqual([{ kind: "RunModel", turnId: "turn-1", modelStep: 1, attempt: 2 }]);
    // The first attempt's result, arriving late, belongs to no started attempt.
    expect(
      apply(
        retry.head,
        { type: "model_attempt_failed", turnId: "turn-1", modelStep: 1, attempt: 1, error: "late" },
        at(NOW),
      ).ignored,
    ).toMatch(/attempt 2, not 1/);
    const failed = run(retry.head, {
      type: "model_attempt_failed",
      turnId: "turn-1",
      modelStep: 1,
      attempt: 2,
      error: "boom 2",
    });
    head = failed.head;
    expect(failed.events).toContain("turn_failed");
    expect(failed.history.map((h) => h.display.role)).toEqual(["note", "user"]);
    expect(failed.history[0]?.display.text).toMatch(
      /^\[previous turn failed\] The turn for the message "first" failed: the model step failed 2 time\(s\); last error: boom 2\nNo tool call ran in it\.$/,
    );
    expect(head.turn?.turnId).toBe("turn-2");
    expect(head.turnCount).toBe(2);
    expect(failed.due.steps).toEqual([{ kind: "RunModel", turnId: "turn-2", modelStep: 1, attempt: 1 }]);
  });

  it("fails a turn at once on a model failure that is not retryable, and starts the queued turn", () => {
    const { head } = run(fresh(), message(1, "first"), message(2, "second"));
    const failed = run(head, {
      type: "model_attempt_failed",
      turnId: "turn-1",
      modelStep: 1,
      attempt: 1,
      error: "the model is gone",
      retryable: false,
    });
    expect(failed.events).toContain("turn_failed");
    expect(failed.history[0]?.display.text).toMatch(
      /failed: the model step failed and cannot be retried: the model is gone\n/,
    );
    expect(failed.head.turn?.turnId).toBe("turn-2");
    expect(failed.head.turnCount).toBe(2);
    expect(failed.due.steps).toEqual([{ kind: "RunModel", turnId: "turn-2", modelStep: 1, attempt: 1 }]);
    // retryable: true (or absent) keeps the config's retries.
    const retried = run(head, {
      type: "model_attempt_failed",
      turnId: "turn-1",
      modelStep: 1,
      attempt: 1,
      error: "boom",
      retryable: true,
    });
    expect(retried.events).not.toContain("turn_failed");
    expect(retried.due).toEqual({ steps: [], nextAt: NOW + 10 });
  });

  it("fails a turn that exceeds its model steps", () => {
    let { head } = run(fresh(), message(1, "loop"));
    for (let i = 1; i <= 5; i++) {
      head = run(head, toolCalls(i, `c${i}`)).head;
      if (head.turn?.phase !== "tools") break;
      head = run(head, finished(`c${i}`, "x")).head;
    }
    expect(head.turn?.phase).toBe("failed");
    expect(head.turn?.modelSteps).toBe(5);
    expect(head.turn?.error).toMatch(/limit of 5 model steps/);
  });

  it("ignores a step result that belongs to another step: late, repeated, or of an earlier turn", () => {
    let { head } = run(fresh(), message(1, "first"), toolCalls(1, "a"));
    // A second result for the model step that already completed changes nothing.
    const second = apply(head, toolCalls(1, "b"), at(NOW));
    expect(second).toEqual({
      head,
      events: [],
      appendHistory: [],
      changed: false,
      ignored: expect.any(String),
      due: { steps: [], nextAt: null },
    });
    expect(second.head).toBe(head);
    head = run(head, finished("a", "A")).head;
    const repeated = apply(
      head,
      {
        type: "call_finished",
        turnId: "turn-1",
        toolCallId: "a",
        attempt: 1,
        outcome: { status: "failed", message: "late" },
      },
      at(NOW),
    );
    expect(repeated.events).toEqual([]);
    expect(repeated.head).toEqual(head);
    expect(repeated.ignored).toMatch(/call a is succeeded, not running/);
    const late = apply(head, attemptFailed("zzz", "x", 1), at(NOW));
    expect(late.events).toEqual([]);
    expect(late.ignored).toMatch(/no call zzz/);
    // A model result for turn 1's next step, after turn 1 ended and turn 2 began, is not applied to turn 2.
    const final: MachineInput = {
      type: "model_completed",
      turnId: "turn-1",
      modelStep: 2,
      attempt: 1,
      result: { kind: "final", items: [], text: "done", usage },
    };
    head = run(head, final, message(2, "second")).head;
    expect(head.turn?.turnId).toBe("turn-2");
    const stale = apply(head, final, at(NOW));
    expect(stale.events).toEqual([]);
    expect(stale.ignored).toMatch(/for turn-1, the running turn is turn-2/);
    expect(stale.head.turn?.phase).toBe("model");
  });

  it("applies a batch as one transition and launches each started step once", () => {
    const batch = applyAll(
      fresh(),
      [message(1, "one"), message(2, "two"), { type: "recover", fence: 3 }, message(2, "two")],
      at(NOW),
    );
    expect(batch.ignored).toMatch(/inbox entry 2/);
    expect(batch.due.steps).toEqual([{ kind: "RunModel", turnId: "turn-1", modelStep: 1, attempt: 1 }]);
    expect(batch.head.queue.map((q) => q.text)).toEqual(["two"]);
    expect(batch.events.map((e) => e.type)).toEqual([
      "turn_started",
      "history_appended",
      "step_started",
      "message_queued",
    ]);
    expect(batch.changed).toBe(true);
  });
});

describe("inputs that do not fit, and results that cannot be applied", () => {
  it("records a call to an unknown tool as failed without asking for approval, and still runs the others", () => {
    const { head, due } = run(fresh(), message(1, "go"), {
      type: "model_completed",
      turnId: "turn-1",
      modelStep: 1,
      attempt: 1,
      result: {
        kind: "tool_calls",
        calls: [
          { toolCallId: "x", name: "no_such_tool", arguments: "{}", needsApproval: true },
          { toolCallId: "y", name: "tool_y", arguments: "{}", needsApproval: false },
        ],
        runState: "state",
        usage,
      },
    });
    expect(head.pendingInterrupts).toEqual([]);
    expect(head.turn?.calls.map((c) => [c.toolCallId, c.status, c.message])).toEqual([
      ["x", "failed", 'the agent has no tool named "no_such_tool"'],
      ["y", "running", null],
    ]);
    expect(due.steps).toEqual([{ kind: "CallTool", turnId: "turn-1", toolCallId: "y", attempt: 1 }]);
    expect(head.turn?.phase).toBe("tools");
  });

  it("counts a malformed model result as a failed attempt", () => {
    const { head } = run(fresh(), message(1, "go"));
    const results: unknown[] = [
      null,
      { kind: "final", items: [null], text: "x", usage },
      { kind: "final", items: [], text: "x" },
      {
        kind: "tool_calls",
        calls: [
          { toolCallId: "a", name: "tool_a", arguments: "{}" },
          { toolCallId: "a", name: "tool_a", arguments: "{}" },
        ],
        runState: "s",
        usage,
      },
      { kind: "tool_calls", calls: [null], runState: "s", usage },
      { kind: "something", usage },
    ];
    for (const result of results) {
      const t = apply(
        head,
        { type: "model_completed", turnId: "turn-1", modelStep: 1, attempt: 1, result } as MachineInput,
        at(NOW),
      );
      expect(t.ignored, JSON.stringify(result)).toBeNull();
      expect(t.head.turn?.modelAttempts, JSON.stringify(result)).toBe(1);
      expect(t.head.turn?.modelSteps).toBe(0);
      expect(t.head.turn?.steps.at(-2)?.detail).toMatch(/malformed|appears twice/);
    }
  });

  it("counts a malformed tool outcome as a failed attempt", () => {
    const { head } = run(fresh(), message(1, "go"), toolCalls(1, "a"));
    const t = apply(
      head,
      {
        type: "call_finished",
        turnId: "turn-1",
        toolCallId: "a",
        attempt: 1,
        outcome: { status: "succeeded" },
      } as unknown as MachineInput,
      at(NOW),
    );
    expect(t.ignored).toBeNull();
    expect(t.head.turn?.calls[0]).toMatchObject({
      status: "pending",
      lastError: "the runner returned a malformed tool result",
      retryAt: NOW + 50,
    });
  });

  it("reports inputs of no known type, and messages without their user item, as ignored", () => {
    const head = run(fresh(), message(1, "go")).head;
    const odd: unknown[] = [
      null,
      { type: "turn_failed", error: "x" },
      { type: "calls_started", toolCallIds: ["a"] },
      { type: "inbox", item: { seq: 2, kind: "message", text: "no item", messageId: null } },
      { type: "inbox", item: { seq: 2, kind: "other" } },
    ];
    for (const input of odd) {
      const t = apply(head, input as MachineInput, at(NOW));
      expect(t.ignored, JSON.stringify(input)).toEqual(expect.any(String));
      expect(t.head).toBe(head);
      expect(t.changed).toBe(false);
      expect(t.events).toEqual([]);
    }
  });
});

const cancel = (seq: number, turnId = "turn-1"): MachineInput => ({
  type: "inbox",
  item: { seq, kind: "cancel", turnId, reason: "stop", requestId: `r${seq}` },
});
const steer = (seq: number, text: string): MachineInput => ({
  type: "inbox",
  item: { seq, kind: "steer", text, messageId: null },
  userItem: user(text),
});
const finalAnswer = (modelStep: number, text: string): MachineInput => ({
  type: "model_completed",
  turnId: "turn-1",
  modelStep,
  attempt: 1,
  result: { kind: "final", items: [{ item: { answer: text }, display: { role: "assistant", text } }], text, usage },
});

describe("turn control in the state machine", () => {
  it("cancel: waiting and pending calls end at once, calls in flight are waited for, then the receipt", () => {
    // tool_a (read) and tool_w (single-attempt, no approval) run; tool_b waits for approval.
    const started = run(fresh(), message(1, "go"), toolCalls(1, "a", "w", "b"));
    expect(started.head.turn?.calls.map((c) => c.status)).toEqual(["running", "running", "awaiting_approval"]);
    const cancelling = runAt(2_000, started.head, cancel(2));
    const turn = cancelling.head.turn!;
    expect(turn.phase).toBe("cancelling");
    expect(turn.calls.map((c) => c.status)).toEqual(["running", "running", "cancelled"]);
    expect(cancelling.head.pendingInterrupts).toEqual([]);
    expect(cancelling.events).toContain("turn_cancelling");
    expect(cancelling.due).toEqual({ steps: [], nextAt: 2_000 + config.cancelGraceMs });
    expect(isRunnable(cancelling.head)).toBe(true);
    // The read stops on its signal (an error): cancelled. The write returns: its real outcome.
    const readStopped = runAt(2_100, cancelling.head, attemptFailed("a", "aborted", 1));
    expect(readStopped.head.turn?.phase).toBe("cancelling");
    const done = runAt(2_200, readStopped.head, finished("w", "written"));
    expect(done.head.turn?.phase).toBe("cancelled");
    expect(done.head.status).toBe("idle");
    expect(done.events.slice(-2)).toEqual(["history_appended", "turn_cancelled"]);
    const receipt = apply(readStopped.head, finished("w", "written"), at(2_200)).events.find(
      (e) => e.type === "turn_cancelled",
    );
    expect(receipt?.type === "turn_cancelled" && receipt.data.calls.map((c) => [c.toolCallId, c.status])).toEqual([
      ["a", "cancelled"],
      ["w", "succeeded"],
      ["b", "cancelled"],
    ]);
    expect(done.history.at(-1)?.display.text).toMatch(/^\[previous turn cancelled\]/);
    // A late result and a late decision change nothing.
    expect(apply(done.head, finished("a", "late"), at(2_300)).ignored).not.toBeNull();
  });

  it("cancel: past the grace period a single-attempt call is outcome_unknown and a read is cancelled", () => {
    const started = run(fresh(), message(1, "go"), toolCalls(1, "a", "w"));
    const cancelling = runAt(2_000, started.head, cancel(2));
    const early = apply(cancelling.head, { type: "tick" }, at(2_000 + config.cancelGraceMs - 1));
    expect(early.changed).toBe(false);
    const late = apply(cancelling.head, { type: "tick" }, at(2_000 + config.cancelGraceMs));
    expect(late.head.turn?.phase).toBe("cancelled");
    expect(late.head.turn?.calls.map((c) => c.status)).toEqual(["cancelled", "outcome_unknown"]);
    // The tool that ignored its signal returns later: its result is ignored.
    expect(apply(late.head, finished("w", "written"), at(5_000)).ignored).not.toBeNull();
  });

  it("cancel: a single-attempt call that states it changed nothing is cancelled; a recovery gives up the others", () => {
    const started = run(fresh(), message(1, "go"), toolCalls(1, "w", "r"));
    const cancelling = runAt(2_000, started.head, cancel(2));
    const stated = runAt(2_010, cancelling.head, {
      type: "call_cancelled",
      turnId: "turn-1",
      toolCallId: "w",
      attempt: 1,
      message: "nothing written",
    });
    expect(stated.head.turn?.calls.find((c) => c.toolCallId === "w")?.status).toBe("cancelled");
    // The worker dies; the next one finds the read started: it is not retried, it is cancelled.
    const recovered = runAt(3_000, stated.head, { type: "recover", fence: 2 });
    expect(recovered.head.turn?.phase).toBe("cancelled");
    expect(recovered.head.turn?.calls.find((c) => c.toolCallId === "r")?.status).toBe("cancelled");
    expect(recovered.due.steps).toEqual([]);
  });

  it("cancel during a model call: the model's late answer is ignored, the next queued message starts", () => {
    const running = run(fresh(), message(1, "first"), message(2, "second"));
    const cancelled = runAt(2_000, running.head, cancel(3));
    expect(cancelled.head.turn?.turnId).toBe("turn-2");
    expect(cancelled.events).toEqual(
      expect.arrayContaining(["step_completed", "history_appended", "turn_cancelled", "turn_started"]),
    );
    const t = apply(cancelled.head, finalAnswer(1, "late"), at(2_100));
    expect(t.ignored).toMatch(/turn-1/);
  });

  it("a cancel naming an ended or another turn is consumed and skipped", () => {
    const done = run(fresh(), message(1, "hi"), finalAnswer(1, "hello"));
    const t = apply(done.head, cancel(2), at(NOW));
    expect(t.ignored).toBeNull();
    expect(t.head.inboxCursor).toBe(2);
    expect(t.events.map((e) => e.type)).toEqual(["cancel_skipped"]);
    expect(t.head.turn?.phase).toBe("completed");
  });

  it("steer: joins before the next RunModel after the current calls, once, placed after the last call", () => {
    const calls = run(fresh(), message(1, "go"), toolCalls(1, "a", "r"));
    const steered = runAt(NOW, calls.head, steer(2, "and also this"));
    expect(steered.head.turn?.steered.map((m) => m.text)).toEqual(["and also this"]);
    expect(steered.history).toEqual([]);
    const one = runAt(NOW, steered.head, finished("a", "A"));
    expect(one.history).toEqual([]);
    const both = runAt(NOW, one.head, finished("r", "R"));
    expect(both.history.map((h) => h.display.text)).toEqual(["and also this"]);
    expect(both.events).toContain("message_steered");
    expect(both.head.turn?.joined).toEqual([
      { modelStep: 2, historyIndex: calls.head.historyLength, afterToolCallId: "r" },
    ]);
    expect(both.head.turn?.steered).toEqual([]);
  });

  it("steer: a message that had not joined when the turn answered starts the next turn", () => {
    const running = run(fresh(), message(1, "go"));
    const steered = runAt(NOW, running.head, steer(2, "one more thing"));
    const done = runAt(NOW, steered.head, finalAnswer(1, "done"));
    expect(done.head.turn?.turnId).toBe("turn-2");
    expect(done.head.turn?.userText).toBe("one more thing");
    expect(done.history.filter((h) => h.display.text === "one more thing")).toHaveLength(1);
  });

  it("steer on an idle session starts a turn; during a cancellation it waits for the next turn", () => {
    const idle = runAt(NOW, fresh(), steer(1, "hello"));
    expect(idle.head.turn?.userText).toBe("hello");
    const started = run(fresh(), message(1, "go"), toolCalls(1, "a"));
    const cancelling = runAt(NOW, started.head, cancel(2));
    const queued = runAt(NOW, cancelling.head, steer(3, "later"));
    expect(queued.head.queue.map((m) => m.text)).toEqual(["later"]);
    expect(queued.events).toEqual(["message_queued"]);
  });
});
