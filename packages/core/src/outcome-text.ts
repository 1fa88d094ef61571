/** The text a model sees for each final outcome, and the note a failed turn leaves. */
import type { ToolCallRecord, Turn } from "./schemas.js";

/** Core writes this at the start of the note a failed turn leaves for the next turn's model. */
export const TURN_FAILURE_NOTE_PREFIX = "[previous turn failed]";

export const defaultRejectionMessage = "A person rejected this tool call; it did not run.";

export function describeOutcome(call: Pick<ToolCallRecord, "status" | "output" | "message">): string {
  switch (call.status) {
    case "succeeded":
      return call.output ?? "";
    case "failed":
      return `The tool call failed: ${call.message ?? "no reason given"}`;
    case "rejected":
      return call.message ?? defaultRejectionMessage;
    case "outcome_unknown":
      return (
        `The outcome of this tool call is unknown (${call.message ?? "no result was recorded"}). ` +
        "It may or may not have taken effect: check before doing it again."
      );
    default:
      return `The tool call is ${call.status}.`;
  }
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

/** The note stored as a user item when a turn fails, so the next turn's model knows which calls already ran. */
export function describeTurnFailure(turn: Pick<Turn, "userText" | "calls">, error: string): string {
  const ran = turn.calls.filter((call) => call.attempts > 0 || call.status === "rejected");
  const lines = ran.map(
    (call) => `- ${call.name}(${clip(call.arguments, 200)}): ${call.status}: ${clip(describeOutcome(call), 300)}`,
  );
  const calls =
    lines.length > 0 ? `Tool calls that already ran in it:\n${lines.join("\n")}` : "No tool call ran in it.";
  return `${TURN_FAILURE_NOTE_PREFIX} The turn for the message "${clip(turn.userText, 200)}" failed: ${error}\n${calls}`;
}
