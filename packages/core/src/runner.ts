/**
 * The runner interface: what a framework adapter implements (DESIGN §6). Plain data in, plain data
 * out; the engine owns retries, records and durability.
 */
import type { RunnerDescription } from "./fingerprint.js";
import type { ToolDescription, ToolPolicies } from "./policy.js";
import type { FinalCallStatus, HistoryItem, Usage } from "./schemas.js";

/** The recorded outcome of one call, handed back to the model on the next `RunModel`. */
export interface RecordedOutcome {
  readonly toolCallId: string;
  readonly name: string;
  readonly status: FinalCallStatus;
  /** The text the model should see: the output, or a description of the failure it can act on. */
  readonly text: string;
  /** The tool's output when it succeeded. */
  readonly output: string | null;
}

export type ModelDelta = { readonly kind: "text" | "reasoning"; readonly text: string };

export interface RunModelInput {
  readonly sessionId: string;
  readonly turnId: string;
  /** 1-based number of this RunModel step within the turn. */
  readonly modelStep: number;
  /** Every stored history item of the session, the turn's user item last on the turn's first step. */
  readonly history: readonly HistoryItem[];
  /** Length of `history` before this turn's user item (items at and after it belong to the turn). */
  readonly turnStart: number;
  /** The run state the previous step of this turn returned, or null on the turn's first step. */
  readonly runState: string | null;
  /** Outcomes of every call the previous step asked for, in model order (empty on the first step). */
  readonly outcomes: readonly RecordedOutcome[];
  /**
   * Messages steered into this turn (`client.steer`) that joined it up to this step, in order. Each
   * is already in `history` (after the turn's user item); the runner puts it in the model's input
   * where it joined (right after the outcome of `afterToolCallId`, or after the turn's user item
   * when that is null), and leaves it out of the turn's final items.
   */
  readonly joined: readonly JoinedModelMessage[];
  /** Aborted when the turn is cancelled or the worker is losing the session: stop the model call. */
  readonly signal: AbortSignal;
  /** Text and reasoning deltas as they stream; the engine coalesces them into events. */
  readonly emit: (delta: ModelDelta) => void;
}

export interface JoinedModelMessage {
  /** The runner's user item for the steered text (as `userItem("message", text)` made it). */
  readonly item: HistoryItem;
  readonly historyIndex: number;
  /** The RunModel step before which it joined. */
  readonly modelStep: number;
  /** It follows this call's outcome in the model's input; null: it follows the turn's user item. */
  readonly afterToolCallId: string | null;
}

export interface RequestedToolCall {
  readonly toolCallId: string;
  readonly name: string;
  /** The raw arguments as the model produced them (JSON text). */
  readonly arguments: string;
  /** The framework's own approval decision for this call (e.g. a `needsApproval` flag or function). */
  readonly needsApproval: boolean;
}

export type RunModelResult =
  | {
      readonly kind: "final";
      /** The turn's new history items, after its user item, in order. */
      readonly items: readonly HistoryItem[];
      readonly text: string;
      readonly usage: Usage;
    }
  | {
      readonly kind: "tool_calls";
      readonly calls: readonly RequestedToolCall[];
      /** The framework's serialized run state, handed back on the next RunModel. */
      readonly runState: string;
      readonly usage: Usage;
    };

export interface CallToolInput {
  readonly sessionId: string;
  readonly turnId: string;
  readonly toolCallId: string;
  readonly name: string;
  readonly arguments: string;
  readonly attempt: number;
  readonly idempotencyKey: string;
  /** Aborted when the call's turn is cancelled or the worker is losing the session (also `currentToolCall().signal`). */
  readonly signal: AbortSignal;
}

/**
 * A finished call. `failed` is final and not retried (invalid arguments, a guardrail, a
 * `ToolExecutionError`). Any other error is thrown, and the engine retries it per the policy table.
 */
export type CallToolResult =
  | { readonly status: "succeeded"; readonly output: string }
  | { readonly status: "failed"; readonly message: string };

export type UserItemKind = "message" | "turn_failure_note";

export interface Runner {
  /** The tools the agent can call, with what the framework says about them. */
  tools(): readonly ToolDescription[];
  /**
   * Extra checks of a policy map beyond "every policy names a tool" (which core does). Throws
   * `PolicyError`.
   */
  validatePolicies?(policies: ToolPolicies): void;
  /**
   * What the agent definition is, as plain JSON: the adapter package and its version, and for each
   * agent of the graph its model name, instructions, tools with their argument schemas, and handoffs.
   * Core hashes it (with the tools' effects and approval rules) into the fingerprint a session is
   * pinned to, so it must be the same in every process that builds the same definition, and change
   * whenever resuming a session on the new definition could go wrong. Optional: without it the
   * fingerprint covers only the tool names, effects and approval rules.
   */
  describe?(): RunnerDescription;
  /** The framework's user item for a message, or for the note left by a failed turn. */
  userItem(kind: UserItemKind, text: string): HistoryItem;
  /** Exactly one model step of the framework. */
  runModel(input: RunModelInput): Promise<RunModelResult>;
  /** One tool call, for real. */
  callTool(input: CallToolInput): Promise<CallToolResult>;
}
