import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionEvent } from "@durable-agents/core";
import { startHarness, type Harness } from "./support/order-support-harness.js";
import { SseConnection, type SseMessage } from "./support/sse-reader.js";

// Each test gets a server, worker and order desk of its own: no test sees what another one did
// (the desk's cancellations, above all).
let harness: Harness;
beforeEach(async () => {
  harness = await startHarness();
});
afterEach(async () => {
  await harness?.close();
});

/** Checks that an SSE message carries one session event, with its seq as the id and its type as the name. */
function eventOf(message: SseMessage | null): SessionEvent {
  expect(message).not.toBeNull();
  const event = JSON.parse(message!.data) as SessionEvent;
  expect(message!.id).toBe(String(event.seq));
  expect(message!.event).toBe(event.type);
  return event;
}

describe("an order support session over HTTP", () => {
  it("looks up, cancels after approval and answers; the event stream resumes from Last-Event-ID without gaps or repeats", async () => {
    const { id, token } = await harness.startSession("look up order 1001");
    expect(id).toMatch(/^order-support-[0-9a-f-]{36}$/);
    expect(token).toBe(harness.tokens.sign(id));
    const eventsUrl = `${harness.url}/sessions/${id}/events`;

    // First connection: read until the look-up's tool step is done, then drop it mid-turn.
    const seen: SessionEvent[] = [];
    const first = await SseConnection.open(eventsUrl, { "x-session-token": token });
    for (;;) {
      const event = eventOf(await first.next());
      seen.push(event);
      if (event.type === "step_completed" && event.data.step === "CallTool") break;
    }
    first.close();
    const lastSeenBeforeDrop = seen.at(-1)!.seq;

    // While nobody listens: the look-up turn ends, the cancel turn starts and waits for approval.
    const lookedUp = await harness.waitFor(
      id,
      token,
      (s) => s.status === "idle" && s.messages.some((m) => m.role === "assistant" && m.text !== ""),
    );
    expect(lookedUp.messages.at(-1)).toMatchObject({
      role: "assistant",
      text: expect.stringContaining("I looked up order 1001: Order 1001 for Ada"),
    });

    const sent = await harness.request("POST", `/sessions/${id}/messages`, {
      token,
      body: { text: "cancel order 1002" },
    });
    expect(sent.status).toBe(202);
    expect(await sent.json()).toMatchObject({ accepted: true, duplicate: false });

    const waiting = await harness.waitFor(id, token, (s) => s.status === "awaiting_approval");
    expect(waiting.pendingInterrupts).toHaveLength(1);
    const interrupt = waiting.pendingInterrupts[0]!;
    expect(interrupt.toolName).toBe("cancel_order");
    expect(JSON.parse(interrupt.arguments)).toMatchObject({ order_id: "1002" });
    expect(harness.runtime.desk.cancellations()).toEqual([]);

    const approved = await harness.request("POST", `/sessions/${id}/interrupts/${interrupt.interruptId}/approve`, {
      token,
    });
    expect(approved.status).toBe(202);
    expect(await approved.json()).toMatchObject({ accepted: true });

    // Second connection resumes after the last event seen, and follows live until the cancel turn ends.
    const second = await SseConnection.open(eventsUrl, {
      "x-session-token": token,
      "last-event-id": String(lastSeenBeforeDrop),
    });
    let turnsCompleted = seen.filter((event) => event.type === "turn_completed").length;
    while (turnsCompleted < 2) {
      const event = eventOf(await second.next());
      seen.push(event);
      if (event.type === "turn_completed") turnsCompleted += 1;
    }
    second.close();

    // Nothing lost, nothing repeated: the events seen are exactly the session's event log.
    const log = await harness.runtime.client.readEvents(id, { after: 0, limit: 10_000 });
    expect(seen.map((event) => event.seq)).toEqual(log.map((_, index) => index + 1));
    expect(seen).toEqual(log);
    expect(seen.some((event) => event.seq > lastSeenBeforeDrop && event.type === "interrupt_created")).toBe(true);

    // The cancel turn's steps, in order.
    const cancelTurnId = seen.filter((event) => event.type === "turn_started").at(-1)!.data.turnId;
    const steps = seen.flatMap((event) =>
      event.type === "step_completed" && event.data.turnId === cancelTurnId ? [event.data.step] : [],
    );
    expect(steps).toEqual(["RunModel", "AwaitToolApproval", "CallSingleAttemptTool", "ResumeTurn", "RunModel"]);
    expect(seen.some((event) => event.type === "text_delta" && event.data.turnId === cancelTurnId)).toBe(true);

    // The answer, and exactly one cancellation at the desk.
    const done = await harness.waitFor(id, token, (s) => s.status === "idle");
    expect(done.messages.at(-1)).toEqual({
      role: "assistant",
      text: "I asked to cancel order 1002: Order 1002 is now cancelled (reason: requested by the customer).",
    });
    expect(done.pendingInterrupts).toEqual([]);
    expect(harness.runtime.desk.cancellations()).toEqual([{ orderId: "1002", reason: "requested by the customer" }]);

    // An EventSource-style reader (token in the query, no Last-Event-ID) gets the whole log again.
    const replay = await SseConnection.open(`${eventsUrl}?token=${encodeURIComponent(token)}`);
    const replayed: SessionEvent[] = [];
    while (replayed.length < log.length) replayed.push(eventOf(await replay.next()));
    replay.close();
    expect(replayed).toEqual(log);

    // ?after= starts after that seq, as Last-Event-ID does.
    const tail = await SseConnection.open(`${eventsUrl}?after=${log.length - 2}`, { "x-session-token": token });
    expect([eventOf(await tail.next()), eventOf(await tail.next())]).toEqual(log.slice(-2));
    tail.close();
  });

  it("tells the model when the desk refuses, and cancels nothing", async () => {
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
    const interruptId = waiting.pendingInterrupts[0]!.interruptId;
    const before = harness.runtime.desk.cancellations().length;
    const rejected = await harness.request("POST", `/sessions/${id}/interrupts/${interruptId}/reject`, {
      token,
      body: { message: "Keep the order, I will exchange it instead." },
    });
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

  it("accepts a message sent twice with the same message_id once", async () => {
    const { id, token } = await harness.startSession();
    const send = () =>
      harness.request("POST", `/sessions/${id}/messages`, {
        token,
        body: { text: "look up order 1001", message_id: "msg-1" },
      });
    const first = await send();
    const second = await send();
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    const [a, b] = (await Promise.all([first.json(), second.json()])) as { seq: number; duplicate: boolean }[];
    expect(a).toMatchObject({ accepted: true, duplicate: false });
    expect(b).toEqual({ accepted: true, seq: a!.seq, duplicate: true });
    const done = await harness.waitFor(
      id,
      token,
      (s) => s.status === "idle" && s.messages.at(-1)?.role === "assistant",
    );
    expect(done.messages.filter((message) => message.role === "user")).toHaveLength(1);
    expect(done.turnCount).toBe(1);
  });
});
