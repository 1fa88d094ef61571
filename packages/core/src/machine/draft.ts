/**
 * A mutable copy of the head for one transition, with the moves every handler shares: appending
 * history, recording steps, finishing calls, resuming and failing turns, starting steps. Handlers
 * check that their input fits the state before they call any of these.
 */
import {
  describeAttentionResolution,
  describeOutcome,
  describeRerunOutcome,
  describeTurnCancellation,
  describeTurnFailure,
} from "../outcome-text.js";
import { hasReconcile, policyTable } from "../policy.js";
import {
  emptyUsage,
  isFinalCallStatus,
  type EventBody,
  type FinalCallStatus,
  type FollowUp,
  type HistoryItem,
  type InboxEntry,
  type Interrupt,
  type ReconcileStatus,
  type SessionHead,
  type StepKind,
  type StepRecord,
  type ToolCallRecord,
  type Turn,
} from "../schemas.js";
import { copyData, currentCalls, isCallInFlight, isTurnActive, reconcileDeadline } from "./state.js";
import { backoffDelay } from "../retry.js";
import type { DueStep, MachineConfig } from "./types.js";

export class Draft {
  readonly head: SessionHead;
  readonly events: EventBody[] = [];
  readonly appendHistory: HistoryItem[] = [];
  /** Steps started by this transition, in the order they were started. */
  readonly started: DueStep[] = [];

  constructor(
    head: SessionHead,
    private readonly config: MachineConfig,
  ) {
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
      followUp: next.followUp ?? null,
    };
    this.head.turn = turn;
    this.events.push({ type: "turn_started", data: { turnId: turn.turnId, text: next.text } });
    this.append([next.item]);
    if (next.followUp?.rerun) this.startRerun(turn, next.followUp);
    else this.step(turn, "RunModel", "running", { attempt: 1 });
  }

  /**
   * A follow-up turn whose call a person marked not done: before its first RunModel, the call runs
   * again with its idempotency key (an `idempotent_write` at once, a single-attempt call once a person
   * approves it again), as the turn's response 0.
   */
  private startRerun(turn: Turn, followUp: FollowUp): void {
    const rule = policyTable[followUp.call.effect];
    const single = rule.step === "CallSingleAttemptTool";
    const interruptId = single ? `${turn.turnId}-0-1` : null;
    const call: ToolCallRecord = {
      toolCallId: followUp.call.toolCallId,
      name: followUp.call.name,
      arguments: followUp.call.arguments,
      response: 0,
      effect: followUp.call.effect,
      step: rule.step,
      needsApproval: single,
      status: single ? "awaiting_approval" : "pending",
      attempts: 0,
      maxAttempts: rule.maxAttempts,
      idempotencyKey: followUp.call.idempotencyKey,
      interruptId,
      retryAt: null,
      lastError: null,
      output: null,
      message: null,
      reconcileAttempts: 0,
      reconcileMaxAttempts: 0,
      unknownReason: null,
      reconciled: null,
      reruns: 0,
    };
    turn.phase = "tools";
    turn.calls.push(call);
    this.events.push({
      type: "tool_calls_requested",
      data: {
        turnId: turn.turnId,
        calls: [{ toolCallId: call.toolCallId, name: call.name, arguments: call.arguments }],
      },
    });
    if (interruptId) {
      this.askApproval(
        turn,
        call,
        interruptId,
        `a person marked its earlier attempt (${followUp.call.turnId}) not done: approve to run it again`,
      );
    }
  }

  /** The call waits for a person's approval under this interrupt. */
  askApproval(turn: Turn, call: ToolCallRecord, interruptId: string, reason: string | null): void {
    call.status = "awaiting_approval";
    call.interruptId = interruptId;
    const interrupt: Interrupt = {
      interruptId,
      kind: "approval",
      turnId: turn.turnId,
      toolCallId: call.toolCallId,
      toolName: call.name,
      arguments: call.arguments,
      reason,
      idempotencyKey: null,
      turnCancelled: false,
    };
    this.head.pendingInterrupts.push(interrupt);
    this.step(turn, "AwaitToolApproval", "running", { toolCallId: call.toolCallId });
    this.events.push({ type: "interrupt_created", data: { interrupt } });
  }

  /** Removes the turn's approval interrupts (its attention interrupts outlive it). */
  private dropApprovals(turn: Turn): void {
    this.head.pendingInterrupts = this.head.pendingInterrupts.filter(
      (i) => i.turnId !== turn.turnId || i.kind === "attention",
    );
  }

  /** Ends the turn with `error`, leaves the note for the next turn's model, and starts the next turn. */
  failTurn(turn: Turn, error: string, config: MachineConfig): void {
    const note = config.failureNote(describeTurnFailure(turn, error));
    turn.phase = "failed";
    turn.error = error;
    turn.runState = null;
    turn.modelRunning = false;
    for (const call of turn.calls) {
      if (!isFinalCallStatus(call.status) && !isCallInFlight(call)) {
        call.status = "failed";
        call.message = "the turn failed before this call ran";
      }
    }
    this.dropApprovals(turn);
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
    this.dropApprovals(turn);
    for (const call of turn.calls) {
      if (isFinalCallStatus(call.status) || isCallInFlight(call)) continue;
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
      this.callInDoubt(turn, call, `${why}; it may have taken effect`);
    }
  }

  /**
   * The call would end `outcome_unknown` (`reason` says why): when its tool declares `reconcile`, a
   * check is due (a `ReconcileCall` step, retried like a `read`); otherwise it is `outcome_unknown`
   * and a person is asked (`leaveUnknown`).
   */
  callInDoubt(turn: Turn, call: ToolCallRecord, reason: string): void {
    if (isFinalCallStatus(call.status)) return;
    if (!hasReconcile(this.config.policies, call.name)) {
      this.leaveUnknown(turn, call, reason);
      return;
    }
    if (call.status === "running") {
      this.step(turn, call.step, "failed", { toolCallId: call.toolCallId, attempt: call.attempts, detail: "in doubt" });
    }
    call.status = "reconcile_pending";
    call.unknownReason = reason;
    call.retryAt = null;
    call.reconcileMaxAttempts = call.reconcileAttempts + policyTable.read.maxAttempts;
  }

  /** The call is `outcome_unknown`, and an attention interrupt asks a person what became of it. */
  leaveUnknown(turn: Turn, call: ToolCallRecord, reason: string): void {
    if (isFinalCallStatus(call.status)) return;
    if (call.status === "reconciling") {
      this.step(turn, "ReconcileCall", "failed", {
        toolCallId: call.toolCallId,
        attempt: call.reconcileAttempts,
        detail: "unknown",
      });
    }
    const interrupt: Interrupt = {
      interruptId: `${turn.turnId}-attention-${call.toolCallId}`,
      kind: "attention",
      turnId: turn.turnId,
      toolCallId: call.toolCallId,
      toolName: call.name,
      arguments: call.arguments,
      reason,
      effect: call.effect,
      idempotencyKey: call.idempotencyKey,
      turnCancelled: turn.phase === "cancelling",
    };
    call.unknownReason = null;
    this.finishCall(turn, call, "outcome_unknown", { message: reason });
    // After the call's own events, before whatever its end started (the next RunModel, a receipt).
    this.head.pendingInterrupts.push(interrupt);
    this.events.push({ type: "attention_required", data: { interrupt } });
  }

  /** Starts the next attempt of a check of a call whose outcome is in doubt (counted before it runs). */
  startReconcile(turn: Turn, call: ToolCallRecord): void {
    call.status = "reconciling";
    call.reconcileAttempts += 1;
    call.retryAt = null;
    this.step(turn, "ReconcileCall", "running", { toolCallId: call.toolCallId, attempt: call.reconcileAttempts });
    this.started.push({
      kind: "ReconcileCall",
      turnId: turn.turnId,
      toolCallId: call.toolCallId,
      attempt: call.reconcileAttempts,
    });
  }

  /**
   * What a check found, applied to a call that is `reconciling`: `done` is `succeeded` with its
   * output; `not_done` runs an `idempotent_write` again with the same key (once), offers a
   * single-attempt call to a person again, and ends a call of a turn being cancelled `cancelled`;
   * `unknown` leaves it `outcome_unknown` with an attention interrupt.
   */
  reconciled(turn: Turn, call: ToolCallRecord, found: ReconcileStatus, output: string | null): void {
    const reason = call.unknownReason ?? "its outcome was in doubt";
    const attempts = call.reconcileAttempts - (call.reconcileMaxAttempts - policyTable.read.maxAttempts);
    this.step(turn, "ReconcileCall", "completed", {
      toolCallId: call.toolCallId,
      attempt: call.reconcileAttempts,
      detail: found,
    });
    // No check is in flight any more; what follows settles the call or starts it again.
    call.status = "reconcile_pending";
    call.reconciled = { by: "tool", found };
    const events = this.events.length;
    const rule = policyTable[call.effect];
    if (found === "unknown") {
      this.leaveUnknown(turn, call, `${reason}; a check could not tell whether it took effect`);
    } else if (found === "done") {
      call.unknownReason = null;
      this.finishCall(turn, call, "succeeded", { output: output ?? "" });
    } else if (turn.phase === "cancelling") {
      call.unknownReason = null;
      this.finishCall(turn, call, "cancelled", {
        message: `${reason}; a check found it did not take effect, and its turn was cancelled`,
      });
    } else if (rule.step === "CallTool" && call.reruns >= 1) {
      call.unknownReason = null;
      this.finishCall(turn, call, "failed", {
        message: `${reason}; a check found it did not take effect, after it had already run again`,
      });
    } else if (rule.step === "CallTool") {
      // It runs again with the same key: one more round of the effect's attempts.
      call.unknownReason = null;
      call.reruns += 1;
      call.maxAttempts += rule.maxAttempts;
      call.status = "pending";
      call.retryAt = null;
    } else {
      // A single-attempt call never runs again without a person's approval.
      call.unknownReason = null;
      call.maxAttempts = call.attempts + 1;
      call.needsApproval = true;
      const index = currentCalls(turn).indexOf(call) + 1;
      this.askApproval(
        turn,
        call,
        `${turn.turnId}-${call.response}-${index}-again-${call.attempts}`,
        "its attempt did not take effect (a check found it not done): approve to run it again",
      );
    }
    // Reported before the events of what the call's end started (the next RunModel, a receipt).
    this.events.splice(events, 0, {
      type: "call_reconciled",
      data: { turnId: turn.turnId, toolCallId: call.toolCallId, name: call.name, found, attempts, status: call.status },
    });
  }

  /** A check's attempt failed: retried like a `read` (backoff), and after its last attempt the outcome stays unknown. */
  reconcileAttemptFailed(turn: Turn, call: ToolCallRecord, error: string, now: number): void {
    const reason = call.unknownReason ?? "its outcome was in doubt";
    if (call.reconcileAttempts >= call.reconcileMaxAttempts) {
      const tries = policyTable.read.maxAttempts;
      this.leaveUnknown(turn, call, `${reason}; its check failed ${tries} time(s), last error: ${error}`);
      return;
    }
    this.step(turn, "ReconcileCall", "failed", {
      toolCallId: call.toolCallId,
      attempt: call.reconcileAttempts,
      detail: error,
    });
    call.status = "reconcile_pending";
    const episode = call.reconcileAttempts - (call.reconcileMaxAttempts - policyTable.read.maxAttempts);
    call.retryAt = now + backoffDelay(this.config.toolBackoff, episode);
  }

  /**
   * A person resolved an attention interrupt: the call's record (when the head still holds its turn)
   * takes what they found, and `done` / `not_done` queue a follow-up turn that tells the model (after
   * running the call again, for `not_done` outside a cancelled turn).
   */
  resolveAttention(interrupt: Interrupt, found: ReconcileStatus, output: string | null, inboxSeq: number): void {
    this.head.pendingInterrupts = this.head.pendingInterrupts.filter((i) => i !== interrupt);
    this.events.push({
      type: "attention_resolved",
      data: {
        interruptId: interrupt.interruptId,
        turnId: interrupt.turnId,
        toolCallId: interrupt.toolCallId,
        outcome: found,
        output,
      },
    });
    const turn = this.head.turn?.turnId === interrupt.turnId ? this.head.turn : null;
    const call = turn?.calls.find((c) => c.toolCallId === interrupt.toolCallId && c.status === "outcome_unknown");
    if (call) {
      call.reconciled = { by: "person", found };
      if (found === "done") {
        call.status = "succeeded";
        call.output = output ?? "";
        call.message = null;
      } else if (found === "not_done" && interrupt.turnCancelled) {
        call.status = "cancelled";
        call.message = `${call.message ?? "its outcome was unknown"}; a person found it did not take effect`;
      }
    }
    if (found === "unknown") return;
    const effect = interrupt.effect ?? "unclassified";
    const followUp: FollowUp = {
      interruptId: interrupt.interruptId,
      outcome: found,
      output: found === "done" ? (output ?? "") : null,
      call: {
        turnId: interrupt.turnId,
        toolCallId: interrupt.toolCallId,
        name: interrupt.toolName,
        arguments: interrupt.arguments,
        effect,
        idempotencyKey:
          interrupt.idempotencyKey ?? `${this.head.sessionId}/${interrupt.turnId}/${interrupt.toolCallId}`,
      },
      rerun: found === "not_done" && !interrupt.turnCancelled,
    };
    const text = describeAttentionResolution(followUp);
    this.head.queue.push({ text, inboxSeq, item: this.config.failureNote(text), followUp });
    if (this.activeTurn()) {
      this.events.push({ type: "message_queued", data: { text, position: this.head.queue.length } });
    } else {
      this.startNextTurn();
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
    // A check of a call in doubt gets a second grace period; then the outcome stays unknown.
    if (now >= reconcileDeadline(cancellation)) {
      for (const call of turn.calls) {
        if (call.status !== "reconcile_pending" && call.status !== "reconciling") continue;
        this.leaveUnknown(
          turn,
          call,
          `${call.unknownReason ?? "its outcome was in doubt"}; its check had not answered by the end of the cancellation`,
        );
      }
    }
    if (turn.calls.some(isCallInFlight)) return;
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

  /**
   * ResumeTurn: once every call of the response is final, the next RunModel gets all outcomes. In a
   * follow-up turn, the outcome of the call it ran again joins the turn as a note before its first
   * RunModel (that step has no outcomes of its own).
   */
  resumeIfDone(turn: Turn): void {
    if (turn.phase !== "tools") return;
    if (!currentCalls(turn).every((call) => isFinalCallStatus(call.status))) return;
    this.step(turn, "ResumeTurn", "running");
    this.step(turn, "ResumeTurn", "completed");
    turn.phase = "model";
    if (turn.modelSteps === 0) {
      const rerun = currentCalls(turn)[0];
      if (rerun) {
        turn.joined.push({ modelStep: 1, historyIndex: this.head.historyLength, afterToolCallId: null });
        this.append([this.config.failureNote(describeRerunOutcome(rerun))]);
      }
    }
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
