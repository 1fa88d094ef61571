/**
 * What runs inside a step's `ctx.run`: one model call or one tool call of the runner, its result as
 * the state machine's next input. Nothing here may throw (a throwing `ctx.run` would be retried by
 * Restate behind the machine's back): every failure becomes an input the machine decides on.
 */
import type { EventBody, SessionDefinition, SessionHead } from "@durable-agents/core";
import {
  type CoalescerOptions,
  currentCalls,
  type DueStep,
  type MachineInput,
  modelAttemptFailed,
  runModelAttempt,
  runReconcileAttempt,
  runToolAttempt,
} from "@durable-agents/core/engine";
import type { SessionHistories } from "./histories.js";
import type { DeltaBatch } from "./protocol.js";

/**
 * A finished step: the machine's input, the deltas it streamed that the drive may not have had
 * yet, and when it ended.
 */
export interface StepDone {
  readonly input: MachineInput;
  readonly events: readonly EventBody[];
  /**
   * For a model step: the index of the first of `events` among the events it streamed (the
   * batches the drive had before the result cover the ones before it, and the drive skips any of
   * `events` it already wrote from a batch). Absent: `events` were never sent in a batch.
   */
  readonly deltaFrom?: number;
  /** Epoch ms at the end of the step: the clock of the transition that applies it. */
  readonly at: number;
}

export interface StepDeps {
  readonly definition: SessionDefinition;
  readonly histories: SessionHistories;
  /** Resolves an awakeable through the ingress: how a streaming step hands its deltas to the drive. */
  readonly resolveAwakeable: (awakeableId: string, value: DeltaBatch) => Promise<void>;
  readonly coalescing?: CoalescerOptions;
}

/**
 * Where a streaming model step finds the awakeable for its next batch of deltas: the drive creates
 * one per batch (an awakeable resolves once) and offers its ID here; the step takes it, resolves it
 * through the ingress, and waits for the next. A failed resolve drops the step's further batches
 * until the drive offers a new ID (what is still buffered at the end goes into the step's result).
 */
export class DeltaMailbox {
  private id: string | null = null;
  private broken = false;
  private readonly takers: ((id: string | null) => void)[] = [];
  private closed = false;

  offer(id: string): void {
    this.broken = false;
    const taker = this.takers.shift();
    if (taker) taker(id);
    else this.id = id;
  }

  take(signal: AbortSignal): Promise<string | null> {
    if (this.closed) return Promise.resolve(null);
    if (this.id !== null) {
      const id = this.id;
      this.id = null;
      return Promise.resolve(id);
    }
    if (this.broken || signal.aborted) return Promise.resolve(null);
    return new Promise((resolve) => {
      const taker = (id: string | null) => {
        signal.removeEventListener("abort", onAbort);
        resolve(id);
      };
      const onAbort = () => {
        const index = this.takers.indexOf(taker);
        if (index >= 0) this.takers.splice(index, 1);
        resolve(null);
      };
      this.takers.push(taker);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** The last resolve failed: its batch may or may not have reached the drive. */
  fail(): void {
    this.broken = true;
  }

  /** The step ended: no more batches; a taker still waiting gets null. */
  close(): void {
    this.closed = true;
    for (const taker of this.takers.splice(0)) taker(null);
  }
}

/**
 * Sends a model step's text deltas to the drive, one batch at a time, each through the awakeable
 * the drive offers next, without holding the step up: the model call goes on while a batch is on
 * its way, and the step does not wait for the last one when it ends. A batch leaves once the work
 * of the macrotask that produced it is done, so a step that ends in that macrotask sends none.
 * What was not handed over by then (the batch on its way, and those after it) rides in the step's
 * result, from the index `handed`; the drive writes each event once, by its index
 * (`unwrittenDeltas`).
 */
export class DeltaSender {
  private queued: EventBody[] = [];
  private sending: readonly EventBody[] = [];
  private handed = 0;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly mailbox: DeltaMailbox,
    private readonly resolve: StepDeps["resolveAwakeable"],
    private readonly signal: AbortSignal,
  ) {}

  push(events: readonly EventBody[]): void {
    if (this.stopped || events.length === 0) return;
    this.queued.push(...events);
    // Sent once the current macrotask's work is done: a step that ends in it (these were its last
    // output) sends nothing, and its result carries them.
    this.loop ??= new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.send())
      .finally(() => {
        this.loop = null;
      });
  }

  private async send(): Promise<void> {
    while (!this.stopped && this.queued.length > 0) {
      const id = await this.mailbox.take(this.signal);
      if (id === null || this.stopped || this.signal.aborted) return;
      const batch = this.queued.splice(0);
      this.sending = batch;
      const first = this.handed;
      try {
        await this.resolve(id, { events: batch, at: Date.now(), first });
      } catch {
        // It may or may not have reached the drive: it is sent again with the next batch (the drive
        // skips what it has), or rides in the result.
        this.queued = [...batch, ...this.queued];
        this.sending = [];
        this.mailbox.fail();
        return;
      }
      if (this.stopped) return;
      this.handed += batch.length;
      this.sending = [];
    }
  }

  /** Stops sending: the events not handed over, from the index of the first of them. */
  stop(): { readonly from: number; readonly events: EventBody[] } {
    this.stopped = true;
    this.mailbox.close();
    return { from: this.handed, events: [...this.sending, ...this.queued] };
  }
}

export const interruptedMessage =
  "the engine stopped during this call: Restate replayed the session and found no result for it";

type ModelStep = Extract<DueStep, { kind: "RunModel" }>;
type ToolStep = Extract<DueStep, { kind: "CallTool" | "CallSingleAttemptTool" }>;
type ReconcileStep = Extract<DueStep, { kind: "ReconcileCall" }>;

export function interruptedStep(step: DueStep): StepDone {
  const base = { turnId: step.turnId, attempt: step.attempt, error: interruptedMessage } as const;
  const input: MachineInput =
    step.kind === "RunModel"
      ? { type: "model_attempt_failed", ...base, modelStep: step.modelStep }
      : step.kind === "ReconcileCall"
        ? { type: "reconcile_attempt_failed", ...base, toolCallId: step.toolCallId }
        : { type: "call_attempt_failed", ...base, toolCallId: step.toolCallId };
  return { input, events: [], at: Date.now() };
}

/** One attempt of a RunModel step, from the head that started it (core's `runModelAttempt`). */
export async function runModelStep(
  deps: StepDeps,
  head: SessionHead,
  step: ModelStep,
  signal: AbortSignal,
  mailbox: DeltaMailbox,
): Promise<StepDone> {
  let history: Awaited<ReturnType<SessionHistories["load"]>>;
  try {
    history = await deps.histories.load(head.sessionId, head.historyLength, signal);
  } catch (error) {
    return { input: modelAttemptFailed(step, error), events: [], at: Date.now() };
  }
  const sender = new DeltaSender(mailbox, deps.resolveAwakeable, signal);
  const { input, events } = await runModelAttempt(deps.definition.runner, {
    head,
    step,
    history,
    signal,
    publish: async (batch) => sender.push(batch),
    ...(deps.coalescing ? { coalescing: deps.coalescing } : {}),
  });
  const unsent = sender.stop();
  // Deltas of a step whose turn was cancelled are dropped: its answer is discarded.
  if (signal.aborted) return { input, events: [], at: Date.now() };
  return { input, events: [...unsent.events, ...events], deltaFrom: unsent.from, at: Date.now() };
}

/** One attempt of a tool call, from the head that started it (its start is in that head). */
export async function runToolStep(
  deps: StepDeps,
  head: SessionHead,
  step: ToolStep,
  signal: AbortSignal,
): Promise<StepDone> {
  const { turnId, toolCallId, attempt } = step;
  const sessionId = head.sessionId;
  const call = currentCalls(head.turn!).find((c) => c.toolCallId === toolCallId)!;
  const input = await runToolAttempt(deps.definition.runner, { sessionId, turnId, call, attempt, signal });
  return { input, events: [], at: Date.now() };
}

/** One attempt of a check of a call in doubt (the tool's `reconcile`, never the tool), from the head that started it. */
export async function runReconcileStep(
  deps: StepDeps,
  head: SessionHead,
  step: ReconcileStep,
  signal: AbortSignal,
): Promise<StepDone> {
  const { turnId, toolCallId, attempt } = step;
  const call = currentCalls(head.turn!).find((c) => c.toolCallId === toolCallId)!;
  const input = await runReconcileAttempt(deps.definition, {
    sessionId: head.sessionId,
    turnId,
    call,
    attempt,
    signal,
  });
  return { input, events: [], at: Date.now() };
}

/**
 * The events of a batch or of a step's result that the drive has not written yet: those from index
 * `written` on, the first of them having index `first` among the events the step streamed (no
 * index: all of them, as journaled before batches had one).
 */
export function unwrittenDeltas(
  events: readonly EventBody[],
  first: number | undefined,
  written: number,
): readonly EventBody[] {
  if (first === undefined || first >= written) return events;
  return events.slice(written - first);
}
