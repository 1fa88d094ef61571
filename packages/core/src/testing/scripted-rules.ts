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
 * throws `ScriptedModelFailure` (every time: a retried step fails the same way).
 */
import { createHash } from "node:crypto";

/** The prefix of the note a failed turn leaves (core writes it; test models count such notes). */
export { TURN_FAILURE_NOTE_PREFIX } from "../outcome-text.js";

export interface ScriptedModelInput {
  /** The text of the turn's user message. */
  readonly userText: string;
  /** Model responses of this turn that asked for tools, before this one. */
  readonly toolResponses: number;
  /** Outcomes the model has seen in this turn, in order: the tool name and the text it was given. */
  readonly toolResults: readonly { readonly name: string; readonly text: string }[];
  /** User items of the history (before this turn) that start with `TURN_FAILURE_NOTE_PREFIX`. */
  readonly failureNotesSeen: number;
}

export interface ScriptedCall {
  readonly name: string;
  readonly arguments: string;
}

export type ScriptedDecision =
  | { readonly kind: "tool_calls"; readonly calls: readonly ScriptedCall[] }
  | { readonly kind: "text"; readonly text: string };

/** Thrown by `decideScriptedResponse` when the script reaches a `fail model` line. */
export class ScriptedModelFailure extends Error {
  constructor() {
    super("the scripted model failed (the script says `fail model`)");
    this.name = "ScriptedModelFailure";
  }
}

const FAIL = "fail model";

export function parseScript(userText: string): { blocks: (ScriptedCall[] | "fail")[]; prose: string } {
  const blocks: (ScriptedCall[] | "fail")[] = [[]];
  const prose: string[] = [];
  for (const raw of userText.split("\n")) {
    const line = raw.trim();
    if (line === "then") {
      blocks.push([]);
      continue;
    }
    if (line === FAIL) {
      blocks.push("fail", []);
      continue;
    }
    const match = /^call\s+(\S+)\s*(.*)$/.exec(line);
    if (match) {
      (blocks[blocks.length - 1] as ScriptedCall[]).push({ name: match[1]!, arguments: match[2] || "{}" });
    } else if (line.length > 0) {
      prose.push(line);
    }
  }
  return { blocks: blocks.filter((block) => block === "fail" || block.length > 0), prose: prose.join("\n") };
}

export function decideScriptedResponse(input: ScriptedModelInput): ScriptedDecision {
  const { blocks, prose } = parseScript(input.userText);
  const block = blocks[input.toolResponses];
  if (block === "fail") throw new ScriptedModelFailure();
  if (block) return { kind: "tool_calls", calls: block };
  const noted = input.failureNotesSeen > 0 ? `(noted ${input.failureNotesSeen} failed turn(s)) ` : "";
  if (input.toolResults.length === 0) return { kind: "text", text: `${noted}You said: ${prose || input.userText}` };
  const outcomes = input.toolResults.map((result) => `${result.name} -> ${result.text}`).join(" | ");
  return { kind: "text", text: `${noted}Results: ${outcomes}` };
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
