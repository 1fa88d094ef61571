/**
 * Drives one turn the way core's engine does (without its durability): RunModel, then each
 * requested call through callTool, then RunModel again with every outcome, until a final answer.
 */
import { ToolExecutionError, type HistoryItem, type Runner } from "@durable-agents/core";
import type { ModelDelta, RecordedOutcome, RunModelResult } from "@durable-agents/core/engine";

export interface DrivenTurn {
  readonly history: HistoryItem[];
  readonly results: RunModelResult[];
  readonly deltas: ModelDelta[];
  readonly final: Extract<RunModelResult, { kind: "final" }>;
}

export type Decide = (call: {
  toolCallId: string;
  name: string;
  arguments: string;
  needsApproval: boolean;
}) => { status: "run" } | { status: "rejected" | "outcome_unknown"; text: string };

export async function driveTurn(
  runner: Runner,
  history: readonly HistoryItem[],
  text: string,
  decide: Decide = () => ({ status: "run" }),
): Promise<DrivenTurn> {
  const turnStart = history.length;
  const turnHistory = [...history, runner.userItem("message", text)];
  const results: RunModelResult[] = [];
  const deltas: ModelDelta[] = [];
  let runState: string | null = null;
  let outcomes: RecordedOutcome[] = [];
  for (let modelStep = 1; modelStep <= 10; modelStep++) {
    const result = await runner.runModel({
      sessionId: "s-1",
      turnId: `t-${turnStart}`,
      modelStep,
      history: turnHistory,
      turnStart,
      runState,
      outcomes,
      joined: [],
      signal: new AbortController().signal,
      emit: (delta) => deltas.push(delta),
    });
    results.push(result);
    if (result.kind === "final") {
      return { history: [...turnHistory, ...result.items], results, deltas, final: result };
    }
    runState = result.runState;
    outcomes = [];
    for (const call of result.calls) {
      const decision = decide(call);
      if (decision.status !== "run") {
        outcomes.push({
          toolCallId: call.toolCallId,
          name: call.name,
          status: decision.status,
          text: decision.text,
          output: null,
        });
        continue;
      }
      // Like the engine: a ToolExecutionError is a final `failed`; any other error fails the test here.
      const called = await runner
        .callTool({
          sessionId: "s-1",
          turnId: `t-${turnStart}`,
          toolCallId: call.toolCallId,
          name: call.name,
          arguments: call.arguments,
          attempt: 1,
          idempotencyKey: `s-1/t-${turnStart}/${call.toolCallId}`,
          signal: new AbortController().signal,
        })
        .catch((error: unknown) => {
          if (ToolExecutionError.isInstance(error)) return { status: "failed" as const, message: error.message };
          throw error;
        });
      outcomes.push(
        called.status === "succeeded"
          ? {
              toolCallId: call.toolCallId,
              name: call.name,
              status: "succeeded",
              text: called.output,
              output: called.output,
            }
          : {
              toolCallId: call.toolCallId,
              name: call.name,
              status: "failed",
              text: `failed: ${called.message}`,
              output: null,
            },
      );
    }
  }
  throw new Error("the turn did not end within 10 model steps");
}
