/**
 * The event → UI chunk mapping, event by event, for every event type of core's `EventBody`; and
 * what the AI SDK's own stream reader (`readUIMessageStream`, the one `useChat` uses) builds from
 * the chunks: the protocol is valid and the message is the turn.
 */
import { EventBody, type SessionEvent } from "@durable-agents/core";
import { readUIMessageStream } from "ai";
import { describe, expect, it } from "vitest";
import { type DurableUIChunk, type DurableUIMessage, SessionEventMapper } from "../src/index.js";
import { eventLog, summary } from "./support/events.js";

const facts = ({ name }: { name: string }) =>
  name === "look_up_order"
    ? { effect: "read" as const }
    : name === "cancel_order"
      ? { effect: "non_idempotent_write" as const, needsApproval: true }
      : undefined;

/** Maps the events one by one: for each, its seq, type and the summaries of its chunks. */
function mapAll(events: SessionEvent[], mapper = new SessionEventMapper({ sessionId: "s1", callFacts: facts })) {
  return events.map((event) => ({ seq: event.seq, type: event.type, chunks: mapper.map(event).map(summary) }));
}

async function assemble(chunks: DurableUIChunk[]): Promise<DurableUIMessage> {
  const stream = new ReadableStream<DurableUIChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  let last: DurableUIMessage | undefined;
  const errors: unknown[] = [];
  for await (const message of readUIMessageStream<DurableUIMessage>({ stream, onError: (e) => errors.push(e) })) {
    last = message;
  }
  expect(errors).toEqual([]);
  return last!;
}

/** The fields an approval interrupt carries besides its call. */
const approval = { kind: "approval", reason: null, idempotencyKey: null, turnCancelled: false } as const;

const at = (seq: number) => new Date(Date.parse("2026-12-01T10:00:00.000Z") + seq * 10).toISOString();

/** A turn with reasoning, text, two calls (one retried, one approved), a steered message, a failed and retried model step. */
function completedTurn() {
  const { events, add } = eventLog();
  add({ type: "session_created", data: { agent: "a" } });
  add({ type: "turn_started", data: { turnId: "turn-1", text: "look it up" } });
  add({ type: "history_appended", data: { items: [{ role: "user", text: "look it up" }] } });
  add({ type: "message_queued", data: { text: "next", position: 1 } });
  add({ type: "step_started", data: { turnId: "turn-1", step: "RunModel", attempt: 1 } });
  add({ type: "reasoning_delta", data: { turnId: "turn-1", text: "thinking" } });
  add({ type: "text_delta", data: { turnId: "turn-1", text: "Let me " } });
  add({ type: "text_delta", data: { turnId: "turn-1", text: "check." } });
  add({ type: "step_completed", data: { turnId: "turn-1", step: "RunModel", status: "completed" } });
  add({
    type: "tool_calls_requested",
    data: {
      turnId: "turn-1",
      calls: [
        { toolCallId: "c1", name: "look_up_order", arguments: '{"order_id":"1001"}' },
        { toolCallId: "c2", name: "cancel_order", arguments: '{"order_id":"1002"}' },
      ],
    },
  });
  add({ type: "step_started", data: { turnId: "turn-1", step: "CallTool", toolCallId: "c1", attempt: 1 } });
  add({ type: "step_started", data: { turnId: "turn-1", step: "AwaitToolApproval", toolCallId: "c2", attempt: 0 } });
  add({
    type: "interrupt_created",
    data: {
      interrupt: {
        ...approval,
        interruptId: "i1",
        turnId: "turn-1",
        toolCallId: "c2",
        toolName: "cancel_order",
        arguments: '{"order_id":"1002"}',
      },
    },
  });
  add({
    type: "step_completed",
    data: { turnId: "turn-1", step: "CallTool", toolCallId: "c1", status: "failed", detail: "timeout" },
  });
  add({ type: "step_started", data: { turnId: "turn-1", step: "CallTool", toolCallId: "c1", attempt: 2 } });
  add({
    type: "step_completed",
    data: { turnId: "turn-1", step: "CallTool", toolCallId: "c1", status: "completed", detail: "succeeded" },
  });
  add({
    type: "tool_call_completed",
    data: {
      turnId: "turn-1",
      toolCallId: "c1",
      name: "look_up_order",
      status: "succeeded",
      text: "Order 1001: shipped",
    },
  });
  add({ type: "interrupt_resolved", data: { interruptId: "i1", approved: true, message: null } });
  add({
    type: "step_completed",
    data: { turnId: "turn-1", step: "AwaitToolApproval", toolCallId: "c2", status: "completed", detail: "approved" },
  });
  add({
    type: "step_started",
    data: { turnId: "turn-1", step: "CallSingleAttemptTool", toolCallId: "c2", attempt: 1 },
  });
  add({
    type: "step_completed",
    data: {
      turnId: "turn-1",
      step: "CallSingleAttemptTool",
      toolCallId: "c2",
      status: "completed",
      detail: "succeeded",
    },
  });
  add({
    type: "tool_call_completed",
    data: {
      turnId: "turn-1",
      toolCallId: "c2",
      name: "cancel_order",
      status: "succeeded",
      text: "Order 1002 cancelled",
    },
  });
  add({ type: "step_started", data: { turnId: "turn-1", step: "ResumeTurn", attempt: 0 } });
  add({ type: "step_completed", data: { turnId: "turn-1", step: "ResumeTurn", status: "completed" } });
  add({ type: "message_steered", data: { turnId: "turn-1", text: "and be quick", modelStep: 2 } });
  add({ type: "step_started", data: { turnId: "turn-1", step: "RunModel", attempt: 1 } });
  add({ type: "text_delta", data: { turnId: "turn-1", text: "Order 10" } });
  add({
    type: "step_completed",
    data: { turnId: "turn-1", step: "RunModel", status: "failed", detail: "model error" },
  });
  add({ type: "step_started", data: { turnId: "turn-1", step: "RunModel", attempt: 2 } });
  add({ type: "text_delta", data: { turnId: "turn-1", text: "Order 1001 is shipped; 1002 is cancelled." } });
  add({ type: "step_completed", data: { turnId: "turn-1", step: "RunModel", status: "completed" } });
  add({
    type: "history_appended",
    data: { items: [{ role: "assistant", text: "Order 1001 is shipped; 1002 is cancelled." }] },
  });
  add({
    type: "turn_completed",
    data: {
      turnId: "turn-1",
      text: "Order 1001 is shipped; 1002 is cancelled.",
      usage: { modelCalls: 3, inputTokens: 10, outputTokens: 5, totalTokens: 15 },
    },
  });
  return events;
}

/** A turn whose model step was interrupted by a worker that stopped, then failed for good. */
function failedTurn() {
  const { events, add } = eventLog();
  add({ type: "turn_started", data: { turnId: "turn-2", text: "hello" } });
  add({ type: "step_started", data: { turnId: "turn-2", step: "RunModel", attempt: 1 } });
  add({ type: "text_delta", data: { turnId: "turn-2", text: "Hel" } });
  add({ type: "session_recovered", data: { fence: 2, calls: [{ toolCallId: "c9", status: "pending" }] } });
  add({ type: "step_started", data: { turnId: "turn-2", step: "RunModel", attempt: 1 } });
  add({ type: "text_delta", data: { turnId: "turn-2", text: "Hello" } });
  add({
    type: "step_completed",
    data: { turnId: "turn-2", step: "RunModel", status: "failed", detail: "provider down" },
  });
  add({ type: "turn_failed", data: { turnId: "turn-2", error: "the model failed 3 times" } });
  return events;
}

/** Two approvals: one rejected with a message, one cancelled with the turn. */
function cancelledTurn() {
  const { events, add } = eventLog();
  add({ type: "turn_started", data: { turnId: "turn-3", text: "cancel both" } });
  add({ type: "step_started", data: { turnId: "turn-3", step: "RunModel", attempt: 1 } });
  add({ type: "step_completed", data: { turnId: "turn-3", step: "RunModel", status: "completed" } });
  add({
    type: "tool_calls_requested",
    data: {
      turnId: "turn-3",
      calls: [
        { toolCallId: "c3", name: "cancel_order", arguments: '{"order_id":"1"}' },
        { toolCallId: "c4", name: "refund", arguments: "not json" },
      ],
    },
  });
  for (const [call, interrupt] of [
    ["c3", "i3"],
    ["c4", "i4"],
  ] as const) {
    add({ type: "step_started", data: { turnId: "turn-3", step: "AwaitToolApproval", toolCallId: call, attempt: 0 } });
    add({
      type: "interrupt_created",
      data: {
        interrupt: {
          ...approval,
          interruptId: interrupt,
          turnId: "turn-3",
          toolCallId: call,
          toolName: "x",
          arguments: "{}",
        },
      },
    });
  }
  add({ type: "interrupt_resolved", data: { interruptId: "i3", approved: false, message: "not this one" } });
  add({
    type: "step_completed",
    data: { turnId: "turn-3", step: "AwaitToolApproval", toolCallId: "c3", status: "completed", detail: "rejected" },
  });
  add({
    type: "tool_call_completed",
    data: { turnId: "turn-3", toolCallId: "c3", name: "cancel_order", status: "rejected", text: "not this one" },
  });
  add({
    type: "turn_cancelling",
    data: {
      turnId: "turn-3",
      reason: "stop",
      requestId: "r1",
      graceUntil: "2026-12-01T10:01:00.000Z",
      running: ["c5"],
    },
  });
  add({
    type: "step_completed",
    data: { turnId: "turn-3", step: "AwaitToolApproval", toolCallId: "c4", status: "completed", detail: "cancelled" },
  });
  add({
    type: "tool_call_completed",
    data: { turnId: "turn-3", toolCallId: "c4", name: "refund", status: "cancelled", text: "it never ran" },
  });
  add({
    type: "turn_cancelled",
    data: {
      turnId: "turn-3",
      reason: "stop",
      requestId: "r1",
      modelCallAborted: false,
      calls: [
        { toolCallId: "c3", name: "cancel_order", effect: "non_idempotent_write", status: "rejected", attempts: 0 },
        { toolCallId: "c4", name: "refund", effect: "unclassified", status: "cancelled", attempts: 0 },
      ],
    },
  });
  add({ type: "cancel_skipped", data: { turnId: "turn-3", requestId: "r2", why: "the turn had ended" } });
  add({ type: "text_delta", data: { turnId: "turn-3", text: "late" } });
  // The session's pin to its agent definition (core's pinning): none of it is chat.
  add({ type: "definition_pinned", data: { fingerprint: "fp1-a", by: "worker", description: {} } });
  add({ type: "definition_waiting", data: { fingerprint: "fp1-a", reason: "unserved", error: null } });
  add({ type: "definition_served", data: { fingerprint: "fp1-a" } });
  add({
    type: "definition_migrated",
    data: { from: "fp1-a", to: "fp1-b", migration: "accept", appendedItems: 0, description: {} },
  });
  return events;
}

/** A refund in doubt after a crash: its check cannot tell; an attention interrupt, resolved while the turn still waits. */
function attentionTurn() {
  const { events, add } = eventLog();
  add({ type: "turn_started", data: { turnId: "turn-1", text: "refund 7" } });
  add({ type: "step_started", data: { turnId: "turn-1", step: "RunModel", attempt: 1 } });
  add({ type: "step_completed", data: { turnId: "turn-1", step: "RunModel", status: "completed" } });
  add({
    type: "tool_calls_requested",
    data: {
      turnId: "turn-1",
      calls: [
        { toolCallId: "c1", name: "refund", arguments: '{"order_id":"7"}' },
        { toolCallId: "c2", name: "cancel_order", arguments: '{"order_id":"8"}' },
      ],
    },
  });
  add({
    type: "step_started",
    data: { turnId: "turn-1", step: "CallSingleAttemptTool", toolCallId: "c1", attempt: 1 },
  });
  add({ type: "step_started", data: { turnId: "turn-1", step: "AwaitToolApproval", toolCallId: "c2", attempt: 0 } });
  add({
    type: "interrupt_created",
    data: {
      interrupt: {
        ...approval,
        interruptId: "turn-1-1-2",
        turnId: "turn-1",
        toolCallId: "c2",
        toolName: "cancel_order",
        arguments: '{"order_id":"8"}',
      },
    },
  });
  add({
    type: "session_recovered",
    data: { fence: 2, calls: [{ toolCallId: "c1", status: "reconcile_pending" }] },
  });
  add({
    type: "step_completed",
    data: { turnId: "turn-1", step: "CallSingleAttemptTool", toolCallId: "c1", status: "failed", detail: "in doubt" },
  });
  add({ type: "step_started", data: { turnId: "turn-1", step: "ReconcileCall", toolCallId: "c1", attempt: 1 } });
  add({
    type: "step_completed",
    data: { turnId: "turn-1", step: "ReconcileCall", toolCallId: "c1", status: "completed", detail: "unknown" },
  });
  add({
    type: "call_reconciled",
    data: {
      turnId: "turn-1",
      toolCallId: "c1",
      name: "refund",
      found: "unknown",
      attempts: 1,
      status: "outcome_unknown",
    },
  });
  add({
    type: "tool_call_completed",
    data: { turnId: "turn-1", toolCallId: "c1", name: "refund", status: "outcome_unknown", text: "unknown" },
  });
  const attention = {
    interruptId: "turn-1-attention-c1",
    kind: "attention",
    turnId: "turn-1",
    toolCallId: "c1",
    toolName: "refund",
    arguments: '{"order_id":"7"}',
    reason: "the worker stopped; a check could not tell",
    effect: "non_idempotent_write",
    idempotencyKey: "s1/turn-1/c1",
    turnCancelled: false,
  } as const;
  add({ type: "attention_required", data: { interrupt: attention } });
  add({
    type: "attention_resolved",
    data: {
      interruptId: attention.interruptId,
      turnId: "turn-1",
      toolCallId: "c1",
      outcome: "done",
      output: "refunded",
    },
  });
  return events;
}

describe("the event → UI chunk mapping", () => {
  it("maps an attention interrupt to a data-attention part, updated in place when it is resolved; a reconcile step has its own timeline entry", async () => {
    const events = attentionTurn();
    const mapped = mapAll(events);
    const of = (type: string) => mapped.filter((m) => m.type === type).flatMap((m) => m.chunks);
    expect(of("attention_required")).toEqual(["data-attention"]);
    expect(of("attention_resolved")).toEqual(["data-attention"]);
    expect(of("call_reconciled")).toEqual([]);
    const mapper = new SessionEventMapper({ sessionId: "s1", callFacts: facts });
    const chunks = events.flatMap((event) => mapper.map(event));
    const message = await assemble(chunks);
    const attention = message.parts.filter((p) => p.type === "data-attention");
    expect(attention).toHaveLength(1);
    expect(attention[0]).toMatchObject({
      type: "data-attention",
      id: "turn-1-attention-c1",
      data: { toolName: "refund", idempotencyKey: "s1/turn-1/c1", status: "done" },
    });
    const steps = message.parts.flatMap((p) => (p.type === "data-step" ? [p.data] : []));
    const reconcile = steps.find((s) => s.kind === "ReconcileCall");
    expect(reconcile).toMatchObject({ id: "turn-1/reconcile-c1", status: "completed", detail: "unknown" });
    expect(steps.find((s) => s.id === "turn-1/call-c1")).toMatchObject({
      kind: "CallSingleAttemptTool",
      outcome: "outcome_unknown",
    });
    // A resolution after its turn ended has nothing to update: the follow-up turn shows it.
    const late = new SessionEventMapper({ sessionId: "s1", callFacts: facts });
    for (const event of events.slice(0, -1)) late.map(event);
    late.map({
      type: "turn_cancelled",
      seq: 99,
      at: at(99),
      data: { turnId: "turn-1", reason: null, requestId: null, modelCallAborted: false, calls: [] },
    });
    expect(late.map({ ...events.at(-1)!, seq: 100 })).toEqual([]);
  });

  it("covers every event type of core's EventBody in these fixtures", () => {
    const types = new Set(
      [...completedTurn(), ...failedTurn(), ...cancelledTurn(), ...attentionTurn()].map((e) => e.type),
    );
    const all = EventBody.options.map((option) => option.shape.type.value);
    expect([...types].sort()).toEqual([...all].sort());
  });

  it("maps a completed turn: start, steps, reasoning and text, calls with input and output, an approval, a steer, a retried model step, finish with usage", async () => {
    const events = completedTurn();
    const mapped = mapAll(events);
    const usage = { modelCalls: 3, inputTokens: 10, outputTokens: 5, totalTokens: 15 };
    expect(mapped).toEqual([
      { seq: 1, type: "session_created", chunks: [] },
      {
        seq: 2,
        type: "turn_started",
        chunks: [
          `start assistant-turn-1 ${JSON.stringify({ turnId: "turn-1", userText: "look it up", status: "running", startedAt: at(2) })}`,
        ],
      },
      { seq: 3, type: "history_appended", chunks: [] },
      { seq: 4, type: "message_queued", chunks: [] },
      {
        seq: 5,
        type: "step_started",
        chunks: ["start-step", "data-step turn-1/model-1 RunModel running attempt=1"],
      },
      {
        seq: 6,
        type: "reasoning_delta",
        chunks: ["reasoning-start reasoning-6", 'reasoning-delta reasoning-6 "thinking"'],
      },
      {
        seq: 7,
        type: "text_delta",
        chunks: ["reasoning-end reasoning-6", "text-start text-7", 'text-delta text-7 "Let me "'],
      },
      { seq: 8, type: "text_delta", chunks: ['text-delta text-7 "check."'] },
      {
        seq: 9,
        type: "step_completed",
        chunks: ["text-end text-7", "data-step turn-1/model-1 RunModel completed attempt=1 40ms"],
      },
      {
        seq: 10,
        type: "tool_calls_requested",
        chunks: [
          'tool-input-available c1 look_up_order {"order_id":"1001"} {"effect":"read","idempotencyKey":"s1/turn-1/c1"}',
          'tool-input-available c2 cancel_order {"order_id":"1002"} {"effect":"non_idempotent_write","idempotencyKey":"s1/turn-1/c2","needsApproval":true}',
        ],
      },
      {
        seq: 11,
        type: "step_started",
        chunks: ["data-step turn-1/call-c1 CallTool running attempt=1 look_up_order effect=read"],
      },
      {
        seq: 12,
        type: "step_started",
        chunks: [
          "data-step turn-1/approval-c2 AwaitToolApproval running attempt=0 cancel_order effect=non_idempotent_write",
        ],
      },
      {
        seq: 13,
        type: "interrupt_created",
        chunks: ["tool-approval-request i1 c2", 'message-metadata {"status":"awaiting_approval"}'],
      },
      {
        seq: 14,
        type: "step_completed",
        chunks: ["data-step turn-1/call-c1 CallTool failed attempt=1 look_up_order timeout effect=read 30ms"],
      },
      {
        seq: 15,
        type: "step_started",
        chunks: ["data-step turn-1/call-c1 CallTool running attempt=2 look_up_order effect=read"],
      },
      {
        seq: 16,
        type: "step_completed",
        chunks: ["data-step turn-1/call-c1 CallTool completed attempt=2 look_up_order succeeded effect=read 50ms"],
      },
      {
        seq: 17,
        type: "tool_call_completed",
        chunks: [
          'tool-output-available c1 "Order 1001: shipped" succeeded',
          "data-step turn-1/call-c1 CallTool completed attempt=2 look_up_order succeeded effect=read outcome=succeeded 50ms",
        ],
      },
      {
        seq: 18,
        type: "interrupt_resolved",
        chunks: ["tool-approval-response i1 true", 'message-metadata {"status":"running"}'],
      },
      {
        seq: 19,
        type: "step_completed",
        chunks: [
          "data-step turn-1/approval-c2 AwaitToolApproval completed attempt=0 cancel_order approved effect=non_idempotent_write 70ms",
        ],
      },
      {
        seq: 20,
        type: "step_started",
        chunks: [
          "data-step turn-1/call-c2 CallSingleAttemptTool running attempt=1 cancel_order effect=non_idempotent_write",
        ],
      },
      {
        seq: 21,
        type: "step_completed",
        chunks: [
          "data-step turn-1/call-c2 CallSingleAttemptTool completed attempt=1 cancel_order succeeded effect=non_idempotent_write 10ms",
        ],
      },
      {
        seq: 22,
        type: "tool_call_completed",
        chunks: [
          'tool-output-available c2 "Order 1002 cancelled" succeeded',
          "data-step turn-1/call-c2 CallSingleAttemptTool completed attempt=1 cancel_order succeeded effect=non_idempotent_write outcome=succeeded 10ms",
        ],
      },
      { seq: 23, type: "step_started", chunks: ["data-step turn-1/resume-1 ResumeTurn running attempt=0"] },
      { seq: 24, type: "step_completed", chunks: ["data-step turn-1/resume-1 ResumeTurn completed attempt=0 10ms"] },
      {
        seq: 25,
        type: "message_steered",
        chunks: [`steering-message steer-25 ${JSON.stringify([{ type: "text", text: "and be quick" }])}`],
      },
      {
        seq: 26,
        type: "step_started",
        chunks: ["finish-step", "start-step", "data-step turn-1/model-2 RunModel running attempt=1"],
      },
      { seq: 27, type: "text_delta", chunks: ["text-start text-27", 'text-delta text-27 "Order 10"'] },
      {
        seq: 28,
        type: "step_completed",
        chunks: ["reset-step", "data-step turn-1/model-2 RunModel failed attempt=1 model error 20ms"],
      },
      { seq: 29, type: "step_started", chunks: ["data-step turn-1/model-2 RunModel running attempt=2"] },
      {
        seq: 30,
        type: "text_delta",
        chunks: ["text-start text-30", 'text-delta text-30 "Order 1001 is shipped; 1002 is cancelled."'],
      },
      {
        seq: 31,
        type: "step_completed",
        chunks: ["text-end text-30", "data-step turn-1/model-2 RunModel completed attempt=2 50ms"],
      },
      { seq: 32, type: "history_appended", chunks: [] },
      {
        seq: 33,
        type: "turn_completed",
        chunks: ["finish-step", `finish stop ${JSON.stringify({ status: "completed", endedAt: at(33), usage })}`],
      },
    ]);

    const mapper = new SessionEventMapper({ sessionId: "s1", callFacts: facts });
    const message = await assemble(events.flatMap((event) => mapper.map(event)));
    expect(message.id).toBe("assistant-turn-1");
    expect(message.metadata).toEqual({
      turnId: "turn-1",
      userText: "look it up",
      status: "completed",
      startedAt: at(2),
      endedAt: at(33),
      usage,
    });
    // The failed attempt's "Order 10" is gone; the answer is there once.
    expect(message.parts.filter((p) => p.type === "text").map((p) => p.text)).toEqual([
      "Let me check.",
      "Order 1001 is shipped; 1002 is cancelled.",
    ]);
    expect(message.parts.filter((p) => p.type === "reasoning").map((p) => p.text)).toEqual(["thinking"]);
    expect(message.parts.filter((p) => p.type === "step-start")).toHaveLength(2);
    expect(message.parts.find((p) => p.type === "tool-look_up_order")).toMatchObject({
      toolCallId: "c1",
      state: "output-available",
      input: { order_id: "1001" },
      output: "Order 1001: shipped",
      toolMetadata: { effect: "read", idempotencyKey: "s1/turn-1/c1", status: "succeeded" },
    });
    expect(message.parts.find((p) => p.type === "tool-cancel_order")).toMatchObject({
      toolCallId: "c2",
      state: "output-available",
      approval: { id: "i1", approved: true },
      output: "Order 1002 cancelled",
    });
    expect(message.parts.find((p) => p.type === "steering-message")).toMatchObject({
      parts: [{ type: "text", text: "and be quick" }],
    });
    const steps = message.parts.flatMap((p) => (p.type === "data-step" ? [p.data] : []));
    expect(steps.map((s) => `${s.kind} ${s.status} ${s.attempts}`).sort()).toEqual(
      [
        "RunModel completed 1",
        "CallTool completed 2",
        "AwaitToolApproval completed 0",
        "CallSingleAttemptTool completed 1",
        "ResumeTurn completed 0",
        "RunModel completed 2",
      ].sort(),
    );
  });

  it("times a turn and its first step from when they happened when the engine stored their start later (a held start's occurredAt)", () => {
    // The turn's start was held for its first model call's result: the three events are stored with
    // the result, 500 ms after they happened.
    const happened = "2026-12-01T10:00:00.500Z";
    const stored = "2026-12-01T10:00:01.000Z";
    const events = [
      { seq: 1, at: "2026-12-01T10:00:00.000Z", type: "session_created", data: { agent: "a" } },
      { seq: 2, at: stored, type: "turn_started", data: { turnId: "turn-1", text: "hi", occurredAt: happened } },
      {
        seq: 3,
        at: stored,
        type: "step_started",
        data: { turnId: "turn-1", step: "RunModel", attempt: 1, occurredAt: happened },
      },
      { seq: 4, at: stored, type: "step_completed", data: { turnId: "turn-1", step: "RunModel", status: "completed" } },
    ] as SessionEvent[];
    const mapped = mapAll(events);
    expect(mapped[1]!.chunks).toEqual([
      `start assistant-turn-1 ${JSON.stringify({ turnId: "turn-1", userText: "hi", status: "running", startedAt: happened })}`,
    ]);
    expect(mapped[3]!.chunks).toContain("data-step turn-1/model-1 RunModel completed attempt=1 500ms");
  });

  it("drops what an interrupted or failed model attempt streamed, records the recovery, and ends a failed turn with finish error", async () => {
    const events = failedTurn();
    expect(mapAll(events)).toEqual([
      {
        seq: 1,
        type: "turn_started",
        chunks: [
          `start assistant-turn-2 ${JSON.stringify({ turnId: "turn-2", userText: "hello", status: "running", startedAt: at(1) })}`,
        ],
      },
      { seq: 2, type: "step_started", chunks: ["start-step", "data-step turn-2/model-1 RunModel running attempt=1"] },
      { seq: 3, type: "text_delta", chunks: ["text-start text-3", 'text-delta text-3 "Hel"'] },
      {
        seq: 4,
        type: "session_recovered",
        chunks: ["data-step turn-2/recovery-4 Recovery completed attempt=0 c9: pending 0ms"],
      },
      { seq: 5, type: "step_started", chunks: ["reset-step", "data-step turn-2/model-1 RunModel running attempt=1"] },
      { seq: 6, type: "text_delta", chunks: ["text-start text-6", 'text-delta text-6 "Hello"'] },
      {
        seq: 7,
        type: "step_completed",
        chunks: ["reset-step", "data-step turn-2/model-1 RunModel failed attempt=1 provider down 50ms"],
      },
      {
        seq: 8,
        type: "turn_failed",
        chunks: [
          "finish-step",
          `finish error ${JSON.stringify({ status: "failed", endedAt: at(8), error: "the model failed 3 times" })}`,
        ],
      },
    ]);
    const mapper = new SessionEventMapper({ sessionId: "s1" });
    const message = await assemble(events.flatMap((event) => mapper.map(event)));
    expect(message.parts.filter((p) => p.type === "text")).toEqual([]);
    expect(message.metadata).toMatchObject({ status: "failed", error: "the model failed 3 times" });
  });

  it("drops what a model call streamed when a recovery says a dead worker left it in flight (core names the model step)", async () => {
    const { events, add } = eventLog();
    add({ type: "turn_started", data: { turnId: "turn-1", text: "hi" } });
    add({ type: "step_started", data: { turnId: "turn-1", step: "RunModel", attempt: 1 } });
    add({ type: "text_delta", data: { turnId: "turn-1", text: "I can " } });
    add({ type: "session_recovered", data: { fence: 2, calls: [], modelStep: 1 } });
    add({ type: "text_delta", data: { turnId: "turn-1", text: "I can help." } });
    const mapped = mapAll(events);
    expect(mapped[3]?.chunks[0]).toBe("reset-step");
    expect(mapped[4]?.chunks[0]).toMatch(/^text-start /);
    const mapper = new SessionEventMapper({ sessionId: "s1", callFacts: facts });
    const message = await assemble(events.flatMap((event) => mapper.map(event)));
    expect(message.parts.filter((p) => p.type === "text").map((p) => (p as { text: string }).text)).toEqual([
      "I can help.",
    ]);
  });

  it("maps a rejection with its message, a cancellation while waiting for approval, and ignores events after the turn ended", async () => {
    const events = cancelledTurn();
    // No call facts here: the effect is unknown (null).
    const mapped = mapAll(events, new SessionEventMapper({ sessionId: "s1" }));
    expect(mapped.slice(3)).toEqual([
      {
        seq: 4,
        type: "tool_calls_requested",
        chunks: [
          'tool-input-available c3 cancel_order {"order_id":"1"} {"effect":null,"idempotencyKey":"s1/turn-3/c3"}',
          'tool-input-available c4 refund "not json" {"effect":null,"idempotencyKey":"s1/turn-3/c4"}',
        ],
      },
      {
        seq: 5,
        type: "step_started",
        chunks: ["data-step turn-3/approval-c3 AwaitToolApproval running attempt=0 cancel_order effect=null"],
      },
      {
        seq: 6,
        type: "interrupt_created",
        chunks: ["tool-approval-request i3 c3", 'message-metadata {"status":"awaiting_approval"}'],
      },
      {
        seq: 7,
        type: "step_started",
        chunks: ["data-step turn-3/approval-c4 AwaitToolApproval running attempt=0 refund effect=null"],
      },
      {
        seq: 8,
        type: "interrupt_created",
        chunks: ["tool-approval-request i4 c4", 'message-metadata {"status":"awaiting_approval"}'],
      },
      // One approval is still pending: the turn keeps waiting.
      { seq: 9, type: "interrupt_resolved", chunks: ['tool-approval-response i3 false "not this one"'] },
      {
        seq: 10,
        type: "step_completed",
        chunks: [
          "data-step turn-3/approval-c3 AwaitToolApproval completed attempt=0 cancel_order rejected effect=null 50ms",
        ],
      },
      {
        seq: 11,
        type: "tool_call_completed",
        chunks: [
          "tool-output-denied c3",
          "data-step turn-3/approval-c3 AwaitToolApproval completed attempt=0 cancel_order rejected effect=null outcome=rejected 50ms",
        ],
      },
      {
        seq: 12,
        type: "turn_cancelling",
        chunks: [
          `message-metadata ${JSON.stringify({ status: "cancelling", cancellation: { reason: "stop", requestId: "r1", graceUntil: "2026-12-01T10:01:00.000Z" } })}`,
        ],
      },
      {
        seq: 13,
        type: "step_completed",
        chunks: [
          "data-step turn-3/approval-c4 AwaitToolApproval completed attempt=0 refund cancelled effect=null 60ms",
        ],
      },
      {
        seq: 14,
        type: "tool_call_completed",
        chunks: [
          'tool-output-error c4 "it never ran" cancelled',
          "data-step turn-3/approval-c4 AwaitToolApproval completed attempt=0 refund cancelled effect=null outcome=cancelled 60ms",
        ],
      },
      {
        seq: 15,
        type: "turn_cancelled",
        chunks: [
          "finish-step",
          `finish other ${JSON.stringify({ status: "cancelled", endedAt: at(15), cancellation: { reason: "stop", requestId: "r1", modelCallAborted: false } })}`,
        ],
      },
      { seq: 16, type: "cancel_skipped", chunks: [] },
      { seq: 17, type: "text_delta", chunks: [] },
      { seq: 18, type: "definition_pinned", chunks: [] },
      { seq: 19, type: "definition_waiting", chunks: [] },
      { seq: 20, type: "definition_served", chunks: [] },
      { seq: 21, type: "definition_migrated", chunks: [] },
    ]);
    const mapper = new SessionEventMapper({ sessionId: "s1" });
    const message = await assemble(events.flatMap((event) => mapper.map(event)));
    expect(message.parts.find((p) => p.type === "tool-cancel_order")).toMatchObject({
      state: "output-denied",
      approval: { id: "i3", approved: false, reason: "not this one" },
    });
    expect(message.parts.find((p) => p.type === "tool-refund")).toMatchObject({
      state: "output-error",
      errorText: "it never ran",
      input: "not json",
    });
    expect(message.metadata).toMatchObject({ status: "cancelled", cancellation: { reason: "stop", requestId: "r1" } });
  });

  it("replaces what streamed with the recorded answer when they differ (a model attempt restarted silently after a worker stopped)", async () => {
    // Core starts a RunModel step again after a recovery without an event: the new attempt's text
    // follows the interrupted one's in the same part. The answer recorded at the end wins.
    const { events, add } = eventLog();
    add({ type: "turn_started", data: { turnId: "turn-1", text: "hi" } });
    add({ type: "step_started", data: { turnId: "turn-1", step: "RunModel", attempt: 1 } });
    add({ type: "reasoning_delta", data: { turnId: "turn-1", text: "greet" } });
    add({ type: "text_delta", data: { turnId: "turn-1", text: "I can " } });
    add({ type: "text_delta", data: { turnId: "turn-1", text: "I can help." } });
    add({ type: "step_completed", data: { turnId: "turn-1", step: "RunModel", status: "completed" } });
    add({ type: "history_appended", data: { items: [{ role: "assistant", text: "I can help." }] } });
    const usage = { modelCalls: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 };
    add({ type: "turn_completed", data: { turnId: "turn-1", text: "I can help.", usage } });
    const mapped = mapAll(events);
    expect(mapped.at(-1)).toEqual({
      seq: 8,
      type: "turn_completed",
      chunks: [
        "reset-step",
        "data-step turn-1/model-1 RunModel completed attempt=1 40ms",
        "reasoning-start reasoning-8-answer",
        'reasoning-delta reasoning-8-answer "greet"',
        "reasoning-end reasoning-8-answer",
        "text-start text-8-answer",
        'text-delta text-8-answer "I can help."',
        "text-end text-8-answer",
        "finish-step",
        `finish stop ${JSON.stringify({ status: "completed", endedAt: at(8), usage })}`,
      ],
    });
    const mapper = new SessionEventMapper({ sessionId: "s1" });
    const message = await assemble(events.flatMap((event) => mapper.map(event)));
    expect(message.parts.filter((p) => p.type === "text").map((p) => p.text)).toEqual(["I can help."]);
    expect(message.parts.filter((p) => p.type === "reasoning").map((p) => p.text)).toEqual(["greet"]);
    expect(message.parts.filter((p) => p.type === "data-step")).toHaveLength(1);
  });

  it("tells where a stream that starts inside a turn begins: the message's start, and the approvals still pending", () => {
    const events = cancelledTurn();
    const mapper = new SessionEventMapper({ sessionId: "s1" });
    expect(mapper.resumeStart()).toBeNull();
    for (const event of events.slice(0, 8)) mapper.map(event);
    expect(mapper.openTurnId).toBe("turn-3");
    expect(mapper.pendingApprovals).toEqual(["i3", "i4"]);
    expect(mapper.resumeStart()).toEqual({ type: "start", messageId: "assistant-turn-3" });
    for (const event of events.slice(8)) mapper.map(event);
    expect(mapper.openTurnId).toBeNull();
    expect(mapper.pendingApprovals).toEqual([]);
    expect(mapper.lastSeq).toBe(21);
  });
});
