/**
 * A mutable copy of the head for one transition, with the moves every handler shares: appending
 * history, recording steps, finishing calls, resuming and failing turns, starting steps. Handlers
 * check that their input fits the state before they call any of these.
 */
import { describeOutcome, describeTurnCancellation, describeTurnFailure } from "../outcome-text.js";
import { policyTable } from "../policy.js";
import {
  emptyUsage,
  isFinalCallStatus,
  type EventBody,
  type FinalCallStatus,
  type HistoryItem,
  type InboxEntry,
  type SessionHead,
  type StepKind,
  type StepRecord,
  type ToolCallRecord,
  type Turn,
} from "../schemas.js";
import { copyData, currentCalls, isTurnActive } from "./state.js";
import type { DueStep, MachineConfig } from "./types.js";

export class Draft {
  readonly head: SessionHead;
  readonly events: EventBody[] = [];
  readonly appendHistory: HistoryItem[] = [];
  /** Steps started by this transition, in the order they were started. */
  readonly started: DueStep[] = [];

  constructor(head: SessionHead) {
    this.head = copyData(head);
  }

  /** The running turn, or null. */
  activeTurn(): Turn | null {
    const turn = this.head.turn;
    return isTurnActive(turn) ? turn : null;
  }

  /** The call of the running turn's latest response with this ID, or null. */
  currentCall(toolCallId: string): ToolCallRecord | null {
    const turn = this.activeTurn();
    return (turn && currentCalls(turn).find((call) => call.toolCallId === toolCallId)) ?? null;
  }

  append(items: readonly HistoryItem[]): void {
    if (items.length === 0) return;
    this.appendHistory.push(...items);
    this.head.historyLength += items.length;
    this.events.push({ type: "history_appended", data: { items: items.map((item) => item.display) } });
  }

  step(
    turn: Turn,
    step: StepKind,
    status: StepRecord["status"],
    extra: { toolCallId?: string; attempt?: number; detail?: string } = {},
  ): void {
    const record: StepRecord = { step, status, attempt: extra.attempt ?? 0 };
    if (extra.toolCallId !== undefined) record.toolCallId = extra.toolCallId;
    if (extra.detail !== undefined) record.detail = extra.detail;
    const open = turn.steps.findLastIndex(
      (s) => s.step === step && s.toolCallId === extra.toolCallId && s.status === "running",
    );
    const base = {
      turnId: turn.turnId,
      step,
      ...(extra.toolCallId !== undefined ? { toolCallId: extra.toolCallId } : {}),
    };
    if (status === "running") {
      turn.steps.push(record);
      this.events.push({ type: "step_started", data: { ...base, attempt: record.attempt } });
      return;
    }
    if (open >= 0)
      turn.steps[open] = {
        ...turn.steps[open]!,
        status,
        ...(extra.detail !== undefined ? { detail: extra.detail } : {}),
      };
    else turn.steps.push(record);
    this.events.push({
      type: "step_completed",
      data: { ...base, status, ...(extra.detail !== undefined ? { detail: extra.detail } : {}) },
    });
  }

  /** Starts the next queued message's turn, if the queue holds one. */
  startNextTurn(): void {
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
      modelRunning: false,
      runState: null,
      calls: [],
      steps: [],
      usage: emptyUsage(),
      finalText: null,
      error: null,
      cancellation: null,
      steered: [],
      joined: [],
    };
    this.head.turn = turn;
    this.events.push({ type: "turn_started", data: { turnId: turn.turnId, text: next.text } });
    this.append([next.item]);
    this.step(turn, "RunModel", "running", { attempt: 1 });
  }

  /** Ends the turn with `error`, leaves the note for the next turn's model, and starts the next turn. */
  failTurn(turn: Turn, error: string, config: MachineConfig): void {
    const note = config.failureNote(describeTurnFailure(turn, error));
    turn.phase = "failed";
    turn.error = error;
    turn.runState = null;
    turn.modelRunning = false;
    for (const call of turn.calls) {
      if (!isFinalCallStatus(call.status) && call.status !== "running") {
        call.status = "failed";
        call.message = "the turn failed before this call ran";
      }
    }
    this.head.pendingInterrupts = this.head.pendingInterrupts.filter((i) => i.turnId !== turn.turnId);
    this.requeueSteered(turn);
    this.append([note]);
    this.events.push({ type: "turn_failed", data: { turnId: turn.turnId, error } });
    this.startNextTurn();
  }

  /**
   * Applies a cancellation: a RunModel in flight is abandoned (its result, if it still arrives, is
   * ignored), calls not started or waiting for approval become `cancelled`, and calls in flight are
   * waited for until the grace period ends (`settleCancellation`). The engine aborts the signals of
   * the turn's steps once this is stored.
   */
  beginCancel(turn: Turn, entry: Extract<InboxEntry, { kind: "cancel" }>, now: number, config: MachineConfig): void {
    const modelCallAborted = turn.phase === "model" && turn.modelRunning;
    if (turn.phase === "model") {
      // The RunModel step that is due (in flight, or waiting for a retry) will not run.
      this.step(turn, "RunModel", "failed", { attempt: turn.modelAttempts + 1, detail: "cancelled" });
    }
    turn.modelRunning = false;
    turn.modelRetryAt = null;
    // Before any call is finished, so that the last one does not resume the turn.
    turn.phase = "cancelling";
    turn.cancellation = {
      reason: entry.reason,
      requestId: entry.requestId,
      appliedAt: now,
      graceUntil: now + config.cancelGraceMs,
      modelCallAborted,
    };
    this.head.pendingInterrupts = this.head.pendingInterrupts.filter((i) => i.turnId !== turn.turnId);
    for (const call of turn.calls) {
      if (isFinalCallStatus(call.status) || call.status === "running") continue;
      if (call.status === "awaiting_approval")
        this.step(turn, "AwaitToolApproval", "completed", { toolCallId: call.toolCallId, detail: "cancelled" });
      this.finishCall(turn, call, "cancelled", {
        message:
          call.status === "awaiting_approval"
            ? "the turn was cancelled while this call waited for approval; it never ran"
            : "the turn was cancelled before this call ran",
      });
    }
    const running = turn.calls.filter((call) => call.status === "running").map((call) => call.toolCallId);
    if (running.length > 0) {
      this.events.push({
        type: "turn_cancelling",
        data: {
          turnId: turn.turnId,
          reason: entry.reason,
          requestId: entry.requestId,
          graceUntil: new Date(turn.cancellation.graceUntil).toISOString(),
          running,
        },
      });
    }
  }

  /**
   * A call of a turn being cancelled stopped without a result: a `read` or `idempotent_write`
   * (it may be repeated safely) ends `cancelled`; a single-attempt call ends `outcome_unknown`
   * unless the tool stated that it changed nothing.
   */
  giveUpCall(turn: Turn, call: ToolCallRecord, why: string, changedNothing = false): void {
    if (changedNothing || policyTable[call.effect].step === "CallTool") {
      this.finishCall(turn, call, "cancelled", { message: why });
    } else {
      this.finishCall(turn, call, "outcome_unknown", { message: `${why}; it may have taken effect` });
    }
  }

  /**
   * Ends a turn being cancelled once no call of it is in flight: past the grace period, calls still
   * running are given up. Then the receipt, the note for the next turn's model, and the next turn.
   */
  settleCancellation(now: number, config: MachineConfig): void {
    const turn = this.activeTurn();
    if (turn?.phase !== "cancelling" || !turn.cancellation) return;
    const cancellation = turn.cancellation;
    if (now >= cancellation.graceUntil) {
      for (const call of turn.calls) {
        if (call.status !== "running") continue;
        this.giveUpCall(
          turn,
          call,
          `it had not returned ${config.cancelGraceMs} ms after its turn was cancelled (the grace period)`,
        );
      }
    }
    if (turn.calls.some((call) => call.status === "running")) return;
    turn.phase = "cancelled";
    turn.runState = null;
    this.requeueSteered(turn);
    this.append([
      config.failureNote(describeTurnCancellation(turn, cancellation.reason, cancellation.modelCallAborted)),
    ]);
    this.events.push({
      type: "turn_cancelled",
      data: {
        turnId: turn.turnId,
        reason: cancellation.reason,
        requestId: cancellation.requestId,
        modelCallAborted: cancellation.modelCallAborted,
        calls: turn.calls.map((call) => ({
          toolCallId: call.toolCallId,
          name: call.name,
          effect: call.effect,
          status: call.status as FinalCallStatus,
          attempts: call.attempts,
        })),
      },
    });
    this.startNextTurn();
  }

  /** Steered messages that had not joined their turn when it ended start the next turn, before the queue. */
  requeueSteered(turn: Turn): void {
    if (turn.steered.length === 0) return;
    this.head.queue.unshift(...turn.steered);
    turn.steered = [];
  }

  /** The turn's steered messages join it: into the history, just before its next RunModel starts. */
  private joinSteered(turn: Turn): void {
    if (turn.steered.length === 0) return;
    const modelStep = turn.modelSteps + 1;
    const afterToolCallId = turn.modelSteps === 0 ? null : (currentCalls(turn).at(-1)?.toolCallId ?? null);
    for (const message of turn.steered) {
      turn.joined.push({ modelStep, historyIndex: this.head.historyLength, afterToolCallId });
      this.append([message.item]);
      this.events.push({ type: "message_steered", data: { turnId: turn.turnId, text: message.text, modelStep } });
    }
    turn.steered = [];
  }

  /** Records a final outcome of a call of the running turn (no-op for a call that is final already). */
  finishCall(
    turn: Turn,
    call: ToolCallRecord,
    status: FinalCallStatus,
    result: { output?: string; message?: string | null },
  ): void {
    if (isFinalCallStatus(call.status)) return;
    const wasRunning = call.status === "running";
    call.status = status;
    call.output = result.output ?? null;
    call.message = result.message ?? null;
    call.retryAt = null;
    if (wasRunning) {
      this.step(turn, call.step, status === "succeeded" ? "completed" : "failed", {
        toolCallId: call.toolCallId,
        attempt: call.attempts,
        detail: status,
      });
    }
    this.events.push({
      type: "tool_call_completed",
      data: { turnId: turn.turnId, toolCallId: call.toolCallId, name: call.name, status, text: describeOutcome(call) },
    });
    this.resumeIfDone(turn);
  }

  /** ResumeTurn: once every call of the response is final, the next RunModel gets all outcomes. */
  resumeIfDone(turn: Turn): void {
    if (turn.phase !== "tools") return;
    if (!currentCalls(turn).every((call) => isFinalCallStatus(call.status))) return;
    this.step(turn, "ResumeTurn", "running");
    this.step(turn, "ResumeTurn", "completed");
    turn.phase = "model";
    this.step(turn, "RunModel", "running", { attempt: 1 });
  }

  /** Starts the due RunModel step: it is in flight until its result or a recovery. */
  startModel(turn: Turn): void {
    this.joinSteered(turn);
    turn.modelRunning = true;
    this.started.push({
      kind: "RunModel",
      turnId: turn.turnId,
      modelStep: turn.modelSteps + 1,
      attempt: turn.modelAttempts + 1,
    });
  }

  /** Starts the next attempt of a pending call: the attempt is counted before the tool runs. */
  startCall(turn: Turn, call: ToolCallRecord): void {
    call.status = "running";
    call.attempts += 1;
    call.retryAt = null;
    this.step(turn, call.step, "running", { toolCallId: call.toolCallId, attempt: call.attempts });
    this.started.push({ kind: call.step, turnId: turn.turnId, toolCallId: call.toolCallId, attempt: call.attempts });
  }
}
