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

export interface InvariantOptions {
  readonly plan: readonly PlannedSession[];
  readonly workers: readonly WorkerLife[];
  /** Every execution must have recorded its end (a run without kills and restarts). */
  readonly requireFinishedExecutions?: boolean;
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
}

interface TurnState {
  readonly turnId: string;
  readonly text: string;
  end: "completed" | "failed" | null;
  readonly calls: string[];
  finalText: string | null;
}

interface Walk {
  turns: TurnState[];
  calls: Map<string, CallState>;
  interrupts: Map<string, { toolCallId: string; arguments: string; resolved: boolean[] }>;
  recoveries: number;
  /** Calls a taking-over worker found running and declared `outcome_unknown`. */
  recoveredUnknown: Set<string>;
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
]);

const allowedOutcomes: Record<CrashToolName, readonly string[]> = {
  read: ["succeeded", "failed"],
  idempotent_write: ["succeeded", "outcome_unknown"],
  non_idempotent_write: ["succeeded", "failed", "outcome_unknown", "rejected"],
  non_idempotent_write_auto: ["succeeded", "failed", "outcome_unknown"],
};

/**
 * Replays a session's events and checks they are in an order one worker at a time could have
 * written (the mark of commit fencing): gap-free seqs, turns one after another, attempts of a call
 * numbered 1, 2, 3 with none after its outcome, each outcome and each decision once.
 */
function walkEvents(sessionId: string, events: readonly StoredEvent[], violations: string[]): Walk {
  const bad = (event: StoredEvent, what: string) =>
    violations.push(`${sessionId}: event ${event.seq} (${event.type}) ${what}`);
  const walk: Walk = { turns: [], calls: new Map(), interrupts: new Map(), recoveries: 0, recoveredUnknown: new Set() };
  let open: TurnState | null = null;
  let lastFence = 0;
  events.forEach((event, index) => {
    if (event.seq !== index + 1) {
      violations.push(`${sessionId}: event seqs have a gap or repeat: position ${index + 1} holds seq ${event.seq}`);
    }
    const data = event.data;
    if (index === 0 && event.type !== "session_created") bad(event, "comes first instead of session_created");
    if (turnEvents.has(event.type) && data.turnId !== open?.turnId) {
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
        open = { turnId: String(data.turnId), text: String(data.text), end: null, calls: [], finalText: null };
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
          });
          open?.calls.push(call.toolCallId);
        }
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
        const max = crashTools[call.name as CrashToolName]?.maxExecutions ?? 1;
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
        const interrupt = data.interrupt as { interruptId: string; toolCallId: string; arguments: string };
        if (walk.interrupts.has(interrupt.interruptId))
          bad(event, `creates interrupt ${interrupt.interruptId} a second time`);
        walk.interrupts.set(interrupt.interruptId, {
          toolCallId: interrupt.toolCallId,
          arguments: interrupt.arguments,
          resolved: [],
        });
        break;
      }
      case "interrupt_resolved": {
        const interrupt = walk.interrupts.get(String(data.interruptId));
        if (!interrupt) bad(event, `resolves interrupt ${String(data.interruptId)}, which was never created`);
        else interrupt.resolved.push(Boolean(data.approved));
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

function decisionOf(args: string): "approve" | "reject" | null {
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
  };
  const lives = new Map(options.workers.map((life) => [life.pid, life]));
  const executionsBySession = new Map<string, ExecutionRow[]>();
  for (const execution of data.executions) {
    const list = executionsBySession.get(execution.sessionId) ?? [];
    list.push(execution);
    executionsBySession.set(execution.sessionId, list);
    stats.executionsPerTool[execution.tool] = (stats.executionsPerTool[execution.tool] ?? 0) + 1;
    stats.executionsPerWorker[execution.workerPid] = (stats.executionsPerWorker[execution.workerPid] ?? 0) + 1;
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

    // Every turn ended, the way its script says: a final answer, or an explicit turn_failed.
    walk.turns.forEach((turn, index) => {
      const script = plan.turns[index];
      if (turn.end === null) {
        violations.push(`${id}: ${turn.turnId} never ended (the session hangs)`);
        return;
      }
      if (turn.end === "completed") stats.turnsCompleted += 1;
      else stats.turnsFailed += 1;
      const expected = script?.failsModel ? "failed" : "completed";
      if (script && turn.end !== expected)
        violations.push(`${id}: ${turn.turnId} ${turn.end}, its script says it ${expected}`);
      if (turn.end === "completed") {
        // The scripted model's answer follows from this turn's own message and outcomes alone.
        const failedBefore = walk.turns.slice(0, index).filter((t) => t.end === "failed").length;
        const noted = failedBefore > 0 ? `(noted ${failedBefore} failed turn(s)) ` : "";
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
          return `${call.name}:${(JSON.parse(call.arguments) as { key: string }).key}`;
        });
        const scripted = script.blocks.flat().map((call) => `${call.tool}:${call.key}`);
        if (asked.join(",") !== scripted.join(",")) {
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
    if (head.pendingInterrupts.length > 0)
      violations.push(`${id}: ${head.pendingInterrupts.length} interrupt(s) still pending`);
    if (row.inboxCursor !== row.lastInboxSeq || head.inboxCursor !== row.lastInboxSeq) {
      violations.push(
        `${id}: inbox applied up to ${row.inboxCursor} (head ${head.inboxCursor}) of ${row.lastInboxSeq}`,
      );
    }

    // Decisions: one inbox entry and one interrupt_resolved per interrupt, with the driver's answer.
    const resolutions = new Map<string, boolean[]>();
    for (const entry of inbox) {
      if (entry.entry.kind !== "resolution") continue;
      const list = resolutions.get(entry.entry.interruptId) ?? [];
      list.push(entry.entry.approved);
      resolutions.set(entry.entry.interruptId, list);
    }
    for (const interruptId of resolutions.keys()) {
      if (!walk.interrupts.has(interruptId))
        violations.push(`${id}: the inbox resolves ${interruptId}, which was never created`);
    }
    for (const [interruptId, interrupt] of walk.interrupts) {
      const expected = decisionOf(interrupt.arguments) === "approve";
      const accepted = resolutions.get(interruptId) ?? [];
      if (accepted.length !== 1)
        violations.push(`${id}: interrupt ${interruptId} has ${accepted.length} accepted decision(s), not 1`);
      if (interrupt.resolved.length !== 1) {
        violations.push(`${id}: interrupt ${interruptId} was resolved ${interrupt.resolved.length} time(s), not once`);
      } else if (interrupt.resolved[0] !== expected || (accepted.length === 1 && accepted[0] !== expected)) {
        violations.push(
          `${id}: interrupt ${interruptId} was ${interrupt.resolved[0] ? "approved" : "rejected"}, the driver decided otherwise`,
        );
      }
      if (interrupt.resolved[0]) stats.interruptsApproved += 1;
      else stats.interruptsRejected += 1;
    }

    // Calls and their executions.
    const executions = executionsBySession.get(id) ?? [];
    const byCall = new Map<string, ExecutionRow[]>();
    for (const execution of executions) {
      const list = byCall.get(execution.toolCallId) ?? [];
      list.push(execution);
      byCall.set(execution.toolCallId, list);
    }
    for (const callId of byCall.keys()) {
      if (!walk.calls.has(callId))
        violations.push(`${id}: a tool ran for call ${callId}, which no model response requested`);
    }
    for (const [callId, call] of walk.calls) {
      stats.calls += 1;
      const tool = call.name as CrashToolName;
      const status = call.status;
      stats.outcomes[status ?? "none"] = (stats.outcomes[status ?? "none"] ?? 0) + 1;
      if (status === null) {
        violations.push(`${id}: ${tool} call ${callId} never got an outcome`);
      } else if (!allowedOutcomes[tool]?.includes(status)) {
        violations.push(`${id}: ${tool} call ${callId} ended ${status}, which its effect cannot give`);
      }
      const decision = decisionOf(call.arguments);
      if (decision === "reject" && status !== "rejected")
        violations.push(`${id}: rejected call ${callId} ended ${status}`);
      if (decision !== "reject" && status === "rejected")
        violations.push(`${id}: call ${callId} was rejected without a rejection`);
      const runs = byCall.get(callId) ?? [];
      if (runs.length > 1) stats.callsRunMoreThanOnce += 1;
      const max = crashTools[tool]?.maxExecutions ?? 1;
      if (runs.length > max) {
        const what = max === 1 ? "single-attempt call" : `${tool} call`;
        violations.push(`${id}: ${what} ${callId} executed ${runs.length} times (at most ${max})`);
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
      if (tool === "idempotent_write") {
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
      if (status === "succeeded" && lastRun?.result !== "ok") {
        violations.push(
          `${id}: call ${callId} is recorded succeeded, but its attempt ${last} ${lastRun ? `ended ${lastRun.result}` : "never ran"}`,
        );
      }
      // A refusal is `failed`, unless its worker went away before recording it (then it is unknown).
      if (
        lastRun?.result === "tool_error" &&
        status !== "failed" &&
        !(status === "outcome_unknown" && walk.recoveredUnknown.has(callId))
      ) {
        violations.push(`${id}: call ${callId} refused with a ToolExecutionError, but is recorded ${status}`);
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
