/**
 * The engine for one leased session: a thin loop over the state machine. It recovers the session,
 * then over and over feeds the machine the results of finished steps and the new inbox entries,
 * commits the transition under the lease (one commit for whatever was ready at once), and launches
 * the steps the machine started (the tool calls of one response in parallel). What is ready, what
 * is in flight, retries and backoff are the machine's rules; the loop waits for the time it names.
 * Commits are serialized; a refused commit ends the drive. Any other unexpected error (a store that
 * fails, a step whose task broke) ends the drive by throwing it, so the worker reports it.
 */
import type { CoalescerOptions } from "./coalescer.js";
import { HistoryCache } from "./history-cache.js";
import { machineConfig, type DefinitionMigration, type SessionDefinition } from "./definition.js";
import { migrationTransition, runMigration } from "./migration-step.js";
import {
  ConfigurationError,
  ContractViolationError,
  LeaseLostError,
  MigrationError,
  VersionConflictError,
} from "./errors.js";
import {
  applyAll,
  applyDefinition,
  type DefinitionTransition,
  currentCalls,
  isRunnable,
  isTurnActive,
  type DueStep,
  type MachineConfig,
  type MachineInput,
} from "./machine.js";
import type { EventBody, HistoryItem, InboxItem, SessionHead } from "./schemas.js";
import type { Commit, CommitResult, Lease, SessionStore, StoredSession } from "./store.js";
import { type HeadCache, loadStoredSession } from "./stored-session.js";
import { runReconcileAttempt } from "./reconcile-step.js";
import { runModelAttempt, runToolAttempt } from "./tool-step.js";
import { TurnSignals } from "./turn-signals.js";

export interface DriveOptions {
  readonly store: SessionStore;
  readonly definition: SessionDefinition;
  readonly lease: Lease;
  /** Aborted when the lease is lost or the worker dies: stop at once, write nothing more. */
  readonly signal: AbortSignal;
  /** True once a graceful stop began: start no new step, finish those in flight. */
  readonly stopping: () => boolean;
  /** Fallback poll while waiting for the inbox (notifications can be lost). */
  readonly pollIntervalMs?: number;
  readonly coalescing?: CoalescerOptions;
  /** Histories kept between drives of the same worker (read only past the cached prefix). */
  readonly historyCache?: HistoryCache;
  /** Heads kept between drives of the same worker: every head this drive commits is recorded with its version. */
  readonly headCache?: HeadCache;
  /**
   * The migration to apply when the session is pinned to its `from` fingerprint. A session pinned to
   * another definition than `definition` without one is not driven: it is marked waiting for its
   * definition, and the drive ends `unserved`.
   */
  readonly migration?: DefinitionMigration;
  /**
   * The session as the caller just loaded it (with `loadStoredSession`, under this lease): the drive
   * starts from it instead of reading it again.
   */
  readonly session?: StoredSession;
  /**
   * The commit that leaves the session with nothing running and nothing due also releases the lease
   * (`Commit.release`), and the drive ends `released`; with a store that does not release in a
   * commit it ends `idle` as without this option. Default false: the caller releases the lease.
   */
  readonly releaseWhenIdle?: boolean;
  /**
   * Every commit of the drive also extends the lease to this many milliseconds from then
   * (`Commit.leaseTtlMs`), and `onLeaseExtended` hears the new expiry, so the caller need not renew
   * a lease its commits keep alive. Absent: commits leave the lease's expiry as it is.
   */
  readonly leaseTtlMs?: number;
  readonly onLeaseExtended?: (expiresAt: number) => void;
  /**
   * With `releaseWhenIdle`: the commit that would release the lease keeps it instead, for this many
   * milliseconds (`Commit.leaseTtlMs`), and the drive waits for the session's next inbox entry for
   * three quarters of that time. An entry that comes in time is taken under the same lease: no lease
   * grant and no reload, its first commit extends the lease as any commit does. Otherwise the drive
   * ends `lapsed`: the lease expires by itself, nothing more is written. A store that does not extend
   * leases in a commit is released as without this option. Default 0: release at once.
   */
  readonly lingerMs?: number;
  /** Aborted when the caller needs the drive to stop waiting (a graceful stop, a slot for other work): it ends `lapsed` at once and keeps no lease again. */
  readonly lingerSignal?: AbortSignal;
  /** Hears the drive start (true) and stop (false) waiting under a kept lease (`lingerMs`). */
  readonly onLinger?: (lingering: boolean) => void;
  /**
   * The lease is not taken yet (the session came from `findWork`, `lease.fence` is one past its
   * fence): the drive's first commit takes it (`Commit.claim`, which needs `leaseTtlMs`). A drive
   * whose claim is refused (another worker's came first) ends `lost`, having written nothing.
   */
  readonly claim?: boolean;
  /**
   * The commit that starts a turn under a lease the drive holds already (not `claim`) and launches
   * nothing but the turn's first model call may wait this many milliseconds to go with the turn's next
   * commit (the model's result, a batch of its deltas, a cancellation), the model call running
   * meanwhile: a turn whose first model call answers in time makes one commit fewer. After that time
   * it goes alone, while the call runs. What it costs: a crash in that time loses the turn's start
   * (the message is applied again from the inbox, and that model attempt is not counted). Default 0:
   * the start is committed before the call.
   */
  readonly turnStartHoldMs?: number;
  /**
   * The commit of a model step's result that starts nothing but `read` tool calls (no approval, no
   * other effect, nothing else due) may wait this many milliseconds to go with the turn's next
   * commit (the first of those calls' results, or a cancellation), the calls running meanwhile: a
   * read call that answers in time makes one commit fewer. After that time it goes alone, while the
   * calls run. Only under a lease the drive holds (not `claim`), and not in a drive that recovered a
   * turn. What it costs: a crash in that time loses the model's answer, so the next worker runs that
   * model step again (as after any crash during a model call, the interrupted call is not counted
   * among its attempts) and the read calls again (a read is safe to repeat); that worker's drive
   * recovered the turn, so it holds nothing, and a read that kills its worker again has its attempt
   * counted. Default 0: the result is committed before the calls run.
   */
  readonly readToolHoldMs?: number;
}

/**
 * `unserved`: the session is pinned to a definition the drive does not serve; it was marked waiting
 * and left as it was. `released`: idle, and its last commit released the lease (`releaseWhenIdle`).
 * `lapsed`: idle, its last commit kept the lease for `lingerMs` and no entry came in time: the lease
 * expires by itself then (the caller may release it sooner).
 */
export type DriveEnd = "idle" | "released" | "lapsed" | "stopped" | "lost" | "missing" | "unserved";

/** A turn's start is held (`turnStartHoldMs`) only while the lease has this much time left past the hold. */
const HOLD_LEASE_MARGIN_MS = 100;

export async function driveSession(options: DriveOptions): Promise<DriveEnd> {
  return new SessionDriver(options).run();
}

/** A finished step: its result for the machine, and the deltas still buffered when it ended (null: it failed unexpectedly). */
type Completion = {
  readonly input: MachineInput;
  readonly events: readonly EventBody[];
  /** The step's signal: once it is aborted (its turn was cancelled or ended), its buffered deltas are dropped. */
  readonly signal?: AbortSignal;
} | null;

class SessionDriver {
  private head!: SessionHead;
  private version = 0;
  private history: HistoryItem[] | null = null;
  /** Steps launched whose completion the loop has not taken yet. */
  private running = 0;
  private readonly completions: Completion[] = [];
  /** When the machine says the next step that is not started falls due. */
  private nextAt: number | null = null;
  /** Whether the inbox may hold entries not applied yet (set by notifications and poll timeouts). */
  private inboxDirty = true;
  /** The entries inbox notices carried since the inbox was last taken (`StoreNotification.entries`). */
  private carried: InboxItem[] = [];
  /**
   * Whether the inbox must be read to know what it holds: set by whatever makes it dirty except a
   * notice that carried its entry (a notice without one, a poll timeout, the drive's start).
   */
  private inboxUnread = true;
  private wakeUp: (() => void) | null = null;
  private commitChain: Promise<unknown> = Promise.resolve();
  /** Commits queued or running in the chain. */
  private commitsInFlight = 0;
  /**
   * Deltas published by running model steps and not committed yet: the next commit of the session
   * that starts takes them (before its own events), so deltas that arrive while a commit is in flight
   * ride with the next one instead of queueing a commit each.
   */
  private pendingDeltas: { readonly events: readonly EventBody[]; readonly signal: AbortSignal }[] = [];
  /** An events-only commit of the pending deltas is scheduled (after the current macrotask). */
  private flushScheduled = false;
  /** Set once a commit released the lease (`releaseWhenIdle`): the drive ends. */
  private released = false;
  /** The lease is still to be taken by the next commit (`DriveOptions.claim`). */
  private claimPending: boolean;
  /** While the drive waits under a kept lease (`lingerMs`): until when (this process's clock) it takes a new entry. */
  private lingerUntil: number | null = null;
  private lost = false;
  /**
   * A turn's start (`turnStartHoldMs`) or a model's result that starts only reads (`readToolHoldMs`)
   * not committed yet: the next commit of the drive takes it (its
   * head, if it brings none, its history before its own, its events first), or its timer sends it alone.
   */
  private held: {
    readonly head: SessionHead;
    readonly runnable: boolean;
    readonly appendHistory: readonly HistoryItem[];
    readonly events: readonly EventBody[];
    readonly timer: ReturnType<typeof setTimeout>;
  } | null = null;
  /**
   * This drive recovered a turn some worker had left running (a `session_recovered` event): it holds
   * no model result for reads (`readToolHoldMs`), so a read that kills its worker has its attempts
   * counted, and a crash loop ends within the call's attempts.
   */
  private recovered = false;
  /** The history in memory holds items of a held start that no commit stored yet. */
  private historyAhead = false;
  /** When the lease expires (epoch ms), as the last commit that extended it said. */
  private leaseExpiresAt: number;
  /** The first unexpected error of a launched step or a commit: the drive ends by throwing it. */
  private failure: { readonly error: unknown } | null = null;
  /** One signal per turn with steps in flight: aborted once the turn is cancelled or ended. */
  private readonly turnSignals = new TurnSignals();
  private readonly config: MachineConfig;
  private readonly store: SessionStore;
  private readonly definition: SessionDefinition;
  private readonly sessionId: string;

  constructor(private readonly options: DriveOptions) {
    this.store = options.store;
    this.definition = options.definition;
    this.sessionId = options.lease.sessionId;
    this.config = machineConfig(options.definition);
    this.claimPending = options.claim === true;
    this.leaseExpiresAt = options.lease.expiresAt;
    if (this.claimPending && options.leaseTtlMs === undefined) {
      throw new ConfigurationError("a drive that claims its lease needs leaseTtlMs");
    }
  }

  async run(): Promise<DriveEnd> {
    const stored = this.options.session ?? (await loadStoredSession(this.store, this.sessionId));
    if (!stored) return "missing";
    this.head = stored.head;
    this.version = stored.version;
    try {
      if (!(await this.takeDefinition())) return "unserved";
    } catch (error) {
      if (!MigrationError.isInstance(error) && this.isLostError(error)) return "lost";
      throw error;
    }
    const unsubscribe = this.store.subscribe((n) => {
      if (n.kind === "inbox" && n.sessionId === this.sessionId) {
        if (n.entries !== undefined && n.entries.length > 0) this.carried.push(...n.entries);
        else this.inboxUnread = true;
        this.inboxDirty = true;
        this.poke();
      }
    });
    const onAbort = () => this.poke();
    this.options.signal.addEventListener("abort", onAbort);
    this.options.lingerSignal?.addEventListener("abort", onAbort);
    try {
      const end = await this.loop();
      if (this.failure) throw this.failure.error;
      return end;
    } catch (error) {
      if (this.failure) throw this.failure.error;
      if (this.isLostError(error)) return "lost";
      throw error;
    } finally {
      unsubscribe();
      if (this.held) clearTimeout(this.held.timer);
      this.held = null;
      // A held start that no commit stored: the cached history must not keep its items.
      if (this.historyAhead) this.options.historyCache?.forget(this.sessionId);
      this.options.signal.removeEventListener("abort", onAbort);
      this.options.lingerSignal?.removeEventListener("abort", onAbort);
      if (this.lingerUntil !== null) this.options.onLinger?.(false);
    }
  }

  /** The pin's transition that goes into the drive's first commit (pinning the session, or ending its wait). */
  private pinned: DefinitionTransition | null = null;

  /**
   * Before anything runs: a session pinned to another definition is migrated (the migration's own
   * commit) or, without a migration, marked waiting (false: the drive ends); a session not pinned yet
   * is pinned to this definition, and a waiting one pinned to it runs again (both in the first commit).
   */
  private async takeDefinition(): Promise<boolean> {
    const own = this.definition.fingerprint;
    const pinned = this.head.definition?.fingerprint ?? null;
    if (pinned !== null && pinned !== own) {
      const migration = this.options.migration;
      if (migration?.from !== pinned) {
        const t = applyDefinition(this.head, { type: "wait", reason: "unserved" }, Date.now());
        if (t.changed) await this.commitDefinition(t);
        return false;
      }
      await this.migrate(migration);
    }
    const t = applyDefinition(
      this.head,
      { type: "pin", fingerprint: own, description: this.definition.description },
      Date.now(),
    );
    this.pinned = t.changed ? t : null;
    return true;
  }

  /** Applies a migration as a step of its own: its result is committed before anything runs on the new definition. */
  private async migrate(migration: DefinitionMigration): Promise<void> {
    const to = this.definition.fingerprint;
    const outcome = await runMigration(migration, {
      sessionId: this.sessionId,
      from: migration.from,
      to,
      head: this.head,
      history: () => this.loadHistory(),
    });
    const step = migrationTransition(
      this.head,
      migration,
      outcome,
      { to, description: this.definition.description },
      Date.now(),
    );
    if (!step.migrated) {
      if (step.wait.changed) await this.commitDefinition(step.wait);
      const cause = outcome.problem !== null ? outcome.cause : undefined;
      throw new MigrationError(
        this.sessionId,
        migration.from,
        to,
        step.reason,
        cause === undefined ? undefined : { cause },
      );
    }
    await this.commitDefinition(step.transition);
  }

  /** Commits a definition transition on its own, under the lease. */
  private async commitDefinition(t: DefinitionTransition): Promise<void> {
    await this.serialized(async () => {
      const result = await this.commit({
        sessionId: this.sessionId,
        fence: this.options.lease.fence,
        expectedVersion: this.version,
        head: t.head,
        runnable: isRunnable(t.head),
        appendHistory: t.appendHistory,
        events: t.events,
        ...this.extension(),
      });
      this.extended(result);
      this.version = result.version;
      this.history?.push(...t.appendHistory);
      this.head = t.head;
      this.options.headCache?.remember(this.sessionId, t.head, result.version);
    });
  }

  private isLostError(error: unknown): boolean {
    return (
      this.lost ||
      this.options.signal.aborted ||
      LeaseLostError.isInstance(error) ||
      VersionConflictError.isInstance(error)
    );
  }

  /** Recover, then: take finished steps and new inbox entries, apply and commit them, launch what the machine started, wait. */
  private async loop(): Promise<DriveEnd> {
    // The recovery goes into one transition with the inbox entries waiting: a cancellation accepted
    // while no worker ran is applied before anything the recovery made ready starts again.
    let recovery: MachineInput | null = { type: "recover", fence: this.options.lease.fence };
    // A history this worker's cache holds whole is taken before the first commit, so the items that
    // commit appends (the turn's user message) go into it and the model step reads nothing.
    this.history ??= this.options.historyCache?.whole(this.sessionId, this.head.historyLength) ?? null;
    for (;;) {
      if (this.options.signal.aborted || this.lost || this.failure) return "lost";
      const stopping = this.options.stopping();
      const inputs: MachineInput[] = recovery ? [recovery] : [];
      recovery = null;
      const deltas: EventBody[] = [];
      for (const done of this.completions.splice(0)) {
        this.running -= 1;
        if (!done) continue;
        inputs.push(done.input);
        if (!done.signal?.aborted) deltas.push(...done.events);
      }
      if (!stopping && this.inboxDirty) {
        this.inboxDirty = false;
        for (const item of await this.takeInbox()) {
          const userItem =
            item.kind === "message" || item.kind === "steer"
              ? this.definition.runner.userItem("message", item.text)
              : undefined;
          inputs.push({ type: "inbox", item, ...(userItem ? { userItem } : {}) });
        }
      }
      // A backoff ended: the machine starts what is due by now.
      if (inputs.length === 0 && !stopping && this.nextAt !== null && this.nextAt <= Date.now())
        inputs.push({ type: "tick" });
      if (inputs.length > 0) await this.advance(inputs, deltas, stopping);
      if (this.released) return "released";
      if (this.lingerUntil !== null) {
        // Idle under a kept lease: an inbox notification wakes the loop (it reads the inbox above, and
        // an entry's commit ends the wait); a read that found nothing waits on for the time left.
        const until = this.lingerUntil;
        const left = until - Date.now();
        if (left <= 0 || stopping || this.options.lingerSignal?.aborted) return "lapsed";
        // A timeout before the end reads the inbox again, in case a notification was lost.
        if (!this.inboxDirty && !(await this.sleep(Math.min(left, this.options.pollIntervalMs ?? 1000)))) {
          if (until > Date.now()) this.inboxMustBeRead();
        }
        continue;
      }
      if (this.running === 0) {
        if (stopping) return "stopped";
        if (this.nextAt === null) {
          // Nothing runs and nothing falls due; a message or decision that arrived meanwhile keeps us going.
          const inbox = await this.store.readInbox(this.sessionId, this.head.inboxCursor);
          if (inbox.length === 0) return "idle";
          this.inboxMustBeRead();
          continue;
        }
      }
      // While stopping the inbox is not read: a dirty inbox must not keep the loop from waiting.
      if (this.completions.length > 0 || (this.inboxDirty && !stopping)) continue;
      const untilDue = this.nextAt === null ? Infinity : this.nextAt - Date.now();
      // A backoff that ended while this iteration committed is taken now: sleeping until the poll would strand it.
      if (!stopping && untilDue <= 0) continue;
      const timeout = Math.min(this.options.pollIntervalMs ?? 1000, untilDue > 0 ? untilDue : Infinity);
      // Woken by a finished step or an inbox notification; a timeout re-reads the inbox in case one was lost.
      if (!(await this.sleep(timeout))) this.inboxMustBeRead();
    }
  }

  /** The inbox may hold entries no notice brought: the loop reads it. */
  private inboxMustBeRead(): void {
    this.inboxDirty = true;
    this.inboxUnread = true;
  }

  /**
   * The inbox entries past the cursor. The ones notices carried, when they continue the cursor with
   * no gap and nothing else made the inbox dirty: each notice's entry was written after every entry
   * before it, so they are what a read would have answered when the last of them was written (and
   * none past the cursor means a read since took them all). Else the inbox is read.
   */
  private async takeInbox(): Promise<readonly InboxItem[]> {
    const carried = this.carried;
    const unread = this.inboxUnread;
    this.carried = [];
    this.inboxUnread = false;
    const cursor = this.head.inboxCursor;
    if (!unread) {
      const next = carried.filter((item) => item.seq > cursor).sort((a, b) => a.seq - b.seq);
      if (next.every((item, k) => item.seq === cursor + 1 + k)) return next;
    }
    return this.store.readInbox(this.sessionId, cursor);
  }

  /**
   * Applies the inputs as one transition and commits it (with the deltas buffered by finished
   * steps before its events) unless nothing changed; then launches the steps it started, whose
   * start is now durable. While stopping, the machine starts nothing.
   */
  private async advance(
    inputs: readonly MachineInput[],
    deltas: readonly EventBody[],
    stopping: boolean,
  ): Promise<void> {
    // The pin's transition (first commit only) goes before the session's own.
    const pin = this.pinned;
    this.pinned = null;
    const t = applyAll(pin?.head ?? this.head, inputs, { config: this.config, now: Date.now(), startSteps: !stopping });
    if (t.events.some((event) => event.type === "session_recovered")) this.recovered = true;
    // The commit that leaves nothing running and nothing due ends the drive: it releases the lease
    // too, unless a notification says the inbox may hold more (then the loop reads it first).
    const release =
      this.options.releaseWhenIdle === true &&
      !stopping &&
      t.due.steps.length === 0 &&
      t.due.nextAt === null &&
      this.running === 0 &&
      this.completions.length === 0 &&
      !this.inboxDirty;
    // Or keeps it for a while, for the session's next entry (`lingerMs`).
    const lingerMs = this.options.lingerMs ?? 0;
    const linger = release && lingerMs > 0 && this.options.lingerSignal?.aborted !== true;
    if (this.mayHold(t, inputs, pin !== null || deltas.length > 0)) {
      this.hold(t, this.options.turnStartHoldMs!);
    } else if (this.mayHoldForReads(t, inputs, pin !== null || deltas.length > 0)) {
      this.hold(t, this.options.readToolHoldMs!);
    } else if (t.changed || deltas.length > 0 || pin || this.pendingDeltas.length > 0) {
      await this.serialized(async () => {
        const result = await this.commit({
          sessionId: this.sessionId,
          fence: this.options.lease.fence,
          expectedVersion: this.version,
          head: t.head,
          runnable: isRunnable(t.head),
          appendHistory: t.appendHistory,
          events: [...this.takeDeltas(), ...deltas, ...(pin?.events ?? []), ...t.events],
          ...(linger ? { leaseTtlMs: lingerMs } : release ? { release: true } : this.extension()),
        });
        if (result.released === true) this.released = true;
        else this.extended(result);
        this.lingering(linger && result.leaseExpiresAt !== undefined ? Date.now() + (lingerMs * 3) / 4 : null);
        this.version = result.version;
        this.history?.push(...t.appendHistory);
        this.options.headCache?.remember(this.sessionId, t.head, result.version);
        // In the same serialized task as the commit: a delta commit queued behind it sees the abort.
        this.head = t.head;
        this.turnSignals.abortEnded(this.head);
      });
    }
    this.head = t.head;
    this.nextAt = t.due.nextAt;
    this.turnSignals.abortEnded(this.head);
    for (const step of t.due.steps) {
      if (step.kind === "RunModel") this.launchModel(step);
      else if (step.kind === "ReconcileCall") this.launchReconcile(step);
      else this.launchTool(step);
    }
  }

  /**
   * Whether the transition's commit may wait for the turn's next one (`turnStartHoldMs`): it applies
   * inbox entries and nothing else (no step's result, no recovery of a running turn: a crash loses
   * only what the inbox still holds), starts a turn and launches nothing but its first model call,
   * under a lease the drive holds (not a claim) with time to spare, nothing else of the drive is
   * waiting to be committed, and the history is in memory (the model call reads it, the held user
   * item included, without the store).
   */
  private mayHold(
    t: { head: SessionHead; due: { steps: readonly DueStep[] } },
    inputs: readonly MachineInput[],
    more: boolean,
  ): boolean {
    const holdMs = this.options.turnStartHoldMs ?? 0;
    const step = t.due.steps.length === 1 ? t.due.steps[0]! : null;
    return (
      holdMs > 0 &&
      !more &&
      // A recovery of a session with no turn running changes nothing (a drive under a lease kept after
      // an earlier drive of this worker ended starts with one).
      inputs.every((input) => input.type === "inbox" || (input.type === "recover" && !isTurnActive(this.head.turn))) &&
      step?.kind === "RunModel" &&
      step.modelStep === 1 &&
      step.attempt === 1 &&
      step.turnId !== this.head.turn?.turnId &&
      this.history !== null &&
      this.free(holdMs)
    );
  }

  /**
   * What every hold needs of the drive: a lease it holds (not a claim) with time to spare past the
   * hold, nothing held already, and nothing else waiting to be committed.
   */
  private free(holdMs: number): boolean {
    return (
      !this.claimPending &&
      this.held === null &&
      this.commitsInFlight === 0 &&
      this.pendingDeltas.length === 0 &&
      this.leaseExpiresAt - Date.now() > holdMs + HOLD_LEASE_MARGIN_MS
    );
  }

  /**
   * Whether the transition's commit may wait for the turn's next one (`readToolHoldMs`): it applies a
   * model step's result and nothing else, appends no history, asks no person, and launches only the
   * first attempts of `read` calls; under a lease the drive holds (not a claim) with time to spare,
   * with nothing else of the drive waiting to be committed, in a drive that recovered no turn.
   */
  private mayHoldForReads(
    t: { head: SessionHead; appendHistory: readonly HistoryItem[]; due: { steps: readonly DueStep[] } },
    inputs: readonly MachineInput[],
    more: boolean,
  ): boolean {
    const holdMs = this.options.readToolHoldMs ?? 0;
    const turn = t.head.turn;
    return (
      holdMs > 0 &&
      !more &&
      !this.recovered &&
      inputs.length === 1 &&
      inputs[0]!.type === "model_completed" &&
      t.appendHistory.length === 0 &&
      t.head.pendingInterrupts.length === this.head.pendingInterrupts.length &&
      turn !== null &&
      t.due.steps.length > 0 &&
      t.due.steps.every((step) => {
        if (step.kind !== "CallTool" || step.attempt !== 1 || step.turnId !== turn.turnId) return false;
        const call = currentCalls(turn).find((c) => c.toolCallId === step.toolCallId);
        return call !== undefined && call.effect === "read" && !call.needsApproval;
      }) &&
      this.free(holdMs)
    );
  }

  /**
   * Keeps the transition (a turn's start, or a model's result that starts only reads) for the drive's
   * next commit; its timer sends it alone once `holdMs` passed.
   */
  private hold(
    t: { head: SessionHead; appendHistory: readonly HistoryItem[]; events: readonly EventBody[] },
    holdMs: number,
  ): void {
    const timer = setTimeout(() => this.flushPending(), holdMs);
    this.held = {
      head: t.head,
      runnable: isRunnable(t.head),
      appendHistory: t.appendHistory,
      events: withOccurredAt(t.events, new Date().toISOString()),
      timer,
    };
    if (t.appendHistory.length > 0) {
      this.history!.push(...t.appendHistory);
      this.historyAhead = true;
    }
    // A turn started under a kept lease ends the wait, as its commit would.
    this.lingering(null);
  }

  /** The signal of a step of this turn: aborted when the turn is cancelled or ended, or the lease is lost. */
  private stepSignal(turnId: string): AbortSignal {
    return this.turnSignals.signalFor(this.head, turnId, this.options.signal);
  }

  private poke(): void {
    const wake = this.wakeUp;
    this.wakeUp = null;
    wake?.();
  }

  /** Resolves true when poked, false when `ms` passed. */
  private sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish(false), ms);
      const self = this;
      function poked() {
        finish(true);
      }
      function finish(woken: boolean) {
        clearTimeout(timer);
        if (self.wakeUp === poked) self.wakeUp = null;
        resolve(woken);
      }
      this.wakeUp = poked;
    });
  }

  /**
   * Takes streamed deltas of a step over: committed at once when no commit of the session is in
   * flight, else with the next commit that starts (an events-only one once the commit in flight is
   * done, or the step's own result). Deltas of a step whose signal was aborted by then are dropped.
   */
  private async commitEvents(events: EventBody[], signal: AbortSignal): Promise<void> {
    if (this.lost || this.options.signal.aborted || signal.aborted) return;
    this.pendingDeltas.push({ events, signal });
    // Committed after the current macrotask, not at once: a model step whose last output these
    // deltas were ends in the same one, and its result's commit takes them (one commit, not two).
    // A stream that goes on (its next chunk comes from I/O) is committed batch by batch, as before.
    if (this.commitsInFlight === 0 && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        if (this.commitsInFlight === 0 && this.pendingDeltas.length > 0 && !this.lost && !this.released)
          this.flushPending();
      });
    }
  }

  /** The pending deltas of steps whose signal is not aborted, in the order they were published; the rest is dropped. */
  private takeDeltas(): EventBody[] {
    const taken: EventBody[] = [];
    for (const pending of this.pendingDeltas.splice(0)) if (!pending.signal.aborted) taken.push(...pending.events);
    return taken;
  }

  /**
   * A commit of what waits: the pending deltas and a held turn start (which `commit` adds); none when
   * another commit took them first.
   */
  private flushPending(): void {
    void this.serialized(async () => {
      const events = this.takeDeltas();
      if (events.length === 0 && !this.held) return;
      this.extended(
        await this.commit({
          sessionId: this.sessionId,
          fence: this.options.lease.fence,
          expectedVersion: this.version,
          events,
          ...this.extension(),
        }),
      );
    }).catch(() => undefined); // the chain records a lost lease or a failure
  }

  /**
   * Commits, taking the lease in the commit while the drive's claim is pending (a released lease is
   * taken and released), and a held turn start with it: its head when the commit brings none, its
   * history before the commit's, its events first.
   */
  private async commit(commit: Commit): Promise<CommitResult> {
    const held = this.held;
    const eventsOnly = commit.head === undefined;
    if (held) {
      clearTimeout(held.timer);
      this.held = null;
      commit = {
        ...commit,
        head: commit.head ?? held.head,
        runnable: commit.head ? commit.runnable : held.runnable,
        appendHistory: [...held.appendHistory, ...(commit.appendHistory ?? [])],
        events: [...held.events, ...commit.events],
      };
    }
    let result: CommitResult;
    if (!this.claimPending) result = await this.store.commit(commit);
    else {
      result = await this.store.commit({
        ...commit,
        claim: { workerId: this.options.lease.workerId },
        leaseTtlMs: commit.leaseTtlMs ?? this.options.leaseTtlMs!,
      });
      this.claimPending = false;
    }
    if (held) {
      this.historyAhead = false;
      // A commit of events only that took the held start stored its head: the version moved.
      if (eventsOnly) {
        this.version = result.version;
        this.options.headCache?.remember(this.sessionId, held.head, result.version);
      }
    }
    return result;
  }

  /** Starts (a time) or ends (null) the wait under a kept lease, telling the caller when that changes. */
  private lingering(until: number | null): void {
    const was = this.lingerUntil !== null;
    this.lingerUntil = until;
    if (was !== (until !== null)) this.options.onLinger?.(until !== null);
  }

  /** The commit's lease extension (`leaseTtlMs`), if the caller asked for one. */
  private extension(): { leaseTtlMs?: number } {
    return this.options.leaseTtlMs === undefined ? {} : { leaseTtlMs: this.options.leaseTtlMs };
  }

  /** Tells the caller the lease's new expiry when the store extended it. */
  private extended(result: CommitResult): void {
    if (result.leaseExpiresAt === undefined) return;
    this.leaseExpiresAt = result.leaseExpiresAt;
    this.options.onLeaseExtended?.(result.leaseExpiresAt);
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    this.commitsInFlight += 1;
    const run = this.commitChain.then(() => {
      if (this.lost || this.options.signal.aborted) throw new LeaseLostError(this.sessionId, this.options.lease.fence);
      return fn();
    });
    this.commitChain = run
      .catch((error) => {
        if (this.isLostError(error)) this.lost = true;
        else this.fail(error);
      })
      .finally(() => {
        this.commitsInFlight -= 1;
        // Deltas that came while this commit was in flight and that no commit took yet.
        if (this.commitsInFlight === 0 && this.pendingDeltas.length > 0 && !this.lost && !this.released)
          this.flushPending();
      });
    return run;
  }

  private track(task: Promise<NonNullable<Completion>>): void {
    this.running += 1;
    void task
      .then((done) => {
        this.completions.push(done);
      })
      .catch((error) => {
        if (this.isLostError(error)) this.lost = true;
        else this.fail(error);
        this.completions.push(null);
      })
      .finally(() => this.poke());
  }

  /** Records the first unexpected error; the loop stops and the drive throws it. */
  private fail(error: unknown): void {
    this.failure ??= { error };
    this.poke();
  }

  /**
   * The session's history, read once per drive. A commit of this drive appends its items to the
   * history in memory when it answers, and finds none while the first read is in flight: so the read
   * takes the items the head counted when it began (not what a commit stored since: the commit's
   * answer appends those), and reads again when a commit answered meanwhile.
   */
  private async loadHistory(): Promise<HistoryItem[]> {
    const cache = this.options.historyCache ?? new HistoryCache();
    while (this.history === null) {
      const asked = this.head.historyLength;
      const loaded = await cache.load(this.store, this.sessionId, asked);
      if (this.history !== null) break;
      // A commit answered while the read was in flight: read again for the items it appended.
      if (loaded.length === asked && asked < this.head.historyLength) continue;
      this.history = loaded;
    }
    return this.history;
  }

  private launchModel(step: Extract<DueStep, { kind: "RunModel" }>): void {
    const head = this.head;
    const signal = this.stepSignal(step.turnId);
    const task = (async () => {
      const history = await this.loadHistory();
      // The history in memory and the head always move together (a commit's answer, a held start): a
      // history of another length is a bug, and the model must not read it as the session's. The
      // drive fails (its session is driven again once the lease expires, with the history read anew).
      if (history.length !== this.head.historyLength) {
        this.options.historyCache?.forget(this.sessionId);
        throw new ContractViolationError(
          "engine",
          `the history in memory of session "${this.sessionId}" holds ${history.length} items, its head counts ${this.head.historyLength}`,
        );
      }
      // Deltas of a step whose turn was cancelled are dropped: its answer is discarded; deltas still
      // buffered at its end go into the same commit as its result.
      const { input, events } = await runModelAttempt(this.definition.runner, {
        head,
        step,
        history,
        signal,
        publish: (events) => this.commitEvents(events, signal),
        ...(this.options.coalescing ? { coalescing: this.options.coalescing } : {}),
      });
      return { input, events, signal };
    })();
    this.track(task);
  }

  /** Runs one attempt of a check of a call in doubt (never the tool); its start was just committed. */
  private launchReconcile(step: Extract<DueStep, { kind: "ReconcileCall" }>): void {
    const { turnId, toolCallId, attempt } = step;
    const call = currentCalls(this.head.turn!).find((c) => c.toolCallId === toolCallId)!;
    const task = (async () => {
      const input = await runReconcileAttempt(this.definition, {
        sessionId: this.sessionId,
        turnId,
        call,
        attempt,
        signal: this.options.signal,
      });
      return { input, events: [] };
    })();
    this.track(task);
  }

  /** Runs one attempt of a tool call; the machine started it and its start was just committed. */
  private launchTool(step: Extract<DueStep, { kind: "CallTool" | "CallSingleAttemptTool" }>): void {
    const { turnId, toolCallId, attempt } = step;
    const call = currentCalls(this.head.turn!).find((c) => c.toolCallId === toolCallId)!;
    const signal = this.stepSignal(turnId);
    const task = (async () => {
      const input = await runToolAttempt(this.definition.runner, {
        sessionId: this.sessionId,
        turnId,
        call,
        attempt,
        signal,
      });
      return { input, events: [] };
    })();
    this.track(task);
  }
}

/**
 * The events of a held transition, those that time a turn or a step stamped with when they happened:
 * they are stored with the next commit, whose time a UI would otherwise take for theirs.
 */
function withOccurredAt(events: readonly EventBody[], occurredAt: string): EventBody[] {
  return events.map((event) =>
    event.type === "turn_started" || event.type === "step_started" || event.type === "step_completed"
      ? ({ ...event, data: { ...event.data, occurredAt } } as EventBody)
      : event,
  );
}
