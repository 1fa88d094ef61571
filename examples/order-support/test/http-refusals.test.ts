/**
 * Every refusal of the HTTP server: the status, the JSON error, and — read back through the
 * snapshot — that the session did not change.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  ConfigurationError,
  ContractViolationError,
  errorCodes,
  InvalidInputError,
  PolicyError,
  StoredStateError,
  UnknownAgentError,
  type SessionHead,
  type SessionSnapshot,
} from "@durable-agents/core";
import { newSessionHead } from "@durable-agents/core/engine";
import { httpErrorOf, statusOfCode } from "../src/http-errors.js";
import { SessionTokens } from "../src/session-tokens.js";
import { startHarness, type Harness, type RequestOptions } from "./support/order-support-harness.js";

const maxTextChars = 500;
const maxBodyBytes = 4096;

let harness: Harness;
/** A session whose first turn ended: idle, so its snapshot only changes if a request changes it. */
let idle: { id: string; token: string };
/** A session of its own that the checks send a message to after a refusal (see `movedOn`). */
let sentinel: { id: string; token: string };

beforeAll(async () => {
  harness = await startHarness({ maxTextChars, maxBodyBytes });
  idle = await harness.startSession("look up order 1001");
  await harness.waitFor(idle.id, idle.token, (s) => s.status === "idle" && s.messages.at(-1)?.role === "assistant");
  sentinel = await harness.startSession("look up order 1001");
  await harness.waitFor(
    sentinel.id,
    sentinel.token,
    (s) => s.status === "idle" && s.messages.at(-1)?.role === "assistant",
  );
});
afterAll(async () => {
  await harness?.close();
});

const snapshotOf = (id: string): Promise<SessionSnapshot> => harness.runtime.client.snapshot(id);

/** What the store holds for a session: its snapshot, and its inbox and events as written. */
const stateOf = async (id: string) => ({
  snapshot: await snapshotOf(id),
  inbox: await harness.runtime.store.readInbox(id, 0),
  events: (await harness.runtime.store.readEvents(id, 0)).length,
});

/**
 * The positive signal a "nothing moved" check waits for instead of a sleep: a message sent to the
 * sentinel session over HTTP after the refused request, answered by the worker. By then the server
 * has handled the refused request to its end and the worker has taken whatever reached the store.
 */
async function movedOn(): Promise<void> {
  const { turnCount } = await snapshotOf(sentinel.id);
  const sent = await harness.request("POST", `/sessions/${sentinel.id}/messages`, {
    token: sentinel.token,
    body: { text: "look up order 1001" },
  });
  expect(sent.status).toBe(202);
  await harness.waitFor(
    sentinel.id,
    sentinel.token,
    (s) => s.turnCount === turnCount + 1 && s.status === "idle" && s.messages.at(-1)?.role === "assistant",
  );
}

/** Sends the request, checks status and error code, and that the idle session's snapshot did not move. */
async function expectRefusal(
  method: string,
  path: string,
  options: RequestOptions,
  status: number,
  code: string,
): Promise<string> {
  const before = await stateOf(idle.id);
  const response = await harness.request(method, path, options);
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
  // Compared once the server and the worker have moved on past this request.
  await movedOn();
  expect(await stateOf(idle.id)).toEqual(before);
  return body.error.message;
}

const routes = () =>
  [
    ["POST", `/sessions/${idle.id}/messages`, { text: "look up order 1002" }],
    ["GET", `/sessions/${idle.id}/snapshot`, undefined],
    ["GET", `/sessions/${idle.id}/events`, undefined],
    ["POST", `/sessions/${idle.id}/interrupts/some-interrupt/approve`, {}],
    ["POST", `/sessions/${idle.id}/interrupts/some-interrupt/reject`, { message: "no" }],
    ["POST", `/sessions/${idle.id}/steer`, { text: "look up order 1002" }],
    ["POST", `/sessions/${idle.id}/cancel`, { reason: "changed my mind", request_id: "cancel-1" }],
  ] as const;

describe("authentication", () => {
  it("answers 401 on every session route without a token", async () => {
    for (const [method, path, body] of routes()) {
      await expectRefusal(method, path, { body }, 401, "unauthorized");
    }
  });

  it("answers 403 on every session route with a wrong token", async () => {
    const otherKeysToken = new SessionTokens("another key").sign(idle.id);
    const otherSessionsToken = harness.tokens.sign(`${idle.id}x`);
    for (const [method, path, body] of routes()) {
      await expectRefusal(method, path, { body, token: otherKeysToken }, 403, "forbidden");
      await expectRefusal(method, path, { body, token: otherSessionsToken }, 403, "forbidden");
    }
    // The query token of an EventSource is checked the same way.
    await expectRefusal("GET", `/sessions/${idle.id}/events?token=${otherKeysToken}`, {}, 403, "forbidden");
  });

  it("accepts the token in the query as well as in the header", async () => {
    const response = await harness.request(
      "GET",
      `/sessions/${idle.id}/snapshot?token=${encodeURIComponent(idle.token)}`,
    );
    expect(response.status).toBe(200);
    expect(((await response.json()) as SessionSnapshot).sessionId).toBe(idle.id);
  });
});

describe("bad requests", () => {
  const messages = () => `/sessions/${idle.id}/messages`;

  it("answers 400 for malformed JSON, a body that is not an object, and a missing or mistyped text", async () => {
    const token = idle.token;
    expect(
      await expectRefusal("POST", messages(), { token, body: '{"text": "cancel order 1002"' }, 400, "invalid_input"),
    ).toMatch(/JSON/);
    await expectRefusal("POST", messages(), { token, body: '["cancel order 1002"]' }, 400, "invalid_input");
    await expectRefusal("POST", messages(), { token, body: "" }, 400, "invalid_input");
    expect(await expectRefusal("POST", messages(), { token, body: {} }, 400, "invalid_input")).toMatch(
      /"text" is required/,
    );
    await expectRefusal("POST", messages(), { token, body: { message: "cancel order 1002" } }, 400, "invalid_input");
    await expectRefusal("POST", messages(), { token, body: { text: 1002 } }, 400, "invalid_input");
    await expectRefusal("POST", messages(), { token, body: { text: "   " } }, 400, "invalid_input");
    await expectRefusal(
      "POST",
      messages(),
      { token, body: { text: "cancel order 1002", message_id: "not a valid id!" } },
      400,
      "invalid_input",
    );
  });

  it("answers 400 for an oversize text or body", async () => {
    const token = idle.token;
    await expectRefusal(
      "POST",
      messages(),
      { token, body: { text: "x".repeat(maxTextChars + 1) } },
      400,
      "input_too_large",
    );
    // Within the text limit, but the body is over the byte limit.
    await expectRefusal(
      "POST",
      messages(),
      { token, body: { text: "cancel order 1002", pad: "y".repeat(maxBodyBytes) } },
      400,
      "input_too_large",
    );
    const reject = `/sessions/${idle.id}/interrupts/any/reject`;
    await expectRefusal(
      "POST",
      reject,
      { token, body: { message: "z".repeat(maxTextChars + 1) } },
      400,
      "input_too_large",
    );
  });

  it("answers 400 for a malformed steer: no JSON object, a missing or mistyped text, a bad message_id", async () => {
    const token = idle.token;
    const steer = `/sessions/${idle.id}/steer`;
    expect(await expectRefusal("POST", steer, { token, body: '{"text": "hurry' }, 400, "invalid_input")).toMatch(
      /JSON/,
    );
    await expectRefusal("POST", steer, { token, body: "" }, 400, "invalid_input");
    await expectRefusal("POST", steer, { token, body: '"look up order 1002"' }, 400, "invalid_input");
    expect(await expectRefusal("POST", steer, { token, body: {} }, 400, "invalid_input")).toMatch(/"text" is required/);
    await expectRefusal("POST", steer, { token, body: { text: ["hurry"] } }, 400, "invalid_input");
    await expectRefusal("POST", steer, { token, body: { text: "" } }, 400, "invalid_input");
    await expectRefusal("POST", steer, { token, body: { text: "x".repeat(maxTextChars + 1) } }, 400, "input_too_large");
    await expectRefusal(
      "POST",
      steer,
      { token, body: { text: "hurry", pad: "y".repeat(maxBodyBytes) } },
      400,
      "input_too_large",
    );
    await expectRefusal(
      "POST",
      steer,
      { token, body: { text: "hurry", message_id: "no spaces" } },
      400,
      "invalid_input",
    );
    // The client library's spelling is not silently ignored.
    expect(
      await expectRefusal("POST", steer, { token, body: { text: "hurry", messageId: "m-1" } }, 400, "invalid_input"),
    ).toBe('unknown field "messageId": this API calls it "message_id"');
  });

  it("answers 400 for a malformed cancel before it looks at the session: bad JSON, a mistyped or oversize reason, a bad request_id", async () => {
    // The session is idle, so a well-formed cancel would be a 409: every one of these is refused first.
    const token = idle.token;
    const cancel = `/sessions/${idle.id}/cancel`;
    expect(await expectRefusal("POST", cancel, { token, body: '{"reason": ' }, 400, "invalid_input")).toMatch(/JSON/);
    await expectRefusal("POST", cancel, { token, body: "[]" }, 400, "invalid_input");
    await expectRefusal("POST", cancel, { token, body: { reason: 7 } }, 400, "invalid_input");
    await expectRefusal("POST", cancel, { token, body: { reason: " " } }, 400, "invalid_input");
    await expectRefusal(
      "POST",
      cancel,
      { token, body: { reason: "z".repeat(maxTextChars + 1) } },
      400,
      "input_too_large",
    );
    await expectRefusal("POST", cancel, { token, body: { pad: "y".repeat(maxBodyBytes) } }, 400, "input_too_large");
    await expectRefusal("POST", cancel, { token, body: { request_id: "a/b" } }, 400, "invalid_input");
    await expectRefusal("POST", cancel, { token, body: { request_id: "r".repeat(201) } }, 400, "input_too_large");
    expect(await expectRefusal("POST", cancel, { token, body: { requestId: "cancel-1" } }, 400, "invalid_input")).toBe(
      'unknown field "requestId": this API calls it "request_id"',
    );
  });

  it("answers 400 for a malformed Last-Event-ID or ?after=", async () => {
    const path = `/sessions/${idle.id}/events`;
    await expectRefusal("GET", path, { token: idle.token, headers: { "last-event-id": "abc" } }, 400, "invalid_input");
    await expectRefusal("GET", `${path}?after=-1`, { token: idle.token }, 400, "invalid_input");
  });

  it("answers 400 when POST /sessions gets a malformed first message", async () => {
    for (const body of ['{"message": ', { message: 42 }, { message: "x".repeat(maxTextChars + 1) }]) {
      const response = await harness.request("POST", "/sessions", { body });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toMatch(
        /^(invalid_input|input_too_large)$/,
      );
    }
  });
});

describe("unknown sessions and interrupts", () => {
  it("answers 404 for a session that does not exist, even with its valid token", async () => {
    const id = "order-support-00000000-0000-4000-8000-000000000000";
    const token = harness.tokens.sign(id);
    for (const [method, path] of [
      ["GET", `/sessions/${id}/snapshot`],
      ["GET", `/sessions/${id}/events`],
    ] as const) {
      await expectRefusal(method, path, { token }, 404, "session_not_found");
    }
    await expectRefusal(
      "POST",
      `/sessions/${id}/messages`,
      { token, body: { text: "hello" } },
      404,
      "session_not_found",
    );
    await expectRefusal("POST", `/sessions/${id}/interrupts/x/approve`, { token }, 404, "session_not_found");
    await expectRefusal("POST", `/sessions/${id}/steer`, { token, body: { text: "hello" } }, 404, "session_not_found");
    await expectRefusal("POST", `/sessions/${id}/cancel`, { token }, 404, "session_not_found");
  });

  it("answers 404 for an interrupt the session does not have", async () => {
    await expectRefusal(
      "POST",
      `/sessions/${idle.id}/interrupts/turn-9-9-9/approve`,
      { token: idle.token },
      404,
      "interrupt_not_found",
    );
    await expectRefusal(
      "POST",
      `/sessions/${idle.id}/interrupts/turn-9-9-9/reject`,
      { token: idle.token, body: { message: "no" } },
      404,
      "interrupt_not_found",
    );
  });

  it("answers 404 with a JSON error for an unknown route", async () => {
    const response = await harness.request("GET", "/nothing-here");
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: "not_found" } });
  });
});

describe("decisions in the wrong state", () => {
  it("answers 409 to a second decision on the same interrupt, and the cancellation runs once", async () => {
    const { id, token } = await harness.startSession("cancel order 1002");
    const waiting = await harness.waitFor(id, token, (s) => s.status === "awaiting_approval");
    const interruptId = waiting.pendingInterrupts[0]!.interruptId;
    const approve = `/sessions/${id}/interrupts/${interruptId}/approve`;
    const reject = `/sessions/${id}/interrupts/${interruptId}/reject`;
    const cancellationsBefore = harness.runtime.desk.cancellations().length;

    expect((await harness.request("POST", approve, { token })).status).toBe(202);
    // Right away, while the worker may not have applied the first decision yet.
    const again = await harness.request("POST", approve, { token });
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({ error: { code: "duplicate_resolution" } });
    expect((await harness.request("POST", reject, { token, body: { message: "no" } })).status).toBe(409);

    const done = await harness.waitFor(
      id,
      token,
      (s) => s.status === "idle" && s.messages.at(-1)?.role === "assistant",
    );
    // Once the turn ended: still 409, and nothing moves.
    const before = await stateOf(id);
    const late = await harness.request("POST", approve, { token });
    expect(late.status).toBe(409);
    expect(await late.json()).toMatchObject({ error: { code: "duplicate_resolution" } });
    await movedOn();
    expect(await stateOf(id)).toEqual(before);

    const events = await harness.runtime.client.readEvents(id, { after: 0, limit: 10_000 });
    expect(events.filter((event) => event.type === "interrupt_resolved")).toHaveLength(1);
    expect(done.turn?.calls.map((call) => call.status)).toEqual(["succeeded"]);
    expect(harness.runtime.desk.cancellations().length).toBe(cancellationsBefore + 1);
  });

  it("answers 400 to an approval that carries a message (a message goes with a rejection)", async () => {
    const { id, token } = await harness.startSession("cancel order 1002");
    const waiting = await harness.waitFor(id, token, (s) => s.status === "awaiting_approval");
    const interruptId = waiting.pendingInterrupts[0]!.interruptId;
    const before = await stateOf(id);
    const response = await harness.request("POST", `/sessions/${id}/interrupts/${interruptId}/approve`, {
      token,
      body: { message: "ok" },
    });
    expect(response.status).toBe(400);
    await movedOn();
    expect(await stateOf(id)).toEqual(before);
    // The interrupt is still pending and can be decided properly.
    expect((await harness.request("POST", `/sessions/${id}/interrupts/${interruptId}/reject`, { token })).status).toBe(
      202,
    );
    await harness.waitFor(id, token, (s) => s.status === "idle");
  });
});

describe("a cancel with no turn to cancel", () => {
  it("answers 409 session_state on an idle session, and writes nothing (events, inbox, snapshot)", async () => {
    const cancel = `/sessions/${idle.id}/cancel`;
    expect(await expectRefusal("POST", cancel, { token: idle.token }, 409, "session_state")).toMatch(
      /has no running turn to cancel/,
    );
    await expectRefusal(
      "POST",
      cancel,
      { token: idle.token, body: { reason: "changed my mind", request_id: "cancel-idle" } },
      409,
      "session_state",
    );
  });
});

describe("server errors", () => {
  it("answers 500 without details for stored state it cannot read, and logs the cause with its code", async () => {
    // A session whose head a newer release wrote: the client's versioned parser refuses it.
    const id = `order-support-${"0".repeat(8)}-newer`;
    const head = { ...newSessionHead(id, "order-support", new Date().toISOString()), schemaVersion: 2 };
    await harness.runtime.store.createSession({ head: head as unknown as SessionHead, events: [] });
    const logged: string[] = [];
    const spy = vi
      .spyOn(console, "error")
      .mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
    try {
      const response = await harness.request("GET", `/sessions/${id}/snapshot`, { token: harness.tokens.sign(id) });
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({
        error: { code: "internal", message: "the server failed to handle the request" },
      });
    } finally {
      spy.mockRestore();
    }
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(
      /^order-support server \[stored_state\]: StoredStateError: the stored session head has schema version 2/,
    );
  });

  it("answers 400 only for bad client input; every other code of the family is a 500", () => {
    const fourHundred = errorCodes.filter((code) => statusOfCode[code] === 400);
    expect(fourHundred.sort()).toEqual(["input_too_large", "invalid_input"]);
    for (const error of [
      new ConfigurationError("setup"),
      new ContractViolationError("store", "broke"),
      new StoredStateError("session_head", "malformed", 1, "damaged"),
      new PolicyError("typo"),
      new UnknownAgentError("nobody"),
    ]) {
      expect(httpErrorOf(error)).toEqual({
        status: 500,
        body: { error: { code: "internal", message: "the server failed to handle the request" } },
      });
    }
    expect(httpErrorOf(new InvalidInputError("bad")).status).toBe(400);
  });
});
