/** Handlers of the inputs that do not belong to a step: inbox entries, recoveries, ticks. */
import { policyTable } from "../policy.js";
import type { ToolCallRecord } from "../schemas.js";
import type { Draft } from "./draft.js";
import { currentCalls } from "./state.js";
import type { ApplyContext, Handled, MachineInput } from "./types.js";

type Input<T extends MachineInput["type"]> = Extract<MachineInput, { type: T }>;

/**
 * A message starts a turn or is queued; a decision resolves its interrupt; a cancellation ends its
 * turn; a steered message joins the running turn (or starts one, as a message). Each entry is
 * applied once, in order.
 */
export function onInbox(draft: Draft, input: Input<"inbox">, ctx: ApplyContext): Handled {
  const { item, userItem } = input;
  if (typeof item !== "object" || item === null || !Number.isInteger(item.seq))
    return "the inbox entry has no sequence number";
  if (!(item.seq > draft.head.inboxCursor))
    return `inbox entry ${item.seq} is at or before the cursor ${draft.head.inboxCursor}`;
  const kind: unknown = item.kind;
  if (kind !== "message" && kind !== "resolution" && kind !== "cancel" && kind !== "steer" && kind !== "attention")
    return `inbox entry ${item.seq} is of no known kind`;
  if ((item.kind === "message" || item.kind === "steer") && !userItem)
    return `inbox message ${item.seq} comes without its user item`;

  draft.head.inboxCursor = item.seq;
  if (item.kind === "cancel") {
    const turn = draft.activeTurn();
    if (turn && turn.turnId === item.turnId && turn.phase !== "cancelling") {
      draft.beginCancel(turn, item, ctx.now, ctx.config);
    } else if (!(turn && turn.turnId === item.turnId)) {
      // The turn it names ended before it was applied (or, for a turn not started, never started): consumed.
      const why =
        draft.head.turn?.turnId === item.turnId
          ? `the turn had already ended (${draft.head.turn.phase})`
          : "the turn it names is not the session's running turn";
      draft.events.push({ type: "cancel_skipped", data: { turnId: item.turnId, requestId: item.requestId, why } });
    }
    return null;
  }
  if (item.kind === "steer") {
    const turn = draft.activeTurn();
    if (turn && turn.phase !== "cancelling") {
      turn.steered.push({ text: item.text, inboxSeq: item.seq, item: userItem! });
      return null;
    }
    // No turn to join (or the turn is ending): it is a message for the next turn.
    draft.head.queue.push({ text: item.text, inboxSeq: item.seq, item: userItem! });
    if (turn)
      draft.events.push({ type: "message_queued", data: { text: item.text, position: draft.head.queue.length } });
    else draft.startNextTurn();
    return null;
  }
  if (item.kind === "message") {
    draft.head.queue.push({ text: item.text, inboxSeq: item.seq, item: userItem! });
    if (draft.activeTurn()) {
      draft.events.push({ type: "message_queued", data: { text: item.text, position: draft.head.queue.length } });
    } else {
      draft.startNextTurn();
    }
    return null;
  }
  if (item.kind === "attention") {
    // The client refuses unknown, resolved and mistyped resolutions; an entry that no longer matches is consumed.
    const attention = draft.head.pendingInterrupts.find(
      (i) => i.interruptId === item.interruptId && i.kind === "attention",
    );
    const outcome: unknown = item.outcome;
    if (!attention || (outcome !== "done" && outcome !== "not_done" && outcome !== "unknown")) return null;
    if (outcome === "done" && typeof item.output !== "string") return null;
    draft.resolveAttention(attention, outcome, outcome === "done" ? item.output : null, item.seq);
    return null;
  }
  const interrupt = draft.head.pendingInterrupts.find(
    (i) => i.interruptId === item.interruptId && i.kind !== "attention",
  );
  const turn = draft.activeTurn();
  // The client refuses unknown and already-resolved interrupts; an entry that no longer matches is
  // consumed (the cursor moves past it) and changes nothing else.
  if (!interrupt || !turn || turn.turnId !== interrupt.turnId) return null;
  draft.head.pendingInterrupts = draft.head.pendingInterrupts.filter((i) => i !== interrupt);
  const call = draft.currentCall(interrupt.toolCallId);
  if (call?.status !== "awaiting_approval") return null;
  draft.events.push({
    type: "interrupt_resolved",
    data: { interruptId: interrupt.interruptId, approved: item.approved, message: item.message },
  });
  if (item.approved) {
    draft.step(turn, "AwaitToolApproval", "completed", { toolCallId: call.toolCallId, detail: "approved" });
    call.status = "pending";
  } else {
    draft.step(turn, "AwaitToolApproval", "completed", { toolCallId: call.toolCallId, detail: "rejected" });
    draft.finishCall(turn, call, "rejected", { message: item.message });
  }
  return null;
}

/**
 * A new engine took the session over: every step found started was interrupted. A RunModel step is
 * due again (its start is not an attempt); calls follow the policy table's crash column.
 */
export function onRecover(draft: Draft, input: Input<"recover">): Handled {
  if (!Number.isInteger(input.fence)) return "a recovery names the fence of its lease";
  // Fits every state: with no turn running there is nothing to recover.
  const turn = draft.activeTurn();
  if (!turn) return null;
  const interruptedModelStep = turn.phase === "model" && turn.modelRunning ? turn.modelSteps + 1 : null;
  turn.modelRunning = false;
  const changed: { toolCallId: string; status: ToolCallRecord["status"] }[] = [];
  for (const call of currentCalls(turn)) {
    if (call.status === "reconciling") {
      // A check is a read: it runs again, unless that was its last attempt.
      if (call.reconcileAttempts >= call.reconcileMaxAttempts) {
        draft.leaveUnknown(
          turn,
          call,
          `${call.unknownReason ?? "its outcome was in doubt"}; the worker stopped during the last attempt of its check`,
        );
      } else {
        call.status = "reconcile_pending";
        call.retryAt = null;
        draft.step(turn, "ReconcileCall", "failed", {
          toolCallId: call.toolCallId,
          attempt: call.reconcileAttempts,
          detail: "worker stopped",
        });
      }
      changed.push({ toolCallId: call.toolCallId, status: call.status });
      continue;
    }
    if (call.status !== "running") continue;
    const rule = policyTable[call.effect];
    if (turn.phase === "cancelling") {
      // The turn is being cancelled: nothing is retried; a single-attempt call found started is in doubt.
      draft.giveUpCall(turn, call, "the worker running this call stopped after its turn was cancelled");
    } else if (rule.onCrash === "outcome_unknown") {
      draft.callInDoubt(turn, call, "the worker running this call stopped before recording its result");
    } else if (call.attempts >= call.maxAttempts) {
      const message = `the worker stopped during attempt ${call.attempts} of ${call.maxAttempts}`;
      if (rule.exhausted === "outcome_unknown") draft.callInDoubt(turn, call, message);
      else draft.finishCall(turn, call, rule.exhausted, { message });
    } else {
      call.status = "pending";
      call.retryAt = null;
      call.lastError = "the worker stopped during the attempt";
      draft.step(turn, call.step, "failed", {
        toolCallId: call.toolCallId,
        attempt: call.attempts,
        detail: "worker stopped",
      });
    }
    changed.push({ toolCallId: call.toolCallId, status: call.status });
  }
  if (changed.length > 0 || interruptedModelStep !== null) {
    draft.events.push({
      type: "session_recovered",
      data: {
        fence: input.fence,
        calls: changed,
        ...(interruptedModelStep !== null ? { modelStep: interruptedModelStep } : {}),
      },
    });
  }
  return null;
}

/** Time passed: nothing changes by itself; the steps whose backoff ended are started by the planner. */
export function onTick(_draft: Draft, _input: Input<"tick">): Handled {
  // Fits every state.
  return null;
}
