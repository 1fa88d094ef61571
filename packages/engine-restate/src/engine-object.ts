/**
 * The engine object: one Restate virtual object per session (keyed by session ID) whose exclusive
 * `drive` handler runs the session's steps with core's state machine. Restate runs one drive per
 * session at a time, so at most one engine advances a session (no leases, no fencing of our own).
 *
 * A drive opens the session (its committed head and unapplied inbox entries, from the session
 * object), then over and over: applies what arrived (`applyAll`) with a journaled clock, commits
 * the transition to the session object (a journaled one-way send), launches the steps the machine
 * started, each in its own `ctx.run` (the calls of one response run concurrently), and waits for
 * the first of: a step's result, an inbox entry (an awakeable the session object resolves), or the
 * time the machine names (a durable timer). It ends once nothing runs and nothing falls due: a
 * session waiting for a person holds no invocation; the next inbox entry sends a new drive.
 *
 * Crashes: Restate replays the drive's journal, so every transition and every step result already
 * journaled comes back as it was, in the same order (the machine is pure and its clock journaled).
 * A step found without a result in the journal was started by an attempt that died; its closure
 * tells from a liveness flag whether the entry that started it was replayed:
 * - a single-attempt call journals its own "started" mark before the tool runs: a replayed mark
 *   means the tool may have run, so the attempt is reported failed (`outcome_unknown`) and the tool
 *   never runs again;
 * - a read, an idempotent write or a model call is started by the entry that triggered its
 *   transition (a step's result, or the clock read after a wake-up or a timer): when that was
 *   replayed, the attempt is reported failed and the machine runs another one (a read runs again,
 *   an idempotent write with the same key, a model call counts an attempt), so a crash never
 *   resets an attempt count.
 */
import * as restate from "@restatedev/restate-sdk";
import {
  type EventBody,
  type InboxItem,
  parseSessionHead,
  type SessionDefinition,
  type SessionHead,
} from "@durable-agents/core";
import {
  applyAll,
  TurnSignals,
  type CoalescerOptions,
  currentCalls,
  type DueStep,
  isTurnActive,
  type MachineConfig,
  type MachineInput,
  machineConfig,
  type Transition,
} from "@durable-agents/core/engine";
import type { SessionHistories } from "./histories.js";
import type { ServiceNames } from "./names.js";
import type { CommitRequest, Opened, Wake, WatchInboxRequest } from "./protocol.js";
import { interruptedStep, runModelStep, runToolStep, type StepDeps, type StepDone } from "./steps.js";

export interface EngineObjectOptions {
  readonly names: ServiceNames;
  readonly definitions: ReadonlyMap<string, SessionDefinition>;
  readonly histories: SessionHistories;
  readonly publish: StepDeps["publish"];
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
 * Restate's settings for the engine object. A step that runs longer than `inactivityTimeout` plus
 * `abortTimeout` (1 + 10 minutes by default) has its attempt aborted by Restate and is then treated
 * as interrupted: raise both for tools or model calls that take longer.
 */
export type EngineServiceOptions = Pick<
  restate.ObjectOptions,
  "inactivityTimeout" | "abortTimeout" | "retryPolicy" | "journalRetention"
>;

type Done =
  | { readonly kind: "step"; readonly key: string; readonly done: StepDone; readonly live: boolean }
  | { readonly kind: "wake"; readonly entries: readonly InboxItem[] }
  | { readonly kind: "watched"; readonly entries: readonly InboxItem[] }
  | { readonly kind: "timer" };

const stepKey = (step: DueStep) =>
  `${step.turnId}/${step.kind === "RunModel" ? `model:${step.modelStep}` : `tool:${step.toolCallId}`}/${step.attempt}`;

const iso = (ms: number) => new Date(ms).toISOString();

export function engineObject(options: EngineObjectOptions) {
  const { names } = options;
  const configs = new Map<string, MachineConfig>();
  const configOf = (definition: SessionDefinition) => {
    const config = configs.get(definition.name) ?? machineConfig(definition);
    configs.set(definition.name, config);
    return config;
  };

  return restate.object({
    name: names.engine,
    description: "Runs the steps of a Durable Agents session with core's state machine.",
    handlers: {
      drive: restate.handlers.object.exclusive({ ingressPrivate: true }, async (ctx: restate.ObjectContext) => {
        try {
          const opened = await ctx.genericCall<null, Opened | null>({
            service: names.session,
            method: "open",
            key: ctx.key,
            parameter: null,
            inputSerde: restate.serde.json,
            outputSerde: restate.serde.json,
          });
          if (!opened) return;
          let head: SessionHead;
          try {
            head = parseSessionHead(opened.head);
          } catch (error) {
            throw new restate.TerminalError(`session "${ctx.key}": ${(error as Error).message}`);
          }
          const definition = options.definitions.get(head.agent);
          if (!definition) {
            ctx.console.error(`session "${ctx.key}" is of agent "${head.agent}", which this endpoint does not serve`);
            return;
          }
          await new Drive(ctx, options, definition, configOf(definition), head, opened.version).run(opened.inbox);
        } finally {
          options.onDriveEnd?.();
        }
      }),
    },
    options: {
      // The drive journals one entry or two per step: once it ended, nothing needs them (a benchmark
      // that measures the journals keeps them with `journalRetention`).
      journalRetention: 0,
      ...options.serviceOptions,
    },
  });
}

class Drive {
  private readonly sessionId: string;
  private now = 0;
  private nextAt: number | null = null;
  private readonly pending = new Map<string, restate.RestatePromise<Done>>();
  private wake: restate.RestatePromise<Done> | null = null;
  /** A watch of the inbox being registered with the session object, and the awakeable it registers. */
  private watching: {
    readonly awakeable: restate.RestatePromise<Wake>;
    readonly registered: restate.RestatePromise<Done>;
  } | null = null;
  private timer: { readonly at: number; readonly promise: restate.RestatePromise<Done> } | null = null;
  private readonly turnSignals = new TurnSignals();
  private readonly deps: StepDeps;
  private transitions = 0;

  constructor(
    private readonly ctx: restate.ObjectContext,
    private readonly options: EngineObjectOptions,
    private readonly definition: SessionDefinition,
    private readonly config: MachineConfig,
    private head: SessionHead,
    private readonly version: number,
  ) {
    this.sessionId = ctx.key;
    this.deps = {
      definition,
      histories: options.histories,
      publish: options.publish,
      ...(options.coalescing ? { coalescing: options.coalescing } : {}),
    };
  }

  async run(inbox: readonly InboxItem[]): Promise<void> {
    // A drive that finds steps started in the head took over from a drive that was killed (not
    // replayed): the machine's recovery rules apply. Then the inbox, then whatever is due now.
    const inputs: MachineInput[] = [];
    if (hasStartedSteps(this.head)) inputs.push({ type: "recover", fence: this.version });
    inputs.push(...this.inboxInputs(inbox), { type: "tick" });
    let live = await this.clock();
    let deltas: readonly EventBody[] = [];
    const limit = this.options.transitionsPerDrive ?? 200;
    for (;;) {
      if (inputs.length > 0) {
        await this.advance(inputs.splice(0), deltas, live);
        deltas = [];
      }
      if (this.pending.size === 0) {
        if (this.nextAt === null) return;
        if (this.transitions >= limit) {
          // Hand over to a fresh drive with a short journal; it starts with a tick.
          this.ctx.genericSend({
            service: this.options.names.engine,
            method: "drive",
            key: this.sessionId,
            parameter: null,
            inputSerde: restate.serde.json,
          });
          return;
        }
      }
      // The inbox watch is registered alongside the steps, not before them: a step starts at once.
      if (!this.wake && !this.watching) this.watching = this.watchInbox();
      const waits = [...this.pending.values(), this.wake ?? this.watching!.registered];
      const timer = this.timerFor(this.nextAt);
      if (timer) waits.push(timer);
      const done = await restate.RestatePromise.race(waits);
      if (done.kind === "step") {
        this.pending.delete(done.key);
        inputs.push(done.done.input);
        deltas = done.done.events;
        this.now = Math.max(this.now, done.done.at);
        live = done.live;
      } else if (done.kind === "watched") {
        // Entries were waiting: they are applied (the awakeable is not kept); else it now waits for the next one.
        const { awakeable } = this.watching!;
        this.watching = null;
        if (done.entries.length > 0) {
          inputs.push(...this.inboxInputs(done.entries));
          live = await this.clock();
        } else {
          this.wake = awakeable.map((wake) => ({ kind: "wake", entries: wake?.entries ?? [] }) as Done);
        }
      } else if (done.kind === "wake") {
        this.wake = null;
        inputs.push(...this.inboxInputs(done.entries));
        live = await this.clock();
      } else {
        this.timer = null;
        inputs.push({ type: "tick" });
        live = await this.clock();
      }
    }
  }

  /**
   * Asks the session object for the inbox entries past the cursor; with none, it keeps the
   * awakeable, which the next entry resolves.
   */
  private watchInbox(): NonNullable<Drive["watching"]> {
    const awakeable = this.ctx.awakeable<Wake>();
    const registered = this.ctx
      .genericCall<WatchInboxRequest, InboxItem[]>({
        service: this.options.names.session,
        method: "watchInbox",
        key: this.sessionId,
        parameter: { cursor: this.head.inboxCursor, awakeableId: awakeable.id },
        inputSerde: restate.serde.json,
        outputSerde: restate.serde.json,
      })
      .map((entries) => ({ kind: "watched", entries: entries ?? [] }) as Done);
    return { awakeable: awakeable.promise, registered };
  }

  /** A journaled clock read; true when it ran in this attempt (not replayed). */
  private async clock(): Promise<boolean> {
    const ran = { live: false };
    const at = await this.ctx.run("clock", () => {
      ran.live = true;
      return Date.now();
    });
    this.now = Math.max(this.now, at);
    return ran.live;
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
   * Applies the inputs as one transition, commits it to the session object, and launches the
   * steps it started. `live`: the entry that triggered this transition ran in this attempt.
   */
  private async advance(inputs: MachineInput[], deltas: readonly EventBody[], live: boolean): Promise<void> {
    const t = applyAll(this.head, inputs, { config: this.config, now: this.now });
    this.commit(t, deltas);
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

  private commit(t: Transition, deltas: readonly EventBody[]): void {
    if (t.changed) {
      const request: CommitRequest = {
        head: t.head,
        appendHistory: t.appendHistory,
        events: [...deltas, ...t.events],
        at: iso(this.now),
      };
      this.options.histories.put(this.sessionId, this.head.historyLength, t.appendHistory);
      this.send("commit", request);
    } else if (deltas.length > 0) {
      this.send("appendEvents", { events: deltas, at: iso(this.now) });
    }
  }

  private send(method: string, parameter: unknown): void {
    this.ctx.genericSend({
      service: this.options.names.session,
      method,
      key: this.sessionId,
      parameter,
      inputSerde: restate.serde.json,
    });
  }

  /** Starts one step's `ctx.run`; `fresh` says whether the entry that started it ran in this attempt. */
  private launch(step: DueStep, fresh: () => boolean): void {
    const head = this.head;
    const key = stepKey(step);
    const signal = this.stepSignal(step.turnId);
    const ran = { live: false };
    const promise = this.ctx
      .run(`${step.kind} ${key}`, async (): Promise<StepDone> => {
        ran.live = true;
        if (!fresh()) return interruptedStep(step);
        return step.kind === "RunModel"
          ? runModelStep(this.deps, head, step, signal)
          : runToolStep(this.deps, head, step, signal);
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

/** Whether the head has a step started and without a result (a RunModel in flight, a running call). */
function hasStartedSteps(head: SessionHead): boolean {
  const turn = head.turn;
  if (!isTurnActive(turn)) return false;
  return turn.modelRunning || currentCalls(turn).some((call) => call.status === "running");
}
