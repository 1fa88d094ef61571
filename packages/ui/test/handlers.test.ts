/**
 * The route helpers over real HTTP: the AI SDK's own `DefaultChatTransport` reads their stream (its
 * parser validates every chunk against the SDK's schema), and every refusal is a JSON error that
 * changes nothing.
 */
import { DefaultChatTransport, type UIMessageChunk } from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readSseMessages } from "../src/client/index.js";
import type { DurableUIMessage } from "../src/index.js";
import { createSessionUIHandlers } from "../src/server/index.js";
import { agent, startUIServer, type UIServer } from "./support/ui-server.js";

let server: UIServer;
beforeEach(async () => {
  server = await startUIServer();
});
afterEach(async () => {
  await server.close();
});

async function call(method: string, path: string, body?: string) {
  const response = await fetch(`${server.url}${path}`, { method, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  return { status: response.status, body: text === "" ? null : (JSON.parse(text) as { error?: { code: string } }) };
}

describe("the route helpers", () => {
  it("stream what the AI SDK's DefaultChatTransport reads and validates, with its protocol header", async () => {
    const { sessionId } = await server.client.startSession({
      agent,
      message: 'call look_up_order {"order_id":"1"}',
    });
    await server.client.waitUntilIdle(sessionId);
    const response = await fetch(`${server.api(sessionId)}/stream?after=0`);
    expect(response.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const frames = [];
    for await (const message of readSseMessages(response.body!)) frames.push(message);
    expect(frames.at(-1)).toEqual({ id: null, event: null, data: "[DONE]" });

    const sdk = new DefaultChatTransport<DurableUIMessage>({
      prepareReconnectToStreamRequest: () => ({ api: `${server.api(sessionId)}/stream?after=0` }),
    });
    const stream = await sdk.reconnectToStream({ chatId: sessionId });
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of stream!) chunks.push(chunk);
    expect(chunks.map((c) => JSON.stringify(c))).toEqual(frames.slice(0, -1).map((f) => f.data));
    expect(chunks.map((c) => c.type)).toEqual(
      expect.arrayContaining([
        "start",
        "start-step",
        "data-step",
        "tool-input-available",
        "tool-output-available",
        "text-delta",
        "finish",
      ]),
    );
  });

  it("refuse bad input, unknown things and conflicts with a JSON error, and change nothing", async () => {
    const { sessionId } = await server.client.startSession({ agent, message: 'call cancel_order {"order_id":"1"}' });
    const waiting = await server.client.waitFor(sessionId, (s) => s.status === "awaiting_approval");
    const base = `/sessions/${sessionId}/ui`;
    const interrupt = waiting.pendingInterrupts[0]!.interruptId;

    expect(await call("GET", `${base}/nothing`)).toMatchObject({ status: 404, body: { error: { code: "not_found" } } });
    expect(await call("GET", `${base}/chat`)).toMatchObject({ status: 404 });
    expect(await call("GET", "/elsewhere")).toMatchObject({ status: 404 });
    expect(await call("POST", `${base}/chat`, "{not json")).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_input" } },
    });
    expect(await call("POST", `${base}/chat`, "[]")).toMatchObject({ status: 400 });
    expect(await call("POST", `${base}/chat`, JSON.stringify({ text: "  " }))).toMatchObject({ status: 400 });
    expect(await call("POST", `${base}/chat`, JSON.stringify({ text: "x".repeat(8001) }))).toMatchObject({
      status: 400,
      body: { error: { code: "input_too_large" } },
    });
    expect(await call("POST", `${base}/chat`, JSON.stringify({ text: "hi", after: "soon" }))).toMatchObject({
      status: 400,
    });
    expect(await call("GET", `${base}/stream?after=nine`)).toMatchObject({ status: 400 });
    expect(await call("GET", `${base}/stream?after=99999`)).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_input" } },
    });
    expect(await call("GET", "/sessions/no-such-session/ui/messages")).toMatchObject({
      status: 404,
      body: { error: { code: "session_not_found" } },
    });
    expect(await call("POST", `${base}/approvals/no-such-interrupt/approve`)).toMatchObject({
      status: 404,
      body: { error: { code: "interrupt_not_found" } },
    });
    expect(
      await call("POST", `${base}/approvals/${interrupt}/approve`, JSON.stringify({ message: "x" })),
    ).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_input" } },
    });
    expect(await call("POST", `${base}/approvals/${interrupt}/approve`)).toMatchObject({ status: 202 });
    expect(await call("POST", `${base}/approvals/${interrupt}/reject`)).toMatchObject({
      status: 409,
      body: { error: { code: "duplicate_resolution" } },
    });
    await server.client.waitUntilIdle(sessionId);
    expect(await call("POST", `${base}/cancel`, JSON.stringify({ reason: "late" }))).toMatchObject({
      status: 409,
      body: { error: { code: "session_state" } },
    });

    const snapshot = await server.client.snapshot(sessionId);
    expect(snapshot.turnCount).toBe(1);
    expect(snapshot.turn).toMatchObject({ phase: "completed", calls: [{ status: "succeeded", attempts: 1 }] });
    expect(snapshot.messages.filter((m) => m.role === "user")).toHaveLength(1);
  });

  it("take the session from a base path of the application's choosing, and need one with :id", async () => {
    const handlers = createSessionUIHandlers({ client: server.client, basePath: "/api/chats/:id/ui/" });
    const { sessionId } = await server.client.startSession({ agent });
    const response = await handlers.fetch(new Request(`http://x/api/chats/${sessionId}/ui/messages`));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ sessionId, messages: [], cursor: "1", status: "idle" });
    expect((await handlers.fetch(new Request(`http://x/sessions/${sessionId}/ui/messages`))).status).toBe(404);
    expect(() => createSessionUIHandlers({ client: server.client, basePath: "/api/chats" })).toThrow(/:id/);
  });
});
