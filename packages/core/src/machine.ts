/**
 * The session's rules as a pure, total state machine (DESIGN §7b):
 * `apply(head, input, { config, now })` → the new head, its events, the history to append, whether
 * anything changed, and what is due: the steps this transition started (launch them once it is
 * stored) and when the next one falls due. It does no I/O and reads no clock. Readiness, in-flight
 * steps, retries and backoff are its rules, so every engine that drives it (core's own driver over a
 * store, or a durable engine running each step with its own primitive) shares them.
 *
 * Layout: `machine/types.ts` (inputs, config, results), `machine/state.ts` (queries on a head),
 * `machine/draft.ts` (the moves handlers share), one handler per input type in
 * `machine/session-inputs.ts`, `machine/model-inputs.ts` and `machine/tool-inputs.ts`, and the
 * planner that starts ready steps in `machine/plan.ts`.
 */
import { Draft } from "./machine/draft.js";
import { onModelAttemptFailed, onModelCompleted } from "./machine/model-inputs.js";
import { startReadySteps } from "./machine/plan.js";
import { onInbox, onRecover, onTick } from "./machine/session-inputs.js";
import { currentCalls, deriveStatus, isTurnActive, nextDueAt, sameData } from "./machine/state.js";
import {
  onCallAttemptFailed,
  onCallCancelled,
  onCallFinished,
  onReconcileAttemptFailed,
  onReconcileFinished,
} from "./machine/tool-inputs.js";
import type { ApplyContext, DueStep, Handled, MachineInput, Transition } from "./machine/types.js";
import type { EventBody, HistoryItem, SessionHead } from "./schemas.js";

export {
  currentCalls,
  deriveStatus,
  isCallInFlight,
  dueSteps,
  isRunnable,
  isTurnActive,
  joinedMessages,
  newSessionHead,
  nextDueAt,
  outcomesForNextModelStep,
} from "./machine/state.js";
export { malformedModelResult, planCalls } from "./machine/model-inputs.js";
export {
  applyDefinition,
  checkMigratedHead,
  type DefinitionInput,
  type DefinitionTransition,
} from "./machine/definition.js";
export type {
  ApplyContext,
  Due,
  DueStep,
  MachineConfig,
  MachineInput,
  MachineInputType,
  PlannedCall,
  Transition,
  WaitingStep,
} from "./machine/types.js";

function handle(draft: Draft, input: MachineInput, ctx: ApplyContext): Handled {
  if (typeof input !== "object" || input === null) return "the input is not an object";
  switch (input.type) {
    case "inbox":
      return onInbox(draft, input, ctx);
    case "recover":
      return onRecover(draft, input);
    case "tick":
      return onTick(draft, input);
    case "model_completed":
      return onModelCompleted(draft, input, ctx);
    case "model_attempt_failed":
      return onModelAttemptFailed(draft, input, ctx);
    case "call_finished":
      return onCallFinished(draft, input, ctx);
    case "call_cancelled":
      return onCallCancelled(draft, input, ctx);
    case "call_attempt_failed":
      return onCallAttemptFailed(draft, input, ctx);
    case "reconcile_finished":
      return onReconcileFinished(draft, input, ctx);
    case "reconcile_attempt_failed":
      return onReconcileAttemptFailed(draft, input, ctx);
    default:
      return `no input is of type ${JSON.stringify((input as { type?: unknown }).type)}`;
  }
}

/**
 * Applies one input. Total: every input in every state gets a result; one that does not fit the
 * state (a late or repeated result, an inbox entry applied already) is `ignored` and changes nothing.
 * The given head is never modified.
 */
export function apply(head: SessionHead, input: MachineInput, ctx: ApplyContext): Transition {
  return applyOne(head, input, ctx, true);
}

/**
 * `apply`; with `compare` false, `changed` is only what the events and history say (no deep compare
 * of the heads): `applyAll` computes its own over the whole transition.
 */
function applyOne(head: SessionHead, input: MachineInput, ctx: ApplyContext, compare: boolean): Transition {
  const draft = new Draft(head, ctx.config);
  const ignored = handle(draft, input, ctx);
  if (ignored !== null) {
    return {
      head,
      events: [],
      appendHistory: [],
      changed: false,
      ignored,
      due: { steps: [], nextAt: nextDueAt(head, ctx.now) },
    };
  }
  draft.settleCancellation(ctx.now, ctx.config);
  if (ctx.startSteps !== false) startReadySteps(draft, ctx.now);
  draft.head.status = deriveStatus(draft.head);
  const changed = draft.events.length > 0 || draft.appendHistory.length > 0 || (compare && !sameData(head, draft.head));
  return {
    head: draft.head,
    events: draft.events,
    appendHistory: draft.appendHistory,
    changed,
    ignored: null,
    due: { steps: draft.started, nextAt: nextDueAt(draft.head, ctx.now) },
  };
}

/**
 * Applies inputs in order, as one transition (what an engine stores in one commit): the last head,
 * every event and history item, the steps started, and `ignored` joined over the inputs that were
 * ignored. Ready steps are started once, after the last input: a step is never started by one input
 * only to be stopped by the next (a recovery followed by a cancellation starts nothing).
 */
export function applyAll(head: SessionHead, inputs: readonly MachineInput[], ctx: ApplyContext): Transition {
  let current = head;
  const events: EventBody[] = [];
  const appendHistory: HistoryItem[] = [];
  const steps: DueStep[] = [];
  const ignored: string[] = [];
  let lastIgnored = false;
  inputs.forEach((input, index) => {
    const last = index === inputs.length - 1;
    // A recovery with no turn running (a drive's first input, before its inbox entries) changes
    // nothing when the head's status is the derived one and it starts nothing (not the last input).
    if (!last && isNoopRecovery(current, input)) {
      lastIgnored = false;
      return;
    }
    const t = applyOne(current, input, last ? ctx : { ...ctx, startSteps: false }, false);
    current = t.head;
    events.push(...t.events);
    appendHistory.push(...t.appendHistory);
    steps.push(...t.due.steps);
    if (t.ignored !== null) ignored.push(t.ignored);
    lastIgnored = t.ignored !== null;
  });
  // The last input, when ignored, started nothing: what its predecessors made ready is started now.
  if (lastIgnored && ctx.startSteps !== false) {
    const t = applyOne(current, { type: "tick" }, ctx, false);
    current = t.head;
    events.push(...t.events);
    appendHistory.push(...t.appendHistory);
    steps.push(...t.due.steps);
  }
  const launch = new Map<string, DueStep>();
  for (const step of steps) if (isStarted(current, step)) launch.set(stepKey(step), step);
  return {
    head: current,
    events,
    appendHistory,
    changed: events.length > 0 || appendHistory.length > 0 || !sameData(head, current),
    ignored: ignored.length > 0 ? ignored.join("; ") : null,
    due: { steps: [...launch.values()], nextAt: nextDueAt(current, ctx.now) },
  };
}

/** What `apply` of a recovery leaves as it was: no turn runs, and the status is what the head derives. */
function isNoopRecovery(head: SessionHead, input: MachineInput): boolean {
  return (
    input?.type === "recover" &&
    Number.isInteger(input.fence) &&
    !isTurnActive(head.turn) &&
    head.status === deriveStatus(head)
  );
}

/** A key naming one attempt of one step. */
export function stepKey(step: DueStep): string {
  const id =
    step.kind === "RunModel"
      ? `model:${step.modelStep}`
      : step.kind === "ReconcileCall"
        ? `reconcile:${step.toolCallId}`
        : `tool:${step.toolCallId}`;
  return `${step.turnId}/${id}/${step.attempt}`;
}

/** Whether the head has this attempt of this step started and without a result. */
export function isStarted(head: SessionHead, step: DueStep): boolean {
  const turn = head.turn;
  if (!isTurnActive(turn) || turn.turnId !== step.turnId) return false;
  if (step.kind === "RunModel") {
    return (
      turn.phase === "model" &&
      turn.modelRunning &&
      turn.modelSteps + 1 === step.modelStep &&
      turn.modelAttempts + 1 === step.attempt
    );
  }
  if (step.kind === "ReconcileCall") {
    return currentCalls(turn).some(
      (call) =>
        call.toolCallId === step.toolCallId && call.status === "reconciling" && call.reconcileAttempts === step.attempt,
    );
  }
  return currentCalls(turn).some(
    (call) => call.toolCallId === step.toolCallId && call.status === "running" && call.attempts === step.attempt,
  );
}
