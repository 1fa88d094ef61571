/**
 * The engine for one leased session: it feeds the state machine with inbox entries and step
 * results, runs the steps the machine says are due (tool calls of one response in parallel), and
 * commits every transition under the lease. Commits are serialized; a refused commit ends the drive.
 */
import { DeltaCoalescer, type CoalescerOptions } from "./coalescer.js";
import { HistoryCache } from "./history-cache.js";
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
  /** Histories kept between drives of the same worker (read only past the cached prefix). */
  readonly historyCache?: HistoryCache;
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
  /** Finished steps whose results are not applied yet; a step stays in `inflight` until the loop takes them. */
  private readonly completions: { key: string; input: MachineInput | null; events?: EventBody[] }[] = [];
  /** Whether the inbox may hold entries not applied yet (set by notifications and poll timeouts). */
  private inboxDirty = true;
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
      if (n.kind === "inbox" && n.sessionId === this.sessionId) {
        this.inboxDirty = true;
        this.poke();
      }
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

  /**
   * One iteration: apply every finished step, every new inbox entry and the start of every tool call
   * that is ready, in memory, then commit them together (one commit), then launch what is due.
   */
  private async loop(): Promise<DriveEnd> {
    await this.commitInputs([{ input: { type: "recover", fence: this.options.lease.fence } }]);
    for (;;) {
      if (this.options.signal.aborted || this.lost) return "lost";
      const stopping = this.options.stopping();
      const finished = this.completions.splice(0);
      const inputs: PendingInput[] = [];
      for (const done of finished) if (done.input) inputs.push({ input: done.input, events: done.events });
      if (!stopping && this.inboxDirty) {
        this.inboxDirty = false;
        for (const item of await this.store.readInbox(this.sessionId, this.head.inboxCursor)) {
          const userItem = item.kind === "message" ? this.definition.runner.userItem("message", item.text) : undefined;
          inputs.push({ input: { type: "inbox", item, ...(userItem ? { userItem } : {}) } });
        }
      }
      // The head `more` sees has these results applied, so their steps are no longer in flight.
      for (const done of finished) this.inflight.delete(done.key);
      let readyTools: DueStep[] = [];
      const started = await this.commitInputs(inputs, (head) => {
        if (stopping) return null;
        const now = Date.now();
        readyTools = dueSteps(head).filter(
          (step) => step.kind !== "RunModel" && !this.inflight.has(stepKey(step)) && (step.notBefore === null || step.notBefore <= now),
        );
        // The start of every attempt is durable before the tool runs: a crash after this commit is seen.
        return readyTools.length > 0 ? { type: "calls_started", toolCallIds: readyTools.map(toolCallIdOf) } : null;
      });
      if (started) this.launchTools(readyTools);
      if (!stopping) {
        const now = Date.now();
        const model = dueSteps(this.head).find(
          (step) => step.kind === "RunModel" && !this.inflight.has(stepKey(step)) && (step.notBefore === null || step.notBefore <= now),
        );
        if (model?.kind === "RunModel") this.launchModel(model);
      }
      if (this.inflight.size === 0) {
        if (stopping) return "stopped";
        if (dueSteps(this.head).length === 0) {
          // Nothing to run; a message or decision that arrived meanwhile keeps us going.
          const inbox = await this.store.readInbox(this.sessionId, this.head.inboxCursor);
          if (inbox.length === 0) return "idle";
          this.inboxDirty = true;
          continue;
        }
      }
      if (this.completions.length > 0 || this.inboxDirty) continue;
      // Retries waiting for their backoff. One whose time came while this iteration committed is
      // launched now: sleeping until the poll would strand it there.
      const now = Date.now();
      const backoffs = dueSteps(this.head)
        .filter((step) => !this.inflight.has(stepKey(step)))
        .flatMap((step) => (step.notBefore === null ? [] : [step.notBefore - now]));
      if (!stopping && backoffs.some((ms) => ms <= 0)) continue;
      const timeout = Math.min(this.options.pollIntervalMs ?? 1000, ...backoffs.filter((ms) => ms > 0));
      // Woken by a finished step or an inbox notification; a timeout re-reads the inbox in case one was lost.
      if (!(await this.sleep(timeout))) this.inboxDirty = true;
    }
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
   * Applies the inputs in order, then `more(head)` once, in memory, and commits the result as one
   * commit (the events of each input after its `events` prefix). Commits nothing when nothing
   * changed. Returns whether `more` added an input.
   */
  private async commitInputs(inputs: readonly PendingInput[], more?: (head: SessionHead) => MachineInput | null): Promise<boolean> {
    let head = this.head;
    const events: EventBody[] = [];
    const appendHistory: HistoryItem[] = [];
    const step = (input: MachineInput, prefix: readonly EventBody[] = []) => {
      const t = apply(head, input, this.config);
      head = t.head;
      events.push(...prefix, ...t.events);
      appendHistory.push(...t.appendHistory);
    };
    for (const { input, events: prefix } of inputs) step(input, prefix);
    const extra = more?.(head) ?? null;
    if (extra) step(extra);
    if (events.length === 0 && appendHistory.length === 0 && JSON.stringify(head) === JSON.stringify(this.head)) return false;
    await this.serialized(async () => {
      const result = await this.store.commit({
        sessionId: this.sessionId,
        fence: this.options.lease.fence,
        expectedVersion: this.version,
        head,
        runnable: isRunnable(head),
        appendHistory,
        events,
      });
      this.head = head;
      this.version = result.version;
      this.history?.push(...appendHistory);
    });
    return extra !== null;
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

  private track(key: string, task: Promise<MachineInput | { input: MachineInput; events: EventBody[] } | null>): void {
    const done = task
      .then((result) => {
        if (result && "input" in result) this.completions.push({ key, input: result.input, events: result.events });
        else this.completions.push({ key, input: result });
      })
      .catch(() => {
        this.lost = true;
        this.completions.push({ key, input: null });
      })
      .finally(() => this.poke());
    this.inflight.set(key, done);
  }

  private async loadHistory(): Promise<HistoryItem[]> {
    this.history ??= await (this.options.historyCache ?? new HistoryCache()).load(this.store, this.sessionId, this.head.historyLength);
    return this.history;
  }

  private launchModel(step: Extract<DueStep, { kind: "RunModel" }>): void {
    const head = this.head;
    const turn = head.turn!;
    const { runner, policies, tools, modelRetry } = this.definition;
    const toolNames = new Set(tools.map((tool) => tool.name));
    const task = (async (): Promise<{ input: MachineInput; events: EventBody[] }> => {
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
        // Deltas still buffered go into the same commit as the step's result.
        const events = await coalescer.finish();
        const input: MachineInput = {
          type: "model_attempt_failed",
          turnId: turn.turnId,
          modelStep: step.modelStep,
          error: errorText(error),
          now: Date.now(),
          maxAttempts: modelRetry.maxAttempts,
          retryDelayMs: backoffDelay(modelRetry, turn.modelAttempts + 1),
        };
        return { input, events };
      }
      const events = await coalescer.finish();
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
      return { input: { type: "model_completed", turnId: turn.turnId, modelStep: step.modelStep, result, calls }, events };
    })();
    this.track(stepKey(step), task);
  }

  /** Runs tool calls whose start was just committed. */
  private launchTools(steps: readonly DueStep[]): void {
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

type PendingInput = { readonly input: MachineInput; readonly events?: readonly EventBody[] | undefined };

const toolCallIdOf = (step: DueStep): string => (step.kind === "RunModel" ? "" : step.toolCallId);

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
