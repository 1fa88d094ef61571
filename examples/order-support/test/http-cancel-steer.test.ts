/**
 * Cancelling and steering a running turn over HTTP: a real server, worker and store (the harness),
 * requests over fetch, and what the worker then did, read back from the event stream and the
 * snapshot. The refusals of both routes (tokens, bodies, unknown sessions, an idle session's
 * cancel) are in http-refusals.test.ts with those of the other routes.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { SessionEvent } from "@durable-agents/core";
import { startHarness, type Harness, type HarnessOptions } from "./support/order-support-harness.js";
import { SseConnection } from "./support/sse-reader.js";

let harness: Harness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

async function start(options: HarnessOptions = {}): Promise<Harness> {
  harness = await startHarness(options);
  return harness;
}

type EventOf<T extends SessionEvent["type"]> = Extract<SessionEvent, { type: T }>;

/** The session's event stream over HTTP, read up to (and with) the first event that `until` accepts. */
class EventReader {
  readonly seen: SessionEvent[] = [];
  private constructor(private readonly connection: SseConnection) {}

  static async open(h: Harness, id: string, token: string): Promise<EventReader> {
    return new EventReader(await SseConnection.open(`${h.url}/sessions/${id}/events`, { "x-session-token": token }));
  }

  async until<T extends SessionEvent["type"]>(type: T, match: (event: EventOf<T>) => boolean = () => true) {
    for (;;) {
      const message = await this.connection.next();
      if (message === null) throw new Error(`the event stream ended before a ${type} event`);
      const event = JSON.parse(message.data) as SessionEvent;
      this.seen.push(event);
      if (event.type === type && match(event as EventOf<T>)) return event as EventOf<T>;
    }
  }

  close(): void {
    this.connection.close();
  }
}

const idleWithAnswer = (s: { status: string; messages: readonly { role: string }[] }) =>
  s.status === "idle" && s.messages.at(-1)?.role === "assistant";

describe("POST /sessions/:id/cancel", () => {
  it("cancels a turn whose look-up is in flight: 202 at once, the look-up stops on its signal, the receipt follows on the stream", async () => {
    // Look-ups take ten minutes unless they are stopped: the turn ends early only if the tool stops.
    const h = await start({ lookUpDelayMs: 600_000 });
    const { id, token } = await h.startSession("look up order 1001");
    const events = await EventReader.open(h, id, token);
    const lookUp = await events.until("step_started", (e) => e.data.step === "CallTool");

    const cancel = () =>
      h.request("POST", `/sessions/${id}/cancel`, {
        token,
        body: { reason: "I found the parcel", request_id: "cancel-1" },
      });
    const accepted = await cancel();
    expect(accepted.status).toBe(202);
    const first = (await accepted.json()) as { seq: number };
    expect(first).toEqual({ accepted: true, seq: expect.any(Number), duplicate: false, turn_id: "turn-1" });
    // The same request again, before the worker applied it: the first one's answer.
    const again = await cancel();
    expect(again.status).toBe(202);
    expect(await again.json()).toEqual({ accepted: true, seq: first.seq, duplicate: true, turn_id: "turn-1" });

    const cancelling = await events.until("turn_cancelling");
    expect(cancelling.data).toMatchObject({
      turnId: "turn-1",
      reason: "I found the parcel",
      requestId: "cancel-1",
      running: [lookUp.data.toolCallId],
    });
    const receipt = await events.until("turn_cancelled");
    events.close();
    expect(receipt.data).toEqual({
      turnId: "turn-1",
      reason: "I found the parcel",
      requestId: "cancel-1",
      modelCallAborted: false,
      calls: [
        {
          toolCallId: lookUp.data.toolCallId,
          name: "look_up_order",
          effect: "read",
          status: "cancelled",
          attempts: 1,
        },
      ],
    });
    // The look-up stopped on its abort signal: the turn ended before the grace period would have ended it.
    expect(Date.parse(receipt.at)).toBeLessThan(Date.parse(cancelling.data.graceUntil));
    const done = await h.waitFor(id, token, (s) => s.status === "idle");
    expect(done.turn?.phase).toBe("cancelled");
    expect(done.turn?.calls[0]?.message).toContain("the look-up of order 1001 stopped before the desk answered");
    expect(events.seen.some((e) => e.type === "turn_completed")).toBe(false);

    // Once the turn ended: the same request_id is still the first cancellation, and a new one is refused.
    const late = await cancel();
    expect(late.status).toBe(202);
    expect(await late.json()).toEqual({ accepted: true, seq: first.seq, duplicate: true, turn_id: "turn-1" });
    const other = await h.request("POST", `/sessions/${id}/cancel`, { token, body: { request_id: "cancel-2" } });
    expect(other.status).toBe(409);
    expect(await other.json()).toMatchObject({ error: { code: "session_state" } });
    const log = await h.runtime.client.readEvents(id, { limit: 10_000 });
    expect(log.filter((e) => e.type === "turn_cancelled")).toHaveLength(1);
    expect(log.filter((e) => e.type === "cancel_skipped")).toHaveLength(0);
  });

  it("cancels a turn waiting for approval with an empty body: the call never runs, and approving it is refused", async () => {
    const h = await start();
    const { id, token } = await h.startSession("cancel order 1002");
    const waiting = await h.waitFor(id, token, (s) => s.status === "awaiting_approval");
    const interruptId = waiting.pendingInterrupts[0]!.interruptId;

    const accepted = await h.request("POST", `/sessions/${id}/cancel`, { token });
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toMatchObject({ accepted: true, duplicate: false, turn_id: "turn-1" });
    const done = await h.waitFor(id, token, (s) => s.status === "idle" && s.turn?.phase === "cancelled");
    expect(done.pendingInterrupts).toEqual([]);

    const log = await h.runtime.client.readEvents(id, { limit: 10_000 });
    const receipt = log.find((e): e is EventOf<"turn_cancelled"> => e.type === "turn_cancelled");
    expect(receipt?.data).toEqual({
      turnId: "turn-1",
      reason: null,
      requestId: null,
      modelCallAborted: false,
      calls: [
        {
          toolCallId: expect.any(String),
          name: "cancel_order",
          effect: "non_idempotent_write",
          status: "cancelled",
          attempts: 0,
        },
      ],
    });
    // Nothing was running, so nothing was waited for.
    expect(log.some((e) => e.type === "turn_cancelling")).toBe(false);

    const approve = await h.request("POST", `/sessions/${id}/interrupts/${interruptId}/approve`, { token });
    expect(approve.status).toBe(409);
    expect(await approve.json()).toMatchObject({ error: { code: "session_state" } });
    expect(h.runtime.desk.cancellations()).toEqual([]);
    expect(h.runtime.desk.order("1002")?.status).toBe("processing");

    // The session goes on; the next turn's model is told what became of the cancelled one.
    const next = await h.request("POST", `/sessions/${id}/messages`, { token, body: { text: "look up order 1002" } });
    expect(next.status).toBe(202);
    const answered = await h.waitFor(id, token, (s) => s.turnCount === 2 && idleWithAnswer(s));
    expect(answered.messages.at(-1)?.text).toContain("I looked up order 1002: Order 1002 for Grace");
    expect(answered.messages.some((m) => m.role === "note" && m.text.startsWith("[previous turn cancelled]"))).toBe(
      true,
    );
  });
});

describe("POST /sessions/:id/steer", () => {
  it.each(["openai-agents", "ai-sdk"] as const)(
    "joins a turn waiting for approval: message_steered before the next model step, and the answer serves it (%s)",
    async (framework) => {
      const h = await start({ framework });
      const { id, token } = await h.startSession("cancel order 1002");
      const waiting = await h.waitFor(id, token, (s) => s.status === "awaiting_approval");

      const steer = () =>
        h.request("POST", `/sessions/${id}/steer`, {
          token,
          body: { text: "also look up order 1001", message_id: "steer-1" },
        });
      const accepted = await steer();
      expect(accepted.status).toBe(202);
      const first = (await accepted.json()) as { seq: number };
      expect(first).toEqual({ accepted: true, seq: expect.any(Number), duplicate: false });
      expect(await (await steer()).json()).toEqual({ accepted: true, seq: first.seq, duplicate: true });

      const events = await EventReader.open(h, id, token);
      const approved = await h.request(
        "POST",
        `/sessions/${id}/interrupts/${waiting.pendingInterrupts[0]!.interruptId}/approve`,
        { token },
      );
      expect(approved.status).toBe(202);
      const steered = await events.until("message_steered");
      expect(steered.data).toEqual({ turnId: "turn-1", text: "also look up order 1001", modelStep: 2 });
      const completed = await events.until("turn_completed");
      events.close();

      // The steered message asked for a look-up: the model asked for it next, and answered both.
      const lookUps = events.seen.filter(
        (e): e is EventOf<"tool_calls_requested"> =>
          e.type === "tool_calls_requested" && e.data.calls.some((call) => call.name === "look_up_order"),
      );
      expect(lookUps).toHaveLength(1);
      expect(JSON.parse(lookUps[0]!.data.calls[0]!.arguments)).toEqual({ order_id: "1001" });
      expect(events.seen.indexOf(lookUps[0]!)).toBeGreaterThan(events.seen.indexOf(steered));
      expect(completed.data.text).toBe(
        "I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).\n" +
          "I looked up order 1001: Order 1001 for Ada: 1 x mechanical keyboard (KB-87), 2 x USB-C cable (CB-02). Status: shipped.",
      );
      const done = await h.waitFor(id, token, idleWithAnswer);
      // One turn: the steered message joined it instead of starting another.
      expect(done.turnCount).toBe(1);
      expect(done.messages.filter((m) => m.role === "user").map((m) => m.text)).toEqual([
        "cancel order 1002",
        "also look up order 1001",
      ]);
      expect(h.runtime.desk.cancellations()).toEqual([{ orderId: "1002", reason: "requested by the customer" }]);
    },
  );

  it.each(["openai-agents", "ai-sdk"] as const)(
    "starts a turn on an idle session, as a message does (%s)",
    async (framework) => {
      const h = await start({ framework });
      const { id, token } = await h.startSession("look up order 1001");
      await h.waitFor(id, token, idleWithAnswer);

      const steered = await h.request("POST", `/sessions/${id}/steer`, { token, body: { text: "look up order 1002" } });
      expect(steered.status).toBe(202);
      expect(await steered.json()).toMatchObject({ accepted: true, duplicate: false });
      const done = await h.waitFor(id, token, (s) => s.turnCount === 2 && idleWithAnswer(s));
      expect(done.messages.at(-1)?.text).toBe(
        "I looked up order 1002: Order 1002 for Grace: 1 x 27-inch monitor (MN-27). Status: processing.",
      );
      const log = await h.runtime.client.readEvents(id, { limit: 10_000 });
      expect(log.filter((e) => e.type === "turn_started").map((e) => e.data.text)).toEqual([
        "look up order 1001",
        "look up order 1002",
      ]);
      expect(log.some((e) => e.type === "message_steered")).toBe(false);
    },
  );
});
