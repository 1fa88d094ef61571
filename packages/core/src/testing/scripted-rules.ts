/**
 * The rules every deterministic test model follows, whatever its framework, so that the
 * conformance suites can run the same scenarios on every runner. A response is derived from the
 * input alone: a retried step gets the same answer.
 *
 * The user message is a tiny script. Each line `call <tool> <json arguments>` asks for a tool call;
 * a line `then` separates the responses of one turn. The first response asks for the calls of the
 * first block, the next response (after the outcomes came back) those of the second block, and so
 * on. When every block was asked for, the model answers with text: the outcomes of the turn, or an
 * echo of the message when there were none. A line `fail model` is a block at which the model
 * throws `ScriptedModelFailure` (every time: a retried step fails the same way). A line `hang model`
 * is a block at which the model call never answers: it waits for its abort signal
 * (`hangUntilAborted`), so a test can cancel a turn while a model call is in flight.
 *
 * Messages steered into a turn are the user messages after the turn's own (see
 * `scriptedTurnStart`); a final answer ends with ` (also: <their texts>)`.
 */
import { createHash } from "node:crypto";
import { isTurnNote, TURN_CANCELLED_NOTE_PREFIX, TURN_FAILURE_NOTE_PREFIX } from "../outcome-text.js";

/** The prefixes of the notes failed and cancelled turns leave (core writes them; test models count such notes). */
export { isTurnNote, TURN_CANCELLED_NOTE_PREFIX, TURN_FAILURE_NOTE_PREFIX };

export interface ScriptedModelInput {
  /** The text of the turn's user message. */
  readonly userText: string;
  /** Model responses of this turn that asked for tools, before this one. */
  readonly toolResponses: number;
  /** Outcomes the model has seen in this turn, in order: the tool name and the text it was given. */
  readonly toolResults: readonly { readonly name: string; readonly text: string }[];
  /** User items of the history (before this turn) that start with `TURN_FAILURE_NOTE_PREFIX`. */
  readonly failureNotesSeen: number;
  /** User items of the history (before this turn) that start with `TURN_CANCELLED_NOTE_PREFIX`. Default 0. */
  readonly cancelNotesSeen?: number;
  /** Texts of the messages steered into this turn that the model sees, in order. Default none. */
  readonly steered?: readonly string[];
}

export interface ScriptedCall {
  readonly name: string;
  readonly arguments: string;
}

export type ScriptedDecision =
  | { readonly kind: "tool_calls"; readonly calls: readonly ScriptedCall[] }
  | { readonly kind: "text"; readonly text: string }
  /** The model call never answers: the model awaits `hangUntilAborted`. */
  | { readonly kind: "hang" };

/** Thrown by `decideScriptedResponse` when the script reaches a `fail model` line. */
export class ScriptedModelFailure extends Error {
  constructor() {
    super("the scripted model failed (the script says `fail model`)");
    this.name = "ScriptedModelFailure";
  }
}

const FAIL = "fail model";
const HANG = "hang model";

type Block = ScriptedCall[] | "fail" | "hang";

export function parseScript(userText: string): { blocks: Block[]; prose: string } {
  const blocks: Block[] = [[]];
  const prose: string[] = [];
  for (const raw of userText.split("\n")) {
    const line = raw.trim();
    if (line === "then") {
      blocks.push([]);
      continue;
    }
    if (line === FAIL || line === HANG) {
      blocks.push(line === FAIL ? "fail" : "hang", []);
      continue;
    }
    const match = /^call\s+(\S+)\s*(.*)$/.exec(line);
    if (match) {
      (blocks[blocks.length - 1] as ScriptedCall[]).push({ name: match[1]!, arguments: match[2] || "{}" });
    } else if (line.length > 0) {
      prose.push(line);
    }
  }
  return { blocks: blocks.filter((block) => typeof block === "string" || block.length > 0), prose: prose.join("\n") };
}

export function decideScriptedResponse(input: ScriptedModelInput): ScriptedDecision {
  const { blocks, prose } = parseScript(input.userText);
  const block = blocks[input.toolResponses];
  if (block === "fail") throw new ScriptedModelFailure();
  if (block === "hang") return { kind: "hang" };
  if (block) return { kind: "tool_calls", calls: block };
  const cancelled = input.cancelNotesSeen ?? 0;
  const noted =
    (input.failureNotesSeen > 0 ? `(noted ${input.failureNotesSeen} failed turn(s)) ` : "") +
    (cancelled > 0 ? `(noted ${cancelled} cancelled turn(s)) ` : "");
  const also = input.steered && input.steered.length > 0 ? ` (also: ${input.steered.join(" | ")})` : "";
  if (input.toolResults.length === 0)
    return { kind: "text", text: `${noted}You said: ${prose || input.userText}${also}` };
  const outcomes = input.toolResults.map((result) => `${result.name} -> ${result.text}`).join(" | ");
  return { kind: "text", text: `${noted}Results: ${outcomes}${also}` };
}

/** One message of a model's input, as the scripted rules classify it. */
export interface ScriptedMessage {
  readonly kind: "user" | "tool_result" | "other";
  /** The text of a user message. */
  readonly text?: string;
}

/**
 * The index of the turn's own user message in a model's input: the last user message that is not
 * a note and follows neither a tool result nor another user message that is not a note (those are
 * messages steered into the turn). -1 when there is none.
 */
export function scriptedTurnStart(messages: readonly ScriptedMessage[]): number {
  const isPlainUser = (m: ScriptedMessage | undefined) => m?.kind === "user" && !isTurnNote(m.text ?? "");
  for (let i = messages.length - 1; i >= 0; i--) {
    if (!isPlainUser(messages[i])) continue;
    const before = messages[i - 1];
    if (before?.kind === "tool_result" || isPlainUser(before)) continue;
    return i;
  }
  return -1;
}

/** What the scripted rules read from the messages around the turn's user message (`scriptedTurnStart`). */
export function scriptedNotesAndSteers(
  messages: readonly ScriptedMessage[],
  turnStart: number,
): { failureNotesSeen: number; cancelNotesSeen: number; steered: string[] } {
  let failureNotesSeen = 0;
  let cancelNotesSeen = 0;
  for (const m of messages.slice(0, Math.max(0, turnStart))) {
    if (m.kind !== "user") continue;
    if ((m.text ?? "").startsWith(TURN_FAILURE_NOTE_PREFIX)) failureNotesSeen++;
    else if ((m.text ?? "").startsWith(TURN_CANCELLED_NOTE_PREFIX)) cancelNotesSeen++;
  }
  const steered = messages
    .slice(turnStart + 1)
    .filter((m) => m.kind === "user" && !isTurnNote(m.text ?? ""))
    .map((m) => m.text ?? "");
  return { failureNotesSeen, cancelNotesSeen, steered };
}

interface HangRegistry {
  started: Map<string, number>;
  aborted: Map<string, number>;
}
const hangKey = Symbol.for("durable-agents.scripted-hangs");
const hangSlot = globalThis as unknown as Record<symbol, HangRegistry | undefined>;
hangSlot[hangKey] ??= { started: new Map(), aborted: new Map() };
const hangs: HangRegistry = hangSlot[hangKey];

/**
 * What a scripted model does at a `hang model` block: wait until the call's abort signal fires, then
 * throw its reason. Counted by the turn's user text, for `scriptedHangs`. A call without a signal
 * hangs for `maxMs` (default 60 s) and then throws.
 */
export function hangUntilAborted(signal: AbortSignal | undefined, userText: string, maxMs = 60_000): Promise<never> {
  hangs.started.set(userText, (hangs.started.get(userText) ?? 0) + 1);
  return new Promise<never>((_, reject) => {
    const done = () => {
      clearTimeout(timer);
      hangs.aborted.set(userText, (hangs.aborted.get(userText) ?? 0) + 1);
      const reason: unknown = signal?.reason;
      reject(reason instanceof Error ? reason : new Error("the model call was aborted"));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", done);
      reject(new Error(`the scripted model hung for ${maxMs} ms and was never aborted`));
    }, maxMs);
    timer.unref?.();
    if (signal?.aborted) done();
    else signal?.addEventListener("abort", done, { once: true });
  });
}

/** How many `hang model` calls for this user text started, and how many of them saw their abort signal. */
export function scriptedHangs(userText: string): { started: number; aborted: number } {
  return { started: hangs.started.get(userText) ?? 0, aborted: hangs.aborted.get(userText) ?? 0 };
}

/** A tool call ID derived from the input, so that a retried step asks for the same IDs. */
export function scriptedToolCallId(input: ScriptedModelInput, index: number): string {
  const hash = createHash("sha256")
    .update(`${input.userText}\u0000${input.toolResponses}\u0000${index}\u0000${input.toolResults.length}`)
    .digest("hex")
    .slice(0, 12);
  return `call_${hash}_${input.toolResponses + 1}_${index + 1}`;
}

/** A tool as the conformance suites declare it; each adapter builds its framework's own tool from it. */
export interface ConformanceTool {
  readonly name: string;
  readonly description: string;
  /** Required parameters and their JSON types. Arguments with a missing or mistyped field are invalid. */
  readonly parameters: Readonly<Record<string, "string" | "number">>;
  /** The tool's body. Errors it throws must reach the engine (not become text). */
  execute(args: Record<string, unknown>): Promise<string> | string;
  /** The framework's own "needs approval" flag. */
  readonly needsApproval?: boolean;
}
