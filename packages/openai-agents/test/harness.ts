/**
 * Drives a runner through turns the way core's engine does (RunModel, then every CallTool inside
 * the tool call context, then RunModel with the outcomes), with no store: enough to test the
 * runner's side of the contract.
 */
import { idempotencyKey, ToolExecutionError, type HistoryItem, type Runner, type Usage } from "@durable-agents/core";
import {
  runInToolCall,
  type ModelDelta,
  type RecordedOutcome,
  type RequestedToolCall,
  type RunModelResult,
} from "@durable-agents/core/engine";

export interface StepLog {
  readonly result: RunModelResult;
  readonly runStateBytes: number;
}

export interface TurnOptions {
  /** Decide what happens to a call instead of running it (return undefined to run it). */
  readonly decide?: (call: RequestedToolCall) => Omit<RecordedOutcome, "toolCallId" | "name"> | undefined;
  readonly onDelta?: (delta: ModelDelta) => void;
  readonly maxSteps?: number;
}

export interface TurnResult {
  readonly text: string;
  readonly items: readonly HistoryItem[];
  readonly steps: StepLog[];
  readonly outcomes: RecordedOutcome[];
  readonly usage: Usage[];
}

export async function runTurn(
  runner: Runner,
  history: HistoryItem[],
  userText: string,
  options: TurnOptions = {},
): Promise<TurnResult> {
  const sessionId = "s1";
  const turnId = `t${history.length}`;
  const turnStart = history.length;
  history.push(runner.userItem("message", userText));
  let runState: string | null = null;
  let outcomes: RecordedOutcome[] = [];
  const allOutcomes: RecordedOutcome[] = [];
  const steps: StepLog[] = [];
  for (let modelStep = 1; modelStep <= (options.maxSteps ?? 10); modelStep++) {
    const result = await runner.runModel({
      sessionId,
      turnId,
      modelStep,
      history,
      turnStart,
      runState,
      outcomes,
      joined: [],
      signal: new AbortController().signal,
      emit: options.onDelta ?? (() => {}),
    });
    steps.push({ result, runStateBytes: result.kind === "tool_calls" ? Buffer.byteLength(result.runState) : 0 });
    if (result.kind === "final") {
      history.push(...result.items);
      return {
        text: result.text,
        items: result.items,
        steps,
        outcomes: allOutcomes,
        usage: steps.map((s) => s.result.usage),
      };
    }
    runState = result.runState;
    outcomes = [];
    for (const call of result.calls) {
      const decided = options.decide?.(call);
      const outcome: RecordedOutcome = decided
        ? { toolCallId: call.toolCallId, name: call.name, ...decided }
        : await callOnce(runner, sessionId, turnId, call);
      outcomes.push(outcome);
      allOutcomes.push(outcome);
    }
  }
  throw new Error("the turn did not finish");
}

export async function callOnce(
  runner: Runner,
  sessionId: string,
  turnId: string,
  call: RequestedToolCall,
): Promise<RecordedOutcome> {
  const key = idempotencyKey(sessionId, turnId, call.toolCallId);
  const base = { toolCallId: call.toolCallId, name: call.name };
  try {
    const result = await runInToolCall(
      { sessionId, turnId, toolCallId: call.toolCallId, toolName: call.name, idempotencyKey: key, attempt: 1 },
      () =>
        runner.callTool({
          sessionId,
          turnId,
          toolCallId: call.toolCallId,
          name: call.name,
          arguments: call.arguments,
          attempt: 1,
          idempotencyKey: key,
          signal: new AbortController().signal,
        }),
    );
    if (result.status === "succeeded")
      return { ...base, status: "succeeded", text: result.output, output: result.output };
    return { ...base, status: "failed", text: `The tool call failed: ${result.message}`, output: null };
  } catch (error) {
    if (ToolExecutionError.isInstance(error))
      return { ...base, status: "failed", text: `The tool call failed: ${error.message}`, output: null };
    return {
      ...base,
      status: "outcome_unknown",
      text: `The outcome of this tool call is unknown (${String(error)})`,
      output: null,
    };
  }
}
