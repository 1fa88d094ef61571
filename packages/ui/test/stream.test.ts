/**
 * `sessionUIMessageStream` on real sessions (core's worker and client, the scripted runner, the
 * memory store): one turn per stream, a clean end at an approval and at the end of the turn, and
 * resume from any frame position with no chunk lost or repeated.
 */
import { InvalidInputError, SessionNotFoundError } from "@durable-agents/core";
import { readUIMessageStream } from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DurableUIChunk, DurableUIMessage } from "../src/index.js";
import { loadSessionUIMessages, sessionUIMessageStream, type UIStreamFrame } from "../src/server/index.js";
import { agent, policies, startUIServer, type UIServer } from "./support/ui-server.js";

let server: UIServer;
beforeEach(async () => {
  server = await startUIServer();
});
afterEach(async () => {
  await server.close();
});

async function collect(stream: ReadableStream<UIStreamFrame> | null): Promise<UIStreamFrame[] | null> {
  if (stream === null) return null;
  const frames: UIStreamFrame[] = [];
  for await (const frame of stream) frames.push(frame);
  return frames;
}

async function streamAfter(sessionId: string, after: string): Promise<UIStreamFrame[] | null> {
  return collect(await sessionUIMessageStream(server.client, sessionId, { after, policies }));
}

/** The message the AI SDK's reader builds (on copies: it keeps data chunks as parts and updates them in place). */
async function assemble(chunks: DurableUIChunk[]): Promise<DurableUIMessage> {
  const stream = new ReadableStream<DurableUIChunk>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(structuredClone(chunk));
      controller.close();
    },
  });
  let last: DurableUIMessage | undefined;
  for await (const message of readUIMessageStream<DurableUIMessage>({ stream, terminateOnError: true })) last = message;
  return last!;
}

const script = {
  lookUpThenCancel: 'call look_up_order {"order_id":"1001"}\nthen\ncall cancel_order {"order_id":"1002"}',
  echo: "hello there, this is a longer message so that the answer streams in several deltas",
};

/** A session with two finished turns: a look-up then an approved cancellation, and an echo. */
async function finishedSession(): Promise<string> {
  const { sessionId } = await server.client.startSession({ agent, message: script.lookUpThenCancel });
  const waiting = await server.client.waitUntilIdle(sessionId);
  await server.client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
  await server.client.waitUntilIdle(sessionId);
  await server.client.sendMessage(sessionId, script.echo);
  await server.client.waitUntilIdle(sessionId);
  return sessionId;
}

describe("sessionUIMessageStream", () => {
  it("streams one turn per stream, each frame's id the position it ends at, and nothing once all was read", async () => {
    const sessionId = await finishedSession();
    const first = (await streamAfter(sessionId, "0"))!;
    expect(first[0]!.chunk).toMatchObject({ type: "start", messageId: "assistant-turn-1" });
    expect(first.at(-1)!.chunk).toMatchObject({ type: "finish", finishReason: "stop" });
    const second = (await streamAfter(sessionId, first.at(-1)!.id!))!;
    expect(second[0]!.chunk).toMatchObject({ type: "start", messageId: "assistant-turn-2" });
    expect(second.at(-1)!.chunk).toMatchObject({ type: "finish", finishReason: "stop" });
    const snapshot = await server.client.snapshot(sessionId);
    expect(second.at(-1)!.id).toBe(String(snapshot.lastEventSeq));
    expect(await streamAfter(sessionId, second.at(-1)!.id!)).toBeNull();

    // Every id names an event of the log, in order, and the chunks of one event are numbered.
    const events = await server.client.readEvents(sessionId);
    const seqs = new Set(events.map((e) => e.seq));
    const ids = [...first, ...second].flatMap((f) => (f.id === null ? [] : [f.id]));
    for (const id of ids) expect(seqs.has(Number.parseInt(id, 10))).toBe(true);
    const positions = ids.map((id) => {
      const [seq, chunk] = id.split(".");
      return Number(seq) * 1000 + (chunk === undefined ? 999 : Number(chunk));
    });
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);

    const message = await assemble(second.map((f) => f.chunk));
    expect(message.parts.filter((p) => p.type === "text").map((p) => p.text)).toEqual([`You said: ${script.echo}`]);
  });

  it("resumed after any frame, gives exactly the frames that followed it: none lost, none repeated", async () => {
    const sessionId = await finishedSession();
    const turns = [(await streamAfter(sessionId, "0"))!];
    turns.push((await streamAfter(sessionId, turns[0]!.at(-1)!.id!))!);
    let checked = 0;
    for (const [t, turn] of turns.entries()) {
      const whole = await assemble(turn.map((f) => f.chunk));
      for (const [k, frame] of turn.entries()) {
        if (frame.id === null) continue;
        const resumed = await streamAfter(sessionId, frame.id);
        const rest = turn.slice(k + 1);
        if (rest.length === 0) {
          // The turn's last frame: what follows is the next turn, whole, or nothing.
          expect(resumed).toEqual(turns[t + 1] ?? null);
          checked++;
          continue;
        }
        // Inside the turn: the message's start (no id: the reader has the message), then the rest.
        expect(resumed![0]).toEqual({ id: null, chunk: { type: "start", messageId: `assistant-turn-${t + 1}` } });
        expect(resumed!.slice(1)).toEqual(rest);
        // And the AI SDK builds the same message from what was read before and after the cut.
        const joined = await assemble([...turn.slice(0, k + 1), ...resumed!].map((f) => f.chunk));
        expect(joined).toEqual(whole);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
  });

  it("ends cleanly where the turn waits for approval; resumed there, has nothing until a decision, then continues the turn", async () => {
    const { sessionId } = await server.client.startSession({ agent, message: script.lookUpThenCancel });
    const waiting = await server.client.waitFor(sessionId, (s) => s.status === "awaiting_approval");
    const toApproval = (await streamAfter(sessionId, "0"))!;
    expect(toApproval.map((f) => f.chunk.type).slice(-3)).toEqual([
      "tool-approval-request",
      "message-metadata",
      "finish",
    ]);
    expect(toApproval.at(-1)).toEqual({ id: null, chunk: { type: "finish", finishReason: "tool-calls" } });
    const position = toApproval.at(-2)!.id!;
    expect(position).toBe(String(waiting.lastEventSeq));
    expect(await streamAfter(sessionId, position)).toBeNull();

    await server.client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
    // Decided and not applied yet, or applied: either way there is a stream, and it ends the turn.
    const rest = (await streamAfter(sessionId, position))!;
    expect(rest[0]!.chunk).toEqual({ type: "start", messageId: "assistant-turn-1" });
    expect(rest.map((f) => f.chunk.type)).toContain("tool-approval-response");
    expect(rest.at(-1)!.chunk).toMatchObject({ type: "finish", finishReason: "stop" });
    const message = await assemble([...toApproval.slice(0, -1), ...rest].map((f) => f.chunk));
    expect(message.parts.find((p) => p.type === "tool-cancel_order")).toMatchObject({
      state: "output-available",
      output: "order 1002 is cancelled",
      approval: { id: waiting.pendingInterrupts[0]!.interruptId, approved: true },
      toolMetadata: { effect: "non_idempotent_write", needsApproval: true },
    });
  });

  it("ends at an approval also when an attention interrupt is pending beside it, and shows the attention", async () => {
    const { sessionId } = await server.client.startSession({
      agent,
      message: 'call send_email {"to":"a@example.com"}\ncall cancel_order {"order_id":"1002"}',
    });
    const waiting = await server.client.waitFor(sessionId, (s) => s.pendingInterrupts.length === 2);
    expect(waiting.pendingInterrupts.map((i) => i.kind).sort()).toEqual(["approval", "attention"]);
    const started = Date.now();
    const toApproval = (await streamAfter(sessionId, "0"))!;
    // The stream ends at the approval, not waiting on the attention: one that waited would never end,
    // and fail at the test's timeout. The bound is loose for a busy machine.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(toApproval.at(-1)).toEqual({ id: null, chunk: { type: "finish", finishReason: "tool-calls" } });
    const message = await assemble(toApproval.map((f) => f.chunk));
    expect(message.parts.find((p) => p.type === "data-attention")).toMatchObject({
      data: { toolName: "send_email", status: "pending" },
    });
  });

  it("follows a turn live from before it started: a stream opened after a message was accepted waits for its turn", async () => {
    const { sessionId } = await server.client.startSession({ agent });
    const stream = sessionUIMessageStream(server.client, sessionId, { after: "1" });
    // Nothing is queued yet: nothing to stream.
    expect(await stream).toBeNull();
    await server.client.sendMessage(sessionId, script.echo);
    const frames = (await streamAfter(sessionId, "1"))!;
    expect(frames[0]!.chunk).toMatchObject({
      type: "start",
      messageId: "assistant-turn-1",
      messageMetadata: { userText: script.echo },
    });
    expect(frames.at(-1)!.chunk).toMatchObject({ type: "finish", finishReason: "stop" });
  });

  it("refuses a position past the session's last event, and an unknown session", async () => {
    const { sessionId } = await server.client.startSession({ agent });
    await expect(sessionUIMessageStream(server.client, sessionId, { after: "5" })).rejects.toSatisfy(
      InvalidInputError.isInstance,
    );
    await expect(sessionUIMessageStream(server.client, sessionId, { after: "x" })).rejects.toSatisfy(
      InvalidInputError.isInstance,
    );
    await expect(sessionUIMessageStream(server.client, "no-such-session", {})).rejects.toSatisfy(
      SessionNotFoundError.isInstance,
    );
  });
});

describe("loadSessionUIMessages", () => {
  it("rebuilds the conversation the streams showed: a user and an assistant message per turn", async () => {
    const sessionId = await finishedSession();
    const loaded = await loadSessionUIMessages(server.client, sessionId, { policies });
    const first = (await streamAfter(sessionId, "0"))!;
    const second = (await streamAfter(sessionId, first.at(-1)!.id!))!;
    expect(loaded.messages).toEqual([
      { id: "user-turn-1", role: "user", parts: [{ type: "text", text: script.lookUpThenCancel }] },
      await assemble(first.map((f) => f.chunk)),
      { id: "user-turn-2", role: "user", parts: [{ type: "text", text: script.echo }] },
      await assemble(second.map((f) => f.chunk)),
    ]);
    expect(loaded).toMatchObject({ status: "idle", openTurnId: null, cursor: second.at(-1)!.id });
  });

  it("cuts a running turn where the chat can continue it: before its message, or after its latest decision", async () => {
    const { sessionId } = await server.client.startSession({ agent, message: "hang model" });
    await server.client.waitFor(sessionId, (s) => s.turn?.modelRunning === true);
    const running = await loadSessionUIMessages(server.client, sessionId);
    expect(running.messages.map((m) => m.id)).toEqual(["user-turn-1"]);
    expect(running.openTurnId).toBe("turn-1");
    const events = await server.client.readEvents(sessionId);
    const turnStarted = events.find((e) => e.type === "turn_started")!;
    expect(running.cursor).toBe(String(turnStarted.seq - 1));
    // From there the stream brings the whole message, its start with the turn's metadata first.
    const stop = new AbortController();
    const stream = (await sessionUIMessageStream(server.client, sessionId, {
      after: running.cursor,
      signal: stop.signal,
    }))!;
    const reader = stream.getReader();
    expect((await reader.read()).value).toMatchObject({
      id: String(turnStarted.seq),
      chunk: { type: "start", messageId: "assistant-turn-1", messageMetadata: { userText: "hang model" } },
    });
    stop.abort();
    await server.client.cancelTurn(sessionId);
    await server.client.waitUntilIdle(sessionId);

    await server.client.sendMessage(sessionId, 'call cancel_order {"order_id":"7"}\nthen\nhang model');
    const waiting = await server.client.waitFor(sessionId, (s) => s.status === "awaiting_approval");
    const atApproval = await loadSessionUIMessages(server.client, sessionId);
    // Waiting for a person: the whole message, up to the last event.
    expect(atApproval.cursor).toBe(String(waiting.lastEventSeq));
    expect(atApproval.messages.at(-1)!.parts.find((p) => p.type === "tool-cancel_order")).toMatchObject({
      state: "approval-requested",
    });
    await server.client.approve(sessionId, waiting.pendingInterrupts[0]!.interruptId);
    await server.client.waitFor(sessionId, (s) => s.status === "running" && s.turn?.modelRunning === true);
    const afterDecision = await loadSessionUIMessages(server.client, sessionId);
    const resolved = (await server.client.readEvents(sessionId)).filter((e) => e.type === "interrupt_resolved").at(-1)!;
    expect(afterDecision.cursor).toBe(String(resolved.seq));
    expect(afterDecision.messages.at(-1)!.parts.find((p) => p.type === "tool-cancel_order")).toMatchObject({
      state: "approval-responded",
      approval: { approved: true },
    });
    await server.client.cancelTurn(sessionId);
    await server.client.waitUntilIdle(sessionId);
  });
});
