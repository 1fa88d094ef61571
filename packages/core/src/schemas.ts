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

/**
 * `cancelled`: the call's turn was cancelled and the call never ran, or (a `read` or
 * `idempotent_write`) it was stopped by the cancellation before it returned, or (a single-attempt
 * call) it stopped and stated that it changed nothing (`ToolCancelledError`).
 */
export const finalCallStatuses = ["succeeded", "failed", "rejected", "outcome_unknown", "cancelled"] as const;
export const FinalCallStatus = z.enum(finalCallStatuses);
export type FinalCallStatus = z.infer<typeof FinalCallStatus>;
/**
 * Not final: `awaiting_approval`; `pending` (an attempt is due, maybe after a backoff); `running` (an
 * attempt is in flight); `reconcile_pending` (the call's outcome is in doubt and a check of its tool's
 * `reconcile` is due) and `reconciling` (a check is in flight).
 */
export const CallStatus = z.enum([
  "awaiting_approval",
  "pending",
  "running",
  "reconcile_pending",
  "reconciling",
  ...finalCallStatuses,
]);
export type CallStatus = z.infer<typeof CallStatus>;
export const isFinalCallStatus = (status: CallStatus): status is FinalCallStatus =>
  (finalCallStatuses as readonly string[]).includes(status);

/** What a check of a call found (a tool's `reconcile`), or what a person marked it (an attention interrupt). */
export const ReconcileStatus = z.enum(["done", "not_done", "unknown"]);
export type ReconcileStatus = z.infer<typeof ReconcileStatus>;

/** How a call whose outcome was in doubt was settled: by its tool's `reconcile`, or by a person. */
export const Reconciliation = z.object({ by: z.enum(["tool", "person"]), found: ReconcileStatus });
export type Reconciliation = z.infer<typeof Reconciliation>;

export const ToolCallRecord = z.object({
  toolCallId: z.string(),
  name: z.string(),
  arguments: z.string(),
  /**
   * The RunModel step (1-based within the turn) whose response asked for this call; 0 for a call a
   * follow-up turn runs again before its first RunModel (a person marked it not done).
   */
  response: z.number().int().nonnegative(),
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
  /** Attempts of the `reconcile` check started so far, over every time the outcome was in doubt (each recorded before the check runs). */
  reconcileAttempts: z.number().int().nonnegative().default(0),
  /** The value of `reconcileAttempts` at which the current check gives up (three attempts, like a `read`). */
  reconcileMaxAttempts: z.number().int().nonnegative().default(0),
  /** Why the call's outcome is in doubt, while it is checked (`reconcile_pending`, `reconciling`). */
  unknownReason: z.string().nullable().default(null),
  /** The last check's finding, or a person's mark; null when the outcome was never in doubt. */
  reconciled: Reconciliation.nullable().default(null),
  /** Rounds of attempts an `idempotent_write` got again after a check found it not done. */
  reruns: z.number().int().nonnegative().default(0),
});
export type ToolCallRecord = z.infer<typeof ToolCallRecord>;

export const stepKinds = [
  "RunModel",
  "CallTool",
  "CallSingleAttemptTool",
  "AwaitToolApproval",
  "ResumeTurn",
  "ReconcileCall",
] as const;
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

/**
 * A question for a person. `approval`: may this call run? `attention`: a call's outcome is unknown
 * (its tool has no `reconcile`, or the check could not tell); a person marks it done, not done, or
 * leaves it unknown. An attention interrupt blocks nothing and outlives its turn.
 */
export const Interrupt = z.object({
  interruptId: z.string(),
  /** Heads written before this field existed load with `approval`. */
  kind: z.enum(["approval", "attention"]).default("approval"),
  turnId: z.string(),
  toolCallId: z.string(),
  toolName: z.string(),
  arguments: z.string(),
  /**
   * Why a person is asked: for an attention, why the outcome is unknown; for an approval offered
   * again, that the first attempt did not take effect. Null for a first approval.
   */
  reason: z.string().nullable().default(null),
  /** An attention's call: its effect and idempotency key. */
  effect: ToolEffect.optional(),
  idempotencyKey: z.string().nullable().default(null),
  /** An attention's call belongs to a turn that was cancelled: marking it not done does not run it again. */
  turnCancelled: z.boolean().default(false),
});
export type Interrupt = z.infer<typeof Interrupt>;

/**
 * A turn a person's resolution of an attention interrupt starts: the model is told what the person
 * found, after the call ran again when it was marked not done.
 */
export const FollowUp = z.object({
  interruptId: z.string(),
  outcome: z.enum(["done", "not_done"]),
  /** The text the person gave with `done`. */
  output: z.string().nullable(),
  /** The call as its turn recorded it. */
  call: z.object({
    turnId: z.string(),
    toolCallId: z.string(),
    name: z.string(),
    arguments: z.string(),
    effect: ToolEffect,
    idempotencyKey: z.string(),
  }),
  /** Whether the follow-up turn runs the call again first (not done, and its turn was not cancelled). */
  rerun: z.boolean(),
});
export type FollowUp = z.infer<typeof FollowUp>;

export const QueuedMessage = z.object({
  text: z.string(),
  inboxSeq: z.number().int(),
  item: HistoryItem,
  /** Set for a follow-up turn (an attention resolved done or not done); `text` and `item` are its note. */
  followUp: FollowUp.optional(),
});
export type QueuedMessage = z.infer<typeof QueuedMessage>;

/** A cancellation being applied to a turn (phase `cancelling`) or applied (phase `cancelled`). */
export const TurnCancellation = z.object({
  reason: z.string().nullable(),
  requestId: z.string().nullable(),
  /** Epoch ms at which the cancellation was applied. */
  appliedAt: z.number(),
  /** Epoch ms after which a call still running is given up: `outcome_unknown` if single-attempt, else `cancelled`. */
  graceUntil: z.number(),
  /** Whether a RunModel step was in flight (and was aborted). */
  modelCallAborted: z.boolean(),
});
export type TurnCancellation = z.infer<typeof TurnCancellation>;

/** A steered message that joined the turn: where it is in the history and where it goes in the model's input. */
export const JoinedMessage = z.object({
  /** The RunModel step (1-based within the turn) before which it joined. */
  modelStep: z.number().int().positive(),
  /** Its index in the session history. */
  historyIndex: z.number().int().nonnegative(),
  /** The last call of the response it follows: it goes right after that call's outcome. Null: after the turn's user item. */
  afterToolCallId: z.string().nullable(),
});
export type JoinedMessage = z.infer<typeof JoinedMessage>;

export const Turn = z.object({
  turnId: z.string(),
  number: z.number().int().positive(),
  userText: z.string(),
  /** `cancelling`: a cancellation was applied and calls in flight are being waited for (up to the grace period). */
  phase: z.enum(["model", "tools", "cancelling", "completed", "failed", "cancelled"]),
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
  /** The cancellation, once one was applied. Heads written before this field existed load with null. */
  cancellation: TurnCancellation.nullable().default(null),
  /** Messages steered into this turn that have not joined it yet (they join before its next RunModel). */
  steered: z.array(QueuedMessage).default([]),
  /** Messages steered into this turn that joined it, in order. */
  joined: z.array(JoinedMessage).default([]),
  /** Set when the turn is a follow-up of a resolved attention interrupt. */
  followUp: FollowUp.nullable().default(null),
});
export type Turn = z.infer<typeof Turn>;

/**
 * `waiting_for_definition`: the session is pinned to an agent definition (its fingerprint) that no
 * running worker serves, or whose migration failed; it waits, with nothing lost, until a worker that
 * serves it (or migrates from it) takes it.
 */
export const SessionStatus = z.enum(["idle", "running", "awaiting_approval", "waiting_for_definition"]);
export type SessionStatus = z.infer<typeof SessionStatus>;

/** Why a pinned session waits: no running worker serves its definition, or its migration failed. */
export const DefinitionWaitReason = z.enum(["unserved", "migration_failed"]);
export type DefinitionWaitReason = z.infer<typeof DefinitionWaitReason>;

/**
 * The agent definition a session is pinned to (DESIGN §9): the fingerprint of the definition it was
 * started with (or migrated to), and whether it waits for a worker that serves it.
 */
export const DefinitionPin = z.object({
  fingerprint: z.string().min(1),
  /** Set while the session waits for its definition (status `waiting_for_definition`); null otherwise. */
  waiting: z
    .object({
      reason: DefinitionWaitReason,
      /** Epoch ms at which the worker that noticed it marked the session. */
      since: z.number(),
      /** Why the migration failed (reason `migration_failed`), else null. */
      error: z.string().nullable(),
    })
    .nullable()
    .default(null),
});
export type DefinitionPin = z.infer<typeof DefinitionPin>;

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
  /**
   * The agent definition the session is pinned to; null until a client that knows the definition
   * starts it or the first worker drives it. Heads written before pinning existed load with null.
   */
  definition: DefinitionPin.nullable().default(null),
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
  /** Cancels turn `turnId` (the one running, or about to start, when the client accepted it); consumed without effect once that turn ended. */
  z.object({
    kind: z.literal("cancel"),
    turnId: z.string(),
    reason: z.string().nullable(),
    requestId: z.string().nullable(),
  }),
  /** A message for the running turn (it joins before the turn's next RunModel), or a new turn's when none runs. */
  z.object({ kind: z.literal("steer"), text: z.string(), messageId: z.string().nullable() }),
  /** A person's resolution of an attention interrupt: the call took effect (`output` for the model), did not, or stays unknown. */
  z.object({
    kind: z.literal("attention"),
    interruptId: z.string(),
    outcome: ReconcileStatus,
    output: z.string().nullable(),
  }),
]);
export type InboxEntry = z.infer<typeof InboxEntry>;
export type InboxItem = InboxEntry & { seq: number };

const event = <T extends string, S extends z.ZodRawShape>(type: T, data: S) =>
  z.object({ type: z.literal(type), data: z.object(data) });

/**
 * When a turn's or step's start or end happened (ISO 8601), on the events that say so, set only when
 * the engine stored the event later than that: a turn's start held for its first model call's result
 * (`turnStartHoldMs`), or a model's result held for its reads' (`readToolHoldMs`). The event's `at` is
 * when it was stored; a UI that times turns and steps uses `occurredAt ?? at`.
 */
const occurredAt = z.string().optional();

/** The payload of a session event. */
export const EventBody = z.discriminatedUnion("type", [
  event("session_created", { agent: z.string() }),
  event("message_queued", { text: z.string(), position: z.number().int() }),
  event("turn_started", { turnId: z.string(), text: z.string(), occurredAt }),
  event("step_started", {
    turnId: z.string(),
    step: StepKind,
    toolCallId: z.string().optional(),
    attempt: z.number().int(),
    occurredAt,
  }),
  event("step_completed", {
    turnId: z.string(),
    step: StepKind,
    toolCallId: z.string().optional(),
    status: z.enum(["completed", "failed"]),
    detail: z.string().optional(),
    occurredAt,
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
  /** A cancellation was applied while calls were in flight: the turn ends once they are final or the grace period ends. */
  event("turn_cancelling", {
    turnId: z.string(),
    reason: z.string().nullable(),
    requestId: z.string().nullable(),
    graceUntil: z.string(),
    running: z.array(z.string()),
  }),
  /** The receipt of a cancelled turn: every call of the turn with its final status. */
  event("turn_cancelled", {
    turnId: z.string(),
    reason: z.string().nullable(),
    requestId: z.string().nullable(),
    modelCallAborted: z.boolean(),
    calls: z.array(
      z.object({
        toolCallId: z.string(),
        name: z.string(),
        effect: ToolEffect,
        status: FinalCallStatus,
        attempts: z.number().int().nonnegative(),
      }),
    ),
  }),
  /** A cancellation reached the session after its turn had ended: it changed nothing. */
  event("cancel_skipped", { turnId: z.string(), requestId: z.string().nullable(), why: z.string() }),
  /** A steered message joined the running turn: it is in the history, before the turn's RunModel step `modelStep`. */
  event("message_steered", { turnId: z.string(), text: z.string(), modelStep: z.number().int().positive() }),
  /** A check (the tool's `reconcile`) settled a call whose outcome was in doubt. */
  event("call_reconciled", {
    turnId: z.string(),
    toolCallId: z.string(),
    name: z.string(),
    found: ReconcileStatus,
    /** Attempts of the check it took. */
    attempts: z.number().int().positive(),
    /** What became of the call: `succeeded` (done), `pending` / `awaiting_approval` (not done: it runs again), or a final status. */
    status: CallStatus,
  }),
  /** A call's outcome stays unknown: a person is asked (the interrupt is in `pendingInterrupts` until resolved). */
  event("attention_required", { interrupt: Interrupt }),
  /** A person resolved an attention interrupt. */
  event("attention_resolved", {
    interruptId: z.string(),
    turnId: z.string(),
    toolCallId: z.string(),
    outcome: ReconcileStatus,
    output: z.string().nullable(),
  }),
  /**
   * The session was pinned to a definition: by the client that started it (`by: "client"`), or by the
   * first worker that drove it (`by: "worker"`). `description` is what the fingerprint was computed from.
   */
  event("definition_pinned", {
    fingerprint: z.string(),
    by: z.enum(["client", "worker"]),
    description: z.unknown(),
  }),
  /** The session waits for its definition: no running worker serves it, or its migration failed (`error`). */
  event("definition_waiting", {
    fingerprint: z.string(),
    reason: DefinitionWaitReason,
    error: z.string().nullable(),
  }),
  /** A worker that serves the session's definition took the waiting session: it runs again. */
  event("definition_served", { fingerprint: z.string() }),
  /**
   * A migration moved the session from one definition to another (`accept`: unchanged; `transform`:
   * the application's function rewrote its state and/or appended `appendedItems` history items).
   */
  event("definition_migrated", {
    from: z.string(),
    to: z.string(),
    migration: z.enum(["accept", "transform"]),
    appendedItems: z.number().int().nonnegative(),
    description: z.unknown(),
  }),
  event("session_recovered", {
    fence: z.number().int(),
    calls: z.array(z.object({ toolCallId: z.string(), status: CallStatus })),
    /** The RunModel step whose call a dead worker left in flight: it starts again, and what it streamed is void. */
    modelStep: z.number().int().positive().optional(),
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
  /** Approvals, rejections and attention resolutions accepted and not yet applied by a worker. */
  unappliedDecisions: number;
  usage: Usage;
  /** The definition the session is pinned to (fingerprint, and whether it waits for it), or null. */
  definition: DefinitionPin | null;
  version: number;
  lastEventSeq: number;
}
