/**
 * The driver of a crash run: it creates sessions through `SessionClient`, keeps worker processes
 * alive, SIGKILLs them (and optionally restarts PostgreSQL) at random moments spread over the run's
 * progress, approves or rejects interrupts as they appear, waits (bounded) until every session is at
 * rest, then checks the invariants from the database. The store is a parameter: a PostgreSQL
 * database (`databaseUrl`) or one SQLite file (`sqlitePath`), see store-backend.ts.
 */
import {
  DuplicateResolutionError,
  DurableAgentsError,
  InterruptNotFoundError,
  SessionClient,
  SessionStateError,
  type SessionEvent,
} from "@durable-agents/core";
import type { PostgresServer } from "@durable-agents/store-postgres/testing";
import { CRASH_AGENT } from "./crash-agent.js";
import {
  checkInvariants,
  decisionOf,
  type AcceptedCancel,
  type InvariantStats,
  type RefusedDecision,
} from "./invariants.js";
import type { RunData } from "./run-data.js";
import { planSessions, type PlannedCancel, type PlannedSession } from "./session-plan.js";
import { openBackend, type StoreFigures, type StoreKind } from "./store-backend.js";
import { WorkerFleet, type WorkerLife } from "./worker-fleet.js";

export interface CrashRunOptions {
  /** PostgreSQL: an empty database of the run's own. */
  readonly databaseUrl?: string;
  /**
   * SQLite, instead of `databaseUrl`: the store file of the run (a new file in a folder of the
   * run's own; the tools' log and the workers' transaction records go beside it).
   */
  readonly sqlitePath?: string;
  /** The SQLite store's `synchronous`. Default `full`. */
  readonly sqliteSynchronous?: "full" | "normal";
  /** The server, when the run restarts PostgreSQL (`restarts > 0`). */
  readonly server?: PostgresServer;
  readonly sessions: number;
  readonly workers: number;
  /** SIGKILLs, spread over the run's progress. */
  readonly kills: number;
  /** PostgreSQL restarts, spread over the run's progress. Default 0. */
  readonly restarts?: number;
  /** Seed of the plan (scripts, decisions). Default 1. */
  readonly seed?: number;
  /** Sessions are started evenly over this many ms. Default 0 (all at once). */
  readonly spreadMs?: number;
  readonly maxTurns?: number;
  readonly leaseTtlMs?: number;
  /** How long a worker keeps an idle session's lease (the Worker's `lingerMs`). Default: the Worker's. */
  readonly lingerMs?: number;
  /**
   * The workers' `readToolHoldMs` (a model's result that starts only reads may wait for the first
   * read's result). A read's run inside the hold is not counted among its attempts, so the checks
   * then allow a read one run its attempts do not list, in a worker that was killed (see invariants.ts).
   */
  readonly readToolHoldMs?: number;
  /** PostgreSQL: the workers' stores write compressed heads (`compressHeads: true`). */
  readonly compressHeads?: boolean;
  readonly pollIntervalMs?: number;
  /** Chance that one tool execution fails. Default 0.2. */
  readonly failureRate?: number;
  /** Share of turns the driver tries to cancel (`client.cancelTurn`). Default 0.2. */
  readonly cancelRate?: number;
  readonly workerConcurrency?: number;
  /** Bound of the whole run until every session is at rest. */
  readonly timeoutMs: number;
  /** Every execution must have recorded its end (runs without kills and restarts). */
  readonly requireFinishedExecutions?: boolean;
  readonly log?: (line: string) => void;
}

export interface CrashRunCounts {
  sessions: number;
  turns: number;
  workersStarted: number;
  kills: number;
  restarts: number;
  messagesAccepted: number;
  /** Message sends retried after a lost answer whose first try had been accepted. */
  messagesAcceptedOnRetry: number;
  /** Deliberate second sends of a message ID, refused as duplicates. */
  duplicateMessagesRefused: number;
  approvalsSent: number;
  rejectionsSent: number;
  /** Decisions retried after a lost answer and refused with DuplicateResolutionError: the first try had landed. */
  decisionsAcceptedOnRetry: number;
  /** Deliberate second decisions, refused with DuplicateResolutionError. */
  duplicateDecisionsRefused: number;
  /** Planned cancellations the driver did not send: it saw the turn end first. */
  cancelsNotSent: number;
  /** `cancelTurn` calls accepted (one inbox entry each). */
  cancelsAccepted: number;
  /** Of those, by mode: `running` (during the turn) and `approval` (while it waited for a decision). */
  cancelsAcceptedWhileRunning: number;
  cancelsAcceptedAtApproval: number;
  /** Accepted cancellations that named a later turn than the one planned (it had ended meanwhile). */
  cancelsNamingAnotherTurn: number;
  /** Cancellations retried after a lost answer and answered `duplicate`: the first try had landed. */
  cancelsAcceptedOnRetry: number;
  /** `cancelTurn` refused with SessionStateError: no turn ran any more. */
  cancelsRefusedNoTurn: number;
  /** Deliberate second sends of a request ID, answered `duplicate` with the first one's seq and turn. */
  duplicateCancelsAnswered: number;
  /** Decisions sent after their turn's cancellation (approval mode), refused with SessionStateError. */
  lateDecisionsRefused: number;
  /**
   * The same refused with InterruptNotFoundError instead: the turn was cancelled and a later turn had
   * started (core's client looks for the cancelled call in the running turn only; see the README).
   */
  lateDecisionsRefusedNotFound: number;
  /** Decisions (first or second) refused with SessionStateError or InterruptNotFoundError while racing a cancellation of their turn. */
  decisionsRefusedCancelled: number;
  /** Client calls that failed because the database was away, and were retried. */
  transientClientErrors: number;
  /** Error lines the worker processes reported (lost leases, connections), by kind of message. */
  workerErrors: Record<string, number>;
  durationMs: number;
}

export interface CrashRunStore {
  readonly kind: StoreKind;
  /** What the store's backend counted about kills and the store file. */
  readonly figures: StoreFigures;
}

export interface CrashRunResult {
  readonly violations: string[];
  readonly counts: CrashRunCounts;
  readonly stats: InvariantStats;
  readonly store: CrashRunStore;
  readonly workers: readonly WorkerLife[];
  readonly plan: readonly PlannedSession[];
  /** What the run left in the database, as the checks read it. */
  readonly data: RunData;
  /** The cancellations the client accepted, and the decisions it refused because their turn was cancelled. */
  readonly cancels: readonly AcceptedCancel[];
  readonly refusedDecisions: readonly RefusedDecision[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A failure that is not the client's typed answer: the database was away. Retried. */
const isTransient = (error: unknown) => !DurableAgentsError.isInstance(error);

/** An error line of a worker process that says the database was unreachable or went away. */
export function isConnectionError(line: string): boolean {
  let parsed: { message?: string; code?: string | null };
  try {
    parsed = JSON.parse(line) as { message?: string; code?: string | null };
  } catch {
    return false;
  }
  // PostgreSQL's classes 08 (connection exception) and 57 (operator intervention: shutdown, restart).
  if (typeof parsed.code === "string" && /^(08|57)/.test(parsed.code)) return true;
  if (typeof parsed.code === "string" && /^E(CONN|PIPE|TIMEDOUT)/.test(parsed.code)) return true;
  return /ECONNREFUSED|ECONNRESET|EPIPE|Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (starting up|shutting down|not yet accepting)/i.test(
    parsed.message ?? "",
  );
}

interface Tracker {
  readonly plan: PlannedSession;
  cursor: number;
  turnsEnded: number;
  readonly seenInterrupts: Set<string>;
  readonly waiters: { turns: number; resolve: () => void }[];
  /** The cancellation sent for a turn (by turn number), once it is sent: resolves with the accepted answer, or null. */
  readonly cancels: Map<number, Promise<{ seq: number; turnId: string } | null>>;
  /** Turn numbers whose end the driver saw. */
  readonly ended: Set<number>;
}

/** `turn-3` -> 3. */
const turnNumber = (turnId: string) => Number(turnId.replace(/^turn-/, ""));

function messageKind(line: string): string {
  try {
    const parsed = JSON.parse(line) as { kind?: string; message?: string };
    const message = (parsed.message ?? "").replace(/"[^"]*"/g, '"…"').replace(/\d+/g, "N");
    return `${parsed.kind}: ${message}`.slice(0, 120);
  } catch {
    return line.slice(0, 120);
  }
}

export async function runCrashScenario(options: CrashRunOptions): Promise<CrashRunResult> {
  const log = options.log ?? (() => {});
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const restarts = options.restarts ?? 0;
  if (restarts > 0 && !options.server) throw new Error("a run with restarts needs the PostgreSQL server");
  const violations: string[] = [];
  const counts: CrashRunCounts = {
    sessions: options.sessions,
    turns: 0,
    workersStarted: 0,
    kills: 0,
    restarts: 0,
    messagesAccepted: 0,
    messagesAcceptedOnRetry: 0,
    duplicateMessagesRefused: 0,
    approvalsSent: 0,
    rejectionsSent: 0,
    decisionsAcceptedOnRetry: 0,
    duplicateDecisionsRefused: 0,
    cancelsNotSent: 0,
    cancelsAccepted: 0,
    cancelsAcceptedWhileRunning: 0,
    cancelsAcceptedAtApproval: 0,
    cancelsNamingAnotherTurn: 0,
    cancelsAcceptedOnRetry: 0,
    cancelsRefusedNoTurn: 0,
    duplicateCancelsAnswered: 0,
    lateDecisionsRefused: 0,
    lateDecisionsRefusedNotFound: 0,
    decisionsRefusedCancelled: 0,
    transientClientErrors: 0,
    workerErrors: {},
    durationMs: 0,
  };
  const plan = planSessions({
    sessions: options.sessions,
    seed: options.seed ?? 1,
    spreadMs: options.spreadMs ?? 0,
    maxTurns: options.maxTurns ?? 3,
    ...(options.cancelRate !== undefined ? { cancelRate: options.cancelRate } : {}),
  });
  const totalTurns = plan.reduce((sum, session) => sum + session.turns.length, 0);
  counts.turns = totalTurns;

  if (options.compressHeads === true && options.sqlitePath)
    throw new Error("compressHeads is a PostgreSQL store's setting: not with sqlitePath");
  const backend = await openBackend({
    ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.sqlitePath ? { sqlitePath: options.sqlitePath } : {}),
    ...(options.sqliteSynchronous ? { sqliteSynchronous: options.sqliteSynchronous } : {}),
    isConnectionError,
  });
  if (restarts > 0 && backend.kind !== "postgres") throw new Error("restarts are PostgreSQL restarts");
  const store = backend.store;
  const client = new SessionClient({ store, agents: [CRASH_AGENT] });
  const fleet = new WorkerFleet({
    storeArgs: backend.workerArgs,
    leaseTtlMs: options.leaseTtlMs ?? 1500,
    ...(options.lingerMs === undefined ? {} : { lingerMs: options.lingerMs }),
    ...(options.readToolHoldMs === undefined ? {} : { readToolHoldMs: options.readToolHoldMs }),
    ...(options.compressHeads === true ? { compressHeads: true } : {}),
    pollIntervalMs: options.pollIntervalMs ?? 100,
    failureRate: options.failureRate ?? 0.2,
    ...(options.workerConcurrency ? { concurrency: options.workerConcurrency } : {}),
    onWorkerError: (line) => {
      const kind = messageKind(line);
      counts.workerErrors[kind] = (counts.workerErrors[kind] ?? 0) + 1;
      // A worker may report the database being away; anything else is the engine failing.
      if (!backend.isExpectedWorkerError(line))
        violations.push(`a worker reported an error that is not a lost connection: ${line.slice(0, 300)}`);
    },
  });

  /** Runs a client call until it answers, retrying while the database is away (bounded by the deadline). */
  async function retrying<T>(what: string, call: (attempt: number) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call(attempt);
      } catch (error) {
        if (!isTransient(error) || Date.now() > deadline) throw error;
        counts.transientClientErrors += 1;
        if (attempt % 20 === 0) log(`still retrying ${what}: ${(error as Error).message}`);
        await sleep(Math.min(1000, 25 * attempt));
      }
    }
  }

  const trackers = new Map<string, Tracker>(
    plan.map((session) => [
      session.sessionId,
      {
        plan: session,
        cursor: 0,
        turnsEnded: 0,
        seenInterrupts: new Set(),
        waiters: [],
        cancels: new Map(),
        ended: new Set(),
      },
    ]),
  );
  let turnsEnded = 0;
  const progressListeners = new Set<() => void>();
  /** Resolves on the next turn that ends, or after `ms`. */
  const progress = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        progressListeners.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      progressListeners.add(done);
    });
  const finished = () => turnsEnded >= totalTurns;
  let stopped = false;
  const background: Promise<unknown>[] = [];
  /** Every cancellation the client accepted, for the checks (the inbox must hold exactly these). */
  const acceptedCancels: AcceptedCancel[] = [];
  /** Decisions the client refused because their turn was cancelled, for the checks. */
  const refusedDecisions: RefusedDecision[] = [];

  // --- Cancellations ---------------------------------------------------------------------------
  /** Sends the planned cancellation of turn `number` (once), and its duplicate if planned. */
  function sendCancel(
    tracker: Tracker,
    number: number,
    planned: PlannedCancel,
  ): Promise<{ seq: number; turnId: string } | null> {
    const sent = tracker.cancels.get(number);
    if (sent) return sent;
    const sending = cancelOnce(tracker, number, planned);
    tracker.cancels.set(number, sending);
    return sending;
  }

  async function cancelOnce(
    tracker: Tracker,
    number: number,
    planned: PlannedCancel,
  ): Promise<{ seq: number; turnId: string } | null> {
    const { sessionId } = tracker.plan;
    // The turn is named: a cancellation meant for a turn that ended meanwhile never cancels the next one.
    const request = { reason: `crash driver, ${planned.when}`, requestId: planned.requestId, turnId: `turn-${number}` };
    let accepted: { seq: number; turnId: string };
    try {
      accepted = await retrying(`cancel ${planned.requestId}`, async (attempt) => {
        const answer = await client.cancelTurn(sessionId, request);
        if (answer.duplicate && attempt === 1)
          violations.push(
            `${sessionId}: the first send of cancellation ${planned.requestId} was answered as a duplicate`,
          );
        if (answer.duplicate) counts.cancelsAcceptedOnRetry += 1;
        return answer;
      });
    } catch (error) {
      // Nothing ran any more (the turn ended and no message waited): nothing was written.
      if (SessionStateError.isInstance(error)) {
        counts.cancelsRefusedNoTurn += 1;
        if (planned.when === "approval")
          violations.push(`${sessionId}: cancelling turn-${number} while it waited for approval was refused`);
        return null;
      }
      violations.push(`${sessionId}: cancelling turn-${number} failed: ${(error as Error).message}`);
      return null;
    }
    counts.cancelsAccepted += 1;
    if (planned.when === "running") counts.cancelsAcceptedWhileRunning += 1;
    else counts.cancelsAcceptedAtApproval += 1;
    acceptedCancels.push({ sessionId, requestId: planned.requestId, seq: accepted.seq, turnId: accepted.turnId });
    if (accepted.turnId !== `turn-${number}`) {
      counts.cancelsNamingAnotherTurn += 1;
      // The request names its turn: an accepted cancellation is for that turn, never a later one.
      violations.push(`${sessionId}: the cancellation of turn-${number} named ${accepted.turnId}`);
    }
    if (planned.duplicate !== "none") {
      background.push(
        (async () => {
          if (planned.duplicate === "after the turn") await turnEnded(tracker, number);
          const again = await retrying(`resend ${planned.requestId}`, () =>
            client.cancelTurn(sessionId, request),
          ).catch((error: unknown) => {
            violations.push(
              `${sessionId}: resending cancellation ${planned.requestId} failed: ${(error as Error).message}`,
            );
            return null;
          });
          if (!again) return;
          if (again.duplicate && again.seq === accepted.seq && again.turnId === accepted.turnId)
            counts.duplicateCancelsAnswered += 1;
          else
            violations.push(
              `${sessionId}: resending cancellation ${planned.requestId} answered ${JSON.stringify(again)}, not the first one's seq ${accepted.seq} and ${accepted.turnId} as a duplicate`,
            );
        })(),
      );
    }
    return accepted;
  }

  /** A running-mode cancellation: `delayMs` after the turn was seen starting, unless it was seen ending first. */
  async function cancelWhileRunning(tracker: Tracker, number: number, planned: PlannedCancel): Promise<void> {
    await sleep(planned.delayMs);
    if (stopped) return;
    if (tracker.ended.has(number)) {
      counts.cancelsNotSent += 1;
      return;
    }
    await sendCancel(tracker, number, planned);
  }

  /** Records a decision the client refused; the checks confirm its call ended `cancelled`. */
  function refused(
    sessionId: string,
    interruptId: string,
    turnId: string,
    error: unknown,
    kind: RefusedDecision["kind"],
  ): boolean {
    const code = SessionStateError.isInstance(error)
      ? "session_state"
      : InterruptNotFoundError.isInstance(error)
        ? "interrupt_not_found"
        : null;
    if (code === null) return false;
    refusedDecisions.push({ sessionId, interruptId, turnId, code, kind });
    if (kind === "late" && code === "session_state") counts.lateDecisionsRefused += 1;
    else if (kind === "late") counts.lateDecisionsRefusedNotFound += 1;
    else counts.decisionsRefusedCancelled += 1;
    return true;
  }

  /**
   * Approval mode: the turn's cancellation first (sent once, for its first interrupt), then this
   * interrupt's decision, which must be refused: the call will never run.
   */
  async function decideLate(
    tracker: Tracker,
    interruptId: string,
    turnId: string,
    args: string,
    planned: PlannedCancel,
  ) {
    const { sessionId } = tracker.plan;
    const accepted = await sendCancel(tracker, turnNumber(turnId), planned);
    if (!accepted) return;
    const approved = decisionOf(args) === "approve";
    const input = { interruptId, approved, message: approved ? null : "rejected by the crash driver" };
    try {
      await retrying(`late decision ${interruptId}`, () => client.resolveInterrupt(sessionId, input));
      violations.push(`${sessionId}: a decision for ${interruptId}, sent after its turn was cancelled, was accepted`);
    } catch (error) {
      if (!refused(sessionId, interruptId, turnId, error, "late"))
        violations.push(`${sessionId}: a late decision for ${interruptId} failed: ${(error as Error).message}`);
    }
  }

  // --- Decisions -----------------------------------------------------------------------------
  async function decide(
    sessionId: string,
    interruptId: string,
    turnId: string,
    args: string,
    offeredAgain = false,
  ): Promise<void> {
    let decision: unknown;
    try {
      decision = (JSON.parse(args) as { decision?: unknown }).decision;
    } catch {
      decision = undefined;
    }
    // A call a check found not done, offered again (the interrupt says why): the driver approves it.
    if (offeredAgain) decision = "approve";
    if (decision !== "approve" && decision !== "reject") {
      violations.push(
        `${sessionId}: interrupt ${interruptId} is for a call the driver did not plan to need approval (${args})`,
      );
      return;
    }
    const approved = decision === "approve";
    const input = { interruptId, approved, message: approved ? null : "rejected by the crash driver" };
    try {
      await retrying(`resolve ${interruptId}`, async (attempt) => {
        try {
          await client.resolveInterrupt(sessionId, input);
        } catch (error) {
          // A retry refused as a duplicate: the try whose answer was lost had been accepted.
          if (attempt > 1 && DuplicateResolutionError.isInstance(error)) {
            counts.decisionsAcceptedOnRetry += 1;
            return;
          }
          throw error;
        }
      });
      if (approved) counts.approvalsSent += 1;
      else counts.rejectionsSent += 1;
    } catch (error) {
      // A cancellation of its turn came first (the checks confirm the call ended cancelled).
      if (!refused(sessionId, interruptId, turnId, error, "first"))
        violations.push(`${sessionId}: resolving ${interruptId} failed: ${(error as Error).message}`);
      return;
    }
    // Some decisions are sent twice, at once (a double click) or later (often after the turn
    // ended); the second must be refused.
    if (Math.random() < 0.15) {
      if (Math.random() < 0.5) await sleep(500 + Math.floor(Math.random() * 1500));
      try {
        await retrying(`resend ${interruptId}`, () => client.resolveInterrupt(sessionId, input));
        violations.push(`${sessionId}: a second decision for ${interruptId} was accepted`);
      } catch (error) {
        // Whether it is still pending, applied, or its turn is over: a second decision is a duplicate
        // (or, when the turn was cancelled before the first one was applied, refused as such).
        if (DuplicateResolutionError.isInstance(error)) counts.duplicateDecisionsRefused += 1;
        else if (!refused(sessionId, interruptId, turnId, error, "second"))
          violations.push(`${sessionId}: a second decision for ${interruptId} failed: ${(error as Error).message}`);
      }
    }
  }

  // --- Following the events ------------------------------------------------------------------
  function onEvent(tracker: Tracker, event: SessionEvent): void {
    if (event.type === "turn_started") {
      const number = turnNumber(event.data.turnId);
      const planned = tracker.plan.turns[number - 1]?.cancel;
      if (planned?.when === "running") background.push(cancelWhileRunning(tracker, number, planned));
    } else if (event.type === "interrupt_created") {
      const interrupt = event.data.interrupt;
      if (tracker.seenInterrupts.has(interrupt.interruptId)) return;
      tracker.seenInterrupts.add(interrupt.interruptId);
      const planned = tracker.plan.turns[turnNumber(interrupt.turnId) - 1]?.cancel;
      background.push(
        planned?.when === "approval"
          ? decideLate(tracker, interrupt.interruptId, interrupt.turnId, interrupt.arguments, planned)
          : decide(
              tracker.plan.sessionId,
              interrupt.interruptId,
              interrupt.turnId,
              interrupt.arguments,
              interrupt.reason !== null,
            ),
      );
    } else if (event.type === "turn_completed" || event.type === "turn_failed" || event.type === "turn_cancelled") {
      tracker.ended.add(turnNumber(event.data.turnId));
      tracker.turnsEnded += 1;
      turnsEnded += 1;
      for (const waiter of tracker.waiters.filter((w) => tracker.turnsEnded >= w.turns)) {
        tracker.waiters.splice(tracker.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      for (const listener of [...progressListeners]) listener();
    }
  }

  async function readNewEvents(tracker: Tracker): Promise<void> {
    for (;;) {
      const events = await client.readEvents(tracker.plan.sessionId, { after: tracker.cursor, limit: 1000 });
      for (const event of events) {
        if (event.seq !== tracker.cursor + 1) {
          violations.push(`${tracker.plan.sessionId}: readEvents after ${tracker.cursor} answered seq ${event.seq}`);
        }
        tracker.cursor = event.seq;
        onEvent(tracker, event);
      }
      if (events.length < 1000) return;
    }
  }

  const dirty = new Set<string>();
  const active = new Set<string>();
  let pumpWake: (() => void) | null = null;
  const markDirty = (sessionId: string) => {
    if (!active.has(sessionId)) return;
    dirty.add(sessionId);
    const wake = pumpWake;
    pumpWake = null;
    wake?.();
  };
  const unsubscribe = store.subscribe((notification) => {
    if (notification.kind === "events") markDirty(notification.sessionId);
    // After the LISTEN connection came back, notifications may have been lost.
    else if (notification.kind === "work") for (const id of active) markDirty(id);
  });

  async function pump(): Promise<void> {
    let lastSweep = Date.now();
    while (!stopped) {
      if (Date.now() - lastSweep > 1000) {
        // Notifications can be lost (restarts): read every unfinished session now and then.
        for (const id of active) dirty.add(id);
        lastSweep = Date.now();
      }
      const batch = [...dirty];
      dirty.clear();
      if (batch.length === 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            pumpWake = null;
            resolve();
          }, 250);
          pumpWake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        continue;
      }
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(6, batch.length) }, async () => {
          while (next < batch.length) {
            const tracker = trackers.get(batch[next++]!)!;
            try {
              await readNewEvents(tracker);
            } catch (error) {
              if (!isTransient(error)) throw error;
              counts.transientClientErrors += 1;
              dirty.add(tracker.plan.sessionId);
            }
            if (tracker.turnsEnded >= tracker.plan.turns.length) active.delete(tracker.plan.sessionId);
          }
        }),
      );
    }
  }

  function turnEnded(tracker: Tracker, turns: number): Promise<void> {
    if (tracker.turnsEnded >= turns || stopped) return Promise.resolve();
    return new Promise((resolve) => tracker.waiters.push({ turns, resolve }));
  }

  // --- Sessions --------------------------------------------------------------------------------
  async function driveSession(tracker: Tracker): Promise<void> {
    const { sessionId, turns, startAtMs } = tracker.plan;
    await sleep(Math.max(0, started + startAtMs - Date.now()));
    for (const turn of turns) {
      if (turn.number === 1) {
        await retrying(`start ${sessionId}`, async (attempt) => {
          try {
            await client.startSession({ agent: CRASH_AGENT, sessionId, message: turn.text, messageId: turn.messageId });
          } catch (error) {
            // The first try created it (with its first message, atomically) before its answer was lost.
            if (attempt > 1 && SessionStateError.isInstance(error)) {
              counts.messagesAcceptedOnRetry += 1;
              return;
            }
            throw error;
          }
        });
        active.add(sessionId);
        markDirty(sessionId);
      } else {
        if (turn.send === "after") {
          await turnEnded(tracker, turn.number - 1);
          await sleep(Math.floor(Math.random() * 100));
        }
        if (stopped) return;
        const result = await retrying(`message ${turn.messageId}`, async (attempt) => {
          const sent = await client.sendMessage(sessionId, turn.text, { messageId: turn.messageId });
          if (sent.duplicate && attempt === 1)
            violations.push(`${sessionId}: the first send of ${turn.messageId} was refused as a duplicate`);
          return { ...sent, attempt };
        });
        if (result.duplicate) counts.messagesAcceptedOnRetry += 1;
      }
      counts.messagesAccepted += 1;
      if (turn.resend) {
        const again = await retrying(`resend ${turn.messageId}`, () =>
          client.sendMessage(sessionId, turn.text, { messageId: turn.messageId }),
        );
        if (again.duplicate) counts.duplicateMessagesRefused += 1;
        else violations.push(`${sessionId}: message ${turn.messageId} was accepted a second time`);
      }
    }
  }

  // --- Chaos: kills and restarts, spread over the progress of the run -------------------------
  async function untilProgress(turns: number): Promise<void> {
    while (turnsEnded < turns && !stopped) await progress(500);
  }

  async function chaos(): Promise<void> {
    const actions: { at: number; kind: "kill" | "restart" }[] = [];
    for (let i = 1; i <= options.kills; i++) actions.push({ at: (totalTurns * i) / (options.kills + 1), kind: "kill" });
    for (let i = 1; i <= restarts; i++) actions.push({ at: (totalTurns * (i - 0.5)) / restarts, kind: "restart" });
    actions.sort((a, b) => a.at - b.at);
    for (const action of actions) {
      await untilProgress(Math.floor(action.at));
      if (stopped || finished()) break;
      // A random moment after the milestone, so kills land anywhere in a step.
      await sleep(Math.floor(Math.random() * 300));
      if (finished()) break;
      if (action.kind === "kill") {
        // The backend picks the moment and the victim (a worker inside a tool call, or a write transaction).
        const victim = await backend.kill(fleet, counts.kills + 1, violations);
        counts.kills += 1;
        log(`kill ${counts.kills}: worker ${victim.pid} after ${turnsEnded}/${totalTurns} turns`);
      } else {
        const at = Date.now();
        await options.server!.restart({ mode: "fast" });
        counts.restarts += 1;
        log(
          `restart ${counts.restarts} of PostgreSQL took ${Date.now() - at} ms, after ${turnsEnded}/${totalTurns} turns`,
        );
      }
    }
  }

  let result: CrashRunResult | undefined;
  try {
    await fleet.start(options.workers);
    log(`${options.workers} workers ready; ${plan.length} sessions, ${totalTurns} turns planned`);
    const pumping = pump().catch((error) => violations.push(`the event follower failed: ${(error as Error).message}`));
    const chaosDone = chaos().catch((error) => violations.push(`the chaos loop failed: ${(error as Error).message}`));
    const sessionsDone = Promise.all([...trackers.values()].map((tracker) => driveSession(tracker))).catch((error) =>
      violations.push(`a session driver failed: ${(error as Error).message}`),
    );
    // Wait, bounded, until every turn ended.
    const progressLog = setInterval(() => log(`${turnsEnded}/${totalTurns} turns ended, ${fleet.alive} workers`), 5000);
    try {
      while (!finished() && Date.now() < deadline) await progress(Math.min(500, deadline - Date.now()));
    } finally {
      clearInterval(progressLog);
    }
    if (!finished()) {
      const stuck = [...trackers.values()].filter((t) => t.turnsEnded < t.plan.turns.length);
      for (const tracker of stuck.slice(0, 20)) {
        const snapshot = await client.snapshot(tracker.plan.sessionId).catch(() => null);
        violations.push(
          `${tracker.plan.sessionId}: hangs after ${options.timeoutMs} ms: ${tracker.turnsEnded}/${tracker.plan.turns.length} turns ended, ` +
            `status ${snapshot?.status}, ${snapshot?.queuedMessages} queued, ${snapshot?.unappliedDecisions} unapplied decision(s)`,
        );
      }
      if (stuck.length > 20) violations.push(`... and ${stuck.length - 20} more sessions hang`);
    } else {
      // Every session is at rest: idle, nothing queued, no decision unapplied.
      for (const session of plan) {
        const remaining = Math.max(1000, deadline - Date.now());
        try {
          const snapshot = await retrying("waitUntilIdle", () =>
            client.waitUntilIdle(session.sessionId, { timeoutMs: remaining }),
          );
          if (snapshot.status !== "idle")
            violations.push(`${session.sessionId}: waits with status ${snapshot.status} at the end`);
        } catch (error) {
          violations.push(`${session.sessionId}: did not come to rest: ${(error as Error).message}`);
        }
      }
    }
    stopped = true;
    for (const tracker of trackers.values()) for (const waiter of tracker.waiters.splice(0)) waiter.resolve();
    await sessionsDone;
    await chaosDone;
    // Background work may add more (a cancellation's second send): wait until none is left.
    for (let awaited = 0; awaited < background.length; ) {
      const batch = background.slice(awaited);
      awaited = background.length;
      await Promise.all(batch);
    }
    await pumping;
    await fleet.stop();
    for (const life of fleet.unexpectedExits) {
      violations.push(`worker ${life.pid} exited by itself (${life.exit}) although nobody killed it`);
    }
    counts.workersStarted = fleet.lives.length;
    backend.finish(fleet.lives);
    const data = await retrying("load the run's rows", () => backend.loadRunData());
    const checked = checkInvariants(data, {
      plan,
      workers: fleet.lives,
      cancels: acceptedCancels,
      refusedDecisions,
      ...(options.requireFinishedExecutions ? { requireFinishedExecutions: true } : {}),
      ...((options.readToolHoldMs ?? 0) > 0 ? { readsMayRunUncounted: true } : {}),
    });
    violations.push(...checked.violations);
    counts.durationMs = Date.now() - started;
    result = {
      violations,
      counts,
      stats: checked.stats,
      store: { kind: backend.kind, figures: backend.figures },
      workers: fleet.lives,
      plan,
      data,
      cancels: acceptedCancels,
      refusedDecisions,
    };
  } finally {
    stopped = true;
    fleet.killAll();
    unsubscribe();
    await backend.close().catch(() => {});
  }
  return result!;
}
