/**
 * The UI message types of a durable session: the AI SDK's `UIMessage` with this package's message
 * metadata (the turn, its status and usage) and one data part type, `data-step` (one entry of the
 * session timeline). Type-only imports: nothing here runs code of `ai` or core.
 */
import type { FinalCallStatus, StepKind, ToolEffect, Usage } from "@durable-agents/core";
import type { UIMessage, UIMessageChunk } from "ai";

/** Where a turn stands, as its assistant message's metadata says. */
export type DurableTurnStatus = "running" | "awaiting_approval" | "cancelling" | "completed" | "failed" | "cancelled";

/** The metadata of a turn's assistant message (merged by the AI SDK as chunks arrive). */
export interface DurableMessageMetadata {
  readonly turnId?: string;
  /** The user message that started the turn. */
  readonly userText?: string;
  readonly status?: DurableTurnStatus;
  /** Event timestamps (ISO 8601). */
  readonly startedAt?: string;
  readonly endedAt?: string;
  /** The turn's model usage, once it completed. */
  readonly usage?: Usage;
  /** Why the turn failed. */
  readonly error?: string;
  /** The cancellation, once one was applied. */
  readonly cancellation?: {
    readonly reason: string | null;
    readonly requestId: string | null;
    readonly modelCallAborted?: boolean;
    readonly graceUntil?: string;
  };
}

/** The step kinds of core, and `Recovery`: a worker took the session over and settled the calls it found running. */
export type TimelineStepKind = StepKind | "Recovery";

/** One step of a turn, as the timeline shows it. Updated in place (same part ID) as the step moves on. */
export interface TimelineStep {
  /** `<turnId>/<key>`: the key names the logical step (a retried attempt keeps it). */
  readonly id: string;
  readonly turnId: string;
  readonly kind: TimelineStepKind;
  /** The sequence number of the event that started the step (sort by it). */
  readonly seq: number;
  readonly toolCallId?: string;
  readonly toolName?: string;
  readonly status: "running" | "completed" | "failed";
  /** The attempt the step is at (core's count: 0 for steps that are not attempted, such as an approval). */
  readonly attempts: number;
  readonly startedAt: string;
  readonly endedAt?: string;
  readonly durationMs?: number;
  /** What core said when the step ended (`approved`, `succeeded`, `cancelled`, ...). */
  readonly detail?: string;
  /** The tool's effect, when known (see `CallFacts`). */
  readonly effect?: ToolEffect | null;
  readonly idempotencyKey?: string;
  /** The call's final status, once its outcome is recorded. */
  readonly outcome?: FinalCallStatus;
  /** The text the model reads for that outcome. */
  readonly outcomeText?: string;
}

/**
 * An attention interrupt, as the chat shows it: a call whose outcome is unknown, for a person to
 * check (resolve it with core's `client.resolveAttention`). Updated in place (same part ID, the
 * interrupt's) when it is resolved while its turn is still streaming; a resolution after the turn
 * shows as the follow-up turn core starts.
 */
export interface AttentionNotice {
  readonly interruptId: string;
  readonly turnId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly arguments: string;
  readonly idempotencyKey: string | null;
  /** Why the outcome is unknown. */
  readonly reason: string | null;
  readonly status: "pending" | "done" | "not_done" | "unknown";
}

/** The data part types of a durable session's UI messages. */
export type DurableDataTypes = { step: TimelineStep; attention: AttentionNotice };

/** A UI message of a durable session. */
export type DurableUIMessage = UIMessage<DurableMessageMetadata, DurableDataTypes>;

/** A UI message chunk of a durable session's stream. */
export type DurableUIChunk = UIMessageChunk<DurableMessageMetadata, DurableDataTypes>;

/** What the tool parts' `toolMetadata` carries. */
export interface DurableToolMetadata {
  readonly [key: string]: string | boolean | number | null | undefined;
  readonly effect: ToolEffect | null;
  readonly idempotencyKey: string;
  readonly needsApproval?: boolean;
  readonly status?: FinalCallStatus;
}

/** What is known about a call beyond the event that requested it (core's events do not carry its effect). */
export interface CallFacts {
  readonly effect: ToolEffect | null;
  readonly needsApproval?: boolean;
}

/** Looks up what is known about a call; `undefined` when nothing is. */
export type CallFactsLookup = (call: { turnId: string; toolCallId: string; name: string }) => CallFacts | undefined;
