/**
 * The rules of a session's pin to its agent definition (DESIGN §9), as pure transitions apart from
 * the turn's: they need no definition's config, start no step and change nothing of the turn, so an
 * engine applies them before (and in the same commit as) the session's own transition, or alone
 * (a worker that does not serve the session only marks it waiting).
 *
 * - `pin`: the engine drives the session on this definition. An unpinned session is pinned to it
 *   (`definition_pinned`, by the worker); a session pinned to it that was waiting runs again
 *   (`definition_served`); a session pinned to another definition is not its to drive (ignored).
 * - `wait`: nobody serves the session's definition, or its migration failed: the session waits
 *   (status `waiting_for_definition`, one `definition_waiting` event; marking it again for the same
 *   reason changes nothing).
 * - `migrate`: a migration moves the session from its definition to another (`definition_migrated`),
 *   with the state the migration's transform gave it, checked by `checkMigratedHead`.
 */
import {
  DefinitionWaitReason,
  HistoryItem,
  SessionHead,
  type DefinitionPin,
  type EventBody,
  type SessionHead as Head,
} from "../schemas.js";
import { copyData, deriveStatus, isTurnActive, sameData } from "./state.js";

export type DefinitionInput =
  | { readonly type: "pin"; readonly fingerprint: string; readonly description: unknown }
  | { readonly type: "wait"; readonly reason: DefinitionWaitReason; readonly error?: string | null }
  | {
      readonly type: "migrate";
      readonly from: string;
      readonly to: string;
      readonly description: unknown;
      readonly migration: "accept" | "transform";
      /** The head the transform returned (absent: the session as it is). */
      readonly head?: Head;
      readonly appendHistory?: readonly HistoryItem[];
    };

export interface DefinitionTransition {
  readonly head: Head;
  readonly events: EventBody[];
  readonly appendHistory: HistoryItem[];
  readonly changed: boolean;
  /** Why the input does not fit the session (nothing changed), or null. */
  readonly ignored: string | null;
}

const unchanged = (head: Head, ignored: string | null = null): DefinitionTransition => ({
  head,
  events: [],
  appendHistory: [],
  changed: false,
  ignored,
});

/** Applies one definition input at time `now` (epoch ms). Total, and the given head is never modified. */
export function applyDefinition(head: Head, input: DefinitionInput, now: number): DefinitionTransition {
  if (typeof input !== "object" || input === null) return unchanged(head, "the input is not an object");
  const pin = head.definition;
  switch (input.type) {
    case "pin": {
      if (typeof input.fingerprint !== "string" || input.fingerprint.length === 0)
        return unchanged(head, "a pin names a fingerprint");
      if (pin === null) {
        return changedTo(head, { fingerprint: input.fingerprint, waiting: null }, [
          {
            type: "definition_pinned",
            data: { fingerprint: input.fingerprint, by: "worker", description: input.description },
          },
        ]);
      }
      if (pin.fingerprint !== input.fingerprint) {
        return unchanged(head, `the session is pinned to ${pin.fingerprint}, not ${input.fingerprint}`);
      }
      if (pin.waiting === null) return unchanged(head);
      return changedTo(head, { fingerprint: pin.fingerprint, waiting: null }, [
        { type: "definition_served", data: { fingerprint: pin.fingerprint } },
      ]);
    }
    case "wait": {
      if (pin === null) return unchanged(head, "an unpinned session cannot wait for its definition");
      if (!DefinitionWaitReason.safeParse(input.reason).success) return unchanged(head, "no such reason to wait");
      const error = input.error ?? null;
      if (pin.waiting?.reason === input.reason && pin.waiting.error === error) return unchanged(head);
      return changedTo(head, { fingerprint: pin.fingerprint, waiting: { reason: input.reason, since: now, error } }, [
        { type: "definition_waiting", data: { fingerprint: pin.fingerprint, reason: input.reason, error } },
      ]);
    }
    case "migrate": {
      if (pin?.fingerprint !== input.from) {
        return unchanged(head, `the session is pinned to ${pin?.fingerprint ?? "no definition"}, not ${input.from}`);
      }
      if (typeof input.to !== "string" || input.to.length === 0 || input.to === input.from)
        return unchanged(head, "a migration goes to another fingerprint");
      const appended = input.appendHistory ?? [];
      const problem = checkMigratedHead(head, input.head ?? head, appended);
      if (problem !== null) return unchanged(head, problem);
      const next = copyData(SessionHead.parse(input.head ?? head));
      next.definition = { fingerprint: input.to, waiting: null };
      const items = appended.map((item) => HistoryItem.parse(item));
      next.historyLength += items.length;
      next.status = deriveStatus(next);
      const events: EventBody[] = [
        {
          type: "definition_migrated",
          data: {
            from: input.from,
            to: input.to,
            migration: input.migration,
            appendedItems: items.length,
            description: input.description,
          },
        },
      ];
      if (items.length > 0) events.push({ type: "history_appended", data: { items: items.map((i) => i.display) } });
      return { head: next, events, appendHistory: items, changed: true, ignored: null };
    }
    default:
      return unchanged(head, `no definition input is of type ${JSON.stringify((input as { type?: unknown }).type)}`);
  }
}

function changedTo(head: Head, definition: DefinitionPin, events: EventBody[]): DefinitionTransition {
  const next = copyData(head);
  next.definition = definition;
  next.status = deriveStatus(next);
  return { head: next, events, appendHistory: [], changed: true, ignored: null };
}

/**
 * Why a migration's result does not fit the session, or null when it does. A transform may change
 * what the definition gives meaning to (a call's tool name, arguments, effect and approval; the
 * framework's run state; the items of queued messages; an interrupt's tool name and arguments), not
 * where the session stands: its identity, counters, inbox and history positions, the turn's phase
 * and steps, each call's ID, status and attempts, and which interrupts are pending. History items
 * may be appended only while no turn runs (a runner reads a running turn's items by position).
 */
export function checkMigratedHead(before: Head, after: unknown, appendHistory: unknown): string | null {
  const parsed = SessionHead.safeParse(after);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`);
    return `the transformed head is malformed: ${issues.join("; ")}`;
  }
  const head = parsed.data;
  if (!Array.isArray(appendHistory)) return "appendHistory is not a list of history items";
  for (const [index, item] of appendHistory.entries()) {
    if (!HistoryItem.safeParse(item).success)
      return `appendHistory[${index}] is not a history item ({ item, display })`;
  }
  if (appendHistory.length > 0 && isTurnActive(before.turn)) {
    return "history items can be appended only while no turn runs";
  }
  const same = (what: string, a: unknown, b: unknown): string | null =>
    sameData(a, b) ? null : `the transform changed ${what} (${JSON.stringify(a)} → ${JSON.stringify(b)})`;
  const fixed: [string, unknown, unknown][] = [
    ["schemaVersion", before.schemaVersion, head.schemaVersion],
    ["sessionId", before.sessionId, head.sessionId],
    ["agent", before.agent, head.agent],
    ["createdAt", before.createdAt, head.createdAt],
    ["turnCount", before.turnCount, head.turnCount],
    ["historyLength", before.historyLength, head.historyLength],
    ["inboxCursor", before.inboxCursor, head.inboxCursor],
    ["usage", before.usage, head.usage],
    ["queue positions", before.queue.map((q) => q.inboxSeq), head.queue.map((q) => q.inboxSeq)],
    [
      "pending interrupts",
      before.pendingInterrupts.map((i) => [i.interruptId, i.turnId, i.toolCallId]),
      head.pendingInterrupts.map((i) => [i.interruptId, i.turnId, i.toolCallId]),
    ],
  ];
  const a = before.turn;
  const b = head.turn;
  if ((a === null) !== (b === null)) fixed.push(["the turn", a?.turnId ?? null, b?.turnId ?? null]);
  else if (a && b) {
    const where = (t: typeof a) => ({
      turnId: t.turnId,
      number: t.number,
      phase: t.phase,
      historyStart: t.historyStart,
      modelSteps: t.modelSteps,
      modelAttempts: t.modelAttempts,
      modelRunning: t.modelRunning,
      steps: t.steps,
      joined: t.joined,
      cancellation: t.cancellation,
      steered: t.steered.map((m) => m.inboxSeq),
    });
    fixed.push(["the turn's position", where(a), where(b)]);
    const calls = (t: typeof a) =>
      t.calls.map((c) => ({ toolCallId: c.toolCallId, response: c.response, status: c.status, attempts: c.attempts }));
    fixed.push(["the turn's calls", calls(a), calls(b)]);
  }
  for (const [what, x, y] of fixed) {
    const problem = same(what, x, y);
    if (problem !== null) return problem;
  }
  return null;
}
