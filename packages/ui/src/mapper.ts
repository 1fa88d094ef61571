/**
 * Session events → AI SDK UI message chunks. One turn is one assistant message: its `start` comes
 * from `turn_started`, its `finish` from the event that ends the turn. The mapping is a fold: the
 * chunks of an event depend on the events before it and nothing else (given the same call facts),
 * so a stream resumed from any position gives exactly the chunks a reader did not get yet.
 *
 * Framework-neutral: it reads core's events only, so it serves sessions of any adapter.
 */
import type { FinalCallStatus, SessionEvent } from "@durable-agents/core";
import type {
  AttentionNotice,
  CallFacts,
  CallFactsLookup,
  DurableMessageMetadata,
  DurableTurnStatus,
  DurableUIChunk,
  TimelineStep,
  TimelineStepKind,
} from "./types.js";

export interface SessionEventMapperOptions {
  /** The session's ID: it is part of every call's idempotency key. */
  readonly sessionId: string;
  /** What is known about a call (its effect); asked once per call, when the model requests it. */
  readonly callFacts?: CallFactsLookup;
}

/** The assistant message of a turn. */
export const assistantMessageId = (turnId: string): string => `assistant-${turnId}`;
/** The user message that started a turn. */
export const userMessageId = (turnId: string): string => `user-${turnId}`;

type MutableStep = { -readonly [K in keyof TimelineStep]: TimelineStep[K] };

interface CallState {
  readonly name: string;
  readonly input: unknown;
  readonly facts: CallFacts | undefined;
  readonly idempotencyKey: string;
  interruptId: string | null;
  status: FinalCallStatus | null;
}

interface TurnState {
  readonly turnId: string;
  readonly messageId: string;
  textId: string | null;
  reasoningId: string | null;
  /** An AI SDK step is open (a `start-step` was sent and no `finish-step` yet). */
  stepOpen: boolean;
  /** A RunModel attempt started and did not end: a second start means the first one was interrupted. */
  modelRunning: boolean;
  /** The text and reasoning streamed in the open AI SDK step (since its `start-step` or `reset-step`). */
  stepText: string;
  stepReasoning: string;
  /** The timeline entry of the latest RunModel step. */
  lastModel: MutableStep | null;
  /** RunModel steps completed: the next one is RunModel step `modelSteps + 1`. */
  modelSteps: number;
  resumes: number;
  readonly steps: Map<string, MutableStep>;
  readonly calls: Map<string, CallState>;
  /** Approvals requested and not resolved (interrupt IDs). */
  readonly approvals: Set<string>;
  /** Attention interrupts raised in this turn, by interrupt ID. */
  readonly attentions: Map<string, AttentionNotice>;
  status: DurableTurnStatus;
}

export class SessionEventMapper {
  readonly #sessionId: string;
  readonly #callFacts: CallFactsLookup | undefined;
  #turn: TurnState | null = null;
  #lastSeq = 0;

  constructor(options: SessionEventMapperOptions) {
    this.#sessionId = options.sessionId;
    this.#callFacts = options.callFacts;
  }

  /** The sequence number of the last event mapped. */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** The turn that started and has not ended, if any. */
  get openTurnId(): string | null {
    return this.#turn?.turnId ?? null;
  }

  /** The approvals of the open turn that were requested and not resolved. */
  get pendingApprovals(): readonly string[] {
    return this.#turn ? [...this.#turn.approvals] : [];
  }

  /**
   * What a stream that starts in the middle of the open turn sends first: the `start` of its
   * message (with no metadata: the reader has it), so chunks go to the message it already shows.
   */
  resumeStart(): DurableUIChunk | null {
    return this.#turn ? { type: "start", messageId: this.#turn.messageId } : null;
  }

  /** The chunks of one event, in order (none for events a chat does not show). */
  map(event: SessionEvent): DurableUIChunk[] {
    this.#lastSeq = event.seq;
    switch (event.type) {
      case "session_created":
      case "message_queued":
      case "history_appended":
      case "cancel_skipped":
      // The session's pin to its agent definition: not part of a turn's chat (its status says it waits).
      case "definition_pinned":
      case "definition_waiting":
      case "definition_served":
      case "definition_migrated":
        return [];
      case "turn_started":
        return this.#turnStarted(event.data.turnId, event.data.text, event.data.occurredAt ?? event.at);
      case "interrupt_resolved":
        return this.#interruptResolved(event.data);
      case "interrupt_created": {
        const turn = this.#turnOf(event.data.interrupt.turnId);
        return turn ? this.#interruptCreated(turn, event.data.interrupt) : [];
      }
      case "attention_required": {
        const { interrupt } = event.data;
        const turn = this.#turnOf(interrupt.turnId);
        if (!turn) return [];
        const notice: AttentionNotice = {
          interruptId: interrupt.interruptId,
          turnId: interrupt.turnId,
          toolCallId: interrupt.toolCallId,
          toolName: interrupt.toolName,
          arguments: interrupt.arguments,
          idempotencyKey: interrupt.idempotencyKey ?? null,
          reason: interrupt.reason ?? null,
          status: "pending",
        };
        turn.attentions.set(interrupt.interruptId, notice);
        return [{ type: "data-attention", id: interrupt.interruptId, data: notice }];
      }
      case "attention_resolved": {
        // Shown in place while the interrupt's turn streams; later, the follow-up turn shows it.
        const notice = this.#turn?.attentions.get(event.data.interruptId);
        if (!notice) return [];
        const resolved: AttentionNotice = { ...notice, status: event.data.outcome };
        this.#turn!.attentions.set(event.data.interruptId, resolved);
        return [{ type: "data-attention", id: event.data.interruptId, data: resolved }];
      }
      case "session_recovered":
        return this.#turn ? this.#recovered(this.#turn, event) : [];
      default: {
        const turn = this.#turnOf(event.data.turnId);
        return turn ? this.#turnEvent(turn, event) : [];
      }
    }
  }

  #turnOf(turnId: string): TurnState | null {
    return this.#turn?.turnId === turnId ? this.#turn : null;
  }

  #turnStarted(turnId: string, text: string, at: string): DurableUIChunk[] {
    const messageId = assistantMessageId(turnId);
    this.#turn = {
      turnId,
      messageId,
      textId: null,
      reasoningId: null,
      stepOpen: false,
      modelRunning: false,
      stepText: "",
      stepReasoning: "",
      lastModel: null,
      modelSteps: 0,
      resumes: 0,
      steps: new Map(),
      calls: new Map(),
      approvals: new Set(),
      attentions: new Map(),
      status: "running",
    };
    const metadata: DurableMessageMetadata = { turnId, userText: text, status: "running", startedAt: at };
    return [{ type: "start", messageId, messageMetadata: metadata }];
  }

  #turnEvent(turn: TurnState, event: SessionEvent): DurableUIChunk[] {
    switch (event.type) {
      case "step_started":
        return this.#stepStarted(turn, event);
      case "step_completed":
        return this.#stepCompleted(turn, event);
      case "text_delta":
        return this.#delta(turn, "text", event.seq, event.data.text);
      case "reasoning_delta":
        return this.#delta(turn, "reasoning", event.seq, event.data.text);
      case "tool_calls_requested": {
        const chunks = this.#openStep(turn);
        for (const call of event.data.calls) chunks.push(...this.#requestCall(turn, call));
        return chunks;
      }
      case "tool_call_completed":
        return this.#callCompleted(turn, event.data);
      case "message_steered":
        return [
          { type: "steering-message", id: `steer-${event.seq}`, parts: [{ type: "text", text: event.data.text }] },
        ];
      case "turn_cancelling":
        turn.status = "cancelling";
        return [
          {
            type: "message-metadata",
            messageMetadata: {
              status: "cancelling",
              cancellation: {
                reason: event.data.reason,
                requestId: event.data.requestId,
                graceUntil: event.data.graceUntil,
              },
            },
          },
        ];
      case "turn_completed":
        return this.#endTurn(turn, "stop", {
          answer: event.data.text,
          seq: event.seq,
          status: "completed",
          endedAt: event.at,
          usage: event.data.usage,
        });
      case "turn_failed":
        return this.#endTurn(turn, "error", { status: "failed", endedAt: event.at, error: event.data.error });
      case "turn_cancelled": {
        const chunks: DurableUIChunk[] = [];
        // Core records every call's outcome before the receipt; a call it left open is closed here.
        for (const call of event.data.calls) {
          const state = turn.calls.get(call.toolCallId);
          if (state && state.status === null) {
            chunks.push(...this.#callCompleted(turn, { ...call, text: `The call ended ${call.status}.` }));
          }
        }
        chunks.push(
          ...this.#endTurn(turn, "other", {
            status: "cancelled",
            endedAt: event.at,
            cancellation: {
              reason: event.data.reason,
              requestId: event.data.requestId,
              modelCallAborted: event.data.modelCallAborted,
            },
          }),
        );
        return chunks;
      }
      default:
        return [];
    }
  }

  /** A `start-step` when no AI SDK step is open (text or calls outside a RunModel step). */
  #openStep(turn: TurnState): DurableUIChunk[] {
    if (turn.stepOpen) return [];
    turn.stepOpen = true;
    turn.stepText = "";
    turn.stepReasoning = "";
    return [{ type: "start-step" }];
  }

  #closeParts(turn: TurnState): DurableUIChunk[] {
    const chunks: DurableUIChunk[] = [];
    if (turn.textId !== null) chunks.push({ type: "text-end", id: turn.textId });
    if (turn.reasoningId !== null) chunks.push({ type: "reasoning-end", id: turn.reasoningId });
    turn.textId = null;
    turn.reasoningId = null;
    return chunks;
  }

  #stepKey(turn: TurnState, kind: TimelineStepKind, toolCallId: string | undefined): string {
    switch (kind) {
      case "RunModel":
        return `model-${turn.modelSteps + 1}`;
      case "ResumeTurn":
        return `resume-${turn.resumes + 1}`;
      case "AwaitToolApproval":
        return `approval-${toolCallId ?? "?"}`;
      case "ReconcileCall":
        return `reconcile-${toolCallId ?? "?"}`;
      default:
        return `call-${toolCallId ?? "?"}`;
    }
  }

  #stepEntry(
    turn: TurnState,
    kind: TimelineStepKind,
    toolCallId: string | undefined,
    seq: number,
    at: string,
  ): { entry: MutableStep; existed: boolean } {
    const id = `${turn.turnId}/${this.#stepKey(turn, kind, toolCallId)}`;
    const existing = turn.steps.get(id);
    if (existing) return { entry: existing, existed: true };
    const call = toolCallId === undefined ? undefined : turn.calls.get(toolCallId);
    const entry: MutableStep = { id, turnId: turn.turnId, kind, seq, status: "running", attempts: 0, startedAt: at };
    if (toolCallId !== undefined) {
      entry.toolCallId = toolCallId;
      entry.idempotencyKey = this.#idempotencyKey(turn, toolCallId);
      if (call) {
        entry.toolName = call.name;
        entry.effect = call.facts?.effect ?? null;
      }
    }
    turn.steps.set(id, entry);
    return { entry, existed: false };
  }

  #stepStarted(turn: TurnState, event: Extract<SessionEvent, { type: "step_started" }>): DurableUIChunk[] {
    const { step, toolCallId, attempt } = event.data;
    const chunks: DurableUIChunk[] = [];
    // A start stored with a later commit (held for the step's result) says when it happened.
    const { entry, existed } = this.#stepEntry(turn, step, toolCallId, event.seq, event.data.occurredAt ?? event.at);
    if (step === "RunModel") {
      if (!existed) {
        // A new model step: a new AI SDK step (after the previous response's calls).
        chunks.push(...this.#closeParts(turn));
        if (turn.stepOpen) chunks.push({ type: "finish-step" });
        chunks.push({ type: "start-step" });
        turn.stepOpen = true;
        turn.stepText = "";
        turn.stepReasoning = "";
      } else if (turn.modelRunning) {
        // The same step started again while its attempt had not ended: that attempt was
        // interrupted (its worker stopped). What it streamed is not the answer: drop it.
        chunks.push({ type: "reset-step" });
        turn.textId = null;
        turn.reasoningId = null;
        turn.stepText = "";
        turn.stepReasoning = "";
      } else {
        chunks.push(...this.#openStep(turn));
      }
      turn.modelRunning = true;
      turn.lastModel = entry;
    }
    entry.status = "running";
    entry.attempts = attempt;
    delete entry.endedAt;
    delete entry.durationMs;
    delete entry.detail;
    chunks.push(stepChunk(entry));
    return chunks;
  }

  #stepCompleted(turn: TurnState, event: Extract<SessionEvent, { type: "step_completed" }>): DurableUIChunk[] {
    const { step, toolCallId, status, detail } = event.data;
    const chunks: DurableUIChunk[] = [];
    const at = event.data.occurredAt ?? event.at;
    const { entry } = this.#stepEntry(turn, step, toolCallId, event.seq, at);
    if (step === "RunModel") {
      turn.modelRunning = false;
      if (status === "failed") {
        // A failed model attempt's text was discarded by core: remove it (a retry streams anew).
        if (turn.textId !== null || turn.reasoningId !== null || turn.stepOpen) chunks.push({ type: "reset-step" });
        turn.textId = null;
        turn.reasoningId = null;
        turn.stepText = "";
        turn.stepReasoning = "";
      } else {
        chunks.push(...this.#closeParts(turn));
        turn.modelSteps += 1;
      }
    }
    if (step === "ResumeTurn" && status === "completed") turn.resumes += 1;
    entry.status = status;
    entry.endedAt = at;
    entry.durationMs = Math.max(0, Date.parse(at) - Date.parse(entry.startedAt));
    if (detail !== undefined) entry.detail = detail;
    else delete entry.detail;
    chunks.push(stepChunk(entry));
    return chunks;
  }

  #delta(turn: TurnState, kind: "text" | "reasoning", seq: number, text: string): DurableUIChunk[] {
    const chunks = this.#openStep(turn);
    if (kind === "text") {
      if (turn.reasoningId !== null) {
        chunks.push({ type: "reasoning-end", id: turn.reasoningId });
        turn.reasoningId = null;
      }
      if (turn.textId === null) {
        turn.textId = `text-${seq}`;
        chunks.push({ type: "text-start", id: turn.textId });
      }
      chunks.push({ type: "text-delta", id: turn.textId, delta: text });
      turn.stepText += text;
    } else {
      if (turn.textId !== null) {
        chunks.push({ type: "text-end", id: turn.textId });
        turn.textId = null;
      }
      if (turn.reasoningId === null) {
        turn.reasoningId = `reasoning-${seq}`;
        chunks.push({ type: "reasoning-start", id: turn.reasoningId });
      }
      chunks.push({ type: "reasoning-delta", id: turn.reasoningId, delta: text });
      turn.stepReasoning += text;
    }
    return chunks;
  }

  #idempotencyKey(turn: TurnState, toolCallId: string): string {
    // Core's idempotencyKey(sessionId, turnId, toolCallId), without importing core's runtime code.
    return `${this.#sessionId}/${turn.turnId}/${toolCallId}`;
  }

  #requestCall(turn: TurnState, call: { toolCallId: string; name: string; arguments: string }): DurableUIChunk[] {
    const facts = this.#callFacts?.({ turnId: turn.turnId, toolCallId: call.toolCallId, name: call.name });
    const state: CallState = {
      name: call.name,
      input: parseArguments(call.arguments),
      facts,
      idempotencyKey: this.#idempotencyKey(turn, call.toolCallId),
      interruptId: null,
      status: null,
    };
    turn.calls.set(call.toolCallId, state);
    return [
      {
        type: "tool-input-available",
        toolCallId: call.toolCallId,
        toolName: call.name,
        input: state.input,
        toolMetadata: toolMetadata(state),
      },
    ];
  }

  #interruptCreated(
    turn: TurnState,
    interrupt: { interruptId: string; toolCallId: string; toolName: string; arguments: string },
  ): DurableUIChunk[] {
    const chunks: DurableUIChunk[] = [];
    let call = turn.calls.get(interrupt.toolCallId);
    if (!call) {
      chunks.push(
        ...this.#openStep(turn),
        ...this.#requestCall(turn, {
          toolCallId: interrupt.toolCallId,
          name: interrupt.toolName,
          arguments: interrupt.arguments,
        }),
      );
      call = turn.calls.get(interrupt.toolCallId)!;
    }
    call.interruptId = interrupt.interruptId;
    turn.approvals.add(interrupt.interruptId);
    turn.status = "awaiting_approval";
    chunks.push(
      { type: "tool-approval-request", approvalId: interrupt.interruptId, toolCallId: interrupt.toolCallId },
      { type: "message-metadata", messageMetadata: { status: "awaiting_approval" } },
    );
    return chunks;
  }

  #interruptResolved(data: { interruptId: string; approved: boolean; message: string | null }): DurableUIChunk[] {
    const turn = this.#turn;
    if (!turn?.approvals.has(data.interruptId)) return [];
    turn.approvals.delete(data.interruptId);
    const chunks: DurableUIChunk[] = [
      {
        type: "tool-approval-response",
        approvalId: data.interruptId,
        approved: data.approved,
        ...(data.message === null ? {} : { reason: data.message }),
      },
    ];
    if (turn.approvals.size === 0 && turn.status === "awaiting_approval") {
      turn.status = "running";
      chunks.push({ type: "message-metadata", messageMetadata: { status: "running" } });
    }
    return chunks;
  }

  #callCompleted(
    turn: TurnState,
    data: { toolCallId: string; name: string; status: FinalCallStatus; text: string },
  ): DurableUIChunk[] {
    const call = turn.calls.get(data.toolCallId);
    if (!call) return [];
    call.status = data.status;
    if (call.interruptId !== null) turn.approvals.delete(call.interruptId);
    const chunks: DurableUIChunk[] = [];
    const metadata = toolMetadata(call);
    if (data.status === "succeeded") {
      chunks.push({
        type: "tool-output-available",
        toolCallId: data.toolCallId,
        output: data.text,
        toolMetadata: metadata,
      });
    } else if (data.status === "rejected" && call.interruptId !== null) {
      chunks.push({ type: "tool-output-denied", toolCallId: data.toolCallId });
    } else {
      chunks.push({
        type: "tool-output-error",
        toolCallId: data.toolCallId,
        errorText: data.text,
        toolMetadata: metadata,
      });
    }
    // The outcome goes on the call's own step, or on its approval when it never ran.
    const entry =
      turn.steps.get(`${turn.turnId}/call-${data.toolCallId}`) ??
      turn.steps.get(`${turn.turnId}/approval-${data.toolCallId}`);
    if (entry) {
      entry.outcome = data.status;
      entry.outcomeText = data.text;
      chunks.push(stepChunk(entry));
    }
    return chunks;
  }

  #recovered(turn: TurnState, event: Extract<SessionEvent, { type: "session_recovered" }>): DurableUIChunk[] {
    const entry: MutableStep = {
      id: `${turn.turnId}/recovery-${event.seq}`,
      turnId: turn.turnId,
      kind: "Recovery",
      seq: event.seq,
      status: "completed",
      attempts: 0,
      startedAt: event.at,
      endedAt: event.at,
      durationMs: 0,
      detail: event.data.calls.map((call) => `${call.toolCallId}: ${call.status}`).join(", "),
    };
    turn.steps.set(entry.id, entry);
    const chunks: DurableUIChunk[] = [];
    // A model call a dead worker left in flight starts again: what it streamed is void.
    if (event.data.modelStep !== undefined) {
      if (turn.textId !== null || turn.reasoningId !== null || turn.stepOpen) chunks.push({ type: "reset-step" });
      turn.textId = null;
      turn.reasoningId = null;
      turn.stepText = "";
      turn.stepReasoning = "";
    }
    chunks.push(stepChunk(entry));
    return chunks;
  }

  #endTurn(
    turn: TurnState,
    finishReason: "stop" | "error" | "other",
    metadata: DurableMessageMetadata & { answer?: string; seq?: number },
  ): DurableUIChunk[] {
    const { answer, seq, ...meta } = metadata;
    const chunks = this.#closeParts(turn);
    if (answer !== undefined && turn.stepOpen && turn.stepText !== answer) {
      // The recorded answer is not what streamed: a model attempt was interrupted without an event
      // that says so (a worker stopped during the step; core starts the step again silently) and
      // its text stayed in front of the new attempt's. The recorded answer wins.
      chunks.push({ type: "reset-step" });
      if (turn.lastModel) chunks.push(stepChunk(turn.lastModel));
      if (turn.stepReasoning !== "") {
        // What reasoning streamed is kept (core records none to compare it with).
        const id = `reasoning-${seq ?? this.#lastSeq}-answer`;
        chunks.push(
          { type: "reasoning-start", id },
          { type: "reasoning-delta", id, delta: turn.stepReasoning },
          { type: "reasoning-end", id },
        );
      }
      if (answer !== "") {
        const id = `text-${seq ?? this.#lastSeq}-answer`;
        chunks.push({ type: "text-start", id }, { type: "text-delta", id, delta: answer }, { type: "text-end", id });
      }
    }
    if (turn.stepOpen) chunks.push({ type: "finish-step" });
    turn.stepOpen = false;
    this.#turn = null;
    chunks.push({ type: "finish", finishReason, messageMetadata: meta });
    return chunks;
  }
}

function stepChunk(entry: MutableStep): DurableUIChunk {
  return { type: "data-step", id: entry.id, data: { ...entry } };
}

type JSONObject = NonNullable<Extract<DurableUIChunk, { type: "tool-input-available" }>["toolMetadata"]>;

function toolMetadata(call: CallState): JSONObject {
  return {
    effect: call.facts?.effect ?? null,
    idempotencyKey: call.idempotencyKey,
    ...(call.facts?.needsApproval === undefined ? {} : { needsApproval: call.facts.needsApproval }),
    ...(call.status === null ? {} : { status: call.status }),
  };
}

/** A call's JSON arguments as a value; arguments that are not JSON stay a string. */
function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Maps events from the start of a session: each event with its chunks. */
export function mapSessionEvents(
  events: readonly SessionEvent[],
  options: SessionEventMapperOptions,
): { event: SessionEvent; chunks: DurableUIChunk[] }[] {
  const mapper = new SessionEventMapper(options);
  return events.map((event) => ({ event, chunks: mapper.map(event) }));
}
