/**
 * One attempt of a check of a call whose outcome is in doubt (a `ReconcileCall` step), as every
 * engine runs it: the tool's `reconcile` from the session's policies, given the call's idempotency
 * key and parsed arguments, outside any tool call's context. Its end is `reconcile_finished` with
 * what the check found, or `reconcile_attempt_failed` when it threw (retried like a `read`).
 */
import type { SessionDefinition } from "./definition.js";
import type { MachineInput } from "./machine.js";
import { idempotencyKey as keyOf } from "./policy.js";
import type { ToolCallRecord } from "./schemas.js";
import { runOutsideToolCall } from "./tool-context.js";
import { errorText } from "./tool-step.js";

export interface ReconcileAttempt {
  readonly sessionId: string;
  readonly turnId: string;
  /** The call as the head that started this attempt records it. */
  readonly call: Pick<ToolCallRecord, "toolCallId" | "name" | "arguments" | "idempotencyKey">;
  /** The attempt of the check (the step's `attempt`), not of the call. */
  readonly attempt: number;
  /**
   * The engine's own signal (a lost lease, a process ending). Not the turn's: a cancellation does not
   * stop a check, which runs to find out what the cancelled call did.
   */
  readonly signal: AbortSignal;
}

const parseArguments = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** Runs the check; never throws: every end is an input for the machine. */
export async function runReconcileAttempt(
  definition: Pick<SessionDefinition, "policies">,
  attempt: ReconcileAttempt,
): Promise<MachineInput> {
  const { sessionId, turnId, call, signal } = attempt;
  const base = { turnId, toolCallId: call.toolCallId, attempt: attempt.attempt } as const;
  const reconcile = definition.policies[call.name]?.reconcile;
  if (typeof reconcile !== "function") {
    return { type: "reconcile_attempt_failed", ...base, error: `the policy of "${call.name}" declares no reconcile` };
  }
  try {
    const result = await runOutsideToolCall(() =>
      reconcile({
        idempotencyKey: call.idempotencyKey ?? keyOf(sessionId, turnId, call.toolCallId),
        arguments: parseArguments(call.arguments),
        attempt: attempt.attempt,
        signal,
        sessionId,
        turnId,
        toolCallId: call.toolCallId,
        toolName: call.name,
      }),
    );
    return { type: "reconcile_finished", ...base, result };
  } catch (error) {
    return { type: "reconcile_attempt_failed", ...base, error: errorText(error) };
  }
}
