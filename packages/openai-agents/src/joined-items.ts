/**
 * Messages steered into a running turn (`client.steer`). Core stores each in the history (after the
 * turn's user item) and lists them in `RunModelInput.joined`. The SDK's run state never holds them:
 * the first step's input is the history without them, and every model call of every step gets them
 * put back where they joined by a `callModelInputFilter`. So they keep their place on later steps,
 * never appear in the run's history (the turn's items), and run states stay as they were.
 */
import type { AgentInputItem, CallModelInputFilter } from "@openai/agents";
import type { HistoryItem } from "@durable-agents/core";
import type { JoinedModelMessage } from "@durable-agents/core/engine";

type Item = Record<string, unknown>;

/** The history's items without the joined messages: the SDK's input on a turn's first step. */
export function historyWithoutJoined(
  history: readonly HistoryItem[],
  joined: readonly JoinedModelMessage[],
): AgentInputItem[] {
  if (joined.length === 0) return history.map((entry) => entry.item as AgentInputItem);
  const skip = new Set(joined.map((message) => message.historyIndex));
  return history.flatMap((entry, index) => (skip.has(index) ? [] : [entry.item as AgentInputItem]));
}

const isUserMessage = (item: Item | undefined): boolean =>
  item?.["role"] === "user" && (item["type"] === "message" || item["type"] === undefined);

const textOf = (item: Item | undefined): string => {
  const content = item?.["content"];
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part: unknown) => String((part as Item)?.["text"] ?? "")).join("");
};

/**
 * Where the turn's user item is in a model input: at `turnStart` (the SDK's input starts with the
 * history), else the last user message with its text (a handoff input filter may have changed the
 * earlier history). -1 when it is not there.
 */
function turnItemIndex(input: readonly AgentInputItem[], turnItem: unknown, turnStart: number): number {
  const items = input as unknown as Item[];
  const text = textOf(turnItem as Item);
  if (isUserMessage(items[turnStart]) && textOf(items[turnStart]) === text) return turnStart;
  for (let i = items.length - 1; i >= 0; i--) if (isUserMessage(items[i]) && textOf(items[i]) === text) return i;
  return -1;
}

/**
 * A model input with each joined message inserted where it joined: right after the
 * `function_call_result` of `afterToolCallId`, or right after the turn's user item when that is
 * null. Messages that joined at the same place keep their order; one whose place is not in the
 * input (a handoff input filter removed it) goes last rather than being lost. Each is a fresh copy.
 */
export function placeJoined(
  input: readonly AgentInputItem[],
  joined: readonly JoinedModelMessage[],
  turnItem: unknown,
  turnStart: number,
): AgentInputItem[] {
  const items = input as unknown as Item[];
  const after = new Map<number, AgentInputItem[]>();
  const last: AgentInputItem[] = [];
  let turnIndex: number | undefined;
  for (const message of joined) {
    const copy = structuredClone(message.item.item) as AgentInputItem;
    let index: number;
    if (message.afterToolCallId === null) {
      turnIndex ??= turnItemIndex(input, turnItem, turnStart);
      index = turnIndex;
    } else {
      const callId = message.afterToolCallId;
      index = items.findIndex((item) => item["type"] === "function_call_result" && item["callId"] === callId);
    }
    if (index < 0) {
      last.push(copy);
      continue;
    }
    const group = after.get(index) ?? [];
    group.push(copy);
    after.set(index, group);
  }
  const placed: AgentInputItem[] = [];
  input.forEach((item, index) => {
    placed.push(item);
    placed.push(...(after.get(index) ?? []));
  });
  placed.push(...last);
  return placed;
}

/**
 * The `callModelInputFilter` for one step with joined messages: it places them, then hands the
 * result to the application's own filter (from `runConfig`), which so sees what the model would.
 */
export function joinedInputFilter(
  joined: readonly JoinedModelMessage[],
  turnItem: unknown,
  turnStart: number,
  own: CallModelInputFilter<any> | undefined,
): CallModelInputFilter<any> {
  const filter: CallModelInputFilter<any> = async (args) => {
    const modelData = { ...args.modelData, input: placeJoined(args.modelData.input, joined, turnItem, turnStart) };
    return own ? await own({ ...args, modelData }) : modelData;
  };
  // The placement copies nothing it was given: the application's choice about identities stands.
  if (own?.preserveInputIdentity === true) filter.preserveInputIdentity = true;
  return filter;
}
