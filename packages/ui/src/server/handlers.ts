/**
 * Route helpers for a fetch-style server (Hono, a bare `fetch` handler, ...): every route of a
 * session's chat, as `(request) => Response`. Authentication is the application's: put these behind
 * whatever checks that the caller may use the session.
 *
 *   POST {base}/chat                                  { text, message_id?, after? } → 200 UI message stream
 *   GET  {base}/stream?after=<position>               (or Last-Event-ID)          → 200 UI message stream | 204
 *   GET  {base}/messages                                                          → 200 SessionUIMessages
 *   GET  {base}/watch?after=<seq>                                                 → 200 { changed, lastEventSeq }
 *   POST {base}/approvals/:interruptId/approve         (no body)                  → 202 { accepted, seq }
 *   POST {base}/approvals/:interruptId/reject          { message? }               → 202 { accepted, seq }
 *   POST {base}/cancel                                 { reason?, request_id? }   → 202 { accepted, seq, duplicate, turn_id }
 *
 * `base` is `basePath` with the session's ID in place of `:id` (default `/sessions/:id/ui`).
 */
import { DurableAgentsError, InputTooLargeError, InvalidInputError, type ErrorCode } from "@durable-agents/core";
import type { UISessionClient, UIToolPolicies } from "./client-port.js";
import { loadSessionUIMessages } from "./messages.js";
import {
  sessionUIMessageResponse,
  sessionUIMessageStream,
  toSseStream,
  toCursor,
  uiMessageStreamHeaders,
} from "./stream.js";

export interface SessionUIHandlersOptions {
  readonly client: UISessionClient;
  /** The routes' path with `:id` for the session ID. Default `/sessions/:id/ui`. */
  readonly basePath?: string;
  /** Tool policies, for the effect of calls of earlier turns (see `sessionUIMessageStream`). */
  readonly policies?: UIToolPolicies;
  /** Longest accepted message, rejection message or cancellation reason. Default 8000 characters. */
  readonly maxTextChars?: number;
  /** Interval of SSE keep-alive comments. Default 15 s. */
  readonly keepAliveMs?: number;
  /** How long `watch` waits for an event before it answers `changed: false`. Default 25 s. */
  readonly watchTimeoutMs?: number;
  /** Called with errors that became a 500 or ended a stream. Default: `console.error`. */
  readonly onError?: (error: unknown) => void;
}

export interface SessionUIHandlers {
  /** Answers a request for one of the routes; 404 for any other path or method. */
  fetch(request: Request): Promise<Response>;
  chat(request: Request, sessionId: string): Promise<Response>;
  stream(request: Request, sessionId: string): Promise<Response>;
  messages(request: Request, sessionId: string): Promise<Response>;
  watch(request: Request, sessionId: string): Promise<Response>;
  decide(request: Request, sessionId: string, interruptId: string, approved: boolean): Promise<Response>;
  cancel(request: Request, sessionId: string): Promise<Response>;
}

/** HTTP statuses of the errors a client can cause: bad input 400, unknown things 404, a state conflict 409. */
const clientErrorStatus: Partial<Record<ErrorCode, number>> = {
  invalid_input: 400,
  input_too_large: 400,
  session_not_found: 404,
  interrupt_not_found: 404,
  session_state: 409,
  duplicate_resolution: 409,
};

class RouteError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8" } });

export function createSessionUIHandlers(options: SessionUIHandlersOptions): SessionUIHandlers {
  const { client, policies } = options;
  const maxTextChars = options.maxTextChars ?? 8_000;
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const watchTimeoutMs = options.watchTimeoutMs ?? 25_000;
  const onError = options.onError ?? ((error: unknown) => console.error("durable-agents ui route failed:", error));
  const base = (options.basePath ?? "/sessions/:id/ui").replace(/\/+$/, "");
  if (!base.includes(":id")) throw new InvalidInputError('basePath must contain ":id", where the session ID goes');
  const [prefix, suffix] = base.split(":id") as [string, string];

  const guarded =
    <A extends unknown[]>(handler: (request: Request, ...args: A) => Promise<Response>) =>
    async (request: Request, ...args: A): Promise<Response> => {
      try {
        return await handler(request, ...args);
      } catch (error) {
        return errorResponse(error);
      }
    };

  const errorResponse = (error: unknown): Response => {
    if (error instanceof RouteError) return json(error.status, { error: { code: error.code, message: error.message } });
    if (DurableAgentsError.isInstance(error)) {
      const status = clientErrorStatus[error.code];
      if (status !== undefined) return json(status, { error: { code: error.code, message: error.message } });
    }
    onError(error);
    return json(500, { error: { code: "internal", message: "the server failed to handle the request" } });
  };

  const text = (body: Record<string, unknown>, field: string, required: boolean, max = maxTextChars) => {
    const value = body[field];
    if (value === undefined || value === null) {
      if (required) throw new InvalidInputError(`"${field}" is required`, [field]);
      return undefined;
    }
    if (typeof value !== "string") throw new InvalidInputError(`"${field}" must be a string`, [field]);
    if (value.trim() === "") throw new InvalidInputError(`"${field}" must not be empty`, [field]);
    if (value.length > max) throw new InputTooLargeError(`"${field}"`, value.length, max);
    return value;
  };

  const chat = guarded(async (request: Request, sessionId: string) => {
    const body = await readJsonObject(request, false);
    const message = text(body, "text", true)!;
    const messageId = text(body, "message_id", false, 200);
    const after = body.after === undefined || body.after === null ? undefined : toCursor(body.after as string | number);
    const sent = await client.sendMessage(sessionId, message, messageId === undefined ? {} : { messageId });
    const frames = await sessionUIMessageStream(client, sessionId, {
      ...(after === undefined ? {} : { after }),
      signal: request.signal,
      ...(policies ? { policies } : {}),
    });
    return new Response(toSseStream(frames, { keepAliveMs, onError }), {
      status: 200,
      headers: { ...uiMessageStreamHeaders, "x-durable-agents-duplicate": String(sent.duplicate) },
    });
  });

  const stream = guarded(async (request: Request, sessionId: string) => {
    const url = new URL(request.url);
    const after = url.searchParams.get("after") ?? request.headers.get("last-event-id") ?? undefined;
    return sessionUIMessageResponse(client, sessionId, {
      after: toCursor(after),
      signal: request.signal,
      keepAliveMs,
      onError,
      ...(policies ? { policies } : {}),
    });
  });

  const messages = guarded(async (_request: Request, sessionId: string) =>
    json(200, await loadSessionUIMessages(client, sessionId, policies ? { policies } : {})),
  );

  const watch = guarded(async (request: Request, sessionId: string) => {
    const raw = new URL(request.url).searchParams.get("after");
    const cursor = toCursor(raw ?? undefined);
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    request.signal.addEventListener("abort", onAbort, { once: true });
    const timer = setTimeout(() => stop.abort(), watchTimeoutMs);
    try {
      for await (const event of client.followEvents(sessionId, { after: cursor.seq, signal: stop.signal })) {
        return json(200, { changed: true, lastEventSeq: event.seq });
      }
      return json(200, { changed: false, lastEventSeq: cursor.seq });
    } finally {
      clearTimeout(timer);
      request.signal.removeEventListener("abort", onAbort);
      stop.abort();
    }
  });

  const decide = guarded(async (request: Request, sessionId: string, interruptId: string, approved: boolean) => {
    const body = await readJsonObject(request, true);
    // A message goes with a rejection; core refuses one with an approval (400), nothing is dropped silently.
    const message = text(body, "message", false);
    const result = await client.resolveInterrupt(sessionId, { interruptId, approved, message: message ?? null });
    return json(202, { accepted: true, seq: result.seq });
  });

  const cancel = guarded(async (request: Request, sessionId: string) => {
    if (!client.cancelTurn) throw new RouteError(501, "not_implemented", "this server's client cannot cancel turns");
    const body = await readJsonObject(request, true);
    const reason = text(body, "reason", false);
    const requestId = text(body, "request_id", false, 200);
    const result = await client.cancelTurn(sessionId, {
      ...(reason === undefined ? {} : { reason }),
      ...(requestId === undefined ? {} : { requestId }),
    });
    return json(202, { accepted: true, seq: result.seq, duplicate: result.duplicate, turn_id: result.turnId });
  });

  const fetchHandler = guarded(async (request: Request) => {
    const path = new URL(request.url).pathname;
    if (!path.startsWith(prefix)) throw notFound(request);
    const rest = path.slice(prefix.length);
    const slash = rest.indexOf("/");
    if (slash <= 0 || !rest.slice(slash).startsWith(`${suffix}/`)) throw notFound(request);
    const sessionId = decodeURIComponent(rest.slice(0, slash));
    const route = rest.slice(slash + suffix.length + 1).split("/");
    const method = request.method.toUpperCase();
    if (route.length === 1) {
      const name = route[0];
      if (method === "POST" && name === "chat") return chat(request, sessionId);
      if (method === "GET" && name === "stream") return stream(request, sessionId);
      if (method === "GET" && name === "messages") return messages(request, sessionId);
      if (method === "GET" && name === "watch") return watch(request, sessionId);
      if (method === "POST" && name === "cancel") return cancel(request, sessionId);
    }
    if (method === "POST" && route.length === 3 && route[0] === "approvals" && route[1]) {
      const interruptId = decodeURIComponent(route[1]);
      if (route[2] === "approve") return decide(request, sessionId, interruptId, true);
      if (route[2] === "reject") return decide(request, sessionId, interruptId, false);
    }
    throw notFound(request);
  });

  return { fetch: fetchHandler, chat, stream, messages, watch, decide, cancel };
}

function notFound(request: Request): RouteError {
  return new RouteError(404, "not_found", `no route ${request.method} ${new URL(request.url).pathname}`);
}

async function readJsonObject(request: Request, allowEmpty: boolean): Promise<Record<string, unknown>> {
  const text = await request.text();
  if (text.trim() === "") {
    if (allowEmpty) return {};
    throw new InvalidInputError("the request needs a JSON object body");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new InvalidInputError("the request body is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidInputError("the request body must be a JSON object");
  }
  return value as Record<string, unknown>;
}
