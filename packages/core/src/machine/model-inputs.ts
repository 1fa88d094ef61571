/** Handlers of a RunModel step's results: the model's answer, or a failed attempt. */
import { idempotencyKey, policyTable, resolveCallPolicy } from "../policy.js";
import { backoffDelay } from "../retry.js";
import type { RequestedToolCall, RunModelResult } from "../runner.js";
import { addUsage, type ToolCallRecord, type Turn } from "../schemas.js";
import { describeOutcome } from "../outcome-text.js";
import type { Draft } from "./draft.js";
import type { ApplyContext, Handled, MachineConfig, MachineInput, PlannedCall } from "./types.js";

type Input<T extends MachineInput["type"]> = Extract<MachineInput, { type: T }>;

/** The running turn when it awaits the result of exactly this started attempt of this RunModel step. */
function awaitedModelStep(draft: Draft, input: { turnId: string; modelStep: number; attempt: number }): Turn | string {
  const turn = draft.activeTurn();
  if (!turn) return "no turn is running";
  if (turn.turnId !== input.turnId) return `the result is for ${input.turnId}, the running turn is ${turn.turnId}`;
  if (turn.phase !== "model") return "the turn is not waiting for a model step";
  if (turn.modelSteps + 1 !== input.modelStep)
    return `the turn waits for model step ${turn.modelSteps + 1}, not ${input.modelStep}`;
  if (!turn.modelRunning) return `model step ${input.modelStep} is not started`;
  if (turn.modelAttempts + 1 !== input.attempt)
    return `model step ${input.modelStep} runs attempt ${turn.modelAttempts + 1}, not ${input.attempt}`;
  return turn;
}

export function onModelCompleted(draft: Draft, input: Input<"model_completed">, ctx: ApplyContext): Handled {
  const turn = awaitedModelStep(draft, input);
  if (typeof turn === "string") return turn;

  const problem = malformedModelResult(input.result);
  if (problem) {
    modelAttemptFailed(draft, turn, problem, ctx);
    return null;
  }
  const { config } = ctx;
  const result = input.result;
  turn.modelSteps += 1;
  turn.modelAttempts = 0;
  turn.modelRetryAt = null;
  turn.modelRunning = false;
  turn.usage = addUsage(turn.usage, result.usage);
  draft.head.usage = addUsage(draft.head.usage, result.usage);
  draft.step(turn, "RunModel", "completed", { attempt: turn.modelSteps });
  if (result.kind === "final") {
    turn.runState = null;
    turn.phase = "completed";
    turn.finalText = result.text;
    draft.append(result.items);
    draft.events.push({ type: "turn_completed", data: { turnId: turn.turnId, text: result.text, usage: turn.usage } });
    draft.requeueSteered(turn);
    draft.startNextTurn();
    return null;
  }
  if (turn.modelSteps >= config.maxModelSteps) {
    draft.failTurn(turn, `the turn reached its limit of ${config.maxModelSteps} model steps`, config);
    return null;
  }
  const calls = planCalls(result.calls, config);
  turn.runState = result.runState;
  turn.phase = "tools";
  draft.events.push({
    type: "tool_calls_requested",
    data: {
      turnId: turn.turnId,
      calls: calls.map((call) => ({ toolCallId: call.toolCallId, name: call.name, arguments: call.arguments })),
    },
  });
  calls.forEach((planned, index) => {
    const rule = policyTable[planned.effect];
    const interruptId =
      planned.needsApproval && !planned.invalid ? `${turn.turnId}-${turn.modelSteps}-${index + 1}` : null;
    const call: ToolCallRecord = {
      toolCallId: planned.toolCallId,
      name: planned.name,
      arguments: planned.arguments,
      response: turn.modelSteps,
      effect: planned.effect,
      step: rule.step,
      needsApproval: planned.needsApproval,
      status: interruptId ? "awaiting_approval" : "pending",
      attempts: 0,
      maxAttempts: rule.maxAttempts,
      idempotencyKey: idempotencyKey(draft.head.sessionId, turn.turnId, planned.toolCallId),
      interruptId,
      retryAt: null,
      lastError: null,
      output: null,
      message: null,
      reconcileAttempts: 0,
      reconcileMaxAttempts: 0,
      unknownReason: null,
      reconciled: null,
      reruns: 0,
    };
    turn.calls.push(call);
    if (planned.invalid) {
      call.status = "failed";
      call.message = planned.invalid;
      draft.events.push({
        type: "tool_call_completed",
        data: {
          turnId: turn.turnId,
          toolCallId: call.toolCallId,
          name: call.name,
          status: "failed",
          text: describeOutcome(call),
        },
      });
      return;
    }
    if (interruptId) draft.askApproval(turn, call, interruptId, null);
  });
  draft.resumeIfDone(turn);
  return null;
}

export function onModelAttemptFailed(draft: Draft, input: Input<"model_attempt_failed">, ctx: ApplyContext): Handled {
  const turn = awaitedModelStep(draft, input);
  if (typeof turn === "string") return turn;

  modelAttemptFailed(draft, turn, String(input.error), ctx, input.retryable !== false);
  return null;
}

/**
 * One attempt of the RunModel step failed: retry after the config's backoff, or fail the turn after
 * the last attempt, or at once when the failure is not retryable.
 */
function modelAttemptFailed(
  draft: Draft,
  turn: Turn,
  error: string,
  { config, now }: ApplyContext,
  retryable = true,
): void {
  turn.modelRunning = false;
  turn.modelAttempts += 1;
  draft.step(turn, "RunModel", "failed", { attempt: turn.modelAttempts, detail: error });
  if (!retryable) {
    draft.failTurn(turn, `the model step failed and cannot be retried: ${error}`, config);
    return;
  }
  if (turn.modelAttempts >= config.modelRetry.maxAttempts) {
    draft.failTurn(turn, `the model step failed ${turn.modelAttempts} time(s); last error: ${error}`, config);
    return;
  }
  turn.modelRetryAt = now + backoffDelay(config.modelRetry, turn.modelAttempts);
  draft.step(turn, "RunModel", "running", { attempt: turn.modelAttempts + 1 });
}

/** The effect and approval of each requested call; a call of a tool the agent does not have cannot run. */
export function planCalls(
  calls: readonly RequestedToolCall[],
  config: Pick<MachineConfig, "tools" | "policies">,
): PlannedCall[] {
  // One read of the tool list for the whole response (a runner's list may change between transitions).
  const tools = config.tools;
  const toolNames = new Set(tools.map((tool) => tool.name));
  return calls.map((call) => ({
    toolCallId: call.toolCallId,
    name: call.name,
    arguments: call.arguments,
    ...resolveCallPolicy(call.name, config.policies, tools, Boolean(call.needsApproval)),
    ...(toolNames.has(call.name) ? {} : { invalid: `the agent has no tool named "${call.name}"` }),
  }));
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;

/** Why a runner's model result cannot be applied (it then counts as a failed attempt), or null. */
export function malformedModelResult(result: RunModelResult): string | null {
  const r: unknown = result;
  const malformed = "the runner returned a malformed model result";
  if (!isObject(r) || !isObject(r.usage)) return malformed;
  const usage = r.usage;
  if (!["modelCalls", "inputTokens", "outputTokens", "totalTokens"].every((key) => Number.isFinite(usage[key])))
    return malformed;
  if (r.kind === "final") {
    const itemsOk =
      Array.isArray(r.items) && r.items.every((item: unknown) => isObject(item) && isObject(item.display));
    return itemsOk && typeof r.text === "string" ? null : malformed;
  }
  if (r.kind !== "tool_calls" || !Array.isArray(r.calls) || typeof r.runState !== "string") return malformed;
  const ids = new Set<string>();
  for (const call of r.calls as unknown[]) {
    if (
      !isObject(call) ||
      typeof call.toolCallId !== "string" ||
      typeof call.name !== "string" ||
      typeof call.arguments !== "string"
    ) {
      return "the runner returned a malformed tool call";
    }
    if (ids.has(call.toolCallId)) return `tool call ID ${call.toolCallId} appears twice`;
    ids.add(call.toolCallId);
  }
  return null;
}
