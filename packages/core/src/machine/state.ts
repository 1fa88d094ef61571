/** Queries on a session head: what the turn is doing, what is due, the derived status. Pure. */
import type { JoinedModelMessage, RecordedOutcome } from "../runner.js";
import { describeOutcome } from "../outcome-text.js";
import {
  emptyUsage,
  isFinalCallStatus,
  SESSION_SCHEMA_VERSION,
  type FinalCallStatus,
  type HistoryItem,
  type SessionHead,
  type SessionStatus,
  type ToolCallRecord,
  type Turn,
  type TurnCancellation,
} from "../schemas.js";
import type { WaitingStep } from "./types.js";

export function newSessionHead(sessionId: string, agent: string, createdAt: string): SessionHead {
  return {
    schemaVersion: SESSION_SCHEMA_VERSION,
    sessionId,
    agent,
    status: "idle",
    turnCount: 0,
    historyLength: 0,
    turn: null,
    queue: [],
    pendingInterrupts: [],
    usage: emptyUsage(),
    inboxCursor: 0,
    createdAt,
    definition: null,
  };
}

const activePhases = new Set<Turn["phase"]>(["model", "tools", "cancelling"]);
export const isTurnActive = (turn: Turn | null): turn is Turn => turn !== null && activePhases.has(turn.phase);

/** Whether a call has a step in flight: an attempt of the tool, or a check of its outcome (or one due). */
export const isCallInFlight = (call: Pick<ToolCallRecord, "status">): boolean =>
  call.status === "running" || call.status === "reconcile_pending" || call.status === "reconciling";

/**
 * When a turn being cancelled stops waiting for the checks of its calls in doubt: one more grace
 * period after the first (a call given up at the end of the grace period is checked in it).
 */
export const reconcileDeadline = (cancellation: TurnCancellation): number =>
  cancellation.graceUntil + (cancellation.graceUntil - cancellation.appliedAt);

/** The calls of the turn's latest model response. */
export function currentCalls(turn: Turn): ToolCallRecord[] {
  return turn.calls.filter((call) => call.response === turn.modelSteps);
}

/** The outcomes handed to the next RunModel: every call of the latest response, in model order. */
export function outcomesForNextModelStep(head: SessionHead): RecordedOutcome[] {
  const turn = head.turn;
  // A turn's first RunModel has no outcomes (a follow-up turn's call run again joins it as a note).
  if (turn?.phase !== "model" || turn.modelSteps === 0) return [];
  return currentCalls(turn).map((call) => ({
    toolCallId: call.toolCallId,
    name: call.name,
    status: call.status as FinalCallStatus,
    text: describeOutcome(call),
    output: call.status === "succeeded" ? call.output : null,
  }));
}

/** The steered messages that joined the running turn, with their history items (for the next RunModel's input). */
export function joinedMessages(head: SessionHead, history: readonly HistoryItem[]): JoinedModelMessage[] {
  const turn = head.turn;
  if (!isTurnActive(turn)) return [];
  return turn.joined.flatMap((joined) => {
    const item = history[joined.historyIndex];
    return item ? [{ ...joined, item }] : [];
  });
}

/**
 * The steps the session has to run that are not started, in model order: ready (`notBefore` null or
 * past) or waiting for a backoff. A started step (a running call, a RunModel in flight) is not here.
 */
export function dueSteps(head: SessionHead): WaitingStep[] {
  const turn = head.turn;
  if (!isTurnActive(turn)) return [];
  const checks = currentCalls(turn)
    .filter((call) => call.status === "reconcile_pending")
    .map((call) => ({
      kind: "ReconcileCall" as const,
      turnId: turn.turnId,
      toolCallId: call.toolCallId,
      attempt: call.reconcileAttempts + 1,
      notBefore: call.retryAt,
    }));
  // A turn being cancelled starts no call; the checks of its calls in doubt still run.
  if (turn.phase === "cancelling") return checks;
  if (turn.phase === "model") {
    if (turn.modelRunning) return [];
    const step = {
      kind: "RunModel",
      turnId: turn.turnId,
      modelStep: turn.modelSteps + 1,
      attempt: turn.modelAttempts + 1,
    } as const;
    return [{ ...step, notBefore: turn.modelRetryAt }];
  }
  const calls: WaitingStep[] = currentCalls(turn)
    .filter((call) => call.status === "pending")
    .map((call) => ({
      kind: call.step,
      turnId: turn.turnId,
      toolCallId: call.toolCallId,
      attempt: call.attempts + 1,
      notBefore: call.retryAt,
    }));
  return [...calls, ...checks];
}

/**
 * When the first step that is not started is due: its `notBefore`, or `now` when it is ready; for a
 * turn being cancelled, the end of its grace period. Null when none is.
 */
export function nextDueAt(head: SessionHead, now: number): number | null {
  const turn = head.turn;
  let next: number | null = null;
  if (turn?.phase === "cancelling") {
    if (!turn.cancellation) return null;
    if (turn.calls.some((call) => call.status === "running")) next = turn.cancellation.graceUntil;
    else if (turn.calls.some((call) => call.status === "reconcile_pending" || call.status === "reconciling"))
      next = reconcileDeadline(turn.cancellation);
  }
  for (const step of dueSteps(head)) {
    const at = step.notBefore ?? now;
    if (next === null || at < next) next = at;
  }
  return next;
}

/** Whether a worker has something to do for this session without new input (the store's `runnable`). */
export function isRunnable(head: SessionHead): boolean {
  const turn = head.turn;
  if (!isTurnActive(turn)) return head.queue.length > 0;
  if (turn.phase === "model" || turn.phase === "cancelling") return true;
  return currentCalls(turn).some((call) => call.status === "pending" || isCallInFlight(call));
}

export function deriveStatus(head: SessionHead): SessionStatus {
  if (head.definition?.waiting) return "waiting_for_definition";
  const turn = head.turn;
  if (!isTurnActive(turn)) return "idle";
  if (turn.phase === "tools") {
    const open = currentCalls(turn).filter((call) => !isFinalCallStatus(call.status));
    if (open.length > 0 && open.every((call) => call.status === "awaiting_approval")) return "awaiting_approval";
  }
  return "running";
}

/**
 * A deep copy of JSON-shaped data (what a head is: it is stored as JSON and parsed by its schema).
 * Strings are shared, not copied, which makes this several times cheaper than `structuredClone`
 * for a head that carries a saved run state.
 */
export function copyData<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (let i = 0; i < value.length; i++) items.push(copyData(value[i]));
    return items as T;
  }
  const copy: Record<string, unknown> = {};
  // for-in walks the own keys of JSON data (plain objects) without making a list of them.
  for (const key in value) copy[key] = copyData((value as Record<string, unknown>)[key]);
  return copy as T;
}

/**
 * Deep equality of JSON-shaped data (a key set to `undefined` counts as absent, as in JSON). It
 * allocates nothing: every transition that emits no event compares a whole head
 * (a drive's recovery compares the head it loaded, which still holds the last turn's calls).
 */
export function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    if (a.length !== other.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], other[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  // for-in walks the own keys of JSON data (plain objects) without making a list of them.
  for (const key in x) if (!sameData(x[key], y[key])) return false;
  // The keys of y that x lacks: equal only when y holds undefined there too.
  for (const key in y) if (!Object.hasOwn(x, key) && y[key] !== undefined) return false;
  return true;
}
