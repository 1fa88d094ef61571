/**
 * How every engine turns a step's end into the machine's input. A tool call's attempt runs inside
 * the call's context (`currentToolCall()`), with its abort signal; its end is the outcome,
 * `call_cancelled` for a `ToolCancelledError`, a final `failed` for a `ToolExecutionError`, and a
 * failed attempt (which the policy table may retry) for any other error. A RunModel attempt that
 * threw is `modelAttemptFailed`.
 */
import { ModelStepError, StoredStateError, ToolCancelledError, ToolExecutionError } from "./errors.js";
import { idempotencyKey as keyOf } from "./policy.js";
import type { MachineInput } from "./machine.js";
import { type CoalescerOptions, DeltaCoalescer } from "./coalescer.js";
import { joinedMessages, outcomesForNextModelStep } from "./machine.js";
import type { Runner } from "./runner.js";
import type { EventBody, HistoryItem, SessionHead, ToolCallRecord } from "./schemas.js";
import { runInToolCall } from "./tool-context.js";

export interface ToolAttempt {
  readonly sessionId: string;
  readonly turnId: string;
  /** The call as the head that started this attempt records it. */
  readonly call: Pick<ToolCallRecord, "toolCallId" | "name" | "arguments" | "idempotencyKey">;
  readonly attempt: number;
  readonly signal: AbortSignal;
}

export const errorText = (error: unknown): string =>
  error instanceof Error ? error.message || error.name : typeof error === "string" ? error : JSON.stringify(error);

/** Runs the attempt with `runner.callTool`; never throws: every end is an input for the machine. */
export async function runToolAttempt(runner: Pick<Runner, "callTool">, attempt: ToolAttempt): Promise<MachineInput> {
  const { sessionId, turnId, call, signal } = attempt;
  const base = { turnId, toolCallId: call.toolCallId, attempt: attempt.attempt } as const;
  const idempotencyKey = call.idempotencyKey ?? keyOf(sessionId, turnId, call.toolCallId);
  try {
    const outcome = await runInToolCall(
      {
        sessionId,
        turnId,
        toolCallId: call.toolCallId,
        toolName: call.name,
        idempotencyKey,
        attempt: attempt.attempt,
        signal,
      },
      () =>
        runner.callTool({
          sessionId,
          turnId,
          toolCallId: call.toolCallId,
          name: call.name,
          arguments: call.arguments,
          attempt: attempt.attempt,
          idempotencyKey,
          signal,
        }),
    );
    return { type: "call_finished", ...base, outcome };
  } catch (error) {
    if (ToolCancelledError.isInstance(error)) return { type: "call_cancelled", ...base, message: error.message };
    if (ToolExecutionError.isInstance(error))
      return { type: "call_finished", ...base, outcome: { status: "failed", message: error.message } };
    return { type: "call_attempt_failed", ...base, error: errorText(error) };
  }
}

/**
 * The machine's input for a RunModel attempt that threw: retried per `modelRetry`, except a failure
 * the runner says is final (`ModelStepError`) or a run state it cannot read (`StoredStateError`).
 */
export function modelAttemptFailed(
  step: { readonly turnId: string; readonly modelStep: number; readonly attempt: number },
  error: unknown,
): MachineInput {
  const retryable = !ModelStepError.isInstance(error) && !StoredStateError.isInstance(error);
  return {
    type: "model_attempt_failed",
    turnId: step.turnId,
    modelStep: step.modelStep,
    attempt: step.attempt,
    error: errorText(error),
    ...(retryable ? {} : { retryable }),
  };
}

export interface ModelAttempt {
  /** The head that started the attempt (its turn's run state, outcomes and joined messages). */
  readonly head: SessionHead;
  readonly step: { readonly turnId: string; readonly modelStep: number; readonly attempt: number };
  /** The session's history, the head's `historyLength` items. */
  readonly history: readonly HistoryItem[];
  /** The turn's signal: aborted, the attempt's answer and its deltas are discarded by the machine and here. */
  readonly signal: AbortSignal;
  /** Hands a coalesced batch of text deltas over while the model streams (the engine's way to store them). */
  readonly publish: (events: EventBody[]) => Promise<void>;
  readonly coalescing?: CoalescerOptions;
}

/**
 * One attempt of a RunModel step, as every engine runs it: the runner's `runModel` on the head that
 * started it, its deltas coalesced and published while it streams, its end as the machine's input,
 * and the deltas still buffered (none when the turn's signal was aborted), which the engine stores
 * with that input. Never throws.
 */
export async function runModelAttempt(
  runner: Runner,
  attempt: ModelAttempt,
): Promise<{ input: MachineInput; events: EventBody[] }> {
  const { head, step, signal } = attempt;
  const turn = head.turn!;
  const history = [...attempt.history];
  const coalescer = new DeltaCoalescer(step.turnId, attempt.publish, attempt.coalescing);
  let input: MachineInput;
  try {
    const result = await runner.runModel({
      sessionId: head.sessionId,
      turnId: step.turnId,
      modelStep: step.modelStep,
      history,
      turnStart: turn.historyStart,
      runState: turn.runState,
      outcomes: outcomesForNextModelStep(head),
      joined: joinedMessages(head, history),
      signal,
      emit: (delta) => coalescer.push(delta),
    });
    input = { type: "model_completed", turnId: step.turnId, modelStep: step.modelStep, attempt: step.attempt, result };
  } catch (error) {
    input = modelAttemptFailed(step, error);
  }
  const buffered = await coalescer.finish();
  return { input, events: signal.aborted ? [] : buffered };
}
