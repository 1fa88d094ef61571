/**
 * The durable call's identity in an MCP `tools/call` request's `_meta`, so that a server can
 * deduplicate a retried or repeated call by its idempotency key.
 */

/** The `_meta` keys the runner sets on every `tools/call` request (prefix `durable-agents/`). */
export const metaKeys = Object.freeze({
  idempotencyKey: "durable-agents/idempotencyKey",
  attempt: "durable-agents/attempt",
  sessionId: "durable-agents/sessionId",
  turnId: "durable-agents/turnId",
  toolCallId: "durable-agents/toolCallId",
});

/** The call a `tools/call` request belongs to. */
export interface DurableCallMeta {
  /** `<sessionId>/<turnId>/<toolCallId>`: the same on every attempt and after a crash. */
  readonly idempotencyKey: string;
  /** 1-based attempt number, counted durably across crashes. */
  readonly attempt: number;
  readonly sessionId: string;
  readonly turnId: string;
  readonly toolCallId: string;
}

/** The `_meta` entries for one call. */
export function durableMeta(call: DurableCallMeta): Record<string, string | number> {
  return {
    [metaKeys.idempotencyKey]: call.idempotencyKey,
    [metaKeys.attempt]: call.attempt,
    [metaKeys.sessionId]: call.sessionId,
    [metaKeys.turnId]: call.turnId,
    [metaKeys.toolCallId]: call.toolCallId,
  };
}

/**
 * For server authors: the durable call a request's `_meta` names (`request.params._meta`, or
 * `extra._meta` in an SDK tool handler), or undefined when it carries none (the call does not come
 * from a durable session).
 */
export function readDurableMeta(meta: unknown): DurableCallMeta | undefined {
  if (typeof meta !== "object" || meta === null) return undefined;
  const m = meta as Record<string, unknown>;
  const key = m[metaKeys.idempotencyKey];
  const attempt = m[metaKeys.attempt];
  if (typeof key !== "string" || typeof attempt !== "number") return undefined;
  const text = (name: string) => (typeof m[name] === "string" ? (m[name] as string) : "");
  return {
    idempotencyKey: key,
    attempt,
    sessionId: text(metaKeys.sessionId),
    turnId: text(metaKeys.turnId),
    toolCallId: text(metaKeys.toolCallId),
  };
}
