import { describe, expect, it } from "vitest";
import type { SessionEvent } from "@durable-agents/core";
import { ProgressRenderer } from "../src/progress-renderer.js";

let seq = 0;
const at = (ms: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms)).toISOString();
const ev = (ms: number, body: Omit<SessionEvent, "seq" | "at">) => ({ seq: ++seq, at: at(ms), ...body }) as SessionEvent;

function render(events: SessionEvent[], live: boolean): string {
  let out = "";
  const renderer = new ProgressRenderer({ write: (text) => (out += text) }, { live, color: false });
  for (const event of events) renderer.handle(event);
  renderer.settle();
  return out;
}

const turnId = "t1";
const lookUpTurn: SessionEvent[] = [
  ev(0, { type: "turn_started", data: { turnId, text: "look up order 1001" } }),
  ev(1, { type: "step_started", data: { turnId, step: "RunModel", attempt: 1 } }),
  ev(5, { type: "tool_calls_requested", data: { turnId, calls: [{ toolCallId: "c1", name: "look_up_order", arguments: '{"order_id":"1001"}' }] } }),
  ev(6, { type: "step_completed", data: { turnId, step: "RunModel", status: "completed" } }),
  ev(7, { type: "step_started", data: { turnId, step: "CallTool", toolCallId: "c1", attempt: 1 } }),
  ev(9, { type: "tool_call_completed", data: { turnId, toolCallId: "c1", name: "look_up_order", status: "succeeded", text: "Order 1001: shipped" } }),
  ev(9, { type: "step_completed", data: { turnId, step: "CallTool", toolCallId: "c1", status: "completed" } }),
  ev(10, { type: "step_started", data: { turnId, step: "RunModel", attempt: 2 } }),
  ev(20, { type: "text_delta", data: { turnId, text: "Order 1001 " } }),
  ev(30, { type: "text_delta", data: { turnId, text: "has shipped." } }),
  ev(31, { type: "step_completed", data: { turnId, step: "RunModel", status: "failed", detail: "model timed out" } }),
];

describe("ProgressRenderer", () => {
  it("writes one line per step, a running line only when text comes in between", () => {
    expect(render(lookUpTurn, false).split("\n")).toEqual([
      "› look up order 1001",
      '  ✓ RunModel  → look_up_order {"order_id":"1001"}  (5 ms)',
      '  ✓ CallTool look_up_order {"order_id":"1001"}  → succeeded: Order 1001: shipped  (2 ms)',
      "  ▸ RunModel (attempt 2)",
      "    Order 1001 has shipped.",
      "  ✗ RunModel (attempt 2)  model timed out  (21 ms)",
      "",
    ]);
  });

  it("rewrites a running step's line in place on a TTY", () => {
    const out = render(lookUpTurn.slice(0, 4), true);
    expect(out).toBe(
      "› look up order 1001\n" + '  ▸ RunModel\r\x1b[2K  ✓ RunModel  → look_up_order {"order_id":"1001"}  (5 ms)\n',
    );
  });
});
