/**
 * A session's events as a UI message stream: one turn (one assistant message) from a stream
 * position on. The stream ends cleanly at the end of the turn, or where the turn waits for a
 * person's approval; a reader that lost the connection reconnects after the last frame `id` it got.
 */
import { InvalidInputError, type SessionEvent, type SessionSnapshot, type Turn } from "@durable-agents/core";
import { UI_MESSAGE_STREAM_HEADERS } from "ai";
import { formatCursor, frameId, parseCursor, startCursor, type StreamCursor } from "../cursor.js";
import { SessionEventMapper } from "../mapper.js";
import type { CallFacts, CallFactsLookup, DurableUIChunk } from "../types.js";
import type { UISessionClient, UIToolPolicies } from "./client-port.js";

/** One chunk and the position it ends at (null: a chunk of the connection itself, such as its `start`). */
export interface UIStreamFrame {
  readonly id: string | null;
  readonly chunk: DurableUIChunk;
}

export interface SessionUIMessageStreamOptions {
  /** The position to continue after: a cursor (`"12"`, `"12.3"`, or a sequence number). Default: the session's start. */
  readonly after?: StreamCursor | string | number;
  /** Ends the stream (without its clean end) when it aborts. */
  readonly signal?: AbortSignal;
  /** Tool policies, for the effect of calls of earlier turns (the snapshot has the latest turn's). */
  readonly policies?: UIToolPolicies;
}

/** Reads `after` as a cursor; throws `InvalidInputError` for anything else. */
export function toCursor(after: StreamCursor | string | number | undefined | null): StreamCursor {
  if (after === undefined || after === null || after === "") return startCursor;
  if (typeof after === "number") {
    if (!Number.isInteger(after) || after < 0)
      throw new InvalidInputError("a stream position is a non-negative integer");
    return { seq: after, chunk: null };
  }
  if (typeof after === "object") return after;
  const cursor = parseCursor(after);
  if (!cursor)
    throw new InvalidInputError('a stream position is an event sequence number ("12") or a chunk of one ("12.3")');
  return cursor;
}

/** What the latest snapshot says about calls, plus the application's policies for the rest. */
export class CallFactsCache {
  readonly #known = new Map<string, CallFacts>();
  readonly #policies: UIToolPolicies | undefined;

  constructor(policies?: UIToolPolicies) {
    this.#policies = policies;
  }

  learn(turn: Turn | null): void {
    if (!turn) return;
    for (const call of turn.calls) {
      this.#known.set(`${turn.turnId}/${call.toolCallId}`, { effect: call.effect, needsApproval: call.needsApproval });
    }
  }

  knows(turnId: string, toolCallId: string): boolean {
    return this.#known.has(`${turnId}/${toolCallId}`);
  }

  readonly lookup: CallFactsLookup = ({ turnId, toolCallId, name }) => {
    const known = this.#known.get(`${turnId}/${toolCallId}`);
    if (known) return known;
    const policy = this.#policies?.[name];
    return policy
      ? {
          effect: policy.effect,
          ...(policy.needsApproval === undefined ? {} : { needsApproval: policy.needsApproval }),
        }
      : undefined;
  };
}

/** Maps every event up to and including `seq` (their chunks are dropped): the mapper's state at that position. */
export async function foldEvents(
  client: UISessionClient,
  sessionId: string,
  mapper: SessionEventMapper,
  seq: number,
  onEvent?: (event: SessionEvent, chunks: DurableUIChunk[]) => void,
): Promise<void> {
  let after = 0;
  while (after < seq) {
    const events = await client.readEvents(sessionId, { after, limit: 1000 });
    if (events.length === 0) return;
    for (const event of events) {
      if (event.seq > seq) return;
      const chunks = mapper.map(event);
      onEvent?.(event, chunks);
      after = event.seq;
    }
  }
}

/**
 * Whether the open turn waits for a person and nothing else will happen: every pending approval
 * was streamed (a pending attention interrupt waits for nobody's decision in the turn), no decision is waiting to be applied, and no event came after `seq`.
 */
export function waitsForApproval(snapshot: SessionSnapshot, mapper: SessionEventMapper, seq: number): boolean {
  const pending = mapper.pendingApprovals;
  return (
    mapper.openTurnId !== null &&
    pending.length > 0 &&
    snapshot.status === "awaiting_approval" &&
    snapshot.unappliedDecisions === 0 &&
    snapshot.lastEventSeq <= seq &&
    // Attention interrupts (core's reconciliation) block nothing: only approvals are waited for.
    snapshot.pendingInterrupts.every(
      (interrupt) => interrupt.kind === "attention" || pending.includes(interrupt.interruptId),
    )
  );
}

/** Whether nothing is running or about to, and no event came after `seq`. */
export function isIdleAfter(snapshot: SessionSnapshot, seq: number): boolean {
  return snapshot.status === "idle" && snapshot.queuedMessages === 0 && snapshot.lastEventSeq <= seq;
}

/**
 * The chunks of one turn of the session, after position `after`: the turn open there, or else the
 * next one to start. Resolves to null when there is nothing to stream: no turn is open or about to
 * start and nothing happened after `after`, or the open turn waits for an approval that was already
 * streamed. Throws `SessionNotFoundError` for an unknown session and `InvalidInputError` for a
 * position past the session's last event.
 *
 * Each frame's `id` is the position it ends at (see `frameId`); the connection's own `start` (sent
 * first when the stream begins inside a turn) and its `finish` at an approval have none.
 */
export async function sessionUIMessageStream(
  client: UISessionClient,
  sessionId: string,
  options: SessionUIMessageStreamOptions = {},
): Promise<ReadableStream<UIStreamFrame> | null> {
  const cursor = toCursor(options.after);
  const facts = new CallFactsCache(options.policies);
  const first = await client.snapshot(sessionId);
  if (cursor.seq > first.lastEventSeq) {
    throw new InvalidInputError(
      `stream position ${formatCursor(cursor)} is past the session's last event (${first.lastEventSeq})`,
    );
  }
  facts.learn(first.turn);
  const mapper = new SessionEventMapper({ sessionId, callFacts: facts.lookup });
  // Event `cursor.seq` is mapped again when some of its chunks were not read yet.
  const foldTo = cursor.chunk === null ? cursor.seq : cursor.seq - 1;
  await foldEvents(client, sessionId, mapper, foldTo);

  if (cursor.chunk === null) {
    const open = mapper.openTurnId !== null;
    if (open && waitsForApproval(first, mapper, cursor.seq)) return null;
    if (!open && isIdleAfter(first, cursor.seq)) return null;
  }

  const stop = new AbortController();
  const onAbort = () => stop.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) stop.abort();

  return new ReadableStream<UIStreamFrame>({
    start(controller) {
      const resumeStart = mapper.resumeStart();
      if (resumeStart) controller.enqueue({ id: null, chunk: resumeStart });
      void (async () => {
        try {
          for await (const event of client.followEvents(sessionId, { after: foldTo, signal: stop.signal })) {
            if (
              event.type === "tool_calls_requested" &&
              event.data.calls.some((c) => !facts.knows(event.data.turnId, c.toolCallId))
            ) {
              facts.learn((await client.snapshot(sessionId)).turn);
            }
            const turnBefore = mapper.openTurnId;
            const chunks = mapper.map(event);
            const skip = event.seq === cursor.seq && cursor.chunk !== null ? cursor.chunk + 1 : 0;
            for (let index = skip; index < chunks.length; index++) {
              controller.enqueue({ id: frameId(event.seq, index, chunks.length), chunk: chunks[index]! });
            }
            if (turnBefore !== null && mapper.openTurnId === null) break; // the turn ended
            if (mapper.openTurnId !== null) {
              if (mapper.pendingApprovals.length === 0) continue;
              if (waitsForApproval(await client.snapshot(sessionId), mapper, event.seq)) {
                controller.enqueue({ id: null, chunk: { type: "finish", finishReason: "tool-calls" } });
                break;
              }
            } else if (isIdleAfter(await client.snapshot(sessionId), event.seq)) {
              break;
            }
          }
          if (stop.signal.aborted) return;
          controller.close();
        } catch (error) {
          if (!stop.signal.aborted) controller.error(error);
        } finally {
          options.signal?.removeEventListener("abort", onAbort);
          stop.abort();
        }
      })();
    },
    cancel() {
      stop.abort();
    },
  });
}

export interface SseOptions {
  /** Interval of `: keep-alive` comments. Default 15 s. */
  readonly keepAliveMs?: number;
  /** Called with an error that ended the stream (the connection is then cut without its clean end). */
  readonly onError?: (error: unknown) => void;
}

/**
 * Frames as Server-Sent Events: `id: <position>` (when the frame has one) and `data: <chunk JSON>`,
 * and `data: [DONE]` at a clean end. A stream that fails ends without `[DONE]`, so a reader knows to
 * reconnect. `null` (nothing to stream) gives just the clean end.
 */
export function toSseStream(
  frames: ReadableStream<UIStreamFrame> | null,
  options: SseOptions = {},
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  let reader: ReadableStreamDefaultReader<UIStreamFrame> | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if (!cancelled) controller.enqueue(encoder.encode(text));
      };
      send(": stream-open\n\n");
      if (frames === null) {
        send("data: [DONE]\n\n");
        controller.close();
        return;
      }
      timer = setInterval(() => send(": keep-alive\n\n"), keepAliveMs);
      (timer as { unref?: () => void }).unref?.();
      reader = frames.getReader();
      void (async () => {
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done || cancelled) break;
            const id = value.id === null ? "" : `id: ${value.id}\n`;
            send(`${id}data: ${JSON.stringify(value.chunk)}\n\n`);
          }
          clearInterval(timer);
          if (cancelled) return;
          send("data: [DONE]\n\n");
          controller.close();
        } catch (error) {
          clearInterval(timer);
          if (cancelled) return;
          options.onError?.(error);
          controller.error(error);
        }
      })();
    },
    cancel(reason) {
      cancelled = true;
      clearInterval(timer);
      void reader?.cancel(reason).catch(() => {});
    },
  });
}

/** The headers of a UI message stream response (the AI SDK's, protocol v1). */
export const uiMessageStreamHeaders: Readonly<Record<string, string>> = Object.freeze({ ...UI_MESSAGE_STREAM_HEADERS });

/**
 * A `Response` streaming one turn of the session after `after`, or 204 when there is nothing to
 * stream (what the AI SDK's chat transports read as "no active stream").
 */
export async function sessionUIMessageResponse(
  client: UISessionClient,
  sessionId: string,
  options: SessionUIMessageStreamOptions & SseOptions & { readonly emptyAs204?: boolean } = {},
): Promise<Response> {
  const frames = await sessionUIMessageStream(client, sessionId, options);
  if (frames === null && (options.emptyAs204 ?? true)) return new Response(null, { status: 204 });
  return new Response(toSseStream(frames, options), { status: 200, headers: uiMessageStreamHeaders });
}
