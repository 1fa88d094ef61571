import { describe, expect, it } from "vitest";
import type { SessionEvent } from "@durable-agents/core";
import { ProgressRenderer } from "../src/progress-renderer.js";

let seq = 0;
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms)).toISOString();
const ev = (ms: number, body: Omit<SessionEvent, "seq" | "at">) =>
  ({ seq: ++seq, at: at(ms), ...body }) as SessionEvent;

function render(events: SessionEvent[], live: boolean): string {
  let out = "";
  const renderer = new ProgressRenderer({ write: (text) => (out += text) }, { live, color: false });
  for (const event of events) renderer.handle(event);
  renderer.settle();
  return out;
}

const turnId = "t1";
const args1001 = '{"order_id":"1001"}';
const args1002 = '{"order_id":"1002"}';
// The order core commits them in: a step's events after its step_completed.
const lookUpTurn: SessionEvent[] = [
  ev(0, { type: "turn_started", data: { turnId, text: "look up order 1001" } }),
  ev(1, { type: "step_started", data: { turnId, step: "RunModel", attempt: 1 } }),
  ev(6, { type: "step_completed", data: { turnId, step: "RunModel", status: "completed" } }),
  ev(6, {
    type: "tool_calls_requested",
    data: { turnId, calls: [{ toolCallId: "c1", name: "look_up_order", arguments: args1001 }] },
  }),
  ev(7, { type: "step_started", data: { turnId, step: "CallTool", toolCallId: "c1", attempt: 1 } }),
  ev(9, {
    type: "step_completed",
    data: { turnId, step: "CallTool", toolCallId: "c1", status: "completed", detail: "succeeded" },
  }),
  ev(9, {
    type: "tool_call_completed",
    data: { turnId, toolCallId: "c1", name: "look_up_order", status: "succeeded", text: "Order 1001: shipped" },
  }),
  ev(10, { type: "step_started", data: { turnId, step: "RunModel", attempt: 2 } }),
  ev(20, { type: "text_delta", data: { turnId, text: "Order 1001 " } }),
  ev(30, { type: "text_delta", data: { turnId, text: "has shipped." } }),
  ev(31, { type: "step_completed", data: { turnId, step: "RunModel", status: "failed", detail: "model timed out" } }),
];

describe("ProgressRenderer", () => {
  it("writes one line per step with what it produced, and a running line only when text streams in between", () => {
    expect(render(lookUpTurn, false).split("\n")).toEqual([
      "› look up order 1001",
      `  ✓ RunModel  (5 ms)  → look_up_order ${args1001}`,
      `  ✓ CallTool look_up_order ${args1001}  succeeded  (2 ms) → Order 1001: shipped`,
      "  ▸ RunModel (attempt 2)",
      "    Order 1001 has shipped.",
      "  ✗ RunModel (attempt 2)  model timed out  (21 ms)",
      "",
    ]);
  });

  it("times a step whose start was stored with its end (a held start) from when it happened", () => {
    // The turn's start and its first model step were held for the step's result: stored at 40 ms, with
    // occurredAt 4 ms.
    const held: SessionEvent[] = [
      ev(40, { type: "turn_started", data: { turnId, text: "look up order 1001", occurredAt: at(4) } }),
      ev(40, { type: "step_started", data: { turnId, step: "RunModel", attempt: 1, occurredAt: at(4) } }),
      ev(40, { type: "step_completed", data: { turnId, step: "RunModel", status: "completed" } }),
      ev(40, {
        type: "tool_calls_requested",
        data: { turnId, calls: [{ toolCallId: "c1", name: "look_up_order", arguments: args1001 }] },
      }),
    ];
    expect(render(held, false).split("\n")).toEqual([
      "› look up order 1001",
      `  ✓ RunModel  (36 ms)  → look_up_order ${args1001}`,
      "",
    ]);
  });

  it("rewrites a running step's line in place on a TTY", () => {
    expect(render(lookUpTurn.slice(0, 4), true)).toBe(
      `› look up order 1001\n  ▸ RunModel\r\x1b[2K  ✓ RunModel  (5 ms)  → look_up_order ${args1001}\n`,
    );
  });

  it("cuts a running line to the terminal width on a TTY, so it can be rewritten in place", () => {
    let out = "";
    const renderer = new ProgressRenderer(
      { write: (text) => (out += text) },
      { live: true, color: false, columns: 30 },
    );
    renderer.handle(lookUpTurn[3]!);
    renderer.handle(ev(40, { type: "step_started", data: { turnId, step: "CallTool", toolCallId: "c1", attempt: 1 } }));
    expect(out).toBe(`    ↳ asks for look_up_order ${args1001}\n  ▸ CallTool look_up_order {…`);
  });

  it("keeps parallel tool steps apart and puts an outcome on its own line when its step's line is closed", () => {
    const events: SessionEvent[] = [
      ev(0, {
        type: "tool_calls_requested",
        data: {
          turnId,
          calls: [
            { toolCallId: "c1", name: "look_up_order", arguments: args1001 },
            { toolCallId: "c2", name: "look_up_order", arguments: args1002 },
          ],
        },
      }),
      ev(1, { type: "step_started", data: { turnId, step: "CallTool", toolCallId: "c1", attempt: 1 } }),
      ev(1, { type: "step_started", data: { turnId, step: "CallTool", toolCallId: "c2", attempt: 1 } }),
      ev(4, {
        type: "step_completed",
        data: { turnId, step: "CallTool", toolCallId: "c2", status: "completed", detail: "succeeded" },
      }),
      ev(4, {
        type: "tool_call_completed",
        data: { turnId, toolCallId: "c2", name: "look_up_order", status: "succeeded", text: "Order 1002: processing" },
      }),
      ev(6, {
        type: "step_completed",
        data: { turnId, step: "CallTool", toolCallId: "c1", status: "completed", detail: "succeeded" },
      }),
      ev(7, { type: "step_started", data: { turnId, step: "ResumeTurn", attempt: 0 } }),
      ev(7, {
        type: "tool_call_completed",
        data: { turnId, toolCallId: "c1", name: "look_up_order", status: "failed", text: "The tool call failed" },
      }),
    ];
    expect(render(events, false).split("\n")).toEqual([
      `    ↳ asks for look_up_order ${args1001}, look_up_order ${args1002}`,
      `  ▸ CallTool look_up_order ${args1001}`,
      `  ✓ CallTool look_up_order ${args1002}  succeeded  (3 ms) → Order 1002: processing`,
      `  ✓ CallTool look_up_order ${args1001}  succeeded  (5 ms)`,
      "  ▸ ResumeTurn",
      "    ↳ look_up_order failed: The tool call failed",
      "",
    ]);
  });

  it("prints a cancelled turn's wait and its receipt: each call with its effect, final status and attempts", () => {
    const events: SessionEvent[] = [
      ev(0, {
        type: "tool_calls_requested",
        data: {
          turnId,
          calls: [
            { toolCallId: "c1", name: "look_up_order", arguments: args1001 },
            { toolCallId: "c2", name: "cancel_order", arguments: args1002 },
          ],
        },
      }),
      ev(1, { type: "step_started", data: { turnId, step: "CallTool", toolCallId: "c1", attempt: 1 } }),
      ev(5, {
        type: "turn_cancelling",
        data: { turnId, reason: "Ctrl-C", requestId: "r1", graceUntil: at(10_005), running: ["c1"] },
      }),
      ev(9, {
        type: "turn_cancelled",
        data: {
          turnId,
          reason: "Ctrl-C",
          requestId: "r1",
          modelCallAborted: false,
          calls: [
            { toolCallId: "c1", name: "look_up_order", effect: "read", status: "cancelled", attempts: 1 },
            {
              toolCallId: "c2",
              name: "cancel_order",
              effect: "non_idempotent_write",
              status: "cancelled",
              attempts: 0,
            },
          ],
        },
      }),
      ev(10, {
        type: "cancel_skipped",
        data: { turnId, requestId: "r2", why: "the turn had already ended (cancelled)" },
      }),
      ev(11, {
        type: "turn_cancelled",
        data: { turnId: "t2", reason: null, requestId: null, modelCallAborted: true, calls: [] },
      }),
      ev(12, { type: "message_steered", data: { turnId: "t3", text: "also look up order 1002", modelStep: 2 } }),
    ];
    expect(render(events, false).split("\n")).toEqual([
      `    ↳ asks for look_up_order ${args1001}, cancel_order ${args1002}`,
      `  ▸ CallTool look_up_order ${args1001}`,
      `  ■ cancelling: waiting up to 10 s for look_up_order ${args1001} to stop`,
      "  ■ turn cancelled (Ctrl-C)",
      "    receipt: 2 tool calls",
      `      look_up_order ${args1001} (read): cancelled, 1 attempt`,
      `      cancel_order ${args1002} (non_idempotent_write): cancelled, 0 attempts`,
      "  ■ nothing was cancelled: the turn had already ended (cancelled)",
      "  ■ turn cancelled; the model call in flight was stopped",
      "    receipt: no tool call",
      "  + joins the turn: also look up order 1002",
      "",
    ]);
  });
});
