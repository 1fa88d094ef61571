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

/** A finished step: the machine's input, the deltas still buffered when it ended, and when it ended. */
export interface StepDone {
  readonly input: MachineInput;
  readonly events: readonly EventBody[];
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

  offer(id: string): void {
    this.broken = false;
    const taker = this.takers.shift();
    if (taker) taker(id);
    else this.id = id;
  }

  take(signal: AbortSignal): Promise<string | null> {
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
  // Deltas of a step whose turn was cancelled are dropped: its answer is discarded.
  const publish = async (events: EventBody[]) => {
    const id = await mailbox.take(signal);
    if (id === null || signal.aborted) return;
    await deps.resolveAwakeable(id, { events, at: Date.now() }).catch(() => mailbox.fail());
  };
  const { input, events } = await runModelAttempt(deps.definition.runner, {
    head,
    step,
    history,
    signal,
    publish,
    ...(deps.coalescing ? { coalescing: deps.coalescing } : {}),
  });
  return { input, events, at: Date.now() };
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
