/**
 * The HTTP face of order support sessions (Hono). Every route under `/sessions/:id` needs the
 * session's token; every refusal is a JSON error and changes nothing.
 *
 *   POST /sessions                                        { message? }       → 201 { session_id, session_token }
 *   POST /sessions/:id/messages                           { text, message_id? } → 202 { accepted, seq, duplicate }
 *   POST /sessions/:id/steer                              { text, message_id? } → 202 { accepted, seq, duplicate }
 *   POST /sessions/:id/cancel                             { reason?, request_id? } → 202 { accepted, seq, duplicate, turn_id }
 *   GET  /sessions/:id/snapshot                                              → 200 SessionSnapshot
 *   GET  /sessions/:id/events        (SSE, id = event seq, resumes from Last-Event-ID or ?after=)
 *   POST /sessions/:id/interrupts/:interruptId/approve    { message? }       → 202 { accepted, seq }
 *   POST /sessions/:id/interrupts/:interruptId/reject     { message? }       → 202 { accepted, seq }
 *   POST /sessions/:id/interrupts/:interruptId/mark-done  { output }         → 202 { accepted, seq }
 *   POST /sessions/:id/interrupts/:interruptId/mark-not-done                 → 202 { accepted, seq }
 *   POST /sessions/:id/interrupts/:interruptId/leave-unknown                 → 202 { accepted, seq }
 *     (the last three resolve an attention interrupt: a call whose outcome is unknown)
 *
 * With `page`, also the chat page at `/` and its routes under `/sessions/:id/ui/` (order-support-page.ts).
 */
import { randomUUID } from "node:crypto";
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { InputTooLargeError, InvalidInputError, type SessionEvent } from "@durable-agents/core";
import { describeServerError, HttpError, httpErrorOf } from "./http-errors.js";
import { mountOrderSupportPage, type OrderSupportPageOptions } from "./order-support-page.js";
import type { OrderSupportClient } from "./session-client-port.js";
import { SessionTokens } from "./session-tokens.js";

export interface OrderSupportServerOptions {
  readonly client: OrderSupportClient;
  /** The session definition's name. Default "order-support". */
  readonly agent?: string;
  /** Signs session tokens; default: a `SessionTokens` with a random key (tokens die with the process). */
  readonly tokens?: SessionTokens;
  /** Longest accepted message or rejection text, in characters. Default 8000. */
  readonly maxTextChars?: number;
  /** Largest accepted request body, in bytes. Default 64 KiB. */
  readonly maxBodyBytes?: number;
  /** Interval of SSE keep-alive comments. Default 15 s. */
  readonly keepAliveMs?: number;
  /** Prefix of server-picked session IDs. Default "order-support-". */
  readonly sessionIdPrefix?: string;
  /** Serves the chat page at `/` and its routes (`true`: the built page next to this module). Default: none. */
  readonly page?: OrderSupportPageOptions | boolean;
}

type Variables = { sessionId: string };
type AppContext = Context<{ Variables: Variables }>;

export function createOrderSupportServer(options: OrderSupportServerOptions): Hono<{ Variables: Variables }> {
  const client = options.client;
  const agent = options.agent ?? "order-support";
  const tokens = options.tokens ?? new SessionTokens();
  const maxTextChars = options.maxTextChars ?? 8_000;
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024;
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const prefix = options.sessionIdPrefix ?? "order-support-";

  const app = new Hono<{ Variables: Variables }>();

  app.onError((error, c) => {
    const { status, body } = httpErrorOf(error);
    if (status === 500) console.error(describeServerError(error));
    return c.json(body, status);
  });
  app.notFound((c) => c.json({ error: { code: "not_found", message: `no route ${c.req.method} ${c.req.path}` } }, 404));

  app.use(
    "*",
    bodyLimit({
      maxSize: maxBodyBytes,
      onError: (c) => {
        const { status, body } = httpErrorOf(
          new HttpError(400, "input_too_large", `the request body is larger than ${maxBodyBytes} bytes`),
        );
        return c.json(body, status);
      },
    }),
  );

  // Every route of one session checks its token first: missing → 401, wrong → 403.
  app.use("/sessions/:id/*", async (c, next) => {
    const sessionId = c.req.param("id");
    if (sessionId === undefined) throw new HttpError(404, "not_found", "no session in the path");
    const token = c.req.header("x-session-token") ?? c.req.query("token") ?? null;
    const check = tokens.check(sessionId, token);
    if (check === "missing") {
      throw new HttpError(
        401,
        "unauthorized",
        "this route needs the session token (header X-Session-Token or ?token=)",
      );
    }
    if (check === "wrong") throw new HttpError(403, "forbidden", "the session token does not match this session");
    c.set("sessionId", sessionId);
    await next();
  });

  if (options.page) mountOrderSupportPage(app, client, options.page === true ? {} : options.page);

  app.post("/sessions", async (c) => {
    const body = await readJsonObject(c, { allowEmpty: true });
    const message = optionalText(body, "message", maxTextChars);
    // The server picks the ID, so a caller cannot name (or guess its way into) another session.
    const sessionId = `${prefix}${randomUUID()}`;
    await client.startSession(message === undefined ? { agent, sessionId } : { agent, sessionId, message });
    return c.json({ session_id: sessionId, session_token: tokens.sign(sessionId) }, 201);
  });

  app.post("/sessions/:id/messages", async (c) => {
    const body = await readJsonObject(c, { allowEmpty: false });
    const text = requiredText(body, "text", maxTextChars);
    const messageId = optionalText(body, "message_id", 200);
    const result = await client.sendMessage(c.var.sessionId, text, messageId === undefined ? {} : { messageId });
    return c.json({ accepted: true, seq: result.seq, duplicate: result.duplicate }, 202);
  });

  // A message for the running turn: it joins the turn before its next model step (or starts a turn
  // on an idle session). `message_id` is shared with /messages: a message is accepted once.
  app.post("/sessions/:id/steer", async (c) => {
    const body = await readJsonObject(c, { allowEmpty: false });
    refuseCamelCase(body, { messageId: "message_id" });
    const text = requiredText(body, "text", maxTextChars);
    const messageId = optionalText(body, "message_id", 200);
    const result = await client.steer(c.var.sessionId, text, messageId === undefined ? {} : { messageId });
    return c.json({ accepted: true, seq: result.seq, duplicate: result.duplicate }, 202);
  });

  // Cancels the running turn. The worker applies it: the turn's `turn_cancelled` event (its receipt)
  // follows on the event stream. No running turn: 409 `session_state`, and nothing is written. With a
  // `request_id`, asking again answers the first cancellation (`duplicate: true`), even once the turn ended.
  app.post("/sessions/:id/cancel", async (c) => {
    const body = await readJsonObject(c, { allowEmpty: true });
    refuseCamelCase(body, { requestId: "request_id", turnId: "turn_id" });
    const reason = optionalText(body, "reason", maxTextChars);
    const requestId = optionalText(body, "request_id", 200);
    // The turn the caller saw running: if it ended meanwhile, nothing else is cancelled (409).
    const turnId = optionalText(body, "turn_id", 200);
    const result = await client.cancelTurn(c.var.sessionId, {
      ...(reason === undefined ? {} : { reason }),
      ...(requestId === undefined ? {} : { requestId }),
      ...(turnId === undefined ? {} : { turnId }),
    });
    return c.json({ accepted: true, seq: result.seq, duplicate: result.duplicate, turn_id: result.turnId }, 202);
  });

  app.get("/sessions/:id/snapshot", async (c) => c.json(await client.snapshot(c.var.sessionId)));

  for (const decision of ["approve", "reject"] as const) {
    app.post(`/sessions/:id/interrupts/:interruptId/${decision}`, async (c) => {
      const interruptId = c.req.param("interruptId");
      if (!interruptId) throw new InvalidInputError("the interrupt ID is missing");
      const body = await readJsonObject(c, { allowEmpty: true });
      const message = optionalText(body, "message", maxTextChars) ?? null;
      const result = await client.resolveInterrupt(c.var.sessionId, {
        interruptId,
        approved: decision === "approve",
        message,
      });
      return c.json({ accepted: true, seq: result.seq }, 202);
    });
  }

  // Attention interrupts: a call whose outcome stayed unknown. A person says what they found: it took
  // effect (`output`: what the model is told), it did not (it runs again: after a new approval for
  // `cancel_order`), or it stays unknown. An approval interrupt here is 409 `session_state`.
  const attention = { "mark-done": "done", "mark-not-done": "not_done", "leave-unknown": "unknown" } as const;
  for (const [route, outcome] of Object.entries(attention)) {
    app.post(`/sessions/:id/interrupts/:interruptId/${route}`, async (c) => {
      const interruptId = c.req.param("interruptId");
      if (!interruptId) throw new InvalidInputError("the interrupt ID is missing");
      const body = await readJsonObject(c, { allowEmpty: outcome !== "done" });
      const output = outcome === "done" ? requiredText(body, "output", maxTextChars) : undefined;
      if (outcome !== "done" && body.output !== undefined)
        throw new InvalidInputError(`"output" goes with mark-done, not ${route}`, ["output"]);
      const result = await client.resolveAttention(
        c.var.sessionId,
        interruptId,
        outcome === "done" ? { outcome, output: output! } : { outcome },
      );
      return c.json({ accepted: true, seq: result.seq }, 202);
    });
  }

  app.get("/sessions/:id/events", async (c) => {
    const sessionId = c.var.sessionId;
    const after = startCursor(c);
    // Refuse an unknown session before the stream starts, so the caller gets a 404 and not an empty
    // stream (one event at most: the cost does not grow with the session).
    await client.readEvents(sessionId, { after, limit: 1 });
    return sseResponse(c, client, sessionId, after, keepAliveMs);
  });

  return app;
}

/** The cursor to resume from: the `Last-Event-ID` header (what EventSource sends), else `?after=`, else 0. */
function startCursor(c: AppContext): number {
  const raw = c.req.header("last-event-id") ?? c.req.query("after");
  if (raw === undefined || raw.trim() === "") return 0;
  if (!/^\d{1,15}$/.test(raw.trim())) {
    throw new InvalidInputError("Last-Event-ID (or ?after=) must be a non-negative integer event sequence number");
  }
  return Number(raw.trim());
}

function sseResponse(
  c: AppContext,
  client: OrderSupportClient,
  sessionId: string,
  after: number,
  keepAliveMs: number,
): Response {
  const encoder = new TextEncoder();
  const stop = new AbortController();
  const requestSignal = c.req.raw.signal;
  const onRequestAbort = () => stop.abort();
  requestSignal.addEventListener("abort", onRequestAbort, { once: true });
  let keepAlive: NodeJS.Timeout | undefined;

  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        if (!stop.signal.aborted) controller.enqueue(encoder.encode(text));
      };
      keepAlive = setInterval(() => send(": keep-alive\n\n"), keepAliveMs);
      keepAlive.unref();
      send("retry: 1000\n\n");
      void (async () => {
        try {
          for await (const event of client.followEvents(sessionId, { after, signal: stop.signal })) {
            send(sseFrame(event));
          }
        } catch (error) {
          if (!stop.signal.aborted) console.error(`event stream failed: ${describeServerError(error)}`);
        } finally {
          clearInterval(keepAlive);
          requestSignal.removeEventListener("abort", onRequestAbort);
          if (!stop.signal.aborted) {
            stop.abort();
            controller.close();
          }
        }
      })();
    },
    cancel() {
      clearInterval(keepAlive);
      stop.abort();
    },
  });

  return new Response(body, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    },
  });
}

/** One SSE frame: the event's seq as its id, its type as the event name, the whole event as JSON data. */
function sseFrame(event: SessionEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

async function readJsonObject(c: AppContext, options: { allowEmpty: boolean }): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.trim() === "") {
    if (options.allowEmpty) return {};
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

/**
 * The API's fields are snake_case (`message_id`, `request_id`): a field spelled the client library's
 * way would otherwise be ignored without a word, and a retried request would not be recognised.
 */
function refuseCamelCase(body: Record<string, unknown>, names: Record<string, string>): void {
  for (const [camel, snake] of Object.entries(names)) {
    if (camel in body) throw new InvalidInputError(`unknown field "${camel}": this API calls it "${snake}"`, [camel]);
  }
}

function requiredText(body: Record<string, unknown>, field: string, maxChars: number): string {
  const value = optionalText(body, field, maxChars);
  if (value === undefined) throw new InvalidInputError(`"${field}" is required`, [field]);
  return value;
}

/** A non-empty string field of at most `maxChars` characters, or undefined when absent or null. */
function optionalText(body: Record<string, unknown>, field: string, maxChars: number): string | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new InvalidInputError(`"${field}" must be a string`, [field]);
  if (value.trim() === "") throw new InvalidInputError(`"${field}" must not be empty`, [field]);
  if (value.length > maxChars) throw new InputTooLargeError(`"${field}"`, value.length, maxChars);
  return value;
}
