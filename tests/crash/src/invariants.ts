/**
 * The checks every crash run ends with. They read only what the run left in the database
 * (`RunData`), the plan the driver followed, and the lives of the worker processes, and return every
 * violation found as a sentence that names the session and the call.
 */
import { idempotencyKey } from "@durable-agents/core";
import { crashTools, type CrashToolName } from "./crash-agent.js";
import type { ExecutionRow } from "./execution-log.js";
import type { RunData, StoredEvent } from "./run-data.js";
import type { PlannedSession } from "./session-plan.js";
import type { WorkerLife } from "./worker-fleet.js";

/** A cancellation the client accepted (`cancelTurn` answered it, not as a duplicate of an earlier one). */
export interface AcceptedCancel {
  readonly sessionId: string;
  readonly requestId: string;
  readonly seq: number;
  /** The turn it names, as `cancelTurn` answered. */
  readonly turnId: string;
}

/** A decision the client refused because its turn was cancelled. */
export interface RefusedDecision {
  readonly sessionId: string;
  readonly interruptId: string;
  /** The interrupt's turn. */
  readonly turnId: string;
  /** `session_state` (SessionStateError), or `interrupt_not_found` (see the README: a later turn had started). */
  readonly code: "session_state" | "interrupt_not_found";
  /**
   * `late`: sent on purpose after the turn's cancellation was accepted (approval mode); `first`: the
   * interrupt's decision, racing a cancellation; `second`: a deliberate second decision.
   */
  readonly kind: "late" | "first" | "second";
}

export interface InvariantOptions {
  readonly plan: readonly PlannedSession[];
  readonly workers: readonly WorkerLife[];
  /** Every cancellation the client accepted: the inbox must hold exactly these. */
  readonly cancels: readonly AcceptedCancel[];
  /** Every decision the client refused because its turn was cancelled. */
  readonly refusedDecisions: readonly RefusedDecision[];
  /** Every execution must have recorded its end (a run without kills and restarts). */
  readonly requireFinishedExecutions?: boolean;
  /**
   * The workers ran with core's `readToolHoldMs`: a model's result that starts only reads may wait
   * for the first read's result, so a read can run before its start is committed. A worker killed
   * then leaves a run its call's attempts do not list (or a run of a call no stored response asked
   * for, when the turn ended before the model was asked again). The checks then allow each read
   * call one such run, the first of its runs, in a killed worker, and count them; every other check
   * stays as it is.
   */
  readonly readsMayRunUncounted?: boolean;
}

export interface InvariantStats {
  sessions: number;
  turnsCompleted: number;
  turnsFailed: number;
  messages: number;
  interruptsApproved: number;
  interruptsRejected: number;
  calls: number;
  outcomes: Record<string, number>;
  executionsPerTool: Record<string, number>;
  executionsPerWorker: Record<string, number>;
  /** Calls whose tool ran more than once (retries and reruns after a crash). */
  callsRunMoreThanOnce: number;
  /** `session_recovered` events: a worker took over calls a dead worker had running. */
  recoveries: number;
  /** Sessions whose tool calls ran in more than one worker process. */
  sessionsOnSeveralWorkers: number;
  /** Killed workers that had a tool execution running when they died. */
  killsMidCall: number;
  /** Executions whose end is unknown (their worker lived, but the end was not written). */
  executionsWithoutEnd: number;
  /** Turns that ended `turn_cancelled`; of them, those whose script would have made the model fail. */
  turnsCancelled: number;
  scriptedFailuresCancelled: number;
  /** Cancellation entries in the inboxes, and what became of each. */
  cancelEntries: number;
  cancelsApplied: number;
  cancelsSkipped: number;
  /** Applied while its turn was already being cancelled by an earlier entry (no event of its own). */
  cancelsAbsorbed: number;
  /** Receipts (`turn_cancelled`) that say a model call was aborted; `turn_cancelling` events (calls in flight). */
  receiptsWithModelCallAborted: number;
  turnsCancellingWithCallsInFlight: number;
  /** The calls the receipts list, by final status. */
  receiptCalls: Record<string, number>;
  /** Of those, the single-attempt calls that had an execution, by final status. */
  receiptSingleAttemptExecuted: Record<string, number>;
  /** Executions that stopped on their abort signal (result `cancelled`). */
  executionsStopped: number;
  /** Interrupts whose turn was cancelled while they waited (never resolved). */
  interruptsCancelled: number;
  /** Decisions accepted after their turn's cancellation was, and consumed without effect. */
  decisionsAcceptedAfterCancel: number;
  /** Checks (`call_reconciled`) by what they found. */
  reconciled: Record<string, number>;
  /** Single-attempt calls a check found not done that were offered again, and of them those approved and run again. */
  offeredAgain: number;
  rerunAfterApproval: number;
  /** Attention interrupts raised (calls left `outcome_unknown`); the driver resolves none. */
  attentionRaised: number;
  /** Read calls requested and completed by one commit (the model's result held for the read: `readToolHoldMs`). */
  readResultsHeld: number;
  /** Read runs no committed attempt lists, in a killed worker (allowed with `readsMayRunUncounted`). */
  uncountedReadRuns: number;
}

export interface InvariantReport {
  readonly violations: string[];
  readonly stats: InvariantStats;
}

interface CallState {
  readonly turnId: string;
  readonly name: string;
  readonly arguments: string;
  readonly attempts: number[];
  status: string | null;
  /** The outcome as the model is told it. */
  outcomeText: string | null;
  /** What each check of the call found (`call_reconciled`), with its commit time. */
  readonly checks: { found: string; at: number }[];
  /** When each interrupt that offered the call again (after a check found it not done) was approved. */
  readonly approvedAgainAt: number[];
  /** Attention interrupts raised for the call. */
  attentions: number;
}

interface ReceiptCall {
  readonly toolCallId: string;
  readonly name: string;
  readonly effect: string;
  readonly status: string;
  readonly attempts: number;
}

interface Receipt {
  readonly turnId: string;
  readonly requestId: string | null;
  readonly modelCallAborted: boolean;
  readonly calls: readonly ReceiptCall[];
}

interface TurnState {
  readonly turnId: string;
  readonly text: string;
  end: "completed" | "failed" | "cancelled" | null;
  readonly calls: string[];
  finalText: string | null;
  /** The `turn_cancelled` receipt, and when it was committed (epoch ms). */
  receipt: Receipt | null;
  receiptAt: number | null;
  /** A RunModel step of this turn was ended by the cancellation (step_completed, detail `cancelled`). */
  modelStepCancelled: boolean;
}

interface Walk {
  turns: TurnState[];
  calls: Map<string, CallState>;
  interrupts: Map<string, { toolCallId: string; arguments: string; resolved: boolean[]; offeredAgain: boolean }>;
  /** Attention interrupts raised, by interrupt ID: the call each names. */
  attentions: Map<string, string>;
  recoveries: number;
  /** Calls a taking-over worker found running and declared `outcome_unknown`. */
  recoveredUnknown: Set<string>;
  /** `turn_cancelled` events per turn ID (a turn may have one at most). */
  receipts: Map<string, number>;
  /** `cancel_skipped` events: cancellations that reached the session after their turn had ended. */
  skipped: { turnId: string; requestId: string | null }[];
  /** `turn_cancelling` events. */
  cancelling: number;
}

const turnEvents = new Set([
  "step_started",
  "step_completed",
  "text_delta",
  "reasoning_delta",
  "tool_calls_requested",
  "tool_call_completed",
  "turn_completed",
  "turn_failed",
  "turn_cancelling",
  "turn_cancelled",
]);

/** The outcomes a call's effect allows; a call of a cancelled turn may also end `cancelled`. */
const allowedOutcomes: Record<CrashToolName, readonly string[]> = {
  read: ["succeeded", "failed"],
  idempotent_write: ["succeeded", "outcome_unknown"],
  non_idempotent_write: ["succeeded", "failed", "outcome_unknown", "rejected"],
  non_idempotent_write_auto: ["succeeded", "failed", "outcome_unknown"],
  // `failed`: a check found it not done twice (it had already run again once).
  idempotent_write_checked: ["succeeded", "outcome_unknown", "failed"],
  non_idempotent_write_checked: ["succeeded", "failed", "outcome_unknown"],
};

/**
 * The attempts a call may have started so far: one round of its effect's attempts, and one more
 * round for each time a check found it not done (an `idempotent_write`) or for each approval of the
 * call offered again (a single-attempt call).
 */
function maxAttempts(call: CallState): number {
  const tool = crashTools[call.name as CrashToolName];
  if (!tool) return 1;
  if (!tool.reconcile) return tool.maxExecutions;
  const rounds =
    tool.maxExecutions === 1 ? call.approvedAgainAt.length : call.checks.filter((c) => c.found === "not_done").length;
  return tool.maxExecutions * (1 + rounds);
}

/** What a call that never started (no committed attempt, no execution) may end as. */
const neverStartedOutcomes = ["cancelled", "rejected", "failed"];

/**
 * Replays a session's events and checks they are in an order one worker at a time could have
 * written (the mark of commit fencing): gap-free seqs, turns one after another, attempts of a call
 * numbered 1, 2, 3 with none after its outcome, each outcome and each decision once.
 */
function walkEvents(sessionId: string, events: readonly StoredEvent[], violations: string[]): Walk {
  const bad = (event: StoredEvent, what: string) =>
    violations.push(`${sessionId}: event ${event.seq} (${event.type}) ${what}`);
  const walk: Walk = {
    turns: [],
    calls: new Map(),
    interrupts: new Map(),
    attentions: new Map(),
    recoveries: 0,
    recoveredUnknown: new Set(),
    receipts: new Map(),
    skipped: [],
    cancelling: 0,
  };
  let open: TurnState | null = null;
  let lastFence = 0;
  events.forEach((event, index) => {
    if (event.seq !== index + 1) {
      violations.push(`${sessionId}: event seqs have a gap or repeat: position ${index + 1} holds seq ${event.seq}`);
    }
    const data = event.data;
    if (index === 0 && event.type !== "session_created") bad(event, "comes first instead of session_created");
    const lateDelta =
      (event.type === "text_delta" || event.type === "reasoning_delta") &&
      walk.turns.some((turn) => turn.turnId === data.turnId && turn.end === "cancelled");
    if (lateDelta) {
      bad(event, "is a delta of a cancelled turn after its receipt (its answer is discarded)");
    } else if (turnEvents.has(event.type) && data.turnId !== open?.turnId) {
      bad(event, `belongs to ${String(data.turnId)} while ${open?.turnId ?? "no turn"} is running`);
    }
    switch (event.type) {
      case "session_created":
        if (index !== 0) bad(event, "is not the first event");
        break;
      case "turn_started": {
        if (open) bad(event, `starts a turn while ${open.turnId} has not ended`);
        const expected = `turn-${walk.turns.length + 1}`;
        if (data.turnId !== expected) bad(event, `starts ${String(data.turnId)}, expected ${expected}`);
        open = {
          turnId: String(data.turnId),
          text: String(data.text),
          end: null,
          calls: [],
          finalText: null,
          receipt: null,
          receiptAt: null,
          modelStepCancelled: false,
        };
        walk.turns.push(open);
        break;
      }
      case "tool_calls_requested":
        for (const call of data.calls as { toolCallId: string; name: string; arguments: string }[]) {
          if (walk.calls.has(call.toolCallId)) bad(event, `requests call ${call.toolCallId} a second time`);
          walk.calls.set(call.toolCallId, {
            turnId: String(data.turnId),
            name: call.name,
            arguments: call.arguments,
            attempts: [],
            status: null,
            outcomeText: null,
            checks: [],
            approvedAgainAt: [],
            attentions: 0,
          });
          open?.calls.push(call.toolCallId);
        }
        break;
      case "step_completed":
        if (data.step === "RunModel" && data.detail === "cancelled" && open) open.modelStepCancelled = true;
        break;
      case "step_started": {
        if (data.step !== "CallTool" && data.step !== "CallSingleAttemptTool") break;
        const id = String(data.toolCallId);
        const call = walk.calls.get(id);
        if (!call) {
          bad(event, `starts call ${id}, which no model response requested`);
          break;
        }
        if (call.status !== null)
          bad(event, `starts attempt ${String(data.attempt)} of call ${id} after its outcome (${call.status})`);
        const expected = call.attempts.length + 1;
        if (data.attempt !== expected)
          bad(event, `starts attempt ${String(data.attempt)} of call ${id}, expected ${expected}`);
        const max = maxAttempts(call);
        if (Number(data.attempt) > max)
          bad(event, `starts attempt ${String(data.attempt)} of ${call.name} call ${id}, over its ${max}`);
        call.attempts.push(Number(data.attempt));
        break;
      }
      case "tool_call_completed": {
        const id = String(data.toolCallId);
        const call = walk.calls.get(id);
        if (!call) bad(event, `completes call ${id}, which no model response requested`);
        else if (call.status !== null)
          bad(event, `completes call ${id} a second time (${call.status}, then ${String(data.status)})`);
        else {
          call.status = String(data.status);
          call.outcomeText = String(data.text);
        }
        break;
      }
      case "interrupt_created": {
        const interrupt = data.interrupt as {
          interruptId: string;
          toolCallId: string;
          arguments: string;
          reason?: string | null;
        };
        if (walk.interrupts.has(interrupt.interruptId))
          bad(event, `creates interrupt ${interrupt.interruptId} a second time`);
        const offeredAgain = (interrupt.reason ?? null) !== null;
        const call = walk.calls.get(interrupt.toolCallId);
        // A call is offered again only after a check of it found it not done.
        if (offeredAgain && call?.checks.at(-1)?.found !== "not_done")
          bad(event, `offers call ${interrupt.toolCallId} again, but no check of it found it not done`);
        walk.interrupts.set(interrupt.interruptId, {
          toolCallId: interrupt.toolCallId,
          arguments: interrupt.arguments,
          resolved: [],
          offeredAgain,
        });
        break;
      }
      case "interrupt_resolved": {
        const interrupt = walk.interrupts.get(String(data.interruptId));
        if (!interrupt) bad(event, `resolves interrupt ${String(data.interruptId)}, which was never created`);
        else {
          interrupt.resolved.push(Boolean(data.approved));
          if (interrupt.offeredAgain && data.approved)
            walk.calls.get(interrupt.toolCallId)?.approvedAgainAt.push(event.at);
        }
        break;
      }
      case "call_reconciled": {
        const id = String(data.toolCallId);
        const call = walk.calls.get(id);
        if (!call) bad(event, `reconciles call ${id}, which no model response requested`);
        else if (!crashTools[call.name as CrashToolName]?.reconcile)
          bad(event, `reconciles ${call.name} call ${id}, whose policy declares no reconcile`);
        else if (call.status !== null) bad(event, `reconciles call ${id} after its outcome (${call.status})`);
        else call.checks.push({ found: String(data.found), at: event.at });
        break;
      }
      case "attention_required": {
        const interrupt = data.interrupt as { interruptId: string; toolCallId: string; kind: string };
        const call = walk.calls.get(interrupt.toolCallId);
        if (interrupt.kind !== "attention") bad(event, `raises ${interrupt.interruptId} as ${interrupt.kind}`);
        if (walk.attentions.has(interrupt.interruptId))
          bad(event, `raises attention ${interrupt.interruptId} a second time`);
        // Raised with the call's outcome_unknown, in the same transition (right after it).
        if (call?.status !== "outcome_unknown")
          bad(event, `raises attention for call ${interrupt.toolCallId}, which is ${call?.status ?? "unknown"}`);
        else call.attentions += 1;
        walk.attentions.set(interrupt.interruptId, interrupt.toolCallId);
        break;
      }
      case "turn_completed":
      case "turn_failed":
        if (open) {
          if (event.type === "turn_completed") {
            const unfinished = open.calls.filter((id) => walk.calls.get(id)?.status === null);
            if (unfinished.length > 0)
              bad(event, `completes ${open.turnId} with calls that have no outcome: ${unfinished.join(", ")}`);
          }
          open.end = event.type === "turn_completed" ? "completed" : "failed";
          if (event.type === "turn_completed") open.finalText = String(data.text);
        }
        open = null;
        break;
      case "turn_cancelling":
        walk.cancelling += 1;
        // The calls it waits for are calls of this turn that were started and have no outcome yet.
        for (const id of data.running as string[]) {
          const call = walk.calls.get(id);
          if (!call || !open?.calls.includes(id) || call.status !== null || call.attempts.length === 0)
            bad(event, `waits for call ${id}, which is not a started call of ${open?.turnId} without an outcome`);
        }
        break;
      case "turn_cancelled": {
        const turnId = String(data.turnId);
        walk.receipts.set(turnId, (walk.receipts.get(turnId) ?? 0) + 1);
        if (!open || open.turnId !== turnId) break; // named above: it belongs to no running turn
        const receipt = data as unknown as Receipt;
        // The receipt covers every call of the turn, in the order they were asked for, each with the
        // final outcome recorded before it and the number of attempts that were started.
        const listed = receipt.calls.map((call) => call.toolCallId);
        if (listed.join(",") !== open.calls.join(","))
          bad(event, `lists calls [${listed.join(", ")}], the turn asked for [${open.calls.join(", ")}]`);
        for (const entry of receipt.calls) {
          const call = walk.calls.get(entry.toolCallId);
          if (!call) continue;
          if (call.status === null)
            bad(event, `lists call ${entry.toolCallId} as ${entry.status}, but it had no outcome yet`);
          else if (entry.status !== call.status)
            bad(event, `lists call ${entry.toolCallId} as ${entry.status}, its outcome was ${call.status}`);
          const effect = crashTools[call.name as CrashToolName]?.effect;
          if (entry.name !== call.name || entry.effect !== effect)
            bad(
              event,
              `lists call ${entry.toolCallId} as ${entry.name} (${entry.effect}), it is ${call.name} (${effect})`,
            );
          if (entry.attempts !== call.attempts.length)
            bad(
              event,
              `lists ${entry.attempts} attempt(s) of call ${entry.toolCallId}, ${call.attempts.length} were started`,
            );
        }
        const unfinished = open.calls.filter((id) => walk.calls.get(id)?.status === null);
        if (unfinished.length > 0)
          bad(event, `cancels ${open.turnId} with calls that have no outcome: ${unfinished.join(", ")}`);
        if (receipt.modelCallAborted && !open.modelStepCancelled)
          bad(event, "says a model call was aborted, but no RunModel step of the turn ended cancelled");
        open.end = "cancelled";
        open.receipt = receipt;
        open.receiptAt = event.at;
        open = null;
        break;
      }
      case "cancel_skipped": {
        // Skipped means its turn had ended before the cancellation was applied.
        const turnId = String(data.turnId);
        const named = walk.turns.find((turn) => turn.turnId === turnId);
        if (!named || named.end === null || named === open)
          bad(event, `skips a cancellation of ${turnId}, which ${named ? "has not ended" : "never started"}`);
        walk.skipped.push({ turnId, requestId: (data.requestId as string | null) ?? null });
        break;
      }
      case "session_recovered": {
        walk.recoveries += 1;
        const fence = Number(data.fence);
        if (fence <= lastFence) bad(event, `recovers under fence ${fence} after fence ${lastFence}`);
        lastFence = fence;
        for (const call of data.calls as { toolCallId: string; status: string }[]) {
          if (call.status === "outcome_unknown") walk.recoveredUnknown.add(call.toolCallId);
        }
        break;
      }
    }
  });
  return walk;
}

export function decisionOf(args: string): "approve" | "reject" | null {
  try {
    const decision = (JSON.parse(args) as { decision?: unknown }).decision;
    return decision === "approve" || decision === "reject" ? decision : null;
  } catch {
    return null;
  }
}

export function checkInvariants(data: RunData, options: InvariantOptions): InvariantReport {
  const violations: string[] = [];
  const stats: InvariantStats = {
    sessions: 0,
    turnsCompleted: 0,
    turnsFailed: 0,
    messages: 0,
    interruptsApproved: 0,
    interruptsRejected: 0,
    calls: 0,
    outcomes: {},
    executionsPerTool: {},
    executionsPerWorker: {},
    callsRunMoreThanOnce: 0,
    recoveries: 0,
    sessionsOnSeveralWorkers: 0,
    killsMidCall: 0,
    executionsWithoutEnd: 0,
    turnsCancelled: 0,
    scriptedFailuresCancelled: 0,
    cancelEntries: 0,
    cancelsApplied: 0,
    cancelsSkipped: 0,
    cancelsAbsorbed: 0,
    receiptsWithModelCallAborted: 0,
    turnsCancellingWithCallsInFlight: 0,
    receiptCalls: {},
    receiptSingleAttemptExecuted: {},
    executionsStopped: 0,
    interruptsCancelled: 0,
    decisionsAcceptedAfterCancel: 0,
    reconciled: {},
    offeredAgain: 0,
    rerunAfterApproval: 0,
    attentionRaised: 0,
    readResultsHeld: 0,
    uncountedReadRuns: 0,
  };
  const bump = (record: Record<string, number>, key: string) => {
    record[key] = (record[key] ?? 0) + 1;
  };
  const lives = new Map(options.workers.map((life) => [life.pid, life]));
  const executionsBySession = new Map<string, ExecutionRow[]>();
  for (const execution of data.executions) {
    const list = executionsBySession.get(execution.sessionId) ?? [];
    list.push(execution);
    executionsBySession.set(execution.sessionId, list);
    stats.executionsPerTool[execution.tool] = (stats.executionsPerTool[execution.tool] ?? 0) + 1;
    stats.executionsPerWorker[execution.workerPid] = (stats.executionsPerWorker[execution.workerPid] ?? 0) + 1;
    if (execution.result === "cancelled") stats.executionsStopped += 1;
  }
  const planned = new Set(options.plan.map((s) => s.sessionId));
  for (const sessionId of executionsBySession.keys()) {
    if (!planned.has(sessionId)) violations.push(`${sessionId}: tools ran for a session the driver never started`);
  }

  for (const plan of options.plan) {
    const id = plan.sessionId;
    const row = data.sessions.get(id);
    if (!row) {
      violations.push(`${id}: the session is missing from the store`);
      continue;
    }
    stats.sessions += 1;
    const walk = walkEvents(id, data.events.get(id) ?? [], violations);
    stats.recoveries += walk.recoveries;
    stats.turnsCancellingWithCallsInFlight += walk.cancelling;
    const turnOf = new Map(walk.turns.map((turn) => [turn.turnId, turn]));

    // Messages: each accepted message is in the inbox once and started exactly one turn, in order.
    const inbox = data.inbox.get(id) ?? [];
    const messages = inbox.filter((entry) => entry.entry.kind === "message");
    stats.messages += messages.length;
    const plannedTexts = plan.turns.map((turn) => turn.text);
    const inboxTexts = messages.map((entry) => (entry.entry as { text: string }).text);
    if (inboxTexts.length !== plannedTexts.length || inboxTexts.some((text, i) => text !== plannedTexts[i])) {
      violations.push(
        `${id}: the inbox holds ${inboxTexts.length} message(s), not the ${plannedTexts.length} sent once each, in order`,
      );
    }
    const keys = messages.map((entry) => entry.dedupeKey);
    if (new Set(keys).size !== keys.length) violations.push(`${id}: two inbox messages share a message ID`);
    const startedTexts = walk.turns.map((turn) => turn.text);
    if (startedTexts.length !== inboxTexts.length || startedTexts.some((text, i) => text !== inboxTexts[i])) {
      violations.push(
        `${id}: ${inboxTexts.length} accepted message(s) started ${startedTexts.length} turn(s) (a message was lost or applied twice, or out of order)`,
      );
    }
    if (row.head.turnCount !== plan.turns.length) {
      violations.push(`${id}: turnCount is ${row.head.turnCount}, ${plan.turns.length} messages were sent`);
    }

    // Every turn ended, the way its script says (a final answer, or an explicit turn_failed), or
    // with exactly one turn_cancelled receipt (which cancellation caused it is checked below).
    walk.turns.forEach((turn, index) => {
      const script = plan.turns[index];
      const receipts = walk.receipts.get(turn.turnId) ?? 0;
      if (receipts !== (turn.end === "cancelled" ? 1 : 0))
        violations.push(
          `${id}: ${turn.turnId} ended ${turn.end ?? "never"} with ${receipts} turn_cancelled receipt(s)`,
        );
      if (turn.end === null) {
        violations.push(`${id}: ${turn.turnId} never ended (the session hangs)`);
        return;
      }
      if (turn.end === "completed") stats.turnsCompleted += 1;
      else if (turn.end === "failed") stats.turnsFailed += 1;
      else {
        stats.turnsCancelled += 1;
        if (script?.failsModel) stats.scriptedFailuresCancelled += 1;
        if (turn.receipt?.modelCallAborted) stats.receiptsWithModelCallAborted += 1;
      }
      const expected = script?.failsModel ? "failed" : "completed";
      if (script && turn.end !== "cancelled" && turn.end !== expected)
        violations.push(`${id}: ${turn.turnId} ${turn.end}, its script says it ${expected}`);
      if (turn.end === "completed") {
        // The scripted model's answer follows from this turn's own message and outcomes alone, and
        // the notes the failed and cancelled turns before it left.
        const failedBefore = walk.turns.slice(0, index).filter((t) => t.end === "failed").length;
        const cancelledBefore = walk.turns.slice(0, index).filter((t) => t.end === "cancelled").length;
        const noted =
          (failedBefore > 0 ? `(noted ${failedBefore} failed turn(s)) ` : "") +
          (cancelledBefore > 0 ? `(noted ${cancelledBefore} cancelled turn(s)) ` : "");
        const outcomes = turn.calls.map((callId) => {
          const call = walk.calls.get(callId)!;
          return `${call.name} -> ${call.outcomeText}`;
        });
        const expected =
          outcomes.length === 0
            ? `${noted}You said: turn ${index + 1} of ${id}`
            : `${noted}Results: ${outcomes.join(" | ")}`;
        if (turn.finalText !== expected) {
          violations.push(
            `${id}: ${turn.turnId} answered ${JSON.stringify(turn.finalText?.slice(0, 80))}, not its own ${JSON.stringify(expected.slice(0, 80))}`,
          );
        }
      }
      if (script) {
        const asked = turn.calls.map((callId) => {
          const call = walk.calls.get(callId)!;
          let key: unknown;
          try {
            key = (JSON.parse(call.arguments) as { key?: unknown }).key;
          } catch {
            // The model derives every call from the turn's own message: arguments that are not JSON
            // mean the call came from text that is not that message.
            violations.push(
              `${id}: ${turn.turnId} asked for ${call.name} ${callId} with arguments that are not JSON: ${JSON.stringify(call.arguments)} (turn text ${JSON.stringify(turn.text)})`,
            );
          }
          return `${call.name}:${String(key)}`;
        });
        const scripted = script.blocks.flat().map((call) => `${call.tool}:${call.key}`);
        // A cancelled turn asked for the calls of its first responses only (whole responses).
        const prefixes = script.blocks.map((_, b) =>
          script.blocks
            .slice(0, b)
            .flat()
            .map((call) => `${call.tool}:${call.key}`)
            .join(","),
        );
        const fits =
          asked.join(",") === scripted.join(",") || (turn.end === "cancelled" && prefixes.includes(asked.join(",")));
        if (!fits) {
          violations.push(
            `${id}: ${turn.turnId} asked for [${asked.join(", ")}], its script for [${scripted.join(", ")}]`,
          );
        }
      }
    });

    // The session is at rest with everything applied.
    const head = row.head;
    if (head.status !== "idle") violations.push(`${id}: ends ${head.status}, not idle`);
    if (head.queue.length > 0) violations.push(`${id}: ${head.queue.length} message(s) still queued`);
    // No approval is left pending; an attention interrupt is, for each call left outcome_unknown
    // (the driver resolves none), and for nothing else.
    const approvalsPending = head.pendingInterrupts.filter((i) => (i.kind ?? "approval") === "approval");
    if (approvalsPending.length > 0) violations.push(`${id}: ${approvalsPending.length} approval(s) still pending`);
    const attentionsPending = head.pendingInterrupts
      .filter((i) => i.kind === "attention")
      .map((i) => i.interruptId)
      .sort();
    if (attentionsPending.join(",") !== [...walk.attentions.keys()].sort().join(","))
      violations.push(
        `${id}: attention interrupts pending [${attentionsPending.join(", ")}], raised [${[...walk.attentions.keys()].join(", ")}]`,
      );
    stats.attentionRaised += walk.attentions.size;
    if (row.inboxCursor !== row.lastInboxSeq || head.inboxCursor !== row.lastInboxSeq) {
      violations.push(
        `${id}: inbox applied up to ${row.inboxCursor} (head ${head.inboxCursor}) of ${row.lastInboxSeq}`,
      );
    }

    // Cancellations: the inbox holds exactly the ones the client accepted, each applied once: it
    // cancelled its turn (the receipt names its request ID), or was skipped because its turn had
    // ended, or reached the turn while an earlier one was cancelling it. A turn is cancelled only by
    // a cancellation that names it.
    const cancelEntries = inbox.flatMap((entry) =>
      entry.entry.kind === "cancel" ? [{ seq: entry.seq, dedupeKey: entry.dedupeKey, ...entry.entry }] : [],
    );
    stats.cancelEntries += cancelEntries.length;
    const accepted = options.cancels.filter((cancel) => cancel.sessionId === id);
    for (const cancel of accepted) {
      const entries = cancelEntries.filter((entry) => entry.requestId === cancel.requestId);
      if (entries.length !== 1)
        violations.push(`${id}: cancellation ${cancel.requestId} is in the inbox ${entries.length} time(s), not once`);
      else if (entries[0]!.seq !== cancel.seq || entries[0]!.turnId !== cancel.turnId)
        violations.push(
          `${id}: cancellation ${cancel.requestId} is inbox entry ${entries[0]!.seq} for ${entries[0]!.turnId}, the client answered ${cancel.seq} for ${cancel.turnId}`,
        );
    }
    for (const entry of cancelEntries) {
      if (!accepted.some((cancel) => cancel.requestId === entry.requestId))
        violations.push(
          `${id}: inbox entry ${entry.seq} cancels ${entry.turnId} (${entry.requestId}), which the client never accepted`,
        );
      if (entry.dedupeKey !== `cancel:${entry.requestId}`)
        violations.push(`${id}: cancellation ${entry.requestId} is stored under the key ${entry.dedupeKey}`);
      const cancelledBy = walk.turns.filter((turn) => turn.receipt?.requestId === entry.requestId);
      const skipped = walk.skipped.filter((skip) => skip.requestId === entry.requestId);
      if (cancelledBy.length + skipped.length > 1) {
        violations.push(
          `${id}: cancellation ${entry.requestId} was applied ${cancelledBy.length + skipped.length} times`,
        );
      } else if (cancelledBy[0] && cancelledBy[0].turnId !== entry.turnId) {
        violations.push(
          `${id}: cancellation ${entry.requestId} names ${entry.turnId}, but cancelled ${cancelledBy[0].turnId}`,
        );
      } else if (skipped[0] && skipped[0].turnId !== entry.turnId) {
        violations.push(
          `${id}: cancellation ${entry.requestId} names ${entry.turnId}, but was skipped for ${skipped[0].turnId}`,
        );
      } else if (cancelledBy.length === 1) {
        stats.cancelsApplied += 1;
      } else if (skipped.length === 1) {
        stats.cancelsSkipped += 1;
      } else {
        const named = turnOf.get(entry.turnId);
        const by = cancelEntries.find((other) => other.requestId === named?.receipt?.requestId);
        if (named?.end === "cancelled" && by && by.seq < entry.seq) stats.cancelsAbsorbed += 1;
        else
          violations.push(
            `${id}: cancellation ${entry.requestId} of ${entry.turnId} was never applied (the turn ended ${named?.end ?? "never"})`,
          );
      }
    }
    for (const turn of walk.turns) {
      if (turn.end !== "cancelled") continue;
      const by = cancelEntries.find((entry) => entry.requestId === turn.receipt?.requestId);
      if (!by || by.turnId !== turn.turnId)
        violations.push(
          `${id}: ${turn.turnId} was cancelled by ${turn.receipt?.requestId ?? "no request"}, which is no accepted cancellation of it`,
        );
    }
    /** The inbox seq of the cancellation that cancelled `turnId` (null when it was not cancelled). */
    const cancelSeqOf = (turnId: string) => {
      const requestId = turnOf.get(turnId)?.receipt?.requestId;
      return cancelEntries.find((entry) => entry.requestId === requestId)?.seq ?? null;
    };

    // Decisions: one inbox entry and one interrupt_resolved per interrupt, with the driver's answer.
    // An interrupt whose turn was cancelled while it waited is never resolved; a decision accepted
    // after the cancellation (the client checked just before it was written) is consumed unapplied.
    const resolutions = new Map<string, { approved: boolean; seq: number }[]>();
    for (const entry of inbox) {
      if (entry.entry.kind !== "resolution") continue;
      const list = resolutions.get(entry.entry.interruptId) ?? [];
      list.push({ approved: entry.entry.approved, seq: entry.seq });
      resolutions.set(entry.entry.interruptId, list);
    }
    for (const interruptId of resolutions.keys()) {
      if (!walk.interrupts.has(interruptId))
        violations.push(`${id}: the inbox resolves ${interruptId}, which was never created`);
    }
    for (const [interruptId, interrupt] of walk.interrupts) {
      // The driver approves every call offered again.
      const expected = interrupt.offeredAgain || decisionOf(interrupt.arguments) === "approve";
      const decisions = resolutions.get(interruptId) ?? [];
      const call = walk.calls.get(interrupt.toolCallId);
      if (interrupt.resolved.length === 0 && call?.status === "cancelled") {
        stats.interruptsCancelled += 1;
        const cancelSeq = cancelSeqOf(call.turnId);
        if (decisions.length > 1)
          violations.push(`${id}: interrupt ${interruptId} has ${decisions.length} accepted decision(s), not 0 or 1`);
        else if (decisions.length === 1) {
          stats.decisionsAcceptedAfterCancel += 1;
          if (cancelSeq === null || decisions[0]!.seq < cancelSeq)
            violations.push(
              `${id}: the decision for ${interruptId} (inbox ${decisions[0]!.seq}) came before its turn's cancellation (${cancelSeq}) and was never applied`,
            );
        }
        continue;
      }
      const acceptedDecisions = decisions.map((d) => d.approved);
      if (acceptedDecisions.length !== 1)
        violations.push(`${id}: interrupt ${interruptId} has ${acceptedDecisions.length} accepted decision(s), not 1`);
      if (interrupt.resolved.length !== 1) {
        violations.push(`${id}: interrupt ${interruptId} was resolved ${interrupt.resolved.length} time(s), not once`);
      } else if (
        interrupt.resolved[0] !== expected ||
        (acceptedDecisions.length === 1 && acceptedDecisions[0] !== expected)
      ) {
        violations.push(
          `${id}: interrupt ${interruptId} was ${interrupt.resolved[0] ? "approved" : "rejected"}, the driver decided otherwise`,
        );
      }
      if (interrupt.resolved[0]) stats.interruptsApproved += 1;
      else stats.interruptsRejected += 1;
    }
    // A decision the client refused because its turn was cancelled (SessionStateError, even once a
    // later turn started): its call ended cancelled and was never resolved. A second decision after
    // an accepted first one is a duplicate, never refused this way.
    for (const refusal of options.refusedDecisions) {
      if (refusal.sessionId !== id) continue;
      const interrupt = walk.interrupts.get(refusal.interruptId);
      const call = interrupt ? walk.calls.get(interrupt.toolCallId) : undefined;
      if (
        !interrupt ||
        call?.status !== "cancelled" ||
        interrupt.resolved.length > 0 ||
        call.turnId !== refusal.turnId
      ) {
        violations.push(
          `${id}: a decision for ${refusal.interruptId} was refused (${refusal.code}), but its call ended ${call?.status ?? "unknown"}` +
            `${interrupt && interrupt.resolved.length > 0 ? " after a decision was applied" : ""}`,
        );
      } else if (refusal.code === "interrupt_not_found") {
        violations.push(
          `${id}: a decision for ${refusal.interruptId} of cancelled ${refusal.turnId} was refused as not found, not as belonging to a cancelled turn`,
        );
      }
    }

    // Calls and their executions.
    const executions = executionsBySession.get(id) ?? [];
    const byCall = new Map<string, ExecutionRow[]>();
    for (const execution of executions) {
      const list = byCall.get(execution.toolCallId) ?? [];
      list.push(execution);
      byCall.set(execution.toolCallId, list);
    }
    // A run is the uncounted run of a held read: a read, in a worker that was killed, the call's first
    // run, whose attempt no committed start lists or another run repeats (readsMayRunUncounted).
    if (options.readsMayRunUncounted) {
      for (const [callId, runs] of byCall) {
        const call = walk.calls.get(callId);
        const first = runs.reduce((a, b) => (b.startedAt < a.startedAt ? b : a));
        if (first.tool !== "read" || lives.get(first.workerPid)?.killedAt == null) continue;
        const uncounted =
          call === undefined ||
          !call.attempts.includes(first.attempt) ||
          runs.some((run) => run !== first && run.attempt === first.attempt);
        if (!uncounted) continue;
        stats.uncountedReadRuns += 1;
        const rest = runs.filter((run) => run !== first);
        if (rest.length === 0) byCall.delete(callId);
        else byCall.set(callId, rest);
      }
    }
    for (const callId of byCall.keys()) {
      if (!walk.calls.has(callId))
        violations.push(`${id}: a tool ran for call ${callId}, which no model response requested`);
    }
    // Read calls whose request and result went in one commit (one commit, one database time).
    const requestedAt = new Map<string, number>();
    for (const event of data.events.get(id) ?? []) {
      if (event.type === "tool_calls_requested") {
        for (const requested of (event.data.calls ?? []) as { toolCallId: string }[])
          requestedAt.set(requested.toolCallId, event.at);
      } else if (
        event.type === "tool_call_completed" &&
        event.data.name === "read" &&
        requestedAt.get(String(event.data.toolCallId)) === event.at
      ) {
        stats.readResultsHeld += 1;
      }
    }
    for (const [callId, call] of walk.calls) {
      stats.calls += 1;
      const tool = call.name as CrashToolName;
      const status = call.status;
      const turn = turnOf.get(call.turnId);
      const cancelledTurn = turn?.end === "cancelled";
      stats.outcomes[status ?? "none"] = (stats.outcomes[status ?? "none"] ?? 0) + 1;
      if (status === null) {
        violations.push(`${id}: ${tool} call ${callId} never got an outcome`);
      } else if (!allowedOutcomes[tool]?.includes(status) && !(cancelledTurn && status === "cancelled")) {
        violations.push(
          `${id}: ${tool} call ${callId} ended ${status}, which its effect cannot give${status === "cancelled" ? " outside a cancelled turn" : ""}`,
        );
      }
      // Every call left outcome_unknown raised one attention interrupt; no other call raised one.
      if (call.attentions !== (status === "outcome_unknown" ? 1 : 0))
        violations.push(
          `${id}: ${tool} call ${callId} ended ${status} and raised ${call.attentions} attention interrupt(s)`,
        );
      for (const check of call.checks) bump(stats.reconciled, check.found);
      const foundNotDone = call.checks.some((check) => check.found === "not_done");
      const decision = decisionOf(call.arguments);
      if (decision === "reject" && status !== "rejected" && !(cancelledTurn && status === "cancelled"))
        violations.push(`${id}: rejected call ${callId} ended ${status}`);
      if (decision !== "reject" && status === "rejected")
        violations.push(`${id}: call ${callId} was rejected without a rejection`);
      const runs = byCall.get(callId) ?? [];
      if (runs.length > 1) stats.callsRunMoreThanOnce += 1;
      const max = maxAttempts(call);
      const singleAttempt = (crashTools[tool]?.maxExecutions ?? 1) === 1;
      if (runs.length > max) {
        const what = singleAttempt ? "single-attempt call" : `${tool} call`;
        violations.push(`${id}: ${what} ${callId} executed ${runs.length} times (at most ${max})`);
      }
      // Reconciliation: a call a check found done is never executed again, and is succeeded.
      const done = call.checks.find((check) => check.found === "done");
      if (done) {
        if (status !== "succeeded") violations.push(`${id}: call ${callId} was found done, yet ended ${status}`);
        for (const run of runs) {
          if (run.startedAt > done.at)
            violations.push(
              `${id}: call ${callId} was reconciled done at ${done.at}, yet attempt ${run.attempt} started at ${run.startedAt}`,
            );
        }
        if (!runs.some((run) => run.result === "ok"))
          violations.push(`${id}: call ${callId} was found done, but none of its executions ended ok`);
      }
      // A single-attempt call found not done runs again only after a new approval: its n-th execution
      // (n > 1) started after the (n-1)-th approval of the call offered again.
      if (singleAttempt && crashTools[tool]?.reconcile) {
        const offered = [...walk.interrupts.values()].filter((i) => i.toolCallId === callId && i.offeredAgain);
        stats.offeredAgain += offered.length;
        const sorted = [...runs].sort((a, b) => a.startedAt - b.startedAt);
        sorted.slice(1).forEach((run, index) => {
          const approvedAt = call.approvedAgainAt[index];
          if (approvedAt === undefined || run.startedAt < approvedAt)
            violations.push(
              `${id}: single-attempt call ${callId} ran again (attempt ${run.attempt}) without a new approval before it`,
            );
          else stats.rerunAfterApproval += 1;
        });
      }
      if (status === "rejected" && runs.length > 0)
        violations.push(`${id}: rejected call ${callId} executed ${runs.length} time(s)`);
      const attempts = runs.map((run) => run.attempt);
      if (new Set(attempts).size !== attempts.length)
        violations.push(`${id}: call ${callId} ran one attempt twice (${attempts.join(", ")})`);
      for (const run of runs) {
        if (!call.attempts.includes(run.attempt)) {
          violations.push(`${id}: call ${callId} ran attempt ${run.attempt}, whose start was never committed`);
        }
        if (run.turnId !== call.turnId || run.tool !== call.name) {
          violations.push(`${id}: call ${callId} of ${call.turnId} ran as ${run.tool} in ${run.turnId}`);
        }
      }
      // Every execution of a write saw the call's one key (also a rerun after a check found it not done).
      if (tool !== "read") {
        const expectedKey = idempotencyKey(id, call.turnId, callId);
        const seen = new Set(runs.map((run) => run.idempotencyKey));
        if (seen.size > 1 || (seen.size === 1 && !seen.has(expectedKey))) {
          violations.push(
            `${id}: idempotent write ${callId} saw key(s) ${[...seen].join(", ")}, expected ${expectedKey}`,
          );
        }
      }
      // The recorded outcome is what the tool did: a success is the last started attempt's success.
      const last = call.attempts.at(-1);
      const lastRun = runs.find((run) => run.attempt === last);
      // (Or, for a call a check found done, an earlier attempt's success.)
      if (status === "succeeded" && lastRun?.result !== "ok" && !(done && runs.some((run) => run.result === "ok"))) {
        violations.push(
          `${id}: call ${callId} is recorded succeeded, but its attempt ${last} ${lastRun ? `ended ${lastRun.result}` : "never ran"}`,
        );
      }
      // A refusal is `failed`, unless its worker went away before recording it, or its cancelled
      // turn stopped waiting for it (the grace period): then it is unknown.
      if (
        lastRun?.result === "tool_error" &&
        status !== "failed" &&
        !(status === "outcome_unknown" && (walk.recoveredUnknown.has(callId) || cancelledTurn)) &&
        !(foundNotDone && status === "cancelled" && cancelledTurn)
      ) {
        violations.push(`${id}: call ${callId} refused with a ToolExecutionError, but is recorded ${status}`);
      }
      // A call that never started (no committed attempt, no execution) was cancelled, rejected or
      // failed with its turn; nothing else.
      if (status !== null && call.attempts.length === 0 && runs.length === 0 && !neverStartedOutcomes.includes(status))
        violations.push(`${id}: call ${callId} never started, yet ended ${status}`);
      // A single-attempt call that executed is `cancelled` only when the tool said it changed nothing
      // (ToolCancelledError, recorded as the execution's result `cancelled`), or a check found it not done.
      if (
        singleAttempt &&
        status === "cancelled" &&
        runs.length > 0 &&
        runs.some((run) => run.result !== "cancelled") &&
        !foundNotDone
      )
        violations.push(
          `${id}: single-attempt call ${callId} executed (${runs.map((run) => run.result ?? "no end").join(", ")}) but is recorded cancelled`,
        );
      // And one that stopped on its signal is `cancelled` (or unknown, when its worker went away
      // or the grace period ended first), never a success or a failure.
      if (
        singleAttempt &&
        runs.some((run) => run.result === "cancelled") &&
        status !== "cancelled" &&
        status !== "outcome_unknown" &&
        !foundNotDone
      )
        violations.push(
          `${id}: single-attempt call ${callId} stopped on its signal (ToolCancelledError), but is recorded ${status}`,
        );
      if (cancelledTurn && turn) {
        bump(stats.receiptCalls, status ?? "none");
        if (singleAttempt && runs.length > 0) bump(stats.receiptSingleAttemptExecuted, status ?? "none");
        // No tool of a cancelled turn starts after its receipt was committed (same machine, same clock).
        for (const run of runs) {
          if (turn.receiptAt !== null && run.startedAt > turn.receiptAt)
            violations.push(
              `${id}: ${run.tool} call ${callId} of cancelled ${turn.turnId} started at ${run.startedAt}, after its receipt (${turn.receiptAt})`,
            );
        }
      }
    }

    // One worker at a time: no two executions of the session by different processes overlap.
    const windows = executions.map((run) => {
      const life = lives.get(run.workerPid);
      const end = run.finishedAt ?? (life?.killedAt != null ? life.exitedAt : null);
      if (run.finishedAt === null && end === null) stats.executionsWithoutEnd += 1;
      return { run, end };
    });
    if (options.requireFinishedExecutions) {
      for (const { run } of windows) {
        if (run.finishedAt === null) violations.push(`${id}: execution ${run.id} of ${run.tool} has no recorded end`);
      }
    }
    for (let i = 0; i < windows.length; i++) {
      for (let j = i + 1; j < windows.length; j++) {
        const a = windows[i]!;
        const b = windows[j]!;
        if (a.run.workerPid === b.run.workerPid || a.end === null || b.end === null) continue;
        if (a.run.startedAt < b.end && b.run.startedAt < a.end) {
          violations.push(
            `${id}: worker ${a.run.workerPid} ran ${a.run.tool} ${a.run.toolCallId} (${a.run.startedAt}-${a.end}) while worker ` +
              `${b.run.workerPid} ran ${b.run.tool} ${b.run.toolCallId} (${b.run.startedAt}-${b.end})`,
          );
        }
      }
    }
    if (new Set(executions.map((run) => run.workerPid)).size > 1) stats.sessionsOnSeveralWorkers += 1;
  }

  const killedMidCall = new Set(
    data.executions
      .filter((run) => run.finishedAt === null && lives.get(run.workerPid)?.killedAt != null)
      .map((run) => run.workerPid),
  );
  stats.killsMidCall = killedMidCall.size;
  return { violations, stats };
}
