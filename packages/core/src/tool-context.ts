/**
 * Inside a tool: the current call's idempotency key and attempt. The engine runs every tool call
 * inside this context. The storage is shared through `globalThis`, so that two copies of this
 * package in one process still see the same context.
 */
import { AsyncLocalStorage } from "node:async_hooks";

export interface ToolCallContext {
  readonly sessionId: string;
  readonly turnId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  /** `<sessionId>/<turnId>/<toolCallId>`: the same on every attempt and after a crash. */
  readonly idempotencyKey: string;
  /** 1-based attempt number, counted durably across crashes. */
  readonly attempt: number;
  /**
   * Aborted when the call should stop: its turn was cancelled, or the worker is losing the session.
   * A `read` or `idempotent_write` tool that stops on it (throws) ends `cancelled`; a single-attempt
   * tool ends `cancelled` only if it throws `ToolCancelledError` (it changed nothing), else its real
   * outcome or, past the grace period, `outcome_unknown`. An engine that cannot abort leaves it unset.
   */
  readonly signal?: AbortSignal;
}

const storageKey = Symbol.for("durable-agents.tool-call-context");
const globalSlot = globalThis as unknown as Record<symbol, AsyncLocalStorage<ToolCallContext> | undefined>;
globalSlot[storageKey] ??= new AsyncLocalStorage<ToolCallContext>();
const storage: AsyncLocalStorage<ToolCallContext> = globalSlot[storageKey];

/** The call being executed, or undefined outside a tool call step. */
export function currentToolCall(): ToolCallContext | undefined {
  return storage.getStore();
}

export function runInToolCall<T>(context: ToolCallContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** Runs `fn` outside any tool call (e.g. nested agent runs whose tools must not reuse the outer key). */
export function runOutsideToolCall<T>(fn: () => T): T {
  return storage.exit(fn);
}
