/** The AI SDK tool message that hands one recorded outcome back to the model. */
import type { RecordedOutcome } from "@durable-agents/core/engine";
import type { ModelMessage } from "ai";

/**
 * `succeeded` becomes a text result; `rejected` the SDK's own `execution-denied` result with the
 * engine's text as its reason; `failed` and `outcome_unknown` an `error-text` result. The model
 * sees the engine's text in every case.
 */
export function outcomeMessage(outcome: RecordedOutcome): ModelMessage {
  const output =
    outcome.status === "succeeded"
      ? { type: "text" as const, value: outcome.text }
      : outcome.status === "rejected"
        ? { type: "execution-denied" as const, reason: outcome.text }
        : { type: "error-text" as const, value: outcome.text };
  return {
    role: "tool",
    content: [{ type: "tool-result", toolCallId: outcome.toolCallId, toolName: outcome.name, output }],
  };
}
