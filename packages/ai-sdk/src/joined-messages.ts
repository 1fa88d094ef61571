/**
 * Messages steered into a running turn (`client.steer`). Core stores each in the history (after the
 * turn's user item) and lists them in `RunModelInput.joined`; the model must see each where it
 * joined the turn, not at the end of the history. They are placed anew on every step (never kept
 * in the run state) and never become items of the turn.
 */
import type { HistoryItem } from "@durable-agents/core";
import type { JoinedModelMessage } from "@durable-agents/core/engine";
import type { ModelMessage } from "ai";

/** The history without the joined messages: what precedes the turn's own messages in the model's input. */
export function historyWithoutJoined(
  history: readonly HistoryItem[],
  joined: readonly JoinedModelMessage[],
): ModelMessage[] {
  if (joined.length === 0) return history.map((entry) => entry.item as ModelMessage);
  const skip = new Set(joined.map((message) => message.historyIndex));
  return history.flatMap((entry, index) => (skip.has(index) ? [] : [entry.item as ModelMessage]));
}

const holdsResultOf = (message: ModelMessage, toolCallId: string): boolean =>
  message.role === "tool" &&
  Array.isArray(message.content) &&
  message.content.some((part) => part.type === "tool-result" && part.toolCallId === toolCallId);

/**
 * The turn's messages (after its user item) with each joined message inserted where it joined:
 * right after the tool message that holds the result of `afterToolCallId`, or first when that is
 * null. Messages that joined at the same place keep their order. One whose call is not among the
 * turn's messages (which core never hands over) goes last rather than being lost.
 */
export function placeJoined(
  turnMessages: readonly ModelMessage[],
  joined: readonly JoinedModelMessage[],
): ModelMessage[] {
  if (joined.length === 0) return [...turnMessages];
  const first: ModelMessage[] = [];
  const after = new Map<number, ModelMessage[]>();
  const last: ModelMessage[] = [];
  for (const message of joined) {
    const item = message.item.item as ModelMessage;
    if (message.afterToolCallId === null) {
      first.push(item);
      continue;
    }
    const anchor = message.afterToolCallId;
    const index = turnMessages.findIndex((candidate) => holdsResultOf(candidate, anchor));
    if (index < 0) {
      last.push(item);
      continue;
    }
    const group = after.get(index) ?? [];
    group.push(item);
    after.set(index, group);
  }
  const placed: ModelMessage[] = [...first];
  turnMessages.forEach((message, index) => {
    placed.push(message);
    placed.push(...(after.get(index) ?? []));
  });
  placed.push(...last);
  return placed;
}
