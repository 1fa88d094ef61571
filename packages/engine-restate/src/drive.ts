/**
 * A session's drive: the session object's exclusive `drive` handler, which runs the session's steps
 * with core's state machine. Restate runs one invocation of it per session at a time, so at most
 * one engine advances a session (no leases, no fencing of our own).
 *
 * A drive starts from the head in the object's state and the inbox entries it was handed (its
 * parameter), then over and over: applies what arrived (`applyAll`), writes the transition into the
 * object's state (head, new history items, new events: journal entries that need no round trip),
 * launches the steps the machine started, each in its own
 * `ctx.run` (the calls of one response run concurrently), and waits for the first of: a step's
 * result, a batch of text deltas of a streaming model step (an awakeable the step resolves through
 * the ingress), the next inbox entry (a named signal the inbox object sends to the drives that may
 * be running, `inbox:<seq>`: no registration, so no invocation), or the time the machine names (a
 * durable timer). It ends once nothing runs and nothing falls due: a session waiting for a person
 * holds no invocation; the next inbox entry sends a new drive. (A signal sent to a drive still
 * waiting for the object's lock is lost: the inbox object signals again what a drive left
 * unapplied when it ends.)
 *
 * The clock of a transition is journaled with what triggered it: a step's result carries the time
 * it ended; a drive's start, an entry's signal and a timer read a journaled clock.
 *
 * Crashes: Restate replays the drive's journal, so every transition and every step result already
 * journaled comes back as it was, in the same order (the machine is pure and its clock journaled).
 * A step found without a result in the journal was started by an attempt that died; its closure
 * tells from a liveness flag whether the entry that started it was replayed:
 * - a single-attempt call journals its own "started" mark before the tool runs: a replayed mark
 *   means the tool may have run, so the attempt is reported failed (`outcome_unknown`) and the tool
 *   never runs again;
 * - a read, an idempotent write or a model call is started by the entry that triggered its
 *   transition (a step's result, or the clock read after a drive's start, an entry's signal or a timer):
 *   when that was replayed, the attempt is reported failed and the machine runs another one (a read
 *   runs again, an idempotent write with the same key, a model call counts an attempt), so a crash
 *   never resets an attempt count.
 */
import * as restate from "@restatedev/restate-sdk";
import {
  type DefinitionMigration,
  type EventBody,
  type InboxItem,
  type SessionEvent,
  parseSessionHead,
  type SessionDefinition,
  type SessionHead,
} from "@durable-agents/core";
import {
  applyAll,
  applyDefinition,
  type DefinitionTransition,
  type CoalescerOptions,
  currentCalls,
  type DueStep,
  isTurnActive,
  type MachineConfig,
  type MachineInput,
  type MigrationOutcome,
  machineConfig,
  migrationTransition,
  runMigration,
  type Transition,
  TurnSignals,
} from "@durable-agents/core/engine";
import type { SessionHistories } from "./histories.js";
import { entrySignal, type ServiceNames } from "./names.js";
import type { DeltaBatch, DriveRequest, EndedRequest, SessionMeta, Wake } from "./protocol.js";
import { localListeners, publishLocalMove } from "./local-moves.js";
import { readState, type StoredEvent, type StoredHead, tailLimit, writeStored } from "./session-object.js";
import {
  DeltaMailbox,
  interruptedStep,
  runModelStep,
  runReconcileStep,
  runToolStep,
  type StepDeps,
  type StepDone,
  unwrittenDeltas,
} from "./steps.js";

export interface DriveOptions {
  readonly names: ServiceNames;
  readonly definitions: ReadonlyMap<string, SessionDefinition>;
  readonly histories: SessionHistories;
  /** Resolves an awakeable through the ingress (a streaming model step hands its deltas to the drive). */
  readonly resolveAwakeable: StepDeps["resolveAwakeable"];
  readonly coalescing?: CoalescerOptions;
  /**
   * After this many transitions, a drive with nothing in flight hands the session to a new drive
   * (a one-way send to itself), so that no journal grows without bound (default 200).
   */
  readonly transitionsPerDrive?: number;
  /** Called when a drive attempt ends, however it ended (tests count drives). */
  readonly onDriveEnd?: () => void;
  /** Restate's timeouts and retry policy for the drives (see `RestateSessionsOptions.engineOptions`). */
  readonly serviceOptions?: EngineServiceOptions;
}

/**
 * Restate's settings for the drive handler. A step that runs longer than `inactivityTimeout` plus
 * `abortTimeout` (1 + 10 minutes by default) has its attempt aborted by Restate and is then treated
 * as interrupted: raise both for tools or model calls that take longer.
 */
export type EngineServiceOptions = Pick<
  restate.ObjectOptions,
  "inactivityTimeout" | "abortTimeout" | "retryPolicy" | "journalRetention"
>;

type Done =
  | { readonly kind: "step"; readonly key: string; readonly done: StepDone; readonly live: boolean }
  | { readonly kind: "delta"; readonly key: string; readonly batch: DeltaBatch }
  | { readonly kind: "wake"; readonly wake: Wake }
  | { readonly kind: "timer" };

const stepKey = (step: DueStep) =>
  `${step.turnId}/${
    step.kind === "RunModel"
      ? `model:${step.modelStep}`
      : step.kind === "ReconcileCall"
        ? `reconcile:${step.toolCallId}`
        : `tool:${step.toolCallId}`
  }/${step.attempt}`;

const iso = (ms: number) => new Date(ms).toISOString();

const configs = new WeakMap<SessionDefinition, MachineConfig>();
const configOf = (definition: SessionDefinition) => {
  const config = configs.get(definition) ?? machineConfig(definition);
  configs.set(definition, config);
  return config;
};

/** The `drive` handler's body. */
export async function driveSession(
  ctx: restate.ObjectContext,
  options: DriveOptions,
  request: DriveRequest | null,
): Promise<void> {
  let attached = false;
  const detach = () => {
    if (!attached) return;
    attached = false;
    publishLocalMove(options.names.session, { kind: "detached", sessionId: ctx.key });
  };
  try {
    const { meta, head: stored, tail } = await readState(ctx);
    if (!meta || !stored) return;
    let head: SessionHead;
    try {
      head = parseSessionHead(stored);
    } catch (error) {
      throw new restate.TerminalError(`session "${ctx.key}": ${(error as Error).message}`);
    }
    const definition = options.definitions.get(head.agent);
    if (!definition) {
      ctx.console.error(`session "${ctx.key}" is of agent "${head.agent}", which this endpoint does not serve`);
      return;
    }
    const drive = new Drive(ctx, options, definition, head, meta, tail);
    attached = true;
    publishLocalMove(options.names.session, { kind: "attached", sessionId: ctx.key });
    // An attempt Restate ends (a lost connection, a timeout) may never return here.
    ctx.request().attemptCompletedSignal.addEventListener("abort", detach, { once: true });
    await drive.run(request?.entries ?? [], request?.handover === true);
  } finally {
    detach();
    options.onDriveEnd?.();
  }
}

class Drive {
  private readonly sessionId: string;
  private readonly config: MachineConfig;
  private now = 0;
  private nextAt: number | null = null;
  private readonly pending = new Map<string, restate.RestatePromise<Done>>();
  /**
   * The delta awakeable of each model step in flight, the mailbox its closure takes the ID from,
   * and how many of the events it streams were written.
   */
  private readonly deltas = new Map<
    string,
    { promise: restate.RestatePromise<Done>; mailbox: DeltaMailbox; written: number }
  >();
  /** The signal of the next inbox entry, while not received. */
  private wake: { readonly seq: number; readonly promise: restate.RestatePromise<Done> } | null = null;
  private timer: { readonly at: number; readonly promise: restate.RestatePromise<Done> } | null = null;
  private readonly turnSignals = new TurnSignals();
  /** The events written since the meta was last written (told to this process's stores with it). */
  private readonly written: SessionEvent[] = [];
  private readonly deps: StepDeps;
  private transitions = 0;

  constructor(
    private readonly ctx: restate.ObjectContext,
    private readonly options: DriveOptions,
    private readonly definition: SessionDefinition,
    private head: SessionHead,
    private meta: SessionMeta,
    /** The events in the head's tail (after the last `e:` entry), as last written. */
    private tail: readonly StoredEvent[],
  ) {
    this.sessionId = ctx.key;
    this.config = configOf(definition);
    this.deps = {
      definition,
      histories: options.histories,
      resolveAwakeable: options.resolveAwakeable,
      ...(options.coalescing ? { coalescing: options.coalescing } : {}),
    };
  }

  async run(handed: readonly InboxItem[], handover: boolean): Promise<void> {
    const entries = await this.connect(handed);
    // A drive that finds steps started in the head took over from a drive that was killed (not
    // replayed): the machine's recovery rules apply.
    const recovering = hasStartedSteps(this.head);
    // Sent for an entry a drive before it applied: nothing to do, unless a turn waits (a decision may be due).
    if (entries.length === 0 && !handover && !recovering && !isTurnActive(this.head.turn)) return this.end();
    const inputs: MachineInput[] = [];
    if (recovering) inputs.push({ type: "recover", fence: this.meta.version });
    inputs.push(...this.inboxInputs(entries));
    // Entries signalled before the drive's clock read comes back (sent before it started, or a moment
    // after) are applied with those it was handed, in one transition, as a worker applies what it
    // finds in the inbox together.
    const read = this.clockRead();
    const clock = read.at.map((at): Done | { readonly kind: "clock"; readonly at: number } => ({
      kind: "clock",
      at: at ?? 0,
    }));
    this.wake = this.nextEntry((entries.at(-1)?.seq ?? this.head.inboxCursor) + 1);
    for (;;) {
      const first = await restate.RestatePromise.race([clock, this.wake.promise]);
      if (first.kind === "clock") {
        this.now = Math.max(this.now, first.at);
        break;
      }
      const seq = this.wake.seq;
      const item = first.kind === "wake" ? first.wake.entries.find((entry) => entry.seq === seq) : undefined;
      // A signal without its entry (not the inbox object's) is ignored: wait for the next one of that name.
      this.wake = this.nextEntry(item ? seq + 1 : seq);
      if (item) inputs.push(...this.inboxInputs([item]));
    }
    inputs.push({ type: "tick" });
    let live = read.ran.live;
    if (!(await this.takeDefinition())) return this.end();
    let deltas: readonly EventBody[] = [];
    const limit = this.options.transitionsPerDrive ?? 200;
    for (;;) {
      if (inputs.length > 0) {
        await this.advance(inputs.splice(0), deltas, live);
        deltas = [];
      }
      if (this.pending.size === 0) {
        if (this.nextAt === null) return this.end();
        if (this.transitions >= limit) {
          // Hand over to a fresh drive with a short journal; it starts with a tick.
          const next = this.ctx.genericSend({
            service: this.options.names.session,
            method: "drive",
            key: this.sessionId,
            parameter: { entries: [], handover: true } satisfies DriveRequest,
            inputSerde: restate.serde.json,
          });
          return this.end(await next.invocationId);
        }
      }
      if (this.wake?.seq !== this.head.inboxCursor + 1) this.wake = this.nextEntry(this.head.inboxCursor + 1);
      const waits = [...this.pending.values(), ...[...this.deltas.values()].map((d) => d.promise), this.wake.promise];
      const timer = this.timerFor(this.nextAt);
      if (timer) waits.push(timer);
      const done = await restate.RestatePromise.race(waits);
      if (done.kind === "step") {
        this.pending.delete(done.key);
        const streamed = this.deltas.get(done.key);
        this.deltas.delete(done.key);
        inputs.push(done.done.input);
        deltas = unwrittenDeltas(done.done.events, done.done.deltaFrom, streamed?.written ?? 0);
        this.now = Math.max(this.now, done.done.at);
        live = done.live;
      } else if (done.kind === "delta") {
        this.streamed(done.key, done.batch);
      } else if (done.kind === "wake") {
        this.wake = null;
        const fresh = this.following(done.wake.entries);
        if (fresh.length > 0) {
          inputs.push(...this.inboxInputs(fresh));
          live = await this.clock();
        }
      } else {
        this.timer = null;
        inputs.push({ type: "tick" });
        live = await this.clock();
      }
    }
  }

  /**
   * The handed entries past the head's cursor, in order; when they do not follow on from the
   * cursor (an entry in between was not handed to this drive), the inbox is read from the cursor.
   */
  private async connect(handed: readonly InboxItem[]): Promise<InboxItem[]> {
    const cursor = this.head.inboxCursor;
    const entries = this.following(handed);
    if (entries.length === handed.filter((item) => item.seq > cursor).length) return entries;
    return this.readInbox(cursor);
  }

  /** The inbox entries after `after` (a call to the inbox object's shared `inbox`). */
  private readInbox(after: number): restate.RestatePromise<InboxItem[]> {
    return this.ctx.genericCall<{ after: number }, InboxItem[]>({
      service: this.options.names.inbox,
      method: "inbox",
      key: this.sessionId,
      parameter: { after },
      inputSerde: restate.serde.json,
      outputSerde: restate.serde.json,
    });
  }

  /** The entries that follow on from the head's cursor without a gap, in order. */
  private following(items: readonly InboxItem[]): InboxItem[] {
    const cursor = this.head.inboxCursor;
    const sorted = items.filter((item) => item.seq > cursor).sort((a, b) => a.seq - b.seq);
    const gap = sorted.findIndex((item, i) => item.seq !== cursor + 1 + i);
    return gap === -1 ? sorted : sorted.slice(0, gap);
  }

  /** Waits for the signal of the inbox entry with this seq (sent by the inbox object's `enqueue`). */
  private nextEntry(seq: number): NonNullable<Drive["wake"]> {
    return {
      seq,
      promise: this.ctx
        .signal<Wake>(entrySignal(seq))
        .map((wake) => ({ kind: "wake", wake: wake ?? { entries: [] } }) as Done),
    };
  }

  /**
   * Ends the drive: the session is no longer running (unless `next`, a fresh drive, takes over),
   * and the inbox object learns where the session is and that this drive ended.
   */
  private end(next: string | null = null): void {
    const handover = next !== null;
    if (!handover) this.setMeta({ ...this.meta, running: false });
    this.ctx.genericSend<EndedRequest>({
      service: this.options.names.inbox,
      method: "ended",
      key: this.sessionId,
      parameter: {
        invocationId: this.ctx.request().id,
        ...(handover ? { next } : {}),
        version: this.meta.version,
        lastEventSeq: this.meta.lastEventSeq,
        inboxCursor: this.head.inboxCursor,
        handover,
      },
      inputSerde: restate.serde.json,
    });
  }

  /**
   * Appends a write's events after the meta's last seq: to the head's tail when the head is written
   * with them (`withHead`) and the tail stays within `tailLimit`; else the tail and these go into
   * `e:` entries (before the meta is written alone, the tail must be empty). Returns the new last seq.
   */
  private appendEvents(events: readonly EventBody[], at: string, withHead: boolean): number {
    const after = this.meta.lastEventSeq;
    const stored = events.map(({ type, data }): StoredEvent => ({ type, data, at }) as StoredEvent);
    stored.forEach((event, i) => {
      this.written.push({ ...event, seq: after + 1 + i } as SessionEvent);
    });
    if (withHead && this.tail.length + stored.length <= tailLimit) {
      this.tail = [...this.tail, ...stored];
    } else {
      writeStored(this.ctx, after - this.tail.length, [...this.tail, ...stored]);
      this.tail = [];
    }
    return after + stored.length;
  }

  /**
   * Writes the meta, with the inbox cursor of `head`: with `head` when the transition changed it
   * (one state entry for the head, its meta and the tail of events), or alone.
   */
  private setMeta(meta: SessionMeta, head: SessionHead | null = null): void {
    // A meta written alone needs every event in `e:` entries: the tail, which ends at the current
    // meta's last seq, goes there first (a drive's end writes the meta alone after a head).
    if (!head && this.tail.length > 0) this.appendEvents([], "", false);
    this.meta = { ...meta, inboxCursor: (head ?? this.head).inboxCursor };
    if (head) this.ctx.set<StoredHead>("head", { ...head, $meta: this.meta, $tail: this.tail });
    else this.ctx.set("meta", this.meta);
    const events = this.written.splice(0);
    if (!localListeners()) return;
    publishLocalMove(this.options.names.session, {
      kind: "wrote",
      sessionId: this.sessionId,
      events,
      version: this.meta.version,
      lastEventSeq: this.meta.lastEventSeq,
      inboxCursor: this.meta.inboxCursor ?? this.head.inboxCursor,
      running: this.meta.running === true,
    });
  }

  /**
   * Before anything runs (core's pinning rules, as core's driver applies them): a session pinned to
   * another definition is migrated by this definition's migration from it (the transform runs in a
   * `ctx.run` of its own, its result written before anything runs) or, without one, marked waiting
   * (false: the drive ends); a session not pinned yet is pinned to this definition.
   */
  private async takeDefinition(): Promise<boolean> {
    const own = this.definition.fingerprint;
    const pinned = this.head.definition?.fingerprint ?? null;
    if (pinned !== null && pinned !== own) {
      const migration = this.definition.migrations.find((m) => m.from === pinned);
      if (!migration) {
        this.writeDefinition(applyDefinition(this.head, { type: "wait", reason: "unserved" }, this.now));
        return false;
      }
      if (!(await this.migrate(migration))) return false;
    }
    this.writeDefinition(
      applyDefinition(this.head, { type: "pin", fingerprint: own, description: this.definition.description }, this.now),
    );
    return true;
  }

  /** Applies a migration (its transform in a `ctx.run` of its own); false: it failed, and the session now waits with why. */
  private async migrate(migration: DefinitionMigration): Promise<boolean> {
    const to = this.definition.fingerprint;
    const head = this.head;
    const outcome: MigrationOutcome =
      "transform" in migration
        ? await this.ctx.run(`migrate ${migration.from} -> ${to}`, async () => {
            const run = await runMigration(migration, {
              sessionId: this.sessionId,
              from: migration.from,
              to,
              head,
              history: () => this.options.histories.load(this.sessionId, head.historyLength),
            });
            // Journaled as JSON: the transform's error is kept as its message only.
            return run.problem === null ? run : { problem: run.problem };
          })
        : { problem: null };
    const step = migrationTransition(
      head,
      migration,
      outcome,
      { to, description: this.definition.description },
      this.now,
    );
    if (!step.migrated) {
      this.ctx.console.warn(
        `session "${this.sessionId}": the migration from ${migration.from} to ${to} failed: ${step.reason}`,
      );
      this.writeDefinition(step.wait);
      return false;
    }
    this.writeDefinition(step.transition);
    return true;
  }

  /** Writes a definition transition (a pin, a wait mark, a migration) into the object's state. */
  private writeDefinition(t: DefinitionTransition): void {
    if (!t.changed) return;
    const lastEventSeq = this.appendEvents(t.events, iso(this.now), true);
    let { historyLength } = this.meta;
    t.appendHistory.forEach((item, index) => {
      this.ctx.set(`h:${historyLength + index}`, item);
    });
    this.options.histories.put(this.sessionId, historyLength, t.appendHistory);
    historyLength += t.appendHistory.length;
    this.head = t.head;
    this.setMeta({ version: this.meta.version + 1, lastEventSeq, historyLength, running: true }, t.head);
  }

  /** A journaled clock read; true when it ran in this attempt (not replayed). */
  private async clock(): Promise<boolean> {
    const read = this.clockRead();
    this.now = Math.max(this.now, await read.at);
    return read.ran.live;
  }

  /** Starts a journaled clock read; `ran.live` is set when it runs in this attempt. */
  private clockRead(): { readonly at: restate.RestatePromise<number>; readonly ran: { live: boolean } } {
    const ran = { live: false };
    const at = this.ctx.run("clock", () => {
      ran.live = true;
      return Date.now();
    });
    return { at, ran };
  }

  private timerFor(at: number | null): restate.RestatePromise<Done> | null {
    if (at === null) {
      this.timer = null;
      return null;
    }
    if (this.timer?.at !== at) {
      this.timer = {
        at,
        promise: this.ctx.sleep(Math.max(0, at - this.now), "due").map(() => ({ kind: "timer" }) as Done),
      };
    }
    return this.timer.promise;
  }

  private inboxInputs(items: readonly InboxItem[]): MachineInput[] {
    return items.map((item) =>
      item.kind === "message" || item.kind === "steer"
        ? { type: "inbox", item, userItem: this.definition.runner.userItem("message", item.text) }
        : { type: "inbox", item },
    );
  }

  /**
   * Applies the inputs as one transition, writes it, and launches the steps it started. `live`:
   * the entry that triggered this transition ran in this attempt.
   */
  private async advance(inputs: MachineInput[], deltas: readonly EventBody[], live: boolean): Promise<void> {
    const t = applyAll(this.head, inputs, { config: this.config, now: this.now });
    this.write(t, deltas);
    this.head = t.head;
    this.nextAt = t.due.nextAt;
    this.transitions += 1;
    this.turnSignals.abortEnded(this.head);
    if (t.due.steps.length === 0) return;
    // A single-attempt call's start gets its own journal entry, durable before the tool runs.
    const single = t.due.steps.filter((step) => step.kind === "CallSingleAttemptTool");
    const mark = { live: false };
    if (single.length > 0) {
      const at = await this.ctx.run(`started ${single.map(stepKey).join(" ")}`, () => {
        mark.live = true;
        return Date.now();
      });
      this.now = Math.max(this.now, at);
    }
    for (const step of t.due.steps) {
      const fresh = step.kind === "CallSingleAttemptTool" ? () => mark.live : () => live;
      this.launch(step, fresh);
    }
  }

  /** Writes a transition into the object's state: the head, the history it appends, its events. */
  private write(t: Transition, deltas: readonly EventBody[]): void {
    const events = [...deltas, ...(t.changed ? t.events : [])];
    if (!t.changed && events.length === 0 && this.meta.running) return;
    const lastEventSeq = this.appendEvents(events, iso(this.now), t.changed);
    let { version, historyLength } = this.meta;
    if (t.changed) {
      t.appendHistory.forEach((item, index) => {
        this.ctx.set(`h:${historyLength + index}`, item);
      });
      this.options.histories.put(this.sessionId, historyLength, t.appendHistory);
      historyLength += t.appendHistory.length;
      version += 1;
    }
    this.setMeta({ version, lastEventSeq, historyLength, running: true }, t.changed ? t.head : null);
  }

  /** Text deltas a model step streamed: written as events now (unless its step already ended). */
  private streamed(key: string, batch: DeltaBatch): void {
    const entry = this.deltas.get(key);
    if (!entry) return;
    const events = unwrittenDeltas(batch.events, batch.first, entry.written);
    if (events.length > 0) {
      const lastEventSeq = this.appendEvents(events, iso(batch.at), false);
      this.setMeta({ ...this.meta, lastEventSeq, running: true });
    }
    const written =
      batch.first === undefined ? entry.written : Math.max(entry.written, batch.first + batch.events.length);
    this.deltas.set(key, this.deltaAwakeable(key, entry.mailbox, written));
  }

  /** A new awakeable for the next batch of a model step's deltas; its ID goes to the step's mailbox. */
  private deltaAwakeable(key: string, mailbox: DeltaMailbox, written = 0) {
    const awakeable = this.ctx.awakeable<DeltaBatch>();
    mailbox.offer(awakeable.id);
    return {
      mailbox,
      written,
      promise: awakeable.promise.map(
        (batch) => ({ kind: "delta", key, batch: batch ?? { events: [], at: 0 } }) as Done,
      ),
    };
  }

  /** Starts one step's `ctx.run`; `fresh` says whether the entry that started it ran in this attempt. */
  private launch(step: DueStep, fresh: () => boolean): void {
    const head = this.head;
    const key = stepKey(step);
    // A check runs to find out what a call did, also in a turn being cancelled: only the attempt's end stops it.
    const signal =
      step.kind === "ReconcileCall" ? this.ctx.request().attemptCompletedSignal : this.stepSignal(step.turnId);
    const ran = { live: false };
    let mailbox: DeltaMailbox | null = null;
    if (step.kind === "RunModel") {
      mailbox = new DeltaMailbox();
      this.deltas.set(key, this.deltaAwakeable(key, mailbox));
    }
    const promise = this.ctx
      .run(`${step.kind} ${key}`, async (): Promise<StepDone> => {
        ran.live = true;
        if (!fresh()) return interruptedStep(step);
        if (step.kind === "RunModel") return runModelStep(this.deps, head, step, signal, mailbox!);
        if (step.kind === "ReconcileCall") return runReconcileStep(this.deps, head, step, signal);
        return runToolStep(this.deps, head, step, signal);
      })
      .map((done, failure): Done => {
        // The closure never throws; a failure here is Restate's own (e.g. a value it could not store).
        const result = done ?? { ...interruptedStep(step), at: this.now };
        if (failure) this.ctx.console.warn(`step ${key} failed in Restate: ${failure.message}`);
        return { kind: "step", key, done: result, live: ran.live };
      });
    this.pending.set(key, promise);
  }

  /** The signal of a step of this turn: aborted when the turn is cancelled or ends, or this attempt ends. */
  private stepSignal(turnId: string): AbortSignal {
    return this.turnSignals.signalFor(this.head, turnId, this.ctx.request().attemptCompletedSignal);
  }
}

/** Whether the head has a step started and without a result (a RunModel in flight, a running call or check). */
function hasStartedSteps(head: SessionHead): boolean {
  const turn = head.turn;
  if (!isTurnActive(turn)) return false;
  return (
    turn.modelRunning || currentCalls(turn).some((call) => call.status === "running" || call.status === "reconciling")
  );
}
