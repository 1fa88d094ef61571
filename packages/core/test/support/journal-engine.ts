/**
 * A second engine over core's state machine, written only for tests: it proves the session rules
 * live in the machine, not in core's driver. It runs like a durable execution engine would (think
 * Restate: one handler per session, `ctx.run` per step): it applies ONE input at a time and
 * journals each transition as its own commit, runs each step the machine started as a separate
 * task, and feeds the step's result back as the next input. It has no `Worker`, no batching, no
 * delta coalescing, no history cache and no rules of its own: readiness, in-flight steps, retries,
 * backoff, recovery and the durable start of single-attempt calls all come from `apply`.
 *
 * Every session's journal (the head it started from, then each input with its `now`) is kept, so a
 * test can replay it through `apply` and compare with what the store holds.
 */
import {
  LeaseLostError,
  parseSessionHead,
  VersionConflictError,
  type SessionDefinition,
  type SessionHead,
  type SessionStore,
} from "../../src/index.js";
import {
  apply,
  currentCalls,
  isRunnable,
  machineConfig,
  joinedMessages,
  outcomesForNextModelStep,
  modelAttemptFailed,
  runReconcileAttempt,
  runToolAttempt,
  TurnSignals,
  type DueStep,
  type Lease,
  type MachineInput,
} from "../../src/engine.js";
import type { ConformanceWorker, ConformanceWorkerOptions } from "../../src/conformance/index.js";

export interface JournalEntry {
  readonly input: MachineInput;
  readonly now: number;
  readonly startSteps: boolean;
}

export interface Journal {
  /** The head as the first drive loaded it. */
  readonly from: SessionHead;
  readonly entries: JournalEntry[];
}

export class JournalEngine implements ConformanceWorker {
  drives = 0;
  readonly journals = new Map<string, Journal>();
  private readonly store: SessionStore;
  private readonly definition: SessionDefinition;
  private readonly workerId = `journal-${Math.random().toString(36).slice(2)}`;
  private stopping = false;
  private dead = false;
  private readonly active = new Set<Promise<void>>();
  private readonly aborts = new Set<AbortController>();
  private loop: Promise<void> | null = null;
  private readonly waiters = new Set<() => void>();
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly options: ConformanceWorkerOptions) {
    this.store = options.store;
    this.definition = options.definition;
  }

  start(): this {
    this.unsubscribe = this.store.subscribe(() => this.poke());
    this.loop = this.run();
    return this;
  }

  async stop(options: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping = true;
    this.poke();
    await Promise.race([
      Promise.all(this.active),
      new Promise((resolve) => setTimeout(resolve, options.timeoutMs ?? 30_000)),
    ]);
    for (const abort of this.aborts) abort.abort();
    await this.loop;
    this.unsubscribe?.();
  }

  crash(): void {
    this.dead = true;
    this.stopping = true;
    for (const abort of this.aborts) abort.abort();
    this.unsubscribe?.();
    this.poke();
  }

  /** Wakes every nap: the lease loop's and each drive's. */
  private poke(): void {
    for (const wake of [...this.waiters]) wake();
  }

  private nap(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      const lease =
        this.active.size < this.options.concurrency
          ? await this.store.acquireLease({
              workerId: this.workerId,
              ttlMs: this.options.leaseTtlMs,
              agents: [this.definition.name],
            })
          : null;
      if (this.stopping) {
        if (lease && !this.dead) await this.store.releaseLease(lease);
        break;
      }
      if (!lease) {
        await this.nap(this.options.pollIntervalMs);
        continue;
      }
      const drive: Promise<void> = this.drive(lease)
        .catch(() => {})
        .finally(() => {
          this.drives += 1;
          this.active.delete(drive);
          this.poke();
        });
      this.active.add(drive);
    }
  }

  /** One session under one lease: recover, then one input at a time until nothing runs or falls due. */
  private async drive(lease: Lease): Promise<void> {
    const abort = new AbortController();
    this.aborts.add(abort);
    let current = lease;
    const renew = setInterval(
      async () => {
        if (this.dead) return;
        const renewed = await this.store.renewLease(current, this.options.leaseTtlMs).catch(() => null);
        if (renewed) current = renewed;
        else abort.abort();
      },
      Math.max(10, Math.floor(this.options.leaseTtlMs / 3)),
    );
    try {
      const stored = await this.store.loadSession(lease.sessionId);
      if (!stored) return;
      let head = parseSessionHead(stored.head);
      let version = stored.version;
      const journal = this.journals.get(lease.sessionId) ?? { from: head, entries: [] };
      this.journals.set(lease.sessionId, journal);
      const config = machineConfig(this.definition);
      const inputs: MachineInput[] = [{ type: "recover", fence: lease.fence }];
      let running = 0;
      let nextAt: number | null = null;
      // Each turn's steps share a signal, aborted once the turn is no longer running its model or tools.
      const turnSignals = new TurnSignals();
      const launch = (step: DueStep, at: SessionHead) => {
        running += 1;
        const signal = turnSignals.signalFor(at, step.turnId, abort.signal);
        void this.runStep(step, at, signal, abort.signal).then((input) => {
          running -= 1;
          inputs.push(input);
          this.poke();
        });
      };
      for (;;) {
        if (this.dead || abort.signal.aborted) return;
        const stopping = this.stopping;
        // The inbox is read when nothing else is queued, and along with the recovery (so that a
        // cancellation accepted while no engine ran is applied before the recovery's steps start).
        if ((inputs.length === 0 || (inputs.length === 1 && inputs[0]!.type === "recover")) && !stopping) {
          for (const item of await this.store.readInbox(lease.sessionId, head.inboxCursor)) {
            inputs.push(
              item.kind === "message" || item.kind === "steer"
                ? { type: "inbox", item, userItem: this.definition.runner.userItem("message", item.text) }
                : { type: "inbox", item },
            );
          }
        }
        if (inputs.length === 0 && !stopping && nextAt !== null && nextAt <= Date.now()) inputs.push({ type: "tick" });
        const input = inputs.shift();
        if (input) {
          // Steps start once no input that arrived with this one is left to apply (as in `applyAll`).
          const entry = {
            input,
            now: Date.now(),
            startSteps: !stopping && (inputs.length === 0 || input.type !== "recover"),
          };
          const t = apply(head, input, { config, now: entry.now, startSteps: entry.startSteps });
          if (t.changed) {
            if (this.dead) return;
            const result = await this.store.commit({
              sessionId: lease.sessionId,
              fence: lease.fence,
              expectedVersion: version,
              head: t.head,
              runnable: isRunnable(t.head),
              appendHistory: t.appendHistory,
              events: t.events,
            });
            version = result.version;
          }
          journal.entries.push(entry);
          head = t.head;
          nextAt = t.due.nextAt;
          turnSignals.abortEnded(head);
          for (const step of t.due.steps) launch(step, head);
          continue;
        }
        if (running === 0 && (stopping || nextAt === null)) {
          if (!this.dead) await this.store.releaseLease(current);
          return;
        }
        await this.nap(
          nextAt === null
            ? this.options.pollIntervalMs
            : Math.max(1, Math.min(this.options.pollIntervalMs, nextAt - Date.now())),
        );
      }
    } catch (error) {
      // A refused commit: the lease is someone else's now.
      if (!LeaseLostError.isInstance(error) && !VersionConflictError.isInstance(error)) throw error;
    } finally {
      clearInterval(renew);
      this.aborts.delete(abort);
    }
  }

  /** The primitive that runs one step (`ctx.run`): the runner's call, its result as the machine's next input. */
  private async runStep(
    step: DueStep,
    head: SessionHead,
    signal: AbortSignal,
    engineSignal: AbortSignal,
  ): Promise<MachineInput> {
    const turn = head.turn!;
    const sessionId = head.sessionId;
    if (step.kind === "RunModel") {
      const base = { turnId: step.turnId, modelStep: step.modelStep, attempt: step.attempt };
      try {
        const history = await this.store.readHistory(sessionId);
        const result = await this.definition.runner.runModel({
          sessionId,
          turnId: step.turnId,
          modelStep: step.modelStep,
          history,
          turnStart: turn.historyStart,
          runState: turn.runState,
          outcomes: outcomesForNextModelStep(head),
          joined: joinedMessages(head, history),
          signal,
          emit: () => {},
        });
        return { type: "model_completed", ...base, result };
      } catch (error) {
        return modelAttemptFailed(base, error);
      }
    }
    const call = currentCalls(turn).find((c) => c.toolCallId === step.toolCallId)!;
    if (step.kind === "ReconcileCall") {
      // A check runs with the engine's signal, not the turn's: a cancellation does not stop it.
      return runReconcileAttempt(this.definition, {
        sessionId,
        turnId: step.turnId,
        call,
        attempt: step.attempt,
        signal: engineSignal,
      });
    }
    return runToolAttempt(this.definition.runner, {
      sessionId,
      turnId: step.turnId,
      call,
      attempt: step.attempt,
      signal,
    });
  }
}
