/**
 * `DurableChatTransport` against the route handlers behind a real HTTP server (core's worker and
 * client, the scripted runner): send, retry, approvals, reconnects that lose and repeat nothing,
 * stop, reload and watch.
 */
import { readUIMessageStream, type UIMessageChunk } from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DurableChatTransport } from "../src/client/index.js";
import type { DurableUIMessage } from "../src/index.js";
import { agent, startUIServer, type UIServer } from "./support/ui-server.js";

let server: UIServer;
beforeEach(async () => {
  server = await startUIServer();
});
afterEach(async () => {
  await server.close();
});

const user = (id: string, text: string): DurableUIMessage => ({ id, role: "user", parts: [{ type: "text", text }] });

async function readAll(stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

async function assemble(chunks: UIMessageChunk[], message?: DurableUIMessage): Promise<DurableUIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(structuredClone(chunk));
      controller.close();
    },
  });
  let last: DurableUIMessage | undefined = message;
  for await (const m of readUIMessageStream<DurableUIMessage>({
    stream,
    terminateOnError: true,
    ...(message ? { message: structuredClone(message) } : {}),
  })) {
    last = m;
  }
  return last!;
}

function send(transport: DurableChatTransport, messages: DurableUIMessage[], abortSignal?: AbortSignal) {
  return transport.sendMessages({
    trigger: "submit-message",
    chatId: "chat",
    messageId: undefined,
    messages,
    abortSignal,
  });
}

const texts = (message: DurableUIMessage) => message.parts.filter((p) => p.type === "text").map((p) => p.text);

/** The part `addToolApprovalResponse` leaves: the approval request answered. */
function answer(message: DurableUIMessage, approved: boolean, reason?: string): DurableUIMessage {
  return {
    ...message,
    parts: message.parts.map((part) =>
      "state" in part && part.state === "approval-requested"
        ? ({
            ...part,
            state: "approval-responded",
            approval: { ...part.approval, approved, reason },
          } as unknown as typeof part)
        : part,
    ),
  };
}

describe("DurableChatTransport", () => {
  it("sends the newest user message under its UI message ID and streams the answer; a retried send is accepted once", async () => {
    const { sessionId } = await server.client.startSession({ agent });
    const transport = new DurableChatTransport({ api: server.api(sessionId) });
    const messages = [user("ui-msg-1", "hello")];
    const answerMessage = await assemble(await readAll(await send(transport, messages)));
    expect(answerMessage.id).toBe("assistant-turn-1");
    expect(texts(answerMessage)).toEqual(["You said: hello"]);
    expect(answerMessage.metadata).toMatchObject({ status: "completed", usage: { modelCalls: 1 } });

    // The same message again (a retry after a lost answer, from before the turn): one turn, the same answer.
    const retry = new DurableChatTransport({ api: server.api(sessionId), cursor: "1" });
    const again = await assemble(await readAll(await send(retry, messages)));
    expect(texts(again)).toEqual(["You said: hello"]);
    const snapshot = await server.client.snapshot(sessionId);
    expect(snapshot.turnCount).toBe(1);
    expect(snapshot.messages.filter((m) => m.role === "user")).toHaveLength(1);
    expect(transport.cursor).toBe(String(snapshot.lastEventSeq));
  });

  it("stops at an approval, posts the decision when useChat sends, and streams the rest of the turn", async () => {
    const { sessionId } = await server.client.startSession({ agent });
    const transport = new DurableChatTransport({ api: server.api(sessionId) });
    const messages = [user("m1", 'call cancel_order {"order_id":"1002"}')];
    const atApproval = await assemble(await readAll(await send(transport, messages)));
    const part = atApproval.parts.find((p) => p.type === "tool-cancel_order");
    expect(part).toMatchObject({ state: "approval-requested", input: { order_id: "1002" } });
    expect(transport.hasUnsentDecisions({ messages: [...messages, atApproval] })).toBe(false);

    const answered = answer(atApproval, true);
    expect(transport.hasUnsentDecisions({ messages: [...messages, answered] })).toBe(true);
    const rest = await readAll(await send(transport, [...messages, answered]));
    expect(server.requests).toContain(`POST /sessions/${sessionId}/ui/approvals/turn-1-1-1/approve`);
    const done = await assemble(rest, answered);
    expect(done.parts.find((p) => p.type === "tool-cancel_order")).toMatchObject({
      state: "output-available",
      output: "order 1002 is cancelled",
    });
    expect(texts(done)).toEqual(["Results: cancel_order -> order 1002 is cancelled"]);
    expect(transport.hasUnsentDecisions({ messages: [...messages, done] })).toBe(false);
  });

  it("posts a rejection with its message, which reaches the model", async () => {
    const { sessionId } = await server.client.startSession({ agent });
    const transport = new DurableChatTransport({ api: server.api(sessionId) });
    const messages = [user("m1", 'call cancel_order {"order_id":"1002"}')];
    const atApproval = await assemble(await readAll(await send(transport, messages)));
    const answered = answer(atApproval, false, "I will exchange it instead");
    const done = await assemble(await readAll(await send(transport, [...messages, answered])), answered);
    expect(done.parts.find((p) => p.type === "tool-cancel_order")).toMatchObject({
      state: "output-denied",
      approval: { approved: false, reason: "I will exchange it instead" },
    });
    expect(texts(done)[0]).toContain("I will exchange it instead");
  });

  it("reconnects a dropped stream after the last position it read: cut at any byte, nothing is lost or repeated", async () => {
    const { sessionId } = await server.client.startSession({
      agent,
      message: 'call look_up_order {"order_id":"1"}\nthen\ncall look_up_order {"order_id":"2"}',
    });
    await server.client.waitUntilIdle(sessionId);
    const clean = await readAll(
      (await new DurableChatTransport({ api: server.api(sessionId) }).reconnectToStream({ chatId: "c" }))!,
    );
    const body = await (await fetch(`${server.api(sessionId)}/stream?after=0`)).text();
    const total = new TextEncoder().encode(body).byteLength;
    // A connection must get at least one whole frame past its own start to move on: cuts start past
    // twice the longest frame.
    const longest = Math.max(...body.split("\n\n").map((frame) => new TextEncoder().encode(frame).byteLength));
    let reconnects = 0;
    for (let cutAt = 2 * longest + 40; cutAt < total; cutAt += 97) {
      // Each connection is cut after `cutAt` bytes (a connection that drops mid-frame, or between frames).
      const cutting: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        if (!response.body || response.status !== 200) return response;
        reconnects += 1;
        let sent = 0;
        const reader = response.body.getReader();
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            const { done, value } = await reader.read();
            if (done) return controller.close();
            const room = cutAt - sent;
            if (value.byteLength >= room) {
              if (room > 0) controller.enqueue(value.slice(0, room));
              await reader.cancel();
              controller.error(new TypeError("network error (cut by the test)"));
              return;
            }
            sent += value.byteLength;
            controller.enqueue(value);
          },
        });
        return new Response(body, { status: response.status, headers: response.headers });
      };
      const transport = new DurableChatTransport({
        api: server.api(sessionId),
        fetch: cutting,
        reconnect: { initialDelayMs: 1, maxDelayMs: 1 },
      });
      const chunks = await readAll((await transport.reconnectToStream({ chatId: "c" }))!);
      expect(chunks).toEqual(clean);
    }
    expect(reconnects).toBeGreaterThan(20);
    const message = await assemble(clean);
    expect(texts(message)).toEqual([
      "Results: look_up_order -> order 1 is shipped | look_up_order -> order 2 is shipped",
    ]);
  });

  it("stop(): an aborted stream cancels the running turn, with a request ID of the turn", async () => {
    const { sessionId } = await server.client.startSession({ agent });
    const transport = new DurableChatTransport({ api: server.api(sessionId) });
    const stop = new AbortController();
    const stream = await send(transport, [user("m1", "hang model")], stop.signal);
    const reader = stream.getReader();
    expect((await reader.read()).value).toMatchObject({ type: "start", messageId: "assistant-turn-1" });
    await server.client.waitFor(sessionId, (s) => s.turn?.modelRunning === true);
    stop.abort();
    const ended = await server.client.waitUntilIdle(sessionId);
    expect(ended.turn).toMatchObject({
      phase: "cancelled",
      cancellation: { requestId: "stop-turn-1", reason: "stopped in the chat" },
    });

    // After close(), an abort does not cancel (a chat being replaced). The abort handler runs in
    // abort() itself and would have called fetch before abort() returned.
    const calls: string[] = [];
    const recording: typeof fetch = (input, init) => {
      calls.push(`${init?.method ?? "GET"} ${String(input)}`);
      return fetch(input, init);
    };
    const other = new DurableChatTransport({
      api: server.api(sessionId),
      cursor: String(ended.lastEventSeq),
      fetch: recording,
    });
    const second = new AbortController();
    await send(other, [user("m2", "hang model")], second.signal);
    await server.client.waitFor(sessionId, (s) => s.turn?.turnId === "turn-2" && s.turn.modelRunning);
    other.close();
    second.abort();
    expect(calls).toEqual([`POST ${server.api(sessionId)}/chat`]);
    expect((await server.client.snapshot(sessionId)).turn).toMatchObject({ turnId: "turn-2", phase: "model" });
    expect(await other.cancelTurn({ requestId: "test-end" })).toBe(true);
    await server.client.waitUntilIdle(sessionId);
    expect(await other.cancelTurn()).toBe(false);
  });

  it("load() rebuilds the messages and continues a running turn from where they end; reconnect has nothing once it is over", async () => {
    const { sessionId } = await server.client.startSession({ agent, message: 'call cancel_order {"order_id":"9"}' });
    await server.client.waitFor(sessionId, (s) => s.status === "awaiting_approval");
    const transport = new DurableChatTransport({ api: server.api(sessionId) });
    const loaded = await transport.load();
    expect(loaded.messages.map((m) => m.id)).toEqual(["user-turn-1", "assistant-turn-1"]);
    expect(transport.cursor).toBe(loaded.cursor);
    // Waiting for a person: nothing to resume.
    expect(await transport.reconnectToStream({ chatId: "c" })).toBeNull();
    const answered = answer(loaded.messages[1]!, true);
    const done = await assemble(await readAll(await send(transport, [loaded.messages[0]!, answered])), answered);
    expect(texts(done)).toEqual(["Results: cancel_order -> order 9 is cancelled"]);
    expect(await transport.reconnectToStream({ chatId: "c" })).toBeNull();
  });

  it("waitForChange() answers as soon as the session has an event after the position (another tab's message)", async () => {
    const { sessionId } = await server.client.startSession({ agent });
    const transport = new DurableChatTransport({ api: server.api(sessionId) });
    await transport.load();
    const waiting = transport.waitForChange();
    await server.client.sendMessage(sessionId, "from another tab");
    expect(await waiting).toBe(true);
    await server.client.waitUntilIdle(sessionId);
    const loaded = await transport.load();
    expect(loaded.messages.map((m) => m.id)).toEqual(["user-turn-1", "assistant-turn-1"]);
    expect(texts(loaded.messages[1]!)).toEqual(["You said: from another tab"]);
  });
});
