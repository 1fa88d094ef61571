/**
 * The session's rules as a pure state machine (DESIGN §7b): (head, input) → (new head, events,
 * history to append). It does no I/O and reads no clock: time comes in with the input. The core
 * engine drives it over a store; another durable engine can drive the same functions, running each
 * step with its own primitive.
 */
import { idempotencyKey, policyTable, type ToolEffect } from "./policy.js";
import type { RecordedOutcome, RunModelResult } from "./runner.js";
import {
  addUsage,
  emptyUsage,
  isFinalCallStatus,
  SESSION_SCHEMA_VERSION,
  type EventBody,
  type FinalCallStatus,
  type HistoryItem,
  type InboxItem,
  type Interrupt,
  type SessionHead,
  type SessionStatus,
  type StepKind,
  type StepRecord,
  type ToolCallRecord,
  type Turn,
} from "./schemas.js";
import { describeOutcome, describeTurnFailure } from "./outcome-text.js";

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

export type MachineInput =
  /** An inbox entry. A message carries the runner's user item for it. */
  | { readonly type: "inbox"; readonly item: InboxItem; readonly userItem?: HistoryItem }
  /** A worker took the lease: calls found running were interrupted by a dead worker. */
  | { readonly type: "recover"; readonly fence: number }
  | {
      readonly type: "model_completed";
      /** The step this result belongs to; a result for any other step is ignored. */
      readonly turnId: string;
      readonly modelStep: number;
      readonly result: RunModelResult;
      /** For `tool_calls` results: the calls with their policies, in model order. */
      readonly calls?: readonly PlannedCall[];
    }
  | {
      readonly type: "model_attempt_failed";
      readonly turnId: string;
      readonly modelStep: number;
      readonly error: string;
      readonly now: number;
      readonly maxAttempts: number;
      readonly retryDelayMs: number;
    }
  /** The turn cannot go on (e.g. its run state is unreadable). */
  | { readonly type: "turn_failed"; readonly error: string }
  /** The start of one attempt of each of these calls, made durable before any of them runs. */
  | { readonly type: "calls_started"; readonly toolCallIds: readonly string[] }
  | {
      readonly type: "call_attempt_failed";
      readonly toolCallId: string;
      readonly error: string;
      readonly now: number;
      readonly retryDelayMs: number;
    }
  | {
      readonly type: "call_finished";
      readonly toolCallId: string;
      readonly outcome: { readonly status: "succeeded"; readonly output: string } | { readonly status: "failed"; readonly message: string };
    };

export interface Transition {
  readonly head: SessionHead;
  readonly events: EventBody[];
  readonly appendHistory: HistoryItem[];
}

export interface MachineConfig {
  /** RunModel steps a turn may take. */
  readonly maxModelSteps: number;
  /** The runner's user item for the note a failed turn leaves (deterministic: same text, same item). */
  readonly failureNote: (text: string) => HistoryItem;
}

/** A step the session can run now (or at `notBefore`). */
export type DueStep =
  | { readonly kind: "RunModel"; readonly turnId: string; readonly modelStep: number; readonly notBefore: number | null }
  | {
      readonly kind: "CallTool" | "CallSingleAttemptTool";
      readonly turnId: string;
      readonly toolCallId: string;
      readonly notBefore: number | null;
    };

export function newSessionHead(sessionId: string, agent: string, createdAt: string): SessionHead {
  return {
    schemaVersion: SESSION_SCHEMA_VERSION,
    sessionId,
    agent,
    status: "idle",
    turnCount: 0,
    historyLength: 0,
    turn: null,
    queue: [],
    pendingInterrupts: [],
    usage: emptyUsage(),
    inboxCursor: 0,
    createdAt,
  };
}

const activePhases = new Set<Turn["phase"]>(["model", "tools"]);
export const isTurnActive = (turn: Turn | null): turn is Turn => turn !== null && activePhases.has(turn.phase);

/** The calls of the turn's latest model response. */
export function currentCalls(turn: Turn): ToolCallRecord[] {
  return turn.calls.filter((call) => call.response === turn.modelSteps);
}

/** The outcomes handed to the next RunModel: every call of the latest response, in model order. */
export function outcomesForNextModelStep(head: SessionHead): RecordedOutcome[] {
  const turn = head.turn;
  if (!turn || turn.phase !== "model") return [];
  return currentCalls(turn).map((call) => ({
    toolCallId: call.toolCallId,
    name: call.name,
    status: call.status as FinalCallStatus,
    text: describeOutcome(call),
    output: call.status === "succeeded" ? call.output : null,
  }));
}

/** Steps that are due, in model order. A running call is not due (it is in flight, or awaits recovery). */
export function dueSteps(head: SessionHead): DueStep[] {
  const turn = head.turn;
  if (!isTurnActive(turn)) return [];
  if (turn.phase === "model") {
    return [{ kind: "RunModel", turnId: turn.turnId, modelStep: turn.modelSteps + 1, notBefore: turn.modelRetryAt }];
  }
  return currentCalls(turn)
    .filter((call) => call.status === "pending")
    .map((call) => ({ kind: call.step, turnId: turn.turnId, toolCallId: call.toolCallId, notBefore: call.retryAt }));
}

/** Whether a worker has something to do for this session without new input. */
export function isRunnable(head: SessionHead): boolean {
  const turn = head.turn;
  if (!isTurnActive(turn)) return head.queue.length > 0;
  if (turn.phase === "model") return true;
  return currentCalls(turn).some((call) => call.status === "pending" || call.status === "running");
}

export function apply(head: SessionHead, input: MachineInput, config: MachineConfig): Transition {
  const t = new Draft(head);
  switch (input.type) {
    case "inbox":
      t.applyInbox(input.item, input.userItem);
      break;
    case "recover":
      t.recover(input.fence);
      break;
    // A step's result is applied only to the step it belongs to: a late or repeated result changes nothing.
    case "model_completed":
      if (t.awaitsModelStep(input.turnId, input.modelStep)) t.modelCompleted(input.result, input.calls ?? [], config);
      break;
    case "model_attempt_failed":
      if (t.awaitsModelStep(input.turnId, input.modelStep)) t.modelAttemptFailed(input, config);
      break;
    case "turn_failed":
      t.failTurn(input.error, config);
      break;
    case "calls_started":
      t.callsStarted(input.toolCallIds);
      break;
    case "call_attempt_failed":
      if (!t.isRunning(input.toolCallId)) break;
      t.callAttemptFailed(input.toolCallId, input.error, input.now + input.retryDelayMs);
      break;
    case "call_finished":
      if (!t.isRunning(input.toolCallId)) break;
      if (input.outcome.status === "succeeded") {
        t.finishCall(input.toolCallId, "succeeded", { output: input.outcome.output });
      } else {
        t.finishCall(input.toolCallId, "failed", { message: input.outcome.message });
      }
      break;
  }
  return t.done();
}

/**
 * A deep copy of JSON-shaped data (what a head is: it is stored as JSON and parsed by its schema).
 * Strings are shared, not copied, which makes this several times cheaper than `structuredClone`
 * for a head that carries a saved run state.
 */
function copyData<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(copyData) as T;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = copyData((value as Record<string, unknown>)[key]);
  return copy as T;
}

/** A mutable copy of the head for one transition. */
class Draft {
  head: SessionHead;
  readonly events: EventBody[] = [];
  readonly appendHistory: HistoryItem[] = [];

  constructor(head: SessionHead) {
    this.head = copyData(head);
  }

  done(): Transition {
    this.head.status = deriveStatus(this.head);
    return { head: this.head, events: this.events, appendHistory: this.appendHistory };
  }

  awaitsModelStep(turnId: string, modelStep: number): boolean {
    const turn = this.head.turn;
    return isTurnActive(turn) && turn.turnId === turnId && turn.phase === "model" && turn.modelSteps + 1 === modelStep;
  }

  isRunning(toolCallId: string): boolean {
    const turn = this.head.turn;
    return isTurnActive(turn) && currentCalls(turn).some((call) => call.toolCallId === toolCallId && call.status === "running");
  }

  private get turn(): Turn {
    const turn = this.head.turn;
    if (!isTurnActive(turn)) throw new Error("no active turn");
    return turn;
  }

  private append(items: readonly HistoryItem[]): void {
    if (items.length === 0) return;
    this.appendHistory.push(...items);
    this.head.historyLength += items.length;
    this.events.push({ type: "history_appended", data: { items: items.map((item) => item.display) } });
  }

  private step(step: StepKind, status: StepRecord["status"], extra: { toolCallId?: string; attempt?: number; detail?: string } = {}): void {
    const turn = this.turn;
    const record: StepRecord = { step, status, attempt: extra.attempt ?? 0 };
    if (extra.toolCallId !== undefined) record.toolCallId = extra.toolCallId;
    if (extra.detail !== undefined) record.detail = extra.detail;
    const open = turn.steps.findLastIndex(
      (s) => s.step === step && s.toolCallId === extra.toolCallId && s.status === "running",
    );
    const base = { turnId: turn.turnId, step, ...(extra.toolCallId !== undefined ? { toolCallId: extra.toolCallId } : {}) };
    if (status === "running") {
      turn.steps.push(record);
      this.events.push({ type: "step_started", data: { ...base, attempt: record.attempt } });
      return;
    }
    if (open >= 0) turn.steps[open] = { ...turn.steps[open]!, status, ...(extra.detail !== undefined ? { detail: extra.detail } : {}) };
    else turn.steps.push(record);
    this.events.push({
      type: "step_completed",
      data: { ...base, status, ...(extra.detail !== undefined ? { detail: extra.detail } : {}) },
    });
  }

  applyInbox(item: InboxItem, userItem: HistoryItem | undefined): void {
    if (item.seq <= this.head.inboxCursor) return;
    this.head.inboxCursor = item.seq;
    if (item.kind === "message") {
      if (!userItem) throw new Error("a message needs its user item");
      this.head.queue.push({ text: item.text, inboxSeq: item.seq, item: userItem });
      if (isTurnActive(this.head.turn)) {
        this.events.push({ type: "message_queued", data: { text: item.text, position: this.head.queue.length } });
      } else {
        this.startNextTurn();
      }
      return;
    }
    const interrupt = this.head.pendingInterrupts.find((i) => i.interruptId === item.interruptId);
    // The client refuses unknown and already-resolved interrupts; an entry that no longer matches is dropped.
    if (!interrupt || !isTurnActive(this.head.turn) || this.head.turn.turnId !== interrupt.turnId) return;
    this.head.pendingInterrupts = this.head.pendingInterrupts.filter((i) => i !== interrupt);
    this.events.push({
      type: "interrupt_resolved",
      data: { interruptId: interrupt.interruptId, approved: item.approved, message: item.message },
    });
    const call = this.call(interrupt.toolCallId);
    if (item.approved) {
      this.step("AwaitToolApproval", "completed", { toolCallId: call.toolCallId, detail: "approved" });
      call.status = "pending";
    } else {
      this.step("AwaitToolApproval", "completed", { toolCallId: call.toolCallId, detail: "rejected" });
      this.finishCall(call.toolCallId, "rejected", { message: item.message });
    }
  }

  private startNextTurn(): void {
    const next = this.head.queue.shift();
    if (!next) return;
    this.head.turnCount += 1;
    const turn: Turn = {
      turnId: `turn-${this.head.turnCount}`,
      number: this.head.turnCount,
      userText: next.text,
      phase: "model",
      historyStart: this.head.historyLength,
      modelSteps: 0,
      modelAttempts: 0,
      modelRetryAt: null,
      runState: null,
      calls: [],
      steps: [],
      usage: emptyUsage(),
      finalText: null,
      error: null,
    };
    this.head.turn = turn;
    this.events.push({ type: "turn_started", data: { turnId: turn.turnId, text: next.text } });
    this.append([next.item]);
    this.step("RunModel", "running", { attempt: 1 });
  }

  recover(fence: number): void {
    const turn = this.head.turn;
    if (!isTurnActive(turn)) return;
    const changed: { toolCallId: string; status: ToolCallRecord["status"] }[] = [];
    for (const call of currentCalls(turn)) {
      if (call.status !== "running") continue;
      const rule = policyTable[call.effect];
      if (rule.onCrash === "outcome_unknown") {
        this.finishCall(call.toolCallId, "outcome_unknown", {
          message: "the worker running this call stopped before recording its result",
        });
      } else if (call.attempts >= call.maxAttempts) {
        this.finishCall(call.toolCallId, rule.exhausted, {
          message: `the worker stopped during attempt ${call.attempts} of ${call.maxAttempts}`,
        });
      } else {
        call.status = "pending";
        call.retryAt = null;
        call.lastError = "the worker stopped during the attempt";
        this.step(call.step, "failed", { toolCallId: call.toolCallId, attempt: call.attempts, detail: "worker stopped" });
      }
      changed.push({ toolCallId: call.toolCallId, status: call.status });
    }
    if (changed.length > 0) this.events.push({ type: "session_recovered", data: { fence, calls: changed } });
  }

  modelCompleted(result: RunModelResult, calls: readonly PlannedCall[], config: MachineConfig): void {
    const turn = this.turn;
    if (turn.phase !== "model") throw new Error("the turn is not waiting for a model step");
    turn.modelSteps += 1;
    turn.modelAttempts = 0;
    turn.modelRetryAt = null;
    turn.usage = addUsage(turn.usage, result.usage);
    this.head.usage = addUsage(this.head.usage, result.usage);
    if (result.kind === "final") {
      this.step("RunModel", "completed", { attempt: turn.modelSteps });
      turn.runState = null;
      turn.phase = "completed";
      turn.finalText = result.text;
      this.append(result.items);
      this.events.push({ type: "turn_completed", data: { turnId: turn.turnId, text: result.text, usage: turn.usage } });
      this.startNextTurn();
      return;
    }
    this.step("RunModel", "completed", { attempt: turn.modelSteps });
    if (turn.modelSteps >= config.maxModelSteps) {
      this.failTurn(`the turn reached its limit of ${config.maxModelSteps} model steps`, config);
      return;
    }
    turn.runState = result.runState;
    turn.phase = "tools";
    this.events.push({
      type: "tool_calls_requested",
      data: {
        turnId: turn.turnId,
        calls: calls.map((call) => ({ toolCallId: call.toolCallId, name: call.name, arguments: call.arguments })),
      },
    });
    calls.forEach((planned, index) => {
      const rule = policyTable[planned.effect];
      const interruptId = planned.needsApproval && !planned.invalid ? `${turn.turnId}-${turn.modelSteps}-${index + 1}` : null;
      const call: ToolCallRecord = {
        toolCallId: planned.toolCallId,
        name: planned.name,
        arguments: planned.arguments,
        response: turn.modelSteps,
        effect: planned.effect,
        step: rule.step,
        needsApproval: planned.needsApproval,
        status: interruptId ? "awaiting_approval" : "pending",
        attempts: 0,
        maxAttempts: rule.maxAttempts,
        idempotencyKey: idempotencyKey(this.head.sessionId, turn.turnId, planned.toolCallId),
        interruptId,
        retryAt: null,
        lastError: null,
        output: null,
        message: null,
      };
      turn.calls.push(call);
      if (planned.invalid) {
        call.status = "failed";
        call.message = planned.invalid;
        this.events.push({
          type: "tool_call_completed",
          data: { turnId: turn.turnId, toolCallId: call.toolCallId, name: call.name, status: "failed", text: describeOutcome(call) },
        });
        return;
      }
      if (interruptId) {
        const interrupt: Interrupt = {
          interruptId,
          turnId: turn.turnId,
          toolCallId: call.toolCallId,
          toolName: call.name,
          arguments: call.arguments,
        };
        this.head.pendingInterrupts.push(interrupt);
        this.step("AwaitToolApproval", "running", { toolCallId: call.toolCallId });
        this.events.push({ type: "interrupt_created", data: { interrupt } });
      }
    });
    this.resumeIfDone();
  }

  modelAttemptFailed(input: Extract<MachineInput, { type: "model_attempt_failed" }>, config: MachineConfig): void {
    const turn = this.turn;
    turn.modelAttempts += 1;
    if (turn.modelAttempts >= input.maxAttempts) {
      this.step("RunModel", "failed", { attempt: turn.modelAttempts, detail: input.error });
      this.failTurn(`the model step failed ${turn.modelAttempts} time(s); last error: ${input.error}`, config);
      return;
    }
    turn.modelRetryAt = input.now + input.retryDelayMs;
    this.step("RunModel", "failed", { attempt: turn.modelAttempts, detail: input.error });
    this.step("RunModel", "running", { attempt: turn.modelAttempts + 1 });
  }

  failTurn(error: string, config: MachineConfig): void {
    const turn = this.turn;
    const note = config.failureNote(describeTurnFailure(turn, error));
    turn.phase = "failed";
    turn.error = error;
    turn.runState = null;
    for (const call of turn.calls) {
      if (!isFinalCallStatus(call.status) && call.status !== "running") {
        call.status = "failed";
        call.message = "the turn failed before this call ran";
      }
    }
    this.head.pendingInterrupts = this.head.pendingInterrupts.filter((i) => i.turnId !== turn.turnId);
    this.append([note]);
    this.events.push({ type: "turn_failed", data: { turnId: turn.turnId, error } });
    this.startNextTurn();
  }

  private call(toolCallId: string): ToolCallRecord {
    const call = currentCalls(this.turn).find((c) => c.toolCallId === toolCallId);
    if (!call) throw new Error(`no call ${toolCallId} in the current response`);
    return call;
  }

  callsStarted(toolCallIds: readonly string[]): void {
    for (const id of toolCallIds) {
      const call = this.call(id);
      if (call.status !== "pending") throw new Error(`call ${id} is ${call.status}, not pending`);
      call.status = "running";
      call.attempts += 1;
      call.retryAt = null;
      this.step(call.step, "running", { toolCallId: id, attempt: call.attempts });
    }
  }

  callAttemptFailed(toolCallId: string, error: string, retryAt: number): void {
    const call = this.call(toolCallId);
    if (call.status !== "running") return;
    call.lastError = error;
    if (call.attempts >= call.maxAttempts) {
      const rule = policyTable[call.effect];
      const tries = call.maxAttempts === 1 ? "its only attempt" : `all ${call.maxAttempts} attempts`;
      this.finishCall(toolCallId, rule.exhausted, { message: `${tries} failed; last error: ${error}` });
      return;
    }
    this.step(call.step, "failed", { toolCallId, attempt: call.attempts, detail: error });
    call.status = "pending";
    call.retryAt = retryAt;
  }

  finishCall(toolCallId: string, status: FinalCallStatus, result: { output?: string; message?: string | null }): void {
    const call = this.call(toolCallId);
    if (isFinalCallStatus(call.status)) return;
    const wasRunning = call.status === "running";
    call.status = status;
    call.output = result.output ?? null;
    call.message = result.message ?? null;
    call.retryAt = null;
    if (wasRunning) {
      this.step(call.step, status === "succeeded" ? "completed" : "failed", {
        toolCallId,
        attempt: call.attempts,
        detail: status,
      });
    }
    this.events.push({
      type: "tool_call_completed",
      data: { turnId: this.turn.turnId, toolCallId, name: call.name, status, text: describeOutcome(call) },
    });
    this.resumeIfDone();
  }

  /** ResumeTurn: once every call of the response is final, the next RunModel gets all outcomes. */
  private resumeIfDone(): void {
    const turn = this.turn;
    if (turn.phase !== "tools") return;
    if (!currentCalls(turn).every((call) => isFinalCallStatus(call.status))) return;
    this.step("ResumeTurn", "running");
    this.step("ResumeTurn", "completed");
    turn.phase = "model";
    this.step("RunModel", "running", { attempt: 1 });
  }
}

export function deriveStatus(head: SessionHead): SessionStatus {
  const turn = head.turn;
  if (!isTurnActive(turn)) return "idle";
  if (turn.phase === "tools") {
    const open = currentCalls(turn).filter((call) => !isFinalCallStatus(call.status));
    if (open.length > 0 && open.every((call) => call.status === "awaiting_approval")) return "awaiting_approval";
  }
  return "running";
}
