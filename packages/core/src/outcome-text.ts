/** The text a model sees for each final outcome, and the note a failed turn leaves. */
import type { FollowUp, ToolCallRecord, Turn } from "./schemas.js";

/** Core writes this at the start of the note a failed turn leaves for the next turn's model. */
export const TURN_FAILURE_NOTE_PREFIX = "[previous turn failed]";

/** Core writes this at the start of the note a cancelled turn leaves for the next turn's model. */
export const TURN_CANCELLED_NOTE_PREFIX = "[previous turn cancelled]";

/** Whether a user item's text is a note core left (a failed or a cancelled turn's). */
export const isTurnNote = (text: string): boolean =>
  text.startsWith(TURN_FAILURE_NOTE_PREFIX) || text.startsWith(TURN_CANCELLED_NOTE_PREFIX);

/**
 * Core writes this at the start of the notes of a follow-up turn: a person resolved an attention
 * interrupt. Unlike the turn notes, such a note is the turn's own user item (and the outcome of a
 * call run again joins the turn after it), so `isTurnNote` does not count it.
 */
export const ATTENTION_NOTE_PREFIX = "[attention resolved]";

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
        "It may or may not have taken effect: check before doing it again. A person has been asked to check it."
      );
    case "cancelled":
      return `The tool call was cancelled: ${call.message ?? "its turn was cancelled"}.`;
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

/**
 * The note stored as a user item when a turn is cancelled: every call of the turn and what became
 * of it, so the next turn's model knows what ran, what was cancelled and what is unknown.
 */
export function describeTurnCancellation(
  turn: Pick<Turn, "userText" | "calls">,
  reason: string | null,
  modelCallAborted: boolean,
): string {
  const lines = turn.calls.map(
    (call) => `- ${call.name}(${clip(call.arguments, 200)}): ${call.status}: ${clip(describeOutcome(call), 300)}`,
  );
  const calls = lines.length > 0 ? `Its tool calls:\n${lines.join("\n")}` : "It made no tool call.";
  const why = reason ? ` (reason: ${clip(reason, 200)})` : "";
  const model = modelCallAborted ? " A model call in flight was stopped; its answer was discarded." : "";
  return `${TURN_CANCELLED_NOTE_PREFIX} The turn for the message "${clip(turn.userText, 200)}" was cancelled by a person${why}.${model}\n${calls}`;
}

const callLabel = (call: FollowUp["call"]) => `${call.name}(${clip(call.arguments, 200)}) of ${call.turnId}`;

/**
 * The user item of a follow-up turn: what a person found when they checked a call whose outcome was
 * unknown (an attention interrupt resolved `done` or `not_done`).
 */
export function describeAttentionResolution(followUp: FollowUp): string {
  const what = `${ATTENTION_NOTE_PREFIX} A person checked the tool call ${callLabel(followUp.call)}, whose outcome was unknown:`;
  if (followUp.outcome === "done") return `${what} it took effect. Its result: ${clip(followUp.output ?? "", 2000)}`;
  if (!followUp.rerun) return `${what} it did not take effect. Its turn had been cancelled, so it does not run again.`;
  const how =
    followUp.call.effect === "idempotent_write"
      ? "it runs again now, with the same idempotency key"
      : "it runs again once a person approves it again";
  return `${what} it did not take effect, so ${how}.`;
}

/** The note that joins a follow-up turn once the call it ran again is final: the call's new outcome. */
export function describeRerunOutcome(call: Pick<ToolCallRecord, "name" | "status" | "output" | "message">): string {
  return `${ATTENTION_NOTE_PREFIX} The tool call ${call.name} ran again: ${call.status}: ${clip(describeOutcome(call), 2000)}`;
}
