/**
 * Everything that is stored or crosses the client boundary, as zod schemas. Stored session state
 * carries `schemaVersion`; `parseSessionHead` loads every supported version.
 */
import { z } from "zod";
import { StoredStateError } from "./errors.js";
import { ToolEffect } from "./policy.js";

export const SESSION_SCHEMA_VERSION = 1;
export const supportedSessionSchemaVersions = [1] as const;

export const Usage = z.object({
  modelCalls: z.number().int().nonnegative(),
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  totalTokens: z.number().int().nonnegative(),
});
export type Usage = z.infer<typeof Usage>;
export const emptyUsage = (): Usage => ({ modelCalls: 0, inputTokens: 0, outputTokens: 0, totalTokens: 0 });
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    modelCalls: a.modelCalls + b.modelCalls,
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  };
}

export const DisplayToolCall = z.object({ toolCallId: z.string(), name: z.string(), arguments: z.string() });
/** What a UI shows for one history item, whatever the framework. */
export const DisplayItem = z.object({
  role: z.enum(["user", "assistant", "tool", "note"]),
  text: z.string(),
  toolCalls: z.array(DisplayToolCall).optional(),
  toolCallId: z.string().optional(),
});
export type DisplayItem = z.infer<typeof DisplayItem>;

/** One history item: the framework's own item (JSON) plus its display projection. */
export const HistoryItem = z.object({ item: z.unknown(), display: DisplayItem });
export type HistoryItem = z.infer<typeof HistoryItem>;

export const finalCallStatuses = ["succeeded", "failed", "rejected", "outcome_unknown"] as const;
export const FinalCallStatus = z.enum(finalCallStatuses);
export type FinalCallStatus = z.infer<typeof FinalCallStatus>;
export const CallStatus = z.enum(["awaiting_approval", "pending", "running", ...finalCallStatuses]);
export type CallStatus = z.infer<typeof CallStatus>;
export const isFinalCallStatus = (status: CallStatus): status is FinalCallStatus =>
  (finalCallStatuses as readonly string[]).includes(status);

export const ToolCallRecord = z.object({
  toolCallId: z.string(),
  name: z.string(),
  arguments: z.string(),
  /** The RunModel step (1-based within the turn) whose response asked for this call. */
  response: z.number().int().positive(),
  effect: ToolEffect,
  step: z.enum(["CallTool", "CallSingleAttemptTool"]),
  needsApproval: z.boolean(),
  status: CallStatus,
  /** Attempts started so far; each is recorded durably before the tool runs. */
  attempts: z.number().int().nonnegative(),
  maxAttempts: z.number().int().positive(),
  idempotencyKey: z.string().nullable(),
  interruptId: z.string().nullable(),
  /** Epoch ms before which the next attempt must not start (backoff). */
  retryAt: z.number().nullable(),
  lastError: z.string().nullable(),
  output: z.string().nullable(),
  message: z.string().nullable(),
});
export type ToolCallRecord = z.infer<typeof ToolCallRecord>;

export const stepKinds = ["RunModel", "CallTool", "CallSingleAttemptTool", "AwaitToolApproval", "ResumeTurn"] as const;
export const StepKind = z.enum(stepKinds);
export type StepKind = z.infer<typeof StepKind>;

export const StepRecord = z.object({
  step: StepKind,
  toolCallId: z.string().optional(),
  status: z.enum(["running", "completed", "failed"]),
  attempt: z.number().int().nonnegative(),
  detail: z.string().optional(),
});
export type StepRecord = z.infer<typeof StepRecord>;

export const Interrupt = z.object({
  interruptId: z.string(),
  turnId: z.string(),
  toolCallId: z.string(),
  toolName: z.string(),
  arguments: z.string(),
});
export type Interrupt = z.infer<typeof Interrupt>;

export const Turn = z.object({
  turnId: z.string(),
  number: z.number().int().positive(),
  userText: z.string(),
  phase: z.enum(["model", "tools", "completed", "failed"]),
  /** History length before the turn's user item. */
  historyStart: z.number().int().nonnegative(),
  /** RunModel steps completed in this turn. */
  modelSteps: z.number().int().nonnegative(),
  /** Failed attempts of the RunModel step that is due now. */
  modelAttempts: z.number().int().nonnegative(),
  modelRetryAt: z.number().nullable(),
  /**
   * Whether the RunModel step that is due was started and has no result yet (it is not started
   * again until its result is applied or a recovery clears this). Heads written before this field
   * existed load with false.
   */
  modelRunning: z.boolean().default(false),
  /** The framework's serialized run state while tool calls are outstanding. */
  runState: z.string().nullable(),
  calls: z.array(ToolCallRecord),
  steps: z.array(StepRecord),
  usage: Usage,
  finalText: z.string().nullable(),
  error: z.string().nullable(),
});
export type Turn = z.infer<typeof Turn>;

export const SessionStatus = z.enum(["idle", "running", "awaiting_approval"]);
export type SessionStatus = z.infer<typeof SessionStatus>;

export const QueuedMessage = z.object({ text: z.string(), inboxSeq: z.number().int(), item: HistoryItem });

/** The stored session state, without its history (history is stored as appended items). */
export const SessionHead = z.object({
  schemaVersion: z.literal(SESSION_SCHEMA_VERSION),
  sessionId: z.string(),
  agent: z.string(),
  status: SessionStatus,
  turnCount: z.number().int().nonnegative(),
  historyLength: z.number().int().nonnegative(),
  /** The running turn, or the last one once it ended. */
  turn: Turn.nullable(),
  queue: z.array(QueuedMessage),
  pendingInterrupts: z.array(Interrupt),
  usage: Usage,
  /** The last inbox sequence number applied to this state. */
  inboxCursor: z.number().int().nonnegative(),
  createdAt: z.string(),
});
export type SessionHead = z.infer<typeof SessionHead>;

/**
 * The one reader of stored session heads: loads a head of any supported schema version. Throws
 * `StoredStateError` (`format` "session_head") for a head of an unknown version (`unknown_version`,
 * e.g. written by a newer release) or one that does not have its version's shape (`malformed`).
 */
export function parseSessionHead(value: unknown): SessionHead {
  const version =
    typeof value === "object" && value !== null ? (value as { schemaVersion?: unknown }).schemaVersion : undefined;
  if (!(supportedSessionSchemaVersions as readonly unknown[]).includes(version)) {
    const known = supportedSessionSchemaVersions.join(", ");
    if (typeof version === "number" && Number.isInteger(version) && version > SESSION_SCHEMA_VERSION) {
      throw new StoredStateError(
        "session_head",
        "unknown_version",
        version,
        `the stored session head has schema version ${version}, newer than this release reads (${known}); upgrade to read it`,
      );
    }
    throw new StoredStateError(
      "session_head",
      version === undefined ? "malformed" : "unknown_version",
      version,
      `the stored session head has no supported schema version (found ${JSON.stringify(version) ?? "none"}, supported ${known})`,
    );
  }
  const parsed = SessionHead.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`);
    throw new StoredStateError(
      "session_head",
      "malformed",
      version,
      `the stored session head is damaged: ${issues.join("; ")}`,
      {
        cause: parsed.error,
      },
    );
  }
  return parsed.data;
}

/** An entry of a session's durable, ordered inbox. */
export const InboxEntry = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("message"), text: z.string(), messageId: z.string().nullable() }),
  z.object({
    kind: z.literal("resolution"),
    interruptId: z.string(),
    approved: z.boolean(),
    message: z.string().nullable(),
  }),
]);
export type InboxEntry = z.infer<typeof InboxEntry>;
export type InboxItem = InboxEntry & { seq: number };

const event = <T extends string, S extends z.ZodRawShape>(type: T, data: S) =>
  z.object({ type: z.literal(type), data: z.object(data) });

/** The payload of a session event. */
export const EventBody = z.discriminatedUnion("type", [
  event("session_created", { agent: z.string() }),
  event("message_queued", { text: z.string(), position: z.number().int() }),
  event("turn_started", { turnId: z.string(), text: z.string() }),
  event("step_started", {
    turnId: z.string(),
    step: StepKind,
    toolCallId: z.string().optional(),
    attempt: z.number().int(),
  }),
  event("step_completed", {
    turnId: z.string(),
    step: StepKind,
    toolCallId: z.string().optional(),
    status: z.enum(["completed", "failed"]),
    detail: z.string().optional(),
  }),
  event("text_delta", { turnId: z.string(), text: z.string() }),
  event("reasoning_delta", { turnId: z.string(), text: z.string() }),
  event("tool_calls_requested", { turnId: z.string(), calls: z.array(DisplayToolCall) }),
  event("tool_call_completed", {
    turnId: z.string(),
    toolCallId: z.string(),
    name: z.string(),
    status: FinalCallStatus,
    text: z.string(),
  }),
  event("interrupt_created", { interrupt: Interrupt }),
  event("interrupt_resolved", { interruptId: z.string(), approved: z.boolean(), message: z.string().nullable() }),
  event("history_appended", { items: z.array(DisplayItem) }),
  event("turn_completed", { turnId: z.string(), text: z.string(), usage: Usage }),
  event("turn_failed", { turnId: z.string(), error: z.string() }),
  event("session_recovered", {
    fence: z.number().int(),
    calls: z.array(z.object({ toolCallId: z.string(), status: CallStatus })),
  }),
]);
export type EventBody = z.infer<typeof EventBody>;
export type EventType = EventBody["type"];

export const SessionEvent = z.intersection(z.object({ seq: z.number().int().positive(), at: z.string() }), EventBody);
export type SessionEvent = EventBody & { seq: number; at: string };

/** What a client sees of a session. */
export interface SessionSnapshot {
  sessionId: string;
  agent: string;
  status: SessionStatus;
  turnCount: number;
  messages: DisplayItem[];
  turn: Turn | null;
  pendingInterrupts: Interrupt[];
  /** Messages accepted and not yet started as a turn. */
  queuedMessages: number;
  /** Approvals and rejections accepted and not yet applied by a worker. */
  unappliedDecisions: number;
  usage: Usage;
  version: number;
  lastEventSeq: number;
}
