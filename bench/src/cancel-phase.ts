/**
 * Cancellation latency: from calling `client.cancelTurn` while the turn's model call is in flight to
 * the moment the turn's `turn_cancelled` receipt reaches a client that follows the session
 * (`followEvents` in this process, woken by the store's event notification). The model is core's
 * `ScriptedRunner` answering a `hang model` script: its call waits for its abort signal, so the turn
 * can only end by being cancelled, and the cancellation is measured with the model call truly in
 * flight (the runner says when `runModel` was entered, and the measurement starts after that).
 *
 * What the time covers: the client's checks and its inbox write, the store's notification to the
 * worker, the worker reading its inbox, applying the cancellation and committing the receipt, and
 * the follower being notified and reading the event. The aborted model call's end is not in it (it
 * comes after the receipt and is ignored by the engine).
 */
import {
  defineSession,
  SessionClient,
  Worker,
  type Runner,
  type SessionEvent,
  type SessionStore,
} from "@durable-agents/core";
import type { RunModelInput, RunModelResult } from "@durable-agents/core/engine";
import { ScriptedRunner } from "@durable-agents/core/testing";
import { waitForIdleWorker } from "./durable-phase.js";

export const CANCEL_AGENT = "bench-cancel";

export interface CancelPhaseResult {
  /** From calling `cancelTurn` to the arrival of `turn_cancelled` at the follower, ms, one per cancelled turn. */
  readonly latencyMs: number[];
  /** How long `cancelTurn` itself took to answer (its checks and the inbox write), ms. */
  readonly callMs: number[];
}

/** A `ScriptedRunner` that tells when a model call of a turn has been entered (and waits on its signal). */
class SignallingRunner implements Runner {
  private readonly scripted = new ScriptedRunner({ tools: [] });
  private readonly waiting = new Map<string, () => void>();
  private readonly entered = new Set<string>();

  tools() {
    return this.scripted.tools();
  }

  userItem(...args: Parameters<Runner["userItem"]>) {
    return this.scripted.userItem(...args);
  }

  callTool(...args: Parameters<Runner["callTool"]>) {
    return this.scripted.callTool(...args);
  }

  runModel(input: RunModelInput): Promise<RunModelResult> {
    // The scripted model registers its abort listener synchronously: once this returns, it hangs.
    const answer = this.scripted.runModel(input);
    const key = `${input.sessionId}/${input.turnId}`;
    this.entered.add(key);
    this.waiting.get(key)?.();
    this.waiting.delete(key);
    return answer;
  }

  /** Resolves once the model call of this turn has been entered. */
  modelInFlight(sessionId: string, turnId: string, timeoutMs = 30_000): Promise<void> {
    const key = `${sessionId}/${turnId}`;
    if (this.entered.has(key)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(key);
        reject(new Error(`the model call of ${key} did not start within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(key, () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

type Receipt = Extract<SessionEvent, { type: "turn_cancelled" }>["data"];

/** Follows one session and notes when each `turn_cancelled` arrived. */
class ReceiptFollower {
  private readonly controller = new AbortController();
  private readonly arrived = new Map<string, { at: number; receipt: Receipt }>();
  private readonly waiters = new Map<string, () => void>();
  private readonly loop: Promise<void>;
  private error: unknown = null;

  constructor(client: SessionClient, sessionId: string) {
    this.loop = (async () => {
      for await (const event of client.followEvents(sessionId, { signal: this.controller.signal })) {
        if (event.type !== "turn_cancelled") continue;
        this.arrived.set(event.data.turnId, { at: performance.now(), receipt: event.data });
        this.waiters.get(event.data.turnId)?.();
        this.waiters.delete(event.data.turnId);
      }
    })().catch((error: unknown) => {
      this.error = error;
    });
  }

  async receipt(turnId: string, timeoutMs = 30_000): Promise<{ at: number; receipt: Receipt }> {
    const known = this.arrived.get(turnId);
    if (known) return known;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(turnId);
        reject(new Error(`no turn_cancelled for ${turnId} within ${timeoutMs} ms (${String(this.error ?? "")})`));
      }, timeoutMs);
      this.waiters.set(turnId, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return this.arrived.get(turnId)!;
  }

  async stop(): Promise<void> {
    this.controller.abort();
    await this.loop;
  }
}

/** A turn whose model call never answers on its own. */
const hangingTurn = (sessionId: string, turn: number) => `cancel bench ${sessionId} turn ${turn}\nhang model`;

/** Runs cancelled turns on one store, session by session (`session(n)`), so stores can take turns. */
export class CancelPhase {
  private readonly runner = new SignallingRunner();
  private readonly worker: Worker;
  private readonly client: SessionClient;
  readonly latencyMs: number[] = [];
  readonly callMs: number[] = [];

  constructor(
    store: SessionStore,
    private readonly turnsPerSession: number,
    /** Session IDs start with this, so phases sharing a store do not collide. */
    private readonly prefix: string,
  ) {
    const definition = defineSession({ name: CANCEL_AGENT, runner: this.runner });
    this.worker = new Worker({ store, sessions: [definition] }).start();
    this.client = new SessionClient({ store, agents: [CANCEL_AGENT] });
  }

  async session(index: number, measured: boolean): Promise<void> {
    const sessionId = `${this.prefix}-s${index}`;
    await waitForIdleWorker(this.worker);
    await this.client.startSession({ agent: CANCEL_AGENT, sessionId });
    const follower = new ReceiptFollower(this.client, sessionId);
    try {
      for (let t = 1; t <= this.turnsPerSession; t++) {
        const turnId = `turn-${t}`;
        await this.client.sendMessage(sessionId, hangingTurn(sessionId, t));
        await this.runner.modelInFlight(sessionId, turnId);
        const requestId = `${sessionId}-cancel-${t}`;
        const start = performance.now();
        const accepted = await this.client.cancelTurn(sessionId, { reason: "bench", requestId });
        const answered = performance.now();
        const { at, receipt } = await follower.receipt(turnId);
        if (accepted.turnId !== turnId || accepted.duplicate) {
          throw new Error(`cancelTurn named ${accepted.turnId} (duplicate ${accepted.duplicate}), expected ${turnId}`);
        }
        // The figure is only what it claims if the model call was in flight and nothing else ran.
        if (!receipt.modelCallAborted || receipt.calls.length > 0 || receipt.requestId !== requestId) {
          throw new Error(`unexpected receipt for ${sessionId} ${turnId}: ${JSON.stringify(receipt)}`);
        }
        if (measured) {
          this.latencyMs.push(at - start);
          this.callMs.push(answered - start);
        }
        // The next turn starts on an idle worker, as the first one did.
        await waitForIdleWorker(this.worker);
      }
    } finally {
      await follower.stop();
    }
  }

  result(): CancelPhaseResult {
    return { latencyMs: this.latencyMs, callMs: this.callMs };
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }
}
