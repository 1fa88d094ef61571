/** The state machine's inputs, config and results (DESIGN §7b). */
import type { ToolDescription, ToolEffect, ToolPolicies } from "../policy.js";
import type { BackoffPolicy, RetryPolicy } from "../retry.js";
import type { ReconcileResult } from "../policy.js";
import type { CallToolResult, RunModelResult } from "../runner.js";
import type { EventBody, HistoryItem, InboxItem, SessionHead } from "../schemas.js";

/** A requested call with the effect and approval the session's policies give it. */
export interface PlannedCall {
  readonly toolCallId: string;
  readonly name: string;
  readonly arguments: string;
  readonly effect: ToolEffect;
  readonly needsApproval: boolean;
  /** Set when the call cannot run at all (e.g. the model named a tool the agent does not have). */
  readonly invalid?: string;
}

/**
 * What the machine is fed. A step's result names the step and the attempt it belongs to (as its
 * `DueStep` said); a result for any other step or attempt (late, repeated, of an earlier turn) is
 * ignored.
 */
export type MachineInput =
  /** An inbox entry. A message carries the runner's user item for it. */
  | { readonly type: "inbox"; readonly item: InboxItem; readonly userItem?: HistoryItem }
  /** An engine took over the session: steps found started were interrupted by a dead worker. */
  | { readonly type: "recover"; readonly fence: number }
  /** Time passed (a backoff may have ended): start what is due by `now`. */
  | { readonly type: "tick" }
  | {
      readonly type: "model_completed";
      readonly turnId: string;
      readonly modelStep: number;
      readonly attempt: number;
      /** The runner's result as it returned it; a malformed one counts as a failed attempt. */
      readonly result: RunModelResult;
    }
  | {
      readonly type: "model_attempt_failed";
      readonly turnId: string;
      readonly modelStep: number;
      readonly attempt: number;
      readonly error: string;
      /** False: another attempt cannot help (e.g. the runner threw `ModelStepError`); the turn fails at once. Default true. */
      readonly retryable?: boolean;
    }
  | {
      readonly type: "call_finished";
      readonly turnId: string;
      readonly toolCallId: string;
      readonly attempt: number;
      /** `failed` is final (invalid arguments, `ToolExecutionError`); a malformed outcome counts as a failed attempt. */
      readonly outcome: CallToolResult;
    }
  | {
      /** The attempt stopped and the tool stated that it changed nothing (it threw `ToolCancelledError`). */
      readonly type: "call_cancelled";
      readonly turnId: string;
      readonly toolCallId: string;
      readonly attempt: number;
      readonly message: string;
    }
  | {
      /** The attempt threw an error that the policy table retries (or not). */
      readonly type: "call_attempt_failed";
      readonly turnId: string;
      readonly toolCallId: string;
      readonly attempt: number;
      readonly error: string;
    }
  | {
      /** A check (the tool's `reconcile`) of a call whose outcome is in doubt answered; a malformed answer counts as a failed attempt. */
      readonly type: "reconcile_finished";
      readonly turnId: string;
      readonly toolCallId: string;
      readonly attempt: number;
      readonly result: ReconcileResult;
    }
  | {
      /** A check threw: it is retried like a `read`; after its last attempt the call is `outcome_unknown`. */
      readonly type: "reconcile_attempt_failed";
      readonly turnId: string;
      readonly toolCallId: string;
      readonly attempt: number;
      readonly error: string;
    };

export type MachineInputType = MachineInput["type"];

/** What an input handler answers: null when it applied its input, else why the input does not fit the state. */
export type Handled = string | null;

/** The rules of one agent's sessions (built from a definition by `machineConfig`). */
export interface MachineConfig {
  /** RunModel steps a turn may take. */
  readonly maxModelSteps: number;
  /** Attempts of one RunModel step, and the backoff between them. */
  readonly modelRetry: RetryPolicy;
  /** Backoff between the attempts of a tool call (the attempts come from the policy table). */
  readonly toolBackoff: BackoffPolicy;
  /** The agent's tools and the session's policies: the effect and approval of each requested call. */
  readonly tools: readonly ToolDescription[];
  readonly policies: ToolPolicies;
  /** How long a cancellation waits for calls in flight before it gives them up (ms). */
  readonly cancelGraceMs: number;
  /** The runner's user item for the note a failed or cancelled turn leaves (deterministic: same text, same item). */
  readonly failureNote: (text: string) => HistoryItem;
}

export interface ApplyContext {
  readonly config: MachineConfig;
  /** Epoch milliseconds: the machine reads no clock. */
  readonly now: number;
  /**
   * False while an engine stops gracefully: the transition starts nothing, and what is ready stays
   * due (unstarted) for whoever drives the session next. Default true.
   */
  readonly startSteps?: boolean;
}

/** A step started by a transition, to be launched once. `attempt` is what its result must carry. */
export type DueStep =
  | { readonly kind: "RunModel"; readonly turnId: string; readonly modelStep: number; readonly attempt: number }
  | {
      readonly kind: "CallTool" | "CallSingleAttemptTool";
      readonly turnId: string;
      readonly toolCallId: string;
      readonly attempt: number;
    }
  | {
      /**
       * One attempt of a check of a call whose outcome is in doubt: run the tool's `reconcile`
       * (`runReconcileAttempt`), never the tool. `attempt` counts the call's checks, not its attempts.
       */
      readonly kind: "ReconcileCall";
      readonly turnId: string;
      readonly toolCallId: string;
      readonly attempt: number;
    };

/** A step the session has to run that is not started yet: ready, or waiting for its backoff until `notBefore`. */
export type WaitingStep = DueStep & { readonly notBefore: number | null };

export interface Due {
  /**
   * The steps this transition started, in model order: launch each now, once, after the transition
   * is durable (a tool attempt's start is counted in `head`, so it must be stored before the tool runs).
   */
  readonly steps: readonly DueStep[];
  /** When the next step that is not started becomes due (epoch ms; feed a `tick` then), or null. */
  readonly nextAt: number | null;
}

export interface Transition {
  readonly head: SessionHead;
  readonly events: EventBody[];
  readonly appendHistory: HistoryItem[];
  /** Whether the head, the events or the history changed: false means there is nothing to store. */
  readonly changed: boolean;
  /** Why the input was not applied (it does not fit the state), or null. An ignored input changes nothing. */
  readonly ignored: string | null;
  readonly due: Due;
}
