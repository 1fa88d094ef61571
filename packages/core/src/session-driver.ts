/**
 * The engine for one leased session: it feeds the state machine with inbox entries and step
 * results, runs the steps the machine says are due (tool calls of one response in parallel), and
 * commits every transition under the lease. Commits are serialized; a refused commit ends the drive.
 */
import { DeltaCoalescer, type CoalescerOptions } from "./coalescer.js";
import { backoffDelay, type SessionDefinition } from "./definition.js";
import { DurableAgentsError, LeaseLostError, ToolExecutionError, VersionConflictError } from "./errors.js";
import {
  apply,
  currentCalls,
  dueSteps,
  isRunnable,
  outcomesForNextModelStep,
  type DueStep,
  type MachineConfig,
  type MachineInput,
  type PlannedCall,
} from "./machine.js";
import { resolveCallPolicy } from "./policy.js";
import type { CallToolResult, RunModelResult } from "./runner.js";
import { parseSessionHead, type EventBody, type HistoryItem, type SessionHead } from "./schemas.js";
import type { Lease, SessionStore } from "./store.js";
import { runInToolCall } from "./tool-context.js";

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
}

export type DriveEnd = "idle" | "stopped" | "lost" | "missing";

const errorText = (error: unknown): string =>
  error instanceof Error ? error.message || error.name : typeof error === "string" ? error : JSON.stringify(error);

function isCallToolResult(value: unknown): value is CallToolResult {
  if (typeof value !== "object" || value === null) return false;
  const r = value as Record<string, unknown>;
  return (r.status === "succeeded" && typeof r.output === "string") || (r.status === "failed" && typeof r.message === "string");
}

export async function driveSession(options: DriveOptions): Promise<DriveEnd> {
  return new SessionDriver(options).run();
}

class SessionDriver {
  private head!: SessionHead;
  private version = 0;
  private history: HistoryItem[] | null = null;
  private readonly inflight = new Map<string, Promise<void>>();
  /** Finished steps whose results are not applied yet; a step stays in `inflight` until then. */
  private readonly completions: { key: string; input: MachineInput | null }[] = [];
  private wakeUp: (() => void) | null = null;
  private commitChain: Promise<unknown> = Promise.resolve();
  private lost = false;
  private readonly config: MachineConfig;
  private readonly store: SessionStore;
  private readonly definition: SessionDefinition;
  private readonly sessionId: string;

  constructor(private readonly options: DriveOptions) {
    this.store = options.store;
    this.definition = options.definition;
    this.sessionId = options.lease.sessionId;
    this.config = {
      maxModelSteps: options.definition.maxModelSteps,
      failureNote: (text) => options.definition.runner.userItem("turn_failure_note", text),
    };
  }

  async run(): Promise<DriveEnd> {
    const stored = await this.store.loadSession(this.sessionId);
    if (!stored) return "missing";
    this.head = parseSessionHead(stored.head);
    this.version = stored.version;
    const unsubscribe = this.store.subscribe((n) => {
      if (n.kind === "inbox" && n.sessionId === this.sessionId) this.poke();
    });
    const onAbort = () => this.poke();
    this.options.signal.addEventListener("abort", onAbort);
    try {
      return await this.loop();
    } catch (error) {
      if (this.isLostError(error)) return "lost";
      throw error;
    } finally {
      unsubscribe();
      this.options.signal.removeEventListener("abort", onAbort);
    }
  }

  private isLostError(error: unknown): boolean {
    return this.lost || this.options.signal.aborted || LeaseLostError.isInstance(error) || VersionConflictError.isInstance(error);
  }

  private async loop(): Promise<DriveEnd> {
    await this.transition({ type: "recover", fence: this.options.lease.fence });
    for (;;) {
      if (this.options.signal.aborted || this.lost) return "lost";
      while (this.completions.length > 0) {
        const done = this.completions.shift()!;
        try {
          if (done.input) await this.transition(done.input);
        } finally {
          this.inflight.delete(done.key);
        }
      }
      const stopping = this.options.stopping();
      if (!stopping) await this.consumeInbox();
      const due = dueSteps(this.head).filter((step) => !this.inflight.has(stepKey(step)));
      const now = Date.now();
      if (!stopping) {
        const ready = due.filter((step) => step.notBefore === null || step.notBefore <= now);
        const model = ready.find((step) => step.kind === "RunModel");
        if (model) this.launchModel(model);
        const tools = ready.filter((step) => step.kind !== "RunModel");
        if (tools.length > 0) await this.launchTools(tools);
      }
      if (this.inflight.size === 0) {
        if (stopping) return "stopped";
        const later = dueSteps(this.head).filter((step) => step.notBefore !== null && step.notBefore > Date.now());
        if (later.length === 0 && dueSteps(this.head).length === 0) {
          // Nothing to run; a message or decision that arrived meanwhile keeps us going.
          const inbox = await this.store.readInbox(this.sessionId, this.head.inboxCursor);
          if (inbox.length === 0) return "idle";
          continue;
        }
      }
      const nextDue = dueSteps(this.head)
        .map((step) => step.notBefore)
        .filter((at): at is number => at !== null && at > Date.now());
      const timeout = Math.min(this.options.pollIntervalMs ?? 1000, ...nextDue.map((at) => at - Date.now()));
      if (this.completions.length === 0) await this.sleep(Math.max(0, timeout));
    }
  }

  private poke(): void {
    const wake = this.wakeUp;
    this.wakeUp = null;
    wake?.();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.wakeUp === done) self.wakeUp = null;
        resolve();
      }
      this.wakeUp = done;
    });
  }

  private async consumeInbox(): Promise<void> {
    const items = await this.store.readInbox(this.sessionId, this.head.inboxCursor);
    for (const item of items) {
      const userItem = item.kind === "message" ? this.definition.runner.userItem("message", item.text) : undefined;
      await this.transition({ type: "inbox", item, ...(userItem ? { userItem } : {}) });
    }
  }

  /** Applies one input and commits it; nothing is committed when the input changes nothing. */
  private async transition(input: MachineInput): Promise<void> {
    const t = apply(this.head, input, this.config);
    if (t.events.length === 0 && t.appendHistory.length === 0 && JSON.stringify(t.head) === JSON.stringify(this.head)) return;
    await this.serialized(async () => {
      const result = await this.store.commit({
        sessionId: this.sessionId,
        fence: this.options.lease.fence,
        expectedVersion: this.version,
        head: t.head,
        runnable: isRunnable(t.head),
        appendHistory: t.appendHistory,
        events: t.events,
      });
      this.head = t.head;
      this.version = result.version;
      this.history?.push(...t.appendHistory);
    });
  }

  private async commitEvents(events: EventBody[]): Promise<void> {
    if (this.lost || this.options.signal.aborted) return;
    await this.serialized(() =>
      this.store.commit({ sessionId: this.sessionId, fence: this.options.lease.fence, expectedVersion: this.version, events }),
    );
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.commitChain.then(() => {
      if (this.lost || this.options.signal.aborted) throw new LeaseLostError(this.sessionId, this.options.lease.fence);
      return fn();
    });
    this.commitChain = run.catch((error) => {
      if (this.isLostError(error)) this.lost = true;
    });
    return run;
  }

  private track(key: string, task: Promise<MachineInput | null>): void {
    const done = task
      .then((input) => {
        this.completions.push({ key, input });
      })
      .catch(() => {
        this.lost = true;
        this.completions.push({ key, input: null });
      })
      .finally(() => this.poke());
    this.inflight.set(key, done);
  }

  private async loadHistory(): Promise<HistoryItem[]> {
    this.history ??= await this.store.readHistory(this.sessionId);
    return this.history;
  }

  private launchModel(step: Extract<DueStep, { kind: "RunModel" }>): void {
    const head = this.head;
    const turn = head.turn!;
    const { runner, policies, tools, modelRetry } = this.definition;
    const toolNames = new Set(tools.map((tool) => tool.name));
    const task = (async (): Promise<MachineInput | null> => {
      const history = [...(await this.loadHistory())];
      const coalescer = new DeltaCoalescer(turn.turnId, (events) => this.commitEvents(events), this.options.coalescing);
      let result: RunModelResult;
      try {
        result = await runner.runModel({
          sessionId: this.sessionId,
          turnId: turn.turnId,
          modelStep: step.modelStep,
          history,
          turnStart: turn.historyStart,
          runState: turn.runState,
          outcomes: outcomesForNextModelStep(head),
          signal: this.options.signal,
          emit: (delta) => coalescer.push(delta),
        });
        validateModelResult(result);
      } catch (error) {
        await coalescer.close();
        return {
          type: "model_attempt_failed",
          error: errorText(error),
          now: Date.now(),
          maxAttempts: modelRetry.maxAttempts,
          retryDelayMs: backoffDelay(modelRetry, turn.modelAttempts + 1),
        };
      }
      await coalescer.close();
      const calls: PlannedCall[] =
        result.kind === "tool_calls"
          ? result.calls.map((call) => ({
              toolCallId: call.toolCallId,
              name: call.name,
              arguments: call.arguments,
              ...resolveCallPolicy(call.name, policies, tools, call.needsApproval),
              ...(toolNames.has(call.name) ? {} : { invalid: `the agent has no tool named "${call.name}"` }),
            }))
          : [];
      return { type: "model_completed", result, calls };
    })();
    this.track(stepKey(step), task);
  }

  private async launchTools(steps: readonly DueStep[]): Promise<void> {
    const ids = steps.map((step) => (step.kind === "RunModel" ? "" : step.toolCallId));
    // The start of every attempt is durable before the tool runs: a crash after this point is seen.
    await this.transition({ type: "calls_started", toolCallIds: ids });
    const turn = this.head.turn!;
    for (const step of steps) {
      if (step.kind === "RunModel") continue;
      const call = currentCalls(turn).find((c) => c.toolCallId === step.toolCallId)!;
      const task = (async (): Promise<MachineInput | null> => {
        try {
          const result = await runInToolCall(
            {
              sessionId: this.sessionId,
              turnId: turn.turnId,
              toolCallId: call.toolCallId,
              toolName: call.name,
              idempotencyKey: call.idempotencyKey!,
              attempt: call.attempts,
            },
            () =>
              this.definition.runner.callTool({
                sessionId: this.sessionId,
                turnId: turn.turnId,
                toolCallId: call.toolCallId,
                name: call.name,
                arguments: call.arguments,
                attempt: call.attempts,
                idempotencyKey: call.idempotencyKey!,
                signal: this.options.signal,
              }),
          );
          if (!isCallToolResult(result)) throw new Error("the runner returned a malformed tool result");
          return { type: "call_finished", toolCallId: call.toolCallId, outcome: result };
        } catch (error) {
          if (ToolExecutionError.isInstance(error)) {
            return { type: "call_finished", toolCallId: call.toolCallId, outcome: { status: "failed", message: error.message } };
          }
          return {
            type: "call_attempt_failed",
            toolCallId: call.toolCallId,
            error: errorText(error),
            now: Date.now(),
            retryDelayMs: backoffDelay(this.definition.toolBackoff, call.attempts),
          };
        }
      })();
      this.track(stepKey(step), task);
    }
  }
}

function stepKey(step: DueStep): string {
  return step.kind === "RunModel" ? `model:${step.turnId}:${step.modelStep}` : `tool:${step.turnId}:${step.toolCallId}`;
}

function validateModelResult(result: RunModelResult): void {
  const ok =
    typeof result === "object" &&
    result !== null &&
    ((result.kind === "final" && Array.isArray(result.items) && typeof result.text === "string") ||
      (result.kind === "tool_calls" && Array.isArray(result.calls) && typeof result.runState === "string"));
  if (!ok) throw new DurableAgentsError("invalid_input", "the runner returned a malformed model result");
  if (result.kind === "tool_calls") {
    const ids = new Set<string>();
    for (const call of result.calls) {
      if (typeof call.toolCallId !== "string" || typeof call.name !== "string" || typeof call.arguments !== "string") {
        throw new DurableAgentsError("invalid_input", "the runner returned a malformed tool call");
      }
      if (ids.has(call.toolCallId)) throw new DurableAgentsError("invalid_input", `tool call ID ${call.toolCallId} appears twice`);
      ids.add(call.toolCallId);
    }
  }
}
