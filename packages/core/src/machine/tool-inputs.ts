/** Handlers of a tool call's results: its outcome, or a failed attempt the policy table may retry. */
import { policyTable } from "../policy.js";
import { backoffDelay } from "../retry.js";
import type { ToolCallRecord, Turn } from "../schemas.js";
import type { Draft } from "./draft.js";
import type { ApplyContext, Handled, MachineInput } from "./types.js";

type Input<T extends MachineInput["type"]> = Extract<MachineInput, { type: T }>;

/** The running turn and call when the call runs exactly this attempt. */
function runningAttempt(
  draft: Draft,
  input: { turnId: string; toolCallId: string; attempt: number },
): [Turn, ToolCallRecord] | string {
  const turn = draft.activeTurn();
  if (!turn) return "no turn is running";
  if (turn.turnId !== input.turnId) return `the result is for ${input.turnId}, the running turn is ${turn.turnId}`;
  const call = draft.currentCall(input.toolCallId);
  if (!call) return `the running response has no call ${input.toolCallId}`;
  if (call.status !== "running") return `call ${input.toolCallId} is ${call.status}, not running`;
  if (call.attempts !== input.attempt)
    return `call ${input.toolCallId} runs attempt ${call.attempts}, not ${input.attempt}`;
  return [turn, call];
}

export function onCallFinished(draft: Draft, input: Input<"call_finished">, ctx: ApplyContext): Handled {
  const found = runningAttempt(draft, input);
  if (typeof found === "string") return found;

  const [turn, call] = found;
  const outcome: unknown = input.outcome;
  if (typeof outcome === "object" && outcome !== null) {
    const o = outcome as Record<string, unknown>;
    if (o.status === "succeeded" && typeof o.output === "string") {
      draft.finishCall(turn, call, "succeeded", { output: o.output });
      return null;
    }
    if (o.status === "failed" && typeof o.message === "string") {
      draft.finishCall(turn, call, "failed", { message: o.message });
      return null;
    }
  }
  attemptFailed(draft, turn, call, "the runner returned a malformed tool result", ctx);
  return null;
}

/** The tool stopped and stated that it changed nothing: `cancelled` while its turn is cancelled, else a failed attempt. */
export function onCallCancelled(draft: Draft, input: Input<"call_cancelled">, ctx: ApplyContext): Handled {
  const found = runningAttempt(draft, input);
  if (typeof found === "string") return found;

  const [turn, call] = found;
  if (turn.phase === "cancelling") {
    draft.giveUpCall(turn, call, `it stopped on the cancellation and changed nothing (${String(input.message)})`, true);
  } else {
    attemptFailed(draft, turn, call, `the tool stopped without a cancellation: ${String(input.message)}`, ctx);
  }
  return null;
}

export function onCallAttemptFailed(draft: Draft, input: Input<"call_attempt_failed">, ctx: ApplyContext): Handled {
  const found = runningAttempt(draft, input);
  if (typeof found === "string") return found;

  const [turn, call] = found;
  attemptFailed(draft, turn, call, String(input.error), ctx);
  return null;
}

/** Retry after the config's backoff while the policy table allows another attempt; else the exhausted outcome. */
function attemptFailed(
  draft: Draft,
  turn: Turn,
  call: ToolCallRecord,
  error: string,
  { config, now }: ApplyContext,
): void {
  call.lastError = error;
  if (turn.phase === "cancelling") {
    // Nothing is retried once the turn is being cancelled.
    draft.giveUpCall(turn, call, `it stopped after its turn was cancelled (${error})`);
    return;
  }
  if (call.attempts >= call.maxAttempts) {
    const rule = policyTable[call.effect];
    const tries = call.maxAttempts === 1 ? "its only attempt" : `all ${call.maxAttempts} attempts`;
    const message = `${tries} failed; last error: ${error}`;
    if (rule.exhausted === "outcome_unknown") draft.callInDoubt(turn, call, message);
    else draft.finishCall(turn, call, rule.exhausted, { message });
    return;
  }
  draft.step(turn, call.step, "failed", { toolCallId: call.toolCallId, attempt: call.attempts, detail: error });
  call.status = "pending";
  call.retryAt = now + backoffDelay(config.toolBackoff, call.attempts);
}

/** The running turn and call when the call's check runs exactly this attempt. */
function checkingAttempt(
  draft: Draft,
  input: { turnId: string; toolCallId: string; attempt: number },
): [Turn, ToolCallRecord] | string {
  const turn = draft.activeTurn();
  if (!turn) return "no turn is running";
  if (turn.turnId !== input.turnId) return `the result is for ${input.turnId}, the running turn is ${turn.turnId}`;
  const call = draft.currentCall(input.toolCallId);
  if (!call) return `the running response has no call ${input.toolCallId}`;
  if (call.status !== "reconciling") return `call ${input.toolCallId} is ${call.status}, not being checked`;
  if (call.reconcileAttempts !== input.attempt)
    return `the check of call ${input.toolCallId} runs attempt ${call.reconcileAttempts}, not ${input.attempt}`;
  return [turn, call];
}

/** A check answered: `done`, `not_done` or `unknown` settle the call (`Draft.reconciled`); anything else is a failed attempt. */
export function onReconcileFinished(draft: Draft, input: Input<"reconcile_finished">, ctx: ApplyContext): Handled {
  const found = checkingAttempt(draft, input);
  if (typeof found === "string") return found;

  const [turn, call] = found;
  const result: unknown = input.result;
  if (typeof result === "object" && result !== null) {
    const r = result as Record<string, unknown>;
    if (r.status === "done" && typeof r.output === "string") {
      draft.reconciled(turn, call, "done", r.output);
      return null;
    }
    if (r.status === "not_done" || r.status === "unknown") {
      draft.reconciled(turn, call, r.status, null);
      return null;
    }
  }
  draft.reconcileAttemptFailed(
    turn,
    call,
    "reconcile returned a malformed result (expected { status: done, output } | { status: not_done } | { status: unknown })",
    ctx.now,
  );
  return null;
}

export function onReconcileAttemptFailed(
  draft: Draft,
  input: Input<"reconcile_attempt_failed">,
  ctx: ApplyContext,
): Handled {
  const found = checkingAttempt(draft, input);
  if (typeof found === "string") return found;

  const [turn, call] = found;
  draft.reconcileAttemptFailed(turn, call, String(input.error), ctx.now);
  return null;
}
