/**
 * The order support agent on the Vercel AI SDK, served by the same HTTP server factory: a whole
 * session over real HTTP (look up, cancel, approve, answer), a refusal by the desk and a rejection.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionEvent } from "@durable-agents/core";
import { startHarness, type Harness } from "./support/order-support-harness.js";
import { SseConnection } from "./support/sse-reader.js";

// Each test gets a server, worker and order desk of its own: no test sees what another one did
// (the desk's cancellations, above all).
let harness: Harness;
beforeEach(async () => {
  harness = await startHarness({ framework: "ai-sdk" });
});
afterEach(async () => {
  await harness?.close();
});

describe("an order support session on the AI SDK over HTTP", () => {
  it("looks up, cancels after approval and answers, with the same steps as the Agents SDK version", async () => {
    const { id, token } = await harness.startSession("look up order 1001");
    const lookedUp = await harness.waitFor(
      id,
      token,
      (s) => s.status === "idle" && s.messages.at(-1)?.role === "assistant",
    );
    expect(lookedUp.messages.at(-1)).toEqual({
      role: "assistant",
      text: "I looked up order 1001: Order 1001 for Ada: 1 x mechanical keyboard (KB-87), 2 x USB-C cable (CB-02). Status: shipped.",
    });
    expect(lookedUp.turn?.calls.map((call) => [call.name, call.status])).toEqual([["look_up_order", "succeeded"]]);

    const sent = await harness.request("POST", `/sessions/${id}/messages`, {
      token,
      body: { text: "cancel order 1002" },
    });
    expect(sent.status).toBe(202);
    const waiting = await harness.waitFor(id, token, (s) => s.status === "awaiting_approval");
    const interrupt = waiting.pendingInterrupts[0]!;
    expect(waiting.pendingInterrupts).toHaveLength(1);
    expect(interrupt.toolName).toBe("cancel_order");
    expect(JSON.parse(interrupt.arguments)).toEqual({ order_id: "1002", reason: "requested by the customer" });
    expect(harness.runtime.desk.cancellations()).toEqual([]);

    const approved = await harness.request("POST", `/sessions/${id}/interrupts/${interrupt.interruptId}/approve`, {
      token,
    });
    expect(approved.status).toBe(202);
    const done = await harness.waitFor(
      id,
      token,
      (s) => s.status === "idle" && s.turnCount === 2 && s.messages.at(-1)?.role === "assistant",
    );
    expect(done.messages.at(-1)).toEqual({
      role: "assistant",
      text: "I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
    });
    expect(harness.runtime.desk.cancellations()).toEqual([{ orderId: "1002", reason: "requested by the customer" }]);

    // A second approval of the same interrupt is refused and runs nothing.
    const again = await harness.request("POST", `/sessions/${id}/interrupts/${interrupt.interruptId}/approve`, {
      token,
    });
    expect(again.status).toBe(409);
    expect(harness.runtime.desk.cancellations()).toHaveLength(1);

    // The whole event log over SSE: the cancel turn's steps in order, and its answer streamed in chunks.
    const log = await harness.runtime.client.readEvents(id, { after: 0, limit: 10_000 });
    const stream = await SseConnection.open(`${harness.url}/sessions/${id}/events`, { "x-session-token": token });
    const seen: SessionEvent[] = [];
    while (seen.length < log.length) seen.push(JSON.parse((await stream.next())!.data) as SessionEvent);
    stream.close();
    expect(seen).toEqual(log);
    const cancelTurnId = seen.filter((event) => event.type === "turn_started").at(-1)!.data.turnId;
    const steps = seen.flatMap((event) =>
      event.type === "step_completed" && event.data.turnId === cancelTurnId ? [event.data.step] : [],
    );
    expect(steps).toEqual(["RunModel", "AwaitToolApproval", "CallSingleAttemptTool", "ResumeTurn", "RunModel"]);
    const deltas = seen.flatMap((event) =>
      event.type === "text_delta" && event.data.turnId === cancelTurnId ? [event.data.text] : [],
    );
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe(done.messages.at(-1)!.text);
  });

  it("records a shipped order's cancellation as failed (the desk's ToolExecutionError), and the model reads why", async () => {
    const { id, token } = await harness.startSession("cancel order 1001");
    const waiting = await harness.waitFor(id, token, (s) => s.status === "awaiting_approval");
    const interruptId = waiting.pendingInterrupts[0]!.interruptId;
    expect((await harness.request("POST", `/sessions/${id}/interrupts/${interruptId}/approve`, { token })).status).toBe(
      202,
    );
    const done = await harness.waitFor(
      id,
      token,
      (s) => s.status === "idle" && s.messages.at(-1)?.role === "assistant",
    );
    expect(done.messages.at(-1)?.text).toBe(
      "I asked to cancel order 1001: The tool call failed: order 1001 has already shipped and can no longer be cancelled",
    );
    expect(done.turn?.calls.map((call) => call.status)).toEqual(["failed"]);
    expect(harness.runtime.desk.order("1001")?.status).toBe("shipped");
  });

  it("passes a rejection's message to the model, and the call never runs", async () => {
    const { id, token } = await harness.startSession("cancel order 1002 because I ordered the wrong size");
    const waiting = await harness.waitFor(id, token, (s) => s.status === "awaiting_approval");
    expect(JSON.parse(waiting.pendingInterrupts[0]!.arguments)).toEqual({
      order_id: "1002",
      reason: "I ordered the wrong size",
    });
    const before = harness.runtime.desk.cancellations().length;
    const rejected = await harness.request(
      "POST",
      `/sessions/${id}/interrupts/${waiting.pendingInterrupts[0]!.interruptId}/reject`,
      {
        token,
        body: { message: "Keep the order, I will exchange it instead." },
      },
    );
    expect(rejected.status).toBe(202);
    const done = await harness.waitFor(
      id,
      token,
      (s) => s.status === "idle" && s.messages.at(-1)?.role === "assistant",
    );
    expect(done.messages.at(-1)?.text).toBe(
      "I asked to cancel order 1002: Keep the order, I will exchange it instead.",
    );
    expect(done.turn?.calls.map((call) => call.status)).toEqual(["rejected"]);
    expect(harness.runtime.desk.cancellations()).toHaveLength(before);
  });
});
