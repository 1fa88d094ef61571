/**
 * A framework-free runner for core's own tests. Its "framework items" are small JSON messages; its
 * model follows `decideScriptedResponse`, so every response is derived from the input.
 */
import { createRequire } from "node:module";
import type { RunnerDescription } from "../fingerprint.js";
import type { ToolDescription } from "../policy.js";
import type { CallToolInput, CallToolResult, RunModelInput, RunModelResult, Runner, UserItemKind } from "../runner.js";
import type { DisplayItem, HistoryItem } from "../schemas.js";
import {
  decideScriptedResponse,
  hangUntilAborted,
  scriptedToolCallId,
  TURN_CANCELLED_NOTE_PREFIX,
  TURN_FAILURE_NOTE_PREFIX,
  type ConformanceTool,
  type ScriptedModelInput,
} from "./scripted-rules.js";

/** A message of the scripted framework. */
export type ScriptedItem =
  | { readonly role: "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string }
  | { readonly role: "assistant"; readonly toolCalls: readonly { id: string; name: string; arguments: string }[] }
  | { readonly role: "tool"; readonly toolCallId: string; readonly name: string; readonly content: string };

export interface ScriptedRunnerOptions {
  readonly tools: readonly ConformanceTool[];
  /** Characters per streamed text delta. Default 7. */
  readonly chunkSize?: number;
}

/** This package's version (the scripted runner's "adapter" is core itself). */
const coreVersion = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;

export class ScriptedRunner implements Runner {
  /** Model calls made so far. */
  modelCalls = 0;
  private readonly specs: ReadonlyMap<string, ConformanceTool>;
  private readonly chunkSize: number;

  constructor(options: ScriptedRunnerOptions) {
    this.specs = new Map(options.tools.map((tool) => [tool.name, tool]));
    this.chunkSize = options.chunkSize ?? 7;
  }

  tools(): ToolDescription[] {
    return [...this.specs.values()].map((tool) => ({
      name: tool.name,
      approval: tool.needsApproval ? "always" : "never",
    }));
  }

  /** One agent named "scripted", its tools with their parameter specs; no instructions, no handoffs. */
  describe(): RunnerDescription {
    return {
      adapter: { name: "@durable-agents/core/testing#ScriptedRunner", version: coreVersion },
      agents: [
        {
          name: "scripted",
          model: "scripted",
          instructions: null,
          tools: [...this.specs.values()].map((tool) => ({ name: tool.name, parameters: tool.parameters })),
          handoffs: [],
        },
      ],
    };
  }

  userItem(kind: UserItemKind, text: string): HistoryItem {
    return toHistoryItem({ role: "user", content: text }, kind === "turn_failure_note" ? "note" : "user");
  }

  async runModel(input: RunModelInput): Promise<RunModelResult> {
    this.modelCalls += 1;
    const user = input.history[input.turnStart]?.item as ScriptedItem | undefined;
    if (user?.role !== "user" || !("content" in user)) throw new Error("the turn has no user item");
    const turnItems: ScriptedItem[] = input.runState
      ? (JSON.parse(input.runState) as { items: ScriptedItem[] }).items
      : [];
    for (const outcome of input.outcomes) {
      turnItems.push({ role: "tool", toolCallId: outcome.toolCallId, name: outcome.name, content: outcome.text });
    }
    // What the model sees: the turn's items with each steered message where it joined.
    const seen: ScriptedItem[] = [...turnItems];
    for (const joined of input.joined) {
      const item = joined.item.item as ScriptedItem;
      const after =
        joined.afterToolCallId === null
          ? -1
          : seen.findIndex((i) => i.role === "tool" && i.toolCallId === joined.afterToolCallId);
      let at = after + 1;
      while (seen[at]?.role === "user") at++;
      seen.splice(at, 0, item);
    }
    const steered = seen.flatMap((item) => (item.role === "user" && "content" in item ? [item.content] : []));
    const earlier = earlierNotes(input.history, input.turnStart);
    const modelInput: ScriptedModelInput = {
      userText: user.content,
      toolResponses: seen.filter((item) => "toolCalls" in item).length,
      toolResults: seen.flatMap((item) => (item.role === "tool" ? [{ name: item.name, text: item.content }] : [])),
      failureNotesSeen: earlier.failureNotes,
      cancelNotesSeen: earlier.cancelNotes,
      steered,
    };
    const decision = decideScriptedResponse(modelInput);
    if (decision.kind === "hang") return hangUntilAborted(input.signal, user.content);
    const inputTokens = Math.ceil(historyJsonLength(input.history) / 4) + turnItems.length;
    if (decision.kind === "tool_calls") {
      const calls = decision.calls.map((call, index) => ({
        toolCallId: scriptedToolCallId(modelInput, index),
        name: call.name,
        arguments: call.arguments,
        needsApproval: this.specs.get(call.name)?.needsApproval ?? false,
      }));
      turnItems.push({
        role: "assistant",
        toolCalls: calls.map((c) => ({ id: c.toolCallId, name: c.name, arguments: c.arguments })),
      });
      const outputTokens = calls.length * 10;
      return {
        kind: "tool_calls",
        calls,
        runState: JSON.stringify({ items: turnItems }),
        usage: { modelCalls: 1, inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
      };
    }
    for (let i = 0; i < decision.text.length; i += this.chunkSize) {
      input.emit({ kind: "text", text: decision.text.slice(i, i + this.chunkSize) });
    }
    turnItems.push({ role: "assistant", content: decision.text });
    const outputTokens = Math.ceil(decision.text.length / 4);
    return {
      kind: "final",
      items: turnItems.map((item) => toHistoryItem(item)),
      text: decision.text,
      usage: { modelCalls: 1, inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
    };
  }

  async callTool(input: CallToolInput): Promise<CallToolResult> {
    const spec = this.specs.get(input.name);
    if (!spec) return { status: "failed", message: `there is no tool named "${input.name}"` };
    const args = parseArguments(spec, input.arguments);
    if (typeof args === "string") return { status: "failed", message: `invalid arguments for ${input.name}: ${args}` };
    const output = await spec.execute(args);
    return { status: "succeeded", output: typeof output === "string" ? output : JSON.stringify(output) };
  }
}

/** What the scripted model reads of a history item: its JSON length and which note it is, if any. */
interface ItemFacts {
  readonly jsonLength: number;
  readonly note: "failure" | "cancel" | null;
}

/** Each history item's facts, kept per item object: a stored item never changes. */
const itemFacts = new WeakMap<HistoryItem, ItemFacts>();

function factsOf(item: HistoryItem): ItemFacts {
  let facts = itemFacts.get(item);
  if (facts === undefined) {
    const scripted = item.item as ScriptedItem;
    const text = scripted.role === "user" ? String((scripted as { content?: unknown }).content) : "";
    facts = {
      jsonLength: JSON.stringify(item).length,
      note: text.startsWith(TURN_FAILURE_NOTE_PREFIX)
        ? "failure"
        : text.startsWith(TURN_CANCELLED_NOTE_PREFIX)
          ? "cancel"
          : null,
    };
    itemFacts.set(item, facts);
  }
  return facts;
}

/**
 * Running sums over a history's items, kept per history (keyed by its first item): a call with the
 * same items and some more costs the new ones only (and a pointer compare per item to find where
 * the history it is handed stops matching what was summed).
 */
interface PrefixSums {
  readonly items: HistoryItem[];
  /** After item i: the JSON lengths of items 0..i, and the failure and cancellation notes among them. */
  readonly jsonLength: number[];
  readonly failureNotes: number[];
  readonly cancelNotes: number[];
}

const prefixes = new WeakMap<HistoryItem, PrefixSums>();

function prefixSums(history: readonly HistoryItem[]): PrefixSums | null {
  const first = history[0];
  if (first === undefined) return null;
  let sums = prefixes.get(first);
  if (sums === undefined) {
    sums = { items: [], jsonLength: [], failureNotes: [], cancelNotes: [] };
    prefixes.set(first, sums);
  }
  const shared = Math.min(sums.items.length, history.length);
  let same = 0;
  while (same < shared && sums.items[same] === history[same]) same++;
  if (same < sums.items.length && same < history.length) {
    // The history differs from what was summed from item `same` on: sum again from there.
    for (const list of [sums.items, sums.jsonLength, sums.failureNotes, sums.cancelNotes]) list.length = same;
  }
  for (let i = sums.items.length; i < history.length; i++) {
    const item = history[i]!;
    const facts = factsOf(item);
    sums.items.push(item);
    sums.jsonLength.push((sums.jsonLength[i - 1] ?? 0) + facts.jsonLength);
    sums.failureNotes.push((sums.failureNotes[i - 1] ?? 0) + (facts.note === "failure" ? 1 : 0));
    sums.cancelNotes.push((sums.cancelNotes[i - 1] ?? 0) + (facts.note === "cancel" ? 1 : 0));
  }
  return sums;
}

/**
 * `JSON.stringify(history).length`, without serializing again the items of earlier calls: the
 * history a worker hands the runner holds the same objects, one step to the next, with new ones
 * at its end. The scripted model's token count derives from its whole input, as a real model's
 * does, but its cost stays out of the per-step figures a benchmark compares (a real model call is
 * not this process's CPU), also on a long history.
 */
export function historyJsonLength(history: readonly HistoryItem[]): number {
  const sums = prefixSums(history);
  return 2 + Math.max(history.length - 1, 0) + (sums?.jsonLength[history.length - 1] ?? 0);
}

/** The turn failure and cancellation notes among the user items before `end`. */
function earlierNotes(history: readonly HistoryItem[], end: number): { failureNotes: number; cancelNotes: number } {
  const last = Math.min(end, history.length) - 1;
  const sums = last >= 0 ? prefixSums(history) : null;
  return { failureNotes: sums?.failureNotes[last] ?? 0, cancelNotes: sums?.cancelNotes[last] ?? 0 };
}

function parseArguments(spec: ConformanceTool, text: string): Record<string, unknown> | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "the arguments are not valid JSON";
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "the arguments must be a JSON object";
  const args = value as Record<string, unknown>;
  for (const [name, type] of Object.entries(spec.parameters)) {
    if (typeof args[name] !== type) return `"${name}" must be a ${type}`;
  }
  return args;
}

function toHistoryItem(item: ScriptedItem, role?: DisplayItem["role"]): HistoryItem {
  if ("toolCalls" in item) {
    return {
      item,
      display: {
        role: "assistant",
        text: "",
        toolCalls: item.toolCalls.map((c) => ({ toolCallId: c.id, name: c.name, arguments: c.arguments })),
      },
    };
  }
  if (item.role === "tool") return { item, display: { role: "tool", text: item.content, toolCallId: item.toolCallId } };
  return { item, display: { role: role ?? item.role, text: item.content } };
}
