/**
 * Reconciliation over HTTP: `cancel_order` declares `reconcile` (it asks the desk whether the order is
 * cancelled). A cancellation whose answer was lost is found done and never runs again; one that
 * failed before the desk applied it is offered for approval again; one the check cannot tell about
 * raises an attention interrupt, which the attention routes resolve. Real HTTP, a real desk (with
 * faults in front of it), core's worker and client.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SessionEvent, SessionSnapshot } from "@durable-agents/core";
import { faultyDesk, type DeskFaults } from "./support/faulty-desk.js";
import { startHarness, type Harness } from "./support/order-support-harness.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(faults: DeskFaults) {
  let desk: ReturnType<typeof faultyDesk> | undefined;
  harness = await startHarness({
    wrapDesk: (real) => {
      desk = faultyDesk(real, faults);
      return desk;
    },
  });
  const session = await harness.startSession("cancel order 1002");
  const waiting = await harness.waitFor(session.id, session.token, (s) => s.status === "awaiting_approval");
  const approve = await harness.request(
    "POST",
    `/sessions/${session.id}/interrupts/${waiting.pendingInterrupts[0]!.interruptId}/approve`,
    { token: session.token },
  );
  expect(approve.status).toBe(202);
  return { h: harness, ...session, desk: desk!, realDesk: harness.runtime.desk };
}

const events = async (h: Harness, id: string, token: string) =>
  (await (await h.request("GET", `/sessions/${id}/snapshot`, { token })).json()) as SessionSnapshot;

async function eventLog(h: Harness, id: string): Promise<SessionEvent[]> {
  return h.runtime.client.readEvents(id);
}

const attentionOf = (s: SessionSnapshot) => s.pendingInterrupts.find((i) => i.kind === "attention");

describe("reconciling cancel_order over HTTP", () => {
  it("finds a cancellation whose answer was lost done, and never runs it again", async () => {
    const { h, id, token, desk, realDesk } = await start({ loseCancelAnswer: true });
    const done = await h.waitFor(id, token, (s) => s.status === "idle" && s.turn?.phase === "completed");
    const call = done.turn!.calls[0]!;
    expect(call.status).toBe("succeeded");
    expect(call.reconciled).toEqual({ by: "tool", found: "done" });
    expect(call.output).toBe("Order 1002 is now cancelled (reason: requested by the customer).");
    expect(done.pendingInterrupts).toEqual([]);
    expect(desk.cancelAttempts).toBe(1);
    expect(realDesk.cancelCalls()).toHaveLength(1);
    const types = (await eventLog(h, id)).map((e) => e.type);
    expect(types).toContain("call_reconciled");
    expect(types).not.toContain("attention_required");
    expect(done.messages.at(-1)?.text).toBe(
      "I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
    );
  });

  it("offers a cancellation that failed before the desk applied it for approval again, and runs it once more", async () => {
    const { h, id, token, desk, realDesk } = await start({ failFirstCancel: true });
    const again = await h.waitFor(
      id,
      token,
      (s) => s.status === "awaiting_approval" && s.turn!.calls[0]!.attempts === 1,
    );
    const interrupt = again.pendingInterrupts[0]!;
    expect(interrupt.kind).toBe("approval");
    expect(interrupt.reason).toMatch(/did not take effect/);
    expect(realDesk.cancelCalls()).toHaveLength(0);
    const approve = await h.request("POST", `/sessions/${id}/interrupts/${interrupt.interruptId}/approve`, { token });
    expect(approve.status).toBe(202);
    const done = await h.waitFor(id, token, (s) => s.status === "idle" && s.turn?.phase === "completed");
    expect(done.turn!.calls[0]!.status).toBe("succeeded");
    expect(desk.cancelAttempts).toBe(2);
    expect(realDesk.cancellations()).toEqual([{ orderId: "1002", reason: "requested by the customer" }]);
  });

  it("raises an attention interrupt the check cannot settle; mark-done tells the model, and every refusal changes nothing", async () => {
    const { h, id, token, desk } = await start({ loseCancelAnswer: true, readsDown: true });
    const unknown = await h.waitFor(id, token, (s) => s.status === "idle" && attentionOf(s) !== undefined);
    const attention = attentionOf(unknown)!;
    expect(unknown.turn!.calls[0]!.status).toBe("outcome_unknown");
    expect(attention).toMatchObject({ toolName: "cancel_order", effect: "non_idempotent_write" });
    expect(attention.reason).toMatch(/its check failed 3 time\(s\).*cannot be read/);
    const path = (route: string, interruptId = attention.interruptId) =>
      `/sessions/${id}/interrupts/${interruptId}/${route}`;
    const refusals: [string, { body?: unknown; token?: string }, number, string][] = [
      [path("mark-done"), { token }, 400, "invalid_input"],
      [path("mark-done"), { token, body: { output: "  " } }, 400, "invalid_input"],
      [path("mark-not-done"), { token, body: { output: "it did" } }, 400, "invalid_input"],
      [path("mark-done"), { token, body: { output: "x".repeat(9000) } }, 400, "input_too_large"],
      [path("approve"), { token }, 409, "session_state"],
      [path("reject"), { token, body: { message: "no" } }, 409, "session_state"],
      [path("mark-done", "turn-1-attention-nope"), { token, body: { output: "done" } }, 404, "interrupt_not_found"],
      [path("leave-unknown"), {}, 401, "unauthorized"],
    ];
    for (const [route, options, status, code] of refusals) {
      const response = await h.request("POST", route, options);
      expect({ route, status: response.status }).toEqual({ route, status });
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe(code);
    }
    expect(await events(h, id, token)).toEqual(unknown);

    const marked = await h.request("POST", path("mark-done"), {
      token,
      body: { output: "the desk's log shows order 1002 cancelled" },
    });
    expect(marked.status).toBe(202);
    expect(await marked.json()).toMatchObject({ accepted: true });
    const again = await h.request("POST", path("mark-done"), { token, body: { output: "twice" } });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { error: { code: string } }).error.code).toBe("duplicate_resolution");
    const done = await h.waitFor(id, token, (s) => s.turnCount === 2 && s.status === "idle");
    expect(done.pendingInterrupts).toEqual([]);
    expect(done.turn?.followUp?.interruptId).toBe(attention.interruptId);
    expect(done.messages.at(-1)?.text).toMatch(
      /^Update: A person checked the tool call cancel_order\(.*\) of turn-1, whose outcome was unknown: it took effect\. Its result: the desk's log shows order 1002 cancelled$/,
    );
    expect(desk.cancelAttempts).toBe(1);
  });

  it("mark-not-done offers the cancellation for approval again in a follow-up turn; it runs once more after it", async () => {
    const { h, id, token, desk, realDesk } = await start({ failFirstCancel: true, readsDown: true });
    const unknown = await h.waitFor(id, token, (s) => s.status === "idle" && attentionOf(s) !== undefined);
    expect(realDesk.cancelCalls()).toHaveLength(0);
    const marked = await h.request(
      "POST",
      `/sessions/${id}/interrupts/${attentionOf(unknown)!.interruptId}/mark-not-done`,
      {
        token,
      },
    );
    expect(marked.status).toBe(202);
    const waiting = await h.waitFor(id, token, (s) => s.turnCount === 2 && s.status === "awaiting_approval");
    const approval = waiting.pendingInterrupts[0]!;
    expect(approval).toMatchObject({ kind: "approval", turnId: "turn-2", toolName: "cancel_order" });
    expect(desk.cancelAttempts).toBe(1);
    await h.request("POST", `/sessions/${id}/interrupts/${approval.interruptId}/approve`, { token });
    const done = await h.waitFor(id, token, (s) => s.turnCount === 2 && s.status === "idle");
    expect(desk.cancelAttempts).toBe(2);
    expect(realDesk.cancellations()).toHaveLength(1);
    expect(done.turn!.calls[0]).toMatchObject({ status: "succeeded", response: 0 });
    expect(done.messages.at(-1)?.text).toContain("The tool call cancel_order ran again: succeeded");
  });

  it("leave-unknown closes the attention interrupt and starts nothing", async () => {
    const { h, id, token, desk } = await start({ loseCancelAnswer: true, readsDown: true });
    const unknown = await h.waitFor(id, token, (s) => s.status === "idle" && attentionOf(s) !== undefined);
    const left = await h.request(
      "POST",
      `/sessions/${id}/interrupts/${attentionOf(unknown)!.interruptId}/leave-unknown`,
      {
        token,
      },
    );
    expect(left.status).toBe(202);
    const done = await h.waitFor(id, token, (s) => s.pendingInterrupts.length === 0);
    expect(done.turnCount).toBe(1);
    expect(done.turn!.calls[0]!.reconciled).toEqual({ by: "person", found: "unknown" });
    expect(desk.cancelAttempts).toBe(1);
  });
});
